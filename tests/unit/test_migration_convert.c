/* Migration conversion v1alpha1 <-> v1: the transforms, the annotations, the error paths. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/migration.h"
#include "apitest.h"
#include "json.h"

#define G "pgcopydb.io"
#define META "\"metadata\":{\"name\":\"shop\",\"namespace\":\"default\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"Migration\"," META
#define ALPHA "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"Migration\"," META
#define ENDS                                                                                 \
  "\"source\":{\"connectionSecretRef\":{\"name\":\"shop-src\",\"key\":\"uri\"}},"            \
  "\"target\":{\"connectionSecretRef\":{\"name\":\"shop-dst\",\"key\":\"uri\"}}"

static const struct api_kind *kind(void)
{
  return t_kind(G, "Migration");
}

static cJSON *converted(const char *json, const char *to)
{
  cJSON *o = t_json(json);
  char err[256];
  cr_assert_eq(api_convert(kind(), o, to, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "apiVersion"), to);
  return o;
}

static void assert_round_trip(const char *json, const char *via)
{
  cJSON *o = t_json(json);
  const char *back = json_get_str(o, "apiVersion");
  char home[64], err[256];
  snprintf(home, sizeof(home), "%s", back);
  cr_assert_eq(api_convert(kind(), o, via, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_eq(api_convert(kind(), o, home, err, sizeof(err)), GW_OK, "%s", err);
  cJSON *orig = t_json(json);
  char *a = cJSON_PrintUnformatted(orig), *b = cJSON_PrintUnformatted(o);
  cr_assert(cJSON_Compare(orig, o, 1), "round trip through %s changed\n%s\ninto\n%s", via, a, b);
  cJSON_free(a);
  cJSON_free(b);
  cJSON_Delete(orig);
  cJSON_Delete(o);
}

static const char *annotation(const cJSON *o, const char *name)
{
  return cJSON_GetStringValue(cJSON_GetObjectItem(json_get(o, "metadata.annotations"), name));
}

Test(migration_convert, live_v1alpha1_becomes_follow_and_cutover)
{
  cJSON *o = converted("{" ALPHA ",\"spec\":{\"sourceSecret\":\"shop-src\",\"targetSecret\":"
                       "\"shop-dst\",\"tableJobs\":8,\"live\":true,\"maxCatchupLag\":\"64Mi\","
                       "\"manualCutover\":false,\"image\":\"ghcr.io/dimitri/pgcopydb:v0.17\","
                       "\"backoffLimit\":3,\"dryRun\":false,\"suspend\":true}}",
                       G "/v1");
  cr_assert_str_eq(json_get_str(o, "spec.source.connectionSecretRef.name"), "shop-src");
  cr_assert_str_eq(json_get_str(o, "spec.target.connectionSecretRef.name"), "shop-dst");
  cr_assert_eq(json_get(o, "spec.clone.tableJobs")->valueint, 8);
  cr_assert_str_eq(json_get_str(o, "spec.follow.maxCatchupLag"), "64Mi");
  cr_assert_str_eq(json_get_str(o, "spec.cutover.mode"), "Automatic");
  cr_assert_str_eq(json_get_str(o, "spec.worker.image"), "ghcr.io/dimitri/pgcopydb:v0.17");
  cr_assert_eq(json_get(o, "spec.backoffLimit")->valueint, 3);
  cr_assert(cJSON_IsTrue(json_get(o, "spec.suspend")));
  cr_assert_null(json_get(o, "spec.live"));
  cr_assert_null(json_get(o, "spec.manualCutover"));
  cr_assert_null(json_get(o, "metadata.annotations"));
  cJSON_Delete(o);
}

Test(migration_convert, clone_v1alpha1_has_no_follow)
{
  cJSON *o = converted("{" ALPHA ",\"spec\":{\"sourceSecret\":\"a\",\"targetSecret\":\"b\","
                       "\"live\":false}}", G "/v1");
  cr_assert_null(json_get(o, "spec.follow"));
  cr_assert_null(json_get(o, "spec.cutover"));
  cJSON_Delete(o);
}

Test(migration_convert, v1_clone_reads_as_live_false)
{
  cJSON *o = converted("{" V1 ",\"spec\":{" ENDS "}}", G "/v1alpha1");
  cr_assert(cJSON_IsFalse(json_get(o, "spec.live")));
  cr_assert_null(json_get(o, "spec.manualCutover"));
  cr_assert_str_eq(json_get_str(o, "spec.sourceSecret"), "shop-src");
  /* The keys are v1-only: they travel in the annotation. */
  const char *ann = annotation(o, "godwit.dev/v1-fields");
  cr_assert_not_null(ann);
  cr_assert(strstr(ann, "\"key\":\"uri\""), "%s", ann);
  cJSON_Delete(o);
}

Test(migration_convert, v1_live_reads_as_live_with_its_cutover)
{
  cJSON *o = converted("{" V1 ",\"spec\":{" ENDS ",\"follow\":{\"maxCatchupLag\":\"16Mi\"},"
                       "\"cutover\":{\"mode\":\"Manual\",\"approved\":true,"
                       "\"approvedBy\":\"alice\"}}}",
                       G "/v1alpha1");
  cr_assert(cJSON_IsTrue(json_get(o, "spec.live")));
  cr_assert_str_eq(json_get_str(o, "spec.maxCatchupLag"), "16Mi");
  cr_assert(cJSON_IsTrue(json_get(o, "spec.manualCutover")));
  cr_assert_null(json_get(o, "spec.follow"));
  const char *ann = annotation(o, "godwit.dev/v1-fields");
  cr_assert(ann && strstr(ann, "\"approvedBy\":\"alice\"") && !strstr(ann, "mode"), "%s", ann);
  cJSON_Delete(o);
}

Test(migration_convert, everything_v1_holds_survives_v1alpha1)
{
  assert_round_trip(
    "{" V1 ",\"spec\":{" ENDS ",\"clone\":{\"tableJobs\":8,\"indexJobs\":2,\"skipVacuum\":true,"
    "\"skipLargeObjects\":false,\"ownerAfterRestore\":\"app\",\"extensions\":[\"citext\"],"
    "\"filters\":{\"excludeSchemas\":[\"audit\"],\"excludeTableData\":[\"public.log\"]}},"
    "\"follow\":{\"maxCatchupLag\":\"32Mi\"},\"cutover\":{\"mode\":\"Manual\",\"approved\":true,"
    "\"approvedBy\":\"alice\"},\"verify\":{\"compare\":[\"schema\",\"data\"]},"
    "\"worker\":{\"image\":\"ghcr.io/dimitri/pgcopydb:v0.17\",\"resources\":{\"limits\":"
    "{\"memory\":\"2Gi\"}},\"workDir\":{\"size\":\"20Gi\",\"storageClassName\":\"fast\"}},"
    "\"backoffLimit\":6,\"dryRun\":false,\"suspend\":false,"
    "\"superuserSecretRef\":{\"name\":\"pg-admin\",\"key\":\"uri\"}},"
    "\"status\":{\"phase\":\"CutoverPending\",\"observedGeneration\":3,\"attempts\":1,"
    "\"lagBytes\":1024,\"lagSampleTime\":\"2026-01-02T15:04:05Z\",\"cutoverLSN\":\"0/16B3748\","
    "\"pgcopydbVersion\":\"0.17\",\"startTime\":\"2026-01-02T15:00:00Z\"}}",
    G "/v1alpha1");
}

Test(migration_convert, cutover_without_a_mode_survives)
{
  assert_round_trip("{" V1 ",\"spec\":{" ENDS ",\"follow\":{},\"cutover\":{}}}", G "/v1alpha1");
  assert_round_trip("{" V1 ",\"spec\":{" ENDS ",\"cutover\":{\"approved\":false}}}",
                    G "/v1alpha1");
}

Test(migration_convert, v1alpha1_states_survive_v1)
{
  static const char *const specs[] = {
    "\"live\":false",
    "\"live\":true",
    "\"live\":true,\"maxCatchupLag\":\"1Gi\",\"manualCutover\":true",
    "\"live\":false,\"manualCutover\":false",
    "\"live\":false,\"maxCatchupLag\":\"16Mi\"",
    "\"live\":false,\"maxCatchupLag\":4096,\"manualCutover\":true",
  };
  for(size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
    char json[512];
    snprintf(json, sizeof(json), "{" ALPHA ",\"spec\":{\"sourceSecret\":\"a\",\"targetSecret\":"
             "\"b\",%s}}", specs[i]);
    assert_round_trip(json, G "/v1");
  }
}

Test(migration_convert, lag_of_a_clone_travels_in_the_v1alpha1_annotation)
{
  cJSON *o = converted("{\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"Migration\",\"metadata\":"
                       "{\"name\":\"shop\",\"annotations\":{\"note\":\"x\"}},"
                       "\"spec\":{\"sourceSecret\":\"a\",\"targetSecret\":\"b\","
                       "\"live\":false,\"maxCatchupLag\":\"16Mi\"}}",
                       G "/v1");
  cr_assert_null(json_get(o, "spec.follow"), "not live: no follow");
  const char *ann = annotation(o, MIGRATION_V1ALPHA1_FIELDS_ANNOTATION);
  cr_assert_not_null(ann);
  cr_assert_str_eq(ann, "{\"spec\":{\"maxCatchupLag\":\"16Mi\"}}");
  cJSON *lag = migration_stashed_lag(o);
  cr_assert_str_eq(cJSON_GetStringValue(lag), "16Mi");
  cJSON_Delete(lag);
  cr_assert_str_eq(annotation(o, "note"), "x", "other annotations are kept");
  cJSON_Delete(o);
}

Test(migration_convert, hub_error_paths_translate_to_v1alpha1)
{
  const struct api_version *v = api_find_version(kind(), "v1alpha1");
  static const char *const pairs[][2] = {
    { "spec.source", "spec.sourceSecret" },
    { "spec.target.connectionSecretRef", "spec.targetSecret" },
    { "spec.target.connectionSecretRef.name", "spec.targetSecret" },
    { "spec.source.connectionSecretRef.key", "spec.source.connectionSecretRef.key" },
    { "spec.follow", "spec.live" },
    { "spec.follow.maxCatchupLag", "spec.maxCatchupLag" },
    { "spec.cutover", "spec.manualCutover" },
    { "spec.cutover.mode", "spec.manualCutover" },
    { "spec.cutover.approved", "spec.cutover.approved" },
    { "spec.cutover.approvedBy", "spec.cutover.approvedBy" },
    { "spec.clone.tableJobs", "spec.tableJobs" },
    { "spec.worker.image", "spec.image" },
  };
  for(size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
    char *p = api_path_from_hub(v, pairs[i][0]);
    cr_assert_str_eq(p ? p : pairs[i][0], pairs[i][1], "%s", pairs[i][0]);
    free(p);
  }
  cr_assert_null(api_path_from_hub(v, "spec.clone.indexJobs"), "v1-only fields keep their path");
}
