/*
 * schema_plan.c: the plan of a ptah-plan run (schema.h): its statements, its digest and
 * summary, the plan file (--plan-out) and the report.
 *
 * The digest is sha256 over
 *
 *   ptah-plan/1\n
 *   fingerprint <the target catalog's fingerprint>\n
 *   binding <bytes> <the --binding string>\n
 *   statement <destructive 0|1> <ownTransaction 0|1> <bytes> <sql>\n      one per statement
 *
 * (lengths make it unambiguous whatever a statement holds): the same statements computed
 * against the same catalog for the same binding have the same digest, and nothing else has.
 *
 * The plan file, one JSON object, written whenever the plan was computed (a refused or
 * applied one too):
 *   {"kind":"PtahPlan","version":1,"operation":..,"attempt":..,"fingerprint":..,
 *    "desiredChecksum":..,"binding":..,"digest":..,"statementCount":N,"destructiveCount":D,
 *    "summary":..,"statements":[{"sql":..,"label":..,"destructive":b,"ownTransaction":b,
 *    "table":"schema.table" (absent for none)}]}
 *
 * The report (termination message, <= 4096 bytes):
 *   {"kind":"PtahPlanReport","result":"Passed|Failed|Transient|CredentialFailed","protocol":"1",
 *    "operation":..,"type":"Plan|Apply|Observe","attempt":..,"outcome":..,"refusal":..,
 *    "planDigest":..,"fingerprint":..,"statements":N,"destructive":D,"desiredChecksum":..,
 *    "materialisation":..,"lockContinuous":b (Apply only),"recordDelivered":b,"summary":..,
 *    "message":..,"truncated":b}
 * planDigest (the digest computed), fingerprint, statements and destructive are null when no
 * plan was computed; refusal is null, ProtectedTableRefused or PlanStale; the summary, then the
 * message, are cut until it fits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptah.h"
#include "redact.h"
#include "schema.h"
#include "strbuf.h"
#include "termination.h"

#define SP_SUMMARY_MAX (64 * 1024)
#define SP_FILE_MAX (512L << 20)

void sp_plan_init(struct sp_plan *p)
{
  memset(p, 0, sizeof(*p));
  arena_init(&p->arena, 64 * 1024, 1024L << 20);
}

void sp_plan_release(struct sp_plan *p)
{
  free(p->v);
  arena_release(&p->arena);
  memset(p, 0, sizeof(*p));
}

char *sp_fmt(struct sp_plan *p, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n < 0 ? NULL : arena_alloc(&p->arena, (size_t)n + 1);
  if(s) {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return s;
}

int sp_add(struct sp_plan *p, const char *table, bool destructive, bool own_txn,
           const char *label, const char *sql)
{
  if(!label || !sql)
    return -1;
  const char *t = table && *table ? arena_strdup(&p->arena, table) : NULL;
  if(table && *table && !t)
    return -1;
  if(p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 32;
    struct sp_stmt *v = realloc(p->v, cap * sizeof(*v));
    if(!v)
      return -1;
    p->v = v;
    p->cap = cap;
  }
  p->v[p->n++] = (struct sp_stmt){ sql, label, t, destructive, own_txn };
  p->ndestructive += destructive;
  return 0;
}

static char *summary(struct sp_plan *p)
{
  if(!p->n)
    return sp_fmt(p, "no change: the database matches the desired schema");
  struct strbuf sb;
  strbuf_init(&sb, SP_SUMMARY_MAX);
  gw_rc rc = strbuf_addf(&sb, "%zu statement%s, %zu destructive: ", p->n, p->n == 1 ? "" : "s",
                         p->ndestructive);
  for(size_t i = 0; i < p->n && !rc; i++)
    rc = strbuf_addf(&sb, "%s%s%s", i ? "; " : "", p->v[i].destructive ? "[destructive] " : "",
                     p->v[i].label);
  if(rc) { /* too long for the summary: the plan file lists every statement */
    strbuf_init(&sb, SP_SUMMARY_MAX);
    rc = strbuf_addf(&sb, "%zu statements, %zu destructive (see the plan file)", p->n,
                     p->ndestructive);
  }
  char *s = rc ? NULL : sp_fmt(p, "%s", strbuf_str(&sb));
  strbuf_release(&sb);
  return s;
}

int sp_finish_plan(struct sp_plan *p, const char *binding)
{
  struct strbuf sb;
  strbuf_init(&sb, SP_FILE_MAX);
  gw_rc rc = strbuf_addf(&sb, "ptah-plan/1\nfingerprint %s\nbinding %zu %s\n", p->fingerprint,
                         strlen(binding), binding);
  for(size_t i = 0; i < p->n && !rc; i++)
    rc = strbuf_addf(&sb, "statement %d %d %zu %s\n", p->v[i].destructive, p->v[i].own_txn,
                     strlen(p->v[i].sql), p->v[i].sql);
  if(!rc)
    rc = digest_sha256(strbuf_str(&sb), sb.len, p->digest);
  strbuf_release(&sb);
  if(!rc && !(p->summary = summary(p)))
    rc = GW_ENOMEM;
  return rc ? -1 : 0;
}

/* ----- the plan file ------------------------------------------------------------------------ */

static gw_rc json_kv(struct strbuf *sb, const char *key, const char *s)
{
  gw_rc rc = strbuf_addf(sb, ",\"%s\":\"", key);
  if(!rc)
    rc = strbuf_add_json_escaped(sb, s ? s : "");
  if(!rc)
    rc = strbuf_addc(sb, '"');
  return rc;
}

char *sp_plan_json(const struct sp_ctx *c)
{
  const struct sp_plan *p = &c->plan;
  struct strbuf sb;
  strbuf_init(&sb, SP_FILE_MAX);
  gw_rc rc = strbuf_adds(&sb, "{\"kind\":\"PtahPlan\",\"version\":1");
  if(!rc)
    rc = json_kv(&sb, "operation", c->o.operation);
  if(!rc)
    rc = strbuf_addf(&sb, ",\"attempt\":%ld", c->o.attempt);
  if(!rc)
    rc = json_kv(&sb, "fingerprint", p->fingerprint);
  if(!rc)
    rc = json_kv(&sb, "desiredChecksum", c->desired_sum);
  if(!rc)
    rc = json_kv(&sb, "binding", c->o.binding);
  if(!rc)
    rc = json_kv(&sb, "digest", p->digest);
  if(!rc)
    rc = strbuf_addf(&sb, ",\"statementCount\":%zu,\"destructiveCount\":%zu", p->n,
                     p->ndestructive);
  if(!rc)
    rc = json_kv(&sb, "summary", p->summary);
  if(!rc)
    rc = strbuf_adds(&sb, ",\"statements\":[");
  for(size_t i = 0; i < p->n && !rc; i++) {
    rc = strbuf_adds(&sb, i ? ",{\"sql\":\"" : "{\"sql\":\"");
    if(!rc)
      rc = strbuf_add_json_escaped(&sb, p->v[i].sql);
    if(!rc)
      rc = strbuf_adds(&sb, "\"");
    if(!rc)
      rc = json_kv(&sb, "label", p->v[i].label);
    if(!rc)
      rc = strbuf_addf(&sb, ",\"destructive\":%s,\"ownTransaction\":%s",
                       p->v[i].destructive ? "true" : "false", p->v[i].own_txn ? "true" : "false");
    if(!rc && p->v[i].table)
      rc = json_kv(&sb, "table", p->v[i].table);
    if(!rc)
      rc = strbuf_addc(&sb, '}');
  }
  if(!rc)
    rc = strbuf_adds(&sb, "]}\n");
  char *s = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

/* The plan file and the record hold the statements verbatim (they are what an Apply runs, and
 * what the digest covers): a plan that would carry a known secret is not written, recorded nor
 * applied. */
int sp_plan_secret(struct sp_ctx *c)
{
  char *json = sp_plan_json(c);
  const char *secrets[] = { c->st.secrets[0], c->st.secrets[1], c->st.src.password,
                            c->st.dst.password };
  bool found = false;
  for(size_t i = 0; json && i < sizeof(secrets) / sizeof(secrets[0]) && !found; i++)
    found = secrets[i] && strlen(secrets[i]) >= REDACT_MIN_SECRET && strstr(json, secrets[i]);
  free(json);
  if(!found)
    return 0;
  c->planned = false;
  st_fail(&c->st, false, "plan-out", "the plan holds the connection's password or URI; it was "
          "not written");
  sp_set(c, SP_FAILED, "%sthe plan holds the connection's password or URI (in a comment or a "
         "default of the desired SQL?); it was not written", c->type == SP_APPLY ?
         "nothing was applied: " : "");
  return -1;
}

static void write_plan(struct sp_ctx *c)
{
  char *json = sp_plan_json(c);
  FILE *out = json ? fopen(c->o.plan_out, "w") : NULL;
  bool ok = out && fputs(json, out) >= 0;
  ok = (out && fclose(out) == 0) && ok;
  free(json);
  if(ok) {
    st_pass(&c->st, "plan-out", "wrote the plan to \"%s\"", c->o.plan_out);
    return;
  }
  if(c->type == SP_APPLY || c->outcome != SP_SUCCEEDED) { /* what happened stands */
    st_warn(&c->st, "plan-out", "cannot write the plan to \"%s\"", c->o.plan_out);
    return;
  }
  st_fail(&c->st, false, "plan-out", "cannot write the plan to \"%s\"", c->o.plan_out);
  sp_set(c, SP_FAILED, "the plan was computed (digest %s) but cannot be written to \"%s\"",
         c->plan.digest, c->o.plan_out);
}

/* ----- the report ---------------------------------------------------------------------------- */

struct level {
  size_t summary, message;
};
static const struct level levels[] = { { 1500, 1200 }, { 800, 600 }, { 300, 300 }, { 80, 120 } };

static gw_rc render(const struct sp_ctx *c, const char *result, struct strbuf *sb,
                    const struct level *l, bool cut)
{
  const struct st_ctx *st = &c->st;
  gw_rc rc = strbuf_addf(sb, "{\"kind\":\"PtahPlanReport\",\"result\":\"%s\",\"protocol\":\"%s\"",
                         result, PTAH_RUNNER_PROTOCOL);
  if(!rc)
    rc = st_json_field(st, sb, "operation", c->o.operation ? c->o.operation : "", 100, &cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"type\":\"%s\",\"attempt\":%ld,\"outcome\":\"%s\"",
                     sp_type_name(c->type), c->o.attempt, sp_outcome_name(c->outcome));
  if(!rc && c->refusal)
    rc = strbuf_addf(sb, ",\"refusal\":\"%s\"", c->refusal);
  else if(!rc)
    rc = strbuf_adds(sb, ",\"refusal\":null");
  if(!rc && c->planned)
    rc = strbuf_addf(sb, ",\"planDigest\":\"%s\",\"fingerprint\":\"%s\",\"statements\":%zu,"
                         "\"destructive\":%zu", c->plan.digest, c->plan.fingerprint, c->plan.n,
                     c->plan.ndestructive);
  else if(!rc)
    rc = strbuf_adds(sb, ",\"planDigest\":null,\"fingerprint\":null,\"statements\":null,"
                         "\"destructive\":null");
  if(!rc && c->desired_sum[0])
    rc = strbuf_addf(sb, ",\"desiredChecksum\":\"%s\"", c->desired_sum);
  else if(!rc)
    rc = strbuf_adds(sb, ",\"desiredChecksum\":null");
  if(!rc && c->materialised)
    rc = strbuf_addf(sb, ",\"materialisation\":\"%s\"", c->materialised);
  else if(!rc)
    rc = strbuf_adds(sb, ",\"materialisation\":null");
  if(!rc && c->type == SP_APPLY)
    rc = strbuf_addf(sb, ",\"lockContinuous\":%s", c->lock_continuous ? "true" : "false");
  if(!rc)
    rc = strbuf_addf(sb, ",\"recordDelivered\":%s", c->record_delivered ? "true" : "false");
  if(!rc)
    rc = st_json_field(st, sb, "summary", c->planned && c->plan.summary ? c->plan.summary : "",
                       l->summary, &cut);
  if(!rc)
    rc = st_json_field(st, sb, "message", c->message ? c->message : "", l->message, &cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"truncated\":%s}", cut ? "true" : "false");
  return rc;
}

static bool passed(enum sp_outcome o)
{
  return o == SP_SUCCEEDED || o == SP_APPLIED || o == SP_UPTODATE;
}

int sp_finish(struct sp_ctx *c)
{
  if(c->planned && c->o.plan_out && *c->o.plan_out)
    write_plan(c);
  pm_now_rfc3339(c->finished_at, sizeof(c->finished_at));
  bool durable = c->args_ok && c->durable && !c->credential_failed;
  if(durable)
    sp_record_deliver(c);
  const struct ptah_end end = { passed(c->outcome), c->transient, durable, c->record_delivered,
                                 c->credential_failed };
  const char *result;
  int code = ptah_exit_code(&end, &result);
  const char *secrets[] = { c->st.secrets[0], c->st.secrets[1], c->st.src.password,
                            c->st.dst.password };
  char *line = redact_cut(c->message ? c->message : "", 2000, secrets, 4, NULL);
  st_print(&c->st, "RESULT %s: outcome %s: %s%s", result, sp_outcome_name(c->outcome),
           line ? line : "(out of memory)",
           durable && !c->record_delivered ? " (the result record was not delivered)" : "");
  free(line);
  char buf[RUNNER_REPORT_MAX] = "";
  for(size_t i = 0; i < sizeof(levels) / sizeof(levels[0]) && !buf[0]; i++) {
    struct strbuf sb;
    strbuf_init(&sb, RUNNER_REPORT_MAX - 1);
    if(!render(c, result, &sb, &levels[i], i > 0))
      memcpy(buf, strbuf_str(&sb), sb.len + 1);
    strbuf_release(&sb);
  }
  if(!buf[0])
    snprintf(buf, sizeof(buf), "{\"kind\":\"PtahPlanReport\",\"result\":\"%s\",\"outcome\":\"%s\","
             "\"truncated\":true}", result, sp_outcome_name(c->outcome));
  runner_report_write(c->st.o.report, buf);
  return code;
}
