/*
 * ptah.h: `godwit-runner ptah-migrate`, the runner step of a PtahMigration operation (Apply or
 * Observe), run by the controller's Job. The contract (flags, report, record, exit codes) is
 * docs/dev/ptah-runner.md; this header is the map of the files.
 *
 *   ptah.c          flags, the protocol check, the order of work, the run's message
 *   ptah_files.c    the migrations directory: names, versions, sha256 checksums
 *   ptah_db.c       connecting, the advisory lock and its continuity, the history table
 *                   (the lock's ptah_lock_* functions serve ptah-plan's Apply too)
 *   ptah_apply.c    validation against the history, then one transaction per version
 *   ptah_report.c   the exit code, the RESULT line and the JSON report (<= 4096 bytes)
 *   ptah_record.c   the PtahResultRecord (ptah.run/v1), created through the Kubernetes API
 *                   (struct ptah_record: ptah-plan delivers its record with it too)
 *
 * Order of work: protocol, files (Apply), connect, lock, history, validate, apply, lock check,
 * report, record. Nothing reaches the database before the files passed, and nothing is applied
 * before the lock is held and the history agrees with the files.
 *
 * Kill-safety: each version runs as BEGIN; <file>; INSERT <history row>; COMMIT. A SIGKILL at
 * any instant leaves each version either committed with its history row or not at all: the
 * server rolls back an open transaction when its client goes, and the row commits with the
 * version's own changes. Only the COMMIT of one version can be in doubt (outcome Unknown), and
 * a migration that ends the transaction itself (Unknown too: what it committed has no row).
 *
 * Secrets: GODWIT_DATABASE_URI and its password are held in the step context's secrets
 * (st_ctx) and redacted from every line, the report and the record.
 *
 * Exit codes (termination.h): 0 Applied, UpToDate or Succeeded (and the record delivered, when
 * durable); 1 Failed, Partial or Unknown; 2 transient (the database could not be reached before
 * anything ran, or the record was not delivered); 3 the Job asks for another protocol.
 */
#ifndef GW_RUNNER_PTAH_H
#define GW_RUNNER_PTAH_H

#include <cJSON.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "digest.h"
#include "step.h"

/* The protocol this runner speaks; the controller passes the one it expects (--protocol). */
#define PTAH_RUNNER_PROTOCOL "1"
/* The advisory lock is (PTAH_LOCK_CLASS, hashtext(<history table as given>)): "ptah". */
#define PTAH_LOCK_CLASS 0x70746168
#define PTAH_VERSION_MAX 999999999999999LL /* 15 digits: room for yyyymmddHHMMSS */
#define PTAH_RECORD_MESSAGE_MAX 32768      /* PtahResultRecord spec.result.message */
#define PTAH_FILE_MAX (16L << 20)          /* a ConfigMap holds at most 1 MiB */
#define PTAH_LOCK_POLL_MS 200

enum pm_type { PM_APPLY, PM_OBSERVE };

/* What the run did; the record's spec.result.outcome. */
enum pm_outcome { PM_FAILED, PM_APPLIED, PM_UPTODATE, PM_PARTIAL, PM_UNKNOWN, PM_SUCCEEDED };

struct pm_opts {
  const char *operation, *type, *owner_name, *namespace, *job_name;
  const char *migrations_dir, *history_table, *protocol, *result;
  const char *release_owed; /* the application_name of a session that may hold the lock */
  long attempt, target, lock_wait_s;
};

/* One migration file. */
struct pm_file {
  long long version;
  char *name;        /* "0001_create_users.sql" */
  char *description; /* "create_users" */
  char *text;        /* the file's bytes, NUL-terminated (a file holding a NUL is refused) */
  size_t len;
  char checksum[DIGEST_SHA256_LEN]; /* sha256:<64 hex> */
};

/* One row of the history table. */
struct pm_row {
  long long version;
  char checksum[DIGEST_SHA256_LEN];
};

struct pm_ctx {
  struct st_ctx st; /* first member: ST_COMMON_OPTS and the st_ helpers address it */
  struct pm_opts o;
  enum pm_type type;
  bool args_ok; /* the flags passed: a record can be named and delivered */
  char schema[64], table[64]; /* the history table, split as given */
  char appname[64];           /* godwit-ptah-<operation>, cut to 63 */

  struct pm_file *files; /* sorted by version */
  size_t nfiles;

  PGconn *conn;
  int backend_pid; /* the session that took the lock */
  bool locked;

  struct pm_row *rows; /* sorted by version */
  size_t nrows;
  bool history_read;   /* from and to are known */
  bool history_exists; /* an Apply creates it; an Observe reads a missing one as version 0 */
  long long from, to, target;
  long long *applied; /* committed by this run */
  size_t napplied;

  enum pm_outcome outcome;
  bool transient; /* exit 2 whatever the record: nothing ran and a retry may help */
  bool lock_continuous, record_delivered;
  bool credential_failed; /* the dry-run record was refused: nothing ran, no record */
  int released;           /* sessions of --release-owed this run terminated */
  char *message; /* what happened, for the record and the report (redacted when written) */
  char started_at[32], finished_at[32];
};

int ptah_migrate_main(int argc, char **argv);

/* ptah_args.c: the flags every Ptah step checks alike. -1 (FAIL config printed, summary set)
 * when one is missing or not a Kubernetes name. */
struct ptah_identity {
  const char *protocol, *operation, *owner_name, *namespace, *job_name;
};
int ptah_check_identity(struct st_ctx *st, const char *step, const struct ptah_identity *id);
int ptah_vbad_arg(struct st_ctx *st, const char *step, const char *fmt, va_list ap);
/* How a Ptah step ends: its exit code (termination.h) and the report's "result" (Passed,
 * Failed, Transient, CredentialFailed). A durable record not delivered makes the run transient;
 * a refused credential wins over everything (nothing ran). */
struct ptah_end {
  bool passed, transient, durable, delivered, credential_failed;
};
int ptah_exit_code(const struct ptah_end *e, const char **result);
/* A step's run message: replaced (reset) or appended to with a space; on running out of memory
 * or length the old one stays, unless replacing. Redacted and cut when written. */
void ptah_vmessage(char **msg, bool reset, const char *fmt, va_list ap)
  __attribute__((format(printf, 3, 0)));

/* The protocol check, on the raw arguments, before anything else (a runner of another protocol
 * may not know the Job's flags). -1 when the protocol matches or is not given; else the report
 * is written and the exit code returned. */
int pm_protocol_check(int argc, char **argv);

/* Sets the run's message (replacing it) and its outcome. */
void pm_set(struct pm_ctx *c, enum pm_outcome o, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Appends a sentence to the message. */
void pm_add(struct pm_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Files (ptah_files.c): 0, or -1 with the outcome Failed and the message naming the files. */
int pm_files_load(struct pm_ctx *c);
const struct pm_file *pm_file_find(const struct pm_ctx *c, long long version);
void pm_files_release(struct pm_ctx *c);

/* Database (ptah_db.c). Each returns 0, or -1 with the outcome and message set. */
int pm_connect(struct pm_ctx *c);
int pm_lock(struct pm_ctx *c);
int pm_history_read(struct pm_ctx *c);
/* Whether the lock's session still holds it (sets lock_continuous), then releases it. */
void pm_unlock(struct pm_ctx *c);
/* The session-level advisory lock (PTAH_LOCK_CLASS, hashtext(key)) on conn, for any Ptah step
 * (ptah-plan's Apply uses the key "ptah.run/PtahSchema"). ptah_lock_take polls it every
 * PTAH_LOCK_POLL_MS for wait_s seconds (0: once): 0 held (*pid: the backend holding it), 1 another
 * session holds it, -1 a query failed (e). ptah_lock_holder names the other session for a
 * message. ptah_lock_release prints whether backend pid still held it (`what`: "the migration
 * lock"), releases it and returns that continuity; false when the connection was lost. */
int ptah_lock_take(PGconn *conn, const char *key, long wait_s, int *pid, struct pgc_err *e);
void ptah_lock_holder(PGconn *conn, const char *key, char *buf, size_t len);
bool ptah_lock_release(struct st_ctx *st, PGconn *conn, const char *key, int pid,
                       const char *what);
/* A statement that failed (or a lost connection) as "<msg> (SQLSTATE x; HINT: h)". */
void pm_describe_err(const struct pgc_err *e, char *buf, size_t len);
/* Fills e from a failed result of PQexec (the server's fields, or the connection's error). */
void pm_result_err(PGconn *conn, const PGresult *res, struct pgc_err *e);
/* The history table quoted for SQL ("public"."ptah_migrations"), malloc'd, or NULL. */
char *pm_history_ident(struct pm_ctx *c);
void pm_db_release(struct pm_ctx *c);

/* Apply and Observe (ptah_apply.c): set the outcome and message. */
void pm_apply(struct pm_ctx *c);
void pm_observe(struct pm_ctx *c);

/* Output (ptah_report.c). */
const char *pm_outcome_name(enum pm_outcome o);
/* The exit code of the run, the RESULT line, the report. */
int pm_finish(struct pm_ctx *c);
/* "2026-01-02T15:04:05Z", now. */
void pm_now_rfc3339(char *buf, size_t len);
/* A monotonic clock in milliseconds (timings, deadlines). */
long long pm_now_ms(void);

/* The legacy transport (--result log): the record's content framed on stdout, last:
 *   ptah-result-begin operation=<id> attempt=<n> job=<job>
 *   <the PtahResultRecord as one line of JSON>
 *   ptah-result-end sha256:<digest of that line>
 * The termination report is the summary a reader may fall back on. */
#define PTAH_FRAME_BEGIN "ptah-result-begin"
#define PTAH_FRAME_END "ptah-result-end"
void pm_record_frame(struct pm_ctx *c);
/* The record (ptah_record.c): sets record_delivered; prints PASS or FAIL record. */
void pm_record_deliver(struct pm_ctx *c);

/* A PtahResultRecord (ptah.run/v1) as any Ptah step delivers it (ptah_record.c): ptah-migrate
 * and ptah-plan describe theirs in this struct, and share the builder, the delivery and the
 * credential proof. Nothing here is owned: the struct points at the caller's strings. */
struct ptah_record {
  const char *owner_kind; /* "PtahMigration" or "PtahSchema" */
  const char *owner_name, *namespace, *job_name;
  const char *operation, *type; /* spec.operation.id and .type */
  long attempt;
  const char *outcome;
  const char *message;             /* redacted with secrets, cut to PTAH_RECORD_MESSAGE_MAX */
  const char *const *secrets;      /* nsecrets of them; NULL entries are skipped */
  size_t nsecrets;
  const char *started_at, *finished_at; /* NULL or "": left out */
  const cJSON *result_extra; /* its members are copied into spec.result after the above */
};
/* The record as JSON (cJSON_Delete it), or NULL when out of memory. */
cJSON *ptah_record_build(const struct ptah_record *r);
/* Creates the record with the Pod's credential: retried while a failure may pass, a 409 read
 * back (ours: delivered before). Prints PASS or FAIL record; true when delivered. */
bool ptah_record_deliver(struct st_ctx *st, const struct ptah_record *r);
/* The dry run of the record (see pm_record_credential): 0 when this Pod may create it, else -1
 * with FAIL credential printed and why set (for the run's message). */
int ptah_record_credential(struct st_ctx *st, const struct ptah_record *r, char *why,
                           size_t len);
/* The delivery credential, proven before anything runs: the record this run will write is
 * created with dryRun=All (authentication, RBAC and the webhook's writer rules all judge it,
 * nothing is stored), waiting up to PM_CREDENTIAL_WAIT_MS for a token or an API server that is
 * not there yet. -1 (credential_failed set, FAIL credential printed) when it is refused. */
int pm_record_credential(struct pm_ctx *c);

#endif
