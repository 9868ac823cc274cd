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

/* The Job ended (or vanished) without an accepted record. */
static void no_result(struct pm *p, struct ptah_op *op, const struct job_view *v,
                      const struct op_record *r)
{
  if(op_runner_refused(&p->host, op, v))
    return;
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
    op_pod_refusal(p->ctx, op->job, refused, sizeof(refused));
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

gw_rc pm_drive(struct pm *p)
{
  struct ptah_op op;
  if(!op_read(p->obj, &op))
    return GW_OK;
  if(p->phase != PM_MIGRATING)
    edit_phase(&p->ed, PM_MIGRATING);
  if(!op.dispatched)
    return op_dispatch(&p->host, &op);
  struct job_view v;
  if(!op_await_job(&p->host, &op, &v))
    return GW_OK;
  struct op_record r;
  enum op_verdict verdict = op_read_result(&p->host, &op, &v, &r);
  if(verdict == OPV_ACCEPTED)
    settle_record(p, &op, &r);
  else if(verdict != OPV_ERROR)
    no_result(p, &op, &v, &r);
  op_record_release(&r);
  job_view_release(&v);
  return GW_OK;
}
