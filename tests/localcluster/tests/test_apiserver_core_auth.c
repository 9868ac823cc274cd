/* test_apiserver_core_auth.c: authentication as kube-apiserver does it: static tokens, 401 for
 * anonymous requests, impersonation for system:masters only, TokenRequest tokens bound to a
 * Pod (user system:serviceaccount:NS:NAME with the Pod's name and uid in extra), invalid once
 * the Pod is gone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

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

TestSuite(apiserver_auth, .init = start, .fini = stop, .timeout = 120);

#define REVIEW "/apis/authentication.k8s.io/v1/selfsubjectreviews"
#define REVIEW_BODY "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}"

static bool has(const cJSON *arr, const char *s)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, arr)
  {
    if(cJSON_IsString(x) && !strcmp(x->valuestring, s))
      return true;
  }
  return false;
}

Test(apiserver_auth, anonymous_requests_are_unauthorized)
{
  struct ra anon;
  ra_init(&anon, &C, "");
  struct ra_resp r;
  ra_call(&anon, "GET", "/api/v1/namespaces", NULL, NULL, &r);
  cr_assert_eq(r.code, 401);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Unauthorized");
  cr_assert_str_eq(ra_str(r.json, "message"), "Unauthorized");
  ra_resp_free(&r);
  ra_token(&anon, "not-a-token");
  ra_call(&anon, "GET", "/api/v1/namespaces", NULL, NULL, &r);
  cr_assert_eq(r.code, 401);
  ra_resp_free(&r);
  ra_token(&anon, NULL);
  ra_call(&anon, "GET", "/version", NULL, NULL, &r);
  cr_assert_eq(r.code, 200, "/version is public");
  ra_resp_free(&r);
  ra_call(&anon, "GET", "/readyz", NULL, NULL, &r);
  cr_assert_eq(r.code, 200);
  ra_resp_free(&r);
}

Test(apiserver_auth, token_users_and_their_groups)
{
  struct ra alice;
  ra_init(&alice, &C, "alice");
  cJSON *rv = ra_ok(&alice, "POST", REVIEW, REVIEW_BODY, 201);
  cr_assert_str_eq(ra_str(rv, "status.userInfo.username"), "alice");
  const cJSON *g = json_get(rv, "status.userInfo.groups");
  cr_assert(has(g, "db-approvers") && has(g, "system:authenticated"));
  cJSON_Delete(rv);
}

Test(apiserver_auth, masters_may_impersonate)
{
  struct ra imp;
  ra_init(&imp, &C, "admin");
  ra_header(&imp, "Impersonate-User: alice");
  ra_header(&imp, "Impersonate-Group: db-approvers");
  ra_header(&imp, "Impersonate-Group: team-a");
  ra_header(&imp, "Impersonate-Extra-authentication.kubernetes.io%2fpod-name: runner-1");
  cJSON *rv = ra_ok(&imp, "POST", REVIEW, REVIEW_BODY, 201);
  cr_assert_str_eq(ra_str(rv, "status.userInfo.username"), "alice");
  const cJSON *g = json_get(rv, "status.userInfo.groups");
  cr_assert(has(g, "db-approvers") && has(g, "team-a") && has(g, "system:authenticated"));
  cr_assert(!has(g, "system:masters"), "the impersonator's groups are not kept");
  const cJSON *extra = json_get(rv, "status.userInfo.extra");
  cr_assert(has(cJSON_GetObjectItem(extra, "authentication.kubernetes.io/pod-name"), "runner-1"));
  cJSON_Delete(rv);
  struct ra bob;
  ra_init(&bob, &C, "bob");
  ra_header(&bob, "Impersonate-User: alice");
  struct ra_resp r;
  ra_call(&bob, "GET", "/api/v1/namespaces", NULL, NULL, &r);
  cr_assert_eq(r.code, 403);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Forbidden");
  cr_assert_str_eq(ra_str(r.json, "message"),
                   "users \"alice\" is forbidden: User \"bob\" cannot impersonate resource "
                   "\"users\" in API group \"\" at the cluster scope");
  ra_resp_free(&r);
}

static char *request_token(const char *pod_name, const char *pod_uid, long *code)
{
  char body[512];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{"
           "\"expirationSeconds\":3600,\"boundObjectRef\":{\"apiVersion\":\"v1\",\"kind\":"
           "\"Pod\",\"name\":\"%s\",\"uid\":\"%s\"}}}", pod_name, pod_uid);
  struct ra_resp r;
  ra_call(&A, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", NULL, body, &r);
  *code = r.code;
  char *tok = r.code == 201 ? strdup(ra_str(r.json, "status.token")) : NULL;
  if(r.code == 201)
    cr_assert(*ra_str(r.json, "status.expirationTimestamp"));
  ra_resp_free(&r);
  return tok;
}

Test(apiserver_auth, bound_tokens_carry_the_pod_and_die_with_it)
{
  cJSON *pod = ra_ok(&A, "POST", "/api/v1/namespaces/default/pods",
                      "{\"metadata\":{\"name\":\"runner\"},\"spec\":{\"containers\":[{\"name\":"
                      "\"c\",\"image\":\"busybox\"}]}}", 201);
  long code;
  char *tok = request_token("runner", ra_str(pod, "metadata.uid"), &code);
  cr_assert_eq(code, 201);
  struct ra sa;
  ra_init(&sa, &C, "");
  ra_token(&sa, tok);
  cJSON *rv = ra_ok(&sa, "POST", REVIEW, REVIEW_BODY, 201);
  cr_assert_str_eq(ra_str(rv, "status.userInfo.username"), "system:serviceaccount:default:default");
  const cJSON *g = json_get(rv, "status.userInfo.groups");
  cr_assert(has(g, "system:serviceaccounts") && has(g, "system:serviceaccounts:default"));
  const cJSON *extra = json_get(rv, "status.userInfo.extra");
  cr_assert(has(cJSON_GetObjectItem(extra, "authentication.kubernetes.io/pod-name"), "runner"));
  cr_assert(has(cJSON_GetObjectItem(extra, "authentication.kubernetes.io/pod-uid"),
                ra_str(pod, "metadata.uid")));
  cJSON_Delete(rv);
  cJSON_Delete(ra_ok(&A, "DELETE", "/api/v1/namespaces/default/pods/runner", NULL, 200));
  struct ra_resp r;
  ra_call(&sa, "POST", REVIEW, NULL, REVIEW_BODY, &r);
  cr_assert_eq(r.code, 401, "the token dies with its pod");
  ra_resp_free(&r);
  free(tok);
  cJSON_Delete(pod);
}

Test(apiserver_auth, token_requests_are_checked)
{
  long code;
  free(request_token("nopod", "", &code));
  cr_assert_eq(code, 404, "the pod must exist");
  cJSON *pod = ra_ok(&A, "POST", "/api/v1/namespaces/default/pods",
                      "{\"metadata\":{\"name\":\"p2\"},\"spec\":{\"containers\":[{\"name\":"
                      "\"c\",\"image\":\"busybox\"}]}}", 201);
  free(request_token("p2", "00000000-0000-0000-0000-000000000000", &code));
  cr_assert_eq(code, 409, "the uid must match");
  struct ra_resp r;
  ra_call(&A, "POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token", NULL,
          "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\",\"name\":\"p2\"}}}", &r);
  cr_assert_eq(r.code, 404, "the service account must exist");
  ra_resp_free(&r);
  ra_call(&A, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", NULL,
          "{\"spec\":{\"expirationSeconds\":60,\"boundObjectRef\":{\"kind\":\"Pod\",\"name\":"
          "\"p2\"}}}", &r);
  cr_assert_eq(r.code, 422, "at least ten minutes: %s", r.body);
  ra_resp_free(&r);
  cJSON_Delete(pod);
}
