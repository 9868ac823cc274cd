/*
 * mig.h: the Migration controller's internals, shared by its files (docs/dev/migration-controller.md
 * is the design; seed 000 the behaviour; docs/dev/controller-core.md the core it stands on:
 * the status edit, the phase table, runner Jobs, the step driver).
 *
 *   reconcile.c   the dispatch: first observation, absorbing ends, deletion, suspension, the
 *                 step of the phase, and the order of the steps after the copy (the tails)
 *   edit.c        the phase table, Complete and Failed, the one status write of a reconcile
 *   jobs.c        the Migration's runner Jobs (names, credentials, the work dir) on the core's
 *   pgpool.c      the controller's database sessions (URIs from the Secrets), kept between
 *                 samples in the core's pool
 *   validate.c    the shared rule set and the rendering check (InvalidSpec)
 *   observe.c     the first observation (Pending)
 *   worker.c      the worker attempts, log-tail classification (PermissionDenied, the restart
 *   worker_args.c   signature), WorkerZombie; the command line per pgcopydb version
 *   the steps, one per file (a step never calls another):
 *   preflight.c   Validating: the version probe, the preflight Job and its report
 *   probe.c       pg_stat_activity on the target: Cloning, CopyingData, Finalizing
 *   live.c        live: base copy marker, presence sample, Streaming, lag, catch-up
 *   catalog.c     clone tail: Finalizing, the catalog Job (CloneSucceeded, CloneIncomplete)
 *   cutover.c     live tail: the approval, the cutover Job (end position), the drain
 *   verify.c      live tail: the verify Job (DrainVerified, DrainIncomplete)
 *   reown.c       the <name>-reown handover
 *   cleanup.c     the cleanup Job, the finalizer, deletion
 *   compare.c     Verifying: spec.verify.compare
 *   suspend.c     spec.suspend and resume
 *   metrics.c     per-Migration metrics from the cache
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

#include "../edit.h"
#include "../pgpool.h"
#include "../runjob.h"
#include "../stepdrive.h"
#include "../manager.h"
#include "api/migration.h"
#include "migration.h"
#include "pgcopydb.h"

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

/* The phase table (edit.c), which every status write enforces; staying in a phase is always
 * allowed; resuming from Suspended goes only to status.suspendedFrom. */
extern const struct phase_table mig_phases;
const char *mig_phase_name(enum mig_phase p);
enum mig_phase mig_phase_parse(const char *s);

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
#define C_READY "Ready" /* derived at each write: kstatus, Flux, Argo CD, kubectl wait */

/* Where things are mounted: not /work, which a machine may already use (this project's own
 * test machines keep the repository there, and a bind mount would hide it). */
#define MIG_WORK_MOUNT "/var/lib/godwit"
#define MIG_WORK_DIR "/var/lib/godwit/pgcopydb" /* pgcopydb's --dir, on the PVC */
/* Left by the cutover Job (pgcopydb < 0.15) once the end position is set: the live worker's
 * shell then wakes pgcopydb's sleeping processes (worker.c). The runner writes it as
 * <--dir>/godwit-drain-wake. */
#define MIG_DRAIN_WAKE MIG_WORK_DIR "/" PGCOPYDB_DRAIN_WAKE_FILE
#define MIG_FILTERS_FILE "/var/lib/godwit/filters.ini"
#define MIG_FINALIZER "pgcopydb.io/cleanup"
#define MIG_STEP_DEADLINE_S 900        /* defaults of the runner Jobs' deadlines (jobs.c) */
#define MIG_LONG_STEP_DEADLINE_S 86400
#define MIG_STEP_CPU_REQUEST "100m"   /* the step containers' resources (jobs.c) */
#define MIG_STEP_MEMORY_REQUEST "128Mi"
#define MIG_STEP_MEMORY_LIMIT "1Gi"
#define MIG_ATTEMPT_BACKOFF_S 10       /* between worker attempts: doubling, capped (worker.c) */
#define MIG_ATTEMPT_BACKOFF_MAX_S 360
/* A status write refused because the object moved meanwhile: decide again soon, from the
 * fresh object (not the queue's backoff: nothing failed). */
#define MIG_CONFLICT_RETRY_MS 50
/* How much a message a person reads quotes before it says "and N more". */
#define MIG_LIST_TABLES 20       /* tables not done (CloneIncomplete), empty on the target */
#define MIG_LIST_DIFFERING 10    /* tables a data compare found different (DataMismatch) */
#define MIG_LIST_SCHEMA_DIFFS 5  /* schema differences quoted in SchemaMismatch */
#define MIG_TAIL_REOWN 6         /* the handover's last log lines in OwnershipFailed */
#define MIG_TAIL_WORKER 20       /* the worker's last log lines read for its exit (WorkerZombie) */
#define MIG_LABEL "godwit.dev/migration"

/* ---- the reconcile context ---- */

struct pgc_version {
  bool known;
  int major, minor;
  char text[64];
};

/* The current worker attempt, as mig_worker (worker.c) sees it. */
enum worker_state { W_WAIT, W_RUNNING, W_SUCCEEDED, W_FAILED };

struct mig {
  struct rec_ctx *ctx; /* the reconcile: client, recorder, caches, key */
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
  struct status_edit ed; /* what this reconcile decides (controller/edit.h) */
  struct rj_owner owner; /* the Migration as its runner Jobs' owner (controller/runjob.h) */
  enum worker_state ws;  /* this pass's (mig_worker), for the live tail */
};

void mig_init(struct mig *m, struct rec_ctx *rc, const struct migration_opts *o, cJSON *obj);
void mig_release(struct mig *m);

/* The terminal outcomes. mig_fail: Failed=True reason, phase Failed, completionTime, a Warning
 * Event of the same reason. mig_complete: Complete=True reason, phase Completed,
 * completionTime, Event Completed. */
void mig_fail(struct mig *m, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void mig_complete(struct mig *m, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Writes m->ed through /status (controller/edit.h: conflict-safe, Events after the write) and
 * takes the stored object as m->obj. GW_ECONFLICT: the object moved meanwhile (decide again);
 * GW_EINVAL: a transition the table refuses (a bug, logged). */
gw_rc mig_commit(struct mig *m) GW_MUST_CHECK;

/* Status reads of the object as read. */
long long mig_status_int(const struct mig *m, const char *path, long long dflt);
const char *mig_status_str(const struct mig *m, const char *path);
bool mig_status_bool(const struct mig *m, const char *path);

/* ---- jobs.c ---- */

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

/* The worker prologue's shell functions (worker.c; tests/controller/test_migration_unit.c runs
 * them): `uriparam URI KEY CONNINFO-VALUE URI-VALUE` is URI with KEY added (`?` or `&` and
 * URI-VALUE, percent-encoded by the caller, for a postgres:// URI; a keyword and CONNINFO-VALUE,
 * quoted by the caller when it needs it, for a key=value string; trailing newlines of the
 * Secret's value dropped; anything else unchanged); `appname URI` adds
 * application_name=$PGAPPNAME, for pgcopydb 0.15+ which overwrite PGAPPNAME. */
#define MIG_WORKER_APPNAME_SH                                                                      \
  "uriparam() {\n"                                                                                 \
  "  set -- \"$(printf '%s' \"$1\")\" \"$2\" \"$3\" \"$4\"\n"                                          \
  "  case \"$1\" in\n"                                                                             \
  "  postgres://*\\?*|postgresql://*\\?*) printf '%s&%s=%s' \"$1\" \"$2\" \"$4\";;\n"                 \
  "  postgres://*|postgresql://*) printf '%s?%s=%s' \"$1\" \"$2\" \"$4\";;\n"                         \
  "  *=*) printf '%s %s=%s' \"$1\" \"$2\" \"$3\";;\n"                                                \
  "  *) printf '%s' \"$1\";;\n"                                                                    \
  "  esac\n"                                                                                       \
  "}\n"                                                                                            \
  "appname() { uriparam \"$1\" application_name \"$PGAPPNAME\" \"$PGAPPNAME\"; }\n"

/* The Job of step and attempt: "<name>-<step>-<attempt>", but "<name>-reown" for the first
 * handover (seed 000 names "the <name>-reown Job"). */
void job_name(const struct mig *m, const char *step, int attempt, char *buf, size_t len);
/* m->owner: the Migration as the owner of runner Jobs (controller/runjob.h). */
void mig_owner_init(struct mig *m);
/* A runner step's Job (godwit-runner STEP in the runner image, container "runner"): fills s
 * and returns its argument array, which already holds the step; the caller adds the flags and
 * the credentials and volume it needs. */
cJSON *mig_runner_spec(const struct mig *m, struct job_spec *s, const char *step, int attempt);
/* Appends a string argument (NULL as ""). */
void mig_arg(cJSON *args, const char *value);
/* The Job object (labels, ownerReference, template digest); NULL when out of memory. Takes
 * s->args. */
cJSON *mig_job_render(const struct mig *m, struct job_spec *s);
/* Creates the Job; *created false when it already existed. Takes s->args. */
gw_rc mig_job_create(struct mig *m, struct job_spec *s, bool *created) GW_MUST_CHECK;
gw_rc mig_job_get(struct mig *m, const char *step, int attempt, struct job_view *out)
  GW_MUST_CHECK;
/* Deletes the Job and its Pods (background); absent is fine. */
gw_rc mig_job_delete(struct mig *m, const char *step, int attempt) GW_MUST_CHECK;
/* The work-dir PVC <name>-workdir, created when missing. */
gw_rc mig_pvc_ensure(struct mig *m) GW_MUST_CHECK;

/* A runner step driven to a verdict by the core (controller/stepdrive.h), with the
 * Migration's Job names; render fills s for the attempt, ctx is its argument. */
typedef void (*step_render_fn)(struct mig *m, int attempt, struct job_spec *s, void *ctx);
enum step_outcome mig_step_drive(struct mig *m, struct step_run *r, step_render_fn render,
                                 void *ctx);

/* ---- pgpool.c ---- */

/* A controller session to the source or the target, reused between samples through the core's
 * pool (migration_opts.pool, controller/pgpool.h; per Migration and side, while the Secret's URI
 * stays the same). */
struct mig_pg {
  PGconn *c;
  bool source;
  bool reused; /* from the pool: a failure may be a session the server closed meanwhile */
  unsigned char digest[PG_DIGEST_LEN];
};
/* false with err set (scrubbed). */
bool mig_pg_open(struct mig *m, bool source, struct mig_pg *s, char *err, size_t errlen);
/* Back to the pool when ok and the session is sound, else closed. */
void mig_pg_close(struct mig *m, struct mig_pg *s, bool ok);
/* Whether a side answers SELECT 1 now, on a fresh session (never the pool's): 1 yes, 0 no (err
 * says why, one line, scrubbed), -1 not asked (its Secret could not be read; err says why). */
int mig_pg_answers(struct mig *m, bool source, char *err, size_t errlen);

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
enum tail_cause { CAUSE_NONE, CAUSE_WORKDIR_FULL, CAUSE_SERVER_DISK_FULL, CAUSE_UNREACHABLE };
struct tail_verdict {
  enum tail_class cls;
  enum tail_cause cause; /* what to fix outside the Migration, from the first line saying it */
  bool copy_failed;      /* a table's COPY failed (pgcopydb < 0.15 may still mark it done) */
  char cause_line[512];
  char line[512];       /* the matched (or last error) line, scrubbed */
  char last_error[512]; /* the last pgcopydb ERROR/FATAL line that says something */
};
void mig_classify_tail(const char *tail, struct tail_verdict *out);
/* Tables in scope holding rows on the source and none on the target, as "a.b, c.d" into *out
 * (malloc'd, when any); -1 when the sample could not be taken (err says why), else the count
 * (live.c; the live base copy and the clone's catalog step trust it over pgcopydb's markers). */
int mig_presence_sample(struct mig *m, char **out, char *err, size_t errlen);
/* The signal a container's exit code says pgcopydb crashed with (128 + SIGSEGV, SIGABRT,
 * SIGBUS, SIGILL or SIGFPE), as "SIGSEGV"; NULL for any other exit (SIGKILL is a kill, not a
 * crash: out of memory, a deleted Pod). */
const char *mig_crash_signal(int exit_code);
/* The supervisor's fatal exit is the last thing the log says. */
bool mig_tail_fatal_exit(const char *tail);
/* The worker logged that the base copy finished (--follow). */
bool mig_tail_base_copy_done(const char *tail);

/* The current attempt's worker: created when absent (unless suspended), failures classified
 * and retried (the edit says what happened), success reported. v is the Job. */
enum worker_state mig_worker(struct mig *m, struct job_view *v);
const char *mig_image(const struct mig *m);
/* The worker container's /bin/sh -c script (its paths under MIG_WORK_MOUNT). */
const char *mig_worker_script(void);
/* The worker Job of the current attempt exists or is created (no Event when it existed). */
gw_rc mig_worker_ensure(struct mig *m, int attempt) GW_MUST_CHECK;

/* ---- the steps ----
 * One function per step, in the file of the step's name; a step reads this header and the
 * core's, never another step: the order in which they run is the dispatch's (reconcile.c:
 * the phases, and the clone and live tails after the copy). A tail step returns STEP_PASSED when
 * it is done (now or before), STEP_WAIT while it is not (it asked for the next look), and
 * STEP_FAILED when the Migration failed (recorded). */

/* Validating: the version probe and the preflight Job (preflight.c). */
gw_rc mig_step_validating(struct mig *m);
/* Validated=True SpecValid, with the preflight's summary and the plugin the worker decodes with
 * (NULL for a clone, or a Migration validated before the preflight chose one). */
void mig_spec_valid(struct mig *m, const char *summary, const char *plugin);
/* The samplers while the worker runs: the target's pg_stat_activity (probe.c), the source's
 * lag and the base-copy marker (live.c). */
void mig_probe(struct mig *m, const struct job_view *worker);
void mig_live(struct mig *m, const struct job_view *worker);
/* Catch-up counting: the next count after a sample, and the condition it gives. */
int mig_catchup_next(int count, bool have_sample, int64_t lag, int64_t max);
const char *mig_catchup_reason(int count); /* Lagging, ConfirmingCatchUp, LagBelowThreshold */
int64_t mig_max_lag(const struct mig *m);
/* The clone tail (catalog.c): Cloning -> Finalizing, then the catalog Job. */
enum step_outcome mig_step_finalizing(struct mig *m);
enum step_outcome mig_step_catalog(struct mig *m);
/* The live tail (cutover.c): the approval, the end position, the drain to it. */
enum step_outcome mig_step_approval(struct mig *m);
enum step_outcome mig_step_cutover(struct mig *m);
enum step_outcome mig_step_drain(struct mig *m);
/* The drain's proof, then CutoverCompleted (verify.c). */
enum step_outcome mig_step_verify(struct mig *m);
enum step_outcome mig_step_cutover_completed(struct mig *m);
/* The handover (reown.c): STEP_PASSED also when spec.clone.ownerAfterRestore is unset. */
enum step_outcome mig_step_reown(struct mig *m);
/* Verifying (compare.c): the compare Job, then Completed either way. */
enum step_outcome mig_step_compare(struct mig *m);
/* The cleanup Job at the end of a live migration or on deletion (cleanup.c): STEP_WAIT, or
 * done either way (STEP_PASSED, or STEP_FAILED with CleanupFailed recorded). */
enum step_outcome mig_cleanup(struct mig *m, bool deleting);
gw_rc mig_deletion(struct mig *m);
/* Adds or removes the finalizer pgcopydb.io/cleanup; on success m->obj's metadata is the stored
 * one (replaced in place: pointers into its spec and status stay valid). */
gw_rc mig_finalizer(struct mig *m, bool add) GW_MUST_CHECK;
/* spec.suspend and the resume (suspend.c). */
gw_rc mig_suspend(struct mig *m);
gw_rc mig_resume(struct mig *m);

/* Milliseconds since the RFC 3339 time at status.<path> (very large when unset). */
long long mig_since_ms(const struct mig *m, const char *path);

/* Steps' results as reconcile results: requeue when something is pending. */
struct rec_result mig_result(struct mig *m, gw_rc rc);

#endif
