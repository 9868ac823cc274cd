/* test_apiserver_core_watch.c: watch streams as kube-apiserver serves them: JSON lines from a
 * resourceVersion, selector transitions, initial state, bookmarks, timeoutSeconds, 410 Gone after
 * compaction, dropped streams, Table events, custom resources in another version. */
#include <criterion/criterion.h>
#include <pthread.h>
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
  cl_start(&C, CL_NO_CRDS | CL_FAULTS);
  ra_init(&A, &C, "admin");
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_watch, .init = start, .fini = stop, .timeout = 120);

#define CM "/api/v1/namespaces/default/configmaps"

static char *list_rv(const char *path)
{
  cJSON *l = ra_ok(&A, "GET", path, NULL, 200);
  char *rv = strdup(ra_str(l, "metadata.resourceVersion"));
  cJSON_Delete(l);
  return rv;
}

static const cJSON *ev(const cJSON *events, int i)
{
  return cJSON_GetArrayItem(events, i);
}

Test(apiserver_watch, events_from_a_resource_version_in_order)
{
  char *rv0 = list_rv(CM);
  cJSON_Delete(ra_configmap(&A, "default", "w", NULL));
  cJSON_Delete(ra_ok(&A, "PUT", CM "/w", "{\"metadata\":{\"name\":\"w\"},\"data\":{\"k\":\"2\"}}",
                      200));
  cJSON_Delete(ra_ok(&A, "DELETE", CM "/w", NULL, 200));
  char path[256];
  snprintf(path, sizeof(path), CM "?watch=true&resourceVersion=%s", rv0);
  cJSON *evs = ra_watch(&A, path, 3, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 3, "three events");
  static const char *const types[] = { "ADDED", "MODIFIED", "DELETED" };
  long long last = atoll(rv0);
  for(int i = 0; i < 3; i++) {
    cr_assert_str_eq(ra_str(ev(evs, i), "type"), types[i]);
    cr_assert_str_eq(ra_str(ev(evs, i), "object.metadata.name"), "w");
    cr_assert_str_eq(ra_str(ev(evs, i), "object.kind"), "ConfigMap");
    long long rv = atoll(ra_str(ev(evs, i), "object.metadata.resourceVersion"));
    cr_assert_gt(rv, last, "resourceVersions increase");
    last = rv;
  }
  cr_assert_str_eq(ra_str(ev(evs, 1), "object.data.k"), "2");
  cJSON_Delete(evs);
  free(rv0);
}

Test(apiserver_watch, without_a_resource_version_the_current_state_comes_first)
{
  cJSON_Delete(ra_configmap(&A, "default", "a", "{\"w\":\"1\"}"));
  cJSON_Delete(ra_configmap(&A, "default", "b", "{\"w\":\"1\"}"));
  cJSON *evs = ra_watch(&A, CM "?watch=1&labelSelector=w%3D1", 2, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 2);
  cr_assert_str_eq(ra_str(ev(evs, 0), "type"), "ADDED");
  cr_assert_str_eq(ra_str(ev(evs, 0), "object.metadata.name"), "a");
  cr_assert_str_eq(ra_str(ev(evs, 1), "object.metadata.name"), "b");
  cJSON_Delete(evs);
  evs = ra_watch(&A, CM "?watch=1&resourceVersion=0&labelSelector=w%3D1", 2, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 2, "resourceVersion=0: the same");
  cJSON_Delete(evs);
}

Test(apiserver_watch, selector_transitions_are_added_and_deleted)
{
  char *rv0 = list_rv(CM);
  cJSON_Delete(ra_configmap(&A, "default", "t", "{\"color\":\"red\"}"));
  struct ra_resp r;
  ra_call(&A, "PATCH", CM "/t", "application/merge-patch+json",
          "{\"metadata\":{\"labels\":{\"color\":\"blue\"}}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", CM "/t", "application/merge-patch+json",
          "{\"metadata\":{\"labels\":{\"color\":\"red\"}},\"data\":{\"k\":\"x\"}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  ra_resp_free(&r);
  char path[256];
  snprintf(path, sizeof(path), CM "?watch=true&resourceVersion=%s&labelSelector=color%%3Dblue",
           rv0);
  cJSON *evs = ra_watch(&A, path, 2, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 2);
  cr_assert_str_eq(ra_str(ev(evs, 0), "type"), "ADDED", "it starts to match");
  cr_assert_str_eq(ra_str(ev(evs, 1), "type"), "DELETED", "it stops matching");
  cr_assert_str_eq(ra_str(ev(evs, 1), "object.metadata.labels.color"), "blue",
                   "DELETED carries the last state that matched");
  cJSON_Delete(evs);
  free(rv0);
}

Test(apiserver_watch, bookmarks_and_timeout_seconds)
{
  char *rv0 = list_rv(CM);
  char path[256];
  snprintf(path, sizeof(path), CM "?watch=1&resourceVersion=%s&allowWatchBookmarks=true"
                                  "&timeoutSeconds=2", rv0);
  time_t t0 = time(NULL);
  cJSON *evs = ra_watch(&A, path, 0, 10000);
  time_t took = time(NULL) - t0;
  cr_assert_geq(took, 1, "the stream lasted about timeoutSeconds");
  cr_assert_leq(took, 4, "and ended by itself");
  int n = cJSON_GetArraySize(evs);
  cr_assert_geq(n, 1, "a bookmark before the end");
  const cJSON *b = ev(evs, n - 1);
  cr_assert_str_eq(ra_str(b, "type"), "BOOKMARK");
  cr_assert_str_eq(ra_str(b, "object.kind"), "ConfigMap");
  cr_assert_str_eq(ra_str(b, "object.apiVersion"), "v1");
  cr_assert_geq(atoll(ra_str(b, "object.metadata.resourceVersion")), atoll(rv0));
  cJSON_Delete(evs);
  free(rv0);
}

Test(apiserver_watch, send_initial_events_ends_with_an_annotated_bookmark)
{
  cJSON_Delete(ra_configmap(&A, "default", "i1", "{\"init\":\"y\"}"));
  cJSON *evs = ra_watch(&A, CM "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                               "&resourceVersionMatch=NotOlderThan&labelSelector=init%3Dy",
                         2, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 2);
  cr_assert_str_eq(ra_str(ev(evs, 0), "type"), "ADDED");
  cr_assert_str_eq(ra_str(ev(evs, 1), "type"), "BOOKMARK");
  const cJSON *ann = json_get(ev(evs, 1), "object.metadata.annotations");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ann, "k8s.io/initial-events-end")),
                   "true");
  cJSON_Delete(evs);
}

Test(apiserver_watch, gone_after_compaction)
{
  char *rv0 = list_rv(CM);
  cJSON_Delete(ra_configmap(&A, "default", "g", NULL));
  cl_fault(&C, "{\"compact\":true}");
  char path[256];
  snprintf(path, sizeof(path), CM "?watch=1&resourceVersion=%s", rv0);
  cJSON *evs = ra_watch(&A, path, 0, 5000);
  cr_assert_eq(cJSON_GetArraySize(evs), 1, "one ERROR event, then the end");
  const cJSON *e = ev(evs, 0);
  cr_assert_str_eq(ra_str(e, "type"), "ERROR");
  cr_assert_str_eq(ra_str(e, "object.kind"), "Status");
  cr_assert_eq(ra_num(e, "object.code"), 410);
  cr_assert_str_eq(ra_str(e, "object.reason"), "Expired");
  cr_assert(strstr(ra_str(e, "object.message"), "too old resource version"), "%s",
            ra_str(e, "object.message"));
  cJSON_Delete(evs);
  /* a watch from the current resourceVersion still works */
  char *rv1 = list_rv(CM);
  cJSON_Delete(ra_configmap(&A, "default", "g2", NULL));
  snprintf(path, sizeof(path), CM "?watch=1&resourceVersion=%s", rv1);
  evs = ra_watch(&A, path, 1, 5000);
  cr_assert_str_eq(ra_str(ev(evs, 0), "type"), "ADDED");
  cJSON_Delete(evs);
  free(rv0);
  free(rv1);
}

static void *watch_thread(void *arg)
{
  (void)arg;
  return ra_watch(&A, CM "?watch=1&resourceVersion=1&timeoutSeconds=60", 0, 30000);
}

Test(apiserver_watch, fault_injection_drops_open_streams)
{
  pthread_t t;
  pthread_create(&t, NULL, watch_thread, NULL);
  struct timespec d = { 0, 500 * 1000000L };
  nanosleep(&d, NULL);
  time_t t0 = time(NULL);
  cl_fault(&C, "{\"dropWatches\":true}");
  void *evs;
  pthread_join(t, &evs);
  cr_assert_leq(time(NULL) - t0, 3, "the stream ended at once");
  cJSON_Delete(evs);
}

Test(apiserver_watch, table_events_for_kubectl_get_watch)
{
  char *rv0 = list_rv(CM);
  cJSON_Delete(ra_configmap(&A, "default", "tb", NULL));
  snprintf(A.accept, sizeof(A.accept), "application/json;as=Table;v=v1;g=meta.k8s.io,"
                                       "application/json");
  char path[256];
  snprintf(path, sizeof(path), CM "?watch=1&resourceVersion=%s", rv0);
  cJSON *evs = ra_watch(&A, path, 1, 5000);
  const cJSON *o = json_get(ev(evs, 0), "object");
  cr_assert_str_eq(ra_str(o, "kind"), "Table");
  cr_assert_str_eq(ra_str(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "columnDefinitions"), 0),
                        "name"), "Name");
  const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "rows"), 0);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "cells"), 0)),
                   "tb");
  cr_assert_str_eq(ra_str(row, "object.kind"), "PartialObjectMetadata");
  cJSON_Delete(evs);
  free(rv0);
}

Test(apiserver_watch, custom_resources_in_the_requested_version)
{
  ra_widget_crd(&A);
  char *rv0 = list_rv("/apis/example.com/v1/namespaces/default/widgets");
  cJSON_Delete(ra_widget(&A, "default", "wz", 2));
  char path[256];
  snprintf(path, sizeof(path), "/apis/example.com/v1beta1/namespaces/default/widgets?watch=1"
                               "&resourceVersion=%s", rv0);
  cJSON *evs = ra_watch(&A, path, 1, 5000);
  cr_assert_str_eq(ra_str(ev(evs, 0), "object.apiVersion"), "example.com/v1beta1");
  cr_assert_eq(ra_num(ev(evs, 0), "object.spec.size"), 2);
  cJSON_Delete(evs);
  free(rv0);
}
