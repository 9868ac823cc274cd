/*
 * schema_regex_parse.c: Go RE2 pattern syntax to a tree (schema_regex.h); see schema_regex.c for
 * what is supported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "schema_regex.h"

struct parser {
  const char *p;
  char *err;
  size_t errlen;
  bool failed;
  struct rx *rx;
  bool fold, multiline, dotnl;
  int depth;
};

static void fail(struct parser *ps, const char *what)
{
  if(!ps->failed)
    snprintf(ps->err, ps->errlen, "error parsing regexp: %s", what);
  ps->failed = true;
}

static struct node *mk(struct parser *ps, enum nkind k)
{
  struct node *n = calloc(1, sizeof(*n));
  if(!n)
    fail(ps, "out of memory");
  else
    n->kind = k;
  return n;
}

static void add_kid(struct parser *ps, struct node *n, struct node *k)
{
  if(!n || !k)
    return;
  struct node **v = realloc(n->kids, (n->nkids + 1) * sizeof(*v));
  if(!v) {
    fail(ps, "out of memory");
    return;
  }
  n->kids = v;
  n->kids[n->nkids++] = k;
}

void rx_node_free(struct node *n)
{
  if(!n)
    return;
  for(size_t i = 0; i < n->nkids; i++)
    rx_node_free(n->kids[i]);
  free(n->kids);
  free(n);
}

static long next_rune(struct parser *ps)
{
  const unsigned char *s = (const unsigned char *)ps->p;
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if(!len) {
    fail(ps, "invalid UTF-8");
    return -1;
  }
  long r = len == 1 ? (long)c : len == 2 ? (long)(c & 0x1f) : len == 3 ? (long)(c & 0x0f) : (long)(c & 0x07);
  for(int i = 1; i < len; i++) {
    if((s[i] & 0xc0) != 0x80) {
      fail(ps, "invalid UTF-8");
      return -1;
    }
    r = (r << 6) | (s[i] & 0x3f);
  }
  ps->p += len;
  return r;
}

static int new_class(struct parser *ps, bool neg)
{
  struct cls *v = realloc(ps->rx->cls, (ps->rx->ncls + 1) * sizeof(*v));
  if(!v) {
    fail(ps, "out of memory");
    return 0;
  }
  ps->rx->cls = v;
  v[ps->rx->ncls] = (struct cls){ NULL, 0, neg };
  return (int)ps->rx->ncls++;
}

static void class_add(struct parser *ps, int ci, long lo, long hi)
{
  struct cls *c = &ps->rx->cls[ci];
  struct range *v = realloc(c->r, (c->n + 1) * sizeof(*v));
  if(!v) {
    fail(ps, "out of memory");
    return;
  }
  c->r = v;
  c->r[c->n++] = (struct range){ lo, hi };
}

/* Perl classes: \d \w \s; negated ones add the complement. */
static void class_perl(struct parser *ps, int ci, char k)
{
  static const struct range d[] = { { '0', '9' } };
  static const struct range w[] = { { '0', '9' }, { 'A', 'Z' }, { '_', '_' }, { 'a', 'z' } };
  static const struct range s[] = { { '\t', '\n' }, { '\f', '\r' }, { ' ', ' ' } };
  char lk = (char)(k | 0x20);
  const struct range *r = lk == 'd' ? d : lk == 'w' ? w : s;
  size_t n = lk == 'd' ? 1 : lk == 'w' ? 4 : 3;
  if(k == lk) {
    for(size_t i = 0; i < n; i++)
      class_add(ps, ci, r[i].lo, r[i].hi);
    return;
  }
  long lo = 0;
  for(size_t i = 0; i < n; i++) {
    if(r[i].lo > lo)
      class_add(ps, ci, lo, r[i].lo - 1);
    lo = r[i].hi + 1;
  }
  class_add(ps, ci, lo, 0x10ffff);
}

static bool class_posix(struct parser *ps, int ci)
{
  static const struct {
    const char *name;
    const char *ranges; /* pairs */
  } t[] = {
    { "alnum", "09AZaz" }, { "alpha", "AZaz" },  { "ascii", "\x01\x7f" }, { "blank", "\t\t  " },
    { "cntrl", "\x01\x1f\x7f\x7f" }, { "digit", "09" }, { "graph", "!~" }, { "lower", "az" },
    { "print", " ~" }, { "punct", "!/:@[`{~" }, { "space", "\t\r  " }, { "upper", "AZ" },
    { "word", "09AZ__az" }, { "xdigit", "09AFaf" },
  };
  const char *q = ps->p + 2; /* after "[:" */
  bool neg = *q == '^';
  if(neg)
    q++;
  const char *end = strstr(q, ":]");
  if(!end)
    return false;
  for(size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    if(strlen(t[i].name) != (size_t)(end - q) || strncmp(q, t[i].name, (size_t)(end - q)))
      continue;
    const char *r = t[i].ranges;
    size_t n = strlen(r) / 2;
    if(!strcmp(t[i].name, "ascii") || !strcmp(t[i].name, "cntrl"))
      class_add(ps, ci, 0, 0); /* NUL belongs to both */
    long lo = 0;
    for(size_t k = 0; k < n; k++) {
      long a = (unsigned char)r[2 * k], b = (unsigned char)r[2 * k + 1];
      if(!neg)
        class_add(ps, ci, a, b);
      else {
        if(a > lo)
          class_add(ps, ci, lo, a - 1);
        lo = b + 1;
      }
    }
    if(neg)
      class_add(ps, ci, lo, 0x10ffff);
    ps->p = end + 2;
    return true;
  }
  fail(ps, "invalid character class range");
  return true;
}

static long hexval(struct parser *ps)
{
  long v = 0;
  int nd = 0;
  bool braced = *ps->p == '{';
  if(braced)
    ps->p++;
  while(braced ? *ps->p && *ps->p != '}' : nd < 2) {
    char c = *ps->p;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if(d < 0 || nd > 7) {
      fail(ps, "invalid escape sequence");
      return -1;
    }
    v = v * 16 + d;
    nd++;
    ps->p++;
  }
  if(braced) {
    if(*ps->p != '}' || !nd) {
      fail(ps, "invalid escape sequence");
      return -1;
    }
    ps->p++;
  }
  return v;
}

/* After a backslash: a literal rune, or -2 when the escape was a Perl class added to ci (ci
 * < 0: the caller must make a class). */
static long escape(struct parser *ps, int *ci)
{
  char c = *ps->p;
  if(!c) {
    fail(ps, "trailing backslash at end of expression");
    return -1;
  }
  if(strchr("dDwWsS", c)) {
    ps->p++;
    if(*ci < 0)
      *ci = new_class(ps, false);
    class_perl(ps, *ci, c);
    return -2;
  }
  ps->p++;
  switch(c) {
  case 'n': return '\n';
  case 't': return '\t';
  case 'r': return '\r';
  case 'f': return '\f';
  case 'v': return '\v';
  case 'a': return '\a';
  case 'x': return hexval(ps);
  case 'p':
  case 'P': fail(ps, "Unicode classes (\\p) are not supported here"); return -1;
  case 'Q': fail(ps, "\\Q...\\E is not supported here"); return -1;
  default: break;
  }
  if((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    fail(ps, "invalid escape sequence");
    return -1;
  }
  ps->p--;
  return next_rune(ps); /* escaped punctuation */
}

static struct node *parse_class(struct parser *ps)
{
  ps->p++; /* [ */
  bool neg = *ps->p == '^';
  if(neg)
    ps->p++;
  int ci = new_class(ps, neg);
  bool first = true;
  while(!ps->failed && (*ps->p != ']' || first)) {
    if(!*ps->p) {
      fail(ps, "missing closing ]");
      break;
    }
    first = false;
    if(ps->p[0] == '[' && ps->p[1] == ':' && class_posix(ps, ci))
      continue;
    long lo;
    if(*ps->p == '\\') {
      ps->p++;
      lo = escape(ps, &ci);
      if(lo == -2)
        continue;
    } else
      lo = next_rune(ps);
    long hi = lo;
    if(ps->p[0] == '-' && ps->p[1] && ps->p[1] != ']') {
      ps->p++;
      if(*ps->p == '\\') {
        ps->p++;
        int dummy = ci;
        hi = escape(ps, &dummy);
        if(hi == -2) {
          fail(ps, "invalid character class range");
          break;
        }
      } else
        hi = next_rune(ps);
      if(hi < lo) {
        fail(ps, "invalid character class range");
        break;
      }
    }
    class_add(ps, ci, lo, hi);
  }
  if(*ps->p == ']')
    ps->p++;
  struct node *n = mk(ps, N_CLASS);
  if(n) {
    n->cls = ci;
    n->fold = ps->fold;
  }
  return n;
}

static struct node *parse_alt(struct parser *ps);

/* (?flags) or (?flags:...) after "(?"; returns a node for the scoped form, NULL otherwise. */
static struct node *parse_flags(struct parser *ps, bool *scoped)
{
  bool on = true, fold = ps->fold, ml = ps->multiline, s = ps->dotnl;
  for(;;) {
    char c = *ps->p++;
    if(c == '-')
      on = false;
    else if(c == 'i')
      fold = on;
    else if(c == 'm')
      ml = on;
    else if(c == 's')
      s = on;
    else if(c == 'U')
      ;
    else if(c == ')' || c == ':') {
      *scoped = c == ':';
      break;
    } else {
      fail(ps, "invalid or unsupported Perl syntax");
      return NULL;
    }
  }
  if(!*scoped) {
    ps->fold = fold, ps->multiline = ml, ps->dotnl = s;
    return NULL;
  }
  bool of = ps->fold, om = ps->multiline, os = ps->dotnl;
  ps->fold = fold, ps->multiline = ml, ps->dotnl = s;
  struct node *n = parse_alt(ps);
  ps->fold = of, ps->multiline = om, ps->dotnl = os;
  if(*ps->p != ')')
    fail(ps, "missing closing )");
  else
    ps->p++;
  return n;
}

static struct node *parse_atom(struct parser *ps)
{
  char c = *ps->p;
  struct node *n = NULL;
  if(c == '(') {
    ps->p++;
    if(++ps->depth > 200) {
      fail(ps, "expression nests too deeply");
      return NULL;
    }
    if(ps->p[0] == '?') {
      if(ps->p[1] == 'P' && ps->p[2] == '<') {
        const char *e = strchr(ps->p, '>');
        if(!e) {
          fail(ps, "invalid named capture");
          return NULL;
        }
        ps->p = e + 1;
      } else {
        ps->p++;
        bool scoped = false;
        bool of = ps->fold, om = ps->multiline, os = ps->dotnl;
        if(*ps->p == ':') {
          ps->p++;
        } else {
          n = parse_flags(ps, &scoped);
          ps->depth--;
          if(!scoped)
            return mk(ps, N_EMPTY); /* flags for the rest of the group */
          ps->fold = of, ps->multiline = om, ps->dotnl = os;
          return n;
        }
      }
    }
    bool of = ps->fold, om = ps->multiline, os = ps->dotnl;
    n = parse_alt(ps);
    ps->fold = of, ps->multiline = om, ps->dotnl = os;
    ps->depth--;
    if(*ps->p != ')') {
      fail(ps, "missing closing )");
      return n;
    }
    ps->p++;
    return n;
  }
  if(c == '[')
    return parse_class(ps);
  if(c == '.') {
    ps->p++;
    n = mk(ps, N_ANY);
    if(n)
      n->dotnl = ps->dotnl;
    return n;
  }
  if(c == '^' || c == '$') {
    ps->p++;
    n = mk(ps, N_ASSERT);
    if(n)
      n->a = c == '^' ? (ps->multiline ? A_BOL : A_BOT) : (ps->multiline ? A_EOL : A_EOT);
    return n;
  }
  if(c == '*' || c == '+' || c == '?' || c == '{') {
    if(c != '{') {
      fail(ps, "missing argument to repetition operator");
      return NULL;
    }
  }
  if(c == '\\') {
    ps->p++;
    char e = *ps->p;
    if(e == 'A' || e == 'z' || e == 'b' || e == 'B') {
      ps->p++;
      n = mk(ps, N_ASSERT);
      if(n)
        n->a = e == 'A' ? A_BOT : e == 'z' ? A_EOT : e == 'b' ? A_WORD : A_NWORD;
      return n;
    }
    int ci = -1;
    long r = escape(ps, &ci);
    if(r == -2) {
      n = mk(ps, N_CLASS);
      if(n)
        n->cls = ci;
      return n;
    }
    n = mk(ps, N_LIT);
    if(n)
      n->c = r, n->fold = ps->fold;
    return n;
  }
  n = mk(ps, N_LIT);
  if(n) {
    n->c = next_rune(ps);
    n->fold = ps->fold;
  }
  return n;
}

/* {n}, {n,}, {n,m}; false when the brace is a literal (as in RE2). */
static bool parse_braces(struct parser *ps, int *min, int *max)
{
  const char *q = ps->p + 1;
  char *end;
  if(*q < '0' || *q > '9')
    return false;
  long a = strtol(q, &end, 10), b = a;
  q = end;
  if(*q == ',') {
    q++;
    if(*q == '}')
      b = -1;
    else {
      if(*q < '0' || *q > '9')
        return false;
      b = strtol(q, &end, 10);
      q = end;
    }
  }
  if(*q != '}')
    return false;
  if(a > RX_MAX_REPEAT || b > RX_MAX_REPEAT || (b >= 0 && b < a)) {
    fail(ps, "invalid repeat count");
    return true;
  }
  *min = (int)a, *max = (int)b;
  ps->p = q + 1;
  return true;
}

static struct node *parse_repeat(struct parser *ps)
{
  struct node *a = parse_atom(ps);
  while(!ps->failed && a) {
    int min, max;
    char c = *ps->p;
    if(c == '*')
      min = 0, max = -1, ps->p++;
    else if(c == '+')
      min = 1, max = -1, ps->p++;
    else if(c == '?')
      min = 0, max = 1, ps->p++;
    else if(c == '{' && parse_braces(ps, &min, &max)) {
      if(ps->failed)
        break;
    } else
      break;
    if(*ps->p == '?')
      ps->p++; /* lazy: the same language */
    if(a->kind == N_REP || a->kind == N_EMPTY) {
      if(a->kind == N_REP) {
        fail(ps, "invalid nested repetition operator");
        break;
      }
    }
    struct node *r = mk(ps, N_REP);
    if(!r)
      break;
    r->min = min, r->max = max;
    add_kid(ps, r, a);
    a = r;
  }
  return a;
}

static struct node *parse_cat(struct parser *ps)
{
  struct node *cat = mk(ps, N_CAT);
  while(cat && !ps->failed && *ps->p && *ps->p != '|' && *ps->p != ')') {
    struct node *k = parse_repeat(ps);
    if(!k)
      break;
    add_kid(ps, cat, k);
  }
  return cat;
}

static struct node *parse_alt(struct parser *ps)
{
  struct node *alt = mk(ps, N_ALT);
  for(;;) {
    add_kid(ps, alt, parse_cat(ps));
    if(ps->failed || *ps->p != '|')
      break;
    ps->p++;
  }
  return alt;
}

struct node *rx_parse(const char *pattern, struct rx *r, char *err, size_t errlen)
{
  struct parser ps = { .p = pattern, .err = err, .errlen = errlen, .rx = r };
  struct node *root = parse_alt(&ps);
  if(!ps.failed && *ps.p == ')')
    fail(&ps, "unexpected )");
  if(ps.failed) {
    rx_node_free(root);
    return NULL;
  }
  return root;
}
