/*
 * redact.h: the one place where credentials are taken out of text before it reaches a log line,
 * an Event, a condition, a Job report or a metric. The controller, the runner steps and the
 * preflight all call it.
 *
 * What goes, in this order:
 *  1. every known secret (the raw URIs and passwords a program holds) of at least
 *     REDACT_MIN_SECRET bytes, wherever it appears: "***";
 *  2. the shapes a credential takes in text nobody foresaw (a server's or libpq's message, a
 *     log tail), whatever the secret:
 *       scheme://user:PASSWORD@host       the password (the user stays)
 *       password=VALUE, PGPASSWORD=VALUE  in any case, with blanks around '=', quoted or not
 *       password 'VALUE'                  SQL (CREATE/ALTER ROLE ... PASSWORD '...')
 *       "password": "VALUE"               JSON
 *     each VALUE becomes "***".
 * The output never holds a known secret nor one of those values; it may be longer or shorter
 * than the input.
 */
#ifndef GW_REDACT_H
#define GW_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACT_MIN_SECRET 4 /* shorter secrets would take ordinary words with them */

/* A redacted copy of s (malloc'd), or NULL when out of memory. secrets: n strings, NULL ones
 * skipped. */
char *redact(const char *s, const char *const *secrets, size_t n);

/* A redacted copy of s cut to at most max bytes (max >= 4) on a UTF-8 boundary, ending in "..."
 * when cut (*cut set, if cut is not NULL); malloc'd, NULL when out of memory. Redacted first,
 * then cut: a cut never leaves half a known secret behind. */
char *redact_cut(const char *s, size_t max, const char *const *secrets, size_t n, bool *cut);

/* The same in place in buf (capacity cap), cut to fit; when out of memory buf becomes
 * "(redacted)", never the unredacted text. */
void redact_buf(char *buf, size_t cap, const char *const *secrets, size_t n);

#endif
