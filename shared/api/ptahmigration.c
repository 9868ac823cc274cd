/*
 * PtahMigration (ptah.run): versioned, forward-only migrations kept in a ConfigMap and applied
 * to one database, in version order, up to a target. v1 is the hub; v1alpha1 is flat.
 *
 * A run whose outcome nobody established is recorded as unresolved and holds the resource until
 * a reading or a PtahMigrationRunAcknowledgment settles it (seed 001: MigrationRunUncertain,
 * UnresolvedRunAcknowledged).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/ptah_common.h"
#include "json.h"

#define VERSION_MAX 999999999999999LL /* 15 digits: room for yyyymmddHHMMSS versions */

static const char *const phases[] = { "Pending", "Migrating", "UpToDate", "Uncertain", "Failed",
                                      NULL };
static const char *const run_outcomes[] = { "Applied", "UpToDate", "Failed", "Partial", "Unknown",
                                            NULL };
static const char *const ack_outcomes[] = { "Applied", "NotApplied", "Partial", NULL };

static const struct sch_field migrations_fields[] = {
  { .name = "configMapRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED,
    .fields = sch_local_ref_fields,
    .desc = "The ConfigMap holding the migrations: one key per version, named "
            "\"<version>_<description>.sql\" (0001_create_users.sql), applied in numeric order, "
            "each in its own transaction." },
  { .name = "historyTable", .type = SCH_STRING, .format = &fmt_pg_qualified,
    .dflt = "\"public.ptah_migrations\"",
    .desc = "The table, as \"schema.table\", where Ptah records the versions it applied. "
            "Immutable: another table would make every migration look unapplied." },
  { 0 }
};

static const struct sch_field v1_spec[] = {
  { .name = "database", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = ptah_database_fields,
    .desc = "The database the migrations are applied to. Immutable: create a new PtahMigration "
            "for another database." },
  { .name = "migrations", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = migrations_fields,
    .desc = "Where the migrations are and where applied versions are recorded." },
  { .name = "targetVersion", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = VERSION_MAX,
    .desc = "The version to migrate to. Absent: the highest version in the ConfigMap. "
            "Migrations only go forward: it cannot go below status.currentVersion." },
  { .name = "execution", .type = SCH_OBJECT, .fields = ptah_execution_fields,
    .desc = "How runner Pods are made: image, extra Pod metadata, service account." },
  { .name = "backoffLimit", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 0,
    .max = 100,
    .desc = "How many times a failed run is retried (OperationRetried). Only a run proven to "
            "have committed nothing is retried; an uncertain run never is. Default 3, or the "
            "admission policy's limits.maxBackoffLimit when that is lower; at most that limit." },
  { 0 }
};

static const struct sch_field last_run_fields[] = {
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The run's operation id." },
  { .name = "outcome", .type = SCH_STRING, .enums = run_outcomes,
    .desc = "Applied, UpToDate, Failed, Partial or Unknown (MigrationRunFinished)." },
  { .name = "fromVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The database's version before the run." },
  { .name = "toVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The database's version after the run." },
  { .name = "finishedAt", .type = SCH_TIME, .desc = "When the run's result was accepted." },
  { .name = "message", .type = SCH_STRING, .max_len = 32768,
    .desc = "What the run reported, in full (Events carry a bounded copy)." },
  { 0 }
};

static const struct sch_field unresolved_fields[] = {
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation id a PtahMigrationRunAcknowledgment must name to settle the run." },
  { .name = "jobName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The Job that ran it." },
  { .name = "fromVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The database's version before the run." },
  { .name = "toVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The version the run was taking the database to." },
  { .name = "recordedAt", .type = SCH_TIME, .desc = "When the run was found unresolved." },
  { 0 }
};

static const struct sch_field release_fields[] = {
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The run whose session may still hold the database lock." },
  { .name = "session", .type = SCH_STRING, .max_len = 64,
    .desc = "That session's application_name; the next run terminates a session of this name "
            "that holds the lock before it takes it." },
  { .name = "recordedAt", .type = SCH_TIME, .desc = "When the release became owed." },
  { 0 }
};

static const struct sch_field acknowledgment_fields[] = {
  { .name = "name", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The PtahMigrationRunAcknowledgment that settled the last unresolved run." },
  { .name = "acknowledgedBy", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who acknowledged it." },
  { .name = "operation", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation it settled." },
  { .name = "outcome", .type = SCH_STRING, .enums = ack_outcomes,
    .desc = "What the person stated: Applied, NotApplied or Partial." },
  { .name = "acceptedAt", .type = SCH_TIME, .desc = "When it was accepted." },
  { 0 }
};

#define COMMON_STATUS                                                                            \
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,              \
    .desc = "The metadata.generation the controller last acted on." },                          \
  { .name = "phase", .type = SCH_STRING, .enums = phases,                                       \
    .desc = "Pending, Migrating, UpToDate, Uncertain (a run nobody accounted for holds the "    \
            "resource) or Failed. Match on conditions, not on the phase." },                    \
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,       \
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." },        \
  { .name = "currentVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,                  \
    .desc = "The highest version the history table records as applied; 0 for none." }

static const struct sch_field v1_status[] = {
  COMMON_STATUS,
  { .name = "latestVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The highest version in the ConfigMap." },
  { .name = "operation", .type = SCH_OBJECT, .fields = ptah_operation_fields,
    .desc = "The operation in flight, if any." },
  { .name = "lastRun", .type = SCH_OBJECT, .fields = last_run_fields,
    .desc = "The last run whose result was accepted." },
  { .name = "unresolvedRun", .type = SCH_OBJECT, .fields = unresolved_fields,
    .desc = "A run that ended without establishing what it committed; nothing is planned "
            "until a reading or an acknowledgment settles it. Copied in the "
            "operator.ptah.run/unresolved-run annotation, so a restore that drops status "
            "cannot lose it." },
  { .name = "acknowledgment", .type = SCH_OBJECT, .fields = acknowledgment_fields,
    .desc = "The acknowledgment that settled the last unresolved run." },
  { .name = "lockReleaseOwed", .type = SCH_OBJECT, .fields = release_fields,
    .desc = "The database lock a run's session may have kept after its runner died "
            "(TargetLockReleaseOwed); the next run releases it, and this clears once a run "
            "has held the lock." },
  { .name = "operationCount", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many operations were claimed: the next one's id ends in this number plus "
            "one." },
  { .name = "appliedInputs", .type = SCH_STRING, .max_len = 80,
    .desc = "The inputs digest of the last finished run: a run is claimed when the inputs "
            "differ (a new ConfigMap content, target or history table)." },
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "secretName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "The Secret holding the connection URI under key \"uri\" (v1: "
            "spec.database.connectionSecretRef). Immutable." },
  { .name = "configMap", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "The ConfigMap holding the migrations (v1: spec.migrations.configMapRef)." },
  { .name = "targetVersion", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = VERSION_MAX, .desc = "The version to migrate to; absent: the highest." },
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
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.secretName", "spec.database.connectionSecretRef.name" },
  { "spec.configMap", "spec.migrations.configMapRef.name" },
  { "spec.runnerImage", "spec.execution.runnerImage" },
  { "spec.podLabels", "spec.execution.podMetadata.labels" },
  { "spec.podAnnotations", "spec.execution.podMetadata.annotations" },
  { "spec.serviceAccountName", "spec.execution.serviceAccountName" },
  { NULL, NULL }
};

static const struct conv_move v1alpha1_aliases[] = {
  { "spec.secretName", "spec.database" },
  { PTAH_V1_FIELDS, "spec.database.connectionSecretRef.key" },
  { "spec.configMap", "spec.migrations" },
  { PTAH_V1_FIELDS, "spec.migrations.historyTable" },
  { PTAH_V1_FIELDS, "spec.backoffLimit" },
  { NULL, NULL }
};

#define BACKOFF_DEFAULT 3

/* The backoff default respects the admission policy, so a default is never refused. */
static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  if(json_get(obj, "spec.backoffLimit") || !cJSON_IsObject(json_get(obj, "spec")))
    return GW_OK;
  int max = c->policy ? c->policy->limits.max_backoff_limit : 0;
  int v = max && max < BACKOFF_DEFAULT ? max : BACKOFF_DEFAULT;
  return json_set(obj, "spec.backoffLimit", cJSON_CreateNumber(v));
}

static void check_history_qualified(const struct api_ctx *c, const struct rule *r,
                                    struct ferrs *e)
{
  const char *t = json_get_str(c->obj, r->field);
  if(t && !strchr(t, '.'))
    rule_failf(e, r, NULL, "\"%.80s\" %s", t, r->msg);
}

static void check_backoff_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *v = json_get(c->obj, r->field);
  int max = c->policy ? c->policy->limits.max_backoff_limit : 0;
  if(json_is_integer(v) && max && v->valuedouble > max && !api_unchanged(c, r->field))
    rule_failf(e, r, NULL, "is %d, above the admission policy's limit of %d "
               "(limits.maxBackoffLimit); lower it or ask the cluster admin",
               (int)v->valuedouble, max);
}

static void check_forward_only(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *target = json_get(c->obj, r->field);
  const cJSON *current = json_get(c->old, "status.currentVersion");
  if(api_unchanged(c, r->field))
    return; /* a target the database has since passed blocks nothing that leaves it alone */
  if(json_is_integer(target) && json_is_integer(current) &&
     target->valuedouble < current->valuedouble)
    rule_failf(e, r, NULL, "is %.0f, below the database's current version %.0f "
               "(status.currentVersion): %s", target->valuedouble, current->valuedouble, r->msg);
}

static const struct rule rules[] = {
  { "spec.migrations.historyTable", FERR_INVALID, check_history_qualified,
    "must name its schema too, as in \"public.ptah_migrations\": an unqualified name is "
    "ambiguous under search_path" },
  { "spec.backoffLimit", FERR_FORBIDDEN, check_backoff_limit,
    "must not exceed the admission policy's limits.maxBackoffLimit", .policy = true },
  { "spec.execution.runnerImage", FERR_FORBIDDEN, ptah_check_runner_image,
    "must come from a registry the admission policy allows (images.allowedRegistries)",
    .policy = true },
  { "spec.execution.podMetadata", FERR_FORBIDDEN, ptah_check_pod_metadata,
    "labels and annotations must be valid, must not use a reserved prefix (ptah.run/, "
    "operator.ptah.run/, kubernetes.io/, k8s.io/, godwit.dev/ or a subdomain of them) and must "
    "pass the admission policy's podMetadata rules" },
  { 0 }
};

static const struct rule update_rules[] = {
  { "spec.database", FERR_INVALID, api_check_immutable,
    "is immutable: a PtahMigration migrates the database it was created for; create a new "
    "PtahMigration for another database" },
  { "spec.migrations.historyTable", FERR_INVALID, api_check_immutable,
    "is immutable: it records the versions already applied, and another table would make "
    "every migration look unapplied" },
  { "spec.targetVersion", FERR_INVALID, check_forward_only,
    "migrations only go forward; add a new migration that reverts the change instead" },
  { 0 }
};

static void warn(const struct api_ctx *c, struct strlist *w)
{
  ptah_warn_runner_image(c, w);
}

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = v1alpha1_status,
    .moves = v1alpha1_moves, .path_aliases = v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = v1_status },
};

static const struct printer_column columns[] = {
  { "Phase", "string", ".status.phase", "Where the migration is", 0 },
  { "Current", "integer", ".status.currentVersion", "The database's version", 0 },
  { "Target", "integer", ".spec.targetVersion", "The version asked for; empty: the latest", 0 },
  { "Latest", "integer", ".status.latestVersion", "The highest version in the ConfigMap", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "ptahmig", NULL };
static const char *const categories[] = { "ptah", NULL };

const struct api_kind api_ptahmigration = {
  .group = PTAH_GROUP,
  .kind = "PtahMigration",
  .plural = "ptahmigrations",
  .singular = "ptahmigration",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PtahMigration applies versioned, forward-only SQL migrations kept in a ConfigMap to "
          "one PostgreSQL database, in version order, up to a target version.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
  .warn = warn,
};
