/* redact.c: credentials out of text (redact.h). */
#include "redact.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strbuf.h"

#define MASK "***"

/* ---- 1. known secrets ---- */

/* s with every occurrence of secret replaced (takes s; NULL when out of memory). */
static char *replace_secret(char *s, const char *secret)
{
  size_t n = secret ? strlen(secret) : 0;
  if(!s || n < REDACT_MIN_SECRET || !strstr(s, secret))
    return s;
  struct strbuf sb;
  strbuf_init(&sb, strlen(s) + 1);
  gw_rc rc = GW_OK;
  const char *p = s;
  for(const char *hit = strstr(p, secret); hit && !rc; hit = strstr(p, secret)) {
    rc = strbuf_add(&sb, p, (size_t)(hit - p));
    if(!rc)
      rc = strbuf_adds(&sb, MASK);
    p = hit + n;
  }
  if(!rc)
    rc = strbuf_adds(&sb, p);
  free(s);
  return rc ? NULL : strbuf_take(&sb, NULL);
}

/* ---- 2. shapes ---- */

static bool uri_end(char c)
{
  return !c || c == '/' || c == '?' || c == '#' || isspace((unsigned char)c) || c == '"' ||
         c == '\'' || c == '<' || c == '>';
}

static bool value_end(char c)
{
  return !c || isspace((unsigned char)c) || c == '"' || c == '\'' || c == '&' || c == ';' ||
         c == ',' || c == ')' || c == '}';
}

/* At "://": the length of the authority's "user:" part and of the password that follows it
 * (both 0 when there is no password). The password runs to the last '@' of the authority, so
 * an unencoded '@' in it does not leave a tail. */
static void uri_password(const char *p, size_t *keep, size_t *pw)
{
  const char *u = p + 3, *e = u, *at = NULL;
  for(; !uri_end(*e); e++)
    if(*e == '@')
      at = e;
  *keep = *pw = 0;
  const char *colon = at ? memchr(u, ':', (size_t)(at - u)) : NULL;
  if(colon) {
    *keep = (size_t)(colon + 1 - p);
    *pw = (size_t)(at - colon - 1);
  }
}

/* The length of a quoted value at q ('...' or "..." with doubled or escaped quotes inside), to
 * its closing quote included, or to the end of the text. */
static size_t quoted_len(const char *q)
{
  char quote = *q;
  size_t i = 1;
  while(q[i]) {
    if(q[i] == '\\' && q[i + 1]) {
      i += 2;
      continue;
    }
    if(q[i] == quote) {
      if(q[i + 1] == quote) { /* SQL's doubled quote */
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return i;
}

static size_t blanks(const char *s)
{
  size_t i = 0;
  while(s[i] == ' ' || s[i] == '\t')
    i++;
  return i;
}

/* At a case-insensitive "password": how many bytes to copy (the key and what separates it from
 * the value) and how many value bytes to mask; 0 and 0 when no value follows. */
static void password_value(const char *p, size_t *keep, size_t *val)
{
  size_t i = 8; /* "password" */
  *keep = *val = 0;
  if(p[i] == '"') /* JSON: "password": "value" */
    i++;
  i += blanks(p + i);
  bool sep = p[i] == '=' || p[i] == ':';
  if(sep) {
    i++;
    i += blanks(p + i);
  } else if(i == 8 || p[i] != '\'') { /* SQL: PASSWORD 'value' (a blank, then a literal) */
    return;
  }
  if(p[i] == '\'' || p[i] == '"') {
    size_t q = quoted_len(p + i);
    *keep = i + 1;
    *val = q >= 2 && p[i + q - 1] == p[i] ? q - 2 : q - 1;
    return;
  }
  if(!sep)
    return;
  size_t v = 0;
  while(!value_end(p[i + v]))
    v++;
  if(v) {
    *keep = i;
    *val = v;
  }
}

/* Masks the shapes of s into sb. */
static gw_rc shapes(struct strbuf *sb, const char *s)
{
  gw_rc rc = GW_OK;
  const char *p = s;
  while(*p && !rc) {
    size_t keep = 0, val = 0;
    if(p[0] == ':' && p[1] == '/' && p[2] == '/')
      uri_password(p, &keep, &val);
    else if(!strncasecmp(p, "password", 8))
      password_value(p, &keep, &val);
    if(val && !(val == 3 && !strncmp(p + keep, MASK, 3))) {
      rc = strbuf_add(sb, p, keep);
      if(!rc)
        rc = strbuf_adds(sb, MASK);
      p += keep + val;
    } else {
      size_t step = keep ? keep + val : 1;
      rc = strbuf_add(sb, p, step);
      p += step;
    }
  }
  return rc;
}

char *redact(const char *s, const char *const *secrets, size_t n)
{
  char *t = strdup(s ? s : "");
  /* longest first: a URI goes whole before the password inside it is looked for */
  bool *done = n ? calloc(n, sizeof(*done)) : NULL;
  if(n && !done) {
    free(t);
    return NULL;
  }
  for(size_t round = 0; round < n && t; round++) {
    size_t best = n, bestlen = 0;
    for(size_t i = 0; i < n; i++) {
      size_t l = secrets[i] ? strlen(secrets[i]) : 0;
      if(!done[i] && (best == n || l > bestlen)) {
        best = i;
        bestlen = l;
      }
    }
    done[best] = true;
    t = replace_secret(t, secrets[best]);
  }
  free(done);
  if(!t)
    return NULL;
  struct strbuf sb;
  strbuf_init(&sb, strlen(t) * 2 + 64);
  gw_rc rc = shapes(&sb, t);
  free(t);
  if(rc) {
    strbuf_release(&sb);
    return NULL;
  }
  return strbuf_take(&sb, NULL);
}

char *redact_cut(const char *s, size_t max, const char *const *secrets, size_t n, bool *cut)
{
  char *r = redact(s, secrets, n);
  size_t len = r ? strlen(r) : 0;
  if(!r || len <= max || max < 4)
    return r;
  size_t k = max - 3;
  while(k > 0 && ((unsigned char)r[k] & 0xC0) == 0x80)
    k--; /* keep UTF-8 whole */
  memcpy(r + k, "...", 4);
  if(cut)
    *cut = true;
  return r;
}

void redact_buf(char *buf, size_t cap, const char *const *secrets, size_t n)
{
  if(!cap)
    return;
  char *r = redact(buf, secrets, n);
  if(!r) {
    snprintf(buf, cap, "%s", "(redacted)");
    return;
  }
  size_t len = strlen(r);
  if(len >= cap) { /* cut, never inside a UTF-8 sequence */
    len = cap - 1;
    while(len > 0 && ((unsigned char)r[len] & 0xC0) == 0x80)
      len--;
  }
  memcpy(buf, r, len);
  buf[len] = '\0';
  free(r);
}
