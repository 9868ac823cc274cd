/*
 * pgpool.h: database sessions a controller keeps between uses (a probe sample every few
 * seconds must not pay a SCRAM login each time: 15-50 ms against a busy server, the query under
 * 1 ms; bench/migration). Any kind's reconciler may use one; the pool is an explicit object the
 * program creates and frees, never a static.
 *
 * A session is kept under (owner, side, digest): the owner's uid, which of its servers, and the
 * SHA-256 of the connection URI read from the Secret at each use, so a rotated password or a
 * moved server gets a new session. pg_pool_take hands a kept session out (it leaves the pool: a
 * reconcile of one key runs on one worker at a time, and a second borrower opens its own);
 * pg_pool_put gives it back (the least recently used goes when the pool is full). Idle sessions
 * close after idle_ms, with pg_pool_forget(owner) (the object finished or went away), and with
 * pg_pool_free. Thread-safe.
 */
#ifndef GW_CTRL_PGPOOL_H
#define GW_CTRL_PGPOOL_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "rc.h"

#define PG_DIGEST_LEN 32

struct pg_pool;

gw_rc pg_pool_new(struct pg_pool **out, int slots, long idle_ms) GW_MUST_CHECK;
/* Closes every session. NULL is fine. */
void pg_pool_free(struct pg_pool *p);
/* The SHA-256 of uri (all zeros, which no kept session has, when it cannot be computed). */
void pg_digest(const char *uri, unsigned char out[PG_DIGEST_LEN]);
/* A kept session of (owner, side) for digest, or NULL (none, or pool NULL). Sessions of the
 * same owner and side with another digest are closed. */
PGconn *pg_pool_take(struct pg_pool *p, const char *owner, int side,
                     const unsigned char digest[PG_DIGEST_LEN]);
/* Keeps c (idle, sound) for later; closes it when pool is NULL. */
void pg_pool_put(struct pg_pool *p, const char *owner, int side,
                 const unsigned char digest[PG_DIGEST_LEN], PGconn *c);
/* Closes the owner's sessions (and every idle one). */
void pg_pool_forget(struct pg_pool *p, const char *owner);

/* A new session with uri (the URI's settings first, then what the controller insists on:
 * connect_timeout and statement_timeout of timeout_s, application_name appname); NULL with err
 * set, redacted (a URI in libpq's message loses its password). */
PGconn *pg_connect(const char *uri, long timeout_s, const char *appname, char *err,
                   size_t errlen);

#endif
