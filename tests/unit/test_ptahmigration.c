/* PtahMigration: every rule allows and refuses, forward-only targets, immutable database and
 * history table, defaults, v1alpha1 paths and lossless conversion. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "ptah.run"
#define K "PtahMigration"
#define META "\"metadata\":{\"name\":\"shop\",\"namespace\":\"shop\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META
#define V1A "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META
#define DB "\"database\":{\"connectionSecretRef\":{\"name\":\"shop-db\"}}"
#define MIG "\"migrations\":{\"configMapRef\":{\"name\":\"shop-migrations\"}}"
#define SPEC(...) "{" V1 ",\"spec\":{" DB "," MIG __VA_ARGS__ "}}"
#define ASPEC(...) "{" V1A ",\"spec\":{\"secretName\":\"shop-db\",\"configMap\":\"m\"" __VA_ARGS__ "}}"
#define STATUS(v) ",\"status\":{\"currentVersion\":" #v "}"

struct case_ {
  const char *name;
  const char *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
};

static const struct case_ cases[] = {
  { "minimal", SPEC(), NULL, NULL },
  { "everything set",
    SPEC(",\"targetVersion\":20260102150405,\"backoffLimit\":5,\"execution\":{\"runnerImage\":"
         "\"registry.example.com/ptah/runner:1.4\",\"podMetadata\":{\"labels\":{\"team\":\"a\"}},"
         "\"serviceAccountName\":\"ptah-runner\"}"),
    NULL, NULL },
  { "history table in another schema",
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"m\"},\"historyTable\":"
    "\"ops.applied\"}}}",
    NULL, NULL },
  { "database required", "{" V1 ",\"spec\":{" MIG "}}", "spec.database", "FieldValueRequired" },
  { "migrations required", "{" V1 ",\"spec\":{" DB "}}", "spec.migrations", "FieldValueRequired" },
  { "configMapRef required", "{" V1 ",\"spec\":{" DB ",\"migrations\":{}}}",
    "spec.migrations.configMapRef", "FieldValueRequired" },
  { "configMap name syntax",
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"-m\"}}}}",
    "spec.migrations.configMapRef.name", "FieldValueInvalid" },
  { "unqualified history table",
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"m\"},\"historyTable\":"
    "\"ptah_migrations\"}}}",
    "spec.migrations.historyTable", "FieldValueInvalid" },
  { "target version zero", SPEC(",\"targetVersion\":0"), "spec.targetVersion",
    "FieldValueInvalid" },
  { "target version too many digits", SPEC(",\"targetVersion\":1000000000000000"),
    "spec.targetVersion", "FieldValueInvalid" },
  { "target version not an integer", SPEC(",\"targetVersion\":\"latest\""), "spec.targetVersion",
    "FieldValueTypeInvalid" },
  { "backoff limit negative", SPEC(",\"backoffLimit\":-1"), "spec.backoffLimit",
    "FieldValueInvalid" },
  { "backoff limit above the built-in policy limit", SPEC(",\"backoffLimit\":21"),
    "spec.backoffLimit", "FieldValueForbidden" },
  { "backoff limit at the built-in policy limit", SPEC(",\"backoffLimit\":20"), NULL, NULL },
  { "runner image syntax", SPEC(",\"execution\":{\"runnerImage\":\"UPPER/case\"}"),
    "spec.execution.runnerImage", "FieldValueInvalid" },
  { "reserved pod label",
    SPEC(",\"execution\":{\"podMetadata\":{\"labels\":{\"operator.ptah.run/x\":\"y\"}}}"),
    "spec.execution.podMetadata.labels[operator.ptah.run/x]", "FieldValueForbidden" },
  { "v1alpha1 minimal", ASPEC(), NULL, NULL },
  { "v1alpha1 configMap required", "{" V1A ",\"spec\":{\"secretName\":\"db\"}}",
    "spec.configMap", "FieldValueRequired" },
  { "v1alpha1 secretName syntax", "{" V1A ",\"spec\":{\"secretName\":\"DB\",\"configMap\":\"m\"}}",
    "spec.secretName", "FieldValueInvalid" },
  { "v1alpha1 target version", ASPEC(",\"targetVersion\":-3"), "spec.targetVersion",
    "FieldValueInvalid" },
  { "v1alpha1 reserved pod annotation", ASPEC(",\"podAnnotations\":{\"ptah.run/x\":\"y\"}"),
    "spec.podAnnotations[ptah.run/x]", "FieldValueForbidden" },
};

ParameterizedTestParameters(ptahmigration, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahmigration, rules)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, c->obj, NULL, &T_ALICE, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1);
  }
  api_result_release(&r);
}

struct update_ {
  const char *name;
  const char *old;
  const char *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
};

#define OLD_AT(v) "{" V1 ",\"spec\":{" DB "," MIG ",\"targetVersion\":5}" STATUS(v) "}"

static const struct update_ updates[] = {
  { "database changed", SPEC(),
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"other\"}}," MIG "}}",
    "spec.database", "FieldValueInvalid" },
  { "v1alpha1 database changed", ASPEC(),
    "{" V1A ",\"spec\":{\"secretName\":\"other\",\"configMap\":\"m\"}}", "spec.secretName",
    "FieldValueInvalid" },
  { "migrations ConfigMap may change", SPEC(),
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"shop-migrations-v2\"}}}}",
    NULL, NULL },
  { "history table changed", SPEC(),
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"shop-migrations\"},"
    "\"historyTable\":\"public.other\"}}}",
    "spec.migrations.historyTable", "FieldValueInvalid" },
  { "history table spelled as its default", SPEC(),
    "{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"shop-migrations\"},"
    "\"historyTable\":\"public.ptah_migrations\"}}}",
    NULL, NULL },
  { "target raised", OLD_AT(5), SPEC(",\"targetVersion\":7"), NULL, NULL },
  { "target equal to the current version", OLD_AT(5), SPEC(",\"targetVersion\":5"), NULL, NULL },
  { "target below the current version", OLD_AT(5), SPEC(",\"targetVersion\":4"),
    "spec.targetVersion", "FieldValueInvalid" },
  { "v1alpha1 target below the current version",
    "{" V1A ",\"spec\":{\"secretName\":\"shop-db\",\"configMap\":\"m\"}" STATUS(9) "}",
    ASPEC(",\"targetVersion\":2"), "spec.targetVersion", "FieldValueInvalid" },
  { "target removed means latest", OLD_AT(5), SPEC(), NULL, NULL },
  { "target lowered before anything applied", SPEC(",\"targetVersion\":9"),
    SPEC(",\"targetVersion\":3"), NULL, NULL },
};

ParameterizedTestParameters(ptahmigration, updates)
{
  static size_t idx[sizeof(updates) / sizeof(updates[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahmigration, updates)
{
  const struct update_ *c = &updates[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, c->obj, c->old, &T_ALICE, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1);
  }
  api_result_release(&r);
}

Test(ptahmigration, forward_only_message)
{
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, SPEC(",\"targetVersion\":4"), OLD_AT(5), &T_ALICE, NULL);
  t_expect_message(&r, "spec.targetVersion",
                   "is 4, below the database's current version 5 (status.currentVersion): "
                   "migrations only go forward; add a new migration that reverts the change "
                   "instead");
  api_result_release(&r);
}

Test(ptahmigration, backoff_limit_follows_the_policy)
{
  struct policy *p = t_policy("{\"limits\":{\"maxBackoffLimit\":2}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, SPEC(",\"backoffLimit\":3"), NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.backoffLimit", "FieldValueForbidden");
  t_expect_message(&r, "spec.backoffLimit", "is 3, above the admission policy's limit of 2");
  cr_assert(ferrs_all_policy(&r.errs), "%s", t_causes(&r));
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K, SPEC(",\"backoffLimit\":2"), NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  /* A v1 value carried by a v1alpha1 object is reported where it lives. */
  t_admit(&r, API_CREATE, G, K,
          "{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"s\","
          "\"annotations\":{\"godwit.dev/v1-fields\":\"{\\\"spec\\\":{\\\"backoffLimit\\\":9}}\"}},"
          "\"spec\":{\"secretName\":\"db\",\"configMap\":\"m\"}}", NULL, &T_ALICE, p);
  t_expect_cause(&r, "metadata.annotations[godwit.dev/v1-fields]", "FieldValueForbidden");
  api_result_release(&r);
  policy_free(p);
}

Test(ptahmigration, backoff_default_never_exceeds_the_policy)
{
  struct policy *p = t_policy("{\"limits\":{\"maxBackoffLimit\":1}}");
  struct api_result r;
  cJSON *o = t_default(API_CREATE, G, K, SPEC(), NULL, &T_ALICE, p);
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 1);
  char *s = cJSON_PrintUnformatted(o);
  t_admit(&r, API_CREATE, G, K, s, NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_free(s);
  cJSON_Delete(o);
  o = t_default(API_CREATE, G, K, SPEC(",\"backoffLimit\":0"), NULL, &T_ALICE, p);
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 0, "a value given is kept");
  cJSON_Delete(o);
  policy_free(p);
}

Test(ptahmigration, runner_image_registry_policy)
{
  struct policy *p = t_policy("{\"images\":{\"allowedRegistries\":[\"registry.example.com/\"]}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, ASPEC(",\"runnerImage\":\"quay.io/ptah/runner:1\""), NULL,
          &T_ALICE, p);
  t_expect_cause(&r, "spec.runnerImage", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  policy_free(p);
}

Test(ptahmigration, defaults_fill_and_are_idempotent)
{
  cJSON *o = t_default(API_CREATE, G, K, SPEC(), NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.migrations.historyTable"), "public.ptah_migrations");
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 3);
  cr_assert_str_eq(json_get_str(o, "spec.database.connectionSecretRef.key"), "uri");
  cr_assert_null(json_get(o, "spec.targetVersion"), "absent target means latest, not a default");
  cr_assert_null(json_get(o, "metadata.annotations"), "PtahMigration stamps nothing");
  cJSON_Delete(o);
}

Test(ptahmigration, v1alpha1_defaults_stay_out_of_v1alpha1)
{
  cJSON *o = t_default(API_CREATE, G, K, ASPEC(), NULL, &T_ALICE, NULL);
  cJSON *sent = t_json(ASPEC());
  cr_assert(cJSON_Compare(o, sent, 1), "v1-only defaults add nothing to a v1alpha1 object");
  cJSON_Delete(o);
  cJSON_Delete(sent);
}

Test(ptahmigration, warns_about_a_moving_runner_and_deprecation)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, ASPEC(",\"runnerImage\":\"ghcr.io/ptah/runner:latest\""), NULL,
          &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, G "/v1alpha1 PtahMigration is deprecated; use " G "/v1 PtahMigration");
  t_expect_warning(&r, "uses the tag \"latest\"");
  cr_assert_eq(r.warns.n, 2);
  api_result_release(&r);
}

Test(ptahmigration, conversion_keeps_what_v1alpha1_cannot_hold)
{
  cJSON *o = t_json("{" V1 ",\"spec\":{" DB ",\"migrations\":{\"configMapRef\":{\"name\":\"m\"},"
                    "\"historyTable\":\"ops.applied\"},\"targetVersion\":12,\"backoffLimit\":0,"
                    "\"execution\":{\"podMetadata\":{\"labels\":{\"a\":\"b\"}}}},\"status\":{"
                    "\"phase\":\"Uncertain\",\"currentVersion\":11,\"unresolvedRun\":{\"operation\":"
                    "\"shop-apply-3\",\"toVersion\":12}}}");
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.secretName"), "shop-db");
  cr_assert_str_eq(json_get_str(o, "spec.configMap"), "m");
  cr_assert_eq(json_get(o, "spec.targetVersion")->valueint, 12);
  cr_assert_str_eq(json_get_str(o, "spec.podLabels.a"), "b");
  cr_assert_eq(json_get(o, "status.currentVersion")->valueint, 11);
  const char *ann = cJSON_GetStringValue(
    cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1-fields"));
  cr_assert_str_eq(ann, "{\"spec\":{\"backoffLimit\":0,\"migrations\":{\"historyTable\":"
                        "\"ops.applied\"}},\"status\":{\"unresolvedRun\":{\"operation\":"
                        "\"shop-apply-3\",\"toVersion\":12}}}");
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(ptahmigration, an_old_target_does_not_block_other_updates)
{
  /* The database went past the target (say, by hand): adding a label still works. */
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, SPEC(",\"targetVersion\":5"),
          "{" V1 ",\"spec\":{" DB "," MIG ",\"targetVersion\":5}" STATUS(8) "}", &T_ALICE, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
}

Test(ptahmigration, a_tightened_policy_judges_only_what_changes)
{
  /* Stored under a looser policy; the admin then lowered the limit and the registries. */
  struct policy *p = t_policy("{\"limits\":{\"maxBackoffLimit\":2},\"images\":{"
                              "\"allowedRegistries\":[\"registry.example.com/\"]},\"podMetadata\":"
                              "{\"labels\":{\"allow\":[{\"key\":\"team\"}]}}}");
  const char *stored = SPEC(",\"backoffLimit\":9,\"execution\":{\"runnerImage\":\"quay.io/p/r:1\","
                            "\"podMetadata\":{\"labels\":{\"owner\":\"me\"}}}");
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, stored, stored, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K,
          SPEC(",\"backoffLimit\":8,\"execution\":{\"runnerImage\":\"quay.io/p/r:2\","
               "\"podMetadata\":{\"labels\":{\"owner\":\"you\"}}}"),
          stored, &T_ALICE, p);
  t_expect_cause(&r, "spec.backoffLimit", "FieldValueForbidden");
  t_expect_cause(&r, "spec.execution.runnerImage", "FieldValueForbidden");
  t_expect_cause(&r, "spec.execution.podMetadata.labels[owner]", "FieldValueForbidden");
  cr_assert_eq(r.errs.n, 3, "%s", t_causes(&r));
  api_result_release(&r);
  policy_free(p);
}
