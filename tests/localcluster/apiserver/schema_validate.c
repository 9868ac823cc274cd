/*
 * schema_validate.c: a custom resource against its version's openAPIV3Schema, as kube-apiserver
 * does it: kube-openapi's SchemaValidator (validators in its order: type, anyOf/allOf/oneOf/not,
 * string, format, number, array, enum, object), its error texts ("spec.x in body should be
 * greater than or equal to 1"), and apiextensions' mapping of those errors to field errors
 * (Required, NotSupported, TooLong, TooMany, TypeInvalid, Invalid). The x-kubernetes-list-type
 * checks are in schema_listtype.c.
 *
 * Order: kube iterates Go maps, so the order of several errors differs from run to run there;
 * here properties go in schema order and other keys in document order.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"

struct vctx {
  const struct crd_entry *e;
  const char *prefix;
  cJSON *causes;
};

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if(vasprintf(&s, f, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

/* kube's errPath: fldPath.Child(TrimPrefix(name, ".")) unless name is "" or ".". */
static char *err_field(const struct vctx *c, const char *name)
{
  if(!*name || !strcmp(name, "."))
    return strdup(c->prefix);
  if(*name == '.')
    name++;
  return *c->prefix ? fmt("%s.%s", c->prefix, name) : strdup(name);
}

/* One kube-openapi Validation error turned into a field error. value NULL = "" (kube's default
 * when the error carries no value). */
static void verr(const struct vctx *c, const char *reason, const char *name, const cJSON *value,
                 const char *msg)
{
  char *f = err_field(c, name);
  cJSON *empty = value ? NULL : cJSON_CreateString("");
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = go_badvalue(&sb, value ? value : empty);
  ferr_add(c->causes, reason, f, rc ? "\"\"" : strbuf_str(&sb), msg);
  strbuf_release(&sb);
  cJSON_Delete(empty);
  free(f);
}

/* errors.InvalidType(name, "body", type, value) with a string value, as a TypeInvalid error. */
static void type_err(const struct vctx *c, const char *name, const char *type, const char *value)
{
  cJSON *v = cJSON_CreateString(value);
  struct strbuf q;
  strbuf_init(&q, 1 << 16);
  gw_rc rc = go_quote(&q, value);
  char *msg = fmt("%s in body must be of type %s: %s", name, type, rc ? "\"\"" : strbuf_str(&q));
  verr(c, "FieldValueTypeInvalid", name, v, msg);
  free(msg);
  strbuf_release(&q);
  cJSON_Delete(v);
}

static bool fits_int64(double d)
{
  return isfinite(d) && d == floor(d) && fabs(d) < 9223372036854775808.0;
}

static const char *sch_type(const cJSON *d)
{
  if(cJSON_IsBool(d))
    return "boolean";
  if(cJSON_IsString(d))
    return "string";
  if(cJSON_IsNumber(d))
    return fits_int64(d->valuedouble) ? "integer" : "number";
  if(cJSON_IsArray(d))
    return "array";
  return "object";
}

static size_t rune_count(const char *s)
{
  size_t n = 0;
  for(const unsigned char *p = (const unsigned char *)s; *p; p++)
    if((*p & 0xc0) != 0x80)
      n++;
  return n;
}

/* ---- the validators ---- */

static void validate(struct vctx *c, const cJSON *s, const cJSON *d, const char *path);

static void v_type(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(s, "type"));
  bool ios = schema_flag(s, "x-kubernetes-int-or-string");
  const char *types = ios ? "integer,string" : type;
  const char *format = cJSON_GetStringValue(cJSON_GetObjectItem(s, "format"));
  if(format && !*format)
    format = NULL;
  if(!(types && *types) && !format)
    return;
  if(!types)
    types = "";
  bool has_int = ios || (type && !strcmp(type, "integer"));
  bool has_num = type && !strcmp(type, "number");
  if(!d || cJSON_IsNull(d)) {
    if(*types && strcmp(types, "null") && !schema_flag(s, "nullable"))
      type_err(c, path, types, "null");
    return;
  }
  const char *st = sch_type(d);
  const char *dfmt = !strcmp(st, "integer") ? "int64" : !strcmp(st, "number") ? "double" : "";
  bool contains = ios ? (!strcmp(st, "integer") || !strcmp(st, "string")) : (type && !strcmp(type, st));
  bool float_int = !strcmp(st, "number") && has_int && fits_int64(d->valuedouble);
  bool int_float = !strcmp(st, "integer") && has_num;
  bool str_or_arr = cJSON_IsString(d) || cJSON_IsArray(d);
  if(!str_or_arr && format &&
     !(contains || !strcmp(format, dfmt) || float_int || int_float ||
       (!strcmp(format, "int64") && !strcmp(dfmt, "int32")))) {
    type_err(c, path, format, dfmt);
    return;
  }
  if(!(has_int || has_num) && format && str_or_arr)
    return;
  if(!(contains || float_int || int_float))
    type_err(c, path, types, st);
}

static cJSON *sub_validate(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  struct vctx sub = { c->e, c->prefix, cJSON_CreateArray() };
  validate(&sub, s, d, path);
  return sub.causes;
}

static void merge(struct vctx *c, cJSON *from)
{
  while(from && from->child)
    cJSON_AddItemToArray(c->causes, cJSON_DetachItemViaPointer(from, from->child));
  cJSON_Delete(from);
}

static void composite(struct vctx *c, const char *msgfmt, const char *path, const char *extra)
{
  struct strbuf q;
  strbuf_init(&q, 1 << 16);
  gw_rc rc = go_quote(&q, path);
  char *msg = fmt(msgfmt, rc ? "\"\"" : strbuf_str(&q), extra);
  /* errors.New: not a *Validation, so kube reports it on fldPath itself with the value "" */
  cJSON *empty = cJSON_CreateString("");
  ferr_invalid(c->causes, *c->prefix ? c->prefix : "<nil>", empty, msg);
  cJSON_Delete(empty);
  free(msg);
  strbuf_release(&q);
}

static void v_props(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const cJSON *any = cJSON_GetObjectItem(s, "anyOf"), *one = cJSON_GetObjectItem(s, "oneOf");
  const cJSON *all = cJSON_GetObjectItem(s, "allOf"), *not = cJSON_GetObjectItem(s, "not");
  const cJSON *k;
  if(cJSON_GetArraySize(any) > 0) {
    cJSON *best = NULL;
    bool ok = false;
    cJSON_ArrayForEach(k, any)
    {
      cJSON *r = sub_validate(c, k, d, path);
      if(!cJSON_GetArraySize(r)) {
        ok = true;
        cJSON_Delete(r);
        cJSON_Delete(best);
        best = NULL;
        break;
      }
      if(!best)
        best = r; /* kube keeps the one with most passing checks; the first on ties */
      else
        cJSON_Delete(r);
    }
    if(!ok)
      composite(c, "%s must validate at least one schema (anyOf)%s", path, "");
    merge(c, best);
  }
  if(cJSON_GetArraySize(one) > 0) {
    int valid = 0;
    cJSON *best = NULL;
    cJSON_ArrayForEach(k, one)
    {
      cJSON *r = sub_validate(c, k, d, path);
      if(!cJSON_GetArraySize(r)) {
        valid++;
        cJSON_Delete(r);
      } else if(!valid && !best)
        best = r;
      else
        cJSON_Delete(r);
    }
    if(valid != 1) {
      char extra[64];
      snprintf(extra, sizeof(extra), valid ? "Found %d valid alternatives" : "Found none valid", valid);
      composite(c, "%s must validate one and only one schema (oneOf). %s", path, extra);
      merge(c, valid ? NULL : best);
      if(valid)
        cJSON_Delete(best);
    } else
      cJSON_Delete(best);
  }
  if(cJSON_GetArraySize(all) > 0) {
    int valid = 0, n = 0;
    cJSON_ArrayForEach(k, all)
    {
      cJSON *r = sub_validate(c, k, d, path);
      n++;
      if(!cJSON_GetArraySize(r))
        valid++;
      merge(c, r);
    }
    if(valid != n)
      composite(c, "%s must validate all the schemas (allOf)%s", path, valid ? "" : ". None validated");
  }
  if(cJSON_IsObject(not)) {
    cJSON *r = sub_validate(c, not, d, path);
    if(!cJSON_GetArraySize(r))
      composite(c, "%s must not validate the schema (not)%s", path, "");
    cJSON_Delete(r);
  }
}

static void v_string(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const cJSON *maxl = cJSON_GetObjectItem(s, "maxLength"), *minl = cJSON_GetObjectItem(s, "minLength");
  const char *pat = cJSON_GetStringValue(cJSON_GetObjectItem(s, "pattern"));
  size_t n = rune_count(d->valuestring);
  if(cJSON_IsNumber(maxl) && (double)n > maxl->valuedouble) {
    /* field.TooLongMaxLength: the value is not printed */
    char *f = err_field(c, path);
    char detail[64];
    snprintf(detail, sizeof(detail), "may not be longer than %lld", (long long)maxl->valuedouble);
    ferr_add(c->causes, "FieldValueTooLong", f, FERR_NOVALUE, detail);
    free(f);
    return;
  }
  if(cJSON_IsNumber(minl) && (double)n < minl->valuedouble) {
    char *msg = fmt("%s in body should be at least %lld chars long", path, (long long)minl->valuedouble);
    verr(c, "FieldValueInvalid", path, d, msg);
    free(msg);
    return;
  }
  if(pat && *pat) {
    const struct rx *rx = crd_entry_pattern(c->e, pat);
    if(rx && !rx_match(rx, d->valuestring)) {
      char *msg = fmt("%s in body should match '%s'", path, pat);
      verr(c, "FieldValueInvalid", path, d, msg);
      free(msg);
    }
  }
}

static void v_format(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const char *format = cJSON_GetStringValue(cJSON_GetObjectItem(s, "format"));
  if(!format || !schema_format_known(format) || schema_format_ok(format, d->valuestring))
    return;
  type_err(c, path, format, d->valuestring);
}

/* minimum/maximum: int64 data is compared and printed as int64 (MinimumNativeType). */
static void bound(struct vctx *c, const cJSON *d, const char *path, const cJSON *lim, bool excl,
                  bool max)
{
  double v = d->valuedouble, l = lim->valuedouble;
  bool bad = max ? (excl ? v >= l : v > l) : (excl ? v <= l : v < l);
  if(!bad)
    return;
  struct strbuf sb;
  strbuf_init(&sb, 128);
  gw_rc rc = fits_int64(v) ? strbuf_addf(&sb, "%lld", (long long)l) : go_float(&sb, l);
  char *msg = fmt("%s in body should be %s %s", path,
                  max ? (excl ? "less than" : "less than or equal to")
                      : (excl ? "greater than" : "greater than or equal to"),
                  rc ? "?" : strbuf_str(&sb));
  verr(c, "FieldValueInvalid", path, d, msg);
  free(msg);
  strbuf_release(&sb);
}

static void v_number(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const cJSON *mo = cJSON_GetObjectItem(s, "multipleOf");
  if(cJSON_IsNumber(mo) && mo->valuedouble > 0) {
    double q = d->valuedouble / mo->valuedouble;
    if(q != floor(q)) {
      struct strbuf sb;
      strbuf_init(&sb, 128);
      gw_rc rc = go_number(&sb, mo);
      char *msg = fmt("%s in body should be a multiple of %s", path, rc ? "?" : strbuf_str(&sb));
      verr(c, "FieldValueInvalid", path, d, msg);
      free(msg);
      strbuf_release(&sb);
    }
  }
  const cJSON *min = cJSON_GetObjectItem(s, "minimum"), *max = cJSON_GetObjectItem(s, "maximum");
  if(cJSON_IsNumber(min))
    bound(c, d, path, min, cJSON_IsTrue(cJSON_GetObjectItem(s, "exclusiveMinimum")), false);
  if(cJSON_IsNumber(max))
    bound(c, d, path, max, cJSON_IsTrue(cJSON_GetObjectItem(s, "exclusiveMaximum")), true);
}

static void too_many(struct vctx *c, const char *path, int actual, long long max)
{
  char *f = err_field(c, path);
  char val[32], detail[64];
  snprintf(val, sizeof(val), "%d", actual);
  snprintf(detail, sizeof(detail), "must have at most %lld items", max);
  ferr_add(c->causes, "FieldValueTooMany", f, val, detail);
  free(f);
}

static void v_array(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const cJSON *items = schema_items(s);
  int size = cJSON_GetArraySize(d);
  if(items) {
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, d)
    {
      char *p = fmt("%s[%d]", path, i++);
      validate(c, items, x, p);
      free(p);
    }
  }
  const cJSON *mini = cJSON_GetObjectItem(s, "minItems"), *maxi = cJSON_GetObjectItem(s, "maxItems");
  if(cJSON_IsNumber(mini) && size < mini->valuedouble) {
    char *msg = fmt("%s in body should have at least %lld items", path, (long long)mini->valuedouble);
    cJSON *n = cJSON_CreateNumber(size);
    verr(c, "FieldValueInvalid", path, n, msg);
    cJSON_Delete(n);
    free(msg);
  }
  if(cJSON_IsNumber(maxi) && size > maxi->valuedouble)
    too_many(c, path, size, (long long)maxi->valuedouble);
}

static void v_enum(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  const cJSON *en = cJSON_GetObjectItem(s, "enum"), *k;
  if(cJSON_GetArraySize(en) <= 0)
    return;
  cJSON_ArrayForEach(k, en)
    if(d && json_equal(k, d))
      return;
  size_t n = (size_t)cJSON_GetArraySize(en), i = 0;
  char **vals = calloc(n, sizeof(*vals));
  if(!vals)
    return;
  cJSON_ArrayForEach(k, en)
  {
    /* cJSON's allocations carry the arena's tag (shared/arena.h): copy them to the heap */
    char *p = cJSON_IsString(k) ? NULL : cJSON_PrintUnformatted(k);
    vals[i++] = strdup(p ? p : k->valuestring ? k->valuestring : "");
    cJSON_free(p);
  }
  char *f = err_field(c, path);
  ferr_not_supported(c->causes, f, d, (const char *const *)vals, n);
  free(f);
  for(i = 0; i < n; i++)
    free(vals[i]);
  free(vals);
}

static void v_object(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  int n = cJSON_GetArraySize(d);
  const cJSON *minp = cJSON_GetObjectItem(s, "minProperties"), *maxp = cJSON_GetObjectItem(s, "maxProperties");
  if(cJSON_IsNumber(minp) && n < minp->valuedouble) {
    char *msg = fmt("%s in body should have at least %lld properties", path, (long long)minp->valuedouble);
    cJSON *v = cJSON_CreateNumber(n);
    verr(c, "FieldValueInvalid", path, v, msg);
    cJSON_Delete(v);
    free(msg);
    return;
  }
  if(cJSON_IsNumber(maxp) && n > maxp->valuedouble) {
    too_many(c, path, n, (long long)maxp->valuedouble);
    return;
  }
  const cJSON *props = cJSON_GetObjectItem(s, "properties"), *addl = schema_addl(s), *k;
  if(cJSON_IsObject(addl)) {
    cJSON_ArrayForEach(k, d)
    {
      if(cJSON_GetObjectItemCaseSensitive(props, k->string))
        continue;
      char *p = fmt("%s.%s", path, k->string);
      validate(c, addl, k, p);
      free(p);
    }
  }
  cJSON_ArrayForEach(k, props)
  {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, k->string);
    if(!v)
      continue;
    char *p = *path ? fmt("%s.%s", path, k->string) : strdup(k->string);
    validate(c, k, v, p);
    free(p);
  }
  cJSON_ArrayForEach(k, cJSON_GetObjectItem(s, "required"))
  {
    if(!cJSON_IsString(k) || cJSON_GetObjectItemCaseSensitive(d, k->valuestring))
      continue;
    char *p = fmt("%s.%s", path, k->valuestring);
    char *f = err_field(c, p);
    ferr_required(c->causes, f, NULL);
    free(f);
    free(p);
  }
}

static void validate(struct vctx *c, const cJSON *s, const cJSON *d, const char *path)
{
  if(!cJSON_IsObject(s))
    return;
  if(!d || cJSON_IsNull(d)) {
    v_type(c, s, d, path);
    v_enum(c, s, d, path);
    return;
  }
  v_type(c, s, d, path);
  v_props(c, s, d, path);
  if(cJSON_IsString(d)) {
    v_string(c, s, d, path);
    v_format(c, s, d, path);
  }
  if(cJSON_IsNumber(d))
    v_number(c, s, d, path);
  if(cJSON_IsArray(d))
    v_array(c, s, d, path);
  v_enum(c, s, d, path);
  if(cJSON_IsObject(d))
    v_object(c, s, d, path);
}

void schema_validate_value(const struct crd_entry *e, const cJSON *schema, const cJSON *data,
                           const char *prefix, cJSON *causes)
{
  struct vctx c = { e, prefix ? prefix : "", causes };
  validate(&c, schema, data, "");
}
