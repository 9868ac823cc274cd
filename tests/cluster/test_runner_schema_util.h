/*
 * test_runner_schema_util.h: fixtures for the tests of `godwit-runner ptah-plan`
 * (controller/runner/schema*.c): a real PostgreSQL 15 server with the role app (LOGIN, CREATEDB
 * when asked) owning the database shop, the runner run as a Job runs it, and the corpus
 * property's tools: psql to apply a plan, pg_dump canonicalised to compare two databases.
 *
 * Every sc_plan() checks that no password nor URI appears in stdout, stderr, the report or the
 * plan file, that the report is one JSON object of kind PtahPlanReport of at most 4096 bytes,
 * and that the exit code agrees with "result" (0 Passed, 1 Failed, 2 Transient, 4
 * CredentialFailed) and with "outcome" (0: Succeeded, or Applied or UpToDate for an Apply).
 */
#ifndef GW_TEST_RUNNER_SCHEMA_UTIL_H
#define GW_TEST_RUNNER_SCHEMA_UTIL_H

#include <cJSON.h>
#include <stdbool.h>
#include <sys/types.h>

#include "pgfixture.h"

#define SC_PW "Plan-Secret-4417"

struct scfx {
  struct pgfx pg;
  char uri[256]; /* app on shop */
  char tmp[64];
};

struct splan {
  int code;
  char *out, *report, *planfile;
  cJSON *json; /* the report */
  cJSON *plan; /* the plan file, NULL when none was written */
  char envuri[300];
};

void sc_start(struct scfx *f, bool createdb);
void sc_stop(struct scfx *f);
/* CREATE DATABASE name OWNER app. */
void sc_db(struct scfx *f, const char *name);
/* app's URI for db (buf). */
const char *sc_uri(struct scfx *f, char *buf, size_t len, const char *db);
/* Runs sql as app on db (one PQexec); asserts success. */
void sc_exec(struct scfx *f, const char *db, const char *sql);

/* godwit-runner ptah-plan against db with desired as the desired SQL, then args (later flags
 * win) and env ("NAME=value") entries. */
void sc_plan(struct splan *r, struct scfx *f, const char *db, const char *desired,
             const char *const *args, const char *const *env);
/* The same in two halves, for a test that acts while the runner runs (one run at a time per
 * fixture: they share its files). */
pid_t sc_plan_start(struct splan *r, struct scfx *f, const char *db, const char *desired,
                    const char *const *args, const char *const *env);
void sc_plan_wait(struct splan *r, struct scfx *f, const char *db, pid_t pid);
void sc_free(struct splan *r);
const char *sc_str(const struct splan *r, const char *path);
long sc_num(const struct splan *r, const char *path);
/* The plan's statements as "sql;\n" lines ("" for none); malloc'd. */
char *sc_statements(const struct splan *r);
/* Applies the plan to db as app with psql: the ownTransaction statements first, each on its
 * own, then the others in one transaction (--single-transaction, ON_ERROR_STOP). 0, or -1 with
 * psql's output in err. */
int sc_apply(struct scfx *f, const char *db, const struct splan *r, char *err, size_t errlen);
/* pg_dump --schema-only --no-owner --no-privileges of db, canonicalised (sc_canonical). */
char *sc_dump(struct scfx *f, const char *db);
/* A dump's statements, canonicalised: comments, blank lines, SET and set_config lines and
 * psql's \restrict/\unrestrict lines dropped; the column lines of each CREATE TABLE sorted
 * (PostgreSQL cannot reorder columns, the plan appends); statements sorted. malloc'd. */
char *sc_canonical(const char *dump);

#endif
