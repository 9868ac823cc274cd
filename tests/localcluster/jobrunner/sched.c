/* sched.c: the scheduler's share of a one-node cluster: the Node object, the filters that can
 * refuse a Pod here (a missing or deleted PersistentVolumeClaim, nodeSelector and required node
 * affinity against the Node's labels), and the binding. Messages are kube-scheduler's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "jr.h"
#include "json.h"
#include "log.h"
#include "strbuf.h"

#define PREEMPTION                                                                        \
  " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

static cJSON *default_labels(const struct jr *jr)
{
  cJSON *l = cJSON_CreateObject();
  cJSON_AddStringToObject(l, "kubernetes.io/hostname", jr->cfg->node_name);
  cJSON_AddStringToObject(l, "kubernetes.io/os", "linux");
  cJSON_AddStringToObject(l, "beta.kubernetes.io/os", "linux");
#if defined(__aarch64__)
  const char *arch = "arm64";
#else
  const char *arch = "amd64";
#endif
  cJSON_AddStringToObject(l, "kubernetes.io/arch", arch);
  cJSON_AddStringToObject(l, "beta.kubernetes.io/arch", arch);
  return l;
}

void sched_register_node(struct jr *jr)
{
  cJSON *n = cJSON_CreateObject();
  cJSON_AddStringToObject(n, "apiVersion", "v1");
  cJSON_AddStringToObject(n, "kind", "Node");
  cJSON *md = cJSON_AddObjectToObject(n, "metadata");
  cJSON_AddStringToObject(md, "name", jr->cfg->node_name);
  cJSON_AddItemToObject(md, "labels", default_labels(jr));
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jr->k, &KUBE_NODES, NULL, n, false, NULL, &st);
  cJSON_Delete(n);
  if(rc && rc != GW_ECONFLICT)
    log_kv(LOG_WARN, "node not registered", "node", jr->cfg->node_name, "error",
           st.message[0] ? st.message : gw_strerror(rc), LOG_END);

  char now[32], cpus[16], patch[2048];
  jr_rfc3339(now, sizeof(now), time(NULL));
  jr_fmt(cpus, sizeof(cpus), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  long long memk = (long long)pages * psize / 1024;
  struct utsname u;
  if(uname(&u))
    memset(&u, 0, sizeof(u));
  jr_fmt(patch, sizeof(patch),
           "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
           "\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\","
           "\"lastHeartbeatTime\":\"%s\",\"lastTransitionTime\":\"%s\"}],"
           "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"},"
           "{\"type\":\"Hostname\",\"address\":\"%s\"}],"
           "\"capacity\":{\"cpu\":\"%s\",\"memory\":\"%lldKi\",\"pods\":\"110\"},"
           "\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"%lldKi\",\"pods\":\"110\"},"
           "\"nodeInfo\":{\"kernelVersion\":\"%s\",\"osImage\":\"godwit local cluster\","
           "\"containerRuntimeVersion\":\"godwit-jobrunner://1\",\"kubeletVersion\":\"v1.32.0\","
           "\"operatingSystem\":\"linux\",\"architecture\":\"%s\",\"machineID\":\"\","
           "\"systemUUID\":\"\",\"bootID\":\"\",\"kubeProxyVersion\":\"\"}}}",
           now, now, jr->cfg->node_name, cpus, memk, cpus, memk, u.release,
#if defined(__aarch64__)
           "arm64"
#else
           "amd64"
#endif
  );
  rc = kube_patch(jr->k, &KUBE_NODES, NULL, jr->cfg->node_name, KUBE_PATCH_MERGE, patch,
                  "status", NULL, &st);
  if(rc)
    log_kv(LOG_DEBUG, "node status not written", "error",
           st.message[0] ? st.message : gw_strerror(rc), LOG_END);
  kube_status_release(&st);
}

/* The Node's labels as the API server has them, else the ones this node registers with. */
static cJSON *node_labels(struct jr *jr)
{
  cJSON *node = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(jr->k, &KUBE_NODES, NULL, jr->cfg->node_name, &node, &st);
  kube_status_release(&st);
  cJSON *l = rc ? NULL : json_detach(node, "metadata.labels");
  cJSON_Delete(node);
  return l ? l : default_labels(jr);
}

static bool in_values(const cJSON *values, const char *v)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, values)
  {
    if(v && cJSON_IsString(x) && !strcmp(x->valuestring, v))
      return true;
  }
  return false;
}

/* One NodeSelectorRequirement against the value it names (NULL: absent). */
static bool requirement_ok(const cJSON *req, const char *v)
{
  const char *op = json_get_str(req, "operator");
  const cJSON *values = json_get(req, "values");
  if(!op)
    return false;
  if(!strcmp(op, "In"))
    return in_values(values, v);
  if(!strcmp(op, "NotIn"))
    return !in_values(values, v);
  if(!strcmp(op, "Exists"))
    return v != NULL;
  if(!strcmp(op, "DoesNotExist"))
    return v == NULL;
  const cJSON *first = cJSON_GetArrayItem(values, 0);
  if((strcmp(op, "Gt") && strcmp(op, "Lt")) || !v || !cJSON_IsString(first))
    return false;
  long a = strtol(v, NULL, 10), b = strtol(first->valuestring, NULL, 10);
  return op[0] == 'G' ? a > b : a < b;
}

/* A NodeSelectorTerm: its matchExpressions (labels) and matchFields (metadata.name) ANDed; an
 * empty term matches no Node. */
static bool term_ok(const cJSON *term, const cJSON *labels, const char *name)
{
  const cJSON *exprs = cJSON_GetObjectItemCaseSensitive(term, "matchExpressions");
  const cJSON *fields = cJSON_GetObjectItemCaseSensitive(term, "matchFields");
  if(!cJSON_GetArraySize(exprs) && !cJSON_GetArraySize(fields))
    return false;
  const cJSON *r;
  cJSON_ArrayForEach(r, exprs)
  {
    const char *key = json_get_str(r, "key");
    /* Not json_get: label keys have dots. */
    const cJSON *lv = key ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
    if(!requirement_ok(r, cJSON_IsString(lv) ? lv->valuestring : NULL))
      return false;
  }
  cJSON_ArrayForEach(r, fields)
  {
    const char *key = json_get_str(r, "key");
    if(!key || strcmp(key, "metadata.name") || !requirement_ok(r, name))
      return false;
  }
  return true;
}

bool sched_spec_fits(const cJSON *spec, const cJSON *labels, const char *name)
{
  const cJSON *sel;
  cJSON_ArrayForEach(sel, cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector"))
  {
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(labels, sel->string);
    if(!cJSON_IsString(sel) || !cJSON_IsString(lv) || strcmp(sel->valuestring, lv->valuestring))
      return false;
  }
  const cJSON *req = json_get(spec, "affinity.nodeAffinity."
                                    "requiredDuringSchedulingIgnoredDuringExecution");
  if(!req)
    return true;
  const cJSON *t; /* terms are ORed */
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(req, "nodeSelectorTerms"))
  {
    if(term_ok(t, labels, name))
      return true;
  }
  return false;
}

/* kube-scheduler's refusal: "0/N nodes are available: DETAIL. preemption: ..." */
static char *refusal(size_t total, const char *detail)
{
  size_t n = strlen(detail) + 256;
  char *out = malloc(n);
  if(out)
    snprintf(out, n, "0/%zu nodes are available: %s. preemption: 0/%zu nodes are available: %zu "
             "Preemption is not helpful for scheduling.", total, detail, total, total);
  return out;
}

static int by_name(const void *a, const void *b)
{
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  const char *nx = json_get_str(x, "metadata.name"), *ny = json_get_str(y, "metadata.name");
  return strcmp(nx ? nx : "", ny ? ny : "");
}

/* With worker nodes: the first schedulable Node by name (this one first) whose labels fit. */
static bool pick_node(struct jr *jr, const cJSON *pod, char *node, size_t nodelen, char **why)
{
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(jr->k, &KUBE_NODES, NULL, NULL, &list, &st);
  kube_status_release(&st);
  if(rc) {
    char d[256];
    jr_fmt(d, sizeof(d), "error listing nodes: %s", gw_strerror(rc));
    *why = refusal(0, d);
    return false;
  }
  const cJSON *items = json_get(list, "items");
  size_t n = (size_t)cJSON_GetArraySize(items), k = 0, mismatch = 0, cordoned = 0;
  const cJSON **v = calloc(n ? n : 1, sizeof(*v));
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
  if(v)
    v[k++] = it;
  if(v)
    qsort(v, k, sizeof(*v), by_name);
  bool found = false;
  for(int pass = 0; pass < 2 && !found; pass++)
    for(size_t i = 0; i < k && !found; i++) {
      const char *name = json_get_str(v[i], "metadata.name");
      bool self = name && !strcmp(name, jr->cfg->node_name);
      if(!name || self != (pass == 0))
        continue;
      if(json_get_bool(v[i], "spec.unschedulable", false)) {
        cordoned++;
        continue;
      }
      const cJSON *labels = json_get(v[i], "metadata.labels");
      if(!sched_spec_fits(json_get(pod, "spec"), labels, name)) {
        mismatch++;
        continue;
      }
      jr_fmt(node, nodelen, "%s", name);
      found = true;
    }
  if(!found) {
    char parts[256] = "";
    if(mismatch)
      jr_fmt(parts, sizeof(parts), "%zu node(s) didn't match Pod's node affinity/selector",
             mismatch);
    if(cordoned)
      jr_fmt(parts + strlen(parts), sizeof(parts) - strlen(parts),
             "%s%zu node(s) were unschedulable", *parts ? ", " : "", cordoned);
    *why = refusal(k, *parts ? parts : "no nodes registered");
  }
  free(v);
  cJSON_Delete(list);
  return found;
}

bool sched_fits(struct jr *jr, const cJSON *pod, char *node, size_t nodelen, char **why)
{
  *why = NULL;
  jr_fmt(node, nodelen, "%s", jr->cfg->node_name);
  const char *ns = json_get_str(pod, "metadata.namespace");
  const cJSON *v;
  cJSON_ArrayForEach(v, json_get(pod, "spec.volumes"))
  {
    const char *claim = json_get_str(v, "persistentVolumeClaim.claimName");
    if(!claim)
      continue;
    cJSON *pvc = NULL;
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_get(jr->k, &KUBE_PVCS, ns, claim, &pvc, &st);
    kube_status_release(&st);
    char msg[1024] = "";
    if(rc == GW_ENOTFOUND)
      jr_fmt(msg, sizeof(msg), "0/1 nodes are available: persistentvolumeclaim \"%s\" not found.",
               claim);
    else if(rc)
      jr_fmt(msg, sizeof(msg), "0/1 nodes are available: error getting PVC \"%s/%s\": %s.", ns,
               claim, gw_strerror(rc));
    else if(jr_json_has(pvc, "metadata.deletionTimestamp"))
      jr_fmt(msg, sizeof(msg),
               "0/1 nodes are available: persistentvolumeclaim \"%s\" is being deleted.", claim);
    cJSON_Delete(pvc);
    if(*msg) {
      size_t n = strlen(msg) + sizeof(PREEMPTION);
      *why = malloc(n);
      if(*why)
        jr_fmt(*why, n, "%s%s", msg, PREEMPTION);
      return false;
    }
  }
  if(jr->nworkers) /* PersistentVolumes are this node's: a Pod with a claim stays here */
    return json_get(pod, "spec.nodeSelector") || json_get(pod, "spec.affinity.nodeAffinity")
             ? pick_node(jr, pod, node, nodelen, why)
             : true;
  if(json_get(pod, "spec.nodeSelector") || json_get(pod, "spec.affinity.nodeAffinity")) {
    cJSON *labels = node_labels(jr);
    bool ok = sched_spec_fits(json_get(pod, "spec"), labels, jr->cfg->node_name);
    cJSON_Delete(labels);
    if(!ok) {
      *why = strdup("0/1 nodes are available: 1 node(s) didn't match Pod's node "
                    "affinity/selector." PREEMPTION);
      return false;
    }
  }
  return true;
}

gw_rc sched_bind(struct jr *jr, const cJSON *pod, const char *node)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const char *name = json_get_str(pod, "metadata.name");
  const char *uid = json_get_str(pod, "metadata.uid");
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "apiVersion", "v1");
  cJSON_AddStringToObject(b, "kind", "Binding");
  cJSON *md = cJSON_AddObjectToObject(b, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", ns);
  if(uid)
    cJSON_AddStringToObject(md, "uid", uid);
  cJSON *t = cJSON_AddObjectToObject(b, "target");
  cJSON_AddStringToObject(t, "apiVersion", "v1");
  cJSON_AddStringToObject(t, "kind", "Node");
  cJSON_AddStringToObject(t, "name", node);
  char *body = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  if(!body)
    return GW_ENOMEM;
  struct strbuf p;
  strbuf_init(&p, 2048);
  gw_rc rc = strbuf_addf(&p, "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
  struct kube_status st;
  kube_status_init(&st);
  if(!rc)
    rc = kube_request(jr->k, "POST", strbuf_str(&p), "application/json", body, NULL, &st);
  /* A server without the binding subresource answers 404 about the path (not about the Pod)
   * or 405: this node owns the Pod anyway, without spec.nodeName. */
  if(st.code == 405 || (rc == GW_ENOTFOUND && !strstr(st.message, "pods \"")))
    rc = GW_OK;
  if(rc)
    log_kv(LOG_WARN, "pod not bound", "pod", name, "error",
           st.message[0] ? st.message : gw_strerror(rc), LOG_END);
  kube_status_release(&st);
  strbuf_release(&p);
  cJSON_free(body);
  return rc;
}
