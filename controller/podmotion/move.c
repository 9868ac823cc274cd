/* The phases of a PodMigration after Validating (pmig.h): the node agents checkpoint the source
 * pod, copy the checkpoint, the destination node's runtime restores it, the restored copy is
 * probed while shielded, the TCP flows are handed over, TrafficVerified is written, and only
 * once it is observed is the source pod deleted. Anything that fails before the handover rolls
 * back: the restored copy is deleted and the source serves again. docs/dev/podmotion-controller.md
 * has the sequence and the boundary. */
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
#include "log.h"
#include "../nodeagent/api.h"
#include "../nodeagent/client.h"
#include "../nodeagent/restore.h"
#include "pmig.h"

#define RESTORE_TIMEOUT_S 120
#define PROBE_TIMEOUT_MS 1000
#define PROBE_AGAIN_MS 500

struct pmig_opts pmig_opts;

cJSON *pmig_cached(struct pmig *p, const struct kube_gvr *gvr, const char *ns, const char *name)
{
  struct informer *inf = mgr_cache(p->ctx->mgr, gvr);
  char key[512];
  snprintf(key, sizeof(key), "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "");
  return inf && name ? informer_get(inf, key) : NULL;
}

bool pmig_agent_target(struct pmig *p, const char *node, struct na_target *t, char *ep,
                       size_t eplen, char *why, size_t wlen)
{
  cJSON *n = pmig_cached(p, &KUBE_NODES, NULL, node);
  const char *text = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(n, "metadata.annotations"), PG_AGENT_ANNOTATION));
  cJSON *caps = text ? cJSON_Parse(text) : NULL;
  const char *e = json_get_str(caps, "endpoint");
  bool ok = e && !strncmp(e, "https://", 8) && pmig_opts.token;
  if(ok)
    snprintf(ep, eplen, "%s", e);
  else if(!e)
    snprintf(why, wlen, "the node agent of node %s serves no API (no endpoint in its "
             "annotation: it runs without --tls-cert)", node);
  else
    snprintf(why, wlen, "the controller has no token for the node agents "
             "(--nodeagent-token-file)");
  cJSON_Delete(caps);
  cJSON_Delete(n);
  memset(t, 0, sizeof(*t));
  t->endpoint = ep;
  t->ca_file = pmig_opts.ca_file;
  t->token = pmig_opts.token;
  t->timeout_ms = 150000;
  return ok;
}

/* {"migration": {namespace, name, uid}} */
static cJSON *request(const struct pmig *p)
{
  cJSON *r = cJSON_CreateObject();
  cJSON *m = cJSON_AddObjectToObject(r, "migration");
  cJSON_AddStringToObject(m, "namespace", p->ns);
  cJSON_AddStringToObject(m, "name", p->name);
  cJSON_AddStringToObject(m, "uid", json_get_str(p->obj, "metadata.uid") ?
                                      json_get_str(p->obj, "metadata.uid") : "");
  return r;
}

/* Adds "containers": [{name, containerID}] of pod; false when one is not running. */
static bool add_containers(cJSON *req, const cJSON *pod)
{
  cJSON *a = cJSON_AddArrayToObject(req, "containers");
  const cJSON *cs;
  int n = 0;
  cJSON_ArrayForEach(cs, json_get(pod, "status.containerStatuses"))
  {
    const char *name = json_get_str(cs, "name"), *id = json_get_str(cs, "containerID");
    if(!name || !id || !json_get(cs, "state.running"))
      return false;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "containerID", id);
    cJSON_AddItemToArray(a, o);
    n++;
  }
  return n > 0;
}

/* A call to the agent of node; GW_OK with *out (may be NULL), or an rc with why. */
static gw_rc call(struct pmig *p, const char *node, const char *path, const cJSON *req,
                  cJSON **out, char *why, size_t wlen)
{
  struct na_target t;
  char ep[160];
  if(out)
    *out = NULL;
  if(!pmig_agent_target(p, node, &t, ep, sizeof(ep), why, wlen))
    return GW_ENOTFOUND;
  int code = 0;
  return na_post(&t, path, req, out, &code, why, wlen);
}

static const char *src_node(const struct pmig *p)
{
  return json_get_str(p->obj, "status.sourceNode");
}

static const char *dst_node(const struct pmig *p)
{
  return json_get_str(p->obj, "status.destinationNode");
}

static const char *pod_name(const struct pmig *p)
{
  return json_get_str(p->obj, "spec.source.podName");
}

/* ---- rolling back ---- */
void pmig_rollback(struct pmig *p, const char *reason, const char *fmt, ...)
{
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pmig_cond(p, "RollingBack", COND_TRUE, reason, "%s: deleting the restored copy and resuming "
            "pod %s on node %s", msg, pod_name(p) ? pod_name(p) : "", src_node(p) ? src_node(p)
                                                                             : "");
  pmig_phase(p, PG_ROLLINGBACK, "%s", msg);
  edit_requeue(&p->ed, 1);
}

/* The checkpoint per spec.checkpoint.retention once the migration ended (succeeded or not):
 * removed from both nodes, or kept. */
static void retention(struct pmig *p, bool succeeded, bool force)
{
  const char *r = json_get_str(p->obj, "spec.checkpoint.retention");
  bool keep = !force && r && (!strcmp(r, "Retain") || (!strcmp(r, "RetainOnFailure") &&
                                                       !succeeded));
  if(keep || json_get_bool(p->obj, "status.checkpoint.removed", false))
    return;
  cJSON *req = request(p);
  char why[1024];
  bool ok = true;
  const char *nodes[2] = { src_node(p), dst_node(p) };
  for(int i = 0; i < 2; i++) {
    if(!nodes[i])
      continue;
    gw_rc rc = call(p, nodes[i], NA_PATH_REMOVE, req, NULL, why, sizeof(why));
    pmig_audit(p, "remove-checkpoint", nodes[i], NULL, !rc, "%s", rc ? why : "removed");
    if(rc) {
      ok = false;
      log_kv(LOG_WARN, "checkpoint not removed", "key", p->ctx->key, "node", nodes[i], "error",
             why, LOG_END);
    }
  }
  cJSON_Delete(req);
  if(ok) {
    edit_set_bool(&p->ed, "checkpoint.removed", true);
    p->removed_now = true;
  } else {
    edit_requeue(&p->ed, 10000);
  }
}

static cJSON *dest_pod(struct pmig *p)
{
  const char *n = json_get_str(p->obj, "status.destinationPodName");
  return n ? pmig_cached(p, &KUBE_PODS, p->ns, n) : NULL;
}

static gw_rc step_rollback(struct pmig *p)
{
  const char *dn = json_get_str(p->obj, "status.destinationPodName");
  cJSON *dp = dest_pod(p);
  if(dp) { /* shielded since it was made: deleting it takes nothing from anyone */
    struct kube_delete_opts o = { .grace_period_s = 0,
                                  .precondition_uid = json_get_str(dp, "metadata.uid") };
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_delete(p->ctx->kube, &KUBE_PODS, p->ns, dn, &o, NULL, &st);
    pmig_audit(p, "delete-restored-pod", dst_node(p), dn, !rc || rc == GW_ENOTFOUND, "%s",
               rc && rc != GW_ENOTFOUND ? (st.message[0] ? st.message : gw_strerror(rc))
                                        : "deleted (it was shielded)");
    kube_status_release(&st);
    cJSON_Delete(dp);
    if(rc && rc != GW_ENOTFOUND && rc != GW_ECONFLICT)
      return rc;
  }
  cJSON *pod = pmig_cached(p, &KUBE_PODS, p->ns, pod_name(p));
  char why[1024] = "";
  if(pod && src_node(p)) {
    cJSON *req = request(p);
    gw_rc rc = add_containers(req, pod)
                 ? call(p, src_node(p), NA_PATH_RELEASE, req, NULL, why, sizeof(why))
                 : GW_OK; /* its containers ended: nothing of them is shielded any more */
    cJSON_Delete(req);
    pmig_audit(p, "release", src_node(p), pod_name(p), !rc, "%s",
               rc ? why : "link up, shield down: the source serves again");
    if(rc) { /* never none after a rollback: until the source serves again, keep trying */
      pmig_cond(p, "RollingBack", COND_TRUE, json_get_str(cond_find(p->obj, "RollingBack"),
                                                          "reason") ?: "Resuming",
                "resuming pod %s on node %s failed, trying again: %s", pod_name(p),
                src_node(p), why);
      cJSON_Delete(pod);
      edit_requeue(&p->ed, 2000);
      return GW_OK;
    }
  }
  cJSON_Delete(pod);
  const cJSON *rb = cond_find(p->obj, "RollingBack");
  const char *reason = json_get_str(rb, "reason") ? json_get_str(rb, "reason") : "RolledBack";
  const char *was = json_get_str(rb, "message") ? json_get_str(rb, "message") : "";
  bool cancelled = json_get_bool(p->obj, "spec.cancel", false);
  pmig_cond(p, "RollingBack", COND_FALSE, "RolledBack", "pod %s serves again on node %s and "
            "the restored copy is gone", pod_name(p), src_node(p) ? src_node(p) : "");
  pmig_cond(p, "Complete", COND_FALSE, cancelled ? "Cancelled" : reason, "%s: the migration "
            "was rolled back; pod %s was not moved", cancelled ? "spec.cancel is true" : was,
            pod_name(p));
  edit_set_now(&p->ed, "completionTime");
  retention(p, false, false);
  pmig_observe_end(false, cancelled ? "Cancelled" : reason);
  pmig_phase(p, cancelled ? PG_CANCELLED : PG_FAILED, "rolled back: %s", was);
  return GW_OK;
}

static cJSON *restored_pod(struct pmig *p, const cJSON *src, const char *name, const char *dir,
                           const char *ip, const char *mac);

/* Creates the restored pod (dir NULL: its checkpoint named later) and records its name; false
 * when it could not be made (the rollback is queued). */
static bool create_restored(struct pmig *p, const cJSON *src, const char *dir, const char *ip,
                            const char *mac)
{
  char name[254];
  const char *uid = json_get_str(p->obj, "metadata.uid") ? json_get_str(p->obj, "metadata.uid")
                                                          : "x";
  snprintf(name, sizeof(name), "%.48s-%.5s", pod_name(p), uid);
  cJSON *pod = restored_pod(p, src, name, dir, ip, mac);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(p->ctx->kube, &KUBE_PODS, p->ns, pod, false, NULL, &st);
  cJSON_Delete(pod);
  bool ok = !rc || rc == GW_ECONFLICT; /* made by an earlier reconcile that died */
  pmig_audit(p, "create-restored-pod", dst_node(p), name, ok, "%s",
             !ok ? (st.message[0] ? st.message : gw_strerror(rc))
                 : dir ? "restores the checkpoint, shielded"
                       : "its sandbox is made, shielded, while the source is dumped");
  if(!ok)
    pmig_rollback(p, "RestoreFailed", "cannot create the restored pod %s on node %s: %s", name,
                  dst_node(p), st.message[0] ? st.message : gw_strerror(rc));
  else
    edit_set_str(&p->ed, "destinationPodName", name);
  kube_status_release(&st);
  return ok;
}

/* ---- the steps ---- */
static gw_rc step_checkpoint(struct pmig *p, const cJSON *pod)
{
  cJSON *req = request(p);
  cJSON *out = NULL;
  char why[1024] = "";
  if(!add_containers(req, pod)) {
    cJSON_Delete(req);
    pmig_rollback(p, "SourcePodNotRunning", "a container of pod %s is not running", pod_name(p));
    return GW_OK;
  }
  /* the restored pod first: its node makes the shielded sandbox while the source is dumped,
   * so that time is not frozen time */
  if(!json_get_str(p->obj, "status.destinationPodName")) {
    cJSON *addr = NULL;
    gw_rc arc = call(p, src_node(p), NA_PATH_ADDRESS, req, &addr, why, sizeof(why));
    const char *ip = json_get_str(addr, "ip"), *mac = json_get_str(addr, "mac");
    bool made = !arc && ip && mac && create_restored(p, pod, NULL, ip, mac);
    if(!made && arc) {
      pmig_cond(p, "Checkpointing", COND_FALSE, "CheckpointFailed", "%s", why);
      pmig_rollback(p, "CheckpointFailed", "the address of pod %s on node %s: %s", pod_name(p),
                    src_node(p), why);
    }
    cJSON_Delete(addr);
    if(!made) {
      cJSON_Delete(req);
      return GW_OK;
    }
  }
  gw_rc rc = call(p, src_node(p), NA_PATH_CHECKPOINT, req, &out, why, sizeof(why));
  cJSON_Delete(req);
  pmig_audit(p, "checkpoint", src_node(p), pod_name(p), !rc, "%s",
             rc ? why : "shielded and dumped with --leave-running");
  if(rc) {
    pmig_cond(p, "Checkpointing", COND_FALSE, "CheckpointFailed", "%s", why);
    pmig_rollback(p, "CheckpointFailed", "the checkpoint of pod %s on node %s failed: %s",
                  pod_name(p), src_node(p), why);
    return GW_OK;
  }
  double size = cJSON_GetNumberValue(cJSON_GetObjectItem(out, "sizeBytes"));
  double ms = cJSON_GetNumberValue(cJSON_GetObjectItem(out, "durationMs"));
  const char *dir = json_get_str(out, "dir");
  edit_set_str(&p->ed, "checkpoint.path", dir ? dir : "");
  edit_set_int(&p->ed, "checkpoint.sizeBytes", (long long)size);
  pmig_cond(p, "Checkpointing", COND_FALSE, "Done", "the pod is shielded and was dumped in "
            "%.0f ms", ms);
  pmig_cond(p, "CheckpointComplete", COND_TRUE, "CheckpointWritten", "checkpoint of pod %s: "
            "%.0f bytes in %s on node %s", pod_name(p), size, dir ? dir : "", src_node(p));
  edit_event(&p->ed, EV_NORMAL, "CheckpointWritten", "checkpoint of pod %s written on node %s: "
             "%.0f bytes in %.0f ms (%s)", pod_name(p), src_node(p), size, ms, dir ? dir : "");
  pmig_cond(p, "Transferring", COND_TRUE, "InProgress", "copying the checkpoint from node %s to "
            "node %s", src_node(p), dst_node(p));
  pmig_phase(p, PG_TRANSFERRING, "checkpoint written (%.0f bytes)", size);
  edit_requeue(&p->ed, 1);
  cJSON_Delete(out);
  return GW_OK;
}

static gw_rc step_transfer(struct pmig *p)
{
  struct na_target t;
  char ep[160], why[1024] = "";
  if(!pmig_agent_target(p, dst_node(p), &t, ep, sizeof(ep), why, sizeof(why))) {
    pmig_rollback(p, "TransferFailed", "%s", why);
    return GW_OK;
  }
  cJSON *req = request(p);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", ep);
  cJSON *out = NULL;
  gw_rc rc = call(p, src_node(p), NA_PATH_SEND, req, &out, why, sizeof(why));
  cJSON_Delete(req);
  pmig_audit(p, "transfer", src_node(p), pod_name(p), !rc, "%s%s", rc ? why : "to node ",
             rc ? "" : dst_node(p));
  if(rc) {
    pmig_cond(p, "Transferring", COND_FALSE, "TransferFailed", "%s", why);
    pmig_rollback(p, "TransferFailed", "copying the checkpoint to node %s failed: %s",
                  dst_node(p), why);
    return GW_OK;
  }
  double bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(out, "bytes"));
  pmig_observe_transfer((long long)bytes);
  double ms = cJSON_GetNumberValue(cJSON_GetObjectItem(out, "durationMs"));
  pmig_cond(p, "Transferring", COND_FALSE, "Done", "copied in %.0f ms", ms);
  pmig_cond(p, "TransferComplete", COND_TRUE, "Transferred", "%.0f bytes on node %s, checked "
            "file by file (sha256)", bytes, dst_node(p));
  pmig_cond(p, "Restoring", COND_TRUE, "InProgress", "restoring pod %s on node %s",
            pod_name(p), dst_node(p));
  pmig_phase(p, PG_RESTORING, "checkpoint on node %s", dst_node(p));
  edit_requeue(&p->ed, 1);
  cJSON_Delete(out);
  return GW_OK;
}

/* The restored pod: the source's spec on the destination node, the restore annotations. */
static cJSON *restored_pod(struct pmig *p, const cJSON *src, const char *name, const char *dir,
                           const char *ip, const char *mac)
{
  cJSON *pod = cJSON_CreateObject();
  cJSON_AddStringToObject(pod, "apiVersion", "v1");
  cJSON_AddStringToObject(pod, "kind", "Pod");
  cJSON *md = cJSON_AddObjectToObject(pod, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", p->ns);
  cJSON *labels = cJSON_Duplicate(json_get(src, "metadata.labels"), 1);
  if(!cJSON_IsObject(labels)) {
    cJSON_Delete(labels);
    labels = cJSON_CreateObject();
  }
  cJSON_DeleteItemFromObjectCaseSensitive(labels, PG_MIGRATION_LABEL);
  cJSON_AddStringToObject(labels, PG_MIGRATION_LABEL, p->name);
  cJSON_AddItemToObject(md, "labels", labels);
  cJSON *ann = cJSON_Duplicate(json_get(src, "metadata.annotations"), 1);
  if(!cJSON_IsObject(ann)) {
    cJSON_Delete(ann);
    ann = cJSON_CreateObject();
  }
  /* a pod restored before carries the annotations of its own restore: replaced, not added */
  static const char *const ours[] = { "kubectl.kubernetes.io/last-applied-configuration",
                                      RESTORE_FROM_ANNOTATION, RESTORE_IP_ANNOTATION,
                                      RESTORE_MAC_ANNOTATION };
  for(size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
    cJSON_DeleteItemFromObjectCaseSensitive(ann, ours[i]);
  if(dir)
    cJSON_AddStringToObject(ann, RESTORE_FROM_ANNOTATION, dir);
  cJSON_AddStringToObject(ann, RESTORE_IP_ANNOTATION, ip);
  cJSON_AddStringToObject(ann, RESTORE_MAC_ANNOTATION, mac);
  cJSON_AddItemToObject(md, "annotations", ann);
  cJSON *spec = cJSON_Duplicate(json_get(src, "spec"), 1);
  cJSON_DeleteItemFromObjectCaseSensitive(spec, "initContainers"); /* they ran on the source */
  cJSON_DeleteItemFromObjectCaseSensitive(spec, "nodeName");
  cJSON_AddStringToObject(spec, "nodeName", dst_node(p));
  cJSON_AddItemToObject(pod, "spec", spec);
  return pod;
}

static long long max_restored_at(const cJSON *state)
{
  long long best = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, json_get(state, "restored"))
  {
    long long at = (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "restoredAtMs"));
    if(at > best)
      best = at;
  }
  return best;
}

static gw_rc step_restore(struct pmig *p, const cJSON *src)
{
  const char *dn = json_get_str(p->obj, "status.destinationPodName");
  char why[1024] = "";
  if(!dn) {
    cJSON *req = request(p);
    cJSON *dst_state = NULL, *src_state = NULL;
    gw_rc rc = call(p, dst_node(p), NA_PATH_STATE, req, &dst_state, why, sizeof(why));
    if(!rc)
      rc = call(p, src_node(p), NA_PATH_STATE, req, &src_state, why, sizeof(why));
    cJSON_Delete(req);
    const char *dir = json_get_str(dst_state, "dir");
    const char *ip = json_get_str(src_state, "checkpoint.ip");
    const char *mac = json_get_str(src_state, "checkpoint.mac");
    if(rc || !json_get_bool(dst_state, "received.complete", false) || !dir || !ip || !mac) {
      pmig_rollback(p, "RestoreFailed", "the checkpoint is not complete on node %s: %s",
                    dst_node(p), rc ? why : "the destination agent has no complete copy");
      cJSON_Delete(dst_state);
      cJSON_Delete(src_state);
      return GW_OK;
    }
    if(create_restored(p, src, dir, ip, mac)) {
      pmig_cond(p, "Restoring", COND_TRUE, "InProgress", "pod %s created on node %s to "
                "restore the checkpoint", json_get_str(p->obj, "status.destinationPodName") ?
                                          json_get_str(p->obj, "status.destinationPodName") : "",
                dst_node(p));
      edit_requeue(&p->ed, 5000); /* its status changes wake this one; a fallback */
    }
    cJSON_Delete(dst_state);
    cJSON_Delete(src_state);
    return GW_OK;
  }
  cJSON *dp = dest_pod(p);
  if(dp && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(json_get(dp, "metadata.annotations"),
                                                             RESTORE_FROM_ANNOTATION))) {
    /* made before the dump: now the checkpoint it restores is on its node */
    cJSON_Delete(dp);
    cJSON *req = request(p), *dst_state = NULL;
    gw_rc rc = call(p, dst_node(p), NA_PATH_STATE, req, &dst_state, why, sizeof(why));
    cJSON_Delete(req);
    const char *dir = json_get_str(dst_state, "dir");
    if(rc || !json_get_bool(dst_state, "received.complete", false) || !dir) {
      pmig_rollback(p, "RestoreFailed", "the checkpoint is not complete on node %s: %s",
                    dst_node(p), rc ? why : "the destination agent has no complete copy");
      cJSON_Delete(dst_state);
      return GW_OK;
    }
    cJSON *patch = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"),
                                         "annotations");
    cJSON_AddStringToObject(ann, RESTORE_FROM_ANNOTATION, dir);
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    cJSON_Delete(dst_state);
    struct kube_status st;
    kube_status_init(&st);
    rc = body ? kube_patch(p->ctx->kube, &KUBE_PODS, p->ns, dn, KUBE_PATCH_MERGE, body, NULL,
                           NULL, &st)
              : GW_ENOMEM;
    pmig_audit(p, "restore", dst_node(p), dn, !rc, "%s",
               rc ? (st.message[0] ? st.message : gw_strerror(rc)) : "its checkpoint named");
    kube_status_release(&st);
    cJSON_free(body);
    if(rc == GW_ENOTFOUND) {
      pmig_rollback(p, "RestoreFailed", "the restored pod %s is gone", dn);
      return GW_OK;
    }
    if(rc)
      return rc;
    edit_requeue(&p->ed, 5000); /* its status changes wake this one; a fallback */
    return GW_OK;
  }
  if(!dp) {
    time_t since = kt_parse_rfc3339(json_get_str(cond_find(p->obj, "Restoring"),
                                                 "lastTransitionTime"));
    if(since && time(NULL) - since > 10) {
      pmig_rollback(p, "RestoreFailed", "the restored pod %s is gone", dn);
      return GW_OK;
    }
    edit_requeue(&p->ed, 1000); /* not in the cache yet */
    return GW_OK;
  }
  const cJSON *cs;
  bool running = cJSON_GetArraySize(json_get(dp, "status.containerStatuses")) > 0;
  cJSON_ArrayForEach(cs, json_get(dp, "status.containerStatuses"))
  {
    const cJSON *term = json_get(cs, "state.terminated");
    if(!term) /* a container that ended and started again runs its command, not the checkpoint */
      term = json_get(cs, "lastState.terminated");
    if(term) {
      pmig_rollback(p, "RestoreFailed", "the restore on node %s failed: %s (%s)", dst_node(p),
                    json_get_str(term, "message") ? json_get_str(term, "message") : "",
                    json_get_str(term, "reason") ? json_get_str(term, "reason") : "");
      cJSON_Delete(dp);
      return GW_OK;
    }
    running = running && json_get(cs, "state.running");
  }
  if(!running) {
    time_t since = kt_parse_rfc3339(json_get_str(cond_find(p->obj, "Restoring"),
                                                 "lastTransitionTime"));
    if(since && time(NULL) - since > RESTORE_TIMEOUT_S)
      pmig_rollback(p, "RestoreFailed", "the restored pod %s did not run within %d s", dn,
                    RESTORE_TIMEOUT_S);
    else
      edit_requeue(&p->ed, 5000);
    cJSON_Delete(dp);
    return GW_OK;
  }
  cJSON_Delete(dp);
  /* the freeze: from the dump's start to the restored tree running */
  cJSON *req = request(p);
  cJSON *dst_state = NULL, *src_state = NULL;
  gw_rc src_rc = GW_OK, dst_rc = call(p, dst_node(p), NA_PATH_STATE, req, &dst_state, why,
                                       sizeof(why));
  char unrestored[160] = "";
  if(dst_rc) { /* whether it was restored is the destination agent's to say: ask again */
    pmig_cond(p, "Restoring", COND_TRUE, "InProgress", "pod %s runs; asking node %s's agent "
              "whether it was restored: %s", dn, dst_node(p), why);
    cJSON_Delete(req);
    edit_requeue(&p->ed, 2000);
    return GW_OK;
  }
  { /* every container runs the process its restore started, none a fresh one */
    cJSON *dp2 = dest_pod(p);
    const cJSON *c2;
    cJSON_ArrayForEach(c2, json_get(dp2, "status.containerStatuses"))
    {
      const char *cn = json_get_str(c2, "name"), *id = json_get_str(c2, "containerID");
      const cJSON *r = cJSON_GetObjectItemCaseSensitive(json_get(dst_state, "restored"),
                                                        cn ? cn : "");
      const char *dash = id ? strrchr(id, '-') : NULL;
      long pid = dash ? strtol(dash + 1, NULL, 10) : -1;
      if(!r || (long)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "pid")) != pid)
        snprintf(unrestored, sizeof(unrestored), "%s", cn ? cn : "?");
    }
    cJSON_Delete(dp2);
  }
  if(unrestored[0]) {
    cJSON_Delete(req);
    cJSON_Delete(dst_state);
    pmig_rollback(p, "RestoreFailed", "container %s of pod %s on node %s does not run the "
                  "restored process (the runtime started it afresh)", unrestored, dn, dst_node(p));
    return GW_OK;
  }
  if(!dst_rc)
    src_rc = call(p, src_node(p), NA_PATH_STATE, req, &src_state, why, sizeof(why));
  if(!dst_rc && !src_rc) {
    long long start = (long long)cJSON_GetNumberValue(json_get(src_state, "checkpoint.startedAtMs"));
    long long end = max_restored_at(dst_state);
    if(start > 0 && end >= start) {
      char d[32];
      snprintf(d, sizeof(d), "%lldms", end - start);
      edit_set_str(&p->ed, "freezeDuration", d);
      pmig_observe_freeze(end - start);
    }
  }
  cJSON_Delete(req);
  cJSON_Delete(dst_state);
  cJSON_Delete(src_state);
  pmig_cond(p, "Restoring", COND_FALSE, "Done", "pod %s runs on node %s", dn, dst_node(p));
  pmig_cond(p, "RestoreComplete", COND_TRUE, "Restored", "pod %s was restored on node %s; it is "
            "shielded until the handover", dn, dst_node(p));
  pmig_cond(p, "TrafficVerified", COND_UNKNOWN, "Probing", "probing the restored pod %s", dn);
  pmig_phase(p, PG_VERIFYING, "pod %s restored on node %s", dn, dst_node(p));
  edit_requeue(&p->ed, 1);
  return GW_OK;
}

/* ---- verification ---- */
struct probe {
  int port;
  const char *path; /* NULL: TCP */
  const char *scheme;
};

/* A probe's port: a number, or the name of a container port. */
static int port_of(const cJSON *v, const cJSON *pod)
{
  if(cJSON_IsNumber(v))
    return v->valueint;
  if(!cJSON_IsString(v))
    return 0;
  const cJSON *c, *pt;
  cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
    cJSON_ArrayForEach(pt, json_get(c, "ports"))
    {
      const char *n = json_get_str(pt, "name");
      if(n && !strcmp(n, v->valuestring))
        return (int)cJSON_GetNumberValue(json_get(pt, "containerPort"));
    }
  return atoi(v->valuestring);
}

/* The probes the verification mode asks for; how many (0 with mode None). */
static size_t probes(const struct pmig *p, const cJSON *pod, struct probe *pr, size_t max)
{
  const char *mode = json_get_str(p->obj, "spec.verification.mode");
  size_t n = 0;
  if(!mode || !strcmp(mode, "ReadinessProbe")) {
    const cJSON *c;
    cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
    {
      const cJSON *rp = json_get(c, "readinessProbe");
      if(!rp || n >= max)
        continue;
      if(json_get(rp, "httpGet"))
        pr[n++] = (struct probe){ port_of(json_get(rp, "httpGet.port"), pod),
                                  json_get_str(rp, "httpGet.path") ?
                                    json_get_str(rp, "httpGet.path") : "/",
                                  json_get_str(rp, "httpGet.scheme") };
      else if(json_get(rp, "tcpSocket"))
        pr[n++] = (struct probe){ port_of(json_get(rp, "tcpSocket.port"), pod), NULL, NULL };
    }
  } else if(!strcmp(mode, "HTTPGet")) {
    pr[n++] = (struct probe){ port_of(json_get(p->obj, "spec.verification.httpGet.port"), pod),
                              json_get_str(p->obj, "spec.verification.httpGet.path") ?
                                json_get_str(p->obj, "spec.verification.httpGet.path") : "/",
                              json_get_str(p->obj, "spec.verification.httpGet.scheme") };
  } else if(!strcmp(mode, "TCPSocket")) {
    const cJSON *port = json_get(p->obj, "spec.verification.tcpSocket.port");
    if(port) {
      pr[n++] = (struct probe){ port_of(port, pod), NULL, NULL };
    } else {
      const cJSON *c, *pt;
      cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
        cJSON_ArrayForEach(pt, json_get(c, "ports"))
        {
          const char *proto = json_get_str(pt, "protocol");
          if(n < max && (!proto || !strcmp(proto, "TCP")))
            pr[n++] = (struct probe){ (int)cJSON_GetNumberValue(json_get(pt, "containerPort")),
                                      NULL, NULL };
        }
    }
  }
  return n;
}

/* Runs every probe through the destination agent; GW_OK when all passed, else why. */
static gw_rc run_probes(struct pmig *p, const cJSON *dp, char *why, size_t wlen)
{
  struct probe pr[8];
  size_t n = probes(p, dp, pr, 8);
  const char *ip = json_get_str(dp, "status.podIP");
  for(size_t i = 0; i < n; i++) {
    cJSON *req = request(p);
    if(!add_containers(req, dp)) {
      cJSON_Delete(req);
      snprintf(why, wlen, "a container of the restored pod is not running");
      return GW_EIO;
    }
    cJSON_AddStringToObject(req, "address", ip ? ip : "");
    cJSON_AddNumberToObject(req, "port", pr[i].port);
    if(pr[i].path)
      cJSON_AddStringToObject(req, "path", pr[i].path);
    if(pr[i].scheme)
      cJSON_AddStringToObject(req, "scheme", pr[i].scheme);
    cJSON_AddNumberToObject(req, "timeoutMs", PROBE_TIMEOUT_MS);
    cJSON *out = NULL;
    gw_rc rc = call(p, dst_node(p), NA_PATH_PROBE, req, &out, why, wlen);
    cJSON_Delete(req);
    if(!rc && !json_get_bool(out, "ok", false)) {
      snprintf(why, wlen, "%s", json_get_str(out, "message") ? json_get_str(out, "message")
                                                             : "the probe failed");
      rc = GW_EIO;
    }
    cJSON_Delete(out);
    if(rc)
      return rc;
  }
  return GW_OK;
}

static const char *mode_text(const struct pmig *p)
{
  const char *mode = json_get_str(p->obj, "spec.verification.mode");
  return mode ? mode : "ReadinessProbe";
}

static gw_rc step_verify(struct pmig *p, const cJSON *src)
{
  const cJSON *tv = cond_find(p->obj, "TrafficVerified");
  const char *dn = json_get_str(p->obj, "status.destinationPodName");
  if(tv && !strcmp(json_get_str(tv, "status") ?: "", "True")) {
    /* TrafficVerified=True is observed: now, and only now, the source pod goes */
    if(src) {
      struct kube_delete_opts o = { .precondition_uid = json_get_str(src, "metadata.uid") };
      struct kube_status st;
      kube_status_init(&st);
      gw_rc rc = kube_delete(p->ctx->kube, &KUBE_PODS, p->ns, pod_name(p), &o, NULL, &st);
      pmig_audit(p, "delete-source-pod", src_node(p), pod_name(p), !rc || rc == GW_ENOTFOUND,
                 "%s", rc && rc != GW_ENOTFOUND ? (st.message[0] ? st.message : gw_strerror(rc))
                                               : "after TrafficVerified=True was observed");
      kube_status_release(&st);
      if(rc && rc != GW_ENOTFOUND && rc != GW_ECONFLICT)
        return rc;
    }
    pmig_cond(p, "Complete", COND_TRUE, "Completed", "pod %s moved from node %s to node %s as "
              "pod %s; the source pod was deleted after TrafficVerified", pod_name(p),
              src_node(p), dst_node(p), dn ? dn : "");
    edit_set_now(&p->ed, "completionTime");
    retention(p, true, false);
    pmig_observe_end(true, NULL);
    pmig_phase(p, PG_COMPLETED, "pod %s serves from node %s", dn ? dn : "", dst_node(p));
    return GW_OK;
  }
  cJSON *dp = dest_pod(p);
  if(!dp) {
    pmig_rollback(p, "VerificationFailed", "the restored pod %s is gone", dn ? dn : "");
    return GW_OK;
  }
  char why[1024] = "";
  gw_rc rc = run_probes(p, dp, why, sizeof(why));
  if(rc) {
    time_t since = kt_parse_rfc3339(json_get_str(tv, "lastTransitionTime"));
    const cJSON *t = json_get(p->obj, "spec.verification.timeoutSeconds");
    long limit = cJSON_IsNumber(t) ? (long)t->valuedouble : 60;
    if(since && time(NULL) - since >= limit) {
      pmig_audit(p, "probe", dst_node(p), dn, false, "%s probe: %s", mode_text(p), why);
      pmig_cond(p, "TrafficVerified", COND_FALSE, "VerificationTimeout", "the %s probe of pod "
                "%s did not pass within %ld s: %s", mode_text(p), dn, limit, why);
      pmig_rollback(p, "VerificationTimeout", "the restored pod did not pass its %s probe "
                    "within %ld s: %s", mode_text(p), limit, why);
    } else {
      pmig_cond(p, "TrafficVerified", COND_UNKNOWN, "Probing", "probing the restored pod %s: "
                "%s", dn, why);
      edit_requeue(&p->ed, PROBE_AGAIN_MS);
    }
    cJSON_Delete(dp);
    return GW_OK;
  }
  /* the handover: the source lets its address go, then the restored copy's shield falls */
  cJSON *sreq = request(p), *dreq = request(p);
  bool have_src = src && add_containers(sreq, src);
  bool have_dst = add_containers(dreq, dp);
  cJSON_Delete(dp);
  pmig_audit(p, "probe", dst_node(p), dn, true, "%s probe passed", mode_text(p));
  if(have_src) {
    rc = call(p, src_node(p), NA_PATH_DETACH, sreq, NULL, why, sizeof(why));
    pmig_audit(p, "detach", src_node(p), pod_name(p), !rc, "%s",
               rc ? why : "the source's link is down: the address leaves it");
  }
  if(!rc && have_dst) {
    rc = call(p, dst_node(p), NA_PATH_ATTACH, dreq, NULL, why, sizeof(why));
    pmig_audit(p, "attach", dst_node(p), dn, !rc, "%s",
               rc ? why : "the restored copy's shield is down: it owns the TCP flows");
  }
  cJSON_Delete(sreq);
  cJSON_Delete(dreq);
  if(rc || !have_dst) {
    pmig_rollback(p, "HandoverFailed", "moving the pod's address to node %s failed: %s",
                  dst_node(p), have_dst ? why : "the restored pod stopped");
    return GW_OK;
  }
  const char *mode = mode_text(p);
  pmig_cond(p, "TrafficVerified", COND_TRUE, "FlowsTransferred", "%s; TCP flow ownership moved "
            "to pod %s on node %s", !strcmp(mode, "None") ? "no application probe "
                                                            "(verification.mode None)"
                                                          : "the probe passed",
            dn, dst_node(p));
  edit_requeue(&p->ed, 1);
  return GW_OK;
}

/* The phases after Validating. */
gw_rc pmig_move(struct pmig *p)
{
  if(p->phase == PG_ROLLINGBACK)
    return step_rollback(p);
  bool verified = !strcmp(json_get_str(cond_find(p->obj, "TrafficVerified"), "status") ?: "",
                          "True");
  cJSON *src = pmig_cached(p, &KUBE_PODS, p->ns, pod_name(p));
  gw_rc rc = GW_OK;
  if(!verified && json_get_bool(p->obj, "spec.cancel", false))
    pmig_rollback(p, "Cancelled", "spec.cancel is true");
  else if(!verified && (!src || json_get(src, "metadata.deletionTimestamp")))
    pmig_rollback(p, "SourcePodLost", "pod %s was deleted during the migration", pod_name(p));
  else if(p->phase == PG_CHECKPOINTING)
    rc = step_checkpoint(p, src);
  else if(p->phase == PG_TRANSFERRING)
    rc = step_transfer(p);
  else if(p->phase == PG_RESTORING)
    rc = step_restore(p, src);
  else if(p->phase == PG_VERIFYING)
    rc = step_verify(p, src);
  cJSON_Delete(src);
  return rc;
}

/* Ended: what a retention change asks for; being deleted, the checkpoints go too (a retained
 * checkpoint is kept as long as its PodMigration exists: none is left orphaned), then the
 * finalizer. */
gw_rc pmig_settle(struct pmig *p)
{
  bool deleting = json_get(p->obj, "metadata.deletionTimestamp") != NULL;
  if(json_get_str(p->obj, "status.checkpoint.path"))
    retention(p, p->phase == PG_COMPLETED, deleting);
  if(!deleting)
    return GW_OK;
  if(json_get_str(p->obj, "status.checkpoint.path") &&
     !json_get_bool(p->obj, "status.checkpoint.removed", false) && !p->removed_now)
    return GW_OK; /* retried: the finalizer stays until the nodes let go */
  return obj_finalizer(p->ctx, &KUBE_POD_MIGRATIONS, p->obj, PG_FINALIZER, false);
}

/* ---- the janitor: checkpoints no PodMigration owns any more ---- */
struct jan {
  struct pmig *p;
  struct informer *migs;
  long removed;
};

/* Whether a PodMigration owns the checkpoint directory: its name is what na_dirname gives for
 * the PodMigration of that namespace and name, uid included. */
static bool owned(struct informer *migs, const char *dirname)
{
  char ns[64], name[96], key[200], mine[NA_DIRNAME_MAX];
  if(sscanf(dirname, "%63[^_]_%95[^_]_", ns, name) != 2)
    return false;
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  cJSON *m = informer_get(migs, key);
  bool ok = m && !na_dirname(ns, name, json_get_str(m, "metadata.uid"), mine) &&
            !strcmp(mine, dirname);
  cJSON_Delete(m);
  return ok;
}

static void sweep_node(void *ctx, const char *key, const cJSON *node)
{
  (void)key;
  struct jan *j = ctx;
  const char *name = json_get_str(node, "metadata.name");
  struct na_target t;
  char ep[160], why[1024];
  if(!name || !pmig_agent_target(j->p, name, &t, ep, sizeof(ep), why, sizeof(why)))
    return;
  cJSON *list = NULL;
  int code = 0;
  if(na_post(&t, NA_PATH_LIST, NULL, &list, &code, why, sizeof(why))) {
    log_kv(LOG_DEBUG, "janitor: no list", "node", name, "error", why, LOG_END);
    return;
  }
  long long now = (long long)time(NULL) * 1000;
  const cJSON *it;
  cJSON_ArrayForEach(it, json_get(list, "checkpoints"))
  {
    const char *dir = json_get_str(it, "name");
    double at = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "modifiedAtMs"));
    /* a migration's directory appears before its status names it: leave young ones alone */
    if(!dir || owned(j->migs, dir) || now - (long long)at < pmig_opts.janitor_min_age_ms)
      continue;
    char ns[64], mname[96], u8[16];
    if(sscanf(dir, "%63[^_]_%95[^_]_%15s", ns, mname, u8) != 3)
      continue;
    cJSON *req = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(req, "migration");
    cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(m, "name", mname);
    cJSON_AddStringToObject(m, "uid", u8);
    gw_rc rc = na_post(&t, NA_PATH_REMOVE, req, NULL, &code, why, sizeof(why));
    cJSON_Delete(req);
    log_kv(rc ? LOG_WARN : LOG_INFO, "janitor: orphaned checkpoint", "node", name, "dir", dir,
           "result", rc ? why : "removed", LOG_END);
    if(!rc)
      j->removed++;
  }
  cJSON_Delete(list);
}

long pmig_janitor(struct rec_ctx *c)
{
  struct pmig p;
  memset(&p, 0, sizeof(p));
  p.ctx = c;
  p.ns = "";
  p.name = "";
  struct jan j = { &p, c->cache, 0 };
  struct informer *nodes = mgr_cache(c->mgr, &KUBE_NODES);
  if(nodes && pmig_opts.token)
    informer_each(nodes, NULL, sweep_node, &j);
  return j.removed;
}
