/* MigrationPolicies applied to a PodMigration (pmig.h, docs/api/podmotion.md "How policies
 * apply"): with spec.policyRef that one, which must exist and select the pod; otherwise every
 * policy of the namespace selecting the pod, all of which must allow the migration: the
 * strategy in every allowedModes, the destination matching every destinationNodeSelector, the
 * smallest freezeBudget and maxConcurrent. A pod no policy selects is not moved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../informer.h"
#include "api/format.h"
#include "json.h"
#include "pmig.h"

static bool listed(const cJSON *arr, const char *s)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, arr)
    if(cJSON_IsString(x) && s && !strcmp(x->valuestring, s))
      return true;
  return false;
}

bool pmig_labels_have(const cJSON *want, const cJSON *labels)
{
  const cJSON *w;
  cJSON_ArrayForEach(w, want)
  {
    const char *have = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, w->string));
    if(!cJSON_IsString(w) || !have || strcmp(have, w->valuestring))
      return false;
  }
  return true;
}

bool pmig_selects(const cJSON *selector, const cJSON *labels)
{
  if(!cJSON_IsObject(selector))
    return false;
  if(!pmig_labels_have(json_get(selector, "matchLabels"), labels))
    return false;
  const cJSON *e;
  cJSON_ArrayForEach(e, json_get(selector, "matchExpressions"))
  {
    const char *key = json_get_str(e, "key"), *op = json_get_str(e, "operator");
    const char *have = key ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, key))
                           : NULL;
    const cJSON *values = json_get(e, "values");
    if(!op)
      return false;
    if(!strcmp(op, "In") && !(have && listed(values, have)))
      return false;
    if(!strcmp(op, "NotIn") && have && listed(values, have))
      return false;
    if(!strcmp(op, "Exists") && !have)
      return false;
    if(!strcmp(op, "DoesNotExist") && have)
      return false;
  }
  return true;
}

struct collect {
  const cJSON *pod_labels;
  const char *only;
  struct pmig_verdict *v;
  bool found_ref, ref_selects;
};

static void each_policy(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct collect *c = ctx;
  const char *name = json_get_str(obj, "metadata.name");
  if(!name || json_get(obj, "metadata.deletionTimestamp"))
    return;
  if(c->only && strcmp(c->only, name))
    return;
  bool selects = pmig_selects(json_get(obj, "spec.podSelector"), c->pod_labels);
  if(c->only) {
    c->found_ref = true;
    c->ref_selects = selects;
  }
  if(selects && c->v->n < PG_POLICIES_MAX)
    c->v->policies[c->v->n++] = cJSON_Duplicate(obj, 1);
}

static int by_name(const void *a, const void *b)
{
  const char *x = json_get_str(*(const cJSON *const *)a, "metadata.name");
  const char *y = json_get_str(*(const cJSON *const *)b, "metadata.name");
  return strcmp(x ? x : "", y ? y : "");
}

struct running {
  const char *self, *policy;
  int n;
};

/* Migrations under the same policy past Validating and not finished. */
static void each_running(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct running *r = ctx;
  const char *name = json_get_str(obj, "metadata.name");
  const char *phase = json_get_str(obj, "status.phase");
  const char *policy = json_get_str(obj, "status.policyName");
  static const char *const idle[] = { "Pending", "Validating", "Completed", "Failed",
                                      "Cancelled", NULL };
  if(!name || !strcmp(name, r->self) || !phase || !policy || strcmp(policy, r->policy))
    return;
  for(const char *const *i = idle; *i; i++)
    if(!strcmp(phase, *i))
      return;
  r->n++;
}

gw_rc pmig_policy(struct pmig *p, const cJSON *pod, const char *strategy,
                  struct pmig_verdict *v)
{
  memset(v, 0, sizeof(*v));
  struct informer *pols = mgr_cache(p->ctx->mgr, &KUBE_MIGRATION_POLICIES);
  const char *ref = json_get_str(p->obj, "spec.policyRef.name");
  const char *pod_name = json_get_str(pod, "metadata.name");
  struct collect c = { json_get(pod, "metadata.labels"), ref, v, false, false };
  if(pols)
    informer_each(pols, p->ns, each_policy, &c);
  qsort(v->policies, v->n, sizeof(v->policies[0]), by_name);
  if(ref && !c.found_ref) {
    snprintf(v->reason, sizeof(v->reason), "PolicyNotFound");
    snprintf(v->why, sizeof(v->why), "MigrationPolicy \"%s\" (spec.policyRef) does not exist in "
             "namespace \"%s\"", ref, p->ns);
    return GW_OK;
  }
  if(ref && !c.ref_selects) {
    snprintf(v->reason, sizeof(v->reason), "PolicyDoesNotSelectPod");
    snprintf(v->why, sizeof(v->why), "MigrationPolicy \"%s\" (spec.policyRef) does not select pod "
             "%s: its podSelector does not match the pod's labels", ref, pod_name);
    return GW_OK;
  }
  if(!v->n) {
    snprintf(v->reason, sizeof(v->reason), "NoPolicy");
    snprintf(v->why, sizeof(v->why), "no MigrationPolicy of namespace \"%s\" selects pod %s: a "
             "pod is moved only under a policy that allows it; ask for one whose podSelector "
             "matches the pod's labels", p->ns, pod_name);
    return GW_OK;
  }
  long long concurrent = -1;
  v->stop_and_copy_ok = true;
  for(size_t i = 0; i < v->n; i++) {
    const cJSON *pol = v->policies[i];
    const char *name = json_get_str(pol, "metadata.name");
    const cJSON *modes = json_get(pol, "spec.allowedModes");
    bool any = cJSON_GetArraySize(modes) == 0; /* defaulted by the webhook; absent: both */
    if(!any && !listed(modes, strategy)) {
      snprintf(v->reason, sizeof(v->reason), "StrategyNotAllowed");
      snprintf(v->why, sizeof(v->why), "MigrationPolicy \"%s\" does not allow the strategy %s "
               "(allowedModes); use an allowed strategy or ask for the policy to allow it",
               name, strategy);
      return GW_OK;
    }
    if(!any && !listed(modes, "StopAndCopy"))
      v->stop_and_copy_ok = false;
    const char *fb = json_get_str(pol, "spec.freezeBudget");
    int64_t ms = 0;
    if(!fb || !duration_parse_ms(fb, &ms))
      ms = 1000; /* the schema's default */
    if(!v->freeze_budget_ms || ms < v->freeze_budget_ms)
      v->freeze_budget_ms = ms;
    const cJSON *mc = json_get(pol, "spec.maxConcurrent");
    long long max = cJSON_IsNumber(mc) ? (long long)mc->valuedouble : 1;
    if(concurrent < 0 || max < concurrent) {
      concurrent = max;
      snprintf(v->policy, sizeof(v->policy), "%s", name ? name : "");
    }
    const cJSON *ds = json_get(pol, "spec.destinationNodeSelector");
    if(cJSON_IsObject(ds) && ds->child && v->ndest < PG_POLICIES_MAX)
      v->dest_selectors[v->ndest++] = ds;
  }
  struct running r = { p->name, v->policy, 0 };
  struct informer *migs = mgr_cache(p->ctx->mgr, &KUBE_POD_MIGRATIONS);
  if(migs)
    informer_each(migs, p->ns, each_running, &r);
  if(r.n >= concurrent) {
    v->wait = true;
    snprintf(v->reason, sizeof(v->reason), "ConcurrencyLimit");
    snprintf(v->why, sizeof(v->why), "%d migration%s under MigrationPolicy \"%s\" already run "
             "(maxConcurrent %lld): this one starts when one ends", r.n, r.n == 1 ? "" : "s",
             v->policy, concurrent);
    return GW_OK;
  }
  v->ok = true;
  return GW_OK;
}

bool pmig_policy_dest(const struct pmig_verdict *v, const cJSON *node_labels)
{
  for(size_t i = 0; i < v->ndest; i++)
    if(!pmig_labels_have(v->dest_selectors[i], node_labels))
      return false;
  return true;
}

void pmig_verdict_release(struct pmig_verdict *v)
{
  for(size_t i = 0; i < v->n; i++)
    cJSON_Delete(v->policies[i]);
  v->n = 0;
}
