/*
 * outcome.c: what checks call to say how they went, and small shared helpers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

static void vset(char *buf, size_t len, const char *fmt, va_list ap)
{
  vsnprintf(buf, len, fmt, ap);
}

#define PF_SETTER(fn, st)                                   \
  void fn(struct pf_out *r, const char *fmt, ...)           \
  {                                                         \
    va_list ap;                                             \
    va_start(ap, fmt);                                      \
    vset(r->message, sizeof(r->message), fmt, ap);          \
    va_end(ap);                                             \
    r->status = st;                                         \
  }
PF_SETTER(pf_pass, PF_PASS)
PF_SETTER(pf_warn, PF_WARN)
PF_SETTER(pf_skip, PF_SKIP)

void pf_fail(struct pf_out *r, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vset(r->message, sizeof(r->message), fmt, ap);
  va_end(ap);
  r->status = PF_FAIL;
}

void pf_block(struct pf_out *r, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vset(r->recovery, sizeof(r->recovery), fmt, ap);
  va_end(ap);
  r->status = PF_FAIL;
  r->blocking = true;
}

void pf_appendf(char *buf, size_t len, const char *fmt, ...)
{
  size_t n = strlen(buf);
  if(n + 1 >= len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

void pf_fix(struct pf_ctx *c, struct pf_out *r, enum pf_tier tier, enum st_side side,
            const char *fmt, ...)
{
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof(sql), fmt, ap);
  va_end(ap);
  if(c->nfix == c->capfix) {
    size_t cap = c->capfix ? c->capfix * 2 : 16;
    struct pf_fix *f = realloc(c->fixes, cap * sizeof(*f));
    if(!f) {
      pf_block(r, "out of memory");
      return;
    }
    c->fixes = f;
    c->capfix = cap;
  }
  char *s = strdup(sql);
  if(!s) {
    pf_block(r, "out of memory");
    return;
  }
  struct pf_fix *f = &c->fixes[c->nfix++];
  f->tier = tier;
  f->side = side;
  f->check = c->nout - 1;
  f->sql = s;
  r->nfix++;
  r->status = PF_FAIL;
}

void pf_query_failed(struct pf_out *r, const struct pgc_err *e, const char *what)
{
  pf_fail(r, "could not %s: %s%s%s", what, e->msg, e->sqlstate[0] ? " (SQLSTATE " : "",
          e->sqlstate[0] ? e->sqlstate : "");
  if(e->sqlstate[0])
    pf_appendf(r->message, sizeof(r->message), ")");
  r->transient = e->transient;
  if(e->transient)
    pf_block(r, "the connection failed during the check: the step is retried");
  else if(e->hint[0])
    pf_block(r, "the server's hint: %s", e->hint);
  else
    pf_block(r, "fix what the server's error quoted here names, on the server the check ran on");
}

PGconn *pf_conn(struct pf_ctx *c, enum st_side s)
{
  return s == ST_SOURCE ? c->st.src_c : c->st.dst_c;
}

const char *pf_role(const struct pf_ctx *c, enum st_side s)
{
  return s == ST_SOURCE ? c->src_role : c->dst_role;
}

const char *pf_tier_name(enum pf_tier t)
{
  return t == PF_CLONE ? "clone" : "follow";
}

bool pf_pgcopydb_older(const struct pf_ctx *c, int major, int minor)
{
  const struct pf_pgcopydb *p = &c->pgcopydb;
  return p->known && (p->major < major || (p->major == major && p->minor < minor));
}

