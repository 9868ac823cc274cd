/* test_apiserver_ssa.c: server-side apply and managedFields as kube-apiserver 1.32 keeps them
 * (docs/dev/server-side-apply.md): the sets an apply and an update record, conflicts in kube's
 * words and their force, what an applier stops applying is removed unless someone else owns it,
 * shared ownership of equal values, keyed lists, before-first-apply, the refusals of a bad
 * apply; and the real kubectl: apply --server-side of every sample, a conflict, --force-conflicts. */
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
  cl_start(&C, CL_WEBHOOK);
  ra_init(&A, &C, "admin");
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(apiserver_ssa, .init = start, .fini = stop, .timeout = 180);

#define CMS "/api/v1/namespaces/default/configmaps"
#define APPLY "application/apply-patch+yaml"

static long apply(const char *manager, bool force, const char *name, const char *body,
                  struct ra_resp *r)
{
  char path[300];
  snprintf(path, sizeof(path), CMS "/%s?fieldManager=%s%s", name, manager,
           force ? "&force=true" : "");
  return ra_call(&A, "PATCH", path, APPLY, body, r);
}

/* apply that must answer code */
static void apply_ok(const char *manager, const char *name, const char *body, long code)
{
  struct ra_resp r;
  apply(manager, false, name, body, &r);
  cr_assert_eq(r.code, code, "apply by %s: %ld %s", manager, r.code, r.body);
  ra_resp_free(&r);
}

static cJSON *get_cm(const char *name)
{
  char path[300];
  snprintf(path, sizeof(path), CMS "/%s", name);
  return ra_ok(&A, "GET", path, NULL, 200);
}

/* the fieldsV1 of manager's entry for operation in the object at path, compact JSON (free()), or
 * "(none)" */
static char *fields_at(const char *path, const char *manager, const char *operation)
{
  cJSON *o = ra_ok(&A, "GET", path, NULL, 200);
  char *s = NULL;
  const cJSON *e;
  cJSON_ArrayForEach(e, json_get(o, "metadata.managedFields"))
  {
    if(!s && !strcmp(ra_str(e, "manager"), manager) && !strcmp(ra_str(e, "operation"), operation)) {
      char *p = cJSON_PrintUnformatted(cJSON_GetObjectItem(e, "fieldsV1"));
      s = strdup(p); /* cJSON's text goes back through cJSON_free (json.h) */
      cJSON_free(p);
    }
  }
  cJSON_Delete(o);
  return s ? s : strdup("(none)");
}

static char *fields(const char *name, const char *manager, const char *operation)
{
  char path[300];
  snprintf(path, sizeof(path), CMS "/%s", name);
  return fields_at(path, manager, operation);
}

static void merge_patch(const char *path, const char *body)
{
  struct ra_resp r;
  ra_call(&A, "PATCH", path, "application/merge-patch+json", body, &r);
  cr_assert_eq(r.code, 200, "%s: %ld %s", path, r.code, r.body);
  ra_resp_free(&r);
}

#define CM(name, body)                                                                        \
  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"" body "}"

Test(apiserver_ssa, apply_and_create_record_what_kube_records)
{
  apply_ok("kubectl", "cm", CM("cm", ",\"labels\":{\"app\":\"x\"}},\"data\":{\"a\":\"1\"}"), 201);
  char *f = fields("cm", "kubectl", "Apply");
  cr_expect_str_eq(f, "{\"f:data\":{\"f:a\":{}},\"f:metadata\":{\"f:labels\":{\"f:app\":{}}}}");
  free(f);
  cJSON *cm = get_cm("cm");
  const cJSON *e = cJSON_GetArrayItem(json_get(cm, "metadata.managedFields"), 0);
  cr_expect_str_eq(ra_str(e, "manager"), "kubectl");
  cr_expect_str_eq(ra_str(e, "operation"), "Apply");
  cr_expect_str_eq(ra_str(e, "apiVersion"), "v1");
  cr_expect_str_eq(ra_str(e, "fieldsType"), "FieldsV1");
  cr_expect(*ra_str(e, "time"), "no time on a changing apply");
  cJSON_Delete(cm);
  /* the same apply again: 200, nothing moves */
  apply_ok("kubectl", "cm", CM("cm", ",\"labels\":{\"app\":\"x\"}},\"data\":{\"a\":\"1\"}"), 200);
  /* a create is an Update: every node it added, intermediate ones too */
  cJSON_Delete(ra_ok(&A, "POST", CMS "?fieldManager=kubectl-create",
                     CM("created", ",\"labels\":{\"app\":\"x\"}},\"data\":{\"a\":\"1\"}"), 201));
  f = fields("created", "kubectl-create", "Update");
  cr_expect_str_eq(f, "{\"f:data\":{\".\":{},\"f:a\":{}},\"f:metadata\":{\"f:labels\":{\".\":{},"
                      "\"f:app\":{}}}}");
  free(f);
  /* no fieldManager: the User-Agent's first word, here none: unknown */
  cJSON_Delete(ra_ok(&A, "POST", CMS, CM("anon", "},\"data\":{\"b\":\"2\"}"), 201));
  f = fields("anon", "unknown", "Update");
  cr_expect_str_eq(f, "{\"f:data\":{\".\":{},\"f:b\":{}}}");
  free(f);
}

Test(apiserver_ssa, conflicts_are_kubes_and_force_takes_the_fields)
{
  apply_ok("deployer", "cm", CM("cm", "},\"data\":{\"a\":\"1\",\"b\":\"1\"}"), 201);
  merge_patch(CMS "/cm?fieldManager=kubectl-edit", "{\"data\":{\"a\":\"2\",\"b\":\"2\"}}");
  struct ra_resp r;
  char *f = fields("cm", "kubectl-edit", "Update");
  cr_expect_str_eq(f, "{\"f:data\":{\"f:a\":{},\"f:b\":{}}}", "the editor owns what it changed");
  free(f);
  f = fields("cm", "deployer", "Apply");
  cr_expect_str_eq(f, "(none)", "the applier lost both fields and its entry");
  free(f);

  apply("deployer", false, "cm", CM("cm", "},\"data\":{\"a\":\"1\"}"), &r);
  cr_assert_eq(r.code, 409, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "reason"), "Conflict");
  cr_expect_str_eq(ra_str(r.json, "message"), "Apply failed with 1 conflict: conflict with "
                                              "\"kubectl-edit\" using v1: .data.a");
  const cJSON *cause = cJSON_GetArrayItem(json_get(r.json, "details.causes"), 0);
  cr_expect_str_eq(ra_str(cause, "reason"), "FieldManagerConflict");
  cr_expect_str_eq(ra_str(cause, "message"), "conflict with \"kubectl-edit\" using v1");
  cr_expect_str_eq(ra_str(cause, "field"), ".data.a");
  ra_resp_free(&r);
  /* two conflicts: kube's list form */
  apply("deployer", false, "cm", CM("cm", "},\"data\":{\"a\":\"1\",\"b\":\"1\"}"), &r);
  cr_assert_eq(r.code, 409, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"), "Apply failed with 2 conflicts: conflicts with "
                                              "\"kubectl-edit\" using v1:\n- .data.a\n- .data.b");
  ra_resp_free(&r);
  cJSON *cm = get_cm("cm");
  cr_expect_str_eq(ra_str(cm, "data.a"), "2", "a refused apply changed the object");
  cJSON_Delete(cm);
  /* the same value is shared, not a conflict */
  apply_ok("deployer", "cm", CM("cm", "},\"data\":{\"a\":\"2\"}"), 200);
  f = fields("cm", "deployer", "Apply");
  cr_expect_str_eq(f, "{\"f:data\":{\"f:a\":{}}}");
  free(f);
  /* force: the fields move to the applier */
  apply("deployer", true, "cm", CM("cm", "},\"data\":{\"a\":\"3\",\"b\":\"3\"}"), &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  ra_resp_free(&r);
  f = fields("cm", "kubectl-edit", "Update");
  cr_expect_str_eq(f, "(none)", "the editor kept fields a forced apply took");
  free(f);
}

Test(apiserver_ssa, what_an_applier_stops_applying_goes_unless_someone_else_owns_it)
{
  apply_ok("a", "cm", CM("cm", ",\"labels\":{\"l\":\"1\"}},\"data\":{\"x\":\"1\",\"y\":\"1\"}"),
           201);
  apply_ok("b", "cm", CM("cm", "},\"data\":{\"y\":\"1\"}"), 200); /* shares y */
  apply_ok("a", "cm", CM("cm", "},\"data\":{\"z\":\"1\"}"), 200);
  cJSON *cm = get_cm("cm");
  cr_expect_null(json_get(cm, "data.x"), "x was a's alone: removed");
  cr_expect_str_eq(ra_str(cm, "data.y"), "1", "y is b's too: kept");
  cr_expect_str_eq(ra_str(cm, "data.z"), "1");
  cr_expect_null(json_get(cm, "metadata.labels.l"), "the label was a's alone: removed");
  cJSON_Delete(cm);
}

#define DEPLOY(image)                                                                         \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"      \
  "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{"  \
  "\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\","     \
  "\"image\":\"" image "\"}]}}}}"

Test(apiserver_ssa, keyed_lists_and_atomic_selectors)
{
  const char *dep = "/apis/apps/v1/namespaces/default/deployments/web";
  struct ra_resp r;
  ra_call(&A, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=ci", APPLY,
          DEPLOY("nginx:1"), &r);
  cr_assert_eq(r.code, 201, "%s", r.body);
  ra_resp_free(&r);
  char *f = fields_at(dep, "ci", "Apply");
  cr_expect_str_eq(f, "{\"f:spec\":{\"f:replicas\":{},\"f:selector\":{},\"f:template\":{"
                      "\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{"
                      "\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},"
                      "\"f:image\":{},\"f:name\":{}}}}}}}");
  free(f);
  /* kubectl set image: a strategic merge patch of one container */
  ra_call(&A, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl-set",
          "application/strategic-merge-patch+json",
          "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
          "\"image\":\"nginx:2\"}]}}}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  ra_resp_free(&r);
  ra_call(&A, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=ci", APPLY,
          DEPLOY("nginx:1"), &r);
  cr_assert_eq(r.code, 409, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"),
                   "Apply failed with 1 conflict: conflict with \"kubectl-set\" using apps/v1: "
                   ".spec.template.spec.containers[name=\"c\"].image");
  ra_resp_free(&r);
  /* a second container applied: the list is merged by key, the other manager's item stays */
  ra_call(&A, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=ci", APPLY,
          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
          "\"web\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
          "\"image\":\"nginx:2\"},{\"name\":\"side\",\"image\":\"busybox\"}]}}}}", &r);
  cr_assert_eq(r.code, 200, "%s", r.body);
  cr_expect_eq(cJSON_GetArraySize(json_get(r.json, "spec.template.spec.containers")), 2);
  cr_expect_null(json_get(r.json, "spec.replicas"), "ci stopped applying replicas, nobody else "
                 "owned it: removed");
  ra_resp_free(&r);
}

Test(apiserver_ssa, refusals_of_a_bad_apply)
{
  struct ra_resp r;
  ra_call(&A, "PATCH", CMS "/cm", APPLY, CM("cm", "}"), &r);
  cr_expect_eq(r.code, 422);
  cr_expect_str_eq(ra_str(r.json, "message"), "PatchOptions.meta.k8s.io \"\" is invalid: "
                   "fieldManager: Required value: is required for apply patch");
  ra_resp_free(&r);
  ra_call(&A, "PATCH", CMS "/cm?force=true", "application/merge-patch+json", "{}", &r);
  cr_expect_eq(r.code, 422);
  cr_expect_str_eq(ra_str(r.json, "message"), "PatchOptions.meta.k8s.io \"\" is invalid: force: "
                   "Forbidden: may not be specified for non-apply patch");
  ra_resp_free(&r);
  apply("x", false, "cm", "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{"
                          "\"name\":\"cm\"}}", &r);
  cr_expect_eq(r.code, 400);
  cr_expect_str_eq(ra_str(r.json, "message"), "invalid object type: /v1, Kind=Secret");
  ra_resp_free(&r);
  apply("x", false, "cm", CM("cm", ",\"managedFields\":[]}"), &r);
  cr_expect_eq(r.code, 400);
  cr_expect_str_eq(ra_str(r.json, "message"), "metadata.managedFields must be nil");
  ra_resp_free(&r);
  apply("x", false, "cm", CM("other", "}"), &r);
  cr_expect_eq(r.code, 400);
  cr_expect_str_eq(ra_str(r.json, "message"), "the name of the object (other) does not match the "
                   "name on the URL (cm)");
  ra_resp_free(&r);
  /* nothing was created on the way */
  ra_call(&A, "GET", CMS "/cm", NULL, NULL, &r);
  cr_expect_eq(r.code, 404);
  ra_resp_free(&r);
}

Test(apiserver_ssa, cleared_fields_belong_to_before_first_apply)
{
  cJSON_Delete(ra_ok(&A, "POST", CMS "?fieldManager=maker", CM("cm", "},\"data\":{\"a\":\"1\"}"),
                     201));
  merge_patch(CMS "/cm", "{\"metadata\":{\"managedFields\":[{}]}}");
  cJSON *cm = get_cm("cm");
  cr_expect_null(json_get(cm, "metadata.managedFields"), "[{}] did not clear them");
  cJSON_Delete(cm);
  struct ra_resp r;
  apply("newcomer", false, "cm", CM("cm", "},\"data\":{\"a\":\"2\"}"), &r);
  cr_assert_eq(r.code, 409, "%s", r.body);
  cr_expect_str_eq(ra_str(r.json, "message"), "Apply failed with 1 conflict: conflict with "
                   "\"before-first-apply\" using v1: .data.a");
  ra_resp_free(&r);
}

/* kubectl with the local cluster's kubeconfig as admin; output in *out */
static int kc(char **out, const char *args)
{
  return cl_kubectl(&C, "admin", out, "%s", args);
}

Test(apiserver_ssa, kubectl_applies_every_sample_server_side, .timeout = 240)
{
  char *out = NULL;
  cr_assert_eq(kc(&out, "create namespace shop"), 0, "%s", out);
  free(out);
  cr_assert_eq(kc(&out, "create namespace jobs"), 0, "%s", out);
  free(out);
  char cmd[1024];
  const char *samples[] = {
    "migration-clone", "migration-dry-run", "migration-live-automatic", "migration-live-manual",
    "migration-v1alpha1", "migrationpolicy-default", "migrationpolicy-shop-web",
    "migrationpolicy-v1alpha1", "podmigration-basic", "podmigration-node-selector",
    "podmigration-stop-and-copy", "podmigration-v1alpha1", "ptahmigration-v1alpha1",
    "ptahmigration", "ptahmigrationrunacknowledgment", "ptahschema-configmap",
    "ptahschema-v1alpha1", "ptahschema", "ptahschemaapproval-v1alpha1", "ptahschemaapproval",
  };
  for(int pass = 0; pass < 2; pass++)
    for(size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
      snprintf(cmd, sizeof(cmd), "apply --server-side -f %s/manifests/samples/%s.yaml",
               cl_root(), samples[i]);
      int rc = kc(&out, cmd);
      cr_expect_eq(rc, 0, "pass %d, %s: %s", pass, samples[i], out);
      cr_expect(strstr(out, "serverside-applied") != NULL, "%s: %s", samples[i], out);
      free(out);
    }
  /* the one a person may not write: refused by the webhook, through the apply as any write */
  snprintf(cmd, sizeof(cmd), "apply --server-side -f %s/manifests/samples/ptahresultrecord.yaml",
           cl_root());
  cr_expect_neq(kc(&out, cmd), 0, "%s", out);
  cr_expect(strstr(out, "result records are written by runner Pods") != NULL, "%s", out);
  free(out);
  /* a conflict between two managers, as kubectl shows it, then forced */
  cr_assert_eq(kc(&out, "patch migration shop-clone --type merge --field-manager kubectl-edit "
                        "-p '{\"spec\":{\"clone\":{\"tableJobs\":4}}}'"), 0, "%s", out);
  free(out);
  snprintf(cmd, sizeof(cmd), "apply --server-side -f %s/manifests/samples/migration-clone.yaml",
           cl_root());
  cr_expect_neq(kc(&out, cmd), 0, "%s", out);
  cr_expect(strstr(out, "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using "
                        "pgcopydb.io/v1: .spec.clone.tableJobs") &&
              strstr(out, "--force-conflicts"), "%s", out);
  free(out);
  snprintf(cmd, sizeof(cmd), "apply --server-side --force-conflicts -f "
           "%s/manifests/samples/migration-clone.yaml", cl_root());
  cr_expect_eq(kc(&out, cmd), 0, "%s", out);
  free(out);
}
