/* spec.clone.ownerAfterRestore: the <name>-reown Job (<name>-reown-<n> for a retry) hands every
 * object the migration role restored over to the owner, after the worker exited (clone) or the
 * drain was proven (live). OwnershipStarted, OwnershipRunning, OwnershipApplied (condition and
 * Event), OwnershipFailed (terminal). Suspension deletes a running handover (suspend.c:
 * OwnershipSuspended). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

static void render(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "reown", attempt);
  mig_arg(a, "--owner");
  mig_arg(a, json_get_str(m->obj, "spec.clone.ownerAfterRestore"));
  s->target = true;
}

/* The last lines of the handover's log: the missing role, or the exact GRANT. */
static void last_lines(struct mig *m, const char *pod, char *buf, size_t len)
{
  buf[0] = '\0';
  char *tail = NULL;
  if(!rj_log_tail(&m->owner, pod, MIG_TAIL_REOWN, &tail) && tail) {
    size_t n = strlen(tail);
    while(n && tail[n - 1] == '\n')
      tail[--n] = '\0';
    for(char *p = tail; *p; p++)
      if(*p == '\n')
        *p = ' ';
    snprintf(buf, len, "%s", tail);
  }
  free(tail);
}

enum step_outcome mig_step_reown(struct mig *m)
{
  const char *owner = json_get_str(m->obj, "spec.clone.ownerAfterRestore");
  if(!owner || !*owner)
    return STEP_PASSED;
  const char *res = step_result(m->obj, "reown");
  if(!strcmp(res, "Passed"))
    return STEP_PASSED;
  if(!strcmp(res, "Failed"))
    return STEP_FAILED;
  struct step_run r = { .step = "reown", .max_attempts = m->o->step_attempts,
                        .started_reason = "OwnershipStarted",
                        .started_fmt = "handover Job attempt %d created" };
  enum step_outcome o = mig_step_drive(m, &r, render, NULL);
  if(o == STEP_WAIT || o == STEP_ERROR) {
    const char *reason = cond_reason(m->obj, C_OWNERSHIP);
    if(!reason || strcmp(reason, "OwnershipSuspended") || !m->suspend) {
      char job[96];
      job_name(m, "reown", r.attempt, job, sizeof(job));
      edit_cond(&m->ed, C_OWNERSHIP, COND_UNKNOWN, "OwnershipRunning",
               "the handover Job %s is running: objects the migration role owns become %s's",
               job, owner);
    }
  } else if(o == STEP_PASSED) {
    step_record(&m->ed, "reown", r.attempt, "Passed", r.message);
    edit_cond(&m->ed, C_OWNERSHIP, COND_TRUE, "OwnershipApplied",
             "every schema, relation, routine and type the migration role owned in the target "
             "database now belongs to %s", owner);
    edit_event_if_cond(&m->ed, C_OWNERSHIP, EV_NORMAL, "OwnershipApplied",
                      "the handover finished; the restored objects belong to %s", owner);
    edit_requeue(&m->ed, 1);
  } else {
    char lines[1024];
    last_lines(m, r.v.pod, lines, sizeof(lines));
    step_record(&m->ed, "reown", r.attempt, "Failed", r.message);
    edit_cond(&m->ed, C_OWNERSHIP, COND_FALSE, "OwnershipFailed",
             "the handover Job failed after %d attempts (%s); the data is on the target; its "
             "last lines: %s", r.attempt, r.message, *lines ? lines : "(no log)");
    mig_fail(m, "OwnershipFailed",
             "the ownership handover to %s failed; the data is on the target: finish it by hand "
             "with the statements in the Job log: %s", owner, *lines ? lines : r.message);
  }
  step_run_release(&r);
  return o == STEP_ERROR ? STEP_WAIT : o;
}
