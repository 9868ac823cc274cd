/*
 * pgfixture.h: a real PostgreSQL 15 server for one test (Criterion), on a free loopback port.
 *
 *   struct pgfx pg;
 *   pgfx_start(&pg, &(struct pgfx_opts){ .logical = true });
 *   pgfx_create_role(&pg, "app", "s3cret", "LOGIN");
 *   pgfx_create_db(&pg, "shop", NULL);
 *   char uri[256];
 *   pgfx_uri(&pg, uri, sizeof(uri), "app", "s3cret", "shop"); // postgres://app:s3cret@127.0.0.1:P/shop
 *   pgfx_exec(&pg, "shop", "create table t(id int primary key)");
 *   pgfx_stop(&pg);
 *
 * What it promises:
 *  - The binaries are Debian's (/usr/lib/postgresql/15/bin). initdb runs once per machine into a
 *    template under /tmp (renamed into place atomically, so concurrent tests share it); each
 *    server copies the template into its own temp dir (data dir, unix socket dir, server.log).
 *  - initdb refuses root: as root the servers run as the system user "godwit-pg", created on first
 *    use (useradd, idempotent), through setuid in a forked child.
 *  - TCP on 127.0.0.1 only, password authentication (scram-sha-256) for every role, the
 *    replication pseudo-database included; the superuser "postgres" gets a random password
 *    (pgfx.password). The fixture itself talks to the server over the unix socket (trust).
 *  - The postmaster dies with the test process (PR_SET_PDEATHSIG), even when an assertion ends
 *    the test before pgfx_stop; a later pgfx_start removes the directories of dead owners.
 *  - Every helper asserts (cr_assert) on failure unless it says it returns an error.
 *  - The servers are configured as the package leaves them, as a user's are: on PostgreSQL 15.20
 *    (Debian 12's current point release) output_plugin_libraries allows pgoutput and
 *    test_decoding only, so a slot with wal2json (the only plugin of Debian's pgcopydb 0.10) is
 *    refused until an admin adds it: .allow_plugins does what docs/api/migration.md tells that
 *    admin to do. 15.18 has no such setting and allows every installed plugin; .bin runs such a
 *    server (tests/pg/pg-without-plugin-setting.sh unpacks one).
 */
#ifndef GW_TESTS_PGFIXTURE_H
#define GW_TESTS_PGFIXTURE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pgfx_opts {
  bool logical;                         /* wal_level = logical (default: replica) */
  int max_replication_slots;            /* 0: 10 */
  int max_wal_senders;                  /* 0: 10 */
  const char *shared_preload_libraries; /* NULL: none */
  bool log_statements;                  /* log_statement = all, in server.log */
  const char *const *conf;              /* more "name = value" lines, NULL-terminated */
  const char *allow_plugins;            /* appended to output_plugin_libraries where the server
                                         * has it ("wal2json"); NULL: the package default */
  const char *bin;                      /* the server's bin directory; NULL: Debian's */
};

struct pgfx {
  char dir[96];    /* /tmp/godwit-pg-XXXXXX, owned by the server's user */
  char data[128];  /* dir/data */
  char sock[128];  /* dir/sock, the unix socket directory */
  char log[128];   /* dir/server.log */
  int port;
  pid_t pid;       /* the postmaster */
  char password[33]; /* of the superuser "postgres" */
  char bin[200];     /* the server's bin directory */
};

void pgfx_start(struct pgfx *pg, const struct pgfx_opts *opts);
/* Whether the server of bin (NULL: Debian's) has the setting name (postgres --describe-config). */
bool pgfx_has_setting(const char *bin, const char *name);
/* The bin directory of a PostgreSQL 15 older than output_plugin_libraries (15.18), unpacked
 * from Debian's archive by tests/pg/pg-without-plugin-setting.sh; asserts it has no such
 * setting. Run from the top of the tree. */
void pgfx_bin_without_plugin_setting(char *out, size_t len);
/* Fast shutdown, then the directory is removed. Safe to call twice. */
void pgfx_stop(struct pgfx *pg);
/* Stops and starts the same server (same port and data): for postmaster-level settings
 * changed with ALTER SYSTEM. */
void pgfx_restart(struct pgfx *pg);
/* Stops the server (fast shutdown: its clients' sessions are cut) and keeps its data;
 * pgfx_resume starts it again on the same port. */
void pgfx_halt(struct pgfx *pg);
void pgfx_resume(struct pgfx *pg);

/* A superuser connection over the unix socket to db (NULL: "postgres"). PQfinish it. */
PGconn *pgfx_connect(struct pgfx *pg, const char *db);
/* Runs SQL (one or more statements) as the superuser; asserts success. */
void pgfx_exec(struct pgfx *pg, const char *db, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Runs SQL as the superuser; 0 on success, else -1 with the server's message in err. */
int pgfx_try(struct pgfx *pg, const char *db, char *err, size_t errlen, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
/* The first column of the first row (malloc'd; free it), or NULL when there is no row or it
 * is NULL. Asserts the query succeeds. */
char *pgfx_query1(struct pgfx *pg, const char *db, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* CREATE ROLE name [attrs] [PASSWORD password]; attrs such as "LOGIN REPLICATION". */
void pgfx_create_role(struct pgfx *pg, const char *name, const char *password, const char *attrs);
/* CREATE DATABASE name [OWNER owner]. */
void pgfx_create_db(struct pgfx *pg, const char *name, const char *owner);

/* postgres://user:password@127.0.0.1:PORT/db (password omitted when NULL); returns buf. */
const char *pgfx_uri(const struct pgfx *pg, char *buf, size_t len, const char *user,
                     const char *password, const char *db);
/* The superuser's URI for db. */
const char *pgfx_super_uri(const struct pgfx *pg, char *buf, size_t len, const char *db);

#endif
