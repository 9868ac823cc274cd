/*
 * PodMigration: every rule allows and refuses with its exact path and reason, in both versions;
 * update rules by phase; policy limits refuse alone (403); defaults are idempotent; warnings;
 * conversion keeps what v1alpha1 cannot hold, including verification beside its mode.
 *
 * JSON in the tables is written with single quotes and turned into JSON by q().
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/podmotion_common.h"
#include "apitest.h"
#include "json.h"

#define G "migration.podmotion.io"
#define K "PodMigration"
#define META "'metadata':{'name':'m','namespace':'default'}"
#define HUB(spec) "{'apiVersion':'" G "/v1beta1','kind':'" K "'," META ",'spec':" spec "}"
#define HUBST(spec, phase)                                                                    \
  "{'apiVersion':'" G "/v1beta1','kind':'" K "'," META ",'spec':" spec                       \
  ",'status':{'phase':'" phase "'}}"
#define ALPHA(spec) "{'apiVersion':'" G "/v1alpha1','kind':'" K "'," META ",'spec':" spec "}"
#define ALPHAST(spec, phase)                                                                  \
  "{'apiVersion':'" G "/v1alpha1','kind':'" K "'," META ",'spec':" spec                      \
  ",'status':{'phase':'" phase "'}}"

/* The smallest valid spec, and variants with extra members. */
#define SRC "'source':{'podName':'web-0'}"
#define DST "'destination':{'nodeName':'node-b'}"
#define MIN "{" SRC "," DST "}"
#define WITH(extra) "{" SRC "," DST "," extra "}"

/* Single quotes to double quotes (no test value contains a quote). Caller frees. */
static char *q(const char *s)
{
  if(!s)
    return NULL;
  char *d = strdup(s);
  cr_assert_not_null(d);
  for(char *p = d; *p; p++)
    if(*p == '\'')
      *p = '"';
  return d;
}

static void admit(struct api_result *r, enum api_op op, const char *obj, const char *old,
                  const struct policy *p)
{
  char *o = q(obj), *od = q(old);
  t_admit(r, op, G, K, o, od, &T_ALICE, p);
  free(o);
  free(od);
}

static cJSON *defaulted(enum api_op op, const char *obj, const char *old)
{
  char *o = q(obj), *od = q(old);
  cJSON *out = t_default(op, G, K, o, od, &T_ALICE, NULL);
  free(o);
  free(od);
  return out;
}

/* Exactly one cause, this one. */
static void expect_only(const struct api_result *r, const char *field, const char *reason)
{
  t_expect_cause(r, field, reason);
  cr_assert_eq(r->errs.n, 1, "expected only %s (%s), got: %s", field, reason, t_causes(r));
}

static bool has_warning(const struct api_result *r, const char *text)
{
  for(size_t i = 0; i < r->warns.n; i++)
    if(strstr(r->warns.v[i], text))
      return true;
  return false;
}

static const char *annotation(const cJSON *o)
{
  return cJSON_GetStringValue(
    cJSON_GetObjectItem(json_get(o, "metadata.annotations"), "godwit.dev/v1beta1-fields"));
}

struct case_ {
  const char *name;
  const char *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
};

static const struct case_ create_cases[] = {
  { "minimal", HUB(MIN), NULL, NULL },
  { "node selector", HUB("{" SRC ",'destination':{'nodeSelector':{'zone':'b'}}}"), NULL, NULL },
  { "source required", HUB("{" DST "}"), "spec.source", "FieldValueRequired" },
  { "pod name required", HUB("{'source':{}," DST "}"), "spec.source.podName",
    "FieldValueRequired" },
  { "pod name format", HUB("{'source':{'podName':'Web_0'}," DST "}"), "spec.source.podName",
    "FieldValueInvalid" },
  { "destination required", HUB("{" SRC "}"), "spec.destination", "FieldValueRequired" },
  { "empty destination", HUB("{" SRC ",'destination':{}}"), "spec.destination",
    "FieldValueRequired" },
  { "both destinations",
    HUB("{" SRC ",'destination':{'nodeName':'node-b','nodeSelector':{'zone':'b'}}}"),
    "spec.destination", "FieldValueInvalid" },
  { "empty node selector", HUB("{" SRC ",'destination':{'nodeSelector':{}}}"),
    "spec.destination.nodeSelector", "FieldValueInvalid" },
  { "node name format", HUB("{" SRC ",'destination':{'nodeName':'-node'}}"),
    "spec.destination.nodeName", "FieldValueInvalid" },
  { "node selector key", HUB("{" SRC ",'destination':{'nodeSelector':{'-x':'a'}}}"),
    "spec.destination.nodeSelector[-x]", "FieldValueInvalid" },
  { "node selector value", HUB("{" SRC ",'destination':{'nodeSelector':{'zone':'a b'}}}"),
    "spec.destination.nodeSelector[zone]", "FieldValueInvalid" },
  { "strategy type", HUB(WITH("'strategy':{'type':'Live'}")), "spec.strategy.type",
    "FieldValueNotSupported" },
  { "StopAndCopy", HUB(WITH("'strategy':{'type':'StopAndCopy'}")), NULL, NULL },
  { "PreCopy with rounds", HUB(WITH("'strategy':{'type':'PreCopy','preCopy':{'maxRounds':8}}")),
    NULL, NULL },
  { "preCopy with StopAndCopy",
    HUB(WITH("'strategy':{'type':'StopAndCopy','preCopy':{'maxRounds':3}}")),
    "spec.strategy.preCopy", "FieldValueForbidden" },
  { "rounds too few", HUB(WITH("'strategy':{'preCopy':{'maxRounds':0}}")),
    "spec.strategy.preCopy.maxRounds", "FieldValueInvalid" },
  { "rounds too many", HUB(WITH("'strategy':{'preCopy':{'maxRounds':31}}")),
    "spec.strategy.preCopy.maxRounds", "FieldValueInvalid" },
  { "rounds type", HUB(WITH("'strategy':{'preCopy':{'maxRounds':'3'}}")),
    "spec.strategy.preCopy.maxRounds", "FieldValueTypeInvalid" },
  { "verification mode", HUB(WITH("'verification':{'mode':'Ping'}")), "spec.verification.mode",
    "FieldValueNotSupported" },
  { "mode None", HUB(WITH("'verification':{'mode':'None'}")), NULL, NULL },
  { "TCPSocket without port", HUB(WITH("'verification':{'mode':'TCPSocket'}")), NULL, NULL },
  { "TCPSocket with port", HUB(WITH("'verification':{'mode':'TCPSocket','tcpSocket':{'port':5432}}")),
    NULL, NULL },
  { "tcpSocket port required", HUB(WITH("'verification':{'mode':'TCPSocket','tcpSocket':{}}")),
    "spec.verification.tcpSocket.port", "FieldValueRequired" },
  { "HTTPGet", HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':8080,'path':'/ready'}}")),
    NULL, NULL },
  { "HTTPGet needs httpGet", HUB(WITH("'verification':{'mode':'HTTPGet'}")),
    "spec.verification.httpGet", "FieldValueRequired" },
  { "httpGet port required", HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'path':'/'}}")),
    "spec.verification.httpGet.port", "FieldValueRequired" },
  { "httpGet port range", HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':0}}")),
    "spec.verification.httpGet.port", "FieldValueInvalid" },
  { "httpGet scheme", HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':1,'scheme':'FTP'}}")),
    "spec.verification.httpGet.scheme", "FieldValueNotSupported" },
  { "relative path",
    HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':8080,'path':'healthz'}}")),
    "spec.verification.httpGet.path", "FieldValueInvalid" },
  { "path with space",
    HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':8080,'path':'/a b'}}")),
    "spec.verification.httpGet.path", "FieldValueInvalid" },
  { "httpGet unused by ReadinessProbe",
    HUB(WITH("'verification':{'httpGet':{'port':8080}}")), "spec.verification.httpGet",
    "FieldValueForbidden" },
  { "httpGet unused by None",
    HUB(WITH("'verification':{'mode':'None','httpGet':{'port':8080}}")),
    "spec.verification.httpGet", "FieldValueForbidden" },
  { "tcpSocket unused by HTTPGet",
    HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':80},'tcpSocket':{'port':80}}")),
    "spec.verification.tcpSocket", "FieldValueForbidden" },
  { "timeout too short", HUB(WITH("'verification':{'timeoutSeconds':4}")),
    "spec.verification.timeoutSeconds", "FieldValueInvalid" },
  { "timeout too long", HUB(WITH("'verification':{'timeoutSeconds':86401}")),
    "spec.verification.timeoutSeconds", "FieldValueInvalid" },
  { "policyRef", HUB(WITH("'policyRef':{'name':'default'}")), NULL, NULL },
  { "policyRef name required", HUB(WITH("'policyRef':{}")), "spec.policyRef.name",
    "FieldValueRequired" },
  { "policyRef name format", HUB(WITH("'policyRef':{'name':'Bad Name'}")),
    "spec.policyRef.name", "FieldValueInvalid" },
  { "cancel type", HUB(WITH("'cancel':'yes'")), "spec.cancel", "FieldValueTypeInvalid" },
  { "retention", HUB(WITH("'checkpoint':{'retention':'Forever'}")),
    "spec.checkpoint.retention", "FieldValueNotSupported" },
  { "RetainOnFailure", HUB(WITH("'checkpoint':{'retention':'RetainOnFailure'}")), NULL, NULL },
  /* v1alpha1: causes name the fields the user wrote. */
  { "v1alpha1 minimal", ALPHA("{'podName':'web-0','targetNode':'node-b'}"), NULL, NULL },
  { "v1alpha1 every field",
    ALPHA("{'podName':'web-0','targetNode':'node-b','mode':'PreCopy','maxPreCopyRounds':4,"
          "'verification':'TCPSocket'}"),
    NULL, NULL },
  { "v1alpha1 pod name required", ALPHA("{'targetNode':'node-b'}"), "spec.podName",
    "FieldValueRequired" },
  { "v1alpha1 pod name format", ALPHA("{'podName':'Web','targetNode':'node-b'}"),
    "spec.podName", "FieldValueInvalid" },
  { "v1alpha1 target node required", ALPHA("{'podName':'web-0'}"), "spec.targetNode",
    "FieldValueRequired" },
  { "v1alpha1 target node format", ALPHA("{'podName':'web-0','targetNode':'Node B'}"),
    "spec.targetNode", "FieldValueInvalid" },
  { "v1alpha1 mode", ALPHA("{'podName':'web-0','targetNode':'n','mode':'Live'}"), "spec.mode",
    "FieldValueNotSupported" },
  { "v1alpha1 rounds range", ALPHA("{'podName':'web-0','targetNode':'n','maxPreCopyRounds':0}"),
    "spec.maxPreCopyRounds", "FieldValueInvalid" },
  { "v1alpha1 rounds with StopAndCopy",
    ALPHA("{'podName':'web-0','targetNode':'n','mode':'StopAndCopy','maxPreCopyRounds':3}"),
    "spec.maxPreCopyRounds", "FieldValueForbidden" },
  { "v1alpha1 verification", ALPHA("{'podName':'web-0','targetNode':'n','verification':'Ping'}"),
    "spec.verification", "FieldValueNotSupported" },
  { "v1alpha1 verification type",
    ALPHA("{'podName':'web-0','targetNode':'n','verification':{'mode':'None'}}"),
    "spec.verification", "FieldValueTypeInvalid" },
};

/* Criterion re-executes the binary for each test, so parameters are indexes, not pointers. */
ParameterizedTestParameters(podmigration, create)
{
  static size_t idx[sizeof(create_cases) / sizeof(create_cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, podmigration, create)
{
  const struct case_ *c = &create_cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  admit(&r, API_CREATE, c->obj, NULL, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else
    expect_only(&r, c->field, c->reason);
  api_result_release(&r);
}

struct update_case {
  const char *name;
  const char *old, *obj;
  const char *field; /* NULL: allowed */
  const char *reason;
};

#define NSEL "'destination':{'nodeSelector':{'zone':'c'}}"
#define PRE(n) "'strategy':{'type':'PreCopy','preCopy':{'maxRounds':" #n "}}"
#define VER(t) "'verification':{'mode':'TCPSocket','timeoutSeconds':" #t "}"

static const struct update_case update_cases[] = {
  { "unchanged spec", HUBST(MIN, "Transferring"), HUBST(MIN, "Transferring"), NULL, NULL },
  { "pod changed", HUB(MIN), HUB("{'source':{'podName':'web-1'}," DST "}"), "spec.source",
    "FieldValueForbidden" },
  { "pod changed while running", HUBST(MIN, "Restoring"),
    HUBST("{'source':{'podName':'web-1'}," DST "}", "Restoring"), "spec.source",
    "FieldValueForbidden" },
  { "destination before the controller saw it", HUB(MIN), HUB("{" SRC "," NSEL "}"), NULL, NULL },
  { "destination while Pending", HUBST(MIN, "Pending"), HUBST("{" SRC "," NSEL "}", "Pending"),
    NULL, NULL },
  { "destination while Validating", HUBST(MIN, "Validating"),
    HUBST("{" SRC "," NSEL "}", "Validating"), "spec.destination", "FieldValueForbidden" },
  { "strategy type while PreCopying", HUBST(MIN, "PreCopying"),
    HUBST(WITH("'strategy':{'type':'StopAndCopy'}"), "PreCopying"), "spec.strategy.type",
    "FieldValueForbidden" },
  { "rounds while Checkpointing", HUBST(WITH(PRE(5)), "Checkpointing"),
    HUBST(WITH(PRE(6)), "Checkpointing"), "spec.strategy.preCopy", "FieldValueForbidden" },
  { "rounds while Pending", HUBST(WITH(PRE(5)), "Pending"), HUBST(WITH(PRE(6)), "Pending"), NULL,
    NULL },
  { "original manifest replaced while Checkpointing", HUBST(WITH(PRE(5)), "Checkpointing"),
    HUBST(MIN, "Checkpointing"), NULL, NULL },
  { "default rounds spelled out while Transferring", HUBST(MIN, "Transferring"),
    HUBST(WITH(PRE(5)), "Transferring"), NULL, NULL },
  { "other rounds than the default while PreCopying", HUBST(MIN, "PreCopying"),
    HUBST(WITH(PRE(6)), "PreCopying"), "spec.strategy.preCopy", "FieldValueForbidden" },
  { "default rounds spelled out after Completed", HUBST(MIN, "Completed"),
    HUBST(WITH(PRE(5) ",'checkpoint':{'retention':'Delete'}"), "Completed"), NULL, NULL },
  { "other rounds after Completed", HUBST(MIN, "Completed"), HUBST(WITH(PRE(4)), "Completed"),
    "spec", "FieldValueForbidden" },
  { "policyRef while Transferring", HUBST(MIN, "Transferring"),
    HUBST(WITH("'policyRef':{'name':'strict'}"), "Transferring"), "spec.policyRef",
    "FieldValueForbidden" },
  { "verification while Restoring", HUBST(WITH(VER(60)), "Restoring"),
    HUBST(WITH(VER(120)), "Restoring"), NULL, NULL },
  { "verification while Verifying", HUBST(WITH(VER(60)), "Verifying"),
    HUBST(WITH(VER(120)), "Verifying"), "spec.verification", "FieldValueForbidden" },
  { "verification while RollingBack", HUBST(WITH(VER(60)), "RollingBack"),
    HUBST(WITH(VER(120)), "RollingBack"), "spec.verification", "FieldValueForbidden" },
  { "retention while Verifying", HUBST(MIN, "Verifying"),
    HUBST(WITH("'checkpoint':{'retention':'Retain'}"), "Verifying"), NULL, NULL },
  { "cancel", HUBST(MIN, "Checkpointing"), HUBST(WITH("'cancel':true"), "Checkpointing"), NULL,
    NULL },
  { "cancel reverted", HUBST(WITH("'cancel':true"), "RollingBack"),
    HUBST(WITH("'cancel':false"), "RollingBack"), "spec.cancel", "FieldValueForbidden" },
  { "cancel removed", HUB(WITH("'cancel':true")), HUB(MIN), "spec.cancel",
    "FieldValueForbidden" },
  { "cancel after Completed", HUBST(MIN, "Completed"), HUBST(WITH("'cancel':true"), "Completed"),
    "spec", "FieldValueForbidden" },
  { "destination after Failed", HUBST(MIN, "Failed"), HUBST("{" SRC "," NSEL "}", "Failed"),
    "spec", "FieldValueForbidden" },
  { "verification after Cancelled", HUBST(WITH(VER(60)), "Cancelled"),
    HUBST(WITH(VER(90)), "Cancelled"), "spec", "FieldValueForbidden" },
  { "retention to Delete after Completed", HUBST(WITH("'checkpoint':{'retention':'Retain'}"), "Completed"),
    HUBST(WITH("'checkpoint':{'retention':'Delete'}"), "Completed"), NULL, NULL },
  { "retention to Delete after Failed",
    HUBST(WITH("'checkpoint':{'retention':'RetainOnFailure'}"), "Failed"),
    HUBST(WITH("'checkpoint':{'retention':'Delete'}"), "Failed"), NULL, NULL },
  { "retention to Retain after Completed", HUBST(MIN, "Completed"),
    HUBST(WITH("'checkpoint':{'retention':'Retain'}"), "Completed"), "spec.checkpoint.retention",
    "FieldValueForbidden" },
  { "metadata only after Completed", HUBST(MIN, "Completed"),
    "{'apiVersion':'" G "/v1beta1','kind':'" K "','metadata':{'name':'m','namespace':'default',"
    "'labels':{'done':'yes'}},'spec':" MIN ",'status':{'phase':'Completed'}}", NULL, NULL },
  /* v1alpha1 updates: causes on the fields the user wrote. */
  { "v1alpha1 pod changed", ALPHA("{'podName':'web-0','targetNode':'n'}"),
    ALPHA("{'podName':'web-1','targetNode':'n'}"), "spec.podName", "FieldValueForbidden" },
  { "v1alpha1 target while Restoring", ALPHAST("{'podName':'web-0','targetNode':'n'}", "Restoring"),
    ALPHAST("{'podName':'web-0','targetNode':'m'}", "Restoring"), "spec.targetNode",
    "FieldValueForbidden" },
  { "v1alpha1 mode while Transferring",
    ALPHAST("{'podName':'web-0','targetNode':'n','mode':'PreCopy'}", "Transferring"),
    ALPHAST("{'podName':'web-0','targetNode':'n','mode':'StopAndCopy'}", "Transferring"),
    "spec.mode", "FieldValueForbidden" },
  { "v1alpha1 rounds while PreCopying",
    ALPHAST("{'podName':'web-0','targetNode':'n','maxPreCopyRounds':3}", "PreCopying"),
    ALPHAST("{'podName':'web-0','targetNode':'n','maxPreCopyRounds':4}", "PreCopying"),
    "spec.maxPreCopyRounds", "FieldValueForbidden" },
  { "v1alpha1 verification while Verifying",
    ALPHAST("{'podName':'web-0','targetNode':'n','verification':'ReadinessProbe'}", "Verifying"),
    ALPHAST("{'podName':'web-0','targetNode':'n','verification':'None'}", "Verifying"),
    "spec.verification", "FieldValueForbidden" },
  { "v1alpha1 against a v1beta1 old object", HUBST(MIN, "Pending"),
    ALPHAST("{'podName':'web-0','targetNode':'node-c'}", "Pending"), NULL, NULL },
};

ParameterizedTestParameters(podmigration, update)
{
  static size_t idx[sizeof(update_cases) / sizeof(update_cases[0])];
  for(size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, podmigration, update)
{
  const struct update_case *c = &update_cases[*i];
  cr_log_info("case: %s", c->name);
  struct api_result r;
  admit(&r, API_UPDATE, c->obj, c->old, NULL);
  if(!c->field)
    t_expect_allowed(&r);
  else
    expect_only(&r, c->field, c->reason);
  api_result_release(&r);
}

Test(podmigration, update_rules_do_not_run_on_create)
{
  /* A create carrying a finished status is not an update of a finished migration. */
  struct api_result r;
  admit(&r, API_CREATE, HUBST(WITH("'cancel':true"), "Completed"), NULL, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
}

Test(podmigration, messages_say_what_to_do)
{
  struct api_result r;
  admit(&r, API_UPDATE, HUB("{'source':{'podName':'web-1'}," DST "}"), HUB(MIN), NULL);
  t_expect_message(&r, "spec.source", "create a new PodMigration");
  api_result_release(&r);
  admit(&r, API_UPDATE, HUBST("{" SRC "," NSEL "}", "Checkpointing"), HUBST(MIN, "Checkpointing"),
        NULL);
  t_expect_message(&r, "spec.destination", "(phase Checkpointing): set spec.cancel to true");
  api_result_release(&r);
  admit(&r, API_UPDATE, HUBST(WITH("'cancel':true"), "Failed"), HUBST(MIN, "Failed"), NULL);
  t_expect_message(&r, "spec", "cannot change once the migration has finished (phase Failed)");
  api_result_release(&r);
  admit(&r, API_CREATE, HUB(WITH("'verification':{'mode':'None','tcpSocket':{'port':1}}")), NULL,
        NULL);
  t_expect_message(&r, "spec.verification.tcpSocket", "when verification.mode is None:");
  api_result_release(&r);
  admit(&r, API_CREATE, HUB(WITH("'verification':{'mode':'HTTPGet','httpGet':{'port':1,'path':'x'}}")),
        NULL, NULL);
  t_expect_message(&r, "spec.verification.httpGet.path", "got \"x\"");
  api_result_release(&r);
}

Test(podmigration, every_failing_rule_is_reported)
{
  struct api_result r;
  admit(&r, API_CREATE,
        HUB("{" SRC ",'destination':{'nodeName':'a','nodeSelector':{}},"
            "'strategy':{'type':'StopAndCopy','preCopy':{}},'verification':{'mode':'HTTPGet'}}"),
        NULL, NULL);
  t_expect_cause(&r, "spec.destination", "FieldValueInvalid");
  t_expect_cause(&r, "spec.destination.nodeSelector", "FieldValueInvalid");
  t_expect_cause(&r, "spec.strategy.preCopy", "FieldValueForbidden");
  t_expect_cause(&r, "spec.verification.httpGet", "FieldValueRequired");
  cr_assert_eq(r.errs.n, 4, "%s", t_causes(&r));
  api_result_release(&r);
}

/* ---- the admission policy ---- */

Test(podmigration, pre_copy_rounds_above_policy_limit_are_forbidden)
{
  struct policy *p = t_policy("{\"limits\":{\"maxPreCopyRounds\":3}}");
  struct api_result r;
  admit(&r, API_CREATE, HUB(WITH(PRE(4))), NULL, p);
  expect_only(&r, "spec.strategy.preCopy.maxRounds", "FieldValueForbidden");
  t_expect_message(&r, "spec.strategy.preCopy.maxRounds",
                   "is 4, above the admission policy's limit of 3 (limits.maxPreCopyRounds)");
  cr_assert(ferrs_all_policy(&r.errs), "a policy refusal alone is a 403");
  api_result_release(&r);
  admit(&r, API_CREATE, HUB(WITH(PRE(3))), NULL, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  /* v1alpha1 names its own field. */
  admit(&r, API_CREATE, ALPHA("{'podName':'web-0','targetNode':'n','maxPreCopyRounds':9}"), NULL, p);
  expect_only(&r, "spec.maxPreCopyRounds", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  policy_free(p);
}

Test(podmigration, default_policy_caps_rounds_at_ten)
{
  struct api_result r;
  admit(&r, API_CREATE, HUB(WITH(PRE(11))), NULL, NULL);
  expect_only(&r, "spec.strategy.preCopy.maxRounds", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  admit(&r, API_CREATE, HUB(WITH(PRE(10))), NULL, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
}

Test(podmigration, verification_timeout_above_policy_limit_is_forbidden)
{
  struct api_result r;
  admit(&r, API_CREATE, HUB(WITH(VER(3601))), NULL, NULL); /* default limit 3600 */
  expect_only(&r, "spec.verification.timeoutSeconds", "FieldValueForbidden");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  admit(&r, API_CREATE, HUB(WITH(VER(3600))), NULL, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
  struct policy *p = t_policy("{\"limits\":{\"maxVerificationTimeoutSeconds\":300}}");
  admit(&r, API_CREATE, HUB(WITH(VER(301))), NULL, p);
  t_expect_message(&r, "spec.verification.timeoutSeconds",
                   "is 301, above the admission policy's limit of 300");
  cr_assert(ferrs_all_policy(&r.errs));
  api_result_release(&r);
  policy_free(p);
}

Test(podmigration, zero_policy_limit_means_no_limit)
{
  struct policy *p = t_policy("{\"limits\":{\"maxPreCopyRounds\":0,"
                              "\"maxVerificationTimeoutSeconds\":0}}");
  struct api_result r;
  admit(&r, API_CREATE, HUB(WITH(PRE(30) "," VER(86400))), NULL, p);
  t_expect_allowed(&r);
  api_result_release(&r);
  policy_free(p);
}

Test(podmigration, lowered_limit_never_blocks_an_unchanged_value)
{
  /* Admitted under the old limit; the admin lowered it to 3; cancelling must still work. */
  struct policy *p = t_policy("{\"limits\":{\"maxPreCopyRounds\":3,"
                              "\"maxVerificationTimeoutSeconds\":100}}");
  struct api_result r;
  admit(&r, API_UPDATE, HUBST(WITH(PRE(8) "," VER(600) ",'cancel':true"), "PreCopying"),
        HUBST(WITH(PRE(8) "," VER(600)), "PreCopying"), p);
  t_expect_allowed(&r);
  api_result_release(&r);
  /* A changed value meets the new limit. */
  admit(&r, API_UPDATE, HUB(WITH(PRE(9))), HUB(WITH(PRE(8))), p);
  expect_only(&r, "spec.strategy.preCopy.maxRounds", "FieldValueForbidden");
  api_result_release(&r);
  policy_free(p);
}

Test(podmigration, policy_and_invalid_together_are_not_policy_only)
{
  struct policy *p = t_policy("{\"limits\":{\"maxPreCopyRounds\":3}}");
  struct api_result r;
  admit(&r, API_CREATE, HUB("{" SRC "," PRE(4) "}"), NULL, p);
  t_expect_cause(&r, "spec.strategy.preCopy.maxRounds", "FieldValueForbidden");
  t_expect_cause(&r, "spec.destination", "FieldValueRequired");
  cr_assert_not(ferrs_all_policy(&r.errs), "an invalid field makes it a 422");
  api_result_release(&r);
  policy_free(p);
}

/* ---- defaulting ---- */

Test(podmigration, defaults_fill_and_are_idempotent)
{
  cJSON *o = defaulted(API_CREATE, HUB(MIN), NULL);
  cr_assert_str_eq(json_get_str(o, "spec.strategy.type"), "PreCopy");
  cr_assert_eq(json_get(o, "spec.strategy.preCopy.maxRounds")->valueint, 5);
  cr_assert_str_eq(json_get_str(o, "spec.verification.mode"), "ReadinessProbe");
  cr_assert_eq(json_get(o, "spec.verification.timeoutSeconds")->valueint, 60);
  cr_assert_str_eq(json_get_str(o, "spec.checkpoint.retention"), "Delete");
  cr_assert_null(json_get(o, "spec.cancel"), "cancel has no default: absent means false");
  cr_assert_null(json_get(o, "spec.policyRef"));
  cr_assert_null(json_get(o, "spec.verification.httpGet"));
  cr_assert_null(json_get(o, "status"), "defaulting never writes status");
  cJSON_Delete(o);
}

Test(podmigration, stop_and_copy_gets_no_pre_copy)
{
  cJSON *o = defaulted(API_CREATE, HUB(WITH("'strategy':{'type':'StopAndCopy'}")), NULL);
  cr_assert_null(json_get(o, "spec.strategy.preCopy"));
  cJSON_Delete(o);
}

Test(podmigration, explicit_values_are_kept)
{
  cJSON *o = defaulted(API_CREATE,
                       HUB(WITH(PRE(2) ",'verification':{'mode':'HTTPGet','timeoutSeconds':30,"
                                "'httpGet':{'port':8080}}")),
                       NULL);
  cr_assert_eq(json_get(o, "spec.strategy.preCopy.maxRounds")->valueint, 2);
  cr_assert_eq(json_get(o, "spec.verification.timeoutSeconds")->valueint, 30);
  cr_assert_str_eq(json_get_str(o, "spec.verification.httpGet.path"), "/");
  cr_assert_str_eq(json_get_str(o, "spec.verification.httpGet.scheme"), "HTTP");
  cJSON_Delete(o);
}

Test(podmigration, update_fills_pre_copy_without_counting_as_a_change)
{
  /* Stored without preCopy (created while the webhook was off); an update fills it in, and
   * that is no strategy change for a started migration. */
  cJSON *o = defaulted(API_UPDATE, HUBST(WITH("'cancel':true"), "PreCopying"),
                       HUBST(MIN, "PreCopying"));
  cr_assert_eq(json_get(o, "spec.strategy.preCopy.maxRounds")->valueint, 5);
  char *text = cJSON_PrintUnformatted(o), *old = q(HUBST(MIN, "PreCopying"));
  struct api_result r;
  t_admit(&r, API_UPDATE, G, K, text, old, &T_ALICE, NULL);
  t_expect_allowed(&r);
  api_result_release(&r);
  cJSON_free(text);
  free(old);
  cJSON_Delete(o);
}

Test(podmigration, v1alpha1_defaults_stay_in_v1alpha1)
{
  cJSON *o = defaulted(API_CREATE, ALPHA("{'podName':'web-0','targetNode':'node-b'}"), NULL);
  cr_assert_str_eq(json_get_str(o, "spec.mode"), "PreCopy");
  cr_assert_eq(json_get(o, "spec.maxPreCopyRounds")->valueint, 5);
  cr_assert_str_eq(json_get_str(o, "spec.verification"), "ReadinessProbe");
  cr_assert_null(json_get(o, "spec.strategy"), "no hub field leaks into v1alpha1");
  cr_assert_null(json_get(o, "spec.source"));
  cr_assert_null(json_get(o, "metadata.annotations"), "no conversion annotation from defaults");
  cJSON_Delete(o);
}

Test(podmigration, v1alpha1_annotation_is_kept_as_sent)
{
  /* What the annotation carries is the user's; hub defaults never rewrite it. */
  char *s = q(ALPHA("{'podName':'web-0','targetNode':'n','mode':'StopAndCopy'}"));
  cJSON *doc = t_json(s);
  free(s);
  const char *saved = "{\"spec\":{\"verification\":{\"timeoutSeconds\":30}}}";
  cJSON *annotations = cJSON_AddObjectToObject(json_get_mut(doc, "metadata"), "annotations");
  cJSON_AddStringToObject(annotations, "godwit.dev/v1beta1-fields", saved);
  char *text = cJSON_PrintUnformatted(doc);
  cJSON *out = t_default(API_CREATE, G, K, text, NULL, &T_ALICE, NULL);
  cr_assert_str_eq(annotation(out), saved);
  cr_assert_str_eq(json_get_str(out, "spec.verification"), "ReadinessProbe");
  cr_assert_null(json_get(out, "spec.maxPreCopyRounds"));
  cJSON_Delete(out);
  cJSON_Delete(doc);
  cJSON_free(text);
}

Test(podmigration, v1alpha1_unknown_fields_named_like_hub_ones_do_not_block_defaults)
{
  /* An unknown v1alpha1 field named like a v1beta1 one (strategy) is dropped by the round trip;
   * defaulting must not depend on it, or the reinvoked mutation adds what the first one did not
   * (found by fuzz_admission; kube-apiserver prunes unknown fields before admission). */
  char *s = q(ALPHA("{'podName':'web-0','targetNode':'n','strategy':'PreCopy','preCopyRounds':76}"));
  cJSON *out = t_default(API_CREATE, G, K, s, NULL, &T_ALICE, NULL);
  cr_assert_null(json_get(out, "spec.strategy"));
  cr_assert_str_eq(json_get_str(out, "spec.mode"), "PreCopy");
  cJSON_Delete(out);
  free(s);
}

/* ---- warnings ---- */

static void warn_case(const char *obj, const char *old, const char *text, bool want)
{
  struct api_result r;
  admit(&r, old ? API_UPDATE : API_CREATE, obj, old, NULL);
  t_expect_allowed(&r);
  cr_assert_eq(has_warning(&r, text), want, "warning \"%s\" %s", text,
               want ? "missing" : "unexpected");
  api_result_release(&r);
}

Test(podmigration, minimal_has_no_warnings)
{
  struct api_result r;
  admit(&r, API_CREATE, HUB(MIN), NULL, NULL);
  cr_assert_eq(r.warns.n, 0, "first warning: %s", r.warns.n ? r.warns.v[0] : "");
  api_result_release(&r);
}

Test(podmigration, warns_about_stop_and_copy)
{
  warn_case(HUB(WITH("'strategy':{'type':'StopAndCopy'}")), NULL,
            "strategy StopAndCopy keeps the pod frozen", true);
  warn_case(HUB(MIN), NULL, "StopAndCopy", false);
}

Test(podmigration, warns_about_no_application_probe)
{
  warn_case(HUB(WITH("'verification':{'mode':'None'}")), NULL,
            "verification mode None runs no application probe", true);
  warn_case(ALPHA("{'podName':'web-0','targetNode':'n','verification':'None'}"), NULL,
            "verification mode None", true);
  warn_case(HUB(WITH("'verification':{'mode':'TCPSocket'}")), NULL, "mode None", false);
}

Test(podmigration, warns_about_short_verification_timeout)
{
  warn_case(HUB(WITH(VER(14))), NULL, "verification timeoutSeconds 14 is short", true);
  warn_case(HUB(WITH(VER(15))), NULL, "is short", false);
}

Test(podmigration, warns_about_retained_checkpoints)
{
  warn_case(HUB(WITH("'checkpoint':{'retention':'Retain'}")), NULL,
            "checkpoint retention Retain keeps a copy of the pod's memory, secrets included",
            true);
  warn_case(HUB(WITH("'checkpoint':{'retention':'RetainOnFailure'}")), NULL,
            "checkpoint retention RetainOnFailure", true);
  warn_case(HUB(MIN), NULL, "checkpoint retention", false);
}

Test(podmigration, warns_about_cancel)
{
  warn_case(HUB(WITH("'cancel':true")), NULL, "this PodMigration will not start", true);
  warn_case(HUBST(WITH("'cancel':true"), "Transferring"), HUBST(MIN, "Transferring"),
            "cancelling a migration in phase Transferring rolls it back", true);
  warn_case(HUBST(WITH("'cancel':true"), "Pending"), HUBST(MIN, "Pending"), "rolls it back",
            false);
  warn_case(HUBST(WITH("'cancel':true"), "RollingBack"),
            HUBST(WITH("'cancel':true"), "RollingBack"), "rolls it back", false);
}

Test(podmigration, v1alpha1_is_deprecated)
{
  warn_case(ALPHA("{'podName':'web-0','targetNode':'n'}"), NULL,
            G "/v1alpha1 PodMigration is deprecated; use " G "/v1beta1 PodMigration", true);
}

Test(podmigration, unknown_fields_warn)
{
  warn_case(HUB(WITH("'priority':3")), NULL, "unknown field \"spec.priority\"", true);
}

/* ---- status ---- */

static size_t status_errors(const char *status, const char *field, const char *reason)
{
  const struct api_kind *k = t_kind(G, K);
  char *s = q(status);
  cJSON *o = t_json(s);
  free(s);
  struct ferrs e;
  ferrs_init(&e);
  sch_validate(api_hub(k)->status, o, "status", &e, NULL);
  size_t n = e.n;
  if(field) {
    cr_assert_eq(n, 1);
    cr_assert_str_eq(e.v[0].field, field);
    cr_assert_str_eq(ferr_reason(e.v[0].type), reason);
  }
  ferrs_release(&e);
  cJSON_Delete(o);
  return n;
}

Test(podmigration, traffic_verified_is_never_a_phase)
{
  status_errors("{'phase':'TrafficVerified'}", "status.phase", "FieldValueNotSupported");
  status_errors("{'phase':'Complete'}", "status.phase", "FieldValueNotSupported");
  static const char *const ok[] = { "Pending",   "Validating", "PreCopying", "Checkpointing",
                                    "Transferring", "Restoring", "Verifying", "RollingBack",
                                    "Completed", "Failed",     "Cancelled" };
  for(size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    char s[64];
    snprintf(s, sizeof(s), "{'phase':'%s'}", ok[i]);
    cr_assert_eq(status_errors(s, NULL, NULL), 0, "phase %s", ok[i]);
  }
}

Test(podmigration, status_carries_conditions_and_progress)
{
  cr_assert_eq(status_errors("{'phase':'Verifying','observedGeneration':2,'sourceNode':'node-a',"
                             "'destinationNode':'node-b','destinationPodName':'web-0-x7k2p',"
                             "'policyName':'default','preCopyRounds':3,'freezeDuration':'312ms',"
                             "'checkpoint':{'path':'/run/podmotion/checkpoints/default-m/',"
                             "'sizeBytes':1048576,'removed':false},"
                             "'startTime':'2026-01-02T15:04:05Z',"
                             "'conditions':[{'type':'RestoreComplete','status':'True',"
                             "'lastTransitionTime':'2026-01-02T15:04:09Z','reason':'Restored',"
                             "'message':'restored on node-b','observedGeneration':2},"
                             "{'type':'TrafficVerified','status':'Unknown',"
                             "'lastTransitionTime':'2026-01-02T15:04:09Z','reason':'Probing',"
                             "'message':'waiting for readiness'}]}",
                             NULL, NULL),
               0);
  status_errors("{'freezeDuration':'fast'}", "status.freezeDuration", "FieldValueInvalid");
  status_errors("{'preCopyRounds':-1}", "status.preCopyRounds", "FieldValueInvalid");
  const struct sch_field *c = sch_find(api_hub(t_kind(G, K))->status, "conditions");
  cr_assert(c && (c->flags & SCH_CONDITIONS), "conditions is a metav1.Condition map list");
}

/* ---- conversion ---- */

static void convert(cJSON *o, const char *version)
{
  char err[256];
  cr_assert_eq(api_convert(t_kind(G, K), o, version, err, sizeof(err)), GW_OK, "%s", err);
}

Test(podmigration, conversion_maps_the_flat_fields)
{
  char *s = q(HUBST("{" SRC "," DST "," PRE(4) ",'verification':{'mode':'TCPSocket'}}",
                    "Restoring"));
  cJSON *o = t_json(s);
  free(s);
  cJSON *orig = cJSON_Duplicate(o, 1);
  convert(o, G "/v1alpha1");
  cr_assert_str_eq(json_get_str(o, "spec.podName"), "web-0");
  cr_assert_str_eq(json_get_str(o, "spec.targetNode"), "node-b");
  cr_assert_str_eq(json_get_str(o, "spec.mode"), "PreCopy");
  cr_assert_eq(json_get(o, "spec.maxPreCopyRounds")->valueint, 4);
  cr_assert_str_eq(json_get_str(o, "spec.verification"), "TCPSocket");
  cr_assert_str_eq(json_get_str(o, "status.phase"), "Restoring");
  cr_assert_null(json_get(o, "spec.source"));
  cr_assert_null(json_get(o, "spec.strategy"));
  cr_assert_null(annotation(o), "v1alpha1 holds all of it: %s", annotation(o));
  convert(o, G "/v1beta1");
  cr_assert(cJSON_Compare(o, orig, 1));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(podmigration, conversion_keeps_verification_beside_its_mode)
{
  /* v1alpha1's spec.verification is the hub's spec.verification.mode: the rest of the hub
   * object must travel in the annotation, not be overwritten by the string. */
  char *s = q(HUB("{" SRC ",'destination':{'nodeSelector':{'zone':'b'}},"
                  "'strategy':{'type':'StopAndCopy'},"
                  "'verification':{'mode':'HTTPGet','timeoutSeconds':30,"
                  "'httpGet':{'path':'/ready','port':8080,'scheme':'HTTPS'}},"
                  "'policyRef':{'name':'strict'},'cancel':true,'checkpoint':{'retention':'Retain'}}"));
  cJSON *o = t_json(s);
  free(s);
  cJSON *orig = cJSON_Duplicate(o, 1);
  convert(o, G "/v1alpha1");
  cr_assert_str_eq(json_get_str(o, "spec.verification"), "HTTPGet");
  cr_assert_null(json_get(o, "spec.targetNode"));
  const char *ann = annotation(o);
  cr_assert_str_eq(ann, "{\"spec\":{\"cancel\":true,\"checkpoint\":{\"retention\":\"Retain\"},"
                        "\"destination\":{\"nodeSelector\":{\"zone\":\"b\"}},"
                        "\"policyRef\":{\"name\":\"strict\"},\"verification\":{\"httpGet\":"
                        "{\"path\":\"/ready\",\"port\":8080,\"scheme\":\"HTTPS\"},"
                        "\"timeoutSeconds\":30}}}");
  /* A v1alpha1 client reads it, applies its defaults, writes it back. */
  cr_assert(sch_default(podmigration_v1alpha1_spec, json_get_mut(o, "spec")));
  convert(o, G "/v1beta1");
  cr_assert(cJSON_Compare(o, orig, 1), "%s", cJSON_PrintUnformatted(o));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(podmigration, v1alpha1_verification_change_keeps_the_hub_settings)
{
  /* A v1alpha1 user switches the mode; the timeout saved in the annotation still applies. */
  char *s = q(HUB(WITH("'verification':{'mode':'ReadinessProbe','timeoutSeconds':90}")));
  cJSON *o = t_json(s);
  free(s);
  convert(o, G "/v1alpha1");
  cJSON_ReplaceItemInObject(json_get_mut(o, "spec"), "verification", cJSON_CreateString("None"));
  convert(o, G "/v1beta1");
  cr_assert_str_eq(json_get_str(o, "spec.verification.mode"), "None");
  cr_assert_eq(json_get(o, "spec.verification.timeoutSeconds")->valueint, 90);
  cr_assert_null(json_get(o, "metadata.annotations"));
  cJSON_Delete(o);
}

Test(podmigration, conversion_without_a_mode_keeps_the_rest)
{
  char *s = q(HUB(WITH("'verification':{'timeoutSeconds':90}")));
  cJSON *o = t_json(s);
  free(s);
  cJSON *orig = cJSON_Duplicate(o, 1);
  convert(o, G "/v1alpha1");
  cr_assert_null(json_get(o, "spec.verification"));
  convert(o, G "/v1beta1");
  cr_assert(cJSON_Compare(o, orig, 1), "%s", cJSON_PrintUnformatted(o));
  cJSON_Delete(o);
  cJSON_Delete(orig);
}

Test(podmigration, v1alpha1_paths_from_hub_paths)
{
  static const char *const pairs[][2] = {
    { "spec.source", "spec.podName" },
    { "spec.source.podName", "spec.podName" },
    { "spec.destination", "spec.targetNode" },
    { "spec.destination.nodeName", "spec.targetNode" },
    { "spec.destination.nodeSelector", "spec.destination.nodeSelector" },
    { "spec.destination.nodeSelector[zone]", "spec.destination.nodeSelector[zone]" },
    { "spec.strategy.type", "spec.mode" },
    { "spec.strategy.preCopy", "spec.maxPreCopyRounds" },
    { "spec.strategy.preCopy.maxRounds", "spec.maxPreCopyRounds" },
    { "spec.verification.mode", "spec.verification" },
    { "spec.verification.timeoutSeconds", "spec.verification.timeoutSeconds" },
  };
  const struct api_version *v = api_find_version(t_kind(G, K), "v1alpha1");
  for(size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
    char *p = api_path_from_hub(v, pairs[i][0]);
    cr_assert_str_eq(p ? p : pairs[i][0], pairs[i][1], "from %s", pairs[i][0]);
    free(p);
  }
}

/* ---- the tables document themselves ---- */

static void check_descs(const struct sch_field *fields, const char *path)
{
  for(const struct sch_field *f = fields; f && f->name; f++) {
    char p[256];
    path_join(p, sizeof(p), path, f->name);
    cr_assert(f->desc && strlen(f->desc) > 10, "%s has no description", p);
    cr_assert(f->desc[strlen(f->desc) - 1] == '.', "%s: a description is sentences", p);
    if(f->fields && f->fields != sch_condition_fields)
      check_descs(f->fields, p);
  }
}

Test(podmigration, every_field_is_described)
{
  const struct api_kind *k = t_kind(G, K);
  for(size_t i = 0; i < k->nversions; i++) {
    check_descs(k->versions[i].spec, "spec");
    check_descs(k->versions[i].status, "status");
  }
}

static void check_messages(const struct rule *rules)
{
  for(const struct rule *r = rules; r && r->check; r++) {
    cr_assert(r->field && r->msg, "a rule names its field and message");
    size_t n = strlen(r->msg);
    cr_assert(r->msg[0] >= 'a' && r->msg[0] <= 'z', "%s: message starts lower case", r->field);
    cr_assert(r->msg[n - 1] != '.', "%s: message has no final stop", r->field);
  }
}

Test(podmigration, rule_messages_follow_the_style)
{
  const struct api_kind *k = t_kind(G, K);
  check_messages(k->rules);
  check_messages(k->update_rules);
}
