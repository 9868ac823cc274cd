/* drive.c: driving one Ptah operation, the part both kinds share (drive.h). */
#include "drive.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "json.h"

void op_ready(const struct op_host *h, const char *status, const char *reason, const char *fmt,
              ...)
{
  va_list ap;
  va_start(ap, fmt);
  edit_vcond(h->ed, C_READY, status, reason, fmt, ap);
  va_end(ap);
}

gw_rc op_dispatch(const struct op_host *h, struct ptah_op *op)
{
  time_t now = time(NULL);
  if(op->not_before > now) {
    edit_requeue(h->ed, (long)(op->not_before - now) * 1000);
    return GW_OK;
  }
  char binding[sizeof(op->binding)];
  op_binding(h->obj, h->o, binding, sizeof(binding));
  if(*op->binding && strcmp(binding, op->binding)) {
    /* the evidence would be produced under another executor: the claim is discarded, and
     * the next pass claims afresh under the new binding */
    edit_unset(h->ed, "operation");
    edit_event(h->ed, EV_WARNING, "ExecutionBindingChanged", "operation %s was claimed under "
               "%s and the manager now runs %s: the claim is discarded before dispatch, and a "
               "new one is made", op->id, op->binding, binding);
    op_ready(h, COND_FALSE, "ExecutionBindingChanged", "operation %s was discarded: its "
             "execution binding changed (%s, now %s)", op->id, op->binding, binding);
    edit_requeue(h->ed, 1);
    return GW_OK;
  }
  char d[80];
  gw_rc rc = h->digest(h->self, op, false, d, sizeof(d));
  if(rc)
    return rc;
  if(*op->tdigest && strcmp(d, op->tdigest)) {
    if(op->refreshed) {
      /* the template moved again: the claim retires, and the next pass claims afresh */
      edit_unset(h->ed, "operation");
      op_ready(h, COND_FALSE, "ClaimRetired", "operation %s was retired before dispatch: the "
               "Pod template it would run changed again (%s, now %s) after its snapshot was "
               "resolved once; a new claim is made", op->id, op->tdigest, d);
      edit_requeue(h->ed, 1);
      return GW_OK;
    }
    edit_event(h->ed, EV_NORMAL, "AdmissionSnapshotRefreshed", "operation %s had not "
               "dispatched and the Pod template it would run changed (%s, now %s), usually a "
               "new manager release; the snapshot was resolved again", op->id, op->tdigest, d);
    snprintf(op->tdigest, sizeof(op->tdigest), "%s", d);
    op->refreshed = true;
  }
  rc = h->digest(h->self, op, true, op->jdigest, sizeof(op->jdigest));
  if(rc)
    return rc;
  bool created = false;
  rc = h->create(h->self, op, &created);
  if(rc) {
    op_ready(h, COND_FALSE, h->busy_reason, "operation %s: cannot create Job %s yet (%s); "
             "trying again", op->id, op->job, gw_strerror(rc));
    edit_requeue(h->ed, OP_ERROR_RETRY_MS);
    return GW_OK;
  }
  op->dispatched = true;
  op_write(h->ed, h->obj, op);
  char detail[512] = "";
  if(h->detail)
    h->detail(h->self, op, detail, sizeof(detail));
  edit_event_if_written(h->ed, EV_NORMAL, "OperationStarted", "Job %s was created for "
                        "operation %s (%s, attempt %d)%s%s", op->job, op->id, op->type,
                        op->attempt, *detail ? ": " : "", detail);
  op_ready(h, COND_FALSE, h->busy_reason, "operation %s runs in Job %s (attempt %d)", op->id,
           op->job, op->attempt);
  edit_requeue(h->ed, h->o->poll_interval_ms);
  return GW_OK;
}

void op_watch_running(const struct op_host *h, const struct ptah_op *op,
                      const struct job_view *v)
{
  char refused[1024] = "";
  if(rj_refusal_due(v))
    op_pod_refusal(h->ctx, op->job, refused, sizeof(refused));
  if(*refused) {
    op_ready(h, COND_FALSE, "PodAdmissionRefused", "operation %s: the API server refuses the "
             "runner Pod of Job %s: %s; the Job keeps its deadline", op->id, op->job, refused);
    edit_event_if_cond(h->ed, C_READY, EV_WARNING, "PodAdmissionRefused", "Job %s cannot "
                       "create the runner Pod of operation %s: %s. The Job keeps its "
                       "deadline and keeps trying; declare what the Pod has to carry in "
                       "spec.execution.podMetadata, or change the policy", op->job, op->id,
                       refused);
  } else if(*v->waiting) {
    op_ready(h, COND_FALSE, h->busy_reason, "operation %s: the runner Pod cannot start: %s",
             op->id, v->waiting);
  }
  edit_requeue(h->ed, h->o->poll_interval_ms);
}

enum op_verdict op_read_result(const struct op_host *h, const struct ptah_op *op,
                               const struct job_view *v, struct op_record *r)
{
  enum op_verdict verdict =
    op->legacy ? op_legacy_read(h->ctx, op, v, h->o->log_window_ms, r)
               : op_record_check(h->ctx, op, op_service_account(h->obj), r);
  if(verdict == OPV_TIMEOUT) {
    edit_event(h->ed, EV_WARNING, "ResultReadTimedOut", "operation %s: reading its result "
               "exceeded its time bound and is tried again: %s", op->id, r->why);
    edit_requeue(h->ed, OP_ERROR_RETRY_MS);
    return OPV_ERROR;
  }
  if(verdict == OPV_ERROR) {
    edit_event(h->ed, EV_WARNING, "ResultReadFailed", "operation %s: reading its result "
               "failed and is tried again: %s", op->id, r->why);
    edit_requeue(h->ed, OP_ERROR_RETRY_MS);
  }
  return verdict;
}

void op_again_later(const struct op_host *h, struct ptah_op *op, long wait_ms, bool refused)
{
  op->attempt++;
  if(refused)
    op->refused++;
  op_job_name(op->id, op->attempt, op->job, sizeof(op->job));
  op->dispatched = false;
  op->not_before = time(NULL) + (wait_ms + 999) / 1000;
  op_write(h->ed, h->obj, op);
  edit_requeue(h->ed, wait_ms);
}

bool op_runner_refused(const struct op_host *h, struct ptah_op *op, const struct job_view *v)
{
  const char *res = job_report_result(v);
  if(res && !strcmp(res, "ProtocolMismatch")) {
    const char *speaks = json_get_str(v->report, "protocol");
    const char *asked = json_get_str(v->report, "requested");
    long wait_s = (h->o->failure_interval_ms + 999) / 1000;
    edit_event(h->ed, EV_WARNING, "RunnerProtocolMismatch", "operation %s: the runner of Job "
               "%s (image %s) speaks protocol \"%s\", this manager asks for \"%s\"; it "
               "refused the Job before starting, and it is tried again in %ld s", op->id,
               op->job, op_image(h->obj, h->o), speaks ? speaks : "?", asked ? asked : "?",
               wait_s);
    op_ready(h, COND_FALSE, "RunnerProtocolMismatch", "the runner image speaks protocol "
             "\"%s\", this manager asks for \"%s\": run a runner image of this godwit release "
             "(spec.execution.runnerImage, or the controller's --runner-image)",
             speaks ? speaks : "?", asked ? asked : "?");
    op_again_later(h, op, h->o->failure_interval_ms, true);
    return true;
  }
  if(res && !strcmp(res, "CredentialFailed")) {
    const char *why = json_get_str(v->report, "message");
    /* the n-th refusal in a row waits 2 s doubling, at most the failure interval */
    int n = op->refused < 8 ? op->refused : 8;
    long wait = h->o->retry_base_ms << n;
    if(wait > h->o->failure_interval_ms)
      wait = h->o->failure_interval_ms;
    edit_event(h->ed, EV_WARNING, "ResultCredentialFailed", "operation %s: the runner of Job "
               "%s could not prove it can deliver its result, so it ran nothing; tried again in "
               "%ld s (check the service account %s and its RoleBinding to the ClusterRole "
               "godwit-runner, and admission refusals): %s", op->id, op->job,
               (wait + 999) / 1000, op_service_account(h->obj), why ? why : "");
    op_ready(h, COND_FALSE, "ResultCredentialFailed", "operation %s waits for a runner that can "
             "deliver its result: %s", op->id, why ? why : "");
    op_again_later(h, op, wait, true);
    return true;
  }
  return false;
}

/* A Job that never started a Pod while the spec moved on (a fixed service account, Pod
 * metadata a policy asks for): it is cleaned up and the claim retired, so the operation goes on
 * under the spec as it is now. The Job is suspended first (no new Pod), then deleted once it
 * shows no Pod and none ended: nothing ran. A cleanup that cannot be scheduled leaves the Job to
 * its own deadline (MigrationJobCleanupDeferred, a PtahMigration's Event; a PtahSchema's says it
 * in Ready). */
bool op_stale_job(const struct op_host *h, const struct ptah_op *op, const struct job_view *v)
{
  char d[80];
  if(!*op->jdigest || h->digest(h->self, op, true, d, sizeof(d)) || !strcmp(d, op->jdigest))
    return false;
  gw_rc rc = v->suspended ? rj_delete(h->owner, op->job) : rj_suspend(h->owner, op->job);
  if(rc) {
    if(!strcmp(h->owner->kind, "PtahMigration"))
      edit_event(h->ed, EV_WARNING, "MigrationJobCleanupDeferred", "Job %s of operation %s no "
                 "longer matches the spec and could not be %s (%s); it keeps its own deadline "
                 "(%ld s) rather than relying on a cleanup", op->job, op->id,
                 v->suspended ? "deleted" : "suspended", gw_strerror(rc), h->o->job_deadline_s);
    edit_requeue(h->ed, h->o->poll_interval_ms);
    return false; /* the refusal is still reported by the caller */
  }
  if(!v->suspended) {
    edit_requeue(h->ed, 500); /* deleted once it shows no Pod */
    return true;
  }
  edit_unset(h->ed, "operation");
  op_ready(h, COND_FALSE, "ClaimRetired", "operation %s was retired: its Job %s never started a "
           "Pod and the spec changed since; a new one follows under the current spec", op->id,
           op->job);
  edit_requeue(h->ed, 1);
  return true;
}

bool op_await_job(const struct op_host *h, const struct ptah_op *op, struct job_view *v)
{
  gw_rc rc = op_job_view(h->owner, op->job, v);
  if(rc) {
    edit_requeue(h->ed, OP_ERROR_RETRY_MS);
    return false;
  }
  bool handled = false;
  if(v->state == JOB_PENDING && !*v->pod && v->pods_ended == 0)
    handled = op_stale_job(h, op, v);
  if(!handled && (v->state == JOB_PENDING || v->state == JOB_RUNNING ||
                  v->state == JOB_DELETING)) {
    op_watch_running(h, op, v);
    handled = true;
  }
  if(handled)
    job_view_release(v);
  return !handled;
}
