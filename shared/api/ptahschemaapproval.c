/*
 * PtahSchemaApproval (ptah.run): a person's approval of one immutable PtahSchema plan, named by
 * its digest. v1 is the hub; v1alpha1 is flat.
 *
 * The approval boundary: the webhook stamps the authenticated user into spec.approver, refuses
 * any other value (forgery), refuses users outside the policy's approvers, refuses the plan's
 * author when self-approval is forbidden, and refuses every change of the spec. The webhook
 * cannot read the PtahSchema, so self-approval is judged here on spec.planAuthor as written;
 * the controller re-checks it against status.plan.author, and judges staleness (ApprovalStale).
 */
#include <string.h>

#include "api/api.h"
#include "api/ptah_common.h"
#include "json.h"

static const char *const phases[] = { "Pending", "Accepted", "Applied", "Stale", "Refused", NULL };

static const struct sch_field v1_spec[] = {
  { .name = "schemaRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = sch_local_ref_fields,
    .desc = "The PtahSchema, in this namespace, whose plan is approved." },
  { .name = "planDigest", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_sha256_digest,
    .desc = "The digest of the approved plan, as status.plan.digest of the PtahSchema shows it. "
            "An approval of any other plan is stale and never consumed (ApprovalStale)." },
  { .name = "approver", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who approves. Leave it empty: the webhook fills it in from the authenticated user "
            "and refuses any other value." },
  { .name = "planAuthor", .type = SCH_STRING, .format = &fmt_username,
    .desc = "The plan's author, copied from status.plan.author of the PtahSchema. Lets the "
            "webhook refuse self-approval at once; the controller checks it against its own "
            "record either way." },
  { .name = "comment", .type = SCH_STRING, .max_len = 1024,
    .desc = "Why the plan is approved, for the audit trail." },
  { 0 }
};

#define STATUS_FIELDS                                                                            \
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,              \
    .desc = "The metadata.generation the controller last acted on." },                          \
  { .name = "phase", .type = SCH_STRING, .enums = phases,                                       \
    .desc = "Pending, Accepted (matches the current plan), Applied (its plan was applied), "    \
            "Stale (the plan changed: never consumed) or Refused (the controller's own checks " \
            "failed)." },                                                                       \
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,       \
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." }

static const struct sch_field status_fields[] = {
  STATUS_FIELDS,
  { 0 }
};

static const struct sch_field v1alpha1_spec[] = {
  { .name = "schema", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_dns1123_subdomain,
    .desc = "The PtahSchema whose plan is approved (v1: spec.schemaRef.name)." },
  { .name = "digest", .type = SCH_STRING, .flags = SCH_REQUIRED, .format = &fmt_sha256_digest,
    .desc = "The digest of the approved plan (v1: spec.planDigest)." },
  { .name = "approvedBy", .type = SCH_STRING, .format = &fmt_username,
    .desc = "Who approves; filled in by the webhook (v1: spec.approver)." },
  { 0 }
};

static const struct conv_move v1alpha1_moves[] = {
  { "spec.schema", "spec.schemaRef.name" },
  { "spec.digest", "spec.planDigest" },
  { "spec.approvedBy", "spec.approver" },
  { NULL, NULL }
};

static const struct conv_move v1alpha1_aliases[] = {
  { "spec.schema", "spec.schemaRef" },
  { PTAH_V1_FIELDS, "spec.planAuthor" },
  { PTAH_V1_FIELDS, "spec.comment" },
  { NULL, NULL }
};

static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  return ptah_stamp_user(c, obj, "spec.approver");
}

static void check_self_approval(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *who = ptah_user(c);
  if(!who)
    who = json_get_str(c->obj, "spec.approver");
  const char *author = json_get_str(c->obj, "spec.planAuthor");
  bool allowed = c->policy && c->policy->allow_self_approval;
  if(c->op == API_CREATE && who && author && !strcmp(who, author) && !allowed)
    rule_failf(e, r, NULL, "user \"%s\" %s", who, r->msg);
}

static const struct rule rules[] = {
  { "spec.approver", FERR_REQUIRED, ptah_check_stamped,
    "was not filled in: godwit's mutating webhook sets it from the authenticated user; check "
    "that the godwit MutatingWebhookConfiguration is installed and covers ptahschemaapprovals" },
  { "spec.approver", FERR_FORBIDDEN, ptah_check_not_forged,
    "leave it empty and the webhook fills it in with your user name" },
  { "spec.approver", FERR_FORBIDDEN, ptah_check_approver,
    "is not among the admission policy's approvers (approvals.approvers), who alone may "
    "approve plans; ask one of them, or ask the cluster admin to add you",
    .policy = true },
  { "spec.approver", FERR_FORBIDDEN, check_self_approval,
    "wrote this plan (spec.planAuthor) and the admission policy forbids approving one's own "
    "plan (approvals.allowSelfApproval); ask another approver",
    .policy = true },
  { 0 }
};

static const struct rule update_rules[] = {
  { "spec", FERR_FORBIDDEN, api_check_immutable,
    "is immutable: an approval is a statement about one plan by one person; create a new "
    "PtahSchemaApproval instead" },
  { 0 }
};

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = v1alpha1_spec, .status = status_fields, .moves = v1alpha1_moves,
    .path_aliases = v1alpha1_aliases },
  { .name = "v1", .spec = v1_spec, .status = status_fields },
};

static const struct printer_column columns[] = {
  { "Schema", "string", ".spec.schemaRef.name", "The approved PtahSchema", 0 },
  { "Approver", "string", ".spec.approver", "Who approved", 0 },
  { "Phase", "string", ".status.phase", "Whether the controller accepted it", 0 },
  { "Digest", "string", ".spec.planDigest", "The approved plan", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "ptahapproval", NULL };
static const char *const categories[] = { "ptah", NULL };

const struct api_kind api_ptahschemaapproval = {
  .group = PTAH_GROUP,
  .kind = "PtahSchemaApproval",
  .plural = "ptahschemaapprovals",
  .singular = "ptahschemaapproval",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PtahSchemaApproval is one person's approval of one PtahSchema plan, named by its "
          "digest. The webhook records who approved; approvals are immutable, and one for a "
          "plan that is no longer current is never consumed.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
};
