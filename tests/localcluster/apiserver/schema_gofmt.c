/*
 * schema_gofmt.c: Go's value printing (%q, %v, %#v) and field.Error causes, so that the local
 * API server's messages are kube-apiserver's byte for byte (see layers.h).
 *
 * Numbers: kube decodes JSON into int64 when the literal is integral and float64 otherwise;
 * cJSON keeps doubles, so an integral value that fits in 2^63 prints as int64 ("3") and any other
 * as float64 with fmt's %v rules ("1.5", "1e+06", "1e-05").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

/* Decodes one UTF-8 rune at s; *n gets its length; invalid bytes give -1 with *n = 1. */
static long utf8_rune(const unsigned char *s, size_t *n)
{
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if(len == 0) {
    *n = 1;
    return -1;
  }
  long r = len == 1 ? (long)c : len == 2 ? (long)(c & 0x1f) : len == 3 ? (long)(c & 0x0f) : (long)(c & 0x07);
  for(int i = 1; i < len; i++) {
    if((s[i] & 0xc0) != 0x80) {
      *n = 1;
      return -1;
    }
    r = (r << 6) | (s[i] & 0x3f);
  }
  static const long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
  if(r < min[len] || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) {
    *n = 1;
    return -1;
  }
  *n = (size_t)len;
  return r;
}

gw_rc go_quote(struct strbuf *sb, const char *s)
{
  gw_rc rc = strbuf_addc(sb, '"');
  const unsigned char *p = (const unsigned char *)s;
  while(!rc && *p) {
    size_t n;
    long r = utf8_rune(p, &n);
    if(r < 0)
      rc = strbuf_addf(sb, "\\x%02x", *p);
    else if(r == '"' || r == '\\')
      rc = strbuf_addf(sb, "\\%c", (char)r);
    else if(r == '\a')
      rc = strbuf_adds(sb, "\\a");
    else if(r == '\b')
      rc = strbuf_adds(sb, "\\b");
    else if(r == '\f')
      rc = strbuf_adds(sb, "\\f");
    else if(r == '\n')
      rc = strbuf_adds(sb, "\\n");
    else if(r == '\r')
      rc = strbuf_adds(sb, "\\r");
    else if(r == '\t')
      rc = strbuf_adds(sb, "\\t");
    else if(r == '\v')
      rc = strbuf_adds(sb, "\\v");
    else if(r < 0x20 || r == 0x7f)
      rc = strbuf_addf(sb, "\\x%02lx", r);
    else if(r >= 0x80 && r < 0xa0)
      rc = strbuf_addf(sb, "\\u%04lx", r);
    else
      rc = strbuf_add(sb, p, n);
    p += n;
  }
  if(!rc)
    rc = strbuf_addc(sb, '"');
  return rc;
}

gw_rc go_float(struct strbuf *sb, double d)
{
  if(isnan(d))
    return strbuf_adds(sb, "NaN");
  if(isinf(d))
    return strbuf_adds(sb, d > 0 ? "+Inf" : "-Inf");
  if(d == 0)
    return strbuf_adds(sb, signbit(d) ? "-0" : "0");
  /* The shortest digits that read back as d. */
  char digits[40];
  int prec;
  for(prec = 1; prec <= 17; prec++) {
    snprintf(digits, sizeof(digits), "%.*e", prec - 1, d);
    if(strtod(digits, NULL) == d)
      break;
  }
  /* digits is [-]D[.DDD]e[+-]XX: split mantissa digits and exponent. */
  char mant[24];
  size_t nm = 0;
  const char *q = digits;
  bool neg = *q == '-';
  if(neg)
    q++;
  for(; *q && *q != 'e'; q++)
    if(*q != '.')
      mant[nm++] = *q;
  mant[nm] = '\0';
  int exp = atoi(q + 1);
  /* strconv's 'g' with the shortest precision: %e when exp < -4 || exp >= 6 (fmt.Println(1e6)
   * prints 1e+06). */
  int eprec = 6;
  gw_rc rc = neg ? strbuf_addc(sb, '-') : GW_OK;
  if(exp < -4 || exp >= eprec) {
    if(!rc)
      rc = strbuf_addc(sb, mant[0]);
    if(!rc && nm > 1)
      rc = strbuf_addf(sb, ".%s", mant + 1);
    if(!rc)
      rc = strbuf_addf(sb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return rc;
  }
  if(exp < 0) {
    if(!rc)
      rc = strbuf_adds(sb, "0.");
    for(int i = 0; !rc && i < -exp - 1; i++)
      rc = strbuf_addc(sb, '0');
    if(!rc)
      rc = strbuf_adds(sb, mant);
    return rc;
  }
  for(int i = 0; !rc && i <= exp; i++)
    rc = strbuf_addc(sb, i < (int)nm ? mant[i] : '0');
  if(!rc && (int)nm > exp + 1)
    rc = strbuf_addf(sb, ".%s", mant + exp + 1);
  return rc;
}

static bool as_int64(const cJSON *n, long long *out)
{
  double d = n->valuedouble;
  if(!isfinite(d) || d != floor(d) || fabs(d) >= 9223372036854775808.0)
    return false;
  *out = (long long)d;
  return true;
}

gw_rc go_number(struct strbuf *sb, const cJSON *n)
{
  long long i;
  if(as_int64(n, &i))
    return strbuf_addf(sb, "%lld", i);
  return go_float(sb, n->valuedouble);
}

static int cmp_members(const void *a, const void *b)
{
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string, y->string);
}

gw_rc go_sharp_v(struct strbuf *sb, const cJSON *v)
{
  if(!v || cJSON_IsNull(v))
    return strbuf_adds(sb, "interface {}(nil)");
  if(cJSON_IsBool(v))
    return strbuf_adds(sb, cJSON_IsTrue(v) ? "true" : "false");
  if(cJSON_IsNumber(v))
    return go_number(sb, v);
  if(cJSON_IsString(v))
    return go_quote(sb, v->valuestring);
  gw_rc rc;
  if(cJSON_IsArray(v)) {
    rc = strbuf_adds(sb, "[]interface {}{");
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
      if(!rc && i++)
        rc = strbuf_adds(sb, ", ");
      if(!rc)
        rc = go_sharp_v(sb, c);
    }
    return rc ? rc : strbuf_addc(sb, '}');
  }
  /* Objects: fmt prints maps with sorted keys. */
  size_t n = (size_t)cJSON_GetArraySize(v);
  const cJSON **m = n ? malloc(n * sizeof(*m)) : NULL;
  if(n && !m)
    return GW_ENOMEM;
  size_t k = 0;
  for(const cJSON *c = v->child; c; c = c->next)
    m[k++] = c;
  if(n)
    qsort(m, n, sizeof(*m), cmp_members);
  rc = strbuf_adds(sb, "map[string]interface {}{");
  for(size_t i = 0; !rc && i < n; i++) {
    if(i)
      rc = strbuf_adds(sb, ", ");
    if(!rc)
      rc = go_quote(sb, m[i]->string);
    if(!rc)
      rc = strbuf_addc(sb, ':');
    if(!rc)
      rc = go_sharp_v(sb, m[i]);
  }
  free(m);
  return rc ? rc : strbuf_addc(sb, '}');
}

gw_rc go_badvalue(struct strbuf *sb, const cJSON *v)
{
  if(!v || cJSON_IsNull(v))
    return go_quote(sb, "null");
  if(cJSON_IsBool(v))
    return strbuf_adds(sb, cJSON_IsTrue(v) ? "true" : "false");
  if(cJSON_IsNumber(v))
    return go_number(sb, v);
  if(cJSON_IsString(v))
    return go_quote(sb, v->valuestring);
  return go_sharp_v(sb, v);
}

/* ---- causes ---- */

static const char *type_text(const char *reason)
{
  static const struct {
    const char *reason, *text;
  } t[] = {
    { "FieldValueNotFound", "Not found" },        { "FieldValueRequired", "Required value" },
    { "FieldValueDuplicate", "Duplicate value" }, { "FieldValueInvalid", "Invalid value" },
    { "FieldValueNotSupported", "Unsupported value" }, { "FieldValueForbidden", "Forbidden" },
    { "FieldValueTooLong", "Too long" },          { "FieldValueTooMany", "Too many" },
    { "InternalError", "Internal error" },        { "FieldValueTypeInvalid", "Invalid value" },
  };
  for(size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if(!strcmp(t[i].reason, reason))
      return t[i].text;
  return reason;
}

void ferr_add(cJSON *causes, const char *reason, const char *field, const char *value,
              const char *detail)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = strbuf_adds(&sb, type_text(reason));
  if(!rc && value)
    rc = strbuf_addf(&sb, ": %s", value);
  if(!rc && detail && *detail)
    rc = strbuf_addf(&sb, ": %s", detail);
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "reason", reason);
  cJSON_AddStringToObject(c, "message", rc ? type_text(reason) : strbuf_str(&sb));
  cJSON_AddStringToObject(c, "field", field && *field ? field : "<nil>");
  cJSON_AddItemToArray(causes, c);
  strbuf_release(&sb);
}

void ferr_required(cJSON *causes, const char *field, const char *detail)
{
  ferr_add(causes, "FieldValueRequired", field, FERR_NOVALUE, detail);
}

void ferr_forbidden(cJSON *causes, const char *field, const char *detail)
{
  ferr_add(causes, "FieldValueForbidden", field, FERR_NOVALUE, detail);
}

static void add_valued(cJSON *causes, const char *reason, const char *field, const cJSON *value,
                       const char *detail)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = go_badvalue(&sb, value);
  ferr_add(causes, reason, field, rc ? "\"\"" : strbuf_str(&sb), detail);
  strbuf_release(&sb);
}

void ferr_invalid(cJSON *causes, const char *field, const cJSON *value, const char *detail)
{
  add_valued(causes, "FieldValueInvalid", field, value, detail);
}

void ferr_invalid_str(cJSON *causes, const char *field, const char *value, const char *detail)
{
  cJSON *s = cJSON_CreateString(value ? value : "");
  ferr_invalid(causes, field, s, detail);
  cJSON_Delete(s);
}

void ferr_not_supported(cJSON *causes, const char *field, const cJSON *value,
                        const char *const *valid, size_t nvalid)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = nvalid ? strbuf_adds(&sb, "supported values: ") : GW_OK;
  for(size_t i = 0; !rc && i < nvalid; i++) {
    if(i)
      rc = strbuf_adds(&sb, ", ");
    if(!rc)
      rc = go_quote(&sb, valid[i]);
  }
  add_valued(causes, "FieldValueNotSupported", field, value, rc ? "" : strbuf_str(&sb));
  strbuf_release(&sb);
}

void ferr_duplicate(cJSON *causes, const char *field, const cJSON *value)
{
  add_valued(causes, "FieldValueDuplicate", field, value, NULL);
}

static char *error_text(const cJSON *c)
{
  const char *f = cJSON_GetStringValue(cJSON_GetObjectItem(c, "field"));
  const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
  size_t n = strlen(f ? f : "") + strlen(m ? m : "") + 3;
  char *s = malloc(n);
  if(s)
    snprintf(s, n, "%s: %s", f ? f : "", m ? m : "");
  return s;
}

struct keyed {
  char *key;
  cJSON *item;
};

static int cmp_keyed(const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;
  return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

void ferr_sort(cJSON *causes)
{
  size_t n = (size_t)cJSON_GetArraySize(causes);
  if(n < 2)
    return;
  struct keyed *k = calloc(n, sizeof(*k));
  if(!k)
    return;
  size_t i = 0;
  while(causes->child) {
    cJSON *c = cJSON_DetachItemViaPointer(causes, causes->child);
    k[i].item = c;
    k[i].key = error_text(c);
    i++;
  }
  qsort(k, n, sizeof(*k), cmp_keyed);
  for(i = 0; i < n; i++) {
    cJSON_AddItemToArray(causes, k[i].item);
    free(k[i].key);
  }
  free(k);
}
