/*
 * test_migration_clone.c: a one-time clone end to end (issue test 1): a database with several
 * schemas, a table of a million rows, indexes, a foreign key, a sequence and a large object,
 * copied by the controller's Jobs with the real pgcopydb 0.10; Complete; the same rows and
 * checksums on both sides; the phases Cloning and Finalizing seen through a watch; the Events
 * and metrics of the run; no credential in any Job argument, Event or condition.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json.h"
#include "strbuf.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(migration_clone, .fini = stop, .timeout = 420);

#define CLONE_YAML E2E_MIGRATION_HEAD \
  "  clone:\n" \
  "    tableJobs: 2\n" \
  "    indexJobs: 2\n"

/* Nothing secret in what a person or a log can see. */
static void assert_no_credentials(const char *what, const char *text)
{
  cr_assert_null(strstr(text, E2E_SRC_PW), "the source password appears in %s:\n%s", what, text);
  cr_assert_null(strstr(text, E2E_DST_PW), "the target password appears in %s:\n%s", what, text);
  cr_assert_null(strstr(text, E.dst.password), "the superuser password appears in %s", what);
}

/* A copy no probe saw: the target hides the migration role's queries (track_activities off),
 * so every sample counts no COPY worker. The worker's exit is written as CopyingData first, and
 * only then is Finalizing entered (seed 000: not before CopyingData; CloneRunning never stands
 * in Finalizing). */
Test(migration_clone, a_copy_no_probe_saw_is_copying_data_before_finalizing)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 2000);
  pgfx_exec(&E.dst, "postgres", "ALTER ROLE dst_app SET track_activities = off");
  struct e2e_phases ph;
  e2e_phases_start(&ph, &E, "shop");
  e2e_apply(&E, CLONE_YAML, "shop");
  bool done = e2e_wait_cond(&E, "shop", "Complete", "True", "MigrationSucceeded", 120000);
  e2e_phases_stop(&ph);
  char *d = e2e_describe(&E, "shop");
  cr_assert(done, "not Complete; %s\n%s", e2e_phases_clone_list(&ph), d);
  char msg[256];
  cr_assert(e2e_phases_saw_clone(&ph, "Cloning", "CopyingData", msg, sizeof(msg)), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert(strstr(msg, "exited 0; no probe of the target"), "%s", msg);
  cr_assert(e2e_phases_saw(&ph, "Finalizing"), "%s", e2e_phases_list(&ph));
  cr_assert(!e2e_phases_saw_clone(&ph, "Finalizing", "CloneRunning", NULL, 0), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "CloneCompleted"), "CloneSucceeded", "%s", d);
  e2e_assert_same(&E);
  free(d);
}

Test(migration_clone, a_million_rows_complete_through_cloning_and_finalizing)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 1000000);
  struct e2e_phases ph;
  e2e_phases_start(&ph, &E, "shop");
  e2e_apply(&E, CLONE_YAML, "shop");

  /* The probe keeps its session to the target between samples (one login, not one a sample):
   * the same backend answers every sample while the copy runs, and the copy of a million rows
   * outlasts several probe intervals (300 ms here), so this cannot hold by a short run. */
  static const char probe_pid[] = "SELECT coalesce(min(pid)::text, '') FROM pg_stat_activity "
                                  "WHERE application_name = 'godwit-controller' AND datname = "
                                  "'shop'";
  char *pid1 = NULL;
  for(int i = 0; i < 600 && !pid1; i++) {
    pid1 = pgfx_query1(&E.dst, "postgres", probe_pid);
    if(!*pid1) {
      free(pid1);
      pid1 = NULL;
      e2e_sleep_ms(100);
    }
  }
  cr_assert_not_null(pid1, "the probe never connected to the target");
  long long first = e2e_mono_ms(), last = first;
  for(int i = 0; i < 3000; i++) {
    char *pid2 = pgfx_query1(&E.dst, "postgres", probe_pid);
    if(!*pid2) { /* the Migration finished: its pooled session is closed */
      free(pid2);
      break;
    }
    cr_assert_str_eq(pid2, pid1, "the probe logged in again between samples (%lld ms after its "
                     "first login)", e2e_mono_ms() - first);
    free(pid2);
    last = e2e_mono_ms();
    e2e_sleep_ms(100);
  }
  cr_assert_geq(last - first, 900, "the probe's one session was seen for %lld ms only, fewer "
                "than three probe intervals", last - first);
  free(pid1);

  bool done = e2e_wait_cond(&E, "shop", "Complete", "True", "MigrationSucceeded", 300000) &&
              e2e_wait_event(&E, "shop", "Completed", 10000);
  e2e_phases_stop(&ph);
  char *d = e2e_describe(&E, "shop");
  cr_assert(done, "not Complete; phases %s\n%s", e2e_phases_list(&ph), d);
  cr_assert_str_eq(e2e_phase(&E, "shop"), "Completed");
  /* Ready for readers that know no Migration (kstatus, Flux, Argo CD, kubectl wait) */
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "Ready"), "MigrationSucceeded");
  char *wout = NULL;
  cr_assert_eq(e2e_kubectl(&E, &wout, "wait --for=condition=Ready migration/shop --timeout=10s"),
               0, "kubectl wait: %s", wout);
  free(wout);
  cr_assert(e2e_phases_saw(&ph, "Pending"), "phases: %s", e2e_phases_list(&ph));
  cr_assert(e2e_phases_saw(&ph, "Validating"), "phases: %s", e2e_phases_list(&ph));
  cr_assert(e2e_phases_saw(&ph, "Cloning"), "phases: %s", e2e_phases_list(&ph));
  cr_assert(e2e_phases_saw(&ph, "Finalizing"), "phases: %s\n%s", e2e_phases_list(&ph), d);
  /* CopyingData from the probe, which saw the COPY workers, before Finalizing; CloneRunning
   * never left standing in Finalizing (seed 000) */
  char msg[256];
  cr_assert(e2e_phases_saw_clone(&ph, "Cloning", "CopyingData", msg, sizeof(msg)), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert(strstr(msg, "COPY workers of this migration are connected to the target"),
            "CopyingData not from the probe: %s", msg);
  cr_assert(!e2e_phases_saw_clone(&ph, "Finalizing", "CloneRunning", NULL, 0), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert(e2e_phases_saw_clone(&ph, "Cloning", "CloneRunning", NULL, 0), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert(!e2e_phases_saw(&ph, "Failed"), "phases: %s", e2e_phases_list(&ph));

  /* the finished Migration's pooled session is closed */
  char *left = NULL;
  for(int i = 0; i < 50; i++) {
    free(left);
    left = pgfx_query1(&E.dst, "postgres", "SELECT count(*) FROM pg_stat_activity WHERE "
                                           "application_name = 'godwit-controller'");
    if(!strcmp(left, "0"))
      break;
    e2e_sleep_ms(100);
  }
  cr_assert_str_eq(left, "0", "the controller keeps a session to a finished Migration's target");
  free(left);

  /* the data */
  e2e_assert_same(&E);
  cr_assert_eq(e2e_count(&E.dst, "shop", "sales.orders"), 1000000);
  char *seq = pgfx_query1(&E.dst, "shop", "SELECT last_value FROM sales.invoice_seq");
  cr_assert_str_eq(seq, "4242");
  free(seq);
  char *lo = pgfx_query1(&E.dst, "shop",
                         "SELECT convert_from(lo_get(oid), 'UTF8') FROM pg_largeobject_metadata");
  cr_assert_str_eq(lo, "godwit large object");
  free(lo);
  char *fk = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_constraint WHERE contype = 'f'"
                                         " AND conrelid = 'sales.orders'::regclass");
  cr_assert_str_eq(fk, "1", "the foreign key was restored");
  free(fk);
  char *idx = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_indexes WHERE schemaname = "
                                          "'sales' AND tablename = 'orders'");
  cr_assert_str_eq(idx, "2", "primary key and index");
  free(idx);

  /* the conditions */
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "Validated"), "SpecValid");
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "CloneCompleted"), "CloneSucceeded");
  cJSON *m = e2e_get(&E, "shop");
  const cJSON *c;
  long long gen = (long long)json_get(m, "metadata.generation")->valuedouble;
  cJSON_ArrayForEach(c, json_get(m, "status.conditions"))
  {
    const cJSON *og = json_get(c, "observedGeneration");
    cr_assert(cJSON_IsNumber(og) && (long long)og->valuedouble == gen,
              "condition %s has no current observedGeneration", json_get_str(c, "type"));
    const char *type = json_get_str(c, "type");
    cr_assert(strcmp(type, "Streaming") && strcmp(type, "CaughtUp") &&
                strcmp(type, "CutoverCompleted") && strcmp(type, "OwnershipApplied"),
              "a clone has no %s condition", type);
  }
  cr_assert_eq(json_get(m, "status.attempts")->valuedouble, 1);
  cr_assert_str_eq(json_get_str(m, "status.pgcopydbVersion"), "0.10-1");
  cr_assert_not_null(json_get_str(m, "status.completionTime"));
  cr_assert(json_get_bool(m, "status.copyingDataSeen", false));
  cJSON_Delete(m);

  /* the Events */
  cr_assert_eq(e2e_event_count(&E, "shop", "PreflightStarted"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "PreflightPassed"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "AttemptStarted"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "Completed"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "AttemptFailed"), 0, "%s", d);

  /* the metrics of the run */
  char *mx = e2e_controller_metrics(&E);
#define SERIES(m, extra) m "{namespace=\"" E2E_NS "\",name=\"shop\"" extra "}"
  cr_assert_eq(e2e_metric(mx, SERIES("godwit_migration_phase", ",phase=\"Completed\"")), 1, "%s", mx);
  cr_assert_eq(e2e_metric(mx, SERIES("godwit_migration_phase", ",phase=\"Cloning\"")), 0, "%s", mx);
  cr_assert_eq(e2e_metric(mx, SERIES("godwit_migration_attempts", "")), 1, "%s", mx);
  cr_assert_gt(e2e_metric(mx, SERIES("godwit_migration_target_size_bytes", "")), 1e6,
               "the probe sampled the target's size while it grew");
  cr_assert_lt(e2e_metric(mx, SERIES("godwit_migration_lag_bytes", "")), 0, "a clone has no lag");
  assert_no_credentials("the metrics", mx);
#undef SERIES
  free(mx);

  /* the Jobs: one of each, named <name>-<step>-<attempt> */
  char *jobs = e2e_jobs(&E, "shop");
  cr_assert_str_eq(jobs, "shop-catalog-1\nshop-preflight-1\nshop-worker-1\n");
  free(jobs);

  /* no credential anywhere a person looks */
  char *out = NULL;
  cr_assert_eq(e2e_kubectl(&E, &out, "get jobs -o yaml"), 0);
  assert_no_credentials("the Jobs", out);
  cr_assert(strstr(out, "secretKeyRef"), "credentials come from Secrets");
  free(out);
  assert_no_credentials("the Migration and its Events", d);
  cr_assert_eq(e2e_kubectl(&E, &out, "describe migration shop"), 0);
  assert_no_credentials("kubectl describe", out);
  free(out);
  static const char *const logs[] = { "controller.log", "webhook.log", "jobrunner.log",
                                      "apiserver.log" };
  for(size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
    char *log = cl_slurp(cl_path(&E.c, logs[i]));
    cr_assert(log && *log, "no %s", logs[i]);
    assert_no_credentials(logs[i], log);
    free(log);
  }
  free(d);
}

/* spec.worker shapes every runner Pod of the Migration, as a user on a real cluster needs: its
 * service account, labels and annotations (a mesh opt-out), node selector, tolerations and pull
 * secrets; the runner-Pod guard admits them as declared, and the copy completes (issue 12). */
Test(migration_clone, runner_pods_carry_the_declared_settings)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 500);
  cr_assert_eq(e2e_kubectl(&E, NULL, "create serviceaccount copier"), 0);
  e2e_apply(&E, E2E_MIGRATION_HEAD
                "    serviceAccountName: copier\n"
                "    podMetadata:\n"
                "      labels: {team: data}\n"
                "      annotations: {sidecar.istio.io/inject: \"false\"}\n"
                "    nodeSelector: {kubernetes.io/hostname: local}\n"
                "    tolerations:\n"
                "    - {key: dedicated, operator: Equal, value: db, effect: NoSchedule}\n"
                "    imagePullSecrets:\n"
                "    - {name: regcred}\n",
            "shaped");
  bool done = e2e_wait_complete(&E, "shaped", 120000);
  char *d = e2e_describe(&E, "shaped");
  cr_assert(done, "%s", d);
  cJSON *pods = NULL;
  struct kube_status st;
  kube_status_init(&st);
  struct kube_list_opts lo = { .label_selector = "godwit.dev/migration=shaped" };
  cr_assert_eq(kube_list(E.k, &KUBE_PODS, E2E_NS, &lo, &pods, &st), GW_OK);
  kube_status_release(&st);
  int n = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, json_get(pods, "items"))
  {
    const char *name = json_get_str(p, "metadata.name");
    n++;
    cr_assert_str_eq(json_get_str(p, "spec.serviceAccountName"), "copier", "%s", name);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(p, "metadata.labels"),
                                                              "team")), "data", "%s", name);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
                       json_get(p, "metadata.annotations"), "sidecar.istio.io/inject")),
                     "false", "%s", name);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(p, "spec.nodeSelector"),
                                                              "kubernetes.io/hostname")),
                     "local", "%s", name);
    cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(p, "spec.tolerations"), 0), "key"),
                     "dedicated", "%s", name);
    cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(p, "spec.imagePullSecrets"), 0),
                                  "name"), "regcred", "%s", name);
  }
  cr_assert_geq(n, 3, "the preflight, worker and catalog Pods:\n%s", d);
  cJSON_Delete(pods);
  e2e_assert_same(&E);
  free(d);
}

/* A clone with pgcopydb 0.17 (Debian 13's, installed by make deps into /opt/godwit/pgcopydb-0.17:
 * tests/pgcopydb/install.sh) as the worker image: the version probe reads 0.17, the command
 * line is rendered for it, the probe sees its COPY workers, the copy completes with every row
 * and the compare finds both sides equal (issue 17). */
Test(migration_clone, a_clone_with_pgcopydb_0_17_completes)
{
  setenv("GODWIT_IMAGE_PATHS", "ghcr.io/godwit-dev/pgcopydb:0.17=" PGCOPYDB_017_BIN, 1);
  e2e_start(&E, NULL);
  e2e_load(&E, 500000);
  struct e2e_phases ph;
  e2e_phases_start(&ph, &E, "v17");
  e2e_apply(&E, E2E_MIGRATION_HEAD "    image: ghcr.io/godwit-dev/pgcopydb:0.17\n"
                                   "  clone:\n"
                                   "    tableJobs: 2\n"
                                   "  verify:\n"
                                   "    compare: [schema, data]\n",
            "v17");
  bool done = e2e_wait_cond(&E, "v17", "Complete", "True", "MigrationSucceeded", 180000);
  e2e_phases_stop(&ph);
  char *d = e2e_describe(&E, "v17");
  cr_assert(done, "%s", d);
  /* the probe told this Migration's COPY workers from the others although 0.17 names its
   * sessions "pgcopydb[PID] ROLE": the worker put godwit-<uid8> in its connection strings */
  char msg[256];
  cr_assert(e2e_phases_saw_clone(&ph, "Cloning", "CopyingData", msg, sizeof(msg)), "%s",
            e2e_phases_clone_list(&ph));
  cr_assert(strstr(msg, "COPY workers of this migration are connected to the target"),
            "CopyingData not from the probe: %s", msg);
  cr_assert(e2e_phases_saw(&ph, "Finalizing"), "phases: %s", e2e_phases_list(&ph));
  cJSON *m = e2e_get(&E, "v17");
  cr_assert_str_eq(json_get_str(m, "status.pgcopydbVersion"), "0.17-1", "%s", d);
  cJSON_Delete(m);
  cr_assert_str_eq(e2e_cond_reason(&E, "v17", "CloneCompleted"), "CloneSucceeded", "%s", d);
  /* the compare read 0.17's work dir (its SQLite catalog) for the tables and found them equal */
  cr_assert_str_eq(e2e_cond_reason(&E, "v17", "Verified"), "ComparePassed", "%s", d);
  e2e_assert_same(&E);
  free(d);
}
