#include "fielderr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reasons[] = {
#define FERR_REASON(name, reason) reason,
  FERR_TYPE_MAP(FERR_REASON)
#undef FERR_REASON
};

const char *ferr_reason(enum ferr_type t)
{
  return reasons[t];
}

void ferrs_init(struct ferrs *e)
{
  e->v = NULL;
  e->n = e->cap = 0;
  e->dropped = 0;
  e->oom = false;
}

void ferrs_release(struct ferrs *e)
{
  for(size_t i = 0; i < e->n; i++) {
    free(e->v[i].field);
    free(e->v[i].msg);
  }
  free(e->v);
  ferrs_init(e);
}

static void vadd(struct ferrs *e, enum ferr_type type, bool policy, const char *field,
                 const char *fmt, va_list ap)
{
  if(e->n >= FERRS_MAX) {
    e->dropped++;
    return;
  }
  if(e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 8;
    struct ferr *v = realloc(e->v, cap * sizeof(*v));
    if(!v) {
      e->oom = true;
      return;
    }
    e->v = v;
    e->cap = cap;
  }
  char *msg = NULL;
  if(vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  char *f = strdup(field);
  if(!msg || !f) {
    free(msg);
    free(f);
    e->oom = true;
    return;
  }
  e->v[e->n++] = (struct ferr){ .type = type, .policy = policy, .field = f, .msg = msg };
}

void ferrs_add(struct ferrs *e, enum ferr_type type, const char *field, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vadd(e, type, false, field, fmt, ap);
  va_end(ap);
}

void ferrs_add_policy(struct ferrs *e, const char *field, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vadd(e, FERR_FORBIDDEN, true, field, fmt, ap);
  va_end(ap);
}

bool ferrs_all_policy(const struct ferrs *e)
{
  if(!e->n || e->dropped)
    return false;
  for(size_t i = 0; i < e->n; i++)
    if(!e->v[i].policy)
      return false;
  return true;
}

void ferrs_map_fields(struct ferrs *e, char *(*fn)(const char *field, const void *arg),
                      const void *arg)
{
  for(size_t i = 0; i < e->n; i++) {
    char *nf = fn(e->v[i].field, arg);
    if(nf) {
      free(e->v[i].field);
      e->v[i].field = nf;
    }
  }
}

/* Called for every field a schema walk visits: copies, no format parsing. */
char *path_join(char *buf, size_t n, const char *base, const char *name)
{
  if(!n)
    return buf;
  size_t at = 0;
  if(base && *base) {
    size_t bl = strlen(base);
    if(bl > n - 1)
      bl = n - 1;
    memcpy(buf, base, bl);
    at = bl;
    if(at < n - 1)
      buf[at++] = '.';
  }
  size_t nl = strlen(name);
  if(nl > n - 1 - at)
    nl = n - 1 - at;
  memcpy(buf + at, name, nl);
  buf[at + nl] = '\0';
  return buf;
}
