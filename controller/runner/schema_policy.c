/*
 * schema_policy.c: protected tables (schema.h). spec.policy.protectedTables reaches the runner
 * as --protected-table S.T, once per table (schema.c takes the values out of argv: there may
 * be more than a CFG_STRLIST holds); a value may also hold several names, one a line, since a
 * name holds no control character but may hold a comma. A plan with a statement whose table
 * (sp_stmt.table: the table it creates, alters, drops or rebuilds, or whose column, constraint,
 * index or comment it touches) is protected is refused: outcome Failed, refusal
 * ProtectedTableRefused, every such table and statement named. The plan stays in the record
 * for the audit; the controller never publishes it, and an Apply never runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/format.h"
#include "ptah.h"
#include "schema.h"
#include "strbuf.h"

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_name(struct sp_ctx *c, const char *s, size_t n, size_t *cap)
{
  char *name = strndup(s, n);
  const char *why = !name ? "out of memory" : !strchr(name, '.')
                                                ? "must be \"schema.table\""
                                                : fmt_pg_qualified.check(name);
  if(why) {
    st_fail(&c->st, false, "config", "--protected-table: %s, got \"%.*s\" (see godwit-runner "
            "ptah-plan --help)", why, (int)(n > 130 ? 130 : n), s);
    st_summary(&c->st, "bad arguments: --protected-table: %s", why);
    free(name);
    return -1;
  }
  if(c->nprotected == *cap) {
    size_t ncap = *cap ? 2 * *cap : 16;
    char **v = realloc(c->protected, ncap * sizeof(*v));
    if(!v) {
      free(name);
      return -1;
    }
    c->protected = v;
    *cap = ncap;
  }
  c->protected[c->nprotected++] = name;
  return 0;
}

int sp_protected_parse(struct sp_ctx *c)
{
  size_t cap = 0;
  for(size_t i = 0; i < c->nprotected_args; i++)
    for(const char *s = c->protected_args[i]; *s;) {
      size_t n = strcspn(s, "\n");
      if(n && add_name(c, s, n, &cap))
        return -1;
      s += n + (s[n] == '\n');
    }
  if(c->nprotected)
    qsort(c->protected, c->nprotected, sizeof(char *), cmp_str);
  return 0;
}

void sp_protected_release(struct sp_ctx *c)
{
  for(size_t i = 0; i < c->nprotected; i++)
    free(c->protected[i]);
  free(c->protected);
  c->protected = NULL;
  c->nprotected = 0;
}

static bool is_protected(const struct sp_ctx *c, const char *table)
{
  return table && c->nprotected &&
         bsearch(&table, c->protected, c->nprotected, sizeof(char *), cmp_str);
}

int sp_protect(struct sp_ctx *c)
{
  struct strbuf tables, labels;
  strbuf_init(&tables, 1 << 16);
  strbuf_init(&labels, 1 << 16);
  size_t ntables = 0, nstmts = 0;
  gw_rc rc = GW_OK;
  for(size_t i = 0; i < c->nprotected && !rc; i++) /* the tables, in order, once each */
    for(size_t j = 0; j < c->plan.n; j++)
      if(c->plan.v[j].table && !strcmp(c->plan.v[j].table, c->protected[i])) {
        rc = strbuf_addf(&tables, "%s%s", ntables++ ? ", " : "", c->protected[i]);
        break;
      }
  for(size_t j = 0; j < c->plan.n && !rc; j++)
    if(is_protected(c, c->plan.v[j].table) && nstmts++ < SP_LABELS_SHOWN)
      rc = strbuf_addf(&labels, "%s\"%s\"", nstmts > 1 ? ", " : "", c->plan.v[j].label);
  if(!rc && nstmts > SP_LABELS_SHOWN)
    rc = strbuf_addf(&labels, " and %zu more", nstmts - SP_LABELS_SHOWN);
  if(!ntables) {
    strbuf_release(&tables);
    strbuf_release(&labels);
    return 0;
  }
  const char *t = rc ? "(out of memory)" : strbuf_str(&tables);
  const char *l = rc ? "(out of memory)" : strbuf_str(&labels);
  st_fail(&c->st, false, "protected", "%zu statement%s change%s protected table%s %s: %s", nstmts,
          nstmts == 1 ? "" : "s", nstmts == 1 ? "s" : "", ntables == 1 ? "" : "s", t, l);
  sp_set(c, SP_FAILED, "%sthe plan is refused: it changes the protected table%s %s "
         "(spec.policy.protectedTables), in statement%s %s. A plan that creates, alters, drops "
         "or rewrites a protected table is never published nor applied: change the desired "
         "schema so that it leaves %s as %s, or take %s out of protectedTables. The plan "
         "(digest %s) is kept in the result for the audit",
         c->type == SP_APPLY ? "nothing was applied: " : "", ntables == 1 ? "" : "s", t,
         nstmts == 1 ? "" : "s", l, ntables == 1 ? "the table" : "the tables",
         ntables == 1 ? "it is" : "they are", ntables == 1 ? "it" : "them", c->plan.digest);
  c->refusal = "ProtectedTableRefused";
  strbuf_release(&tables);
  strbuf_release(&labels);
  return -1;
}
