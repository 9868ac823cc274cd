/*
 * test_ptah_faults.c: PtahMigration when things go wrong, end to end on the local cluster: a
 * runner that speaks another protocol, a runner Pod the API server refuses, a status that lost
 * its unresolved run, and the deletion of a resource holding one. Each asserts the seed 001
 * Event it causes, with its type, and that the database was not touched when nothing may run.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ptah_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_faults, .fini = stop, .timeout = 300);

static const char *const ONE[] = { "0001_create_users.sql", "CREATE TABLE users (id int);",
                                   NULL };

static bool history_exists(void)
{
  char *r = pgfx_query1(&E.dst, "shop", "SELECT to_regclass('public.ptah_migrations') IS NOT "
                        "NULL");
  bool yes = !strcmp(r, "t");
  free(r);
  return yes;
}

Test(ptah_faults, a_runner_of_another_protocol_refuses_the_job_before_touching_the_database)
{
  setenv("GODWIT_PTAH_RUNNER_PROTOCOL", "2", 1); /* the Jobs ask for 2; the runner speaks 1 */
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations", ONE);
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_event(&E, "shop", "RunnerProtocolMismatch", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "no RunnerProtocolMismatch:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "RunnerProtocolMismatch"));
  cr_expect_str_eq(e2e_cond_reason(&E, "shop", "Ready"), "RunnerProtocolMismatch");
  const char *m = e2e_event_message(&E, "shop", "RunnerProtocolMismatch");
  cr_expect(strstr(m, "asks for \"2\"") && strstr(m, "speaks protocol \"1\""),
            "the protocols are not named: %s", m);
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 1,
               "retried before the failure interval");
  cr_expect_not(history_exists(), "the runner touched the database");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "", "a record was delivered");
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0,
               "a refusal before anything ran is not an uncertain run");
}

Test(ptah_faults, a_refused_runner_pod_is_reported_and_the_job_keeps_its_deadline)
{
  setenv("GODWIT_PTAH_JOB_DEADLINE", "10", 1);
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations", ONE);
  e2e_apply(&E, PTAH_HEAD "  backoffLimit: 0\n"
                          "  execution: {serviceAccountName: nosuch}\n");
  bool ok = e2e_wait_event(&E, "shop", "PodAdmissionRefused", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "no PodAdmissionRefused:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "PodAdmissionRefused"));
  const char *m = e2e_event_message(&E, "shop", "PodAdmissionRefused");
  cr_expect(strstr(m, "nosuch") != NULL, "the refusal is not carried: %s", m);
  cr_expect_str_eq(e2e_cond_reason(&E, "shop", "Ready"), "PodAdmissionRefused");
  /* the deadline ends the Job; no Pod ever ran, so nothing was committed: Failed, not
   * uncertain */
  ok = e2e_wait_cond(&E, "shop", "Ready", "False", "RunFailed", 60000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "not RunFailed after the deadline:\n%s", d);
  free(d);
  cr_expect(strstr(e2e_event_message(&E, "shop", "OperationFailed"), "ever ran") != NULL);
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0);
  cr_expect_eq(e2e_event_count(&E, "shop", "TargetLockReleaseOwed"), 0,
               "no session ever ran, so none can hold the lock");
  cr_expect_not(history_exists());
}

Test(ptah_faults, an_unresolved_run_survives_a_lost_status_and_its_deletion_is_recorded)
{
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){ "0001_slow.sql",
                                        "SELECT pg_sleep(3); CREATE TABLE slow (id int);",
                                        NULL });
  e2e_apply(&E, PTAH_HEAD);
  ptah_kill_runner_during(&E, "shop", "pg_sleep(3)");
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  cr_assert(ok, "not Uncertain");
  cr_expect(strstr(ptah_unresolved_annotation(&E, "shop"), "shop-apply-1") != NULL);

  /* a restore that drops status: the record comes back from the annotation */
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "patch ptahmigration shop --subresource=status --type=json "
                       "-p '[{\"op\":\"remove\",\"path\":\"/status/unresolvedRun\"}]'");
  cr_assert_eq(rc, 0, "kubectl patch: %s", out);
  free(out);
  ok = e2e_wait_event(&E, "shop", "UnresolvedRunRestored", 30000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not restored:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "UnresolvedRunRestored"));
  cr_expect_str_eq(ptah_str(&E, "shop", "status.unresolvedRun.operation"), "shop-apply-1");
  cr_expect_str_eq(e2e_phase(&E, "shop"), "Uncertain");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 1, "a run was planned");

  /* deleting it records what was discarded before the finalizer lets go */
  rc = e2e_kubectl(&E, &out, "delete ptahmigration shop --timeout=30s");
  cr_assert_eq(rc, 0, "kubectl delete: %s", out);
  free(out);
  cr_expect_null(e2e_get(&E, "shop"), "still there after the delete returned");
  ok = e2e_wait_event(&E, "shop", "UnresolvedRunDiscarded", 10000);
  cr_assert(ok, "no UnresolvedRunDiscarded");
  cr_expect(ptah_has_event(&E, "shop", "Warning", "UnresolvedRunDiscarded"));
  const char *m = e2e_event_message(&E, "shop", "UnresolvedRunDiscarded");
  cr_expect(strstr(m, "shop-apply-1") && strstr(m, "Unknown") && strstr(m, "dst"),
            "the Event does not name the run, its outcome and the database: %s", m);
}

Test(ptah_faults, a_lock_left_by_a_dead_runner_is_released_by_the_next_run)
{
  ptah_start(&E, NULL);
  /* version 2 sleeps a minute, unless the table "marker" exists */
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){
                   "0001_users.sql", "CREATE TABLE users (id int);", "0002_slow.sql",
                   "SELECT pg_sleep(CASE WHEN to_regclass('public.marker') IS NULL THEN 60 "
                   "ELSE 0 END); CREATE TABLE slow (id int);", NULL });
  e2e_apply(&E, PTAH_HEAD);
  ptah_kill_runner_during(&E, "shop", "pg_sleep(CASE");
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  cr_assert(ok, "not Uncertain");
  cr_expect(ptah_has_event(&E, "shop", "Warning", "TargetLockReleaseOwed"));
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lockReleaseOwed.session"),
                   "godwit-ptah-shop-apply-1");
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahmigration_phase{namespace=\"default\","
                          "name=\"shop\",phase=\"Uncertain\"}"), 1, "%s", metrics);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahmigration_lock_release_owed{namespace="
                          "\"default\",name=\"shop\"}"), 1);
  free(metrics);
  /* the dead runner's session goes on sleeping, holding the migration lock */
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE "
                        "application_name = 'godwit-ptah-shop-apply-1'");
  cr_expect_str_eq(n, "1", "the session was expected to outlive its runner");
  free(n);
  pgfx_exec(&E.dst, "shop", "CREATE TABLE marker ()");
  long long t0 = e2e_mono_ms();
  /* alice settles it with the kubectl plugin, which names the recorded run itself */
  char *out = NULL;
  int rc = e2e_plugin(&E, "alice", &out, "acknowledge ptahmigration shop --outcome Partial "
                       "--comment 'version 1 is recorded, version 2 is not'");
  cr_assert_eq(rc, 0, "kubectl godwit acknowledge: %s", out);
  cr_expect(strstr(out, "alice states that shop-apply-1 Partial") != NULL, "%s", out);
  free(out);
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  long long took = e2e_mono_ms() - t0;
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied after the acknowledgment:\n%s", d);
  free(d);
  /* the session would have held the lock for a minute, longer than a run waits (30 s) */
  cr_expect_lt(took, 25000, "the next run waited for the lock (%lld ms)", took);
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lockReleaseOwed.session"), "",
                   "the owed release is still recorded");
  n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE "
                  "application_name = 'godwit-ptah-shop-apply-1'");
  cr_expect_str_eq(n, "0");
  free(n);
  n = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',' ORDER BY version) "
                  "FROM public.ptah_migrations");
  cr_expect_str_eq(n, "1,2");
  free(n);
}

Test(ptah_faults, a_job_that_never_started_is_cleaned_up_when_the_spec_is_fixed)
{
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations", ONE);
  e2e_apply(&E, PTAH_HEAD "  execution: {serviceAccountName: nosuch}\n");
  bool ok = e2e_wait_event(&E, "shop", "PodAdmissionRefused", 60000);
  cr_assert(ok, "no PodAdmissionRefused");
  /* the first cleanup cannot be scheduled: the Job keeps its deadline, and it is said */
  cl_fault(&E.c, "{\"verb\":\"patch\",\"pathRegex\":\"/jobs/shop-apply-1-1$\",\"code\":500,"
                 "\"count\":8}"); /* more than one call's own retries */
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "patch ptahmigration shop --type=merge -p "
                       "'{\"spec\":{\"execution\":{\"serviceAccountName\":null}}}'");
  cr_assert_eq(rc, 0, "kubectl patch: %s", out);
  free(out);
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied after the fix:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "MigrationJobCleanupDeferred"));
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationJobCleanupDeferred"),
                   "own deadline") != NULL);
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lastRun.operation"), "shop-apply-2");
  cr_expect_neq(e2e_kubectl(&E, NULL, "get job shop-apply-1-1"), 0, "the stale Job stayed");
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0);
}
