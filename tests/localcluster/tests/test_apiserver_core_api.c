/* test_apiserver_core_api.c: discovery (plain and aggregated), OpenAPI, patches (merge, JSON,
 * strategic), Table answers and fault injection, as kubectl and the clients meet them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rawapi.h"

static struct cl C;
static struct ra A;

static void start(void)
{
  cl_start(&C, CL_NO_CRDS | CL_FAULTS);
  ra_init(&A, &C, "admin");
  ra_widget_crd(&A);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_api, .init = start, .fini = stop, .timeout = 120);

#define CM "/api/v1/namespaces/default/configmaps"
#define WD "/apis/example.com/v1/namespaces/default/widgets"

static const cJSON *find(const cJSON *arr, const char *key, const char *val)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, arr)
  {
    if(!strcmp(ra_str(x, key), val))
      return x;
  }
  return NULL;
}

Test(apiserver_api, discovery_documents)
{
  cJSON *v = ra_ok(&A, "GET", "/version", NULL, 200);
  cr_assert_str_eq(ra_str(v, "gitVersion"), "v1.32.0");
  cr_assert_str_eq(ra_str(v, "minor"), "32");
  cJSON_Delete(v);
  cJSON *core_versions = ra_ok(&A, "GET", "/api", NULL, 200);
  cr_assert_str_eq(ra_str(core_versions, "kind"), "APIVersions");
  cJSON_Delete(core_versions);
  cJSON *apis = ra_ok(&A, "GET", "/apis", NULL, 200);
  const cJSON *groups = cJSON_GetObjectItem(apis, "groups");
  static const char *const want[] = { "batch", "coordination.k8s.io", "events.k8s.io",
                                      "apiextensions.k8s.io", "admissionregistration.k8s.io",
                                      "example.com" };
  for(size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_assert(find(groups, "name", want[i]), "group %s served", want[i]);
  const cJSON *ex = find(groups, "name", "example.com");
  cr_assert_str_eq(ra_str(ex, "preferredVersion.version"), "v1", "v1 before v1beta1");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ex, "versions")), 2);
  cJSON_Delete(apis);
  cJSON *rl = ra_ok(&A, "GET", "/apis/example.com/v1", NULL, 200);
  const cJSON *res = cJSON_GetObjectItem(rl, "resources");
  const cJSON *w = find(res, "name", "widgets");
  cr_assert(w);
  cr_assert_str_eq(ra_str(w, "kind"), "Widget");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(w, "namespaced")));
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(w, "shortNames"),
                                                           0)), "wd");
  cr_assert(find(res, "name", "widgets/status"), "the status subresource is listed");
  cJSON_Delete(rl);
  cJSON *core = ra_ok(&A, "GET", "/api/v1", NULL, 200);
  const cJSON *tok = find(cJSON_GetObjectItem(core, "resources"), "name", "serviceaccounts/token");
  cr_assert_str_eq(ra_str(tok, "kind"), "TokenRequest");
  cr_assert(find(cJSON_GetObjectItem(core, "resources"), "name", "pods/log"));
  cJSON_Delete(core);
  struct ra_resp r;
  ra_call(&A, "GET", "/apis/example.com/v9", NULL, NULL, &r);
  cr_assert_eq(r.code, 404);
  ra_resp_free(&r);
}

Test(apiserver_api, aggregated_discovery_when_asked_first)
{
  snprintf(A.accept, sizeof(A.accept),
           "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
           "application/json");
  struct ra_resp r;
  ra_call(&A, "GET", "/apis", NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  cr_assert_str_eq(r.ctype, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  cr_assert_str_eq(ra_str(r.json, "kind"), "APIGroupDiscoveryList");
  const cJSON *g = find(cJSON_GetObjectItem(r.json, "items"), "metadata.name", "example.com");
  cr_assert(g);
  const cJSON *v1 = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "versions"), 0);
  cr_assert_str_eq(ra_str(v1, "version"), "v1");
  const cJSON *w = find(cJSON_GetObjectItem(v1, "resources"), "resource", "widgets");
  cr_assert_str_eq(ra_str(w, "scope"), "Namespaced");
  cr_assert_str_eq(ra_str(w, "responseKind.kind"), "Widget");
  ra_resp_free(&r);
  A.accept[0] = '\0';
  ra_call(&A, "GET", "/apis", NULL, NULL, &r);
  cr_assert_str_eq(ra_str(r.json, "kind"), "APIGroupList", "the plain form otherwise");
  ra_resp_free(&r);
}

Test(apiserver_api, openapi_declares_server_side_field_validation)
{
  cJSON *idx = ra_ok(&A, "GET", "/openapi/v3", NULL, 200);
  const cJSON *e = cJSON_GetObjectItem(cJSON_GetObjectItem(idx, "paths"), "apis/example.com/v1");
  const char *url = ra_str(e, "serverRelativeURL");
  cr_assert(!strncmp(url, "/openapi/v3/apis/example.com/v1?hash=", 37), "%s", url);
  cJSON *doc = ra_ok(&A, "GET", url, NULL, 200);
  const char *item = "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}";
  const cJSON *p = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "paths"), item);
  const cJSON *patch = cJSON_GetObjectItem(p, "patch");
  cr_assert_str_eq(ra_str(patch, "x-kubernetes-group-version-kind.kind"), "Widget");
  cr_assert(find(cJSON_GetObjectItem(patch, "parameters"), "name", "fieldValidation"));
  cJSON_Delete(doc);
  cJSON_Delete(idx);
  snprintf(A.accept, sizeof(A.accept), "%s",
           "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
  struct ra_resp r;
  ra_call(&A, "GET", "/openapi/v2", NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  cr_assert(strstr(r.ctype, "protobuf"), "%s", r.ctype);
  ra_resp_free(&r);
}

static cJSON *patch(const char *path, const char *ctype, const char *body, long code)
{
  struct ra_resp r;
  ra_call(&A, "PATCH", path, ctype, body, &r);
  cr_assert_eq(r.code, code, "PATCH %s (%s) %s: %ld: %s", path, ctype, body, r.code, r.body);
  cJSON *j = r.json;
  r.json = NULL;
  ra_resp_free(&r);
  return j;
}

Test(apiserver_api, merge_and_json_patches)
{
  cJSON_Delete(ra_widget(&A, "default", "pw", 1));
  cJSON *w = patch(WD "/pw", "application/merge-patch+json",
                   "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"color\":\"red\"}}", 200);
  cr_assert_str_eq(ra_str(w, "spec.color"), "red");
  cr_assert_eq(ra_num(w, "spec.size"), 1, "merge keeps what the patch does not name");
  cr_assert_eq(ra_num(w, "metadata.generation"), 2);
  cJSON_Delete(w);
  w = patch(WD "/pw", "application/merge-patch+json", "{\"spec\":{\"color\":null}}", 200);
  cr_assert_null(json_get(w, "spec.color"), "null removes");
  cJSON_Delete(w);
  w = patch(WD "/pw", "application/json-patch+json",
            "[{\"op\":\"test\",\"path\":\"/spec/size\",\"value\":1},"
            "{\"op\":\"replace\",\"path\":\"/spec/size\",\"value\":7},"
            "{\"op\":\"add\",\"path\":\"/metadata/labels/b~1c\",\"value\":\"2\"}]", 200);
  cr_assert_eq(ra_num(w, "spec.size"), 7);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(w, "metadata.labels"), "b/c")),
                   "2");
  cJSON_Delete(w);
  w = patch(WD "/pw", "application/json-patch+json",
            "[{\"op\":\"test\",\"path\":\"/spec/size\",\"value\":1}]", 422);
  cr_assert_str_eq(ra_str(w, "reason"), "Invalid");
  cJSON_Delete(w);
  w = patch(WD "/pw", "application/strategic-merge-patch+json", "{\"spec\":{}}", 415);
  cr_assert_str_eq(ra_str(w, "reason"), "UnsupportedMediaType");
  cJSON_Delete(w);
  cJSON_Delete(patch(WD "/pw", "application/merge-patch+json", "{not json", 400));
  cJSON_Delete(patch(WD "/missing", "application/merge-patch+json", "{}", 404));
  w = patch(WD "/pw", "application/merge-patch+json",
            "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"size\":8}}", 409);
  cr_assert_str_eq(ra_str(w, "reason"), "Conflict", "a stale resourceVersion in a patch");
  cJSON_Delete(w);
}

Test(apiserver_api, strategic_merge_patch_of_builtins)
{
  cJSON_Delete(ra_ok(&A, "POST", "/apis/apps/v1/namespaces/default/deployments",
                      "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":{"
                      "\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\","
                      "\"value\":\"1\"},{\"name\":\"Y\",\"value\":\"2\"}]},{\"name\":\"b\","
                      "\"image\":\"b:1\"}]}}}}", 201));
  cJSON *d = patch("/apis/apps/v1/namespaces/default/deployments/d",
                   "application/strategic-merge-patch+json",
                   "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":"
                   "\"b\"},{\"name\":\"a\"}],\"containers\":[{\"name\":\"a\",\"image\":\"a:2\","
                   "\"env\":[{\"name\":\"Y\",\"$patch\":\"delete\"}]}]}}}}", 200);
  const cJSON *cs = json_get(d, "spec.template.spec.containers");
  cr_assert_eq(cJSON_GetArraySize(cs), 2, "containers merge by name");
  const cJSON *b = cJSON_GetArrayItem(cs, 0), *a = cJSON_GetArrayItem(cs, 1);
  cr_assert_str_eq(ra_str(b, "name"), "b", "$setElementOrder orders them");
  cr_assert_str_eq(ra_str(a, "image"), "a:2");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(a, "env")), 1, "$patch delete removed Y");
  cr_assert_eq(ra_num(d, "metadata.generation"), 2);
  cJSON_Delete(d);
  cJSON_Delete(ra_configmap(&A, "default", "smp", NULL));
  d = patch(CM "/smp", "application/strategic-merge-patch+json",
            "{\"data\":{\"k\":null,\"n\":\"1\"},\"metadata\":{\"finalizers\":[\"a.b/c\"]}}", 200);
  cr_assert_null(json_get(d, "data.k"));
  cr_assert_str_eq(ra_str(d, "data.n"), "1");
  cJSON_Delete(d);
  d = patch(CM "/smp", "application/strategic-merge-patch+json",
            "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a.b/c\"]}}", 200);
  cr_assert_null(json_get(d, "metadata.finalizers"));
  cJSON_Delete(d);
}

static const char *cell(const cJSON *table, int row, int col)
{
  const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(table, "rows"), row);
  const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), col);
  static char buf[64];
  if(cJSON_IsNumber(c)) {
    snprintf(buf, sizeof(buf), "%lld", (long long)c->valuedouble);
    return buf;
  }
  return cJSON_IsString(c) ? c->valuestring : "";
}

static const char *column(const cJSON *table, int col)
{
  return ra_str(cJSON_GetArrayItem(cJSON_GetObjectItem(table, "columnDefinitions"), col), "name");
}

Test(apiserver_api, tables_for_kubectl_get)
{
  snprintf(A.accept, sizeof(A.accept), "application/json;as=Table;v=v1;g=meta.k8s.io,"
                                       "application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
                                       "application/json");
  cJSON_Delete(ra_widget(&A, "default", "tw", 3));
  struct ra_resp r;
  ra_call(&A, "GET", WD, NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  cr_assert(strstr(r.ctype, "as=Table"), "%s", r.ctype);
  cr_assert_str_eq(column(r.json, 0), "Name");
  cr_assert_str_eq(column(r.json, 1), "Size");
  cr_assert_str_eq(column(r.json, 2), "Phase");
  cr_assert_str_eq(column(r.json, 3), "Age");
  cr_assert_str_eq(cell(r.json, 0, 0), "tw");
  cr_assert_str_eq(cell(r.json, 0, 1), "3");
  cr_assert(*ra_str(r.json, "metadata.resourceVersion"));
  ra_resp_free(&r);
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/default/pods",
                      "{\"metadata\":{\"name\":\"tp\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                      "\"image\":\"busybox\"}]}}", 201));
  ra_call(&A, "GET", "/api/v1/namespaces/default/pods/tp", NULL, NULL, &r);
  static const char *const cols[] = { "Name", "Ready", "Status", "Restarts", "Age" };
  for(int i = 0; i < 5; i++)
    cr_assert_str_eq(column(r.json, i), cols[i]);
  cr_assert_str_eq(cell(r.json, 0, 1), "0/1");
  cr_assert_str_eq(cell(r.json, 0, 2), "Pending");
  ra_resp_free(&r);
  cJSON_Delete(ra_ok(&A, "POST", "/apis/batch/v1/namespaces/default/jobs",
                      "{\"metadata\":{\"name\":\"tj\"},\"spec\":{\"template\":{\"spec\":{"
                      "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
                      "\"busybox\"}]}}}}", 201));
  ra_call(&A, "GET", "/apis/batch/v1/namespaces/default/jobs", NULL, NULL, &r);
  cr_assert_str_eq(column(r.json, 1), "Status");
  cr_assert_str_eq(column(r.json, 2), "Completions");
  cr_assert_str_eq(column(r.json, 3), "Duration");
  cr_assert_str_eq(cell(r.json, 0, 2), "0/1");
  ra_resp_free(&r);
  A.accept[0] = '\0';
}

Test(apiserver_api, fault_injection_answers_for_the_handler)
{
  cl_fault(&C, "{\"verb\":\"get\",\"pathRegex\":\"/configmaps/kube-root-ca.crt$\",\"code\":500,"
               "\"count\":2}");
  struct ra_resp r;
  for(int i = 0; i < 2; i++) {
    ra_call(&A, "GET", CM "/kube-root-ca.crt", NULL, NULL, &r);
    cr_assert_eq(r.code, 500);
    cr_assert_str_eq(ra_str(r.json, "reason"), "InternalError");
    ra_resp_free(&r);
  }
  ra_call(&A, "GET", CM "/kube-root-ca.crt", NULL, NULL, &r);
  cr_assert_eq(r.code, 200, "the rule is spent");
  ra_resp_free(&r);
  cl_fault(&C, "{\"verb\":\"list\",\"pathRegex\":\"/configmaps$\",\"code\":429,\"count\":1,"
               "\"retryAfter\":2}");
  ra_call(&A, "GET", CM, NULL, NULL, &r);
  cr_assert_eq(r.code, 429);
  cr_assert_str_eq(r.retry_after, "2");
  cr_assert_str_eq(ra_str(r.json, "reason"), "TooManyRequests");
  cr_assert_eq(ra_num(r.json, "details.retryAfterSeconds"), 2);
  ra_resp_free(&r);
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"kube-root-ca\",\"code\":409}");
  ra_call(&A, "PUT", CM "/kube-root-ca.crt", NULL, "{\"metadata\":{\"name\":\"kube-root-ca.crt\"}}",
          &r);
  cr_assert_eq(r.code, 409);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Conflict");
  ra_resp_free(&r);
  /* skip: the first matching requests are served, the rule answers from the next one on */
  cl_fault(&C, "{\"verb\":\"get\",\"pathRegex\":\"/configmaps/kube-root-ca.crt$\",\"code\":503,"
               "\"skip\":2,\"count\":1}");
  int codes[4];
  for(int i = 0; i < 4; i++) {
    ra_call(&A, "GET", CM "/kube-root-ca.crt", NULL, NULL, &r);
    codes[i] = (int)r.code;
    ra_resp_free(&r);
  }
  cr_assert(codes[0] == 200 && codes[1] == 200 && codes[2] == 503 && codes[3] == 200,
            "skipped twice, answered once: %d %d %d %d", codes[0], codes[1], codes[2], codes[3]);
  ra_call(&A, "POST", "/__faults", NULL, "{\"verb\":\"get\",\"skip\":\"two\"}", &r);
  cr_assert_eq(r.code, 400, "a skip that is not a number is refused");
  ra_resp_free(&r);
}

Test(apiserver_api, up_records_what_down_stops)
{
  FILE *f = fopen(cl_path(&C, "pids"), "r");
  cr_assert(f, "up writes DIR/pids");
  long pids[16];
  int n = 0;
  char name[64];
  long pid;
  while(n < 16 && fscanf(f, "%63s %ld", name, &pid) == 2)
    pids[n++] = pid;
  fclose(f);
  cr_assert_geq(n, 2, "at least the watchdog and the API server");
  FILE *k = fopen(C.kubeconfig, "r");
  cr_assert(k);
  char line[4096];
  int contexts = 0;
  while(fgets(line, sizeof(line), k))
    contexts += !strncmp(line, "- name: admin", 13) || !strncmp(line, "- name: alice", 13) ||
                !strncmp(line, "- name: bob", 11);
  fclose(k);
  cr_assert_eq(contexts, 6, "users and contexts admin, alice, bob");
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "tests/localcluster/down --dir '%s'", C.dir);
  cr_assert_eq(system(cmd), 0);
  for(int i = 0; i < n; i++) {
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/%ld/cmdline", pids[i]);
    FILE *p = fopen(proc, "r");
    char buf[1024] = "";
    size_t got = p ? fread(buf, 1, sizeof(buf) - 1, p) : 0;
    if(p)
      fclose(p);
    for(size_t j = 0; j < got; j++)
      if(!buf[j])
        buf[j] = ' ';
    cr_assert(!strstr(buf, C.dir), "pid %ld still runs: %s", pids[i], buf);
  }
}
