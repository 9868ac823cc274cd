/* The approvals of a PtahSchema's plan (ps.h). An approval is judged against the plan the
 * controller published, never against what it claims: the digest it names must be the current
 * plan's (else ApprovalStale, on the approval), and its approver must not be the author the
 * controller recorded when the admission policy forbids self-approval (else Refused), whatever
 * spec.planAuthor says. The oldest standing approval is accepted (ApprovalAccepted); the
 * approvals' own status is written after the schema's, so a failed schema write leaves them as
 * they were. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "ps.h"

#define MAX_APPROVALS 64

struct found {
  const char *schema;
  cJSON *v[MAX_APPROVALS];
  size_t n;
};

static void each(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct found *f = ctx;
  const char *ref = json_get_str(obj, "spec.schemaRef.name");
  if(!ref || strcmp(ref, f->schema) || f->n >= MAX_APPROVALS ||
     json_get(obj, "metadata.deletionTimestamp"))
    return;
  f->v[f->n++] = cJSON_Duplicate(obj, 1);
}

/* Oldest first; the name breaks ties (creationTimestamp has a one-second resolution). */
static int by_age(const void *a, const void *b)
{
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  const char *tx = json_get_str(x, "metadata.creationTimestamp");
  const char *ty = json_get_str(y, "metadata.creationTimestamp");
  int c = strcmp(tx ? tx : "", ty ? ty : "");
  if(c)
    return c;
  return strcmp(json_get_str(x, "metadata.name") ? json_get_str(x, "metadata.name") : "",
                json_get_str(y, "metadata.name") ? json_get_str(y, "metadata.name") : "");
}

static void find(struct ps *p, struct found *f)
{
  f->schema = p->name;
  f->n = 0;
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_PTAH_APPROVALS);
  if(cache)
    informer_each(cache, p->ns, each, f);
  qsort(f->v, f->n, sizeof(f->v[0]), by_age);
}

static void release(struct found *f)
{
  for(size_t i = 0; i < f->n; i++)
    cJSON_Delete(f->v[i]);
  f->n = 0;
}

/* approvals.allowSelfApproval of the admission policy the webhook enforces (--admission-policy),
 * read at each decision so a changed policy counts at once; the built-in policy (and an
 * unreadable file, said in the log) forbids it. */
static bool self_approval_allowed(struct ps *p)
{
  struct policy *pol = ps_policy(p);
  bool allowed = pol && pol->allow_self_approval;
  policy_free(pol);
  return allowed;
}

static bool is_phase(const cJSON *a, const char *phase)
{
  const char *ph = json_get_str(a, "status.phase");
  if(!phase)
    return !ph || !strcmp(ph, "Pending");
  return ph && !strcmp(ph, phase);
}

bool ps_approvals(struct ps *p)
{
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  const char *author = json_get_str(p->obj, "status.plan.author");
  const char *applied = json_get_str(p->obj, "status.applied.planDigest");
  const char *taken = json_get_str(p->obj, "status.approval.name");
  const char *taken_for = json_get_str(p->obj, "status.approval.planDigest");
  bool needed = digest && !(applied && !strcmp(applied, digest)) &&
                op_status_int(p->obj, "plan.statements", 0) > 0;
  struct found f;
  find(p, &f);
  bool accepted = false, self_ok = false, self_read = false;
  for(size_t i = 0; i < f.n; i++) {
    const cJSON *a = f.v[i];
    const char *name = json_get_str(a, "metadata.name");
    const char *names = json_get_str(a, "spec.planDigest");
    const char *who = json_get_str(a, "spec.approver");
    if(!name || !names)
      continue;
    bool current = needed && !strcmp(names, digest);
    if(taken && !strcmp(taken, name)) {
      /* the accepted one: its Apply decides its fate (Applied, or kept Accepted when it
       * failed), never this pass, whose cache may not show its last status write yet */
      if(taken_for && current) {
        accepted = true;
        if(is_phase(a, NULL))
          ps_mark(p, a, "Accepted", "PlanApproved", NULL, "accepted for plan %s of PtahSchema "
                  "%s", digest, p->name);
      }
      continue;
    }
    if(!is_phase(a, NULL) && !is_phase(a, "Accepted"))
      continue; /* Applied, Stale, Refused: decided for good */
    if(is_phase(a, "Accepted") && current)
      continue; /* consumed by an Apply that failed: a new approval starts another */
    if(!current) {
      const char *why = !digest || !needed ? "the schema has no plan waiting for an approval"
                        : applied && !strcmp(names, applied) ? "the plan it names was applied"
                        : "the current plan is another one";
      ps_mark(p, a, "Stale", "PlanChanged", "ApprovalStale", "approval %s names plan %s of "
              "PtahSchema %s, and %s (status.plan.digest: %s): it will not be consumed. To "
              "approve the current plan, create a new PtahSchemaApproval naming its digest",
              name, names, p->name, why, digest ? digest : "none");
      continue;
    }
    if(accepted)
      continue; /* one approval per plan; the others wait (and go stale with it) */
    if(!self_read) {
      self_ok = self_approval_allowed(p);
      self_read = true;
    }
    if(who && author && !strcmp(who, author) && !self_ok) {
      ps_mark(p, a, "Refused", "SelfApprovalRefused", NULL, "%s wrote the spec plan %s was "
              "computed from (status.plan.author of PtahSchema %s) and the admission policy "
              "forbids approving one's own plan (approvals.allowSelfApproval); ask another "
              "approver", who, digest, p->name);
      continue;
    }
    char now[40];
    kt_rfc3339(now, sizeof(now), time(NULL));
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", name);
    cJSON_AddStringToObject(s, "approver", who ? who : "");
    cJSON_AddStringToObject(s, "planDigest", digest);
    cJSON_AddStringToObject(s, "acceptedAt", now);
    edit_set(&p->ed, "approval", s);
    edit_event(&p->ed, EV_NORMAL, "ApprovalAccepted", "%s approved plan %s (PtahSchemaApproval "
               "%s; the plan was written by %s): %s", who ? who : "", digest, name,
               author ? author : "", json_get_str(p->obj, "status.plan.summary")
               ? json_get_str(p->obj, "status.plan.summary") : "");
    ps_mark(p, a, "Accepted", "PlanApproved", NULL, "accepted for plan %s of PtahSchema %s",
            digest, p->name);
    accepted = true;
  }
  release(&f);
  return accepted;
}

bool ps_approval_stands(struct ps *p, char *why, size_t len)
{
  const char *name = json_get_str(p->obj, "status.approval.name");
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  const char *for_ = json_get_str(p->obj, "status.approval.planDigest");
  if(!name || !digest || !for_ || strcmp(digest, for_)) {
    snprintf(why, len, "the plan it approved (%s) is no longer the current plan",
             for_ ? for_ : "none");
    return false;
  }
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_PTAH_APPROVALS);
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", p->ns, name);
  cJSON *a = cache ? informer_get(cache, key) : NULL;
  const char *names = json_get_str(a, "spec.planDigest");
  bool ok = a && !json_get(a, "metadata.deletionTimestamp") && names && !strcmp(names, digest);
  if(!ok)
    snprintf(why, len, "PtahSchemaApproval %s %s", name,
             !a ? "was deleted" : json_get(a, "metadata.deletionTimestamp") ? "is being deleted"
                                                                           : "changed");
  cJSON_Delete(a);
  return ok;
}

void ps_mark(struct ps *p, const cJSON *approval, const char *phase, const char *reason,
             const char *event, const char *fmt, ...)
{
  if(p->nmarks >= PS_MAX_MARKS)
    return; /* the rest on a later pass */
  struct ps_mark *m = &p->marks[p->nmarks++];
  snprintf(m->name, sizeof(m->name), "%s", json_get_str(approval, "metadata.name"));
  m->phase = phase;
  m->reason = reason;
  m->event = event;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->message, sizeof(m->message), fmt, ap);
  va_end(ap);
}

/* The approval's status: phase and the Accepted condition. */
static void write_mark(struct ps *p, const struct ps_mark *m)
{
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  bool yes = !strcmp(m->phase, "Accepted") || !strcmp(m->phase, "Applied");
  cJSON *b = cJSON_CreateObject();
  cJSON *s = cJSON_AddObjectToObject(b, "status");
  cJSON_AddStringToObject(s, "phase", m->phase);
  cJSON_AddNumberToObject(s, "observedGeneration", 1); /* the spec is immutable */
  cJSON *cd = cJSON_CreateObject();
  cJSON_AddStringToObject(cd, "type", "Accepted");
  cJSON_AddStringToObject(cd, "status", yes ? "True" : "False");
  cJSON_AddNumberToObject(cd, "observedGeneration", 1);
  cJSON_AddStringToObject(cd, "lastTransitionTime", now);
  cJSON_AddStringToObject(cd, "reason", m->reason);
  cJSON_AddStringToObject(cd, "message", m->message);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "conditions"), cd);
  char *text = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = text ? kube_patch(p->ctx->kube, &KUBE_PTAH_APPROVALS, p->ns, m->name,
                               KUBE_PATCH_MERGE, text, "status", NULL, &st)
                  : GW_ENOMEM;
  cJSON_free(text);
  if(rc)
    log_kv(LOG_WARN, "cannot write an approval's status", "key", p->ctx->key, "approval",
           m->name, "phase", m->phase, "error", gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  if(!m->event)
    return;
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_PTAH_APPROVALS);
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", p->ns, m->name);
  cJSON *a = cache ? informer_get(cache, key) : NULL;
  if(a)
    rec_event(p->ctx, a, EV_WARNING, m->event, "%s", m->message);
  cJSON_Delete(a);
}

void ps_after_commit(struct ps *p)
{
  for(size_t i = 0; i < p->nmarks; i++)
    write_mark(p, &p->marks[i]);
}
