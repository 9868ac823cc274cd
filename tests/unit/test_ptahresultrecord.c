/* PtahResultRecord: only the runner Pod bound to the record's Job writes it, the writer is
 * stamped from the request, outcomes fit operations, records never change, v1alpha1 paths. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "apitest.h"
#include "json.h"

#define G "ptah.run"
#define K "PtahResultRecord"
#define DIGEST "sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d"
#define SA "system:serviceaccount:shop:ptah-runner"
#define POD "orders-apply-1-x7k2p"
#define UID "5f0c3a2e-8d41-4a6b-9d1e-2b7f4c9e0a11"
#define JOB "orders-apply-1"
#define META "\"metadata\":{\"name\":\"" JOB "\",\"namespace\":\"shop\"}"
#define V1 "\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\"," META
#define V1A "\"apiVersion\":\"" G "/v1alpha1\",\"kind\":\"" K "\"," META
#define WRITER "\"writer\":{\"serviceAccount\":\"" SA "\",\"podName\":\"" POD "\",\"podUID\":\"" UID "\"}"
#define REC(kind, type, result)                                                                  \
  "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"" kind "\",\"name\":\"orders\"},\"operation\":{"     \
  "\"id\":\"orders-apply-1\",\"type\":\"" type "\",\"attempt\":1},\"jobName\":\"" JOB "\","        \
  "\"result\":" result "," WRITER "}}"
#define APPLIED REC("PtahSchema", "Apply", "{\"outcome\":\"Applied\",\"planDigest\":\"" DIGEST "\"}")
#define AREC_T(type, ...)                                                                        \
  "{" V1A ",\"spec\":{\"ownerKind\":\"PtahMigration\",\"ownerName\":\"shop\",\"operationId\":"    \
  "\"shop-apply-1\",\"operationType\":\"" type "\",\"jobName\":\"" JOB "\",\"outcome\":"         \
  "\"Applied\"" __VA_ARGS__ "}}"
#define AREC(...) AREC_T("Apply", __VA_ARGS__)
#define AWRITER ",\"serviceAccount\":\"" SA "\",\"podName\":\"" POD "\",\"podUID\":\"" UID "\""

#define SA_GROUPS { "system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated" }

enum { RUNNER, NO_EXTRAS, NO_UID, OTHER_NS, OTHER_JOB_POD, SIBLING_JOB_POD, PERSON, NUSERS };

static const struct t_user users[NUSERS] = {
  [RUNNER] = { SA, SA_GROUPS, POD, UID },
  [NO_EXTRAS] = { SA, SA_GROUPS, NULL, NULL },
  [NO_UID] = { SA, SA_GROUPS, POD, NULL },
  [OTHER_NS] = { "system:serviceaccount:other:ptah-runner", SA_GROUPS, POD, UID },
  [OTHER_JOB_POD] = { SA, SA_GROUPS, "orders-plan-1-x7k2p", UID },
  /* A Pod of Job orders-apply-12 also starts with "orders-apply-1". */
  [SIBLING_JOB_POD] = { SA, SA_GROUPS, "orders-apply-12-x7k2p", UID },
  [PERSON] = { "alice", { "db-approvers", "system:authenticated" }, NULL, NULL },
};

struct case_ {
  const char *name;
  const char *obj;
  int user;
  const char *field; /* NULL: allowed */
  const char *reason;
  const char *also; /* the other causes: "field Reason; field Reason" */
};

static const struct case_ cases[] = {
  { "schema apply by its runner", APPLIED, RUNNER, NULL, NULL },
  { "schema plan with everything",
    REC("PtahSchema", "Plan", "{\"outcome\":\"Succeeded\",\"planDigest\":\"" DIGEST "\","
        "\"message\":\"3 statements\",\"startedAt\":\"2026-01-02T15:04:05Z\",\"finishedAt\":"
        "\"2026-01-02T15:04:09.5+01:00\",\"lockContinuous\":true}"),
    RUNNER, NULL, NULL },
  { "failed plan needs no digest", REC("PtahSchema", "Plan", "{\"outcome\":\"Failed\"}"), RUNNER,
    NULL, NULL },
  { "migration apply", REC("PtahMigration", "Apply", "{\"outcome\":\"Partial\",\"fromVersion\":6,"
                           "\"toVersion\":7}"),
    RUNNER, NULL, NULL },
  { "migration observe", REC("PtahMigration", "Observe", "{\"outcome\":\"Succeeded\"}"), RUNNER,
    NULL, NULL },
  { "written by a person", APPLIED, PERSON, "spec.writer.serviceAccount", "FieldValueForbidden",
    .also = "spec.writer.podName FieldValueForbidden; spec.writer.podUID FieldValueForbidden" },
  { "written by a service account of another namespace", APPLIED, OTHER_NS,
    "spec.writer.serviceAccount", "FieldValueForbidden" },
  { "token without a pod name", APPLIED, NO_EXTRAS, "spec.writer.podName", "FieldValueForbidden",
    .also = "spec.writer.podUID FieldValueForbidden" },
  { "token without a pod uid", APPLIED, NO_EXTRAS, "spec.writer.podUID", "FieldValueForbidden",
    .also = "spec.writer.podName FieldValueForbidden" },
  { "token with a name but no uid", APPLIED, NO_UID, "spec.writer.podUID", "FieldValueForbidden" },
  { "pod of another job", APPLIED, OTHER_JOB_POD, "spec.jobName", "FieldValueForbidden",
    .also = "spec.jobName FieldValueForbidden" },
  { "pod of a job whose name extends this one", APPLIED, SIBLING_JOB_POD, "spec.jobName",
    "FieldValueForbidden",
    .also = "spec.jobName FieldValueForbidden" },
  { "pod of a job that extends this job's name",
    "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"orders-apply\","
    "\"namespace\":\"shop\"},\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},"
    "\"operation\":{\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"orders-apply\",\"result\":{"
    "\"outcome\":\"Failed\"}," WRITER "}}",
    RUNNER, "spec.jobName", "FieldValueForbidden" },
  { "forged service account",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":\"Failed\"},"
    "\"writer\":{\"serviceAccount\":\"system:serviceaccount:shop:admin\",\"podName\":\"" POD "\","
    "\"podUID\":\"" UID "\"}}}",
    RUNNER, "spec.writer.serviceAccount", "FieldValueForbidden" },
  { "forged pod name",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":\"Failed\"},"
    "\"writer\":{\"serviceAccount\":\"" SA "\",\"podName\":\"" JOB "-aaaaa\",\"podUID\":\"" UID "\"}}}",
    RUNNER, "spec.writer.podName", "FieldValueForbidden" },
  { "forged pod uid",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":\"Failed\"},"
    "\"writer\":{\"serviceAccount\":\"" SA "\",\"podName\":\"" POD "\",\"podUID\":\"another\"}}}",
    RUNNER, "spec.writer.podUID", "FieldValueForbidden" },
  { "writer not stamped",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":\"Failed\"}}}",
    RUNNER, "spec.writer.podUID", "FieldValueRequired",
    .also = "spec.writer.podName FieldValueRequired; spec.writer.podUID FieldValueRequired" },
  { "name differs from the job",
    "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"result-1\","
    "\"namespace\":\"shop\"},\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},"
    "\"operation\":{\"id\":\"o\",\"type\":\"Plan\"},\"jobName\":\"" JOB "\",\"result\":{"
    "\"outcome\":\"Failed\"}," WRITER "}}",
    RUNNER, "metadata.name", "FieldValueInvalid" },
  { "plan for a migration", REC("PtahMigration", "Plan", "{\"outcome\":\"Succeeded\"}"), RUNNER,
    "spec.operation.type", "FieldValueInvalid" },
  { "apply outcome on a plan", REC("PtahSchema", "Plan", "{\"outcome\":\"Applied\",\"planDigest\":"
                                   "\"" DIGEST "\"}"),
    RUNNER, "spec.result.outcome", "FieldValueNotSupported" },
  { "read-only outcome on an apply", REC("PtahMigration", "Apply", "{\"outcome\":\"Succeeded\"}"),
    RUNNER, "spec.result.outcome", "FieldValueNotSupported" },
  { "unknown outcome on an observe", REC("PtahSchema", "Observe", "{\"outcome\":\"Unknown\"}"),
    RUNNER, "spec.result.outcome", "FieldValueNotSupported" },
  { "outcome outside the enum", REC("PtahSchema", "Observe", "{\"outcome\":\"Done\"}"), RUNNER,
    "spec.result.outcome", "FieldValueNotSupported" },
  { "successful plan without its digest", REC("PtahSchema", "Plan", "{\"outcome\":\"Succeeded\"}"),
    RUNNER, "spec.result.planDigest", "FieldValueRequired" },
  { "schema apply without its digest", REC("PtahSchema", "Apply", "{\"outcome\":\"Unknown\"}"),
    RUNNER, "spec.result.planDigest", "FieldValueRequired" },
  { "refused plan with its plan",
    REC("PtahSchema", "Plan", "{\"outcome\":\"Failed\",\"planDigest\":\"" DIGEST "\","
        "\"refusal\":\"ProtectedTableRefused\",\"plan\":{\"fingerprint\":\"" DIGEST "\","
        "\"desiredChecksum\":\"" DIGEST "\",\"statementCount\":1,\"destructiveCount\":0,"
        "\"summary\":\"1 statement\",\"statements\":[{\"sql\":\"ALTER TABLE public.p ADD COLUMN n "
        "text\",\"label\":\"add column public.p.n\",\"destructive\":false,\"ownTransaction\":"
        "false,\"table\":\"public.p\"}]}}"),
    RUNNER, NULL, NULL },
  { "stale apply, statements omitted",
    REC("PtahSchema", "Apply", "{\"outcome\":\"Failed\",\"planDigest\":\"" DIGEST "\","
        "\"refusal\":\"PlanStale\",\"lockContinuous\":true,\"plan\":{\"statementCount\":9000,"
        "\"statementsOmitted\":true}}"),
    RUNNER, NULL, NULL },
  { "refusal outside the enum",
    REC("PtahSchema", "Plan", "{\"outcome\":\"Failed\",\"refusal\":\"Forbidden\"}"), RUNNER,
    "spec.result.refusal", "FieldValueNotSupported" },
  { "plan statement without its sql",
    REC("PtahSchema", "Observe", "{\"outcome\":\"Succeeded\",\"planDigest\":\"" DIGEST "\","
        "\"plan\":{\"statements\":[{\"label\":\"x\"}]}}"),
    RUNNER, "spec.result.plan.statements[0].sql", "FieldValueRequired" },
  { "owner kind outside the enum", REC("Migration", "Apply", "{\"outcome\":\"Applied\"}"), RUNNER,
    "spec.ownerRef.kind", "FieldValueNotSupported" },
  { "attempt zero",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahMigration\",\"name\":\"s\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Apply\",\"attempt\":0},\"jobName\":\"" JOB "\",\"result\":{"
    "\"outcome\":\"Failed\"}," WRITER "}}",
    RUNNER, "spec.operation.attempt", "FieldValueInvalid" },
  { "result required",
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahMigration\",\"name\":\"s\"},\"operation\":{"
    "\"id\":\"o\",\"type\":\"Apply\"},\"jobName\":\"" JOB "\"," WRITER "}}",
    RUNNER, "spec.result", "FieldValueRequired" },
  { "v1alpha1 by its runner", AREC(AWRITER), RUNNER, NULL, NULL },
  { "v1alpha1 written by a person", AREC(AWRITER), PERSON, "spec.serviceAccount",
    "FieldValueForbidden",
    .also = "spec.podName FieldValueForbidden; spec.podUID FieldValueForbidden" },
  { "v1alpha1 token without a pod", AREC(AWRITER), NO_EXTRAS, "spec.podName",
    "FieldValueForbidden",
    .also = "spec.podUID FieldValueForbidden" },
  { "v1alpha1 pod of another job", AREC(AWRITER), OTHER_JOB_POD, "spec.jobName",
    "FieldValueForbidden",
    .also = "spec.jobName FieldValueForbidden" },
  { "v1alpha1 forged pod uid",
    AREC(",\"serviceAccount\":\"" SA "\",\"podName\":\"" POD "\",\"podUID\":\"x\""), RUNNER,
    "spec.podUID", "FieldValueForbidden" },
  { "v1alpha1 outcome for the operation", AREC_T("Observe", AWRITER), RUNNER,
    "spec.outcome", "FieldValueNotSupported" },
  { "v1alpha1 plan for a migration", AREC_T("Plan", AWRITER), RUNNER,
    "spec.operationType", "FieldValueInvalid",
    .also = "spec.outcome FieldValueNotSupported" },
  { "v1alpha1 missing owner name",
    "{" V1A ",\"spec\":{\"ownerKind\":\"PtahMigration\",\"operationId\":\"a\",\"operationType\":"
    "\"Apply\",\"jobName\":\"" JOB "\",\"outcome\":\"Applied\"" AWRITER "}}",
    RUNNER, "spec.ownerName", "FieldValueRequired" },
};

ParameterizedTestParameters(ptahresultrecord, rules)
{
  static size_t idx[sizeof(cases) / sizeof(cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, ptahresultrecord, rules)
{
  const struct case_ *c = &cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, c->obj, NULL, &users[c->user], NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else {
    t_expect_cause(&r, c->field, c->reason);
    t_expect_cause_count(&r, 1 + t_expect_also(&r, c->also));
  }
  api_result_release(&r);
}

static cJSON *admit_mutated(struct api_result *r, enum api_op op, const char *obj,
                            const char *old, const struct t_user *u)
{
  cJSON *m = t_default(op, G, K, obj, old, u, NULL);
  char *s = cJSON_PrintUnformatted(m);
  t_admit(r, op, G, K, s, old, u, NULL);
  cJSON_free(s);
  return m;
}

#define UNSTAMPED                                                                                \
  "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahMigration\",\"name\":\"shop\"},\"operation\":{" \
  "\"id\":\"shop-apply-1\",\"type\":\"Apply\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":" \
  "\"Applied\",\"fromVersion\":3,\"toVersion\":5,\"lockContinuous\":true}}}"

Test(ptahresultrecord, writer_is_stamped_from_the_bound_token)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, UNSTAMPED, NULL, &users[RUNNER]);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.writer.serviceAccount"), SA);
  cr_assert_str_eq(json_get_str(o, "spec.writer.podName"), POD);
  cr_assert_str_eq(json_get_str(o, "spec.writer.podUID"), UID);
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, v1alpha1_writer_is_stamped_in_its_own_fields)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, AREC(), NULL, &users[RUNNER]);
  t_expect_allowed(&r);
  cr_assert_str_eq(json_get_str(o, "spec.serviceAccount"), SA);
  cr_assert_str_eq(json_get_str(o, "spec.podName"), POD);
  cr_assert_str_eq(json_get_str(o, "spec.podUID"), UID);
  cr_assert_null(json_get(o, "spec.writer"));
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, a_person_gets_nothing_stamped_and_one_clear_refusal)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, UNSTAMPED, NULL, &users[PERSON]);
  cr_assert_null(json_get(o, "spec.writer.serviceAccount"), "a person is not stamped as writer");
  t_expect_message(&r, "spec.writer.serviceAccount",
                   "user \"alice\" is not a service account: result records are written by "
                   "runner Pods with their service account; people and other namespaces cannot "
                   "write them");
  t_expect_cause(&r, "spec.writer.podName", "FieldValueForbidden");
  t_expect_cause(&r, "spec.writer.podUID", "FieldValueForbidden");
  cr_assert_eq(r.errs.n, 3, "no 'not stamped' noise on top: %s", t_causes(&r));
  cr_assert_not(ferrs_all_policy(&r.errs), "identity refusals are not admin policy");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, unbound_token_message)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, UNSTAMPED, NULL, &users[NO_EXTRAS]);
  t_expect_message(&r, "spec.writer.podName",
                   "the request carries no Pod name (userInfo.extra "
                   "\"authentication.kubernetes.io/pod-name\"): deliver results with the runner "
                   "Pod's own bound service-account token");
  cr_assert_eq(r.errs.n, 2, "%s", t_causes(&r));
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, wrong_pod_message)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, UNSTAMPED, NULL, &users[SIBLING_JOB_POD]);
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  t_expect_message(&r, "spec.jobName", "names Job \"" JOB "\", but the writing Pod "
                                       "\"orders-apply-12-x7k2p\" is not one of its Pods");
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, other_namespace_message)
{
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, UNSTAMPED, NULL, &users[OTHER_NS]);
  t_expect_message(&r, "spec.writer.serviceAccount",
                   "service account \"system:serviceaccount:other:ptah-runner\" is not of this "
                   "record's namespace \"shop\"");
  cr_assert_str_eq(json_get_str(o, "spec.writer.serviceAccount"),
                   "system:serviceaccount:other:ptah-runner", "stamped as it is, refused as such");
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, ambiguous_extras_count_as_missing)
{
  struct api_result r;
  const struct t_user empty_name = { SA, SA_GROUPS, "", UID };
  t_admit(&r, API_CREATE, G, K, APPLIED, NULL, &empty_name, NULL);
  t_expect_cause(&r, "spec.writer.podName", "FieldValueForbidden");
  api_result_release(&r);

  /* Two pod names in userInfo.extra: not a kubelet-issued token. */
  cJSON *obj = t_json(APPLIED);
  cJSON *extra = t_json("{\"authentication.kubernetes.io/pod-name\":[\"" POD "\",\"" POD "\"],"
                        "\"authentication.kubernetes.io/pod-uid\":[\"" UID "\"]}");
  const char *groups[] = { "system:serviceaccounts" };
  struct api_user u = { .username = SA, .groups = groups, .ngroups = 1, .extra = extra };
  struct policy *p = policy_default();
  struct api_request req = { .kind = t_kind(G, K), .obj = obj, .op = API_CREATE, .user = &u,
                             .policy = p };
  api_result_init(&r);
  cr_assert_eq(api_validate(&req, &r), GW_OK);
  t_expect_cause(&r, "spec.writer.podName", "FieldValueForbidden");
  cr_assert_eq(r.errs.n, 1, "%s", t_causes(&r));
  api_result_release(&r);
  cJSON_Delete(obj);
  cJSON_Delete(extra);
  policy_free(p);
}

Test(ptahresultrecord, namespace_is_needed_to_judge_the_writer)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K,
          "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"" JOB "\"},"
          "\"spec\":{\"ownerRef\":{\"kind\":\"PtahMigration\",\"name\":\"s\"},\"operation\":{"
          "\"id\":\"o\",\"type\":\"Apply\"},\"jobName\":\"" JOB "\",\"result\":{\"outcome\":"
          "\"Failed\"}," WRITER "}}",
          NULL, &users[RUNNER], NULL);
  t_expect_cause(&r, "metadata.namespace", "FieldValueRequired");
  api_result_release(&r);
}

Test(ptahresultrecord, long_job_names_match_the_truncated_pod_prefix)
{
  /* generateName bases are cut to 58 characters: a 60-character Job's Pods drop the dash. */
  const char *job = "orders-apply-1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  cr_assert_eq(strlen(job), 60);
  char pod[80], obj[2048];
  snprintf(pod, sizeof(pod), "%.58sx7k2p", job);
  const struct t_user u = { SA, SA_GROUPS, pod, UID };
  snprintf(obj, sizeof(obj),
           "{\"apiVersion\":\"" G "/v1\",\"kind\":\"" K "\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"shop\"},\"spec\":{\"ownerRef\":{\"kind\":\"PtahMigration\",\"name\":"
           "\"s\"},\"operation\":{\"id\":\"o\",\"type\":\"Apply\"},\"jobName\":\"%s\",\"result\":"
           "{\"outcome\":\"Failed\"}}}",
           job, job);
  struct api_result r;
  cJSON *o = admit_mutated(&r, API_CREATE, obj, NULL, &u);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, records_are_immutable)
{
  const char *changed[] = {
    REC("PtahSchema", "Apply", "{\"outcome\":\"Failed\",\"planDigest\":\"" DIGEST "\"}"),
    REC("PtahSchema", "Apply", "{\"outcome\":\"Applied\",\"planDigest\":\"" DIGEST "\","
        "\"message\":\"amended\"}"),
    "{" V1 ",\"spec\":{\"ownerRef\":{\"kind\":\"PtahSchema\",\"name\":\"orders\"},\"operation\":{"
    "\"id\":\"orders-apply-1\",\"type\":\"Apply\",\"attempt\":1},\"jobName\":\"" JOB "\","
    "\"result\":{\"outcome\":\"Applied\",\"planDigest\":\"" DIGEST "\"}}}",
  };
  for(size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
    struct api_result r;
    t_admit(&r, API_UPDATE, G, K, changed[i], APPLIED, &users[RUNNER], NULL);
    cr_assert_eq(r.errs.n, 1, "%zu: %s", i, t_causes(&r));
    t_expect_cause(&r, "spec", "FieldValueForbidden");
    t_expect_message(&r, "spec", "is immutable: a result record is the durable receipt of one "
                                 "operation");
    api_result_release(&r);
  }
  /* The controller adds finalizers or labels: a metadata-only update by a person passes. */
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, APPLIED, APPLIED, &users[PERSON], NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
  /* A replace without spec.writer gets it back from the stored record. */
  cJSON *o = admit_mutated(&r, API_UPDATE,
                           REC("PtahSchema", "Apply", "{\"outcome\":\"Applied\",\"planDigest\":"
                               "\"" DIGEST "\"}"), APPLIED, &users[PERSON]);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_Delete(o);
}

Test(ptahresultrecord, conversion_is_lossless)
{
  cJSON *o = t_json(REC("PtahMigration", "Apply", "{\"outcome\":\"Applied\",\"message\":\"ok\","
                        "\"fromVersion\":3,\"toVersion\":5,\"lockContinuous\":true}"));
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.ownerKind"), "PtahMigration");
  cr_assert_str_eq(json_get_str(o, "spec.operationId"), "orders-apply-1");
  cr_assert_str_eq(json_get_str(o, "spec.outcome"), "Applied");
  cr_assert_str_eq(json_get_str(o, "spec.podUID"), UID);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(json_get(o, "metadata.annotations"),
                                                            "godwit.dev/v1-fields")),
                   "{\"spec\":{\"operation\":{\"attempt\":1},\"result\":{\"fromVersion\":3,"
                   "\"lockContinuous\":true,\"toVersion\":5}}}");
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(ptahresultrecord, a_schema_plan_travels_through_v1alpha1)
{
  cJSON *o = t_json(REC("PtahSchema", "Apply", "{\"outcome\":\"Failed\",\"planDigest\":\"" DIGEST
                        "\",\"refusal\":\"PlanStale\",\"lockContinuous\":true,\"plan\":{"
                        "\"statementCount\":1,\"statements\":[{\"sql\":\"CREATE TABLE public.t "
                        "(id int)\",\"label\":\"create table public.t\",\"table\":\"public.t\"}]}}"));
  cJSON *orig = cJSON_Duplicate(o, 1);
  char err[256];
  const struct api_kind *k = t_kind(G, K);
  cr_assert_eq(api_convert(k, o, G "/v1alpha1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(json_get_str(o, "spec.planDigest"), DIGEST);
  cr_assert_null(json_get(o, "spec.result"), "v1alpha1 is flat");
  const char *fields = cJSON_GetStringValue(
    cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1-fields"));
  cr_assert_not_null(strstr(fields, "\"refusal\":\"PlanStale\""), "%s", fields);
  cr_assert_not_null(strstr(fields, "\"table\":\"public.t\""), "%s", fields);
  struct api_result r; /* a v1alpha1 object carrying the plan in its annotation is admitted */
  char *s = cJSON_PrintUnformatted(o);
  t_admit(&r, API_CREATE, G, K, s, NULL, &users[RUNNER], NULL);
  cJSON_free(s);
  t_expect_allowed(&r);
  api_result_release(&r);
  cr_assert_eq(api_convert(k, o, G "/v1", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(ptahresultrecord, a_person_naming_the_runner_gets_one_cause_per_field)
{
  struct api_result r;
  t_admit(&r, API_CREATE, G, K, APPLIED, NULL, &users[PERSON], NULL);
  cr_assert_eq(r.errs.n, 3, "%s", t_causes(&r));
  t_expect_message(&r, "spec.writer.serviceAccount", "user \"alice\" is not a service account");
  t_expect_cause(&r, "spec.writer.podName", "FieldValueForbidden");
  t_expect_cause(&r, "spec.writer.podUID", "FieldValueForbidden");
  api_result_release(&r);
}
