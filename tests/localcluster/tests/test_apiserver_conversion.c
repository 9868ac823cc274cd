/*
 * The local API server's CRD conversion (tests/localcluster/apiserver/conversion.c), called as
 * the core calls it: through the real godwit-webhook's /convert for godwit's CRDs (a v1alpha1
 * write stored as v1 and read back as v1alpha1 without loss), and through a fake conversion
 * webhook for what kube-apiserver checks in an answer.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hooks.h"
#include "json.h"
#include "test_apiserver_util.h"
#include "yamldoc.h"

static struct lw W;

static void up(void)
{
  lw_start(&W);
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", W.port);
  lw_layers(addr);
  glob_t g;
  cr_assert_eq(glob("manifests/crds/*.yaml", 0, NULL, &g), 0);
  for(size_t i = 0; i < g.gl_pathc; i++) {
    cJSON *crd = lw_manifest(g.gl_pathv[i], W.ca_bundle);
    struct ls_crd_info info;
    cJSON *st = crd_register(crd, &info);
    cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
    cJSON_Delete(crd);
  }
  globfree(&g);
}

static void down(void)
{
  lw_stop(&W);
}

TestSuite(apiserver_conversion, .init = up, .fini = down, .timeout = 60);

static cJSON *sample(const char *path)
{
  cJSON *docs;
  char err[256];
  cr_assert_eq(yamldoc_parse_file(path, &docs, err, sizeof(err)), GW_OK, "%s", err);
  cJSON *o = cJSON_DetachItemFromArray(docs, 0);
  cJSON_Delete(docs);
  /* what the store adds */
  cJSON *meta = json_get_mut(o, "metadata");
  cJSON_AddStringToObject(meta, "uid", "1b7c2b58-7d0e-4a53-9d8e-2f7a1c3e5d01");
  cJSON_AddStringToObject(meta, "resourceVersion", "42");
  cJSON_AddNumberToObject(meta, "generation", 1);
  cJSON_AddStringToObject(meta, "creationTimestamp", "2026-01-02T03:04:05Z");
  return o;
}

static void convert_ok(cJSON *o, const char *version)
{
  cJSON *st = crd_convert("pgcopydb.io", "migrations", &o, 1, version);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
}

LTest(apiserver_conversion, v1alpha1_write_stored_as_v1_read_back_losslessly)
{
  /* the write: decoded, defaulted and validated in the request's version */
  cJSON *o = sample("manifests/samples/migration-v1alpha1.yaml");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1alpha1", o);
  cr_assert_null(crd_validate("pgcopydb.io", "migrations", "v1alpha1", o, NULL));
  cJSON *written = cJSON_Duplicate(o, 1);
  /* stored as v1, the storage version, through the real /convert */
  convert_ok(o, "v1");
  cr_assert_str_eq(json_get_str(o, "apiVersion"), "pgcopydb.io/v1");
  cr_assert_str_eq(json_get_str(o, "spec.source.connectionSecretRef.name"), json_get_str(written, "spec.sourceSecret"));
  cr_assert_str_eq(json_get_str(o, "spec.target.connectionSecretRef.name"), json_get_str(written, "spec.targetSecret"));
  cr_assert_str_eq(json_get_str(o, "metadata.uid"), "1b7c2b58-7d0e-4a53-9d8e-2f7a1c3e5d01");
  cr_assert_str_eq(json_get_str(o, "metadata.resourceVersion"), "42");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", o);
  cJSON *st = crd_validate("pgcopydb.io", "migrations", "v1", o, NULL);
  cr_assert_null(st, "the stored v1 object is invalid: %s", st ? json_get_str(st, "message") : "");
  /* read back as v1alpha1 (a read from storage converts, then prunes and defaults) */
  convert_ok(o, "v1alpha1");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1alpha1", o);
  /* The read applies v1's defaults before converting back (as kube-apiserver's storage decoder
   * does), and godwit's webhook keeps what v1alpha1 cannot hold, those defaults included, in
   * the godwit.dev/v1-fields annotation; everything the client wrote comes back unchanged. */
  cJSON *ann = json_detach(o, "metadata.annotations");
  const char *v1f = cJSON_GetStringValue(cJSON_GetObjectItem(ann, "godwit.dev/v1-fields"));
  cr_assert_not_null(v1f);
  cr_assert_eq(cJSON_GetArraySize(ann), 1);
  char *a = cJSON_PrintUnformatted(written), *b = cJSON_PrintUnformatted(o);
  cr_assert(json_equal(written, o), "not lossless:\nwritten %s\nread    %s", a, b);
  cJSON_free(a);
  cJSON_free(b);
  /* and a second trip is stable */
  cr_assert_eq(json_set(o, "metadata.annotations", ann), GW_OK);
  cJSON *again = cJSON_Duplicate(o, 1);
  convert_ok(again, "v1");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", again);
  cr_assert_null(json_get(again, "metadata.annotations"), "the stored v1 object carries no annotation");
  convert_ok(again, "v1alpha1");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1alpha1", again);
  cr_assert(json_equal(again, o));
  cJSON_Delete(again);
  cJSON_Delete(written);
  cJSON_Delete(o);
}

LTest(apiserver_conversion, v1_fields_survive_a_trip_through_v1alpha1)
{
  cJSON *o = sample("manifests/samples/migration-clone.yaml");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", o);
  cJSON *orig = cJSON_Duplicate(o, 1);
  convert_ok(o, "v1alpha1");
  cr_assert_str_eq(json_get_str(o, "apiVersion"), "pgcopydb.io/v1alpha1");
  /* what v1alpha1 cannot hold travels in an annotation, which the schema keeps */
  crd_prune_and_default("pgcopydb.io", "migrations", "v1alpha1", o);
  cr_assert_null(crd_validate("pgcopydb.io", "migrations", "v1alpha1", o, NULL));
  convert_ok(o, "v1");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", o);
  char *a = cJSON_PrintUnformatted(orig), *b = cJSON_PrintUnformatted(o);
  cr_assert(json_equal(orig, o), "not lossless:\nbefore %s\nafter  %s", a, b);
  cJSON_free(a);
  cJSON_free(b);
  cJSON_Delete(orig);
  cJSON_Delete(o);
}

LTest(apiserver_conversion, a_list_keeps_its_order_and_objects_already_converted)
{
  cJSON *objs[3] = { sample("manifests/samples/migration-v1alpha1.yaml"), sample("manifests/samples/migration-clone.yaml"),
                     sample("manifests/samples/migration-v1alpha1.yaml") };
  cr_assert_eq(json_set_str(objs[2], "metadata.name", "third"), GW_OK);
  cJSON *second = cJSON_Duplicate(objs[1], 1);
  cJSON *st = crd_convert("pgcopydb.io", "migrations", objs, 3, "v1");
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  for(int i = 0; i < 3; i++)
    cr_assert_str_eq(json_get_str(objs[i], "apiVersion"), "pgcopydb.io/v1");
  cr_assert(json_equal(objs[1], second), "an object already in v1 is left alone");
  cr_assert_str_eq(json_get_str(objs[0], "metadata.name"), "inventory");
  cr_assert_str_eq(json_get_str(objs[2], "metadata.name"), "third");
  cJSON_Delete(second);
  for(int i = 0; i < 3; i++)
    cJSON_Delete(objs[i]);
}

LTest(apiserver_conversion, webhook_down_is_kubes_plain_500)
{
  char addr[64];
  int port = lw_closed_port();
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
  lw_layers(addr);
  cJSON *o = sample("manifests/samples/migration-v1alpha1.yaml");
  cJSON *before = cJSON_Duplicate(o, 1);
  cJSON *st = crd_convert("pgcopydb.io", "migrations", &o, 1, "v1");
  cr_assert_not_null(st);
  cr_assert_eq(json_get(st, "code")->valueint, 500);
  cr_assert_null(json_get(st, "reason"), "kube's plain error has no reason (kubectl: \"Error from server: ...\")");
  char want[512];
  snprintf(want, sizeof(want),
           "conversion webhook for pgcopydb.io/v1alpha1, Kind=Migration failed: Post "
           "\"https://godwit-webhook.godwit-system.svc:443/convert?timeout=30s\": dial tcp 127.0.0.1:%d: connect: connection refused",
           port);
  cr_assert_str_eq(json_get_str(st, "message"), want);
  cr_assert(json_equal(o, before), "a failed conversion leaves the object alone");
  cJSON_Delete(st);
  cJSON_Delete(before);
  cJSON_Delete(o);
}

/* ---- a CRD of the test's own, converted by the fake ---- */

enum mode { OK, BAD_UID, FAILURE, DROP_ONE, WRONG_VERSION, RENAME, META, STATUS_500 };

static char *conv_respond(const char *path, const cJSON *body, int *status, void *ud)
{
  (void)path;
  enum mode m = *(enum mode *)ud;
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "apiVersion", "apiextensions.k8s.io/v1");
  cJSON_AddStringToObject(out, "kind", "ConversionReview");
  cJSON *r = cJSON_AddObjectToObject(out, "response");
  cJSON_AddStringToObject(r, "uid", m == BAD_UID ? "other" : json_get_str(body, "request.uid"));
  cJSON *res = cJSON_AddObjectToObject(r, "result");
  cJSON_AddStringToObject(res, "status", m == FAILURE ? "Failure" : "Success");
  if(m == FAILURE)
    cJSON_AddStringToObject(res, "message", "Gizmo ns/g: spec.size cannot be expressed in v1");
  cJSON *objs = cJSON_Duplicate(json_get(body, "request.objects"), 1);
  cJSON *o;
  cJSON_ArrayForEach(o, objs)
  {
    cJSON_ReplaceItemInObject(o, "apiVersion",
                              cJSON_CreateString(m == WRONG_VERSION ? "example.com/v9" : json_get_str(body, "request.desiredAPIVersion")));
    if(m == RENAME)
      cJSON_ReplaceItemInObject(json_get_mut(o, "metadata"), "name", cJSON_CreateString("renamed"));
    if(m == META) {
      cJSON *meta = json_get_mut(o, "metadata");
      cJSON_ReplaceItemInObject(meta, "resourceVersion", cJSON_CreateString("999"));
      cJSON_AddStringToObject(meta, "generateName", "sneaky-");
      cJSON_DeleteItemFromObject(meta, "labels");
      cJSON_AddItemToObject(meta, "labels", tj("{\"converted\":\"yes\"}"));
      cJSON_AddItemToObject(meta, "annotations", tj("{\"note\":\"kept\"}"));
    }
  }
  if(m == DROP_ONE)
    cJSON_DeleteItemFromArray(objs, 0);
  cJSON_AddItemToObject(r, "convertedObjects", objs);
  if(m == STATUS_500) {
    *status = 500;
    cJSON_Delete(out);
    return strdup("boom");
  }
  char *s = cJSON_PrintUnformatted(out);
  char *copy = strdup(s);
  cJSON_free(s);
  cJSON_Delete(out);
  return copy;
}

static void gizmo_crd(const struct fw *f, const char *strategy)
{
  char *crd = NULL;
  const char *schema = "{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
                       "\"x-kubernetes-preserve-unknown-fields\":true}}}}";
  int n;
  if(!strcmp(strategy, "None"))
    n = asprintf(&crd,
                 "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"gizmos.example.com\"},"
                 "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gizmos\",\"kind\":\"Gizmo\"},"
                 "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":false,\"schema\":%s},"
                 "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":%s}]}}",
                 schema, schema);
  else
    n = asprintf(&crd,
                 "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"gizmos.example.com\"},"
                 "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gizmos\",\"kind\":\"Gizmo\"},"
                 "\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                 "\"clientConfig\":{\"url\":\"https://localhost:%d/convert\",\"caBundle\":\"%s\"}}},"
                 "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":false,\"schema\":%s},"
                 "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":%s}]}}",
                 f->port, f->ca_bundle, schema, schema);
  cr_assert_gt(n, 0);
  cJSON *c = tj(crd);
  free(crd);
  struct ls_crd_info info;
  cJSON *st = crd_register(c, &info);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  cJSON_Delete(c);
}

static cJSON *gizmo(const char *version, const char *name)
{
  char buf[512];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"example.com/%s\",\"kind\":\"Gizmo\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\","
           "\"uid\":\"u-%s\",\"resourceVersion\":\"7\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"size\":3}}",
           version, name, name);
  return tj(buf);
}

static cJSON *convert_gizmos(enum mode m, int n, cJSON **objs, struct fw *f)
{
  fw_start(f, conv_respond, &m);
  gizmo_crd(f, "Webhook");
  cJSON *st = crd_convert("example.com", "gizmos", objs, (size_t)n, "v1");
  return st;
}

static void expect_failure(enum mode m, int n, const char *message)
{
  cJSON *objs[2] = { gizmo("v1alpha1", "g"), gizmo("v1alpha1", "h") };
  cJSON *before = cJSON_Duplicate(objs[0], 1);
  struct fw f;
  cJSON *st = convert_gizmos(m, n, objs, &f);
  cr_assert_not_null(st, "mode %d accepted", m);
  cr_assert_eq(json_get(st, "code")->valueint, 500);
  char *want = NULL;
  const char *at = strstr(message, "%UID%");
  if(at)
    cr_assert_gt(asprintf(&want, "%.*s%s%s", (int)(at - message), message, json_get_str(fw_body(&f, 0), "request.uid"), at + 5), 0);
  else
    want = strdup(message);
  cr_assert_str_eq(json_get_str(st, "message"), want);
  cr_assert(json_equal(objs[0], before), "nothing changes on failure");
  free(want);
  cJSON_Delete(st);
  cJSON_Delete(before);
  for(int i = 0; i < 2; i++)
    cJSON_Delete(objs[i]);
  fw_stop(&f);
}

LTest(apiserver_conversion, the_review_sent_and_an_answer_checked_as_kube_does)
{
  cJSON *objs[3] = { gizmo("v1alpha1", "g"), gizmo("v1", "h"), gizmo("v1alpha1", "i") };
  struct fw f;
  cJSON *st = convert_gizmos(OK, 3, objs, &f);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  cr_assert_eq(fw_count(&f), 1);
  cr_assert_str_eq(fw_path(&f, 0), "/convert?timeout=30s");
  const cJSON *b = fw_body(&f, 0);
  cr_assert_str_eq(json_get_str(b, "apiVersion"), "apiextensions.k8s.io/v1");
  cr_assert_str_eq(json_get_str(b, "kind"), "ConversionReview");
  cr_assert_eq(strlen(json_get_str(b, "request.uid")), 36);
  cr_assert_str_eq(json_get_str(b, "request.desiredAPIVersion"), "example.com/v1");
  cr_assert_null(json_get(b, "response"));
  const cJSON *sent = json_get(b, "request.objects");
  cr_assert_eq(cJSON_GetArraySize(sent), 2, "only objects not already in v1 are sent");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(sent, 0), "metadata.name"), "g");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(sent, 1), "metadata.name"), "i");
  for(int i = 0; i < 3; i++) {
    cr_assert_str_eq(json_get_str(objs[i], "apiVersion"), "example.com/v1");
    cJSON_Delete(objs[i]);
  }
  /* converting to the version they are in calls nobody */
  cJSON *one = gizmo("v1", "j");
  cr_assert_null(crd_convert("example.com", "gizmos", &one, 1, "v1"));
  cr_assert_eq(fw_count(&f), 1);
  cJSON_Delete(one);
  fw_stop(&f);
}

LTest(apiserver_conversion, metadata_other_than_labels_and_annotations_is_restored)
{
  cJSON *o = gizmo("v1alpha1", "g");
  struct fw f;
  cJSON *st = convert_gizmos(META, 1, &o, &f);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  cr_assert_str_eq(json_get_str(o, "metadata.resourceVersion"), "7");
  cr_assert_null(json_get(o, "metadata.generateName"));
  cr_assert_str_eq(json_get_str(o, "metadata.labels.converted"), "yes");
  cr_assert_null(json_get(o, "metadata.labels.a"));
  cr_assert_str_eq(json_get_str(o, "metadata.annotations.note"), "kept");
  cJSON_Delete(o);
  fw_stop(&f);
}

LTest(apiserver_conversion, bad_answers_fail_the_whole_conversion)
{
  expect_failure(BAD_UID, 1, "conversion webhook for example.com/v1alpha1, Kind=Gizmo failed: expected response.uid=\"%UID%\", got \"other\"");
  expect_failure(FAILURE, 1, "conversion webhook for example.com/v1alpha1, Kind=Gizmo failed: Gizmo ns/g: spec.size cannot be expressed in v1");
  expect_failure(DROP_ONE, 2, "conversion webhook for example.com/v1alpha1, Kind=Gizmo returned 1 objects, expected 2");
  expect_failure(WRONG_VERSION, 1,
                 "conversion webhook for example.com/v1alpha1, Kind=Gizmo returned invalid object: invalid groupVersion "
                 "(expected example.com/v1, received example.com/v9)");
  expect_failure(RENAME, 2,
                 "conversion webhook for example.com/v1alpha1, Kind=Gizmo returned invalid converted object at index 1: "
                 "must have the same name: g != renamed");
  expect_failure(STATUS_500, 1,
                 "conversion webhook for example.com/v1alpha1, Kind=Gizmo failed: an error on the server (\"boom\") has "
                 "prevented the request from succeeding");
}

LTest(apiserver_conversion, strategy_none_rewrites_the_api_version)
{
  gizmo_crd(NULL, "None");
  cJSON *o = gizmo("v1alpha1", "g");
  cJSON *want = cJSON_Duplicate(o, 1);
  cJSON_ReplaceItemInObject(want, "apiVersion", cJSON_CreateString("example.com/v1"));
  cr_assert_null(crd_convert("example.com", "gizmos", &o, 1, "v1"));
  cr_assert(json_equal(o, want));
  cJSON_Delete(want);
  cJSON_Delete(o);
}

/* ---- end to end: the real API server, webhook and kubectl (tests/cluster/harness.h) ---- */

static struct cl CL;
static void cl_up(void)
{
  cl_start(&CL, CL_WEBHOOK);
}
static void cl_down(void)
{
  cl_stop(&CL);
}

TestSuite(apiserver_conversion_cluster, .init = cl_up, .fini = cl_down, .timeout = 120);

Test(apiserver_conversion_cluster, kubectl_reads_both_versions_and_the_conversion_failure)
{
  char *out;
  const char *f = lw_cl_file(&CL, "old.yaml",
                             "apiVersion: pgcopydb.io/v1alpha1\nkind: Migration\nmetadata: {name: old, namespace: default}\n"
                             "spec: {sourceSecret: src, targetSecret: dst, tableJobs: 3}\n");
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "create -f %s", f), 0, "%s", out);
  free(out);
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "get migrations.v1alpha1.pgcopydb.io old -o json"), 0, "%s", out);
  char *json = strchr(out, '{');
  cJSON *a = tj(json);
  cr_assert_str_eq(json_get_str(a, "apiVersion"), "pgcopydb.io/v1alpha1");
  cr_assert_str_eq(json_get_str(a, "spec.sourceSecret"), "src");
  cr_assert_eq(json_get(a, "spec.tableJobs")->valueint, 3);
  cJSON_Delete(a);
  free(out);
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "get migrations.v1.pgcopydb.io old -o json"), 0, "%s", out);
  cJSON *b = tj(out);
  cr_assert_str_eq(json_get_str(b, "spec.source.connectionSecretRef.name"), "src");
  cr_assert_eq(json_get(b, "spec.clone.tableJobs")->valueint, 3);
  cJSON_Delete(b);
  free(out);
  lw_cl_kill(&CL, "webhook");
  cr_assert_neq(cl_kubectl(&CL, "admin", &out, "get migrations.v1alpha1.pgcopydb.io old"), 0);
  cr_assert(strstr(out, "Error from server: conversion webhook for pgcopydb.io/v1, Kind=Migration failed: Post "
                        "\"https://godwit-webhook.godwit-system.svc:443/convert?timeout=30s\": dial tcp 127.0.0.1:"),
            "%s", out);
  free(out);
  /* the storage version needs no conversion */
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "get migrations.v1.pgcopydb.io old -o name"), 0, "%s", out);
  free(out);
}
