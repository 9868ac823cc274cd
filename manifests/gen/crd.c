/* The CustomResourceDefinition of a kind, built from its schema tables. */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static cJSON *prop(const struct sch_field *f, enum sch_type t, bool item);

static void add_common(cJSON *p, const struct sch_field *f, bool item)
{
  if(f->desc && !item)
    cJSON_AddStringToObject(p, "description", f->desc);
}

static cJSON *object_schema(const struct sch_field *fields)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "object");
  if(!fields || !fields->name)
    return o;
  cJSON *props = cJSON_AddObjectToObject(o, "properties");
  cJSON *req = cJSON_CreateArray();
  for(const struct sch_field *f = fields; f->name; f++) {
    cJSON_AddItemToObject(props, f->name, prop(f, f->type, false));
    if(f->flags & SCH_REQUIRED)
      cJSON_AddItemToArray(req, cJSON_CreateString(f->name));
  }
  if(req->child)
    cJSON_AddItemToObject(o, "required", req);
  else
    cJSON_Delete(req);
  return o;
}

static void string_constraints(cJSON *p, const struct sch_field *f)
{
  if(f->enums) {
    cJSON *e = cJSON_AddArrayToObject(p, "enum");
    for(const char *const *v = f->enums; *v; v++)
      cJSON_AddItemToArray(e, cJSON_CreateString(*v));
  }
  int maxlen = f->max_len ? f->max_len : (f->format ? f->format->max_length : 0);
  if(maxlen)
    cJSON_AddNumberToObject(p, "maxLength", maxlen);
  if(f->format && f->format->pattern && !f->enums)
    cJSON_AddStringToObject(p, "pattern", f->format->pattern);
}

/* The schema of a value of type t; f carries constraints (for items, the container's row). */
static cJSON *prop(const struct sch_field *f, enum sch_type t, bool item)
{
  cJSON *p;
  switch(t) {
  case SCH_OBJECT:
    p = object_schema(f->fields);
    break;
  case SCH_RAW:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "object");
    cJSON_AddBoolToObject(p, "x-kubernetes-preserve-unknown-fields", 1);
    break;
  case SCH_STRING:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "string");
    string_constraints(p, f);
    break;
  case SCH_TIME:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "string");
    cJSON_AddStringToObject(p, "format", "date-time");
    break;
  case SCH_INT:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "integer");
    cJSON_AddStringToObject(p, "format", "int64");
    if(!item && (f->flags & SCH_HAS_MIN))
      cJSON_AddNumberToObject(p, "minimum", (double)f->min);
    if(!item && (f->flags & SCH_HAS_MAX))
      cJSON_AddNumberToObject(p, "maximum", (double)f->max);
    break;
  case SCH_BOOL:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "boolean");
    break;
  case SCH_QUANTITY: {
    p = cJSON_CreateObject();
    cJSON *any = cJSON_AddArrayToObject(p, "anyOf");
    cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "type", "integer");
    cJSON_AddStringToObject(b, "type", "string");
    cJSON_AddItemToArray(any, a);
    cJSON_AddItemToArray(any, b);
    cJSON_AddStringToObject(p, "pattern", fmt_quantity.pattern);
    cJSON_AddBoolToObject(p, "x-kubernetes-int-or-string", 1);
    break;
  }
  case SCH_ARRAY:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "array");
    cJSON_AddItemToObject(p, "items", f->item == SCH_OBJECT ? object_schema(f->fields)
                                                            : prop(f, f->item, true));
    if(f->max_items)
      cJSON_AddNumberToObject(p, "maxItems", f->max_items);
    if(f->flags & SCH_CONDITIONS) {
      cJSON_AddStringToObject(p, "x-kubernetes-list-type", "map");
      cJSON *keys = cJSON_AddArrayToObject(p, "x-kubernetes-list-map-keys");
      cJSON_AddItemToArray(keys, cJSON_CreateString("type"));
    } else if((f->flags & SCH_UNIQUE) && f->item != SCH_OBJECT)
      cJSON_AddStringToObject(p, "x-kubernetes-list-type", "set");
    break;
  case SCH_MAP:
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "object");
    cJSON_AddItemToObject(p, "additionalProperties", f->item == SCH_OBJECT
                                                        ? object_schema(f->fields)
                                                        : prop(f, f->item, true));
    if(f->max_items)
      cJSON_AddNumberToObject(p, "maxProperties", f->max_items);
    break;
  default:
    p = cJSON_CreateObject();
  }
  add_common(p, f, item);
  if(!item && f->dflt) {
    cJSON *d = cJSON_Parse(f->dflt);
    if(d)
      cJSON_AddItemToObject(p, "default", d);
  }
  return p;
}

static cJSON *version_schema(const struct api_kind *k, const struct api_version *v)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "description", k->desc);
  cJSON_AddStringToObject(root, "type", "object");
  cJSON *props = cJSON_AddObjectToObject(root, "properties");
  cJSON *av = cJSON_AddObjectToObject(props, "apiVersion");
  cJSON_AddStringToObject(av, "description", "APIVersion defines the versioned schema of this "
                                             "representation of an object.");
  cJSON_AddStringToObject(av, "type", "string");
  cJSON *kind = cJSON_AddObjectToObject(props, "kind");
  cJSON_AddStringToObject(kind, "description", "Kind is a string value representing the REST "
                                               "resource this object represents.");
  cJSON_AddStringToObject(kind, "type", "string");
  cJSON *meta = cJSON_AddObjectToObject(props, "metadata");
  cJSON_AddStringToObject(meta, "type", "object");
  cJSON *spec = object_schema(v->spec);
  cJSON_AddStringToObject(spec, "description", "What the user asks for.");
  cJSON_AddItemToObject(props, "spec", spec);
  if(v->status) {
    cJSON *st = object_schema(v->status);
    cJSON_AddStringToObject(st, "description", "What the controller observed; written only "
                                               "through the status subresource.");
    cJSON_AddItemToObject(props, "status", st);
  }
  cJSON *req = cJSON_AddArrayToObject(root, "required");
  cJSON_AddItemToArray(req, cJSON_CreateString("spec"));
  return root;
}

/* Whether a value of type t (constraints in f) has a bounded size: every string a maximum
 * length (its own, its format's or an enum), every array and map a maximum count, nothing kept
 * raw. kube-apiserver estimates a CEL rule's cost from those bounds and refuses a CRD whose
 * rules could cost too much; self == oldSelf on a bounded value stays far below. */
static bool bounded_type(const struct sch_field *f, enum sch_type t, int depth);

static bool bounded_fields(const struct sch_field *fields, int depth)
{
  for(const struct sch_field *f = fields; f && f->name; f++)
    if(!bounded_type(f, f->type, depth + 1))
      return false;
  return true;
}

static bool bounded_type(const struct sch_field *f, enum sch_type t, int depth)
{
  if(depth > 16)
    return false;
  switch(t) {
  case SCH_STRING:
    return f->enums || f->max_len || (f->format && f->format->max_length);
  case SCH_INT:
  case SCH_BOOL:
  case SCH_QUANTITY:
  case SCH_TIME:
    return true;
  case SCH_OBJECT:
    return bounded_fields(f->fields, depth);
  case SCH_ARRAY:
  case SCH_MAP:
    if(!f->max_items || (t == SCH_MAP && !(f->key_format && f->key_format->max_length)))
      return false;
    return f->item == SCH_OBJECT ? bounded_fields(f->fields, depth)
                                 : bounded_type(f, f->item, depth + 1);
  case SCH_RAW:
    return false;
  }
  return false;
}

/* The row of hub path ("spec.source") in v's tables, or NULL. */
static const struct sch_field *row_of(const struct api_version *v, const char *path)
{
  const struct sch_field *fields = NULL, *row = NULL;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  char *save = NULL;
  for(char *seg = strtok_r(buf, ".", &save); seg; seg = strtok_r(NULL, ".", &save)) {
    if(!row && !strcmp(seg, "spec")) {
      static const struct sch_field spec_row = { .name = "spec", .type = SCH_OBJECT };
      fields = v->spec;
      row = &spec_row;
      continue;
    }
    if(!fields)
      return NULL;
    const struct sch_field *f = fields;
    while(f->name && strcmp(f->name, seg))
      f++;
    if(!f->name)
      return NULL;
    row = f;
    fields = f->type == SCH_OBJECT ? f->fields : NULL;
  }
  return row;
}

/* Immutability as CRD validation rules too: every field an UPDATE rule keeps immutable
 * (api_check_immutable) gets the transition rule self == oldSelf with the webhook's message, so
 * that an API server without the webhook (uninstalled, or failing open) still refuses to change
 * it. Paths are the hub's, mapped to v's own names; a field v lacks is skipped, and so is one
 * whose size is unbounded (the webhook alone guards it: docs/api/webhook rules). */
static void transition_rules(const struct api_kind *k, const struct api_version *v, cJSON *root)
{
  for(const struct rule *r = k->update_rules; r && r->check; r++) {
    if(r->check != api_check_immutable || strchr(r->field, '['))
      continue;
    char *path = api_is_hub(k, v) ? NULL : api_path_from_hub(v, r->field);
    if(!path)
      path = strdup(r->field); /* the same name in v */
    const struct sch_field *row = path ? row_of(v, path) : NULL; /* before strtok_r cuts it */
    cJSON *node = root;
    char *save = NULL;
    for(char *seg = path ? strtok_r(path, ".", &save) : NULL; seg && node;
        seg = strtok_r(NULL, ".", &save))
      node = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "properties"),
                                              seg);
    bool small = row && (row->type == SCH_OBJECT && !strcmp(row->name, "spec")
                           ? bounded_fields(v->spec, 0)
                           : bounded_type(row, row->type, 0));
    if(node && path && small) {
      cJSON *list = cJSON_GetObjectItemCaseSensitive(node, "x-kubernetes-validations");
      if(!list)
        list = cJSON_AddArrayToObject(node, "x-kubernetes-validations");
      cJSON *rule = cJSON_CreateObject();
      cJSON_AddStringToObject(rule, "rule", "self == oldSelf");
      cJSON_AddStringToObject(rule, "message", r->msg);
      cJSON_AddItemToArray(list, rule);
    }
    free(path);
  }
}

static cJSON *names_of(const struct api_kind *k)
{
  cJSON *n = cJSON_CreateObject();
  char list[128];
  snprintf(list, sizeof(list), "%sList", k->kind);
  cJSON_AddStringToObject(n, "kind", k->kind);
  cJSON_AddStringToObject(n, "listKind", list);
  cJSON_AddStringToObject(n, "plural", k->plural);
  cJSON_AddStringToObject(n, "singular", k->singular);
  if(k->short_names) {
    cJSON *a = cJSON_AddArrayToObject(n, "shortNames");
    for(const char *const *s = k->short_names; *s; s++)
      cJSON_AddItemToArray(a, cJSON_CreateString(*s));
  }
  if(k->categories) {
    cJSON *a = cJSON_AddArrayToObject(n, "categories");
    for(const char *const *s = k->categories; *s; s++)
      cJSON_AddItemToArray(a, cJSON_CreateString(*s));
  }
  return n;
}

cJSON *gen_crd(const struct api_kind *k)
{
  cJSON *crd = cJSON_CreateObject();
  char name[160];
  snprintf(name, sizeof(name), "%s.%s", k->plural, k->group);
  cJSON_AddStringToObject(crd, "apiVersion", "apiextensions.k8s.io/v1");
  cJSON_AddStringToObject(crd, "kind", "CustomResourceDefinition");
  cJSON *meta = cJSON_AddObjectToObject(crd, "metadata");
  cJSON_AddStringToObject(meta, "name", name);
  cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
  cJSON_AddStringToObject(labels, "app.kubernetes.io/part-of", "godwit");
  cJSON *spec = cJSON_AddObjectToObject(crd, "spec");
  cJSON_AddStringToObject(spec, "group", k->group);
  cJSON_AddItemToObject(spec, "names", names_of(k));
  cJSON_AddStringToObject(spec, "scope", k->namespaced ? "Namespaced" : "Cluster");
  cJSON *conv = cJSON_AddObjectToObject(spec, "conversion");
  cJSON_AddStringToObject(conv, "strategy", "Webhook");
  cJSON *wh = cJSON_AddObjectToObject(conv, "webhook");
  cJSON *crv = cJSON_AddArrayToObject(wh, "conversionReviewVersions");
  cJSON_AddItemToArray(crv, cJSON_CreateString("v1"));
  cJSON *svc = cJSON_AddObjectToObject(cJSON_AddObjectToObject(wh, "clientConfig"), "service");
  cJSON_AddStringToObject(svc, "namespace", GEN_NAMESPACE);
  cJSON_AddStringToObject(svc, "name", GEN_SERVICE);
  cJSON_AddStringToObject(svc, "path", "/convert");
  cJSON_AddNumberToObject(svc, "port", 443);
  cJSON *versions = cJSON_AddArrayToObject(spec, "versions");
  const struct api_version *hub = api_hub(k);
  for(size_t i = 0; i < k->nversions; i++) {
    const struct api_version *v = &k->versions[i];
    cJSON *ver = cJSON_CreateObject();
    cJSON_AddStringToObject(ver, "name", v->name);
    cJSON_AddBoolToObject(ver, "served", 1);
    cJSON_AddBoolToObject(ver, "storage", v == hub);
    if(v != hub) {
      char w[256];
      snprintf(w, sizeof(w), "%s/%s %s is deprecated; use %s/%s %s", k->group, v->name, k->kind,
               k->group, hub->name, k->kind);
      cJSON_AddBoolToObject(ver, "deprecated", 1);
      cJSON_AddStringToObject(ver, "deprecationWarning", w);
    }
    cJSON *schema = cJSON_AddObjectToObject(ver, "schema");
    cJSON *root = version_schema(k, v);
    transition_rules(k, v, root);
    cJSON_AddItemToObject(schema, "openAPIV3Schema", root);
    if(v->status) {
      cJSON *sub = cJSON_AddObjectToObject(ver, "subresources");
      cJSON_AddItemToObject(sub, "status", cJSON_CreateObject());
    }
    if(k->columns && k->columns->name) {
      cJSON *cols = cJSON_AddArrayToObject(ver, "additionalPrinterColumns");
      for(const struct printer_column *c = k->columns; c->name; c++) {
        /* A column names a hub path; older versions show it only where they have it. */
        cJSON *col = cJSON_CreateObject();
        cJSON_AddStringToObject(col, "name", c->name);
        cJSON_AddStringToObject(col, "type", c->type);
        char *alt = v == hub ? NULL : api_path_from_hub(v, c->json_path + 1);
        char path[256];
        snprintf(path, sizeof(path), "%s%s", alt ? "." : "", alt ? alt : c->json_path);
        free(alt);
        cJSON_AddStringToObject(col, "jsonPath", path);
        if(c->desc)
          cJSON_AddStringToObject(col, "description", c->desc);
        if(c->priority)
          cJSON_AddNumberToObject(col, "priority", c->priority);
        cJSON_AddItemToArray(cols, col);
      }
    }
    cJSON_AddItemToArray(versions, ver);
  }
  return crd;
}
