/* test_kubectl.c: the real kubectl against the local cluster: apply (create, update, unchanged)
 * of custom and built-in objects, get (-o yaml, -o json, printer columns, -w), describe with
 * Events, wait, patch (merge, json, strategic), delete, logs, explain, --as; and a refused apply
 * printing the webhook's reasons.
 *
 * KUBECTL names the binary (default: kubectl on PATH). Checked with kubectl 1.32; what needs a
 * newer kubectl than the one running (auth whoami: 1.27+) is skipped on an older one, e.g.
 * Debian's kubernetes-client 1.20. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "rawapi.h"

static struct cl C;
static struct ra A;

static void start(void)
{
  cl_start(&C, CL_WEBHOOK);
  ra_init(&A, &C, "admin");
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(kubectl, .init = start, .fini = stop, .timeout = 180);

/* kubectl as user; the output (stdout and stderr) in *out; the exit code. */
static int kc(const char *user, char **out, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static int kc(const char *user, char **out, const char *fmt, ...)
{
  char args[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof(args), fmt, ap);
  va_end(ap);
  return cl_kubectl(&C, user, out, "%s", args);
}

/* Runs kubectl and asserts its exit code; returns the output (free()). */
static char *kc_ok(int want, const char *args)
{
  char *out = NULL;
  int rc = kc("admin", &out, "%s", args);
  cr_assert_eq(rc, want, "kubectl %s: exit %d, expected %d:\n%s", args, rc, want, out);
  return out;
}

static const char *file(const char *name, const char *content)
{
  const char *p = cl_path(&C, name);
  FILE *f = fopen(p, "w");
  cr_assert(f);
  fputs(content, f);
  fclose(f);
  return p;
}

static int kubectl_minor(void)
{
  char *out = NULL;
  kc("admin", &out, "version --client -o json");
  cJSON *v = cJSON_Parse(out ? out : "");
  int minor = atoi(ra_str(v, "clientVersion.minor"));
  cJSON_Delete(v);
  free(out);
  return minor;
}

static void expect_in(const char *out, const char *needle)
{
  cr_assert(strstr(out, needle), "expected \"%s\" in:\n%s", needle, out);
}

Test(kubectl, apply_creates_updates_and_leaves_unchanged_a_custom_resource)
{
  char *out = kc_ok(0, "apply -f manifests/samples/migration-clone.yaml");
  expect_in(out, "migration.pgcopydb.io/shop-clone created");
  free(out);
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "sed 's/tableJobs: 8/tableJobs: 6/' "
                             "manifests/samples/migration-clone.yaml > '%s'",
           cl_path(&C, "m2.yaml"));
  cr_assert_eq(system(cmd), 0);
  char args[1024];
  snprintf(args, sizeof(args), "apply -f %s", cl_path(&C, "m2.yaml"));
  out = kc_ok(0, args);
  expect_in(out, "migration.pgcopydb.io/shop-clone configured");
  free(out);
  out = kc_ok(0, args);
  expect_in(out, "migration.pgcopydb.io/shop-clone unchanged");
  free(out);
  out = kc_ok(0, "get migration shop-clone "
                 "-o jsonpath={.metadata.generation}/{.spec.clone.tableJobs}");
  cr_assert_str_eq(out, "2/6");
  free(out);
}

static const char *BUILTINS =
  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n---\n"
  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n  namespace: team-a\n---\n"
  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\n"
  "  labels:\n    app: godwit\ndata:\n  a: \"1\"\n  b: \"2\"\n---\n"
  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: team-a\n"
  "stringData:\n  uri: postgres://db/shop\n";

Test(kubectl, apply_builtins_then_remove_a_key)
{
  char args[1024];
  snprintf(args, sizeof(args), "apply -f %s", file("b.yaml", BUILTINS));
  char *out = kc_ok(0, args);
  expect_in(out, "namespace/team-a created");
  expect_in(out, "serviceaccount/runner created");
  expect_in(out, "configmap/settings created");
  expect_in(out, "secret/db created");
  free(out);
  /* drop data.b, change data.a: the three-way strategic merge patch removes b */
  char *changed = strdup(BUILTINS);
  char *b = strstr(changed, "  b: \"2\"\n");
  memmove(b, b + 9, strlen(b + 9) + 1);
  char *a = strstr(changed, "a: \"1\"");
  a[4] = '3';
  snprintf(args, sizeof(args), "apply -f %s", file("b2.yaml", changed));
  free(changed);
  out = kc_ok(0, args);
  expect_in(out, "configmap/settings configured");
  expect_in(out, "namespace/team-a unchanged");
  free(out);
  out = kc_ok(0, "get cm settings -n team-a -o json");
  cJSON *cm = cJSON_Parse(out);
  cr_assert_str_eq(ra_str(cm, "data.a"), "3");
  cr_assert_null(json_get(cm, "data.b"), "removed from the file, removed from the object");
  cJSON_Delete(cm);
  free(out);
  out = kc_ok(0, "get secret db -n team-a -o jsonpath={.data.uri}");
  cr_assert_str_eq(out, "cG9zdGdyZXM6Ly9kYi9zaG9w");
  free(out);
}

Test(kubectl, get_yaml_json_and_printer_columns)
{
  free(kc_ok(0, "apply -f manifests/samples/migration-clone.yaml"));
  char *out = kc_ok(0, "get migrations.pgcopydb.io shop-clone -o yaml");
  expect_in(out, "kind: Migration");
  expect_in(out, "apiVersion: pgcopydb.io/v1");
  expect_in(out, "uid: ");
  free(out);
  out = kc_ok(0, "get pgmig -o json");
  cJSON *l = cJSON_Parse(out);
  cr_assert_str_eq(ra_str(l, "kind"), "List");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(l, "items")), 1);
  cJSON_Delete(l);
  free(out);
  out = kc_ok(0, "get migrations");
  expect_in(out, "NAME");
  expect_in(out, "PHASE");
  expect_in(out, "SOURCE");
  expect_in(out, "TARGET");
  expect_in(out, "shop-clone");
  expect_in(out, "shop-src");
  free(out);
  out = kc_ok(0, "get ns,sa -A");
  expect_in(out, "namespace/godwit-system");
  expect_in(out, "Active");
  free(out);
  out = kc_ok(0, "get nodes");
  expect_in(out, "local");
  expect_in(out, "Ready");
  free(out);
  out = kc_ok(0, "get crd migrations.pgcopydb.io");
  expect_in(out, "CREATED AT");
  free(out);
}

Test(kubectl, get_watch_sees_changes)
{
  char cmd[4096];
  const char *k = getenv("KUBECTL");
  snprintf(cmd, sizeof(cmd),
           "get cm -w 2>&1 & KPID=$!; sleep 1.5; "
           "%s --kubeconfig '%s' --context admin --cache-dir '%s/kubecache' create cm watched "
           ">/dev/null; sleep 1.5; kill $KPID; wait $KPID; true",
           k && *k ? k : "kubectl", C.kubeconfig, C.dir);
  char *out = NULL;
  kc("admin", &out, "%s", cmd);
  expect_in(out, "kube-root-ca.crt");
  expect_in(out, "watched");
  free(out);
}

Test(kubectl, describe_shows_the_events_of_an_object)
{
  free(kc_ok(0, "apply -f manifests/samples/migration-clone.yaml"));
  cJSON *m = ra_ok(&A, "GET", "/apis/pgcopydb.io/v1/namespaces/default/migrations/shop-clone",
                    NULL, 200);
  char ev[2048], now[32];
  time_t t = time(NULL);
  strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  snprintf(ev, sizeof(ev),
           "{\"metadata\":{\"name\":\"shop-clone.1\"},\"involvedObject\":{\"apiVersion\":"
           "\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"name\":\"shop-clone\",\"namespace\":"
           "\"default\",\"uid\":\"%s\"},\"reason\":\"ValidationSucceeded\",\"message\":"
           "\"source and target are reachable\",\"type\":\"Normal\",\"source\":{\"component\":"
           "\"godwit-controller\"},\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\","
           "\"count\":1}", ra_str(m, "metadata.uid"), now, now);
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/default/events", ev, 201));
  cJSON_Delete(m);
  char *out = kc_ok(0, "describe migration shop-clone");
  expect_in(out, "Events:");
  expect_in(out, "ValidationSucceeded");
  expect_in(out, "source and target are reachable");
  expect_in(out, "godwit-controller");
  free(out);
  out = kc_ok(0, "get events");
  expect_in(out, "migration/shop-clone");
  free(out);
}

static void *complete_later(void *arg)
{
  (void)arg;
  struct timespec d = { 1, 500 * 1000000L };
  nanosleep(&d, NULL);
  struct ra_resp r;
  ra_call(&A, "PATCH", "/apis/pgcopydb.io/v1/namespaces/default/migrations/shop-clone/status",
          "application/merge-patch+json",
          "{\"status\":{\"phase\":\"Completed\",\"conditions\":[{\"type\":\"Complete\",\"status\":"
          "\"True\",\"reason\":\"Verified\",\"message\":\"done\",\"lastTransitionTime\":"
          "\"2024-01-01T00:00:00Z\",\"observedGeneration\":1}]}}", &r);
  long code = r.code;
  ra_resp_free(&r);
  return (void *)code;
}

Test(kubectl, wait_for_a_condition)
{
  free(kc_ok(0, "apply -f manifests/samples/migration-clone.yaml"));
  char *out = NULL;
  int rc = kc("admin", &out, "wait --for=condition=Complete migration/shop-clone --timeout=2s");
  cr_assert_neq(rc, 0, "not yet:\n%s", out);
  expect_in(out, "timed out");
  free(out);
  pthread_t t;
  pthread_create(&t, NULL, complete_later, NULL);
  out = kc_ok(0, "wait --for=condition=Complete migration/shop-clone --timeout=30s");
  expect_in(out, "condition met");
  free(out);
  void *code;
  pthread_join(t, &code);
  cr_assert_eq((long)code, 200);
  out = kc_ok(0, "get migration shop-clone");
  expect_in(out, "Complete");
  free(out);
}

Test(kubectl, patch_merge_json_and_strategic)
{
  free(kc_ok(0, "create configmap p --from-literal=a=1"));
  char *out = kc_ok(0, "patch cm p --type=merge -p '{\"data\":{\"a\":\"2\"}}'");
  expect_in(out, "configmap/p patched");
  free(out);
  free(kc_ok(0, "patch cm p --type=json "
                "-p '[{\"op\":\"add\",\"path\":\"/data/b\",\"value\":\"x\"}]'"));
  free(kc_ok(0, "patch cm p -p '{\"metadata\":{\"labels\":{\"l\":\"y\"}}}'"));
  out = kc_ok(0, "get cm p -o jsonpath={.data.a}/{.data.b}/{.metadata.labels.l}");
  cr_assert_str_eq(out, "2/x/y");
  free(out);
  out = kc_ok(1, "patch cm p --type=json "
                 "-p '[{\"op\":\"test\",\"path\":\"/data/a\",\"value\":\"9\"}]'");
  free(out);
  free(kc_ok(0, "apply -f manifests/samples/migration-clone.yaml"));
  out = kc_ok(0, "patch migration shop-clone --type=merge "
                 "-p '{\"spec\":{\"clone\":{\"indexJobs\":2}}}'");
  expect_in(out, "migration.pgcopydb.io/shop-clone patched");
  free(out);
}

Test(kubectl, delete_waits_and_not_found_is_reported)
{
  free(kc_ok(0, "create configmap gone --from-literal=a=1"));
  char *out = kc_ok(0, "delete cm gone");
  expect_in(out, "configmap \"gone\" deleted");
  free(out);
  out = kc_ok(1, "get cm gone");
  expect_in(out, "Error from server (NotFound): configmaps \"gone\" not found");
  free(out);
  free(kc_ok(0, "apply -f manifests/samples/migration-clone.yaml"));
  out = kc_ok(0, "delete -f manifests/samples/migration-clone.yaml");
  expect_in(out, "migration.pgcopydb.io \"shop-clone\" deleted");
  free(out);
}

static void *finish_pod_later(void *arg)
{
  const char *log = arg;
  struct timespec d = { 1, 0 };
  nanosleep(&d, NULL);
  FILE *f = fopen(log, "a");
  if(f) {
    fputs("three\n", f);
    fclose(f);
  }
  nanosleep(&d, NULL);
  struct ra_resp r;
  ra_call(&A, "PATCH", "/api/v1/namespaces/default/pods/lp/status", "application/merge-patch+json",
          "{\"status\":{\"phase\":\"Succeeded\"}}", &r);
  long code = r.code;
  ra_resp_free(&r);
  return (void *)code;
}

Test(kubectl, logs_of_a_pod)
{
  free(kc_ok(0, "run lp --image=busybox --restart=Never"));
  char dir[600];
  snprintf(dir, sizeof(dir), "%s", cl_path(&C, "logs/default/lp"));
  char cmd[1400];
  snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && printf 'one\\ntwo\\n' > '%s/lp.log'", dir, dir);
  cr_assert_eq(system(cmd), 0);
  char *out = kc_ok(0, "logs lp");
  cr_assert_str_eq(out, "one\ntwo\n");
  free(out);
  out = kc_ok(0, "logs lp --tail=1");
  cr_assert_str_eq(out, "two\n");
  free(out);
  char log[1500];
  snprintf(log, sizeof(log), "%s/lp.log", dir);
  pthread_t t;
  pthread_create(&t, NULL, finish_pod_later, log);
  out = kc_ok(0, "logs -f lp");
  cr_assert_str_eq(out, "one\ntwo\nthree\n", "follow streams until the pod is done");
  free(out);
  void *code;
  pthread_join(t, &code);
  cr_assert_eq((long)code, 200);
}

Test(kubectl, impersonation_with_as)
{
  char *out = NULL;
  int rc = kc("bob", &out, "--as=alice get cm");
  cr_assert_neq(rc, 0);
  /* discovery is refused first; kubectl 1.32 prints "Error from server (Forbidden): unknown"
   * with a real kube-apiserver too (client-go's discovery reads the body as unstructured);
   * kubectl 1.20 says "the server doesn't have a resource type" */
  int minor = kubectl_minor();
  expect_in(out, minor >= 27 ? "Error from server (Forbidden)" : "doesn't have a resource type");
  free(out);
  free(kc_ok(0, "--as=alice --as-group=db-approvers get cm"));
  if(minor < 27)
    return; /* auth whoami: kubectl 1.27+ */
  out = kc_ok(0, "--as=alice --as-group=db-approvers auth whoami -o json");
  cJSON *r = cJSON_Parse(out);
  cr_assert_str_eq(ra_str(r, "status.userInfo.username"), "alice");
  cJSON_Delete(r);
  free(out);
}

Test(kubectl, explain_reads_the_custom_resource_schema)
{
  if(kubectl_minor() < 27)
    return; /* explain from OpenAPI v3: kubectl 1.27+ */
  char *out = kc_ok(0, "explain migrations.spec.source");
  expect_in(out, "connectionSecretRef");
  free(out);
}

/* Needs the admission layer (tests/localcluster/apiserver/admission*.c) and the webhook. */
Test(kubectl, refused_apply_prints_the_webhooks_reasons)
{
  char *out = kc_ok(1, "apply -f manifests/samples/refused/migration-same-database.yaml");
  expect_in(out, "spec.target.connectionSecretRef");
  free(out);
  out = kc_ok(1, "get migration shop-self");
  expect_in(out, "NotFound");
  free(out);
}

/* The install check of docs/operations/install.md, as written there: every object passes the
 * whole admission chain, and nothing is stored. */
Test(kubectl, the_install_check_dry_run_passes_and_stores_nothing)
{
  char *out = kc_ok(0, "apply --dry-run=server -f manifests/verify/");
  static const char *const kinds[] = {
    "migration.pgcopydb.io/godwit-verify", "ptahmigration.ptah.run/godwit-verify",
    "ptahschema.ptah.run/godwit-verify", "ptahschemaapproval.ptah.run/godwit-verify",
    "ptahmigrationrunacknowledgment.ptah.run/godwit-verify",
    "migrationpolicy.migration.podmotion.io/godwit-verify",
    "podmigration.migration.podmotion.io/godwit-verify", NULL
  };
  for(size_t i = 0; kinds[i]; i++) {
    char want[160];
    snprintf(want, sizeof(want), "%s created (server dry run)", kinds[i]);
    expect_in(out, want);
  }
  free(out);
  out = kc_ok(0, "get migrations,ptahmigrations,ptahschemas,podmigrations -o name");
  cr_assert_str_eq(out, "", "the dry run stored: %s", out);
  free(out);
}
