/* podmeta: syntax, reserved prefixes, admin policy and size of runner Pod metadata. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "api/podmeta.h"
#include "apitest.h"

#define P "spec.execution.podMetadata"

/* Labels: "team" allowed with any value but "secret"; anything under example.com/ allowed. */
#define LABEL_POLICY                                                                             \
  "{\"podMetadata\":{\"labels\":{\"allow\":[{\"key\":\"team\"},{\"key\":\"example.com/*\"}],"    \
  "\"deny\":[{\"key\":\"team\",\"values\":[\"secret\"]}]},"                                      \
  "\"annotations\":{\"deny\":[{\"key\":\"sidecar.example.com/*\"}]}}}"

struct case_ {
  const char *name;
  const char *pm;      /* podMetadata JSON */
  bool use_policy;     /* LABEL_POLICY instead of the built-in one */
  const char *field;   /* NULL: no error at all */
  const char *reason;
  bool policy;         /* the error is a policy refusal */
};

static const struct case_ cases[] = {
  { "valid labels and annotations",
    "{\"labels\":{\"team\":\"payments\",\"example.com/tier\":\"db\",\"empty\":\"\"},"
    "\"annotations\":{\"example.com/note\":\"any text, spaces and / slashes\"}}",
    false, NULL, NULL, false },
  { "empty podMetadata", "{}", false, NULL, NULL, false },
  { "label key starting with a dash", "{\"labels\":{\"-team\":\"a\"}}", false,
    P ".labels[-team]", "FieldValueInvalid", false },
  { "label key with two slashes", "{\"labels\":{\"a.com/b/c\":\"a\"}}", false,
    P ".labels[a.com/b/c]", "FieldValueInvalid", false },
  { "label key with an upper-case prefix", "{\"labels\":{\"Example.com/x\":\"a\"}}", false,
    P ".labels[Example.com/x]", "FieldValueInvalid", false },
  { "label value with a space", "{\"labels\":{\"team\":\"a b\"}}", false, P ".labels[team]",
    "FieldValueInvalid", false },
  { "label value too long",
    "{\"labels\":{\"team\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}",
    false, P ".labels[team]", "FieldValueInvalid", false },
  { "label value not a string", "{\"labels\":{\"team\":3}}", false, P ".labels[team]",
    "FieldValueTypeInvalid", false },
  { "annotation key invalid", "{\"annotations\":{\"bad key\":\"x\"}}", false,
    P ".annotations[bad key]", "FieldValueInvalid", false },
  { "annotation value not a string", "{\"annotations\":{\"note\":true}}", false,
    P ".annotations[note]", "FieldValueTypeInvalid", false },
  { "reserved ptah.run/", "{\"labels\":{\"ptah.run/operation\":\"x\"}}", false,
    P ".labels[ptah.run/operation]", "FieldValueForbidden", false },
  { "reserved operator.ptah.run/", "{\"annotations\":{\"operator.ptah.run/unresolved-run\":\"{}\"}}",
    false, P ".annotations[operator.ptah.run/unresolved-run]", "FieldValueForbidden", false },
  { "reserved kubernetes.io/", "{\"labels\":{\"kubernetes.io/arch\":\"amd64\"}}", false,
    P ".labels[kubernetes.io/arch]", "FieldValueForbidden", false },
  { "reserved subdomain of kubernetes.io", "{\"labels\":{\"app.kubernetes.io/name\":\"x\"}}",
    false, P ".labels[app.kubernetes.io/name]", "FieldValueForbidden", false },
  { "reserved k8s.io/", "{\"annotations\":{\"k8s.io/x\":\"y\"}}", false, P ".annotations[k8s.io/x]",
    "FieldValueForbidden", false },
  { "reserved subdomain of k8s.io", "{\"annotations\":{\"foo.k8s.io/x\":\"y\"}}", false,
    P ".annotations[foo.k8s.io/x]", "FieldValueForbidden", false },
  { "reserved godwit.dev/", "{\"labels\":{\"godwit.dev/runner\":\"true\"}}", false,
    P ".labels[godwit.dev/runner]", "FieldValueForbidden", false },
  { "reserved subdomain of godwit.dev", "{\"annotations\":{\"x.godwit.dev/template-digest\":\"y\"}}",
    false, P ".annotations[x.godwit.dev/template-digest]", "FieldValueForbidden", false },
  { "a domain ending in kubernetes.io without a dot is the user's",
    "{\"labels\":{\"notkubernetes.io/x\":\"y\",\"kubernetes.io.example.com/x\":\"y\","
    "\"ptah.running/x\":\"y\",\"kubernetes\":\"y\",\"example.com/kubernetes.io\":\"y\"}}",
    false, NULL, NULL, false },
  { "policy: allowed key", "{\"labels\":{\"team\":\"payments\",\"example.com/a\":\"b\"}}", true,
    NULL, NULL, false },
  { "policy: denied value", "{\"labels\":{\"team\":\"secret\"}}", true, P ".labels[team]",
    "FieldValueForbidden", true },
  { "policy: key no allow rule matches", "{\"labels\":{\"owner\":\"me\"}}", true,
    P ".labels[owner]", "FieldValueForbidden", true },
  { "policy: denied annotation", "{\"annotations\":{\"sidecar.example.com/inject\":\"true\"}}",
    true, P ".annotations[sidecar.example.com/inject]", "FieldValueForbidden", true },
  { "policy: annotations without allow rules are open", "{\"annotations\":{\"owner\":\"me\"}}",
    true, NULL, NULL, false },
  { "policy: a reserved key is refused as reserved, not by the policy",
    "{\"labels\":{\"kubernetes.io/x\":\"y\"}}", true, P ".labels[kubernetes.io/x]",
    "FieldValueForbidden", false },
};

ParameterizedTestParameters(podmeta, cases)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, podmeta, cases)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct policy *p = c->use_policy ? t_policy(LABEL_POLICY) : policy_default();
  cJSON *pm = t_json(c->pm);
  struct api_result r;
  api_result_init(&r);
  podmeta_check(pm, P, p, &r.errs);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    cr_assert_eq(r.errs.n, 1, "%s: expected exactly one error, got: %s", c->name, t_causes(&r));
    t_expect_cause(&r, c->field, c->reason);
    cr_assert_eq(r.errs.v[0].policy, c->policy, "%s: policy flag", c->name);
  }
  api_result_release(&r);
  cJSON_Delete(pm);
  policy_free(p);
}

Test(podmeta, reserved_message_names_prefix_owner_and_a_way_out)
{
  cJSON *pm = t_json("{\"labels\":{\"app.kubernetes.io/name\":\"shop\"}}");
  struct api_result r;
  api_result_init(&r);
  podmeta_check(pm, P, NULL, &r.errs);
  t_expect_message(&r, P ".labels[app.kubernetes.io/name]",
                   "key \"app.kubernetes.io/name\" uses the reserved prefix \"kubernetes.io/\" "
                   "(Kubernetes reserves it for its own components); use a key under your own "
                   "domain, such as \"example.com/name\"");
  api_result_release(&r);
  cJSON_Delete(pm);
}

Test(podmeta, most_specific_reserved_prefix_is_named)
{
  cr_assert_str_eq(podmeta_reserved_prefix("operator.ptah.run/x"), "operator.ptah.run");
  cr_assert_str_eq(podmeta_reserved_prefix("ptah.run/x"), "ptah.run");
  cr_assert_str_eq(podmeta_reserved_prefix("a.b.ptah.run/x"), "ptah.run");
  cr_assert_str_eq(podmeta_reserved_prefix("app.kubernetes.io/name"), "kubernetes.io");
  cr_assert_str_eq(podmeta_reserved_prefix("k8s.io/x"), "k8s.io");
  cr_assert_str_eq(podmeta_reserved_prefix("godwit.dev/runner"), "godwit.dev");
  cr_assert_null(podmeta_reserved_prefix("kubernetes.io"), "no prefix, no reservation");
  cr_assert_null(podmeta_reserved_prefix("xk8s.io/x"));
  cr_assert_null(podmeta_reserved_prefix("example.com/x"));
}

Test(podmeta, policy_messages_say_what_to_do)
{
  struct policy *p = t_policy(LABEL_POLICY);
  cJSON *pm = t_json("{\"labels\":{\"team\":\"secret\",\"owner\":\"me\"}}");
  struct api_result r;
  api_result_init(&r);
  podmeta_check(pm, P, p, &r.errs);
  cr_assert_eq(r.errs.n, 2, "%s", t_causes(&r));
  cr_assert(ferrs_all_policy(&r.errs), "policy refusals alone make a 403");
  t_expect_message(&r, P ".labels[team]",
                   "label team=\"secret\" is denied by the admission policy's deny rule for key "
                   "\"team\"; remove it, or ask the cluster admin to change the policy");
  t_expect_message(&r, P ".labels[owner]", "ask the cluster admin to allow it or remove it");
  api_result_release(&r);
  cJSON_Delete(pm);
  policy_free(p);
}

Test(podmeta, every_offending_entry_is_reported)
{
  cJSON *pm = t_json("{\"labels\":{\"-a\":\"x\",\"k8s.io/b\":\"y\",\"ok\":\"z\",\"c\":\"no way\"},"
                     "\"annotations\":{\"godwit.dev/d\":\"w\"}}");
  struct api_result r;
  api_result_init(&r);
  podmeta_check(pm, P, NULL, &r.errs);
  cr_assert_eq(r.errs.n, 4, "%s", t_causes(&r));
  t_expect_cause(&r, P ".labels[-a]", "FieldValueInvalid");
  t_expect_cause(&r, P ".labels[k8s.io/b]", "FieldValueForbidden");
  t_expect_cause(&r, P ".labels[c]", "FieldValueInvalid");
  t_expect_cause(&r, P ".annotations[godwit.dev/d]", "FieldValueForbidden");
  cr_assert_not(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  cJSON_Delete(pm);
}

/* podMetadata with one annotation whose value makes keys and values total `total` bytes. */
static cJSON *annotations_of_size(size_t total)
{
  const char *key = "example.com/blob";
  size_t n = total - strlen(key);
  char *v = malloc(n + 1);
  memset(v, 'x', n);
  v[n] = '\0';
  cJSON *pm = cJSON_CreateObject();
  cJSON *a = cJSON_AddObjectToObject(pm, "annotations");
  cJSON_AddStringToObject(a, key, v);
  free(v);
  return pm;
}

Test(podmeta, annotations_total_at_most_256KiB)
{
  struct api_result r;
  cJSON *pm = annotations_of_size(PODMETA_MAX_ANNOTATION_BYTES);
  api_result_init(&r);
  podmeta_check(pm, P, NULL, &r.errs);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_Delete(pm);

  pm = annotations_of_size(PODMETA_MAX_ANNOTATION_BYTES + 1);
  api_result_init(&r);
  podmeta_check(pm, P, NULL, &r.errs);
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  t_expect_cause(&r, P ".annotations", "FieldValueTooLong");
  t_expect_message(&r, P ".annotations", "got 262145");
  api_result_release(&r);
  cJSON_Delete(pm);
}

Test(podmeta, shapes_that_are_not_objects_are_left_to_the_schema)
{
  const char *shapes[] = { "[]", "\"x\"", "{\"labels\":[1]}", "{\"annotations\":\"a=b\"}", "null" };
  for(size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
    cJSON *pm = t_json(shapes[i]);
    struct api_result r;
    api_result_init(&r);
    podmeta_check(pm, P, NULL, &r.errs);
    cr_assert_eq(r.errs.n, 0, "%s: %s", shapes[i], t_causes(&r));
    api_result_release(&r);
    cJSON_Delete(pm);
  }
  struct api_result r;
  api_result_init(&r);
  podmeta_check(NULL, P, NULL, &r.errs);
  t_expect_allowed(&r);
  api_result_release(&r);
}

Test(podmeta, image_registry_policy)
{
  struct policy *p =
    t_policy("{\"images\":{\"allowedRegistries\":[\"registry.example.com/\",\"ghcr.io/ptah/\"]}}");
  struct api_result r;
  api_result_init(&r);
  podmeta_check_image("registry.example.com/ptah/runner:1.4", "spec.x", p, &r.errs);
  podmeta_check_image("ghcr.io/ptah/runner@sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c"
                      "0a7a4b9a1f0e6c3d", "spec.x", p, &r.errs);
  podmeta_check_image(NULL, "spec.x", p, &r.errs);
  t_expect_allowed(&r);
  podmeta_check_image("docker.io/library/runner:1", "spec.x", p, &r.errs);
  cr_assert_eq(r.errs.n, 1);
  t_expect_cause(&r, "spec.x", "FieldValueForbidden");
  t_expect_message(&r, "spec.x", "use an image under \"registry.example.com/\", \"ghcr.io/ptah/\"");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  policy_free(p);

  p = policy_default();
  api_result_init(&r);
  podmeta_check_image("docker.io/library/runner:1", "spec.x", p, &r.errs);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}
