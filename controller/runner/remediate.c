/*
 * remediate.c: applies the round's grants with the superuser URI's user and password, on the
 * side each belongs to, clone tier first, one statement per transaction (autocommit), stopping at
 * the first failure. In a dry run the statements are only recorded. Each statement was composed
 * by its check with PQescapeIdentifier quoting; identical statements are applied once.
 */
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

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
      const char *tier = pf_tier_name(f->tier), *side = pf_side_name(f->side);
      if(!c->o->dry_run) {
        PGconn *su = f->side == PF_SOURCE ? c->su_src_c : c->su_dst_c;
        const struct pgc_endpoint *ep = f->side == PF_SOURCE ? &c->su_src : &c->su_dst;
        struct pgc_err e;
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
      }
      if(record(c, f)) {
        pf_fail(r, "out of memory");
        pf_block(r, "retry");
        return -1;
      }
      pf_print(c, "%s %s tier on the %s: %s", c->o->dry_run ? "WOULD-GRANT" : "GRANTED", tier,
               side, f->sql);
    }
  return 0;
}
