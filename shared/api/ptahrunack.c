/*
 * PtahMigrationRunAcknowledgment (ptah.run): a person's statement of what an unresolved
 * PtahMigration run did, which settles it (seed 001: UnresolvedRunAcknowledged). v1 is the hub;
 * v1alpha1 is flat and says the outcome as a boolean.
 *
 * Like an approval it is stamped (spec.acknowledgedBy), limited to the policy's approvers and
 * immutable. The controller consumes it only when it names the run the PtahMigration recorded
 * as unresolved, and reads the database again before planning whatever the stated outcome.
 */
#include <string.h>

#include "api/api.h"
#include "api/ptah_common.h"
#include "json.h"

static const char *const outcomes[] = { "Applied", "NotApplied", "Partial", NULL };
static const char *const phases[] = { "Pending", "Accepted", "Refused", NULL };

static const struct sch_field v1_spec[] = {
  { .name = "migrationRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED,
    .fields = sch_local_ref_fields,
    .desc = "The PtahMigration, in this namespace, whose unresolved run is settled." },
  { .name = "operation", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_label,
    .desc = "The operation id of the unresolved run, as status.unresolvedRun.operation of the "
            "PtahMigration shows it. An acknowledgment of any other operation settles nothing." },
  { .name = "outcome", .type = SCH_STRING, .enums = outcomes,
    .desc = "What the run did, as the person established it (required): Applied (everything it "
            "ran committed), NotApplied (nothing committed) or Partial (some versions did)." },
  { .name = "acknowledgedBy", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who acknowledges. Leave it empty: the webhook fills it in from the authenticated "
            "user and refuses any other value." },
  { .name = "comment", .type = SCH_STRING, .max_len = 1024,
    .desc = "How the outcome was established, for the audit trail." },
  { 0 }
};

static const struct sch_field status_fields[] = {
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "phase", .type = SCH_STRING, .enums = phases,
    .desc = "Pending, Accepted (it settled the run) or Refused (it names no unresolved run, or "
            "the controller's own checks failed)." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." },
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "migration", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "The PtahMigration whose unresolved run is settled (v1: spec.migrationRef.name)." },
  { .name = "operation", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_label,
    .desc = "The operation id of the unresolved run." },
  { .name = "committed", .type = SCH_BOOL,
    .desc = "Whether the run committed (v1: spec.outcome, true is Applied, false is "
            "NotApplied; a v1 Partial travels in the godwit.dev/v1-fields annotation)." },
  { .name = "acknowledgedBy", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who acknowledges; filled in by the webhook." },
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.migration", "spec.migrationRef.name" },
  { NULL, NULL }
};

static const struct conv_move v1alpha1_aliases[] = {
  { "spec.migration", "spec.migrationRef" },
  { "spec.committed", "spec.outcome" },
  { PTAH_V1_FIELDS, "spec.comment" },
  { NULL, NULL }
};

static gw_rc v1alpha1_to_hub(cJSON *obj)
{
  return ptah_bool_to_enum(obj, "spec.committed", "spec.outcome", "Applied", "NotApplied");
}

static gw_rc v1alpha1_from_hub(cJSON *obj)
{
  return ptah_enum_to_bool(obj, "spec.outcome", "spec.committed", "Applied", "NotApplied");
}

static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  return ptah_stamp_user(c, obj, "spec.acknowledgedBy");
}

static void check_outcome(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *v = json_get(c->obj, r->field);
  if(!v || cJSON_IsNull(v))
    rule_fail(e, r);
}

static const struct rule rules[] = {
  { "spec.outcome", FERR_REQUIRED, check_outcome,
    "is required: say what the run did, Applied, NotApplied or Partial (v1alpha1: committed "
    "true or false)" },
  { "spec.acknowledgedBy", FERR_REQUIRED, ptah_check_stamped,
    "was not filled in: godwit's mutating webhook sets it from the authenticated user; check "
    "that the godwit MutatingWebhookConfiguration is installed and covers "
    "ptahmigrationrunacknowledgments" },
  { "spec.acknowledgedBy", FERR_FORBIDDEN, ptah_check_not_forged,
    "leave it empty and the webhook fills it in with your user name" },
  { "spec.acknowledgedBy", FERR_FORBIDDEN, ptah_check_approver,
    "is not among the admission policy's approvers (approvals.approvers), who alone may "
    "settle unresolved runs; ask one of them, or ask the cluster admin to add you",
    .policy = true },
  { 0 }
};

static const struct rule update_rules[] = {
  { "spec", FERR_FORBIDDEN, api_check_immutable,
    "is immutable: an acknowledgment is a statement about one run by one person; create a new "
    "PtahMigrationRunAcknowledgment instead" },
  { 0 }
};

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = status_fields, .moves = v1alpha1_moves,
    .to_hub = v1alpha1_to_hub, .from_hub = v1alpha1_from_hub, .path_aliases = v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = status_fields },
};

static const struct printer_column columns[] = {
  { "Migration", "string", ".spec.migrationRef.name", "The PtahMigration", 0 },
  { "Operation", "string", ".spec.operation", "The run it settles", 0 },
  { "Outcome", "string", ".spec.outcome", "What the run did", 0 },
  { "By", "string", ".spec.acknowledgedBy", "Who acknowledged", 0 },
  { "Phase", "string", ".status.phase", "Whether it settled the run", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "ptahack", NULL };
static const char *const categories[] = { "ptah", NULL };

const struct api_kind api_ptahmigrationrunacknowledgment = {
  .group = PTAH_GROUP,
  .kind = "PtahMigrationRunAcknowledgment",
  .plural = "ptahmigrationrunacknowledgments",
  .singular = "ptahmigrationrunacknowledgment",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PtahMigrationRunAcknowledgment settles a PtahMigration run that ended without "
          "establishing what it committed: an approver states the outcome, and the migration "
          "reads its database again before it plans.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
};
