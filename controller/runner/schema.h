/*
 * schema.h: `godwit-runner ptah-plan`, the plan engine of a PtahSchema: the desired schema (SQL
 * DDL) against the live database gives an ordered list of DDL statements. A Plan or an Observe
 * is read-only; an Apply runs the plan a person approved (its digest), under the PtahSchema
 * lock, in one transaction. The contract (flags, report, plan JSON, record, exit codes) and the
 * engine's rules are docs/dev/ptah-plan-engine.md; this header is the map of the files.
 *
 *   schema.c          flags, the protocol check (ptah-migrate's), the order of work
 *   schema_catalog.c  the catalog queries: one row per object kind, one per refused kind
 *   schema_read.c     the model read with libpq, its canonical text and fingerprint
 *   schema_scratch.c  the sessions: the target, and where the desired SQL is materialised
 *   schema_split.c    the desired SQL cut into statements, so a load error names its line
 *   schema_mark.c     what the diff drops: sets of objects, dependents to a fixed point
 *   schema_diff.c     the diff's order of work: drops, creates, views, comments
 *   schema_table.c    the diff of tables and columns
 *   schema_plan.c     statements, the digest, the plan JSON and the report
 *   schema_policy.c   protected tables: a plan that changes one is refused
 *   schema_apply.c    an Apply: the lock, the approved digest, the statements, the verification
 *   schema_record.c   the PtahResultRecord (--result durable), through ptah_record.c
 *
 * Order of work: protocol, flags, the desired file, (durable) the delivery credential, connect
 * to the target (read-only session; read-write for an Apply), (Apply) the lock, read its model,
 * materialise the desired SQL (scratch or dev database, one transaction rolled back), read that
 * model, refuse uncovered objects of either side, diff, digest, protected tables, (Apply) the
 * approved digest, the statements, the verification, the lock check; plan file, record, report.
 *
 * The model: every object of the covered kinds in the schemas in scope (all but pg_*,
 * information_schema and the schemas of extensions; extension members left out), read with
 * search_path = '' so that every name the server prints is schema-qualified, and without OIDs,
 * owners, privileges or the database's name: two databases built from the same SQL give
 * byte-identical canonical texts. Strings live in the model's arena.
 *
 * Secrets: GODWIT_DATABASE_URI, GODWIT_DEV_DATABASE_URI and their passwords are redacted from
 * every line, the report and the record's message (st_ctx secrets); a plan whose statements
 * hold one is neither written, nor recorded, nor applied.
 *
 * Exit codes (termination.h): 0 the plan was computed (Plan, Observe: outcome Succeeded, maybe
 * empty) or applied (Applied, UpToDate), and the record delivered when durable; 1 Failed,
 * Partial or Unknown (bad flags or file, refused objects or plan, desired SQL that does not
 * load, no way to materialise, a stale or failed Apply); 2 transient (a connection that may
 * pass, a lost session before anything ran, a record not delivered); 3 the Job asks for another
 * protocol; 4 the delivery credential was refused (nothing read).
 */
#ifndef GW_RUNNER_SCHEMA_H
#define GW_RUNNER_SCHEMA_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "digest.h"
#include "step.h"

#define SP_DESIRED_MAX (16L << 20) /* the desired SQL file, as ptah-migrate's files */
#define SP_SCRATCH_PREFIX "ptah_scratch_"
#define SP_SCRATCH_STALE_S 3600 /* a scratch database older than this is a dead run's */
#define SP_REFUSED_SHOWN 20     /* refused objects named in the message */
#define SP_LOCK_KEY "ptah.run/PtahSchema" /* the Apply lock: (PTAH_LOCK_CLASS, hashtext(key)) */
#define SP_RECORD_MAX 1048576   /* the record's JSON; above, plan.statements are left out */
#define SP_LABELS_SHOWN 20      /* statement labels named in a message */

/* ----- the model ------------------------------------------------------------------------- */

/* In creation order; the canonical text lists the kinds in this order. */
enum sm_kind {
  SM_SCHEMA, SM_EXTENSION, SM_ENUM, SM_SEQUENCE, SM_TABLE, SM_COLUMN, SM_CONSTRAINT, SM_INDEX,
  SM_VIEW, SM_COMMENT, SM_NKINDS
};

#define SM_NFIELDS 10

/* Fields of each kind (f[]), as schema_catalog.c selects them. */
enum { F_EXT_SCHEMA, F_EXT_VERSION };
enum { F_ENUM_LABELS };               /* quoted literals, one a line, in sort order */
enum { F_SEQ_TYPE, F_SEQ_START, F_SEQ_INC, F_SEQ_MIN, F_SEQ_MAX, F_SEQ_CACHE, F_SEQ_CYCLE,
       F_SEQ_OWNER, F_SEQ_OWNER_Q };  /* owner: the OWNED BY column's key, "" for none */
enum { F_COL_TYPE, F_COL_COLLATE, F_COL_NOTNULL, F_COL_DEFAULT, F_COL_IDENTITY, F_COL_IDOPTS,
       F_COL_GENERATED, F_COL_POS };
enum { F_CON_TYPE, F_CON_DEF };
enum { F_IDX_DEF };
enum { F_VIEW_DEF };
enum { F_COM_TEXT, F_COM_OWNER };     /* the literal; the relation of a column ("table:s.t") */

struct sm_obj {
  const char *key;    /* unique within the kind: "public.users.email" */
  const char *parent; /* the table of a column, constraint or index; the owning table of a
                       * sequence; the "kind:key" a comment is on; "" else */
  const char *qname;  /* for SQL: "public"."users"; a column's or constraint's own name; a
                       * comment's target ("COLUMN public.users.email") */
  const char *deps;   /* "kind:key" lines of what it depends on (pg_depend), "" for none */
  const char *f[SM_NFIELDS];
};

struct sm_list {
  struct sm_obj *v; /* sorted by key (strcmp) */
  size_t n;
};

struct sm_model {
  struct arena arena;
  struct sm_list k[SM_NKINDS];
  const char **refused; /* "function public.f(integer)", sorted */
  size_t nrefused;
};

/* The catalog queries (schema_catalog.c). */
struct sm_query {
  enum sm_kind kind;
  const char *name; /* "column": the canonical text's word and the "kind:" of keys */
  const char *sql;  /* k, parent, qname, deps, then the fields */
};
extern const struct sm_query sm_queries[SM_NKINDS];
/* One query naming every object of a kind the engine does not cover, one text column. */
extern const char *const sm_refusal_sql;
const char *sm_kind_name(enum sm_kind k);

/* Reads the model on conn (search_path is set to '' for the session or transaction in
 * progress). 0, or -1 with e filled. */
int sm_read(PGconn *conn, struct sm_model *m, struct pgc_err *e);
void sm_release(struct sm_model *m);
/* The object of key in kind, or NULL. */
const struct sm_obj *sm_find(const struct sm_model *m, enum sm_kind k, const char *key);
/* The canonical text (malloc'd) and its sha256 ("sha256:<hex>"); -1 when out of memory. */
int sm_fingerprint(const struct sm_model *m, char out[DIGEST_SHA256_LEN]);
char *sm_canonical(const struct sm_model *m);

/* ----- the plan -------------------------------------------------------------------------- */

struct sp_stmt {
  const char *sql;   /* one statement, no final ';' */
  const char *label; /* "drop column public.users.age" */
  const char *table; /* "public.users": the table it creates, alters, drops or rebuilds (a
                      * column, constraint, index or comment of it counts); NULL for none */
  bool destructive;  /* loses data or a definition the plan does not recreate, or rewrites */
  bool own_txn;      /* ALTER TYPE ... ADD VALUE: commit it before the statements that follow */
};

struct sp_plan {
  struct arena arena;
  struct sp_stmt *v;
  size_t n, cap, ndestructive;
  char fingerprint[DIGEST_SHA256_LEN]; /* of the target catalog */
  char digest[DIGEST_SHA256_LEN];
  char *summary; /* in the arena */
  char err[1024]; /* a diff refusal ("enum type public.mood: values removed ...") */
};

void sp_plan_init(struct sp_plan *p);
void sp_plan_release(struct sp_plan *p);
/* Appends a statement (label and sql are kept, not copied: sp_fmt them; table, the key of the
 * table it touches or NULL, is copied); -1 when out of memory or when label or sql is NULL. */
int sp_add(struct sp_plan *p, const char *table, bool destructive, bool own_txn,
           const char *label, const char *sql);
/* A string in the plan's arena (printf), or NULL. */
char *sp_fmt(struct sp_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The diff (schema_diff.c): appends the statements taking `have` to `want`. 0, or -1 with
 * p->err set (a change the engine cannot make, or out of memory). */
int sd_diff(const struct sm_model *have, const struct sm_model *want, struct sp_plan *p);

/* Diff internals shared by schema_diff.c, schema_mark.c and schema_table.c. */
struct sd_set { /* "kind:key" strings, an open-addressing hash set (schema_mark.c) */
  char **v;
  size_t cap, n;
};
struct sd_ctx {
  const struct sm_model *have, *want;
  struct sp_plan *p;
  struct sd_set *gone;    /* objects of `have` this plan drops (or that go with a drop) */
  struct sd_set *retyped; /* columns whose type changes in place */
  int rc;
};
bool sd_has(const struct sd_set *s, const char *kind, const char *key);
bool sd_has_full(const struct sd_set *s, const char *full);
int sd_put(struct sd_set *s, const char *kind, const char *key);
void sd_set_free(struct sd_set *s);
/* Whether one of deps' "kind:key" lines is in s; whether deps names kind:key. */
bool sd_deps_in(const char *deps, const struct sd_set *s);
bool sd_deps_name(const char *deps, const char *kind, const char *key);
/* Whether the plan drops have's object kind:key. */
bool sd_goes(const struct sd_ctx *d, enum sm_kind k, const char *key);
/* Marks what goes (schema_mark.c), after sdt_mark; 0 or -1. */
int sd_mark(struct sd_ctx *d);
/* Tables and columns: which columns go or change (before the drops), then their statements. */
int sdt_mark(struct sd_ctx *d);
int sdt_drop(struct sd_ctx *d);
int sdt_create(struct sd_ctx *d);
/* Whether changing a column's type from a to b keeps every value without a rewrite. */
bool sdt_widening(const char *a, const char *b);

/* Digest, summary, plan JSON (schema_plan.c). binding may be "". */
int sp_finish_plan(struct sp_plan *p, const char *binding);

/* ----- the step -------------------------------------------------------------------------- */

struct sp_opts {
  const char *operation, *owner_name, *namespace, *job_name, *protocol, *result, *type;
  const char *desired, *plan_out, *binding, *approved_digest, *plan_fingerprint;
  const char *protected_tables[CFG_MAX_LIST]; /* --help only: see sp_ctx.protected_args */
  long attempt, lock_wait_s;
};

enum sp_type { SP_PLAN, SP_APPLY, SP_OBSERVE };
/* What the run did; the record's spec.result.outcome. Plan and Observe end Succeeded or Failed;
 * an Apply Applied, UpToDate, Failed, Partial or Unknown. */
enum sp_outcome { SP_FAILED, SP_SUCCEEDED, SP_APPLIED, SP_UPTODATE, SP_PARTIAL, SP_UNKNOWN };

struct sp_ctx {
  struct st_ctx st; /* first member: ST_COMMON_OPTS and the st_ helpers address it */
  struct sp_opts o;
  enum sp_type type;
  bool args_ok, durable;
  char appname[64];
  char *desired; /* the file's text */
  char desired_sum[DIGEST_SHA256_LEN];
  const char **protected_args; /* the --protected-table values, taken out of argv */
  size_t nprotected_args;
  char **protected; /* "schema.table", malloc'd (schema_policy.c) */
  size_t nprotected;

  PGconn *conn;   /* the target: read-only, or read-write and locked for an Apply */
  PGconn *admin;  /* the target's server, for CREATE/DROP DATABASE of the scratch one */
  PGconn *dev;    /* where the desired SQL is loaded (scratch or dev database): its endpoint
                   * is st.dst, the target's st.src, so that st_redact covers both passwords */
  const char *materialised; /* "scratch" or "devDatabase", NULL before */
  char scratch[64];         /* the scratch database's name, "" when none was created */

  struct sm_model have, want;
  bool have_read, want_read;
  struct sp_plan plan;
  bool planned; /* the plan was computed (and holds no secret) */

  int backend_pid; /* Apply: the session holding the lock */
  bool locked, lock_continuous;

  enum sp_outcome outcome;
  const char *refusal; /* NULL, "ProtectedTableRefused" or "PlanStale" */
  bool transient;
  bool record_delivered, credential_failed;
  char *message;
  char started_at[32], finished_at[32];
};

int ptah_plan_main(int argc, char **argv);

void sp_set(struct sp_ctx *c, enum sp_outcome o, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Appends a sentence to the message. */
void sp_add_message(struct sp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sp_outcome_name(enum sp_outcome o);
const char *sp_type_name(enum sp_type t);

/* Materialisation (schema_scratch.c): connects c->dev to a scratch database (created) or to
 * GODWIT_DEV_DATABASE_URI, loads the desired SQL in a transaction left open (the model is read in
 * it, then it is rolled back). 0, or -1 with the outcome and message set. */
int sp_materialise(struct sp_ctx *c);
/* The length of the first statement of sql, its ';' included (schema_split.c). */
size_t sp_statement_len(const char *sql);
/* Rolls back, disconnects, drops the scratch database (also after a failure). */
void sp_dematerialise(struct sp_ctx *c);
/* Connects to the target: the read-only session (and the admin one when a scratch database may
 * be made). */
int sp_connect(struct sp_ctx *c);
/* A failed query before the plan: message, outcome, transient when the connection went. */
int sp_query_failed(struct sp_ctx *c, const char *id, const char *what, const struct pgc_err *e);

/* The plan as JSON (malloc'd), or NULL when out of memory (schema_plan.c): the plan file. */
char *sp_plan_json(const struct sp_ctx *c);
/* Whether the plan's JSON holds a known secret: then it is not planned (-1, message set). */
int sp_plan_secret(struct sp_ctx *c);
/* The end (schema_plan.c): writes --plan-out, delivers the record (durable), prints RESULT,
 * writes the report; the exit code. */
int sp_finish(struct sp_ctx *c);

/* Protected tables (schema_policy.c): sp_protected_parse reads --protected-table into
 * c->protected (-1: a bad name, FAIL config printed); sp_protect refuses a plan with a
 * statement on one (-1, outcome Failed, refusal ProtectedTableRefused). */
int sp_protected_parse(struct sp_ctx *c);
int sp_protect(struct sp_ctx *c);
void sp_protected_release(struct sp_ctx *c);

/* An Apply (schema_apply.c). sp_lock takes the PtahSchema lock in c->conn (-1: held elsewhere
 * or a failed query, outcome Failed); sp_apply checks the approved digest, runs the plan and
 * verifies it, setting the outcome; sp_unlock proves and releases the lock. */
int sp_lock(struct sp_ctx *c);
void sp_apply(struct sp_ctx *c);
void sp_unlock(struct sp_ctx *c);

/* The record (schema_record.c). sp_record_credential: the dry run before anything is read (-1:
 * credential_failed, outcome Failed). sp_record_deliver sets record_delivered. */
int sp_record_credential(struct sp_ctx *c);
void sp_record_deliver(struct sp_ctx *c);

#endif
