/*
 * test_ptah_schema_dispatch.c: the operation machinery PtahSchema shares with PtahMigration,
 * seen on a PtahSchema's Plan end to end on the local cluster: a runner Pod the API server
 * refuses (PodAdmissionRefused, then the fixed spec plans), a runner that cannot prove it can
 * deliver its result (ResultCredentialFailed), a result read that fails or times out
 * (ResultReadFailed, ResultReadTimedOut), and a claim whose Pod template changed before dispatch
 * (AdmissionSnapshotRefreshed). Each Event on the PtahSchema, and the plan computed in the end.
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

TestSuite(ptah_schema_dispatch, .fini = stop, .timeout = 300);

static void want_plan(void)
{
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  cr_expect_eq(e2e_event_count(&E, "orders", "OperationFailed"), 0);
}

static void want_event(const char *reason, const char *needle)
{
  bool ok = e2e_wait_event(&E, "orders", reason, 60000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no %s:\n%s", reason, d ? d : "");
  const char *m = e2e_event_message(&E, "orders", reason);
  cr_expect(strstr(m, needle) != NULL, "\"%s\" not in the %s Event: %s", needle, reason, m);
}

Test(ptah_schema_dispatch, a_refused_runner_pod_is_reported_and_the_fixed_spec_plans)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, "  execution: {serviceAccountName: nosuch}\n");
  want_event("PodAdmissionRefused", "nosuch");
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "PodAdmissionRefused");
  cr_expect_str_eq(e2e_phase(&E, "orders"), "Planning");
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  want_plan();
  cr_expect_neq(e2e_kubectl(&E, NULL, "get job orders-plan-1-1"), 0,
                "the Job that never started was left");
}

Test(ptah_schema_dispatch, a_runner_that_cannot_deliver_runs_nothing_and_is_tried_again)
{
  psch_start(&E, true);
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/ptahresultrecords$\",\"code\":403,"
                 "\"count\":1,\"dryRun\":true,\"message\":\"injected: not allowed\"}");
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  want_plan();
  cr_expect(ptah_has_event(&E, "orders", "Warning", "ResultCredentialFailed"));
  const char *m = e2e_event_message(&E, "orders", "ResultCredentialFailed");
  cr_expect(strstr(m, "injected: not allowed") && strstr(m, "godwit-runner"), "%s", m);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.record"), "orders-plan-1-2");
  cr_expect_str_eq(ptah_record_phase(&E, "orders-plan-1-1"), "", "the refused Pod wrote");
}

Test(ptah_schema_dispatch, a_failed_result_read_is_retried_and_named)
{
  psch_start(&E, true);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/ptahresultrecords/orders-plan-1-1$\","
                 "\"code\":503,\"count\":8}");
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  want_plan();
  cr_expect(ptah_has_event(&E, "orders", "Warning", "ResultReadFailed"));
  cr_expect(strstr(e2e_event_message(&E, "orders", "ResultReadFailed"),
                   "ptahresultrecords/orders-plan-1-1") != NULL);
}

Test(ptah_schema_dispatch, a_result_read_that_times_out_is_retried_and_named)
{
  setenv("GODWIT_KUBE_API_TIMEOUT_MS", "1500", 1);
  psch_start(&E, true);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/ptahresultrecords/orders-plan-1-1$\","
                 "\"code\":504,\"delayMs\":2500,\"count\":1}");
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  want_plan();
  cr_expect(ptah_has_event(&E, "orders", "Warning", "ResultReadTimedOut"));
  cr_expect(strstr(e2e_event_message(&E, "orders", "ResultReadTimedOut"),
                   "ptahresultrecords/orders-plan-1-1") != NULL);
}

Test(ptah_schema_dispatch, other_runner_flags_refresh_the_admission_snapshot_once)
{
  psch_start(&E, true);
  e2e_hold_job_create(&E);
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  long long end = e2e_mono_ms() + 30000;
  while(e2e_mono_ms() < end && strcmp(ptah_str(&E, "orders", "status.operation.id"),
                                      "orders-plan-1"))
    e2e_sleep_ms(100);
  cr_assert_str_eq(ptah_str(&E, "orders", "status.operation.id"), "orders-plan-1");
  e2e_controller_kill_holding(&E);
  cr_assert_str_eq(ptah_str(&E, "orders", "status.operation.startedAt"), "", "dispatched");
  setenv("GODWIT_PTAH_LOCK_WAIT", "31", 1); /* the Job's arguments change, not the binding */
  e2e_controller_start(&E);
  want_plan();
  cr_expect(ptah_has_event(&E, "orders", "Normal", "AdmissionSnapshotRefreshed"));
  cr_expect_eq(e2e_event_count(&E, "orders", "ExecutionBindingChanged"), 0);
  cr_expect_eq(e2e_event_count(&E, "orders", "OperationStarted"), 1);
  char *args = NULL;
  cr_assert_eq(e2e_kubectl(&E, &args, "get job orders-plan-1-1 -o "
                           "jsonpath={.spec.template.spec.containers[0].args}"), 0);
  cr_expect(strstr(args, "\"31\"") != NULL, "not made from the refreshed snapshot: %s", args);
  free(args);
}
