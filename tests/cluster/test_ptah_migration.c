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
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_migration, .fini = stop, .timeout = 300);

static void start(void)
{
  e2e_start(&E, &(struct e2e_opts){ .target_only = true });
  E.gvr = &KUBE_PTAH_MIGRATIONS;
  E.kind = "PtahMigration";
}

/* kubectl apply of ConfigMap name with keys and values (NULL-terminated pairs). */
static void configmap(const char *name, const char *const *kv)
{
  cJSON *cm = cJSON_CreateObject();
  cJSON_AddStringToObject(cm, "apiVersion", "v1");
  cJSON_AddStringToObject(cm, "kind", "ConfigMap");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "metadata"), "name", name);
  cJSON *data = cJSON_AddObjectToObject(cm, "data");
  for(size_t i = 0; kv[i]; i += 2)
    cJSON_AddStringToObject(data, kv[i], kv[i + 1]);
  char *text = cJSON_PrintUnformatted(cm);
  e2e_apply(&E, "%s", text);
  cJSON_free(text);
  cJSON_Delete(cm);
}

#define PM_HEAD                                                                                \
  "apiVersion: ptah.run/v1\n"                                                                 \
  "kind: PtahMigration\n"                                                                     \
  "metadata: {name: shop}\n"                                                                  \
  "spec:\n"                                                                                   \
  "  database: {connectionSecretRef: {name: dst}}\n"                                          \
  "  migrations: {configMapRef: {name: shop-migrations}}\n"

static long long status_int(const char *path)
{
  cJSON *o = e2e_get(&E, "shop");
  const cJSON *v = json_get(o, path);
  long long n = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
  cJSON_Delete(o);
  return n;
}

static const char *status_str(const char *path)
{
  static __thread char buf[4096];
  cJSON *o = e2e_get(&E, "shop");
  const char *s = json_get_str(o, path);
  snprintf(buf, sizeof(buf), "%s", s ? s : "");
  cJSON_Delete(o);
  return buf;
}

static bool wait_version(long long v, int timeout_ms)
{
  long long end = e2e_mono_ms() + timeout_ms;
  while(e2e_mono_ms() < end) {
    if(status_int("status.currentVersion") == v && !*status_str("status.operation.id"))
      return true;
    e2e_sleep_ms(200);
  }
  return false;
}

/* The record's status.phase ("" when absent). */
static const char *record_phase(const char *name)
{
  static __thread char buf[64];
  cJSON *o = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(E.k, &KUBE_PTAH_RESULT_RECORDS, E2E_NS, name, &o, &st);
  kube_status_release(&st);
  const char *p = rc ? NULL : json_get_str(o, "status.phase");
  snprintf(buf, sizeof(buf), "%s", p ? p : "");
  cJSON_Delete(o);
  return buf;
}

/* An Event of that type and reason on the PtahMigration (e2e_events: "<type> <reason> (xN)"). */
static bool has_event(const char *type, const char *reason)
{
  char line[128];
  snprintf(line, sizeof(line), "%s %s (x", type, reason);
  char *ev = e2e_events(&E, "shop");
  bool found = strstr(ev, line) != NULL;
  free(ev);
  return found;
}

static const char *V1 = "CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL);";
static const char *V2 = "ALTER TABLE users ADD COLUMN name text;";
static const char *V3 = "CREATE INDEX users_email ON users (email);\n"
                        "INSERT INTO users VALUES (1, 'ada@example.com', 'Ada');";

Test(ptah_migration, applies_versions_in_order_and_records_them_with_their_checksums)
{
  start();
  configmap("shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_add_name.sql", V2,
                                                      "0003_index.sql", V3, NULL });
  e2e_apply(&E, PM_HEAD);
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Ready/Applied:\n%s", d);
  free(d);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "UpToDate");
  cr_expect_eq(status_int("status.currentVersion"), 3);
  cr_expect_eq(status_int("status.latestVersion"), 3);
  cr_expect_str_eq(status_str("status.lastRun.outcome"), "Applied");
  cr_expect_eq(status_int("status.lastRun.fromVersion"), 0);
  cr_expect_eq(status_int("status.lastRun.toVersion"), 3);
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
  cr_expect_str_eq(record_phase("shop-apply-1-1"), "Accepted");
  cr_expect(has_event("Normal", "OperationStarted"), "no OperationStarted");
  cr_expect(has_event("Normal", "MigrationRunFinished"), "no Normal MigrationRunFinished");
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationRunFinished"), "Applied") != NULL);
  /* kstatus-style readers */
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "wait --for=condition=Ready ptahmigration/shop --timeout=10s");
  cr_expect_eq(rc, 0, "kubectl wait: %s", out);
  free(out);

  /* a new release adds a version: one more run, from 3 to 4 */
  configmap("shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_add_name.sql", V2,
                                                      "0003_index.sql", V3,
                                                      "0004_orders.sql",
                                                      "CREATE TABLE orders (id int);", NULL });
  ok = wait_version(4, 90000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "version 4 not reached:\n%s", d);
  free(d);
  cr_expect_str_eq(record_phase("shop-apply-2-1"), "Accepted");
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
  start();
  configmap("shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_broken.sql",
                                                      "ALTER TABLE nosuch ADD COLUMN x int;",
                                                      NULL });
  e2e_apply(&E, PM_HEAD "  backoffLimit: 1\n");
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "False", "RunPartial", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not RunPartial:\n%s", d);
  free(d);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "Failed");
  cr_expect_eq(status_int("status.currentVersion"), 1);
  cr_expect(has_event("Warning", "MigrationRunFinished"), "no Warning MigrationRunFinished");
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationRunFinished"), "Partial") != NULL);
  cr_expect(strstr(e2e_event_message(&E, "shop", "OperationFailed"), "nosuch") != NULL,
            "the failure is not carried: %s", e2e_event_message(&E, "shop", "OperationFailed"));
  /* Partial committed something: it is not retried */
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationRetried"), 0);
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM public.ptah_migrations");
  cr_expect_str_eq(n, "1");
  free(n);

  /* the fix is published: the run goes on from version 1 */
  configmap("shop-migrations", (const char *const[]){ "0001_create_users.sql", V1,
                                                      "0002_broken.sql", V2, NULL });
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  cr_assert(ok, "the fixed run did not apply");
  cr_expect_eq(status_int("status.currentVersion"), 2);

  /* an applied version whose text changed is refused, naming it; it committed nothing, so it
   * is retried backoffLimit times, then fails */
  configmap("shop-migrations", (const char *const[]){
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
  cr_expect_eq(status_int("status.currentVersion"), 2);
}

static int sleeping(void *arg)
{
  (void)arg;
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE query "
                        "LIKE '%%pg_sleep(3)%%' AND pid <> pg_backend_pid()");
  int found = atoi(n) > 0;
  free(n);
  return found;
}

/* alice creates a PtahMigrationRunAcknowledgment with kubectl (her own context). */
static void acknowledge(const char *name, const char *operation, const char *outcome)
{
  char path[64];
  snprintf(path, sizeof(path), "ack-%s.yaml", name);
  FILE *f = fopen(cl_path(&E.c, path), "w");
  cr_assert(f);
  fprintf(f, "apiVersion: ptah.run/v1\nkind: PtahMigrationRunAcknowledgment\n"
             "metadata: {name: %s}\nspec:\n  migrationRef: {name: shop}\n"
             "  operation: %s\n  outcome: %s\n"
             "  comment: read the history table\n", name, operation, outcome);
  fclose(f);
  char *out = NULL;
  int rc = cl_kubectl(&E.c, "alice", &out, "create -f %s", cl_path(&E.c, path));
  cr_assert_eq(rc, 0, "alice's acknowledgment %s: %s", name, out);
  free(out);
}

Test(ptah_migration, a_run_killed_mid_version_is_uncertain_until_an_acknowledgment_settles_it)
{
  start();
  configmap("shop-migrations",
            (const char *const[]){ "0001_create_users.sql", V1, "0002_slow.sql",
                                   "SELECT pg_sleep(3); CREATE TABLE slow (id int);", NULL });
  e2e_apply(&E, PM_HEAD);
  cr_assert(cl_eventually(60000, sleeping, NULL), "the run never reached version 2");
  pid_t pid = e2e_pod_pid(&E, "ptah.run/migration=shop");
  cr_assert_gt(pid, 0, "no running runner Pod");
  cr_assert_eq(kill(-pid, SIGKILL), 0);
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Uncertain:\n%s", d);
  free(d);
  cr_expect(has_event("Warning", "MigrationRunUncertain"), "no MigrationRunUncertain");
  cr_expect_str_eq(status_str("status.unresolvedRun.operation"), "shop-apply-1");
  cr_expect_str_eq(e2e_cond_reason(&E, "shop", "Ready"), "RunUncertain");
  cJSON *o = e2e_get(&E, "shop");
  const char *ann = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
    json_get(o, "metadata.annotations"), "operator.ptah.run/unresolved-run"));
  cr_expect(ann && strstr(ann, "shop-apply-1"), "no unresolved-run annotation");
  cJSON_Delete(o);

  /* an acknowledgment of another operation settles nothing */
  acknowledge("wrong", "shop-apply-9", "NotApplied");
  e2e_sleep_ms(2000);
  cr_expect_str_eq(e2e_phase(&E, "shop"), "Uncertain");
  cr_expect_eq(e2e_event_count(&E, "shop", "OperationStarted"), 1, "a run was planned");

  /* alice looks, and states what she found: version 1 committed, 2 did not */
  char *v = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',') FROM "
                        "public.ptah_migrations");
  cr_expect_str_eq(v, "1");
  free(v);
  acknowledge("shop-apply-1-ack", "shop-apply-1", "Partial");
  ok = e2e_wait_event(&E, "shop", "UnresolvedRunAcknowledged", 30000);
  cr_assert(ok, "not acknowledged");
  const char *m = e2e_event_message(&E, "shop", "UnresolvedRunAcknowledged");
  cr_expect(strstr(m, "alice") && strstr(m, "Partial") && strstr(m, "shop-apply-1"),
            "the Event does not name who, the outcome and the operation: %s", m);
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied after the acknowledgment:\n%s", d);
  free(d);
  cr_expect_eq(status_int("status.currentVersion"), 2);
  cr_expect_str_eq(status_str("status.acknowledgment.acknowledgedBy"), "alice");
  v = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',' ORDER BY version) FROM "
                  "public.ptah_migrations");
  cr_expect_str_eq(v, "1,2", "a version applied twice or missing");
  free(v);
  o = e2e_get(&E, "shop");
  cr_expect_null(cJSON_GetObjectItemCaseSensitive(json_get(o, "metadata.annotations"),
                                                  "operator.ptah.run/unresolved-run"),
                 "the annotation stayed after the run was settled");
  cJSON_Delete(o);
}
