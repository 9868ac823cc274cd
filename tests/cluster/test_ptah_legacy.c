/*
 * test_ptah_legacy.c: the legacy result transport end to end (--ptah-result-transport legacy):
 * the result framed at the end of the runner Pod's log, the Pod's termination message as a
 * fallback summary once the log cannot be read, and a summary cut short refused
 * (TerminationSummaryRefused: the run is unknown).
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

TestSuite(ptah_legacy, .fini = stop, .timeout = 300);

static const char *const TWO[] = { "0001_a.sql", "CREATE TABLE a (id int);", "0002_b.sql",
                                   "CREATE TABLE b (id int);", NULL };

static void start_legacy(bool faults)
{
  setenv("GODWIT_PTAH_RESULT_TRANSPORT", "legacy", 1);
  setenv("GODWIT_PTAH_LOG_READ_WINDOW_MS", "8000", 1); /* longer than one read's retries */
  ptah_start(&E, &(struct e2e_opts){ .faults = faults });
}

Test(ptah_legacy, a_legacy_result_is_read_from_the_log)
{
  start_legacy(false);
  ptah_configmap(&E, "shop-migrations", TWO);
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "", "a record in legacy mode");
  char *l = NULL;
  cr_assert_eq(e2e_kubectl(&E, &l, "get job shop-apply-1-1 -o "
                           "'jsonpath={.metadata.labels.ptah\\.run/result-transport}'"), 0);
  cr_expect_str_eq(l, "legacy", "the transport is not recorded on the Job");
  free(l);
  cr_expect_eq(e2e_event_count(&E, "shop", "TerminationSummaryRefused"), 0);
}

Test(ptah_legacy, an_unreadable_log_falls_back_to_the_checked_summary)
{
  start_legacy(true);
  ptah_configmap(&E, "shop-migrations", TWO);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/pods/shop-apply-1-1-[a-z0-9]+/log$\","
                 "\"code\":500,\"count\":-1}");
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied from the summary:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "ResultReadFailed"));
  cr_expect(strstr(e2e_event_message(&E, "shop", "ResultReadFailed"), "/log") != NULL,
            "the failed read is not named");
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);
}

Test(ptah_legacy, a_summary_cut_short_is_refused_and_the_run_is_unknown)
{
  start_legacy(true);
  /* so many versions that the termination message cannot hold the whole summary */
  static char names[300][32], sqls[300][48];
  const char *kv[601];
  for(int i = 0; i < 300; i++) {
    snprintf(names[i], sizeof(names[i]), "%lld_step.sql", 20260101000000LL + i + 1);
    snprintf(sqls[i], sizeof(sqls[i]), "CREATE TABLE m%d (id int);", i + 1);
    kv[2 * i] = names[i];
    kv[2 * i + 1] = sqls[i];
  }
  kv[600] = NULL;
  ptah_configmap(&E, "shop-migrations", kv);
  cl_fault(&E.c, "{\"verb\":\"get\",\"pathRegex\":\"/pods/shop-apply-1-1-[a-z0-9]+/log$\","
                 "\"code\":500,\"count\":-1}");
  e2e_apply(&E, PTAH_HEAD);
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Uncertain:\n%s", d);
  free(d);
  cr_expect(ptah_has_event(&E, "shop", "Warning", "TerminationSummaryRefused"));
  cr_expect(strstr(e2e_event_message(&E, "shop", "TerminationSummaryRefused"), "cut short"),
            "the reason is not said: %s",
            e2e_event_message(&E, "shop", "TerminationSummaryRefused"));
  cr_expect(ptah_has_event(&E, "shop", "Warning", "MigrationRunUncertain"));
}
