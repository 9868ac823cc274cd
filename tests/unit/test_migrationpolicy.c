/* MigrationPolicy: every rule allows and refuses, defaults are idempotent, v1alpha1 paths. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "migration.podmotion.io"
#define HUB "\"apiVersion\":\"" G "/v1beta1\",\"kind\":\"MigrationPolicy\"," \
            "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}"

struct case_ {
  const char *name;
  const char *obj;
  const char *field;  /* NULL: allowed */
  const char *reason;
};

static const struct case_ cases[] = {
  { "minimal", "{" HUB ",\"spec\":{\"podSelector\":{}}}", NULL, NULL },
  { "selector required", "{" HUB ",\"spec\":{}}", "spec.podSelector", "FieldValueRequired" },
  { "bad label key", "{" HUB ",\"spec\":{\"podSelector\":{\"matchLabels\":{\"-x\":\"a\"}}}}",
    "spec.podSelector.matchLabels[-x]", "FieldValueInvalid" },
  { "bad mode", "{" HUB ",\"spec\":{\"podSelector\":{},\"allowedModes\":[\"Live\"]}}",
    "spec.allowedModes[0]", "FieldValueNotSupported" },
  { "duplicate mode",
    "{" HUB ",\"spec\":{\"podSelector\":{},\"allowedModes\":[\"PreCopy\",\"PreCopy\"]}}",
    "spec.allowedModes[1]", "FieldValueDuplicate" },
  { "empty modes", "{" HUB ",\"spec\":{\"podSelector\":{},\"allowedModes\":[]}}",
    "spec.allowedModes", "FieldValueRequired" },
  { "zero freeze", "{" HUB ",\"spec\":{\"podSelector\":{},\"freezeBudget\":\"0s\"}}",
    "spec.freezeBudget", "FieldValueInvalid" },
  { "bad duration", "{" HUB ",\"spec\":{\"podSelector\":{},\"freezeBudget\":\"soon\"}}",
    "spec.freezeBudget", "FieldValueInvalid" },
  { "concurrency range", "{" HUB ",\"spec\":{\"podSelector\":{},\"maxConcurrent\":0}}",
    "spec.maxConcurrent", "FieldValueInvalid" },
  { "wrong type", "{" HUB ",\"spec\":{\"podSelector\":{},\"maxConcurrent\":\"two\"}}",
    "spec.maxConcurrent", "FieldValueTypeInvalid" },
  { "In without values",
    "{" HUB ",\"spec\":{\"podSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\"}]}}}",
    "spec.podSelector.matchExpressions[0].values", "FieldValueInvalid" },
  { "Exists with values",
    "{" HUB ",\"spec\":{\"podSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\","
    "\"values\":[\"a\"]}]}}}",
    "spec.podSelector.matchExpressions[0].values", "FieldValueInvalid" },
  { "v1alpha1 bad mode reported on its own path",
    "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\"},"
    "\"spec\":{\"selector\":{},\"modes\":[]}}",
    "spec.modes", "FieldValueRequired" },
  { "v1alpha1 missing selector",
    "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\"},"
    "\"spec\":{}}",
    "spec.selector", "FieldValueRequired" },
};

/* Criterion re-executes the binary for each test, so parameters are indexes, not pointers. */
ParameterizedTestParameters(migrationpolicy, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, migrationpolicy, rules)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_CREATE, G, "MigrationPolicy", c->obj, NULL, &T_ALICE, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1);
  }
  api_result_release(&r);
}

Test(migrationpolicy, freeze_budget_above_policy_limit_is_forbidden)
{
  struct policy *p = t_policy("{\"limits\":{\"maxFreezeBudgetMilliseconds\":500}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, "MigrationPolicy",
          "{" HUB ",\"spec\":{\"podSelector\":{},\"freezeBudget\":\"2s\"}}", NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.freezeBudget", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403");
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, "MigrationPolicy",
          "{" HUB ",\"spec\":{\"podSelector\":{},\"freezeBudget\":\"400ms\"}}", NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

Test(migrationpolicy, defaults_fill_and_are_idempotent)
{
  cJSON *o = t_default(API_CREATE, G, "MigrationPolicy", "{" HUB ",\"spec\":{\"podSelector\":{}}}",
                       NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.freezeBudget"), "1s");
  cr_assert_eq(json_get(o, "spec.maxConcurrent")->valueint, 1);
  cr_assert_eq(cJSON_GetArraySize(json_get(o, "spec.allowedModes")), 2);
  cJSON_Delete(o);
}

Test(migrationpolicy, v1alpha1_defaults_stay_in_v1alpha1)
{
  cJSON *o = t_default(API_CREATE, G, "MigrationPolicy",
                       "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\","
                       "\"metadata\":{\"name\":\"p\"},\"spec\":{\"selector\":{\"app\":\"web\"}}}",
                       NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.maxFreeze"), "1s");
  cr_assert_null(json_get(o, "spec.freezeBudget"), "no hub field leaks into v1alpha1");
  cr_assert_null(json_get(o, "metadata.annotations"), "no conversion annotation from defaults");
  cJSON_Delete(o);
}

Test(migrationpolicy, v1alpha1_is_deprecated)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, "MigrationPolicy",
          "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\"},"
          "\"spec\":{\"selector\":{}}}", NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, G "/v1alpha1 MigrationPolicy is deprecated; use " G "/v1beta1 MigrationPolicy");
  api_result_release(&r);
}

Test(migrationpolicy, conversion_keeps_what_v1alpha1_cannot_hold)
{
  cJSON *o = t_json("{" HUB ",\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"},"
                    "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]},"
                    "\"destinationNodeSelector\":{\"zone\":\"a\"}}}");
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, "MigrationPolicy");
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.selector.app"), "web");
  const char *ann = cJSON_GetStringValue(
    cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1beta1-fields"));
  cr_assert_not_null(ann);
  cr_assert(strstr(ann, "matchExpressions") && strstr(ann, "destinationNodeSelector"), "%s", ann);
  cr_assert_eq(api_convert(k, o, G "/v1beta1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(migrationpolicy, hub_fields_in_the_annotation_are_checked_too)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, "MigrationPolicy",
          "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\","
          "\"annotations\":{\"godwit.dev/v1beta1-fields\":"
          "\"{\\\"spec\\\":{\\\"destinationNodeSelector\\\":{\\\"zone\\\":7}}}\"}},"
          "\"spec\":{\"selector\":{}}}", NULL, &T_ALICE, NULL);
  t_expect_cause(&r, "metadata.annotations[godwit.dev/v1beta1-fields]", "FieldValueTypeInvalid");
  t_expect_message(&r, "metadata.annotations[godwit.dev/v1beta1-fields]",
                   "spec.destinationNodeSelector[zone]");
  api_result_release(&r);
}
