/*
 * The local API server's CRD layer (tests/localcluster/apiserver/schema*.c), called directly:
 * godwit's real CRDs (manifests/crds) register; pruning, defaulting and every validation keyword
 * behave as kube-apiserver's, with its exact messages, field paths and cause reasons; bad CRDs are
 * refused with kube's messages. Keywords the real CRDs do not use are exercised on a small CRD of
 * the test's own (widgets.example.com).
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hooks.h"
#include "json.h"
#include "test_apiserver_util.h"
#include "yamldoc.h"

static cJSON *J(const char *text)
{
  cJSON *v = NULL;
  char err[200];
  cr_assert_eq(json_parse_strict(text, strlen(text), &v, err, sizeof(err)), GW_OK, "%s: %s", err, text);
  return v;
}

static void register_file(const char *path)
{
  cJSON *docs;
  char err[256];
  cr_assert_eq(yamldoc_parse_file(path, &docs, err, sizeof(err)), GW_OK, "%s: %s", path, err);
  struct ls_crd_info info;
  cJSON *st = crd_register(cJSON_GetArrayItem(docs, 0), &info);
  cr_assert_null(st, "%s refused: %s", path, st ? json_get_str(st, "message") : "");
  cJSON_Delete(docs);
}

static const char WIDGET_CRD[] =
  "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
  "\"metadata\":{\"name\":\"widgets.example.com\"},"
  "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
  "\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
  "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
  "{\"type\":\"object\",\"properties\":{\"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
  "\"metadata\":{\"type\":\"object\"},"
  "\"spec\":{\"type\":\"object\",\"properties\":{"
  "\"code\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":5},"
  "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":true,\"minimum\":0,\"exclusiveMaximum\":true,\"maximum\":1.5},"
  "\"step\":{\"type\":\"integer\",\"multipleOf\":5},"
  "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
  "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"minProperties\":1},"
  "\"note\":{\"type\":\"string\",\"nullable\":true},"
  "\"level\":{\"type\":\"integer\",\"default\":3,\"enum\":[1,2,3]},"
  "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,"
  "         \"properties\":{\"inner\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}},"
  "\"opts\":{\"type\":\"object\",\"default\":{},\"properties\":{\"retries\":{\"type\":\"integer\",\"default\":2},"
  "         \"mode\":{\"type\":\"string\",\"default\":\"fast\"}}},"
  "\"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"port\",\"protocol\"],"
  "         \"items\":{\"type\":\"object\",\"required\":[\"port\"],\"properties\":{\"port\":{\"type\":\"integer\"},"
  "         \"protocol\":{\"type\":\"string\",\"default\":\"TCP\"}}}},"
  "\"when\":{\"type\":\"string\",\"format\":\"date\"},"
  "\"id\":{\"type\":\"string\",\"format\":\"uuid\"}"
  "}}}}}}]}}";

static void setup(void)
{
  glob_t g;
  cr_assert_eq(glob("manifests/crds/*.yaml", 0, NULL, &g), 0, "run from the repository root");
  cr_assert_eq(g.gl_pathc, 8);
  for(size_t i = 0; i < g.gl_pathc; i++)
    register_file(g.gl_pathv[i]);
  globfree(&g);
  cJSON *w = J(WIDGET_CRD);
  struct ls_crd_info info;
  cJSON *st = crd_register(w, &info);
  cr_assert_null(st, "%s", st ? json_get_str(st, "message") : "");
  cJSON_Delete(w);
}

TestSuite(apiserver_crd, .init = setup);

/* A v1 Migration with the given spec members (JSON text without braces). */
static cJSON *migration(const char *spec_members)
{
  char buf[8192];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"metadata\":{\"name\":\"shop\","
           "\"namespace\":\"db\"},\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"src\"}},"
           "\"target\":{\"connectionSecretRef\":{\"name\":\"dst\"}}%s%s}}",
           *spec_members ? "," : "", spec_members);
  return J(buf);
}

static cJSON *widget(const char *spec)
{
  char buf[4096];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},\"spec\":%s}", spec);
  return J(buf);
}

/* Defaults then validates as the API server does; returns the Status or NULL. */
static cJSON *admit(const char *group, const char *plural, const char *version, cJSON *obj)
{
  crd_prune_and_default(group, plural, version, obj);
  return crd_validate(group, plural, version, obj, NULL);
}

static void expect_one(cJSON *st, const char *kind_msg_prefix, const char *field, const char *reason,
                       const char *message)
{
  cr_assert_not_null(st, "expected a refusal for %s", field);
  cr_assert_eq(json_get(st, "code")->valueint, 422);
  cr_assert_str_eq(json_get_str(st, "reason"), "Invalid");
  const cJSON *causes = json_get(st, "details.causes");
  cr_assert_eq(cJSON_GetArraySize(causes), 1, "%s", json_get_str(st, "message"));
  const cJSON *c = cJSON_GetArrayItem(causes, 0);
  cr_assert_str_eq(json_get_str(c, "field"), field);
  cr_assert_str_eq(json_get_str(c, "reason"), reason);
  cr_assert_str_eq(json_get_str(c, "message"), message);
  char full[4096];
  snprintf(full, sizeof(full), "%s%s: %s", kind_msg_prefix, field, message);
  cr_assert_str_eq(json_get_str(st, "message"), full);
}

static void mig_case(const char *spec, const char *field, const char *reason, const char *message)
{
  cJSON *m = migration(spec);
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  expect_one(st, "Migration.pgcopydb.io \"shop\" is invalid: ", field, reason, message);
  cJSON_Delete(st);
  cJSON_Delete(m);
}

/* The CRDs' transition rules (self == oldSelf, generated from the webhook's immutability
 * rules): an UPDATE that changes spec.source is refused by the schema alone, with the webhook's
 * message, as kube-apiserver says it; an unchanged one, a create, and other fields pass. */
Test(apiserver_crd, an_immutable_field_is_kept_by_the_crd_rule)
{
  cJSON *old = migration("");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", old);
  cJSON *same = migration("\"suspend\":true");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", same);
  cr_assert_null(crd_validate("pgcopydb.io", "migrations", "v1", same, old));
  cJSON *moved = J("{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"metadata\":{"
                   "\"name\":\"shop\",\"namespace\":\"db\"},\"spec\":{\"source\":{"
                   "\"connectionSecretRef\":{\"name\":\"elsewhere\"}},\"target\":{"
                   "\"connectionSecretRef\":{\"name\":\"dst\"}}}}");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", moved);
  cr_assert_null(crd_validate("pgcopydb.io", "migrations", "v1", moved, NULL), "a create");
  cJSON *st = crd_validate("pgcopydb.io", "migrations", "v1", moved, old);
  expect_one(st, "Migration.pgcopydb.io \"shop\" is invalid: ", "spec.source",
             "FieldValueInvalid",
             "Invalid value: \"object\": is immutable: a Migration copies from the database it "
             "was created with; create a new Migration to copy from another");
  cJSON_Delete(st);
  cJSON_Delete(moved);
  cJSON_Delete(same);
  cJSON_Delete(old);
}

static void widget_case(const char *spec, const char *field, const char *reason, const char *message)
{
  cJSON *w = widget(spec);
  cJSON *st = admit("example.com", "widgets", "v1", w);
  expect_one(st, "Widget.example.com \"w\" is invalid: ", field, reason, message);
  cJSON_Delete(st);
  cJSON_Delete(w);
}

LTest(apiserver_crd, real_crds_register_with_their_names_and_versions)
{
  /* crd_register again to read the info (it replaces the entry) */
  cJSON *docs;
  char err[256];
  cr_assert_eq(yamldoc_parse_file("manifests/crds/pgcopydb.io_migrations.yaml", &docs, err, sizeof(err)), GW_OK);
  struct ls_crd_info in;
  cr_assert_null(crd_register(cJSON_GetArrayItem(docs, 0), &in));
  cJSON_Delete(docs);
  cr_assert_str_eq(in.name, "migrations.pgcopydb.io");
  cr_assert_str_eq(in.group, "pgcopydb.io");
  cr_assert_str_eq(in.kind, "Migration");
  cr_assert_str_eq(in.list_kind, "MigrationList");
  cr_assert_str_eq(in.singular, "migration");
  cr_assert_eq(in.nshort, 1);
  cr_assert_str_eq(in.short_names[0], "pgmig");
  cr_assert_eq(in.ncategories, 1);
  cr_assert_str_eq(in.categories[0], "pgcopydb");
  cr_assert(in.namespaced);
  cr_assert_eq(in.nversions, 2);
  cr_assert_str_eq(in.versions[0].name, "v1alpha1");
  cr_assert(in.versions[0].served && !in.versions[0].storage && in.versions[0].status_subresource);
  cr_assert_str_eq(in.versions[1].name, "v1");
  cr_assert(in.versions[1].served && in.versions[1].storage);
}

LTest(apiserver_crd, printer_columns_per_version_and_the_default_age_column)
{
  const cJSON *c = crd_printer_columns("pgcopydb.io", "migrations", "v1alpha1");
  cr_assert_eq(cJSON_GetArraySize(c), 7);
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(c, 1), "jsonPath"), ".spec.sourceSecret");
  c = crd_printer_columns("pgcopydb.io", "migrations", "v1");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(c, 1), "jsonPath"), ".spec.source.connectionSecretRef.name");
  c = crd_printer_columns("example.com", "widgets", "v1");
  cr_assert_eq(cJSON_GetArraySize(c), 1);
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(c, 0), "name"), "Age");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(c, 0), "jsonPath"), ".metadata.creationTimestamp");
  cr_assert_null(crd_printer_columns("pgcopydb.io", "migrations", "v2"));
}

LTest(apiserver_crd, pruning_drops_unknown_fields_and_keeps_metadata)
{
  cJSON *m = migration("\"bogus\":1,\"clone\":{\"tableJobs\":4,\"turbo\":true}");
  cJSON_AddStringToObject(m, "extra", "x");
  cJSON *meta = json_get_mut(m, "metadata");
  cJSON_AddStringToObject(meta, "madeUp", "x");
  cJSON_AddItemToObject(meta, "labels", J("{\"app\":\"shop\"}"));
  cJSON_AddItemToObject(m, "status", J("{\"phase\":\"Cloning\",\"mystery\":3}"));
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", m);
  cr_assert_null(json_get(m, "extra"));
  cr_assert_null(json_get(m, "spec.bogus"));
  cr_assert_null(json_get(m, "spec.clone.turbo"));
  cr_assert_eq(json_get(m, "spec.clone.tableJobs")->valueint, 4);
  cr_assert_null(json_get(m, "metadata.madeUp"));
  cr_assert_str_eq(json_get_str(m, "metadata.labels.app"), "shop");
  cr_assert_str_eq(json_get_str(m, "metadata.name"), "shop");
  cr_assert_str_eq(json_get_str(m, "apiVersion"), "pgcopydb.io/v1");
  cr_assert_str_eq(json_get_str(m, "kind"), "Migration");
  cr_assert_str_eq(json_get_str(m, "status.phase"), "Cloning");
  cr_assert_null(json_get(m, "status.mystery"));
  cJSON_Delete(m);
}

LTest(apiserver_crd, preserve_unknown_fields_keeps_members_but_prunes_known_children)
{
  cJSON *w = widget("{\"free\":{\"anything\":{\"deep\":1},\"inner\":{\"a\":\"x\",\"b\":\"pruned\"}}}");
  crd_prune_and_default("example.com", "widgets", "v1", w);
  cr_assert_eq(json_get(w, "spec.free.anything.deep")->valueint, 1);
  cr_assert_str_eq(json_get_str(w, "spec.free.inner.a"), "x");
  cr_assert_null(json_get(w, "spec.free.inner.b"));
  cJSON_Delete(w);
}

LTest(apiserver_crd, defaults_apply_where_the_parent_exists_top_down)
{
  cJSON *m = migration("\"follow\":{}");
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", m);
  /* key defaults to "uri" under both refs; clone {} is defaulted and then its own members */
  cr_assert_str_eq(json_get_str(m, "spec.source.connectionSecretRef.key"), "uri");
  cr_assert_str_eq(json_get_str(m, "spec.target.connectionSecretRef.key"), "uri");
  cr_assert(cJSON_IsObject(json_get(m, "spec.clone")));
  cr_assert(cJSON_IsFalse(json_get(m, "spec.clone.skipVacuum")));
  cr_assert(cJSON_IsFalse(json_get(m, "spec.clone.skipLargeObjects")));
  cr_assert_str_eq(json_get_str(m, "spec.follow.maxCatchupLag"), "16Mi");
  cr_assert(cJSON_IsFalse(json_get(m, "spec.dryRun")));
  /* no parent, no default: superuserSecretRef absent stays absent */
  cr_assert_null(json_get(m, "spec.superuserSecretRef"));
  cr_assert_null(crd_validate("pgcopydb.io", "migrations", "v1", m, NULL));
  /* idempotent */
  cJSON *again = cJSON_Duplicate(m, 1);
  crd_prune_and_default("pgcopydb.io", "migrations", "v1", again);
  cr_assert(json_equal(m, again));
  cJSON_Delete(again);
  cJSON_Delete(m);
}

LTest(apiserver_crd, nulls_default_or_are_dropped_unless_nullable)
{
  cJSON *w = widget("{\"level\":null,\"code\":null,\"note\":null,\"opts\":null,\"ports\":[{\"port\":80,\"protocol\":null}]}");
  crd_prune_and_default("example.com", "widgets", "v1", w);
  cr_assert_eq(json_get(w, "spec.level")->valueint, 3);            /* non-nullable null with a default */
  cr_assert_null(json_get(w, "spec.code"));                         /* no default: dropped */
  cr_assert(cJSON_IsNull(json_get(w, "spec.note")));                /* nullable: kept */
  cr_assert_eq(json_get(w, "spec.opts.retries")->valueint, 2);      /* defaulted object, then its members */
  cr_assert_str_eq(json_get_str(w, "spec.opts.mode"), "fast");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(w, "spec.ports"), 0), "protocol"), "TCP");
  cr_assert_null(crd_validate("example.com", "widgets", "v1", w, NULL));
  cJSON_Delete(w);
}

LTest(apiserver_crd, required)
{
  cJSON *m = J("{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"metadata\":{\"name\":\"shop\"}}");
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  expect_one(st, "Migration.pgcopydb.io \"shop\" is invalid: ", "spec", "FieldValueRequired", "Required value");
  cJSON_Delete(st);
  cJSON_Delete(m);
  mig_case("\"superuserSecretRef\":{\"key\":\"k\"}", "spec.superuserSecretRef.name", "FieldValueRequired", "Required value");
}

LTest(apiserver_crd, type_integer_number_object_and_null)
{
  mig_case("\"clone\":{\"tableJobs\":\"four\"}", "spec.clone.tableJobs", "FieldValueTypeInvalid",
           "Invalid value: \"string\": spec.clone.tableJobs in body must be of type integer: \"string\"");
  /* format int64 speaks first for a non-integral number (kube-openapi's type validator) */
  mig_case("\"clone\":{\"tableJobs\":1.5}", "spec.clone.tableJobs", "FieldValueTypeInvalid",
           "Invalid value: \"double\": spec.clone.tableJobs in body must be of type int64: \"double\"");
  mig_case("\"cutover\":\"now\"", "spec.cutover", "FieldValueTypeInvalid",
           "Invalid value: \"string\": spec.cutover in body must be of type object: \"string\"");
  mig_case("\"verify\":{\"compare\":\"data\"}", "spec.verify.compare", "FieldValueTypeInvalid",
           "Invalid value: \"string\": spec.verify.compare in body must be of type array: \"string\"");
  widget_case("{\"ratio\":1.5}", "spec.ratio", "FieldValueInvalid",
              "Invalid value: 1.5: spec.ratio in body should be less than 1.5");
  /* an integer is a number; nullable accepts null */
  cJSON *w = widget("{\"ratio\":0.5,\"note\":null}");
  cr_assert_null(admit("example.com", "widgets", "v1", w));
  cJSON_Delete(w);
}

LTest(apiserver_crd, minimum_maximum_exclusive_and_multiple_of)
{
  mig_case("\"clone\":{\"tableJobs\":0}", "spec.clone.tableJobs", "FieldValueInvalid",
           "Invalid value: 0: spec.clone.tableJobs in body should be greater than or equal to 1");
  mig_case("\"clone\":{\"tableJobs\":129}", "spec.clone.tableJobs", "FieldValueInvalid",
           "Invalid value: 129: spec.clone.tableJobs in body should be less than or equal to 128");
  widget_case("{\"ratio\":0}", "spec.ratio", "FieldValueInvalid", "Invalid value: 0: spec.ratio in body should be greater than 0");
  widget_case("{\"ratio\":-0.25}", "spec.ratio", "FieldValueInvalid",
              "Invalid value: -0.25: spec.ratio in body should be greater than 0");
  widget_case("{\"step\":7}", "spec.step", "FieldValueInvalid", "Invalid value: 7: spec.step in body should be a multiple of 5");
}

LTest(apiserver_crd, enum_values)
{
  mig_case("\"cutover\":{\"mode\":\"Sometimes\"}", "spec.cutover.mode", "FieldValueNotSupported",
           "Unsupported value: \"Sometimes\": supported values: \"Manual\", \"Automatic\"");
  mig_case("\"verify\":{\"compare\":[\"schema\",\"rows\"]}", "spec.verify.compare[1]", "FieldValueNotSupported",
           "Unsupported value: \"rows\": supported values: \"schema\", \"data\"");
  /* non-string enum values are quoted JSON */
  widget_case("{\"level\":4}", "spec.level", "FieldValueNotSupported", "Unsupported value: 4: supported values: \"1\", \"2\", \"3\"");
}

LTest(apiserver_crd, string_lengths_in_runes_and_patterns)
{
  mig_case("\"clone\":{\"ownerAfterRestore\":\"0123456789012345678901234567890123456789012345678901234567890123\"}",
           "spec.clone.ownerAfterRestore", "FieldValueTooLong", "Too long: may not be longer than 63");
  widget_case("{\"code\":\"ab\"}", "spec.code", "FieldValueInvalid",
              "Invalid value: \"ab\": spec.code in body should be at least 3 chars long");
  /* five runes, ten bytes: within maxLength 5 */
  cJSON *w = widget("{\"code\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}");
  cr_assert_null(admit("example.com", "widgets", "v1", w));
  cJSON_Delete(w);
  cJSON *bad = migration("");
  cr_assert_eq(json_set_str(bad, "spec.source.connectionSecretRef.name", "Bad_Name"), GW_OK);
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", bad);
  expect_one(st, "Migration.pgcopydb.io \"shop\" is invalid: ", "spec.source.connectionSecretRef.name", "FieldValueInvalid",
             "Invalid value: \"Bad_Name\": spec.source.connectionSecretRef.name in body should match "
             "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'");
  cJSON_Delete(st);
  cJSON_Delete(bad);
  /* Go regexp semantics: runes, not bytes, in [^"]{1,63} */
  char buf[1024] = "\"clone\":{\"filters\":{\"includeOnlyTables\":[\"public.";
  for(int i = 0; i < 63; i++)
    strcat(buf, "\xc3\xa9");
  strcat(buf, "\"]}}");
  cJSON *m = migration(buf);
  cr_assert_null(admit("pgcopydb.io", "migrations", "v1", m));
  cJSON_Delete(m);
  mig_case("\"clone\":{\"filters\":{\"includeOnlyTables\":[\"users\"]}}", "spec.clone.filters.includeOnlyTables[0]",
           "FieldValueInvalid",
           "Invalid value: \"users\": spec.clone.filters.includeOnlyTables[0] in body should match "
           "'^(\"[^\"]{1,63}\"|[^\".]{1,63})\\.(\"[^\"]{1,63}\"|[^\".]{1,63})$'");
}

LTest(apiserver_crd, items_and_properties_counts)
{
  char buf[4096] = "\"clone\":{\"extensions\":[";
  for(int i = 0; i < 65; i++)
    sprintf(buf + strlen(buf), "%s\"e%d\"", i ? "," : "", i);
  strcat(buf, "]}");
  mig_case(buf, "spec.clone.extensions", "FieldValueTooMany", "Too many: 65: must have at most 64 items");
  widget_case("{\"tags\":[]}", "spec.tags", "FieldValueInvalid", "Invalid value: 0: spec.tags in body should have at least 1 items");
  widget_case("{\"env\":{}}", "spec.env", "FieldValueInvalid", "Invalid value: 0: spec.env in body should have at least 1 properties");
}

LTest(apiserver_crd, additional_properties_and_max_properties)
{
  cJSON *s = J("{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahSchema\",\"metadata\":{\"name\":\"app\"},"
               "\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"db\"}},\"schema\":{\"sql\":\"create table t()\"},"
               "\"execution\":{\"podMetadata\":{\"labels\":{\"team\":7}}}}}");
  cJSON *st = admit("ptah.run", "ptahschemas", "v1", s);
  expect_one(st, "PtahSchema.ptah.run \"app\" is invalid: ", "spec.execution.podMetadata.labels.team",
             "FieldValueTypeInvalid",
             "Invalid value: \"integer\": spec.execution.podMetadata.labels.team in body must be of type string: \"integer\"");
  cJSON_Delete(st);
  cJSON *labels = json_get_mut(s, "spec.execution.podMetadata.labels");
  cJSON_DeleteItemFromObject(labels, "team");
  for(int i = 0; i < 65; i++) {
    char k[16];
    snprintf(k, sizeof(k), "k%d", i);
    cJSON_AddStringToObject(labels, k, "v");
  }
  st = admit("ptah.run", "ptahschemas", "v1", s);
  expect_one(st, "PtahSchema.ptah.run \"app\" is invalid: ", "spec.execution.podMetadata.labels", "FieldValueTooMany",
             "Too many: 65: must have at most 64 items");
  cJSON_Delete(st);
  cJSON_Delete(s);
}

LTest(apiserver_crd, list_type_set_and_map_duplicates)
{
  mig_case("\"clone\":{\"extensions\":[\"postgis\",\"hstore\",\"postgis\",\"postgis\"]}", "spec.clone.extensions[2]",
           "FieldValueDuplicate", "Duplicate value: \"postgis\"");
  cJSON *m = migration("");
  const char *cond = "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2024-01-02T03:04:05Z\","
                     "\"reason\":\"Done\",\"message\":\"ok\"}";
  char buf[1024];
  snprintf(buf, sizeof(buf), "{\"conditions\":[%s,%s]}", cond, cond);
  cJSON_AddItemToObject(m, "status", J(buf));
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  expect_one(st, "Migration.pgcopydb.io \"shop\" is invalid: ", "status.conditions[1]", "FieldValueDuplicate",
             "Duplicate value: map[string]interface {}{\"type\":\"Ready\"}");
  cJSON_Delete(st);
  cJSON_Delete(m);
  widget_case("{\"ports\":[{\"port\":80},{\"port\":80,\"protocol\":\"UDP\"},{\"port\":80,\"protocol\":\"TCP\"}]}",
              "spec.ports[2]", "FieldValueDuplicate",
              "Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}");
}

LTest(apiserver_crd, int_or_string)
{
  cJSON *m = migration("\"follow\":{\"maxCatchupLag\":1048576}");
  cr_assert_null(admit("pgcopydb.io", "migrations", "v1", m));
  cJSON_Delete(m);
  mig_case("\"follow\":{\"maxCatchupLag\":\"lots\"}", "spec.follow.maxCatchupLag", "FieldValueInvalid",
           "Invalid value: \"lots\": spec.follow.maxCatchupLag in body should match "
           "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'");
  /* kube-openapi reports the type, the anyOf and the best alternative's failure */
  m = migration("\"follow\":{\"maxCatchupLag\":true}");
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  cr_assert_not_null(st);
  cr_assert_str_eq(json_get_str(st, "message"),
                   "Migration.pgcopydb.io \"shop\" is invalid: ["
                   "spec.follow.maxCatchupLag: Invalid value: \"boolean\": spec.follow.maxCatchupLag in body must be of type integer,string: \"boolean\", "
                   "<nil>: Invalid value: \"\": \"spec.follow.maxCatchupLag\" must validate at least one schema (anyOf), "
                   "spec.follow.maxCatchupLag: Invalid value: \"boolean\": spec.follow.maxCatchupLag in body must be of type integer: \"boolean\"]");
  cJSON_Delete(st);
  cJSON_Delete(m);
}

LTest(apiserver_crd, formats)
{
  cJSON *m = migration("");
  cJSON_AddItemToObject(m, "status", J("{\"startTime\":\"yesterday\",\"completionTime\":\"2024-02-30T10:00:00Z\","
                                       "\"lagSampleTime\":\"2024-01-02T03:04:05.123+01:00\"}"));
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  cr_assert_not_null(st);
  const cJSON *causes = json_get(st, "details.causes");
  cr_assert_eq(cJSON_GetArraySize(causes), 2, "%s", json_get_str(st, "message"));
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 0), "message"),
                   "Invalid value: \"yesterday\": status.startTime in body must be of type date-time: \"yesterday\"");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 0), "reason"), "FieldValueTypeInvalid");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 1), "field"), "status.completionTime");
  cJSON_Delete(st);
  cJSON_Delete(m);
  widget_case("{\"when\":\"2024-13-01\"}", "spec.when", "FieldValueTypeInvalid",
              "Invalid value: \"2024-13-01\": spec.when in body must be of type date: \"2024-13-01\"");
  widget_case("{\"id\":\"not-a-uuid\"}", "spec.id", "FieldValueTypeInvalid",
              "Invalid value: \"not-a-uuid\": spec.id in body must be of type uuid: \"not-a-uuid\"");
}

LTest(apiserver_crd, every_cause_is_collected)
{
  cJSON *m = migration("\"clone\":{\"tableJobs\":0,\"indexJobs\":500},\"cutover\":{\"mode\":\"Later\"},\"backoffLimit\":-1");
  cJSON_DeleteItemFromObject(json_get_mut(m, "spec"), "target");
  cJSON *st = admit("pgcopydb.io", "migrations", "v1", m);
  cr_assert_not_null(st);
  const cJSON *causes = json_get(st, "details.causes");
  cr_assert_eq(cJSON_GetArraySize(causes), 5, "%s", json_get_str(st, "message"));
  const char *msg = json_get_str(st, "message");
  cr_assert(!strncmp(msg, "Migration.pgcopydb.io \"shop\" is invalid: [", 42), "%s", msg);
  cr_assert(strstr(msg, "spec.target: Required value"), "%s", msg);
  cr_assert(strstr(msg, "spec.clone.indexJobs: Invalid value: 500: spec.clone.indexJobs in body should be less than or equal to 128"), "%s", msg);
  cr_assert(strstr(msg, "spec.backoffLimit: Invalid value: -1: spec.backoffLimit in body should be greater than or equal to 0"), "%s", msg);
  cr_assert_str_eq(json_get_str(st, "details.kind"), "Migration");
  cr_assert_str_eq(json_get_str(st, "details.group"), "pgcopydb.io");
  cr_assert_str_eq(json_get_str(st, "details.name"), "shop");
  cJSON_Delete(st);
  cJSON_Delete(m);
}

LTest(apiserver_crd, older_version_uses_its_own_schema)
{
  cJSON *m = J("{\"apiVersion\":\"pgcopydb.io/v1alpha1\",\"kind\":\"Migration\",\"metadata\":{\"name\":\"old\"},"
               "\"spec\":{\"sourceSecret\":\"src\",\"targetSecret\":\"dst\",\"tableJobs\":0,\"source\":{}}}");
  cJSON *st = admit("pgcopydb.io", "migrations", "v1alpha1", m);
  cr_assert_null(json_get(m, "spec.source"), "v1 fields are pruned from a v1alpha1 object");
  cr_assert(cJSON_IsFalse(json_get(m, "spec.live")));
  expect_one(st, "Migration.pgcopydb.io \"old\" is invalid: ", "spec.tableJobs", "FieldValueInvalid",
             "Invalid value: 0: spec.tableJobs in body should be greater than or equal to 1");
  cJSON_Delete(st);
  cJSON_Delete(m);
}

/* ---- CRDs kube-apiserver refuses ---- */

static cJSON *bad_crd(const char *edit_path, const char *edit_json)
{
  cJSON *c = J(WIDGET_CRD);
  if(edit_path) {
    if(edit_json)
      cr_assert_eq(json_set(c, edit_path, J(edit_json)), GW_OK);
    else
      json_remove(c, edit_path);
  }
  struct ls_crd_info info;
  cJSON *st = crd_register(c, &info);
  cJSON_Delete(c);
  cr_assert_not_null(st, "a bad CRD was accepted (%s)", edit_path ? edit_path : "");
  cr_assert_eq(json_get(st, "code")->valueint, 422);
  cr_assert_str_eq(json_get_str(st, "details.kind"), "CustomResourceDefinition");
  cr_assert_str_eq(json_get_str(st, "details.group"), "apiextensions.k8s.io");
  return st;
}

static void bad_crd_one(const char *edit_path, const char *edit_json, const char *field, const char *message)
{
  cJSON *st = bad_crd(edit_path, edit_json);
  const cJSON *causes = json_get(st, "details.causes");
  cr_assert_eq(cJSON_GetArraySize(causes), 1, "%s", json_get_str(st, "message"));
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 0), "field"), field);
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 0), "message"), message);
  char full[2048];
  snprintf(full, sizeof(full), "CustomResourceDefinition.apiextensions.k8s.io \"%s\" is invalid: %s: %s",
           json_get_str(st, "details.name"), field, message);
  cr_assert_str_eq(json_get_str(st, "message"), full);
  cJSON_Delete(st);
}

LTest(apiserver_crd, refuses_a_schema_that_is_not_structural)
{
  cJSON *c = J(WIDGET_CRD);
  cJSON *props = json_get_mut(cJSON_GetArrayItem(json_get(c, "spec.versions"), 0), "schema.openAPIV3Schema.properties.spec.properties");
  cJSON_AddItemToObject(props, "size", J("{\"description\":\"no type\"}"));
  struct ls_crd_info info;
  cJSON *st = crd_register(c, &info);
  cr_assert_not_null(st);
  cr_assert_str_eq(json_get_str(st, "message"),
                   "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: "
                   "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: "
                   "Required value: must not be empty for specified object fields");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(st, "details.causes"), 0), "reason"), "FieldValueRequired");
  cJSON_Delete(st);
  cJSON_Delete(c);
}

LTest(apiserver_crd, refuses_bad_names_scope_and_storage_versions)
{
  bad_crd_one("metadata.name", "\"gadgets.example.com\"", "metadata.name",
              "Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group");
  bad_crd_one("spec.scope", "\"Global\"", "spec.scope", "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"");
  cJSON *st = bad_crd("spec.group", "\"example\"");
  cr_assert(strstr(json_get_str(st, "message"), "spec.group: Invalid value: \"example\": should be a domain with at least one dot"),
            "%s", json_get_str(st, "message"));
  cJSON_Delete(st);
  st = bad_crd("spec.names.listKind", "\"Widget\"");
  cr_assert(strstr(json_get_str(st, "message"), "spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same"),
            "%s", json_get_str(st, "message"));
  cJSON_Delete(st);
  cJSON *c = J(WIDGET_CRD);
  cJSON *v2 = cJSON_Duplicate(cJSON_GetArrayItem(json_get(c, "spec.versions"), 0), 1);
  cJSON_ReplaceItemInObject(v2, "name", cJSON_CreateString("v2"));
  cJSON_AddItemToArray(json_get_mut(c, "spec.versions"), v2);
  struct ls_crd_info info;
  st = crd_register(c, &info);
  cr_assert_not_null(st);
  const cJSON *cause = cJSON_GetArrayItem(json_get(st, "details.causes"), 0);
  cr_assert_str_eq(json_get_str(cause, "field"), "spec.versions");
  const char *m = json_get_str(cause, "message");
  cr_assert(!strncmp(m, "Invalid value: ", 15) && strstr(m, ": must have exactly one version marked as storage version"), "%s", m);
  cJSON_Delete(st);
  cJSON_Delete(c);
}

LTest(apiserver_crd, refuses_bad_patterns_defaults_and_list_types)
{
  cJSON *c = J(WIDGET_CRD);
  cJSON *spec = json_get_mut(cJSON_GetArrayItem(json_get(c, "spec.versions"), 0), "schema.openAPIV3Schema.properties.spec.properties");
  cJSON_ReplaceItemInObject(json_get_mut(spec, "code"), "maxLength", cJSON_CreateNumber(5));
  cJSON_AddStringToObject(json_get_mut(spec, "code"), "pattern", "(abc");
  cJSON_ReplaceItemInObject(json_get_mut(spec, "step"), "multipleOf", cJSON_CreateNumber(5));
  cJSON_AddStringToObject(json_get_mut(spec, "step"), "default", "many");
  cJSON_DeleteItemFromObject(json_get_mut(spec, "ports"), "x-kubernetes-list-map-keys");
  cJSON_AddTrueToObject(json_get_mut(spec, "tags"), "uniqueItems");
  struct ls_crd_info info;
  cJSON *st = crd_register(c, &info);
  cr_assert_not_null(st);
  const char *msg = json_get_str(st, "message");
  const char *P = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties";
  char want[1024];
  snprintf(want, sizeof(want), "%s[code].pattern: Invalid value: \"(abc\": must be a valid regular expression, but isn't: error parsing regexp: missing closing )", P);
  cr_assert(strstr(msg, want), "%s", msg);
  snprintf(want, sizeof(want), "%s[step].default: Invalid value: \"string\":  in body must be of type integer: \"string\"", P);
  cr_assert(strstr(msg, want), "%s", msg);
  snprintf(want, sizeof(want), "%s[ports].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map", P);
  cr_assert(strstr(msg, want), "%s", msg);
  snprintf(want, sizeof(want), "%s[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic", P);
  cr_assert(strstr(msg, want), "%s", msg);
  cJSON_Delete(st);
  cJSON_Delete(c);
  /* a default with a field the schema does not know */
  c = J(WIDGET_CRD);
  spec = json_get_mut(cJSON_GetArrayItem(json_get(c, "spec.versions"), 0), "schema.openAPIV3Schema.properties.spec.properties");
  cJSON_ReplaceItemInObject(json_get_mut(spec, "opts"), "default", J("{\"bogus\":1}"));
  st = crd_register(c, &info);
  cr_assert_not_null(st);
  snprintf(want, sizeof(want), "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: "
           "%s[opts].default: Invalid value: map[string]interface {}{\"bogus\":1}: must not have unknown fields", P);
  cr_assert_str_eq(json_get_str(st, "message"), want);
  cJSON_Delete(st);
  cJSON_Delete(c);
  bad_crd_one("spec.versions", NULL, "spec.versions", "Required value: must have exactly one version marked as storage version");
}

LTest(apiserver_crd, refuses_webhook_conversion_without_a_client)
{
  cJSON *st = bad_crd("spec.conversion", "{\"strategy\":\"Webhook\"}");
  cr_assert(strstr(json_get_str(st, "message"),
                   "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
            "%s", json_get_str(st, "message"));
  cJSON_Delete(st);
  bad_crd_one("spec.conversion", "{\"strategy\":\"Magic\"}", "spec.conversion.strategy",
              "Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"");
}

LTest(apiserver_crd, unregister_forgets_the_schema)
{
  crd_unregister("widgets.example.com");
  cJSON *w = widget("{\"code\":\"x\",\"bogus\":1}");
  crd_prune_and_default("example.com", "widgets", "v1", w);
  cr_assert_not_null(json_get(w, "spec.bogus"));
  cr_assert_null(crd_validate("example.com", "widgets", "v1", w, NULL));
  cr_assert_null(crd_printer_columns("example.com", "widgets", "v1"));
  cJSON_Delete(w);
}

/* Validation while the CRD is replaced: entries are retired, never freed under a reader. */
static void *reader(void *arg)
{
  (void)arg;
  for(int i = 0; i < 200; i++) {
    cJSON *w = widget("{\"code\":\"x\"}");
    cJSON *st = admit("example.com", "widgets", "v1", w);
    cJSON_Delete(st);
    cJSON_Delete(w);
  }
  return NULL;
}

LTest(apiserver_crd, concurrent_validation_and_replacement)
{
  pthread_t t[4];
  for(int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, reader, NULL);
  cJSON *c = J(WIDGET_CRD);
  for(int i = 0; i < 50; i++) {
    struct ls_crd_info info;
    cr_assert_null(crd_register(c, &info));
  }
  cJSON_Delete(c);
  for(int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
}

/* ---- end to end: the real API server and kubectl (tests/cluster/harness.h) ---- */

static struct cl CL;
static void cl_up(void)
{
  cl_start(&CL, 0); /* the CRDs, no webhook: only the schema speaks */
}
static void cl_down(void)
{
  cl_stop(&CL);
}

TestSuite(apiserver_crd_cluster, .init = cl_up, .fini = cl_down, .timeout = 120);

Test(apiserver_crd_cluster, kubectl_shows_every_schema_cause)
{
  const char *f = lw_cl_file(&CL, "bad.yaml",
                             "apiVersion: pgcopydb.io/v1\nkind: Migration\nmetadata: {name: bad, namespace: default}\n"
                             "spec:\n  source: {connectionSecretRef: {name: a}}\n  target: {connectionSecretRef: {name: b}}\n"
                             "  clone: {tableJobs: 0}\n  cutover: {mode: Later}\n");
  char *out;
  int rc = cl_kubectl(&CL, "admin", &out, "create -f %s", f);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(strstr(out, "The Migration \"bad\" is invalid: \n"
                        "* spec.clone.tableJobs: Invalid value: 0: spec.clone.tableJobs in body should be greater than or equal to 1\n"
                        "* spec.cutover.mode: Unsupported value: \"Later\": supported values: \"Manual\", \"Automatic\""),
            "%s", out);
  free(out);
}

Test(apiserver_crd_cluster, kubectl_sees_pruned_and_defaulted_objects)
{
  const char *f = lw_cl_file(&CL, "ok.yaml",
                             "apiVersion: pgcopydb.io/v1\nkind: Migration\nmetadata: {name: ok, namespace: default}\n"
                             "spec:\n  source: {connectionSecretRef: {name: a}}\n  target: {connectionSecretRef: {name: b}}\n"
                             "  follow: {}\n  turbo: true\n");
  char *out;
  int rc = cl_kubectl(&CL, "admin", &out, "create --validate=false -f %s", f);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  rc = cl_kubectl(&CL, "admin", &out, "get migration ok -o json");
  cr_assert_eq(rc, 0, "%s", out);
  cJSON *m = tj(out);
  cr_assert_null(json_get(m, "spec.turbo"));
  cr_assert_str_eq(json_get_str(m, "spec.follow.maxCatchupLag"), "16Mi");
  cr_assert_str_eq(json_get_str(m, "spec.source.connectionSecretRef.key"), "uri");
  cr_assert(cJSON_IsFalse(json_get(m, "spec.clone.skipVacuum")));
  cJSON_Delete(m);
  free(out);
}
