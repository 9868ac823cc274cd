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
  [MP_CUTOVER_PENDING] = B(MP_CUTTING_OVER) | B(MP_SUSPENDED),
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

gw_rc mig_commit(struct mig *m)
{
  gw_rc rc = edit_commit(&m->ed, m->ctx, &m->obj);
  if(!rc)
    m->phase = mig_phase_parse(json_get_str(m->obj, "status.phase"));
  return rc;
}
