#include "api/schema.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Uniqueness is quadratic in the items: lists longer than this (which a schema should bound
 * with max_items anyway) are not checked for duplicates. */
#define SCH_UNIQUE_MAX 1024

static const char *const condition_status[] = { "True", "False", "Unknown", NULL };

const struct sch_field sch_condition_fields[] = {
  { .name = "type", .type = SCH_STRING, .flags = SCH_REQUIRED, .max_len = 316,
    .desc = "Type of the condition, in CamelCase (\"Complete\", \"Validated\")." },
  { .name = "status", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = condition_status,
    .desc = "Status of the condition: True, False or Unknown." },
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the condition was set from; a lower value than the "
            "object's generation means the condition is stale." },
  { .name = "lastTransitionTime", .type = SCH_TIME, .flags = SCH_REQUIRED,
    .desc = "When the condition last changed status." },
  { .name = "reason", .type = SCH_STRING, .flags = SCH_REQUIRED, .max_len = 1024,
    .desc = "A CamelCase reason for the last transition; stable, safe to match on." },
  { .name = "message", .type = SCH_STRING, .flags = SCH_REQUIRED, .max_len = 32768,
    .desc = "A human readable message about the transition; may change, do not match on it." },
  { 0 }
};

const struct sch_field sch_local_ref_fields[] = {
  { .name = "name", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the object in the same namespace." },
  { 0 }
};

const struct sch_field sch_secret_key_ref_fields[] = {
  { .name = "name", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the Secret, in the same namespace." },
  { .name = "key", .type = SCH_STRING, .format = &fmt_secret_key, .dflt = "\"uri\"",
    .desc = "Key of the Secret whose value is a PostgreSQL connection URI." },
  { 0 }
};

const struct sch_field sch_resources_fields[] = {
  { .name = "requests", .type = SCH_MAP, .item = SCH_QUANTITY,
    .desc = "Minimum resources (cpu, memory, ephemeral-storage) the container is guaranteed." },
  { .name = "limits", .type = SCH_MAP, .item = SCH_QUANTITY,
    .desc = "Maximum resources the container may use." },
  { 0 }
};

void strlist_init(struct strlist *l)
{
  l->v = NULL;
  l->n = l->cap = 0;
}

void strlist_release(struct strlist *l)
{
  for(size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  strlist_init(l);
}

void strlist_addf(struct strlist *l, const char *fmt, ...)
{
  if(l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4;
    char **v = realloc(l->v, cap * sizeof(*v));
    if(!v)
      return;
    l->v = v;
    l->cap = cap;
  }
  va_list ap;
  va_start(ap, fmt);
  char *s;
  if(vasprintf(&s, fmt, ap) >= 0)
    l->v[l->n++] = s;
  va_end(ap);
}

const char *sch_type_name(const struct sch_field *f)
{
  switch(f->type) {
  case SCH_STRING: return "string";
  case SCH_INT: return "integer";
  case SCH_BOOL: return "boolean";
  case SCH_OBJECT: return "object";
  case SCH_QUANTITY: return "quantity";
  case SCH_TIME: return "date-time";
  case SCH_RAW: return "object";
  case SCH_ARRAY:
    switch(f->item) {
    case SCH_STRING: return "[]string";
    case SCH_INT: return "[]integer";
    case SCH_OBJECT: return "[]object";
    default: return "array";
    }
  case SCH_MAP:
    switch(f->item) {
    case SCH_STRING: return "map[string]string";
    case SCH_QUANTITY: return "map[string]quantity";
    case SCH_OBJECT: return "map[string]object";
    default: return "map";
    }
  }
  return "?";
}

/* strcmp() == 0 without a call: the walks compare every member with the rows' names. */
static inline bool name_eq(const char *a, const char *b)
{
  while(*a && *a == *b)
    a++, b++;
  return *a == *b;
}

const struct sch_field *sch_find(const struct sch_field *fields, const char *name)
{
  for(const struct sch_field *f = fields; f && f->name; f++)
    if(name_eq(f->name, name))
      return f;
  return NULL;
}

static const char *article_type(enum sch_type t)
{
  switch(t) {
  case SCH_STRING: case SCH_TIME: return "a string";
  case SCH_INT: return "an integer";
  case SCH_BOOL: return "a boolean (true or false)";
  case SCH_OBJECT: case SCH_MAP: case SCH_RAW: return "an object";
  case SCH_ARRAY: return "a list";
  case SCH_QUANTITY: return "a quantity (a string like \"10Gi\" or an integer)";
  }
  return "?";
}

static bool type_ok(enum sch_type t, const cJSON *v)
{
  switch(t) {
  case SCH_STRING: case SCH_TIME: return cJSON_IsString(v);
  case SCH_INT: return json_is_integer(v);
  case SCH_BOOL: return cJSON_IsBool(v);
  case SCH_OBJECT: case SCH_MAP: case SCH_RAW: return cJSON_IsObject(v);
  case SCH_ARRAY: return cJSON_IsArray(v);
  case SCH_QUANTITY: return cJSON_IsString(v) || json_is_integer(v);
  }
  return false;
}

/* RFC 3339: 2006-01-02T15:04:05Z or with fraction and offset. */
static bool is_rfc3339(const char *s)
{
  int y, mo, d, h, mi, sec;
  char t;
  int n = 0;
  if(sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &t, &h, &mi, &sec, &n) != 7 || n != 19)
    return false;
  if((t != 'T' && t != 't') || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
     sec > 60)
    return false;
  const char *p = s + 19;
  if(*p == '.') {
    p++;
    if(*p < '0' || *p > '9')
      return false;
    while(*p >= '0' && *p <= '9')
      p++;
  }
  if((*p == 'Z' || *p == 'z') && !p[1])
    return true;
  int oh, om;
  return (*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) == 2 && n == 5 &&
         !p[6];
}

static void check_value(const struct sch_field *f, enum sch_type t, const cJSON *v,
                        const char *path, struct ferrs *e, struct strlist *w);

static void check_string(const struct sch_field *f, const cJSON *v, const char *path,
                         struct ferrs *e)
{
  const char *s = v->valuestring;
  if(f->max_len && (int)strlen(s) > f->max_len)
    ferrs_add(e, FERR_TOO_LONG, path, "must be at most %d characters, got %zu", f->max_len,
              strlen(s));
  else if(f->enums) {
    bool found = false;
    for(const char *const *p = f->enums; *p && !found; p++)
      found = !strcmp(*p, s);
    if(!found) {
      char list[512] = "";
      size_t off = 0;
      for(const char *const *p = f->enums; *p && off < sizeof(list); p++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s\"%s\"",
                                p == f->enums ? "" : (p[1] ? ", " : " or "), *p);
      char *got = json_preview(v, 80);
      ferrs_add(e, FERR_NOT_SUPPORTED, path, "must be %s, got %s", list, got ? got : "?");
      free(got);
    }
  } else if(f->format) {
    const char *why = f->format->check(s);
    if(why) {
      char *got = json_preview(v, 80);
      ferrs_add(e, FERR_INVALID, path, "%s, got %s", why, got ? got : "?");
      free(got);
    }
  }
}

static void check_items(const struct sch_field *f, const cJSON *v, const char *path,
                        struct ferrs *e, struct strlist *w)
{
  int n = cJSON_GetArraySize(v);
  if(f->max_items && n > f->max_items) {
    /* The items of an oversized list are not judged one by one: the count alone refuses it, and
     * checking each would let a huge body cost seconds. */
    ferrs_add(e, FERR_TOO_MANY, path, "must have at most %d items, got %d", f->max_items, n);
    return;
  }
  bool unique = f->type == SCH_ARRAY && (f->flags & SCH_UNIQUE) && n <= SCH_UNIQUE_MAX;
  char p[1024];
  int i = 0;
  /* "<path>[" once; each item appends its index or key (no format parsing per item) */
  size_t base = strlen(path);
  if(base > sizeof(p) - 24)
    base = sizeof(p) - 24;
  memcpy(p, path, base);
  p[base++] = '[';
  for(const cJSON *c = v->child; c; c = c->next, i++) {
    if(f->type == SCH_ARRAY) {
      char digits[16], *q = digits + sizeof(digits);
      unsigned u = (unsigned)i;
      do
        *--q = (char)('0' + u % 10);
      while(u /= 10);
      size_t dl = (size_t)(digits + sizeof(digits) - q);
      memcpy(p + base, q, dl);
      p[base + dl] = ']';
      p[base + dl + 1] = '\0';
    } else {
      size_t kl = strlen(c->string);
      if(kl > sizeof(p) - base - 2)
        kl = sizeof(p) - base - 2;
      memcpy(p + base, c->string, kl);
      p[base + kl] = ']';
      p[base + kl + 1] = '\0';
      if(f->key_format) {
        const char *why = f->key_format->check(c->string);
        if(why)
          ferrs_add(e, FERR_INVALID, p, "key %s", why);
      }
    }
    check_value(f, f->item, c, p, e, w);
    if(unique) {
      for(const cJSON *d = v->child; d != c; d = d->next)
        if(json_equal(c, d)) {
          char *got = json_preview(c, 80);
          ferrs_add(e, FERR_DUPLICATE, p, "duplicate value %s: list each value once",
                    got ? got : "?");
          free(got);
          break;
        }
    }
  }
}

/* Checks one value v of type t; f carries the constraints (for items, the container's row). */
static void check_value(const struct sch_field *f, enum sch_type t, const cJSON *v,
                        const char *path, struct ferrs *e, struct strlist *w)
{
  if(!type_ok(t, v)) {
    char *got = json_preview(v, 60);
    ferrs_add(e, FERR_TYPE, path, "must be %s, got %s %s", article_type(t), json_type_name(v),
              got ? got : "");
    free(got);
    return;
  }
  bool item = t != f->type;
  switch(t) {
  case SCH_STRING:
    check_string(f, v, path, e);
    break;
  case SCH_TIME:
    if(!is_rfc3339(v->valuestring))
      ferrs_add(e, FERR_INVALID, path, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z");
    break;
  case SCH_QUANTITY:
    if(cJSON_IsString(v)) {
      const char *why = fmt_quantity.check(v->valuestring);
      if(why)
        ferrs_add(e, FERR_INVALID, path, "%s, got \"%.60s\"", why, v->valuestring);
    } else if(v->valuedouble < 0)
      ferrs_add(e, FERR_INVALID, path, "must not be negative");
    break;
  case SCH_INT: {
    long long x = (long long)v->valuedouble;
    bool lo = !item && (f->flags & SCH_HAS_MIN) && x < f->min;
    bool hi = !item && (f->flags & SCH_HAS_MAX) && x > f->max;
    if((lo || hi) && (f->flags & SCH_HAS_MIN) && (f->flags & SCH_HAS_MAX))
      ferrs_add(e, FERR_INVALID, path, "must be between %lld and %lld, got %lld", f->min, f->max, x);
    else if(lo)
      ferrs_add(e, FERR_INVALID, path, "must be at least %lld, got %lld", f->min, x);
    else if(hi)
      ferrs_add(e, FERR_INVALID, path, "must be at most %lld, got %lld", f->max, x);
    break;
  }
  case SCH_OBJECT:
    sch_validate(f->fields, v, path, e, w);
    break;
  case SCH_ARRAY:
  case SCH_MAP:
    check_items(f, v, path, e, w);
    break;
  case SCH_BOOL:
  case SCH_RAW:
    break;
  }
}

#define ROWS_ON_STACK 64

/* Each row's member of an object (the first with the row's name, as
 * cJSON_GetObjectItemCaseSensitive finds it), found in one pass over the members rather than a
 * search per row: the walks below read every row of every object of a review. */
struct rowmap {
  const cJSON *on_stack[ROWS_ON_STACK];
  uint64_t seen;     /* with on_stack: which rows have a member (the rest is not initialised) */
  const cJSON **val; /* on_stack, or a zeroed array of nrows */
  size_t nrows;
  size_t unknown; /* members no row names */
};

/* The member of fields[i], or NULL. */
static const cJSON *rowmap_get(const struct rowmap *m, size_t i)
{
  if(m->val != m->on_stack)
    return m->val[i];
  return m->seen >> i & 1 ? m->on_stack[i] : NULL;
}

/* GW_ENOMEM (nothing to release) when a table of more than ROWS_ON_STACK rows cannot be held. */
static gw_rc rowmap_init(struct rowmap *m, const struct sch_field *fields, const cJSON *obj)
{
  m->nrows = 0;
  m->unknown = 0;
  m->seen = 0;
  for(const struct sch_field *f = fields; f && f->name; f++)
    m->nrows++;
  m->val = m->on_stack;
  if(m->nrows > ROWS_ON_STACK && !(m->val = calloc(m->nrows, sizeof(*m->val))))
    return GW_ENOMEM;
  /* Members mostly come in the table's order (the generator, kubectl and the defaults all
   * follow it), so each search starts at the row after the last one found. */
  size_t next = 0;
  for(const cJSON *c = cJSON_IsObject(obj) ? obj->child : NULL; c; c = c->next) {
    size_t i = m->nrows;
    for(size_t k = 0; c->string && k < m->nrows && i == m->nrows; k++) {
      size_t r = (next + k) % m->nrows;
      if(name_eq(fields[r].name, c->string))
        i = r;
    }
    if(i == m->nrows) {
      m->unknown++;
      continue;
    }
    if(!rowmap_get(m, i)) { /* the first member with the name */
      m->val[i] = c;
      if(m->val == m->on_stack)
        m->seen |= (uint64_t)1 << i;
    }
    next = i + 1;
  }
  return GW_OK;
}

static void rowmap_release(struct rowmap *m)
{
  if(m->val != m->on_stack)
    free(m->val);
}

void sch_validate(const struct sch_field *fields, const cJSON *obj, const char *path,
                  struct ferrs *e, struct strlist *w)
{
  char p[1024];
  struct rowmap m;
  if(rowmap_init(&m, fields, obj)) {
    e->oom = true;
    return;
  }
  for(size_t i = 0; i < m.nrows; i++) {
    const struct sch_field *f = &fields[i];
    const cJSON *v = rowmap_get(&m, i);
    if(!v || cJSON_IsNull(v)) {
      if(f->flags & SCH_REQUIRED)
        ferrs_add(e, FERR_REQUIRED, path_join(p, sizeof(p), path, f->name), "is required");
      continue;
    }
    check_value(f, f->type, v, path_join(p, sizeof(p), path, f->name), e, w);
  }
  if(w && fields && m.unknown) {
    for(const cJSON *c = obj->child; c; c = c->next)
      if(c->string && !sch_find(fields, c->string))
        strlist_addf(w, "unknown field \"%s\": not part of the schema, it will be dropped",
                     path_join(p, sizeof(p), path, c->string));
  }
  rowmap_release(&m);
}

static bool value_types_ok(const struct sch_field *f, enum sch_type t, const cJSON *v)
{
  if(!type_ok(t, v))
    return false;
  if(t == SCH_OBJECT)
    return sch_types_ok(f->fields, v);
  if(t != SCH_ARRAY && t != SCH_MAP)
    return true;
  if(f->max_items && cJSON_GetArraySize(v) > f->max_items)
    return true; /* refused by its count; sch_validate judges no item */
  for(const cJSON *c = v->child; c; c = c->next)
    if(!value_types_ok(f, f->item, c))
      return false;
  return true;
}

bool sch_types_ok(const struct sch_field *fields, const cJSON *obj)
{
  struct rowmap m;
  if(rowmap_init(&m, fields, obj))
    return false; /* cannot tell: as a type error, nothing is defaulted */
  bool ok = true;
  for(size_t i = 0; i < m.nrows && ok; i++) {
    const cJSON *v = rowmap_get(&m, i);
    ok = !v || cJSON_IsNull(v) || value_types_ok(&fields[i], fields[i].type, v);
  }
  rowmap_release(&m);
  return ok;
}

static bool default_items(const struct sch_field *f, cJSON *v)
{
  if(f->item != SCH_OBJECT || !f->fields)
    return true;
  for(cJSON *c = v->child; c; c = c->next)
    if(cJSON_IsObject(c) && !sch_default(f->fields, c))
      return false;
  return true;
}

bool sch_default(const struct sch_field *fields, cJSON *obj)
{
  if(!cJSON_IsObject(obj))
    return true;
  for(const struct sch_field *f = fields; f && f->name; f++) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f->name);
    if(v && cJSON_IsNull(v)) {
      cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
      v = NULL;
    }
    if(!v && f->dflt) {
      char err[96];
      if(json_parse_strict(f->dflt, strlen(f->dflt), &v, err, sizeof(err)) ||
         !cJSON_AddItemToObject(obj, f->name, v)) {
        cJSON_Delete(v);
        return false;
      }
    }
    if(!v)
      continue;
    if(f->type == SCH_OBJECT && cJSON_IsObject(v) && !sch_default(f->fields, v))
      return false;
    if((f->type == SCH_ARRAY && cJSON_IsArray(v)) || (f->type == SCH_MAP && cJSON_IsObject(v)))
      if(!default_items(f, v))
        return false;
  }
  return true;
}

static bool items_change(const struct sch_field *f, const cJSON *v)
{
  if(f->item != SCH_OBJECT || !f->fields)
    return false;
  for(const cJSON *c = v->child; c; c = c->next)
    if(cJSON_IsObject(c) && sch_default_changes(f->fields, c))
      return true;
  return false;
}

/* The same walk as sch_default, reading only. */
bool sch_default_changes(const struct sch_field *fields, const cJSON *obj)
{
  if(!cJSON_IsObject(obj))
    return false;
  struct rowmap m;
  if(rowmap_init(&m, fields, obj))
    return true; /* cannot tell: the caller copies and defaults */
  bool changes = false;
  for(size_t i = 0; i < m.nrows && !changes; i++) {
    const struct sch_field *f = &fields[i];
    const cJSON *v = rowmap_get(&m, i);
    if(v ? cJSON_IsNull(v) : f->dflt != NULL)
      changes = true;
    else if(!v)
      continue;
    else if(f->type == SCH_OBJECT && cJSON_IsObject(v))
      changes = sch_default_changes(f->fields, v);
    else if((f->type == SCH_ARRAY && cJSON_IsArray(v)) || (f->type == SCH_MAP && cJSON_IsObject(v)))
      changes = items_change(f, v);
  }
  rowmap_release(&m);
  return changes;
}

bool sch_split_unknown(const struct sch_field *fields, cJSON *obj, cJSON *leftover)
{
  cJSON *c = obj->child;
  while(c) {
    cJSON *next = c->next;
    const struct sch_field *f = sch_find(fields, c->string);
    /* A name this version has with another shape (a hub object where the older version holds a
     * string of the same name) cannot be held either. */
    if(!f || !type_ok(f->type, c)) {
      cJSON *d = cJSON_DetachItemViaPointer(obj, c);
      cJSON_AddItemToObject(leftover, d->string, d);
    } else if(f->type == SCH_OBJECT && cJSON_IsObject(c) && f->fields) {
      cJSON *sub = cJSON_CreateObject();
      if(!sub || !sch_split_unknown(f->fields, c, sub)) {
        cJSON_Delete(sub);
        return false;
      }
      if(sub->child)
        cJSON_AddItemToObject(leftover, c->string, sub);
      else
        cJSON_Delete(sub);
    }
    c = next;
  }
  return true;
}
