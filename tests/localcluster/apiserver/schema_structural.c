/*
 * schema_structural.c: a CRD version's openAPIV3Schema checked as kube-apiserver checks it:
 * the structural-schema invariants (apiextensions' schema.ValidateStructural: every node typed
 * unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields, nothing but value
 * validations under anyOf/allOf/oneOf/not, metadata restricted to name and generateName at the
 * root, ...; errors sorted as kube sorts them), the OpenAPI rules CRDs add (type values,
 * uniqueItems, additionalProperties, x-kubernetes-int-or-string, list types), patterns that
 * compile (compiled into the entry for validation), and defaults that survive pruning and pass
 * their own schema.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"

static char *pf(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *pf(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if(vasprintf(&s, f, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

static const char *str(const cJSON *o, const char *k)
{
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

enum level { ROOT, ITEM, FIELD };

struct sctx {
  struct crd_entry *e;
  cJSON *structural; /* sorted at the end, as ValidateStructural sorts */
  cJSON *causes;     /* the OpenAPI-level errors */
};

static void add_pattern(struct sctx *c, const cJSON *s, const char *path)
{
  const char *pat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "pattern"));
  if(!pat || !*pat || crd_entry_pattern(c->e, pat))
    return;
  char err[256];
  struct rx *rx = rx_compile(pat, err, sizeof(err));
  if(!rx) {
    char *f = pf("%s.pattern", path), *d = pf("must be a valid regular expression, but isn't: %s", err);
    ferr_invalid_str(c->structural, f, pat, d);
    free(f);
    free(d);
    return;
  }
  struct crd_pattern *v = realloc(c->e->patterns, (c->e->npatterns + 1) * sizeof(*v));
  if(!v) {
    rx_free(rx);
    return;
  }
  c->e->patterns = v;
  v[c->e->npatterns++] = (struct crd_pattern){ pat, rx };
}

static void nested(struct sctx *c, const cJSON *v, enum level lvl, const char *path);

static void value_validation(struct sctx *c, const cJSON *s, bool skip_any, bool skip_first_all_any,
                             enum level lvl, const char *path)
{
  static const char *const junctors[] = { "anyOf", "allOf", "oneOf" };
  for(size_t j = 0; j < 3; j++) {
    if(j == 0 && skip_any)
      continue;
    int i = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, junctors[j]))
    {
      char *p = pf("%s.%s[%d]", path, junctors[j], i);
      if(j == 1 && i == 0 && skip_first_all_any) {
        cJSON *copy = cJSON_Duplicate(k, true);
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "anyOf");
        nested(c, copy, lvl, p);
        cJSON_Delete(copy);
      } else
        nested(c, k, lvl, p);
      free(p);
      i++;
    }
  }
  const cJSON *not = cJSON_GetObjectItemCaseSensitive(s, "not");
  if(cJSON_IsObject(not)) {
    char *p = pf("%s.not", path);
    nested(c, not, lvl, p);
    free(p);
  }
  add_pattern(c, s, path);
}

static void forbid(struct sctx *c, const char *path, const char *key, const char *detail)
{
  char *f = pf("%s.%s", path, key);
  ferr_forbidden(c->structural, f, detail);
  free(f);
}

/* Inside anyOf/allOf/oneOf/not only value validations may appear. */
static void nested(struct sctx *c, const cJSON *v, enum level lvl, const char *path)
{
  if(!cJSON_IsObject(v))
    return;
  value_validation(c, v, false, false, lvl, path);
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(v, "items"), *k;
  if(cJSON_IsObject(items)) {
    char *p = pf("%s.items", path);
    nested(c, items, lvl, p);
    free(p);
  }
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(v, "properties"))
  {
    char *p = pf("%s.properties[%s]", path, k->string);
    nested(c, k, FIELD, p);
    free(p);
  }
  const char *ty = str(v, "type");
  if(*ty)
    forbid(c, path, "type", "must be empty to be structural");
  if(cJSON_GetObjectItemCaseSensitive(v, "additionalProperties"))
    forbid(c, path, "additionalProperties", "must be undefined to be structural");
  if(cJSON_GetObjectItemCaseSensitive(v, "default"))
    forbid(c, path, "default", "must be undefined to be structural");
  if(*str(v, "title"))
    forbid(c, path, "title", "must be empty to be structural");
  if(*str(v, "description"))
    forbid(c, path, "description", "must be empty to be structural");
  if(schema_flag(v, "nullable"))
    forbid(c, path, "nullable", "must be false to be structural");
  if(schema_flag(v, "x-kubernetes-preserve-unknown-fields"))
    forbid(c, path, "x-kubernetes-preserve-unknown-fields", "must be false to be structural");
  if(schema_flag(v, "x-kubernetes-embedded-resource"))
    forbid(c, path, "x-kubernetes-embedded-resource", "must be false to be structural");
  if(schema_flag(v, "x-kubernetes-int-or-string"))
    forbid(c, path, "x-kubernetes-int-or-string", "must be false to be structural");
  if(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "x-kubernetes-list-map-keys")) > 0)
    forbid(c, path, "x-kubernetes-list-map-keys", "must be empty to be structural");
  if(cJSON_GetObjectItemCaseSensitive(v, "x-kubernetes-list-type"))
    forbid(c, path, "x-kubernetes-list-type", "must be undefined to be structural");
  if(schema_prop(v, "metadata"))
    forbid(c, path, "properties[metadata]", "must not be specified in a nested context");
}

static bool is_type_only(const cJSON *s, const char *type)
{
  return cJSON_IsObject(s) && cJSON_GetArraySize(s) == 1 && !strcmp(str(s, "type"), type);
}

static bool ios_any_of(const cJSON *any)
{
  return cJSON_GetArraySize(any) == 2 && is_type_only(cJSON_GetArrayItem(any, 0), "integer") &&
         is_type_only(cJSON_GetArrayItem(any, 1), "string");
}

static void invalid_type(struct sctx *c, const char *path, const char *key, const char *type,
                         const char *detail)
{
  char *f = pf("%s.%s", path, key);
  ferr_invalid_str(c->structural, f, type, detail);
  free(f);
}

static void openapi_rules(struct sctx *c, const cJSON *s, const char *path);

static void structural(struct sctx *c, const cJSON *s, enum level lvl, const char *path)
{
  if(!cJSON_IsObject(s))
    return;
  openapi_rules(c, s, path);
  const char *ty = str(s, "type");
  const cJSON *items = schema_items(s), *k;
  if(!strcmp(ty, "array") && !items) {
    char *f = pf("%s.items", path);
    ferr_required(c->structural, f, "must be specified");
    free(f);
  }
  if(items) {
    char *p = pf("%s.items", path);
    structural(c, items, ITEM, p);
    free(p);
  }
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, "properties"))
  {
    char *p = pf("%s.properties[%s]", path, k->string);
    structural(c, k, FIELD, p);
    free(p);
  }
  const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
  if(addl && lvl == ROOT)
    forbid(c, path, "additionalProperties", "must not be used at the root");
  if(cJSON_IsObject(addl)) {
    char *p = pf("%s.additionalProperties", path);
    structural(c, addl, FIELD, p);
    free(p);
  }
  bool ios = schema_flag(s, "x-kubernetes-int-or-string"), pres = schema_flag(s, "x-kubernetes-preserve-unknown-fields");
  bool emb = schema_flag(s, "x-kubernetes-embedded-resource");
  cJSON *t = cJSON_CreateTrue();
  if(ios && pres) {
    char *f = pf("%s.x-kubernetes-preserve-unknown-fields", path);
    ferr_invalid(c->structural, f, t, "must be false if x-kubernetes-int-or-string is true");
    free(f);
  }
  if(ios && emb) {
    char *f = pf("%s.x-kubernetes-embedded-resource", path);
    ferr_invalid(c->structural, f, t, "must be false if x-kubernetes-int-or-string is true");
    free(f);
  }
  cJSON_Delete(t);
  const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
  bool skip_any = ios_any_of(cJSON_GetObjectItemCaseSensitive(s, "anyOf"));
  bool skip_all = cJSON_GetArraySize(all) >= 1 && ios_any_of(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(all, 0), "anyOf"));
  value_validation(c, s, skip_any, skip_all, lvl, path);
  bool meta = lvl == ROOT || emb;
  if(emb && strcmp(ty, "object")) {
    char *f = pf("%s.type", path);
    if(!*ty)
      ferr_required(c->structural, f, "must be object if x-kubernetes-embedded-resource is true");
    else
      ferr_invalid_str(c->structural, f, ty, "must be object if x-kubernetes-embedded-resource is true");
    free(f);
  } else if(!*ty && !ios && !pres) {
    char *f = pf("%s.type", path);
    ferr_required(c->structural, f, lvl == ROOT ? "must not be empty at the root"
                                    : lvl == ITEM ? "must not be empty for specified array items"
                                                  : "must not be empty for specified object fields");
    free(f);
  }
  if(emb && addl)
    forbid(c, path, "additionalProperties", "must not be used if x-kubernetes-embedded-resource is set");
  if(lvl == ROOT && *ty && strcmp(ty, "object"))
    invalid_type(c, path, "type", ty, "must be object at the root");
  const cJSON *p;
  if(meta && (p = schema_prop(s, "kind")) && strcmp(str(p, "type"), "string"))
    invalid_type(c, path, "properties[kind].type", str(p, "type"), "must be string");
  if(meta && (p = schema_prop(s, "apiVersion")) && strcmp(str(p, "type"), "string"))
    invalid_type(c, path, "properties[apiVersion].type", str(p, "type"), "must be string");
  if(meta && (p = schema_prop(s, "metadata")) && strcmp(str(p, "type"), "object"))
    invalid_type(c, path, "properties[metadata].type", str(p, "type"), "must be object");
  if(lvl == ROOT && (p = schema_prop(s, "metadata"))) {
    /* only name and generateName may be restricted */
    bool other = false;
    const cJSON *m;
    cJSON_ArrayForEach(m, p)
    {
      if(!strcmp(m->string, "type") || !strcmp(m->string, "default"))
        continue;
      if(!strcmp(m->string, "properties")) {
        const cJSON *q;
        cJSON_ArrayForEach(q, m)
          other = other || (strcmp(q->string, "name") && strcmp(q->string, "generateName"));
      } else if(strcmp(m->string, "description"))
        other = true;
    }
    if(other)
      forbid(c, path, "properties[metadata]",
             "must not specify anything other than name and generateName, but metadata is implicitly specified");
  }
  if(emb && !pres && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "properties")) == 0) {
    char *f = pf("%s.properties", path);
    ferr_required(c->structural, f, "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields");
    free(f);
  }
}

/* ---- the OpenAPI rules CRDs add (ValidateCustomResourceDefinitionOpenAPISchema) ---- */

static void openapi_rules(struct sctx *c, const cJSON *s, const char *path)
{
  cJSON *out = c->causes;
  const char *ty = str(s, "type");
  static const char *const types[] = { "array", "boolean", "integer", "number", "object", "string" };
  char *f;
  if(!strcmp(ty, "null")) {
    f = pf("%s.type", path);
    ferr_forbidden(out, f, "type cannot be set to null, use nullable as an alternative");
    free(f);
  } else if(*ty) {
    bool ok = false;
    for(size_t i = 0; i < 6 && !ok; i++)
      ok = !strcmp(ty, types[i]);
    if(!ok) {
      f = pf("%s.type", path);
      cJSON *v = cJSON_CreateString(ty);
      ferr_not_supported(out, f, v, types, 6);
      cJSON_Delete(v);
      free(f);
    }
  }
  if(cJSON_GetObjectItemCaseSensitive(s, "$ref")) {
    f = pf("%s.$ref", path);
    ferr_forbidden(out, f, "$ref is not supported");
    free(f);
  }
  if(schema_flag(s, "uniqueItems")) {
    f = pf("%s.uniqueItems", path);
    ferr_forbidden(out, f, "uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
    free(f);
  }
  const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
  if(cJSON_IsFalse(addl)) {
    f = pf("%s.additionalProperties", path);
    ferr_forbidden(out, f, "additionalProperties cannot be set to false");
    free(f);
  }
  if(addl && cJSON_GetObjectItemCaseSensitive(s, "properties")) {
    f = pf("%s.additionalProperties", path);
    ferr_forbidden(out, f, "additionalProperties and properties are mutual exclusive");
    free(f);
  }
  if(schema_flag(s, "x-kubernetes-int-or-string") && *ty) {
    f = pf("%s.type", path);
    ferr_invalid_str(out, f, ty, "must be empty if x-kubernetes-int-or-string is true");
    free(f);
  }
  const char *lt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-list-type"));
  const cJSON *keys = cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-list-map-keys");
  const cJSON *items = schema_items(s);
  if(lt && strcmp(lt, "atomic") && strcmp(lt, "set") && strcmp(lt, "map")) {
    static const char *const lts[] = { "atomic", "set", "map" };
    f = pf("%s.x-kubernetes-list-type", path);
    cJSON *v = cJSON_CreateString(lt);
    ferr_not_supported(out, f, v, lts, 3);
    cJSON_Delete(v);
    free(f);
  }
  if(cJSON_GetArraySize(keys) > 0 && !(lt && !strcmp(lt, "map"))) {
    f = pf("%s.x-kubernetes-list-map-keys", path);
    ferr_forbidden(out, f, "must be empty if x-kubernetes-list-type is not map");
    free(f);
  }
  if(lt && !strcmp(lt, "map")) {
    if(cJSON_GetArraySize(keys) == 0) {
      f = pf("%s.x-kubernetes-list-map-keys", path);
      ferr_required(out, f, "must not be empty if x-kubernetes-list-type is map");
      free(f);
    }
    if(!items) {
      f = pf("%s.items", path);
      ferr_required(out, f, "must have a schema if x-kubernetes-list-type is map");
      free(f);
    } else if(strcmp(str(items, "type"), "object")) {
      f = pf("%s.items.type", path);
      ferr_invalid_str(out, f, str(items, "type"), "must be object if parent array's x-kubernetes-list-type is map");
      free(f);
    } else {
      const cJSON *k;
      cJSON_ArrayForEach(k, keys)
      {
        if(!cJSON_IsString(k) || !schema_prop(items, k->valuestring)) {
          f = pf("%s.x-kubernetes-list-map-keys", path);
          ferr_invalid(out, f, keys, "entries must all be names of item properties");
          free(f);
        }
      }
    }
  }
  if(lt && !strcmp(lt, "set") && items && (!strcmp(str(items, "type"), "object") || !strcmp(str(items, "type"), "array"))) {
    f = pf("%s.items.type", path);
    ferr_invalid_str(out, f, str(items, "type"), "must be a scalar type if parent array's x-kubernetes-list-type is set");
    free(f);
  }
}

/* Defaults must survive pruning unchanged and pass their own schema. */
static void check_defaults(struct crd_entry *e, const cJSON *s, const char *path, bool in_meta, cJSON *causes)
{
  if(!cJSON_IsObject(s))
    return;
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(s, "default");
  if(d && !in_meta) {
    char *f = pf("%s.default", path);
    cJSON *pruned = cJSON_Duplicate(d, true);
    schema_prune(pruned, s, schema_flag(s, "x-kubernetes-embedded-resource"));
    if(!json_equal(pruned, d))
      ferr_invalid(causes, f, d, "must not have unknown fields");
    else
      schema_validate_value(e, s, d, f, causes);
    cJSON_Delete(pruned);
    free(f);
  }
  const cJSON *k;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, "properties"))
  {
    char *p = pf("%s.properties[%s]", path, k->string);
    check_defaults(e, k, p, in_meta, causes);
    free(p);
  }
  if(schema_items(s)) {
    char *p = pf("%s.items", path);
    check_defaults(e, schema_items(s), p, in_meta, causes);
    free(p);
  }
  const cJSON *addl = schema_addl(s);
  if(cJSON_IsObject(addl)) {
    char *p = pf("%s.additionalProperties", path);
    check_defaults(e, addl, p, in_meta, causes);
    free(p);
  }
}

void crd_check_schema(struct crd_entry *e, const cJSON *schema, const char *path, cJSON *causes)
{
  struct sctx sc = { e, cJSON_CreateArray(), causes };
  structural(&sc, schema, ROOT, path);
  ferr_sort(sc.structural);
  while(sc.structural->child)
    cJSON_AddItemToArray(causes, cJSON_DetachItemViaPointer(sc.structural, sc.structural->child));
  cJSON_Delete(sc.structural);
}

void crd_check_defaults(struct crd_entry *e, const cJSON *schema, const char *path, cJSON *causes)
{
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(schema, "properties"))
  {
    char *pp = pf("%s.properties[%s]", path, p->string);
    check_defaults(e, p, pp, !strcmp(p->string, "metadata"), causes);
    free(pp);
  }
}
