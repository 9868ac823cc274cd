/*
 * step.h: the runner's one step framework, what every step stands on (preflight, catalog,
 * cutover, verify, compare, cleanup, reown, ptah-migrate, ptah-plan): a step's context starts
 * with a struct st_ctx, its cfg table ends with ST_COMMON_OPTS, and its lines, redaction, result
 * and report go through st_*. The contract of the Migration steps, with every report field, is
 * docs/dev/migration-controller.md, section "Runner steps" (the preflight's report:
 * docs/api/migration-preflight.md).
 *
 *   step.c      flags, credentials, connections, the lines on stdout, the JSON report
 *   workdir.c   pgcopydb's work dir: the tables and sequences the copy covered, and which tables
 *               it finished (0.10-0.14 done markers, 0.15+ SQLite catalogs)
 *   datacmp.c   per-table row count and checksum, source against target; sequence sync
 *
 * Output, as the preflight's: one quotable line per check on stdout,
 *   PASS <id>: <message>      WARN <id>: <message>      FAIL <id>: <message>
 * then `RESULT <Passed|Failed|Transient>: <summary>`, and the JSON report (at most 4096 bytes,
 * the termination message) in --report. Every line and every report string is redacted: the
 * connection URIs and their passwords never appear, whatever a server or pgcopydb printed.
 *
 * Exit codes: 0 passed, 1 failed, 2 transient (a retry may help).
 */
#ifndef GW_RUNNER_STEP_H
#define GW_RUNNER_STEP_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pgconn.h"
#include "strbuf.h"
#include "termination.h"


enum st_result { ST_PASSED, ST_FAILED, ST_TRANSIENT };
#define ST_NSECRETS 5
enum st_side { ST_SOURCE, ST_TARGET };

/* Every flag of every step; each step's cfg table names the ones it takes. */
struct st_opts {
  const char *report, *log_level, *dir, *slot_name, *origin, *end_lsn, *owner, *publication;
  const char *plugin;
  int schema, data;
  long connect_timeout, attempts, retry_delay_ms, statement_timeout, lock_timeout, wait;
};

struct st_ctx {
  const char *step; /* "verify" */
  const char *kind; /* "VerifyReport" */
  struct st_opts o;
  struct pgc_retry retry;
  struct pgc_endpoint src, dst;
  bool have_src, have_dst;
  PGconn *src_c, *dst_c;
  /* Redacted wherever they could appear, with src's and dst's passwords: the raw URIs and any
   * other credential a step holds (the preflight's superuser URI and its passwords). */
  const char *secrets[ST_NSECRETS];
  enum st_result result;  /* the worst outcome so far */
  char summary[512];
};

/* Offsets for the steps' cfg tables. */
#define ST_OFF(f) offsetof(struct st_ctx, o.f)
/* The rows every step has: --report, --log-level, --connect-timeout, --attempts,
 * --retry-delay-ms. Put ST_COMMON_OPTS last, before { NULL }. */
#define ST_COMMON_OPTS                                                                           \
  { "report", "GODWIT_REPORT", CFG_STR, "/dev/termination-log", 0, 0, ST_OFF(report),            \
    "where the JSON report goes (- for stdout)" },                                               \
    { "connect-timeout", NULL, CFG_INT, "10", 1, 300, ST_OFF(connect_timeout),                   \
      "seconds per connection attempt" },                                                        \
    { "attempts", NULL, CFG_INT, "5", 1, 20, ST_OFF(attempts),                                   \
      "connection attempts before a transient failure" },                                        \
    { "retry-delay-ms", NULL, CFG_INT, "1000", 0, 60000, ST_OFF(retry_delay_ms),                 \
      "delay before the second attempt, doubling after" },                                       \
    { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, ST_OFF(log_level),                 \
      "debug, info, warn or error (stderr)" }

/* Parses the flags into c->o. 0: go on; 1: --help was answered (exit 0); -1: bad flags, already
 * reported (FAIL line, report written): exit with the return of st_finish. */
int st_init(struct st_ctx *c, const char *step, const char *kind, const struct cfg_opt *table,
            const char *summary, int argc, char **argv);
/* Reads GODWIT_SOURCE_URI / GODWIT_TARGET_URI (those asked for). -1 when one is missing or
 * malformed (FAIL line printed, result Failed). */
int st_endpoints(struct st_ctx *c, bool source, bool target);
/* Connects one side with retries and sets the session up (statement_timeout, lock_timeout when
 * given). NULL when it failed (FAIL line `<id>`, result Failed or Transient). */
PGconn *st_connect(struct st_ctx *c, enum st_side s, const char *id);
void st_release(struct st_ctx *c);

const char *st_desc(const struct st_ctx *c, enum st_side s);
const char *st_side_name(enum st_side s);

/* Lines on stdout (redacted). */
void st_print(const struct st_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void st_pass(const struct st_ctx *c, const char *id, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void st_warn(const struct st_ctx *c, const char *id, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* A FAIL line; the result becomes Transient or Failed (Failed wins over Transient). */
void st_fail(struct st_ctx *c, bool transient, const char *id, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* A failed statement: FAIL `<id>: could not <what>: <server message> (SQLSTATE x)`. */
void st_query_failed(struct st_ctx *c, const char *id, const char *what, const struct pgc_err *e);
/* Sets (or appends to) the summary of the RESULT line and the report. */
void st_summary(struct st_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void st_summary_add(struct st_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* snprintf that may cut on purpose (bounded messages). */
void st_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Escalates the result without a line. */
void st_escalate(struct st_ctx *c, enum st_result r);

/* Redacts the URIs, their passwords and anything shaped like a URI with a password or a
 * password=... setting. */
void st_redact(const struct st_ctx *c, char *s, size_t len);

/* The report. A step renders its own fields (after "summary", before "truncated") at a level of
 * detail; st_finish tries level 0, 1, 2, ... until the report fits in 4096 bytes. */
struct st_level {
  size_t list; /* entries per list */
  size_t str;  /* bytes per free-text string */
};
typedef gw_rc (*st_render_fn)(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                              bool *cut, void *arg);
/* Prints `RESULT <result>: <summary>`, writes the report, returns the exit code. */
int st_finish(struct st_ctx *c, st_render_fn render, void *arg);
/* A redacted JSON string cut at max bytes (on a character boundary, "..." appended, *cut set). */
gw_rc st_json_str(const struct st_ctx *c, struct strbuf *sb, const char *s, size_t max, bool *cut)
  GW_MUST_CHECK;
/* ,"key":"value" (redacted, cut). */
gw_rc st_json_field(const struct st_ctx *c, struct strbuf *sb, const char *key, const char *s,
                    size_t max, bool *cut) GW_MUST_CHECK;

/* LSNs: "16/B374D848" <-> 64 bits. st_lsn_parse returns -1 on malformed input. */
int st_lsn_parse(const char *s, uint64_t *out);
void st_lsn_format(uint64_t lsn, char *buf, size_t len);

void st_sleep_ms(int ms);
/* "schema.name", quoted as SQL only where needed (the way messages and reports name tables). */
void st_qualname(char *buf, size_t len, const char *schema, const char *name);
/* true when the SQLSTATE class means a retry may help. */
bool st_transient_state(const struct pgc_err *e);

/* Step entry points (main.c). */
int catalog_main(int argc, char **argv);
int cutover_main(int argc, char **argv);
int verify_main(int argc, char **argv);
int compare_main(int argc, char **argv);
int cleanup_main(int argc, char **argv);
int reown_main(int argc, char **argv);

#endif
