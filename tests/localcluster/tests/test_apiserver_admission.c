/*
 * The local API server's admission chain (tests/localcluster/apiserver/admission*.c), called as the
 * core calls it, against the real godwit-webhook with the real webhook configurations
 * (manifests/webhook-*.yaml, caBundle from godwit-certs) and against a fake webhook that records
 * exactly what kube-apiserver would send and answers what a test needs.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "hooks.h"
#include "json.h"
#include "rawapi.h"
#include "test_apiserver_util.h"
#include "yamldoc.h"

static struct lw W;
static char ADDR[64];

static const char *const GROUPS[] = { "db-approvers", "system:authenticated" };
static struct ls_user ALICE = { "alice", "u-1", GROUPS, 2, NULL };

static void register_crds(void)
{
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

static void real_configs(void)
{
  cJSON *m = lw_manifest("manifests/webhook-mutating.yaml", W.ca_bundle);
  cJSON *v = lw_manifest("manifests/webhook-validating.yaml", W.ca_bundle);
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", m);
  admission_config_set("ValidatingWebhookConfiguration", "godwit-validating", v);
  cJSON_Delete(m);
  cJSON_Delete(v);
}

static void up(void)
{
  lw_start(&W);
  snprintf(ADDR, sizeof(ADDR), "127.0.0.1:%d", W.port);
  lw_layers(ADDR);
  register_crds();
  real_configs();
}

static void down(void)
{
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", NULL);
  admission_config_set("ValidatingWebhookConfiguration", "godwit-validating", NULL);
  lw_stop(&W);
}

TestSuite(apiserver_admission, .init = up, .fini = down, .timeout = 60);

static struct ls_adm_attrs attrs(const char *op, const char *version, const char *name)
{
  struct ls_adm_attrs a = { op, "pgcopydb.io", version, "Migration", "migrations", "", name, "db", &ALICE, false, NULL };
  return a;
}

static cJSON *migration(const char *version, const char *spec)
{
  char *buf = NULL;
  cr_assert_gt(asprintf(&buf, "{\"apiVersion\":\"pgcopydb.io/%s\",\"kind\":\"Migration\",\"metadata\":{\"name\":\"shop\",\"namespace\":\"db\"},\"spec\":%s}",
                        version, spec), 0);
  cJSON *m = tj(buf);
  free(buf);
  return m;
}

#define V1_SPEC "{\"source\":{\"connectionSecretRef\":{\"name\":\"src\",\"key\":\"uri\"}},\"target\":{\"connectionSecretRef\":{\"name\":\"dst\",\"key\":\"uri\"}}"

/* Mutates then validates, as the core's create does; returns the Status or NULL. */
static cJSON *admit(struct ls_adm_attrs *a, cJSON **obj, const cJSON *old, struct ls_warnings *w)
{
  cJSON *st = admission_mutate(a, obj, old, w);
  if(!st)
    st = admission_validate(a, *obj, old, w);
  return st;
}

LTest(apiserver_admission, migration_denied_with_kubes_message_and_the_webhooks_causes)
{
  cJSON *m = migration("v1", V1_SPEC ",\"clone\":{\"filters\":{\"includeOnlyTables\":[\"public.a\"],\"excludeTables\":[\"public.b\"]}},\"backoffLimit\":1}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  struct ls_warnings w = { 0 };
  cJSON *st = admit(&a, &m, NULL, &w);
  cr_assert_not_null(st, "the webhook allowed filters pgcopydb refuses");
  cr_assert_eq(json_get(st, "code")->valueint, 422);
  cr_assert_str_eq(json_get_str(st, "reason"), "Invalid");
  cr_assert_str_eq(json_get_str(st, "status"), "Failure");
  const char *msg = json_get_str(st, "message");
  const char *prefix = "admission webhook \"validate.pgcopydb.io\" denied the request: Migration \"shop\" is invalid: ";
  cr_assert(!strncmp(msg, prefix, strlen(prefix)), "%s", msg);
  const cJSON *causes = json_get(st, "details.causes");
  cr_assert_geq(cJSON_GetArraySize(causes), 1, "%s", msg);
  const cJSON *c = cJSON_GetArrayItem(causes, 0);
  cr_assert(!strncmp(json_get_str(c, "field"), "spec.clone.filters.", 19), "%s", json_get_str(c, "field"));
  cr_assert(strstr(msg, json_get_str(c, "message")), "the message lists the cause: %s", msg);
  cr_assert_str_eq(json_get_str(st, "details.kind"), "Migration");
  cr_assert_str_eq(json_get_str(st, "details.name"), "shop");
  cJSON_Delete(st);
  cJSON_Delete(m);
  ls_warnings_release(&w);
}

LTest(apiserver_admission, default_patch_applied_and_idempotent)
{
  cJSON *m = migration("v1", V1_SPEC ",\"follow\":{}}");
  cJSON *orig = m;
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  struct ls_warnings w = { 0 };
  cJSON *st = admission_mutate(&a, &m, NULL, &w);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  cr_assert_neq(m, orig, "a patched object replaces the caller's");
  cr_assert_str_eq(json_get_str(m, "spec.cutover.mode"), "Manual");
  cJSON *again = cJSON_Duplicate(m, 1);
  cJSON *keep = again;
  cr_assert_null(admission_mutate(&a, &again, NULL, &w));
  cr_assert_eq(again, keep, "a second pass changes nothing");
  cr_assert(json_equal(again, m));
  cr_assert_null(admission_validate(&a, m, NULL, &w));
  cJSON_Delete(again);
  cJSON_Delete(m);
  ls_warnings_release(&w);
}

LTest(apiserver_admission, warnings_are_collected)
{
  cJSON *m = migration("v1alpha1", "{\"sourceSecret\":\"src\",\"targetSecret\":\"dst\"}");
  struct ls_adm_attrs a = attrs("CREATE", "v1alpha1", "shop");
  struct ls_warnings w = { 0 };
  cJSON *st = admit(&a, &m, NULL, &w);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  /* mutate and validate both warn; identical texts are kept once */
  cr_assert_eq(w.n, 1);
  cr_assert_str_eq(w.v[0], "pgcopydb.io/v1alpha1 Migration is deprecated; use pgcopydb.io/v1 Migration");
  ls_warnings_release(&w);
  cJSON_Delete(m);
  /* risky but legal settings, in the webhook's order */
  m = migration("v1", V1_SPEC ",\"follow\":{},\"cutover\":{\"mode\":\"Automatic\"},\"backoffLimit\":0}");
  a = attrs("CREATE", "v1", "shop");
  cr_assert_null(admit(&a, &m, NULL, &w));
  cr_assert_eq(w.n, 2);
  cr_assert_str_eq(w.v[0], "spec.cutover.mode Automatic (v1alpha1: manualCutover: false) cuts over as soon as the "
                           "migration is caught up, with nobody approving");
  cr_assert_str_eq(w.v[1], "spec.backoffLimit is 0: the first failed attempt, even a transient network error, fails "
                           "the migration for good");
  cJSON_Delete(m);
  ls_warnings_release(&w);
}

LTest(apiserver_admission, webhook_down_fails_closed_with_kubes_message)
{
  int port = lw_closed_port();
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
  lw_layers(addr);
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cJSON *st = admission_mutate(&a, &m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_eq(json_get(st, "code")->valueint, 500);
  cr_assert_str_eq(json_get_str(st, "reason"), "InternalError");
  char want[512];
  snprintf(want, sizeof(want),
           "failed calling webhook \"mutate.pgcopydb.io\": failed to call webhook: Post "
           "\"https://godwit-webhook.godwit-system.svc:443/mutate?timeout=5s\": dial tcp 127.0.0.1:%d: connect: connection refused",
           port);
  char full[600];
  snprintf(full, sizeof(full), "Internal error occurred: %s", want);
  cr_assert_str_eq(json_get_str(st, "message"), full);
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(st, "details.causes"), 0), "message"), want);
  cJSON_Delete(st);
  /* failurePolicy Ignore: the request goes on untouched */
  cJSON *cfg = lw_manifest("manifests/webhook-mutating.yaml", W.ca_bundle);
  cJSON *h;
  cJSON_ArrayForEach(h, json_get(cfg, "webhooks"))
    cr_assert_eq(json_set_str(h, "failurePolicy", "Ignore"), GW_OK);
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", cfg);
  cJSON_Delete(cfg);
  cJSON *keep = m;
  cr_assert_null(admission_mutate(&a, &m, NULL, NULL));
  cr_assert_eq(m, keep);
  cJSON_Delete(m);
}

LTest(apiserver_admission, unmapped_service_and_untrusted_certificate)
{
  const char *const none[] = { NULL };
  ls_hooks_init(NULL, none);
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cJSON *st = admission_mutate(&a, &m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_str_eq(json_get_str(st, "message"),
                   "Internal error occurred: failed calling webhook \"mutate.pgcopydb.io\": failed to call webhook: Post "
                   "\"https://godwit-webhook.godwit-system.svc:443/mutate?timeout=5s\": service \"godwit-webhook\" not found");
  cJSON_Delete(st);
  /* the real webhook, but a caBundle of another CA */
  lw_layers(ADDR);
  struct fw f;
  fw_start(&f, NULL, NULL); /* only for its CA */
  cJSON *cfg = lw_manifest("manifests/webhook-mutating.yaml", f.ca_bundle);
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", cfg);
  cJSON_Delete(cfg);
  st = admission_mutate(&a, &m, NULL, NULL);
  cr_assert_not_null(st);
  const char *msg = json_get_str(st, "message");
  cr_assert(strstr(msg, "https://godwit-webhook.godwit-system.svc:443/mutate?timeout=5s\": tls: failed to verify certificate: x509: "), "%s", msg);
  cJSON_Delete(st);
  /* the right CA, but a Service name the certificate does not carry: NAME.NS.svc is checked */
  char map[128];
  snprintf(map, sizeof(map), "godwit-system/other=127.0.0.1:%d", f.port);
  const char *const sm[] = { map, NULL };
  ls_hooks_init(NULL, sm);
  cJSON *c2 = tj("{\"metadata\":{\"name\":\"other\"},\"webhooks\":[{\"name\":\"other.fake.test\",\"admissionReviewVersions\":[\"v1\"],"
                 "\"sideEffects\":\"None\",\"clientConfig\":{\"service\":{\"namespace\":\"godwit-system\",\"name\":\"other\","
                 "\"path\":\"/m\"}},\"rules\":[{\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],\"operations\":[\"*\"],\"resources\":[\"*\"]}]}]}");
  cr_assert_eq(json_set_str(cJSON_GetArrayItem(json_get(c2, "webhooks"), 0), "clientConfig.caBundle", f.ca_bundle), GW_OK);
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", c2);
  cJSON_Delete(c2);
  st = admission_mutate(&a, &m, NULL, NULL);
  cr_assert_not_null(st);
  msg = json_get_str(st, "message");
  cr_assert(strstr(msg, "failed calling webhook \"other.fake.test\": failed to call webhook: Post "
                        "\"https://other.godwit-system.svc:443/m?timeout=10s\": tls: failed to verify certificate: x509: certificate is not valid"),
            "%s", msg);
  cr_assert_eq(fw_count(&f), 0);
  cJSON_Delete(st);
  fw_stop(&f);
  cJSON_Delete(m);
}

static cJSON *pod(const char *labels)
{
  char buf[1024];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"db\",\"labels\":%s},"
           "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"debian:12\"}]}}",
           labels);
  return tj(buf);
}

LTest(apiserver_admission, object_selector_keeps_other_pods_away_from_the_webhook)
{
  struct ls_adm_attrs a = { "CREATE", "", "v1", "Pod", "pods", "", "p", "db", &ALICE, false, NULL };
  /* a runner Pod reaches the webhook, which refuses it without the template digest */
  cJSON *runner = pod("{\"godwit.dev/runner\":\"preflight\"}");
  cJSON *st = admission_validate(&a, runner, NULL, NULL);
  cr_assert_not_null(st, "a runner Pod without a template digest was admitted");
  const char *msg = json_get_str(st, "message");
  cr_assert(!strncmp(msg, "admission webhook \"validate-runner-pods.godwit.dev\" denied the request: ", 72), "%s", msg);
  cr_assert(strstr(msg, "godwit.dev/template-digest"), "%s", msg);
  cJSON_Delete(st);
  /* with the webhook unreachable, a plain Pod is admitted: it never waits on godwit */
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", lw_closed_port());
  lw_layers(addr);
  cJSON *plain = pod("{\"app\":\"web\"}");
  cr_assert_null(admission_validate(&a, plain, NULL, NULL));
  cJSON *st2 = admission_validate(&a, runner, NULL, NULL);
  cr_assert_not_null(st2, "a runner Pod must fail closed when the webhook is down");
  cr_assert_eq(json_get(st2, "code")->valueint, 500);
  cJSON_Delete(st2);
  cJSON_Delete(plain);
  cJSON_Delete(runner);
}

/* ---- with the fake webhook ---- */

struct answer {
  const char *extra; /* response members */
  int status;
  const char *body;  /* a whole body instead */
};

static char *respond(const char *path, const cJSON *body, int *status, void *ud)
{
  (void)path;
  const struct answer *an = ud;
  if(an->status)
    *status = an->status;
  if(an->body)
    return strdup(an->body);
  return fw_admission_answer(body, an->extra ? an->extra : "\"allowed\":true");
}

/* One configuration with one webhook of the fake, on the given rules. */
static cJSON *fake_config(const struct fw *f, const char *kind, const char *name, const char *path, const char *rules,
                          const char *more)
{
  char *buf = NULL;
  int n = asprintf(&buf,
           "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\"},"
           "\"webhooks\":[{\"name\":\"%s.fake.test\",\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\","
           "\"timeoutSeconds\":5,\"clientConfig\":{\"url\":\"https://localhost:%d%s\",\"caBundle\":\"%s\"},\"rules\":%s%s%s}]}",
           kind, name, name, f->port, path, f->ca_bundle, rules, *more ? "," : "", more);
  cr_assert_gt(n, 0);
  cJSON *c = tj(buf);
  free(buf);
  return c;
}

static const char MIG_RULES[] = "[{\"apiGroups\":[\"pgcopydb.io\"],\"apiVersions\":[\"*\"],\"operations\":[\"*\"],"
                                "\"resources\":[\"migrations\",\"migrations/status\"],\"scope\":\"*\"}]";

static void only_fake(const char *kind, cJSON *cfg)
{
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", NULL);
  admission_config_set("ValidatingWebhookConfiguration", "godwit-validating", NULL);
  admission_config_set(kind, json_get_str(cfg, "metadata.name"), cfg);
  cJSON_Delete(cfg);
}

static bool is_uuid(const char *s)
{
  if(!s || strlen(s) != 36)
    return false;
  for(int i = 0; i < 36; i++)
    if((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
      return false;
  return s[14] == '4';
}

LTest(apiserver_admission, the_review_is_built_as_kube_apiserver_builds_it)
{
  struct answer an = { 0 };
  struct fw f;
  fw_start(&f, respond, &an);
  only_fake("MutatingWebhookConfiguration", fake_config(&f, "MutatingWebhookConfiguration", "rec", "/m", MIG_RULES, ""));
  cJSON *extra = tj("{\"authentication.kubernetes.io/pod-name\":[\"runner-1\"],\"authentication.kubernetes.io/pod-uid\":[\"9f\"]}");
  const char *const groups[] = { "system:serviceaccounts", "system:authenticated" };
  struct ls_user sa = { "system:serviceaccount:db:runner", "sa-uid", groups, 2, extra };
  cJSON *opts = tj("{\"fieldManager\":\"kubectl-client-side-apply\",\"fieldValidation\":\"Strict\"}");
  struct ls_adm_attrs a = { "CREATE", "pgcopydb.io", "v1", "Migration", "migrations", "", "shop", "db", &sa, true, opts };
  cJSON *m = migration("v1", V1_SPEC "}");
  cr_assert_null(admission_mutate(&a, &m, NULL, NULL));
  cr_assert_eq(fw_count(&f), 1);
  cr_assert_str_eq(fw_path(&f, 0), "/m?timeout=5s");
  cJSON *want = tj("{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
                   "\"uid\":\"X\",\"kind\":{\"group\":\"pgcopydb.io\",\"version\":\"v1\",\"kind\":\"Migration\"},"
                   "\"resource\":{\"group\":\"pgcopydb.io\",\"version\":\"v1\",\"resource\":\"migrations\"},"
                   "\"requestKind\":{\"group\":\"pgcopydb.io\",\"version\":\"v1\",\"kind\":\"Migration\"},"
                   "\"requestResource\":{\"group\":\"pgcopydb.io\",\"version\":\"v1\",\"resource\":\"migrations\"},"
                   "\"name\":\"shop\",\"namespace\":\"db\",\"operation\":\"CREATE\","
                   "\"userInfo\":{\"username\":\"system:serviceaccount:db:runner\",\"uid\":\"sa-uid\","
                   "\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],\"extra\":{"
                   "\"authentication.kubernetes.io/pod-name\":[\"runner-1\"],\"authentication.kubernetes.io/pod-uid\":[\"9f\"]}},"
                   "\"object\":null,\"oldObject\":null,\"dryRun\":true,"
                   "\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":\"meta.k8s.io/v1\",\"fieldManager\":\"kubectl-client-side-apply\","
                   "\"fieldValidation\":\"Strict\",\"dryRun\":[\"All\"]}}}");
  cJSON *got = cJSON_Duplicate(fw_body(&f, 0), 1);
  cr_assert(is_uuid(json_get_str(got, "request.uid")), "uid %s", json_get_str(got, "request.uid"));
  cr_assert(json_equal(json_get(got, "request.object"), m));
  cr_assert_eq(json_set_str(got, "request.uid", "X"), GW_OK);
  cr_assert_eq(json_set(got, "request.object", cJSON_CreateNull()), GW_OK);
  char *gs = cJSON_PrintUnformatted(got);
  cr_assert(json_equal(got, want), "the review differs from kube's:\n%s", gs);
  /* kube-apiserver's member order: kind first, then apiVersion, then request */
  cr_assert_str_eq(got->child->string, "kind");
  cJSON_free(gs);
  cJSON_Delete(got);
  cJSON_Delete(want);
  /* a second call has a fresh uid; DELETE sends object null, the old object, DeleteOptions */
  struct ls_adm_attrs d = { "DELETE", "pgcopydb.io", "v1", "Migration", "migrations", "", "shop", "db", &ALICE, false, NULL };
  cJSON *none = NULL;
  cr_assert_null(admission_mutate(&d, &none, m, NULL));
  cr_assert_eq(fw_count(&f), 2);
  const cJSON *b = fw_body(&f, 1);
  cr_assert_str_neq(json_get_str(b, "request.uid"), json_get_str(fw_body(&f, 0), "request.uid"));
  cr_assert(cJSON_IsNull(json_get(b, "request.object")));
  cr_assert(json_equal(json_get(b, "request.oldObject"), m));
  cr_assert(cJSON_IsFalse(json_get(b, "request.dryRun")));
  cr_assert_str_eq(json_get_str(b, "request.options.kind"), "DeleteOptions");
  cr_assert_str_eq(json_get_str(b, "request.userInfo.username"), "alice");
  cr_assert_null(json_get(b, "request.userInfo.extra"));
  /* a subresource */
  struct ls_adm_attrs s = { "UPDATE", "pgcopydb.io", "v1", "Migration", "migrations", "status", "shop", "db", &ALICE, false, NULL };
  cr_assert_null(admission_validate(&s, m, m, NULL)); /* no validating webhook: nothing sent */
  cr_assert_null(admission_mutate(&s, &m, m, NULL));
  b = fw_body(&f, 2);
  cr_assert_str_eq(json_get_str(b, "request.subResource"), "status");
  cr_assert_str_eq(json_get_str(b, "request.requestSubResource"), "status");
  cr_assert_str_eq(json_get_str(b, "request.options.kind"), "UpdateOptions");
  cJSON_Delete(m);
  cJSON_Delete(opts);
  cJSON_Delete(extra);
  fw_stop(&f);
}

static void expect_call_error(const char *extra_or_body, bool whole, int status, bool mutating, const char *why)
{
  struct answer an = { whole ? NULL : extra_or_body, status, whole ? extra_or_body : NULL };
  struct fw f;
  fw_start(&f, respond, &an);
  const char *kind = mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration";
  only_fake(kind, fake_config(&f, kind, "bad", "/x", MIG_RULES, ""));
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cJSON *st = mutating ? admission_mutate(&a, &m, NULL, NULL) : admission_validate(&a, m, NULL, NULL);
  cr_assert_not_null(st, "accepted: %s", extra_or_body);
  const char *msg = json_get_str(st, "message");
  char *want = NULL;
  const char *at = strstr(why, "%UID%");
  if(at)
    cr_assert_gt(asprintf(&want, "Internal error occurred: failed calling webhook \"bad.fake.test\": %.*s%s%s", (int)(at - why), why,
                          json_get_str(fw_body(&f, 0), "request.uid"), at + 5), 0);
  else
    cr_assert_gt(asprintf(&want, "Internal error occurred: failed calling webhook \"bad.fake.test\": %s", why), 0);
  cr_assert_str_eq(msg, want);
  free(want);
  cr_assert_eq(json_get(st, "code")->valueint, 500);
  cJSON_Delete(st);
  cJSON_Delete(m);
  fw_stop(&f);
}

LTest(apiserver_admission, malformed_answers_are_call_errors)
{
  expect_call_error("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"nope\",\"allowed\":true}}",
                    true, 0, true, "received invalid webhook response: expected response.uid=\"%UID%\", got \"nope\"");
  expect_call_error("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", true, 0, true,
                    "received invalid webhook response: webhook response was absent");
  expect_call_error("\"allowed\":true,\"patch\":\"W10=\"", false, 0, true,
                    "received invalid webhook response: webhook returned response.patch but not response.patchType");
  expect_call_error("\"allowed\":true,\"patch\":\"W10=\",\"patchType\":\"JSONPatch\"", false, 0, false,
                    "received invalid webhook response: validating webhook may not return response.patch");
  expect_call_error("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"request.uid is missing\",\"code\":400}",
                    true, 400, true, "failed to call webhook: request.uid is missing");
  expect_call_error("not json", true, 0, false, "failed to call webhook: couldn't get version/kind; json parse error: malformed JSON at byte 0");
}

static void expect_denial(const char *status_json, int code, const char *reason, const char *message)
{
  char extra[1024];
  snprintf(extra, sizeof(extra), "\"allowed\":false%s%s", status_json ? ",\"status\":" : "", status_json ? status_json : "");
  struct answer an = { extra, 0, NULL };
  struct fw f;
  fw_start(&f, respond, &an);
  only_fake("ValidatingWebhookConfiguration", fake_config(&f, "ValidatingWebhookConfiguration", "deny", "/v", MIG_RULES, ""));
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cJSON *st = admission_validate(&a, m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_eq(json_get(st, "code")->valueint, code);
  if(reason)
    cr_assert_str_eq(json_get_str(st, "reason"), reason);
  else
    cr_assert_null(json_get(st, "reason"));
  cr_assert_str_eq(json_get_str(st, "status"), "Failure");
  cr_assert_str_eq(json_get_str(st, "message"), message);
  cJSON_Delete(st);
  cJSON_Delete(m);
  fw_stop(&f);
}

LTest(apiserver_admission, denials_keep_the_webhooks_code_reason_and_details)
{
  expect_denial(NULL, 400, NULL, "admission webhook \"deny.fake.test\" denied the request without explanation");
  expect_denial("{\"code\":200,\"message\":\"no\"}", 400, NULL, "admission webhook \"deny.fake.test\" denied the request: no");
  expect_denial("{\"reason\":\"Forbidden\"}", 400, "Forbidden", "admission webhook \"deny.fake.test\" denied the request: Forbidden");
  expect_denial("{\"code\":403,\"reason\":\"Forbidden\",\"message\":\"approver bob is not allowed\",\"details\":{\"causes\":[{\"field\":\"spec.approver\"}]}}",
                403, "Forbidden", "admission webhook \"deny.fake.test\" denied the request: approver bob is not allowed");
}

LTest(apiserver_admission, match_policy_equivalent_converts_through_the_real_convert)
{
  /* allow and add a label, on v1 only */
  const char *patch = "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"seen\":\"v1\"}}]";
  char *p64 = fw_b64(patch);
  char extra[512];
  snprintf(extra, sizeof(extra), "\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"%s\"", p64);
  free(p64);
  struct answer an = { extra, 0, NULL };
  struct fw f;
  fw_start(&f, respond, &an);
  only_fake("MutatingWebhookConfiguration",
            fake_config(&f, "MutatingWebhookConfiguration", "eq", "/m",
                        "[{\"apiGroups\":[\"pgcopydb.io\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":[\"migrations\"]}]",
                        "\"matchPolicy\":\"Equivalent\""));
  cJSON *m = migration("v1alpha1", "{\"sourceSecret\":\"src\",\"targetSecret\":\"dst\",\"tableJobs\":8}");
  struct ls_adm_attrs a = attrs("CREATE", "v1alpha1", "shop");
  cJSON *st = admission_mutate(&a, &m, NULL, NULL);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  const cJSON *b = fw_body(&f, 0);
  cr_assert_str_eq(json_get_str(b, "request.kind.version"), "v1");
  cr_assert_str_eq(json_get_str(b, "request.resource.version"), "v1");
  cr_assert_str_eq(json_get_str(b, "request.requestKind.version"), "v1alpha1");
  cr_assert_str_eq(json_get_str(b, "request.requestResource.version"), "v1alpha1");
  cr_assert_str_eq(json_get_str(b, "request.object.apiVersion"), "pgcopydb.io/v1");
  cr_assert_str_eq(json_get_str(b, "request.object.spec.source.connectionSecretRef.name"), "src");
  cr_assert_eq(json_get(b, "request.object.spec.clone.tableJobs")->valueint, 8);
  /* the patched object comes back in the request's version */
  cr_assert_str_eq(json_get_str(m, "apiVersion"), "pgcopydb.io/v1alpha1");
  cr_assert_str_eq(json_get_str(m, "metadata.labels.seen"), "v1");
  cr_assert_str_eq(json_get_str(m, "spec.sourceSecret"), "src");
  cr_assert_eq(json_get(m, "spec.tableJobs")->valueint, 8);
  /* Exact: a v1alpha1 request does not reach a v1-only webhook */
  only_fake("MutatingWebhookConfiguration",
            fake_config(&f, "MutatingWebhookConfiguration", "eq", "/m",
                        "[{\"apiGroups\":[\"pgcopydb.io\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":[\"migrations\"]}]",
                        "\"matchPolicy\":\"Exact\""));
  cr_assert_null(admission_mutate(&a, &m, NULL, NULL));
  cr_assert_eq(fw_count(&f), 1);
  cJSON_Delete(m);
  fw_stop(&f);
}

LTest(apiserver_admission, a_patched_custom_resource_is_defaulted_again)
{
  char *p64 = fw_b64("[{\"op\":\"remove\",\"path\":\"/spec/dryRun\"},{\"op\":\"add\",\"path\":\"/spec/follow\",\"value\":{}}]");
  char extra[512];
  snprintf(extra, sizeof(extra), "\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"%s\"", p64);
  free(p64);
  struct answer an = { extra, 0, NULL };
  struct fw f;
  fw_start(&f, respond, &an);
  only_fake("MutatingWebhookConfiguration", fake_config(&f, "MutatingWebhookConfiguration", "dflt", "/m", MIG_RULES, ""));
  cJSON *m = migration("v1", V1_SPEC ",\"dryRun\":false}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cr_assert_null(admission_mutate(&a, &m, NULL, NULL));
  cr_assert_eq(fw_count(&f), 1);
  cr_assert(cJSON_IsFalse(json_get(m, "spec.dryRun")), "the removed default is back");
  cr_assert_str_eq(json_get_str(m, "spec.follow.maxCatchupLag"), "16Mi", "the added object got its defaults");
  cJSON_Delete(m);
  fw_stop(&f);
}

LTest(apiserver_admission, real_configurations_send_the_version_the_user_wrote)
{
  /* both versions are listed in godwit's rules: a v1alpha1 request is sent as v1alpha1, and the
   * denial names the v1alpha1 field (docs/webhook.md) */
  cJSON *m = migration("v1alpha1", "{\"sourceSecret\":\"src\",\"targetSecret\":\"dst\",\"tableJobs\":0}");
  struct ls_adm_attrs a = attrs("CREATE", "v1alpha1", "shop");
  cJSON *st = admission_validate(&a, m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_str_eq(json_get_str(st, "message"), "admission webhook \"validate.pgcopydb.io\" denied the request: "
                                                "Migration \"shop\" is invalid: spec.tableJobs: must be between 1 and 128, got 0");
  const cJSON *c = cJSON_GetArrayItem(json_get(st, "details.causes"), 0);
  cr_assert_str_eq(json_get_str(c, "field"), "spec.tableJobs");
  cr_assert_str_eq(json_get_str(c, "reason"), "FieldValueInvalid");
  cr_assert_str_eq(json_get_str(c, "message"), "must be between 1 and 128, got 0");
  cJSON_Delete(st);
  cJSON_Delete(m);
}

struct reinv {
  int a, b;
};

static char *reinv_respond(const char *path, const cJSON *body, int *status, void *ud)
{
  (void)status;
  struct reinv *r = ud;
  if(!strncmp(path, "/a", 2)) {
    r->a++;
    return fw_admission_answer(body, "\"allowed\":true");
  }
  r->b++;
  /* adds a label once (only where it is missing) */
  if(json_get_str(body, "request.object.metadata.labels.b"))
    return fw_admission_answer(body, "\"allowed\":true");
  char *p64 = fw_b64("[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"b\":\"1\"}}]");
  char extra[512];
  snprintf(extra, sizeof(extra), "\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"%s\"", p64);
  free(p64);
  return fw_admission_answer(body, extra);
}

LTest(apiserver_admission, reinvocation_if_needed_once)
{
  struct reinv r = { 0, 0 };
  struct fw f;
  fw_start(&f, reinv_respond, &r);
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", NULL);
  admission_config_set("ValidatingWebhookConfiguration", "godwit-validating", NULL);
  /* sorted by configuration name: "a-first" then "b-second" */
  cJSON *ca = fake_config(&f, "MutatingWebhookConfiguration", "a-first", "/a", MIG_RULES, "\"reinvocationPolicy\":\"IfNeeded\"");
  cJSON *cb = fake_config(&f, "MutatingWebhookConfiguration", "b-second", "/b", MIG_RULES, "\"reinvocationPolicy\":\"IfNeeded\"");
  admission_config_set("MutatingWebhookConfiguration", "b-second", cb);
  admission_config_set("MutatingWebhookConfiguration", "a-first", ca);
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  cr_assert_null(admission_mutate(&a, &m, NULL, NULL));
  cr_assert_eq(r.a, 2, "a ran before b changed the object: reinvoked once (%d)", r.a);
  cr_assert_eq(r.b, 1, "b is not reinvoked by its own change (%d)", r.b);
  cr_assert_str_eq(json_get_str(m, "metadata.labels.b"), "1");
  cr_assert_str_eq(fw_path(&f, 0), "/a?timeout=5s");
  cr_assert_str_eq(fw_path(&f, 1), "/b?timeout=5s");
  cr_assert_str_eq(fw_path(&f, 2), "/a?timeout=5s");
  /* Never: no second round */
  cJSON_DeleteItemFromObject(cJSON_GetArrayItem(json_get(ca, "webhooks"), 0), "reinvocationPolicy");
  admission_config_set("MutatingWebhookConfiguration", "a-first", ca);
  r.a = r.b = 0;
  cJSON *m2 = migration("v1", V1_SPEC "}");
  cr_assert_null(admission_mutate(&a, &m2, NULL, NULL));
  cr_assert_eq(r.a, 1);
  cr_assert_eq(r.b, 1);
  admission_config_set("MutatingWebhookConfiguration", "a-first", NULL);
  admission_config_set("MutatingWebhookConfiguration", "b-second", NULL);
  cJSON_Delete(ca);
  cJSON_Delete(cb);
  cJSON_Delete(m);
  cJSON_Delete(m2);
  fw_stop(&f);
}

static long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

LTest(apiserver_admission, timeout_seconds_is_honoured)
{
  struct answer an = { 0 };
  struct fw f;
  fw_start(&f, respond, &an);
  f.delay_ms = 2500;
  cJSON *cfg = fake_config(&f, "ValidatingWebhookConfiguration", "slow", "/v", MIG_RULES, "");
  cr_assert_eq(json_set(cJSON_GetArrayItem(json_get(cfg, "webhooks"), 0), "timeoutSeconds", cJSON_CreateNumber(1)), GW_OK);
  only_fake("ValidatingWebhookConfiguration", cfg);
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  long t0 = now_ms();
  cJSON *st = admission_validate(&a, m, NULL, NULL);
  long dt = now_ms() - t0;
  cr_assert_not_null(st);
  char want[512];
  snprintf(want, sizeof(want),
           "Internal error occurred: failed calling webhook \"slow.fake.test\": failed to call webhook: Post "
           "\"https://localhost:%d/v?timeout=1s\": context deadline exceeded",
           f.port);
  cr_assert_str_eq(json_get_str(st, "message"), want);
  cr_assert_lt(dt, 2400, "took %ld ms", dt);
  cr_assert_str_eq(fw_path(&f, 0), "/v?timeout=1s");
  cJSON_Delete(st);
  cJSON_Delete(m);
  fw_stop(&f);
}

LTest(apiserver_admission, validating_webhooks_run_in_parallel)
{
  struct answer an = { 0 };
  struct fw f;
  fw_start(&f, respond, &an);
  f.delay_ms = 800;
  admission_config_set("MutatingWebhookConfiguration", "godwit-mutating", NULL);
  admission_config_set("ValidatingWebhookConfiguration", "godwit-validating", NULL);
  const char *names[] = { "p1", "p2", "p3" };
  for(int i = 0; i < 3; i++) {
    cJSON *c = fake_config(&f, "ValidatingWebhookConfiguration", names[i], "/v", MIG_RULES, "");
    admission_config_set("ValidatingWebhookConfiguration", names[i], c);
    cJSON_Delete(c);
  }
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  long t0 = now_ms();
  cr_assert_null(admission_validate(&a, m, NULL, NULL));
  long dt = now_ms() - t0;
  cr_assert_eq(fw_count(&f), 3);
  cr_assert_lt(dt, 2000, "three 800 ms webhooks took %ld ms", dt);
  for(int i = 0; i < 3; i++)
    admission_config_set("ValidatingWebhookConfiguration", names[i], NULL);
  cJSON_Delete(m);
  fw_stop(&f);
}

static cJSON *get_ns(const char *ns)
{
  if(!strcmp(ns, "prod"))
    return tj("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"prod\",\"labels\":{\"env\":\"prod\"}}}");
  if(!strcmp(ns, "dev"))
    return tj("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"dev\",\"labels\":{\"env\":\"dev\"}}}");
  return NULL;
}

LTest(apiserver_admission, namespace_selector_rules_scope_and_dry_run)
{
  struct answer an = { 0 };
  struct fw f;
  fw_start(&f, respond, &an);
  static char map[128];
  snprintf(map, sizeof(map), "godwit-system/godwit-webhook=%s", ADDR);
  const char *const sm[] = { map, NULL };
  struct ls_core_ops ops = { get_ns };
  ls_hooks_init(&ops, sm);
  cJSON *cfg = fake_config(&f, "ValidatingWebhookConfiguration", "nss", "/v",
                           "[{\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],\"operations\":[\"CREATE\"],\"resources\":[\"*\"],\"scope\":\"Namespaced\"}]",
                           "\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"prod\"]}]}");
  cr_assert_eq(json_set_str(cJSON_GetArrayItem(json_get(cfg, "webhooks"), 0), "sideEffects", "Some"), GW_OK);
  only_fake("ValidatingWebhookConfiguration", cfg);
  cJSON *m = migration("v1", V1_SPEC "}");
  struct ls_adm_attrs a = attrs("CREATE", "v1", "shop");
  a.namespace = "dev";
  cr_assert_null(admission_validate(&a, m, NULL, NULL));
  cr_assert_eq(fw_count(&f), 0);
  a.namespace = "prod";
  cr_assert_null(admission_validate(&a, m, NULL, NULL));
  cr_assert_eq(fw_count(&f), 1);
  a.namespace = "ghost";
  cJSON *st = admission_validate(&a, m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_eq(json_get(st, "code")->valueint, 404);
  cr_assert_str_eq(json_get_str(st, "message"), "namespaces \"ghost\" not found");
  cJSON_Delete(st);
  /* "*" does not reach subresources; operations must match; scope Namespaced skips cluster objects */
  a.namespace = "prod";
  a.subresource = "status";
  cr_assert_null(admission_validate(&a, m, NULL, NULL));
  a.subresource = "";
  a.operation = "UPDATE";
  cr_assert_null(admission_validate(&a, m, m, NULL));
  a.operation = "CREATE";
  struct ls_adm_attrs ns = { "CREATE", "", "v1", "Namespace", "namespaces", "", "prod", "", &ALICE, false, NULL };
  cJSON *nso = get_ns("prod");
  cr_assert_null(admission_validate(&ns, nso, NULL, NULL));
  cr_assert_eq(fw_count(&f), 1);
  /* dry run against sideEffects Some */
  a.dry_run = true;
  st = admission_validate(&a, m, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert_eq(json_get(st, "code")->valueint, 400);
  cr_assert_str_eq(json_get_str(st, "reason"), "BadRequest");
  cr_assert_str_eq(json_get_str(st, "message"), "admission webhook \"nss.fake.test\" does not support dry run");
  cJSON_Delete(st);
  cJSON_Delete(nso);
  cJSON_Delete(m);
  fw_stop(&f);
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

TestSuite(apiserver_admission_cluster, .init = cl_up, .fini = cl_down, .timeout = 120);

Test(apiserver_admission_cluster, kubectl_sees_denials_defaults_warnings_and_fail_closed)
{
  char *out;
  const char *bad = lw_cl_file(&CL, "bad.yaml",
                               "apiVersion: pgcopydb.io/v1\nkind: Migration\nmetadata: {name: bad, namespace: default}\n"
                               "spec:\n  source: {connectionSecretRef: {name: same}}\n  target: {connectionSecretRef: {name: same}}\n");
  cr_assert_neq(cl_kubectl(&CL, "alice", &out, "create -f %s", bad), 0, "%s", out);
  cr_assert(strstr(out, "The Migration \"bad\" is invalid: spec.target.connectionSecretRef: names the same Secret and key as the source"),
            "%s", out);
  free(out);
  const char *old = lw_cl_file(&CL, "old.yaml",
                               "apiVersion: pgcopydb.io/v1alpha1\nkind: Migration\nmetadata: {name: old, namespace: default}\n"
                               "spec: {sourceSecret: src, targetSecret: dst, live: true}\n");
  cr_assert_eq(cl_kubectl(&CL, "alice", &out, "create -f %s", old), 0, "%s", out);
  cr_assert(strstr(out, "Warning: pgcopydb.io/v1alpha1 Migration is deprecated; use pgcopydb.io/v1 Migration"), "%s", out);
  free(out);
  cr_assert_eq(cl_kubectl(&CL, "alice", &out, "get migrations.v1.pgcopydb.io old -o jsonpath={.spec.cutover.mode}"), 0);
  cr_assert_str_eq(out, "Manual", "the webhook's default");
  free(out);
  /* runner Pods reach the webhook, other Pods never do */
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "run web --image=nginx --restart=Never"), 0, "%s", out);
  free(out);
  cr_assert_neq(cl_kubectl(&CL, "admin", &out, "run forged --image=x --restart=Never --labels=godwit.dev/runner=x"), 0);
  cr_assert(strstr(out, "admission webhook \"validate-runner-pods.godwit.dev\" denied the request: "), "%s", out);
  free(out);
  /* the webhook gone: failurePolicy Fail for godwit's kinds, plain Pods unaffected */
  lw_cl_kill(&CL, "webhook");
  const char *ok = lw_cl_file(&CL, "ok.yaml",
                              "apiVersion: pgcopydb.io/v1\nkind: Migration\nmetadata: {name: ok, namespace: default}\n"
                              "spec:\n  source: {connectionSecretRef: {name: a}}\n  target: {connectionSecretRef: {name: b}}\n");
  cr_assert_neq(cl_kubectl(&CL, "alice", &out, "create -f %s", ok), 0);
  cr_assert(strstr(out, "Error from server (InternalError): error when creating"), "%s", out);
  cr_assert(strstr(out, "Internal error occurred: failed calling webhook \"mutate.pgcopydb.io\": failed to call webhook: Post "
                        "\"https://godwit-webhook.godwit-system.svc:443/mutate?timeout=5s\": dial tcp 127.0.0.1:"),
            "%s", out);
  cr_assert(strstr(out, ": connect: connection refused"), "%s", out);
  free(out);
  cr_assert_eq(cl_kubectl(&CL, "admin", &out, "run web2 --image=nginx --restart=Never"), 0, "%s", out);
  free(out);
}

/* Two writers patch one Migration at once, each patch going through both webhooks (which
 * widens the window between read and write): kube-apiserver re-applies a patch without a
 * resourceVersion to the state it finds, so neither writer ever sees 409. */
struct patcher {
  struct ra *a;
  const char *key;
  int n, failures;
  long last_code;
};

static void *patch_loop(void *arg)
{
  struct patcher *p = arg;
  for(int i = 0; i < p->n; i++) {
    char body[128];
    snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"%s\":\"v%d\"}}}", p->key, i);
    struct ra_resp r;
    ra_call(p->a, "PATCH", "/apis/pgcopydb.io/v1/namespaces/default/migrations/race",
            "application/merge-patch+json", body, &r);
    if(r.code != 200) {
      p->failures++;
      p->last_code = r.code;
    }
    ra_resp_free(&r);
  }
  return NULL;
}

Test(apiserver_admission_cluster, concurrent_patches_through_the_webhooks_never_conflict)
{
  struct ra a;
  ra_init(&a, &CL, "admin");
  cJSON_Delete(ra_ok(&a, "POST", "/apis/pgcopydb.io/v1/namespaces/default/migrations",
                     "{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"metadata\":"
                     "{\"name\":\"race\"},\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":"
                     "\"s\"}},\"target\":{\"connectionSecretRef\":{\"name\":\"t\"}}}}",
                     201));
  struct patcher x = { &a, "x", 60, 0, 0 }, y = { &a, "y", 60, 0, 0 };
  pthread_t tx, ty;
  cr_assert_eq(pthread_create(&tx, NULL, patch_loop, &x), 0);
  cr_assert_eq(pthread_create(&ty, NULL, patch_loop, &y), 0);
  pthread_join(tx, NULL);
  pthread_join(ty, NULL);
  cr_assert_eq(x.failures + y.failures, 0, "%d patches refused (last %ld)",
               x.failures + y.failures, x.failures ? x.last_code : y.last_code);
  cJSON *m = ra_ok(&a, "GET", "/apis/pgcopydb.io/v1/namespaces/default/migrations/race", NULL,
                   200);
  cr_assert_str_eq(ra_str(m, "metadata.labels.x"), "v59");
  cr_assert_str_eq(ra_str(m, "metadata.labels.y"), "v59");
  cJSON_Delete(m);
}
