/*
 * PtahResultRecord (ptah.run): the durable result of one operation, written once by the runner
 * Pod that executed it. v1 is the hub; v1alpha1 is flat.
 *
 * Who may write one: the webhook has no API access, so it checks what the request proves. The
 * user must be a service account of the record's namespace, and its token must be a bound one:
 * userInfo.extra carries the Pod's name and uid (authentication.kubernetes.io/pod-name and
 * pod-uid), and the Pod's name must be one the Job controller gives Pods of spec.jobName. The
 * mutating step stamps that identity into spec.writer. The controller later checks the uid and
 * the service account against the Job's actual Pod before it accepts the result.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/ptah_common.h"
#include "json.h"

#define EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"
#define EXTRA_POD_UID "authentication.kubernetes.io/pod-uid"
#define SA_PREFIX "system:serviceaccount:"
/* The Job controller's Pods are generateName "<job>-"; the base is cut to 63 - 5 characters. */
#define GENERATED_BASE_MAX 58

static const char *const owner_kinds[] = { "PtahSchema", "PtahMigration", NULL };
static const char *const outcomes[] = { "Succeeded", "Failed", "Applied", "UpToDate", "Partial",
                                        "Unknown", NULL };
static const char *const read_outcomes[] = { "Succeeded", "Failed", NULL };
static const char *const apply_outcomes[] = { "Applied", "UpToDate", "Partial", "Failed",
                                              "Unknown", NULL };
static const char *const phases[] = { "Pending", "Accepted", "Rejected", NULL };
static const char *const refusals[] = { "ProtectedTableRefused", "PlanStale", NULL };

static const struct sch_field owner_fields[] = {
  { .name = "kind", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = owner_kinds,
    .desc = "PtahSchema or PtahMigration." },
  { .name = "name", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "Its name, in this namespace." },
  { 0 }
};

static const struct sch_field operation_fields[] = {
  { .name = "id", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_label,
    .desc = "The operation id the controller gave the Job." },
  { .name = "type", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = ptah_operation_types,
    .desc = "Plan (PtahSchema only), Apply or Observe." },
  { .name = "attempt", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 1,
    .desc = "Which attempt of the operation wrote the record, from 1." },
  { 0 }
};

static const struct sch_field statement_fields[] = {
  { .name = "sql", .type = SCH_STRING, .flags = SCH_REQUIRED, .max_len = 1048576,
    .desc = "The statement, schema-qualified, without a final semicolon." },
  { .name = "label", .type = SCH_STRING, .max_len = 1024,
    .desc = "What it does, for people (\"add column public.orders.note\")." },
  { .name = "destructive", .type = SCH_BOOL,
    .desc = "Whether it loses data or a definition the plan does not re-create, or rewrites." },
  { .name = "ownTransaction", .type = SCH_BOOL,
    .desc = "Whether an Apply commits it on its own before the plan's transaction (an enum "
            "value added)." },
  { .name = "table", .type = SCH_STRING, .max_len = 256,
    .desc = "The table (\"schema.table\") it creates, alters, drops or rebuilds, counting its "
            "columns, constraints, indexes and comments; absent for none." },
  { 0 }
};

static const struct sch_field plan_fields[] = {
  { .name = "fingerprint", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The fingerprint of the target's catalog the plan was computed against." },
  { .name = "desiredChecksum", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The sha256 of the desired schema's SQL." },
  { .name = "statementCount", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many statements the plan holds." },
  { .name = "destructiveCount", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many of them are destructive." },
  { .name = "summary", .type = SCH_STRING, .max_len = 65536,
    .desc = "The statements' labels, for people." },
  { .name = "statements", .type = SCH_ARRAY, .item = SCH_OBJECT, .fields = statement_fields,
    .desc = "The statements, in order; left out when the record would exceed 1 MiB." },
  { .name = "statementsOmitted", .type = SCH_BOOL,
    .desc = "True when statements were left out to keep the record within 1 MiB." },
  { 0 }
};

static const struct sch_field result_fields[] = {
  { .name = "outcome", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = outcomes,
    .desc = "Plan and Observe: Succeeded or Failed. Apply: Applied, UpToDate, Partial, Failed or "
            "Unknown (the runner cannot tell whether its changes committed)." },
  { .name = "message", .type = SCH_STRING, .max_len = 32768,
    .desc = "What the operation reports, in full; Events carry a bounded copy." },
  { .name = "planDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "For a PtahSchema: the digest of the plan a Plan computed or an Apply applied." },
  { .name = "fromVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "For a PtahMigration: the database's version before the operation." },
  { .name = "toVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "For a PtahMigration: the database's version after it." },
  { .name = "startedAt", .type = SCH_TIME, .desc = "When the operation started." },
  { .name = "finishedAt", .type = SCH_TIME, .desc = "When it finished." },
  { .name = "lockContinuous", .type = SCH_BOOL,
    .desc = "Whether the runner held the database lock without interruption for the whole "
            "operation. Absent or false: the result is discarded (LeaseContinuityLost)." },
  { .name = "refusal", .type = SCH_STRING, .enums = refusals,
    .desc = "For a PtahSchema: why the plan was refused, with outcome Failed: "
            "ProtectedTableRefused (a statement changes a protected table) or PlanStale (an "
            "Apply found a plan other than the approved one)." },
  { .name = "plan", .type = SCH_OBJECT, .fields = plan_fields,
    .desc = "For a PtahSchema: the plan the operation computed (a refused one too)." },
  { 0 }
};

static const struct sch_field writer_fields[] = {
  { .name = "serviceAccount", .type = SCH_STRING, .format = &fmt_username,
    .desc = "The service account user that wrote the record." },
  { .name = "podName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The Pod its bound token belongs to." },
  { .name = "podUID", .type = SCH_STRING, .max_len = 64, .desc = "That Pod's uid." },
  { 0 }
};

static const struct sch_field v1_spec[] = {
  { .name = "ownerRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = owner_fields,
    .desc = "The resource whose operation this is." },
  { .name = "operation", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = operation_fields,
    .desc = "The operation the result is for." },
  { .name = "jobName", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "The runner Job that executed it; metadata.name must be the same, so each Job has "
            "at most one record." },
  { .name = "result", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = result_fields,
    .desc = "What the operation did." },
  { .name = "writer", .type = SCH_OBJECT, .fields = writer_fields,
    .desc = "Who wrote the record. Leave it empty: the webhook fills it in from the runner "
            "Pod's bound service-account token and refuses any other value." },
  { 0 }
};

static const struct sch_field status_fields[] = {
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "phase", .type = SCH_STRING, .enums = phases,
    .desc = "Pending, Accepted (the controller matched the writer to the Job's Pod and used the "
            "result) or Rejected (it did not match)." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." },
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "ownerKind", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = owner_kinds,
    .desc = "PtahSchema or PtahMigration (v1: spec.ownerRef.kind)." },
  { .name = "ownerName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain, .desc = "The owner's name (v1: spec.ownerRef.name)." },
  { .name = "operationId", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_label, .desc = "The operation id (v1: spec.operation.id)." },
  { .name = "operationType", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .enums = ptah_operation_types, .desc = "Plan, Apply or Observe (v1: spec.operation.type)." },
  { .name = "jobName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain, .desc = "The runner Job; also the record's name." },
  { .name = "outcome", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = outcomes,
    .desc = "The outcome (v1: spec.result.outcome)." },
  { .name = "message", .type = SCH_STRING, .max_len = 32768,
    .desc = "What the operation reports (v1: spec.result.message)." },
  { .name = "planDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The plan computed or applied (v1: spec.result.planDigest)." },
  { .name = "serviceAccount", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who wrote it; filled in by the webhook (v1: spec.writer.serviceAccount)." },
  { .name = "podName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The writing Pod; filled in by the webhook (v1: spec.writer.podName)." },
  { .name = "podUID", .type = SCH_STRING, .max_len = 64,
    .desc = "The writing Pod's uid; filled in by the webhook (v1: spec.writer.podUID)." },
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.ownerKind", "spec.ownerRef.kind" },
  { "spec.ownerName", "spec.ownerRef.name" },
  { "spec.operationId", "spec.operation.id" },
  { "spec.operationType", "spec.operation.type" },
  { "spec.outcome", "spec.result.outcome" },
  { "spec.message", "spec.result.message" },
  { "spec.planDigest", "spec.result.planDigest" },
  { "spec.serviceAccount", "spec.writer.serviceAccount" },
  { "spec.podName", "spec.writer.podName" },
  { "spec.podUID", "spec.writer.podUID" },
  { NULL, NULL }
};

static const struct conv_move v1alpha1_aliases[] = {
  { "spec.ownerName", "spec.ownerRef" },
  { "spec.operationId", "spec.operation" },
  { PTAH_V1_FIELDS, "spec.operation.attempt" },
  { PTAH_V1_FIELDS, "spec.result.refusal" },
  { PTAH_V1_FIELDS, "spec.result.plan" },
  { "spec.outcome", "spec.result" },
  { "spec.serviceAccount", "spec.writer" },
  { NULL, NULL }
};

/* The single value of a userInfo.extra entry, or NULL when absent, empty or ambiguous. */
static const char *extra_one(const struct api_ctx *c, const char *key)
{
  if(!c->user || !cJSON_IsObject(c->user->extra))
    return NULL;
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(c->user->extra, key);
  if(!cJSON_IsArray(l) || cJSON_GetArraySize(l) != 1 || !cJSON_IsString(l->child) ||
     !*l->child->valuestring)
    return NULL;
  return l->child->valuestring;
}

/* The namespace of a "system:serviceaccount:<namespace>:<name>" user (length in *n), or NULL. */
static const char *sa_namespace(const char *user, size_t *n)
{
  if(!user || strncmp(user, SA_PREFIX, strlen(SA_PREFIX)))
    return NULL;
  const char *ns = user + strlen(SA_PREFIX), *colon = strchr(ns, ':');
  if(!colon || colon == ns || !colon[1] || strchr(colon + 1, ':'))
    return NULL;
  *n = (size_t)(colon - ns);
  return ns;
}

/* The authenticated user is a service account of the record's namespace. */
static bool writer_is_local_sa(const struct api_ctx *c)
{
  size_t n;
  const char *ns = sa_namespace(ptah_user(c), &n);
  const char *own = json_get_str(c->obj, "metadata.namespace");
  return ns && own && strlen(own) == n && !strncmp(ns, own, n);
}

/* Whether pod is a name the Job controller gives a Pod of job: "<job>-" (cut to 58 characters)
 * and a generated suffix of lower-case letters and digits. */
static bool pod_of_job(const char *pod, const char *job)
{
  char base[256];
  snprintf(base, sizeof(base), "%s-", job);
  size_t n = strlen(base);
  if(n > GENERATED_BASE_MAX)
    n = GENERATED_BASE_MAX;
  if(strncmp(pod, base, n) || !pod[n])
    return false;
  for(const char *p = pod + n; *p; p++)
    if(!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
      return false;
  return true;
}

static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  size_t n;
  const char *user = ptah_user(c);
  gw_rc rc = ptah_stamp(c, obj, "spec.writer.serviceAccount",
                        sa_namespace(user, &n) ? user : NULL);
  if(!rc)
    rc = ptah_stamp(c, obj, "spec.writer.podName", extra_one(c, EXTRA_POD_NAME));
  if(!rc)
    rc = ptah_stamp(c, obj, "spec.writer.podUID", extra_one(c, EXTRA_POD_UID));
  return rc;
}

static void check_name(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *name = json_get_str(c->obj, "metadata.name");
  const char *job = json_get_str(c->obj, "spec.jobName");
  if(c->op == API_CREATE && job && (!name || strcmp(name, job)))
    rule_failf(e, r, NULL, "must be the record's Job name \"%s\": %s", job, r->msg);
}

static void check_type_owner(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *kind = json_get_str(c->obj, "spec.ownerRef.kind");
  const char *type = json_get_str(c->obj, r->field);
  if(kind && type && !strcmp(kind, "PtahMigration") && !strcmp(type, "Plan"))
    rule_fail(e, r);
}

static bool in(const char *const *list, const char *s)
{
  for(; *list; list++)
    if(!strcmp(*list, s))
      return true;
  return false;
}

static void check_outcome_type(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *type = json_get_str(c->obj, "spec.operation.type");
  const char *outcome = json_get_str(c->obj, r->field);
  if(!type || !outcome)
    return;
  bool apply = !strcmp(type, "Apply");
  if(!in(apply ? apply_outcomes : read_outcomes, outcome))
    rule_failf(e, r, NULL, "must be %s for %s %s operation, got \"%s\"",
               apply ? "Applied, UpToDate, Partial, Failed or Unknown" : "Succeeded or Failed",
               apply ? "an" : "a", type, outcome);
}

static void check_plan_digest(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *kind = json_get_str(c->obj, "spec.ownerRef.kind");
  const char *type = json_get_str(c->obj, "spec.operation.type");
  const char *outcome = json_get_str(c->obj, "spec.result.outcome");
  if(!kind || !type || strcmp(kind, "PtahSchema") || json_get(c->obj, r->field))
    return;
  if(!strcmp(type, "Apply") || (!strcmp(type, "Plan") && outcome && !strcmp(outcome, "Succeeded")))
    rule_fail(e, r);
}

static void check_writer_is_sa(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *user = ptah_user(c);
  if(c->op != API_CREATE || !user)
    return;
  const char *own = json_get_str(c->obj, "metadata.namespace");
  size_t n;
  const char *ns = sa_namespace(user, &n);
  if(!own)
    ferrs_add(e, FERR_REQUIRED, "metadata.namespace",
              "is required: a result record belongs to the namespace of its runner's service "
              "account");
  else if(!ns)
    rule_failf(e, r, NULL, "user \"%s\" is not a service account: %s", user, r->msg);
  else if(!writer_is_local_sa(c))
    rule_failf(e, r, NULL, "service account \"%s\" is not of this record's namespace \"%s\": %s",
               user, own, r->msg);
}

/* A stamped writer field is missing: the mutating webhook did not run. Not reported when the
 * identity it would come from is itself refused. */
static void check_writer_stamped(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->op != API_CREATE || json_get_str(c->obj, r->field))
    return;
  bool source = true;
  if(ptah_user(c)) {
    if(!strcmp(r->field, "spec.writer.serviceAccount"))
      source = writer_is_local_sa(c);
    else
      source = extra_one(c, !strcmp(r->field, "spec.writer.podName") ? EXTRA_POD_NAME
                                                                      : EXTRA_POD_UID) != NULL;
  }
  if(source)
    rule_fail(e, r);
}

/* The request carries the bound token's Pod claim named by the row's field. */
static void check_bound(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  bool name = !strcmp(r->field, "spec.writer.podName");
  if(c->op == API_CREATE && ptah_user(c) && !extra_one(c, name ? EXTRA_POD_NAME : EXTRA_POD_UID))
    rule_failf(e, r, NULL, "the request carries no Pod %s (userInfo.extra \"%s\"): %s",
               name ? "name" : "uid", name ? EXTRA_POD_NAME : EXTRA_POD_UID, r->msg);
}

/* The writer field equals what the request proves (user, Pod name, Pod uid). */
static void check_writer_forged(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *v = json_get_str(c->obj, r->field);
  const char *want;
  if(!strcmp(r->field, "spec.writer.serviceAccount"))
    want = writer_is_local_sa(c) ? ptah_user(c) : NULL; /* else refused as not a runner */
  else
    want = extra_one(c, !strcmp(r->field, "spec.writer.podName") ? EXTRA_POD_NAME
                                                                  : EXTRA_POD_UID);
  if(c->op == API_CREATE && v && want && strcmp(v, want))
    rule_failf(e, r, NULL, "must be \"%s\", as the request's credentials say, got \"%.200s\": %s",
               want, v, r->msg);
}

static void check_pod_in_job(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *pod = extra_one(c, EXTRA_POD_NAME);
  const char *job = json_get_str(c->obj, r->field);
  if(c->op == API_CREATE && pod && job && !pod_of_job(pod, job))
    rule_failf(e, r, NULL, "names Job \"%s\", but the writing Pod \"%s\" is not one of its Pods "
               "(they are named \"%s-<suffix>\"): %s", job, pod, job, r->msg);
}

#define NOT_STAMPED                                                                              \
  "was not filled in: godwit's mutating webhook sets spec.writer from the request; check that " \
  "the godwit MutatingWebhookConfiguration is installed and covers ptahresultrecords"
#define BOUND_TOKEN                                                                              \
  "deliver results with the runner Pod's own bound service-account token (the projected "      \
  "token Kubernetes mounts), not a long-lived or copied token"
#define LEAVE_EMPTY "leave spec.writer empty and the webhook fills it in"

static const struct rule rules[] = {
  { "metadata.name", FERR_INVALID, check_name,
    "one record per Job, so a runner that retries its delivery finds the record it wrote" },
  { "spec.operation.type", FERR_INVALID, check_type_owner,
    "must not be Plan for a PtahMigration: migrations run Observe and Apply operations only" },
  { "spec.result.outcome", FERR_NOT_SUPPORTED, check_outcome_type,
    "Plan and Observe end Succeeded or Failed; Apply ends Applied, UpToDate, Partial, Failed or "
    "Unknown" },
  { "spec.result.planDigest", FERR_REQUIRED, check_plan_digest,
    "is required for a PtahSchema's successful Plan (the plan it computed) and its Apply (the "
    "plan it applied)" },
  { "spec.writer.serviceAccount", FERR_FORBIDDEN, check_writer_is_sa,
    "result records are written by runner Pods with their service account; people and other "
    "namespaces cannot write them" },
  { "spec.writer.serviceAccount", FERR_REQUIRED, check_writer_stamped, NOT_STAMPED },
  { "spec.writer.serviceAccount", FERR_FORBIDDEN, check_writer_forged, LEAVE_EMPTY },
  { "spec.writer.podName", FERR_FORBIDDEN, check_bound, BOUND_TOKEN },
  { "spec.writer.podName", FERR_REQUIRED, check_writer_stamped, NOT_STAMPED },
  { "spec.writer.podName", FERR_FORBIDDEN, check_writer_forged, LEAVE_EMPTY },
  { "spec.writer.podUID", FERR_FORBIDDEN, check_bound, BOUND_TOKEN },
  { "spec.writer.podUID", FERR_REQUIRED, check_writer_stamped, NOT_STAMPED },
  { "spec.writer.podUID", FERR_FORBIDDEN, check_writer_forged, LEAVE_EMPTY },
  { "spec.jobName", FERR_FORBIDDEN, check_pod_in_job,
    "a runner writes only its own operation's record" },
  { 0 }
};

static const struct rule update_rules[] = {
  { "spec", FERR_FORBIDDEN, api_check_immutable,
    "is immutable: a result record is the durable receipt of one operation; a new attempt runs "
    "in a new Job and writes its own record" },
  { 0 }
};

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = status_fields, .moves = v1alpha1_moves,
    .path_aliases = v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = status_fields },
};

static const struct printer_column columns[] = {
  { "Owner-Kind", "string", ".spec.ownerRef.kind", "PtahSchema or PtahMigration", 0 },
  { "Owner", "string", ".spec.ownerRef.name", "The resource the operation was for", 0 },
  { "Operation", "string", ".spec.operation.id", "The operation id", 0 },
  { "Type", "string", ".spec.operation.type", "Plan, Apply or Observe", 0 },
  { "Outcome", "string", ".spec.result.outcome", "What the operation did", 0 },
  { "Writer", "string", ".spec.writer.podName", "The Pod that wrote the record", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "ptahresult", NULL };
static const char *const categories[] = { "ptah", NULL };

const struct api_kind api_ptahresultrecord = {
  .group = PTAH_GROUP,
  .kind = "PtahResultRecord",
  .plural = "ptahresultrecords",
  .singular = "ptahresultrecord",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PtahResultRecord is the durable result of one Ptah operation, written once by the "
          "runner Pod that executed it and read by the controller. Only that Pod's bound "
          "service-account token can write it, and nobody can change it.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
};
