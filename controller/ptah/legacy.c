/* The legacy result transport (op.h: op_legacy_read): a framed result at the end of the runner
 * Pod's log, and the termination message as a fallback summary that is checked before it is
 * believed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digest.h"
#include "json.h"
#include "op.h"

#define FRAME_BEGIN "ptah-result-begin " /* controller/runner/ptah.h: the frame */
#define FRAME_END "ptah-result-end "
#define LOG_TAIL_LINES 40

/* The last frame in text: its JSON line (malloc'd) when its digest matches; *seen tells whether
 * any frame start was found. */
static char *last_frame(const char *text, bool *seen, char *why, size_t len)
{
  *seen = false;
  const char *begin = NULL;
  for(const char *p = strstr(text, FRAME_BEGIN); p; p = strstr(p + 1, FRAME_BEGIN))
    if(p == text || p[-1] == '\n')
      begin = p;
  if(!begin)
    return NULL;
  *seen = true;
  const char *json = strchr(begin, '\n');
  const char *end = json ? strchr(json + 1, '\n') : NULL;
  if(!json || !end || strncmp(end + 1, FRAME_END, strlen(FRAME_END))) {
    snprintf(why, len, "the log's last frame is cut short");
    return NULL;
  }
  size_t n = (size_t)(end - json - 1);
  char *line = malloc(n + 1);
  if(!line)
    return NULL;
  memcpy(line, json + 1, n);
  line[n] = '\0';
  char d[DIGEST_SHA256_LEN], want[DIGEST_SHA256_LEN];
  const char *dg = end + 1 + strlen(FRAME_END);
  size_t dl = strcspn(dg, "\r\n");
  snprintf(want, sizeof(want), "%.*s", (int)(dl < sizeof(want) - 1 ? dl : sizeof(want) - 1), dg);
  if(digest_sha256(line, n, d) || strcmp(d, want)) {
    snprintf(why, len, "the log's last frame does not match its digest");
    free(line);
    return NULL;
  }
  return line;
}

/* The summary (the termination report) as a record, or why it cannot stand in. */
static enum op_verdict summary(const struct ptah_op *op, const struct job_view *v,
                               bool other_frame, struct op_record *out)
{
  const cJSON *r = v->report;
  const char *id = json_get_str(r, "operation");
  const cJSON *att = json_get(r, "attempt");
  const char *outcome = json_get_str(r, "outcome");
  out->summary_refused = true;
  if(other_frame) {
    snprintf(out->why, sizeof(out->why), "the log holds a frame of another run, so the summary "
             "in the Pod's termination message is not read in its place");
  } else if(!r || !outcome) {
    snprintf(out->why, sizeof(out->why), "the log held no readable result and the Pod left no "
             "summary");
  } else if(!id || strcmp(id, op->id) || !cJSON_IsNumber(att) ||
            (int)att->valuedouble != op->attempt) {
    snprintf(out->why, sizeof(out->why), "the summary belongs to another attempt (operation "
             "\"%s\", attempt %d; this is \"%s\", attempt %d)", id ? id : "",
             cJSON_IsNumber(att) ? (int)att->valuedouble : 0, op->id, op->attempt);
  } else if(json_get_bool(r, "truncated", false)) {
    snprintf(out->why, sizeof(out->why), "the summary was cut short to fit a termination "
             "message, so what it leaves out is not known");
  } else if(strcmp(op->type, "Apply")) {
    snprintf(out->why, sizeof(out->why), "a summary stands in only for an Apply's result");
  } else {
    out->summary_refused = false;
  }
  if(out->summary_refused)
    return out->verdict = OPV_REJECTED;
  cJSON *rec = cJSON_CreateObject();
  cJSON *res = cJSON_AddObjectToObject(cJSON_AddObjectToObject(rec, "spec"), "result");
  const char *fields[] = { "outcome", "message" };
  for(size_t i = 0; i < 2; i++)
    if(json_get_str(r, fields[i]))
      cJSON_AddStringToObject(res, fields[i], json_get_str(r, fields[i]));
  const char *nums[] = { "fromVersion", "toVersion" };
  for(size_t i = 0; i < 2; i++)
    if(cJSON_IsNumber(json_get(r, nums[i])))
      cJSON_AddNumberToObject(res, nums[i], json_get(r, nums[i])->valuedouble);
  cJSON_AddBoolToObject(res, "lockContinuous", json_get_bool(r, "lockContinuous", false));
  if(!json_get_bool(r, "lockContinuous", false) && strcmp(json_get_str(r, "outcome"), "Failed")) {
    cJSON_Delete(rec);
    out->summary_refused = true;
    snprintf(out->why, sizeof(out->why), "the summary does not say the lock was held throughout");
    return out->verdict = OPV_REJECTED;
  }
  out->rec = rec;
  return out->verdict = OPV_ACCEPTED;
}

enum op_verdict op_legacy_read(struct rec_ctx *c, const struct ptah_op *op,
                               const struct job_view *v, long window_ms, struct op_record *out)
{
  memset(out, 0, sizeof(*out));
  char *log = NULL;
  size_t n = 0;
  gw_rc rc = GW_ENOTFOUND;
  struct kube_status st;
  kube_status_init(&st);
  if(*v->pod)
    rc = kube_pod_log(c->kube, c->ns, v->pod, NULL, LOG_TAIL_LINES, &log, &n, &st);
  if(rc && rc != GW_ENOTFOUND) {
    bool in_window = !v->finished || (long long)time(NULL) - v->finished < window_ms / 1000;
    if(in_window) {
      snprintf(out->why, sizeof(out->why), "GET pods/%s/log: %s%s%s", v->pod, gw_strerror(rc),
               *st.message ? ": " : "", st.message);
      kube_status_release(&st);
      free(log);
      return out->verdict = rc == GW_ETIMEOUT ? OPV_TIMEOUT : OPV_ERROR;
    }
  }
  kube_status_release(&st);
  bool seen = false;
  char why[256] = "";
  char *line = !rc && log ? last_frame(log, &seen, why, sizeof(why)) : NULL;
  free(log);
  cJSON *rec = line ? cJSON_Parse(line) : NULL;
  free(line);
  if(rec) {
    const char *id = json_get_str(rec, "spec.operation.id");
    const char *job = json_get_str(rec, "spec.jobName");
    const cJSON *att = json_get(rec, "spec.operation.attempt");
    bool ours = id && !strcmp(id, op->id) && job && !strcmp(job, op->job) &&
                cJSON_IsNumber(att) && (int)att->valuedouble == op->attempt;
    if(ours) {
      out->rec = rec;
      const char *outcome = json_get_str(rec, "spec.result.outcome");
      if(!strcmp(op->type, "Apply") && !(outcome && !strcmp(outcome, "Failed")) &&
         !json_get_bool(rec, "spec.result.lockContinuous", false)) {
        snprintf(out->why, sizeof(out->why), "the runner did not hold the database lock "
                 "throughout the run, so what it reports is not proof");
        return out->verdict = OPV_REJECTED;
      }
      return out->verdict = OPV_ACCEPTED;
    }
    cJSON_Delete(rec);
    return summary(op, v, true, out);
  }
  return summary(op, v, seen, out);
}
