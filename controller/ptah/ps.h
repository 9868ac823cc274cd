/*
 * ps.h: the PtahSchema reconciler (ptah.h is the public header). docs/dev/ptah-controller.md
 * ("PtahSchema") designs it; docs/api/ptah.md is the API.
 *
 * A PtahSchema goes through three operations, each a runner Job (`godwit-runner ptah-plan`) on
 * the operation machinery both kinds share (op.h, drive.h):
 *
 *   Plan     read-only: the desired SQL against the live catalog gives a plan (statements, the
 *            catalog fingerprint, a digest over both and the execution binding), delivered in a
 *            PtahResultRecord that keeps the whole plan; status.plan publishes its digest.
 *   Apply    the plan an approval named (or any, with approval Automatic), under the database
 *            lock: the runner plans again in the locked session and applies only when the digest
 *            is the approved one (else PlanStale, nothing applied).
 *   Observe  read-only, after an Apply whose outcome nobody can tell (ApplyOutcomeUnknown): an
 *            empty plan says it committed, the same digest says it did not, anything else
 *            retires the plan.
 *
 * The desired SQL reaches the Jobs through an immutable ConfigMap the controller makes from the
 * spec (inline SQL or the user's ConfigMap), named after its checksum, so the Plan and the Apply
 * of one plan read the same bytes whatever happens to the source in between.
 *
 * Phases: Pending, Planning, AwaitingApproval, Applying, Observing, Ready, Blocked, Failed.
 * Condition Ready: True only in Ready.
 */
#ifndef GW_CTRL_PTAH_PS_H
#define GW_CTRL_PTAH_PS_H

#include <cJSON.h>
#include <stdbool.h>

#include "../edit.h"
#include "../manager.h"
#include "../runjob.h"
#include "drive.h"
#include "op.h"
#include "ptah.h"

enum ps_phase { PS_PENDING, PS_PLANNING, PS_AWAITING, PS_APPLYING, PS_OBSERVING, PS_READY,
                PS_BLOCKED, PS_FAILED, PS_COUNT };

#define PS_LABEL "ptah.run/schema"     /* on Jobs, Pods and desired-SQL ConfigMaps: the owner */
#define PS_DESIRED_MOUNT "/ptah/desired"
#define PS_DESIRED_KEY "schema.sql"
#define PS_APPLY_ATTEMPTS 3 /* Applies of one plan whose outcome had to be observed */
#define PS_MAX_MARKS 16     /* approvals whose status one pass writes */
#define PS_PLAN_RETRY_MAX_MS 600000L /* a failed plan is planned again at most this late */

extern const struct phase_table ps_phases;

/* An approval's status, written after the schema's own status write. */
struct ps_mark {
  char name[254];
  const char *phase;  /* Accepted, Applied, Stale, Refused */
  const char *reason; /* the Accepted condition's */
  char message[512];
  const char *event;  /* an Event on the approval (ApprovalStale), or NULL */
};

/* The desired SQL as the spec names it now. */
struct ps_desired {
  bool found;
  char why[512];      /* when not found */
  char *sql;          /* malloc'd */
  char checksum[80];  /* sha256:<hex> of sql */
  char copy[254];     /* the immutable ConfigMap the Jobs mount */
  char inputs[80];    /* of a plan: checksum, binding, protected tables, generation */
};

struct ps {
  struct rec_ctx *ctx;
  const struct ptah_opts *o;
  cJSON *obj;
  const char *ns, *name;
  char uid[64];
  int phase;
  struct status_edit ed;
  struct rj_owner owner;
  struct op_host host;
  struct ps_mark marks[PS_MAX_MARKS];
  size_t nmarks;
};

void ps_ready(struct ps *p, const char *status, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void ps_mark(struct ps *p, const cJSON *approval, const char *phase, const char *reason,
             const char *event, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ps_desired.c */
gw_rc ps_desired_read(struct ps *p, struct ps_desired *d) GW_MUST_CHECK;
void ps_desired_release(struct ps_desired *d);
/* The immutable copy the Jobs mount, created when missing. */
gw_rc ps_desired_copy(struct ps *p, const struct ps_desired *d, char *why, size_t len)
  GW_MUST_CHECK;
/* Deletes this schema's desired-SQL copies that neither the plan nor keep names. */
void ps_desired_prune(struct ps *p, const char *keep);

/* ps_verify.c: the effective verification policy. */
struct policy;
struct ps_verify {
  struct policy *pol;     /* the admission policy (the built-in one without a file) */
  const char *pin;        /* spec.verification.sourceDigest */
  bool allow_destructive; /* spec opt-in and the policy's allowance */
  char digest[80];        /* of what verification depends on */
};
/* The admission policy (--admission-policy, read now; the built-in one without or with an
 * unreadable file); NULL only when out of memory. policy_free it. */
struct policy *ps_policy(struct ps *p);
gw_rc ps_verify_load(struct ps *p, struct ps_verify *v) GW_MUST_CHECK;
void ps_verify_release(struct ps_verify *v);
/* true when it passes; else why. */
bool ps_verify_source(const struct ps_verify *v, const struct ps_desired *d, char *why,
                      size_t len);
/* stmts: the record's spec.result.plan.statements (omitted: statementsOmitted). */
bool ps_verify_plan(const struct ps_verify *v, const cJSON *stmts, bool omitted,
                    long long destructive, char *why, size_t len);

/* ps_job.c */
gw_rc ps_job_digest(struct ps *p, const struct ptah_op *op, bool full, char *out, size_t len)
  GW_MUST_CHECK;
gw_rc ps_job_create(struct ps *p, const struct ptah_op *op, bool *created) GW_MUST_CHECK;
/* The ConfigMap an operation mounts: "<name>-desired-<12 hex of checksum>". */
void ps_copy_name(const char *name, const char *checksum, char *buf, size_t len);

/* ps_decide.c: nothing in flight: plan, wait for an approval, or claim an Apply. */
gw_rc ps_decide(struct ps *p) GW_MUST_CHECK;
/* Claims an operation of type ("Plan", "Apply", "Observe"). */
gw_rc ps_claim(struct ps *p, const char *type, const char *inputs, const char *desired)
  GW_MUST_CHECK;
/* Retires the published plan and its approval (a new one is computed). */
void ps_retire_plan(struct ps *p);
/* status.refused: nothing is planned again for these inputs (and this verification digest,
 * when given) until they change. */
void ps_refuse(struct ps *p, const char *inputs, const char *reason, const char *operation,
               const char *verification);
/* Verification refused the desired schema or a plan: Blocked, ArtifactVerificationRefused. */
void ps_verification_refused(struct ps *p, const char *inputs, const char *operation,
                             const char *verification, const char *what, const char *why);

/* ps_approval.c: the approvals of the current plan; true when one is accepted (or was). */
bool ps_approvals(struct ps *p);
/* Whether the accepted approval (status.approval) still stands for the current plan. */
bool ps_approval_stands(struct ps *p, char *why, size_t len);
void ps_after_commit(struct ps *p);

/* metrics.c: godwit_ptahschema_phase (ctx: the PtahSchema informer). */
struct strbuf;
gw_rc ps_metrics(void *ctx, struct strbuf *sb) GW_MUST_CHECK;

/* ps_run.c: the operation in flight. */
gw_rc ps_drive(struct ps *p) GW_MUST_CHECK;

#endif
