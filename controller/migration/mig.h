/*
 * mig.h: the Migration controller's internals, shared by its files (docs/dev/migration-controller.md
 * is the design; seed 000 the behaviour).
 *
 *   reconcile.c  the dispatch: first observation, absorbing ends, deletion, suspension, the
 *                step of the phase
 *   edit.c       what one reconcile changes (phase, conditions, status fields) applied to the
 *                fresh object in one /status write, the phase transition table, and the Events
 *                emitted after the write
 *   jobs.c       runner Job and work-dir PVC rendering, idempotent creation, the state of a
 *                step's Job and its Pod, the termination report, the redacted log tail
 *   secrets.c    a Secret key read for the controller's own libpq connections
 *   validate.c   the shared rule set and the rendering check (InvalidSpec)
 *   preflight.c  Validating: the version probe, the preflight Job and its report
 *   worker.c     the worker attempts, the command line per pgcopydb version, log-tail
 *                classification (PermissionDenied, the restart signature), WorkerZombie
 *   probe.c      pg_stat_activity on the target: Cloning, CopyingData, Finalizing
 *   catalog.c    clone-only: the catalog Job once the worker exited (CloneSucceeded,
 *                CloneIncomplete)
 *   live.c       live: base copy marker, presence sample, Streaming, lag, catch-up
 *   cutover.c    CutoverPending, CuttingOver: the cutover Job, the drain (verify Job)
 *   ownership.c  the <name>-reown handover
 *   verify.c     Verifying: spec.verify.compare
 *   cleanup.c    the cleanup Job, the finalizer, deletion
 *   suspend.c    spec.suspend and resume
 *   metrics.c    per-Migration metrics from the cache
 *
 * One reconcile decides from the object it read (and what it reads from the API and the
 * databases), queues its changes in m->ed, writes them once (mig_commit), then emits the queued
 * Events. Nothing lives only in memory: a restart reads status, the Jobs and the work dir.
 */
#ifndef GW_CTRL_MIG_H
#define GW_CTRL_MIG_H

#include <cJSON.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../manager.h"
#include "migration.h"

enum mig_phase {
  MP_NONE = -1,
  MP_PENDING,
  MP_VALIDATING,
  MP_CLONING,
  MP_FINALIZING,
  MP_STREAMING,
  MP_CUTOVER_PENDING,
  MP_CUTTING_OVER,
  MP_VERIFYING,
  MP_COMPLETED,
  MP_FAILED,
  MP_SUSPENDED,
  MP_COUNT
};

const char *mig_phase_name(enum mig_phase p);
enum mig_phase mig_phase_parse(const char *s);
/* The transition table of docs/dev/migration-controller.md ("The phase machine"). Staying in a
 * phase is always allowed; resuming from Suspended is allowed only to suspendedFrom, which the
 * caller checks (resume_to). */
bool mig_transition_allowed(enum mig_phase from, enum mig_phase to, enum mig_phase resume_to);

/* Condition types (seed 000). */
#define C_VALIDATED "Validated"
#define C_CLONE "CloneCompleted"
#define C_STREAMING "Streaming"
#define C_CAUGHT_UP "CaughtUp"
#define C_CUTOVER "CutoverCompleted"
#define C_OWNERSHIP "OwnershipApplied"
#define C_VERIFIED "Verified"
#define C_COMPLETE "Complete"
#define C_FAILED "Failed"

/* Where things are mounted: not /work, which a machine may already use (this project's own
 * test machines keep the repository there, and a bind mount would hide it). */
#define MIG_WORK_MOUNT "/var/lib/godwit"
#define MIG_WORK_DIR "/var/lib/godwit/pgcopydb" /* pgcopydb's --dir, on the PVC */
#define MIG_FILTERS_FILE "/var/lib/godwit/filters.ini"
#define MIG_FINALIZER "pgcopydb.io/cleanup"
#define MIG_LABEL "godwit.dev/migration"
#define MIG_STEP_LABEL "godwit.dev/step"
#define MIG_ATTEMPT_LABEL "godwit.dev/attempt"

/* ---- edit.c ---- */

#define MIG_MAX_CONDS 12
#define MIG_MAX_FIELDS 24
#define MIG_MAX_EVENTS 12

enum mig_ev_dep { EVD_ALWAYS, EVD_WRITTEN, EVD_PHASE, EVD_COND };

struct mig_cond_edit {
  char type[32], status[8], reason[48];
  char *message;
  bool remove;
  bool changed; /* status or reason moved on the last application */
};

struct mig_field {
  char path[64];
  cJSON *value; /* NULL: remove */
};

struct mig_event {
  const char *type;
  char reason[48];
  char *message;
  enum mig_ev_dep dep; /* emitted only if the phase (or the condition dep_type) changed */
  char dep_type[32];
};

struct mig_edit {
  enum mig_phase expect; /* the phase decided from; a fresh object elsewhere is a conflict */
  char expect_rv[64];    /* the resourceVersion decided from ("": any) */
  enum mig_phase phase;  /* MP_NONE: unchanged */
  bool phase_changed;
  struct mig_cond_edit conds[MIG_MAX_CONDS];
  size_t nconds;
  struct mig_field fields[MIG_MAX_FIELDS];
  size_t nfields;
  struct mig_event events[MIG_MAX_EVENTS];
  size_t nevents;
  bool oom;
};

/* ---- the reconcile context ---- */

struct pgc_version {
  bool known;
  int major, minor;
  char text[64];
};

struct mig {
  struct rec_ctx *rc;
  const struct migration_opts *o;
  cJSON *obj;
  const char *ns, *name, *uid;
  char uid_buf[64];
  long long gen;
  enum mig_phase phase;
  bool live, dry_run, suspend, deleting;
  int backoff_limit;
  char appname[32];  /* PGAPPNAME of the workers: godwit-<first 8 of the uid> */
  char slot[64];     /* status.slotName, or the one to choose */
  struct pgc_version version;
  struct mig_edit ed;
  long requeue_ms; /* the soonest look requested; 0: none */
};

void mig_init(struct mig *m, struct rec_ctx *rc, const struct migration_opts *o, cJSON *obj);
void mig_release(struct mig *m);

void mig_set_phase(struct mig *m, enum mig_phase p);
void mig_cond(struct mig *m, const char *type, const char *status, const char *reason,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void mig_cond_remove(struct mig *m, const char *type);
/* Status fields under "status." (path without the prefix); takes v. */
void mig_set(struct mig *m, const char *path, cJSON *v);
void mig_set_int(struct mig *m, const char *path, long long v);
void mig_set_str(struct mig *m, const char *path, const char *v);
void mig_set_bool(struct mig *m, const char *path, bool v);
void mig_set_now(struct mig *m, const char *path);
void mig_unset(struct mig *m, const char *path);
/* Events emitted after the write: always, or only when the phase / condition changed. */
void mig_event(struct mig *m, const char *type, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void mig_event_if_written(struct mig *m, const char *type, const char *reason, const char *fmt,
                          ...) __attribute__((format(printf, 4, 5)));
void mig_event_if_phase(struct mig *m, const char *type, const char *reason, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
void mig_event_if_cond(struct mig *m, const char *cond_type, const char *type,
                       const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
void mig_requeue(struct mig *m, long ms);

/* The terminal outcomes. mig_fail: Failed=True reason, phase Failed, completionTime, a Warning
 * Event of the same reason. mig_complete: Complete=True reason, phase Completed,
 * completionTime, Event Completed. */
void mig_fail(struct mig *m, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void mig_complete(struct mig *m, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Writes the queued changes through /status (conflict-safe), then emits the Events.
 * GW_ECONFLICT: the object moved to another phase meanwhile (decide again); GW_EINVAL: a
 * transition the table refuses (a bug, logged). */
gw_rc mig_commit(struct mig *m) GW_MUST_CHECK;

/* Applies an edit to obj (the status_mutate of mig_commit; exposed for tests). */
gw_rc mig_edit_apply(struct mig_edit *ed, cJSON *obj, const char *key, bool *changed)
  GW_MUST_CHECK;
void mig_edit_release(struct mig_edit *ed);

/* Status reads of the object as read. */
long long mig_status_int(const struct mig *m, const char *path, long long dflt);
const char *mig_status_str(const struct mig *m, const char *path);
bool mig_status_bool(const struct mig *m, const char *path);
/* The step's status.steps.<step>: attempt (0: never started) and result ("" when none). */
int mig_step_attempt(const struct mig *m, const char *step);
const char *mig_step_result(const struct mig *m, const char *step);
void mig_step_set(struct mig *m, const char *step, int attempt, const char *result,
                  const char *message);

/* ---- jobs.c ---- */

enum job_state { JOB_ABSENT, JOB_DELETING, JOB_PENDING, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED };

struct job_view {
  enum job_state state;
  char name[96];
  char pod[160];        /* the newest Pod, "" when none */
  char waiting[1024];   /* "Reason: message" of a Pod that cannot start, "" otherwise */
  int exit_code;        /* of the terminated container, -1 when unknown */
  char failure[512];    /* the Job's Failed condition, "Reason: message" */
  cJSON *report;        /* the parsed termination message, or NULL */
  long long pod_started; /* epoch seconds the container started, 0 when unknown */
};

struct job_spec {
  const char *step;
  int attempt;
  const char *image;
  const char *container; /* "worker" or "runner" */
  const char *const *command;
  cJSON *args;          /* array of strings (taken) */
  bool source, target, superuser; /* GODWIT_*_URI (or PGCOPYDB_*_PGURI for the worker) */
  bool worker;
  bool workdir;         /* the PVC at /work */
  const cJSON *resources;
  const char *env[8][2]; /* more plain env pairs; name NULL ends */
};

void job_name(const struct mig *m, const char *step, int attempt, char *buf, size_t len);
/* A runner step's Job (godwit-runner STEP in the runner image, container "runner"): fills s
 * and returns its argument array, which already holds the step; the caller adds the flags and
 * the credentials and volume it needs. */
cJSON *mig_runner_spec(const struct mig *m, struct job_spec *s, const char *step, int attempt);
/* Appends a string argument (NULL as ""). */
void mig_arg(cJSON *args, const char *value);
/* The Job object (labels, ownerReference, template digest); NULL when out of memory. */
cJSON *mig_job_render(const struct mig *m, const struct job_spec *s);
/* Creates the Job; *created false when it already existed. */
gw_rc mig_job_create(struct mig *m, const struct job_spec *s, bool *created) GW_MUST_CHECK;
gw_rc mig_job_get(struct mig *m, const char *step, int attempt, struct job_view *out)
  GW_MUST_CHECK;
void job_view_release(struct job_view *v);
/* Deletes the Job and its Pods (background); absent is fine. */
gw_rc mig_job_delete(struct mig *m, const char *step, int attempt) GW_MUST_CHECK;
/* Worker Pods of the Migration that have not ended (running, starting, or stopping within their
 * grace period): a Job deleted in the background is gone before its Pods are, and a stopping
 * pgcopydb still writes the work dir and holds the slot. Neither a new worker nor the cleanup
 * starts before they are gone. An error (the Pods cannot be listed) counts as "wait". */
gw_rc mig_worker_pods_running(struct mig *m, int *running) GW_MUST_CHECK;
/* Deletes a Pod (WorkerZombie). */
gw_rc mig_pod_delete(struct mig *m, const char *pod) GW_MUST_CHECK;
/* The last lines of a Pod's log, scrubbed of passwords (malloc'd). */
gw_rc mig_log_tail(struct mig *m, const char *pod, long lines, char **out) GW_MUST_CHECK;
/* The work-dir PVC <name>-workdir, created when missing. */
gw_rc mig_pvc_ensure(struct mig *m) GW_MUST_CHECK;
/* A scrubbed copy of s cut to max bytes (malloc'd, never NULL unless out of memory). */
char *mig_scrub(const char *s, size_t max);
/* The report's "result" ("Passed", "Failed", "Transient") or NULL. */
const char *job_report_result(const struct job_view *v);

/* A runner step driven to a verdict: creates attempt 1, reads the Job, retries transient
 * failures (exit 2, or no report) up to max_attempts. */
enum step_outcome { STEP_WAIT, STEP_PASSED, STEP_FAILED, STEP_ERROR };
struct step_run {
  const char *step;
  int max_attempts;
  const char *started_reason; /* Event on creation (NULL: none) */
  const char *started_fmt;    /* its message; %d is the attempt */
  /* out */
  struct job_view v;
  int attempt;
  bool created;
  bool retried; /* the attempt failed without a verdict: the next one is decided */
  char message[1024]; /* what to say about the verdict or the wait */
};
/* render fills s for the attempt; ctx is its argument. */
typedef void (*step_render_fn)(struct mig *m, int attempt, struct job_spec *s, void *ctx);
enum step_outcome mig_step_drive(struct mig *m, struct step_run *r, step_render_fn render,
                                 void *ctx);
void step_run_release(struct step_run *r);

/* ---- secrets.c ---- */

/* The value of key in Secret name (malloc'd; free with mig_secret_free, which wipes it). */
gw_rc mig_secret_get(struct mig *m, const char *name, const char *key, char **out,
                     char *err, size_t errlen) GW_MUST_CHECK;
void mig_secret_free(char *s);
/* The source or target URI of the spec. */
gw_rc mig_uri(struct mig *m, bool source, char **out, char *err, size_t errlen) GW_MUST_CHECK;
/* A libpq connection with the URI (connect and statement timeouts, application_name
 * godwit-controller); NULL with err set (scrubbed). */
PGconn *mig_pg_connect_uri(struct mig *m, const char *uri, char *err, size_t errlen);

/* ---- pgpool.c ---- */

/* A controller session to the source or the target, reused between samples (per Migration and
 * side, while the Secret's URI stays the same; idle ones close after a minute). */
struct mig_pg {
  PGconn *c;
  bool source;
  bool reused; /* from the pool: a failure may be a session the server closed meanwhile */
  unsigned char digest[32];
};
/* false with err set (scrubbed). */
bool mig_pg_open(struct mig *m, bool source, struct mig_pg *s, char *err, size_t errlen);
/* Back to the pool when ok and the session is sound, else closed. */
void mig_pg_close(struct mig *m, struct mig_pg *s, bool ok);
/* Closes the sessions of a Migration (it finished or went away). */
void mig_pg_forget(const char *uid);

/* ---- validate.c ---- */

/* Validates and renders; false with msg filled (the causes). */
bool mig_validate(struct mig *m, char *msg, size_t len);

/* ---- worker.c ---- */

void mig_version_parse(const char *s, struct pgc_version *v);
bool mig_version_at_least(const struct pgc_version *v, int major, int minor);
/* The pgcopydb arguments of attempt n (array of strings). restart: start over. plugin: the
 * output plugin the preflight chose (status.outputPlugin); NULL or "" for a Migration validated
 * before the preflight chose one, whose slot was made with wal2json. */
cJSON *mig_worker_args(const cJSON *spec, const struct pgc_version *v, int attempt, bool restart,
                       const char *slot, const char *plugin);
/* The filters file content (malloc'd; "" when there is nothing to filter). */
char *mig_filters_ini(const cJSON *spec, const struct pgc_version *v, bool live);
/* The same for a run on a used work dir (used: --resume or --restart), which may need more. */
char *mig_filters_ini_run(const cJSON *spec, const struct pgc_version *v, bool live, bool used);
/* Log-tail classification. */
enum tail_class { TAIL_NONE, TAIL_PERMISSION, TAIL_RESTART };
struct tail_verdict {
  enum tail_class cls;
  char line[512];       /* the matched (or last error) line, scrubbed */
  char last_error[512]; /* the last pgcopydb ERROR/FATAL line that says something */
};
void mig_classify_tail(const char *tail, struct tail_verdict *out);
/* The supervisor's fatal exit is the last thing the log says. */
bool mig_tail_fatal_exit(const char *tail);
/* The worker logged that the base copy finished (--follow). */
bool mig_tail_base_copy_done(const char *tail);

enum worker_state { W_WAIT, W_RUNNING, W_SUCCEEDED, W_FAILED };
/* The current attempt's worker: created when absent (unless suspended), failures classified
 * and retried (the edit says what happened), success reported. v is the Job. */
enum worker_state mig_worker(struct mig *m, struct job_view *v);
const char *mig_image(const struct mig *m);
/* The worker Job of the current attempt exists or is created (no Event when it existed). */
gw_rc mig_worker_ensure(struct mig *m, int attempt) GW_MUST_CHECK;

/* ---- the steps ---- */

gw_rc mig_step_validating(struct mig *m);
/* Validated=True SpecValid, with the preflight's summary and the plugin the worker decodes with
 * (NULL for a clone, or a Migration validated before the preflight chose one). */
void mig_spec_valid(struct mig *m, const char *summary, const char *plugin);
void mig_probe(struct mig *m, const struct job_view *worker);
/* Catch-up counting: the next count after a sample, and the condition it gives. */
int mig_catchup_next(int count, bool have_sample, int64_t lag, int64_t max);
const char *mig_catchup_reason(int count); /* Lagging, ConfirmingCatchUp, LagBelowThreshold */
void mig_live(struct mig *m, const struct job_view *worker);
int64_t mig_max_lag(const struct mig *m);
/* The handover: STEP_WAIT, STEP_PASSED (or not needed), STEP_FAILED (recorded). */
enum step_outcome mig_ownership(struct mig *m);
gw_rc mig_step_verifying(struct mig *m);
/* After the data is on the target: Verifying or Completed. */
void mig_finish(struct mig *m);
gw_rc mig_deletion(struct mig *m);
/* The cleanup Job at the end of a live migration: STEP_WAIT, or done either way. */
enum step_outcome mig_cleanup(struct mig *m, bool deleting);
/* Adds or removes the finalizer pgcopydb.io/cleanup; on success m->obj's metadata is the stored
 * one (replaced in place: pointers into its spec and status stay valid). */
gw_rc mig_finalizer(struct mig *m, bool add) GW_MUST_CHECK;
gw_rc mig_suspend(struct mig *m);
gw_rc mig_resume(struct mig *m);

/* Clone-only, once the worker exited 0: Finalizing, the catalog, the handover, then finish. */
void mig_clone_done(struct mig *m);
/* CutoverPending and CuttingOver (the worker's state as mig_worker left it). */
void mig_cutover(struct mig *m, enum worker_state ws);
/* Milliseconds since the RFC 3339 time at status.<path> (very large when unset). */
long long mig_since_ms(const struct mig *m, const char *path);

/* Steps' results as reconcile results: requeue when something is pending. */
struct rec_result mig_result(struct mig *m, gw_rc rc);

#endif
