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
  char d[80];
  gw_rc rc = pm_job_digest(p, op, d, sizeof(d));
  if(rc)
    return rc;
  if(*op->tdigest && strcmp(d, op->tdigest)) {
    if(op->refreshed) {
      /* the template moved again: the claim retires, and the next pass claims afresh */
      edit_unset(&p->ed, "operation");
      edit_event(&p->ed, EV_WARNING, "ExecutionBindingChanged", "operation %s was retired "
                 "before dispatch: the Pod template it would run changed twice (%s, now %s)",
                 op->id, op->tdigest, d);
      edit_requeue(&p->ed, 1);
      return GW_OK;
    }
    edit_event(&p->ed, EV_NORMAL, "AdmissionSnapshotRefreshed", "operation %s had not "
               "dispatched and the Pod template it would run changed (%s, now %s), usually a "
               "new manager release; the snapshot was resolved again", op->id, op->tdigest, d);
    snprintf(op->tdigest, sizeof(op->tdigest), "%s", d);
    op->refreshed = true;
  }
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

static void finished_run(struct pm *p, const struct ptah_op *op, const char *outcome,
                         const struct op_record *r)
{
  const char *msg = op_result_str(r, "message");
  long long from = op_result_int(r, "fromVersion", op->from);
  long long to = op_result_int(r, "toVersion", from);
  cJSON *last = cJSON_CreateObject();
  cJSON_AddStringToObject(last, "operation", op->id);
  cJSON_AddStringToObject(last, "outcome", outcome);
  cJSON_AddNumberToObject(last, "fromVersion", (double)from);
  cJSON_AddNumberToObject(last, "toVersion", (double)to);
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON_AddStringToObject(last, "finishedAt", now);
  cJSON_AddStringToObject(last, "message", msg ? msg : "");
  edit_set(&p->ed, "lastRun", last);
  edit_set_int(&p->ed, "currentVersion", to);
  edit_set_str(&p->ed, "appliedInputs", op->inputs);
  edit_unset(&p->ed, "operation");
}

static void settle(struct pm *p, struct ptah_op *op, const struct op_record *r)
{
  const char *outcome = op_result_str(r, "outcome");
  const char *msg = op_result_str(r, "message");
  if(!outcome)
    outcome = "Unknown";
  long long from = op_result_int(r, "fromVersion", op->from);
  long long to = op_result_int(r, "toVersion", from);
  if(!strcmp(outcome, "Unknown")) {
    pm_uncertain(p, op, "the runner could not tell what it committed: %s", msg ? msg : "");
    return;
  }
  if(!strcmp(outcome, "Failed") && op->attempt <= p->backoff_limit) {
    /* proven to have committed nothing: the next attempt, after a backoff */
    long delay = p->o->retry_base_ms << (op->attempt - 1 < 8 ? op->attempt - 1 : 8);
    edit_event(&p->ed, EV_WARNING, "OperationRetried", "operation %s attempt %d failed and "
               "committed nothing; attempt %d of %d follows in %ld s: %s", op->id, op->attempt,
               op->attempt + 1, p->backoff_limit + 1, (delay + 999) / 1000, msg ? msg : "");
    op->attempt++;
    op_job_name(op->id, op->attempt, op->job, sizeof(op->job));
    op->dispatched = false;
    op->not_before = time(NULL) + (delay + 999) / 1000;
    op_write(&p->ed, p->obj, op);
    pm_ready(p, COND_FALSE, "RetryingRun", "operation %s: attempt %d failed (%s); attempt %d "
             "follows", op->id, op->attempt - 1, msg ? msg : "", op->attempt);
    edit_requeue(&p->ed, delay);
    return;
  }
  finished_run(p, op, outcome, r);
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
           !strcmp(outcome, "Partial") ? "stopped part way" : "failed", to, msg ? msg : "");
  edit_event(&p->ed, EV_WARNING, "MigrationRunFinished", "%s: operation %s left the database at "
             "version %lld (from %lld): %s", outcome, op->id, to, from, msg ? msg : "");
  edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s failed after %d attempt%s: %s",
             op->id, op->attempt, op->attempt == 1 ? "" : "s", msg ? msg : "");
}

/* The Job ended (or vanished) without an accepted record. */
static void no_result(struct pm *p, struct ptah_op *op, const struct job_view *v,
                      const struct op_record *r)
{
  const char *res = job_report_result(v);
  if(res && !strcmp(res, "ProtocolMismatch")) {
    char m[1024];
    job_report_message(v, m, sizeof(m));
    edit_event(&p->ed, EV_WARNING, "RunnerProtocolMismatch", "operation %s: the runner of "
               "Job %s refused it before starting: %s; it is tried again in %ld s", op->id,
               op->job, m, p->o->failure_interval_ms / 1000);
    edit_unset(&p->ed, "operation");
    edit_phase(&p->ed, PM_FAILED);
    pm_ready(p, COND_FALSE, "RunnerProtocolMismatch", "the runner image speaks another "
             "protocol than this manager (%s): %s", p->o->protocol ? p->o->protocol
             : PTAH_PROTOCOL, m);
    edit_requeue(&p->ed, p->o->failure_interval_ms);
    return;
  }
  if(r->verdict == OPV_REJECTED) {
    if(r->lock_lost)
      edit_event(&p->ed, EV_WARNING, "LeaseContinuityLost", "operation %s: %s; the result is "
                 "discarded", op->id, r->why);
    pm_uncertain(p, op, "its result record was rejected: %s", r->why);
    return;
  }
  if(v->state == JOB_ABSENT)
    pm_uncertain(p, op, "its Job %s is gone and no result record was delivered", op->job);
  else
    pm_uncertain(p, op, "its Job %s ended (exit code %d) without delivering a result record",
                 op->job, v->exit_code);
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
  if(v.state == JOB_PENDING || v.state == JOB_RUNNING || v.state == JOB_DELETING) {
    if(*v.waiting)
      pm_ready(p, COND_FALSE, "Migrating", "operation %s: the runner Pod cannot start: %s",
               op.id, v.waiting);
    edit_requeue(&p->ed, p->o->poll_interval_ms);
    job_view_release(&v);
    return GW_OK;
  }
  struct op_record r;
  enum op_verdict verdict = op_record_check(p->ctx, &op, pm_service_account(p), &r);
  if(verdict == OPV_ERROR) {
    edit_event(&p->ed, EV_WARNING, "ResultReadFailed", "operation %s: reading its result "
               "failed and is tried again: %s", op.id, r.why);
    edit_requeue(&p->ed, PM_ERROR_RETRY_MS);
  } else if(verdict == OPV_ACCEPTED) {
    settle(p, &op, &r);
  } else {
    no_result(p, &op, &v, &r);
  }
  op_record_release(&r);
  job_view_release(&v);
  return GW_OK;
}
