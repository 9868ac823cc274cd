/*
 * drive.h: driving one Ptah operation, the part both kinds share (op.h is the claim and the
 * record). A kind describes itself once (struct op_host) and its reconciler calls:
 *
 *   op_dispatch()      the claim's Job is created: the binding and the admission snapshot are
 *                      checked first (ExecutionBindingChanged, AdmissionSnapshotRefreshed,
 *                      ClaimRetired), then OperationStarted with the write that records it;
 *   op_watch_running() while the Job has not ended: PodAdmissionRefused, a Pod that cannot start;
 *   op_read_result()   the record read and checked (ResultReadFailed, ResultReadTimedOut);
 *   op_runner_refused() the runner refused before it ran anything (RunnerProtocolMismatch,
 *                      ResultCredentialFailed): the same operation, a new attempt, later;
 *   op_stale_job()     a Job that never started a Pod while the spec moved on is cleaned up.
 *
 * What a result means is the kind's: a PtahMigration's Apply run, a PtahSchema's Plan, Apply or
 * Observe.
 */
#ifndef GW_CTRL_PTAH_DRIVE_H
#define GW_CTRL_PTAH_DRIVE_H

#include "op.h"
#include "ptah.h"

#define OP_ERROR_RETRY_MS 2000 /* an API error: look again */

struct op_host {
  struct rec_ctx *ctx;
  struct status_edit *ed;
  const cJSON *obj;
  const struct ptah_opts *o;
  const struct rj_owner *owner;
  const char *busy_reason; /* Ready's reason while an operation runs ("Migrating", ...) */
  void *self;
  /* the admission snapshot of op (full: the whole Pod template) */
  gw_rc (*digest)(void *self, const struct ptah_op *op, bool full, char *out, size_t len);
  gw_rc (*create)(void *self, const struct ptah_op *op, bool *created);
  /* what OperationStarted says of op after "(<type>, attempt <n>)" ("" for nothing) */
  void (*detail)(void *self, const struct ptah_op *op, char *buf, size_t len);
};

/* The kind's Ready condition, on h->ed. */
void op_ready(const struct op_host *h, const char *status, const char *reason, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));
gw_rc op_dispatch(const struct op_host *h, struct ptah_op *op) GW_MUST_CHECK;
void op_watch_running(const struct op_host *h, const struct ptah_op *op,
                      const struct job_view *v);
/* OPV_ACCEPTED, OPV_REJECTED or OPV_NONE for the caller; read errors are handled here (Event,
 * requeue) and returned as OPV_ERROR. */
enum op_verdict op_read_result(const struct op_host *h, const struct ptah_op *op,
                               const struct job_view *v, struct op_record *r);
/* true when the runner refused the Job before it ran anything (handled: a new attempt later). */
bool op_runner_refused(const struct op_host *h, struct ptah_op *op, const struct job_view *v);
/* The same operation, a new attempt's Job after wait_ms; refused: the runner never ran it (the
 * attempts a backoff limit counts are not spent). */
void op_again_later(const struct op_host *h, struct ptah_op *op, long wait_ms, bool refused);
/* The dispatched operation's Job: true when it has ended (or is gone) and *v holds it (the
 * caller releases it); false when this pass ends here: an API error (a requeue), a stale Job
 * cleaned up, or a Job still running (op_watch_running), *v released. */
bool op_await_job(const struct op_host *h, const struct ptah_op *op, struct job_view *v);
/* true: handled (the pass ends here). */
bool op_stale_job(const struct op_host *h, const struct ptah_op *op, const struct job_view *v);

#endif
