/*
 * preflight.h: the runner's preflight step, shared by its files.
 *
 *   preflight.c      the check table, the rounds, the decision and the exit code
 *   options.c        the flags
 *   outcome.c        what a check calls to report (pf_pass, pf_fail, pf_fix, ...)
 *   checks_server.c  versions, superuser connections, database listing, scope, read rights
 *   checks_clone.c   the clone tier on the target (CREATE rights, extensions, ownerAfterRestore)
 *   checks_follow.c  the follow prerequisites (wal_level, slots, REPLICATION, replica identity,
 *                    sentinel on the source; replication origins, session_replication_role on
 *                    the target)
 *   scope.c          the schemas and tables in scope (--include/--exclude-schema/-table)
 *   remediate.c      applying the grants with the superuser
 *   report.c         the check lines on stdout and the preflight's fields of the JSON report
 *
 * It stands on the runner's step framework (step.h): struct pf_ctx starts with a struct st_ctx
 * (the common flags, the migration roles' endpoints and sessions, redaction of every secret
 * including the superuser's, the result, the summary, st_finish writing the report at most
 * 4096 bytes long).
 *
 * A check is a row of pf_checks[] (preflight.c): an id the controller and the docs quote, when it
 * runs, and a function that fills one pf_out. A check that fails because of a missing grant
 * records the exact statement with pf_fix(); a failure it cannot fix by a grant calls
 * pf_block(). The decision follows: any blocking failure fails the preflight; fixes alone are
 * applied through the superuser URI (or listed, in a dry run), then every check runs again.
 *
 * Exit codes: 0 passed (remediated or not), 1 failed for good, 2 transient (retry the step).
 */
#ifndef GW_RUNNER_PREFLIGHT_H
#define GW_RUNNER_PREFLIGHT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "pgconn.h"
#include "step.h"
#include "termination.h"

enum pf_tier { PF_CLONE, PF_FOLLOW };
enum pf_status { PF_PASS, PF_WARN, PF_FAIL, PF_SKIP };

/* A fix that reloads the server's configuration (after ALTER SYSTEM): pf_apply waits until the
 * checks' own session of that side has reloaded too, so the checks run again on the new value. */
#define PF_RELOAD_SQL "SELECT pg_reload_conf()"

struct pf_list {
  const char **v;
  size_t n;
};

/* The preflight's own flags; the common ones, --slot-name and --output-plugin are in st.o. */
struct pf_opts {
  int follow, dry_run;
  const char *owner_after_restore, *pgcopydb_version;
  struct pf_list extensions, include_schemas, exclude_schemas, include_tables, exclude_tables;
  const char *unused_list[CFG_MAX_LIST]; /* see options.c: lists are parsed before cfg */
};

/* pgcopydb as found on PATH (or given with --pgcopydb-version). */
struct pf_pgcopydb {
  bool known;
  char text[64]; /* "0.10-1" */
  int major, minor;
  int pg_major; /* the PostgreSQL it was built for (its pg_dump), 0 when unknown */
};

struct pf_out {
  const char *id;
  enum pf_status status;
  bool blocking;  /* a failure no grant fixes */
  bool transient; /* a query failed in a way a retry may fix */
  size_t nfix;    /* grants recorded by this check */
  char message[768];
  char recovery[2048];
};

struct pf_fix {
  enum pf_tier tier;
  enum st_side side;
  size_t check; /* index into the round's outcomes */
  char *sql;
};

struct pf_table {
  char *schema, *name;
  char replident; /* d, n, f, i */
  bool has_pk, has_ri_index, unlogged;
};

struct pf_ctx {
  /* first: the common flags (ST_COMMON_OPTS), the migration roles' endpoints and sessions
   * (st.src, st.dst, st.src_c, st.dst_c), the lines, redaction, result, summary and report */
  struct st_ctx st;
  struct pf_opts o;
  struct pgc_endpoint su_src, su_dst; /* the superuser's user and password on each side */
  bool have_su;
  PGconn *su_src_c, *su_dst_c;
  char src_role[128], dst_role[128]; /* current_user on each side */
  int src_num, dst_num;              /* server_version_num */
  char src_ver[64], dst_ver[64];     /* server_version */
  struct pf_pgcopydb pgcopydb;
  char plugin[32]; /* the output plugin source.outputPlugin chose, "" until it passes */
  char **schemas; /* in scope, read from the source */
  size_t nschemas;
  struct pf_table *tables; /* in scope, read from the source once */
  size_t ntables;
  bool tables_read;

  /* the current round */
  struct pf_out *out;
  size_t nout, capout;
  struct pf_fix *fixes;
  size_t nfix, capfix;
  /* applied (or, in a dry run, that would be applied) */
  struct pf_fix *applied;
  size_t napplied, capapplied;
  /* the failure the report names: a check's outcome, or own (the config's, the remediation's) */
  const struct pf_out *failed;
  struct pf_out own;
};

enum pf_when { PF_ALWAYS, PF_WITH_FOLLOW, PF_WITH_SUPERUSER, PF_WITH_FOLLOW_SUPERUSER };

struct pf_check {
  const char *id;
  enum pf_when when;
  void (*run)(struct pf_ctx *c, struct pf_out *r);
};

int preflight_main(int argc, char **argv);

/* Flags (options.c), through st_init: 0 go on, 1 --help was answered, -1 bad flags (the FAIL
 * config line printed, the result Failed). */
int pf_opts_parse(struct pf_ctx *c, int argc, char **argv);
void pf_opts_release(struct pf_opts *o);

/* Outcome helpers for checks. pf_pass/pf_warn/pf_skip set the message; pf_fail sets the
 * message of a failure; pf_block sets the recovery of a failure no grant fixes. A failure with
 * pf_fix statements and no pf_block is fixed by grants; one without either counts as blocking. */
void pf_pass(struct pf_out *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pf_warn(struct pf_out *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pf_skip(struct pf_out *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pf_fail(struct pf_out *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pf_block(struct pf_out *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a grant that fixes r (sql is composed by the caller with pgc_ident quoting). */
void pf_fix(struct pf_ctx *c, struct pf_out *r, enum pf_tier tier, enum st_side side,
            const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A failed query: r fails, blocking, transient when e says so. */
void pf_query_failed(struct pf_out *r, const struct pgc_err *e, const char *what);
/* The checks' session and the role of a side (st_desc(&c->st, s) describes it). */
PGconn *pf_conn(struct pf_ctx *c, enum st_side s);
const char *pf_role(const struct pf_ctx *c, enum st_side s);
const char *pf_tier_name(enum pf_tier t);
/* Appends to a bounded message ("a, b, c and 4 more" lists). */
void pf_appendf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* pgcopydb version tests: true when known and older than major.minor. */
bool pf_pgcopydb_older(const struct pf_ctx *c, int major, int minor);

/* The checks (checks_*.c). */
void pf_chk_connect_source(struct pf_ctx *c, struct pf_out *r);
void pf_chk_connect_target(struct pf_ctx *c, struct pf_out *r);
void pf_chk_versions(struct pf_ctx *c, struct pf_out *r);
void pf_chk_pgcopydb(struct pf_ctx *c, struct pf_out *r);
void pf_chk_su_source(struct pf_ctx *c, struct pf_out *r);
void pf_chk_su_target(struct pf_ctx *c, struct pf_out *r);
void pf_chk_listing(struct pf_ctx *c, struct pf_out *r);
void pf_chk_scope(struct pf_ctx *c, struct pf_out *r);
void pf_chk_read(struct pf_ctx *c, struct pf_out *r);
void pf_chk_extensions(struct pf_ctx *c, struct pf_out *r);
void pf_chk_create_db(struct pf_ctx *c, struct pf_out *r);
void pf_chk_create_schemas(struct pf_ctx *c, struct pf_out *r);
void pf_chk_owner_after_restore(struct pf_ctx *c, struct pf_out *r);
void pf_chk_db_owner(struct pf_ctx *c, struct pf_out *r);
void pf_chk_wal_level(struct pf_ctx *c, struct pf_out *r);
void pf_chk_slots(struct pf_ctx *c, struct pf_out *r);
void pf_chk_replication_role(struct pf_ctx *c, struct pf_out *r);
void pf_chk_output_plugin(struct pf_ctx *c, struct pf_out *r);
void pf_chk_sentinel(struct pf_ctx *c, struct pf_out *r);
void pf_chk_replica_identity(struct pf_ctx *c, struct pf_out *r);
void pf_chk_unlogged(struct pf_ctx *c, struct pf_out *r);
void pf_chk_origin(struct pf_ctx *c, struct pf_out *r);
void pf_chk_session_role(struct pf_ctx *c, struct pf_out *r);

/* pgcopydb on PATH (checks_server.c). */
void pf_detect_pgcopydb(struct pf_pgcopydb *p, const char *override);

/* Scope (scope.c). */
int pf_scope_load(struct pf_ctx *c, struct pgc_err *e);
int pf_tables_load(struct pf_ctx *c, struct pgc_err *e);
bool pf_table_in_scope(const struct pf_ctx *c, const char *schema, const char *name);
/* Splits "schema.name" or "\"Schema\".\"Name\"" (pgcopydb's filter syntax); 0 or -1. */
int pf_split_qualified(const char *s, char *schema, size_t slen, char *name, size_t nlen);
void pf_scope_release(struct pf_ctx *c);

/* Remediation (remediate.c): applies the round's fixes as the superuser, clone tier first.
 * Returns 0, or -1 with r describing the statement that failed. */
int pf_apply(struct pf_ctx *c, struct pf_out *r);

/* Output (report.c): the check lines (through st_print, so redacted and one line each) and
 * the report's fields after "summary", rendered by st_finish at its levels of detail. */
void pf_print_check(const struct pf_ctx *c, const struct pf_out *r);
gw_rc pf_report_fields(const struct st_ctx *st, struct strbuf *sb, const struct st_level *l,
                       bool *cut, void *arg) GW_MUST_CHECK;

#endif
