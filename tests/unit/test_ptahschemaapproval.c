/* PtahSchemaApproval: the approver is stamped, forgery and outsiders are refused, self-approval
 * follows the policy, the spec never changes, v1alpha1 paths. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "ptah.run"
#define K "PtahSchemaApproval"
#define DIGEST "sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d"
#define OTHER "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define META "\"metadata\":{\"name\":\"orders-approval-1\",\"namespace\":\"shop\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META
#define V1A "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META
#define SPEC(...) "{" V1 ",\"spec\":{\"schemaRef\":{\"name\":\"orders\"}," __VA_ARGS__ "}}"
#define ASPEC(...) "{" V1A ",\"spec\":{\"schema\":\"orders\"," __VA_ARGS__ "}}"
#define APPROVED(who) SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"" who "\"")

/* Only the db-approvers group may approve. */
#define GROUP_POLICY "{\"approvals\":{\"approvers\":{\"groups\":[\"db-approvers\"]}}}"

enum { ALICE, BOB };

struct case_ {
  const char *name;
  const char *obj;
  int user;
  const char *policy; /* NULL: the built-in policy */
  const char *field;  /* NULL: allowed */
  const char *reason;
  bool policy_only;   /* the denial is made only of policy refusals (403) */
  const char *also; /* the other causes: "field Reason; field Reason" */
};

static const struct case_ cases[] = {
  { "approved by the authenticated user", APPROVED("alice"), ALICE, NULL, NULL, NULL, false },
  { "with a comment and another author",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":\"bob\","
         "\"comment\":\"reviewed the index change\""),
    ALICE, NULL, NULL, NULL, false },
  { "forged approver", APPROVED("bob"), ALICE, NULL, "spec.approver", "FieldValueForbidden",
    false },
  { "approver not stamped", SPEC("\"planDigest\":\"" DIGEST "\""), ALICE, NULL, "spec.approver",
    "FieldValueRequired", false },
  { "empty approver is not a user name", SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"\""),
    ALICE, NULL, "spec.approver", "FieldValueInvalid", false },
  { "digest missing", SPEC("\"approver\":\"alice\""), ALICE, NULL, "spec.planDigest",
    "FieldValueRequired", false },
  { "digest without prefix",
    SPEC("\"planDigest\":\"0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\","
         "\"approver\":\"alice\""),
    ALICE, NULL, "spec.planDigest", "FieldValueInvalid", false },
  { "digest upper-case hex",
    SPEC("\"planDigest\":\"sha256:0D5EE5FC8EB6A1E8C77B1B1DD1B2CBB0B3D2F8B6BD7A3C5C0A7A4B9A1F0E6C3D\","
         "\"approver\":\"alice\""),
    ALICE, NULL, "spec.planDigest", "FieldValueInvalid", false },
  { "digest too short", SPEC("\"planDigest\":\"sha256:0d5e\",\"approver\":\"alice\""), ALICE, NULL,
    "spec.planDigest", "FieldValueInvalid", false },
  { "digest of another algorithm",
    SPEC("\"planDigest\":\"sha512:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\","
         "\"approver\":\"alice\""),
    ALICE, NULL, "spec.planDigest", "FieldValueInvalid", false },
  { "schemaRef required",
    "{" V1 ",\"spec\":{\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\"}}", ALICE, NULL,
    "spec.schemaRef", "FieldValueRequired", false },
  { "comment too long",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"comment\":\""
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "\""),
    ALICE, NULL, "spec.comment", "FieldValueTooLong", false },
  { "approver in the approvers group", APPROVED("alice"), ALICE, GROUP_POLICY, NULL, NULL, false },
  { "approver outside the approvers group", APPROVED("bob"), BOB, GROUP_POLICY, "spec.approver",
    "FieldValueForbidden", true },
  { "approver listed by name", APPROVED("bob"), BOB,
    "{\"approvals\":{\"approvers\":{\"users\":[\"bob\"]}}}", NULL, NULL, false },
  { "any user approves under the built-in policy", APPROVED("bob"), BOB, NULL, NULL, NULL, false },
  { "self-approval",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":\"alice\""), ALICE,
    NULL, "spec.approver", "FieldValueForbidden", true },
  { "self-approval forbidden explicitly",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":\"alice\""), ALICE,
    "{\"approvals\":{\"allowSelfApproval\":false}}", "spec.approver", "FieldValueForbidden", true },
  { "self-approval allowed by policy",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":\"alice\""), ALICE,
    "{\"approvals\":{\"allowSelfApproval\":true}}", NULL, NULL, false },
  { "outsider approving their own plan: two policy refusals",
    SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"bob\",\"planAuthor\":\"bob\""), BOB,
    GROUP_POLICY, "spec.approver", "FieldValueForbidden", true,
    .also = "spec.approver FieldValueForbidden" },
  { "forgery next to a policy refusal is not a 403", APPROVED("alice"), BOB, GROUP_POLICY,
    "spec.approver", "FieldValueForbidden", false,
    .also = "spec.approver FieldValueForbidden" },
  { "v1alpha1 approved", ASPEC("\"digest\":\"" DIGEST "\",\"approvedBy\":\"alice\""), ALICE, NULL,
    NULL, NULL, false },
  { "v1alpha1 forged approver", ASPEC("\"digest\":\"" DIGEST "\",\"approvedBy\":\"bob\""), ALICE,
    NULL, "spec.approvedBy", "FieldValueForbidden", false },
  { "v1alpha1 approver not stamped", ASPEC("\"digest\":\"" DIGEST "\""), ALICE, NULL,
    "spec.approvedBy", "FieldValueRequired", false },
  { "v1alpha1 bad digest", ASPEC("\"digest\":\"sha256:xyz\",\"approvedBy\":\"alice\""), ALICE,
    NULL, "spec.digest", "FieldValueInvalid", false },
  { "v1alpha1 digest missing", ASPEC("\"approvedBy\":\"alice\""), ALICE, NULL, "spec.digest",
    "FieldValueRequired", false },
  { "v1alpha1 schema missing",
    "{" V1A ",\"spec\":{\"digest\":\"" DIGEST "\",\"approvedBy\":\"alice\"}}", ALICE, NULL,
    "spec.schema", "FieldValueRequired", false },
  { "v1alpha1 outsider", ASPEC("\"digest\":\"" DIGEST "\",\"approvedBy\":\"bob\""), BOB,
    GROUP_POLICY, "spec.approvedBy", "FieldValueForbidden", true },
  { "v1alpha1 self-approval carried in the v1 fields annotation",
    "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"a\","
    "\"annotations\":{\"godwit.dev/v1-fields\":\"{\\\"spec\\\":{\\\"planAuthor\\\":\\\"alice\\\"}}\"}},"
    "\"spec\":{\"schema\":\"orders\",\"digest\":\"" DIGEST "\",\"approvedBy\":\"alice\"}}",
    ALICE, NULL, "spec.approvedBy", "FieldValueForbidden", true },
};

ParameterizedTestParameters(ptahschemaapproval, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahschemaapproval, rules)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct policy *p = c->policy ? t_policy(c->policy) : NULL;
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, c->obj, NULL, c->user == BOB ? &T_BOB : &T_ALICE, p);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1 + t_expect_also(&r, c->also));
    cr_assert_eq(ferrs_all_policy(&r.errs), c->policy_only, "403 or 422: %s", t_causes(&r));
  }
  api_result_release(&r);
  policy_free(p);
}

struct update_ {
  const char *name;
  const char *obj;
  int user;
  const char *field; /* NULL: allowed */
  const char *reason;
};

/* The stored approval: alice approved DIGEST of orders, written by bob. */
#define STORED SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":\"bob\"")

static const struct update_ updates[] = {
  { "metadata-only update by someone else", STORED, BOB, NULL, NULL },
  { "digest changed", SPEC("\"planDigest\":\"" OTHER "\",\"approver\":\"alice\",\"planAuthor\":"
                           "\"bob\""),
    ALICE, "spec", "FieldValueForbidden" },
  { "approver changed", SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"bob\",\"planAuthor\":"
                             "\"bob\""),
    BOB, "spec", "FieldValueForbidden" },
  { "schema changed",
    "{" V1 ",\"spec\":{\"schemaRef\":{\"name\":\"other\"},\"planDigest\":\"" DIGEST "\","
    "\"approver\":\"alice\",\"planAuthor\":\"bob\"}}",
    ALICE, "spec", "FieldValueForbidden" },
  { "comment added", SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":"
                          "\"bob\",\"comment\":\"late note\""),
    ALICE, "spec", "FieldValueForbidden" },
  { "plan author removed", SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\""), ALICE,
    "spec", "FieldValueForbidden" },
};

ParameterizedTestParameters(ptahschemaapproval, updates)
{
  static size_t idx[sizeof(updates) / sizeof(updates[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahschemaapproval, updates)
{
  const struct update_ *c = &updates[*i];
  cr_log_info("case: %s", c->name);
  /* Policy changes after the approval do not block metadata updates. */
  struct policy *p = t_policy("{\"approvals\":{\"approvers\":{\"users\":[\"carol\"]}}}");
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, c->obj, STORED, c->user == BOB ? &T_BOB : &T_ALICE, p);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1);
    t_expect_message(&r, "spec", "is immutable: an approval is a statement about one plan by one "
                                 "person; create a new PtahSchemaApproval instead");
  }
  api_result_release(&r);
  policy_free(p);
}

/* Mutation then validation, as the apiserver runs them. */
static cJSON *admit_mutated(struct api_result *r, enum api_op op, const char *obj,
                            const char *old, const struct t_user *u, const struct policy *p)
{
  cJSON *m = t_default(op, G, K, obj, old, u, p);
  char *s = cJSON_PrintUnformatted(m);
  t_admit(r, op, G, K, s, old, u, p);
  cJSON_free(s);
  return m;
}

Test(ptahschemaapproval, approver_is_stamped_from_the_authenticated_user)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, SPEC("\"planDigest\":\"" DIGEST "\""), NULL, &T_BOB,
                           NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.approver"), "bob");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, an_empty_approver_is_stamped)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"\""),
                           NULL, &T_BOB, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.approver"), "bob");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, a_written_approver_is_not_overwritten_and_forgery_is_refused)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, APPROVED("alice"), NULL, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.approver"), "alice");
  t_expect_cause(&r, "spec.approver", "FieldValueForbidden");
  t_expect_message(&r, "spec.approver", "must be the authenticated user \"bob\", got \"alice\": "
                                        "leave it empty and the webhook fills it in with your "
                                        "user name");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, stamped_self_approval_is_refused)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE,
                           SPEC("\"planDigest\":\"" DIGEST "\",\"planAuthor\":\"alice\""), NULL,
                           &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.approver"), "alice");
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  t_expect_message(&r, "spec.approver", "user \"alice\" wrote this plan (spec.planAuthor) and the "
                                        "admission policy forbids approving one's own plan");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, outsider_message)
{
  struct policy *p = t_policy(GROUP_POLICY);
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, SPEC("\"planDigest\":\"" DIGEST "\""), NULL, &T_BOB, p);
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  t_expect_message(&r, "spec.approver", "user \"bob\" is not among the admission policy's "
                                        "approvers (approvals.approvers)");
  api_result_release(&r);
  cJSON_Delete(o);
  policy_free(p);
}

Test(ptahschemaapproval, a_replace_without_the_approver_keeps_it)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_UPDATE, SPEC("\"planDigest\":\"" DIGEST "\",\"planAuthor\":"
                                                "\"bob\""),
                           STORED, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.approver"), "alice", "restored, not restamped as bob");
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, v1alpha1_is_stamped_in_its_own_field)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, ASPEC("\"digest\":\"" DIGEST "\""), NULL, &T_ALICE,
                           NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.approvedBy"), "alice");
  cr_assert_null(json_get(o, "spec.approver"));
  cr_assert_null(json_get(o, "metadata.annotations"));
  t_expect_warning(&r, G "/v1alpha1 PtahSchemaApproval is deprecated");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschemaapproval, without_a_request_user)
{
  /* The controller re-validates: an unstamped approval is refused, a stamped one judged on its
   * own fields, including self-approval. */
  struct policy *p = policy_default();
  const char *objs[] = { SPEC("\"planDigest\":\"" DIGEST "\""), APPROVED("bob"),
                         SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"bob\",\"planAuthor\":"
                              "\"bob\"") };
  const char *want[] = { "FieldValueRequired", NULL, "FieldValueForbidden" };
  for(int i = 0; i < 3; i++) {
    cJSON *obj = t_json(objs[i]);
    struct api_request req = { .kind = t_kind(G, K), .obj = obj, .op = API_CREATE, .policy = p };
    struct api_result r;
    api_result_init(&r);
    cr_assert_eq(api_validate(&req, &r), GW_OK);
    if(want[i])
      t_expect_cause(&r, "spec.approver", want[i]);
    else
      t_expect_allowed(&r);
    api_result_release(&r);
    cJSON_Delete(obj);
  }
  policy_free(p);
}

Test(ptahschemaapproval, conversion_is_lossless)
{
  cJSON *o = t_json(SPEC("\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"planAuthor\":"
                         "\"bob\",\"comment\":\"ok\"") );
  cJSON_AddItemToObject(o, "status", t_json("{\"phase\":\"Stale\",\"observedGeneration\":1}"));
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.schema"), "orders");
  cr_assert_str_eq(json_get_str(o, "spec.digest"), DIGEST);
  cr_assert_str_eq(json_get_str(o, "spec.approvedBy"), "alice");
  cr_assert_str_eq(json_get_str(o, "status.phase"), "Stale");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(o, "metadata.annotations"),
                                                            "godwit.dev/v1-fields")),
                   "{\"spec\":{\"comment\":\"ok\",\"planAuthor\":\"bob\"}}");
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(ptahschemaapproval, deeply_nested_unknown_fields_are_compared_quickly, .timeout = 10)
{
  /* An unknown field 90 objects deep: cJSON_Compare would take 2^90 steps on an update. */
  char deep[2048] = "";
  for(int i = 0; i < 90; i++)
    strcat(deep, "{\"a\":");
  strcat(deep, "1");
  for(int i = 0; i < 90; i++)
    strcat(deep, "}");
  char obj[4096];
  snprintf(obj, sizeof(obj), "{" V1 ",\"spec\":{\"schemaRef\":{\"name\":\"orders\"},"
           "\"planDigest\":\"" DIGEST "\",\"approver\":\"alice\",\"x\":%s}}", deep);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, obj, obj, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, "unknown field \"spec.x\"");
  api_result_release(&r);
  /* One level changed at the bottom is a change. */
  char changed[4096];
  snprintf(changed, sizeof(changed), "%s", obj);
  *strstr(changed, "1}") = '2';
  t_admit(&r, API_UPDATE, G, K, changed, obj, &T_ALICE, NULL);
  t_expect_cause(&r, "spec", "FieldValueForbidden");
  api_result_release(&r);
}
