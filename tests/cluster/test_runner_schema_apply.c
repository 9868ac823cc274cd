/*
 * test_runner_schema_apply.c: `godwit-runner ptah-plan --type Apply|Observe`, protected tables
 * and the durable record (controller/runner/schema_apply.c, schema_policy.c, schema_record.c)
 * on a real PostgreSQL 15, run as a Job runs it. The Apply runs the plan a Plan computed, by its
 * digest, under the PtahSchema lock; what it leaves is compared with a database built from the
 * desired SQL (pg_dump, canonicalised) and planned again. The records go through the local
 * cluster (API server, webhook, job runner with bound service-account tokens).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "kube/kube.h"
#include "test_runner_schema_util.h"
#include "test_runner_steps_util.h"

#define LOCK_SQL "pg_advisory_lock(1886675304, hashtext('ptah.run/PtahSchema'))"

/* The target: customers with a NULL name, payments, an enum. */
#define TARGET                                                                                   \
  "CREATE TYPE st AS ENUM ('new', 'paid');\n"                                                    \
  "CREATE TABLE customers (id int PRIMARY KEY, name text);\n"                                    \
  "CREATE TABLE payments (id int PRIMARY KEY, amount numeric);\n"

/* What is desired: a new table first (by name), customers and payments changed. */
#define DESIRED                                                                                  \
  "CREATE TYPE st AS ENUM ('new', 'paid');\n"                                                    \
  "CREATE TABLE aaa_audit (id int PRIMARY KEY, at timestamptz DEFAULT now());\n"                 \
  "CREATE TABLE customers (id int PRIMARY KEY, name text, email text);\n"                        \
  "CREATE INDEX customers_email ON customers (email);\n"                                         \
  "COMMENT ON COLUMN customers.email IS 'where receipts go';\n"                                  \
  "CREATE TABLE payments (id int PRIMARY KEY, amount numeric NOT NULL);\n"                       \
  "CREATE TABLE orders (id int PRIMARY KEY, customer int REFERENCES customers,\n"                \
  "  s st DEFAULT 'new');\n"

static bool has(const char *hay, const char *needle)
{
  return hay && strstr(hay, needle) != NULL;
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

/* A Plan of desired against shop: its digest and fingerprint (asserted to pass). */
static void plan_of(struct scfx *f, const char *desired, char *digest, char *fp)
{
  struct splan r;
  sc_plan(&r, f, "shop", desired, (const char *[]){ "--binding", "b1", NULL }, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  snprintf(digest, 80, "%s", sc_str(&r, "planDigest"));
  snprintf(fp, 80, "%s", sc_str(&r, "fingerprint"));
  sc_free(&r);
}

/* An Apply of desired against shop with the approved digest (fp may be NULL), then extra. */
static void apply(struct splan *r, struct scfx *f, const char *desired, const char *digest,
                  const char *fp, const char *const *extra)
{
  const char *args[24] = { "--type", "Apply", "--operation", "shop-apply-1", "--job-name",
                           "shop-apply-1", "--binding", "b1", "--approved-digest", digest };
  int n = 10;
  if(fp) {
    args[n++] = "--plan-fingerprint";
    args[n++] = fp;
  }
  for(const char *const *a = extra; a && *a && n < 22; a++)
    args[n++] = *a;
  sc_plan(r, f, "shop", desired, args, NULL);
}

static bool table_exists(struct scfx *f, const char *name)
{
  char sql[256];
  snprintf(sql, sizeof(sql), "SELECT to_regclass('%s') IS NOT NULL", name);
  return sr_true(&f->pg, "shop", sql);
}

static bool no_advisory_lock(struct scfx *f)
{
  return sr_true(&f->pg, "shop", "SELECT NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = "
                                 "'advisory')");
}

/* The statement of the plan file whose label is label, or NULL. */
static const cJSON *statement(const cJSON *plan, const char *label)
{
  const cJSON *s;
  cJSON_ArrayForEach(s, json_get(plan, "statements"))
  {
    const char *l = json_get_str(s, "label");
    if(l && !strcmp(l, label))
      return s;
  }
  return NULL;
}

/* ----- Apply and Observe ----------------------------------------------------------------- */

Test(runner_schema_apply, apply_takes_the_database_to_the_desired_schema, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET "INSERT INTO customers VALUES (1, 'ada'), (2, NULL);\n"
                      "INSERT INTO payments VALUES (1, 10);");
  sc_db(&f, "fresh");
  sc_exec(&f, "fresh", DESIRED);
  char digest[80], fp[80];
  plan_of(&f, DESIRED, digest, fp);

  struct splan r;
  apply(&r, &f, DESIRED, digest, fp, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "type"), "Apply");
  cr_assert_str_eq(sc_str(&r, "outcome"), "Applied", "%s", r.report);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  cr_assert(cJSON_IsNull(json_get(r.json, "refusal")), "%s", r.report);
  cr_assert_str_eq(sc_str(&r, "planDigest"), digest, "the plan computed under the lock");
  cr_assert(has(r.out, "as application_name godwit-ptah-apply-shop-apply-1 "), "%s", r.out);
  cr_assert(has(r.out, ", read-write"), "%s", r.out);
  cr_assert(has(r.out, "PASS lock: holding the PtahSchema lock (1886675304, "
                       "hashtext('ptah.run/PtahSchema')) as backend pid "), "%s", r.out);
  cr_assert(has(r.out, "PASS digest: the plan computed under the lock is the approved one"),
            "%s", r.out);
  cr_assert(has(r.out, "PASS verify: the database now matches the desired schema"), "%s", r.out);
  cr_assert(has(r.out, "PASS lock: backend pid ") && has(r.out, "held the PtahSchema lock "
                                                                "throughout"), "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "applied the approved plan " ), "%s", r.report);
  cr_assert(has(sc_str(&r, "message"), "Verified: the database now matches"), "%s", r.report);
  cr_assert_null(strstr(r.out, "WARN"), "%s", r.out);
  sc_free(&r);
  cr_assert(no_advisory_lock(&f), "the lock outlived the run");

  char *have = sc_dump(&f, "shop"), *want = sc_dump(&f, "fresh");
  cr_assert_str_eq(have, want, "the database is not the desired schema");
  free(have);
  free(want);
  char *rows = sr_q(&f.pg, "shop", "SELECT string_agg(id || ':' || coalesce(name, '-'), ',' "
                                   "ORDER BY id) FROM customers");
  cr_assert_str_eq(rows, "1:ada,2:-", "the rows are kept");
  free(rows);

  /* (i) an Observe after it: the same engine, read-only, recorded as an Observe: no change */
  sc_plan(&r, &f, "shop", DESIRED, (const char *[]){ "--type", "Observe", "--binding", "b1",
                                                      NULL }, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "type"), "Observe");
  cr_assert_str_eq(sc_str(&r, "outcome"), "Succeeded");
  cr_assert_eq(sc_num(&r, "statements"), 0, "%s", r.report);
  cr_assert(has(sc_str(&r, "summary"), "no change"), "%s", r.report);
  cr_assert_null(json_get(r.json, "lockContinuous"), "an Observe takes no lock: %s", r.report);
  cr_assert(has(r.out, "as application_name godwit-ptah-plan-shop-plan-1 "), "%s", r.out);
  cr_assert(has(r.out, ", read-only"), "%s", r.out);
  char empty[80];
  snprintf(empty, sizeof(empty), "%s", sc_str(&r, "planDigest"));
  sc_free(&r);

  /* (f) an Apply of that empty plan: UpToDate, nothing run */
  apply(&r, &f, DESIRED, empty, NULL, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "UpToDate", "%s", r.report);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  cr_assert(has(r.out, "PASS apply: the approved plan is empty"), "%s", r.out);
  cr_assert_null(strstr(r.out, "committed"), "%s", r.out);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema_apply, a_stale_plan_is_refused_and_changes_nothing, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  char digest[80], fp[80];
  plan_of(&f, DESIRED, digest, fp);
  sc_exec(&f, "shop", "ALTER TABLE payments ADD COLUMN note text;"); /* after the plan */
  char *before = sc_dump(&f, "shop");

  struct splan r;
  apply(&r, &f, DESIRED, digest, fp, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Failed");
  cr_assert_str_eq(sc_str(&r, "refusal"), "PlanStale", "%s", r.report);
  const char *m = sc_str(&r, "message");
  cr_assert(has(m, "nothing was applied: the approved plan ") && has(m, digest), "%s", m);
  char then[200];
  snprintf(then, sizeof(then), "the target's catalog changed since the plan was computed "
           "(fingerprint %s then, ", fp);
  cr_assert(has(m, then), "%s", m);
  cr_assert_str_neq(sc_str(&r, "planDigest"), digest, "%s", r.report);
  cr_assert(has(r.out, "FAIL digest: "), "%s", r.out);
  cr_assert_null(strstr(r.out, "PASS apply"), "%s", r.out);
  sc_free(&r);
  char *after = sc_dump(&f, "shop");
  cr_assert_str_eq(before, after, "a stale Apply changed the database");
  free(after);

  /* without the plan's fingerprint it cannot tell why */
  apply(&r, &f, DESIRED, digest, NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "refusal"), "PlanStale");
  cr_assert(has(sc_str(&r, "message"), "is not known (no --plan-fingerprint)"), "%s", r.report);
  sc_free(&r);

  /* the catalog as planned, another binding: the desired side changed */
  plan_of(&f, DESIRED, digest, fp);
  apply(&r, &f, DESIRED, digest, fp, (const char *[]){ "--binding", "b2", NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "refusal"), "PlanStale");
  cr_assert(has(sc_str(&r, "message"), "the target's catalog is as it was planned (fingerprint "),
            "%s", r.report);
  cr_assert(has(sc_str(&r, "message"), "the desired schema or the execution binding changed"),
            "%s", r.report);
  sc_free(&r);
  after = sc_dump(&f, "shop");
  cr_assert_str_eq(before, after, "a stale Apply changed the database");
  free(before);
  free(after);
  cr_assert(no_advisory_lock(&f));
  sc_stop(&f);
}

Test(runner_schema_apply, a_failing_statement_rolls_the_transaction_back, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET "INSERT INTO payments VALUES (1, NULL);");
  char *before = sc_dump(&f, "shop");
  char digest[80], fp[80];
  plan_of(&f, DESIRED, digest, fp);
  struct splan r;
  apply(&r, &f, DESIRED, digest, fp, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Failed", "%s", r.report);
  cr_assert(cJSON_IsNull(json_get(r.json, "refusal")), "%s", r.report);
  const char *m = sc_str(&r, "message");
  cr_assert(has(m, "(\"alter column public.payments.amount: set not null\") failed: column "
                   "\"amount\" of relation \"payments\" contains null values (SQLSTATE 23502)"),
            "%s", m);
  cr_assert(has(m, "The plan's transaction was rolled back: none of its "), "%s", m);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  sc_free(&r);
  cr_assert(!table_exists(&f, "public.aaa_audit"), "a statement before the failure committed");
  char *after = sc_dump(&f, "shop");
  cr_assert_str_eq(before, after, "a failed Apply changed the database");
  free(after);

  /* an enum value first: committed on its own, then the transaction fails: Partial */
  const char *desired = "CREATE TYPE st AS ENUM ('new', 'paid', 'void');\n"
                        "CREATE TABLE aaa_audit (id int PRIMARY KEY);\n"
                        "CREATE TABLE customers (id int PRIMARY KEY, name text);\n"
                        "CREATE TABLE payments (id int PRIMARY KEY, amount numeric NOT NULL);\n";
  plan_of(&f, desired, digest, fp);
  apply(&r, &f, desired, digest, fp, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Partial", "%s", r.report);
  m = sc_str(&r, "message");
  cr_assert(has(m, "SQLSTATE 23502") && has(m, "Before it, 1 enum value was committed"), "%s", m);
  cr_assert(has(r.out, "PASS apply: committed statement 1 (\"add value 'void' to type public.st\")"
                       " in its own transaction"), "%s", r.out);
  sc_free(&r);
  char *labels = sr_q(&f.pg, "shop", "SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) "
                                     "FROM pg_enum WHERE enumtypid = 'public.st'::regtype");
  cr_assert_str_eq(labels, "new,paid,void");
  free(labels);
  cr_assert(!table_exists(&f, "public.aaa_audit"));
  cr_assert(sr_true(&f.pg, "shop", "SELECT NOT attnotnull FROM pg_attribute WHERE attrelid = "
                                   "'public.payments'::regclass AND attname = 'amount'"));
  free(before);
  sc_stop(&f);
}

Test(runner_schema_apply, the_lock_held_elsewhere_fails_naming_its_holder, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  char digest[80], fp[80];
  plan_of(&f, DESIRED, digest, fp);
  PGconn *holder = pgfx_connect(&f.pg, "shop");
  PGresult *res = PQexec(holder, "SET application_name = 'ptah-blocker'; SELECT " LOCK_SQL);
  cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(holder));
  PQclear(res);
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(holder));

  struct splan r;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  apply(&r, &f, DESIRED, digest, fp, (const char *[]){ "--lock-wait-s", "1", NULL });
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cr_assert_geq(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9, 0.95);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Failed");
  const char *m = sc_str(&r, "message");
  cr_assert(has(m, pid) && has(m, "application_name \"ptah-blocker\""), "%s (want %s)", m, pid);
  cr_assert(has(m, "nothing was applied"), "%s", m);
  cr_assert(!json_get_bool(r.json, "lockContinuous", true), "%s", r.report);
  cr_assert(has(r.out, "FAIL lock: "), "%s", r.out);
  cr_assert_null(strstr(r.out, "PASS catalog"), "it read the catalog without the lock:\n%s",
                 r.out);
  cr_assert(cJSON_IsNull(json_get(r.json, "planDigest")), "%s", r.report);
  sc_free(&r);
  cr_assert(!table_exists(&f, "public.orders"));

  PQfinish(holder);
  apply(&r, &f, DESIRED, digest, fp, (const char *[]){ "--lock-wait-s", "5", NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Applied");
  sc_free(&r);
  cr_assert(table_exists(&f, "public.orders"));
  sc_stop(&f);
}

/* The pid of a backend of application_name app waiting on a lock, 0 after timeout_ms. */
static int waiting_backend(struct scfx *f, const char *app, int timeout_ms)
{
  char sql[256];
  snprintf(sql, sizeof(sql), "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE "
           "application_name = '%s' AND wait_event_type = 'Lock'", app);
  for(int waited = 0; waited < timeout_ms; waited += 100) {
    char *v = sr_q(&f->pg, "shop", sql);
    int pid = atoi(v);
    free(v);
    if(pid)
      return pid;
    sleep_ms(100);
  }
  return 0;
}

static bool backend_gone(struct scfx *f, const char *app, int timeout_ms)
{
  char sql[256];
  snprintf(sql, sizeof(sql), "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE "
           "application_name = '%s')", app);
  for(int waited = 0; waited < timeout_ms; waited += 100) {
    if(sr_true(&f->pg, "shop", sql))
      return true;
    sleep_ms(100);
  }
  return false;
}

Test(runner_schema_apply, sigkill_in_the_transaction_leaves_none_of_it, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  char digest[80], fp[80];
  plan_of(&f, DESIRED, digest, fp);
  /* customers is locked in SHARE mode: the plan's CREATE TABLE aaa_audit runs, then its
   * ALTER TABLE customers waits, inside the transaction */
  PGconn *blocker = pgfx_connect(&f.pg, "shop");
  PGresult *res = PQexec(blocker, "BEGIN; LOCK TABLE customers IN SHARE MODE");
  cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(blocker));
  PQclear(res);
  struct splan r;
  pid_t pid = sc_plan_start(&r, &f, "shop", DESIRED,
                            (const char *[]){ "--type", "Apply", "--operation", "shop-apply-1",
                                              "--binding", "b1", "--approved-digest", digest,
                                              NULL }, NULL);
  int backend = waiting_backend(&f, "godwit-ptah-apply-shop-apply-1", 60000);
  cr_assert_gt(backend, 0, "the Apply never waited inside its transaction");
  cr_assert(sr_true(&f.pg, "shop", "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = "
                                   "'advisory' AND granted)"), "the Apply runs without its lock");
  kill(pid, SIGKILL);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st));
  res = PQexec(blocker, "COMMIT");
  PQclear(res);
  PQfinish(blocker);
  cr_assert(backend_gone(&f, "godwit-ptah-apply-shop-apply-1", 20000),
            "the killed runner's backend lingers");
  cr_assert(!table_exists(&f, "public.aaa_audit"), "half of the transaction committed");
  cr_assert(sr_true(&f.pg, "shop", "SELECT NOT EXISTS (SELECT 1 FROM pg_attribute WHERE "
                                   "attrelid = 'public.customers'::regclass AND attname = "
                                   "'email')"));
  cr_assert(no_advisory_lock(&f), "the lock outlived its session");
  memset(&r, 0, sizeof(r));

  /* the plan is still the approved one: a new Apply runs it whole */
  apply(&r, &f, DESIRED, digest, fp, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Applied");
  sc_free(&r);
  cr_assert(table_exists(&f, "public.aaa_audit") && table_exists(&f, "public.orders"));
  sc_stop(&f);
}

Test(runner_schema_apply, connection_lost_in_an_enum_value_is_unknown, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  const char *desired = "CREATE TYPE st AS ENUM ('new', 'paid', 'void');\n"
                        "CREATE TABLE aaa_audit (id int PRIMARY KEY);\n"
                        "CREATE TABLE customers (id int PRIMARY KEY, name text);\n"
                        "CREATE TABLE payments (id int PRIMARY KEY, amount numeric);\n";
  char digest[80], fp[80];
  plan_of(&f, desired, digest, fp);
  /* another session adding a value to the type holds its lock: the Apply's ADD VALUE waits */
  PGconn *blocker = pgfx_connect(&f.pg, "shop");
  PGresult *res = PQexec(blocker, "BEGIN; ALTER TYPE st ADD VALUE 'other'");
  cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(blocker));
  PQclear(res);
  struct splan r;
  pid_t pid = sc_plan_start(&r, &f, "shop", desired,
                            (const char *[]){ "--type", "Apply", "--operation", "shop-apply-1",
                                              "--binding", "b1", "--approved-digest", digest,
                                              NULL }, NULL);
  int backend = waiting_backend(&f, "godwit-ptah-apply-shop-apply-1", 60000);
  cr_assert_gt(backend, 0, "the Apply's ADD VALUE never waited");
  pgfx_exec(&f.pg, "shop", "SELECT pg_terminate_backend(%d)", backend);
  sc_plan_wait(&r, &f, "shop", pid);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Unknown", "%s", r.report);
  cr_assert(has(sc_str(&r, "message"), "the connection was lost while statement 1 (\"add value "
                                       "'void' to type public.st\") ran in its own transaction"),
            "%s", r.report);
  cr_assert(!json_get_bool(r.json, "lockContinuous", true), "%s", r.report);
  cr_assert(has(r.out, "RESULT Failed: outcome Unknown"), "%s", r.out);
  sc_free(&r);
  res = PQexec(blocker, "ROLLBACK");
  PQclear(res);
  PQfinish(blocker);
  cr_assert(!table_exists(&f, "public.aaa_audit"), "the transaction ran after an uncertain value");
  sc_stop(&f);
}

/* ----- protected tables ------------------------------------------------------------------- */

Test(runner_schema_apply, a_protected_table_refuses_the_plan_of_every_type, .timeout = 180)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  char *before = sc_dump(&f, "shop");
  const char *prot[] = { "--protected-table", "public.other\npublic.payments", NULL };
  struct splan r;
  sc_plan(&r, &f, "shop", DESIRED, prot, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), "Failed");
  cr_assert_str_eq(sc_str(&r, "refusal"), "ProtectedTableRefused", "%s", r.report);
  const char *m = sc_str(&r, "message");
  cr_assert(has(m, "the plan is refused: it changes the protected table public.payments "
                   "(spec.policy.protectedTables), in statement \"alter column "
                   "public.payments.amount: set not null\""), "%s", m);
  cr_assert_null(strstr(m, "public.customers"), "an unprotected table named: %s", m);
  cr_assert(has(r.out, "FAIL protected: 1 statement changes protected table public.payments"),
            "%s", r.out);
  /* the plan is still there, for the audit: in the report and the plan file */
  cr_assert_gt(sc_num(&r, "statements"), 3, "%s", r.report);
  cr_assert_not_null(r.plan, "the refused plan was not written");
  cr_assert_str_eq(json_get_str(r.plan, "digest"), sc_str(&r, "planDigest"));
  const cJSON *s = statement(r.plan, "alter column public.payments.amount: set not null");
  cr_assert_str_eq(json_get_str(s, "table"), "public.payments");
  cr_assert_str_eq(json_get_str(statement(r.plan, "create index public.customers_email"),
                                "table"), "public.customers");
  cr_assert_str_eq(json_get_str(statement(r.plan, "comment on column:public.customers.email"),
                                "table"), "public.customers");
  cr_assert_str_eq(json_get_str(statement(r.plan, "create table public.orders"), "table"),
                   "public.orders");
  char digest[80], fp[80];
  snprintf(digest, sizeof(digest), "%s", sc_str(&r, "planDigest"));
  snprintf(fp, sizeof(fp), "%s", sc_str(&r, "fingerprint"));
  sc_free(&r);

  /* Observe and Apply refuse it too; the Apply runs nothing */
  sc_plan(&r, &f, "shop", DESIRED, (const char *[]){ "--type", "Observe", "--protected-table",
                                                      "public.payments", NULL }, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "refusal"), "ProtectedTableRefused", "%s", r.report);
  sc_free(&r);
  apply(&r, &f, DESIRED, digest, fp, (const char *[]){ "--protected-table", "public.payments",
                                                       NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "refusal"), "ProtectedTableRefused", "%s", r.report);
  cr_assert(has(sc_str(&r, "message"), "nothing was applied: the plan is refused"), "%s",
            r.report);
  sc_free(&r);
  char *after = sc_dump(&f, "shop");
  cr_assert_str_eq(before, after, "a refused Apply changed the database");
  free(after);

  /* a comment on a column counts for its table */
  sc_plan(&r, &f, "shop", TARGET "COMMENT ON COLUMN payments.amount IS 'cents';\n", prot, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "\"comment on column:public.payments.amount\""), "%s",
            r.report);
  sc_free(&r);

  /* a change on another table passes */
  const char *other = "CREATE TYPE st AS ENUM ('new', 'paid');\n"
                      "CREATE TABLE customers (id int PRIMARY KEY, name text, email text);\n"
                      "CREATE TABLE payments (id int PRIMARY KEY, amount numeric);\n";
  sc_plan(&r, &f, "shop", other, prot, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert(cJSON_IsNull(json_get(r.json, "refusal")), "%s", r.report);
  cr_assert_eq(sc_num(&r, "statements"), 1, "%s", r.report);
  sc_free(&r);

  /* once per table, more times than a list flag holds (the controller passes up to 256) */
  const char *many[48];
  char names[18][32];
  int n = 0;
  for(int i = 0; i < 18; i++) {
    snprintf(names[i], sizeof(names[i]), "public.t%d", i);
    many[n++] = "--protected-table";
    many[n++] = names[i];
  }
  many[n++] = "--protected-table=public.payments";
  many[n] = NULL;
  sc_plan(&r, &f, "shop", DESIRED, many, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "refusal"), "ProtectedTableRefused", "%s", r.report);
  sc_free(&r);
  sc_plan(&r, &f, "shop", other, many, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  sc_free(&r);

  /* a name without its schema is a bad flag */
  sc_plan(&r, &f, "shop", other, (const char *[]){ "--protected-table", "payments", NULL }, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(r.out, "FAIL config: --protected-table: must be \"schema.table\""), "%s", r.out);
  sc_free(&r);
  free(before);
  sc_stop(&f);
}

Test(runner_schema_apply, flags_of_the_types_are_checked_before_anything, .timeout = 60)
{
  struct scfx f;
  sc_start(&f, true);
  static const struct {
    const char *args[6], *says;
  } cases[] = {
    { { "--type", "Drop", NULL }, "--type must be Plan, Apply or Observe" },
    { { "--type", "Apply", NULL }, "--approved-digest is required for --type Apply" },
    { { "--type", "Apply", "--approved-digest", "sha256:abc", NULL }, "--approved-digest: " },
    { { "--approved-digest", "sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d",
        NULL }, "--approved-digest is for --type Apply only" },
    { { "--type", "Observe", "--plan-fingerprint",
        "sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d", NULL },
      "--plan-fingerprint is for --type Apply only" },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct splan r;
    sc_plan(&r, &f, "shop", TARGET, cases[i].args, NULL);
    cr_assert_eq(r.code, 1, "%s", r.out);
    cr_assert(has(r.out, "FAIL config: ") && has(r.out, cases[i].says), "want %s:\n%s",
              cases[i].says, r.out);
    cr_assert_null(strstr(r.out, "PASS"), "%s", r.out);
    sc_free(&r);
  }
  sc_stop(&f);
}

Test(runner_schema_apply, durable_without_kubernetes_reads_nothing, .timeout = 60)
{
  struct scfx f;
  sc_start(&f, true);
  char home[64], env_home[96];
  sr_tmpdir(home, sizeof(home));
  snprintf(env_home, sizeof(env_home), "HOME=%s", home);
  struct splan r;
  sc_plan(&r, &f, "shop", DESIRED, (const char *[]){ "--result", "durable", NULL },
          (const char *[]){ env_home, NULL });
  cr_assert_eq(r.code, 4, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "result"), "CredentialFailed");
  cr_assert_str_eq(sc_str(&r, "outcome"), "Failed");
  cr_assert(!json_get_bool(r.json, "recordDelivered", true), "%s", r.report);
  cr_assert(has(r.out, "FAIL credential: cannot deliver the result record: no Kubernetes "
                       "configuration"), "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "nothing was read or changed"), "%s", r.report);
  cr_assert_null(strstr(r.out, "connect"), "it connected:\n%s", r.out);
  cr_assert_null(r.plan, "a plan was written");
  sc_free(&r);
  sr_rmrf(home);
  sc_stop(&f);
}

/* ----- the durable record, through the local cluster ---------------------------------------- */

/* A Job of the local cluster that runs godwit-runner ptah-plan as the controller's would: the
 * URI from a Secret, the service account's bound token, the report in the termination message.
 * args: more JSON strings for the command line, each with a leading comma. */
static void job_create(struct kube_client *k, const char *name, const char *ns,
                       const struct scfx *f, const char *args)
{
  char json[4096];
  snprintf(json, sizeof(json),
           "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"default\"},\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{"
           "\"restartPolicy\":\"Never\",\"serviceAccountName\":\"godwit-runner\",\"containers\":[{"
           "\"name\":\"runner\",\"image\":\"godwit-runner:test\",\"command\":[\"godwit-runner\"],"
           "\"args\":[\"ptah-plan\",\"--protocol\",\"1\",\"--owner-name\",\"shop\","
           "\"--namespace\",\"%s\",\"--job-name\",\"%s\",\"--result\",\"durable\","
           "\"--connect-timeout\",\"3\",\"--retry-delay-ms\",\"100\",\"--binding\",\"b1\","
           "\"--plan-out\",\"%s/%s.json\"%s],"
           "\"env\":[{\"name\":\"GODWIT_DATABASE_URI\",\"valueFrom\":{\"secretKeyRef\":"
           "{\"name\":\"shop-db\",\"key\":\"uri\"}}}]}]}}}}",
           name, ns, name, f->tmp, name, args);
  cJSON *job = cJSON_Parse(json);
  cr_assert_not_null(job, "%s", json);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, &KUBE_JOBS, "default", job, false, NULL, &st);
  cr_assert_eq(rc, GW_OK, "Job: %d %s %s", st.code, st.reason, st.message);
  kube_status_release(&st);
  cJSON_Delete(job);
}

/* The finished Pod of Job name, or NULL after timeout_ms. */
static cJSON *job_pod_done(struct kube_client *k, const char *name, int timeout_ms)
{
  char sel[128];
  snprintf(sel, sizeof(sel), "batch.kubernetes.io/job-name=%s", name);
  for(int waited = 0; waited < timeout_ms; waited += 200) {
    cJSON *list = NULL;
    struct kube_list_opts o = { .label_selector = sel };
    if(!kube_list(k, &KUBE_PODS, "default", &o, &list, NULL)) {
      cJSON *pod;
      cJSON_ArrayForEach(pod, cJSON_GetObjectItem(list, "items"))
      {
        const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
        if(json_get(cs, "state.terminated")) {
          cJSON *out = cJSON_Duplicate(pod, true);
          cJSON_Delete(list);
          return out;
        }
      }
      cJSON_Delete(list);
    }
    sleep_ms(200);
  }
  return NULL;
}

struct jobrun {
  int code;
  cJSON *report;
  char *log;
};

/* Runs Job name to its end: its exit code, report and log. */
static void job_run(struct jobrun *j, struct kube_client *k, const char *name, const char *ns,
                    const struct scfx *f, const char *args)
{
  job_create(k, name, ns, f, args);
  cJSON *pod = job_pod_done(k, name, 120000);
  cr_assert_not_null(pod, "the runner Pod of %s never finished", name);
  const cJSON *t = json_get(cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0),
                            "state.terminated");
  const cJSON *ec = json_get(t, "exitCode");
  j->code = cJSON_IsNumber(ec) ? (int)ec->valuedouble : -1;
  const char *msg = json_get_str(t, "message");
  cr_assert_not_null(msg, "no termination message in the Pod of %s", name);
  cr_assert_null(strstr(msg, SC_PW), "%s", msg);
  j->report = cJSON_Parse(msg);
  cr_assert_not_null(j->report, "the termination message is not JSON: %s", msg);
  size_t len = 0;
  j->log = NULL;
  cr_assert_eq(kube_pod_log(k, "default", json_get_str(pod, "metadata.name"), NULL, 0, &j->log,
                            &len, NULL), GW_OK);
  cr_log_info("%s: exit %d\n%s\n%s", name, j->code, j->log, msg);
  cr_assert_null(strstr(j->log, SC_PW), "%s", j->log);
  cJSON_Delete(pod);
}

static void job_free(struct jobrun *j)
{
  cJSON_Delete(j->report);
  free(j->log);
}

static cJSON *record_of(struct kube_client *k, const char *name)
{
  cJSON *rec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_get(k, &KUBE_PTAH_RESULT_RECORDS, "default", name, &rec, &st), GW_OK,
               "no record %s: %d %s", name, st.code, st.message);
  kube_status_release(&st);
  char *text = cJSON_PrintUnformatted(rec);
  cr_log_info("record %s: %.4000s", name, text);
  cr_assert_null(strstr(text, SC_PW), "the record leaks the password");
  cJSON_free(text);
  return rec;
}

static cJSON *plan_file(const struct scfx *f, const char *name)
{
  char path[256];
  snprintf(path, sizeof(path), "%s/%s.json", f->tmp, name);
  char *text = sr_slurp(path);
  cJSON *plan = cJSON_Parse(text);
  cr_assert_not_null(plan, "no plan file %s", path);
  free(text);
  return plan;
}

static void write_desired(const struct scfx *f, const char *name, const char *sql)
{
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", f->tmp, name);
  FILE *out = fopen(path, "w");
  cr_assert_not_null(out);
  fputs(sql, out);
  fclose(out);
}

static void create_secret(struct kube_client *k, const char *json)
{
  cJSON *obj = cJSON_Parse(json);
  cr_assert_not_null(obj);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, &KUBE_SECRETS, "default", obj, false, NULL, &st);
  cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "%s: %d %s", json, st.code, st.message);
  kube_status_release(&st);
  cJSON_Delete(obj);
}

/* The plan a record carries agrees with the run's plan file and report. */
static void assert_record_plan(const cJSON *rec, const cJSON *plan, const cJSON *report)
{
  cr_assert_str_eq(json_get_str(rec, "spec.result.plan.fingerprint"),
                   json_get_str(plan, "fingerprint"));
  cr_assert_str_eq(json_get_str(rec, "spec.result.plan.desiredChecksum"),
                   json_get_str(plan, "desiredChecksum"));
  cr_assert_str_eq(json_get_str(rec, "spec.result.plan.summary"), json_get_str(plan, "summary"));
  cr_assert_eq(json_get(rec, "spec.result.plan.statementCount")->valuedouble,
               json_get(plan, "statementCount")->valuedouble);
  cr_assert_eq(json_get(rec, "spec.result.plan.destructiveCount")->valuedouble,
               json_get(plan, "destructiveCount")->valuedouble);
  cr_assert_eq(json_get(report, "statements")->valuedouble,
               json_get(plan, "statementCount")->valuedouble);
  cr_assert(json_equal(json_get(rec, "spec.result.plan.statements"),
                       json_get(plan, "statements")),
            "the record's statements are not the plan file's");
  cr_assert_null(json_get(rec, "spec.result.plan.statementsOmitted"));
}

Test(runner_schema_apply, durable_records_of_plan_apply_observe, .timeout = 420)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", TARGET);
  struct cl c;
  cl_start(&c, CL_WEBHOOK | CL_JOBRUNNER);
  struct kube_client *k = cl_client(&c, "admin");
  cl_runner_identity(&c, "default");
  char secret[512];
  snprintf(secret, sizeof(secret), "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
           "{\"name\":\"shop-db\",\"namespace\":\"default\"},\"stringData\":{\"uri\":\"%s\"}}",
           f.uri);
  create_secret(k, secret);
  const char *passes = "CREATE TYPE st AS ENUM ('new', 'paid');\n"
                       "CREATE TABLE customers (id int PRIMARY KEY, name text, email text);\n"
                       "CREATE INDEX customers_email ON customers (email);\n"
                       "CREATE TABLE payments (id int PRIMARY KEY, amount numeric);\n";
  write_desired(&f, "refused.sql", DESIRED);
  write_desired(&f, "passes.sql", passes);
  char args[1024];

  /* (c) a Plan that changes a protected table: Failed, refused, the plan recorded for the audit */
  struct jobrun j;
  snprintf(args, sizeof(args), ",\"--operation\",\"shop-plan-1\",\"--desired\",\"%s/refused.sql\","
           "\"--protected-table\",\"public.payments\"", f.tmp);
  job_run(&j, k, "shop-plan-1", "default", &f, args);
  cr_assert_eq(j.code, 1, "%s", j.log);
  cr_assert_str_eq(json_get_str(j.report, "refusal"), "ProtectedTableRefused");
  cr_assert(json_get_bool(j.report, "recordDelivered", false));
  cJSON *rec = record_of(k, "shop-plan-1");
  cJSON *plan = plan_file(&f, "shop-plan-1");
  cr_assert_str_eq(json_get_str(rec, "spec.ownerRef.kind"), "PtahSchema");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.type"), "Plan");
  cr_assert_str_eq(json_get_str(rec, "spec.result.outcome"), "Failed");
  cr_assert_str_eq(json_get_str(rec, "spec.result.refusal"), "ProtectedTableRefused");
  cr_assert(has(json_get_str(rec, "spec.result.message"), "protected table public.payments"));
  cr_assert_str_eq(json_get_str(rec, "spec.result.planDigest"), json_get_str(plan, "digest"));
  cr_assert_null(json_get(rec, "spec.result.lockContinuous"), "a Plan holds no lock");
  assert_record_plan(rec, plan, j.report);
  const cJSON *s = statement(json_get(rec, "spec.result.plan"), "alter column public.payments.amount: set not "
                                                   "null");
  cr_assert_str_eq(json_get_str(s, "table"), "public.payments");
  cJSON_Delete(rec);
  cJSON_Delete(plan);
  job_free(&j);

  /* (a) a Plan of another table: Succeeded; the record holds the plan file's statements */
  snprintf(args, sizeof(args), ",\"--operation\",\"shop-plan-2\",\"--desired\",\"%s/passes.sql\","
           "\"--protected-table\",\"public.payments\"", f.tmp);
  job_run(&j, k, "shop-plan-2", "default", &f, args);
  cr_assert_eq(j.code, 0, "%s", j.log);
  cr_assert(has(j.log, "PASS credential: this Pod may create PtahResultRecord "
                       "default/shop-plan-2 (dry run)"), "%s", j.log);
  cr_assert(has(j.log, "PASS record: created PtahResultRecord default/shop-plan-2 (outcome "
                       "Succeeded)"), "%s", j.log);
  rec = record_of(k, "shop-plan-2");
  plan = plan_file(&f, "shop-plan-2");
  cr_assert_str_eq(json_get_str(rec, "spec.result.outcome"), "Succeeded");
  cr_assert_null(json_get(rec, "spec.result.refusal"));
  cr_assert_str_eq(json_get_str(rec, "spec.jobName"), "shop-plan-2");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.id"), "shop-plan-2");
  cr_assert_eq(json_get(rec, "spec.operation.attempt")->valuedouble, 1);
  cr_assert_eq(strlen(json_get_str(rec, "spec.result.startedAt")), 20);
  cr_assert_eq(strlen(json_get_str(rec, "spec.result.finishedAt")), 20);
  cr_assert_str_eq(json_get_str(rec, "spec.result.planDigest"), json_get_str(plan, "digest"));
  cr_assert_str_eq(json_get_str(rec, "spec.result.planDigest"),
                   json_get_str(j.report, "planDigest"));
  cr_assert_str_eq(json_get_str(rec, "spec.writer.serviceAccount"),
                   "system:serviceaccount:default:godwit-runner");
  assert_record_plan(rec, plan, j.report);
  cr_assert_eq(cJSON_GetArraySize(json_get(rec, "spec.result.plan.statements")), 2);
  char digest[80], fp[80];
  snprintf(digest, sizeof(digest), "%s", json_get_str(plan, "digest"));
  snprintf(fp, sizeof(fp), "%s", json_get_str(plan, "fingerprint"));
  cJSON_Delete(rec);
  cJSON_Delete(plan);
  job_free(&j);

  /* (d) its Apply: Applied, the lock held throughout, the approved digest recorded */
  snprintf(args, sizeof(args), ",\"--type\",\"Apply\",\"--operation\",\"shop-apply-3\","
           "\"--desired\",\"%s/passes.sql\",\"--protected-table\",\"public.payments\","
           "\"--approved-digest\",\"%s\",\"--plan-fingerprint\",\"%s\"", f.tmp, digest, fp);
  job_run(&j, k, "shop-apply-3", "default", &f, args);
  cr_assert_eq(j.code, 0, "%s", j.log);
  rec = record_of(k, "shop-apply-3");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.type"), "Apply");
  cr_assert_str_eq(json_get_str(rec, "spec.result.outcome"), "Applied");
  cr_assert(json_get_bool(rec, "spec.result.lockContinuous", false));
  cr_assert_str_eq(json_get_str(rec, "spec.result.planDigest"), digest);
  cr_assert_eq(json_get(rec, "spec.result.plan.statementCount")->valuedouble, 2);
  cr_assert(has(json_get_str(rec, "spec.result.message"), "Verified"));
  cJSON_Delete(rec);
  job_free(&j);

  /* (i) an Observe: an empty plan, recorded as an Observe */
  snprintf(args, sizeof(args), ",\"--type\",\"Observe\",\"--operation\",\"shop-observe-4\","
           "\"--desired\",\"%s/passes.sql\"", f.tmp);
  job_run(&j, k, "shop-observe-4", "default", &f, args);
  cr_assert_eq(j.code, 0, "%s", j.log);
  rec = record_of(k, "shop-observe-4");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.type"), "Observe");
  cr_assert_str_eq(json_get_str(rec, "spec.result.outcome"), "Succeeded");
  cr_assert_eq(json_get(rec, "spec.result.plan.statementCount")->valuedouble, 0);
  cr_assert_eq(cJSON_GetArraySize(json_get(rec, "spec.result.plan.statements")), 0);
  cJSON_Delete(rec);
  job_free(&j);

  /* (b) the record's name taken by another operation: nothing read, exit 4 */
  snprintf(args, sizeof(args), ",\"--operation\",\"shop-plan-9\",\"--desired\",\"%s/passes.sql\"",
           f.tmp);
  struct kube_delete_opts del = { .propagation = KUBE_PROPAGATE_FOREGROUND,
                                  .grace_period_s = -1 };
  cr_assert_eq(kube_delete(k, &KUBE_JOBS, "default", "shop-plan-2", &del, NULL, NULL), GW_OK);
  for(int waited = 0; waited < 30000; waited += 200) {
    cJSON *got = NULL;
    gw_rc rc = kube_get(k, &KUBE_JOBS, "default", "shop-plan-2", &got, NULL);
    cJSON_Delete(got);
    if(rc == GW_ENOTFOUND)
      break;
    sleep_ms(200);
  }
  job_run(&j, k, "shop-plan-2", "default", &f, args);
  cr_assert_eq(j.code, 4, "%s", j.log);
  cr_assert_str_eq(json_get_str(j.report, "result"), "CredentialFailed");
  cr_assert(has(j.log, "a record of operation \"shop-plan-2\" already has this name"), "%s",
            j.log);
  cr_assert_null(strstr(j.log, "connect"), "it connected:\n%s", j.log);
  job_free(&j);
  rec = record_of(k, "shop-plan-2");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.id"), "shop-plan-2", "the record changed");
  cJSON_Delete(rec);

  /* (b) a record in a namespace that is not the runner's: refused, nothing read */
  cJSON *ns = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                          "{\"name\":\"elsewhere\"}}");
  cr_assert_eq(kube_create(k, &KUBE_NAMESPACES, NULL, ns, false, NULL, NULL), GW_OK);
  cJSON_Delete(ns);
  /* a grant too broad (the runner's role bound in elsewhere for default's runners): RBAC lets
   * the record through, the webhook's namespace rule is what refuses it */
  static const struct kube_gvr rolebindings = { "rbac.authorization.k8s.io", "v1",
                                                "rolebindings", true };
  cJSON *rb = cJSON_Parse("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
                          "\"RoleBinding\",\"metadata\":{\"name\":\"too-broad\"},\"roleRef\":{"
                          "\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
                          "\"name\":\"godwit-runner\"},\"subjects\":[{\"kind\":\"ServiceAccount\","
                          "\"name\":\"godwit-runner\",\"namespace\":\"default\"}]}");
  cr_assert_eq(kube_create(k, &rolebindings, "elsewhere", rb, false, NULL, NULL), GW_OK);
  cJSON_Delete(rb);
  snprintf(args, sizeof(args), ",\"--operation\",\"shop-plan-5\",\"--desired\",\"%s/passes.sql\"",
           f.tmp);
  job_run(&j, k, "shop-plan-5", "elsewhere", &f, args);
  cr_assert_eq(j.code, 4, "%s", j.log);
  cr_assert_str_eq(json_get_str(j.report, "result"), "CredentialFailed");
  cr_assert(has(j.log, "FAIL credential: this Pod cannot deliver its result record, so nothing "
                       "is run: 422 Invalid: ") &&
              has(j.log, "is not of this record's namespace \"elsewhere\""), "%s", j.log);
  cr_assert_null(strstr(j.log, "connect"), "it connected:\n%s", j.log);
  job_free(&j);

  /* a plan whose record would exceed 1 MiB: its statements stay in the plan file only */
  size_t big = 700 * 1024;
  char *sql = malloc(2 * big + 512);
  cr_assert_not_null(sql);
  int n = sprintf(sql, "%sCOMMENT ON TABLE customers IS '", passes);
  memset(sql + n, 'x', big);
  n += (int)big;
  n += sprintf(sql + n, "';\nCOMMENT ON TABLE payments IS '");
  memset(sql + n, 'y', big);
  n += (int)big;
  sprintf(sql + n, "';\n");
  write_desired(&f, "big.sql", sql);
  free(sql);
  snprintf(args, sizeof(args), ",\"--operation\",\"shop-plan-6\",\"--desired\",\"%s/big.sql\"",
           f.tmp);
  job_run(&j, k, "shop-plan-6", "default", &f, args);
  cr_assert_eq(j.code, 0, "%s", j.log);
  cr_assert(has(j.log, "WARN record: the plan's 2 statements are left out of the record"), "%s",
            j.log);
  rec = record_of(k, "shop-plan-6");
  plan = plan_file(&f, "shop-plan-6");
  cr_assert(json_get_bool(rec, "spec.result.plan.statementsOmitted", false));
  cr_assert_null(json_get(rec, "spec.result.plan.statements"));
  cr_assert_eq(json_get(rec, "spec.result.plan.statementCount")->valuedouble, 2);
  cr_assert_eq(cJSON_GetArraySize(json_get(plan, "statements")), 2, "the plan file has them");
  cr_assert(has(json_get_str(rec, "spec.result.message"), "The record leaves out the plan's 2 "
                                                          "statements"));
  cr_assert_str_eq(json_get_str(rec, "spec.result.planDigest"), json_get_str(plan, "digest"));
  cJSON_Delete(rec);
  cJSON_Delete(plan);
  job_free(&j);

  cl_stop(&c);
  sc_stop(&f);
}
