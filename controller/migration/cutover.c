/* CutoverPending (Manual: wait for spec.cutover.approved; Automatic: at once) and CuttingOver:
 * the cutover Job sets the end position (CutoverStarted, CutoverRetry), the worker drains to it
 * and exits 0, the verify Job proves the drain and syncs the sequences (DrainVerified or
 * DrainIncomplete), the handover, the cleanup Job, then Verifying or Completed. See
 * docs/dev/migration-controller.md, steps 4 and 5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

static void render_cutover(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "cutover", attempt);
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  mig_arg(a, "--slot-name");
  mig_arg(a, m->slot);
  s->source = s->target = s->workdir = true;
}

static void render_verify(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "verify", attempt);
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  mig_arg(a, "--end-lsn");
  mig_arg(a, mig_status_str(m, "cutoverLSN"));
  mig_arg(a, "--origin");
  mig_arg(a, m->slot);
  s->source = s->target = s->workdir = true;
}

static void pending(struct mig *m)
{
  if(!cond_is_true(m->obj, C_CAUGHT_UP))
    return; /* the lag moved above the threshold again: wait for two samples */
  const char *mode = json_get_str(m->obj, "spec.cutover.mode");
  bool automatic = mode && !strcmp(mode, "Automatic");
  if(!automatic && !cJSON_IsTrue(json_get(m->obj, "spec.cutover.approved")))
    return; /* an approval changes the spec, which reconciles */
  mig_set_phase(m, MP_CUTTING_OVER);
  mig_requeue(m, 1);
}

/* Sets the end position; true once it is set. */
static bool set_end(struct mig *m, enum worker_state ws)
{
  if(!strcmp(mig_step_result(m, "cutover"), "Passed"))
    return true;
  if(ws != W_RUNNING) {
    mig_requeue(m, m->o->poll_interval_ms);
    return false; /* the stream is not running (a retry is starting): set it once it runs */
  }
  struct step_run r = { .step = "cutover", .max_attempts = m->backoff_limit + 1 };
  enum step_outcome o = mig_step_drive(m, &r, render_cutover, NULL);
  if(o == STEP_WAIT && r.retried)
    mig_event_if_written(m, EV_WARNING, "CutoverRetry",
                         "setting the cutover LSN failed transiently (%s); retried on the next "
                         "pass", r.message);
  if(o == STEP_PASSED) {
    const char *lsn = json_get_str(r.v.report, "endLSN");
    if(lsn && *lsn) {
      mig_set_str(m, "cutoverLSN", lsn);
      mig_step_set(m, "cutover", r.attempt, "Passed", r.message);
      mig_event_if_written(m, EV_NORMAL, "CutoverStarted",
                           "the cutover LSN is %s; the stream is frozen and draining to it", lsn);
      mig_requeue(m, m->o->poll_interval_ms);
    } else {
      o = STEP_FAILED;
      snprintf(r.message, sizeof(r.message), "the cutover Job reported no endLSN");
    }
  }
  if(o == STEP_FAILED) {
    mig_step_set(m, "cutover", r.attempt, "Failed", r.message);
    mig_fail(m, "BackoffLimitExceeded",
             "setting the cutover LSN failed %d times; the last: %s; the replication slot %s "
             "is kept", r.attempt, r.message, m->slot);
  }
  step_run_release(&r);
  return false;
}

/* The verify Job: true once the drain is proven (recorded), false while waiting or when it was
 * refuted (recorded, terminal). */
static bool drain(struct mig *m)
{
  if(!strcmp(mig_step_result(m, "verify"), "Passed"))
    return true;
  struct step_run r = { .step = "verify", .max_attempts = m->o->step_attempts };
  enum step_outcome o = mig_step_drive(m, &r, render_verify, NULL);
  const cJSON *drained = json_get(r.v.report, "drained");
  if(o == STEP_PASSED && !cJSON_IsFalse(drained)) {
    bool exact = cJSON_IsTrue(json_get(r.v.report, "exact"));
    const char *origin = json_get_str(r.v.report, "originLSN");
    char msg[1024];
    if(exact)
      snprintf(msg, sizeof(msg), "the target's replication origin progress sits exactly on the "
               "cutover LSN %s; changes applied, sequences synced",
               mig_status_str(m, "cutoverLSN") ? mig_status_str(m, "cutoverLSN") : "");
    else
      snprintf(msg, sizeof(msg), "a data compare found every migrated table matching (origin "
               "progress %s, cutover LSN %s); changes applied, sequences synced",
               origin ? origin : "unknown",
               mig_status_str(m, "cutoverLSN") ? mig_status_str(m, "cutoverLSN") : "");
    mig_step_set(m, "verify", r.attempt, "Passed", msg);
    mig_requeue(m, 1);
  } else if(o == STEP_PASSED || o == STEP_FAILED) {
    mig_step_set(m, "verify", r.attempt, "Failed", r.message);
    mig_cond(m, C_CUTOVER, COND_FALSE, "DrainIncomplete",
             "drain verification did not show the target holding every change: %s; do not "
             "switch applications to the target; the replication slot %s is kept", r.message,
             m->slot);
    mig_fail(m, "DrainIncomplete",
             "cutover drain verification refuted completeness: %s; the replication slot %s is "
             "kept, so the data stays recoverable (see the verify Job's log)", r.message,
             m->slot);
  }
  step_run_release(&r);
  return false;
}

void mig_cutover(struct mig *m, enum worker_state ws)
{
  if(m->phase == MP_CUTOVER_PENDING) {
    pending(m);
    return;
  }
  if(m->phase != MP_CUTTING_OVER || !set_end(m, ws))
    return;
  if(ws != W_SUCCEEDED) {
    mig_requeue(m, m->o->poll_interval_ms); /* draining to the end position */
    return;
  }
  if(!drain(m))
    return;
  if(mig_ownership(m) != STEP_PASSED)
    return;
  if(!cond_is_true(m->obj, C_CUTOVER)) {
    const char *msg = json_get_str(m->obj, "status.steps.verify.message");
    mig_cond(m, C_CUTOVER, COND_TRUE, "DrainVerified", "%s", msg ? msg : "the drain is proven");
    mig_requeue(m, 1);
    return;
  }
  if(mig_cleanup(m, false) == STEP_WAIT)
    return;
  mig_finish(m);
}
