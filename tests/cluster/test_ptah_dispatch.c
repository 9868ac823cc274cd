/*
 * test_ptah_dispatch.c: a PtahMigration's claim across manager releases and a result read that
 * fails, end to end on the local cluster with the API server's fault injection. The claim is
 * held undispatched (the API server refuses to create Jobs), the controller is replaced by one
 * with another runner image (a new execution binding: ExecutionBindingChanged, the claim is
 * discarded and a new one runs) or other runner flags (the same binding: the admission snapshot
 * is resolved again once, AdmissionSnapshotRefreshed, and the same claim runs).
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

TestSuite(ptah_dispatch, .fini = stop, .timeout = 300);

static const char *const ONE[] = { "0001_create_users.sql", "CREATE TABLE users (id int);",
                                   NULL };

/* A claim that cannot dispatch: the controller dies while its Job create is held. */
static void held_claim(void)
{
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations", ONE);
  e2e_hold_job_create(&E);
  e2e_apply(&E, PTAH_HEAD);
  long long end = e2e_mono_ms() + 30000;
  while(e2e_mono_ms() < end && strcmp(ptah_str(&E, "shop", "status.operation.id"),
                                      "shop-apply-1"))
    e2e_sleep_ms(100);
  cr_assert_str_eq(ptah_str(&E, "shop", "status.operation.id"), "shop-apply-1");
  e2e_controller_kill_holding(&E);
  cr_assert_str_eq(ptah_str(&E, "shop", "status.operation.startedAt"), "", "dispatched");
}

static bool job_exists(const char *name)
{
  return e2e_kubectl(&E, NULL, "get job %s", name) == 0;
}

Test(ptah_dispatch, a_new_runner_image_discards_an_undispatched_claim)
{
  held_claim();
  setenv("GODWIT_RUNNER_IMAGE", "ghcr.io/godwit-dev/godwit:next", 1);
  e2e_controller_start(&E);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "ExecutionBindingChanged"));
  const char *m = e2e_event_message(&E, "shop", "ExecutionBindingChanged");
  cr_expect(strstr(m, "godwit:test") && strstr(m, "godwit:next"),
            "the Event does not say what changed: %s", m);
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lastRun.operation"), "shop-apply-2");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-2-1"), "Accepted");
  cr_expect_not(job_exists("shop-apply-1-1"), "the discarded claim was dispatched");
  cr_expect_eq(e2e_event_count(&E, "shop", "AdmissionSnapshotRefreshed"), 0);
}

Test(ptah_dispatch, other_runner_flags_refresh_the_admission_snapshot_once)
{
  held_claim();
  setenv("GODWIT_PTAH_LOCK_WAIT", "31", 1); /* the Job's arguments change, not the binding */
  e2e_controller_start(&E);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Normal", "AdmissionSnapshotRefreshed"));
  cr_expect_eq(e2e_event_count(&E, "shop", "ExecutionBindingChanged"), 0,
               "a release that changes no part of the binding records no such Event");
  cr_expect_str_eq(ptah_str(&E, "shop", "status.lastRun.operation"), "shop-apply-1");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 1);
  char *args = NULL;
  cr_assert_eq(e2e_kubectl(&E, &args, "get job shop-apply-1-1 -o "
                           "jsonpath={.spec.template.spec.containers[0].args}"), 0);
  cr_expect(strstr(args, "\"31\"") != NULL, "the Job was not made from the refreshed "
            "snapshot: %s", args);
  free(args);
}

Test(ptah_dispatch, a_failed_result_read_is_retried_and_named)
{
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations", ONE);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/ptahresultrecords/shop-apply-1-1$\","
                 "\"code\":503,\"count\":8}");
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "ResultReadFailed"));
  const char *m = e2e_event_message(&E, "shop", "ResultReadFailed");
  cr_expect(strstr(m, "ptahresultrecords/shop-apply-1-1") != NULL,
            "the failed read is not named: %s", m);
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0,
               "a failed read made the run uncertain");
}

Test(ptah_dispatch, a_result_read_that_times_out_is_retried_and_named)
{
  setenv("GODWIT_KUBE_API_TIMEOUT_MS", "1500", 1);
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations", ONE);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/ptahresultrecords/shop-apply-1-1$\","
                 "\"code\":504,\"delayMs\":2500,\"count\":1}");
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "ResultReadTimedOut"));
  const char *m = e2e_event_message(&E, "shop", "ResultReadTimedOut");
  cr_expect(strstr(m, "ptahresultrecords/shop-apply-1-1") != NULL,
            "the timed-out read is not named: %s", m);
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0);
}

Test(ptah_dispatch, a_runner_that_cannot_deliver_runs_nothing_and_is_tried_again)
{
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations", ONE);
  /* the first runner's proof of its delivery credential (a dry-run record) is refused */
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/ptahresultrecords$\",\"code\":403,"
                 "\"count\":1,\"dryRun\":true,\"message\":\"injected: not allowed\"}");
  e2e_apply(&E, PTAH_HEAD "  backoffLimit: 0\n");
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "ResultCredentialFailed"));
  const char *m = e2e_event_message(&E, "shop", "ResultCredentialFailed");
  cr_expect(strstr(m, "injected: not allowed") && strstr(m, "godwit-runner"),
            "the Event does not carry the refusal and the service account: %s", m);
  /* the refused attempt ran nothing and spent nothing of backoffLimit 0 */
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-2"), "Accepted");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "", "the refused Pod wrote");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationRetried"), 0);
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM public.ptah_migrations");
  cr_expect_str_eq(n, "1");
  free(n);
}
