/* spec.suspend: the running worker (and a running handover, preflight or version probe) deleted,
 * the work volume kept, phase Suspended with suspendedFrom, Events Suspended and (live)
 * SlotRetained; back to false, the phase it was in, and the next worker resumes from the work
 * dir. A suspension is not a failed
 * attempt: the same attempt number runs again. See docs/dev/migration-controller.md, step 9. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

/* Deletes the Job of step/attempt when it is still running; *deleted says so. */
static gw_rc stop(struct mig *m, const char *step, int attempt, bool *deleted)
{
  *deleted = false;
  if(attempt < 1)
    return GW_OK;
  struct job_view v;
  gw_rc rc = mig_job_get(m, step, attempt, &v);
  if(!rc && (v.state == JOB_PENDING || v.state == JOB_RUNNING)) {
    rc = mig_job_delete(m, step, attempt);
    *deleted = !rc;
  }
  job_view_release(&v);
  return rc;
}

/* Deletes the running Job of a runner step (its result not in yet); *deleted says so. */
static gw_rc stop_step(struct mig *m, const char *step, bool *deleted)
{
  *deleted = false;
  const char *res = step_result(m->obj, step);
  if(*res && strcmp(res, "Running"))
    return GW_OK;
  return stop(m, step, step_attempt(m->obj, step), deleted);
}

gw_rc mig_suspend(struct mig *m)
{
  int n = (int)mig_status_int(m, "attempts", 0);
  bool worker = false, reown = false, probe = false, preflight = false;
  gw_rc rc = stop(m, "worker", n, &worker);
  /* Validating's Jobs too: a preflight left running could still apply grants (remediation)
   * while the Migration says Suspended; it runs again, same attempt, on resume */
  if(!rc)
    rc = stop_step(m, "probe", &probe);
  if(!rc)
    rc = stop_step(m, "preflight", &preflight);
  if(preflight || probe) {
    const char *which = preflight ? "preflight" : "probe";
    char job[96];
    job_name(m, which, step_attempt(m->obj, which), job, sizeof(job));
    edit_cond(&m->ed, C_VALIDATED, COND_UNKNOWN, "PreflightRunning",
              "spec.suspend deleted the running Job %s before it finished; it runs again on "
              "resume", job);
  }
  int r = step_attempt(m->obj, "reown");
  if(!rc)
    rc = stop_step(m, "reown", &reown);
  if(worker && mig_status_int(m, "workerStarted", 0) < n)
    edit_set_int(&m->ed, "workerStarted", n); /* its re-run resumes from the work dir */
  if(reown) {
    char job[96];
    job_name(m, "reown", r, job, sizeof(job));
    edit_cond(&m->ed, C_OWNERSHIP, COND_UNKNOWN, "OwnershipSuspended",
             "spec.suspend deleted the running handover Job %s; it re-runs on resume and picks "
             "up the statements that are left", job);
  }
  if(m->phase != MP_SUSPENDED) {
    edit_set_str(&m->ed, "suspendedFrom", mig_phase_name(m->phase));
    edit_phase(&m->ed, MP_SUSPENDED);
    char claim[96];
    snprintf(claim, sizeof(claim), "%s-workdir", m->name);
    edit_event_if_phase(&m->ed, EV_NORMAL, "Suspended",
                       "spec.suspend: %s%s%s; the work volume %s is kept and the next worker "
                       "resumes from it", n > 0 ? "deleted the worker" : "holding before the "
                       "copy started", reown ? " and the running handover Job" : "",
                       preflight ? " (the running preflight Job deleted: it runs again on "
                       "resume)" : probe ? " (the running version probe Job deleted)" : "",
                       claim);
    if(m->live && n > 0 && *m->slot)
      edit_event_if_phase(&m->ed, EV_WARNING, "SlotRetained",
                         "the suspended live migration keeps its replication slot %s, which "
                         "holds WAL on the source until it resumes or is deleted; watch the "
                         "source's disk", m->slot);
  }
  if(worker || reown || probe || preflight)
    edit_requeue(&m->ed, 1000); /* make sure they are gone */
  return rc;
}

gw_rc mig_resume(struct mig *m)
{
  enum mig_phase to = mig_phase_parse(mig_status_str(m, "suspendedFrom"));
  if(to == MP_NONE || to == MP_SUSPENDED)
    to = MP_PENDING; /* never happens with our own writes; Pending starts over safely */
  edit_phase(&m->ed, to);
  edit_unset(&m->ed, "suspendedFrom");
  if(to == MP_CLONING || to == MP_FINALIZING) {
    /* a new run of the attempt: CopyingData again once its COPY workers are seen */
    edit_set_bool(&m->ed, "copyingDataSeen", false);
    if(!cond_is_true(m->obj, C_CLONE))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt %lld resumes after the "
               "suspension", mig_status_int(m, "attempts", 1));
  }
  const char *own = cond_reason(m->obj, C_OWNERSHIP);
  if(own && !strcmp(own, "OwnershipSuspended"))
    edit_cond(&m->ed, C_OWNERSHIP, COND_UNKNOWN, "OwnershipRunning",
             "the handover re-runs after the suspension and picks up the statements that are "
             "left");
  edit_requeue(&m->ed, 1);
  return GW_OK;
}
