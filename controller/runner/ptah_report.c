/*
 * ptah_report.c: how a ptah-migrate run ends: the exit code, the RESULT line and the JSON
 * report (the termination message, at most RUNNER_REPORT_MAX bytes):
 *
 *   {"kind":"PtahRunnerReport","result":"Passed|Failed|Transient","protocol":"1",
 *    "operation":..,"type":..,"attempt":..,"outcome":..,"fromVersion":..,"toVersion":..,
 *    "applied":[versions],"lockContinuous":bool,"recordDelivered":bool,"message":..,
 *    "truncated":bool}
 *
 * fromVersion and toVersion are null when the history table was not read. The applied list
 * and the message are cut, in that order, until the report fits (truncated: true); the record
 * carries the whole message. Every string is redacted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptah.h"
#include "redact.h"
#include "strbuf.h"
#include "termination.h"

const char *pm_outcome_name(enum pm_outcome o)
{
  static const char *const names[] = { "Failed", "Applied", "UpToDate", "Partial", "Unknown",
                                        "Succeeded" };
  return names[o];
}

void pm_now_rfc3339(char *buf, size_t len)
{
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

long long pm_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct level {
  size_t applied; /* versions listed */
  size_t message; /* bytes of the message */
};

static const struct level levels[] = {
  { 1000, 3000 }, { 100, 2000 }, { 20, 1000 }, { 5, 400 }, { 0, 120 },
};

static gw_rc render_version(struct strbuf *sb, const char *key, bool known, long long v)
{
  return known ? strbuf_addf(sb, ",\"%s\":%lld", key, v) : strbuf_addf(sb, ",\"%s\":null", key);
}

static gw_rc render(const struct pm_ctx *c, const char *result, struct strbuf *sb,
                    const struct level *l, bool cut_before)
{
  bool cut = cut_before;
  const struct st_ctx *st = &c->st;
  gw_rc rc = strbuf_addf(sb, "{\"kind\":\"PtahRunnerReport\",\"result\":\"%s\","
                             "\"protocol\":\"%s\"", result, PTAH_RUNNER_PROTOCOL);
  if(!rc)
    rc = st_json_field(st, sb, "operation", c->o.operation ? c->o.operation : "", 100, &cut);
  if(!rc)
    rc = st_json_field(st, sb, "type", c->o.type ? c->o.type : "", 40, &cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"attempt\":%ld,\"outcome\":\"%s\"", c->o.attempt,
                     pm_outcome_name(c->outcome));
  if(!rc)
    rc = render_version(sb, "fromVersion", c->history_read, c->from);
  if(!rc)
    rc = render_version(sb, "toVersion", c->history_read, c->to);
  if(!rc)
    rc = strbuf_adds(sb, ",\"applied\":[");
  for(size_t i = 0; i < c->napplied && !rc; i++) {
    if(i == l->applied) {
      cut = true;
      break;
    }
    rc = strbuf_addf(sb, "%s%lld", i ? "," : "", c->applied[i]);
  }
  if(!rc)
    rc = strbuf_addf(sb, "],\"lockContinuous\":%s,\"recordDelivered\":%s",
                     c->lock_continuous ? "true" : "false",
                     c->record_delivered ? "true" : "false");
  if(!rc)
    rc = st_json_field(st, sb, "message", c->message ? c->message : "", l->message, &cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"truncated\":%s}", cut ? "true" : "false");
  return rc;
}

/* The report in buf (at most RUNNER_REPORT_MAX - 1 bytes); result: Passed, Failed, Transient. */
static void report_render(const struct pm_ctx *c, const char *result, char *buf, size_t len)
{
  buf[0] = '\0';
  for(size_t i = 0; i < sizeof(levels) / sizeof(levels[0]) && !buf[0]; i++) {
    struct strbuf sb;
    strbuf_init(&sb, (len < RUNNER_REPORT_MAX ? len : RUNNER_REPORT_MAX) - 1);
    if(!render(c, result, &sb, &levels[i], i > 0))
      memcpy(buf, strbuf_str(&sb), sb.len + 1);
    strbuf_release(&sb);
  }
  if(!buf[0])
    snprintf(buf, len, "{\"kind\":\"PtahRunnerReport\",\"result\":\"%s\",\"outcome\":\"%s\","
             "\"truncated\":true}", result, pm_outcome_name(c->outcome));
}

static bool succeeded(enum pm_outcome o)
{
  return o == PM_APPLIED || o == PM_UPTODATE || o == PM_SUCCEEDED;
}

int pm_finish(struct pm_ctx *c)
{
  pm_now_rfc3339(c->finished_at, sizeof(c->finished_at));
  bool durable = c->args_ok && !strcmp(c->o.result, "durable") && !c->credential_failed;
  if(durable)
    pm_record_deliver(c);
  const struct ptah_end end = { succeeded(c->outcome), c->transient, durable,
                                 c->record_delivered, c->credential_failed };
  const char *result;
  int code = ptah_exit_code(&end, &result);
  /* Redacted before it is cut to a line: a cut never leaves half a secret behind. */
  const char *secrets[] = { c->st.secrets[0], c->st.src.password };
  char *line = redact_cut(c->message ? c->message : "", 2000, secrets, 2, NULL);
  st_print(&c->st, "RESULT %s: outcome %s: %s%s", result, pm_outcome_name(c->outcome),
           line ? line : "(out of memory)",
           durable && !c->record_delivered ? " (the result record was not delivered)" : "");
  free(line);
  char buf[RUNNER_REPORT_MAX];
  report_render(c, result, buf, sizeof(buf));
  runner_report_write(c->st.o.report, buf);
  if(c->args_ok && !strcmp(c->o.result, "log"))
    pm_record_frame(c); /* the last lines of the log */
  return code;
}
