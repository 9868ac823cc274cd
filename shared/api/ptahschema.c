/*
 * PtahSchema (ptah.run): the desired schema of one PostgreSQL database. The controller turns it
 * into an immutable plan, waits for an approval when spec.policy.approval is Required, and
 * applies the plan in a runner Job. v1 is the hub; v1alpha1 is flat.
 *
 * The mutating step records who wrote every spec in the ptah.run/spec-author annotation: the
 * controller copies it into status.plan.author, and an approval by that user is self-approval.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/ptah_common.h"
#include "json.h"

static const char *const approvals[] = { "Required", "Automatic", NULL };
static const char *const phases[] = { "Pending",  "Planning", "AwaitingApproval", "Applying",
                                      "Observing", "Ready",   "Blocked",          "Failed",
                                      NULL };

#define SQL_MAX (256 * 1024)
#define PROTECTED_DESC                                                                           \
  "Tables no plan may change, as \"schema.table\" exactly as the catalog stores them. A plan "  \
  "that would alter, drop or rewrite one is refused (ProtectedTableRefused), approved or not."

static const struct sch_field config_map_ref_fields[] = {
  { .name = "name", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the ConfigMap, in this namespace." },
  { .name = "key", .type = SCH_STRING, .format = &fmt_secret_key, .dflt = "\"schema.sql\"",
    .desc = "Key of the ConfigMap whose value is the desired schema as SQL." },
  { 0 }
};

static const struct sch_field source_fields[] = {
  { .name = "sql", .type = SCH_STRING, .max_len = SQL_MAX,
    .desc = "The whole desired schema as SQL DDL (CREATE TABLE, CREATE INDEX, ...), at most "
            "256 KiB; Ptah computes the changes that take the database there. Exactly one of "
            "sql and configMapRef." },
  { .name = "configMapRef", .type = SCH_OBJECT, .fields = config_map_ref_fields,
    .desc = "A ConfigMap key holding the desired schema as SQL, for schemas kept with the "
            "application's manifests or larger than sql allows. Exactly one of sql and "
            "configMapRef." },
  { 0 }
};

static const struct sch_field policy_fields[] = {
  { .name = "protectedTables", .type = SCH_ARRAY, .item = SCH_STRING, .format = &fmt_pg_qualified,
    .flags = SCH_UNIQUE, .max_items = 256, .desc = PROTECTED_DESC },
  { .name = "approval", .type = SCH_STRING, .enums = approvals, .dflt = "\"Required\"",
    .desc = "Required: a person approves each plan with a PtahSchemaApproval naming its digest "
            "before it is applied. Automatic: plans are applied as soon as they are computed." },
  { 0 }
};

static const struct sch_field verification_fields[] = {
  { .name = "sourceDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "Pins the desired schema: its SQL must hash to this sha256 (sha256sum of the "
            "file), or nothing is planned from it (ArtifactVerificationRefused). The admission "
            "policy can require a pin (ptah.requireSourceDigest)." },
  { .name = "allowDestructive", .type = SCH_BOOL, .dflt = "false",
    .desc = "Whether a plan may hold destructive statements (drops, rewrites, narrowing type "
            "changes: marked [destructive] in the plan). false (the default): such a plan is "
            "not published (ArtifactVerificationRefused). The admission policy can forbid them "
            "whatever this says (ptah.allowDestructive)." },
  { 0 }
};

static const struct sch_field v1_spec[] = {
  { .name = "database", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = ptah_database_fields,
    .desc = "The database whose schema this resource manages. Immutable: create a new "
            "PtahSchema for another database." },
  { .name = "schema", .type = SCH_OBJECT, .fields = source_fields,
    .desc = "Where the desired schema is: inline SQL or a ConfigMap key (required). Changing "
            "it (or the ConfigMap) produces a new plan." },
  { .name = "policy", .type = SCH_OBJECT, .fields = policy_fields, .dflt = "{}",
    .desc = "What may be changed and who must agree: protected tables and the approval mode." },
  { .name = "execution", .type = SCH_OBJECT, .fields = ptah_execution_fields,
    .desc = "How runner Pods are made: image, extra Pod metadata, service account." },
  { .name = "verification", .type = SCH_OBJECT, .fields = verification_fields, .dflt = "{}",
    .desc = "What the desired schema and its plans are verified against before a plan is "
            "published, with the admission policy's ptah section: a pinned digest of the "
            "schema source, and whether destructive statements are allowed." },
  { 0 }
};

static const struct sch_field plan_fields[] = {
  { .name = "digest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The digest of the current plan; an approval names it in spec.planDigest." },
  { .name = "author", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who wrote the spec the plan was computed from (the ptah.run/spec-author "
            "annotation); an approval by this user is self-approval." },
  { .name = "computedAt", .type = SCH_TIME, .desc = "When the plan was computed." },
  { .name = "generation", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the plan was computed from." },
  { .name = "summary", .type = SCH_STRING, .max_len = 1024,
    .desc = "A short description of the plan's changes, for people; the plan itself is in the "
            "Plan operation's result record." },
  { .name = "shortDigest", .type = SCH_STRING, .max_len = 16,
    .desc = "The digest's first 12 hex digits, for kubectl get." },
  { .name = "record", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The PtahResultRecord holding the whole plan (spec.result.plan.statements): "
            "kubectl get ptahresultrecord <record> -o yaml." },
  { .name = "fingerprint", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The target catalog's fingerprint the plan was computed against; an Apply refuses "
            "a catalog that moved since (PlanStale)." },
  { .name = "desiredChecksum", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The sha256 of the desired SQL the plan was computed from." },
  { .name = "binding", .type = SCH_STRING, .max_len = 640,
    .desc = "The execution binding (runner image, protocol, controller-state version) the plan "
            "was computed under and hashed into its digest." },
  { .name = "inputs", .type = SCH_STRING, .max_len = 80,
    .desc = "The digest of what the plan was computed from (desired SQL, binding, protected "
            "tables, generation): another value computes a new plan." },
  { .name = "statements", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many statements the plan has; 0: the database matches the desired schema." },
  { .name = "destructive", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many of them lose data or a definition (marked [destructive] in the summary)." },
  { .name = "applyAttempts", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Applies of this plan whose outcome an observation had to establish." },
  { .name = "verification", .type = SCH_STRING, .max_len = 80,
    .desc = "The digest of the verification policy (spec.verification and the admission "
            "policy's ptah section) the plan was verified against; when it changes, the plan is "
            "verified again (VerificationPolicyInvalidated when it no longer passes)." },
  { 0 }
};

static const struct sch_field applied_fields[] = {
  { .name = "planDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The plan the database was last brought to (or found at)." },
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation that established it." },
  { .name = "at", .type = SCH_TIME, .desc = "When." },
  { 0 }
};

static const struct sch_field refused_fields[] = {
  { .name = "inputs", .type = SCH_STRING, .max_len = 80,
    .desc = "The inputs (as plan.inputs) whose plan was refused or failed: nothing is planned "
            "again until they change." },
  { .name = "reason", .type = SCH_STRING, .max_len = 64,
    .desc = "ProtectedTableRefused, ArtifactVerificationRefused, PlanFailed or ApplyFailed." },
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation that was refused or failed." },
  { .name = "verification", .type = SCH_STRING, .max_len = 80,
    .desc = "For a verification refusal: the verification policy's digest it was refused "
            "under; another policy judges the inputs again." },
  { .name = "attempts", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "PlanFailed: how many plans of these inputs failed in a row." },
  { .name = "retryAfter", .type = SCH_TIME,
    .desc = "PlanFailed: when the plan is computed again (the failure interval, doubling, at "
            "most 10 minutes)." },
  { 0 }
};

static const struct sch_field approval_status_fields[] = {
  { .name = "name", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The PtahSchemaApproval accepted for the current plan." },
  { .name = "approver", .type = SCH_STRING, .format = &fmt_username, .desc = "Who approved." },
  { .name = "planDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The plan the approval was accepted for." },
  { .name = "acceptedAt", .type = SCH_TIME, .desc = "When the approval was accepted." },
  { 0 }
};

static const struct sch_field last_result_fields[] = {
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation id." },
  { .name = "type", .type = SCH_STRING, .enums = ptah_operation_types,
    .desc = "Plan, Apply or Observe." },
  { .name = "outcome", .type = SCH_STRING, .max_len = 64,
    .desc = "The outcome its result record carried (spec.result.outcome)." },
  { .name = "finishedAt", .type = SCH_TIME, .desc = "When the result was accepted." },
  { .name = "message", .type = SCH_STRING, .max_len = 32768,
    .desc = "What the operation reported, in full (Events carry a bounded copy)." },
  { 0 }
};

#define COMMON_STATUS                                                                            \
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,              \
    .desc = "The metadata.generation the controller last acted on." },                          \
  { .name = "phase", .type = SCH_STRING, .enums = phases,                                       \
    .desc = "Where the schema is: Pending, Planning, AwaitingApproval, Applying, Observing, "   \
            "Ready, Blocked (refused to proceed: protected table, failed verification) or "    \
            "Failed. Match on conditions, not on the phase." },                                 \
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,       \
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." }

static const struct sch_field v1_status[] = {
  COMMON_STATUS,
  { .name = "plan", .type = SCH_OBJECT, .fields = plan_fields,
    .desc = "The current immutable plan." },
  { .name = "approval", .type = SCH_OBJECT, .fields = approval_status_fields,
    .desc = "The approval accepted for the current plan, if any." },
  { .name = "operation", .type = SCH_OBJECT, .fields = ptah_operation_fields,
    .desc = "The operation in flight, if any." },
  { .name = "lastResult", .type = SCH_OBJECT, .fields = last_result_fields,
    .desc = "The last operation whose result was accepted." },
  { .name = "operationCount", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many operations were claimed; the next id ends in this number plus one." },
  { .name = "applied", .type = SCH_OBJECT, .fields = applied_fields,
    .desc = "The plan the database was last brought to." },
  { .name = "refused", .type = SCH_OBJECT, .fields = refused_fields,
    .desc = "The inputs whose plan was refused or whose Apply failed, until they change." },
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "secretName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "The Secret holding the connection URI under key \"uri\" (v1: "
            "spec.database.connectionSecretRef). Immutable." },
  { .name = "sql", .type = SCH_STRING, .max_len = SQL_MAX,
    .desc = "The desired schema as SQL (v1: spec.schema.sql). Exactly one of sql and "
            "configMap." },
  { .name = "configMap", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "A ConfigMap holding the desired schema under key \"schema.sql\" (v1: "
            "spec.schema.configMapRef)." },
  { .name = "protectedTables", .type = SCH_ARRAY, .item = SCH_STRING,
    .format = &fmt_pg_qualified, .flags = SCH_UNIQUE, .max_items = 256,
    .desc = PROTECTED_DESC " (v1: spec.policy.protectedTables)" },
  { .name = "requireApproval", .type = SCH_BOOL, .dflt = "true",
    .desc = "Whether each plan waits for a PtahSchemaApproval (v1: spec.policy.approval, true "
            "is Required, false is Automatic)." },
  { .name = "runnerImage", .type = SCH_STRING, .format = &fmt_image,
    .desc = "The Ptah runner image (v1: spec.execution.runnerImage)." },
  { .name = "podLabels", .type = SCH_MAP, .item = SCH_STRING, .key_format = &fmt_qualified_name,
    .format = &fmt_label_value, .max_items = 64,
    .desc = "Labels for runner Pods (v1: spec.execution.podMetadata.labels)." },
  { .name = "podAnnotations", .type = SCH_MAP, .item = SCH_STRING,
    .key_format = &fmt_qualified_name, .max_items = 64,
    .desc = "Annotations for runner Pods (v1: spec.execution.podMetadata.annotations)." },
  { .name = "serviceAccountName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The runner Pods' service account (v1: spec.execution.serviceAccountName)." },
  { 0 }
};

static const struct sch_field v1alpha1_status[] = {
  COMMON_STATUS,
  { .name = "planDigest", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "The digest of the current plan (v1: status.plan.digest)." },
  { .name = "planAuthor", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who wrote the planned spec (v1: status.plan.author)." },
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.secretName", "spec.database.connectionSecretRef.name" },
  { "spec.sql", "spec.schema.sql" },
  { "spec.configMap", "spec.schema.configMapRef.name" },
  { "spec.protectedTables", "spec.policy.protectedTables" },
  { "spec.runnerImage", "spec.execution.runnerImage" },
  { "spec.podLabels", "spec.execution.podMetadata.labels" },
  { "spec.podAnnotations", "spec.execution.podMetadata.annotations" },
  { "spec.serviceAccountName", "spec.execution.serviceAccountName" },
  { "status.planDigest", "status.plan.digest" },
  { "status.planAuthor", "status.plan.author" },
  { NULL, NULL }
};

/* Errors on v1 paths the renames do not cover, as v1alpha1 users wrote them. */
static const struct conv_move v1alpha1_aliases[] = {
  { "spec.secretName", "spec.database" },
  { PTAH_V1_FIELDS, "spec.database.connectionSecretRef.key" },
  { "spec.sql", "spec.schema" },
  { PTAH_V1_FIELDS, "spec.schema.configMapRef.key" },
  { "spec.requireApproval", "spec.policy.approval" },
  { NULL, NULL }
};

static gw_rc v1alpha1_to_hub(cJSON *obj)
{
  return ptah_bool_to_enum(obj, "spec.requireApproval", "spec.policy.approval", "Required",
                           "Automatic");
}

static gw_rc v1alpha1_from_hub(cJSON *obj)
{
  return ptah_enum_to_bool(obj, "spec.policy.approval", "spec.requireApproval", "Required",
                           "Automatic");
}

/* The spec-author annotation of obj, or NULL. */
static const cJSON *author_of(const cJSON *obj)
{
  const cJSON *a = json_get(obj, "metadata.annotations");
  return cJSON_IsObject(a) ? cJSON_GetObjectItemCaseSensitive(a, PTAH_SPEC_AUTHOR_ANNOTATION)
                           : NULL;
}

static gw_rc set_author(cJSON *obj, const char *user)
{
  cJSON *meta = json_get_mut(obj, "metadata");
  if(!meta)
    meta = cJSON_AddObjectToObject(obj, "metadata");
  cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
  if(!ann)
    ann = cJSON_AddObjectToObject(meta, "annotations");
  if(!cJSON_IsObject(ann))
    return ann ? GW_EINVAL : GW_ENOMEM;
  cJSON_DeleteItemFromObjectCaseSensitive(ann, PTAH_SPEC_AUTHOR_ANNOTATION);
  return cJSON_AddStringToObject(ann, PTAH_SPEC_AUTHOR_ANNOTATION, user) ? GW_OK : GW_ENOMEM;
}

/*
 * A spec change is stamped with its author: a missing annotation, or the one carried over from
 * the stored object, becomes the user. A value the user wrote is left for validation to judge.
 * Without a spec change a dropped annotation comes back from the stored object.
 */
static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  const char *user = ptah_user(c);
  const cJSON *cur = author_of(obj);
  const char *old = cJSON_GetStringValue(author_of(c->old));
  if(ptah_spec_changed(c)) {
    bool carried = cJSON_IsString(cur) && old && !strcmp(cur->valuestring, old);
    if(user && (!cur || carried))
      return set_author(obj, user);
  } else if(!cur && old)
    return set_author(obj, old);
  return GW_OK;
}

static void check_source_missing(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *s = json_get(c->obj, "spec.schema");
  if(!json_get(s, "sql") && !json_get(s, "configMapRef"))
    rule_fail(e, r);
}

static void check_source_both(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *s = json_get(c->obj, "spec.schema");
  if(json_get(s, "sql") && json_get(s, "configMapRef"))
    rule_fail(e, r);
}

static void check_sql_blank(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *sql = json_get_str(c->obj, r->field);
  if(sql && !sql[strspn(sql, " \t\r\n")])
    rule_fail(e, r);
}

static void check_protected_qualified(const struct api_ctx *c, const struct rule *r,
                                      struct ferrs *e)
{
  const cJSON *t;
  int i = 0;
  cJSON_ArrayForEach(t, json_get(c->obj, "spec.policy.protectedTables"))
  {
    char field[96];
    snprintf(field, sizeof(field), "spec.policy.protectedTables[%d]", i++);
    if(cJSON_IsString(t) && !strchr(t->valuestring, '.'))
      rule_failf(e, r, field, "\"%.80s\" %s", t->valuestring, r->msg);
  }
}

static void check_source_pinned(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->policy && c->policy->ptah_require_source_digest && !api_unchanged(c, "spec.verification") &&
     !json_get_str(c->obj, "spec.verification.sourceDigest"))
    rule_fail(e, r);
}

static void check_author_missing(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(ptah_user(c) && ptah_spec_changed(c) && !author_of(c->obj))
    rule_fail(e, r);
}

static void check_author_forged(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *user = ptah_user(c);
  const cJSON *a = author_of(c->obj);
  if(!user || !a || !ptah_spec_changed(c))
    return;
  if(!cJSON_IsString(a) || strcmp(a->valuestring, user)) {
    char *got = json_preview(a, 80);
    rule_failf(e, r, NULL, "must be the user making this spec change (\"%s\"), got %s: %s", user,
               got ? got : "?", r->msg);
    free(got);
  }
}

static void check_author_kept(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!ptah_spec_changed(c) && !json_equal_opt(author_of(c->old), author_of(c->obj))) {
    const char *old = cJSON_GetStringValue(author_of(c->old));
    if(old)
      rule_failf(e, r, NULL, "%s (\"%s\")", r->msg, old);
    else
      rule_fail(e, r);
  }
}

static const struct rule rules[] = {
  { "spec.schema", FERR_REQUIRED, check_source_missing,
    "must say where the desired schema is: set sql (inline SQL) or configMapRef (v1alpha1: "
    "configMap)" },
  { "spec.schema", FERR_INVALID, check_source_both,
    "must set exactly one of sql and configMapRef (v1alpha1: configMap), not both: the desired "
    "schema has a single source" },
  { "spec.schema.sql", FERR_REQUIRED, check_sql_blank,
    "must not be empty: declare the whole desired schema, or use configMapRef" },
  { "spec.policy.protectedTables[*]", FERR_INVALID, check_protected_qualified,
    "must name its schema too, as in \"public.users\": an unqualified name is ambiguous under "
    "search_path" },
  { "spec.execution.runnerImage", FERR_FORBIDDEN, ptah_check_runner_image,
    "must come from a registry the admission policy allows (images.allowedRegistries)",
    .policy = true },
  { "spec.execution.podMetadata", FERR_FORBIDDEN, ptah_check_pod_metadata,
    "labels and annotations must be valid, must not use a reserved prefix (ptah.run/, "
    "operator.ptah.run/, kubernetes.io/, k8s.io/, godwit.dev/ or a subdomain of them) and must "
    "pass the admission policy's podMetadata rules" },
  { "spec.verification.sourceDigest", FERR_FORBIDDEN, check_source_pinned,
    "is required by the admission policy (ptah.requireSourceDigest): pin the desired schema "
    "with its sha256 (sha256sum of the SQL, as \"sha256:<64 hex digits>\")", .policy = true },
  { PTAH_SPEC_AUTHOR_FIELD, FERR_REQUIRED, check_author_missing,
    "was not recorded: godwit's mutating webhook stamps the author of every spec change; check "
    "that the godwit MutatingWebhookConfiguration is installed and covers ptahschemas" },
  { PTAH_SPEC_AUTHOR_FIELD, FERR_FORBIDDEN, check_author_forged,
    "remove the annotation and the webhook records you as the author" },
  { 0 }
};

static const struct rule update_rules[] = {
  { "spec.database", FERR_INVALID, api_check_immutable,
    "is immutable: a PtahSchema manages the database it was created for; create a new "
    "PtahSchema to manage another database" },
  { PTAH_SPEC_AUTHOR_FIELD, FERR_FORBIDDEN, check_author_kept,
    "cannot change without a spec change: it records who wrote the current spec" },
  { 0 }
};

static bool listed(const cJSON *arr, const char *s)
{
  const cJSON *t;
  cJSON_ArrayForEach(t, arr)
  {
    if(cJSON_IsString(t) && !strcmp(t->valuestring, s))
      return true;
  }
  return false;
}

/* Warnings come when a setting is made (CREATE, or an UPDATE that changes it), not on every
 * later update. */
static void warn(const struct api_ctx *c, struct strlist *w)
{
  const char *approval = json_get_str(c->obj, "spec.policy.approval");
  if(approval && !strcmp(approval, "Automatic") && !api_unchanged(c, "spec.policy.approval"))
    strlist_addf(w, "approval is Automatic (v1alpha1: requireApproval false): every plan, "
                    "destructive ones included, is applied without a person's approval; "
                    "protectedTables still fence their tables");
  const cJSON *tables = json_get(c->obj, "spec.policy.protectedTables");
  const cJSON *old_tables = json_get(c->old, "spec.policy.protectedTables");
  const cJSON *t;
  cJSON_ArrayForEach(t, tables)
  {
    if(!cJSON_IsString(t) || listed(old_tables, t->valuestring))
      continue;
    for(const char *p = t->valuestring; *p; p++)
      if(*p >= 'A' && *p <= 'Z') {
        strlist_addf(w, "protectedTables: \"%.80s\" has upper-case letters and is matched "
                        "exactly as the catalog stores names; unquoted names are stored in "
                        "lower case", t->valuestring);
        break;
      }
  }
  cJSON_ArrayForEach(t, old_tables)
  {
    if(cJSON_IsString(t) && !listed(tables, t->valuestring))
      strlist_addf(w, "protectedTables no longer lists \"%.80s\": plans may now change that "
                      "table", t->valuestring);
  }
  ptah_warn_runner_image(c, w);
}

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = v1alpha1_status,
    .moves = v1alpha1_moves, .to_hub = v1alpha1_to_hub, .from_hub = v1alpha1_from_hub,
    .path_aliases = v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = v1_status },
};

static const struct printer_column columns[] = {
  { "Phase", "string", ".status.phase", "Where the schema is", 0 },
  { "Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status",
    "Whether the database matches the desired schema", 0 },
  { "Plan", "string", ".status.plan.shortDigest", "The current plan's digest, short", 0 },
  { "Approval", "string", ".spec.policy.approval", "Required or Automatic", 0 },
  { "Author", "string", ".status.plan.author", "Who wrote the planned spec", 0 },
  { "Digest", "string", ".status.plan.digest", "Digest of the current plan", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "psch", NULL };
static const char *const categories[] = { "ptah", NULL };

const struct api_kind api_ptahschema = {
  .group = PTAH_GROUP,
  .kind = "PtahSchema",
  .plural = "ptahschemas",
  .singular = "ptahschema",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PtahSchema declares the desired schema of one PostgreSQL database. The controller "
          "computes an immutable plan from it, waits for a PtahSchemaApproval when the policy "
          "requires one, and applies the plan in a runner Job.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
  .warn = warn,
};
