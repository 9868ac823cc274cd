/*
 * schema_regex.c: the `pattern` keyword of CRD schemas. kube-apiserver matches patterns with Go's
 * regexp (RE2 syntax, on runes, unanchored: regexp.MatchString), so this is a small RE2 subset
 * compiled to a Thompson NFA and run in time linear in the input, whatever the pattern.
 *
 * Supported: literals (UTF-8), `.`, `^` `$` (text start/end; line start/end under (?m)), `\A`
 * `\z`, `\b` `\B`, classes `[...]` `[^...]` with ranges, escapes and POSIX names
 * (`[[:alpha:]]`), `\d \D \w \W \s \S`, escaped punctuation, `\n \t \r \f \v \a`, `\xHH`,
 * `\x{H...}`, groups `(...)` `(?:...)` `(?P<name>...)`, flags `(?i)` `(?m)` `(?s)` `(?U)` (also
 * scoped `(?i:...)`; case folding is ASCII only), alternation, `* + ?`, `{n}` `{n,}` `{n,m}`
 * (up to 1000, as RE2) and their lazy forms (which match the same set of strings).
 * Not supported (refused at compile time with a reason): Unicode classes `\p{...}` / `\pL`,
 * `\Q...\E`, octal escapes and backreferences (RE2 has none either).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "schema_regex.h"

/* ---- compiler ---- */

static int emit(struct rx *r, struct inst in, char *err, size_t errlen)
{
  if(r->n >= RX_MAX_INST) {
    snprintf(err, errlen, "error parsing regexp: expression too large");
    return -1;
  }
  if(r->n == r->cap) {
    int cap = r->cap ? r->cap * 2 : 64;
    struct inst *v = realloc(r->in, (size_t)cap * sizeof(*v));
    if(!v) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    r->in = v, r->cap = cap;
  }
  r->in[r->n] = in;
  return r->n++;
}

static bool compile(struct rx *r, const struct node *n, char *err, size_t errlen)
{
  switch(n->kind) {
  case N_EMPTY: return true;
  case N_LIT: return emit(r, (struct inst){ .op = I_CHAR, .c = n->c, .fold = n->fold }, err, errlen) >= 0;
  case N_ANY: return emit(r, (struct inst){ .op = I_ANY, .dotnl = n->dotnl }, err, errlen) >= 0;
  case N_CLASS: return emit(r, (struct inst){ .op = I_CLASS, .cls = n->cls, .fold = n->fold }, err, errlen) >= 0;
  case N_ASSERT: return emit(r, (struct inst){ .op = I_ASSERT, .a = n->a }, err, errlen) >= 0;
  case N_CAT:
    for(size_t i = 0; i < n->nkids; i++)
      if(!compile(r, n->kids[i], err, errlen))
        return false;
    return true;
  case N_ALT: {
    if(n->nkids == 1)
      return compile(r, n->kids[0], err, errlen);
    int *jmps = malloc(n->nkids * sizeof(int));
    if(!jmps) {
      snprintf(err, errlen, "out of memory");
      return false;
    }
    bool ok = true;
    for(size_t i = 0; ok && i < n->nkids; i++) {
      int split = -1;
      if(i + 1 < n->nkids && (split = emit(r, (struct inst){ .op = I_SPLIT }, err, errlen)) < 0)
        ok = false;
      if(ok && split >= 0)
        r->in[split].x = r->n;
      ok = ok && compile(r, n->kids[i], err, errlen);
      jmps[i] = -1;
      if(ok && i + 1 < n->nkids && (jmps[i] = emit(r, (struct inst){ .op = I_JMP }, err, errlen)) < 0)
        ok = false;
      if(ok && split >= 0)
        r->in[split].y = r->n;
    }
    for(size_t i = 0; ok && i + 1 < n->nkids; i++)
      r->in[jmps[i]].x = r->n;
    free(jmps);
    return ok;
  }
  case N_REP: {
    const struct node *k = n->kids[0];
    for(int i = 0; i < n->min; i++)
      if(!compile(r, k, err, errlen))
        return false;
    if(n->max < 0) {
      int split = emit(r, (struct inst){ .op = I_SPLIT }, err, errlen);
      if(split < 0)
        return false;
      r->in[split].x = r->n;
      if(!compile(r, k, err, errlen))
        return false;
      if(emit(r, (struct inst){ .op = I_JMP, .x = split }, err, errlen) < 0)
        return false;
      r->in[split].y = r->n;
      return true;
    }
    int opt = n->max - n->min;
    int *splits = opt ? malloc((size_t)opt * sizeof(int)) : NULL;
    bool ok = !opt || splits;
    for(int i = 0; ok && i < opt; i++) {
      ok = (splits[i] = emit(r, (struct inst){ .op = I_SPLIT }, err, errlen)) >= 0;
      if(ok)
        r->in[splits[i]].x = r->n;
      ok = ok && compile(r, k, err, errlen);
    }
    for(int i = 0; ok && i < opt; i++)
      r->in[splits[i]].y = r->n;
    free(splits);
    return ok;
  }
  }
  return false;
}

struct rx *rx_compile(const char *pattern, char *err, size_t errlen)
{
  struct rx *r = calloc(1, sizeof(*r));
  if(!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  struct node *root = rx_parse(pattern, r, err, errlen);
  bool ok = root && compile(r, root, err, errlen) && emit(r, (struct inst){ .op = I_MATCH }, err, errlen) >= 0;
  rx_node_free(root);
  if(!ok) {
    rx_free(r);
    return NULL;
  }
  return r;
}

void rx_free(struct rx *r)
{
  if(!r)
    return;
  for(size_t i = 0; i < r->ncls; i++)
    free(r->cls[i].r);
  free(r->cls);
  free(r->in);
  free(r);
}

/* ---- matcher ---- */

static long fold(long c)
{
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool in_class(const struct cls *c, long r, bool f)
{
  bool hit = false;
  for(size_t i = 0; i < c->n && !hit; i++) {
    if(r >= c->r[i].lo && r <= c->r[i].hi)
      hit = true;
    else if(f) {
      long o = r >= 'a' && r <= 'z' ? r - 32 : r >= 'A' && r <= 'Z' ? r + 32 : -1;
      hit = o >= 0 && o >= c->r[i].lo && o <= c->r[i].hi;
    }
  }
  return hit != c->neg;
}

static bool is_word(long c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool assert_ok(enum akind a, long prev, long next)
{
  switch(a) {
  case A_BOT: return prev < 0;
  case A_EOT: return next < 0;
  case A_BOL: return prev < 0 || prev == '\n';
  case A_EOL: return next < 0 || next == '\n';
  case A_WORD: return is_word(prev) != is_word(next);
  case A_NWORD: return is_word(prev) == is_word(next);
  }
  return false;
}

struct threads {
  int *pc;
  int n;
};

/* Adds pc and everything reachable through epsilon moves; true when MATCH is reached. */
static bool addthread(const struct rx *r, struct threads *l, int *mark, int gen, int *stack,
                      int pc, long prev, long next)
{
  int sp = 0;
  bool matched = false;
  stack[sp++] = pc;
  while(sp) {
    int p = stack[--sp];
    if(mark[p] == gen)
      continue;
    mark[p] = gen;
    const struct inst *in = &r->in[p];
    switch(in->op) {
    case I_JMP: stack[sp++] = in->x; break;
    case I_SPLIT:
      stack[sp++] = in->y;
      stack[sp++] = in->x;
      break;
    case I_ASSERT:
      if(assert_ok(in->a, prev, next))
        stack[sp++] = p + 1;
      break;
    case I_MATCH: matched = true; break;
    default: l->pc[l->n++] = p; break;
    }
  }
  return matched;
}

static long decode(const unsigned char **s)
{
  const unsigned char *p = *s;
  unsigned c = p[0];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  long r = len == 1 ? (long)c : len == 2 ? (long)(c & 0x1f) : len == 3 ? (long)(c & 0x0f) : (long)(c & 0x07);
  for(int i = 1; i < len; i++) {
    if((p[i] & 0xc0) != 0x80) {
      len = 0;
      break;
    }
    r = (r << 6) | (p[i] & 0x3f);
  }
  if(!len) {
    *s = p + 1;
    return 0xfffd;
  }
  *s = p + len;
  return r;
}

bool rx_match(const struct rx *r, const char *s)
{
  size_t blen = strlen(s);
  long *runes = malloc((blen + 1) * sizeof(*runes));
  /* current list, next list, marks, and the epsilon-walk stack (at most 2n+1 entries) */
  int *buf = malloc(((size_t)r->n * 5 + 2) * sizeof(int));
  if(!runes || !buf) {
    free(runes);
    free(buf);
    return false;
  }
  size_t n = 0;
  for(const unsigned char *p = (const unsigned char *)s; *p;)
    runes[n++] = decode(&p);
  struct threads cl = { buf, 0 }, nl = { buf + r->n, 0 };
  int *mark = buf + 2 * r->n, *stack = buf + 3 * r->n;
  memset(mark, 0, (size_t)r->n * sizeof(int));
  int gen = 0;
  bool matched = false;
  for(size_t pos = 0; !matched; pos++) {
    long prev = pos ? runes[pos - 1] : -1, cur = pos < n ? runes[pos] : -1;
    if(pos == 0)
      matched = addthread(r, &cl, mark, ++gen, stack, 0, prev, cur);
    else if(addthread(r, &cl, mark, gen, stack, 0, prev, cur)) /* unanchored: start here too */
      matched = true;
    if(matched || pos == n)
      break;
    nl.n = 0;
    ++gen;
    long nx = pos + 1 < n ? runes[pos + 1] : -1;
    for(int i = 0; i < cl.n && !matched; i++) {
      const struct inst *in = &r->in[cl.pc[i]];
      bool ok = in->op == I_CHAR  ? (in->fold ? fold(in->c) == fold(cur) : in->c == cur)
                : in->op == I_ANY ? (in->dotnl || cur != '\n')
                                  : in_class(&r->cls[in->cls], cur, in->fold);
      if(ok && addthread(r, &nl, mark, gen, stack, cl.pc[i] + 1, cur, nx))
        matched = true;
    }
    struct threads t = cl;
    cl = nl, nl = t;
  }
  free(runes);
  free(buf);
  return matched;
}
