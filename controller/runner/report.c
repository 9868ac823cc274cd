/*
 * report.c: what the preflight says. One line per check on stdout, for the controller to quote:
 *   PASS <id>: <message>
 *   WARN <id>: <message>
 *   SKIP <id>: <why>
 *   FAIL <id>: <message>; fix: <recovery>
 * then the grants (GRANTED / WOULD-GRANT <tier> tier on the <side>: <statement>) and
 * RESULT <Passed|Failed|Transient>: <summary>.
 *
 * The JSON report (the termination message, so at most 4096 bytes) is documented in
 * docs/api/migration-preflight.md. It is rendered at decreasing levels of detail until it fits.
 * Every line and every report string goes through pf_redact: the URIs and passwords never
 * appear, whatever a server or libpq put in a message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "preflight.h"
#include "redact.h"
#include "strbuf.h"
#include "termination.h"

#define NSECRETS 8

/* What the preflight holds that must never be printed. */
static void secrets_of(const struct pf_ctx *c, const char *out[NSECRETS])
{
  const char *s[NSECRETS] = { c->secrets[0],   c->secrets[1],   c->secrets[2],
                              c->secrets[3],   c->src.password, c->dst.password,
                              c->su_src.password, c->su_dst.password };
  memcpy(out, s, sizeof(s));
}

void pf_redact(const struct pf_ctx *c, char *s, size_t len)
{
  const char *secrets[NSECRETS];
  secrets_of(c, secrets);
  redact_buf(s, len, secrets, NSECRETS);
}

void pf_print(const struct pf_ctx *c, const char *fmt, ...)
{
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  pf_redact(c, line, sizeof(line));
  fprintf(stdout, "%s\n", line);
  fflush(stdout);
}

static const char *status_word(enum pf_status s)
{
  static const char *const w[] = { "PASS", "WARN", "FAIL", "SKIP" };
  return w[s];
}

void pf_print_check(const struct pf_ctx *c, const struct pf_out *r)
{
  if(r->status == PF_FAIL)
    pf_print(c, "FAIL %s: %s; fix: %s", r->id, r->message, r->recovery);
  else
    pf_print(c, "%s %s: %s", status_word(r->status), r->id, r->message);
}

struct level {
  size_t msg, stmts, warnings, warnmsg;
};

static const struct level levels[] = {
  { 768, 1000, 6, 300 }, { 400, 10, 3, 160 }, { 200, 3, 1, 120 }, { 120, 0, 0, 0 },
};

/* Appends "s" (cut at max bytes on a character boundary, redacted) as a JSON string. */
static gw_rc add_str(struct strbuf *sb, const struct pf_ctx *c, const char *s, size_t max,
                     bool *cutp)
{
  const char *secrets[NSECRETS];
  secrets_of(c, secrets);
  char *tmp = redact_cut(s, max + 3, secrets, NSECRETS, cutp);
  if(!tmp)
    return GW_ENOMEM;
  gw_rc rc = strbuf_addc(sb, '"');
  if(!rc)
    rc = strbuf_add_json_escaped(sb, tmp);
  if(!rc)
    rc = strbuf_addc(sb, '"');
  free(tmp);
  return rc;
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
                     pf_side_name(c->applied[i].side));
    if(!rc)
      rc = add_str(sb, c, c->applied[i].sql, 400, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  if(!rc)
    rc = strbuf_addc(sb, ']');
  return rc;
}

static gw_rc render(struct strbuf *sb, const struct pf_ctx *c, const struct pf_final *f,
                    const struct level *l, bool truncated)
{
  bool cutflag = false, *cut = &cutflag;
  size_t n[4] = { 0 }, grants = 0;
  for(size_t i = 0; i < c->nout; i++) {
    n[c->out[i].status]++;
    grants += c->out[i].status == PF_FAIL && !c->out[i].blocking;
  }
  gw_rc rc = strbuf_addf(sb, "{\"kind\":\"PreflightReport\",\"version\":1,\"result\":\"%s\","
                             "\"summary\":", f->result);
  if(!rc)
    rc = add_str(sb, c, f->summary, 250, cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"dryRun\":%s,\"follow\":%s,\"checks\":{\"total\":%zu,\"passed\":%zu,"
                         "\"warnings\":%zu,\"needGrants\":%zu,\"failed\":%zu,\"skipped\":%zu}",
                     c->o->dry_run ? "true" : "false", c->o->follow ? "true" : "false", c->nout,
                     n[PF_PASS] + n[PF_WARN], n[PF_WARN], grants, n[PF_FAIL] - grants,
                     n[PF_SKIP]);
  if(!rc && f->failed) {
    rc = strbuf_addf(sb, ",\"failed\":{\"id\":\"%s\",\"message\":", f->failed->id);
    if(!rc)
      rc = add_str(sb, c, f->failed->message, l->msg, cut);
    if(!rc)
      rc = strbuf_adds(sb, ",\"recovery\":");
    if(!rc)
      rc = add_str(sb, c, f->failed->recovery, l->msg, cut);
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
      rc = add_str(sb, c, c->out[i].message, l->warnmsg, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  size_t omitted = 0;
  if(!rc)
    rc = strbuf_addf(sb, "],\"%s\":{", c->o->dry_run ? "wouldRemediate" : "remediated");
  if(!rc)
    rc = add_tier(sb, c, PF_CLONE, l->stmts, &omitted, cut);
  if(!rc)
    rc = strbuf_addc(sb, ',');
  if(!rc)
    rc = add_tier(sb, c, PF_FOLLOW, l->stmts, &omitted, cut);
  if(!rc)
    rc = strbuf_addf(sb, "},\"%s\":{\"clone\":[],\"follow\":[]}",
                     c->o->dry_run ? "remediated" : "wouldRemediate");
  if(!rc && omitted)
    rc = strbuf_addf(sb, ",\"omittedStatements\":%zu", omitted);
  if(!rc && c->o->follow && c->plugin[0]) {
    rc = strbuf_adds(sb, ",\"outputPlugin\":");
    if(!rc)
      rc = add_str(sb, c, c->plugin, sizeof(c->plugin), cut);
  }
  if(!rc && c->pgcopydb.known) {
    rc = strbuf_adds(sb, ",\"pgcopydb\":{\"version\":");
    if(!rc)
      rc = add_str(sb, c, c->pgcopydb.text, 60, cut);
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
        rc = add_str(sb, c, ver, 60, cut);
      if(!rc)
        rc = strbuf_addf(sb, ",\"versionNum\":%d}", num);
    }
  }
  if(!rc)
    rc = strbuf_addf(sb, "},\"truncated\":%s}", truncated || omitted || cutflag ? "true" : "false");
  return rc;
}

void pf_report_render(const struct pf_ctx *c, const struct pf_final *f, char *buf, size_t len)
{
  size_t max = len < RUNNER_REPORT_MAX ? len : RUNNER_REPORT_MAX;
  buf[0] = '\0';
  for(size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
    struct strbuf sb;
    strbuf_init(&sb, max - 1);
    gw_rc rc = render(&sb, c, f, &levels[i], i > 0);
    if(!rc) {
      memcpy(buf, strbuf_str(&sb), sb.len + 1);
      strbuf_release(&sb);
      return;
    }
    strbuf_release(&sb);
  }
  snprintf(buf, max, "{\"kind\":\"PreflightReport\",\"version\":1,\"result\":\"%s\","
                     "\"truncated\":true}", f->result);
}

void pf_report_write(const struct pf_ctx *c, const struct pf_final *f)
{
  char buf[RUNNER_REPORT_MAX];
  pf_report_render(c, f, buf, sizeof(buf));
  runner_report_write(c->o->report, buf);
}
