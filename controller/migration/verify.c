/* The step "verify" (the <name>-verify-<n> Job, once the worker drained to the end position):
 * proves the drain and syncs the sequences; DrainIncomplete (terminal, slot kept) when it is
 * refuted. CutoverCompleted=True DrainVerified follows in the live tail (reconcile.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

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

enum step_outcome mig_step_verify(struct mig *m)
{
  if(!strcmp(step_result(m->obj, "verify"), "Passed"))
    return STEP_PASSED;
  struct step_run r = { .step = "verify", .max_attempts = m->o->step_attempts };
  enum step_outcome o = mig_step_drive(m, &r, render_verify, NULL);
  const cJSON *drained = json_get(r.v.report, "drained");
  enum step_outcome out = STEP_WAIT;
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
    step_record(&m->ed, "verify", r.attempt, "Passed", msg);
    out = STEP_PASSED; /* proven: the next steps go on in this pass, one write for all */
  } else if(o == STEP_PASSED || o == STEP_FAILED) {
    step_record(&m->ed, "verify", r.attempt, "Failed", r.message);
    edit_cond(&m->ed, C_CUTOVER, COND_FALSE, "DrainIncomplete",
             "drain verification did not show the target holding every change: %s; do not "
             "switch applications to the target; the replication slot %s is kept", r.message,
             m->slot);
    mig_fail(m, "DrainIncomplete",
             "cutover drain verification refuted completeness: %s; the replication slot %s is "
             "kept, so the data stays recoverable (see the verify Job's log)", r.message,
             m->slot);
    out = STEP_FAILED;
  }
  step_run_release(&r);
  return out;
}

/* CutoverCompleted=True DrainVerified, with the verify step's message. */
enum step_outcome mig_step_cutover_completed(struct mig *m)
{
  if(cond_is_true(m->obj, C_CUTOVER))
    return STEP_PASSED;
  /* the proof's message: of this pass (queued), or of an earlier one */
  const char *msg = cJSON_GetStringValue(edit_queued(&m->ed, "steps.verify.message"));
  if(!msg)
    msg = json_get_str(m->obj, "status.steps.verify.message");
  edit_cond(&m->ed, C_CUTOVER, COND_TRUE, "DrainVerified", "%s",
            msg ? msg : "the drain is proven");
  return STEP_PASSED;
}
