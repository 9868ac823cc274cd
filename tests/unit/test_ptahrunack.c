/* PtahMigrationRunAcknowledgment: acknowledgedBy is stamped, forgery and outsiders refused, the
 * spec never changes, v1alpha1's boolean maps to the outcome and Partial survives it. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "ptah.run"
#define K "PtahMigrationRunAcknowledgment"
#define META "\"metadata\":{\"name\":\"shop-apply-3-ack\",\"namespace\":\"shop\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META
#define V1A "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META
#define SPEC(...) "{" V1 ",\"spec\":{\"migrationRef\":{\"name\":\"shop\"},\"operation\":" \
                  "\"shop-apply-3\"," __VA_ARGS__ "}}"
#define ASPEC(...) "{" V1A ",\"spec\":{\"migration\":\"shop\",\"operation\":\"shop-apply-3\"," \
                   __VA_ARGS__ "}}"
#define ACKED(outcome, who) SPEC("\"outcome\":\"" outcome "\",\"acknowledgedBy\":\"" who "\"")
#define GROUP_POLICY "{\"approvals\":{\"approvers\":{\"groups\":[\"db-approvers\"]}}}"

enum { ALICE, BOB };

struct case_ {
  const char *name;
  const char *obj;
  int user;
  const char *policy;
  const char *field; /* NULL: allowed */
  const char *reason;
  bool policy_only;
};

static const struct case_ cases[] = {
  { "applied", ACKED("Applied", "alice"), ALICE, NULL, NULL, NULL, false },
  { "not applied", ACKED("NotApplied", "alice"), ALICE, NULL, NULL, NULL, false },
  { "partial, with a comment",
    SPEC("\"outcome\":\"Partial\",\"acknowledgedBy\":\"alice\",\"comment\":\"0007 is in "
         "ptah_migrations, 0008 is not\""),
    ALICE, NULL, NULL, NULL, false },
  { "outcome not in the enum", ACKED("Unknown", "alice"), ALICE, NULL, "spec.outcome",
    "FieldValueNotSupported", false },
  { "outcome missing", SPEC("\"acknowledgedBy\":\"alice\""), ALICE, NULL, "spec.outcome",
    "FieldValueRequired", false },
  { "operation missing",
    "{" V1 ",\"spec\":{\"migrationRef\":{\"name\":\"shop\"},\"outcome\":\"Applied\","
    "\"acknowledgedBy\":\"alice\"}}",
    ALICE, NULL, "spec.operation", "FieldValueRequired", false },
  { "operation syntax",
    "{" V1 ",\"spec\":{\"migrationRef\":{\"name\":\"shop\"},\"operation\":\"Apply 3\","
    "\"outcome\":\"Applied\",\"acknowledgedBy\":\"alice\"}}",
    ALICE, NULL, "spec.operation", "FieldValueInvalid", false },
  { "migrationRef missing",
    "{" V1 ",\"spec\":{\"operation\":\"a\",\"outcome\":\"Applied\",\"acknowledgedBy\":\"alice\"}}",
    ALICE, NULL, "spec.migrationRef", "FieldValueRequired", false },
  { "forged", ACKED("Applied", "bob"), ALICE, NULL, "spec.acknowledgedBy", "FieldValueForbidden",
    false },
  { "not stamped", SPEC("\"outcome\":\"Applied\""), ALICE, NULL, "spec.acknowledgedBy",
    "FieldValueRequired", false },
  { "approver group member", ACKED("Applied", "alice"), ALICE, GROUP_POLICY, NULL, NULL, false },
  { "outside the approvers", ACKED("Applied", "bob"), BOB, GROUP_POLICY, "spec.acknowledgedBy",
    "FieldValueForbidden", true },
  { "v1alpha1 committed", ASPEC("\"committed\":true,\"acknowledgedBy\":\"alice\""), ALICE, NULL,
    NULL, NULL, false },
  { "v1alpha1 not committed", ASPEC("\"committed\":false,\"acknowledgedBy\":\"alice\""), ALICE,
    NULL, NULL, NULL, false },
  { "v1alpha1 committed missing", ASPEC("\"acknowledgedBy\":\"alice\""), ALICE, NULL,
    "spec.committed", "FieldValueRequired", false },
  { "v1alpha1 committed is a boolean", ASPEC("\"committed\":\"Applied\",\"acknowledgedBy\":\"alice\""),
    ALICE, NULL, "spec.committed", "FieldValueTypeInvalid", false },
  { "v1alpha1 forged", ASPEC("\"committed\":true,\"acknowledgedBy\":\"bob\""), ALICE, NULL,
    "spec.acknowledgedBy", "FieldValueForbidden", false },
  { "v1alpha1 migration missing",
    "{" V1A ",\"spec\":{\"operation\":\"a\",\"committed\":true,\"acknowledgedBy\":\"alice\"}}",
    ALICE, NULL, "spec.migration", "FieldValueRequired", false },
  { "v1alpha1 outsider", ASPEC("\"committed\":true,\"acknowledgedBy\":\"bob\""), BOB,
    GROUP_POLICY, "spec.acknowledgedBy", "FieldValueForbidden", true },
};

ParameterizedTestParameters(ptahrunack, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahrunack, rules)
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
    t_expect_cause_count(&r, 1);
    cr_assert_eq(ferrs_all_policy(&r.errs), c->policy_only, "403 or 422: %s", t_causes(&r));
  }
  api_result_release(&r);
  policy_free(p);
}

#define STORED ACKED("NotApplied", "alice")

Test(ptahrunack, spec_is_immutable)
{
  const char *changed[] = {
    ACKED("Applied", "alice"),
    ACKED("NotApplied", "bob"),
    SPEC("\"outcome\":\"NotApplied\",\"acknowledgedBy\":\"alice\",\"comment\":\"x\""),
    "{" V1 ",\"spec\":{\"migrationRef\":{\"name\":\"shop\"},\"operation\":\"shop-apply-4\","
    "\"outcome\":\"NotApplied\",\"acknowledgedBy\":\"alice\"}}",
  };
  for(size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, changed[i], STORED, &T_ALICE, NULL);
    cr_assert_eq(r.errs.n, 1, "%zu: %s", i, t_causes(&r));
    t_expect_cause(&r, "spec", "FieldValueForbidden");
    t_expect_message(&r, "spec", "is immutable: an acknowledgment is a statement about one run by "
                                 "one person; create a new PtahMigrationRunAcknowledgment instead");
    api_result_release(&r);
  }
  struct api_result r;
  struct policy *p = t_policy(GROUP_POLICY);
  t_admit(&r, API_UPDATE, G, K, STORED, STORED, &T_BOB, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

static cJSON *admit_mutated(struct api_result *r, enum api_op op, const char *obj,
                            const char *old, const struct t_user *u, const struct policy *p)
{
  cJSON *m = t_default(op, G, K, obj, old, u, p);
  char *s = cJSON_PrintUnformatted(m);
  t_admit(r, op, G, K, s, old, u, p);
  cJSON_free(s);
  return m;
}

Test(ptahrunack, acknowledger_is_stamped)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, SPEC("\"outcome\":\"Partial\""), NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.acknowledgedBy"), "alice");
  api_result_release(&r);
  cJSON_Delete(o);

  o = admit_mutated(&r, API_CREATE, ASPEC("\"committed\":true"), NULL, &T_BOB, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.acknowledgedBy"), "bob");
  cr_assert(cJSON_IsTrue(json_get(o, "spec.committed")));
  cr_assert_null(json_get(o, "spec.outcome"), "v1alpha1 keeps its boolean");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahrunack, forgery_message)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, ACKED("Applied", "alice"), NULL, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.acknowledgedBy"), "alice");
  t_expect_message(&r, "spec.acknowledgedBy", "must be the authenticated user \"bob\", got "
                                              "\"alice\": leave it empty and the webhook fills it "
                                              "in with your user name");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahrunack, outsider_message)
{
  struct policy *p = t_policy(GROUP_POLICY);
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, SPEC("\"outcome\":\"Applied\""), NULL, &T_BOB, p);
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  t_expect_message(&r, "spec.acknowledgedBy", "user \"bob\" is not among the admission policy's "
                                              "approvers (approvals.approvers), who alone may "
                                              "settle unresolved runs");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  cJSON_Delete(o);
  policy_free(p);
}

static void convert(cJSON *o, const char *to)
{
  char err[256];
  cr_assert_eq(api_convert(t_kind(G, K), o, to, err, sizeof(err)), GW_OK, "%s", err);
}

Test(ptahrunack, committed_maps_to_the_outcome)
{
  const char *outcome[] = { "Applied", "NotApplied" };
  for(int b = 0; b < 2; b++) {
    cJSON *o = t_json(b ? ASPEC("\"committed\":false") : ASPEC("\"committed\":true"));
    convert(o, G "/v1");
    cr_assert_str_eq(json_get_str(o, "spec.outcome"), outcome[b]);
    cr_assert_null(json_get(o, "spec.committed"));
    cr_assert_str_eq(json_get_str(o, "spec.migrationRef.name"), "shop");
    convert(o, G "/v1alpha1");
    cr_assert_eq(cJSON_IsTrue(json_get(o, "spec.committed")), b == 0);
    cr_assert_null(json_get(o, "metadata.annotations"), "nothing left over");
    cJSON_Delete(o);
  }
}

Test(ptahrunack, partial_travels_in_the_annotation)
{
  cJSON *o = t_json(SPEC("\"outcome\":\"Partial\",\"acknowledgedBy\":\"alice\",\"comment\":\"c\""));
  cJSON *orig = cJSON_Duplicate(o, 1);
  convert(o, G "/v1alpha1");
  cr_assert_null(json_get(o, "spec.committed"), "v1alpha1 cannot say Partial");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(o, "metadata.annotations"),
                                                            "godwit.dev/v1-fields")),
                   "{\"spec\":{\"comment\":\"c\",\"outcome\":\"Partial\"}}");
  /* A metadata-only update sent in v1alpha1 is still valid: committed is not required there. */
  char *s = cJSON_PrintUnformatted(o);
  char *stored = cJSON_PrintUnformatted(orig);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, s, stored, &T_ALICE, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_free(s);
  cJSON_free(stored);
  convert(o, G "/v1");
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}
