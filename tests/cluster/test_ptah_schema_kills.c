/*
 * test_ptah_schema_kills.c: the controller SIGKILLed and restarted ten times while a PtahSchema
 * is planned and applied (Automatic), and ten times after an approval (Required), at instants
 * spread over the claims, the dispatches, the runs and the settling. Whatever instant a kill
 * lands on: one Job per operation, one Plan and one Apply, the change applied once, nothing
 * applied before its approval, and no outcome called unknown (the runner was never hurt).
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

TestSuite(ptah_schema_kills, .fini = stop, .timeout = 300);

static void kill_ten_times(void)
{
  static const int gaps_ms[10] = { 0, 50, 120, 200, 300, 400, 250, 350, 500, 600 };
  for(int i = 0; i < 10; i++) {
    e2e_sleep_ms(gaps_ms[i]);
    e2e_controller_kill(&E);
    e2e_controller_start(&E);
  }
}

/* How many of the schema's Jobs have word in their name. */
static int jobs_with(const char *word)
{
  char *out = NULL;
  cr_assert_eq(e2e_kubectl(&E, &out, "get jobs -l ptah.run/schema=orders -o name"), 0, "%s", out);
  int n = 0;
  for(const char *p = out; (p = strstr(p, word)); p += strlen(word))
    n++;
  free(out);
  return n;
}

static void want_applied_once(void)
{
  bool ok = e2e_wait_cond(&E, "orders", "Ready", "True", "Applied", 120000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "not applied:\n%s", d ? d : "");
  cr_expect(psch_has_column(&E, "orders", "placed_at"));
  cr_expect_eq(jobs_with("-plan-"), 1, "one Plan Job");
  cr_expect_eq(jobs_with("-apply-"), 1, "one Apply Job");
  cr_expect_eq(ptah_int(&E, "orders", "status.operationCount"), 2, "a Plan and an Apply");
  cr_expect_eq(e2e_event_count(&E, "orders", "ApplyOutcomeUnknown"), 0);
  cr_expect_eq(e2e_event_count(&E, "orders", "PlanStale"), 0);
}

Test(ptah_schema_kills, automatic_a_controller_killed_at_any_instant_applies_once)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, "  policy: {approval: Automatic}\n");
  kill_ten_times();
  want_applied_once();
}

Test(ptah_schema_kills, approved_a_controller_killed_at_any_instant_applies_once_after_approval)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, NULL);
  kill_ten_times();
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  cr_expect(!psch_has_column(&E, "orders", "id"), "applied before any approval");
  cr_expect_eq(jobs_with("-apply-"), 0);
  char *out = NULL;
  cr_assert_eq(psch_approve(&E, "alice", "alice-1", digest, "bob", &out), 0, "%s", out);
  free(out);
  kill_ten_times();
  want_applied_once();
  cr_expect(psch_wait_approval(&E, "alice-1", "Applied", 30000), "alice's approval is %s",
            psch_approval_phase(&E, "alice-1"));
}
