/*
 * pgconn.h: the runner's libpq layer: endpoints parsed from connection URIs, connecting with a
 * timeout and retries, classifying failures, and queries that report the server's error.
 *
 * Secrets: an endpoint keeps the parsed URI (password included) only to connect. Its
 * description, `source (host:port/db, user U)`, never holds the password, and no function here
 * prints anything: callers put descriptions and the server's error line in their messages.
 * libpq's own parse errors can quote the raw string, so pgc_endpoint_parse never returns them.
 *
 * Failure classes: PGC_PERMANENT (bad password, unknown role or database, no pg_hba.conf entry,
 * no CONNECT right, a malformed URI): retrying cannot help, stop after the same message twice.
 * PGC_TRANSIENT (refused, unreachable, timeout, server starting or shutting down, too many
 * connections, a lost connection): retry up to the attempt budget.
 */
#ifndef GW_RUNNER_PGCONN_H
#define GW_RUNNER_PGCONN_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

enum pgc_class { PGC_OK, PGC_PERMANENT, PGC_TRANSIENT };

struct pgc_endpoint {
  char label[48];    /* "source", "target", "superuser on target" */
  char desc[320];    /* label (host:port/db, user U) */
  char user[128];    /* the user it logs in as */
  char db[128];      /* the database name */
  char **kw, **val;  /* connection keywords and values (owned), NULL-terminated */
  const char *password; /* points into val; NULL when none */
};

struct pgc_retry {
  int attempts;        /* connection attempts for transient failures, >= 1 */
  int delay_ms;        /* before the second attempt; doubles, at most 10 s */
  int connect_timeout; /* seconds, per attempt */
};

/* Parses a connection URI (or key=value string). On failure err says what is wrong without
 * quoting the input. */
gw_rc pgc_endpoint_parse(struct pgc_endpoint *ep, const char *label, const char *uri, char *err,
                         size_t errlen) GW_MUST_CHECK;
/* base's host, port, database and options with cred's user and password. */
gw_rc pgc_endpoint_with_user(struct pgc_endpoint *ep, const char *label,
                             const struct pgc_endpoint *base, const struct pgc_endpoint *cred)
  GW_MUST_CHECK;
void pgc_endpoint_release(struct pgc_endpoint *ep);

/* Connects with retries. On failure *out is NULL and why holds the server's (or libpq's) last
 * error line. */
enum pgc_class pgc_connect(const struct pgc_endpoint *ep, const struct pgc_retry *r, PGconn **out,
                           char *why, size_t whylen);
/* The class of a connection error message. */
enum pgc_class pgc_classify(const char *msg);

/* A failed statement: SQLSTATE, the primary message, whether retrying may help. */
struct pgc_err {
  char sqlstate[6];
  char msg[512];
  char hint[256]; /* the server's HINT, "" when it gave none */
  bool transient;
};

/* Runs sql with text parameters. Returns the result (PQclear it) when it succeeded, else NULL
 * with e filled. */
PGresult *pgc_query(PGconn *c, struct pgc_err *e, const char *sql, int nparams,
                    const char *const *params);
/* Runs a statement that returns no rows; 0 or -1 with e filled. */
int pgc_exec(PGconn *c, struct pgc_err *e, const char *sql);
/* The first cell of a one-row query, copied into out ("" when NULL); 0 or -1. */
int pgc_value(PGconn *c, struct pgc_err *e, char *out, size_t outlen, const char *sql,
              int nparams, const char *const *params);
/* A quoted identifier (malloc'd; free()), or NULL when out of memory. */
char *pgc_ident(PGconn *c, const char *name);
/* A text[] literal of names ({"a","b"}), for `= ANY($1::text[])`; malloc'd, or NULL. */
char *pgc_text_array(const char *const *names, size_t n);

#endif
