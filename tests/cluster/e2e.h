/*
 * e2e.h: the end-to-end fixture of the Migration tests (tests/cluster/test_migration_*.c): a
 * local cluster with the webhook, the job runner and the controller (short probe, lag and poll
 * intervals), two real PostgreSQL 15 servers, Secrets with their URIs, a sample database, and
 * helpers to apply Migrations with the real kubectl, wait for phases and conditions, read
 * Events, record the phases a Migration went through, compare both sides, and kill and restart
 * the controller.
 *
 *   struct e2e e;
 *   e2e_start(&e, &(struct e2e_opts){ .logical = true });
 *   e2e_load(&e, 20000);                       // the "shop" database on the source
 *   e2e_apply(&e, "...yaml...");               // kubectl apply -f
 *   cr_assert(e2e_wait_cond(&e, "shop", "Complete", "True", NULL, 120000));
 *   e2e_stop(&e);
 *
 * Roles: on the source "src_app" (LOGIN; SELECT on the sample; with .logical also REPLICATION
 * and CREATE on the database, for pgcopydb's sentinel), on the target "dst_app" (owner of the
 * target database; with .logical also EXECUTE on the replication origin functions and SET on
 * session_replication_role). Secrets "src" and "dst" (key "uri") hold their URIs, "super" the
 * target superuser's. Everything asserts on failure.
 */
#ifndef GW_TESTS_E2E_H
#define GW_TESTS_E2E_H

#include <cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "harness.h"
#include "pgfixture.h"

#define E2E_NS "default"
/* Debian 13's pgcopydb 0.17, as make deps installs it (tests/pgcopydb/install.sh). */
#define PGCOPYDB_017_BIN "/opt/godwit/pgcopydb-0.17/bin"
#define E2E_SRC_PW "Src-Pw-5521"
#define E2E_DST_PW "Dst-Pw-8830"

struct e2e_opts {
  bool logical;            /* wal_level = logical on the source, follow rights, and wal2json
                            * allowed (output_plugin_libraries), as docs/api/migration.md asks
                            * of the admin of a server that has the setting */
  bool plugins_default;    /* output_plugin_libraries left as the package sets it */
  const char *src_bin;     /* the source server's bin directory (NULL: Debian's) */
  bool faults;             /* the API server's fault injection (cl_fault on e->c) */
  bool no_target_create;   /* dst_app without CREATE on the target (remediation tests) */
  bool no_controller;      /* start the controller later (e2e_controller_start) */
  bool target_only;        /* only the target server (Ptah): no source, no "src" Secret */
  bool no_database;        /* no PostgreSQL at all (PodMotion): no server, no Secret */
  bool nodes;              /* worker nodes node-a, node-b, node-c and their node agents */
};

/* A phase recorder's state: inside struct e2e (a test's static), so a recorder an assertion
 * left running is ended by e2e_stop, never writing into a test function's dead stack. */
struct e2e_rec {
  struct e2e *e;
  char name[64];
  pthread_t t;
  volatile int stop;
  pthread_mutex_t mu;
  char seen[64][24];
  int n;
  char states[96][64]; /* "Phase/CloneCompleted's reason" ("-" without one), as they changed */
  char messages[96][256]; /* CloneCompleted's message when each state was first seen */
  int ns;
  char reasons[64][80]; /* every "Type/Reason" of a condition seen, once each */
  int nr;
  bool running, used;
};

struct e2e {
  struct cl c;
  struct kube_client *k;
  struct pgfx src, dst;
  bool pg_started, src_started;
  struct e2e_rec recs[4];
  const struct kube_gvr *gvr; /* the kind e2e_get and the waits read (NULL: Migration) */
  const char *kind;           /* the kind the Event helpers count (NULL: "Migration") */
};

void e2e_start(struct e2e *e, const struct e2e_opts *o);
void e2e_stop(struct e2e *e);

/* A Secret with one key "uri". */
void e2e_secret(struct e2e *e, const char *name, const char *uri);
/* Its key "uri" replaced (a merge patch). */
void e2e_secret_replace(struct e2e *e, const char *name, const char *uri);
/* The sample database "shop" on the source: schemas public, sales and audit; customers (1000
 * rows, primary key, unique email), sales.orders (rows, primary key, a foreign key to
 * customers, an index), audit.log, the sequence sales.invoice_seq at 4242 and one large
 * object. */
void e2e_load(struct e2e *e, long orders);

/* The head of a Migration of the fixture, to append spec fields to (two spaces in): its name is
 * the first printf argument; source Secret "src", target "dst", a 1Gi work dir. */
#define E2E_MIGRATION_HEAD                                                                     \
  "apiVersion: pgcopydb.io/v1\n"                                                              \
  "kind: Migration\n"                                                                         \
  "metadata:\n"                                                                               \
  "  name: %s\n"                                                                              \
  "spec:\n"                                                                                   \
  "  source:\n"                                                                               \
  "    connectionSecretRef: {name: src}\n"                                                    \
  "  target:\n"                                                                               \
  "    connectionSecretRef: {name: dst}\n"                                                    \
  "  worker:\n"                                                                               \
  "    workDir: {size: 1Gi}\n"

/* kubectl apply -f of a YAML document (printf-style); asserts success. */
void e2e_apply(struct e2e *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* kubectl with admin's context; returns the exit code, output in *out (may be NULL). */
int e2e_kubectl(struct e2e *e, char **out, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* `kubectl godwit ARGS` (plugin/kubectl-godwit on PATH) as user; its exit code, output in *out
 * (malloc'd; may be NULL). */
int e2e_plugin(struct e2e *e, const char *user, char **out, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* The Migration from the API (cJSON_Delete it), or NULL. */
cJSON *e2e_get(struct e2e *e, const char *name);
const char *e2e_phase(struct e2e *e, const char *name); /* thread-local buffer */
/* Waits until the condition has status (and reason, when not NULL); false on timeout. */
bool e2e_wait_cond(struct e2e *e, const char *name, const char *type, const char *status,
                   const char *reason, int timeout_ms);
bool e2e_wait_phase(struct e2e *e, const char *name, const char *phase, int timeout_ms);
/* The condition's message ("" when absent), in a thread-local buffer. */
const char *e2e_cond_message(struct e2e *e, const char *name, const char *type);
const char *e2e_cond_reason(struct e2e *e, const char *name, const char *type);
/* The condition's status ("True", "False", "Unknown"; "" when absent). */
const char *e2e_cond_status(struct e2e *e, const char *name, const char *type);
/* A human dump of the Migration's status and Events, for assertion messages (malloc'd). */
char *e2e_describe(struct e2e *e, const char *name);

/* Events of the object name: "<type> <reason>: <message>" lines (malloc'd). */
char *e2e_events(struct e2e *e, const char *name);
/* How many Events with that reason (counting repeats). */
int e2e_event_count(struct e2e *e, const char *name, const char *reason);
/* The message of the last Event with that reason ("" when none), thread-local buffer. */
/* The message of the newest Event of that reason ("" when none). An Event is recorded after the
 * status write that a test waits for: this waits up to 10 s for one to appear. */
const char *e2e_event_message(struct e2e *e, const char *name, const char *reason);
bool e2e_wait_event(struct e2e *e, const char *name, const char *reason, int timeout_ms);
/* Waits until the Events of that reason count at least min; the count then (or at timeout). */
int e2e_wait_event_count(struct e2e *e, const char *name, const char *reason, int min,
                         int timeout_ms);

/* Jobs of the Migration (label godwit.dev/migration=name): their names, sorted, one per line
 * (malloc'd); and how many there are. */
char *e2e_jobs(struct e2e *e, const char *name);

/* Rows and an order-independent checksum of a table. */
long long e2e_count(struct pgfx *pg, const char *db, const char *table);
long long e2e_checksum(struct pgfx *pg, const char *db, const char *table);
/* The controller's /metrics text (malloc'd). */
char *e2e_controller_metrics(struct e2e *e);
/* The value of the series named exactly (labels included), or -1 when absent; with a prefix
 * ending in '{' or a bare name, use e2e_metric_sum. */
double e2e_metric(const char *text, const char *series);
/* The sum of every series whose line starts with prefix. */
double e2e_metric_sum(const char *text, const char *prefix);

/* A target made different by its superuser before a Migration: when the restore creates table
 * ("audit.log"), an event trigger runs ddl on it (no single quotes in it); NULL ddl: a BEFORE
 * INSERT row trigger calling godwit_t.row_fn(), whose plpgsql body is row_body ("RETURN NULL;"
 * drops every row COPY inserts). */
void e2e_target_on_create(struct e2e *e, const char *table, const char *row_body,
                          const char *ddl);

/* Asserts both sides hold the same rows in each table of the sample. */
void e2e_assert_same(struct e2e *e);

/* Records every phase a Migration goes through, from a watch. */
struct e2e_phases {
  struct e2e_rec *r;
};
void e2e_phases_start(struct e2e_phases *p, struct e2e *e, const char *name);
/* Ends the recording (idempotent; e2e_stop ends those still running, so an assertion that ends a
 * test early leaves no thread on a freed client). What was seen stays readable. */
void e2e_phases_stop(struct e2e_phases *p);
bool e2e_phases_saw(struct e2e_phases *p, const char *phase);
/* Waits until the recording saw phase (however briefly it lasted: e2e_wait_phase polls the
 * current phase and misses one that lasts less than its interval). */
bool e2e_phases_wait(struct e2e_phases *p, const char *phase, int timeout_ms);
/* "Pending Validating Cloning ..." (thread-local buffer). */
const char *e2e_phases_list(struct e2e_phases *p);
/* Whether an update showed that phase with that CloneCompleted reason ("-": none); msg (when not
 * NULL, len bytes) gets CloneCompleted's message then. */
bool e2e_phases_saw_clone(struct e2e_phases *p, const char *phase, const char *reason, char *msg,
                          size_t len);
/* "Pending/- Validating/- Cloning/CloneRunning ..." (thread-local buffer). */
const char *e2e_phases_clone_list(struct e2e_phases *p);
/* Whether an update showed condition type with that reason (at any status). */
bool e2e_phases_saw_reason(struct e2e_phases *p, const char *type, const char *reason);
/* "Validated/PreflightRunning CloneCompleted/CloneRunning ..." (thread-local buffer). */
const char *e2e_phases_reasons(struct e2e_phases *p);

/* The controller process: its pid, a SIGKILL, a fresh start with the same flags. */
pid_t e2e_controller_pid(struct e2e *e);
/* The last pid recorded for a process of the cluster (its name in DIR/pids), or 0. */
pid_t e2e_process_pid(struct e2e *e, const char *process);
/* Worker nodes: stops the node agent of node with sig and waits until it is gone. */
void e2e_agent_stop(struct e2e *e, const char *node, int sig);
/* Stops the node agent of node (if it runs) and starts it again with up's flags, plus --fault
 * fault when not NULL; returns once its new endpoint is published. */
void e2e_agent_restart(struct e2e *e, const char *node, const char *fault);
/* A service mesh's sidecar injector (tests/tools/injector.c) registered as a mutating webhook
 * for Pod creates: runner Pods get an istio-proxy container unless they opt out. */
void e2e_injector_start(struct e2e *e);
void e2e_controller_kill(struct e2e *e);
/* A claim left undispatched by a controller that dies while creating its Job. A create in
 * flight when a client dies is still served (kube-apiserver does the same), so refusing creates
 * and clearing the rule after the kill lets a late create of the dead controller land. Instead,
 * e2e_hold_job_create makes the API server hold the next Job create unanswered for 20 s and then
 * refuse it (needs faults, and must be the first rule added); e2e_controller_kill_holding waits
 * until a create is held and kills the controller then: nothing it sent can land later, and the
 * next controller's creates pass. */
void e2e_hold_job_create(struct e2e *e);
void e2e_controller_kill_holding(struct e2e *e);
void e2e_controller_start(struct e2e *e);

/* The pid of the worker container's process group of a Migration (pgcopydb), or 0. */
pid_t e2e_worker_pid(struct e2e *e, const char *name);
/* The same for the running container of any Pod matching a label selector, or 0. */
pid_t e2e_pod_pid(struct e2e *e, const char *selector);

/* Sleeps ms milliseconds. */
void e2e_sleep_ms(long ms);
/* Milliseconds of the monotonic clock. */
long long e2e_mono_ms(void);
/* The Migration name has a Job of that name. */
bool e2e_job_exists(struct e2e *e, const char *name, const char *job);
/* Waits for Complete=True MigrationSucceeded; false at once when the Migration failed instead,
 * or on timeout. The Completed Event comes after the status write: wait for it apart
 * (e2e_wait_event) where it matters. */
bool e2e_wait_complete(struct e2e *e, const char *name, int timeout_ms);

#endif
