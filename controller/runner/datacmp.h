/*
 * datacmp.h: comparing table contents, source against target, and syncing sequences; shared by
 * verify and compare.
 *
 * The checksum of a table is computed by each server over its own rows, with the column list
 * read from the source (so the target's physical column order does not matter):
 *
 *   SELECT count(*), md5(sum(hi64(md5(ROW(c1, c2, ...)::text)))::text) FROM ONLY schema.table
 *
 * hi64 is the first signed 64-bit half of each row's md5; sum(int8) is exact (numeric, no
 * overflow). The sum does not depend on row order, needs no primary key, streams (no 1 GB
 * string_agg limit), does not depend on collations, and may run in parallel workers. A changed,
 * missing or extra row changes the count or the sum unless the sums of 64-bit hashes cancel
 * exactly (about 2^-64 for a difference): none is missed in practice (pgcopydb's own compare
 * sums 32-bit hashtext values). The md5 is named once: the expression is not in a subquery read
 * twice, which PostgreSQL inlines and evaluates at each reference (two halves read from one
 * subquery column cost two md5s and two row-to-text conversions a row: 1.75 s of CPU against
 * 1.0 s for 200,000 rows). Both
 * sessions print values the same way first (DateStyle ISO, TimeZone UTC, extra_float_digits 3,
 * bytea_output hex, IntervalStyle postgres, lc_monetary C, empty search_path).
 */
#ifndef GW_RUNNER_DATACMP_H
#define GW_RUNNER_DATACMP_H

#include <stdbool.h>
#include <stddef.h>

#include "step.h"
#include "workdir.h"

struct dc_side {
  bool ok;
  long long rows;
  char checksum[33];
  char err[320];
  bool transient;
  bool missing; /* the table (or one of the source's columns) does not exist on this side */
};

struct dc_table {
  char *schema, *name;
  struct dc_side src, dst;
  bool match;
};

struct dc_set {
  struct dc_table *v;
  size_t n;
  size_t matching, differing;
  bool transient; /* a side failed in a way a retry may fix */
  bool from_workdir;
};

/* The session settings both sides print rows with. 0, or -1 with e filled. */
int dc_session(PGconn *c, struct pgc_err *e);

/* The tables to compare: the work dir's (when w is readable), else the source's ordinary
 * tables outside system schemas and pgcopydb's. 0, or -1 with e filled. */
int dc_tables(struct dc_set *s, const struct wd_catalog *w, PGconn *src, struct pgc_err *e);
/* Counts and checksums every table on both sides (both servers work at once). Prints a line
 * per table that differs (FAIL or WARN under id, as fail_word says) and keeps counts. */
void dc_compare_all(struct st_ctx *c, struct dc_set *s, const char *id, bool fail_lines);
void dc_release(struct dc_set *s);
/* [{"table":..,"sourceRows":..,"targetRows":..,"sourceChecksum":..,"targetChecksum":..
 * (,"error":..)}], differing tables first, at most max entries; *omitted counts the rest. */
gw_rc dc_render(const struct st_ctx *c, struct strbuf *sb, const struct dc_set *s, size_t max,
                size_t strmax, bool differing_only, size_t *omitted, bool *cut) GW_MUST_CHECK;

struct sq_result {
  size_t total, synced, skipped, failed;
  bool transient;
  char first_error[400];
};
/* Copies last_value and is_called of every sequence (the work dir's list, then the source's
 * other sequences that exist on the target) to the target with setval. */
void dc_sync_sequences(struct st_ctx *c, const struct wd_catalog *w, struct sq_result *r,
                       const char *id);

#endif
