/* The operation in flight: dispatched once (the admission snapshot checked first), watched while
 * its Job runs, and settled from the result record its runner delivered: MigrationRunFinished
 * with the outcome, OperationRetried for a run proven to have committed nothing, OperationFailed
 * when the attempts are spent, and an uncertain run (unresolved.c) when nothing proves what it
 * committed. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "pm.h"

/* The Job is created: the snapshot is checked against what would be dispatched now. */
static gw_rc dispatch(struct pm *p, struct ptah_op *op)
{
  time_t now = time(NULL);
  if(op->not_before > now) {
    edit_requeue(&p->ed, (long)(op->not_before - now) * 1000);
    return GW_OK;
  }
  char binding[sizeof(op->binding)];
  pm_binding(p, binding, sizeof(binding));
  if(*op->binding && strcmp(binding, op->binding)) {
    /* the evidence would be produced under another executor: the claim is discarded, and
     * the next pass claims afresh under the new binding */
    edit_unset(&p->ed, "operation");
    edit_event(&p->ed, EV_WARNING, "ExecutionBindingChanged", "operation %s was claimed under "
               "%s and the manager now runs %s: the claim is discarded before dispatch, and a "
               "new one is made", op->id, op->binding, binding);
    pm_ready(p, COND_FALSE, "ExecutionBindingChanged", "operation %s was discarded: its "
             "execution binding changed (%s, now %s)", op->id, op->binding, binding);
    edit_requeue(&p->ed, 1);
    return GW_OK;
  }
  char d[80];
  gw_rc rc = pm_job_digest(p, op, d, sizeof(d));
  if(rc)
    return rc;
  if(*op->tdigest && strcmp(d, op->tdigest)) {
    if(op->refreshed) {
      /* the template moved again: the claim retires, and the next pass claims afresh */
      edit_unset(&p->ed, "operation");
      pm_ready(p, COND_FALSE, "ClaimRetired", "operation %s was retired before dispatch: the "
               "Pod template it would run changed again (%s, now %s) after its snapshot was "
               "resolved once; a new claim is made", op->id, op->tdigest, d);
      edit_requeue(&p->ed, 1);
      return GW_OK;
    }
    edit_event(&p->ed, EV_NORMAL, "AdmissionSnapshotRefreshed", "operation %s had not "
               "dispatched and the Pod template it would run changed (%s, now %s), usually a "
               "new manager release; the snapshot was resolved again", op->id, op->tdigest, d);
    snprintf(op->tdigest, sizeof(op->tdigest), "%s", d);
    op->refreshed = true;
  }
  rc = pm_job_full_digest(p, op, op->jdigest, sizeof(op->jdigest));
  if(rc)
    return rc;
  bool created = false;
  rc = pm_job_create(p, op, &created);
  if(rc) {
    pm_ready(p, COND_FALSE, "Migrating", "operation %s: cannot create Job %s yet (%s); trying "
             "again", op->id, op->job, gw_strerror(rc));
    edit_requeue(&p->ed, PM_ERROR_RETRY_MS);
    return GW_OK;
  }
  op->dispatched = true;
  op_write(&p->ed, p->obj, op);
  edit_event_if_written(&p->ed, EV_NORMAL, "OperationStarted", "Job %s was created for "
                        "operation %s (Apply, attempt %d): versions %lld to %lld", op->job,
                        op->id, op->attempt, op->from, op->to);
  pm_ready(p, COND_FALSE, "Migrating", "operation %s runs in Job %s (attempt %d)", op->id,
           op->job, op->attempt);
  edit_requeue(&p->ed, p->o->poll_interval_ms);
  return GW_OK;
}

/* What a run reported, from its accepted record or from the proof that nothing ran. */
struct run_result {
  const char *outcome, *message;
  long long from, to;
};

static void finished_run(struct pm *p, const struct ptah_op *op, const struct run_result *res)
{
  cJSON *last = cJSON_CreateObject();
  cJSON_AddStringToObject(last, "operation", op->id);
  cJSON_AddStringToObject(last, "outcome", res->outcome);
  cJSON_AddNumberToObject(last, "fromVersion", (double)res->from);
  cJSON_AddNumberToObject(last, "toVersion", (double)res->to);
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON_AddStringToObject(last, "finishedAt", now);
  cJSON_AddStringToObject(last, "message", res->message);
  edit_set(&p->ed, "lastRun", last);
  edit_set_int(&p->ed, "currentVersion", res->to);
  edit_set_str(&p->ed, "appliedInputs", op->inputs);
  edit_unset(&p->ed, "operation");
}

static void settle(struct pm *p, struct ptah_op *op, const struct run_result *res)
{
  const char *outcome = res->outcome, *msg = res->message;
  long long from = res->from, to = res->to;
  if(!strcmp(outcome, "Unknown")) {
    pm_uncertain(p, op, "the runner could not tell what it committed: %s", msg);
    return;
  }
  int failures = op->attempt - op->refused; /* the runs that started and failed */
  if(!strcmp(outcome, "Failed") && failures <= p->backoff_limit) {
    /* proven to have committed nothing: the next attempt, after a backoff */
    long delay = p->o->retry_base_ms << (failures - 1 < 8 ? failures - 1 : 8);
    edit_event(&p->ed, EV_WARNING, "OperationRetried", "operation %s attempt %d failed and "
               "committed nothing; attempt %d follows in %ld s (%d of the %d runs backoffLimit "
               "allows after the first): %s", op->id, op->attempt, op->attempt + 1,
               (delay + 999) / 1000, failures, p->backoff_limit, msg);
    op->attempt++;
    op_job_name(op->id, op->attempt, op->job, sizeof(op->job));
    op->dispatched = false;
    op->not_before = time(NULL) + (delay + 999) / 1000;
    op_write(&p->ed, p->obj, op);
    pm_ready(p, COND_FALSE, "RetryingRun", "operation %s: attempt %d failed (%s); attempt %d "
             "follows", op->id, op->attempt - 1, msg, op->attempt);
    edit_requeue(&p->ed, delay);
    return;
  }
  finished_run(p, op, res);
  bool good = !strcmp(outcome, "Applied") || !strcmp(outcome, "UpToDate");
  if(good) {
    edit_phase(&p->ed, PM_UPTODATE);
    pm_ready(p, COND_TRUE, outcome, "the database is at version %lld (operation %s)", to,
             op->id);
    if(!strcmp(outcome, "Applied"))
      edit_event(&p->ed, EV_NORMAL, "MigrationRunFinished", "Applied: operation %s took the "
                 "database from version %lld to %lld", op->id, from, to);
    else
      edit_event(&p->ed, EV_NORMAL, "MigrationRunFinished", "UpToDate: operation %s found the "
                 "database at version %lld, nothing to apply", op->id, to);
    return;
  }
  /* Failed with the attempts spent, or Partial: stays until the inputs change */
  edit_phase(&p->ed, PM_FAILED);
  pm_ready(p, COND_FALSE, !strcmp(outcome, "Partial") ? "RunPartial" : "RunFailed",
           "operation %s %s at version %lld: %s; fix the migration and publish it (a new "
           "ConfigMap content or target starts a new run)", op->id,
           !strcmp(outcome, "Partial") ? "stopped part way" : "failed", to, msg);
  edit_event(&p->ed, EV_WARNING, "MigrationRunFinished", "%s: operation %s left the database at "
             "version %lld (from %lld): %s", outcome, op->id, to, from, msg);
  edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s failed after %d run%s: %s",
             op->id, failures, failures == 1 ? "" : "s", msg);
}

/* The run's runner died without its result: its session may still hold the database lock
 * until the server notices. The next run releases it (--release-owed). */
static void release_owed(struct pm *p, const struct ptah_op *op)
{
  char session[96], now[40];
  snprintf(session, sizeof(session), "godwit-ptah-%s", op->id);
  session[63] = '\0'; /* as the runner cuts its application_name */
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "operation", op->id);
  cJSON_AddStringToObject(o, "session", session);
  cJSON_AddStringToObject(o, "recordedAt", now);
  edit_set(&p->ed, "lockReleaseOwed", o);
  edit_event(&p->ed, EV_WARNING, "TargetLockReleaseOwed", "operation %s ended without its "
             "runner: its database session (application_name \"%s\") may still hold the "
             "migration lock; the next run releases it before it takes the lock", op->id,
             session);
}

static void settle_record(struct pm *p, struct ptah_op *op, const struct op_record *r)
{
  if(json_get(p->obj, "status.lockReleaseOwed"))
    edit_unset(&p->ed, "lockReleaseOwed"); /* an accepted run held the lock: it was released */
  struct run_result res;
  res.outcome = op_result_str(r, "outcome") ? op_result_str(r, "outcome") : "Unknown";
  res.message = op_result_str(r, "message") ? op_result_str(r, "message") : "";
  res.from = op_result_int(r, "fromVersion", op->from);
  res.to = op_result_int(r, "toVersion", res.from);
  settle(p, op, &res);
}

/* The newest FailedCreate Event of the Job ("" when none): the API server refused its Pod. */
static void refusal(struct pm *p, const char *job, char *buf, size_t len)
{
  buf[0] = '\0';
  char sel[160];
  snprintf(sel, sizeof(sel), "involvedObject.name=%s", job);
  struct kube_list_opts lo = { .field_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(p->ctx->kube, &KUBE_EVENTS, p->ns, &lo, &list, &st);
  kube_status_release(&st);
  const char *newest = "";
  const cJSON *items = rc ? NULL : json_get(list, "items");
  const cJSON *ev;
  cJSON_ArrayForEach(ev, items)
  {
    const char *kind = json_get_str(ev, "involvedObject.kind");
    const char *reason = json_get_str(ev, "reason");
    const char *ts = json_get_str(ev, "lastTimestamp");
    if(!ts)
      ts = json_get_str(ev, "eventTime");
    if(!kind || strcmp(kind, "Job") || !reason || strcmp(reason, "FailedCreate"))
      continue;
    if(ts && strcmp(ts, newest) < 0)
      continue;
    newest = ts ? ts : newest;
    snprintf(buf, len, "%s", json_get_str(ev, "message") ? json_get_str(ev, "message") : "");
  }
  cJSON_Delete(list);
}

/* The runner refused before anything ran: the same operation, a new attempt's Job after wait_ms
 * (the attempts of backoffLimit are not spent: the run never started). */
static void again_later(struct pm *p, struct ptah_op *op, long wait_ms)
{
  op->attempt++;
  op->refused++;
  op_job_name(op->id, op->attempt, op->job, sizeof(op->job));
  op->dispatched = false;
  op->not_before = time(NULL) + (wait_ms + 999) / 1000;
  op_write(&p->ed, p->obj, op);
  edit_requeue(&p->ed, wait_ms);
}

/* The Job ended (or vanished) without an accepted record. */
static void no_result(struct pm *p, struct ptah_op *op, const struct job_view *v,
                      const struct op_record *r)
{
  const char *res = job_report_result(v);
  if(res && !strcmp(res, "ProtocolMismatch")) {
    const char *speaks = json_get_str(v->report, "protocol");
    const char *asked = json_get_str(v->report, "requested");
    const char *img = json_get_str(p->obj, "spec.execution.runnerImage");
    long wait_s = (p->o->failure_interval_ms + 999) / 1000;
    edit_event(&p->ed, EV_WARNING, "RunnerProtocolMismatch", "operation %s: the runner of Job "
               "%s (image %s) speaks protocol \"%s\", this manager asks for \"%s\"; it "
               "refused the Job before starting, and it is tried again in %ld s", op->id,
               op->job, img && *img ? img : p->o->runner_image, speaks ? speaks : "?",
               asked ? asked : "?", wait_s);
    pm_ready(p, COND_FALSE, "RunnerProtocolMismatch", "the runner image speaks protocol "
             "\"%s\", this manager asks for \"%s\": run a runner image of this godwit release "
             "(spec.execution.runnerImage, or the controller's --runner-image)",
             speaks ? speaks : "?", asked ? asked : "?");
    again_later(p, op, p->o->failure_interval_ms);
    return;
  }
  if(res && !strcmp(res, "CredentialFailed")) {
    const char *why = json_get_str(v->report, "message");
    /* the n-th refusal in a row waits 2 s doubling, at most the failure interval */
    int n = op->refused < 8 ? op->refused : 8;
    long wait = p->o->retry_base_ms << n;
    if(wait > p->o->failure_interval_ms)
      wait = p->o->failure_interval_ms;
    edit_event(&p->ed, EV_WARNING, "ResultCredentialFailed", "operation %s: the runner of Job "
               "%s could not prove it can deliver its result, so it ran nothing; tried again in "
               "%ld s (check the service account %s and its RoleBinding to the ClusterRole "
               "godwit-runner, and admission refusals): %s", op->id, op->job,
               (wait + 999) / 1000, pm_service_account(p), why ? why : "");
    pm_ready(p, COND_FALSE, "ResultCredentialFailed", "operation %s waits for a runner that can "
             "deliver its result: %s", op->id, why ? why : "");
    again_later(p, op, wait);
    return;
  }
  if(r->verdict == OPV_REJECTED && r->summary_refused) {
    edit_event(&p->ed, EV_WARNING, "TerminationSummaryRefused", "operation %s: the log of Job "
               "%s held no readable result, and the summary in its Pod's termination message "
               "was not read in its place: %s; the run is recorded as unknown", op->id, op->job,
               r->why);
    pm_uncertain(p, op, "its legacy result could not be read: %s", r->why);
    if(!strcmp(op->type, "Apply"))
      release_owed(p, op);
    return;
  }
  if(r->verdict == OPV_REJECTED) {
    /* a lock not held throughout is said in the uncertain run's Events (the seed records
     * LeaseContinuityLost on a PtahSchema only) */
    pm_uncertain(p, op, "its result was rejected: %s", r->why);
    return;
  }
  if(v->state == JOB_FAILED && !*v->pod && v->pods_ended == 0) {
    /* no runner Pod ever ran: proven to have committed nothing */
    char refused[1024] = "";
    refusal(p, op->job, refused, sizeof(refused));
    char msg[2200];
    snprintf(msg, sizeof(msg), "no runner Pod of Job %s ever ran (%s)%s%s", op->job, v->failure,
             *refused ? ": " : "", refused);
    struct run_result failed = { "Failed", msg, op->from, op->from };
    settle(p, op, &failed);
    return;
  }
  if(!strcmp(op->type, "Apply"))
    release_owed(p, op);
  if(v->state == JOB_ABSENT)
    pm_uncertain(p, op, "its Job %s is gone and no result record was delivered", op->job);
  else
    pm_uncertain(p, op, "its Job %s ended (exit code %d) without delivering a result record",
                 op->job, v->exit_code);
}

/* A Job that never started a Pod while the spec moved on (a fixed service account, Pod
 * metadata a policy asks for): it is cleaned up and the claim retired, so the run goes on under
 * the spec as it is now. The Job is suspended first (no new Pod), then deleted once it shows no
 * Pod and none ended: nothing ran. A cleanup that cannot be scheduled leaves the Job to its own
 * deadline (MigrationJobCleanupDeferred). true: handled (the pass ends here). */
static bool stale_job(struct pm *p, const struct ptah_op *op, const struct job_view *v)
{
  char d[80];
  if(!*op->jdigest || pm_job_full_digest(p, op, d, sizeof(d)) || !strcmp(d, op->jdigest))
    return false;
  gw_rc rc = v->suspended ? rj_delete(&p->owner, op->job) : rj_suspend(&p->owner, op->job);
  if(rc) {
    edit_event(&p->ed, EV_WARNING, "MigrationJobCleanupDeferred", "Job %s of operation %s no "
               "longer matches the spec and could not be %s (%s); it keeps its own deadline "
               "(%ld s) rather than relying on a cleanup", op->job, op->id,
               v->suspended ? "deleted" : "suspended", gw_strerror(rc), p->o->job_deadline_s);
    edit_requeue(&p->ed, p->o->poll_interval_ms);
    return false; /* the refusal is still reported below */
  }
  if(!v->suspended) {
    edit_requeue(&p->ed, 500); /* deleted once it shows no Pod */
    return true;
  }
  edit_unset(&p->ed, "operation");
  pm_ready(p, COND_FALSE, "ClaimRetired", "operation %s was retired: its Job %s never started a "
           "Pod and the spec changed since; a new run follows under the current spec", op->id,
           op->job);
  edit_requeue(&p->ed, 1);
  return true;
}

gw_rc pm_drive(struct pm *p)
{
  struct ptah_op op;
  if(!op_read(p->obj, &op))
    return GW_OK;
  if(p->phase != PM_MIGRATING)
    edit_phase(&p->ed, PM_MIGRATING);
  if(!op.dispatched)
    return dispatch(p, &op);
  struct job_view v;
  memset(&v, 0, sizeof(v));
  gw_rc rc = rj_get(&p->owner, op.job, &v);
  if(!rc && v.state == JOB_ABSENT) {
    /* the cache may not have a Job created a moment ago: absent is decided by the API */
    struct rj_owner api = p->owner;
    api.jobs = api.pods = NULL;
    job_view_release(&v);
    rc = rj_get(&api, op.job, &v);
  }
  if(rc) {
    edit_requeue(&p->ed, PM_ERROR_RETRY_MS);
    return GW_OK;
  }
  if(v.state == JOB_PENDING && !*v.pod && v.pods_ended == 0 && stale_job(p, &op, &v)) {
    job_view_release(&v);
    return GW_OK;
  }
  if(v.state == JOB_PENDING || v.state == JOB_RUNNING || v.state == JOB_DELETING) {
    char refused[1024] = "";
    if(v.state == JOB_PENDING && !*v.pod)
      refusal(p, op.job, refused, sizeof(refused));
    if(*refused) {
      pm_ready(p, COND_FALSE, "PodAdmissionRefused", "operation %s: the API server refuses the "
               "runner Pod of Job %s: %s; the Job keeps its deadline", op.id, op.job, refused);
      edit_event_if_cond(&p->ed, C_READY, EV_WARNING, "PodAdmissionRefused", "Job %s cannot "
                         "create the runner Pod of operation %s: %s. The Job keeps its "
                         "deadline and keeps trying; declare what the Pod has to carry in "
                         "spec.execution.podMetadata, or change the policy", op.job, op.id,
                         refused);
    } else if(*v.waiting) {
      pm_ready(p, COND_FALSE, "Migrating", "operation %s: the runner Pod cannot start: %s",
               op.id, v.waiting);
    }
    edit_requeue(&p->ed, p->o->poll_interval_ms);
    job_view_release(&v);
    return GW_OK;
  }
  struct op_record r;
  enum op_verdict verdict =
    op.legacy ? op_legacy_read(p->ctx, &op, &v, p->o->log_window_ms, &r)
              : op_record_check(p->ctx, &op, pm_service_account(p), &r);
  if(verdict == OPV_TIMEOUT) {
    edit_event(&p->ed, EV_WARNING, "ResultReadTimedOut", "operation %s: reading its result "
               "exceeded its time bound and is tried again: %s", op.id, r.why);
    edit_requeue(&p->ed, PM_ERROR_RETRY_MS);
  } else if(verdict == OPV_ERROR) {
    edit_event(&p->ed, EV_WARNING, "ResultReadFailed", "operation %s: reading its result "
               "failed and is tried again: %s", op.id, r.why);
    edit_requeue(&p->ed, PM_ERROR_RETRY_MS);
  } else if(verdict == OPV_ACCEPTED) {
    settle_record(p, &op, &r);
  } else {
    no_result(p, &op, &v, &r);
  }
  op_record_release(&r);
  job_view_release(&v);
  return GW_OK;
}
