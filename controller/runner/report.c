/*
 * report.c: what the preflight says. One line per check on stdout, for the controller to quote:
 *   PASS <id>: <message>
 *   WARN <id>: <message>
 *   SKIP <id>: <why>
 *   FAIL <id>: <message>; fix: <recovery>
 * then the grants (GRANTED / WOULD-GRANT <tier> tier on the <side>: <statement>) and
 * RESULT <Passed|Failed|Transient>: <summary> (st_finish).
 *
 * The JSON report (the termination message, so at most 4096 bytes) is documented in
 * docs/api/migration-preflight.md: st_finish writes kind, version, result, summary and
 * truncated, pf_report_fields the rest, at the step framework's decreasing levels of detail
 * until it fits. Lines and report strings are redacted by the step framework (st_print,
 * st_json_str): the URIs and passwords, the superuser's included, never appear, whatever a
 * server or libpq put in a message.
 */
#include <stdio.h>
#include <string.h>

#include "preflight.h"
#include "strbuf.h"

static const char *status_word(enum pf_status s)
{
  static const char *const w[] = { "PASS", "WARN", "FAIL", "SKIP" };
  return w[s];
}

void pf_print_check(const struct pf_ctx *c, const struct pf_out *r)
{
  if(r->status == PF_FAIL)
    st_print(&c->st, "FAIL %s: %s; fix: %s", r->id, r->message, r->recovery);
  else
    st_print(&c->st, "%s %s: %s", status_word(r->status), r->id, r->message);
}

/* What a level of the step framework allows here: at level 0 the whole of a check's message
 * (768 bytes), six warnings with 300 bytes each and every statement. */
struct budget {
  size_t msg, stmts, warnings, warnmsg;
};

static struct budget budget_of(const struct st_level *l)
{
  return (struct budget){ l->str < 768 ? l->str : 768, l->list, l->list < 6 ? l->list : 6,
                          l->str < 300 ? l->str : 300 };
}

static gw_rc add_tier(struct strbuf *sb, const struct pf_ctx *c, enum pf_tier t, size_t max,
                      size_t *omitted, bool *cut)
{
  gw_rc rc = strbuf_addf(sb, "\"%s\":[", pf_tier_name(t));
  size_t k = 0;
  for(size_t i = 0; i < c->napplied && !rc; i++) {
    if(c->applied[i].tier != t)
      continue;
    if(k >= max) {
      (*omitted)++;
      continue;
    }
    rc = strbuf_addf(sb, "%s{\"on\":\"%s\",\"sql\":", k++ ? "," : "",
                     st_side_name(c->applied[i].side));
    if(!rc)
      rc = st_json_str(&c->st, sb, c->applied[i].sql, 400, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  if(!rc)
    rc = strbuf_addc(sb, ']');
  return rc;
}

gw_rc pf_report_fields(const struct st_ctx *st, struct strbuf *sb, const struct st_level *lv,
                       bool *cut, void *arg)
{
  const struct pf_ctx *c = arg;
  const struct budget b = budget_of(lv), *l = &b;
  size_t n[4] = { 0 }, grants = 0;
  for(size_t i = 0; i < c->nout; i++) {
    n[c->out[i].status]++;
    grants += c->out[i].status == PF_FAIL && !c->out[i].blocking;
  }
  gw_rc rc = strbuf_addf(sb, ",\"dryRun\":%s,\"follow\":%s,\"checks\":{\"total\":%zu,\"passed\":%zu,"
                         "\"warnings\":%zu,\"needGrants\":%zu,\"failed\":%zu,\"skipped\":%zu}",
                     c->o.dry_run ? "true" : "false", c->o.follow ? "true" : "false", c->nout,
                     n[PF_PASS] + n[PF_WARN], n[PF_WARN], grants, n[PF_FAIL] - grants,
                     n[PF_SKIP]);
  if(!rc && c->failed) {
    rc = strbuf_addf(sb, ",\"failed\":{\"id\":\"%s\"", c->failed->id);
    if(!rc)
      rc = st_json_field(st, sb, "message", c->failed->message, l->msg, cut);
    if(!rc)
      rc = st_json_field(st, sb, "recovery", c->failed->recovery, l->msg, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  if(!rc)
    rc = strbuf_adds(sb, ",\"failedChecks\":[");
  for(size_t i = 0, k = 0; i < c->nout && !rc; i++)
    if(c->out[i].status == PF_FAIL)
      rc = strbuf_addf(sb, "%s\"%s\"", k++ ? "," : "", c->out[i].id);
  if(!rc)
    rc = strbuf_adds(sb, "],\"warnings\":[");
  for(size_t i = 0, k = 0; i < c->nout && !rc; i++) {
    if(c->out[i].status != PF_WARN || k >= l->warnings)
      continue;
    rc = strbuf_addf(sb, "%s{\"id\":\"%s\",\"message\":", k++ ? "," : "", c->out[i].id);
    if(!rc)
      rc = st_json_str(st, sb, c->out[i].message, l->warnmsg, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  size_t omitted = 0;
  if(!rc)
    rc = strbuf_addf(sb, "],\"%s\":{", c->o.dry_run ? "wouldRemediate" : "remediated");
  if(!rc)
    rc = add_tier(sb, c, PF_CLONE, l->stmts, &omitted, cut);
  if(!rc)
    rc = strbuf_addc(sb, ',');
  if(!rc)
    rc = add_tier(sb, c, PF_FOLLOW, l->stmts, &omitted, cut);
  if(!rc)
    rc = strbuf_addf(sb, "},\"%s\":{\"clone\":[],\"follow\":[]}",
                     c->o.dry_run ? "remediated" : "wouldRemediate");
  if(!rc && omitted) {
    *cut = true;
    rc = strbuf_addf(sb, ",\"omittedStatements\":%zu", omitted);
  }
  if(!rc && c->o.follow && c->plugin[0]) {
    rc = strbuf_adds(sb, ",\"outputPlugin\":");
    if(!rc)
      rc = st_json_str(st, sb, c->plugin, sizeof(c->plugin), cut);
  }
  if(!rc && c->pgcopydb.known) {
    rc = strbuf_adds(sb, ",\"pgcopydb\":{\"version\":");
    if(!rc)
      rc = st_json_str(st, sb, c->pgcopydb.text, 60, cut);
    if(!rc)
      rc = c->pgcopydb.pg_major ? strbuf_addf(sb, ",\"pgMajor\":%d}", c->pgcopydb.pg_major)
                                : strbuf_addc(sb, '}');
  } else if(!rc) {
    rc = strbuf_adds(sb, ",\"pgcopydb\":null");
  }
  if(!rc)
    rc = strbuf_adds(sb, ",\"servers\":{");
  for(int s = 0; s < 2 && !rc; s++) {
    const char *ver = s ? c->dst_ver : c->src_ver;
    int num = s ? c->dst_num : c->src_num;
    rc = strbuf_addf(sb, "%s\"%s\":", s ? "," : "", s ? "target" : "source");
    if(!rc && !num)
      rc = strbuf_adds(sb, "null");
    else if(!rc) {
      rc = strbuf_adds(sb, "{\"version\":");
      if(!rc)
        rc = st_json_str(st, sb, ver, 60, cut);
      if(!rc)
        rc = strbuf_addf(sb, ",\"versionNum\":%d}", num);
    }
  }
  if(!rc)
    rc = strbuf_addc(sb, '}');
  return rc;
}
