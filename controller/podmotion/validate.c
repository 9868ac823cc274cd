/* The Validating phase of a PodMigration (pmig.h): everything checked before anything touches a
 * pod. A refusal ends the migration Failed; what may change by itself (a pod not running yet,
 * other migrations running under the policy, a node agent not there yet) keeps it in
 * Validating, looked at again when pods, nodes, policies or migrations change. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../finalizer.h"
#include "../informer.h"
#include "../ktime.h"
#include "api/api.h"
#include "json.h"
#include "../nodeagent/client.h"
#include "pmig.h"

/* Still validating: Validating=True with why, looked at again when what it waits for changes. */
static void wait_for(struct pmig *p, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void wait_for(struct pmig *p, const char *reason, const char *fmt, ...)
{
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pmig_cond(p, "Validating", COND_TRUE, reason, "%s", msg);
  edit_requeue(&p->ed, 30000); /* a fallback: the watches bring the change at once */
}

static bool has_probe(const cJSON *pod, const char *what)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
  {
    /* the probe runs against the shielded copy through its node agent: an HTTP GET or a TCP
     * connection, not a command */
    if(!strcmp(what, "readiness") && (json_get(c, "readinessProbe.httpGet") ||
                                      json_get(c, "readinessProbe.tcpSocket")))
      return true;
    if(!strcmp(what, "tcp")) {
      const cJSON *port;
      cJSON_ArrayForEach(port, json_get(c, "ports"))
      {
        const char *proto = json_get_str(port, "protocol");
        if(!proto || !strcmp(proto, "TCP"))
          return true;
      }
    }
  }
  return false;
}

static bool node_ready(const cJSON *node)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(node, "status.conditions"))
  {
    const char *t = json_get_str(c, "type"), *s = json_get_str(c, "status");
    if(t && !strcmp(t, "Ready"))
      return s && !strcmp(s, "True");
  }
  return true; /* no conditions reported: not known to be down */
}

struct pick {
  const cJSON *selector;
  const struct pmig_verdict *v;
  const char *source;
  char best[254];
};

static void each_node(void *ctx, const char *key, const cJSON *node)
{
  (void)key;
  struct pick *pk = ctx;
  const char *name = json_get_str(node, "metadata.name");
  const cJSON *labels = json_get(node, "metadata.labels");
  if(!name || !strcmp(name, pk->source) || json_get_bool(node, "spec.unschedulable", false) ||
     !node_ready(node) || !pmig_labels_have(pk->selector, labels) ||
     !pmig_policy_dest(pk->v, labels))
    return;
  if(!pk->best[0] || strcmp(name, pk->best) < 0)
    snprintf(pk->best, sizeof(pk->best), "%s", name);
}

/* The destination: spec.destination.nodeName, or the first node (by name) nodeSelector and the
 * policies select, other than the source's. "" when refused (the refusal is queued). */
static void destination(struct pmig *p, const char *source, const struct pmig_verdict *v,
                        char *out, size_t len)
{
  out[0] = '\0';
  const char *want = json_get_str(p->obj, "spec.destination.nodeName");
  if(want) {
    cJSON *node = pmig_cached(p, &KUBE_NODES, NULL, want);
    if(!node)
      pmig_refuse(p, "NodeSelected", "NodeNotFound", "node \"%s\" (spec.destination.nodeName) "
                  "does not exist", want);
    else if(!strcmp(want, source))
      pmig_refuse(p, "NodeSelected", "SameNode", "pod runs on node \"%s\" already: name "
                  "another node in spec.destination.nodeName", want);
    else if(json_get_bool(node, "spec.unschedulable", false))
      pmig_refuse(p, "NodeSelected", "NodeUnschedulable", "node \"%s\" is cordoned "
                  "(spec.unschedulable): uncordon it or choose another node", want);
    else if(!pmig_policy_dest(v, json_get(node, "metadata.labels")))
      pmig_refuse(p, "PolicyChecked", "DestinationNotAllowed", "node \"%s\" lacks labels the "
                  "destinationNodeSelector of MigrationPolicy \"%s\" requires", want, v->policy);
    else
      snprintf(out, len, "%s", want);
    cJSON_Delete(node);
    return;
  }
  struct pick pk = { json_get(p->obj, "spec.destination.nodeSelector"), v, source, "" };
  struct informer *nodes = mgr_cache(p->ctx->mgr, &KUBE_NODES);
  if(nodes)
    informer_each(nodes, NULL, each_node, &pk);
  if(!pk.best[0])
    pmig_refuse(p, "NodeSelected", "NoNodeMatches", "no schedulable node other than \"%s\" "
                "carries the labels of spec.destination.nodeSelector%s", source,
                v->ndest ? " and the MigrationPolicies' destinationNodeSelector" : "");
  else
    snprintf(out, len, "%s", pk.best);
}

/* The node agent's published capabilities; NULL (with why) when there are none: no agent, a
 * malformed or expired annotation (publishedAt + ttlSeconds passed: the agent is gone), or an
 * agent whose CRIU does not run. */
static cJSON *agent(struct pmig *p, const char *node_name, char *why, size_t len)
{
  cJSON *node = pmig_cached(p, &KUBE_NODES, NULL, node_name);
  const char *text = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(node, "metadata.annotations"), PG_AGENT_ANNOTATION));
  cJSON *caps = text ? cJSON_Parse(text) : NULL;
  cJSON_Delete(node);
  const char *err = json_get_str(caps, "error");
  const cJSON *ttl = json_get(caps, "ttlSeconds");
  time_t at = kt_parse_rfc3339(json_get_str(caps, "publishedAt"));
  if(!text)
    snprintf(why, len, "no godwit node agent has published its capabilities (annotation "
             PG_AGENT_ANNOTATION ") on node %s", node_name);
  else if(!cJSON_IsObject(caps))
    snprintf(why, len, "the node agent's annotation on node %s is not a JSON object", node_name);
  else if(err)
    snprintf(why, len, "the node agent of node %s cannot checkpoint: %s", node_name, err);
  else if(cJSON_IsNumber(ttl) && at && at + (time_t)ttl->valuedouble < time(NULL))
    snprintf(why, len, "the node agent of node %s last published its capabilities at %s and "
             "has not since (ttlSeconds %.0f): it is gone", node_name,
             json_get_str(caps, "publishedAt"), ttl->valuedouble);
  else
    return caps;
  cJSON_Delete(caps);
  return NULL;
}

static gw_rc decide(struct pmig *p, const cJSON *pod)
{
  const char *pod_name = json_get_str(p->obj, "spec.source.podName");
  const char *source = json_get_str(pod, "spec.nodeName");
  const char *mode = json_get_str(p->obj, "spec.verification.mode");
  if(!mode || !strcmp(mode, "ReadinessProbe")) {
    if(!has_probe(pod, "readiness")) {
      pmig_refuse(p, "Validating", "VerificationImpossible", "verification mode ReadinessProbe "
                  "needs an httpGet or tcpSocket readiness probe on a container of pod %s, and "
                  "it has none (exec and gRPC probes cannot run against the restored copy "
                  "before it owns its traffic): add one or choose HTTPGet or TCPSocket",
                  pod_name);
      return GW_OK;
    }
  } else if(!strcmp(mode, "TCPSocket") && !json_get(p->obj, "spec.verification.tcpSocket") &&
            !has_probe(pod, "tcp")) {
    pmig_refuse(p, "Validating", "VerificationImpossible", "verification mode TCPSocket without "
                "tcpSocket probes the TCP ports pod %s's containers declare, and they declare "
                "none; set verification.tcpSocket.port", pod_name);
    return GW_OK;
  }
  const char *strategy = json_get_str(p->obj, "spec.strategy.type");
  if(!strategy)
    strategy = "PreCopy";
  struct pmig_verdict v;
  gw_rc rc = pmig_policy(p, pod, strategy, &v);
  if(rc)
    return rc;
  if(!v.ok && !v.wait) {
    pmig_refuse(p, "PolicyChecked", v.reason, "%s", v.why);
    pmig_verdict_release(&v);
    return GW_OK;
  }
  if(v.wait) {
    pmig_cond(p, "PolicyChecked", COND_FALSE, v.reason, "%s", v.why);
    wait_for(p, v.reason, "%s", v.why);
    pmig_verdict_release(&v);
    return GW_OK;
  }
  char dest[254];
  destination(p, source, &v, dest, sizeof(dest));
  if(!dest[0]) {
    pmig_verdict_release(&v);
    return GW_OK;
  }
  char budget[32];
  snprintf(budget, sizeof(budget), "%lldms", (long long)v.freeze_budget_ms);
  edit_set_str(&p->ed, "destinationNode", dest);
  edit_set_str(&p->ed, "policyName", v.policy);
  edit_set_str(&p->ed, "freezeBudget", budget);
  pmig_cond(p, "NodeSelected", COND_TRUE, "Selected", "destination node %s%s", dest,
            json_get_str(p->obj, "spec.destination.nodeName") ? " (spec.destination.nodeName)"
                                                              : " (picked by nodeSelector)");
  pmig_cond(p, "PolicyChecked", COND_TRUE, "Allowed", "allowed by %zu MigrationPolic%s (the "
            "tightest: %s): strategy %s, destination %s, freeze budget %s", v.n,
            v.n == 1 ? "y" : "ies", v.policy, strategy, dest, budget);
  bool stop_and_copy_ok = v.stop_and_copy_ok;
  pmig_verdict_release(&v);
  /* the node agents: the facts a checkpoint needs */
  char why_src[512] = "", why_dst[512] = "";
  cJSON *src = agent(p, source, why_src, sizeof(why_src));
  cJSON *dst = agent(p, dest, why_dst, sizeof(why_dst));
  if(!src || !dst) {
    wait_for(p, "NodeAgentUnavailable", "%s: the agents check a node's CRIU before anything is "
             "frozen; the pod is not touched and the migration waits (set spec.cancel to stop "
             "it)", !src ? why_src : why_dst);
    cJSON_Delete(src);
    cJSON_Delete(dst);
    return GW_OK;
  }
  const char *effective = strategy;
  if(!strcmp(strategy, "PreCopy")) {
    bool dirty = json_get_bool(src, "features.memDirtyTrack", false);
    const char *reason = dirty ? "PreCopyNotSupported" : "DirtyTrackingUnavailable";
    char what[300];
    if(dirty)
      snprintf(what, sizeof(what), "the node agents of this release take no pre-copy rounds");
    else
      snprintf(what, sizeof(what), "node %s cannot track dirty pages (CRIU mem_dirty_track is "
               "off), which PreCopy needs", source);
    if(!stop_and_copy_ok) {
      pmig_refuse(p, "PreCopyStarted", reason, "%s, and a MigrationPolicy forbids "
                  "StopAndCopy: the pod is not moved", what);
      cJSON_Delete(src);
      cJSON_Delete(dst);
      return GW_OK;
    }
    effective = "StopAndCopy";
    pmig_cond(p, "PreCopyStarted", COND_FALSE, reason, "%s: no pre-copy round can skip clean "
              "pages, so the migration runs StopAndCopy (the whole memory is copied while the "
              "pod is frozen), which every applicable MigrationPolicy allows", what);
  }
  edit_set_str(&p->ed, "strategy", effective);
  cJSON_Delete(src);
  cJSON_Delete(dst);
  /* the agents' API: where the controller reaches them */
  char why[512] = "", ep[160];
  struct na_target t;
  if(!pmig_agent_target(p, source, &t, ep, sizeof(ep), why, sizeof(why)) ||
     !pmig_agent_target(p, dest, &t, ep, sizeof(ep), why, sizeof(why))) {
    wait_for(p, "NodeAgentUnavailable", "%s: the pod is not touched and the migration waits "
             "(set spec.cancel to stop it)", why);
    return GW_OK;
  }
  /* From here the pod is frozen: a deleted PodMigration must roll back first */
  rc = obj_finalizer(p->ctx, &KUBE_POD_MIGRATIONS, p->obj, PG_FINALIZER, true);
  if(rc)
    return rc;
  pmig_cond(p, "Validating", COND_FALSE, "Validated", "pod %s on node %s may move to node %s "
            "(strategy %s)", json_get_str(pod, "metadata.name"), source, dest, effective);
  pmig_cond(p, "Checkpointing", COND_TRUE, "InProgress", "shielding pod %s and taking its "
            "checkpoint on node %s", json_get_str(pod, "metadata.name"), source);
  pmig_phase(p, PG_CHECKPOINTING, "validated: destination %s, strategy %s", dest, effective);
  edit_requeue(&p->ed, 1);
  return GW_OK;
}

gw_rc pmig_validate(struct pmig *p)
{
  char msg[2048];
  if(!api_revalidate("migration.podmotion.io", "PodMigration", p->obj, msg, sizeof(msg))) {
    pmig_refuse(p, "Validating", "InvalidSpec", "the spec does not validate: %s", msg);
    return GW_OK;
  }
  if(json_get_bool(p->obj, "spec.cancel", false)) {
    pmig_cond(p, "Complete", COND_FALSE, "Cancelled", "spec.cancel is true: the migration "
              "stopped before anything was frozen; the pod was not touched");
    pmig_cond(p, "Validating", COND_FALSE, "Cancelled", "cancelled while validating");
    edit_set_now(&p->ed, "completionTime");
    pmig_phase(p, PG_CANCELLED, "spec.cancel is true; nothing was frozen");
    return GW_OK;
  }
  const char *pod_name = json_get_str(p->obj, "spec.source.podName");
  cJSON *pod = pmig_cached(p, &KUBE_PODS, p->ns, pod_name);
  const char *node = json_get_str(pod, "spec.nodeName");
  const char *phase = json_get_str(pod, "status.phase");
  if(!pod)
    pmig_refuse(p, "Validating", "SourcePodNotFound", "pod %s (spec.source.podName) does not "
                "exist in namespace %s", pod_name ? pod_name : "", p->ns);
  else if(json_get(pod, "metadata.deletionTimestamp"))
    pmig_refuse(p, "Validating", "SourcePodTerminating", "pod %s is being deleted",
                pod_name ? pod_name : "");
  else if(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
    pmig_refuse(p, "Validating", "SourcePodNotRunning", "pod %s has ended (phase %s): only a "
                "running pod is moved", pod_name ? pod_name : "", phase);
  else if(!node || !*node || !phase || strcmp(phase, "Running"))
    wait_for(p, "SourcePodNotRunning", "pod %s is not running on a node yet (phase %s): the "
             "migration starts when it does", pod_name ? pod_name : "", phase ? phase : "none");
  else {
    edit_set_str(&p->ed, "sourceNode", node);
    gw_rc rc = decide(p, pod);
    cJSON_Delete(pod);
    return rc;
  }
  cJSON_Delete(pod);
  return GW_OK;
}
