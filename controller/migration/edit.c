/* The Migration's phase table (seed 000; docs/dev/migration-controller.md, "The phase machine"),
 * its terminal outcomes, and the write of one reconcile's edit (controller/edit.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "api/migration.h"
#include "json.h"
#include "mig.h"

#define B(p) PHASE_BIT(p)
/* Rows: from; bits: the phases it may move to. */
static const unsigned transitions[MP_COUNT] = {
  [MP_PENDING] = B(MP_VALIDATING) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_VALIDATING] = B(MP_CLONING) | B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_CLONING] = B(MP_FINALIZING) | B(MP_STREAMING) | B(MP_COMPLETED) | B(MP_FAILED) |
                 B(MP_SUSPENDED),
  [MP_FINALIZING] = B(MP_STREAMING) | B(MP_VERIFYING) | B(MP_COMPLETED) | B(MP_FAILED) |
                    B(MP_SUSPENDED),
  [MP_STREAMING] = B(MP_CUTOVER_PENDING) | B(MP_FAILED) | B(MP_SUSPENDED),
  /* seed 000 lists CuttingOver as the way on; Failed ends it when the worker fails for good
   * (a permission retries cannot fix, the attempts spent) or the spec turns out invalid, as
   * from every other running phase: without it the failure was refused and the Migration
   * stayed CutoverPending with no Failed condition (issue 17) */
  [MP_CUTOVER_PENDING] = B(MP_CUTTING_OVER) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_CUTTING_OVER] = B(MP_VERIFYING) | B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_VERIFYING] = B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_COMPLETED] = 0,
  [MP_FAILED] = 0,
  [MP_SUSPENDED] = 0, /* only to suspendedFrom */
};

/* The names are the API's (shared/api/migration.c), in the order of enum mig_phase. */
const struct phase_table mig_phases = { "Migration",  migration_phases,  transitions,
                                        MP_COUNT,     MP_PENDING,   MP_SUSPENDED,
                                        "suspendedFrom", "startTime" };

const char *mig_phase_name(enum mig_phase p)
{
  return phase_name(&mig_phases, p);
}

enum mig_phase mig_phase_parse(const char *s)
{
  return (enum mig_phase)phase_parse(&mig_phases, s);
}

static char *vfmt(const char *fmt, va_list ap)
{
  char *s = NULL;
  if(vasprintf(&s, fmt, ap) < 0)
    return NULL;
  return s;
}

void mig_fail(struct mig *m, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  edit_cond(&m->ed, C_FAILED, COND_TRUE, reason, "%s", msg ? msg : reason);
  edit_phase(&m->ed, MP_FAILED);
  edit_set_now(&m->ed, "completionTime");
  edit_event_if_cond(&m->ed, C_FAILED, EV_WARNING, reason, "%s", msg ? msg : reason);
  free(msg);
}

void mig_complete(struct mig *m, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  edit_cond(&m->ed, C_COMPLETE, COND_TRUE, reason, "%s", msg ? msg : reason);
  edit_phase(&m->ed, MP_COMPLETED);
  edit_set_now(&m->ed, "completionTime");
  edit_event_if_cond(&m->ed, C_COMPLETE, EV_NORMAL, "Completed", "%s", msg ? msg : "completed");
  free(msg);
}

/* Ready, for readers that know no Migration (kstatus, Flux's wait, Argo CD health, kubectl
 * wait): True once the Migration completed, False with the phase (or the failure's reason)
 * until then. Derived from what this reconcile decided, so it is written with it. */
static void ready(struct mig *m)
{
  int phase = m->ed.phase != PHASE_NONE ? m->ed.phase : (int)m->phase;
  if(phase == PHASE_NONE)
    return;
  const struct edit_cond *q;
  const cJSON *c;
  if(phase == MP_COMPLETED) {
    q = edit_queued_cond(&m->ed, C_COMPLETE);
    c = cond_find(m->obj, C_COMPLETE);
    edit_cond(&m->ed, C_READY, COND_TRUE, q ? q->reason : cond_reason(m->obj, C_COMPLETE) ?
              cond_reason(m->obj, C_COMPLETE) : "MigrationSucceeded", "%s",
              q && q->message ? q->message : json_get_str(c, "message") ?
              json_get_str(c, "message") : "the migration completed");
  } else if(phase == MP_FAILED) {
    q = edit_queued_cond(&m->ed, C_FAILED);
    c = cond_find(m->obj, C_FAILED);
    edit_cond(&m->ed, C_READY, COND_FALSE, q ? q->reason : cond_reason(m->obj, C_FAILED) ?
              cond_reason(m->obj, C_FAILED) : "MigrationFailed", "%s",
              q && q->message ? q->message : json_get_str(c, "message") ?
              json_get_str(c, "message") : "the migration failed");
  } else {
    const char *name = mig_phase_name((enum mig_phase)phase);
    edit_cond(&m->ed, C_READY, COND_FALSE, name, "the migration is %s%s", name,
              phase == MP_CUTOVER_PENDING ? ": it waits for the cutover (spec.cutover)" : "");
  }
}

gw_rc mig_commit(struct mig *m)
{
  ready(m);
  gw_rc rc = edit_commit(&m->ed, m->ctx, &m->obj);
  if(!rc)
    m->phase = mig_phase_parse(json_get_str(m->obj, "status.phase"));
  return rc;
}
