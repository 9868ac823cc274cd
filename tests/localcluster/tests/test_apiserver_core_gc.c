/* test_apiserver_core_gc.c: deletion as kube-apiserver and its controllers do it: finalizers and
 * deletionTimestamp, ownerReference garbage collection (background, foreground, orphan), the
 * Job default (orphan, with kube's warning), namespace and CRD deletion, preconditions, graceful
 * Pod deletion. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "rawapi.h"

static struct cl C;
static struct ra A;

static void start(void)
{
  cl_start(&C, CL_NO_CRDS);
  ra_init(&A, &C, "admin");
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_gc, .init = start, .fini = stop, .timeout = 120);

#define CM "/api/v1/namespaces/default/configmaps"

static int gone(void *path)
{
  struct ra_resp r;
  ra_call(&A, "GET", path, NULL, NULL, &r);
  int g = r.code == 404;
  ra_resp_free(&r);
  return g;
}

static long status_of(const char *method, const char *path, const char *ctype, const char *body)
{
  struct ra_resp r;
  long code = ra_call(&A, method, path, ctype, body, &r);
  ra_resp_free(&r);
  return code;
}

static cJSON *owned_cm(const char *name, const cJSON *owner, const char *kind, bool block,
                       const char *finalizer)
{
  char body[1024];
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\",%s%s%s\"ownerReferences\":[{\"apiVersion\":\"v1\","
           "\"kind\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\",\"blockOwnerDeletion\":%s}]}}",
           name, finalizer ? "\"finalizers\":[\"" : "", finalizer ? finalizer : "",
           finalizer ? "\"]," : "", kind, ra_str(owner, "metadata.name"),
           ra_str(owner, "metadata.uid"), block ? "true" : "false");
  return ra_ok(&A, "POST", CM, body, 201);
}

Test(apiserver_gc, finalizers_hold_a_deleted_object_until_they_go)
{
  cJSON_Delete(ra_ok(&A, "POST", CM, "{\"metadata\":{\"name\":\"f\",\"finalizers\":["
                                      "\"example.com/hold\"]}}", 201));
  struct ra_resp r;
  ra_call(&A, "DELETE", CM "/f", NULL, NULL, &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "kind"), "ConfigMap", "the marked object is answered");
  cr_assert(*ra_str(r.json, "metadata.deletionTimestamp"));
  cr_assert_eq(ra_num(r.json, "metadata.deletionGracePeriodSeconds"), 0);
  ra_resp_free(&r);
  cJSON *g = ra_ok(&A, "GET", CM "/f", NULL, 200);
  cr_assert(*ra_str(g, "metadata.deletionTimestamp"), "still there, marked");
  cJSON_Delete(g);
  ra_call(&A, "PATCH", CM "/f", "application/merge-patch+json",
          "{\"metadata\":{\"finalizers\":[\"example.com/hold\",\"example.com/more\"]}}", &r);
  cr_assert_eq(r.code, 422, "no new finalizers on a deleted object: %s", r.body);
  ra_resp_free(&r);
  cr_assert_eq(status_of("PATCH", CM "/f", "application/merge-patch+json",
                         "{\"metadata\":{\"finalizers\":null}}"),
               200);
  cr_assert(gone(CM "/f"), "removed with its last finalizer");
  /* without finalizers: gone at once, answered with a Status */
  cJSON_Delete(ra_configmap(&A, "default", "now", NULL));
  ra_call(&A, "DELETE", CM "/now", NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  cr_assert_str_eq(ra_str(r.json, "kind"), "Status");
  cr_assert_str_eq(ra_str(r.json, "status"), "Success");
  cr_assert_str_eq(ra_str(r.json, "details.name"), "now");
  ra_resp_free(&r);
}

Test(apiserver_gc, background_deletion_collects_dependents)
{
  cJSON *owner = ra_configmap(&A, "default", "owner", NULL);
  cJSON_Delete(owned_cm("dep", owner, "ConfigMap", false, NULL));
  cJSON_Delete(ra_ok(&A, "DELETE", CM "/owner", NULL, 200));
  cr_assert(cl_eventually(10000, gone, CM "/dep"), "the dependent follows its owner");
  cJSON_Delete(owner);
  /* an object whose owner never existed is collected too */
  cJSON *ghost = cJSON_Parse("{\"metadata\":{\"name\":\"ghost\",\"uid\":"
                             "\"11111111-2222-3333-4444-555555555555\"}}");
  cJSON_Delete(owned_cm("orphaned", ghost, "ConfigMap", false, NULL));
  cr_assert(cl_eventually(10000, gone, CM "/orphaned"));
  cJSON_Delete(ghost);
}

Test(apiserver_gc, foreground_waits_for_blocking_dependents)
{
  cJSON *owner = ra_configmap(&A, "default", "fg", NULL);
  cJSON_Delete(owned_cm("fgdep", owner, "ConfigMap", true, "example.com/hold"));
  struct ra_resp r;
  ra_call(&A, "DELETE", CM "/fg", NULL, "{\"propagationPolicy\":\"Foreground\"}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_assert(*ra_str(r.json, "metadata.deletionTimestamp"));
  const cJSON *f = cJSON_GetArrayItem(json_get(r.json, "metadata.finalizers"), 0);
  cr_assert_str_eq(cJSON_GetStringValue(f), "foregroundDeletion");
  ra_resp_free(&r);
  struct timespec d = { 1, 0 };
  nanosleep(&d, NULL);
  cJSON *dep = ra_ok(&A, "GET", CM "/fgdep", NULL, 200);
  cr_assert(*ra_str(dep, "metadata.deletionTimestamp"), "the dependent is being deleted");
  cJSON_Delete(dep);
  cJSON_Delete(ra_ok(&A, "GET", CM "/fg", NULL, 200));
  cr_assert_eq(status_of("PATCH", CM "/fgdep", "application/merge-patch+json",
                         "{\"metadata\":{\"finalizers\":null}}"),
               200);
  cr_assert(cl_eventually(10000, gone, CM "/fgdep"));
  cr_assert(cl_eventually(10000, gone, CM "/fg"), "the owner goes after its dependents");
  cJSON_Delete(owner);
}

static int refs_removed(void *arg)
{
  (void)arg;
  cJSON *d = ra_ok(&A, "GET", CM "/odep", NULL, 200);
  int ok = json_get(d, "metadata.ownerReferences") == NULL;
  cJSON_Delete(d);
  return ok;
}

Test(apiserver_gc, orphan_keeps_dependents_without_the_reference)
{
  cJSON *owner = ra_configmap(&A, "default", "oo", NULL);
  cJSON_Delete(owned_cm("odep", owner, "ConfigMap", false, NULL));
  cJSON_Delete(ra_ok(&A, "DELETE", CM "/oo", "{\"propagationPolicy\":\"Orphan\"}", 200));
  cr_assert(cl_eventually(10000, gone, CM "/oo"));
  cr_assert(cl_eventually(10000, refs_removed, NULL), "the reference is removed");
  cJSON_Delete(ra_ok(&A, "GET", CM "/odep", NULL, 200));
  cJSON_Delete(owner);
}

Test(apiserver_gc, jobs_orphan_their_pods_by_default_with_kubes_warning)
{
  cJSON *job = ra_ok(&A, "POST", "/apis/batch/v1/namespaces/default/jobs",
                      "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"template\":{\"spec\":{"
                      "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
                      "\"busybox\"}]}}}}", 201);
  char pod[1024];
  snprintf(pod, sizeof(pod),
           "{\"metadata\":{\"name\":\"j-abcde\",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","
           "\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"%s\",\"controller\":true,"
           "\"blockOwnerDeletion\":true}]},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":"
           "[{\"name\":\"c\",\"image\":\"busybox\"}]}}", ra_str(job, "metadata.uid"));
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/default/pods", pod, 201));
  struct ra_resp r;
  ra_call(&A, "DELETE", "/apis/batch/v1/namespaces/default/jobs/j", NULL, NULL, &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_assert(strstr(r.warning, "child pods are preserved by default when jobs are deleted"),
            "Warning: %s", r.warning);
  ra_resp_free(&r);
  cr_assert(cl_eventually(10000, gone, "/apis/batch/v1/namespaces/default/jobs/j"));
  cJSON_Delete(ra_ok(&A, "GET", "/api/v1/namespaces/default/pods/j-abcde", NULL, 200));
  cJSON_Delete(job);
}

Test(apiserver_gc, namespace_deletion_removes_its_content)
{
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"tmp\"}}", 201));
  cJSON_Delete(ra_configmap(&A, "tmp", "plain", NULL));
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/tmp/configmaps",
                      "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"example.com/h\"]}}",
                      201));
  struct ra_resp r;
  ra_call(&A, "DELETE", "/api/v1/namespaces/tmp", NULL, NULL, &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "status.phase"), "Terminating");
  ra_resp_free(&r);
  cr_assert(cl_eventually(10000, gone, "/api/v1/namespaces/tmp/configmaps/plain"));
  ra_call(&A, "POST", "/api/v1/namespaces/tmp/configmaps", NULL,
          "{\"metadata\":{\"name\":\"new\"}}", &r);
  cr_assert_eq(r.code, 403, "%s", r.body);
  cr_assert_str_eq(ra_str(r.json, "message"),
                   "configmaps \"new\" is forbidden: unable to create new content in namespace "
                   "tmp because it is being terminated");
  ra_resp_free(&r);
  cJSON_Delete(ra_ok(&A, "GET", "/api/v1/namespaces/tmp", NULL, 200));
  cr_assert_eq(status_of("PATCH", "/api/v1/namespaces/tmp/configmaps/held",
                         "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}"),
               200);
  cr_assert(cl_eventually(10000, gone, "/api/v1/namespaces/tmp"), "the namespace goes last");
  ra_call(&A, "DELETE", "/api/v1/namespaces/default", NULL, NULL, &r);
  cr_assert_eq(r.code, 403, "default may not be deleted: %s", r.body);
  ra_resp_free(&r);
}

Test(apiserver_gc, deleting_a_crd_deletes_its_custom_resources)
{
  ra_widget_crd(&A);
  cJSON_Delete(ra_widget(&A, "default", "w1", 1));
  cJSON_Delete(ra_ok(&A, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                    "widgets.example.com", NULL, 200));
  cr_assert(cl_eventually(10000, gone, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                       "widgets.example.com"));
  struct ra_resp r;
  ra_call(&A, "GET", "/apis/example.com/v1/namespaces/default/widgets", NULL, NULL, &r);
  cr_assert_eq(r.code, 404, "no longer served: %s", r.body);
  ra_resp_free(&r);
  ra_widget_crd(&A);
  cJSON *l = ra_ok(&A, "GET", "/apis/example.com/v1/namespaces/default/widgets", NULL, 200);
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(l, "items")), 0, "the old ones are gone");
  cJSON_Delete(l);
}

Test(apiserver_gc, preconditions_and_graceful_pods)
{
  cJSON_Delete(ra_configmap(&A, "default", "pc", NULL));
  struct ra_resp r;
  ra_call(&A, "DELETE", CM "/pc", NULL,
          "{\"preconditions\":{\"uid\":\"00000000-0000-0000-0000-000000000000\"}}", &r);
  cr_assert_eq(r.code, 409);
  cr_assert(strstr(ra_str(r.json, "message"), "Precondition failed: UID in precondition"), "%s",
            r.body);
  ra_resp_free(&r);
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/default/pods",
                      "{\"metadata\":{\"name\":\"gp\"},\"spec\":{\"terminationGracePeriodSeconds\""
                      ":1,\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", 201));
  cJSON_Delete(ra_ok(&A, "POST", "/api/v1/namespaces/default/pods/gp/binding",
                      "{\"target\":{\"kind\":\"Node\",\"name\":\"local\"}}", 201));
  ra_call(&A, "DELETE", "/api/v1/namespaces/default/pods/gp", NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  cr_assert_eq(ra_num(r.json, "metadata.deletionGracePeriodSeconds"), 1,
               "a bound pod is deleted gracefully");
  ra_resp_free(&r);
  cJSON_Delete(ra_ok(&A, "GET", "/api/v1/namespaces/default/pods/gp", NULL, 200));
  cr_assert(cl_eventually(10000, gone, "/api/v1/namespaces/default/pods/gp"),
            "gone once the grace period is over");
}
