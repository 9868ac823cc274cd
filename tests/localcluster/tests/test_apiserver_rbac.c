/* test_apiserver_rbac.c: the local API server's RBAC as kube-apiserver's: 403 Forbidden in
 * kube's words for resource, named, subresource, cluster-scoped and non-resource requests;
 * Role/ClusterRole rules (apiGroups, resources, "*" and "* /status" forms, resourceNames, verbs)
 * granted through RoleBindings and ClusterRoleBindings to users, groups and service accounts;
 * ClusterRole aggregation into the built-in admin/edit/view; the escalate and bind checks on
 * writes of roles and bindings; the access reviews kubectl auth can-i uses; impersonation
 * judged by RBAC; the rights up gives (alice and bob edit default, the controller runs as its
 * ServiceAccount under manifests/rbac-controller.yaml). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rawapi.h"

static struct cl C;
static struct ra A, BOB;

static void start(void)
{
  cl_start(&C, CL_NO_CRDS);
  ra_init(&A, &C, "admin");
  ra_init(&BOB, &C, "bob");
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_rbac, .init = start, .fini = stop, .timeout = 180);

#define RBAC "/apis/rbac.authorization.k8s.io/v1"
#define AUTHZ "/apis/authorization.k8s.io/v1"

/* A call that must answer 403; returns the Status message (static buffer). */
static const char *forbidden(struct ra *a, const char *method, const char *path, const char *body)
{
  static char msg[4096];
  struct ra_resp r;
  ra_call(a, method, path, NULL, body, &r);
  cr_assert_eq(r.code, 403, "%s %s: %ld %s", method, path, r.code, r.body);
  cr_assert_str_eq(ra_str(r.json, "reason"), "Forbidden");
  cr_assert_eq(ra_num(r.json, "code"), 403);
  snprintf(msg, sizeof(msg), "%s", ra_str(r.json, "message"));
  ra_resp_free(&r);
  return msg;
}

static void ok(struct ra *a, const char *method, const char *path, const char *body, long code)
{
  cJSON_Delete(ra_ok(a, method, path, body, code));
}

static void make_namespace(const char *ns)
{
  char body[256];
  snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                               "{\"name\":\"%s\"}}", ns);
  ok(&A, "POST", "/api/v1/namespaces", body, 201);
}

/* A RoleBinding (ns set) or ClusterRoleBinding of role (kind ClusterRole or Role) to subjects
 * (a JSON array), written by who with the answer code wanted. */
static void bind_as(struct ra *who, long code, const char *ns, const char *name, const char *kind,
                    const char *role, const char *subjects)
{
  char path[300], body[2048];
  if(ns)
    snprintf(path, sizeof(path), RBAC "/namespaces/%s/rolebindings", ns);
  else
    snprintf(path, sizeof(path), RBAC "/clusterrolebindings");
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\",\"metadata\":{"
           "\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
           "\"%s\",\"name\":\"%s\"},\"subjects\":%s}",
           ns ? "RoleBinding" : "ClusterRoleBinding", name, kind, role, subjects);
  ok(who, "POST", path, body, code);
}

#define BOB_SUBJECT "[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"bob\"}]"

/* A ClusterRole (ns NULL) or Role with the rules (a JSON array) and labels (JSON or NULL). */
static void role(struct ra *who, long code, const char *ns, const char *name, const char *rules,
                 const char *labels)
{
  char path[300], body[4096];
  if(ns)
    snprintf(path, sizeof(path), RBAC "/namespaces/%s/roles", ns);
  else
    snprintf(path, sizeof(path), RBAC "/clusterroles");
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\",\"metadata\":{"
           "\"name\":\"%s\",\"labels\":%s},\"rules\":%s}",
           ns ? "Role" : "ClusterRole", name, labels ? labels : "{}", rules);
  ok(who, "POST", path, body, code);
}

Test(apiserver_rbac, refusals_are_kubes_forbidden_in_its_words)
{
  make_namespace("team");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/namespaces/team/pods", NULL),
                   "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group "
                   "\"\" in the namespace \"team\"");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/namespaces/team/secrets/db", NULL),
                   "secrets \"db\" is forbidden: User \"bob\" cannot get resource \"secrets\" in "
                   "API group \"\" in the namespace \"team\"");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/namespaces/team/pods/p/log", NULL),
                   "pods \"p\" is forbidden: User \"bob\" cannot get resource \"pods/log\" in API "
                   "group \"\" in the namespace \"team\"");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/nodes?watch=true", NULL),
                   "nodes is forbidden: User \"bob\" cannot watch resource \"nodes\" in API group "
                   "\"\" at the cluster scope");
  cr_expect_str_eq(forbidden(&BOB, "DELETE", RBAC "/clusterroles", NULL),
                   "clusterroles.rbac.authorization.k8s.io is forbidden: User \"bob\" cannot "
                   "deletecollection resource \"clusterroles\" in API group "
                   "\"rbac.authorization.k8s.io\" at the cluster scope");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/metrics", NULL),
                   "forbidden: User \"bob\" cannot get path \"/metrics\"");
  /* a namespace is in itself; what the path names is judged before it is looked up */
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/namespaces/team", NULL),
                   "namespaces \"team\" is forbidden: User \"bob\" cannot get resource "
                   "\"namespaces\" in API group \"\" in the namespace \"team\"");
  cr_expect_str_eq(forbidden(&BOB, "GET", "/apis/nothing.example.com/v1/things", NULL),
                   "things.nothing.example.com is forbidden: User \"bob\" cannot list resource "
                   "\"things\" in API group \"nothing.example.com\" at the cluster scope");
  struct ra_resp r;
  ra_call(&A, "GET", "/apis/nothing.example.com/v1/things", NULL, NULL, &r);
  cr_expect_eq(r.code, 404, "admin may, and finds nothing there");
  ra_resp_free(&r);
  /* the details name the resource, its group and the object */
  ra_call(&BOB, "GET", RBAC "/clusterroles/edit", NULL, NULL, &r);
  cr_assert_eq(r.code, 403);
  cr_expect_str_eq(ra_str(r.json, "details.name"), "edit");
  cr_expect_str_eq(ra_str(r.json, "details.group"), "rbac.authorization.k8s.io");
  cr_expect_str_eq(ra_str(r.json, "details.kind"), "clusterroles");
  ra_resp_free(&r);
  /* discovery and the reviews are every authenticated user's */
  ok(&BOB, "GET", "/apis", NULL, 200);
  ok(&BOB, "GET", "/api/v1", NULL, 200);
}

Test(apiserver_rbac, rules_grant_through_bindings)
{
  make_namespace("team");
  role(&A, 201, "team", "reader",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"verbs\":[\"get\",\"list\"]},"
       "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"app\"],"
       "\"verbs\":[\"get\",\"watch\",\"list\"]},"
       "{\"apiGroups\":[\"batch\"],\"resources\":[\"*/status\"],\"verbs\":[\"*\"]}]", NULL);
  forbidden(&BOB, "GET", "/api/v1/namespaces/team/configmaps", NULL);
  bind_as(&A, 201, "team", "bob-reads", "Role", "reader", BOB_SUBJECT);
  ok(&BOB, "GET", "/api/v1/namespaces/team/configmaps", NULL, 200);
  /* the verbs are the rule's only */
  forbidden(&BOB, "DELETE", "/api/v1/namespaces/team/configmaps/x", NULL);
  /* resourceNames: that Secret, not another, and not the collection */
  struct ra_resp r;
  ra_call(&BOB, "GET", "/api/v1/namespaces/team/secrets/app", NULL, NULL, &r);
  cr_expect_eq(r.code, 404, "allowed, and not there: %ld", r.code);
  ra_resp_free(&r);
  forbidden(&BOB, "GET", "/api/v1/namespaces/team/secrets/other", NULL);
  forbidden(&BOB, "GET", "/api/v1/namespaces/team/secrets", NULL);
  /* ... but a list or watch that selects it by name, as kubectl get -w NAME does */
  ok(&BOB, "GET", "/api/v1/namespaces/team/secrets?fieldSelector=metadata.name%3Dapp", NULL, 200);
  /* "*\/status": every status subresource of the group, not the objects */
  ra_call(&BOB, "GET", "/apis/batch/v1/namespaces/team/jobs/j/status", NULL, NULL, &r);
  cr_expect_eq(r.code, 404, "allowed, and not there: %ld", r.code);
  ra_resp_free(&r);
  forbidden(&BOB, "GET", "/apis/batch/v1/namespaces/team/jobs/j", NULL);
  /* a Role grants in its namespace only */
  forbidden(&BOB, "GET", "/api/v1/namespaces/kube-system/configmaps", NULL);
  /* a group subject, a ClusterRole everywhere through a ClusterRoleBinding */
  role(&A, 201, NULL, "node-reader",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],\"verbs\":[\"get\",\"list\"]}]", NULL);
  bind_as(&A, 201, NULL, "approvers-read-nodes", "ClusterRole", "node-reader",
          "[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\","
          "\"name\":\"db-approvers\"}]");
  struct ra alice;
  ra_init(&alice, &C, "alice");
  ok(&alice, "GET", "/api/v1/nodes", NULL, 200);
  forbidden(&BOB, "GET", "/api/v1/nodes", NULL);
  /* a ServiceAccount subject (its namespace defaulted to the RoleBinding's) */
  bind_as(&A, 201, "team", "default-sa-reads", "Role", "reader",
          "[{\"kind\":\"ServiceAccount\",\"name\":\"default\"}]");
  struct ra sa;
  ra_init(&sa, &C, "admin");
  ra_header(&sa, "Impersonate-User: system:serviceaccount:team:default");
  ok(&sa, "GET", "/api/v1/namespaces/team/configmaps", NULL, 200);
  ra_init(&sa, &C, "admin");
  ra_header(&sa, "Impersonate-User: system:serviceaccount:kube-system:default");
  forbidden(&sa, "GET", "/api/v1/namespaces/team/configmaps", NULL);
  /* a binding to a missing role: named in the refusal */
  bind_as(&A, 201, "team", "to-nothing", "ClusterRole", "gone", BOB_SUBJECT);
  cr_expect_str_eq(forbidden(&BOB, "GET", "/api/v1/namespaces/team/pods", NULL),
                   "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group "
                   "\"\" in the namespace \"team\": RBAC: clusterrole.rbac.authorization.k8s.io "
                   "\"gone\" not found");
}

static bool role_has_resource(const char *name, const char *resource)
{
  char path[200];
  snprintf(path, sizeof(path), RBAC "/clusterroles/%s", name);
  cJSON *r = ra_ok(&A, "GET", path, NULL, 200);
  bool found = false;
  const cJSON *rule;
  cJSON_ArrayForEach(rule, cJSON_GetObjectItem(r, "rules"))
  {
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(rule, "resources"))
    {
      found = found || !strcmp(x->valuestring, resource);
    }
  }
  cJSON_Delete(r);
  return found;
}

Test(apiserver_rbac, cluster_roles_aggregate_into_admin_edit_and_view)
{
  /* up's users.yaml: bob edits default, through the built-in edit role */
  ok(&BOB, "GET", "/api/v1/namespaces/default/pods", NULL, 200);
  ok(&BOB, "POST", "/api/v1/namespaces/default/configmaps",
     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}", 201);
  forbidden(&BOB, "GET", RBAC "/namespaces/default/roles", NULL);
  cr_expect(role_has_resource("edit", "pods"), "edit has no rule on pods");
  cr_expect(role_has_resource("admin", "roles"), "admin has no rule on roles");
  /* a ClusterRole labelled for view lands in view, and (view is labelled for edit, edit for
   * admin) in edit and admin */
  cr_expect(!role_has_resource("view", "widgets"));
  role(&A, 201, NULL, "widget-viewer",
       "[{\"apiGroups\":[\"example.com\"],\"resources\":[\"widgets\"],\"verbs\":[\"get\"]}]",
       "{\"rbac.authorization.k8s.io/aggregate-to-view\":\"true\"}");
  cr_expect(role_has_resource("view", "widgets"), "view did not aggregate widget-viewer");
  cr_expect(role_has_resource("edit", "widgets"), "edit did not aggregate view's new rules");
  cr_expect(role_has_resource("admin", "widgets"), "admin did not aggregate edit's new rules");
  struct ra_resp r;
  ra_call(&BOB, "GET", "/apis/example.com/v1/namespaces/default/widgets/w", NULL, NULL, &r);
  cr_expect_eq(r.code, 404, "edit does not grant what a view-labelled role adds: %ld", r.code);
  ra_resp_free(&r);
  /* ... and leaves them when removed */
  ok(&A, "DELETE", RBAC "/clusterroles/widget-viewer", NULL, 200);
  cr_expect(!role_has_resource("view", "widgets"), "view kept a removed role's rules");
  cr_expect(!role_has_resource("admin", "widgets"), "admin kept a removed role's rules");
  forbidden(&BOB, "GET", "/apis/example.com/v1/namespaces/default/widgets/w", NULL);
}

Test(apiserver_rbac, writing_roles_and_bindings_needs_the_rights_they_grant)
{
  make_namespace("team");
  bind_as(&A, 201, "team", "bob-admin", "ClusterRole", "admin", BOB_SUBJECT);
  /* what bob holds in team he may grant there */
  role(&BOB, 201, "team", "pod-reader",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]}]", NULL);
  bind_as(&BOB, 201, "team", "alice-reads-pods", "Role", "pod-reader",
          "[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"alice\"}]");
  /* not more */
  struct ra_resp r;
  ra_call(&BOB, "POST", RBAC "/namespaces/team/roles", NULL,
          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":{"
          "\"name\":\"too-much\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\","
          "\"pods\"],\"verbs\":[\"list\",\"watch\",\"escalate\"]}]}", &r);
  cr_assert_eq(r.code, 403, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"),
                   "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"bob\" "
                   "(groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions "
                   "not currently held:\n"
                   "{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"list\" \"watch\" "
                   "\"escalate\"]}\n"
                   "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"escalate\"]}");
  cr_expect_str_eq(ra_str(r.json, "details.kind"), "roles");
  ra_resp_free(&r);
  /* binding to a role whose rules he does not hold */
  ra_call(&BOB, "POST", RBAC "/namespaces/team/rolebindings", NULL,
          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
          "{\"name\":\"bob-root\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
          "\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},\"subjects\":" BOB_SUBJECT "}",
          &r);
  cr_assert_eq(r.code, 403, "%s", r.body);
  cr_expect(strstr(ra_str(r.json, "message"),
                   "rolebindings.rbac.authorization.k8s.io \"bob-root\" is forbidden: user "
                   "\"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC "
                   "permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], "
                   "Verbs:[\"*\"]}") != NULL, "%s", ra_str(r.json, "message"));
  ra_resp_free(&r);
  /* to a role that does not exist: the registry's 404 */
  ra_call(&BOB, "POST", RBAC "/namespaces/team/rolebindings", NULL,
          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
          "{\"name\":\"to-nothing\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
          "\"kind\":\"Role\",\"name\":\"nothing\"},\"subjects\":" BOB_SUBJECT "}", &r);
  cr_expect_eq(r.code, 404, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"),
                   "roles.rbac.authorization.k8s.io \"nothing\" not found");
  ra_resp_free(&r);
  /* bind on that one ClusterRole lets him bind it without holding it; escalate lets him write
   * a role with more than he holds */
  role(&A, 201, NULL, "binder",
       "[{\"apiGroups\":[\"rbac.authorization.k8s.io\"],\"resources\":[\"clusterroles\"],"
       "\"resourceNames\":[\"node-lister\"],\"verbs\":[\"bind\"]},"
       "{\"apiGroups\":[\"rbac.authorization.k8s.io\"],\"resources\":[\"roles\"],"
       "\"verbs\":[\"escalate\"]}]", NULL);
  role(&A, 201, NULL, "node-lister",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],\"verbs\":[\"list\"]}]", NULL);
  bind_as(&A, 201, "team", "bob-binds", "ClusterRole", "binder", BOB_SUBJECT);
  bind_as(&BOB, 201, "team", "alice-nodes", "ClusterRole", "node-lister",
          "[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"alice\"}]");
  role(&BOB, 201, "team", "more-than-bob",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],\"verbs\":[\"delete\"]}]", NULL);
  /* a binding's roleRef never changes */
  ra_call(&A, "PATCH", RBAC "/namespaces/team/rolebindings/alice-nodes",
          "application/merge-patch+json", "{\"roleRef\":{\"name\":\"binder\"}}", &r);
  cr_expect_eq(r.code, 422, "%s", r.body);
  cr_expect(strstr(ra_str(r.json, "message"), "cannot change roleRef") != NULL, "%s", r.body);
  ra_resp_free(&r);
  /* an aggregated ClusterRole is cluster-admin's to write */
  role(&A, 201, NULL, "role-writer",
       "[{\"apiGroups\":[\"rbac.authorization.k8s.io\"],\"resources\":[\"clusterroles\"],"
       "\"verbs\":[\"create\"]}]", NULL);
  bind_as(&A, 201, NULL, "bob-writes-roles", "ClusterRole", "role-writer", BOB_SUBJECT);
  ra_call(&BOB, "POST", RBAC "/clusterroles", NULL,
          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"
          "{\"name\":\"everything\"},\"aggregationRule\":{\"clusterRoleSelectors\":[{"
          "\"matchLabels\":{\"x\":\"y\"}}]},\"rules\":[]}", &r);
  cr_expect_eq(r.code, 403, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"),
                   "clusterroles.rbac.authorization.k8s.io \"everything\" is forbidden: must have "
                   "cluster-admin privileges to use the aggregationRule");
  ra_resp_free(&r);
}

static cJSON *review(struct ra *who, const char *path, const char *body, long code)
{
  return ra_ok(who, "POST", path, body, code);
}

Test(apiserver_rbac, access_reviews_answer_as_the_authorizer_decides)
{
  /* SubjectAccessReview: bob may list pods in default through up's binding, and why */
  cJSON *r = review(&A, AUTHZ "/subjectaccessreviews",
                    "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                    "\"spec\":{\"user\":\"bob\",\"groups\":[\"system:authenticated\"],"
                    "\"resourceAttributes\":{\"namespace\":\"default\",\"verb\":\"list\","
                    "\"resource\":\"pods\"}}}", 201);
  cr_expect(cJSON_IsTrue(json_get(r, "status.allowed")));
  cr_expect_str_eq(ra_str(r, "status.reason"),
                   "RBAC: allowed by RoleBinding \"godwit-local-users/default\" of ClusterRole "
                   "\"edit\" to User \"bob\"");
  cJSON_Delete(r);
  r = review(&A, AUTHZ "/subjectaccessreviews",
             "{\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"namespace\":\"kube-system\","
             "\"verb\":\"list\",\"resource\":\"pods\"}}}", 201);
  cr_expect(cJSON_IsFalse(json_get(r, "status.allowed")));
  cJSON_Delete(r);
  /* the refusals of a malformed review */
  r = review(&A, AUTHZ "/subjectaccessreviews",
             "{\"spec\":{\"resourceAttributes\":{\"verb\":\"get\",\"resource\":\"pods\"}}}", 422);
  cr_expect_str_eq(ra_str(r, "message"),
                   "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid "
                   "value: \"\": at least one of user or group must be specified");
  cJSON_Delete(r);
  r = review(&BOB, AUTHZ "/selfsubjectaccessreviews", "{\"spec\":{}}", 422);
  cr_expect(strstr(ra_str(r, "message"), "exactly one of nonResourceAttributes or "
                                         "resourceAttributes must be specified") != NULL);
  cJSON_Delete(r);
  r = review(&A, AUTHZ "/namespaces/team/localsubjectaccessreviews",
             "{\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"namespace\":\"default\","
             "\"verb\":\"get\",\"resource\":\"pods\"}}}", 422);
  cr_expect(strstr(ra_str(r, "message"), "must match metadata.namespace") != NULL);
  cJSON_Delete(r);
  /* bob may not ask about others: a SubjectAccessReview is no self review */
  forbidden(&BOB, "POST", AUTHZ "/subjectaccessreviews",
            "{\"spec\":{\"user\":\"alice\",\"nonResourceAttributes\":{\"verb\":\"get\","
            "\"path\":\"/api\"}}}");
  /* SelfSubjectRulesReview: what bob holds in default */
  r = review(&BOB, AUTHZ "/selfsubjectrulesreviews", "{\"spec\":{\"namespace\":\"default\"}}",
             201);
  cr_expect(cJSON_IsFalse(json_get(r, "status.incomplete")));
  cr_expect_gt(cJSON_GetArraySize(json_get(r, "status.resourceRules")), 10);
  cr_expect_gt(cJSON_GetArraySize(json_get(r, "status.nonResourceRules")), 0);
  cJSON_Delete(r);
}

Test(apiserver_rbac, kubectl_auth_can_i_as_each_user)
{
  char *out = NULL;
  cr_expect_eq(cl_kubectl(&C, "bob", &out, "auth can-i create configmaps"), 0, "%s", out);
  cr_expect(strstr(out, "yes") != NULL, "%s", out);
  free(out);
  cr_expect_eq(cl_kubectl(&C, "bob", &out, "auth can-i list nodes"), 1, "%s", out);
  cr_expect(strstr(out, "no") != NULL, "%s", out);
  free(out);
  cr_expect_eq(cl_kubectl(&C, "bob", &out, "auth can-i create migrationpolicies."
                                           "migration.podmotion.io"), 1, "%s", out);
  free(out);
  /* --list: SelfSubjectRulesReview */
  cr_expect_eq(cl_kubectl(&C, "alice", &out, "auth can-i --list"), 0, "%s", out);
  cr_expect(strstr(out, "selfsubjectaccessreviews.authorization.k8s.io") != NULL, "%s", out);
  cr_expect(strstr(out, "configmaps") != NULL, "%s", out);
  free(out);
  /* the controller's ServiceAccount, under manifests/rbac-controller.yaml */
  cr_expect_eq(cl_kubectl(&C, "godwit-controller", &out, "auth can-i get secrets -n default"),
               0, "%s", out);
  free(out);
  cr_expect_eq(cl_kubectl(&C, "godwit-controller", &out, "auth can-i list secrets -n default"),
               1, "the controller may not enumerate Secrets: %s", out);
  free(out);
  cr_expect_eq(cl_kubectl(&C, "godwit-controller", &out,
                          "auth can-i bind clusterroles/godwit-runner"), 0, "%s", out);
  free(out);
  cr_expect_eq(cl_kubectl(&C, "godwit-controller", &out, "auth can-i bind clusterroles/admin"),
               1, "%s", out);
  free(out);
  /* admin impersonates: --as through the same reviews */
  cr_expect_eq(cl_kubectl(&C, "admin", &out, "auth can-i list nodes --as bob"), 1, "%s", out);
  free(out);
}

Test(apiserver_rbac, impersonation_is_judged_by_rbac)
{
  struct ra imp;
  ra_init(&imp, &C, "bob");
  ra_header(&imp, "Impersonate-User: alice");
  cr_expect_str_eq(forbidden(&imp, "GET", "/api/v1/namespaces/default/pods", NULL),
                   "users \"alice\" is forbidden: User \"bob\" cannot impersonate resource "
                   "\"users\" in API group \"\" at the cluster scope");
  role(&A, 201, NULL, "be-alice",
       "[{\"apiGroups\":[\"\"],\"resources\":[\"users\"],\"resourceNames\":[\"alice\"],"
       "\"verbs\":[\"impersonate\"]}]", NULL);
  bind_as(&A, 201, NULL, "bob-is-alice", "ClusterRole", "be-alice", BOB_SUBJECT);
  cJSON *r = ra_ok(&imp, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}",
                   201);
  cr_expect_str_eq(ra_str(r, "status.userInfo.username"), "alice");
  cJSON_Delete(r);
  /* a group alice does not give him */
  ra_header(&imp, "Impersonate-Group: system:masters");
  cr_expect_str_eq(forbidden(&imp, "GET", "/api/v1/nodes", NULL),
                   "groups \"system:masters\" is forbidden: User \"bob\" cannot impersonate "
                   "resource \"groups\" in API group \"\" at the cluster scope");
}
