/* A PtahSchema with nothing in flight (ps.h): the plan is computed when what it depends on
 * changed (the desired SQL, the execution binding, the protected tables, the spec's generation),
 * then it waits for an approval (policy Required) or is applied (Automatic); a plan with no
 * statement, or one applied, leaves the schema Ready. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "../ktime.h"
#include "json.h"
#include "ps.h"

void ps_retire_plan(struct ps *p)
{
  edit_unset(&p->ed, "plan");
  edit_unset(&p->ed, "approval");
}

void ps_refuse(struct ps *p, const char *inputs, const char *reason, const char *operation,
               const char *verification)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "inputs", inputs);
  cJSON_AddStringToObject(r, "reason", reason);
  if(operation)
    cJSON_AddStringToObject(r, "operation", operation);
  if(verification)
    cJSON_AddStringToObject(r, "verification", verification);
  edit_set(&p->ed, "refused", r);
}

void ps_verification_refused(struct ps *p, const char *inputs, const char *operation,
                             const char *verification, const char *what, const char *why)
{
  ps_refuse(p, inputs, "ArtifactVerificationRefused", operation, verification);
  edit_phase(&p->ed, PS_BLOCKED);
  ps_ready(p, COND_FALSE, "ArtifactVerificationRefused", "verification refused %s: %s", what,
           why);
  edit_event(&p->ed, EV_WARNING, "ArtifactVerificationRefused", "verification refused %s, so "
             "no plan is produced from it: %s", what, why);
}

/* A published plan whose verification policy changed is verified again from its record; one
 * that no longer passes is retired with its approval. true: handled (the pass ends). */
static bool reverify(struct ps *p, const struct ps_verify *v, const char *inputs)
{
  const char *was = json_get_str(p->obj, "status.plan.verification");
  const char *record = json_get_str(p->obj, "status.plan.record");
  if(!was || !strcmp(was, v->digest) || !record)
    return false;
  cJSON *rec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(p->ctx->kube, &KUBE_PTAH_RESULT_RECORDS, p->ns, record, &rec, &st);
  kube_status_release(&st);
  if(rc) {
    ps_ready(p, COND_FALSE, "Verifying", "the verification policy changed and plan %s is "
             "verified again, but its record %s cannot be read (%s); trying again",
             json_get_str(p->obj, "status.plan.digest"), record, gw_strerror(rc));
    edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
    return true;
  }
  char why[1024];
  const cJSON *n = json_get(p->obj, "status.plan.destructive");
  bool ok = ps_verify_plan(v, json_get(rec, "spec.result.plan.statements"),
                           json_get_bool(rec, "spec.result.plan.statementsOmitted", false),
                           cJSON_IsNumber(n) ? (long long)n->valuedouble : 0, why, sizeof(why));
  cJSON_Delete(rec);
  if(ok) {
    edit_set_str(&p->ed, "plan.verification", v->digest);
    return false;
  }
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  edit_event(&p->ed, EV_WARNING, "VerificationPolicyInvalidated", "the verification policy "
             "changed and no longer passes plan %s: %s; the plan and its approval are retired",
             digest ? digest : "", why);
  ps_retire_plan(p);
  ps_refuse(p, inputs, "ArtifactVerificationRefused", NULL, v->digest);
  edit_phase(&p->ed, PS_BLOCKED);
  ps_ready(p, COND_FALSE, "VerificationPolicyInvalidated", "the verification policy no longer "
           "passes plan %s: %s", digest ? digest : "", why);
  return true;
}

gw_rc ps_claim(struct ps *p, const char *type, const char *inputs, const char *desired)
{
  long long seq = op_status_int(p->obj, "operationCount", 0) + 1;
  struct ptah_op op;
  memset(&op, 0, sizeof(op));
  char lc[16];
  snprintf(lc, sizeof(lc), "%s", !strcmp(type, "Plan") ? "plan"
                                 : !strcmp(type, "Apply") ? "apply" : "observe");
  op_make_id(p->name, lc, seq, op.id, sizeof(op.id));
  snprintf(op.type, sizeof(op.type), "%s", type);
  op.attempt = 1;
  op_job_name(op.id, op.attempt, op.job, sizeof(op.job));
  snprintf(op.inputs, sizeof(op.inputs), "%s", inputs);
  snprintf(op.desired, sizeof(op.desired), "%s", desired);
  op_binding(p->obj, p->o, op.binding, sizeof(op.binding));
  gw_rc rc = ps_job_digest(p, &op, false, op.tdigest, sizeof(op.tdigest));
  if(rc)
    return rc;
  op_write(&p->ed, p->obj, &op);
  edit_set_int(&p->ed, "operationCount", seq);
  edit_phase(&p->ed, !strcmp(type, "Plan") ? PS_PLANNING
                     : !strcmp(type, "Apply") ? PS_APPLYING : PS_OBSERVING);
  ps_ready(p, COND_FALSE, !strcmp(type, "Plan") ? "Planning"
                          : !strcmp(type, "Apply") ? "Applying" : "Observing",
           "operation %s claimed (%s)", op.id, type);
  edit_requeue(&p->ed, 1); /* the Job is created on the next pass, after the claim is stored */
  return GW_OK;
}

/* The database is at the plan: Ready. */
static void settled(struct ps *p)
{
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  edit_phase(&p->ed, PS_READY);
  if(!cond_is_true(p->obj, C_READY))
    ps_ready(p, COND_TRUE, "UpToDate", "the database matches the desired schema (plan %s)",
             digest ? digest : "");
}

static gw_rc plan(struct ps *p, struct ps_desired *d, const struct ps_verify *v)
{
  char why[1024];
  if(!ps_verify_source(v, d, why, sizeof(why))) {
    ps_verification_refused(p, d->inputs, NULL, v->digest, "the desired schema", why);
    return GW_OK;
  }
  gw_rc rc = ps_desired_copy(p, d, why, sizeof(why));
  if(rc) {
    ps_ready(p, COND_FALSE, "DesiredSchemaUnavailable", "%s; trying again", why);
    edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
    return GW_OK;
  }
  return ps_claim(p, "Plan", d->inputs, d->checksum);
}

static gw_rc decide(struct ps *p, struct ps_desired *d, const struct ps_verify *v);

gw_rc ps_decide(struct ps *p)
{
  struct ps_desired d;
  gw_rc rc = ps_desired_read(p, &d);
  if(rc || !d.found) {
    if(!rc) {
      if(p->phase == PS_PENDING || p->phase == PHASE_NONE)
        edit_phase(&p->ed, PS_PENDING);
      ps_ready(p, COND_FALSE, "DesiredSchemaNotFound", "%s", d.why);
    }
    ps_desired_release(&d);
    return rc; /* the ConfigMap's creation is watched */
  }
  struct ps_verify v;
  rc = ps_verify_load(p, &v);
  if(!rc)
    rc = decide(p, &d, &v);
  ps_verify_release(&v);
  ps_desired_release(&d);
  return rc;
}

static gw_rc decide(struct ps *p, struct ps_desired *d, const struct ps_verify *v)
{
  gw_rc rc = GW_OK;
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  const char *inputs = json_get_str(p->obj, "status.plan.inputs");
  const char *applied = json_get_str(p->obj, "status.applied.planDigest");
  /* a policy that changed under a plan of the same inputs (an admin's: a spec change plans
   * again anyway, and the new plan is verified) */
  if(digest && inputs && !strcmp(inputs, d->inputs) && !(applied && !strcmp(applied, digest)) &&
     reverify(p, v, d->inputs))
    return GW_OK;
  char binding[640];
  op_binding(p->obj, p->o, binding, sizeof(binding));
  const char *was = json_get_str(p->obj, "status.plan.binding");
  bool retired = false;
  if(digest && was && strcmp(was, binding)) {
    edit_event(&p->ed, EV_WARNING, "ExecutionBindingChanged", "plan %s was computed under %s "
               "and the manager now runs %s: the approval boundary is closed (the plan and its "
               "approval are retired) and a new plan is computed read-only", digest, was,
               binding);
    ps_retire_plan(p);
    retired = true;
  }
  const char *refused = json_get_str(p->obj, "status.refused.inputs");
  const char *why = json_get_str(p->obj, "status.refused.reason");
  const char *vwas = json_get_str(p->obj, "status.refused.verification");
  if(refused && vwas && strcmp(vwas, v->digest))
    refused = NULL; /* refused under another verification policy: judged again */
  if(refused && !strcmp(refused, d->inputs) && !retired && why && !strcmp(why, "PlanFailed")) {
    /* a failed plan is read-only: planned again once its backoff has passed */
    time_t at = kt_parse_rfc3339(json_get_str(p->obj, "status.refused.retryAfter"));
    time_t now = time(NULL);
    if(at > now) {
      edit_requeue(&p->ed, (long)(at - now) * 1000);
      return GW_OK;
    }
    return plan(p, d, v); /* status.refused stays: its attempts count the failures in a row */
  }
  if(refused && !strcmp(refused, d->inputs) && !retired) {
    /* refused or failed for these very inputs: nothing is tried again until they change, but
     * a new approval may start another Apply of a plan whose Apply failed */
    bool again = why && !strcmp(why, "ApplyFailed") && ps_approvals(p);
    if(again) {
      edit_unset(&p->ed, "refused");
      rc = ps_claim(p, "Apply", inputs ? inputs : "", json_get_str(p->obj,
                    "status.plan.desiredChecksum") ? json_get_str(p->obj,
                    "status.plan.desiredChecksum") : "");
    }
    return rc;
  }
  if(json_get(p->obj, "status.refused"))
    edit_unset(&p->ed, "refused");
  if(retired || !digest || !inputs || strcmp(inputs, d->inputs)) {
    if(digest && !retired)
      ps_retire_plan(p); /* a new plan: the approval boundary closes with the old one */
    return plan(p, d, v);
  }
  if(op_status_int(p->obj, "plan.statements", 0) == 0 || (applied && !strcmp(applied, digest))) {
    (void)ps_approvals(p); /* approvals waiting for nothing go stale */
    settled(p);
    ps_desired_prune(p, NULL);
    return GW_OK;
  }
  const char *mode = json_get_str(p->obj, "spec.policy.approval");
  bool automatic = mode && !strcmp(mode, "Automatic");
  if(ps_approvals(p) || automatic)
    return ps_claim(p, "Apply", inputs, json_get_str(p->obj, "status.plan.desiredChecksum")
                    ? json_get_str(p->obj, "status.plan.desiredChecksum") : "");
  edit_phase(&p->ed, PS_AWAITING);
  const char *author = json_get_str(p->obj, "status.plan.author");
  const char *summary = json_get_str(p->obj, "status.plan.summary");
  ps_ready(p, COND_FALSE, "ApprovalRequired", "plan %s (written by %s) waits for a "
           "PtahSchemaApproval naming its digest, by an approver other than its author: %s",
           digest, author ? author : "", summary ? summary : "");
  edit_event_if_phase(&p->ed, EV_NORMAL, "ApprovalRequired", "plan %s needs an approval before "
                      "anything applies it (written by %s; the whole plan is in "
                      "PtahResultRecord %s): %s", digest, author ? author : "",
                      json_get_str(p->obj, "status.plan.record")
                      ? json_get_str(p->obj, "status.plan.record") : "",
                      summary ? summary : "");
  return GW_OK;
}
