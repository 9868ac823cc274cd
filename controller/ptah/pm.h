/*
 * pm.h: the PtahMigration reconciler's own header (ptah.h is the public one). One reconcile:
 * read the object from the cache; restore an unresolved run from its annotation; then one of
 * drive the operation in flight (run.c), settle an unresolved run (unresolved.c), or decide
 * whether a run is due and claim it (plan.c); write the status once (edit.h), then the actions
 * that go after the write (the annotation, an acknowledgment's status).
 *
 * Phases (shared/api/ptahmigration.c): Pending, Migrating, UpToDate, Uncertain, Failed. Failed
 * is not absorbing: a run is claimed again when its inputs change (a new ConfigMap content,
 * target or history table), as a new release of the application brings.
 * Condition Ready (kstatus, Flux, Argo CD): True only in UpToDate.
 */
#ifndef GW_CTRL_PTAH_PM_H
#define GW_CTRL_PTAH_PM_H

#include <cJSON.h>
#include <stdbool.h>

#include "../edit.h"
#include "../manager.h"
#include "../runjob.h"
#include "drive.h"
#include "op.h"
#include "ptah.h"

enum pm_phase { PM_PENDING, PM_MIGRATING, PM_UPTODATE, PM_UNCERTAIN, PM_FAILED, PM_COUNT };

#define PM_LABEL "ptah.run/migration"                     /* on Jobs and Pods: the owner */
#define PM_UNRESOLVED_ANNOTATION "operator.ptah.run/unresolved-run"
#define PM_FINALIZER "ptah.run/unresolved-run" /* while a run may be or is unresolved */
#define PM_MIGRATIONS_MOUNT "/ptah/migrations"
#define PM_DEFAULT_BACKOFF_LIMIT 3

extern const struct phase_table pm_phases;

struct pm {
  struct rec_ctx *ctx;
  const struct ptah_opts *o;
  cJSON *obj;
  const char *ns, *name;
  char uid[64];
  int phase;
  int backoff_limit;
  struct status_edit ed;
  struct rj_owner owner;
  struct op_host host; /* drive.h: this PtahMigration as the operation's host */
  /* after the status write */
  cJSON *set_annotation; /* the unresolved run to copy into the annotation */
  bool clear_annotation;
  char accept_ack[256];  /* an acknowledgment to mark Accepted */
};

/* Ready=status with reason and message. */
void pm_ready(struct pm *p, const char *status, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* plan.c: what the ConfigMap holds, and whether a run is due (then its claim). */
struct pm_inputs {
  bool found;          /* the ConfigMap exists */
  long long latest;    /* its highest version */
  long long target;    /* spec.targetVersion, or latest */
  char digest[80];     /* of the migrations, the target and the history table */
};
gw_rc pm_inputs_read(struct pm *p, struct pm_inputs *in) GW_MUST_CHECK;
gw_rc pm_plan(struct pm *p) GW_MUST_CHECK;

/* job.c: the operation's Job (rendered the same way every time, so its digest is the claim's
 * admission snapshot). */
gw_rc pm_job_digest(struct pm *p, const struct ptah_op *op, char *out, size_t len) GW_MUST_CHECK;
/* The digest of the whole rendered Pod template (what pm_job_digest leaves out too: the service
 * account, volumes). */
gw_rc pm_job_full_digest(struct pm *p, const struct ptah_op *op, char *out, size_t len)
  GW_MUST_CHECK;
gw_rc pm_job_create(struct pm *p, const struct ptah_op *op, bool *created) GW_MUST_CHECK;
const char *pm_service_account(const struct pm *p);
/* The execution binding operations are claimed under now (op.h: binding). */
void pm_binding(const struct pm *p, char *buf, size_t len);

/* run.c: the operation in flight. */
gw_rc pm_drive(struct pm *p) GW_MUST_CHECK;

/* unresolved.c */
void pm_uncertain(struct pm *p, const struct ptah_op *op, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
gw_rc pm_unresolved(struct pm *p) GW_MUST_CHECK;
/* The annotation's copy put back into a status that lost it (UnresolvedRunRestored). */
void pm_restore(struct pm *p);
/* metrics.c: the per-PtahMigration series (ctx: the PtahMigration informer). */
struct strbuf;
gw_rc pm_metrics(void *ctx, struct strbuf *sb) GW_MUST_CHECK;

/* The writes that follow the status write (the annotation, the finalizer, an acknowledgment's
 * status). */
void pm_after_commit(struct pm *p);
/* A deleted PtahMigration: a run in flight is waited for and settled; an unresolved run is
 * recorded as discarded (UnresolvedRunDiscarded); then the finalizer lets go. */
gw_rc pm_finalize(struct pm *p) GW_MUST_CHECK;

#endif
