/* PtahSchema: every rule allows and refuses, the spec author is stamped and guarded, defaults are
 * idempotent, v1alpha1 errors name v1alpha1 paths, conversion is lossless. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "ptah.run"
#define K "PtahSchema"
#define AUTHOR "metadata.annotations[ptah.run/spec-author]"
#define META(author)                                                                             \
  "\"metadata\":{\"name\":\"orders\",\"namespace\":\"shop\",\"annotations\":{"                 \
  "\"ptah.run/spec-author\":\"" author "\"}}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META("alice")
#define V1A "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META("alice")
#define DB "\"database\":{\"connectionSecretRef\":{\"name\":\"shop-db\"}}"
#define SQL "\"schema\":{\"sql\":\"CREATE TABLE users (id bigint PRIMARY KEY);\"}"
#define SPEC(...) "{" V1 ",\"spec\":{" DB "," __VA_ARGS__ "}}"
#define ASPEC(...) "{" V1A ",\"spec\":{\"secretName\":\"shop-db\"," __VA_ARGS__ "}}"

struct case_ {
  const char *name;
  const char *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
};

static const struct case_ cases[] = {
  { "inline sql", SPEC(SQL), NULL, NULL },
  { "configMapRef", SPEC("\"schema\":{\"configMapRef\":{\"name\":\"orders-schema\"}}"), NULL,
    NULL },
  { "everything set",
    SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.users\",\"billing.invoices\"],"
             "\"approval\":\"Required\"},\"execution\":{\"runnerImage\":"
             "\"registry.example.com/ptah/runner:1.4\",\"podMetadata\":{\"labels\":{\"team\":"
             "\"payments\"},\"annotations\":{\"example.com/owner\":\"db-team\"}},"
             "\"serviceAccountName\":\"ptah-runner\"}"),
    NULL, NULL },
  { "database required", "{" V1 ",\"spec\":{" SQL "}}", "spec.database", "FieldValueRequired" },
  { "secret name required", "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{}}," SQL "}}",
    "spec.database.connectionSecretRef.name", "FieldValueRequired" },
  { "secret name syntax",
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"Shop_DB\"}}," SQL "}}",
    "spec.database.connectionSecretRef.name", "FieldValueInvalid" },
  { "secret key syntax",
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"a/b\"}},"
    SQL "}}", "spec.database.connectionSecretRef.key", "FieldValueInvalid" },
  { "no schema source", SPEC("\"schema\":{}"), "spec.schema", "FieldValueRequired" },
  { "schema missing", SPEC("\"policy\":{}"), "spec.schema", "FieldValueRequired" },
  { "both schema sources",
    SPEC("\"schema\":{\"sql\":\"CREATE TABLE t ();\",\"configMapRef\":{\"name\":\"s\"}}"),
    "spec.schema", "FieldValueInvalid" },
  { "blank sql", SPEC("\"schema\":{\"sql\":\" \\n\\t\"}"), "spec.schema.sql",
    "FieldValueRequired" },
  { "configMapRef name required", SPEC("\"schema\":{\"configMapRef\":{\"key\":\"x.sql\"}}"),
    "spec.schema.configMapRef.name", "FieldValueRequired" },
  { "protected table without schema",
    SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.orders\",\"users\"]}"),
    "spec.policy.protectedTables[1]", "FieldValueInvalid" },
  { "protected table duplicate",
    SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.users\",\"public.users\"]}"),
    "spec.policy.protectedTables[1]", "FieldValueDuplicate" },
  { "protected table with three parts",
    SPEC(SQL ",\"policy\":{\"protectedTables\":[\"db.public.users\"]}"),
    "spec.policy.protectedTables[0]", "FieldValueInvalid" },
  { "approval enum", SPEC(SQL ",\"policy\":{\"approval\":\"Never\"}"), "spec.policy.approval",
    "FieldValueNotSupported" },
  { "automatic approval is legal", SPEC(SQL ",\"policy\":{\"approval\":\"Automatic\"}"), NULL,
    NULL },
  { "runner image syntax", SPEC(SQL ",\"execution\":{\"runnerImage\":\"Ptah Runner\"}"),
    "spec.execution.runnerImage", "FieldValueInvalid" },
  { "service account syntax", SPEC(SQL ",\"execution\":{\"serviceAccountName\":\"Runner\"}"),
    "spec.execution.serviceAccountName", "FieldValueInvalid" },
  { "label key syntax",
    SPEC(SQL ",\"execution\":{\"podMetadata\":{\"labels\":{\"-team\":\"a\"}}}"),
    "spec.execution.podMetadata.labels[-team]", "FieldValueInvalid" },
  { "label value syntax",
    SPEC(SQL ",\"execution\":{\"podMetadata\":{\"labels\":{\"team\":\"a b\"}}}"),
    "spec.execution.podMetadata.labels[team]", "FieldValueInvalid" },
  { "reserved label",
    SPEC(SQL ",\"execution\":{\"podMetadata\":{\"labels\":{\"godwit.dev/runner\":\"x\"}}}"),
    "spec.execution.podMetadata.labels[godwit.dev/runner]", "FieldValueForbidden" },
  { "reserved annotation subdomain",
    SPEC(SQL ",\"execution\":{\"podMetadata\":{\"annotations\":{\"sidecar.kubernetes.io/x\":"
             "\"y\"}}}"),
    "spec.execution.podMetadata.annotations[sidecar.kubernetes.io/x]", "FieldValueForbidden" },
  { "spec author forged",
    "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META("bob") ",\"spec\":{" DB "," SQL "}}",
    AUTHOR, "FieldValueForbidden" },
  { "spec author missing",
    "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"o\"},\"spec\":{" DB
    "," SQL "}}",
    AUTHOR, "FieldValueRequired" },
  { "v1alpha1 inline sql", ASPEC("\"sql\":\"CREATE TABLE t ();\""), NULL, NULL },
  { "v1alpha1 everything set",
    ASPEC("\"configMap\":\"orders-schema\",\"protectedTables\":[\"public.users\"],"
          "\"requireApproval\":false,\"runnerImage\":\"registry.example.com/ptah/runner:1.4\","
          "\"podLabels\":{\"team\":\"payments\"},\"podAnnotations\":{\"example.com/a\":\"b\"},"
          "\"serviceAccountName\":\"ptah-runner\""),
    NULL, NULL },
  { "v1alpha1 secretName required",
    "{" V1A ",\"spec\":{\"sql\":\"CREATE TABLE t ();\"}}", "spec.secretName",
    "FieldValueRequired" },
  { "v1alpha1 no schema source", ASPEC("\"requireApproval\":true"), "spec.sql",
    "FieldValueRequired" },
  { "v1alpha1 both sources", ASPEC("\"sql\":\"CREATE TABLE t ();\",\"configMap\":\"s\""),
    "spec.sql", "FieldValueInvalid" },
  { "v1alpha1 blank sql", ASPEC("\"sql\":\"  \""), "spec.sql", "FieldValueRequired" },
  { "v1alpha1 protected table without schema",
    ASPEC("\"sql\":\"x\",\"protectedTables\":[\"users\"]"), "spec.protectedTables[0]",
    "FieldValueInvalid" },
  { "v1alpha1 requireApproval is a boolean", ASPEC("\"sql\":\"x\",\"requireApproval\":\"yes\""),
    "spec.requireApproval", "FieldValueTypeInvalid" },
  { "v1alpha1 reserved pod label",
    ASPEC("\"sql\":\"x\",\"podLabels\":{\"ptah.run/operation\":\"x\"}"),
    "spec.podLabels[ptah.run/operation]", "FieldValueForbidden" },
  { "v1alpha1 reserved pod annotation",
    ASPEC("\"sql\":\"x\",\"podAnnotations\":{\"k8s.io/x\":\"y\"}"),
    "spec.podAnnotations[k8s.io/x]", "FieldValueForbidden" },
  { "v1alpha1 bad pod label value", ASPEC("\"sql\":\"x\",\"podLabels\":{\"team\":\"-\"}"),
    "spec.podLabels[team]", "FieldValueInvalid" },
};

ParameterizedTestParameters(ptahschema, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahschema, rules)
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

/* Updates: the stored object, the update, who sends it. */
struct update_ {
  const char *name;
  const char *old;
  const char *obj;
  bool bob;
  const char *field; /* NULL: allowed */
  const char *reason;
};

#define BOB_V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META("bob")
#define BOB_SQL "{" BOB_V1 ",\"spec\":{" DB "," SQL "}}"

static const struct update_ updates[] = {
  { "database changed", SPEC(SQL),
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"other-db\"}}," SQL "}}",
    false, "spec.database", "FieldValueInvalid" },
  { "database key changed", SPEC(SQL),
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"shop-db\",\"key\":"
    "\"dsn\"}}," SQL "}}",
    false, "spec.database", "FieldValueInvalid" },
  { "database key spelled out as its default is no change", SPEC(SQL),
    "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"shop-db\",\"key\":"
    "\"uri\"}}," SQL "}}",
    false, NULL, NULL },
  { "v1alpha1 secret changed", ASPEC("\"sql\":\"x\""),
    "{" V1A ",\"spec\":{\"secretName\":\"other-db\",\"sql\":\"x\"}}", false, "spec.secretName",
    "FieldValueInvalid" },
  { "schema changed by its author", SPEC(SQL),
    SPEC("\"schema\":{\"sql\":\"CREATE TABLE users (id bigint PRIMARY KEY, name text);\"}"),
    false, NULL, NULL },
  { "schema changed by another user, stamped as that user", BOB_SQL,
    SPEC("\"schema\":{\"sql\":\"CREATE TABLE t ();\"}"), false, NULL, NULL },
  { "schema changed while naming the previous author", BOB_SQL,
    "{" BOB_V1 ",\"spec\":{" DB ",\"schema\":{\"sql\":\"CREATE TABLE t ();\"}}}", false, AUTHOR,
    "FieldValueForbidden" },
  { "metadata-only update keeps the author", BOB_SQL, BOB_SQL, false, NULL, NULL },
  { "author changed without a spec change", BOB_SQL, SPEC(SQL), false, AUTHOR,
    "FieldValueForbidden" },
  { "author removed without a spec change", BOB_SQL,
    "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"orders\"},"
    "\"spec\":{" DB "," SQL "}}",
    false, AUTHOR, "FieldValueForbidden" },
  { "bob cannot claim alice's spec change", SPEC(SQL),
    SPEC("\"schema\":{\"sql\":\"DROP TABLE users;\"}"), true, AUTHOR, "FieldValueForbidden" },
  { "protected tables and execution may change", SPEC(SQL),
    SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.users\"]},\"execution\":{"
             "\"runnerImage\":\"registry.example.com/ptah/runner:1.5\"}"),
    false, NULL, NULL },
};

ParameterizedTestParameters(ptahschema, updates)
{
  static size_t idx[sizeof(updates) / sizeof(updates[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahschema, updates)
{
  const struct update_ *c = &updates[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, c->obj, c->old, c->bob ? &T_BOB : &T_ALICE, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1);
  }
  api_result_release(&r);
}

/* What the apiserver stores and checks: the mutating webhook's patch applied, then validation. */
static cJSON *admit_mutated(struct api_result *r, enum api_op op, const char *obj,
                            const char *old, const struct t_user *u, const struct policy *p)
{
  cJSON *m = t_default(op, G, K, obj, old, u, p);
  char *s = cJSON_PrintUnformatted(m);
  t_admit(r, op, G, K, s, old, u, p);
  cJSON_free(s);
  return m;
}

static const char *author(const cJSON *o)
{
  return cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(o, "metadata.annotations"), "ptah.run/spec-author"));
}

#define NO_AUTHOR(v) "{\"apiVersion\":\"" G "/" v "\",\"kind\":\"" K "\",\"metadata\":{\"name\":" \
                     "\"orders\",\"namespace\":\"shop\"},\"spec\":{"

Test(ptahschema, create_stamps_the_author_and_defaults)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, NO_AUTHOR("v1") DB "," SQL "}}", NULL, &T_BOB, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(author(o), "bob");
  cr_assert_str_eq(json_get_str(o, "spec.policy.approval"), "Required");
  cr_assert_str_eq(json_get_str(o, "spec.database.connectionSecretRef.key"), "uri");
  cr_assert_null(json_get(o, "spec.execution"), "no execution invented");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschema, config_map_key_defaults)
{
  cJSON *o = t_default(API_CREATE, G, K,
                       NO_AUTHOR("v1") DB ",\"schema\":{\"configMapRef\":{\"name\":\"s\"}}}}",
                       NULL, &T_ALICE, NULL);
  cr_assert_str_eq(json_get_str(o, "spec.schema.configMapRef.key"), "schema.sql");
  cJSON_Delete(o);
}

Test(ptahschema, a_supplied_author_is_not_overwritten_and_is_refused)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, "{" BOB_V1 ",\"spec\":{" DB "," SQL "}}", NULL,
                           &T_ALICE, NULL);
  cr_assert_str_eq(author(o), "bob", "the webhook never rewrites what a user wrote");
  t_expect_cause(&r, AUTHOR, "FieldValueForbidden");
  t_expect_message(&r, AUTHOR, "must be the user making this spec change (\"alice\"), got "
                               "\"bob\": remove the annotation and the webhook records you as "
                               "the author");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschema, spec_change_restamps_the_carried_author)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_UPDATE,
                           "{" BOB_V1 ",\"spec\":{" DB ",\"schema\":{\"sql\":\"CREATE TABLE t ();\"}}}",
                           BOB_SQL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(author(o), "alice");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschema, unchanged_spec_restores_a_dropped_author)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_UPDATE, NO_AUTHOR("v1") DB "," SQL "}}", BOB_SQL, &T_ALICE,
                           NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(author(o), "bob", "a metadata-only update by alice leaves bob the author");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschema, unchanged_spec_keeps_the_author_without_a_patch)
{
  struct policy *p = policy_default();
  cJSON *o = t_default(API_UPDATE, G, K, BOB_SQL, BOB_SQL, &T_ALICE, p);
  cJSON *sent = t_json(BOB_SQL);
  cJSON_Delete(json_detach(o, "spec.policy"));
  cJSON_Delete(json_detach(o, "spec.database.connectionSecretRef.key"));
  cJSON_Delete(json_detach(o, "spec.verification"));
  cr_assert(cJSON_Compare(o, sent, 1), "only defaults were added");
  cJSON_Delete(o);
  cJSON_Delete(sent);
  policy_free(p);
}

Test(ptahschema, v1alpha1_is_stamped_and_keeps_its_shape)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, NO_AUTHOR("v1alpha1") "\"secretName\":\"db\","
                           "\"configMap\":\"s\"}}", NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_str_eq(author(o), "alice");
  cr_assert(cJSON_IsTrue(json_get(o, "spec.requireApproval")));
  cr_assert_null(json_get(o, "spec.policy"), "no v1 field leaks into v1alpha1");
  cr_assert_null(json_get(o, "spec.schema"));
  cr_assert_null(cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1-fields"),
                 "v1-only defaults do not travel in the annotation");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahschema, without_a_request_user_identity_is_not_judged)
{
  /* The controller re-validates stored objects: no user, no author verdict. */
  cJSON *obj = t_json(NO_AUTHOR("v1") DB "," SQL "}}");
  struct policy *p = policy_default();
  struct api_request req = { .kind = t_kind(G, K), .obj = obj, .op = API_CREATE, .policy = p };
  struct api_result r;
  api_result_init(&r);
  cr_assert_eq(api_validate(&req, &r), GW_OK);
  t_expect_allowed(&r);
  api_result_release(&r);
  api_result_init(&r);
  cr_assert_eq(api_mutate(&req, &r), GW_OK);
  cr_assert_not_null(r.patch, "defaults are still added");
  char *patch = cJSON_PrintUnformatted(r.patch);
  cr_assert_null(strstr(patch, "spec-author"), "nothing stamped without a user: %s", patch);
  cJSON_free(patch);
  api_result_release(&r);
  cJSON_Delete(obj);
  policy_free(p);
}

Test(ptahschema, runner_image_registry_is_a_policy_refusal)
{
  struct policy *p = t_policy("{\"images\":{\"allowedRegistries\":[\"registry.example.com/\"]}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"runnerImage\":\"docker.io/ptah/runner:1.4\"}"), NULL,
          &T_ALICE, p);
  t_expect_cause(&r, "spec.execution.runnerImage", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403: %s", t_causes(&r));
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K, ASPEC("\"sql\":\"x\",\"runnerImage\":\"docker.io/ptah/runner:1\""),
          NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.runnerImage", "FieldValueForbidden");
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"runnerImage\":\"registry.example.com/ptah/runner:1.4\"}"),
          NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

Test(ptahschema, a_source_digest_the_policy_requires_is_a_policy_refusal)
{
  struct policy *p = t_policy("{\"ptah\":{\"requireSourceDigest\":true}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, SPEC(SQL), NULL, &T_ALICE, p);
  t_expect_cause(&r, "spec.verification.sourceDigest", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403: %s", t_causes(&r));
  cr_assert(strstr(t_causes(&r), "ptah.requireSourceDigest") != NULL, "%s", t_causes(&r));
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"verification\":{\"sourceDigest\":\"sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0"
               "b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\"}"), NULL, &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K, SPEC(SQL ",\"verification\":{\"sourceDigest\":\"abc\"}"), NULL,
          &T_ALICE, NULL);
  t_expect_cause(&r, "spec.verification.sourceDigest", "FieldValueInvalid");
  api_result_release(&r);
  policy_free(p);
}

Test(ptahschema, pod_metadata_policy)
{
  struct policy *p = t_policy("{\"podMetadata\":{\"labels\":{\"allow\":[{\"key\":\"team\"}]}}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"podMetadata\":{\"labels\":{\"owner\":\"me\"}}}"), NULL,
          &T_ALICE, p);
  t_expect_cause(&r, "spec.execution.podMetadata.labels[owner]", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  /* A reserved key next to a policy refusal: the denial is a 422, not a 403. */
  t_admit(&r, API_CREATE, G, K,
          ASPEC("\"sql\":\"x\",\"podLabels\":{\"owner\":\"me\",\"k8s.io/x\":\"y\"}"), NULL,
          &T_ALICE, p);
  t_expect_cause(&r, "spec.podLabels[owner]", "FieldValueForbidden");
  t_expect_cause(&r, "spec.podLabels[k8s.io/x]", "FieldValueForbidden");
  cr_assert_not(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"podMetadata\":{\"labels\":{\"team\":\"a\"}}}"), NULL,
          &T_ALICE, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

Test(ptahschema, messages_read_well)
{
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K,
          "{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"x\"}}," SQL "}}",
          SPEC(SQL), &T_ALICE, NULL);
  t_expect_message(&r, "spec.database", "is immutable: a PtahSchema manages the database it was "
                                        "created for; create a new PtahSchema");
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K, SPEC(SQL ",\"policy\":{\"protectedTables\":[\"users\"]}"), NULL,
          &T_ALICE, NULL);
  t_expect_message(&r, "spec.policy.protectedTables[0]",
                   "\"users\" must name its schema too, as in \"public.users\"");
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K, SPEC(SQL), BOB_SQL, &T_ALICE, NULL);
  t_expect_message(&r, AUTHOR, "cannot change without a spec change: it records who wrote the "
                               "current spec (\"bob\")");
  api_result_release(&r);
}

Test(ptahschema, sql_size_limit)
{
  size_t n = 256 * 1024 + 1;
  char *big = malloc(n + 200);
  strcpy(big, NO_AUTHOR("v1") DB ",\"schema\":{\"sql\":\"");
  size_t off = strlen(big);
  memset(big + off, 'x', n);
  strcpy(big + off + n, "\"}}}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, big, NULL, &T_ALICE, NULL);
  t_expect_cause(&r, "spec.schema.sql", "FieldValueTooLong");
  api_result_release(&r);
  free(big);
}

Test(ptahschema, warnings_for_risky_settings)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, SPEC(SQL), NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_eq(r.warns.n, 0, "a plain v1 object has no warning, got \"%s\"",
               r.warns.n ? r.warns.v[0] : "");
  api_result_release(&r);

  t_admit(&r, API_CREATE, G, K, SPEC(SQL ",\"policy\":{\"approval\":\"Automatic\"}"), NULL,
          &T_ALICE, NULL);
  t_expect_warning(&r, "approval is Automatic (v1alpha1: requireApproval false): every plan");
  api_result_release(&r);

  t_admit(&r, API_CREATE, G, K, SPEC(SQL ",\"policy\":{\"protectedTables\":[\"Public.Users\"]}"),
          NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, "\"Public.Users\" has upper-case letters");
  api_result_release(&r);

  t_admit(&r, API_UPDATE, G, K, SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.a\"]}"),
          SPEC(SQL ",\"policy\":{\"protectedTables\":[\"public.a\",\"public.b\"]}"), &T_ALICE,
          NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, "protectedTables no longer lists \"public.b\"");
  cr_assert_eq(r.warns.n, 1);
  api_result_release(&r);

  t_admit(&r, API_CREATE, G, K, SPEC(SQL ",\"execution\":{\"runnerImage\":\"ghcr.io/ptah/runner\"}"),
          NULL, &T_ALICE, NULL);
  t_expect_warning(&r, "runnerImage \"ghcr.io/ptah/runner\" has no tag");
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"runnerImage\":\"localhost:5000/runner:latest\"}"), NULL,
          &T_ALICE, NULL);
  t_expect_warning(&r, "uses the tag \"latest\"");
  api_result_release(&r);
  t_admit(&r, API_CREATE, G, K,
          SPEC(SQL ",\"execution\":{\"runnerImage\":\"localhost:5000/runner:1.4\"}"), NULL,
          &T_ALICE, NULL);
  cr_assert_eq(r.warns.n, 0, "a registry port is not a tag; 1.4 is pinned");
  api_result_release(&r);
}

Test(ptahschema, v1alpha1_is_deprecated)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, ASPEC("\"sql\":\"x\""), NULL, &T_ALICE, NULL);
  t_expect_allowed(&r);
  t_expect_warning(&r, G "/v1alpha1 PtahSchema is deprecated; use " G "/v1 PtahSchema");
  api_result_release(&r);
}

Test(ptahschema, v1alpha1_converts_field_by_field)
{
  cJSON *o = t_json(ASPEC("\"configMap\":\"s\",\"protectedTables\":[\"public.u\"],"
                          "\"requireApproval\":false,\"runnerImage\":\"r.io/p:1\","
                          "\"podLabels\":{\"a\":\"b\"},\"podAnnotations\":{\"c\":\"d\"},"
                          "\"serviceAccountName\":\"sa\""));
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.database.connectionSecretRef.name"), "shop-db");
  cr_assert_str_eq(json_get_str(o, "spec.schema.configMapRef.name"), "s");
  cr_assert_str_eq(cJSON_GetArrayItem(json_get(o, "spec.policy.protectedTables"), 0)->valuestring,
                   "public.u");
  cr_assert_str_eq(json_get_str(o, "spec.policy.approval"), "Automatic");
  cr_assert_str_eq(json_get_str(o, "spec.execution.runnerImage"), "r.io/p:1");
  cr_assert_str_eq(json_get_str(o, "spec.execution.podMetadata.labels.a"), "b");
  cr_assert_str_eq(json_get_str(o, "spec.execution.podMetadata.annotations.c"), "d");
  cr_assert_str_eq(json_get_str(o, "spec.execution.serviceAccountName"), "sa");
  cr_assert_null(json_get(o, "spec.requireApproval"));
  cr_assert_null(json_get(o, "spec.secretName"));
  cJSON_Delete(o);
}

Test(ptahschema, conversion_keeps_what_v1alpha1_cannot_hold)
{
  cJSON *o = t_json("{" V1 ",\"spec\":{\"database\":{\"connectionSecretRef\":{\"name\":\"db\","
                    "\"key\":\"dsn\"}},\"schema\":{\"configMapRef\":{\"name\":\"s\",\"key\":"
                    "\"v2.sql\"}},\"policy\":{\"approval\":\"Required\"},\"verification\":"
                    "{\"allowDestructive\":true}},\"status\":{\"phase\":"
                    "\"AwaitingApproval\",\"plan\":{\"digest\":\"sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2"
                    "cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\",\"author\":\"bob\",\"generation\":3}}}");
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.secretName"), "db");
  cr_assert_str_eq(json_get_str(o, "spec.configMap"), "s");
  cr_assert(cJSON_IsTrue(json_get(o, "spec.requireApproval")));
  cr_assert_str_eq(json_get_str(o, "status.planAuthor"), "bob");
  cr_assert_not_null(json_get_str(o, "status.planDigest"));
  cr_assert_null(json_get(o, "spec.policy"));
  const char *ann = cJSON_GetStringValue(
    cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1-fields"));
  cr_assert_str_eq(ann, "{\"spec\":{\"database\":{\"connectionSecretRef\":{\"key\":\"dsn\"}},"
                        "\"schema\":{\"configMapRef\":{\"key\":\"v2.sql\"}},\"verification\":"
                        "{\"allowDestructive\":true}},\"status\":{\"plan\":{\"generation\":3}}}");
  cr_assert_str_eq(author(o), "alice", "other annotations are left alone");
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(ptahschema, warnings_come_when_the_setting_is_made)
{
  const char *risky = SPEC(SQL ",\"policy\":{\"approval\":\"Automatic\",\"protectedTables\":"
                           "[\"Public.Users\"]},\"execution\":{\"runnerImage\":\"r.io/runner\"}");
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, risky, NULL, &T_ALICE, NULL);
  cr_assert_eq(r.warns.n, 3, "automatic, upper case, untagged image");
  api_result_release(&r);
  t_admit(&r, API_UPDATE, G, K, risky, risky, &T_ALICE, NULL);
  t_expect_allowed(&r);
  cr_assert_eq(r.warns.n, 0, "an update that changes none of them repeats nothing, got \"%s\"",
               r.warns.n ? r.warns.v[0] : "");
  api_result_release(&r);
}
