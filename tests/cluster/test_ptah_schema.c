/*
 * test_ptah_schema.c: PtahSchema end to end on the local cluster: the real webhook (stamps and
 * approval rules), the job runner, the controller, `godwit-runner ptah-plan` against a real
 * PostgreSQL 15 (plans, applies and observations delivered as PtahResultRecords), and the real
 * kubectl as bob (who writes the schema) and alice (who approves).
 *
 * Each test asserts the seed 001 Events it causes, on the object a person looks at (the schema,
 * or the approval that went stale), and what the database holds: never a change nobody
 * approved.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ptah_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_schema, .fini = stop, .timeout = 300);

Test(ptah_schema, bob_writes_alice_approves_the_change_lands_a_stale_approval_is_refused)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  psch_want_phase(&E, "AwaitingApproval", 120000);
  char digest[128];
  snprintf(digest, sizeof(digest), "%s", ptah_str(&E, "orders", "status.plan.digest"));
  cr_assert(!strncmp(digest, "sha256:", 7), "no plan digest: %s", digest);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.author"), "bob");
  cr_expect_eq(ptah_int(&E, "orders", "status.plan.statements"), 2, "CREATE TABLE and its primary key");
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "ApprovalRequired");
  /* the whole plan is in the Plan operation's record, accepted after its writer was checked */
  const char *rec = ptah_str(&E, "orders", "status.plan.record");
  char record[128];
  snprintf(record, sizeof(record), "%s", rec);
  cr_expect_str_eq(ptah_record_phase(&E, record), "Accepted");
  char *out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "get ptahresultrecord %s -o "
                           "jsonpath='{.spec.result.plan.statements[0].sql}'", record), 0);
  cr_expect(strstr(out, "CREATE TABLE public.orders") || strstr(out, "CREATE TABLE \"public\""),
            "the record does not hold the plan's statement: %s", out);
  free(out);
  cr_expect(ptah_has_event(&E, "orders", "Normal", "OperationStarted"));
  cr_expect(ptah_has_event(&E, "orders", "Normal", "OperationCompleted"));
  cr_expect(ptah_has_event(&E, "orders", "Normal", "ApprovalRequired"));
  cr_expect(!psch_has_column(&E, "orders", "id"), "applied before any approval");

  /* bob cannot approve his own plan: refused at once when he says he wrote it ... */
  out = NULL;
  cr_expect_neq(psch_approve(&E, "bob", "bob-own", digest, "bob", &out), 0, "admitted: %s", out);
  cr_expect(strstr(out, "forbids approving one's own plan") != NULL, "%s", out);
  free(out);
  /* ... and by the controller, from the author it recorded, when he does not */
  out = NULL;
  cr_assert_eq(psch_approve(&E, "bob", "bob-quiet", digest, NULL, &out), 0, "%s", out);
  free(out);
  cr_expect(psch_wait_approval(&E, "bob-quiet", "Refused", 30000), "bob's approval is %s",
            psch_approval_phase(&E, "bob-quiet"));
  cr_expect_str_eq(e2e_phase(&E, "orders"), "AwaitingApproval");
  cr_expect(!psch_has_column(&E, "orders", "id"), "bob's own approval applied his plan");

  /* alice approves: the change lands */
  out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", "alice-1", digest, "bob", &out), 0, "%s", out);
  free(out);
  bool ok = e2e_wait_cond(&E, "orders", "Ready", "True", "Applied", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "not Ready/Applied:\n%s", d ? d : "");
  cr_expect_str_eq(e2e_phase(&E, "orders"), "Ready");
  cr_expect(psch_has_column(&E, "orders", "placed_at"));
  cr_expect_str_eq(ptah_str(&E, "orders", "status.applied.planDigest"), digest);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.approval.approver"), "alice");
  cr_expect(psch_wait_approval(&E, "alice-1", "Applied", 30000), "alice's approval is %s",
            psch_approval_phase(&E, "alice-1"));
  cr_expect(ptah_has_event(&E, "orders", "Normal", "ApprovalAccepted"));
  cr_expect(strstr(e2e_event_message(&E, "orders", "ApprovalAccepted"), "alice") != NULL);
  cr_expect_eq(e2e_kubectl(&E, NULL, "wait --for=condition=Ready ptahschema/orders "
                           "--timeout=5s"), 0, "kubectl wait does not see Ready");
  /* kubectl get: the phase, Ready and the short digest */
  out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "get ptahschema orders"), 0);
  cr_expect(strstr(out, "Ready") && strstr(out, "True") && strstr(out, digest + 7) == NULL &&
            strstr(out, ptah_str(&E, "orders", "status.plan.shortDigest")) &&
            strlen(ptah_str(&E, "orders", "status.plan.shortDigest")) == 12,
            "kubectl get ptahschema:\n%s", out);
  free(out);
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahschema_phase{namespace=\"default\",name="
                          "\"orders\",phase=\"Ready\"}"), 1, "%s", metrics);
  cr_expect_eq(e2e_metric(metrics, "godwit_ptahschema_phase{namespace=\"default\",name="
                          "\"orders\",phase=\"AwaitingApproval\"}"), 0);
  free(metrics);

  /* bob changes the schema: a new plan; an approval of the old one goes stale */
  psch_schema(&E, "bob", ORDERS_V2, NULL);
  char digest2[128];
  psch_want_new_plan(&E, digest, digest2, sizeof(digest2));
  out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", "alice-old", digest, "bob", &out), 0, "%s", out);
  free(out);
  cr_expect(psch_wait_approval(&E, "alice-old", "Stale", 30000), "the stale approval is %s",
            psch_approval_phase(&E, "alice-old"));
  /* the Event follows the status write that made it Stale */
  cr_expect_geq(psch_approval_events(&E, "alice-old", "ApprovalStale", 1, 10000), 1,
                "no ApprovalStale on it");
  cr_expect(!psch_has_column(&E, "orders", "note"), "a stale approval applied the new plan");
  /* the plugin: the whole plan from its record, then alice approves the current digest */
  out = NULL;
  cr_expect_eq(e2e_plugin(&E, "alice", &out, "plan ptahschema orders"), 0, "%s", out);
  cr_expect(strstr(out, digest2) && strstr(out, "ADD COLUMN note"), "kubectl godwit plan: %s",
            out);
  free(out);
  out = NULL;
  cr_assert_eq(e2e_plugin(&E, "alice", &out, "approve ptahschema orders"), 0, "%s", out);
  cr_expect(strstr(out, "alice approves") != NULL, "%s", out);
  free(out);
  ok = false;
  long long end = e2e_mono_ms() + 120000;
  while(!ok && e2e_mono_ms() < end) {
    ok = !strcmp(ptah_str(&E, "orders", "status.applied.planDigest"), digest2);
    if(!ok)
      e2e_sleep_ms(200);
  }
  d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "the second plan was not applied:\n%s", d ? d : "");
  cr_expect(psch_has_column(&E, "orders", "note"));
}

Test(ptah_schema, a_protected_table_blocks_the_plan_and_automatic_applies_without_approval)
{
  psch_start(&E, false);
  pgfx_exec(&E.dst, "shop", "SET ROLE dst_app; CREATE TABLE public.payments (id bigint "
            "PRIMARY KEY, amount numeric(10,2))");
  /* the desired schema leaves payments out: the plan would drop it */
  psch_schema(&E, "bob", ORDERS_V1, "  policy:\n    approval: Automatic\n"
         "    protectedTables: [public.payments]\n");
  psch_want_phase(&E, "Blocked", 120000);
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "ProtectedTableRefused");
  cr_expect(ptah_has_event(&E, "orders", "Warning", "ProtectedTableRefused"));
  cr_expect(strstr(e2e_event_message(&E, "orders", "ProtectedTableRefused"), "public.payments")
            != NULL, "%s", e2e_event_message(&E, "orders", "ProtectedTableRefused"));
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.digest"), "", "a refused plan was "
                   "published");
  cr_expect(psch_has_column(&E, "payments", "amount"), "the protected table was changed");
  cr_expect(!psch_has_column(&E, "orders", "id"));
  /* declared as it is, payments is left alone; Automatic applies without an approval */
  psch_schema(&E, "bob", ORDERS_V1 " CREATE TABLE public.payments (id bigint PRIMARY KEY, amount "
         "numeric(10,2));", "  policy:\n    approval: Automatic\n"
         "    protectedTables: [public.payments]\n");
  bool ok = e2e_wait_cond(&E, "orders", "Ready", "True", "Applied", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "not applied:\n%s", d ? d : "");
  cr_expect(psch_has_column(&E, "orders", "placed_at"));
  cr_expect(psch_has_column(&E, "payments", "amount"));
  cr_expect_eq(e2e_event_count(&E, "orders", "ApprovalAccepted"), 0);
}

Test(ptah_schema, a_catalog_changed_after_the_plan_is_refused_as_stale_and_planned_again)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, "  verification: {allowDestructive: true}\n");
  psch_want_phase(&E, "AwaitingApproval", 120000);
  char digest[128];
  snprintf(digest, sizeof(digest), "%s", ptah_str(&E, "orders", "status.plan.digest"));
  /* someone changes the database by hand after the plan was computed */
  pgfx_exec(&E.dst, "shop", "SET ROLE dst_app; CREATE TABLE public.scratch (id int)");
  char *out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", "alice-1", digest, "bob", &out), 0, "%s", out);
  free(out);
  bool ok = e2e_wait_event(&E, "orders", "PlanStale", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no PlanStale:\n%s", d ? d : "");
  cr_expect(!psch_has_column(&E, "orders", "id"), "a stale plan was applied");
  cr_expect(psch_has_column(&E, "scratch", "id"), "the hand-made table went without a plan");
  /* a new plan is computed against the catalog as it is; the old approval is stale */
  char digest2[128];
  psch_want_new_plan(&E, digest, digest2, sizeof(digest2));
  cr_expect(ptah_int(&E, "orders", "status.plan.destructive") >= 1, "dropping the hand-made "
            "table is not marked destructive");
  cr_expect(psch_wait_approval(&E, "alice-1", "Stale", 30000), "alice's approval is %s",
            psch_approval_phase(&E, "alice-1"));
}

Test(ptah_schema, an_approval_invalid_before_the_apply_job_exists_creates_no_job)
{
  psch_start(&E, true);
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  psch_want_phase(&E, "AwaitingApproval", 120000);
  char digest[128];
  snprintf(digest, sizeof(digest), "%s", ptah_str(&E, "orders", "status.plan.digest"));
  /* no Job can be created: the Apply stays claimed and undispatched */
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/jobs$\",\"code\":500,\"count\":-1}");
  char *out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", "alice-1", digest, "bob", &out), 0, "%s", out);
  free(out);
  psch_want_phase(&E, "Applying", 60000);
  /* bob changes the spec before the Job exists */
  psch_schema(&E, "bob", ORDERS_V2, NULL);
  bool ok = e2e_wait_event(&E, "orders", "ApprovalRevoked", 60000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no ApprovalRevoked:\n%s", d ? d : "");
  cl_fault(&E.c, "{\"clear\":true}");
  psch_want_phase(&E, "AwaitingApproval", 120000);
  cr_expect_str_neq(ptah_str(&E, "orders", "status.plan.digest"), digest);
  cr_expect(!psch_has_column(&E, "orders", "id"), "the revoked approval's plan was applied");
  char *jobs = NULL;
  cr_expect_eq(e2e_kubectl(&E, &jobs, "get jobs -l ptah.run/schema=orders -o name"), 0);
  cr_expect(!strstr(jobs, "apply"), "an Apply Job was created: %s", jobs);
  free(jobs);
  cr_expect(psch_wait_approval(&E, "alice-1", "Stale", 30000), "alice's approval is %s",
            psch_approval_phase(&E, "alice-1"));
}
