/*
 * test_runner_steps_util.h: fixtures for the tests of the runner steps after the preflight
 * (test_runner_steps*.c): two real PostgreSQL 15 servers (tests/pg/pgfixture.h) with the
 * least-privileged migration roles, real pgcopydb 0.10 runs, and godwit-runner run as the
 * controller's Jobs run it (credentials in the environment, the report in a file, the exit code).
 *
 * Every sr_run() checks that no password, no URI and no "user:password@" appears in stdout,
 * stderr or the report, and that the report is valid JSON of at most 4096 bytes.
 */
#ifndef GW_TEST_RUNNER_STEPS_UTIL_H
#define GW_TEST_RUNNER_STEPS_UTIL_H

#include <cJSON.h>
#include <stdbool.h>
#include <sys/types.h>

#include "pgfixture.h"

#define SR_SRC_PW "Src-Secret-5521"
#define SR_DST_PW "Dst-Secret-8834"

struct srun {
  int code;
  char *out;    /* stdout and stderr */
  char *report; /* the report file */
  cJSON *json;
};

/* A source (wal_level logical when asked) and a target, each with database shop; role src_app
 * on the source (LOGIN REPLICATION, SELECT on everything in shop, CREATE on shop, EXECUTE on
 * pg_switch_wal) and dst_app on the target (owner of shop, EXECUTE on the replication origin
 * functions). Data: public.customers (serial), sales.orders (bigserial, foreign key, index),
 * public."Mixed Case" (no rows). */
struct srpair {
  struct pgfx src, dst;
  char src_uri[256], dst_uri[256];
};

void sr_pair_start(struct srpair *p, bool logical);
/* The grants src_app needs on whatever the source has now (call after creating tables). */
void sr_grant_source(struct srpair *p);
void sr_pair_stop(struct srpair *p);

/* godwit-runner STEP with args (NULL-terminated), the URIs in GODWIT_SOURCE_URI and
 * GODWIT_TARGET_URI (NULL: unset), extra "NAME=value" environment entries (NULL-terminated, may
 * be NULL). */
void sr_run(struct srun *r, const char *src, const char *dst, const char *const *env,
            const char *const *args);
void sr_free(struct srun *r);
const char *sr_str(const struct srun *r, const char *path);
/* A number at path, or -1 when missing or null. */
long sr_num(const struct srun *r, const char *path);
bool sr_bool(const struct srun *r, const char *path);
/* The last n lines of r->out (pointer into it). */
const char *sr_tail(const struct srun *r, int n);

/* pgcopydb with args (NULL-terminated), the URIs in PGCOPYDB_SOURCE_PGURI and
 * PGCOPYDB_TARGET_PGURI, stdout and stderr to log, in its own process group. */
pid_t sr_pgcopydb_start(const char *src, const char *dst, const char *const *args,
                        const char *log);
/* Waits for it up to timeout_s; returns the exit status, or -1 on a timeout (the group is then
 * killed) or a signal. */
int sr_pgcopydb_wait(pid_t pid, int timeout_s);
/* SIGKILL to its process group, then reaps it. */
void sr_pgcopydb_kill(pid_t pid);
/* Runs pgcopydb to the end (asserting exit 0 within timeout_s). */
void sr_pgcopydb(const char *src, const char *dst, const char *const *args, int timeout_s);

/* A fresh directory under /tmp (mkdtemp template "/tmp/godwit-steps-XXXXXX"). */
void sr_tmpdir(char *buf, size_t len);
void sr_rmrf(const char *dir);
/* true once path exists, waiting up to timeout_ms. */
bool sr_wait_file(const char *path, int timeout_ms);
/* true once the file at path contains needle, waiting up to timeout_ms. */
bool sr_wait_text(const char *path, const char *needle, int timeout_ms);
char *sr_slurp(const char *path);

/* A query's first cell on the fixture's superuser connection, as a string that must be freed;
 * "" for NULL. */
char *sr_q(struct pgfx *pg, const char *db, const char *sql);
bool sr_true(struct pgfx *pg, const char *db, const char *sql);

#endif
