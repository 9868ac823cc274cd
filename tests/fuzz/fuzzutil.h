/*
 * fuzzutil.h: what the fuzz targets share. Header-only so each target is one object.
 *
 * fuzz_fail() prints why a promise was broken and aborts: libFuzzer then saves the input as
 * crash-<sha1> and stops. The code under test logs at debug level, so the log lines are built
 * for every input too, but they are written to /dev/null: stderr is pointed there, while
 * fuzz_fail, libFuzzer and the sanitizers keep the real standard error.
 * Environment: FUZZ_REINVOKE=0 turns off the reinvocation check of fuzz_admission (on by
 * default); FUZZ_LOG=1 lets the webhook's log lines through.
 */
#ifndef GW_FUZZUTIL_H
#define GW_FUZZUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "server.h"

static bool fuzz_reinvoke = true;
static FILE *fuzz_err;

static inline void fuzz_init(void)
{
  const char *r = getenv("FUZZ_REINVOKE");
  fuzz_reinvoke = !r || strcmp(r, "0");
  fuzz_err = stderr;
  log_set_level(LOG_DEBUG);
  const char *l = getenv("FUZZ_LOG");
  if(!l || strcmp(l, "1")) {
    FILE *null = fopen("/dev/null", "w");
    if(null)
      stderr = null;
  }
}

__attribute__((noreturn, format(printf, 2, 3))) static inline void
fuzz_fail(const char *what, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  FILE *out = fuzz_err ? fuzz_err : stderr;
  fprintf(out, "\n==fuzz== broken promise in %s: ", what);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  fflush(out);
  va_end(ap);
  abort();
}

/* The input as server.c hands a body over: a NUL-terminated heap copy. */
static inline char *fuzz_body(const unsigned char *data, size_t size)
{
  char *b = malloc(size + 1);
  if(!b)
    abort();
  if(size)
    memcpy(b, data, size);
  b[size] = '\0';
  return b;
}

/* Parses like the webhook does; NULL when it is not one JSON value. */
static inline cJSON *fuzz_try_parse(const char *buf, size_t len)
{
  cJSON *v = NULL;
  char err[160];
  if(json_parse_strict(buf, len, &v, err, sizeof(err)))
    return NULL;
  return v;
}

static inline cJSON *fuzz_parse(const char *buf, size_t len, const char *what)
{
  cJSON *v = fuzz_try_parse(buf, len);
  if(!v)
    fuzz_fail(what, "not JSON: %.300s", buf);
  return v;
}

/* Whether some object in v repeats a key. kube-apiserver never sends such JSON (it encodes
 * from Go structs and maps); cJSON keeps every duplicate and finds the first, and a JSON
 * pointer cannot tell duplicates apart, so properties about patches do not hold for them. */
static inline bool fuzz_has_duplicate_keys(const cJSON *v)
{
  for(const cJSON *c = v ? v->child : NULL; c; c = c->next) {
    if(cJSON_IsObject(v))
      for(const cJSON *d = c->next; d; d = d->next)
        if(c->string && d->string && !strcmp(c->string, d->string))
          return true;
    if(fuzz_has_duplicate_keys(c))
      return true;
  }
  return false;
}

/* Exactly the same JSON text (duplicate keys and member order included). */
static inline bool fuzz_same_text(const cJSON *a, const cJSON *b)
{
  char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
  bool same = x && y && !strcmp(x, y);
  cJSON_free(x);
  cJSON_free(y);
  return same;
}

/* Every answer: a body the server can send (malloc'd, NUL-terminated, len bytes). */
static inline void fuzz_check_body(const struct http_response *r, const char *what)
{
  if(!r->body)
    fuzz_fail(what, "no response body (status %d)", r->status);
  if(strlen(r->body) != r->len)
    fuzz_fail(what, "response len %zu but the body has %zu bytes", r->len, strlen(r->body));
  if(!r->content_type || strncmp(r->content_type, "application/json", 16))
    fuzz_fail(what, "content type \"%s\"", r->content_type ? r->content_type : "(none)");
}

#endif
