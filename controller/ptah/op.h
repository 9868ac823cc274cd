/*
 * op.h: a Ptah operation, the machinery both Ptah kinds share (seed 001: "Conditions decide",
 * docs/dev/ptah-controller.md).
 *
 *   status.operation = {id, type, jobName, attempt, inputs, templateDigest, snapshotRefreshed,
 *                       fromVersion, toVersion, notBefore, startedAt}
 *
 * - Claimed before its Job exists: one status write records the operation (id, type, attempt,
 *   the admission snapshot: the digest of the Pod template it will dispatch). A restart at any
 *   instant finds the claim, and the Job by its deterministic name (op_job_name): never two.
 * - Dispatched: the pass after the claim creates the Job (AlreadyExists is success) and records
 *   startedAt with it. From then on a missing result is never made up for by running it again
 *   unseen: for an Apply it is an uncertain run.
 * - Its result is the PtahResultRecord named after the Job, written by the runner Pod with its
 *   bound token. op_record_check() reads it from the API and accepts it only when the writer is
 *   a Pod of that Job (by uid: names are reused, uids are not), runs as the service account the
 *   Job's Pod template names, names this operation, and, for an Apply, held the database lock
 *   throughout (lockContinuous). It writes the record's status (Accepted or Rejected, with the
 *   reason) once.
 */
#ifndef GW_CTRL_PTAH_OP_H
#define GW_CTRL_PTAH_OP_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../edit.h"
#include "../manager.h"
#include "../runjob.h"

#define OP_LABEL "ptah.run/operation" /* on the Job and its Pod: the operation id */
#define OP_ID_MAX 63                  /* a DNS-1123 label */
#define OP_JOB_MAX 63                 /* the Job controller puts the name in a label */
#define C_READY "Ready"             /* kstatus, Flux, Argo CD: True when settled */
#define OP_RUNNER_SA "godwit-runner"  /* spec.execution.serviceAccountName's default */

struct ptah_op {
  char id[OP_ID_MAX + 1];
  char type[16];  /* "Apply", "Observe", "Plan" */
  char job[OP_JOB_MAX + 1];
  char inputs[80];
  char desired[80];  /* a PtahSchema's: the checksum of the desired SQL the Job mounts */
  char tdigest[80];
  char jdigest[80];  /* the whole Pod template the Job was created with */
  char binding[640]; /* "image=<ref> protocol=<p> state=<v>" */
  bool legacy;     /* resultTransport Legacy */
  int attempt;
  int refused;     /* attempts refused by the runner before running: not counted as failures */
  bool dispatched; /* startedAt is recorded: the Job was created */
  bool refreshed;
  long long from, to;
  time_t not_before;
};

/* status.operation of obj into op; false when there is none. */
bool op_read(const cJSON *obj, struct ptah_op *op);
/* Queues op as status.operation (startedAt: now when dispatched and not recorded yet). */
void op_write(struct status_edit *ed, const cJSON *obj, const struct ptah_op *op);
/* "<name>-<type>-<seq>", the name cut and suffixed with a digest of it when too long. */
void op_make_id(const char *name, const char *type_lc, long long seq, char *buf, size_t len);
/* status.<path> of obj as an integer, dflt when absent or not a number. */
long long op_status_int(const cJSON *obj, const char *path, long long dflt);
/* "<id>-<attempt>". */
void op_job_name(const char *id, int attempt, char *buf, size_t len);

enum op_verdict { OPV_NONE, OPV_ACCEPTED, OPV_REJECTED, OPV_ERROR, OPV_TIMEOUT };

struct op_record {
  enum op_verdict verdict;
  cJSON *rec;       /* the record as read (NULL for OPV_NONE, OPV_ERROR) */
  bool summary_refused; /* legacy: no frame, and the termination summary cannot stand in */
  char why[1600];   /* the rejection, or the failed read */
};

/* sa: the service account the Job's Pod template names ("" or NULL: "default"). */
enum op_verdict op_record_check(struct rec_ctx *c, const struct ptah_op *op, const char *sa,
                                struct op_record *out);
void op_record_release(struct op_record *r);

/* The legacy transport (legacy.c): the framed result in the log of the Job's Pod, read within
 * window_ms of the Job's end (a failed read is OPV_ERROR or OPV_TIMEOUT, tried again); past it,
 * or with no frame in a readable log, the termination summary, which is refused when it is of
 * another attempt, cut short, or the log holds another operation's frame (summary_refused: the
 * run is then unknown). An accepted result is out->rec, shaped as a record's spec. */
enum op_verdict op_legacy_read(struct rec_ctx *c, const struct ptah_op *op,
                               const struct job_view *v, long window_ms, struct op_record *out);
/* The record's spec.result.<field>. */
const char *op_result_str(const struct op_record *r, const char *field);
long long op_result_int(const struct op_record *r, const char *field, long long dflt);

/* exec.c: what both kinds share about executing an operation. */
struct ptah_opts;
/* spec.execution.serviceAccountName, or OP_RUNNER_SA. */
const char *op_service_account(const cJSON *obj);
/* spec.execution.runnerImage, or the controller's default. */
const char *op_image(const cJSON *obj, const struct ptah_opts *o);
/* The execution binding operations are claimed under now: "image=<ref> protocol=<p> state=<v>". */
void op_binding(const cJSON *obj, const struct ptah_opts *o, char *buf, size_t len);
/* The default runner identity, made when the spec names no service account: the ServiceAccount
 * godwit-runner and its RoleBinding to the ClusterRole godwit-runner (manifests/rbac-runner.yaml:
 * create PtahResultRecords, nothing else). A service account of the user's own is theirs to bind. */
gw_rc op_runner_identity(struct rec_ctx *c, const cJSON *obj) GW_MUST_CHECK;
/* The operation's Job from the caches; absent is confirmed by the API (a Job created a moment ago
 * may not be in the cache yet). */
gw_rc op_job_view(const struct rj_owner *owner, const char *job, struct job_view *v) GW_MUST_CHECK;
/* The newest FailedCreate Event of the Job ("" when none): the API server refused its Pod. */
void op_pod_refusal(struct rec_ctx *c, const char *job, char *buf, size_t len);

#endif
