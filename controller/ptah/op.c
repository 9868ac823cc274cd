/* op.c: a Ptah operation's claim, names and result record (op.h). */
#include "op.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../ktime.h"
#include "digest.h"
#include "json.h"
#include "log.h"

static long long num(const cJSON *o, const char *path, long long dflt)
{
  const cJSON *v = json_get(o, path);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

static void copy(char *dst, size_t len, const char *src)
{
  snprintf(dst, len, "%s", src ? src : "");
}


long long op_status_int(const cJSON *obj, const char *path, long long dflt)
{
  char full[96];
  snprintf(full, sizeof(full), "status.%s", path);
  return num(obj, full, dflt);
}

bool op_read(const cJSON *obj, struct ptah_op *op)
{
  memset(op, 0, sizeof(*op));
  const cJSON *o = json_get(obj, "status.operation");
  const char *id = json_get_str(o, "id");
  if(!cJSON_IsObject(o) || !id || !*id)
    return false;
  copy(op->id, sizeof(op->id), id);
  copy(op->type, sizeof(op->type), json_get_str(o, "type"));
  copy(op->job, sizeof(op->job), json_get_str(o, "jobName"));
  copy(op->inputs, sizeof(op->inputs), json_get_str(o, "inputs"));
  copy(op->desired, sizeof(op->desired), json_get_str(o, "desiredChecksum"));
  copy(op->tdigest, sizeof(op->tdigest), json_get_str(o, "templateDigest"));
  copy(op->binding, sizeof(op->binding), json_get_str(o, "binding"));
  copy(op->jdigest, sizeof(op->jdigest), json_get_str(o, "jobDigest"));
  op->attempt = (int)num(o, "attempt", 1);
  const char *tr = json_get_str(o, "resultTransport");
  op->legacy = tr && !strcmp(tr, "Legacy");
  op->refused = (int)num(o, "refusedAttempts", 0);
  op->dispatched = json_get_str(o, "startedAt") != NULL;
  op->refreshed = json_get_bool(o, "snapshotRefreshed", false);
  op->from = num(o, "fromVersion", 0);
  op->to = num(o, "toVersion", 0);
  op->not_before = kt_parse_rfc3339(json_get_str(o, "notBefore"));
  return true;
}

void op_write(struct status_edit *ed, const cJSON *obj, const struct ptah_op *op)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", op->id);
  cJSON_AddStringToObject(o, "type", op->type);
  cJSON_AddStringToObject(o, "jobName", op->job);
  cJSON_AddNumberToObject(o, "attempt", op->attempt);
  cJSON_AddStringToObject(o, "resultTransport", op->legacy ? "Legacy" : "Durable");
  if(op->refused)
    cJSON_AddNumberToObject(o, "refusedAttempts", op->refused);
  if(*op->inputs)
    cJSON_AddStringToObject(o, "inputs", op->inputs);
  if(*op->desired)
    cJSON_AddStringToObject(o, "desiredChecksum", op->desired);
  if(*op->tdigest)
    cJSON_AddStringToObject(o, "templateDigest", op->tdigest);
  if(*op->binding)
    cJSON_AddStringToObject(o, "binding", op->binding);
  if(*op->jdigest)
    cJSON_AddStringToObject(o, "jobDigest", op->jdigest);
  if(op->refreshed)
    cJSON_AddTrueToObject(o, "snapshotRefreshed");
  cJSON_AddNumberToObject(o, "fromVersion", (double)op->from);
  cJSON_AddNumberToObject(o, "toVersion", (double)op->to);
  char t[40];
  if(op->not_before) {
    kt_rfc3339(t, sizeof(t), op->not_before);
    cJSON_AddStringToObject(o, "notBefore", t);
  }
  if(op->dispatched) {
    const char *was = json_get_str(obj, "status.operation.startedAt");
    const char *id = json_get_str(obj, "status.operation.id");
    const cJSON *att = json_get(obj, "status.operation.attempt");
    bool same = was && id && !strcmp(id, op->id) && cJSON_IsNumber(att) &&
                (int)att->valuedouble == op->attempt;
    if(!same)
      kt_rfc3339(t, sizeof(t), time(NULL));
    cJSON_AddStringToObject(o, "startedAt", same ? was : t);
  }
  edit_set(ed, "operation", o);
}

void op_make_id(const char *name, const char *type_lc, long long seq, char *buf, size_t len)
{
  char tail[48];
  snprintf(tail, sizeof(tail), "-%s-%lld", type_lc, seq);
  /* room for the id and, in the Job's name, "-<attempt>" (at most 4 more) */
  size_t room = OP_ID_MAX - 4 - strlen(tail);
  if(strlen(name) <= room) {
    snprintf(buf, len, "%s%s", name, tail);
    return;
  }
  char d[DIGEST_SHA256_LEN];
  if(digest_sha256(name, strlen(name), d))
    snprintf(d, sizeof(d), "sha256:00000000");
  int keep = (int)(room - 9); /* "-" and 8 hex digits */
  while(keep > 0 && name[keep - 1] == '-')
    keep--;
  snprintf(buf, len, "%.*s-%.8s%s", keep, name, d + 7, tail);
}

void op_job_name(const char *id, int attempt, char *buf, size_t len)
{
  snprintf(buf, len, "%s-%d", id, attempt);
}

/* ---- the result record ---- */

const char *op_result_str(const struct op_record *r, const char *field)
{
  char p[96];
  snprintf(p, sizeof(p), "spec.result.%s", field);
  return r->rec ? json_get_str(r->rec, p) : NULL;
}

long long op_result_int(const struct op_record *r, const char *field, long long dflt)
{
  char p[96];
  snprintf(p, sizeof(p), "spec.result.%s", field);
  return r->rec ? num(r->rec, p, dflt) : dflt;
}

void op_record_release(struct op_record *r)
{
  cJSON_Delete(r->rec);
  memset(r, 0, sizeof(*r));
}

/* The writer is a Pod of op's Job, by uid, running as sa. "" when so, else why not. */
static void check_writer(struct rec_ctx *c, const struct ptah_op *op, const char *sa,
                         const cJSON *rec, char *why, size_t len)
{
  const char *pod = json_get_str(rec, "spec.writer.podName");
  const char *uid = json_get_str(rec, "spec.writer.podUID");
  const char *who = json_get_str(rec, "spec.writer.serviceAccount");
  char want[320];
  snprintf(want, sizeof(want), "system:serviceaccount:%s:%s", c->ns, sa && *sa ? sa : "default");
  const char *id = json_get_str(rec, "spec.operation.id");
  if(!id || strcmp(id, op->id)) {
    snprintf(why, len, "it names operation \"%s\", not \"%s\"", id ? id : "", op->id);
    return;
  }
  if(!who || strcmp(who, want)) {
    snprintf(why, len, "it was written by \"%s\", not by the Job's service account \"%s\"",
             who ? who : "", want);
    return;
  }
  if(!pod || !uid) {
    snprintf(why, len, "it does not name the Pod that wrote it (spec.writer)");
    return;
  }
  cJSON *p = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(c->kube, &KUBE_PODS, c->ns, pod, &p, &st);
  kube_status_release(&st);
  if(rc == GW_ENOTFOUND) {
    snprintf(why, len, "its writer Pod \"%s\" is gone, so its uid cannot be checked", pod);
  } else if(rc) {
    snprintf(why, len, "%sGET pods/%s: %s", rc == GW_ETIMEOUT ? "~" : "!", pod,
             gw_strerror(rc)); /* '!', '~' (timed out): retry */
  } else {
    const char *puid = json_get_str(p, "metadata.uid");
    const cJSON *l = json_get(p, "metadata.labels");
    const char *j = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "job-name"));
    if(!j)
      j = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "batch.kubernetes.io/job-name"));
    if(!puid || strcmp(puid, uid))
      snprintf(why, len, "its writer's uid %s is not the uid of Pod \"%s\" (%s)", uid, pod,
               puid ? puid : "none");
    else if(!j || strcmp(j, op->job))
      snprintf(why, len, "its writer Pod \"%s\" belongs to Job \"%s\", not \"%s\"", pod,
               j ? j : "", op->job);
    else
      why[0] = '\0';
  }
  cJSON_Delete(p);
}

/* Writes the record's status once: phase and a condition saying why. */
static void decide(struct rec_ctx *c, const cJSON *rec, bool accepted, const char *why)
{
  const char *phase = json_get_str(rec, "status.phase");
  if(phase && strcmp(phase, "Pending"))
    return; /* decided before */
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON *patch = cJSON_CreateObject();
  cJSON *s = cJSON_AddObjectToObject(patch, "status");
  cJSON_AddStringToObject(s, "phase", accepted ? "Accepted" : "Rejected");
  cJSON_AddNumberToObject(s, "observedGeneration", (double)num(rec, "metadata.generation", 1));
  cJSON *cd = cJSON_CreateObject();
  cJSON_AddStringToObject(cd, "type", "Accepted");
  cJSON_AddStringToObject(cd, "status", accepted ? "True" : "False");
  cJSON_AddNumberToObject(cd, "observedGeneration", (double)num(rec, "metadata.generation", 1));
  cJSON_AddStringToObject(cd, "lastTransitionTime", now);
  cJSON_AddStringToObject(cd, "reason", accepted ? "WriterVerified" : "WriterRefused");
  cJSON_AddStringToObject(cd, "message", accepted ? "the writer is the operation's runner Pod"
                                                  : why);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "conditions"), cd);
  char *text = cJSON_PrintUnformatted(patch);
  cJSON_Delete(patch);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = text ? kube_patch(c->kube, &KUBE_PTAH_RESULT_RECORDS, c->ns,
                               json_get_str(rec, "metadata.name"), KUBE_PATCH_MERGE, text,
                               "status", NULL, &st)
                  : GW_ENOMEM;
  if(rc)
    log_kv(LOG_WARN, "cannot record a result record's verdict", "key", c->key, "record",
           json_get_str(rec, "metadata.name"), "error", gw_strerror(rc), "reason", st.reason,
           LOG_END);
  kube_status_release(&st);
  cJSON_free(text);
}

enum op_verdict op_record_check(struct rec_ctx *c, const struct ptah_op *op, const char *sa,
                                struct op_record *out)
{
  memset(out, 0, sizeof(*out));
  struct kube_status st;
  kube_status_init(&st);
  /* from the API: the verdict of a run must not miss a record the cache has not seen yet */
  gw_rc rc = kube_get(c->kube, &KUBE_PTAH_RESULT_RECORDS, c->ns, op->job, &out->rec, &st);
  if(rc == GW_ENOTFOUND) {
    kube_status_release(&st);
    return out->verdict = OPV_NONE;
  }
  if(rc) {
    snprintf(out->why, sizeof(out->why), "GET ptahresultrecords/%s: %s%s%s", op->job,
             gw_strerror(rc), *st.message ? ": " : "", st.message);
    kube_status_release(&st);
    return out->verdict = rc == GW_ETIMEOUT ? OPV_TIMEOUT : OPV_ERROR;
  }
  kube_status_release(&st);
  const char *phase = json_get_str(out->rec, "status.phase");
  if(phase && !strcmp(phase, "Rejected")) {
    const cJSON *c0 = cJSON_GetArrayItem(json_get(out->rec, "status.conditions"), 0);
    const char *m = json_get_str(c0, "message");
    snprintf(out->why, sizeof(out->why), "%s", m ? m : "rejected before");
    return out->verdict = OPV_REJECTED;
  }
  check_writer(c, op, sa, out->rec, out->why, sizeof(out->why));
  if(out->why[0] == '!' || out->why[0] == '~') {
    bool timeout = out->why[0] == '~';
    memmove(out->why, out->why + 1, strlen(out->why));
    return out->verdict = timeout ? OPV_TIMEOUT : OPV_ERROR;
  }
  /* a run that says it committed nothing needs no lock to be believed (it may never have got
   * it); any other says what the database holds, which only the lock's holder can */
  const char *outcome = json_get_str(out->rec, "spec.result.outcome");
  if(!out->why[0] && !strcmp(op->type, "Apply") && !(outcome && !strcmp(outcome, "Failed")) &&
     !json_get_bool(out->rec, "spec.result.lockContinuous", false)) {
    snprintf(out->why, sizeof(out->why), "the runner did not hold the database lock throughout "
             "the run (result.lockContinuous is not true), so what it reports is not proof");
  }
  bool ok = !out->why[0];
  decide(c, out->rec, ok, out->why);
  return out->verdict = ok ? OPV_ACCEPTED : OPV_REJECTED;
}
