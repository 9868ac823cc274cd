/* A PtahSchema's operation in flight (ps.h): dispatched once (an Apply only while its approval
 * stands: ApprovalRevoked otherwise), watched while its Job runs, and settled from the result
 * record its runner delivered: a Plan publishes the plan (or is refused: ProtectedTableRefused),
 * an Apply brings the database to the plan (or finds it stale: PlanStale), and an Apply nobody
 * can account for is observed read-only (ApplyOutcomeUnknown, LeaseContinuityLost). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "../ktime.h"
#include "json.h"
#include "ps.h"

static const char *str(const char *s)
{
  return s ? s : "";
}

static void last_result(struct ps *p, const struct ptah_op *op, const char *outcome,
                        const char *msg)
{
  cJSON *l = cJSON_CreateObject();
  cJSON_AddStringToObject(l, "operation", op->id);
  cJSON_AddStringToObject(l, "type", op->type);
  cJSON_AddStringToObject(l, "outcome", outcome);
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON_AddStringToObject(l, "finishedAt", now);
  cJSON_AddStringToObject(l, "message", msg);
  edit_set(&p->ed, "lastResult", l);
  edit_unset(&p->ed, "operation");
}

/* The accepted approval's own status, once its Apply ended. */
static void mark_approval(struct ps *p, const char *phase, const char *reason, const char *msg)
{
  const char *name = json_get_str(p->obj, "status.approval.name");
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_PTAH_APPROVALS);
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", p->ns, str(name));
  cJSON *a = name && cache ? informer_get(cache, key) : NULL;
  if(a)
    ps_mark(p, a, phase, reason, NULL, "%s", msg);
  cJSON_Delete(a);
}

static void applied(struct ps *p, const struct ptah_op *op, const char *how)
{
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "planDigest", str(digest));
  cJSON_AddStringToObject(a, "operation", op->id);
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON_AddStringToObject(a, "at", now);
  edit_set(&p->ed, "applied", a);
  edit_unset(&p->ed, "plan.applyAttempts");
  edit_phase(&p->ed, PS_READY);
  ps_ready(p, COND_TRUE, "Applied", "the database matches the desired schema: plan %s %s "
           "(operation %s)", str(digest), how, op->id);
  mark_approval(p, "Applied", "PlanApplied", "the plan it approved was applied");
}

/* ---- Plan ---- */

static void plan_done(struct ps *p, const struct ptah_op *op, const struct op_record *r)
{
  const char *outcome = str(op_result_str(r, "outcome"));
  const char *msg = str(op_result_str(r, "message"));
  const char *refusal = op_result_str(r, "refusal");
  if(!strcmp(outcome, "Succeeded")) {
    struct ps_desired d;
    gw_rc rc = ps_desired_read(p, &d);
    bool current = !rc && d.found && !strcmp(d.inputs, op->inputs);
    ps_desired_release(&d);
    last_result(p, op, outcome, msg);
    if(!current) {
      ps_ready(p, COND_FALSE, "Planning", "the spec changed while operation %s computed its "
               "plan: a new plan follows", op->id);
      edit_requeue(&p->ed, 1);
      return;
    }
    const char *digest = op_result_str(r, "planDigest");
    const char *summary = str(op_result_str(r, "plan.summary"));
    struct ps_verify v;
    if(ps_verify_load(p, &v)) {
      edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
      return;
    }
    char why[1024];
    bool verified = ps_verify_plan(&v, json_get(r->rec, "spec.result.plan.statements"),
                                   json_get_bool(r->rec, "spec.result.plan.statementsOmitted",
                                                 false),
                                   op_result_int(r, "plan.destructiveCount", 0), why,
                                   sizeof(why));
    char vdigest[80];
    snprintf(vdigest, sizeof(vdigest), "%s", v.digest);
    ps_verify_release(&v);
    if(!verified) {
      char what[160];
      snprintf(what, sizeof(what), "plan %s", str(digest));
      ps_retire_plan(p);
      ps_verification_refused(p, op->inputs, op->id, vdigest, what, why);
      return;
    }
    const cJSON *ann = json_get(p->obj, "metadata.annotations");
    const char *author = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann,
                                                                      "ptah.run/spec-author"));
    cJSON *pl = cJSON_CreateObject();
    cJSON_AddStringToObject(pl, "digest", str(digest));
    char short_[16];
    snprintf(short_, sizeof(short_), "%.12s", str(digest) + (digest && !strncmp(digest,
             "sha256:", 7) ? 7 : 0));
    cJSON_AddStringToObject(pl, "shortDigest", short_);
    if(author)
      cJSON_AddStringToObject(pl, "author", author);
    char now[40];
    kt_rfc3339(now, sizeof(now), time(NULL));
    cJSON_AddStringToObject(pl, "computedAt", now);
    const cJSON *gen = json_get(p->obj, "metadata.generation");
    cJSON_AddNumberToObject(pl, "generation", cJSON_IsNumber(gen) ? gen->valuedouble : 0);
    char cut[1024];
    snprintf(cut, sizeof(cut), "%s", summary);
    cJSON_AddStringToObject(pl, "summary", cut);
    cJSON_AddStringToObject(pl, "record", op->job);
    cJSON_AddStringToObject(pl, "fingerprint", str(op_result_str(r, "plan.fingerprint")));
    cJSON_AddStringToObject(pl, "desiredChecksum", op->desired);
    cJSON_AddStringToObject(pl, "binding", op->binding);
    cJSON_AddStringToObject(pl, "inputs", op->inputs);
    cJSON_AddStringToObject(pl, "verification", vdigest);
    long long n = op_result_int(r, "plan.statementCount", 0);
    cJSON_AddNumberToObject(pl, "statements", (double)n);
    cJSON_AddNumberToObject(pl, "destructive",
                            (double)op_result_int(r, "plan.destructiveCount", 0));
    edit_set(&p->ed, "plan", pl);
    edit_unset(&p->ed, "approval");
    edit_unset(&p->ed, "refused");
    edit_event(&p->ed, EV_NORMAL, "OperationCompleted", "operation %s (Plan) computed plan %s: "
               "%s", op->id, str(digest), summary);
    if(n == 0) {
      edit_phase(&p->ed, PS_READY);
      ps_ready(p, COND_TRUE, "UpToDate", "the database matches the desired schema (plan %s "
               "has no statement)", str(digest));
    } else {
      ps_ready(p, COND_FALSE, "Planned", "plan %s computed: %s", str(digest), summary);
    }
    edit_requeue(&p->ed, 1);
    return;
  }
  last_result(p, op, outcome, msg);
  ps_retire_plan(p);
  if(refusal && !strcmp(refusal, "ProtectedTableRefused")) {
    ps_refuse(p, op->inputs, "ProtectedTableRefused", op->id, NULL);
    edit_phase(&p->ed, PS_BLOCKED);
    ps_ready(p, COND_FALSE, "ProtectedTableRefused", "no plan is published: %s", msg);
    edit_event(&p->ed, EV_WARNING, "ProtectedTableRefused", "operation %s: the plan would "
               "change a table spec.policy.protectedTables fences off, so it is not published: "
               "%s", op->id, msg);
    return;
  }
  /* a plan is read-only: planned again after a backoff (the cause may be the database's: a
   * role without CREATEDB, an extension not installed), and at once when the inputs change */
  const char *was = json_get_str(p->obj, "status.refused.inputs");
  const char *why = json_get_str(p->obj, "status.refused.reason");
  long long n = was && !strcmp(was, op->inputs) && why && !strcmp(why, "PlanFailed")
                  ? op_status_int(p->obj, "refused.attempts", 0) + 1 : 1;
  long long wait_ms = p->o->failure_interval_ms << (n - 1 < 5 ? n - 1 : 5);
  if(wait_ms > PS_PLAN_RETRY_MAX_MS)
    wait_ms = PS_PLAN_RETRY_MAX_MS;
  ps_refuse(p, op->inputs, "PlanFailed", op->id, NULL);
  edit_set_int(&p->ed, "refused.attempts", n);
  char at[40];
  kt_rfc3339(at, sizeof(at), time(NULL) + (time_t)((wait_ms + 999) / 1000));
  edit_set_str(&p->ed, "refused.retryAfter", at);
  edit_requeue(&p->ed, (long)wait_ms);
  edit_phase(&p->ed, PS_FAILED);
  ps_ready(p, COND_FALSE, "PlanFailed", "operation %s could not compute a plan: %s; it is "
           "planned again at %s, and at once when the spec or the desired schema changes", op->id,
           msg, at);
  edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s (Plan) failed (%lld in a row): "
             "%s; planned again in %lld s", op->id, n, msg, (wait_ms + 999) / 1000);
}

/* ---- Apply and Observe ---- */

static void observe(struct ps *p, const struct ptah_op *op)
{
  edit_set_int(&p->ed, "plan.applyAttempts", op_status_int(p->obj, "plan.applyAttempts", 0) + 1);
  const char *ds = json_get_str(p->obj, "status.plan.desiredChecksum");
  gw_rc rc = ps_claim(p, "Observe", op->inputs, ds ? ds : op->desired);
  if(rc)
    edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
}

static void unknown(struct ps *p, const struct ptah_op *op, const char *why)
{
  last_result(p, op, "Unknown", why);
  edit_event(&p->ed, EV_WARNING, "ApplyOutcomeUnknown", "operation %s (Apply of plan %s) ended "
             "with no proof of whether it changed the database (%s); a read-only observation "
             "starts to establish what happened", op->id,
             str(json_get_str(p->obj, "status.plan.digest")), why);
  observe(p, op);
}

static void apply_done(struct ps *p, const struct ptah_op *op, const struct op_record *r)
{
  const char *outcome = str(op_result_str(r, "outcome"));
  const char *msg = str(op_result_str(r, "message"));
  const char *refusal = op_result_str(r, "refusal");
  const char *digest = str(json_get_str(p->obj, "status.plan.digest"));
  if(!strcmp(outcome, "Applied") || !strcmp(outcome, "UpToDate")) {
    last_result(p, op, outcome, msg);
    applied(p, op, !strcmp(outcome, "Applied") ? "was applied" : "had nothing to apply");
    edit_event(&p->ed, EV_NORMAL, "OperationCompleted", "operation %s (Apply) %s plan %s: %s",
               op->id, !strcmp(outcome, "Applied") ? "applied" : "found nothing to apply of",
               digest, msg);
    ps_desired_prune(p, NULL);
    return;
  }
  if(!strcmp(outcome, "Unknown")) {
    unknown(p, op, msg);
    return;
  }
  last_result(p, op, outcome, msg);
  if(refusal && !strcmp(refusal, "PlanStale")) {
    edit_event(&p->ed, EV_WARNING, "PlanStale", "operation %s: plan %s stopped matching what it "
               "was computed against, so nothing applied it: %s. A new plan is computed, and it "
               "needs its own approval", op->id, digest, msg);
    ps_retire_plan(p);
    edit_phase(&p->ed, PS_PLANNING);
    ps_ready(p, COND_FALSE, "PlanStale", "plan %s is stale (%s); a new plan is computed", digest,
             msg);
    edit_requeue(&p->ed, 1);
    return;
  }
  edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s (Apply of plan %s) %s: %s",
             op->id, digest, !strcmp(outcome, "Partial") ? "stopped part way" : "failed", msg);
  if(!strcmp(outcome, "Partial")) {
    /* enum values committed on their own: the catalog moved, the plan with it */
    ps_retire_plan(p);
    edit_phase(&p->ed, PS_PLANNING);
    ps_ready(p, COND_FALSE, "ApplyPartial", "operation %s stopped part way: %s; a new plan is "
             "computed from what the database holds now", op->id, msg);
    edit_requeue(&p->ed, 1);
    return;
  }
  mark_approval(p, "Accepted", "ApplyFailed", "the Apply it started failed and committed "
                "nothing; a new PtahSchemaApproval of the same plan starts another");
  edit_unset(&p->ed, "approval");
  ps_refuse(p, op->inputs, "ApplyFailed", op->id, NULL);
  edit_phase(&p->ed, PS_FAILED);
  ps_ready(p, COND_FALSE, "ApplyFailed", "operation %s failed and committed nothing: %s; fix the "
           "cause and approve the plan again, or change the desired schema", op->id, msg);
}

static void observe_done(struct ps *p, const struct ptah_op *op, const struct op_record *r)
{
  const char *msg = str(op_result_str(r, "message"));
  const char *found = str(op_result_str(r, "planDigest"));
  const char *digest = str(json_get_str(p->obj, "status.plan.digest"));
  long long left = op_result_int(r, "plan.statementCount", -1);
  last_result(p, op, str(op_result_str(r, "outcome")), msg);
  if(left == 0) {
    applied(p, op, "had been applied: an observation found the database at the desired schema");
    edit_event(&p->ed, EV_NORMAL, "OperationCompleted", "operation %s (Observe) found the "
               "database at the desired schema: the Apply of plan %s had committed", op->id,
               digest);
    return;
  }
  if(!strcmp(found, digest)) {
    long long tries = op_status_int(p->obj, "plan.applyAttempts", 0);
    if(tries >= PS_APPLY_ATTEMPTS) {
      ps_refuse(p, op->inputs, "ApplyFailed", op->id, NULL);
      edit_unset(&p->ed, "approval");
      edit_phase(&p->ed, PS_FAILED);
      ps_ready(p, COND_FALSE, "ApplyFailed", "%lld Applies of plan %s ended with no result and "
               "committed nothing (observed by operation %s); look at the runner Jobs' logs, "
               "then approve the plan again", tries, digest, op->id);
      edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s (Observe): the database "
                 "is still where plan %s starts, after %lld Applies ended with no result; no "
                 "further Apply is made until a new approval", op->id, digest, tries);
      return;
    }
    edit_event(&p->ed, EV_NORMAL, "OperationCompleted", "operation %s (Observe) found the "
               "database where plan %s starts: the Apply committed nothing, and the plan is "
               "applied again under its approval", op->id, digest);
    gw_rc rc = ps_claim(p, "Apply", op->inputs, op->desired);
    if(rc)
      edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
    return;
  }
  edit_event(&p->ed, EV_WARNING, "PlanStale", "operation %s (Observe) found the database "
             "neither where plan %s starts nor at the desired schema (%lld statements would "
             "remain, digest %s): the plan is retired and a new one is computed, which needs "
             "its own approval", op->id, digest, left, found);
  ps_retire_plan(p);
  edit_phase(&p->ed, PS_PLANNING);
  ps_ready(p, COND_FALSE, "PlanStale", "the database moved away from plan %s; a new plan is "
           "computed", digest);
  edit_requeue(&p->ed, 1);
}

/* ---- the Job ---- */

/* A read-only operation that failed without a verdict: tried again after the failure
 * interval. */
static void read_again(struct ps *p, struct ptah_op *op, const char *why)
{
  long wait = p->o->failure_interval_ms;
  edit_event(&p->ed, EV_WARNING, "OperationFailed", "operation %s (%s) attempt %d failed: %s; "
             "a read-only operation is tried again in %ld s", op->id, op->type, op->attempt,
             why, (wait + 999) / 1000);
  ps_ready(p, COND_FALSE, "OperationRetrying", "operation %s (%s) failed (%s); it is tried again "
           "in %ld s", op->id, op->type, why, (wait + 999) / 1000);
  op_again_later(&p->host, op, wait, false);
}

static void no_result(struct ps *p, struct ptah_op *op, const struct job_view *v,
                      const struct op_record *r)
{
  if(op_runner_refused(&p->host, op, v))
    return;
  char why[2048];
  if(r->verdict == OPV_REJECTED)
    snprintf(why, sizeof(why), "its result record was rejected: %s", r->why);
  else if(v->state == JOB_ABSENT)
    snprintf(why, sizeof(why), "its Job %s is gone and no result record was delivered", op->job);
  else if(!*v->pod && v->pods_ended == 0)
    snprintf(why, sizeof(why), "no runner Pod of Job %s ever ran (%s)", op->job, v->failure);
  else
    snprintf(why, sizeof(why), "its Job %s ended (exit code %d) without delivering a result "
             "record", op->job, v->exit_code);
  if(strcmp(op->type, "Apply")) {
    read_again(p, op, why);
    return;
  }
  if(v->state == JOB_FAILED && !*v->pod && v->pods_ended == 0) {
    /* proven to have run nothing: the approval stands, the Apply is claimed again later */
    read_again(p, op, why);
    return;
  }
  if(r->verdict == OPV_REJECTED && strstr(r->why, "lock")) {
    last_result(p, op, "Unknown", why);
    edit_event(&p->ed, EV_WARNING, "LeaseContinuityLost", "operation %s: the runner did not hold "
               "the database lock throughout the Apply of plan %s, so the result it reported is "
               "discarded and the proof restarts with a read-only observation: %s", op->id,
               str(json_get_str(p->obj, "status.plan.digest")), r->why);
    observe(p, op);
    return;
  }
  unknown(p, op, why);
}

/* An Apply claimed for a plan and an approval that no longer stand is dropped before its Job
 * exists. true: dropped. */
static bool revoked(struct ps *p, const struct ptah_op *op)
{
  char why[600] = "";
  struct ps_desired d;
  gw_rc rc = ps_desired_read(p, &d);
  if(rc) {
    ps_desired_release(&d);
    return false;
  }
  if(!d.found || strcmp(d.inputs, op->inputs))
    snprintf(why, sizeof(why), "the spec or the desired schema changed since plan %s was "
             "computed", str(json_get_str(p->obj, "status.plan.digest")));
  ps_desired_release(&d);
  const char *mode = json_get_str(p->obj, "spec.policy.approval");
  bool automatic = mode && !strcmp(mode, "Automatic");
  if(!*why && !automatic && ps_approval_stands(p, why, sizeof(why)))
    why[0] = '\0';
  if(!*why)
    return false;
  const char *name = json_get_str(p->obj, "status.approval.name");
  edit_unset(&p->ed, "operation");
  if(name) {
    edit_unset(&p->ed, "approval");
    edit_event(&p->ed, EV_WARNING, "ApprovalRevoked", "the approval %s of plan %s became invalid "
               "before the Apply Job was created (%s), so no Job was created", name,
               str(json_get_str(p->obj, "status.plan.digest")), why);
    ps_ready(p, COND_FALSE, "ApprovalRevoked", "operation %s was dropped before its Job: %s",
             op->id, why);
  } else {
    ps_ready(p, COND_FALSE, "ClaimRetired", "operation %s was dropped before its Job: %s",
             op->id, why);
  }
  edit_requeue(&p->ed, 1);
  return true;
}

/* A Plan whose inputs moved before its Job exists is dropped (a new one follows); its desired
 * SQL's copy is made before the Job that mounts it. true: handled. */
static bool before_dispatch(struct ps *p, const struct ptah_op *op)
{
  if(!strcmp(op->type, "Apply"))
    return revoked(p, op);
  if(strcmp(op->type, "Plan"))
    return false;
  struct ps_desired d;
  if(ps_desired_read(p, &d)) {
    ps_desired_release(&d);
    edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
    return true;
  }
  bool moved = !d.found || strcmp(d.inputs, op->inputs);
  char why[512] = "";
  if(moved) {
    edit_unset(&p->ed, "operation");
    ps_ready(p, COND_FALSE, "Planning", "operation %s was dropped before its Job: the spec "
             "changed; a new plan follows", op->id);
    edit_requeue(&p->ed, 1);
  } else if(ps_desired_copy(p, &d, why, sizeof(why))) {
    ps_ready(p, COND_FALSE, "DesiredSchemaUnavailable", "%s; trying again", why);
    edit_requeue(&p->ed, OP_ERROR_RETRY_MS);
    moved = true;
  }
  ps_desired_release(&d);
  return moved;
}

gw_rc ps_drive(struct ps *p)
{
  struct ptah_op op;
  if(!op_read(p->obj, &op))
    return GW_OK;
  int phase = !strcmp(op.type, "Plan") ? PS_PLANNING
              : !strcmp(op.type, "Apply") ? PS_APPLYING : PS_OBSERVING;
  if(p->phase != phase)
    edit_phase(&p->ed, phase);
  p->host.busy_reason = !strcmp(op.type, "Plan") ? "Planning"
                        : !strcmp(op.type, "Apply") ? "Applying" : "Observing";
  if(!op.dispatched) {
    if(op.not_before <= time(NULL) && before_dispatch(p, &op))
      return GW_OK;
    return op_dispatch(&p->host, &op);
  }
  struct job_view v;
  if(!op_await_job(&p->host, &op, &v))
    return GW_OK;
  struct op_record r;
  enum op_verdict verdict = op_read_result(&p->host, &op, &v, &r);
  const char *res = job_report_result(&v);
  if(verdict == OPV_ACCEPTED && strcmp(op.type, "Apply") && res && !strcmp(res, "Transient")) {
    read_again(p, &op, str(op_result_str(&r, "message")));
  } else if(verdict == OPV_ACCEPTED) {
    if(!strcmp(op.type, "Plan"))
      plan_done(p, &op, &r);
    else if(!strcmp(op.type, "Apply"))
      apply_done(p, &op, &r);
    else if(!strcmp(str(op_result_str(&r, "outcome")), "Succeeded"))
      observe_done(p, &op, &r);
    else
      read_again(p, &op, str(op_result_str(&r, "message")));
  } else if(verdict != OPV_ERROR) {
    no_result(p, &op, &v, &r);
  }
  op_record_release(&r);
  job_view_release(&v);
  return GW_OK;
}
