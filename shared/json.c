#include "json.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonscan.h"
#include "strbuf.h"

/* Walks one dotted component; n is its length (no NUL among name[0..n)). Compared inline, byte
 * by byte up to the first difference: the rules look paths up by the dozen per review. */
static cJSON *member(const cJSON *obj, const char *name, size_t n)
{
  if(!obj)
    return NULL;
  if((obj->type & 0xFF) == cJSON_Raw && json_materialize((cJSON *)obj)) /* see json.h */
    return NULL;
  if((obj->type & 0xFF) != cJSON_Object)
    return NULL;
  for(cJSON *c = obj->child; c; c = c->next) {
    const char *s = c->string;
    if(!s)
      continue;
    size_t i = 0;
    while(i < n && s[i] == name[i]) /* stops at s's NUL: name holds none */
      i++;
    if(i == n && s[n] == '\0')
      return c;
  }
  return NULL;
}

cJSON *json_get_mut(cJSON *root, const char *path)
{
  cJSON *cur = root;
  const char *p = path;
  while(cur && *p) {
    size_t n = 0;
    while(p[n] && p[n] != '.')
      n++;
    cur = member(cur, p, n);
    p += n;
    if(*p == '.')
      p++;
  }
  if(cur && (cur->type & 0xFF) == cJSON_Raw && json_materialize(cur))
    return NULL;
  return cur;
}

const cJSON *json_get(const cJSON *root, const char *path)
{
  return json_get_mut((cJSON *)root, path);
}

const char *json_get_str(const cJSON *root, const char *path)
{
  const cJSON *v = json_get(root, path);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool json_get_bool(const cJSON *root, const char *path, bool dflt)
{
  const cJSON *v = json_get(root, path);
  if(cJSON_IsBool(v))
    return cJSON_IsTrue(v);
  return dflt;
}

/* Whether cur is an object, once parsed if it was kept as text (json.h). */
static inline bool as_object(cJSON *cur)
{
  if((cur->type & 0xFF) == cJSON_Raw && json_materialize(cur))
    return false;
  return (cur->type & 0xFF) == cJSON_Object;
}

/* The '.' ending the component at p, or NULL at the last one (components are short: no strchr
 * call). */
static inline const char *component_end(const char *p)
{
  while(*p && *p != '.')
    p++;
  return *p ? p : NULL;
}

cJSON *json_ensure_parent(cJSON *root, const char *path, const char **last)
{
  cJSON *cur = root;
  const char *p = path;
  for(;;) {
    if(!cur || !as_object(cur))
      return NULL;
    const char *dot = component_end(p);
    if(!dot) {
      *last = p;
      return cur;
    }
    size_t n = (size_t)(dot - p);
    cJSON *next = member(cur, p, n);
    if(!next) {
      char name[256];
      if(n >= sizeof(name))
        return NULL;
      memcpy(name, p, n);
      name[n] = '\0';
      next = cJSON_AddObjectToObject(cur, name);
      if(!next)
        return NULL;
    }
    cur = next;
    p = dot + 1;
  }
}

gw_rc json_set(cJSON *root, const char *path, cJSON *item)
{
  if(!item)
    return GW_ENOMEM;
  const char *last;
  cJSON *parent = json_ensure_parent(root, path, &last);
  if(!parent) {
    cJSON_Delete(item);
    return GW_EINVAL;
  }
  cJSON *old = member(parent, last, strlen(last));
  if(old) { /* item takes old's place and its name */
    if(item->string && !(item->type & cJSON_StringIsConst))
      cJSON_free(item->string);
    item->string = old->string;
    item->type = (item->type & ~cJSON_StringIsConst) | (old->type & cJSON_StringIsConst);
    old->string = NULL;
    cJSON_ReplaceItemViaPointer(parent, old, item); /* frees old; cannot fail here */
  } else if(!cJSON_AddItemToObject(parent, last, item)) {
    cJSON_Delete(item);
    return GW_ENOMEM;
  }
  return GW_OK;
}

gw_rc json_set_str(cJSON *root, const char *path, const char *s)
{
  return json_set(root, path, cJSON_CreateString(s));
}

/* The objects path walks through (root first, then one per component but the last), at most
 * max; 0 when one is missing or not an object. *last receives the final component. */
static size_t walk_parents(cJSON *root, const char *path, cJSON **parents, size_t max,
                           const char **last)
{
  size_t n = 0;
  cJSON *cur = root;
  for(const char *p = path;;) {
    if(!cur || n == max || !as_object(cur))
      return 0;
    parents[n++] = cur;
    const char *dot = component_end(p);
    if(!dot) {
      *last = p;
      return n;
    }
    cur = member(cur, p, (size_t)(dot - p));
    p = dot + 1;
  }
}

#define PATH_MAX_DEPTH 64

/* Detaches path's member; with prune, then every parent (not root) the removal left empty. */
static cJSON *detach(cJSON *root, const char *path, bool prune)
{
  cJSON *parents[PATH_MAX_DEPTH];
  const char *last;
  size_t n = walk_parents(root, path, parents, PATH_MAX_DEPTH, &last);
  cJSON *v = n ? member(parents[n - 1], last, strlen(last)) : NULL;
  if(!v)
    return NULL;
  cJSON_DetachItemViaPointer(parents[n - 1], v);
  for(size_t i = n - 1; prune && i > 0 && !parents[i]->child; i--)
    cJSON_Delete(cJSON_DetachItemViaPointer(parents[i - 1], parents[i]));
  if(json_materialize(v)) {
    cJSON_Delete(v);
    return NULL;
  }
  return v;
}

cJSON *json_detach(cJSON *root, const char *path)
{
  return detach(root, path, false);
}

cJSON *json_detach_prune(cJSON *root, const char *path)
{
  return detach(root, path, true);
}

cJSON *json_dup_shared(const cJSON *v)
{
  cJSON *n = cJSON_malloc(sizeof(*n));
  if(!n)
    return NULL;
  *n = (cJSON){ 0 };
  n->type = v->type & ~(cJSON_IsReference | cJSON_StringIsConst);
  n->valueint = v->valueint;
  n->valuedouble = v->valuedouble;
  if(v->valuestring) {
    n->valuestring = v->valuestring;
    n->type |= cJSON_IsReference; /* (on a node without children: cJSON_Delete leaves the text) */
  }
  if(v->string) {
    n->string = v->string;
    n->type |= cJSON_StringIsConst;
  }
  cJSON *tail = NULL;
  for(const cJSON *c = v->child; c; c = c->next) {
    cJSON *d = json_dup_shared(c);
    if(!d) {
      cJSON_Delete(n);
      return NULL;
    }
    if(tail) {
      tail->next = d;
      d->prev = tail;
    } else
      n->child = d;
    n->child->prev = d; /* cJSON's convention: the first child's prev is the last one */
    tail = d;
  }
  return n;
}

bool json_raw_may_hold(const cJSON *n, const char *key)
{
  if(!n || (n->type & 0xFF) != cJSON_Raw || !n->valuestring)
    return true;
  return strchr(n->valuestring, '\\') || strstr(n->valuestring, key);
}

void json_remove(cJSON *root, const char *path)
{
  cJSON_Delete(json_detach(root, path));
}

bool json_is_integer(const cJSON *v)
{
  if(!cJSON_IsNumber(v))
    return false;
  double d = v->valuedouble;
  return isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0;
}

static bool number_equal(double a, double b)
{
  if(a == b) /* also two infinities (1e309 parses to one), whose difference is NaN */
    return true;
  if(isinf(a) || isinf(b)) /* an infinity is within any tolerance of the other */
    return false;
  double max = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= max * DBL_EPSILON;
}

struct index_entry {
  const cJSON *m;
  size_t pos;
};

static int by_key_then_pos(const void *x, const void *y)
{
  const struct index_entry *a = x, *b = y;
  int c = strcmp(a->m->string ? a->m->string : "", b->m->string ? b->m->string : "");
  return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

gw_rc json_index_init(struct json_index *ix, const cJSON *obj)
{
  ix->obj = obj;
  ix->v = NULL;
  ix->n = 0;
  size_t n = 0;
  for(const cJSON *m = obj ? obj->child : NULL; m; m = m->next)
    n++;
  if(!n)
    return GW_OK;
  struct index_entry *v = malloc(n * sizeof(*v));
  if(!v)
    return GW_ENOMEM; /* lookups fall back to a linear search */
  size_t i = 0;
  for(const cJSON *m = obj->child; m; m = m->next, i++)
    v[i] = (struct index_entry){ m, i };
  qsort(v, n, sizeof(*v), by_key_then_pos);
  ix->v = v;
  ix->n = n;
  return GW_OK;
}

const cJSON *json_index_get(const struct json_index *ix, const char *key)
{
  if(!key)
    return NULL;
  if(!ix->v)
    return cJSON_GetObjectItemCaseSensitive(ix->obj, key);
  const struct index_entry *v = ix->v;
  size_t lo = 0, hi = ix->n; /* the first entry whose key is >= key */
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if(strcmp(v[mid].m->string ? v[mid].m->string : "", key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < ix->n && v[lo].m->string && !strcmp(v[lo].m->string, key) ? v[lo].m : NULL;
}

void json_index_release(struct json_index *ix)
{
  free(ix->v);
  ix->v = NULL;
  ix->n = 0;
}

static size_t members(const cJSON *o)
{
  size_t n = 0;
  for(const cJSON *m = o->child; m; m = m->next)
    n++;
  return n;
}

static bool objects_equal(const cJSON *a, const cJSON *b)
{
  /* In the same order (an object and its copy, the usual case): pairwise. */
  const cJSON *x = a->child, *y = b->child;
  while(x && y && x->string && y->string && !strcmp(x->string, y->string)) {
    if(!json_equal(x, y))
      return false;
    x = x->next;
    y = y->next;
  }
  if(!x && !y)
    return true;
  if(members(a) != members(b))
    return false;
  /* Otherwise by key, through sorted indexes: n log n, not n^2. */
  struct json_index ia, ib;
  json_index_init(&ia, a);
  json_index_init(&ib, b);
  bool eq = true;
  for(x = a->child; x && eq; x = x->next) {
    y = json_index_get(&ib, x->string);
    eq = y && json_equal(x, y);
  }
  for(y = b->child; y && eq; y = y->next)
    eq = json_index_get(&ia, y->string) != NULL;
  json_index_release(&ia);
  json_index_release(&ib);
  return eq;
}

bool json_equal(const cJSON *a, const cJSON *b)
{
  if(!a || !b || (a->type & 0xFF) != (b->type & 0xFF) || cJSON_IsInvalid(a))
    return false;
  if(a == b)
    return true;
  /* a reference (cJSON_Create*Reference) and what it refers to share their members or text */
  if((cJSON_IsArray(a) || cJSON_IsObject(a)) && a->child && a->child == b->child)
    return true;
  if((cJSON_IsString(a) || cJSON_IsRaw(a)) && a->valuestring && a->valuestring == b->valuestring)
    return true;
  switch(a->type & 0xFF) {
  case cJSON_False:
  case cJSON_True:
  case cJSON_NULL:
    return true;
  case cJSON_Number:
    return number_equal(a->valuedouble, b->valuedouble);
  case cJSON_String:
  case cJSON_Raw:
    return a->valuestring && b->valuestring && !strcmp(a->valuestring, b->valuestring);
  case cJSON_Array: {
    const cJSON *x = a->child, *y = b->child;
    for(; x && y; x = x->next, y = y->next)
      if(!json_equal(x, y))
        return false;
    return !x && !y;
  }
  case cJSON_Object:
    return objects_equal(a, b);
  default:
    return false;
  }
}

bool json_equal_opt(const cJSON *a, const cJSON *b)
{
  if(cJSON_IsNull(a))
    a = NULL;
  if(cJSON_IsNull(b))
    b = NULL;
  if(!a || !b)
    return a == b;
  return json_equal(a, b);
}

const cJSON *json_condition(const cJSON *obj, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(obj, "status.conditions"))
  {
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
    if(t && type && !strcmp(t, type))
      return c;
  }
  return NULL;
}

bool json_condition_true(const cJSON *obj, const char *type)
{
  const char *s = json_get_str(json_condition(obj, type), "status");
  return s && !strcmp(s, "True");
}

const char *json_type_name(const cJSON *v)
{
  if(!v || cJSON_IsNull(v))
    return "null";
  if(cJSON_IsBool(v))
    return "boolean";
  if(cJSON_IsNumber(v))
    return json_is_integer(v) ? "integer" : "number";
  if(cJSON_IsString(v))
    return "string";
  if(cJSON_IsArray(v))
    return "array";
  if(cJSON_IsObject(v))
    return "object";
  return "unknown";
}

char *json_preview(const cJSON *v, size_t max)
{
  char *s = v ? cJSON_PrintUnformatted(v) : NULL;
  const char *src = s ? s : "null";
  size_t n = strlen(src);
  char *out = malloc((n > max ? max + 3 : n) + 1);
  if(out) {
    if(n > max) {
      memcpy(out, src, max);
      memcpy(out + max, "...", 4);
    } else
      memcpy(out, src, n + 1);
  }
  if(s)
    cJSON_free(s);
  return out;
}

static int cmp_keys(const void *a, const void *b)
{
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string, y->string);
}

static gw_rc canon(struct strbuf *sb, const cJSON *v)
{
  gw_rc rc = GW_OK;
  if(cJSON_IsRaw(v) && v->valuestring) { /* kept as text: canonical only once parsed */
    cJSON *t;
    char err[128];
    rc = json_parse_strict(v->valuestring, strlen(v->valuestring), &t, err, sizeof(err));
    if(!rc)
      rc = canon(sb, t);
    cJSON_Delete(t);
    return rc;
  }
  if(cJSON_IsObject(v)) {
    size_t n = 0;
    for(const cJSON *c = v->child; c; c = c->next)
      n++;
    const cJSON **items = n ? malloc(n * sizeof(*items)) : NULL;
    if(n && !items)
      return GW_ENOMEM;
    size_t i = 0;
    for(const cJSON *c = v->child; c; c = c->next)
      items[i++] = c;
    if(n > 1)
      qsort(items, n, sizeof(*items), cmp_keys);
    rc = strbuf_addc(sb, '{');
    for(i = 0; i < n && !rc; i++) {
      if(i)
        rc = strbuf_addc(sb, ',');
      if(!rc)
        rc = strbuf_addc(sb, '"');
      if(!rc)
        rc = strbuf_add_json_escaped(sb, items[i]->string);
      if(!rc)
        rc = strbuf_adds(sb, "\":");
      if(!rc)
        rc = canon(sb, items[i]);
    }
    free(items);
    if(!rc)
      rc = strbuf_addc(sb, '}');
    return rc;
  }
  if(cJSON_IsArray(v)) {
    rc = strbuf_addc(sb, '[');
    for(const cJSON *c = v->child; c && !rc; c = c->next) {
      if(c != v->child)
        rc = strbuf_addc(sb, ',');
      if(!rc)
        rc = canon(sb, c);
    }
    if(!rc)
      rc = strbuf_addc(sb, ']');
    return rc;
  }
  return json_print_sb(sb, v);
}

/* ---- printing as cJSON prints (cJSON 1.7's print_number and print_string_ptr) ---- */

/* The escape of byte c ('"', '\\' or a control character) into esc; its length. */
static size_t escape_byte(unsigned char c, char esc[8])
{
  static const char hex[] = "0123456789abcdef";
  esc[0] = '\\';
  switch(c) {
  case '"': esc[1] = '"'; return 2;
  case '\\': esc[1] = '\\'; return 2;
  case '\b': esc[1] = 'b'; return 2;
  case '\f': esc[1] = 'f'; return 2;
  case '\n': esc[1] = 'n'; return 2;
  case '\r': esc[1] = 'r'; return 2;
  case '\t': esc[1] = 't'; return 2;
  default:
    esc[1] = 'u';
    esc[2] = '0';
    esc[3] = '0';
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 15];
    return 6;
  }
}

/*
 * s as a JSON string, then tail (":" after a member's name, or nothing). Most strings need no
 * escape: one scan (json_skip_plain, 16 bytes at a time) finds that, and the quoted string is
 * written in one copy when the buffer has room.
 */
static gw_rc print_string_tail(struct strbuf *sb, const char *s, const char *tail, size_t tlen)
{
  size_t len = strlen(s);
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  const unsigned char *q = json_skip_plain(p, end);
  if(q == end && !sb->err && sb->alloc - sb->len > len + 2 + tlen) {
    char *o = sb->buf + sb->len;
    *o++ = '"';
    memcpy(o, s, len);
    o += len;
    *o++ = '"';
    memcpy(o, tail, tlen);
    o += tlen;
    *o = '\0';
    sb->len = (size_t)(o - sb->buf);
    return GW_OK;
  }
  gw_rc rc = strbuf_addc(sb, '"');
  while(!rc && q < end) {
    char esc[8];
    size_t n = escape_byte(*q, esc);
    rc = strbuf_add(sb, p, (size_t)(q - p));
    if(!rc)
      rc = strbuf_add(sb, esc, n);
    p = q + 1;
    q = json_skip_plain(p, end);
  }
  if(!rc)
    rc = strbuf_add(sb, p, (size_t)(q - p));
  if(!rc)
    rc = strbuf_addc(sb, '"');
  return rc ? rc : strbuf_add(sb, tail, tlen);
}

static gw_rc print_string(struct strbuf *sb, const char *s)
{
  return print_string_tail(sb, s, "", 0);
}

static gw_rc print_number(struct strbuf *sb, const cJSON *v)
{
  double d = v->valuedouble;
  char buf[32];
  size_t n;
  if(isnan(d) || isinf(d))
    return strbuf_add(sb, "null", 4);
  if(d == floor(d) && fabs(d) < 1e15) {
    /* an integer below 10^15: what "%1.15g" prints (all its digits, "-0" for negative zero),
     * digits by hand */
    bool neg = signbit(d);
    unsigned long long u = (unsigned long long)fabs(d);
    char *e = buf + sizeof(buf), *q = e;
    do
      *--q = (char)('0' + u % 10);
    while(u /= 10);
    if(neg)
      *--q = '-';
    return strbuf_add(sb, q, (size_t)(e - q));
  }
  n = (size_t)snprintf(buf, sizeof(buf), "%1.15g", d);
  char *end = NULL;
  double back = strtod(buf, &end);
  double big = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
  if(end == buf || !(fabs(back - d) <= big * DBL_EPSILON))
    n = (size_t)snprintf(buf, sizeof(buf), "%1.17g", d);
  return strbuf_add(sb, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

gw_rc json_print_sb(struct strbuf *sb, const cJSON *v)
{
  if(!v)
    return GW_EINVAL;
  switch(v->type & 0xFF) {
  case cJSON_NULL: return strbuf_add(sb, "null", 4);
  case cJSON_False: return strbuf_add(sb, "false", 5);
  case cJSON_True: return strbuf_add(sb, "true", 4);
  case cJSON_Number: return print_number(sb, v);
  case cJSON_String: return v->valuestring ? print_string(sb, v->valuestring) : GW_EINVAL;
  case cJSON_Raw: return v->valuestring ? strbuf_adds(sb, v->valuestring) : GW_EINVAL;
  case cJSON_Array:
  case cJSON_Object: {
    bool obj = (v->type & 0xFF) == cJSON_Object;
    gw_rc rc = strbuf_addc(sb, obj ? '{' : '[');
    for(const cJSON *c = v->child; c && !rc; c = c->next) {
      if(c != v->child)
        rc = strbuf_addc(sb, ',');
      if(!rc && obj) {
        rc = c->string ? print_string_tail(sb, c->string, ":", 1) : GW_EINVAL;
      }
      if(!rc)
        rc = json_print_sb(sb, c);
    }
    return rc ? rc : strbuf_addc(sb, obj ? '}' : ']');
  }
  default: return GW_EINVAL;
  }
}

char *json_print_canonical(const cJSON *v)
{
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  if(canon(&sb, v)) {
    strbuf_release(&sb);
    return NULL;
  }
  /* Hand over in cJSON's allocator so every printed JSON string is freed the same way. */
  char *out = cJSON_malloc(sb.len + 1);
  if(out)
    memcpy(out, strbuf_str(&sb), sb.len + 1);
  strbuf_release(&sb);
  return out;
}
