/* daemonsets.c: the DaemonSet controller (pkg/controller/daemon, as in Kubernetes 1.33), run by
 * the primary job runner.
 *
 * Each pass, for each DaemonSet not being deleted, against the Nodes and the Pods it controls
 * (controller ownerReference; terminal Pods already being deleted are ignored, as
 * getNodesToDaemonPods does), grouped by spec.nodeName:
 *   - a Node should run the daemon Pod when it is not being deleted, the template's nodeName
 *     (if any), nodeSelector and required node affinity match it, and the Pod tolerates its
 *     NoSchedule and NoExecute taints, with the tolerations every daemon Pod gets; a Pod may
 *     stay where only its NoExecute taints are tolerated (NodeShouldRunDaemonPod).
 *   - should run and has no Pod: one is created from the template, bound there (spec.nodeName),
 *     named by generateName <ds>-, labelled controller-revision-hash (a hash of the template)
 *     and pod-template-generation, owned with controller and blockOwnerDeletion.
 *   - may stay: a Failed Pod is deleted (Warning FailedDaemonPod; the next one on that node
 *     waits base * 2^(n-1)), a Succeeded one too (SucceededDaemonPod), and of several running
 *     Pods only the oldest is kept. May not stay, or the Node is gone: its Pods are deleted.
 *   - RollingUpdate (maxSurge 0), once the pass found nothing else to do: Pods of an older
 *     template are deleted, an unavailable one at once, available ones while fewer than
 *     maxUnavailable nodes lack an available up-to-date Pod; the next passes create their
 *     replacements. OnDelete: an old Pod is replaced only once someone deletes it.
 *   - the status counts, as updateDaemonSetStatus does, with observedGeneration.
 * Creations and deletions go into the Pod cache at once, so the next pass builds on them.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jr.h"
#include "json.h"
#include "log.h"

#define HASH_LABEL "controller-revision-hash"
#define GEN_LABEL "pod-template-generation"
#define GEN_ANNOTATION "deprecated.daemonset.template.generation"

const struct kube_gvr JR_DAEMONSETS = { "apps", "v1", "daemonsets", true };

/* Failed Pods deleted on one node, for the backoff between two deletions. */
struct ds_backoff {
  char node[254];
  int n;
  int64_t last_ms;
};

/* What the controller keeps of a DaemonSet across passes. */
struct ds_rt {
  char uid[64];
  int create_failures;
  int64_t next_create_ms;
  struct ds_backoff *fail;
  size_t nfail;
  bool seen;
  struct ds_rt *next;
};

struct jr_dsctl {
  struct ds_rt *sets;
};

/* One DaemonSet in one pass. */
struct ds_ctx {
  const cJSON *ds;
  struct ds_rt *rt;
  const char *ns, *name, *uid;
  cJSON *pod_spec;   /* the template's spec with the daemon tolerations (owned) */
  char hash[16];     /* controller-revision-hash of the template */
  char gen[24];      /* pod-template-generation; "" when unknown */
  long min_ready_s;
  bool busy;         /* the pass created or deleted Pods, or wanted to */
};

/* One Node (or the name of a vanished one that Pods are still bound to) in one pass. */
struct ds_node {
  const char *name;
  const cJSON *node; /* NULL: gone */
  bool should_run, may_stay;
  cJSON *pods;       /* the DaemonSet's Pods bound there, oldest first (references) */
};

gw_rc dsctl_init(struct jr *jr)
{
  jr->dsctl = calloc(1, sizeof(*jr->dsctl));
  return jr->dsctl ? GW_OK : GW_ENOMEM;
}

static void rt_free(struct ds_rt *r)
{
  free(r->fail);
  free(r);
}

void dsctl_free(struct jr *jr)
{
  if(!jr->dsctl)
    return;
  while(jr->dsctl->sets) {
    struct ds_rt *r = jr->dsctl->sets;
    jr->dsctl->sets = r->next;
    rt_free(r);
  }
  free(jr->dsctl);
  jr->dsctl = NULL;
}

static void ds_event(struct jr *jr, const struct ds_ctx *x, const char *type, const char *reason,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void ds_event(struct jr *jr, const struct ds_ctx *x, const char *type, const char *reason,
                     const char *fmt, ...)
{
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  jr_event(jr, x->ds, "DaemonSet", "apps/v1", type, "daemonset-controller", reason, "%s", msg);
}

/* ---- which Nodes: nodeSelector, required node affinity, taints ---- */

static const char *str_or_empty(const cJSON *o, const char *key)
{
  const char *s = json_get_str(o, key);
  return s ? s : "";
}

/* Toleration.ToleratesTaint */
static bool tolerates(const cJSON *tol, const cJSON *taint)
{
  const char *effect = str_or_empty(tol, "effect"), *key = str_or_empty(tol, "key");
  const char *op = str_or_empty(tol, "operator");
  if(*effect && strcmp(effect, str_or_empty(taint, "effect")))
    return false;
  if(*key && strcmp(key, str_or_empty(taint, "key")))
    return false;
  if(!strcmp(op, "Exists"))
    return true;
  return (!*op || !strcmp(op, "Equal")) &&
         !strcmp(str_or_empty(tol, "value"), str_or_empty(taint, "value"));
}

/* Whether every taint of the Node with a counted effect (NoExecute; NoSchedule too unless
 * noexecute_only) is tolerated. */
static bool taints_ok(const cJSON *spec, const cJSON *node, bool noexecute_only)
{
  const cJSON *taint;
  cJSON_ArrayForEach(taint, json_get(node, "spec.taints"))
  {
    const char *e = str_or_empty(taint, "effect");
    if(strcmp(e, "NoExecute") && (noexecute_only || strcmp(e, "NoSchedule")))
      continue;
    bool ok = false;
    const cJSON *tol;
    cJSON_ArrayForEach(tol, cJSON_GetObjectItemCaseSensitive(spec, "tolerations"))
      ok = ok || tolerates(tol, taint);
    if(!ok)
      return false;
  }
  return true;
}

/* NodeShouldRunDaemonPod */
static void node_predicates(const struct ds_ctx *x, struct ds_node *n)
{
  const char *want = json_get_str(x->pod_spec, "nodeName");
  n->should_run = n->may_stay = false;
  if(!n->node || jr_json_has(n->node, "metadata.deletionTimestamp") ||
     (want && *want && strcmp(want, n->name)) ||
     !sched_spec_fits(x->pod_spec, json_get(n->node, "metadata.labels"), n->name))
    return;
  n->may_stay = taints_ok(x->pod_spec, n->node, true);
  n->should_run = n->may_stay && taints_ok(x->pod_spec, n->node, false);
}

/* ---- the Pod a DaemonSet creates ---- */

/* AddOrUpdateDaemonPodTolerations: each replaces a toleration with its key, operator, value and
 * effect, else is appended; network-unavailable for hostNetwork Pods only. */
static void daemon_tolerations(cJSON *spec)
{
  static const char *const tol[][2] = {
    { "node.kubernetes.io/not-ready", "NoExecute" },
    { "node.kubernetes.io/unreachable", "NoExecute" },
    { "node.kubernetes.io/disk-pressure", "NoSchedule" },
    { "node.kubernetes.io/memory-pressure", "NoSchedule" },
    { "node.kubernetes.io/pid-pressure", "NoSchedule" },
    { "node.kubernetes.io/unschedulable", "NoSchedule" },
    { "node.kubernetes.io/network-unavailable", "NoSchedule" },
  };
  cJSON *list = cJSON_GetObjectItemCaseSensitive(spec, "tolerations");
  if(!cJSON_IsArray(list)) {
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "tolerations");
    list = cJSON_AddArrayToObject(spec, "tolerations");
  }
  size_t n = json_get_bool(spec, "hostNetwork", false) ? 7 : 6;
  for(size_t i = 0; i < n; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "key", tol[i][0]);
    cJSON_AddStringToObject(t, "operator", "Exists");
    cJSON_AddStringToObject(t, "effect", tol[i][1]);
    int at = 0;
    const cJSON *old;
    cJSON_ArrayForEach(old, list)
    {
      if(!strcmp(str_or_empty(old, "key"), tol[i][0]) &&
         !strcmp(str_or_empty(old, "operator"), "Exists") && !*str_or_empty(old, "value") &&
         !strcmp(str_or_empty(old, "effect"), tol[i][1]))
        break;
      at++;
    }
    if(old)
      cJSON_ReplaceItemInArray(list, at, t);
    else
      cJSON_AddItemToArray(list, t);
  }
}

/* Kubernetes' ControllerRevision hash: FNV-32a of the template (here its canonical JSON), in
 * decimal, each digit mapped to rand.SafeEncodeString's alphabet. */
static void template_hash(const cJSON *tmpl, char *out, size_t len)
{
  static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
  char *s = json_print_canonical(tmpl);
  uint32_t h = 2166136261u;
  for(const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    h ^= *p;
    h *= 16777619u;
  }
  cJSON_free(s);
  char dec[16];
  jr_fmt(dec, sizeof(dec), "%u", h);
  size_t i = 0;
  for(; dec[i] && i + 1 < len; i++)
    out[i] = alnum[(unsigned char)dec[i] % (sizeof(alnum) - 1)];
  out[i] = '\0';
}

static void add_string_map(cJSON *to, const char *key, const cJSON *from)
{
  if(cJSON_IsObject(from) && cJSON_GetArraySize(from))
    cJSON_AddItemToObject(to, key, cJSON_Duplicate(from, 1));
}

/* GetPodFromTemplate and CreatePodTemplate: the template's labels, annotations and finalizers,
 * the revision labels, the owner, the spec bound to node. */
static cJSON *new_pod(const struct ds_ctx *x, const char *node)
{
  const cJSON *tmeta = json_get(x->ds, "spec.template.metadata");
  cJSON *pod = cJSON_CreateObject();
  cJSON_AddStringToObject(pod, "apiVersion", "v1");
  cJSON_AddStringToObject(pod, "kind", "Pod");
  cJSON *md = cJSON_AddObjectToObject(pod, "metadata");
  char prefix[300];
  jr_fmt(prefix, sizeof(prefix), "%s-", x->name);
  cJSON_AddStringToObject(md, "generateName", prefix);
  cJSON_AddStringToObject(md, "namespace", x->ns);
  cJSON *labels = cJSON_Duplicate(json_get(tmeta, "labels"), 1);
  if(!cJSON_IsObject(labels)) {
    cJSON_Delete(labels);
    labels = cJSON_CreateObject();
  }
  cJSON_DeleteItemFromObjectCaseSensitive(labels, GEN_LABEL);
  cJSON_DeleteItemFromObjectCaseSensitive(labels, HASH_LABEL);
  if(x->gen[0])
    cJSON_AddStringToObject(labels, GEN_LABEL, x->gen);
  cJSON_AddStringToObject(labels, HASH_LABEL, x->hash);
  cJSON_AddItemToObject(md, "labels", labels);
  add_string_map(md, "annotations", json_get(tmeta, "annotations"));
  if(cJSON_GetArraySize(json_get(tmeta, "finalizers")))
    cJSON_AddItemToObject(md, "finalizers", cJSON_Duplicate(json_get(tmeta, "finalizers"), 1));
  cJSON *ref = cJSON_CreateObject();
  cJSON_AddStringToObject(ref, "apiVersion", "apps/v1");
  cJSON_AddStringToObject(ref, "kind", "DaemonSet");
  cJSON_AddStringToObject(ref, "name", x->name);
  cJSON_AddStringToObject(ref, "uid", x->uid);
  cJSON_AddBoolToObject(ref, "controller", true);
  cJSON_AddBoolToObject(ref, "blockOwnerDeletion", true);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(md, "ownerReferences"), ref);
  cJSON *spec = cJSON_Duplicate(x->pod_spec, 1);
  cJSON_DeleteItemFromObjectCaseSensitive(spec, "nodeName");
  cJSON_AddStringToObject(spec, "nodeName", node);
  cJSON_AddItemToObject(pod, "spec", spec);
  return pod;
}

static void create_pod(struct jr *jr, struct ds_ctx *x, const char *node)
{
  x->busy = true;
  int64_t now = jr_mono_ms();
  if(x->rt->next_create_ms > now) { /* after a refusal */
    jr_wake_at(jr, x->rt->next_create_ms);
    return;
  }
  cJSON *pod = new_pod(x, node);
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jr->k, &KUBE_PODS, x->ns, pod, false, &out, &st);
  cJSON_Delete(pod);
  if(!rc && out) {
    jr_cache_put_if_absent(&jr->pods, out); /* the next pass must see it */
    x->rt->create_failures = 0;
    x->rt->next_create_ms = 0;
    ds_event(jr, x, "Normal", "SuccessfulCreate", "Created pod: %s",
             json_get_str(out, "metadata.name"));
  } else {
    x->rt->create_failures++;
    x->rt->next_create_ms =
      now + jr_backoff_ms(jr, x->rt->create_failures, jr->cfg->backoff_max_ms);
    jr_wake_at(jr, x->rt->next_create_ms);
    ds_event(jr, x, "Warning", "FailedCreate", "Error creating: %s",
             st.message[0] ? st.message : gw_strerror(rc));
  }
  kube_status_release(&st);
  cJSON_Delete(out);
}

static void delete_pod(struct jr *jr, struct ds_ctx *x, const cJSON *pod)
{
  x->busy = true;
  const char *name = json_get_str(pod, "metadata.name");
  struct kube_delete_opts o = { .grace_period_s = -1,
                                .precondition_uid = json_get_str(pod, "metadata.uid") };
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(jr->k, &KUBE_PODS, x->ns, name, &o, &out, &st);
  const char *kind = json_get_str(out, "kind");
  if(!rc && kind && !strcmp(kind, "Pod"))
    jr_cache_write_through(&jr->pods, out); /* now with its deletionTimestamp */
  if(!rc)
    ds_event(jr, x, "Normal", "SuccessfulDelete", "Deleted pod: %s", name);
  else if(rc != GW_ENOTFOUND && rc != GW_ECONFLICT)
    ds_event(jr, x, "Warning", "FailedDelete", "Error deleting: %s",
             st.message[0] ? st.message : gw_strerror(rc));
  kube_status_release(&st);
  cJSON_Delete(out);
}

/* ---- the Pods of a Node ---- */

static bool deleting(const cJSON *pod)
{
  return jr_json_has(pod, "metadata.deletionTimestamp");
}

static bool phase_is(const cJSON *pod, const char *phase)
{
  const char *p = json_get_str(pod, "status.phase");
  return p && !strcmp(p, phase);
}

static const cJSON *ready_condition(const cJSON *pod)
{
  const cJSON *c = jr_condition(json_get(pod, "status.conditions"), "Ready");
  const char *s = json_get_str(c, "status");
  return s && !strcmp(s, "True") ? c : NULL;
}

/* podutil.IsPodAvailable; wakes the loop when a Ready Pod is to become available. */
static bool available(struct jr *jr, const struct ds_ctx *x, const cJSON *pod)
{
  const cJSON *c = ready_condition(pod);
  if(!c || x->min_ready_s <= 0)
    return c != NULL;
  time_t since = jr_parse_time(json_get_str(c, "lastTransitionTime"));
  time_t at = since + x->min_ready_s, now = time(NULL);
  if(since >= 0 && at < now)
    return true;
  jr_wake_at(jr, jr_mono_ms() + (int64_t)(at - now + 1) * 1000);
  return false;
}

/* util.IsPodUpdated: the template's hash or generation. */
static bool updated(const struct ds_ctx *x, const cJSON *pod)
{
  const cJSON *labels = json_get(pod, "metadata.labels");
  const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, HASH_LABEL));
  const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, GEN_LABEL));
  return (h && !strcmp(h, x->hash)) || (x->gen[0] && g && !strcmp(g, x->gen));
}

/* A Failed Pod on that node may be deleted now (failedPodsBackoff), which counts as one more. */
static bool failed_backoff_over(struct jr *jr, struct ds_ctx *x, const char *node)
{
  struct ds_rt *r = x->rt;
  struct ds_backoff *b = NULL;
  for(size_t i = 0; i < r->nfail && !b; i++)
    if(!strcmp(r->fail[i].node, node))
      b = &r->fail[i];
  int64_t now = jr_mono_ms();
  if(b && now - b->last_ms < jr_backoff_ms(jr, b->n, jr->cfg->backoff_max_ms)) {
    jr_wake_at(jr, b->last_ms + jr_backoff_ms(jr, b->n, jr->cfg->backoff_max_ms));
    return false;
  }
  if(!b) {
    struct ds_backoff *v = realloc(r->fail, (r->nfail + 1) * sizeof(*v));
    if(!v)
      return true;
    r->fail = v;
    b = &r->fail[r->nfail++];
    memset(b, 0, sizeof(*b));
    jr_fmt(b->node, sizeof(b->node), "%s", node);
  }
  b->n++;
  b->last_ms = now;
  return true;
}

/* podsShouldBeOnNode, acted upon at once. */
static void manage_node(struct jr *jr, struct ds_ctx *x, const struct ds_node *n)
{
  int npods = cJSON_GetArraySize(n->pods);
  if(n->should_run && !npods) {
    create_pod(jr, x, n->name);
    return;
  }
  const cJSON *p;
  if(!n->may_stay) {
    cJSON_ArrayForEach(p, n->pods)
    {
      if(!deleting(p))
        delete_pod(jr, x, p);
    }
    return;
  }
  bool kept = false; /* the oldest running Pod stays, any other goes */
  cJSON_ArrayForEach(p, n->pods)
  {
    const char *pn = json_get_str(p, "metadata.name");
    if(deleting(p))
      continue;
    if(phase_is(p, "Failed")) {
      if(!failed_backoff_over(jr, x, n->name))
        continue;
      ds_event(jr, x, "Warning", "FailedDaemonPod",
               "Found failed daemon pod %s/%s on node %s, will try to kill it", x->ns, pn,
               n->name);
      delete_pod(jr, x, p);
    } else if(phase_is(p, "Succeeded")) {
      ds_event(jr, x, "Normal", "SucceededDaemonPod",
               "Found succeeded daemon pod %s/%s on node %s, will try to delete it", x->ns, pn,
               n->name);
      delete_pod(jr, x, p);
    } else if(kept) {
      delete_pod(jr, x, p);
    } else {
      kept = true;
    }
  }
}

/* maxUnavailable of the rolling update, scaled to desired (rounded up), at least 1. */
static long max_unavailable(const cJSON *ds, long desired)
{
  const cJSON *v = json_get(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable");
  long m = 1;
  if(cJSON_IsNumber(v))
    m = (long)v->valuedouble;
  else if(cJSON_IsString(v))
    m = (strtol(v->valuestring, NULL, 10) * desired + 99) / 100;
  return m > 0 ? m : 1;
}

/* rollingUpdate without surge: see the top of the file. */
static void rolling_update(struct jr *jr, struct ds_ctx *x, struct ds_node *nodes, size_t n,
                           long desired)
{
  long max = max_unavailable(x->ds, desired), unavailable = 0;
  cJSON *candidates = cJSON_CreateArray();
  for(size_t i = 0; i < n; i++) {
    if(!cJSON_GetArraySize(nodes[i].pods))
      continue;
    const cJSON *fresh = NULL, *old = NULL, *p;
    bool excess = false;
    cJSON_ArrayForEach(p, nodes[i].pods)
    {
      if(deleting(p))
        continue;
      const cJSON **slot = updated(x, p) ? &fresh : &old;
      excess = excess || *slot;
      *slot = p;
    }
    if(excess || (!fresh) == (!old))
      unavailable++; /* the core loop's business */
    else if(fresh)
      unavailable += !available(jr, x, fresh);
    else if(!available(jr, x, old))
      delete_pod(jr, x, old);
    else if(unavailable < max)
      cJSON_AddItemReferenceToArray(candidates, (cJSON *)old);
  }
  long room = max - unavailable;
  const cJSON *p;
  cJSON_ArrayForEach(p, candidates)
  {
    if(room-- <= 0)
      break;
    delete_pod(jr, x, p);
  }
  cJSON_Delete(candidates);
}

/* ---- status ---- */

static long status_num(const cJSON *ds, const char *field)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(ds, "status"), field);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

/* updateDaemonSetStatus over the Pods as this pass found them. */
static void write_status(struct jr *jr, struct ds_ctx *x, const struct ds_node *nodes, size_t n)
{
  enum { DESIRED, CURRENT, MISSCHEDULED, READY, UPDATED, AVAILABLE, UNAVAILABLE, NCOUNTS };
  /* kube's JSON: the last three are omitempty */
  static const char *const field[NCOUNTS] = {
    "desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled", "numberReady",
    "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
  };
  long c[NCOUNTS] = { 0 };
  for(size_t i = 0; i < n; i++) {
    const cJSON *oldest = cJSON_GetArrayItem(nodes[i].pods, 0);
    if(!nodes[i].node)
      continue;
    if(!nodes[i].should_run) {
      c[MISSCHEDULED] += oldest != NULL;
      continue;
    }
    c[DESIRED]++;
    if(!oldest)
      continue;
    c[CURRENT]++;
    c[READY] += ready_condition(oldest) != NULL;
    c[AVAILABLE] += available(jr, x, oldest);
    c[UPDATED] += updated(x, oldest);
  }
  c[UNAVAILABLE] = c[DESIRED] - c[AVAILABLE];
  long gen = jr_json_long(x->ds, "metadata.generation", 0);
  bool same = jr_json_long(x->ds, "status.observedGeneration", 0) >= gen;
  cJSON *s = cJSON_CreateObject();
  cJSON_AddNumberToObject(s, "observedGeneration", (double)gen);
  for(int i = 0; i < NCOUNTS; i++) {
    same = same && status_num(x->ds, field[i]) == c[i];
    cJSON_AddItemToObject(s, field[i], i >= UPDATED && !c[i] ? cJSON_CreateNull()
                                                             : cJSON_CreateNumber((double)c[i]));
  }
  if(same) {
    cJSON_Delete(s);
    return;
  }
  cJSON *patch = cJSON_CreateObject();
  cJSON_AddItemToObject(patch, "status", s);
  char *body = cJSON_PrintUnformatted(patch);
  cJSON_Delete(patch);
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = body ? kube_patch(jr->k, &JR_DAEMONSETS, x->ns, x->name, KUBE_PATCH_MERGE, body,
                               "status", &out, &st)
                  : GW_ENOMEM;
  cJSON_free(body);
  if(out)
    jr_cache_write_through(&jr->daemonsets, out); /* the next pass builds on this write */
  cJSON_Delete(out);
  if(rc && rc != GW_ENOTFOUND) {
    log_kv(LOG_WARN, "daemonset status not written", "daemonset", x->name, "namespace", x->ns,
           "error", st.message[0] ? st.message : gw_strerror(rc), LOG_END);
    jr_wake_at(jr, jr_mono_ms() + 500);
  }
  kube_status_release(&st);
}

/* ---- the pass ---- */

static struct ds_rt *rt_get(struct jr_dsctl *dc, const char *uid)
{
  for(struct ds_rt *r = dc->sets; r; r = r->next)
    if(!strcmp(r->uid, uid))
      return r;
  struct ds_rt *r = calloc(1, sizeof(*r));
  if(!r)
    return NULL;
  jr_fmt(r->uid, sizeof(r->uid), "%s", uid);
  r->next = dc->sets;
  dc->sets = r;
  return r;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(((const struct ds_node *)a)->name, ((const struct ds_node *)b)->name);
}

/* Oldest first (podByCreationTimestampAndPhase: creationTimestamp, then name). */
static void insert_by_age(cJSON *pods, const cJSON *pod)
{
  const char *ct = str_or_empty(pod, "metadata.creationTimestamp");
  const char *name = str_or_empty(pod, "metadata.name");
  int at = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    int c = strcmp(ct, str_or_empty(p, "metadata.creationTimestamp"));
    if(c < 0 || (!c && strcmp(name, str_or_empty(p, "metadata.name")) < 0))
      break;
    at++;
  }
  /* a reference: the array does not own the Pod's members */
  cJSON_InsertItemInArray(pods, at, cJSON_CreateObjectReference(pod->child));
}

/* Every Node, sorted by name, then the vanished ones the DaemonSet's Pods are bound to; each
 * with its Pods. *n gets the count; free with free_nodes. */
static struct ds_node *group_pods(const struct ds_ctx *x, const cJSON *nodes, const cJSON *pods,
                                  size_t *n)
{
  size_t cap = (size_t)cJSON_GetArraySize(nodes) + (size_t)cJSON_GetArraySize(pods) + 1;
  struct ds_node *v = calloc(cap, sizeof(*v));
  *n = 0;
  if(!v)
    return NULL;
  const cJSON *it;
  cJSON_ArrayForEach(it, nodes)
  {
    const char *name = json_get_str(it, "metadata.name");
    if(name)
      v[(*n)++] = (struct ds_node){ .name = name, .node = it, .pods = cJSON_CreateArray() };
  }
  qsort(v, *n, sizeof(*v), by_name);
  cJSON_ArrayForEach(it, pods)
  {
    const char *node = json_get_str(it, "spec.nodeName");
    const char *ns = json_get_str(it, "metadata.namespace");
    bool terminal = phase_is(it, "Failed") || phase_is(it, "Succeeded");
    if(!node || !*node || !ns || strcmp(ns, x->ns) || !jr_owned_by(it, x->uid) ||
       (terminal && deleting(it)))
      continue;
    size_t i = 0;
    while(i < *n && strcmp(v[i].name, node))
      i++;
    if(i == *n)
      v[(*n)++] = (struct ds_node){ .name = node, .pods = cJSON_CreateArray() };
    insert_by_age(v[i].pods, it);
  }
  return v;
}

static void free_nodes(struct ds_node *v, size_t n)
{
  for(size_t i = 0; i < n; i++)
    cJSON_Delete(v[i].pods);
  free(v);
}

static void sync_ds(struct jr *jr, const cJSON *ds, const cJSON *nodes, const cJSON *pods)
{
  struct ds_ctx x = { .ds = ds };
  x.ns = json_get_str(ds, "metadata.namespace");
  x.name = json_get_str(ds, "metadata.name");
  x.uid = json_get_str(ds, "metadata.uid");
  if(!x.ns || !x.name || !x.uid || !(x.rt = rt_get(jr->dsctl, x.uid)))
    return;
  x.rt->seen = true;
  /* Being deleted (foreground or orphan): nothing to do, not even the status. */
  if(deleting(ds))
    return;
  const cJSON *tmpl = json_get(ds, "spec.template");
  x.pod_spec = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tmpl, "spec"), 1);
  if(!cJSON_IsObject(x.pod_spec)) {
    cJSON_Delete(x.pod_spec);
    x.pod_spec = cJSON_CreateObject();
  }
  daemon_tolerations(x.pod_spec);
  template_hash(tmpl, x.hash, sizeof(x.hash));
  const cJSON *ann = json_get(ds, "metadata.annotations");
  const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, GEN_ANNOTATION));
  jr_fmt(x.gen, sizeof(x.gen), "%s", g ? g : "");
  x.min_ready_s = jr_json_long(ds, "spec.minReadySeconds", 0);
  size_t n = 0;
  struct ds_node *v = group_pods(&x, nodes, pods, &n);
  long desired = 0;
  for(size_t i = 0; i < n; i++) {
    node_predicates(&x, &v[i]);
    desired += v[i].should_run;
  }
  for(size_t i = 0; i < n; i++)
    manage_node(jr, &x, &v[i]);
  const char *strategy = json_get_str(ds, "spec.updateStrategy.type");
  if(!x.busy && strategy && !strcmp(strategy, "RollingUpdate"))
    rolling_update(jr, &x, v, n, desired);
  write_status(jr, &x, v, n);
  free_nodes(v, n);
  cJSON_Delete(x.pod_spec);
}

void dsctl_sync(struct jr *jr, const cJSON *daemonsets, const cJSON *nodes, const cJSON *pods)
{
  for(struct ds_rt *r = jr->dsctl->sets; r; r = r->next)
    r->seen = false;
  const cJSON *ds;
  cJSON_ArrayForEach(ds, daemonsets)
    sync_ds(jr, ds, nodes, pods);
  for(struct ds_rt **pp = &jr->dsctl->sets; *pp;) { /* forget the DaemonSets that are gone */
    struct ds_rt *r = *pp;
    if(!r->seen) {
      *pp = r->next;
      rt_free(r);
      continue;
    }
    pp = &r->next;
  }
}
