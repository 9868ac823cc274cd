/*
 * test_ptah_schema_faults.c: a PtahSchema when things go wrong, end to end on the local cluster
 * with real PostgreSQL: an Apply killed while it waits for the database lock (nothing committed:
 * observed, applied again under the same approval), an Apply whose result is lost after it
 * committed (observed as applied), an Apply that fails on the data (Failed until a new approval),
 * a new runner image (the approval boundary closes), a runner of another protocol, and a plan
 * that failed for a cause of the database's (planned again after its backoff).
 */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ptah_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_schema_faults, .fini = stop, .timeout = 300);

/* Bob's plan of ORDERS_V1, waiting for an approval; its digest into out. */
static void planned(char *out, size_t len)
{
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  psch_want_new_plan(&E, NULL, out, len);
}

static void approve_as_alice(const char *name, const char *digest)
{
  char *out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", name, digest, "bob", &out), 0, "%s", out);
  free(out);
}

static void want_ready(void)
{
  bool ok = e2e_wait_cond(&E, "orders", "Ready", "True", "Applied", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "not Ready/Applied:\n%s", d ? d : "");
}

Test(ptah_schema_faults, an_apply_killed_waiting_for_the_lock_is_observed_and_applied_again)
{
  psch_start(&E, false);
  char digest[128];
  planned(digest, sizeof(digest));
  /* another session holds the PtahSchema lock of the database */
  char uri[512];
  PGconn *holder = PQconnectdb(pgfx_super_uri(&E.dst, uri, sizeof(uri), "shop"));
  cr_assert_eq(PQstatus(holder), CONNECTION_OK, "%s", PQerrorMessage(holder));
  PGresult *r = PQexec(holder, "SELECT pg_catalog.pg_advisory_lock(1886675304, "
                               "pg_catalog.hashtext('ptah.run/PtahSchema'))");
  cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(holder));
  PQclear(r);
  approve_as_alice("alice-1", digest);
  ptah_kill_runner_during(&E, "orders", "pg_try_advisory_lock");
  PQfinish(holder);
  bool ok = e2e_wait_event(&E, "orders", "ApplyOutcomeUnknown", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no ApplyOutcomeUnknown:\n%s", d ? d : "");
  want_ready();
  cr_expect(psch_has_column(&E, "orders", "placed_at"));
  cr_expect_str_eq(ptah_str(&E, "orders", "status.applied.planDigest"), digest);
  /* the observation established that nothing had committed, then the plan ran again */
  char *ev = e2e_events(&E, "orders");
  cr_expect(strstr(ev, "committed nothing") != NULL, "%s", ev);
  free(ev);
  cr_expect(psch_wait_approval(&E, "alice-1", "Applied", 30000), "alice's approval is %s",
            psch_approval_phase(&E, "alice-1"));
}

Test(ptah_schema_faults, an_apply_whose_result_is_lost_after_commit_is_observed_as_applied)
{
  psch_start(&E, true);
  char digest[128];
  planned(digest, sizeof(digest));
  /* every result record is refused from now on (the dry runs that prove the credential pass) */
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/ptahresultrecords$\",\"code\":500,"
                 "\"count\":-1,\"dryRun\":false}");
  approve_as_alice("alice-1", digest);
  bool ok = e2e_wait_event(&E, "orders", "ApplyOutcomeUnknown", 150000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no ApplyOutcomeUnknown:\n%s", d ? d : "");
  cr_expect(psch_has_column(&E, "orders", "placed_at"), "the Apply had not committed");
  cl_fault(&E.c, "{\"clear\":true}");
  want_ready();
  char *ev = e2e_events(&E, "orders");
  cr_expect(strstr(ev, "had committed") != NULL, "%s", ev);
  free(ev);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.lastResult.type"), "Observe");
}

Test(ptah_schema_faults, an_apply_that_fails_on_the_data_waits_for_a_new_approval)
{
  psch_start(&E, false);
  pgfx_exec(&E.dst, "shop", "SET ROLE dst_app; CREATE TABLE public.orders (id bigint PRIMARY "
            "KEY, placed_at timestamptz); INSERT INTO public.orders VALUES (1, NULL)");
  char digest[128];
  planned(digest, sizeof(digest)); /* placed_at becomes NOT NULL: row 1 refuses it */
  approve_as_alice("alice-1", digest);
  psch_want_phase(&E, "Failed", 120000);
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "ApplyFailed");
  cr_expect(ptah_has_event(&E, "orders", "Warning", "OperationFailed"));
  cr_expect(strstr(e2e_event_message(&E, "orders", "OperationFailed"), "23502") != NULL,
            "the failure does not carry the server's SQLSTATE: %s",
            e2e_event_message(&E, "orders", "OperationFailed"));
  cr_expect_str_eq(psch_approval_phase(&E, "alice-1"), "Accepted");
  /* not applied again by itself */
  e2e_sleep_ms(3000);
  cr_expect_str_eq(e2e_phase(&E, "orders"), "Failed");
  cr_expect_eq(e2e_event_count(&E, "orders", "OperationFailed"), 1);
  /* the data is fixed; a new approval of the same plan applies it */
  pgfx_exec(&E.dst, "shop", "UPDATE public.orders SET placed_at = now()");
  approve_as_alice("alice-2", digest);
  want_ready();
  char *n = pgfx_query1(&E.dst, "shop", "SELECT is_nullable FROM information_schema.columns "
                        "WHERE table_name = 'orders' AND column_name = 'placed_at'");
  cr_expect_str_eq(n, "NO");
  free(n);
  cr_expect(psch_wait_approval(&E, "alice-2", "Applied", 30000));
}

Test(ptah_schema_faults, a_new_runner_image_closes_the_approval_boundary)
{
  psch_start(&E, false);
  char digest[128];
  planned(digest, sizeof(digest));
  e2e_controller_kill(&E);
  setenv("GODWIT_RUNNER_IMAGE", "ghcr.io/godwit-dev/godwit:next", 1);
  e2e_controller_start(&E);
  bool ok = e2e_wait_event(&E, "orders", "ExecutionBindingChanged", 60000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no ExecutionBindingChanged:\n%s", d ? d : "");
  cr_expect(strstr(e2e_event_message(&E, "orders", "ExecutionBindingChanged"), "godwit:next"));
  char digest2[128];
  psch_want_new_plan(&E, digest, digest2, sizeof(digest2));
  cr_expect(strstr(ptah_str(&E, "orders", "status.plan.binding"), "godwit:next") != NULL);
  /* an approval of the retired plan is stale; the new plan's applies */
  approve_as_alice("alice-old", digest);
  cr_expect(psch_wait_approval(&E, "alice-old", "Stale", 30000), "%s",
            psch_approval_phase(&E, "alice-old"));
  approve_as_alice("alice-new", digest2);
  want_ready();
}

Test(ptah_schema_faults, a_runner_of_another_protocol_refuses_the_plan_and_nothing_is_planned)
{
  setenv("GODWIT_PTAH_RUNNER_PROTOCOL", "2", 1);
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  bool ok = e2e_wait_event(&E, "orders", "RunnerProtocolMismatch", 90000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no RunnerProtocolMismatch:\n%s", d ? d : "");
  cr_expect_str_eq(e2e_phase(&E, "orders"), "Planning");
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "RunnerProtocolMismatch");
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.digest"), "");
}

Test(ptah_schema_faults, a_failed_plan_is_planned_again_after_its_backoff)
{
  setenv("GODWIT_PTAH_FAILURE_INTERVAL_MS", "1000", 1);
  psch_start(&E, false);
  pgfx_exec(&E.dst, "postgres", "ALTER ROLE dst_app NOCREATEDB"); /* no scratch database */
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  psch_want_phase(&E, "Failed", 120000);
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "PlanFailed");
  cr_expect(strstr(e2e_cond_message(&E, "orders", "Ready"), "CREATEDB") != NULL, "%s",
            e2e_cond_message(&E, "orders", "Ready"));
  cr_expect(ptah_has_event(&E, "orders", "Warning", "OperationFailed"));
  /* the cause was the database's: fixed there, with no spec change, the plan comes */
  pgfx_exec(&E.dst, "postgres", "ALTER ROLE dst_app CREATEDB");
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  cr_expect_str_eq(ptah_str(&E, "orders", "status.refused.reason"), "");
  cr_expect_geq(ptah_int(&E, "orders", "status.operationCount"), 2, "planned again");
}
