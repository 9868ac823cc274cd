/* Migration: every rule allows and refuses, defaults and stamping, updates, policy, warnings. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "api/migration.h"
#include "apitest.h"
#include "json.h"

#define G "pgcopydb.io"
#define K "Migration"
#define META "\"metadata\":{\"name\":\"shop\",\"namespace\":\"default\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META
#define ALPHA "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META
#define ENDS                                                                                 \
  "\"source\":{\"connectionSecretRef\":{\"name\":\"shop-src\"}},"                            \
  "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}}"
/* A v1 Migration: OBJ(",\"follow\":{}"), with an optional status. */
#define OBJ(extra) "{" V1 ",\"spec\":{" ENDS extra "}}"
#define OBJ_ST(extra, status) "{" V1 ",\"spec\":{" ENDS extra "},\"status\":" status "}"
#define AOBJ(extra)                                                                          \
  "{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":\"shop-dst\"" extra "}}"
#define LIVE ",\"follow\":{}"
#define NAME50 "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdef"

struct case_ {
  const char *name;
  const char *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
  const char *also; /* the other causes: "field Reason; field Reason" */
};

static const struct case_ cases[] = {
  /* shapes the schema checks */
  { "minimal clone", OBJ(""), NULL, NULL },
  { "minimal live", OBJ(LIVE), NULL, NULL },
  { "source required",
    "{" V1 ",\"spec\":{\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}}}}",
    "spec.source", "FieldValueRequired" },
  { "secret name required",
    "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{}},"
    "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}}}}",
    "spec.source.connectionSecretRef.name", "FieldValueRequired" },
  { "secret name format",
    "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"Shop_Src\"}},"
    "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}}}}",
    "spec.source.connectionSecretRef.name", "FieldValueInvalid" },
  { "tableJobs zero", OBJ(",\"clone\":{\"tableJobs\":0}"), "spec.clone.tableJobs",
    "FieldValueInvalid" },
  { "indexJobs above the schema's maximum", OBJ(",\"clone\":{\"indexJobs\":129}"),
    "spec.clone.indexJobs", "FieldValueInvalid" },
  { "backoffLimit above the schema's maximum", OBJ(",\"backoffLimit\":51"), "spec.backoffLimit",
    "FieldValueInvalid" },
  { "backoffLimit negative", OBJ(",\"backoffLimit\":-1"), "spec.backoffLimit",
    "FieldValueInvalid" },
  { "dryRun must be a boolean", OBJ(",\"dryRun\":\"yes\""), "spec.dryRun",
    "FieldValueTypeInvalid" },
  { "cutover mode enum", OBJ(LIVE ",\"cutover\":{\"mode\":\"Later\"}"), "spec.cutover.mode",
    "FieldValueNotSupported" },
  { "compare enum", OBJ(",\"verify\":{\"compare\":[\"rows\"]}"), "spec.verify.compare[0]",
    "FieldValueNotSupported" },
  { "compare duplicate", OBJ(",\"verify\":{\"compare\":[\"data\",\"data\"]}"),
    "spec.verify.compare[1]", "FieldValueDuplicate" },
  { "compare both", OBJ(",\"verify\":{\"compare\":[\"schema\",\"data\"]}"), NULL, NULL },
  { "compare empty", OBJ(",\"verify\":{\"compare\":[]}"), "spec.verify.compare",
    "FieldValueRequired" },
  { "extension duplicate", OBJ(",\"clone\":{\"extensions\":[\"pg_trgm\",\"pg_trgm\"]}"),
    "spec.clone.extensions[1]", "FieldValueDuplicate" },
  { "extension name empty", OBJ(",\"clone\":{\"extensions\":[\"\"]}"),
    "spec.clone.extensions[0]", "FieldValueInvalid" },
  { "owner name too long",
    OBJ(",\"clone\":{\"ownerAfterRestore\":\"" NAME50 "abcdefghijklmn\"}"),
    "spec.clone.ownerAfterRestore", "FieldValueInvalid" },
  { "owner and extensions",
    OBJ(",\"clone\":{\"ownerAfterRestore\":\"app_owner\",\"extensions\":[\"pg_trgm\",\"citext\"]}"),
    NULL, NULL },
  { "image format", OBJ(",\"worker\":{\"image\":\"Not An Image\"}"), "spec.worker.image",
    "FieldValueInvalid" },
  { "work dir size format", OBJ(",\"worker\":{\"workDir\":{\"size\":\"ten gigs\"}}"),
    "spec.worker.workDir.size", "FieldValueInvalid" },
  { "cutoverLSN is status: never validated here", OBJ_ST("", "{\"cutoverLSN\":\"nope\"}"), NULL,
    NULL },
  /* runner Pod settings (spec.worker) */
  { "runner pod settings",
    OBJ(",\"worker\":{\"serviceAccountName\":\"copier\",\"podMetadata\":{\"labels\":{"
        "\"team\":\"data\"},\"annotations\":{\"sidecar.istio.io/inject\":\"false\"}},"
        "\"nodeSelector\":{\"pool\":\"db\"},\"tolerations\":[{\"key\":\"dedicated\","
        "\"operator\":\"Equal\",\"value\":\"db\",\"effect\":\"NoSchedule\"},{\"operator\":"
        "\"Exists\"}],\"imagePullSecrets\":[{\"name\":\"regcred\"}]}"),
    NULL, NULL },
  { "runner pod label under a reserved prefix",
    OBJ(",\"worker\":{\"podMetadata\":{\"labels\":{\"godwit.dev/step\":\"x\"}}}"),
    "spec.worker.podMetadata.labels[godwit.dev/step]", "FieldValueForbidden" },
  { "service account name format", OBJ(",\"worker\":{\"serviceAccountName\":\"Copier!\"}"),
    "spec.worker.serviceAccountName", "FieldValueInvalid" },
  { "node selector value", OBJ(",\"worker\":{\"nodeSelector\":{\"pool\":\"not a value\"}}"),
    "spec.worker.nodeSelector[pool]", "FieldValueInvalid" },
  { "toleration operator", OBJ(",\"worker\":{\"tolerations\":[{\"key\":\"k\","
                               "\"operator\":\"Maybe\"}]}"),
    "spec.worker.tolerations[0].operator", "FieldValueNotSupported" },
  { "toleration of every key needs Exists", OBJ(",\"worker\":{\"tolerations\":[{"
                                               "\"effect\":\"NoSchedule\"}]}"),
    "spec.worker.tolerations[0].operator", "FieldValueInvalid" },
  { "Exists takes no value", OBJ(",\"worker\":{\"tolerations\":[{\"key\":\"k\","
                                 "\"operator\":\"Exists\",\"value\":\"v\"}]}"),
    "spec.worker.tolerations[0].value", "FieldValueInvalid" },
  { "tolerationSeconds needs NoExecute", OBJ(",\"worker\":{\"tolerations\":[{\"key\":\"k\","
                                             "\"operator\":\"Exists\",\"effect\":"
                                             "\"NoSchedule\",\"tolerationSeconds\":30}]}"),
    "spec.worker.tolerations[0].effect", "FieldValueInvalid" },
  { "pull secret without a name", OBJ(",\"worker\":{\"imagePullSecrets\":[{}]}"),
    "spec.worker.imagePullSecrets[0].name", "FieldValueRequired" },
  /* metadata.name */
  { "name at the limit", "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":"
    "\"" NAME50 "\"},\"spec\":{" ENDS "}}", NULL, NULL },
  { "name one past the limit", "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{"
    "\"name\":\"" NAME50 "x\"},\"spec\":{" ENDS "}}", "metadata.name", "FieldValueTooLong" },
  { "generateName past the limit", "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":"
    "{\"generateName\":\"abcdefghij-abcdefghij-abcdefghij-abcdefghij-ab\"},\"spec\":{" ENDS "}}",
    "metadata.generateName", "FieldValueTooLong" },
  { "generateName at the limit", "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":"
    "{\"generateName\":\"abcdefghij-abcdefghij-abcdefghij-abcdefghij-a\"},\"spec\":{" ENDS "}}",
    NULL, NULL },
  /* source and target */
  { "same Secret and default key",
    "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"db\"}},"
    "\"target\":{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"uri\"}}}}",
    "spec.target.connectionSecretRef", "FieldValueInvalid" },
  { "same Secret, other keys",
    "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"source\"}},"
    "\"target\":{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"target\"}}}}",
    NULL, NULL },
  /* follow-only fields */
  { "cutover on a clone", OBJ(",\"cutover\":{\"mode\":\"Manual\"}"), "spec.cutover",
    "FieldValueForbidden" },
  { "lag with a fraction of a byte", OBJ(",\"follow\":{\"maxCatchupLag\":\"500m\"}"),
    "spec.follow.maxCatchupLag", "FieldValueInvalid" },
  { "lag as a decimal fraction", OBJ(",\"follow\":{\"maxCatchupLag\":\"0.5\"}"),
    "spec.follow.maxCatchupLag", "FieldValueInvalid" },
  { "lag malformed", OBJ(",\"follow\":{\"maxCatchupLag\":\"small\"}"),
    "spec.follow.maxCatchupLag", "FieldValueInvalid" },
  { "lag whole bytes", OBJ(",\"follow\":{\"maxCatchupLag\":\"1.5Mi\"}"), NULL, NULL },
  { "lag as an integer", OBJ(",\"follow\":{\"maxCatchupLag\":16777216}"), NULL, NULL },
  /* approval context (approvedBy as the mutating webhook stamps it for alice) */
  { "approved on a live manual migration",
    OBJ(LIVE ",\"cutover\":{\"approved\":true,\"approvedBy\":\"alice\"}"), NULL, NULL },
  { "approved on a clone", OBJ(",\"cutover\":{\"approved\":true,\"approvedBy\":\"alice\"}"),
    "spec.cutover.approved", "FieldValueForbidden",
    .also = "spec.cutover FieldValueForbidden" },
  { "approved with automatic cutover",
    OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\",\"approved\":true,\"approvedBy\":\"alice\"}"),
    "spec.cutover.approved", "FieldValueForbidden" },
  { "approvedBy forged", OBJ(LIVE ",\"cutover\":{\"approved\":true,\"approvedBy\":\"bob\"}"),
    "spec.cutover.approvedBy", "FieldValueForbidden" },
  { "approvedBy missing: no mutating webhook", OBJ(LIVE ",\"cutover\":{\"approved\":true}"),
    "spec.cutover.approvedBy", "FieldValueRequired" },
  { "approvedBy without approval", OBJ(LIVE ",\"cutover\":{\"approvedBy\":\"alice\"}"),
    "spec.cutover.approvedBy", "FieldValueForbidden" },
  { "not approved", OBJ(LIVE ",\"cutover\":{\"approved\":false}"), NULL, NULL },
  /* filters */
  { "include-only tables with index and data exclusions",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlyTables\":[\"public.orders\",\"\\\"Sales\\\".\\\"Q1\\\"\"],"
        "\"excludeIndexes\":[\"public.orders_note_idx\"],\"excludeTableData\":[\"public.orders\"]}}"),
    NULL, NULL },
  { "exclusions together",
    OBJ(",\"clone\":{\"filters\":{\"excludeSchemas\":[\"audit\"],\"excludeTables\":[\"public.tmp\"]}}"),
    NULL, NULL },
  { "include-only schemas and their tables",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlySchemas\":[\"public\",\"Sales\"],"
        "\"includeOnlyTables\":[\"public.orders\",\"\\\"Sales\\\".q1\"]}}"),
    NULL, NULL },
  { "include-only and exclude tables",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlyTables\":[\"public.a\"],\"excludeTables\":[\"public.b\"]}}"),
    "spec.clone.filters.excludeTables", "FieldValueForbidden" },
  { "include-only tables and exclude schemas",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlyTables\":[\"public.a\"],\"excludeSchemas\":[\"audit\"]}}"),
    "spec.clone.filters.excludeSchemas", "FieldValueForbidden" },
  { "include-only and exclude schemas",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlySchemas\":[\"public\"],\"excludeSchemas\":[\"audit\"]}}"),
    "spec.clone.filters.excludeSchemas", "FieldValueForbidden" },
  { "included table outside the included schemas",
    OBJ(",\"clone\":{\"filters\":{\"includeOnlySchemas\":[\"public\"],"
        "\"includeOnlyTables\":[\"public.a\",\"audit.log\"]}}"),
    "spec.clone.filters.includeOnlyTables[1]", "FieldValueInvalid" },
  { "unqualified table", OBJ(",\"clone\":{\"filters\":{\"excludeTables\":[\"orders\"]}}"),
    "spec.clone.filters.excludeTables[0]", "FieldValueInvalid" },
  { "table name with a second dot",
    OBJ(",\"clone\":{\"filters\":{\"excludeTableData\":[\"a.b.c\"]}}"),
    "spec.clone.filters.excludeTableData[0]", "FieldValueInvalid" },
  { "quoted name may hold a dot",
    OBJ(",\"clone\":{\"filters\":{\"excludeTableData\":[\"a.\\\"b.c\\\"\"]}}"), NULL, NULL },
  { "duplicate schema", OBJ(",\"clone\":{\"filters\":{\"excludeSchemas\":[\"a\",\"a\"]}}"),
    "spec.clone.filters.excludeSchemas[1]", "FieldValueDuplicate" },
  /* worker */
  { "work dir of zero bytes", OBJ(",\"worker\":{\"workDir\":{\"size\":0}}"),
    "spec.worker.workDir.size", "FieldValueInvalid" },
  { "request above its limit",
    OBJ(",\"worker\":{\"resources\":{\"requests\":{\"memory\":\"2Gi\",\"cpu\":\"500m\"},"
        "\"limits\":{\"memory\":\"1Gi\",\"cpu\":1}}}"),
    "spec.worker.resources.requests[memory]", "FieldValueInvalid" },
  { "requests within limits",
    OBJ(",\"worker\":{\"image\":\"ghcr.io/dimitri/pgcopydb:v0.17\",\"resources\":{\"requests\":"
        "{\"memory\":\"1Gi\",\"cpu\":\"500m\"},\"limits\":{\"memory\":\"1Gi\"}},"
        "\"workDir\":{\"size\":\"50Gi\",\"storageClassName\":\"fast-ssd\"}}"),
    NULL, NULL },
  /* v1alpha1: causes on the fields the user wrote */
  { "v1alpha1 minimal", AOBJ(""), NULL, NULL },
  { "v1alpha1 live manual", AOBJ(",\"live\":true,\"maxCatchupLag\":\"64Mi\",\"manualCutover\":true"),
    NULL, NULL },
  { "v1alpha1 source required", "{" ALPHA ",\"spec\":{\"targetSecret\":\"shop-dst\"}}",
    "spec.sourceSecret", "FieldValueRequired" },
  { "v1alpha1 same Secrets", "{" ALPHA ",\"spec\":{\"sourceSecret\":\"db\",\"targetSecret\":\"db\"}}",
    "spec.targetSecret", "FieldValueInvalid" },
  { "v1alpha1 tableJobs zero", AOBJ(",\"tableJobs\":0"), "spec.tableJobs", "FieldValueInvalid" },
  { "v1alpha1 image format", AOBJ(",\"image\":\"UPPER:case\""), "spec.image",
    "FieldValueInvalid" },
  { "v1alpha1 manual cutover on a clone", AOBJ(",\"manualCutover\":true"), "spec.manualCutover",
    "FieldValueForbidden" },
  { "v1alpha1 lag on a clone", AOBJ(",\"live\":false,\"maxCatchupLag\":\"16Mi\""),
    "spec.maxCatchupLag", "FieldValueForbidden" },
  { "v1alpha1 lag with a fraction", AOBJ(",\"live\":true,\"maxCatchupLag\":\"100m\""),
    "spec.maxCatchupLag", "FieldValueInvalid" },
  { "v1alpha1 backoffLimit", AOBJ(",\"backoffLimit\":99"), "spec.backoffLimit",
    "FieldValueInvalid" },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Criterion re-executes the binary for each test, so parameters are indexes, not pointers. */
ParameterizedTestParameters(migration, rules)
{
  static size_t idx[NCASES];
  for(size_t i = 0; i < NCASES; i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, NCASES);
}

ParameterizedTest(size_t *i, migration, rules)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, c->obj, NULL, &T_ALICE, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1 + t_expect_also(&r, c->also));
  }
  api_result_release(&r);
}

/* Admits obj (CREATE, or UPDATE when old is given) as alice, expecting allowed. */
static void expect_allowed(const char *obj, const char *old)
{
  struct api_result r;
  t_admit(&r, old ? API_UPDATE : API_CREATE, G, K, obj, old, &T_ALICE, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
}

Test(migration, messages_say_what_is_wrong_and_what_to_do)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K,
          "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"" NAME50
          "xyz\"},\"spec\":{" ENDS ",\"cutover\":{\"mode\":\"Manual\"}}}",
          NULL, &T_ALICE, NULL);
  t_expect_message(&r, "metadata.name", "must be at most 50 characters, got 53");
  t_expect_message(&r, "metadata.name", "<name>-preflight-51");
  t_expect_message(&r, "metadata.name", "choose a shorter name");
  t_expect_message(&r, "spec.cutover", "only applies to live migrations");
  cr_assert_eq(r.errs.n, 2, "%s", t_causes(&r));
  for(size_t i = 0; i < r.errs.n; i++) {
    const char *m = r.errs.v[i].msg;
    cr_assert(m[0] >= 'a' && m[0] <= 'z', "lower case: %s", m);
    cr_assert_neq(m[strlen(m) - 1], '.', "no final stop: %s", m);
  }
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          OBJ(LIVE ",\"cutover\":{\"approved\":true,\"approvedBy\":\"bob\"}"), NULL, &T_ALICE,
          NULL);
  t_expect_message(&r, "spec.cutover.approvedBy",
                   "is \"bob\" but the approval comes from \"alice\"");
  api_result_release(&r);
}

Test(migration, name_limit_follows_from_the_steps_and_attempts)
{
  size_t longest = 0;
  for(const char *const *s = migration_steps; *s; s++)
    if(strlen(*s) > longest)
      longest = strlen(*s);
  cr_assert_eq(longest, strlen(MIGRATION_LONGEST_STEP));
  char attempt[16];
  cr_assert_eq((int)snprintf(attempt, sizeof(attempt), "%d", MIGRATION_BACKOFF_LIMIT_MAX + 1),
               MIGRATION_ATTEMPT_DIGITS);
  cr_assert_eq(MIGRATION_NAME_MAX, 50);
  char job[128];
  snprintf(job, sizeof(job), "%s-%s-%d", NAME50, MIGRATION_LONGEST_STEP,
           MIGRATION_BACKOFF_LIMIT_MAX + 1);
  cr_assert_eq(strlen(job), 63, "the longest Job name fills a label value exactly: %s", job);
}

Test(migration, phases_are_the_seeds)
{
  static const char *const want[] = { "Pending",     "Validating", "Cloning",   "Finalizing",
                                      "Streaming",   "CutoverPending", "CuttingOver",
                                      "Verifying",   "Completed",  "Failed",    "Suspended" };
  size_t n = 0;
  while(migration_phases[n])
    n++;
  cr_assert_eq(n, 11);
  for(size_t i = 0; i < n; i++)
    cr_assert_str_eq(migration_phases[i], want[i]);
}

/* ---- defaults ---- */

Test(migration, defaults_of_a_clone)
{
  cJSON *o = t_default(API_CREATE, G, K, OBJ(""), NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.source.connectionSecretRef.key"), "uri");
  cr_assert_str_eq(json_get_str(o, "spec.target.connectionSecretRef.key"), "uri");
  cr_assert_eq(json_get(o, "spec.clone.tableJobs")->valueint, 4);
  cr_assert_eq(json_get(o, "spec.clone.indexJobs")->valueint, 4);
  cr_assert(cJSON_IsFalse(json_get(o, "spec.clone.skipVacuum")));
  cr_assert(cJSON_IsFalse(json_get(o, "spec.clone.skipLargeObjects")));
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 6);
  cr_assert(cJSON_IsFalse(json_get(o, "spec.dryRun")));
  cr_assert(cJSON_IsFalse(json_get(o, "spec.suspend")));
  cr_assert_str_eq(json_get_str(o, "spec.worker.workDir.size"), "10Gi");
  cr_assert_null(json_get(o, "spec.follow"), "a clone stays a clone");
  cr_assert_null(json_get(o, "spec.cutover"), "no cutover on a clone");
  cr_assert_null(json_get(o, "spec.worker.image"), "the controller's image applies");
  cJSON_Delete(o);
}

Test(migration, defaults_of_a_live_migration)
{
  cJSON *o = t_default(API_CREATE, G, K, OBJ(LIVE), NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.follow.maxCatchupLag"), "16Mi");
  cr_assert_str_eq(json_get_str(o, "spec.cutover.mode"), "Manual");
  cr_assert_null(json_get(o, "spec.cutover.approved"), "nobody approved yet");
  cJSON_Delete(o);
  o = t_default(API_CREATE, G, K, OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\"}"), NULL,
                &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.mode"), "Automatic", "a chosen mode is kept");
  cJSON_Delete(o);
}

Test(migration, defaults_never_exceed_the_policy)
{
  struct policy *p = t_policy("{\"limits\":{\"maxTableJobs\":2,\"maxBackoffLimit\":3,"
                              "\"maxWorkDirSize\":\"5Gi\"}}");
  cJSON *o = t_default(API_CREATE, G, K, OBJ(""), NULL, &T_ALICE, p);
  cr_assert_eq(json_get(o, "spec.clone.tableJobs")->valueint, 2);
  cr_assert_eq(json_get(o, "spec.clone.indexJobs")->valueint, 4, "no lower limit: the default");
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 3);
  cr_assert_str_eq(json_get_str(o, "spec.worker.workDir.size"), "5Gi");
  char *s = cJSON_PrintUnformatted(o);
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, s, NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_free(s);
  cJSON_Delete(o);
  policy_free(p);
  p = t_policy("{\"limits\":{\"maxWorkDirSize\":\"5G\"}}");
  o = t_default(API_CREATE, G, K, OBJ(""), NULL, &T_ALICE, p);
  cr_assert_str_eq(json_get_str(o, "spec.worker.workDir.size"), "5000000000");
  cJSON_Delete(o);
  policy_free(p);
}

Test(migration, update_defaults_the_mode_of_a_migration_made_live)
{
  cJSON *o = t_default(API_UPDATE, G, K, OBJ(LIVE), OBJ(""), &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.mode"), "Manual");
  cJSON_Delete(o);
}

Test(migration, v1alpha1_defaults_stay_in_v1alpha1)
{
  cJSON *o = t_default(API_CREATE, G, K, AOBJ(",\"live\":true"), NULL, &T_ALICE, NULL);
  cr_assert_eq(json_get(o, "spec.tableJobs")->valueint, 4);
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 6);
  cr_assert(cJSON_IsTrue(json_get(o, "spec.live")));
  cr_assert(cJSON_IsTrue(json_get(o, "spec.manualCutover")), "live means a Manual cutover");
  cr_assert_str_eq(json_get_str(o, "spec.maxCatchupLag"), "16Mi");
  cr_assert_null(json_get(o, "spec.follow"), "no hub field leaks into v1alpha1");
  cr_assert_null(json_get(o, "spec.clone"));
  cr_assert_null(json_get(o, "metadata.annotations"), "no conversion annotation from defaults");
  cJSON_Delete(o);
  o = t_default(API_CREATE, G, K, AOBJ(""), NULL, &T_ALICE, NULL);
  cr_assert(cJSON_IsFalse(json_get(o, "spec.live")));
  cr_assert_null(json_get(o, "spec.manualCutover"), "a clone has no cutover");
  cr_assert_null(json_get(o, "spec.maxCatchupLag"));
  cJSON_Delete(o);
}

/* ---- cutover approval ---- */

#define APPROVED(by) LIVE ",\"cutover\":{\"mode\":\"Manual\",\"approved\":true" by "}"
#define PENDING LIVE ",\"cutover\":{\"mode\":\"Manual\"}"
#define ST_WAITING "{\"phase\":\"CutoverPending\"}"

Test(migration, approval_on_create_is_stamped_with_the_user)
{
  cJSON *o = t_default(API_CREATE, G, K, OBJ(APPROVED("")), NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.approvedBy"), "alice");
  char *s = cJSON_PrintUnformatted(o);
  expect_allowed(s, NULL);
  cJSON_free(s);
  cJSON_Delete(o);
}

Test(migration, approval_on_update_is_stamped_with_the_approver)
{
  const char *old = OBJ_ST(PENDING, ST_WAITING);
  cJSON *o = t_default(API_UPDATE, G, K, OBJ_ST(APPROVED(""), ST_WAITING), old, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.approvedBy"), "bob");
  char *s = cJSON_PrintUnformatted(o);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, s, old, &T_BOB, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_free(s);
  cJSON_Delete(o);
}

Test(migration, reapproval_restamps_a_stale_approver)
{
  /* alice approved, then withdrew; bob approves again without touching approvedBy. */
  const char *old = OBJ_ST(LIVE ",\"cutover\":{\"mode\":\"Manual\",\"approved\":false,"
                                "\"approvedBy\":\"alice\"}", ST_WAITING);
  cJSON *o = t_default(API_UPDATE, G, K, OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING),
                       old, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.approvedBy"), "bob");
  cJSON_Delete(o);
}

Test(migration, a_written_approver_is_not_overwritten_and_a_forgery_is_refused)
{
  const char *old = OBJ_ST(PENDING, ST_WAITING);
  const char *obj = OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING);
  cJSON *o = t_default(API_UPDATE, G, K, obj, old, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.approvedBy"), "alice");
  cJSON_Delete(o);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, obj, old, &T_BOB, NULL);
  t_expect_cause(&r, "spec.cutover.approvedBy", "FieldValueForbidden");
  t_expect_message(&r, "spec.cutover.approvedBy", "is \"alice\" but the approval comes from \"bob\"");
  cr_assert_not(ferrs_all_policy(&r.errs), "a forgery is invalid, not a policy matter");
  api_result_release(&r);
}

Test(migration, a_replace_that_drops_the_approver_gets_it_back)
{
  const char *old = OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING);
  cJSON *o = t_default(API_UPDATE, G, K, OBJ_ST(APPROVED(""), ST_WAITING), old, &T_BOB, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.approvedBy"), "alice", "not bob: no new approval");
  cJSON_Delete(o);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, OBJ_ST(APPROVED(""), ST_WAITING), old, &T_BOB, NULL);
  t_expect_cause(&r, "spec.cutover.approvedBy", "FieldValueForbidden");
  api_result_release(&r);
}

Test(migration, approver_cannot_be_changed_while_approved)
{
  const char *old = OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, OBJ_ST(APPROVED(",\"approvedBy\":\"bob\""), ST_WAITING), old,
          &T_BOB, NULL);
  t_expect_cause(&r, "spec.cutover.approvedBy", "FieldValueForbidden");
  t_expect_message(&r, "spec.cutover.approvedBy", "cannot be set or changed by hand");
  api_result_release(&r);
  /* Unchanged: another field's update passes. */
  expect_allowed(OBJ_ST(APPROVED(",\"approvedBy\":\"alice\"") ",\"suspend\":true", ST_WAITING),
                 old);
}

Test(migration, approval_can_be_withdrawn_before_the_cutover_starts)
{
  const char *old = OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING);
  expect_allowed(OBJ_ST(LIVE ",\"cutover\":{\"mode\":\"Manual\",\"approved\":false,"
                             "\"approvedBy\":\"alice\"}", ST_WAITING), old);
  expect_allowed(OBJ_ST(LIVE ",\"cutover\":{\"mode\":\"Manual\",\"approved\":false}", ST_WAITING),
                 old);
}

Test(migration, approval_cannot_be_withdrawn_once_the_cutover_started)
{
  static const char *const started[] = {
    "{\"phase\":\"CuttingOver\",\"cutoverLSN\":\"0/16B3748\"}",
    "{\"phase\":\"Verifying\"}",
    "{\"phase\":\"Suspended\",\"cutoverLSN\":\"0/16B3748\"}",
  };
  for(size_t i = 0; i < 3; i++) {
    char old[1024], obj[1024];
    snprintf(old, sizeof(old), OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), "%s"), started[i]);
    snprintf(obj, sizeof(obj), OBJ_ST(LIVE ",\"cutover\":{\"mode\":\"Manual\",\"approved\":false,"
                                           "\"approvedBy\":\"alice\"}", "%s"), started[i]);
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, obj, old, &T_ALICE, NULL);
    t_expect_cause(&r, "spec.cutover.approved", "FieldValueForbidden");
    t_expect_message(&r, "spec.cutover.approved", "cannot be withdrawn");
    api_result_release(&r);
  }
}

Test(migration, approvers_are_limited_by_the_policy)
{
  struct policy *p = t_policy("{\"approvals\":{\"approvers\":{\"groups\":[\"db-approvers\"]}}}");
  const char *old = OBJ_ST(PENDING, ST_WAITING);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, OBJ_ST(APPROVED(",\"approvedBy\":\"bob\""), ST_WAITING), old,
          &T_BOB, p);
  t_expect_cause(&r, "spec.cutover.approved", "FieldValueForbidden");
  t_expect_message(&r, "spec.cutover.approved", "\"bob\" may not approve cutovers");
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403: %s", t_causes(&r));
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K, OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING), old,
          &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

/* ---- immutability and finished migrations ---- */

Test(migration, source_target_and_dry_run_are_immutable)
{
  static const struct {
    const char *obj, *field;
  } changes[] = {
    { "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"other\"}},"
      "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}}}}", "spec.source" },
    { "{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"shop-src\"}},"
      "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\",\"key\":\"uri2\"}}}}",
      "spec.target" },
    { OBJ(",\"dryRun\":true"), "spec.dryRun" },
  };
  for(size_t i = 0; i < 3; i++) {
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, changes[i].obj, OBJ(""), &T_ALICE, NULL);
    t_expect_cause(&r, changes[i].field, "FieldValueInvalid");
    t_expect_message(&r, changes[i].field, "is immutable");
    t_expect_message(&r, changes[i].field, "create a new Migration");
    cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
    api_result_release(&r);
  }
  /* Writing out a default is no change. */
  expect_allowed("{" V1 ",\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"shop-src\","
                 "\"key\":\"uri\"}},\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\"}},"
                 "\"dryRun\":false}}",
                 OBJ(""));
}

Test(migration, v1alpha1_immutable_source_is_reported_on_its_field)
{
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K,
          "{" ALPHA ",\"spec\":{\"sourceSecret\":\"other\",\"targetSecret\":\"shop-dst\"}}",
          AOBJ(""), &T_ALICE, NULL);
  t_expect_cause(&r, "spec.sourceSecret", "FieldValueInvalid");
  api_result_release(&r);
}

#define MORE_JOBS ",\"clone\":{\"tableJobs\":8}"

Test(migration, clone_options_change_until_the_copy_starts)
{
  expect_allowed(OBJ(MORE_JOBS), OBJ(""));
  expect_allowed(OBJ_ST(MORE_JOBS, "{\"phase\":\"Pending\"}"), OBJ_ST("", "{\"phase\":\"Pending\"}"));
  expect_allowed(OBJ_ST(MORE_JOBS, "{\"phase\":\"Validating\"}"),
                 OBJ_ST("", "{\"phase\":\"Validating\"}"));
  expect_allowed(OBJ_ST(MORE_JOBS, "{\"phase\":\"Suspended\",\"attempts\":0}"),
                 OBJ_ST("", "{\"phase\":\"Suspended\",\"attempts\":0}"));
}

Test(migration, clone_options_are_frozen_once_the_copy_started)
{
  static const char *const started[] = { "{\"phase\":\"Cloning\",\"attempts\":1}",
                                         "{\"phase\":\"Streaming\",\"attempts\":1}",
                                         "{\"phase\":\"Suspended\",\"attempts\":2}" };
  for(size_t i = 0; i < 3; i++) {
    char old[1024], obj[1024];
    snprintf(old, sizeof(old), OBJ_ST(LIVE, "%s"), started[i]);
    snprintf(obj, sizeof(obj),
             OBJ_ST(LIVE ",\"clone\":{\"tableJobs\":8,\"filters\":{\"excludeTables\":[\"public.t\"]}}",
                    "%s"), started[i]);
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, obj, old, &T_ALICE, NULL);
    t_expect_cause(&r, "spec.clone.tableJobs", "FieldValueForbidden");
    t_expect_cause(&r, "spec.clone.filters", "FieldValueForbidden");
    t_expect_message(&r, "spec.clone.tableJobs", "cannot change from 4 to 8 once the copy has "
                                                 "started");
    t_expect_message(&r, "spec.clone.tableJobs", "create a new Migration");
    cr_assert_eq(r.errs.n, 2, "%s", t_causes(&r));
    api_result_release(&r);
  }
  /* Other fields still change: suspend, backoffLimit, the approval. */
  expect_allowed(OBJ_ST(LIVE ",\"suspend\":true,\"backoffLimit\":10", "{\"phase\":\"Cloning\"}"),
                 OBJ_ST(LIVE, "{\"phase\":\"Cloning\"}"));
}

Test(migration, clone_defaults_added_after_the_copy_started_are_no_change)
{
  /* Stored while the webhook was down: no tableJobs. The mutating webhook defaults it on the
   * next update, which must not count as changing a clone option. */
  const char *old = OBJ_ST("", "{\"phase\":\"Cloning\",\"attempts\":1}");
  cJSON *o = t_default(API_UPDATE, G, K, OBJ_ST(",\"suspend\":true",
                                                "{\"phase\":\"Cloning\",\"attempts\":1}"),
                       old, &T_ALICE, NULL);
  cr_assert_eq(json_get(o, "spec.clone.tableJobs")->valueint, 4);
  char *s = cJSON_PrintUnformatted(o);
  expect_allowed(s, old);
  cJSON_free(s);
  cJSON_Delete(o);
}

Test(migration, a_migration_cannot_become_live_or_stop_being_live_once_copying)
{
  const char *st = "{\"phase\":\"Cloning\",\"attempts\":1}";
  char old[512], obj[512];
  snprintf(old, sizeof(old), OBJ_ST("", "%s"), st);
  snprintf(obj, sizeof(obj), OBJ_ST(LIVE, "%s"), st);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, obj, old, &T_ALICE, NULL);
  t_expect_cause(&r, "spec.follow", "FieldValueForbidden");
  t_expect_message(&r, "spec.follow", "cannot be added once the copy has started (phase Cloning)");
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K, old, obj, &T_ALICE, NULL);
  t_expect_cause(&r, "spec.follow", "FieldValueForbidden");
  t_expect_message(&r, "spec.follow", "cannot be removed");
  api_result_release(&r);
  /* Before the copy it is a free choice. */
  expect_allowed(OBJ(LIVE), OBJ(""));
  /* v1alpha1 names spec.live. */
  t_admit(&r, API_UPDATE, G, K,
          "{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":\"shop-dst\","
          "\"live\":false},\"status\":{\"phase\":\"Streaming\"}}",
          "{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":\"shop-dst\","
          "\"live\":true,\"manualCutover\":true},\"status\":{\"phase\":\"Streaming\"}}",
          &T_ALICE, NULL);
  t_expect_cause(&r, "spec.live", "FieldValueForbidden");
  api_result_release(&r);
}

Test(migration, v1alpha1_clone_option_is_reported_on_its_field)
{
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K,
          "{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":\"shop-dst\","
          "\"tableJobs\":8},\"status\":{\"phase\":\"Cloning\"}}",
          "{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":\"shop-dst\"},"
          "\"status\":{\"phase\":\"Cloning\"}}",
          &T_ALICE, NULL);
  t_expect_cause(&r, "spec.tableJobs", "FieldValueForbidden");
  api_result_release(&r);
}

Test(migration, finished_migrations_refuse_any_spec_change)
{
  static const char *const finished[] = {
    "{\"phase\":\"Completed\"}",
    "{\"phase\":\"Failed\"}",
    "{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\",\"reason\":\"MigrationSucceeded\","
    "\"message\":\"done\",\"lastTransitionTime\":\"2026-01-02T15:04:05Z\"}]}",
    "{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\",\"reason\":\"PreflightFailed\","
    "\"message\":\"no\",\"lastTransitionTime\":\"2026-01-02T15:04:05Z\"}]}",
  };
  for(size_t i = 0; i < 4; i++) {
    char old[1024], obj[1024];
    snprintf(old, sizeof(old), OBJ_ST("", "%s"), finished[i]);
    snprintf(obj, sizeof(obj), OBJ_ST(",\"suspend\":true", "%s"), finished[i]);
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, obj, old, &T_ALICE, NULL);
    t_expect_cause(&r, "spec", "FieldValueForbidden");
    t_expect_message(&r, "spec", "the Migration has finished");
    t_expect_message(&r, "spec", "create a new Migration");
    cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
    api_result_release(&r);
    /* Metadata-only updates (finalizers, labels) still pass. */
    snprintf(obj, sizeof(obj), "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":"
             "{\"name\":\"shop\",\"labels\":{\"team\":\"a\"}},\"spec\":{" ENDS "},\"status\":%s}",
             finished[i]);
    expect_allowed(obj, old);
  }
}

Test(migration, finished_live_migration_stored_without_mode_accepts_metadata_updates)
{
  /* Stored while the webhook was down: no cutover.mode. The mutating webhook adds it to the
   * update, which must not count as a spec change. */
  const char *old = OBJ_ST(LIVE, "{\"phase\":\"Completed\"}");
  cJSON *o = t_default(API_UPDATE, G, K, OBJ_ST(LIVE, "{\"phase\":\"Completed\"}"), old, &T_ALICE,
                       NULL);
  cr_assert_str_eq(json_get_str(o, "spec.cutover.mode"), "Manual");
  char *s = cJSON_PrintUnformatted(o);
  expect_allowed(s, old);
  cJSON_free(s);
  cJSON_Delete(o);
}

/* ---- admission policy ---- */

static void expect_policy_only(const char *obj, const char *old, const struct policy *p,
                               const char *field, const char *text)
{
  struct api_result r;
  t_admit(&r, old ? API_UPDATE : API_CREATE, G, K, obj, old, &T_ALICE, p);
  t_expect_cause(&r, field, "FieldValueForbidden");
  t_expect_message(&r, field, text);
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403: %s", t_causes(&r));
  api_result_release(&r);
}

Test(migration, builtin_policy_limits_jobs_and_retries)
{
  expect_policy_only(OBJ(",\"clone\":{\"tableJobs\":65}"), NULL, NULL, "spec.clone.tableJobs",
                     "is 65, above the admission policy's limit of 64 (limits.maxTableJobs)");
  expect_policy_only(OBJ(",\"clone\":{\"indexJobs\":100}"), NULL, NULL, "spec.clone.indexJobs",
                     "limits.maxIndexJobs");
  expect_policy_only(OBJ(",\"backoffLimit\":21"), NULL, NULL, "spec.backoffLimit",
                     "limit of 20 (limits.maxBackoffLimit)");
  expect_allowed(OBJ(",\"clone\":{\"tableJobs\":64,\"indexJobs\":64},\"backoffLimit\":20"), NULL);
}

Test(migration, policy_limits_image_and_work_dir)
{
  struct policy *p = t_policy("{\"images\":{\"allowedRegistries\":[\"registry.example.com/\"]},"
                              "\"limits\":{\"maxWorkDirSize\":\"100Gi\",\"maxTableJobs\":8}}");
  expect_policy_only(OBJ(",\"worker\":{\"image\":\"ghcr.io/dimitri/pgcopydb:v0.17\"}"), NULL, p,
                     "spec.worker.image", "is not from a registry the admission policy allows");
  expect_policy_only(OBJ(",\"worker\":{\"workDir\":{\"size\":\"200Gi\"}}"), NULL, p,
                     "spec.worker.workDir.size", "limits.maxWorkDirSize");
  expect_policy_only(OBJ(",\"clone\":{\"tableJobs\":9}"), NULL, p, "spec.clone.tableJobs",
                     "limit of 8");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K,
          OBJ(",\"clone\":{\"tableJobs\":8},\"worker\":{\"image\":"
              "\"registry.example.com/db/pgcopydb:0.18\",\"workDir\":{\"size\":\"100Gi\"}}"),
          NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  /* A policy refusal next to an invalid field is a 422: not only policy. */
  t_admit(&r, API_CREATE, G, K,
          OBJ(",\"clone\":{\"tableJobs\":9},\"cutover\":{\"mode\":\"Manual\"}"), NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.clone.tableJobs", "FieldValueForbidden");
  t_expect_cause(&r, "spec.cutover", "FieldValueForbidden");
  cr_assert_not(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  policy_free(p);
}

Test(migration, a_lowered_limit_does_not_block_updates_that_keep_the_value)
{
  struct policy *p = t_policy("{\"limits\":{\"maxTableJobs\":8},"
                              "\"images\":{\"allowedRegistries\":[\"registry.example.com/\"]}}");
  const char *old = OBJ_ST(LIVE ",\"clone\":{\"tableJobs\":16},\"worker\":{\"image\":"
                           "\"ghcr.io/dimitri/pgcopydb:v0.17\"}", "{\"phase\":\"Streaming\"}");
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K,
          OBJ_ST(LIVE ",\"clone\":{\"tableJobs\":16},\"worker\":{\"image\":"
                 "\"ghcr.io/dimitri/pgcopydb:v0.17\"},\"suspend\":true", "{\"phase\":\"Streaming\"}"),
          old, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K,
          OBJ_ST(LIVE ",\"clone\":{\"tableJobs\":16},\"worker\":{\"image\":"
                 "\"docker.io/other/pgcopydb:0.18\"}", "{\"phase\":\"Streaming\"}"),
          old, &T_ALICE, p);
  t_expect_cause(&r, "spec.worker.image", "FieldValueForbidden");
  cr_assert_eq(r.errs.n, 1, "the kept tableJobs passes: %s", t_causes(&r));
  api_result_release(&r);
  policy_free(p);
}

Test(migration, policy_refusals_on_v1alpha1_name_its_fields)
{
  struct policy *p = t_policy("{\"images\":{\"allowedRegistries\":[\"registry.example.com/\"]}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, AOBJ(",\"image\":\"docker.io/library/pgcopydb:0.10\",\"tableJobs\":100"),
          NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.image", "FieldValueForbidden");
  t_expect_cause(&r, "spec.tableJobs", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs), "%s", t_causes(&r));
  api_result_release(&r);
  policy_free(p);
}

/* ---- warnings ---- */

static void expect_warning(const char *obj, const char *old, const char *text)
{
  struct api_result r;
  t_admit(&r, old ? API_UPDATE : API_CREATE, G, K, obj, old, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, text);
  for(size_t i = 0; i < r.warns.n; i++)
    cr_assert_leq(strlen(r.warns.v[i]), 256, "the apiserver may truncate: %s", r.warns.v[i]);
  api_result_release(&r);
}

Test(migration, risky_settings_warn)
{
  expect_warning(OBJ(",\"clone\":{\"skipVacuum\":true}"), NULL, "without planner statistics");
  expect_warning(OBJ(",\"clone\":{\"skipVacuum\":true}"), NULL, "needs pgcopydb 0.12+");
  expect_warning(OBJ(",\"verify\":{\"compare\":[\"data\"]}"), NULL,
                 "computed by godwit's runner on every pgcopydb version");
  expect_warning(OBJ(",\"clone\":{\"filters\":{\"includeOnlySchemas\":[\"public\"]}}"), NULL,
                 "includeOnlySchemas needs pgcopydb 0.13+");
  expect_warning(OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\"}"), NULL, "with nobody approving");
  expect_warning(OBJ(APPROVED(",\"approvedBy\":\"alice\"")), NULL,
                 "will start as soon as it catches up");
  expect_warning(OBJ(",\"backoffLimit\":0"), NULL, "the first failed attempt");
  expect_warning(OBJ(",\"follow\":{\"maxCatchupLag\":0}"), NULL, "busy source may never allow");
  expect_warning(OBJ(LIVE ",\"suspend\":true"), NULL, "holds WAL on the source");
  expect_warning(OBJ(",\"worker\":{\"image\":\"registry.example.com:5000/pgcopydb\"}"), NULL,
                 "has no tag or digest");
}

Test(migration, risky_settings_warn_when_made_not_on_every_update)
{
  const char *old = OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\"},\"backoffLimit\":0");
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K,
          OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\"},\"backoffLimit\":0,\"suspend\":true"),
          old, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_eq(r.warns.n, 1, "only the suspension is new: %zu warnings", r.warns.n);
  t_expect_warning(&r, "holds WAL on the source");
  api_result_release(&r);
  /* Switching a Manual migration to Automatic warns. */
  expect_warning(OBJ(LIVE ",\"cutover\":{\"mode\":\"Automatic\"}"),
                 OBJ(LIVE ",\"cutover\":{\"mode\":\"Manual\"}"), "with nobody approving");
}

Test(migration, safe_settings_do_not_warn)
{
  static const char *const quiet[] = {
    OBJ(""),
    OBJ(LIVE),
    OBJ(",\"worker\":{\"image\":\"registry.example.com:5000/pgcopydb:0.18\"},\"suspend\":true"),
    OBJ(",\"worker\":{\"image\":\"ghcr.io/dimitri/pgcopydb@sha256:"
        "0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\"}"),
  };
  for(size_t i = 0; i < 4; i++) {
    struct api_result r;
    t_admit(&r, API_CREATE, G, K, quiet[i], NULL, &T_ALICE, NULL);
    t_expect_allowed(&r);
    cr_assert_eq(r.warns.n, 0, "%s: %s", quiet[i], r.warns.n ? r.warns.v[0] : "");
    api_result_release(&r);
  }
  /* Approving while waiting for it is the normal path, not a risk. */
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, OBJ_ST(APPROVED(",\"approvedBy\":\"alice\""), ST_WAITING),
          OBJ_ST(PENDING, ST_WAITING), &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_eq(r.warns.n, 0, "%s", r.warns.n ? r.warns.v[0] : "");
  api_result_release(&r);
}

Test(migration, v1alpha1_is_deprecated)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, AOBJ(""), NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, G "/v1alpha1 Migration is deprecated; use " G "/v1 Migration");
  api_result_release(&r);
}
