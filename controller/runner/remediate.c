/*
 * remediate.c: applies the round's grants with the superuser URI's user and password, on the
 * side each belongs to, clone tier first, one statement per transaction (autocommit), stopping at
 * the first failure. In a dry run the statements are only recorded. Each statement was composed
 * by its check with PQescapeIdentifier quoting; identical statements are applied once.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preflight.h"

#define RELOAD_WAIT_MS 10000
#define RELOAD_POLL_MS 50

/* When a session last read the server's configuration ("" if unknown). */
static void load_time(PGconn *conn, char *out, size_t len)
{
  struct pgc_err e;
  if(!conn || pgc_value(conn, &e, out, len, "SELECT pg_conf_load_time()::text", 0, NULL))
    out[0] = '\0';
}

/* A reload reaches each backend at its next command after the postmaster signalled it: waits
 * (bounded) until the side's sessions (the checks' one and the superuser's, which reads what the
 * migration role may not) have read the configuration again, so that the checks run again on
 * what ALTER SYSTEM changed. */
static void await_reload(struct pf_ctx *c, PGconn *const conns[2], char before[2][64],
                         const char *side)
{
  char now[64];
  for(int i = 0; i < 2; i++)
    for(int waited = 0; before[i][0]; waited += RELOAD_POLL_MS) {
      load_time(conns[i], now, sizeof(now));
      if(!*now || strcmp(now, before[i]))
        break;
      if(waited >= RELOAD_WAIT_MS) {
        st_print(&c->st, "the %s's configuration reload did not reach the checks within %d s", side,
                 RELOAD_WAIT_MS / 1000);
        return;
      }
      nanosleep(&(struct timespec){ 0, RELOAD_POLL_MS * 1000000L }, NULL);
    }
}

static bool already(const struct pf_ctx *c, const struct pf_fix *f)
{
  for(size_t i = 0; i < c->napplied; i++)
    if(c->applied[i].side == f->side && !strcmp(c->applied[i].sql, f->sql))
      return true;
  return false;
}

static int record(struct pf_ctx *c, const struct pf_fix *f)
{
  if(c->napplied == c->capapplied) {
    size_t cap = c->capapplied ? c->capapplied * 2 : 16;
    struct pf_fix *a = realloc(c->applied, cap * sizeof(*a));
    if(!a)
      return -1;
    c->applied = a;
    c->capapplied = cap;
  }
  char *s = strdup(f->sql);
  if(!s)
    return -1;
  struct pf_fix *a = &c->applied[c->napplied++];
  *a = *f;
  a->sql = s;
  return 0;
}

int pf_apply(struct pf_ctx *c, struct pf_out *r)
{
  static const enum pf_tier order[] = { PF_CLONE, PF_FOLLOW };
  r->id = "remediate";
  for(size_t t = 0; t < 2; t++)
    for(size_t i = 0; i < c->nfix; i++) {
      const struct pf_fix *f = &c->fixes[i];
      if(f->tier != order[t] || already(c, f))
        continue;
      const char *tier = pf_tier_name(f->tier), *side = st_side_name(f->side);
      if(!c->o.dry_run) {
        PGconn *su = f->side == ST_SOURCE ? c->su_src_c : c->su_dst_c;
        const struct pgc_endpoint *ep = f->side == ST_SOURCE ? &c->su_src : &c->su_dst;
        struct pgc_err e;
        bool reload = !strcmp(f->sql, PF_RELOAD_SQL);
        PGconn *const sessions[2] = { pf_conn(c, f->side), su };
        char before[2][64] = { "", "" };
        for(int k = 0; reload && k < 2; k++)
          load_time(sessions[k], before[k], sizeof(before[k]));
        if(!su) {
          pf_fail(r, "no superuser connection to the %s for \"%s\"", side, f->sql);
          pf_block(r, "as a superuser on the %s: %s", side, f->sql);
          return -1;
        }
        if(pgc_exec(su, &e, f->sql)) {
          pf_fail(r, "could not apply \"%s\" as %s: %s", f->sql, ep->desc, e.msg);
          r->transient = e.transient;
          pf_block(r, "as a superuser on the %s: %s; or give the role of "
                      "spec.superuserSecretRef the right to grant it", side, f->sql);
          return -1;
        }
        if(reload)
          await_reload(c, sessions, before, side);
      }
      if(record(c, f)) {
        pf_fail(r, "out of memory");
        pf_block(r, "retry");
        return -1;
      }
      st_print(&c->st, "%s %s tier on the %s: %s", c->o.dry_run ? "WOULD-GRANT" : "GRANTED", tier,
               side, f->sql);
    }
  return 0;
}
