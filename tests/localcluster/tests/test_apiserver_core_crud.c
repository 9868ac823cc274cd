/* test_apiserver_core_crud.c: the local API server's verbs as kube-apiserver documents them:
 * metadata the server owns, the standard errors, optimistic concurrency, generation, the /status
 * subresource, dry run, selectors, paging, built-in defaults. Plain HTTPS (rawapi.h). */
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
  cl_start(&C, CL_NO_CRDS);
  ra_init(&A, &C, "admin");
  ra_widget_crd(&A);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_core, .init = start, .fini = stop, .timeout = 120);

#define CM "/api/v1/namespaces/default/configmaps"
#define WD "/apis/example.com/v1/namespaces/default/widgets"

/* 2024-05-01T12:00:00Z */
static bool ls_like_time(const char *s)
{
  return strlen(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
         s[16] == ':' && s[19] == 'Z';
}

Test(apiserver_core, create_sets_uid_timestamp_and_resource_version)
{
  cJSON *cm = ra_configmap(&A, "default", "c1", NULL);
  cr_assert_eq(strlen(ra_str(cm, "metadata.uid")), 36, "a uuid: %s", ra_str(cm, "metadata.uid"));
  cr_assert(ls_like_time(ra_str(cm, "metadata.creationTimestamp")), "RFC 3339: %s",
            ra_str(cm, "metadata.creationTimestamp"));
  const char *rv = ra_str(cm, "metadata.resourceVersion");
  cr_assert(*rv && strspn(rv, "0123456789") == strlen(rv), "numeric resourceVersion: %s", rv);
  cr_assert_str_eq(ra_str(cm, "kind"), "ConfigMap");
  cr_assert_str_eq(ra_str(cm, "apiVersion"), "v1");
  cJSON *got = ra_ok(&A, "GET", CM "/c1", NULL, 200);
  cr_assert_str_eq(ra_str(got, "metadata.uid"), ra_str(cm, "metadata.uid"));
  cr_assert_str_eq(ra_str(got, "metadata.resourceVersion"), rv);
  cJSON_Delete(got);
  cJSON_Delete(cm);
}

Test(apiserver_core, already_exists_and_not_found_are_kubes_statuses)
{
  cJSON_Delete(ra_configmap(&A, "default", "dup", NULL));
  struct ra_resp r;
  ra_call(&A, "POST", CM, NULL, "{\"metadata\":{\"name\":\"dup\"}}", &r);
  cr_assert_eq(r.code, 409);
  cr_assert_str_eq(ra_str(r.json, "kind"), "Status");
  cr_assert_str_eq(ra_str(r.json, "status"), "Failure");
  cr_assert_str_eq(ra_str(r.json, "reason"), "AlreadyExists");
  cr_assert_str_eq(ra_str(r.json, "message"), "configmaps \"dup\" already exists");
  cr_assert_str_eq(ra_str(r.json, "details.name"), "dup");
  cr_assert_str_eq(ra_str(r.json, "details.kind"), "configmaps");
  cr_assert_eq(ra_num(r.json, "code"), 409);
  ra_resp_free(&r);
  ra_call(&A, "GET", CM "/nope", NULL, NULL, &r);
  cr_assert_eq(r.code, 404);
  cr_assert_str_eq(ra_str(r.json, "reason"), "NotFound");
  cr_assert_str_eq(ra_str(r.json, "message"), "configmaps \"nope\" not found");
  ra_resp_free(&r);
  ra_call(&A, "GET", WD "/nope", NULL, NULL, &r);
  cr_assert_eq(r.code, 404);
  cr_assert_str_eq(ra_str(r.json, "message"), "widgets.example.com \"nope\" not found");
  cr_assert_str_eq(ra_str(r.json, "details.group"), "example.com");
  ra_resp_free(&r);
  ra_call(&A, "GET", "/apis/example.com/v1/namespaces/default/gadgets", NULL, NULL, &r);
  cr_assert_eq(r.code, 404, "an unknown resource");
  cr_assert_str_eq(ra_str(r.json, "message"), "the server could not find the requested resource");
  ra_resp_free(&r);
}

Test(apiserver_core, generate_name_and_invalid_names)
{
  cJSON *a = ra_ok(&A, "POST", CM, "{\"metadata\":{\"generateName\":\"gen-\"}}", 201);
  const char *n = ra_str(a, "metadata.name");
  cr_assert(!strncmp(n, "gen-", 4) && strlen(n) == 9, "generated: %s", n);
  cJSON_Delete(a);
  struct ra_resp r;
  ra_call(&A, "POST", CM, NULL, "{\"metadata\":{\"name\":\"Bad_Name\"}}", &r);
  cr_assert_eq(r.code, 422);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Invalid");
  cr_assert(strstr(ra_str(r.json, "message"), "ConfigMap \"Bad_Name\" is invalid: metadata.name"),
            "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "POST", CM, NULL, "{\"metadata\":{}}", &r);
  cr_assert_eq(r.code, 422);
  cr_assert(strstr(r.body, "name or generateName is required"), "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "POST", "/api/v1/namespaces/nope/configmaps", NULL, "{\"metadata\":{\"name\":\"x\"}}",
          &r);
  cr_assert_eq(r.code, 404);
  cr_assert_str_eq(ra_str(r.json, "message"), "namespaces \"nope\" not found");
  ra_resp_free(&r);
  ra_call(&A, "POST", CM, NULL, "{\"apiVersion\":\"v2\",\"metadata\":{\"name\":\"x\"}}", &r);
  cr_assert_eq(r.code, 400, "a body of another version");
  ra_resp_free(&r);
  ra_call(&A, "POST", CM, NULL, "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"3\"}}", &r);
  cr_assert_eq(r.code, 500, "kube refuses a resourceVersion on create: %s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_core, stale_resource_version_is_a_conflict)
{
  cJSON *cm = ra_configmap(&A, "default", "cc", NULL);
  char old[32];
  snprintf(old, sizeof(old), "%s", ra_str(cm, "metadata.resourceVersion"));
  cJSON_Delete(cm);
  char body[256];
  snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"cc\",\"resourceVersion\":\"%s\"},"
                               "\"data\":{\"k\":\"2\"}}", old);
  cJSON *up = ra_ok(&A, "PUT", CM "/cc", body, 200);
  long long rv1 = atoll(old), rv2 = atoll(ra_str(up, "metadata.resourceVersion"));
  cr_assert_gt(rv2, rv1, "resourceVersion moves forward");
  cJSON_Delete(up);
  struct ra_resp r;
  ra_call(&A, "PUT", CM "/cc", NULL, body, &r);
  cr_assert_eq(r.code, 409);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Conflict");
  cr_assert_str_eq(ra_str(r.json, "message"),
                   "Operation cannot be fulfilled on configmaps \"cc\": the object has been "
                   "modified; please apply your changes to the latest version and try again");
  ra_resp_free(&r);
  /* an update without resourceVersion is unconditional for ConfigMaps */
  cJSON *u = ra_ok(&A, "PUT", CM "/cc", "{\"metadata\":{\"name\":\"cc\"},\"data\":{\"k\":\"3\"}}",
                    200);
  char rv3[32];
  snprintf(rv3, sizeof(rv3), "%s", ra_str(u, "metadata.resourceVersion"));
  cJSON_Delete(u);
  /* a no-op update writes nothing */
  u = ra_ok(&A, "PUT", CM "/cc", "{\"metadata\":{\"name\":\"cc\"},\"data\":{\"k\":\"3\"}}", 200);
  cr_assert_str_eq(ra_str(u, "metadata.resourceVersion"), rv3, "no-op: same resourceVersion");
  cJSON_Delete(u);
  ra_call(&A, "PUT", CM "/other", NULL, "{\"metadata\":{\"name\":\"cc\"}}", &r);
  cr_assert_eq(r.code, 400, "name mismatch: %s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_core, custom_resource_update_needs_a_resource_version)
{
  cJSON_Delete(ra_widget(&A, "default", "w0", 1));
  struct ra_resp r;
  ra_call(&A, "PUT", WD "/w0", NULL,
          "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w0\"},"
          "\"spec\":{\"size\":2}}", &r);
  cr_assert_eq(r.code, 422, "%s", r.body);
  cr_assert(strstr(ra_str(r.json, "message"), "metadata.resourceVersion"), "%s", r.body);
  ra_resp_free(&r);
}

static cJSON *put_widget(const char *path, cJSON *w, long code)
{
  char *s = cJSON_PrintUnformatted(w);
  cJSON *out = ra_ok(&A, "PUT", path, s, code);
  cJSON_free(s);
  return out;
}

Test(apiserver_core, generation_moves_on_spec_changes_only)
{
  cJSON *w = ra_widget(&A, "default", "w1", 1);
  cr_assert_eq(ra_num(w, "metadata.generation"), 1);
  /* metadata only */
  cJSON *labels = cJSON_AddObjectToObject(json_get_mut(w, "metadata"), "labels");
  cJSON_AddStringToObject(labels, "team", "a");
  cJSON *w2 = put_widget(WD "/w1", w, 200);
  cr_assert_eq(ra_num(w2, "metadata.generation"), 1, "a label change keeps the generation");
  cr_assert_str_eq(ra_str(w2, "metadata.labels.team"), "a");
  /* status through the main resource is ignored */
  cJSON *st = cJSON_AddObjectToObject(w2, "status");
  cJSON_AddStringToObject(st, "phase", "Running");
  cJSON *w3 = put_widget(WD "/w1", w2, 200);
  cr_assert_null(json_get(w3, "status.phase"), "the main resource ignores status");
  cr_assert_eq(ra_num(w3, "metadata.generation"), 1);
  /* spec */
  cJSON_ReplaceItemInObject(json_get_mut(w3, "spec"), "size", cJSON_CreateNumber(5));
  cJSON *w4 = put_widget(WD "/w1", w3, 200);
  cr_assert_eq(ra_num(w4, "metadata.generation"), 2, "a spec change bumps the generation");
  /* /status changes status only */
  cJSON_ReplaceItemInObject(json_get_mut(w4, "spec"), "size", cJSON_CreateNumber(9));
  cJSON *st4 = cJSON_AddObjectToObject(w4, "status");
  cJSON_AddStringToObject(st4, "phase", "Ready");
  cJSON *w5 = put_widget(WD "/w1/status", w4, 200);
  cr_assert_str_eq(ra_str(w5, "status.phase"), "Ready");
  cr_assert_eq(ra_num(w5, "spec.size"), 5, "/status leaves spec alone");
  cr_assert_eq(ra_num(w5, "metadata.generation"), 2, "/status leaves the generation alone");
  cr_assert_neq(atoll(ra_str(w5, "metadata.resourceVersion")),
                atoll(ra_str(w4, "metadata.resourceVersion")));
  cJSON *got = ra_ok(&A, "GET", WD "/w1/status", NULL, 200);
  cr_assert_str_eq(ra_str(got, "status.phase"), "Ready");
  cJSON_Delete(got);
  cJSON_Delete(w);
  cJSON_Delete(w2);
  cJSON_Delete(w3);
  cJSON_Delete(w4);
  cJSON_Delete(w5);
}

Test(apiserver_core, builtin_generation_and_job_defaults)
{
  cJSON *cm = ra_configmap(&A, "default", "nogen", NULL);
  cr_assert_null(json_get(cm, "metadata.generation"), "ConfigMaps have no generation");
  cJSON_Delete(cm);
  cJSON *job = ra_ok(&A, "POST", "/apis/batch/v1/namespaces/default/jobs",
                      "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"template\":{\"spec\":{"
                      "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
                      "\"busybox\"}]}}}}", 201);
  cr_assert_eq(ra_num(job, "metadata.generation"), 1);
  cr_assert_eq(ra_num(job, "spec.backoffLimit"), 6);
  cr_assert_eq(ra_num(job, "spec.completions"), 1);
  const char *uid = ra_str(job, "metadata.uid");
  const cJSON *ml = json_get(job, "spec.selector.matchLabels");
  const char *sel =
    cJSON_GetStringValue(cJSON_GetObjectItem(ml, "batch.kubernetes.io/controller-uid"));
  cr_assert_str_eq(sel, uid);
  const cJSON *tl = json_get(job, "spec.template.metadata.labels");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(tl, "job-name")), "j");
  struct ra_resp r;
  ra_call(&A, "PATCH", "/apis/batch/v1/namespaces/default/jobs/j", "application/merge-patch+json",
          "{\"spec\":{\"parallelism\":2}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_assert_eq(ra_num(r.json, "metadata.generation"), 2);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", "/apis/batch/v1/namespaces/default/jobs/j", "application/merge-patch+json",
          "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
          "\"image\":\"x\"}]}}}}", &r);
  cr_assert_eq(r.code, 422, "the template is immutable: %s", r.body);
  cr_assert(strstr(r.body, "spec.template"), "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "POST", "/apis/batch/v1/namespaces/default/jobs", NULL,
          "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
          "\"name\":\"c\",\"image\":\"busybox\"}]}}}}", &r);
  cr_assert_eq(r.code, 422, "restartPolicy is required: %s", r.body);
  cr_assert(strstr(r.body, "spec.template.spec.restartPolicy"), "%s", r.body);
  ra_resp_free(&r);
  cJSON_Delete(job);
}

Test(apiserver_core, dry_run_persists_nothing)
{
  cJSON *d = ra_ok(&A, "POST", CM "?dryRun=All", "{\"metadata\":{\"name\":\"dry\"}}", 201);
  cr_assert_str_eq(ra_str(d, "metadata.name"), "dry");
  cr_assert(*ra_str(d, "metadata.uid"), "a dry-run create answers the object it would create");
  cJSON_Delete(d);
  struct ra_resp r;
  ra_call(&A, "GET", CM "/dry", NULL, NULL, &r);
  cr_assert_eq(r.code, 404);
  ra_resp_free(&r);
  cJSON_Delete(ra_configmap(&A, "default", "wet", NULL));
  cJSON *u = ra_ok(&A, "PUT", CM "/wet?dryRun=All",
                    "{\"metadata\":{\"name\":\"wet\"},\"data\":{\"k\":\"dry\"}}", 200);
  cr_assert_str_eq(ra_str(u, "data.k"), "dry");
  cJSON_Delete(u);
  cJSON *g = ra_ok(&A, "GET", CM "/wet", NULL, 200);
  cr_assert_str_eq(ra_str(g, "data.k"), "v");
  cJSON_Delete(g);
  ra_call(&A, "POST", CM "?dryRun=Sometimes", NULL, "{\"metadata\":{\"name\":\"x\"}}", &r);
  cr_assert_eq(r.code, 400);
  ra_resp_free(&r);
  /* a dry run answers what the real request would: the name is taken */
  ra_call(&A, "POST", CM "?dryRun=All", NULL, "{\"metadata\":{\"name\":\"wet\"}}", &r);
  cr_assert_eq(r.code, 409, "%s", r.body);
  cr_assert(strstr(r.body, "AlreadyExists"), "%s", r.body);
  ra_resp_free(&r);
}

static int count(const char *query)
{
  char path[512];
  snprintf(path, sizeof(path), CM "?%s", query);
  cJSON *l = ra_ok(&A, "GET", path, NULL, 200);
  int n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items"))
  {
    if(strcmp(ra_str(it, "metadata.name"), "kube-root-ca.crt"))
      n++;
  }
  cJSON_Delete(l);
  return n;
}

Test(apiserver_core, label_and_field_selectors)
{
  cJSON_Delete(ra_configmap(&A, "default", "s1", "{\"app\":\"a\",\"tier\":\"web\"}"));
  cJSON_Delete(ra_configmap(&A, "default", "s2", "{\"app\":\"b\",\"tier\":\"web\"}"));
  cJSON_Delete(ra_configmap(&A, "default", "s3", "{\"app\":\"c\"}"));
  cr_assert_eq(count("labelSelector=app%3Da"), 1);
  cr_assert_eq(count("labelSelector=app%3D%3Da"), 1);
  cr_assert_eq(count("labelSelector=app!%3Da"), 2);
  cr_assert_eq(count("labelSelector=app+in+(a,b)"), 2);
  cr_assert_eq(count("labelSelector=app%20notin%20(a,b)"), 1);
  cr_assert_eq(count("labelSelector=tier"), 2);
  cr_assert_eq(count("labelSelector=!tier"), 1);
  cr_assert_eq(count("labelSelector=tier%3Dweb,app%3Db"), 1);
  cr_assert_eq(count("fieldSelector=metadata.name%3Ds2"), 1);
  cr_assert_eq(count("fieldSelector=metadata.name!%3Ds2,metadata.namespace%3Ddefault"), 2);
  struct ra_resp r;
  ra_call(&A, "GET", CM "?fieldSelector=data.k%3Dv", NULL, NULL, &r);
  cr_assert_eq(r.code, 400, "an unknown field label: %s", r.body);
  cr_assert_str_eq(ra_str(r.json, "reason"), "BadRequest");
  ra_resp_free(&r);
  ra_call(&A, "GET", CM "?labelSelector=app+in+a", NULL, NULL, &r);
  cr_assert_eq(r.code, 400, "a malformed label selector: %s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_core, limit_and_continue_page_in_name_order)
{
  for(int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof(n), "p%d", i);
    cJSON_Delete(ra_configmap(&A, "default", n, "{\"page\":\"yes\"}"));
  }
  char cont[1024] = "";
  int total = 0, pages = 0;
  char last[64] = "";
  do {
    char path[2048];
    snprintf(path, sizeof(path), CM "?labelSelector=page%%3Dyes&limit=2%s%s",
             cont[0] ? "&continue=" : "", cont);
    cJSON *l = ra_ok(&A, "GET", path, NULL, 200);
    cr_assert(*ra_str(l, "metadata.resourceVersion"));
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items"))
    {
      cr_assert_gt(strcmp(ra_str(it, "metadata.name"), last), 0, "name order");
      snprintf(last, sizeof(last), "%s", ra_str(it, "metadata.name"));
      total++;
    }
    cr_assert_leq(cJSON_GetArraySize(cJSON_GetObjectItem(l, "items")), 2);
    snprintf(cont, sizeof(cont), "%s", ra_str(l, "metadata.continue"));
    cJSON_Delete(l);
    pages++;
  } while(cont[0] && pages < 10);
  cr_assert_eq(total, 5);
  cr_assert_eq(pages, 3);
}

Test(apiserver_core, secrets_string_data_becomes_data)
{
  cJSON *s = ra_ok(&A, "POST", "/api/v1/namespaces/default/secrets",
                    "{\"metadata\":{\"name\":\"s\"},\"stringData\":{\"uri\":\"postgres://x\"}}",
                    201);
  cr_assert_str_eq(ra_str(s, "data.uri"), "cG9zdGdyZXM6Ly94");
  cr_assert_null(json_get(s, "stringData"));
  cr_assert_str_eq(ra_str(s, "type"), "Opaque");
  cJSON_Delete(s);
  struct ra_resp r;
  ra_call(&A, "POST", "/api/v1/namespaces/default/secrets", NULL,
          "{\"metadata\":{\"name\":\"bad\"},\"data\":{\"k\":\"not base64!\"}}", &r);
  cr_assert_eq(r.code, 400, "%s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_core, delete_collection_by_label)
{
  cJSON_Delete(ra_configmap(&A, "default", "d1", "{\"batch\":\"x\"}"));
  cJSON_Delete(ra_configmap(&A, "default", "d2", "{\"batch\":\"x\"}"));
  cJSON_Delete(ra_configmap(&A, "default", "d3", "{\"batch\":\"y\"}"));
  cJSON_Delete(ra_ok(&A, "DELETE", CM "?labelSelector=batch%3Dx", NULL, 200));
  cr_assert_eq(count("labelSelector=batch"), 1);
}

Test(apiserver_core, cluster_scoped_start_up_objects)
{
  cJSON *n = ra_ok(&A, "GET", "/api/v1/nodes/local", NULL, 200);
  const cJSON *c;
  bool ready = false;
  cJSON_ArrayForEach(c, json_get(n, "status.conditions"))
  {
    ready |= !strcmp(ra_str(c, "type"), "Ready") && !strcmp(ra_str(c, "status"), "True");
  }
  cr_assert(ready, "node local is Ready");
  cJSON_Delete(n);
  static const char *const nss[] = { "default", "kube-system", "godwit-system" };
  for(size_t i = 0; i < 3; i++) {
    char p[128];
    snprintf(p, sizeof(p), "/api/v1/namespaces/%s", nss[i]);
    cJSON *ns = ra_ok(&A, "GET", p, NULL, 200);
    cr_assert_str_eq(ra_str(ns, "status.phase"), "Active");
    cJSON_Delete(ns);
    snprintf(p, sizeof(p), "/api/v1/namespaces/%s/serviceaccounts/default", nss[i]);
    cJSON_Delete(ra_ok(&A, "GET", p, NULL, 200));
  }
}

Test(apiserver_core, events_share_one_storage_across_both_apis)
{
  struct ra_resp r;
  ra_call(&A, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", NULL,
          "{\"metadata\":{\"name\":\"e1\"},\"reason\":\"Started\",\"note\":\"it began\","
          "\"type\":\"Normal\",\"action\":\"Start\",\"eventTime\":\"2024-01-01T00:00:00.000000Z\","
          "\"reportingController\":\"godwit.dev/controller\",\"reportingInstance\":\"c-1\","
          "\"regarding\":{\"kind\":\"Widget\",\"name\":\"w9\",\"namespace\":\"default\","
          "\"apiVersion\":\"example.com/v1\"}}", &r);
  cr_assert_eq(r.code, 201, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "note"), "it began");
  ra_resp_free(&r);
  cJSON *l = ra_ok(&A, "GET", "/api/v1/namespaces/default/events?fieldSelector="
                    "involvedObject.name%3Dw9,involvedObject.kind%3DWidget", NULL, 200);
  const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "items"), 0);
  cr_assert_str_eq(ra_str(e, "message"), "it began", "core/v1 sees note as message");
  cr_assert_str_eq(ra_str(e, "involvedObject.name"), "w9");
  cr_assert_str_eq(ra_str(e, "reportingComponent"), "godwit.dev/controller");
  cJSON_Delete(l);
  ra_call(&A, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", NULL,
          "{\"metadata\":{\"name\":\"e2\"},\"reason\":\"R\",\"type\":\"Normal\"}", &r);
  cr_assert_eq(r.code, 422, "events.k8s.io/v1 requires eventTime, reportingController...");
  cr_assert(strstr(r.body, "reportingController"), "%s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_core, pods_get_kubes_defaults_and_immutable_specs)
{
  struct ra_resp r;
  ra_call(&A, "POST", "/api/v1/namespaces/default/pods", NULL,
          "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
          "\"busybox:1.36\"}]}}", &r);
  cr_assert_eq(r.code, 201, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "spec.serviceAccountName"), "default");
  cr_assert_str_eq(ra_str(r.json, "spec.restartPolicy"), "Always");
  cr_assert_str_eq(ra_str(r.json, "status.phase"), "Pending");
  const cJSON *c = cJSON_GetArrayItem(json_get(r.json, "spec.containers"), 0);
  cr_assert_str_eq(ra_str(c, "imagePullPolicy"), "IfNotPresent");
  cr_assert_str_eq(ra_str(c, "terminationMessagePath"), "/dev/termination-log");
  const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "volumeMounts"), 0);
  cr_assert_str_eq(ra_str(m, "mountPath"), "/var/run/secrets/kubernetes.io/serviceaccount");
  cr_assert(!strncmp(ra_str(m, "name"), "kube-api-access-", 16));
  cr_assert_eq(cJSON_GetArraySize(json_get(r.json, "spec.tolerations")), 2);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
          "{\"spec\":{\"restartPolicy\":\"Never\"}}", &r);
  cr_assert_eq(r.code, 422, "pod specs are immutable: %s", r.body);
  cr_assert(strstr(r.body, "pod updates may not change fields"), "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
          "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.37\"}]}}", &r);
  cr_assert_eq(r.code, 422, "a merge patch replaces the list, dropping defaults: %s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "POST", "/api/v1/namespaces/default/pods/p/binding", NULL,
          "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\"},"
          "\"target\":{\"kind\":\"Node\",\"name\":\"local\"}}", &r);
  cr_assert_eq(r.code, 201, "%s", r.body);
  ra_resp_free(&r);
  cJSON *p = ra_ok(&A, "GET", "/api/v1/namespaces/default/pods/p", NULL, 200);
  cr_assert_str_eq(ra_str(p, "spec.nodeName"), "local");
  cJSON_Delete(p);
  ra_call(&A, "POST", "/api/v1/namespaces/default/pods", NULL,
          "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"serviceAccountName\":\"ghost\","
          "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", &r);
  cr_assert_eq(r.code, 403, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "message"),
                   "pods \"q\" is forbidden: error looking up service account default/ghost: "
                   "serviceaccount \"ghost\" not found");
  ra_resp_free(&r);
}

Test(apiserver_core, custom_resources_are_served_in_every_version)
{
  cJSON_Delete(ra_widget(&A, "default", "wv", 3));
  cJSON *b = ra_ok(&A, "GET", "/apis/example.com/v1beta1/namespaces/default/widgets/wv", NULL,
                    200);
  cr_assert_str_eq(ra_str(b, "apiVersion"), "example.com/v1beta1");
  cr_assert_eq(ra_num(b, "spec.size"), 3);
  cJSON_Delete(b);
  cJSON *c = ra_ok(&A, "POST", "/apis/example.com/v1beta1/namespaces/default/widgets",
                    "{\"apiVersion\":\"example.com/v1beta1\",\"kind\":\"Widget\",\"metadata\":{"
                    "\"name\":\"wb\"},\"spec\":{\"size\":4}}", 201);
  cr_assert_str_eq(ra_str(c, "apiVersion"), "example.com/v1beta1");
  cJSON_Delete(c);
  cJSON *l = ra_ok(&A, "GET", WD, NULL, 200);
  cr_assert_str_eq(ra_str(l, "kind"), "WidgetList");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(l, "items")), 2);
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items"))
    cr_assert_str_eq(ra_str(it, "apiVersion"), "example.com/v1");
  cJSON_Delete(l);
}

/* A patch without a resourceVersion applies to whatever state it finds; one that names a
 * stale resourceVersion is a precondition and fails with 409 (concurrent patches through the
 * admission chain: apiserver_admission_cluster). */
Test(apiserver_core, a_patch_names_a_resource_version_only_as_a_precondition)
{
  cJSON *cm = ra_configmap(&A, "default", "pp", NULL);
  char old[32];
  snprintf(old, sizeof(old), "%s", ra_str(cm, "metadata.resourceVersion"));
  cJSON_Delete(cm);
  struct ra_resp r;
  ra_call(&A, "PATCH", CM "/pp", "application/merge-patch+json", "{\"data\":{\"a\":\"1\"}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", CM "/pp", "application/merge-patch+json", "{\"data\":{\"b\":\"1\"}}", &r);
  cr_assert_eq(r.code, 200, "a patch after another write applies to the new state: %s", r.body);
  cr_assert_str_eq(ra_str(r.json, "data.a"), "1");
  ra_resp_free(&r);
  char body[128];
  snprintf(body, sizeof(body), "{\"metadata\":{\"resourceVersion\":\"%s\"},\"data\":{\"c\":\"1\"}}",
           old);
  ra_call(&A, "PATCH", CM "/pp", "application/merge-patch+json", body, &r);
  cr_assert_eq(r.code, 409, "a stale resourceVersion in the patch is a precondition: %s", r.body);
  ra_resp_free(&r);
}
