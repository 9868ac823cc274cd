/*
 * jsonparse.c: json_parse_strict, one pass over the bytes building a cJSON tree.
 *
 * Why not cJSON_Parse: on a 3.6 KB AdmissionReview cJSON spent about 125,000 instructions, over
 * half of a /validate request (docs/operations/benchmarks.md): every string is scanned twice,
 * every number copied and handed to strtod, every byte read through bounds-checked helpers, and
 * the depth limit needed a second walk. This parser reads each byte once, writes integers of up
 * to 19 digits without strtod, and checks the depth as it descends.
 *
 * The tree is exactly what cJSON builds (same node types, values, valueint saturation, member
 * order, duplicate keys kept, first child's prev pointing at the last child), allocated through
 * cJSON's own hooks (cJSON_malloc: an arena's blocks where arena.c is linked; not called
 * directly, which would link arena.c, and its hooks, into every program that parses JSON), so
 * cJSON_Delete and every cJSON function work on it. The grammar is RFC 8259's, stricter than
 * cJSON 1.7.15 where that library is lax: whitespace is only space, tab, LF and CR (cJSON
 * skipped every byte below 33); numbers follow the JSON grammar (cJSON handed "01", "1.", "-.5"
 * and "1e" to strtod); a string may not hold a raw control character (U+0000 to U+001F must be
 * escaped) and \u takes four hex digits (cJSON read "\uZZZZ" as U+0000). Like cJSON, a UTF-8
 * byte order mark before the value is skipped, \u0000 ends the C string, and bytes are not
 * checked to be valid UTF-8.
 * tests/unit/test_jsonparse.c holds both parsers to the same trees.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonscan.h"

enum jp_fail { JP_OK, JP_SYNTAX, JP_DEEP, JP_NOMEM };

struct jp {
  const unsigned char *p, *end;
  const unsigned char *bad; /* where the syntax failed */
  enum jp_fail fail;
  const struct json_raw *raw; /* members kept as text, or NULL */
};

static bool syntax(struct jp *j, const unsigned char *at)
{
  j->fail = JP_SYNTAX;
  j->bad = at;
  return false;
}

/* Kubernetes sends compact JSON: the first byte is almost never whitespace. */
static inline void skip_ws(struct jp *j)
{
  while(j->p < j->end && *j->p <= ' ' &&
        (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

static bool is_digit(const struct jp *j, const unsigned char *p)
{
  return p < j->end && *p >= '0' && *p <= '9';
}

static int hex4(const unsigned char *p)
{
  int v = 0;
  for(int i = 0; i < 4; i++) {
    unsigned char c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if(d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Decodes the escape at *in (a backslash) into *out; both advance. */
static bool unescape(struct jp *j, const unsigned char **in, unsigned char **out)
{
  const unsigned char *s = *in;
  unsigned char *o = *out;
  char c = s + 1 < j->end ? (char)s[1] : '\0';
  switch(c) {
  case '"': case '\\': case '/': *o++ = (unsigned char)c; break;
  case 'b': *o++ = '\b'; break;
  case 'f': *o++ = '\f'; break;
  case 'n': *o++ = '\n'; break;
  case 'r': *o++ = '\r'; break;
  case 't': *o++ = '\t'; break;
  default: o = NULL;
  }
  if(o) {
    *in = s + 2;
    *out = o;
    return true;
  }
  o = *out;
  if(s + 1 >= j->end || s[1] != 'u' || j->end - s < 6)
    return syntax(j, s);
  int hi = hex4(s + 2);
  unsigned long cp = (unsigned long)hi;
  size_t used = 6;
  if(hi < 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
    return syntax(j, s); /* not hex, or the second half of a pair alone */
  if(hi >= 0xD800 && hi <= 0xDBFF) {
    int lo = j->end - s >= 12 && s[6] == '\\' && s[7] == 'u' ? hex4(s + 8) : -1;
    if(lo < 0xDC00 || lo > 0xDFFF)
      return syntax(j, s); /* a first half without its second */
    cp = 0x10000 + (((unsigned long)hi & 0x3FF) << 10 | ((unsigned long)lo & 0x3FF));
    used = 12;
  }
  if(cp < 0x80)
    *o++ = (unsigned char)cp;
  else if(cp < 0x800) {
    *o++ = (unsigned char)(0xC0 | cp >> 6);
    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
  } else if(cp < 0x10000) {
    *o++ = (unsigned char)(0xE0 | cp >> 12);
    *o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
  } else {
    *o++ = (unsigned char)(0xF0 | cp >> 18);
    *o++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    *o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
  }
  *in = s + used;
  *out = o;
  return true;
}

/* What a one-letter escape stands for (0: not one; \u is unescape's). */
static const unsigned char simple_escape[256] = {
  ['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b', ['f'] = '\f', ['n'] = '\n', ['r'] = '\r',
  ['t'] = '\t',
};

/* Copies [q, e), which holds no '"' and no control character, into o, decoding escapes. */
static bool copy_unescaped(struct jp *j, const unsigned char *q, const unsigned char *e,
                           unsigned char *o)
{
  while(q < e) {
    if(*q == '\\') {
      unsigned char c = q + 1 < e ? simple_escape[q[1]] : 0;
      if(c) { /* the common escapes (a last-applied annotation is full of \"), inline */
        *o++ = c;
        q += 2;
      } else if(!unescape(j, &q, &o))
        return false;
      continue;
    }
    uint64_t x;
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while(e - q >= 8 && (memcpy(&x, q, 8), !(((x ^ (ones * '\\')) - ones) & ~(x ^ (ones * '\\')) & highs))) {
      memcpy(o, &x, 8);
      o += 8;
      q += 8;
    }
    while(q < e && *q != '\\')
      *o++ = *q++;
  }
  *o = '\0'; /* an escape never runs past e: a pair's second half starts with '\\', not '"' */
  return true;
}

/* The closing quote of the string whose text starts at s (after its '"'), stepping over escapes
 * unchecked (the callers check them); *escaped says whether there was one. NULL with the fault
 * set: the input ends, or a raw control character. */
static inline const unsigned char *string_end(struct jp *j, const unsigned char *s,
                                               bool *escaped)
{
  const unsigned char *e = s;
  *escaped = false;
  for(;;) {
    e = json_skip_plain(e, j->end);
    if(e >= j->end)
      return syntax(j, j->end), NULL;
    if(*e == '"')
      return e;
    if(*e < 0x20)
      return syntax(j, e), NULL;
    if(j->end - e < 2) /* a backslash as the last byte */
      return syntax(j, j->end), NULL;
    *escaped = true;
    e += 2;
  }
}

/* The string starting at j->p (a '"'), unescaped into a block of the hooks' allocator. */
static bool parse_string(struct jp *j, char **out)
{
  const unsigned char *s = j->p + 1;
  bool escaped;
  const unsigned char *e = string_end(j, s, &escaped);
  if(!e)
    return false;
  /* unescaped, the text never grows */
  unsigned char *r = cJSON_malloc((size_t)(e - s) + 1);
  if(!r) {
    j->fail = JP_NOMEM;
    return false;
  }
  *out = (char *)r; /* owned by the node from here, so a failure below still frees it */
  if(!escaped) {
    memcpy(r, s, (size_t)(e - s));
    r[e - s] = '\0';
    j->p = e + 1;
    return true;
  }
  if(!copy_unescaped(j, s, e, r))
    return false;
  j->p = e + 1;
  return true;
}

/* Checks the number at j->p against the grammar and moves past it; *u holds its first 19
 * digits' value and *ndig how many there are, *integral whether it has no fraction or exponent. */
static bool scan_number(struct jp *j, uint64_t *u_out, size_t *ndig, bool *integral)
{
  const unsigned char *s = j->p, *p = s;
  bool neg = *p == '-';
  if(neg)
    p++;
  if(!is_digit(j, p))
    return syntax(j, p);
  uint64_t u = 0;
  if(*p == '0')
    p++;
  else
    while(is_digit(j, p))
      u = u * 10 + (uint64_t)(*p++ - '0'); /* wraps past 19 digits: strtod then */
  *ndig = (size_t)(p - s) - neg;
  *integral = true;
  if(p < j->end && *p == '.') {
    if(!is_digit(j, ++p))
      return syntax(j, p);
    while(is_digit(j, p))
      p++;
    *integral = false;
  }
  if(p < j->end && (*p == 'e' || *p == 'E')) {
    p++;
    if(p < j->end && (*p == '+' || *p == '-'))
      p++;
    if(!is_digit(j, p))
      return syntax(j, p);
    while(is_digit(j, p))
      p++;
    *integral = false;
  }
  *u_out = u;
  j->p = p;
  return true;
}

static bool parse_number(struct jp *j, cJSON *n)
{
  const unsigned char *s = j->p;
  bool neg = *s == '-', integral;
  uint64_t u;
  size_t ndig;
  if(!scan_number(j, &u, &ndig, &integral))
    return false;
  const unsigned char *p = j->p;
  double d;
  if(integral && ndig <= 19) { /* fits in u; the conversion rounds to nearest, as strtod does */
    d = (double)u;
    if(neg)
      d = -d;
  } else {
    size_t len = (size_t)(p - s);
    char small[64], *t = len < sizeof(small) ? small : malloc(len + 1);
    if(!t) {
      j->fail = JP_NOMEM;
      return false;
    }
    memcpy(t, s, len);
    t[len] = '\0';
    d = strtod(t, NULL); /* the grammar is checked; the C locale's '.' is the JSON one */
    if(t != small)
      free(t);
  }
  n->type = cJSON_Number;
  n->valuedouble = d;
  n->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
  return true;
}

static bool keyword(struct jp *j, const char *word, size_t len)
{
  if((size_t)(j->end - j->p) < len || memcmp(j->p, word, len))
    return syntax(j, j->p);
  j->p += len;
  return true;
}

static bool parse_value(struct jp *j, cJSON *n, int depth);

/* ---- the punctuation both walks (parse_container, skip_container) read alike ---- */

enum jp_step { JP_MORE, JP_DONE, JP_FAIL };

/* Past the opening bracket at j->p: JP_DONE for an empty container, JP_MORE when members follow
 * (and depth, the container's own, allows them), JP_FAIL with the fault set. */
static inline enum jp_step open_container(struct jp *j, int depth, unsigned char close)
{
  j->p++;
  skip_ws(j);
  if(j->p < j->end && *j->p == close) {
    j->p++;
    return JP_DONE;
  }
  if(depth >= JSON_MAX_DEPTH) {
    j->fail = JP_DEEP;
    return JP_FAIL;
  }
  return JP_MORE;
}

/* The ':' after a member's name, and the whitespace around it. */
static inline bool name_separator(struct jp *j)
{
  skip_ws(j);
  if(j->p >= j->end || *j->p != ':')
    return syntax(j, j->p);
  j->p++;
  skip_ws(j);
  return true;
}

/* After a member: JP_MORE past a ',', JP_DONE past the closing bracket, else JP_FAIL. */
static inline enum jp_step after_member(struct jp *j, unsigned char close)
{
  skip_ws(j);
  if(j->p < j->end && *j->p == ',') {
    j->p++;
    skip_ws(j);
    return JP_MORE;
  }
  if(j->p < j->end && *j->p == close) {
    j->p++;
    return JP_DONE;
  }
  syntax(j, j->p);
  return JP_FAIL;
}

/* ---- checking a value without building it (members kept as text: struct json_raw) ---- */

/* The string at j->p (a '"'): checked as parse_string checks it, in the same order (its end
 * first, then its escapes, so a fault is reported where parse_string reports it); escapes are
 * decoded into a scratch buffer and dropped. */
static bool skip_string(struct jp *j)
{
  const unsigned char *s = j->p + 1;
  bool escaped;
  const unsigned char *e = string_end(j, s, &escaped);
  if(!e)
    return false;
  for(const unsigned char *q = s; escaped && q < e;) {
    if(*q != '\\') {
      q++;
      continue;
    }
    unsigned char scratch[8], *o = scratch;
    if(q + 1 < e && simple_escape[q[1]])
      q += 2;
    else if(!unescape(j, &q, &o))
      return false;
  }
  j->p = e + 1;
  return true;
}

static bool skip_container(struct jp *j, int depth, bool object);

/* The value at j->p, checked as parse_value checks it (grammar and depth); depth is its own. */
static bool skip_value(struct jp *j, int depth)
{
  if(j->p >= j->end)
    return syntax(j, j->end);
  switch(*j->p) {
  case '{': return skip_container(j, depth, true);
  case '[': return skip_container(j, depth, false);
  case '"': return skip_string(j);
  case 't': return keyword(j, "true", 4);
  case 'f': return keyword(j, "false", 5);
  case 'n': return keyword(j, "null", 4);
  default: {
    uint64_t u;
    size_t ndig;
    bool integral;
    return scan_number(j, &u, &ndig, &integral);
  }
  }
}

static bool skip_container(struct jp *j, int depth, bool object)
{
  unsigned char close = object ? '}' : ']';
  enum jp_step step = open_container(j, depth, close);
  while(step == JP_MORE) {
    if(object) {
      if(j->p >= j->end || *j->p != '"')
        return syntax(j, j->p);
      if(!skip_string(j) || !name_separator(j))
        return false;
    }
    if(!skip_value(j, depth + 1))
      return false;
    step = after_member(j, close);
  }
  return step == JP_DONE;
}

/* Whether the member named name, whose value sits at depth, is to be kept as text. */
static bool keep_raw(const struct jp *j, const char *name, int depth)
{
  if(!j->raw || depth != j->raw->depth)
    return false;
  for(const char *const *n = j->raw->names; *n; n++)
    if(!strcmp(*n, name))
      return true;
  return false;
}

/* The value at j->p checked and copied as it is into a cJSON_Raw node. */
static bool raw_value(struct jp *j, cJSON *n, int depth)
{
  const unsigned char *s = j->p;
  if(!skip_value(j, depth))
    return false;
  size_t len = (size_t)(j->p - s);
  char *text = cJSON_malloc(len + 1);
  if(!text) {
    j->fail = JP_NOMEM;
    return false;
  }
  memcpy(text, s, len);
  text[len] = '\0';
  n->type = cJSON_Raw;
  n->valuestring = text;
  return true;
}

/* A new node appended to parent's children (tail tracked by the caller); NULL when out of
 * memory. */
static cJSON *append(struct jp *j, cJSON *parent, cJSON **tail)
{
  cJSON *c = cJSON_malloc(sizeof(*c));
  if(!c) {
    j->fail = JP_NOMEM;
    return NULL;
  }
  *c = (cJSON){ 0 };
  if(*tail) {
    (*tail)->next = c;
    c->prev = *tail;
  } else
    parent->child = c;
  parent->child->prev = c; /* cJSON's convention: the first child's prev is the last one */
  *tail = c;
  return c;
}

/* The members of a container; depth is the container's own (the root's is 1). */
static bool parse_container(struct jp *j, cJSON *n, int depth, bool object)
{
  unsigned char close = object ? '}' : ']';
  n->type = object ? cJSON_Object : cJSON_Array;
  enum jp_step step = open_container(j, depth, close);
  cJSON *tail = NULL;
  while(step == JP_MORE) {
    cJSON *c = append(j, n, &tail);
    if(!c)
      return false;
    if(object) {
      if(j->p >= j->end || *j->p != '"')
        return syntax(j, j->p);
      if(!parse_string(j, &c->string) || !name_separator(j))
        return false;
    }
    if(object && keep_raw(j, c->string, depth + 1) ? !raw_value(j, c, depth + 1)
                                                    : !parse_value(j, c, depth + 1))
      return false;
    step = after_member(j, close);
  }
  return step == JP_DONE;
}

static bool parse_value(struct jp *j, cJSON *n, int depth)
{
  if(j->p >= j->end)
    return syntax(j, j->end);
  switch(*j->p) {
  case '{':
    return parse_container(j, n, depth, true);
  case '[':
    return parse_container(j, n, depth, false);
  case '"':
    n->type = cJSON_String;
    return parse_string(j, &n->valuestring);
  case 't':
    n->type = cJSON_True;
    n->valueint = 1;
    return keyword(j, "true", 4);
  case 'f':
    n->type = cJSON_False;
    return keyword(j, "false", 5);
  case 'n':
    n->type = cJSON_NULL;
    return keyword(j, "null", 4);
  default:
    return parse_number(j, n);
  }
}

gw_rc json_parse_strict_raw(const char *buf, size_t len, const struct json_raw *raw, cJSON **out,
                           char *errbuf, size_t errlen)
{
  *out = NULL;
  if(len == 0) {
    snprintf(errbuf, errlen, "empty body: expected a JSON object");
    return GW_EPARSE;
  }
  const unsigned char *start = (const unsigned char *)buf;
  struct jp j = { start, start + len, NULL, JP_OK, raw };
  if(len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
    j.p += 3;
  /* A terminating NUL counted in len is not data. */
  if(j.end > j.p && j.end[-1] == '\0')
    j.end--;
  cJSON *v = cJSON_malloc(sizeof(*v));
  if(!v) {
    snprintf(errbuf, errlen, "out of memory parsing %zu bytes of JSON", len);
    return GW_ENOMEM;
  }
  *v = (cJSON){ 0 };
  skip_ws(&j);
  bool trailing = false;
  if(parse_value(&j, v, 1)) {
    skip_ws(&j);
    if(j.p < j.end) {
      trailing = true;
      syntax(&j, j.p);
    }
  }
  if(j.fail == JP_OK) {
    *out = v;
    return GW_OK;
  }
  cJSON_Delete(v); /* every block is linked into v as soon as it is allocated */
  size_t off = (size_t)(j.bad - start);
  if(j.fail == JP_DEEP)
    snprintf(errbuf, errlen, "JSON nested deeper than %d levels", JSON_MAX_DEPTH);
  else if(j.fail == JP_NOMEM) {
    snprintf(errbuf, errlen, "out of memory parsing %zu bytes of JSON", len);
    return GW_ENOMEM;
  } else if(trailing)
    snprintf(errbuf, errlen, "malformed JSON: unexpected data after the value at byte %zu", off);
  else if(j.bad >= j.end)
    snprintf(errbuf, errlen, "malformed JSON: input ends early (%zu bytes)", len);
  else
    snprintf(errbuf, errlen, "malformed JSON at byte %zu", off);
  return GW_EPARSE;
}

gw_rc json_parse_strict(const char *buf, size_t len, cJSON **out, char *errbuf, size_t errlen)
{
  return json_parse_strict_raw(buf, len, NULL, out, errbuf, errlen);
}

gw_rc json_materialize(cJSON *n)
{
  if(!n || (n->type & 0xFF) != cJSON_Raw || !n->valuestring)
    return GW_OK;
  cJSON *t;
  char err[128];
  gw_rc rc = json_parse_strict(n->valuestring, strlen(n->valuestring), &t, err, sizeof(err));
  if(rc)
    return rc;
  cJSON_free(n->valuestring);
  n->type = t->type;
  n->valuestring = t->valuestring;
  n->valueint = t->valueint;
  n->valuedouble = t->valuedouble;
  n->child = t->child;
  t->child = NULL;
  t->valuestring = NULL;
  cJSON_Delete(t);
  return GW_OK;
}
