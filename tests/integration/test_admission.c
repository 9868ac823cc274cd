/* Whole AdmissionReview and ConversionReview exchanges over HTTPS with the real webhook. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "harness.h"
#include "json.h"

static struct wh w;
static void up(void) { wh_start(&w, NULL); }
static void down(void) { wh_stop(&w); }

#define G "migration.podmotion.io"
#define POLICY_OBJ(spec) \
  "{\"apiVersion\":\"" G "/v1beta1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\"," \
  "\"namespace\":\"default\",\"uid\":\"6a1f0e2c-0000-4000-8000-000000000001\"},\"spec\":" spec "}"

static char *review(const char *op, const char *obj, const char *old, const char *version)
{
  return wh_admission_review("705ab4f5-6393-11e8-b7cc-42010a800002", G, version, "MigrationPolicy",
                             "migrationpolicies", op, "p", "default", "alice",
                             "[\"db-approvers\",\"system:authenticated\"]", obj, old, 0);
}

static cJSON *decode_patch(const cJSON *resp)
{
  const char *b64 = json_get_str(resp, "response.patch");
  cr_assert_not_null(b64, "no patch");
  unsigned char buf[8192];
  int n = EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)strlen(b64));
  cr_assert_gt(n, 0);
  while(n > 0 && buf[n - 1] == '\0')
    n--;
  buf[n] = '\0';
  cJSON *p = cJSON_Parse((char *)buf);
  cr_assert(cJSON_IsArray(p), "patch is not a JSON array: %s", buf);
  return p;
}

Test(admission, validate_denial_is_whole_and_exact, .init = up, .fini = down)
{
  char *body = review("CREATE", POLICY_OBJ("{\"podSelector\":{},\"maxConcurrent\":0}"), NULL,
                      "v1beta1");
  cJSON *r = wh_review(&w, "/validate?timeout=10s", body);
  cr_assert_str_eq(json_get_str(r, "apiVersion"), "admission.k8s.io/v1");
  cr_assert_str_eq(json_get_str(r, "kind"), "AdmissionReview");
  cr_assert_str_eq(json_get_str(r, "response.uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
  cr_assert(cJSON_IsFalse(json_get(r, "response.allowed")));
  cr_assert_eq(json_get(r, "response.status.code")->valueint, 422);
  cr_assert_str_eq(json_get_str(r, "response.status.reason"), "Invalid");
  cr_assert_str_eq(json_get_str(r, "response.status.message"),
                   "MigrationPolicy \"p\" is invalid: spec.maxConcurrent: must be between 1 and "
                   "100, got 0");
  const cJSON *causes = json_get(r, "response.status.details.causes");
  cr_assert_eq(cJSON_GetArraySize(causes), 1);
  const cJSON *c = cJSON_GetArrayItem(causes, 0);
  cr_assert_str_eq(json_get_str(c, "field"), "spec.maxConcurrent");
  cr_assert_str_eq(json_get_str(c, "reason"), "FieldValueInvalid");
  cr_assert_str_eq(json_get_str(r, "response.status.details.kind"), "MigrationPolicy");
  cr_assert_str_eq(json_get_str(r, "response.status.details.group"), G);
  cr_assert_null(json_get(r, "response.patch"));
  cJSON_Delete(r);
  free(body);
}

Test(admission, mutate_returns_a_base64_json_patch_that_is_idempotent, .init = up, .fini = down)
{
  char *body = review("CREATE", POLICY_OBJ("{\"podSelector\":{}}"), NULL, "v1beta1");
  cJSON *r = wh_review(&w, "/mutate", body);
  cr_assert(cJSON_IsTrue(json_get(r, "response.allowed")));
  cr_assert_str_eq(json_get_str(r, "response.patchType"), "JSONPatch");
  cJSON *patch = decode_patch(r);
  char *ps = cJSON_PrintUnformatted(patch);
  cr_assert(strstr(ps, "\"/spec/freezeBudget\""), "%s", ps);
  cr_assert(strstr(ps, "\"/spec/maxConcurrent\""), "%s", ps);
  /* Reinvocation: the patched object yields no further patch. */
  char *again = review("CREATE", POLICY_OBJ("{\"podSelector\":{},\"allowedModes\":[\"PreCopy\","
                                            "\"StopAndCopy\"],\"freezeBudget\":\"1s\","
                                            "\"maxConcurrent\":1}"),
                       NULL, "v1beta1");
  cJSON *r2 = wh_review(&w, "/mutate", again);
  cr_assert(cJSON_IsTrue(json_get(r2, "response.allowed")));
  cr_assert_null(json_get(r2, "response.patch"), "second pass patched again");
  cJSON_free(ps);
  cJSON_Delete(patch);
  cJSON_Delete(r);
  cJSON_Delete(r2);
  free(body);
  free(again);
}

Test(admission, deprecated_version_is_warned, .init = up, .fini = down)
{
  char *body = review("CREATE",
                      "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\","
                      "\"metadata\":{\"name\":\"p\"},\"spec\":{\"selector\":{}}}",
                      NULL, "v1alpha1");
  cJSON *r = wh_review(&w, "/validate", body);
  cr_assert(cJSON_IsTrue(json_get(r, "response.allowed")));
  const cJSON *warn = json_get(r, "response.warnings");
  cr_assert_eq(cJSON_GetArraySize(warn), 1);
  cr_assert_str_eq(cJSON_GetArrayItem(warn, 0)->valuestring,
                   G "/v1alpha1 MigrationPolicy is deprecated; use " G "/v1beta1 MigrationPolicy");
  cJSON_Delete(r);
  free(body);
}

Test(admission, delete_with_null_object_is_allowed, .init = up, .fini = down)
{
  char *body = review("DELETE", NULL, POLICY_OBJ("{\"podSelector\":{}}"), "v1beta1");
  cJSON *r = wh_review(&w, "/validate", body);
  cr_assert(cJSON_IsTrue(json_get(r, "response.allowed")));
  cr_assert_str_eq(json_get_str(r, "response.uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
  cr_assert_null(json_get(r, "response.status"));
  cJSON_Delete(r);
  free(body);
}

Test(admission, foreign_kinds_pass_untouched_and_are_counted, .init = up, .fini = down)
{
  char *body = wh_admission_review("u-2", "apps", "v1", "Deployment", "deployments", "CREATE",
                                   "web", "default", "alice", "[]",
                                   "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                   "\"metadata\":{\"name\":\"web\"},\"spec\":{}}",
                                   NULL, 0);
  cJSON *r = wh_review(&w, "/validate", body);
  cr_assert(cJSON_IsTrue(json_get(r, "response.allowed")));
  cr_assert_null(json_get(r, "response.patch"));
  cJSON_Delete(r);
  free(body);
  struct wh_reply m;
  wh_get(&w, "/metrics", &m);
  cr_assert(strstr(m.body, "godwit_webhook_requests_total{endpoint=\"validate\",kind=\"other\","
                           "operation=\"CREATE\",verdict=\"ignored\"} 1"),
            "%s", m.body);
  char build[256];
  snprintf(build, sizeof(build), "godwit_build_info{version=\"%s\",commit=\"%s\","
           "build_date=\"%s\"} 1\n", gw_version(), gw_commit(), gw_build_date());
  cr_assert(strstr(m.body, build), "no %s in:\n%s", build, m.body);
  wh_reply_free(&m);
}

Test(admission, dry_run_is_answered_the_same, .init = up, .fini = down)
{
  char *body = wh_admission_review("u-3", G, "v1beta1", "MigrationPolicy", "migrationpolicies",
                                   "CREATE", "p", "default", "alice", "[]",
                                   POLICY_OBJ("{\"podSelector\":{},\"maxConcurrent\":0}"), NULL, 1);
  cJSON *r = wh_review(&w, "/validate", body);
  cr_assert(cJSON_IsFalse(json_get(r, "response.allowed")));
  cr_assert_eq(json_get(r, "response.status.code")->valueint, 422);
  cJSON_Delete(r);
  free(body);
}

static const char *conv_obj(int i, char *buf, size_t n)
{
  snprintf(buf, n,
           "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":"
           "\"p%d\",\"namespace\":\"ns\",\"uid\":\"u%d\",\"resourceVersion\":\"%d\"},"
           "\"spec\":{\"selector\":{\"app\":\"a%d\"},\"modes\":[\"PreCopy\"],\"maxFreeze\":\"%dms\"}}",
           i, i, 100 + i, i, 100 + i);
  return buf;
}

Test(conversion, hundred_objects_keep_order_count_and_metadata, .init = up, .fini = down)
{
  char *body = malloc(1 << 20), obj[512];
  size_t off = (size_t)sprintf(body, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
                                     "\"request\":{\"uid\":\"c-1\",\"desiredAPIVersion\":\"" G "/v1beta1\","
                                     "\"objects\":[");
  for(int i = 0; i < 100; i++)
    off += (size_t)sprintf(body + off, "%s%s", i ? "," : "", conv_obj(i, obj, sizeof(obj)));
  sprintf(body + off, "]},\"response\":{\"uid\":\"\",\"convertedObjects\":null,\"result\":{\"metadata\":{}}}}");
  cJSON *r = wh_review(&w, "/convert?timeout=30s", body);
  cr_assert_str_eq(json_get_str(r, "apiVersion"), "apiextensions.k8s.io/v1");
  cr_assert_str_eq(json_get_str(r, "kind"), "ConversionReview");
  cr_assert_str_eq(json_get_str(r, "response.uid"), "c-1");
  cr_assert_str_eq(json_get_str(r, "response.result.status"), "Success");
  const cJSON *objs = json_get(r, "response.convertedObjects");
  cr_assert_eq(cJSON_GetArraySize(objs), 100);
  int i = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, objs)
  {
    char name[16], rv[16], app[16], freeze[16];
    snprintf(name, sizeof(name), "p%d", i);
    snprintf(rv, sizeof(rv), "%d", 100 + i);
    snprintf(app, sizeof(app), "a%d", i);
    snprintf(freeze, sizeof(freeze), "%dms", 100 + i);
    cr_assert_str_eq(json_get_str(o, "apiVersion"), G "/v1beta1");
    cr_assert_str_eq(json_get_str(o, "metadata.name"), name, "order kept");
    cr_assert_str_eq(json_get_str(o, "metadata.resourceVersion"), rv, "metadata untouched");
    cr_assert_str_eq(json_get_str(o, "spec.podSelector.matchLabels.app"), app);
    cr_assert_str_eq(json_get_str(o, "spec.freezeBudget"), freeze);
    i++;
  }
  cJSON_Delete(r);
  free(body);
}

Test(conversion, failure_names_the_object_and_field, .init = up, .fini = down)
{
  const char *body =
    "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\",\"request\":{"
    "\"uid\":\"c-2\",\"desiredAPIVersion\":\"" G "/v1alpha1\",\"objects\":["
    "{\"apiVersion\":\"" G "/v1beta1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"ok\","
    "\"namespace\":\"ns\"},\"spec\":{\"podSelector\":{}}},"
    "{\"apiVersion\":\"" G "/v9\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"bad\","
    "\"namespace\":\"ns\"},\"spec\":{}}]}}";
  cJSON *r = wh_review(&w, "/convert", body);
  cr_assert_str_eq(json_get_str(r, "response.uid"), "c-2");
  cr_assert_str_eq(json_get_str(r, "response.result.status"), "Failure");
  const char *msg = json_get_str(r, "response.result.message");
  cr_assert(strstr(msg, "MigrationPolicy ns/bad") && strstr(msg, "apiVersion"), "%s", msg);
  cJSON_Delete(r);
}
