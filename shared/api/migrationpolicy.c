/*
 * MigrationPolicy (migration.podmotion.io): which pods may move, the modes they may move with,
 * and the freeze budget. v1beta1 is the hub; v1alpha1 is flat.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/podmotion_common.h"
#include "json.h"

static const char *const operators[] = { "In", "NotIn", "Exists", "DoesNotExist", NULL };

static const struct sch_field match_expression_fields[] = {
  { .name = "key", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_qualified_name,
    .desc = "The label key the expression applies to." },
  { .name = "operator", .type = SCH_STRING, .flags = SCH_REQUIRED, .enums = operators,
    .desc = "How the key relates to the values: In, NotIn, Exists or DoesNotExist." },
  { .name = "values", .type = SCH_ARRAY, .item = SCH_STRING, .format = &fmt_label_value,
    .flags = SCH_UNIQUE, .max_items = 64,
    .desc = "Label values; required for In and NotIn, forbidden for Exists and DoesNotExist." },
  { 0 }
};

static const struct sch_field selector_fields[] = {
  { .name = "matchLabels", .type = SCH_MAP, .item = SCH_STRING, .key_format = &fmt_qualified_name,
    .format = &fmt_label_value, .max_items = 64,
    .desc = "Pods whose labels include every one of these key/value pairs." },
  { .name = "matchExpressions", .type = SCH_ARRAY, .item = SCH_OBJECT,
    .fields = match_expression_fields, .max_items = 32,
    .desc = "Label selector requirements; all must hold." },
  { 0 }
};

static const char *const modes[] = { "PreCopy", "StopAndCopy", NULL };

static const struct sch_field status_fields[] = {
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." },
  { 0 }
};

static const struct sch_field v1beta1_spec[] = {
  { .name = "podSelector", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = selector_fields,
    .desc = "Which pods of this namespace the policy governs. An empty selector selects every "
            "pod." },
  { .name = "allowedModes", .type = SCH_ARRAY, .item = SCH_STRING, .enums = modes,
    .flags = SCH_UNIQUE, .max_items = 2, .dflt = "[\"PreCopy\",\"StopAndCopy\"]",
    .desc = "Migration strategies a PodMigration under this policy may use." },
  { .name = "freezeBudget", .type = SCH_STRING, .format = &fmt_duration, .dflt = "\"1s\"",
    .desc = "The longest the source pod may stay frozen during the checkpoint; a migration "
            "whose final round would exceed it rolls back. The measured p99 on one container "
            "with one TCP flow is 487ms." },
  { .name = "maxConcurrent", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 100, .dflt = "1",
    .desc = "How many PodMigrations under this policy may run at once in the namespace." },
  { .name = "destinationNodeSelector", .type = SCH_MAP, .item = SCH_STRING,
    .key_format = &fmt_qualified_name, .format = &fmt_label_value, .max_items = 32,
    .desc = "Labels a destination node must carry." },
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "selector", .type = SCH_MAP, .flags = SCH_REQUIRED, .item = SCH_STRING,
    .key_format = &fmt_qualified_name,
    .format = &fmt_label_value, .max_items = 64,
    .desc = "Labels a governed pod carries (v1beta1: spec.podSelector.matchLabels)." },
  { .name = "modes", .type = SCH_ARRAY, .item = SCH_STRING, .enums = modes, .flags = SCH_UNIQUE,
    .max_items = 2, .desc = "Allowed strategies (v1beta1: spec.allowedModes)." },
  { .name = "maxFreeze", .type = SCH_STRING, .format = &fmt_duration,
    .desc = "Freeze budget (v1beta1: spec.freezeBudget)." },
  { .name = "maxConcurrent", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 100, .desc = "How many migrations may run at once." },
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.selector", "spec.podSelector.matchLabels" },
  { "spec.modes", "spec.allowedModes" },
  { "spec.maxFreeze", "spec.freezeBudget" },
  { NULL, NULL }
};

static void check_expressions(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *exprs = json_get(c->obj, "spec.podSelector.matchExpressions");
  int i = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, exprs)
  {
    const char *op = json_get_str(x, "operator");
    const cJSON *values = json_get(x, "values");
    int n = cJSON_GetArraySize(values);
    char field[96];
    snprintf(field, sizeof(field), "spec.podSelector.matchExpressions[%d].values", i++);
    if(!op)
      continue;
    bool needs = !strcmp(op, "In") || !strcmp(op, "NotIn");
    if(needs && n == 0)
      rule_failf(e, r, field, "must list at least one value when operator is %s", op);
    else if(!needs && n > 0)
      rule_failf(e, r, field, "must be empty when operator is %s", op);
  }
}

static void check_modes(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *m = json_get(c->obj, "spec.allowedModes");
  if(cJSON_IsArray(m) && cJSON_GetArraySize(m) == 0)
    rule_fail(e, r);
}

static void check_freeze(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *s = json_get_str(c->obj, "spec.freezeBudget");
  int64_t ms;
  if(s && duration_parse_ms(s, &ms) && ms == 0)
    rule_fail(e, r);
}

static void check_freeze_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *s = json_get_str(c->obj, "spec.freezeBudget");
  int64_t ms;
  int max = c->policy ? c->policy->limits.max_freeze_budget_ms : 0;
  if(s && max && duration_parse_ms(s, &ms) && ms > max)
    rule_failf(e, r, NULL, "is %s, above the admission policy's limit of %dms; ask the cluster "
               "admin or lower it", s, max);
}

/* v1alpha1 has no podSelector object: a missing selector is reported on spec.selector. */
static const struct conv_move v1alpha1_aliases[] = {
  { "spec.selector", "spec.podSelector" },
  { NULL, NULL }
};

static const struct rule rules[] = {
  { "spec.podSelector.matchExpressions[*].values", FERR_INVALID, check_expressions,
    "In and NotIn need at least one value; Exists and DoesNotExist take none" },
  { "spec.allowedModes", FERR_REQUIRED, check_modes,
    "must list at least one mode (PreCopy or StopAndCopy); delete the policy to forbid "
    "migrations instead" },
  { "spec.freezeBudget", FERR_INVALID, check_freeze,
    "must be greater than zero: no migration can freeze a pod for no time" },
  { "spec.freezeBudget", FERR_FORBIDDEN, check_freeze_limit,
    "must not exceed the admission policy's limits.maxFreezeBudgetMilliseconds", .policy = true },
  { 0 }
};

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = status_fields, .moves = v1alpha1_moves,
    .path_aliases = v1alpha1_aliases },
  { .name = "v1beta1", .spec = v1beta1_spec, .status = status_fields },
};

static const struct printer_column columns[] = {
  { "Modes", "string", ".spec.allowedModes", "Allowed migration strategies", 0 },
  { "Freeze-Budget", "string", ".spec.freezeBudget", "Longest allowed freeze", 0 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "mpol", NULL };
static const char *const categories[] = { "podmotion", NULL };

const struct api_kind api_migrationpolicy = {
  .group = PODMOTION_GROUP,
  .kind = "MigrationPolicy",
  .plural = "migrationpolicies",
  .singular = "migrationpolicy",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "MigrationPolicy says which pods of its namespace may be moved by a PodMigration, "
          "with which strategies, and how long the source may stay frozen.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
};
