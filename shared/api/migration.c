/*
 * Migration (pgcopydb.io): copy a PostgreSQL database into another with pgcopydb, once (a clone)
 * or live (clone, then follow the source until a cutover), and verify the result. v1 is the hub;
 * v1alpha1 is flat (migration_convert.c). docs/api/migration.md explains every decision here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/migration.h"
#include "api/podmeta.h"
#include "json.h"

const char *const migration_steps[] = { "preflight", "worker",  "catalog", "probe", "cutover",
                                        "verify",    "compare", "cleanup", "reown", NULL };

const char *const migration_phases[] = { "Pending",     "Validating", "Cloning",
                                         "Finalizing",  "Streaming",  "CutoverPending",
                                         "CuttingOver", "Verifying",  "Completed",
                                         "Failed",      "Suspended",  NULL };

#define DEFAULT_TABLE_JOBS 4
#define DEFAULT_INDEX_JOBS 4
#define DEFAULT_BACKOFF_LIMIT MIGRATION_DEFAULT_BACKOFF_LIMIT
#define DEFAULT_WORK_DIR MIGRATION_DEFAULT_WORK_DIR
#define DEFAULT_WORK_DIR_BYTES ((int64_t)10 << 30)

/* Indexes into migration_phases. */
enum {
  PH_CLONING = 2,
  PH_CUTOVER_PENDING = 5,
  PH_CUTTING_OVER = 6,
  PH_FAILED = 9,
  PH_SUSPENDED = 10,
};

/* ---- formats of this kind ---- */

/* One part of "schema.name": 1 to 63 bytes, or the same in double quotes; n is its length. */
static bool filter_part_ok(const char *s, size_t n)
{
  if(n >= 2 && s[0] == '"' && s[n - 1] == '"') {
    s++;
    n -= 2;
  }
  if(n == 0 || n > 63)
    return false;
  for(size_t i = 0; i < n; i++)
    if((unsigned char)s[i] < 0x20 || s[i] == '"')
      return false;
  return true;
}

/* pgcopydb splits a filter entry at its first '.', so the schema part never holds one; an
 * unquoted name part may not either, or the entry would read differently than it looks. */
static const char *check_filter_name(const char *s)
{
  const char *dot = strchr(s, '.');
  if(!dot)
    return "must be schema-qualified (\"schema.name\"): pgcopydb filters need the schema";
  const char *rel = dot + 1;
  size_t rn = strlen(rel);
  bool quoted = rn >= 2 && rel[0] == '"' && rel[rn - 1] == '"';
  if(!filter_part_ok(s, (size_t)(dot - s)) || !filter_part_ok(rel, rn) ||
     (!quoted && strchr(rel, '.')))
    return "must be \"schema.name\" with each part 1 to 63 bytes, optionally in double quotes, "
           "and no other '.' outside quotes";
  return NULL;
}

static const char *const ex_filter_name[] = { "public.orders", "billing.invoices",
                                              "\"Sales\".\"Orders\"", NULL };
static const struct sch_format fmt_filter_name = {
  "schema-qualified name", check_filter_name,
  "^(\"[^\"]{1,63}\"|[^\".]{1,63})\\.(\"[^\"]{1,63}\"|[^\".]{1,63})$", 131, ex_filter_name
};

static bool is_hex(char ch)
{
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static const char *check_lsn(const char *s)
{
  const char *slash = strchr(s, '/');
  size_t hi = slash ? (size_t)(slash - s) : 0, lo = slash ? strlen(slash + 1) : 0;
  bool ok = hi >= 1 && hi <= 8 && lo >= 1 && lo <= 8;
  for(const char *p = s; ok && *p; p++)
    ok = p == slash || is_hex(*p);
  return ok ? NULL : "must be a PostgreSQL LSN such as \"0/16B3748\"";
}

static const char *const ex_lsn[] = { "0/16B3748", "3/A1000028", NULL };
static const struct sch_format fmt_pg_lsn = { "PostgreSQL LSN", check_lsn,
                                              "^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$", 17, ex_lsn };

/* ---- v1 schema ---- */

static const struct sch_field endpoint_fields[] = {
  { .name = "connectionSecretRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED,
    .fields = sch_secret_key_ref_fields,
    .desc = "The Secret key holding the database's PostgreSQL connection URI "
            "(postgres://user:password@host:5432/dbname?sslmode=require). Only runner Jobs read "
            "it; godwit never logs it." },
  { 0 }
};

static const struct sch_field filter_fields[] = {
  { .name = "includeOnlySchemas", .type = SCH_ARRAY, .item = SCH_STRING,
    .format = &fmt_pg_identifier, .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Copy only these schemas (pgcopydb include-only-schema, pgcopydb 0.13 or newer). "
            "Cannot be combined with excludeSchemas." },
  { .name = "excludeSchemas", .type = SCH_ARRAY, .item = SCH_STRING,
    .format = &fmt_pg_identifier, .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Skip every object of these schemas (pgcopydb exclude-schema). Cannot be combined "
            "with includeOnlySchemas or includeOnlyTables." },
  { .name = "includeOnlyTables", .type = SCH_ARRAY, .item = SCH_STRING,
    .format = &fmt_filter_name, .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Copy only these tables, as \"schema.table\" (pgcopydb include-only-table). Cannot "
            "be combined with excludeTables or excludeSchemas." },
  { .name = "excludeTables", .type = SCH_ARRAY, .item = SCH_STRING, .format = &fmt_filter_name,
    .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Skip these tables entirely, as \"schema.table\" (pgcopydb exclude-table). Cannot "
            "be combined with includeOnlyTables." },
  { .name = "excludeIndexes", .type = SCH_ARRAY, .item = SCH_STRING, .format = &fmt_filter_name,
    .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Do not build these indexes on the target, as \"schema.index\" (pgcopydb "
            "exclude-index)." },
  { .name = "excludeTableData", .type = SCH_ARRAY, .item = SCH_STRING,
    .format = &fmt_filter_name, .flags = SCH_UNIQUE, .max_items = 1000,
    .desc = "Create these tables on the target but copy none of their rows, as \"schema.table\" "
            "(pgcopydb exclude-table-data)." },
  { 0 }
};

static const struct sch_field clone_fields[] = {
  { .name = "tableJobs", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 128,
    .desc = "How many tables pgcopydb copies at once (--table-jobs): one COPY connection to "
            "each side per job. Defaults to 4, or to the admission policy's "
            "limits.maxTableJobs when that is lower." },
  { .name = "indexJobs", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 128,
    .desc = "How many CREATE INDEX statements pgcopydb runs at once on the target "
            "(--index-jobs). Defaults to 4, or to limits.maxIndexJobs when that is lower." },
  { .name = "skipVacuum", .type = SCH_BOOL, .dflt = "false",
    .desc = "Skip the VACUUM ANALYZE of each copied table (--skip-vacuum, pgcopydb 0.12 or "
            "newer). Shortens the run's tail, but leaves the target without planner statistics "
            "until autovacuum or a manual ANALYZE runs." },
  { .name = "skipLargeObjects", .type = SCH_BOOL, .dflt = "false",
    .desc = "Do not copy large objects (--skip-large-objects). Large objects are never "
            "replicated by follow, only copied by the clone." },
  { .name = "ownerAfterRestore", .type = SCH_STRING, .format = &fmt_pg_identifier,
    .desc = "A role on the target that receives ownership of every schema, relation, routine "
            "and type the migration role restored, once the copy is done (the <name>-reown "
            "Job). The migration role must be able to SET ROLE to it." },
  { .name = "extensions", .type = SCH_ARRAY, .item = SCH_STRING, .format = &fmt_pg_identifier,
    .flags = SCH_UNIQUE, .max_items = 64,
    .desc = "Extensions the clone creates on the target; the preflight checks each one is "
            "installed or available there. When empty, pgcopydb skips extensions "
            "(--skip-extensions) and the target must already have those the schema uses." },
  { .name = "filters", .type = SCH_OBJECT, .fields = filter_fields,
    .desc = "Which schemas, tables, indexes and table data to leave out, as pgcopydb's filter "
            "sections. Names are exact (no patterns); tables and indexes are schema-qualified." },
  { 0 }
};

static const struct sch_field follow_fields[] = {
  { .name = "maxCatchupLag", .type = SCH_QUANTITY, .dflt = "\"16Mi\"",
    .desc = "The replication lag, in bytes of WAL, at or below which the migration counts as "
            "caught up (condition CaughtUp), measured on two consecutive samples. The default "
            "is one WAL segment." },
  { 0 }
};

static const char *const cutover_modes[] = { "Manual", "Automatic", NULL };

static const struct sch_field cutover_fields[] = {
  { .name = "mode", .type = SCH_STRING, .enums = cutover_modes,
    .desc = "Manual waits in phase CutoverPending until spec.cutover.approved is true; "
            "Automatic cuts over as soon as the migration is caught up. Defaults to Manual on "
            "live migrations." },
  { .name = "approved", .type = SCH_BOOL,
    .desc = "Set to true to let a Manual cutover start: the stream stops at the current source "
            "position, drains, and is verified. Cannot be withdrawn once the cutover started." },
  { .name = "approvedBy", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who approved the cutover: stamped by godwit's admission webhook with the "
            "authenticated user when approved becomes true. Cannot be set to anyone else." },
  { 0 }
};

static const char *const compare_checks[] = { "schema", "data", NULL };

static const struct sch_field verify_fields[] = {
  { .name = "compare", .type = SCH_ARRAY, .item = SCH_STRING, .enums = compare_checks,
    .flags = SCH_UNIQUE, .max_items = 2,
    .desc = "The checks godwit's runner makes once the data is on the target: schema "
            "(object definitions) and data (row counts and checksums per table)." },
  { 0 }
};

static const struct sch_field workdir_fields[] = {
  { .name = "size", .type = SCH_QUANTITY,
    .desc = "Size of the PersistentVolumeClaim holding pgcopydb's work directory: schema dumps, "
            "progress catalogs and, on live migrations, the change files. Defaults to 10Gi, or "
            "to limits.maxWorkDirSize when that is lower." },
  { .name = "storageClassName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "StorageClass of the work directory's claim; the cluster's default class when "
            "empty." },
  { 0 }
};

static const char *const toleration_operators[] = { "Equal", "Exists", NULL };
static const char *const taint_effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute",
                                             NULL };

static const struct sch_field toleration_fields[] = {
  { .name = "key", .type = SCH_STRING, .format = &fmt_qualified_name,
    .desc = "The taint key the toleration matches; empty, with operator Exists, every key." },
  { .name = "operator", .type = SCH_STRING, .enums = toleration_operators,
    .desc = "Equal (the key's value must match; the default) or Exists (any value)." },
  { .name = "value", .type = SCH_STRING, .format = &fmt_label_value,
    .desc = "The taint value to match with operator Equal; empty with Exists." },
  { .name = "effect", .type = SCH_STRING, .enums = taint_effects,
    .desc = "The taint effect to match; empty: every effect." },
  { .name = "tolerationSeconds", .type = SCH_INT,
    .desc = "With effect NoExecute: how long the Pod stays bound to a node once such a taint "
            "appears; unset: forever." },
  { 0 }
};

static const struct sch_field pull_secret_fields[] = {
  { .name = "name", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "A Secret of type kubernetes.io/dockerconfigjson in the Migration's namespace." },
  { 0 }
};

static const struct sch_field worker_fields[] = {
  { .name = "image", .type = SCH_STRING, .format = &fmt_image,
    .desc = "The pgcopydb container image of the runner Jobs; the controller's configured image "
            "when empty. Pin a version: the command line is rendered for the pgcopydb version "
            "found in it." },
  { .name = "resources", .type = SCH_OBJECT, .fields = sch_resources_fields,
    .desc = "CPU and memory requests and limits of the worker container." },
  { .name = "workDir", .type = SCH_OBJECT, .fields = workdir_fields,
    .desc = "The persistent volume for pgcopydb's work directory; attempts resume from it." },
  { .name = "podMetadata", .type = SCH_OBJECT, .fields = podmeta_fields,
    .desc = "Labels and annotations every runner Pod of the Migration carries (the worker and "
            "each step's), declared here because a Pod another mutating webhook alters is "
            "refused (the runner-Pod guard; docs/operations/runner-pods.md)." },
  { .name = "serviceAccountName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The service account the runner Pods run as; they call no Kubernetes API, so it "
            "needs no role. Empty: the namespace's default." },
  { .name = "nodeSelector", .type = SCH_MAP, .item = SCH_STRING,
    .key_format = &fmt_qualified_name, .format = &fmt_label_value, .max_items = 64,
    .desc = "Node labels the runner Pods must be scheduled on (Pod spec.nodeSelector)." },
  { .name = "tolerations", .type = SCH_ARRAY, .item = SCH_OBJECT, .fields = toleration_fields,
    .max_items = 32, .desc = "Taints the runner Pods tolerate (Pod spec.tolerations)." },
  { .name = "imagePullSecrets", .type = SCH_ARRAY, .item = SCH_OBJECT,
    .fields = pull_secret_fields, .max_items = 16,
    .desc = "Secrets the kubelet pulls the runner images with (Pod spec.imagePullSecrets)." },
  { 0 }
};

static const struct sch_field v1_spec[] = {
  { .name = "source", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = endpoint_fields,
    .desc = "The database to copy from. Immutable." },
  { .name = "target", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = endpoint_fields,
    .desc = "The database to copy into; it must exist. Immutable." },
  { .name = "clone", .type = SCH_OBJECT, .fields = clone_fields, .dflt = "{}",
    .desc = "How the base copy runs. Immutable once the copy has started (past phase "
            "Validating)." },
  { .name = "follow", .type = SCH_OBJECT, .flags = SCH_PRESENCE, .fields = follow_fields,
    .desc = "Present for a live migration: after the clone, changes are streamed from a "
            "replication slot on the source until the cutover. Absent for a one-time clone." },
  { .name = "cutover", .type = SCH_OBJECT, .fields = cutover_fields,
    .desc = "When a live migration stops streaming and finishes. Only for live migrations." },
  { .name = "verify", .type = SCH_OBJECT, .fields = verify_fields,
    .desc = "Checks that compare source and target once the data is copied (and, on a live "
            "migration, drained)." },
  { .name = "worker", .type = SCH_OBJECT, .fields = worker_fields,
    .desc = "The runner Jobs' image, resources and work directory, and how their Pods are "
            "labelled and scheduled." },
  { .name = "backoffLimit", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 0,
    .max = MIGRATION_BACKOFF_LIMIT_MAX,
    .desc = "How many times a failed worker attempt is retried, resuming from the work "
            "directory, before the migration fails with BackoffLimitExceeded. Defaults to 6, "
            "or to limits.maxBackoffLimit when that is lower." },
  { .name = "dryRun", .type = SCH_BOOL, .dflt = "false",
    .desc = "Run only the preflight checks, report the grants superuserSecretRef would apply, "
            "and complete without copying anything. Immutable." },
  { .name = "suspend", .type = SCH_BOOL, .dflt = "false",
    .desc = "Stop the running worker and hold (phase Suspended), keeping the work directory; "
            "setting it back to false resumes. A live migration keeps its slot meanwhile." },
  { .name = "superuserSecretRef", .type = SCH_OBJECT, .fields = sch_secret_key_ref_fields,
    .desc = "A Secret key holding a connection URI of a superuser, used only by the preflight "
            "to grant the migration roles what they lack (clone tier on the target, follow "
            "tier on the source), with the user and password of that URI." },
  { 0 }
};

static const char *const step_results[] = { "Running", "Passed", "Failed", NULL };

/* One runner step's progress: the Job <name>-<step>-<attempt> in use and, once decided, what it
 * came to. A controller restart reads this instead of the Jobs. */
static const struct sch_field step_fields[] = {
  { .name = "attempt", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 0, .max = 99,
    .desc = "The attempt number of the step's current Job (<name>-<step>-<attempt>)." },
  { .name = "result", .type = SCH_STRING, .enums = step_results,
    .desc = "Running until the step is decided, then Passed or Failed." },
  { .name = "message", .type = SCH_STRING, .max_len = 4096,
    .desc = "What the step reported, for people (scrubbed of credentials)." },
  { 0 }
};

static const struct sch_field steps_fields[] = {
  { .name = "probe", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "The pgcopydb version probe of spec.worker.image (when it is not the runner's "
            "image)." },
  { .name = "preflight", .type = SCH_OBJECT, .fields = step_fields, .desc = "The preflight." },
  { .name = "catalog", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "The read of pgcopydb's own progress in the work directory (clone-only)." },
  { .name = "cutover", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "Setting the end position (live)." },
  { .name = "verify", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "The drain verification and the sequence sync (live)." },
  { .name = "reown", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "The ownership handover (spec.clone.ownerAfterRestore)." },
  { .name = "compare", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "The compare checks of spec.verify.compare." },
  { .name = "cleanup", .type = SCH_OBJECT, .fields = step_fields,
    .desc = "Removing the slot, publication, origin and sentinel from the source (live)." },
  { 0 }
};

static const struct sch_field preflight_summary_fields[] = {
  { .name = "checks", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Checks that passed in the preflight's last round." },
  { .name = "remediated", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Grants applied through spec.superuserSecretRef (in a dry run: that would be)." },
  { 0 }
};

static const struct sch_field probe_fields[] = {
  { .name = "time", .type = SCH_TIME, .desc = "When the target was last sampled." },
  { .name = "copyWorkers", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "This migration's COPY connections on the target." },
  { .name = "otherWorkers", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "This migration's other active connections on the target (indexes, constraints, "
            "vacuum, post-data)." },
  { .name = "targetSizeBytes", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "pg_database_size of the target database." },
  { 0 }
};

static const struct sch_field v1_status[] = {
  { .name = "phase", .type = SCH_STRING, .enums = migration_phases,
    .desc = "One word for what the migration is doing now (the printer column). Automation "
            "should wait on conditions instead." },
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields,
    .desc = "Validated, CloneCompleted, Streaming, CaughtUp, CutoverCompleted, "
            "OwnershipApplied, Verified, Complete and Failed (metav1.Condition)." },
  { .name = "attempts", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many worker attempts have started; at most backoffLimit + 1." },
  { .name = "lagBytes", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The replication lag in bytes at the last sample (live migrations)." },
  { .name = "lagSampleTime", .type = SCH_TIME,
    .desc = "When lagBytes was measured." },
  { .name = "cutoverLSN", .type = SCH_STRING, .format = &fmt_pg_lsn,
    .desc = "The source position the cutover stops the stream at; set when the cutover "
            "starts." },
  { .name = "pgcopydbVersion", .type = SCH_STRING, .max_len = 64,
    .desc = "The pgcopydb version of the worker image, as it reports itself (\"0.18\", "
            "\"0.10-1\"); the command line is rendered for it." },
  { .name = "startTime", .type = SCH_TIME,
    .desc = "When the controller first acted on the migration." },
  { .name = "completionTime", .type = SCH_TIME,
    .desc = "When the migration reached Completed or Failed." },
  { .name = "suspendedFrom", .type = SCH_STRING, .enums = migration_phases,
    .desc = "The phase a suspension interrupted; resuming returns to it." },
  { .name = "catchUpSamples", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Consecutive lag samples at or below spec.follow.maxCatchupLag (live)." },
  { .name = "workDirChecked", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The last worker attempt whose start the controller read from its log: whether it "
            "resumed or started fresh (Event WorkDirReset)." },
  { .name = "nextAttemptTime", .type = SCH_TIME,
    .desc = "When the next worker attempt starts, after a failed one's back-off (10 s "
            "doubling, six minutes at most); absent once it started." },
  { .name = "copyingDataSeen", .type = SCH_BOOL,
    .desc = "The probe has seen this attempt's COPY workers on the target." },
  { .name = "baseCopyLogged", .type = SCH_BOOL,
    .desc = "The worker logged that the base copy finished (live)." },
  { .name = "restartNextAttempt", .type = SCH_BOOL,
    .desc = "The next worker attempt starts over (--restart --drop-if-exists) instead of "
            "resuming, because the last one failed where pgcopydb cannot resume." },
  { .name = "workerStarted", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The last attempt whose worker Job was created. A worker of that attempt created "
            "again (after a suspension deleted it) resumes from the work directory." },
  { .name = "zombieSince", .type = SCH_TIME,
    .desc = "When the worker Pod was first seen alive after its supervisor's fatal exit." },
  { .name = "slotName", .type = SCH_STRING, .max_len = 63,
    .desc = "The replication slot (and origin) of a live migration, chosen once." },
  { .name = "outputPlugin", .type = SCH_STRING, .max_len = 63,
    .desc = "The logical decoding plugin the worker decodes with (live): the first of the "
            "pgcopydb version's plugins that the source server allows and has installed, "
            "chosen by the preflight." },
  { .name = "preflight", .type = SCH_OBJECT, .fields = preflight_summary_fields,
    .desc = "What the preflight counted." },
  { .name = "lastProbe", .type = SCH_OBJECT, .fields = probe_fields,
    .desc = "The last pg_stat_activity sample of the target during the copy." },
  { .name = "steps", .type = SCH_OBJECT, .fields = steps_fields,
    .desc = "The runner steps' attempts and results." },
  { 0 }
};

/* ---- reading objects ---- */

static int phase_index(const cJSON *o)
{
  const char *p = json_get_str(o, "status.phase");
  for(int i = 0; p && migration_phases[i]; i++)
    if(!strcmp(migration_phases[i], p))
      return i;
  return -1;
}

static const char *phase_name(const cJSON *o)
{
  int i = phase_index(o);
  return i < 0 ? "" : migration_phases[i];
}

static bool is_live(const cJSON *o)
{
  return cJSON_IsObject(json_get(o, "spec.follow"));
}

static bool approved(const cJSON *o)
{
  return o && cJSON_IsTrue(json_get(o, "spec.cutover.approved"));
}

static bool str_eq(const char *a, const char *b)
{
  return a == b || (a && b && !strcmp(a, b));
}

/* The stored object finished: phase or condition. */
static bool terminal(const cJSON *old)
{
  const char *p = phase_name(old);
  return !strcmp(p, "Completed") || !strcmp(p, "Failed") || json_condition_true(old, "Complete") ||
         json_condition_true(old, "Failed");
}

/* A worker attempt has started: the clone options are in use. */
static bool copy_started(const cJSON *old)
{
  int i = phase_index(old);
  const cJSON *attempts = json_get(old, "status.attempts");
  if(i == PH_SUSPENDED)
    return cJSON_IsNumber(attempts) && attempts->valuedouble > 0;
  return i >= PH_CLONING && i <= PH_FAILED;
}

static bool cutover_started(const cJSON *old)
{
  int i = phase_index(old);
  const char *lsn = json_get_str(old, "status.cutoverLSN");
  return (i >= PH_CUTTING_OVER && i <= PH_FAILED) || (lsn && *lsn);
}

/* The approval becomes true with this request. */
static bool approving(const struct api_ctx *c)
{
  return approved(c->obj) && !approved(c->old);
}

static const char *username(const struct api_ctx *c)
{
  return c->user && c->user->username && *c->user->username ? c->user->username : NULL;
}

/* Reads a quantity (string or integer) as a rounded-up integer. */
static bool quantity_of(const cJSON *v, int64_t *out)
{
  if(cJSON_IsString(v))
    return quantity_parse(v->valuestring, out);
  if(json_is_integer(v)) {
    *out = (int64_t)v->valuedouble;
    return true;
  }
  return false;
}

/* ---- defaults beyond the schema, and stamping ---- */

/* Sets path (under spec) to v when it is missing and no ancestor is something else than an
 * object (a shape error that validation explains). Takes v. */
static gw_rc default_at(cJSON *spec, const char *path, cJSON *v)
{
  char prefix[64];
  for(const char *dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
    snprintf(prefix, sizeof(prefix), "%.*s", (int)(dot - path), path);
    const cJSON *p = json_get(spec, prefix);
    if(p && !cJSON_IsObject(p)) {
      cJSON_Delete(v);
      return GW_OK;
    }
  }
  if(json_get(spec, path)) {
    cJSON_Delete(v);
    return GW_OK;
  }
  return json_set(spec, path, v);
}

static int lowered(int dflt, int limit)
{
  return limit > 0 && limit < dflt ? limit : dflt;
}

/* "10Gi", or the policy's lower limit in the largest binary unit that divides it. */
static cJSON *work_dir_default(int64_t limit)
{
  static const char *const units[] = { "Ei", "Pi", "Ti", "Gi", "Mi", "Ki" };
  if(limit <= 0 || limit >= DEFAULT_WORK_DIR_BYTES)
    return cJSON_CreateString(DEFAULT_WORK_DIR);
  char buf[32];
  snprintf(buf, sizeof(buf), "%lld", (long long)limit);
  for(int i = 0; i < 6; i++) {
    int64_t unit = (int64_t)1 << (10 * (6 - i));
    if(limit % unit == 0) {
      snprintf(buf, sizeof(buf), "%lld%s", (long long)(limit / unit), units[i]);
      break;
    }
  }
  return cJSON_CreateString(buf);
}

/* What the schema cannot default because it depends on other fields or on the admission
 * policy (a default is never refused by a lower limit). Idempotent. */
static gw_rc conditional_defaults(const struct policy *p, cJSON *spec)
{
  const struct policy_limits none = { 0 }, *l = p ? &p->limits : &none;
  gw_rc rc = default_at(spec, "clone.tableJobs",
                        cJSON_CreateNumber(lowered(DEFAULT_TABLE_JOBS, l->max_table_jobs)));
  if(!rc)
    rc = default_at(spec, "clone.indexJobs",
                    cJSON_CreateNumber(lowered(DEFAULT_INDEX_JOBS, l->max_index_jobs)));
  if(!rc)
    rc = default_at(spec, "backoffLimit",
                    cJSON_CreateNumber(lowered(DEFAULT_BACKOFF_LIMIT, l->max_backoff_limit)));
  if(!rc)
    rc = default_at(spec, "worker.workDir.size", work_dir_default(l->max_work_dir_bytes));
  if(!rc && cJSON_IsObject(json_get(spec, "follow")))
    rc = default_at(spec, "cutover.mode", cJSON_CreateString("Manual"));
  return rc;
}

/* approvedBy: the authenticated user when the approval happens, unless the user already wrote
 * a value of their own (validation judges it); restored from the stored object when a
 * replace dropped it while the approval stands. */
static gw_rc stamp_approver(const struct api_ctx *c, cJSON *spec)
{
  if(!approved(c->obj) || !cJSON_IsObject(json_get(spec, "cutover")))
    return GW_OK;
  const char *by = json_get_str(spec, "cutover.approvedBy");
  const char *old_by = c->old ? json_get_str(c->old, "spec.cutover.approvedBy") : NULL;
  const char *who = username(c);
  if(approving(c)) {
    if(who && (!by || !*by || str_eq(by, old_by)))
      return json_set_str(spec, "cutover.approvedBy", who);
  } else if(!json_get(spec, "cutover.approvedBy") && old_by)
    return json_set_str(spec, "cutover.approvedBy", old_by);
  return GW_OK;
}

static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  cJSON *spec = json_get_mut(obj, "spec");
  if(!cJSON_IsObject(spec))
    return GW_OK;
  gw_rc rc = conditional_defaults(c->policy, spec);
  if(!rc)
    rc = stamp_approver(c, spec);
  return rc;
}

/* A copy of o's spec with the conditional defaults, for comparing a stored object written
 * while the webhook was not defaulting; NULL when out of memory (flagged in e). */
static cJSON *normalized_spec(const struct api_ctx *c, const cJSON *o, struct ferrs *e)
{
  const cJSON *spec = json_get(o, "spec");
  cJSON *d = spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
  if(!d || conditional_defaults(c->policy, d)) {
    cJSON_Delete(d);
    e->oom = true;
    return NULL;
  }
  return d;
}

/* ---- rules on CREATE and UPDATE ---- */

static void check_name_length(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->op != API_CREATE)
    return; /* a name cannot change, and refusing updates would strand finalizers */
  const char *name = json_get_str(c->obj, "metadata.name");
  const char *gen = json_get_str(c->obj, "metadata.generateName");
  if(name && *name) {
    if(strlen(name) > MIGRATION_NAME_MAX)
      rule_failf(e, r, NULL,
                 "must be at most %d characters, got %zu: runner Jobs are named "
                 "<name>-<step>-<attempt> (the longest is <name>-" MIGRATION_LONGEST_STEP
                 "-%d) and Kubernetes copies a Job's name into a label value of at most %d "
                 "characters; choose a shorter name",
                 MIGRATION_NAME_MAX, strlen(name), MIGRATION_BACKOFF_LIMIT_MAX + 1,
                 MIGRATION_LABEL_VALUE_MAX);
  } else if(gen && strlen(gen) > MIGRATION_GENERATE_NAME_MAX)
    rule_failf(e, r, "metadata.generateName",
               "must be at most %d characters, got %zu: Kubernetes adds 5 characters and a "
               "Migration's name is limited to %d so that its runner Jobs' names fit a label "
               "value; choose a shorter prefix",
               MIGRATION_GENERATE_NAME_MAX, strlen(gen), MIGRATION_NAME_MAX);
}

static void check_distinct_databases(const struct api_ctx *c, const struct rule *r,
                                     struct ferrs *e)
{
  const char *sn = json_get_str(c->obj, "spec.source.connectionSecretRef.name");
  const char *tn = json_get_str(c->obj, "spec.target.connectionSecretRef.name");
  const char *sk = json_get_str(c->obj, "spec.source.connectionSecretRef.key");
  const char *tk = json_get_str(c->obj, "spec.target.connectionSecretRef.key");
  if(sn && tn && !strcmp(sn, tn) && str_eq(sk ? sk : "uri", tk ? tk : "uri"))
    rule_failf(e, r, NULL,
               "names the same Secret and key as the source (\"%s\", key \"%s\"): a migration "
               "copies one database into another; point the target at the destination's URI",
               tn, tk ? tk : "uri");
}

static void check_cutover_needs_follow(const struct api_ctx *c, const struct rule *r,
                                       struct ferrs *e)
{
  const cJSON *cutover = json_get(c->obj, "spec.cutover");
  if(cutover && !cJSON_IsNull(cutover) && !is_live(c->obj))
    rule_fail(e, r);
}

static void check_stashed_lag(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  cJSON *lag = migration_stashed_lag(c->obj);
  if(lag)
    rule_fail(e, r);
  cJSON_Delete(lag);
}

/* A byte count: "1.5Mi" is whole bytes, "500m" or "0.5" is not; s passed quantity_parse. */
static bool whole_bytes(const char *s)
{
  static const struct {
    const char *sfx;
    double mul;
  } units[] = { { "", 1 },      { "Ki", 0x1p10 }, { "Mi", 0x1p20 }, { "Gi", 0x1p30 },
                { "Ti", 0x1p40 }, { "Pi", 0x1p50 }, { "Ei", 0x1p60 }, { "k", 1e3 },
                { "M", 1e6 },   { "G", 1e9 },     { "T", 1e12 },    { "P", 1e15 },
                { "E", 1e18 } };
  char *end;
  double v = strtod(s, &end);
  if(end == s)
    return false;
  for(size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
    if(!strcmp(end, units[i].sfx)) {
      double b = v * units[i].mul;
      return fabs(b - round(b)) < 1e-6;
    }
  return false; /* m, u, n: fractions of a byte */
}

static void check_lag_bytes(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *s = json_get_str(c->obj, "spec.follow.maxCatchupLag");
  int64_t v;
  if(s && quantity_parse(s, &v) && !whole_bytes(s))
    rule_failf(e, r, NULL, "must be a whole number of bytes such as \"16Mi\" or 16777216, got "
               "\"%s\"", s);
}

static void check_approval_context(const struct api_ctx *c, const struct rule *r,
                                   struct ferrs *e)
{
  if(!approved(c->obj))
    return;
  const char *mode = json_get_str(c->obj, "spec.cutover.mode");
  if(!is_live(c->obj))
    rule_failf(e, r, NULL, "cannot be true on a one-time clone: only a live migration "
               "(spec.follow, v1alpha1 spec.live: true) has a cutover to approve; remove it");
  else if(mode && !strcmp(mode, "Automatic"))
    rule_failf(e, r, NULL, "cannot be true with spec.cutover.mode Automatic: the operator cuts "
               "over by itself once caught up, nobody approves; remove approved, or set the "
               "mode to Manual to decide yourself");
}

static void check_approved_by(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *by = json_get_str(c->obj, "spec.cutover.approvedBy");
  const char *old_by = c->old ? json_get_str(c->old, "spec.cutover.approvedBy") : NULL;
  const char *who = username(c);
  if(approving(c)) {
    if(!by)
      ferrs_add(e, FERR_REQUIRED, r->field,
                "must record who approved: godwit's mutating webhook stamps it when "
                "spec.cutover.approved becomes true; check that the webhook is installed");
    else if(who && strcmp(by, who))
      rule_failf(e, r, NULL,
                 "is \"%s\" but the approval comes from \"%s\": approvedBy records who "
                 "approved and only the webhook writes it; remove it and approve again",
                 by, who);
  } else if(!str_eq(by, old_by) && (by || approved(c->obj))) {
    if(by)
      rule_failf(e, r, NULL,
                 "cannot be set or changed by hand (to \"%s\"): it records who approved the "
                 "cutover and is stamped when spec.cutover.approved becomes true", by);
    else
      rule_failf(e, r, NULL, "cannot be removed while spec.cutover.approved is true: it "
                 "records who approved the cutover");
  }
}

static void check_approver_policy(const struct api_ctx *c, const struct rule *r,
                                  struct ferrs *e)
{
  const char *who = username(c);
  if(!c->policy || !who || !approving(c))
    return;
  if(!policy_is_approver(c->policy, who, c->user->groups, c->user->ngroups))
    rule_failf(e, r, NULL, "\"%s\" may not approve cutovers under the admission policy "
               "(approvals.approvers); ask an approver it lists", who);
}

static void check_compare_nonempty(const struct api_ctx *c, const struct rule *r,
                                   struct ferrs *e)
{
  const cJSON *a = json_get(c->obj, "spec.verify.compare");
  if(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0)
    rule_fail(e, r);
}

static int filter_count(const cJSON *o, const char *section)
{
  char path[96];
  snprintf(path, sizeof(path), "spec.clone.filters.%s", section);
  const cJSON *a = json_get(o, path);
  return cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
}

static bool both_sections(const cJSON *o, const char *a, const char *b)
{
  return filter_count(o, a) > 0 && filter_count(o, b) > 0;
}

static void check_tables_exclusive(const struct api_ctx *c, const struct rule *r,
                                   struct ferrs *e)
{
  if(both_sections(c->obj, "includeOnlyTables", "excludeTables"))
    rule_fail(e, r);
}

static void check_schemas_vs_tables(const struct api_ctx *c, const struct rule *r,
                                    struct ferrs *e)
{
  if(both_sections(c->obj, "includeOnlyTables", "excludeSchemas"))
    rule_fail(e, r);
}

static void check_schemas_exclusive(const struct api_ctx *c, const struct rule *r,
                                    struct ferrs *e)
{
  if(both_sections(c->obj, "includeOnlySchemas", "excludeSchemas"))
    rule_fail(e, r);
}

/* Unquotes the schema part of "schema.name" into buf. */
static const char *filter_schema(const char *s, char *buf, size_t n)
{
  const char *dot = strchr(s, '.');
  size_t len = dot ? (size_t)(dot - s) : strlen(s);
  if(len >= 2 && s[0] == '"' && s[len - 1] == '"') {
    s++;
    len -= 2;
  }
  snprintf(buf, n, "%.*s", (int)len, s);
  return buf;
}

static void check_table_in_schemas(const struct api_ctx *c, const struct rule *r,
                                   struct ferrs *e)
{
  const cJSON *schemas = json_get(c->obj, "spec.clone.filters.includeOnlySchemas");
  if(!cJSON_IsArray(schemas) || !cJSON_GetArraySize(schemas))
    return;
  const cJSON *t;
  int i = 0;
  cJSON_ArrayForEach(t, json_get(c->obj, "spec.clone.filters.includeOnlyTables"))
  {
    char schema[80], field[96];
    bool found = false;
    const cJSON *s;
    if(!cJSON_IsString(t)) {
      i++;
      continue;
    }
    filter_schema(t->valuestring, schema, sizeof(schema));
    cJSON_ArrayForEach(s, schemas) found |= cJSON_IsString(s) && !strcmp(s->valuestring, schema);
    snprintf(field, sizeof(field), "spec.clone.filters.includeOnlyTables[%d]", i++);
    if(!found)
      rule_failf(e, r, field, "is in schema \"%s\", which spec.clone.filters.includeOnlySchemas "
                 "leaves out, so it would not be copied; add the schema there or remove the "
                 "table", schema);
  }
}

static void check_workdir_size(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  int64_t v;
  if(quantity_of(json_get(c->obj, "spec.worker.workDir.size"), &v) && v <= 0)
    rule_fail(e, r);
}

/* Kubernetes' toleration rules (ValidateTolerations): an empty key goes with Exists, Exists
 * takes no value, tolerationSeconds only with NoExecute. */
static void check_tolerations(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  int i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, json_get(c->obj, "spec.worker.tolerations"))
  {
    char field[96];
    const char *key = json_get_str(t, "key"), *op = json_get_str(t, "operator");
    const char *value = json_get_str(t, "value"), *effect = json_get_str(t, "effect");
    bool exists = op && !strcmp(op, "Exists");
    if((!key || !*key) && !exists) {
      snprintf(field, sizeof(field), "spec.worker.tolerations[%d].operator", i);
      rule_failf(e, r, field, "must be Exists when key is empty (a toleration of every taint)");
    }
    if(exists && value && *value) {
      snprintf(field, sizeof(field), "spec.worker.tolerations[%d].value", i);
      rule_failf(e, r, field, "must be empty when operator is Exists");
    }
    if(json_get(t, "tolerationSeconds") && (!effect || strcmp(effect, "NoExecute"))) {
      snprintf(field, sizeof(field), "spec.worker.tolerations[%d].effect", i);
      rule_failf(e, r, field, "must be NoExecute when tolerationSeconds is set");
    }
    i++;
  }
}

static void check_runner_pod_metadata(const struct api_ctx *c, const struct rule *r,
                                      struct ferrs *e)
{
  if(!api_unchanged(c, r->field))
    podmeta_check(json_get(c->obj, r->field), r->field, c->policy, e);
}

static void check_requests_within_limits(const struct api_ctx *c, const struct rule *r,
                                         struct ferrs *e)
{
  const cJSON *limits = json_get(c->obj, "spec.worker.resources.limits");
  const cJSON *req;
  cJSON_ArrayForEach(req, json_get(c->obj, "spec.worker.resources.requests"))
  {
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(limits, req->string);
    int64_t rv, lv;
    if(!lim || !quantity_of(req, &rv) || !quantity_of(lim, &lv) || rv <= lv)
      continue;
    char field[160], *rs = json_preview(req, 40), *ls = json_preview(lim, 40);
    snprintf(field, sizeof(field), "spec.worker.resources.requests[%s]", req->string);
    rule_failf(e, r, field, "is %s, more than its limit %s: Kubernetes refuses such a "
               "container; lower the request or raise the limit", rs ? rs : "?", ls ? ls : "?");
    free(rs);
    free(ls);
  }
}

/* ---- admission policy ---- */

/* On UPDATE a value the stored object already had passes: an admin lowering a limit must not
 * block suspending or approving a migration admitted under the old one. */

static void check_image_policy(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *image = json_get_str(c->obj, "spec.worker.image");
  if(c->policy && image && !policy_image_allowed(c->policy, image) && !api_unchanged(c, r->field))
    rule_failf(e, r, NULL, "\"%s\" is not from a registry the admission policy allows "
               "(images.allowedRegistries); use an allowed registry or ask the cluster admin",
               image);
}

static void check_int_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e,
                            int max, const char *limit_name)
{
  const cJSON *v = json_get(c->obj, r->field);
  if(c->policy && max > 0 && json_is_integer(v) && v->valuedouble > max && !api_unchanged(c, r->field))
    rule_failf(e, r, NULL, "is %d, above the admission policy's limit of %d (limits.%s); "
               "lower it or ask the cluster admin", (int)v->valuedouble, max, limit_name);
}

static void check_table_jobs_policy(const struct api_ctx *c, const struct rule *r,
                                    struct ferrs *e)
{
  if(c->policy)
    check_int_limit(c, r, e, c->policy->limits.max_table_jobs, "maxTableJobs");
}

static void check_index_jobs_policy(const struct api_ctx *c, const struct rule *r,
                                    struct ferrs *e)
{
  if(c->policy)
    check_int_limit(c, r, e, c->policy->limits.max_index_jobs, "maxIndexJobs");
}

static void check_backoff_policy(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->policy)
    check_int_limit(c, r, e, c->policy->limits.max_backoff_limit, "maxBackoffLimit");
}

static void check_workdir_policy(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *size = json_get(c->obj, "spec.worker.workDir.size");
  int64_t v, max = c->policy ? c->policy->limits.max_work_dir_bytes : 0;
  if(max > 0 && quantity_of(size, &v) && v > max && !api_unchanged(c, r->field)) {
    char *s = json_preview(size, 40);
    rule_failf(e, r, NULL, "is %s, above the admission policy's limit of %lld bytes "
               "(limits.maxWorkDirSize); lower it or ask the cluster admin", s ? s : "?",
               (long long)max);
    free(s);
  }
}

static const struct rule rules[] = {
  { "metadata.name", FERR_TOO_LONG, check_name_length,
    "must be short enough for its runner Jobs' names (<name>-<step>-<attempt>) to fit a "
    "63-character label value; choose a shorter name" },
  { "spec.target.connectionSecretRef", FERR_INVALID, check_distinct_databases,
    "must not name the same Secret and key as the source: a migration copies one database "
    "into another" },
  { "spec.cutover", FERR_FORBIDDEN, check_cutover_needs_follow,
    "only applies to live migrations: make the migration live (spec.follow; v1alpha1: "
    "spec.live: true) or remove the cutover settings" },
  { "spec.maxCatchupLag", FERR_FORBIDDEN, check_stashed_lag,
    "only applies to live migrations: set spec.live to true or remove spec.maxCatchupLag" },
  { "spec.follow.maxCatchupLag", FERR_INVALID, check_lag_bytes,
    "must be a whole number of bytes such as \"16Mi\" or 16777216" },
  { "spec.cutover.approved", FERR_FORBIDDEN, check_approval_context,
    "can only be true on a live migration whose cutover mode is Manual" },
  { "spec.cutover.approvedBy", FERR_FORBIDDEN, check_approved_by,
    "records who approved the cutover: only the webhook writes it, with the authenticated "
    "user, when spec.cutover.approved becomes true" },
  { "spec.verify.compare", FERR_REQUIRED, check_compare_nonempty,
    "must list at least one check (schema, data); remove spec.verify to skip verification" },
  { "spec.clone.filters.excludeTables", FERR_FORBIDDEN, check_tables_exclusive,
    "cannot be combined with spec.clone.filters.includeOnlyTables (pgcopydb refuses "
    "exclude-table with include-only-table): list only the tables to copy, or only those to "
    "skip" },
  { "spec.clone.filters.excludeSchemas", FERR_FORBIDDEN, check_schemas_vs_tables,
    "cannot be combined with spec.clone.filters.includeOnlyTables (pgcopydb does not allow "
    "exclude-schema with include-only-table): includeOnlyTables already leaves out every "
    "other table" },
  { "spec.clone.filters.excludeSchemas", FERR_FORBIDDEN, check_schemas_exclusive,
    "cannot be combined with spec.clone.filters.includeOnlySchemas (pgcopydb refuses "
    "exclude-schema with include-only-schema): list only the schemas to copy, or only those "
    "to skip" },
  { "spec.clone.filters.includeOnlyTables[*]", FERR_INVALID, check_table_in_schemas,
    "must be in a schema that spec.clone.filters.includeOnlySchemas lists, or it would not be "
    "copied" },
  { "spec.worker.workDir.size", FERR_INVALID, check_workdir_size,
    "must be greater than zero: pgcopydb keeps its dumps and progress there" },
  { "spec.worker.resources.requests[*]", FERR_INVALID, check_requests_within_limits,
    "must not exceed the limit of the same resource" },
  { "spec.worker.tolerations", FERR_INVALID, check_tolerations,
    "must follow Kubernetes' toleration rules" },
  { "spec.worker.podMetadata", FERR_FORBIDDEN, check_runner_pod_metadata,
    "labels and annotations must have valid keys, stay off reserved prefixes and pass the "
    "admission policy's podMetadata rules" },
  { "spec.worker.image", FERR_FORBIDDEN, check_image_policy,
    "must come from a registry the admission policy allows (images.allowedRegistries)",
    .policy = true },
  { "spec.clone.tableJobs", FERR_FORBIDDEN, check_table_jobs_policy,
    "must not exceed the admission policy's limits.maxTableJobs", .policy = true },
  { "spec.clone.indexJobs", FERR_FORBIDDEN, check_index_jobs_policy,
    "must not exceed the admission policy's limits.maxIndexJobs", .policy = true },
  { "spec.backoffLimit", FERR_FORBIDDEN, check_backoff_policy,
    "must not exceed the admission policy's limits.maxBackoffLimit", .policy = true },
  { "spec.worker.workDir.size", FERR_FORBIDDEN, check_workdir_policy,
    "must not exceed the admission policy's limits.maxWorkDirSize", .policy = true },
  { "spec.cutover.approved", FERR_FORBIDDEN, check_approver_policy,
    "may only be set to true by an approver the admission policy lists (approvals.approvers)",
    .policy = true },
  { 0 }
};

/* ---- rules on UPDATE only ---- */

static void check_clone_frozen(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!copy_started(c->old) || terminal(c->old))
    return; /* a finished migration is refused as a whole */
  cJSON *old = normalized_spec(c, c->old, e), *now = normalized_spec(c, c->obj, e);
  for(const struct sch_field *f = clone_fields; old && now && f->name; f++) {
    char path[64], field[96];
    snprintf(path, sizeof(path), "clone.%s", f->name);
    const cJSON *a = json_get(old, path), *b = json_get(now, path);
    if(json_equal_opt(a, b))
      continue;
    char *was = a ? json_preview(a, 60) : NULL, *is = b ? json_preview(b, 60) : NULL;
    snprintf(field, sizeof(field), "spec.%s", path);
    rule_failf(e, r, field,
               "cannot change from %s to %s once the copy has started (phase %s): attempts "
               "resume with the options the copy began with; create a new Migration to copy "
               "with other options",
               was ? was : "unset", is ? is : "unset", phase_name(c->old));
    free(was);
    free(is);
  }
  cJSON_Delete(old);
  cJSON_Delete(now);
}

static void check_follow_frozen(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(copy_started(c->old) && !terminal(c->old) && is_live(c->old) != is_live(c->obj))
    rule_failf(e, r, NULL, "cannot be %s once the copy has started (phase %s): a live migration "
               "streams from the snapshot its clone began with; create a new Migration%s",
               is_live(c->obj) ? "added" : "removed", phase_name(c->old),
               is_live(c->obj) ? " to migrate live" : ", or approve the cutover to finish");
}

static void check_terminal(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!terminal(c->old))
    return;
  cJSON *was = normalized_spec(c, c->old, e), *now = normalized_spec(c, c->obj, e);
  if(was && now && !json_equal(was, now)) {
    const char *p = phase_name(c->old);
    rule_failf(e, r, NULL, "cannot change: the Migration has finished (%s%s); create a new "
               "Migration to run it again",
               *p ? "phase " : "condition ",
               *p ? p : (json_condition_true(c->old, "Failed") ? "Failed" : "Complete"));
  }
  cJSON_Delete(was);
  cJSON_Delete(now);
}

static void check_unapprove(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(approved(c->old) && !approved(c->obj) && cutover_started(c->old))
    rule_failf(e, r, NULL, "cannot be withdrawn once the cutover has started (%s%s): the "
               "stream is stopping at the cutover position and cannot resume",
               phase_index(c->old) >= 0 ? "phase " : "cutover position ",
               phase_index(c->old) >= 0 ? phase_name(c->old)
                                        : json_get_str(c->old, "status.cutoverLSN"));
}

static const struct rule update_rules[] = {
  { "spec.source", FERR_INVALID, api_check_immutable,
    "is immutable: a Migration copies from the database it was created with; create a new "
    "Migration to copy from another" },
  { "spec.target", FERR_INVALID, api_check_immutable,
    "is immutable: a Migration copies into the database it was created with; create a new "
    "Migration to copy into another" },
  { "spec.dryRun", FERR_INVALID, api_check_immutable,
    "is immutable: a dry run cannot become a real migration or the reverse; create a new "
    "Migration instead" },
  { "spec.clone", FERR_FORBIDDEN, check_clone_frozen,
    "cannot change once the copy has started (past phase Validating); create a new Migration "
    "to copy with other options" },
  { "spec.follow", FERR_FORBIDDEN, check_follow_frozen,
    "cannot be added or removed once the copy has started: the worker runs a live migration or "
    "a clone from the start; create a new Migration" },
  { "spec", FERR_FORBIDDEN, check_terminal,
    "cannot change once the Migration has finished (Completed or Failed); create a new "
    "Migration to run it again" },
  { "spec.cutover.approved", FERR_FORBIDDEN, check_unapprove,
    "cannot be withdrawn once the cutover has started (phase CuttingOver or later)" },
  { 0 }
};

/* ---- warnings ---- */

static bool image_pinned(const char *image)
{
  const char *slash = strrchr(image, '/');
  return strchr(image, '@') || strchr(slash ? slash : image, ':');
}

/* Set by this request: a CREATE, or a changed value. Risky settings warn when they are made,
 * not on every later update of the object. */
static bool introduced(const struct api_ctx *c, const char *path)
{
  return !c->old || !json_equal_opt(json_get(c->old, path), json_get(c->obj, path));
}

static void warn(const struct api_ctx *c, struct strlist *w)
{
  const cJSON *o = c->obj;
  const char *mode = json_get_str(o, "spec.cutover.mode");
  const char *image = json_get_str(o, "spec.worker.image");
  const cJSON *backoff = json_get(o, "spec.backoffLimit");
  bool live = is_live(o), made_live = introduced(c, "spec.follow");
  int64_t lag;
  if(cJSON_IsTrue(json_get(o, "spec.clone.skipVacuum")) && introduced(c, "spec.clone.skipVacuum"))
    strlist_addf(w, "spec.clone.skipVacuum leaves the target without planner statistics until "
                 "ANALYZE runs; it needs pgcopydb 0.12+ (with Debian's 0.10 the vacuum runs)");
  if(filter_count(o, "includeOnlySchemas") &&
     introduced(c, "spec.clone.filters.includeOnlySchemas"))
    strlist_addf(w, "spec.clone.filters.includeOnlySchemas needs pgcopydb 0.13+: with an older "
                 "pgcopydb (Debian's 0.10) the preflight fails rather than copy every schema");
  if(cJSON_GetArraySize(json_get(o, "spec.verify.compare")) > 0 &&
     introduced(c, "spec.verify.compare"))
    strlist_addf(w, "spec.verify.compare is computed by godwit's runner on every pgcopydb "
                 "version (not pgcopydb compare); a data compare reads every table of both "
                 "servers once the copy is done");
  if(live && mode && !strcmp(mode, "Automatic") &&
     (made_live || introduced(c, "spec.cutover.mode")))
    strlist_addf(w, "spec.cutover.mode Automatic (v1alpha1: manualCutover: false) cuts over as "
                 "soon as the migration is caught up, with nobody approving");
  else if(live && approving(c) && phase_index(c->old) < PH_CUTOVER_PENDING)
    strlist_addf(w, "spec.cutover.approved is true before the migration is caught up: the "
                 "cutover will start as soon as it catches up, with no further confirmation");
  if(json_is_integer(backoff) && backoff->valuedouble == 0 && introduced(c, "spec.backoffLimit"))
    strlist_addf(w, "spec.backoffLimit is 0: the first failed attempt, even a transient "
                 "network error, fails the migration for good");
  if(quantity_of(json_get(o, "spec.follow.maxCatchupLag"), &lag) && lag == 0 &&
     introduced(c, "spec.follow.maxCatchupLag"))
    strlist_addf(w, "spec.follow.maxCatchupLag is 0: the migration is caught up only when two "
                 "samples find no lag at all, which a busy source may never allow");
  if(live && cJSON_IsTrue(json_get(o, "spec.suspend")) &&
     (made_live || introduced(c, "spec.suspend")))
    strlist_addf(w, "spec.suspend keeps this live migration's replication slot, which holds WAL "
                 "on the source until it resumes or is deleted; watch the source's disk");
  if(image && !image_pinned(image) && introduced(c, "spec.worker.image"))
    strlist_addf(w, "spec.worker.image (v1alpha1: spec.image) has no tag or digest: attempts may "
                 "run different pgcopydb versions; pin one, e.g. \"%s:0.18\"", image);
}

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = migration_v1alpha1_spec, .status = migration_v1alpha1_status,
    .moves = migration_v1alpha1_moves, .to_hub = migration_v1alpha1_to_hub,
    .from_hub = migration_v1alpha1_from_hub, .path_aliases = migration_v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = v1_status },
};

static const struct printer_column columns[] = {
  { "Phase", "string", ".status.phase", "What the migration is doing now", 0 },
  { "Source", "string", ".spec.source.connectionSecretRef.name", "Secret of the source", 0 },
  { "Target", "string", ".spec.target.connectionSecretRef.name", "Secret of the target", 0 },
  { "Lag", "integer", ".status.lagBytes", "Replication lag in bytes at the last sample", 1 },
  { "Cutover", "string", ".spec.cutover.mode", "Manual or Automatic cutover", 1 },
  { "Attempts", "integer", ".status.attempts", "Worker attempts started", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "pgmig", NULL };
static const char *const categories[] = { "pgcopydb", NULL };

const struct api_kind api_migration = {
  .group = MIGRATION_GROUP,
  .kind = "Migration",
  .plural = "migrations",
  .singular = "migration",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "Migration copies a PostgreSQL database into another with pgcopydb: a one-time clone, "
          "or a live migration that streams changes until a cutover, then verifies the result.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
  .warn = warn,
};
