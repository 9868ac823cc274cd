/*
 * test_migration_faults.c: a clone-only Migration driven through the API server's faults, each
 * injected while it runs: 500s and 409s on its status writes, 429s with Retry-After on Job
 * creation, every watch dropped, watch reconnects refused, and the watch history compacted
 * (410 Gone, a relist). It completes with every row, no Job is created twice, the status holds
 * every step's verdict, and the controller's /metrics count what happened.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(migration_faults, .fini = stop, .timeout = 300);

/* The sum of the controller's series whose line starts with prefix. */
static double ctl_metric(const char *prefix)
{
  char *mx = e2e_controller_metrics(&E);
  double v = e2e_metric_sum(mx, prefix);
  free(mx);
  return v;
}

Test(migration_faults, a_clone_completes_through_api_faults_without_a_duplicate_job)
{
  e2e_start(&E, &(struct e2e_opts){ .faults = true });
  e2e_load(&E, 20000);
  double relists0 = ctl_metric("godwit_kube_relists_total");
  /* from the start: the status writes fail, then Job creation is throttled */
  cl_fault(&E.c, "{\"verb\":\"update\",\"pathRegex\":\"/migrations/f/status$\",\"code\":500,"
                 "\"count\":3}");
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/jobs$\",\"code\":429,\"count\":2,"
                 "\"retryAfter\":1}");
  /* from a watch: Validating may last less than a poll's interval (it ends with the
   * preflight's verdict, a pass after the write that stored it) */
  struct e2e_phases p;
  e2e_phases_start(&p, &E, "f");
  e2e_apply(&E, E2E_MIGRATION_HEAD, "f");
  bool validating = e2e_phases_wait(&p, "Validating", 60000);
  cr_assert(validating, "phases seen: %s", e2e_phases_list(&p));
  /* while it runs: conflicts, every watch dropped, reconnects refused, the history compacted */
  cl_fault(&E.c, "{\"verb\":\"update\",\"pathRegex\":\"/migrations/f/status$\",\"code\":409,"
                 "\"count\":3}");
  cl_fault(&E.c, "{\"verb\":\"watch\",\"pathRegex\":\"watch=\",\"code\":500,\"count\":4}");
  cl_fault(&E.c, "{\"dropWatches\":true}");
  cl_fault(&E.c, "{\"compact\":true}");
  bool done = e2e_wait_complete(&E, "f", 180000);
  char *d = e2e_describe(&E, "f");
  cr_assert(done, "not Complete:\n%s", d);
  free(d);
  e2e_assert_same(&E);
  e2e_phases_stop(&p);
  char *jobs = e2e_jobs(&E, "f");
  cr_assert_str_eq(jobs, "f-catalog-1\nf-preflight-1\nf-worker-1\n", "no Job twice:\n%s", jobs);
  free(jobs);
  cJSON *m = e2e_get(&E, "f");
  cr_assert_str_eq(json_get_str(m, "status.steps.preflight.result"), "Passed");
  cr_assert_str_eq(json_get_str(m, "status.steps.catalog.result"), "Passed");
  cr_assert_eq(json_get(m, "status.attempts")->valueint, 1, "no worker attempt spent");
  cJSON_Delete(m);
  /* what the controller met, as its /metrics say */
  cr_assert_geq(ctl_metric("godwit_kube_requests_total{verb=\"update\",code=\"500\"}"), 3);
  cr_assert_geq(ctl_metric("godwit_kube_requests_total{verb=\"create\",code=\"429\"}"), 2);
  cr_assert_geq(ctl_metric("godwit_kube_requests_total{verb=\"update\",code=\"409\"}"), 3);
  cr_assert_gt(ctl_metric("godwit_kube_relists_total"), relists0, "the 410 made it relist");
  cr_assert_gt(ctl_metric("godwit_controller_status_conflicts_total"), 0);
}

/* The Job has its Complete condition (what the controller reads as succeeded). */
static bool job_succeeded(const char *job)
{
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "get job %s -o json", job);
  cJSON *j = rc || !out ? NULL : cJSON_Parse(out);
  bool ok = json_condition_true(j, "Complete");
  cJSON_Delete(j);
  free(out);
  return ok;
}

/* Every status write after Pending is lost (a conflict) until the controller has seen the
 * preflight Job finish: the pass that finally writes finds a verdict already in. It still stores
 * Validating first (the phase table's path, what a watcher sees), and the verdict on the pass
 * after. */
Test(migration_faults, validating_is_stored_when_the_preflight_finished_during_lost_writes)
{
  e2e_start(&E, &(struct e2e_opts){ .faults = true });
  e2e_load(&E, 1000);
  cl_fault(&E.c, "{\"verb\":\"update\",\"pathRegex\":\"/migrations/v/status$\",\"code\":409,"
                 "\"skip\":1,\"count\":100000}");
  struct e2e_phases p;
  e2e_phases_start(&p, &E, "v");
  e2e_apply(&E, E2E_MIGRATION_HEAD, "v");
  long long end = e2e_mono_ms() + 60000;
  while(!job_succeeded("v-preflight-1") && e2e_mono_ms() < end)
    e2e_sleep_ms(50);
  cr_assert(job_succeeded("v-preflight-1"), "the preflight Job ran while the writes failed");
  /* Reconciles of one key run one after the other: of two that ended after the test saw the
   * Job finish, the second began after it, and read the Job finished from its cache. (Counting
   * lost writes would not do: a pass writes again after a conflict that changed nothing.) */
  const char *passes = "godwit_controller_reconcile_total{controller=\"migration\"";
  double before = ctl_metric(passes);
  while(ctl_metric(passes) < before + 2 && e2e_mono_ms() < end)
    e2e_sleep_ms(20);
  cr_assert_geq(ctl_metric(passes), before + 2, "the controller kept reconciling");
  cr_assert_str_eq(e2e_phase(&E, "v"), "Pending", "no write after Pending landed");
  cl_fault(&E.c, "{\"clear\":true}");
  bool done = e2e_wait_complete(&E, "v", 120000);
  char *d = e2e_describe(&E, "v");
  cr_assert(done, "not Complete:\n%s", d);
  free(d);
  e2e_phases_stop(&p);
  const char *seen = e2e_phases_list(&p);
  cr_assert(strstr(seen, "Pending Validating Cloning"), "phases: %s", seen);
  char *jobs = e2e_jobs(&E, "v");
  cr_assert_str_eq(jobs, "v-catalog-1\nv-preflight-1\nv-worker-1\n", "no Job twice:\n%s", jobs);
  free(jobs);
  cr_assert_eq(e2e_event_count(&E, "v", "PreflightStarted"), 1, "the attempt told once");
}
