/*
 * test_ptah_migration.c: PtahMigration end to end on the local cluster: the real webhook, the job
 * runner, the controller, `godwit-runner ptah-migrate` against a real PostgreSQL 15, results
 * delivered as PtahResultRecords with the runner Pod's bound token, and the real kubectl.
 *
 * Each test asserts the seed 001 Events it causes on the PtahMigration, with their types, and
 * what the database holds: every version applied once, in its own transaction, recorded in the
 * history table with the checksum of its text.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "ptah_e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_migration, .fini = stop, .timeout = 300);

static const char *V1 = "CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL);";
static const char *V2 = "ALTER TABLE users ADD COLUMN name text;";
static const char *V3 = "CREATE INDEX users_email ON users (email);\n"
                        "INSERT INTO users VALUES (1, 'ada@example.com', 'Ada');";

Test(ptah_migration, applies_versions_in_order_and_records_them_with_their_checksums)
{
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_add_name.sql", V2,
                                                      "0003_index.sql", V3, NULL });
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Ready/Applied:\n%s", d);
  free(d);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "UpToDate");
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 3);
  cr_expect_eq(ptah_int(&E, "shop", "status.latestVersion"), 3);
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lastRun.outcome"), "Applied");
  cr_expect_eq(ptah_int(&E, "shop", "status.lastRun.fromVersion"), 0);
  cr_expect_eq(ptah_int(&E, "shop", "status.lastRun.toVersion"), 3);
  /* the database: the tables, the row, and one history row per version with its checksum */
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM public.ptah_migrations");
  cr_expect_str_eq(n, "3");
  free(n);
  char sum[DIGEST_SHA256_LEN];
  cr_assert(!digest_sha256(V1, strlen(V1), sum));
  char *c1 = pgfx_query1(&E.dst, "shop",
                         "SELECT checksum FROM public.ptah_migrations WHERE version = 1");
  cr_expect_str_eq(c1, sum);
  free(c1);
  char *u = pgfx_query1(&E.dst, "shop", "SELECT name FROM users WHERE id = 1");
  cr_expect_str_eq(u, "Ada");
  free(u);
  /* the durable result, accepted after the controller checked its writer */
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "Accepted");
  cr_expect(ptah_has_event(&E, "shop", "Normal", "OperationStarted"), "no OperationStarted");
  cr_expect(ptah_has_event(&E, "shop", "Normal", "MigrationRunFinished"),
            "no Normal MigrationRunFinished");
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationRunFinished"), "Applied") != NULL);
  /* the controller's /metrics: what the alerts read */
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahmigration_phase{namespace=\"default\","
                          "name=\"shop\",phase=\"UpToDate\"}"), 1, "%s", metrics);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahmigration_phase{namespace=\"default\","
                          "name=\"shop\",phase=\"Uncertain\"}"), 0);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahmigration_current_version{namespace="
                          "\"default\",name=\"shop\"}"), 3);
  free(metrics);
  /* nothing to settle: the plugin says so and creates nothing */
  char *pout = NULL;
  cr_expect_neq(e2e_plugin(&E, "alice", &pout, "acknowledge ptahmigration shop --outcome "
                            "Applied"), 0);
  cr_expect(strstr(pout, "has no unresolved run") != NULL, "%s", pout);
  free(pout);
  /* kstatus-style readers */
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "wait --for=condition=Ready ptahmigration/shop --timeout=10s");
  cr_expect_eq(rc, 0, "kubectl wait: %s", out);
  free(out);

  /* a new release adds a version: one more run, from 3 to 4 */
  ptah_configmap(&E, "shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_add_name.sql", V2,
                                                      "0003_index.sql", V3,
                                                      "0004_orders.sql",
                                                      "CREATE TABLE orders (id int);", NULL });
  ok = ptah_wait_version(&E, "shop", 4, 90000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "version 4 not reached:\n%s", d);
  free(d);
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-2-1"), "Accepted");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 2);
  n = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',' ORDER BY version) "
                  "FROM public.ptah_migrations");
  cr_expect_str_eq(n, "1,2,3,4");
  free(n);
  char *jobs = NULL;
  cr_assert_eq(e2e_kubectl(&E, &jobs, "get jobs -l ptah.run/migration=shop -o name"), 0);
  cr_expect_str_eq(jobs, "job.batch/shop-apply-1-1\njob.batch/shop-apply-2-1\n");
  free(jobs);
}

Test(ptah_migration, a_failing_version_stops_the_run_and_a_changed_applied_version_is_refused)
{
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_broken.sql",
                                                      "ALTER TABLE nosuch ADD COLUMN x int;",
                                                      NULL });
  e2e_apply(&E, PTAH_HEAD "  backoffLimit: 1\n");
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "False", "RunPartial", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not RunPartial:\n%s", d);
  free(d);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "Failed");
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 1);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "MigrationRunFinished"),
            "no Warning MigrationRunFinished");
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationRunFinished"), "Partial") != NULL);
  cr_expect(strstr(e2e_event_message(&E, "shop", "OperationFailed"), "nosuch") != NULL,
            "the failure is not carried: %s", e2e_event_message(&E, "shop", "OperationFailed"));
  /* Partial committed something: it is not retried */
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationRetried"), 0);
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM public.ptah_migrations");
  cr_expect_str_eq(n, "1");
  free(n);

  /* the fix is published: the run goes on from version 1 */
  ptah_configmap(&E, "shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_broken.sql", V2, NULL });
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  cr_assert(ok, "the fixed run did not apply");
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);

  /* an applied version whose text changed is refused, naming it; it committed nothing, so it
   * is retried backoffLimit times, then fails */
  ptah_configmap(&E, "shop-migrations", (const char *const[]){
                                 "0001_create_users.sql",
                                 "CREATE TABLE users (id int PRIMARY KEY);",
                                 "0002_broken.sql", V2, NULL });
  ok = e2e_wait_cond(&E, "shop", "Ready", "False", "RunFailed", 120000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "the changed version was not refused:\n%s", d);
  free(d);
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationRetried"), 1);
  cr_expect(strstr(e2e_event_message(&E, "shop", "OperationRetried"), "attempt 2") != NULL);
  const char *m = e2e_cond_message(&E, "shop", "Ready");
  cr_expect(strstr(m, "0001_create_users.sql") != NULL, "the version is not named: %s", m);
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);
}

Test(ptah_migration, a_run_killed_mid_version_is_uncertain_until_an_acknowledgment_settles_it)
{
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations",
            (const char *const[]){ "0001_create_users.sql", V1, "0002_slow.sql",
                                   "SELECT pg_sleep(3); CREATE TABLE slow (id int);", NULL });
  e2e_apply(&E, PTAH_HEAD);
  ptah_kill_runner_during(&E, "shop", "pg_sleep(3)");
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Uncertain:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "MigrationRunUncertain"),
            "no MigrationRunUncertain");
  cr_expect_str_eq(ptah_str(&E, "shop", "status.unresolvedRun.operation"), "shop-apply-1");
  cr_expect_str_eq(e2e_cond_reason(&E, "shop", "Ready"), "RunUncertain");
  cr_expect(strstr(ptah_unresolved_annotation(&E, "shop"), "shop-apply-1") != NULL,
            "no unresolved-run annotation");

  /* an acknowledgment of another operation settles nothing */
  ptah_acknowledge(&E, "alice", "wrong", "shop-apply-9", "NotApplied");
  e2e_sleep_ms(2000);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "Uncertain");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 1, "a run was planned");

  /* alice looks, and states what she found: version 1 committed, 2 did not */
  char *v = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',') FROM "
                        "public.ptah_migrations");
  cr_expect_str_eq(v, "1");
  free(v);
  ptah_acknowledge(&E, "alice", "shop-apply-1-ack", "shop-apply-1", "Partial");
  ok = e2e_wait_event(&E, "shop", "UnresolvedRunAcknowledged", 30000);
  cr_assert(ok, "not acknowledged");
  const char *m = e2e_event_message(&E, "shop", "UnresolvedRunAcknowledged");
  cr_expect(strstr(m, "alice") && strstr(m, "Partial") && strstr(m, "shop-apply-1"),
            "the Event does not name who, the outcome and the operation: %s", m);
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied after the acknowledgment:\n%s", d);
  free(d);
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);
  cr_expect_str_eq(ptah_str(&E, "shop", "status.acknowledgment.acknowledgedBy"), "alice");
  v = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',' ORDER BY version) FROM "
                  "public.ptah_migrations");
  cr_expect_str_eq(v, "1,2", "a version applied twice or missing");
  free(v);
  cr_expect_str_eq(ptah_unresolved_annotation(&E, "shop"), "",
                   "the annotation stayed after the run was settled");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-2-1"), "Accepted");
  char *ph = NULL;
  cr_assert_eq(e2e_kubectl(&E, &ph, "get ptahmigrationrunacknowledgment shop-apply-1-ack "
                           "-o jsonpath={.status.phase}"), 0);
  cr_expect_str_eq(ph, "Accepted");
  free(ph);
  cr_assert_eq(e2e_kubectl(&E, &ph, "get ptahmigrationrunacknowledgment wrong "
                           "-o jsonpath={.status.phase}"), 0);
  cr_expect_str_eq(ph, "", "an acknowledgment of another operation was consumed");
  free(ph);
}
