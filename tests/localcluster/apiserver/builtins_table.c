/* builtins_table.c: the built-ins' printer columns, as kube-apiserver's printers generate them
 * (always wide: kubectl hides priority 1 columns unless -o wide). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

static const char *NAME_DESC = "Name must be unique within a namespace. Is required when "
                               "creating resources, although some resources may allow a client "
                               "to request the generation of an appropriate name automatically. "
                               "Name is primarily intended for creation idempotence and "
                               "configuration definition. Cannot be updated. More info: "
                               "https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                               "names#names";

static void name_col(cJSON *d)
{
  tab_column(d, "Name", "string", "name", NAME_DESC, 0);
}

static void age_col(cJSON *d)
{
  tab_column(d, "Age", "string", NULL, "CreationTimestamp is a timestamp representing the server "
                                       "time when this object was created.", 0);
}

static cJSON *cells_named(const cJSON *obj)
{
  cJSON *c = cJSON_CreateArray();
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_meta(obj, "name")));
  return c;
}

static void add_age(cJSON *cells, const cJSON *obj)
{
  cJSON_AddItemToArray(cells, tab_age(obj, ".metadata.creationTimestamp"));
}

static void add_str(cJSON *cells, const char *s)
{
  cJSON_AddItemToArray(cells, cJSON_CreateString(s && *s ? s : "<none>"));
}

static const char *str_at(const cJSON *obj, const char *a, const char *b)
{
  const cJSON *v = cJSON_GetObjectItem(obj, a);
  if(b)
    v = cJSON_GetObjectItem(v, b);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* ---- default: Name, Age ---- */
static void default_cols(cJSON *d)
{
  name_col(d);
  age_col(d);
}
static cJSON *default_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  add_age(c, o);
  return c;
}

/* ---- namespaces ---- */
static void ns_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Status", "string", NULL, "The status of the namespace", 0);
  age_col(d);
}
static cJSON *ns_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(o, "status", "phase")));
  add_age(c, o);
  return c;
}

/* ---- configmaps, secrets, serviceaccounts ---- */
static void cm_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Data", "string", NULL, "Data contains the configuration data.", 0);
  age_col(d);
}
static cJSON *cm_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  int n = cJSON_GetArraySize(cJSON_GetObjectItem(o, "data")) +
          cJSON_GetArraySize(cJSON_GetObjectItem(o, "binaryData"));
  cJSON_AddItemToArray(c, cJSON_CreateNumber(n));
  add_age(c, o);
  return c;
}
static void secret_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Type", "string", NULL, "The type of the secret", 0);
  tab_column(d, "Data", "string", NULL, "The number of entries in the secret", 0);
  age_col(d);
}
static cJSON *secret_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_str(o, "type")));
  cJSON_AddItemToArray(c, cJSON_CreateNumber(cJSON_GetArraySize(cJSON_GetObjectItem(o, "data"))));
  add_age(c, o);
  return c;
}
static void sa_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Secrets", "string", NULL, "Secrets is a list of the secrets in the same "
                                           "namespace that pods running using this "
                                           "ServiceAccount are allowed to use.", 0);
  age_col(d);
}
static cJSON *sa_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c,
                       cJSON_CreateNumber(cJSON_GetArraySize(cJSON_GetObjectItem(o, "secrets"))));
  add_age(c, o);
  return c;
}

/* ---- pods ---- */
static void pod_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Ready", "string", NULL, "The aggregate readiness state of this pod for "
                                         "accepting traffic.", 0);
  tab_column(d, "Status", "string", NULL, "The aggregate status of the containers in this pod.",
             0);
  tab_column(d, "Restarts", "string", NULL, "The number of times the containers in this pod "
                                            "have been restarted and when the last container "
                                            "in this pod has restarted.", 0);
  age_col(d);
  tab_column(d, "IP", "string", NULL, "IP address allocated to the pod. Routable at least "
                                      "within the cluster. Empty if not yet allocated.", 1);
  tab_column(d, "Node", "string", NULL, "NodeName is a request to schedule this pod onto a "
                                        "specific node.", 1);
  tab_column(d, "Nominated Node", "string", NULL, "nominatedNodeName is set when this pod "
                                                  "preempts other pods on the node.", 1);
  tab_column(d, "Readiness Gates", "string", NULL, "If specified, all readiness gates will be "
                                                   "evaluated for pod readiness.", 1);
}

static const char *pod_reason(const cJSON *o, int *ready, long long *restarts)
{
  const cJSON *status = cJSON_GetObjectItem(o, "status");
  const char *reason = str_at(o, "status", "phase");
  if(*str_at(o, "status", "reason"))
    reason = str_at(o, "status", "reason");
  static __thread char buf[64];
  bool running = false;
  const cJSON *cs = cJSON_GetObjectItem(status, "containerStatuses");
  for(int i = cJSON_GetArraySize(cs) - 1; i >= 0; i--) {
    const cJSON *c = cJSON_GetArrayItem(cs, i);
    const cJSON *rc = cJSON_GetObjectItem(c, "restartCount");
    *restarts += cJSON_IsNumber(rc) ? (long long)rc->valuedouble : 0;
    const cJSON *st = cJSON_GetObjectItem(c, "state");
    const cJSON *wt = cJSON_GetObjectItem(st, "waiting");
    const cJSON *tm = cJSON_GetObjectItem(st, "terminated");
    if(wt && *ls_str(wt, "reason"))
      reason = ls_str(wt, "reason");
    else if(tm && *ls_str(tm, "reason"))
      reason = ls_str(tm, "reason");
    else if(tm) {
      const cJSON *sig = cJSON_GetObjectItem(tm, "signal");
      const cJSON *ec = cJSON_GetObjectItem(tm, "exitCode");
      if(cJSON_IsNumber(sig) && sig->valueint)
        snprintf(buf, sizeof(buf), "Signal:%d", sig->valueint);
      else
        snprintf(buf, sizeof(buf), "ExitCode:%d", cJSON_IsNumber(ec) ? ec->valueint : 0);
      reason = buf;
    } else if(cJSON_IsTrue(cJSON_GetObjectItem(c, "ready")) && cJSON_GetObjectItem(st, "running")) {
      running = true;
      (*ready)++;
    }
  }
  if(!strcmp(reason, "Completed") && running)
    reason = "Running";
  if(*ls_meta(o, "deletionTimestamp"))
    reason = "Terminating";
  return reason;
}

static cJSON *pod_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  int ready = 0;
  long long restarts = 0;
  const char *reason = pod_reason(o, &ready, &restarts);
  char r[32];
  snprintf(r, sizeof(r), "%d/%d", ready,
           cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"), "containers")));
  cJSON_AddItemToArray(c, cJSON_CreateString(r));
  cJSON_AddItemToArray(c, cJSON_CreateString(reason));
  cJSON_AddItemToArray(c, cJSON_CreateNumber((double)restarts));
  add_age(c, o);
  add_str(c, str_at(o, "status", "podIP"));
  add_str(c, str_at(o, "spec", "nodeName"));
  add_str(c, str_at(o, "status", "nominatedNodeName"));
  add_str(c, "");
  return c;
}

/* ---- what workloads (jobs, daemonsets) print of their template and selector ---- */
/* The template's container names and images, comma separated (layoutContainerCells). */
static void add_containers(cJSON *cells, const cJSON *tspec)
{
  char names[512] = "", images[1024] = "";
  const cJSON *ct;
  cJSON_ArrayForEach(ct, cJSON_GetObjectItem(tspec, "containers"))
  {
    size_t l = strlen(names), m = strlen(images);
    snprintf(names + l, sizeof(names) - l, "%s%s", l ? "," : "", ls_str(ct, "name"));
    snprintf(images + m, sizeof(images) - m, "%s%s", m ? "," : "", ls_str(ct, "image"));
  }
  cJSON_AddItemToArray(cells, cJSON_CreateString(names));
  cJSON_AddItemToArray(cells, cJSON_CreateString(images));
}

static int by_string(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Requirements ("k=v", "k in (a)", "!k") by their key, as the selector's String() sorts them. */
static int by_key(const void *a, const void *b)
{
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  x += *x == '!';
  y += *y == '!';
  size_t lx = strcspn(x, "= "), ly = strcspn(y, "= ");
  int c = strncmp(x, y, lx < ly ? lx : ly);
  return c ? c : lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

/* Sorts n malloc'd strings and joins them with commas (freeing them); malloc'd or NULL. */
static char *join_sorted(char **v, size_t n, int (*cmp)(const void *, const void *))
{
  size_t len = 1;
  for(size_t i = 0; i < n; i++)
    len += strlen(v[i]) + 1;
  char *out = malloc(len);
  if(out)
    out[0] = '\0';
  qsort(v, n, sizeof(*v), cmp);
  for(size_t i = 0, o = 0; i < n; i++) {
    if(out)
      o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "," : "", v[i]);
    free(v[i]);
  }
  return out;
}

/* A map's "k=v" pairs and one requirement per matchExpressions entry ("k in (a,b)",
 * "k notin (a)", "k", "!k"), sorted and comma separated; malloc'd ("" when empty). */
static char *format_pairs(const cJSON *map, const cJSON *exprs)
{
  size_t n = (size_t)cJSON_GetArraySize(map) + (size_t)cJSON_GetArraySize(exprs), k = 0;
  char **v = calloc(n ? n : 1, sizeof(*v));
  if(!v)
    return NULL;
  const cJSON *x;
  cJSON_ArrayForEach(x, map)
  {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s=%s", x->string, cJSON_IsString(x) ? x->valuestring : "");
    if((v[k] = strdup(buf)))
      k++;
  }
  cJSON_ArrayForEach(x, exprs)
  {
    const char *key = ls_str(x, "key"), *op = ls_str(x, "operator");
    size_t nv = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(x, "values")), j = 0;
    char **vals = calloc(nv ? nv : 1, sizeof(*vals));
    const cJSON *val;
    cJSON_ArrayForEach(val, cJSON_GetObjectItem(x, "values"))
    {
      if(vals && (vals[j] = strdup(cJSON_IsString(val) ? val->valuestring : "")))
        j++;
    }
    char *joined = vals ? join_sorted(vals, j, by_string) : NULL;
    free(vals);
    char buf[1024];
    if(!strcmp(op, "In") || !strcmp(op, "NotIn"))
      snprintf(buf, sizeof(buf), "%s %s (%s)", key, op[0] == 'I' ? "in" : "notin",
               joined ? joined : "");
    else
      snprintf(buf, sizeof(buf), "%s%s", !strcmp(op, "DoesNotExist") ? "!" : "", key);
    free(joined);
    if((v[k] = strdup(buf)))
      k++;
  }
  char *out = join_sorted(v, k, by_key);
  free(v);
  return out;
}

/* metav1.FormatLabelSelector */
static void add_selector(cJSON *cells, const cJSON *sel)
{
  char *s = format_pairs(cJSON_GetObjectItem(sel, "matchLabels"),
                         cJSON_GetObjectItem(sel, "matchExpressions"));
  add_str(cells, s);
  free(s);
}

/* ---- jobs ---- */

static void job_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Status", "string", NULL, "Status of the job.", 0);
  tab_column(d, "Completions", "string", NULL, "The desired number of successfully finished "
                                               "pods the job should be run with.", 0);
  tab_column(d, "Duration", "string", NULL, "Time required to complete the job.", 0);
  age_col(d);
  tab_column(d, "Containers", "string", NULL, "Names of each container in the template.", 1);
  tab_column(d, "Images", "string", NULL, "Images referenced by each container in the "
                                          "template.", 1);
  tab_column(d, "Selector", "string", NULL, "A label query over pods that should match the pod "
                                            "count.", 1);
}

static bool has_cond(const cJSON *o, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "status"), "conditions"))
  {
    if(!strcmp(ls_str(c, "type"), type) && !strcmp(ls_str(c, "status"), "True"))
      return true;
  }
  return false;
}

static cJSON *job_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  const char *status = has_cond(o, "Complete")              ? "Complete"
                       : has_cond(o, "Failed")              ? "Failed"
                       : *ls_meta(o, "deletionTimestamp")   ? "Terminating"
                       : has_cond(o, "Suspended")           ? "Suspended"
                       : has_cond(o, "FailureTarget")       ? "FailureTarget"
                       : has_cond(o, "SuccessCriteriaMet")  ? "SuccessCriteriaMet"
                                                            : "Running";
  cJSON_AddItemToArray(c, cJSON_CreateString(status));
  const cJSON *spec = cJSON_GetObjectItem(o, "spec");
  const cJSON *st = cJSON_GetObjectItem(o, "status");
  const cJSON *succ = cJSON_GetObjectItem(st, "succeeded");
  const cJSON *comp = cJSON_GetObjectItem(spec, "completions");
  const cJSON *par = cJSON_GetObjectItem(spec, "parallelism");
  int s = cJSON_IsNumber(succ) ? succ->valueint : 0;
  char buf[64];
  if(cJSON_IsNumber(comp))
    snprintf(buf, sizeof(buf), "%d/%d", s, comp->valueint);
  else
    snprintf(buf, sizeof(buf), "%d/1 of %d", s, cJSON_IsNumber(par) ? par->valueint : 1);
  cJSON_AddItemToArray(c, cJSON_CreateString(buf));
  time_t start = ls_time_parse(ls_str(st, "startTime"));
  time_t end = ls_time_parse(ls_str(st, "completionTime"));
  buf[0] = '\0';
  if(start >= 0)
    ls_human_duration((end >= 0 ? end : time(NULL)) - start, buf, sizeof(buf));
  cJSON_AddItemToArray(c, cJSON_CreateString(buf));
  add_age(c, o);
  const cJSON *tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "template"), "spec");
  add_containers(c, tspec);
  add_selector(c, cJSON_GetObjectItem(spec, "selector"));
  return c;
}

/* ---- daemonsets ---- */
static void ds_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Desired", "integer", NULL, "The total number of nodes that should be running "
                                            "the daemon pod (including nodes correctly running "
                                            "the daemon pod).", 0);
  tab_column(d, "Current", "integer", NULL, "The number of nodes that are running at least 1 "
                                            "daemon pod and are supposed to run the daemon "
                                            "pod.", 0);
  tab_column(d, "Ready", "integer", NULL, "numberReady is the number of nodes that should be "
                                          "running the daemon pod and have one or more of the "
                                          "daemon pod running with a Ready Condition.", 0);
  tab_column(d, "Up-to-date", "integer", NULL, "The total number of nodes that are running "
                                               "updated daemon pod", 0);
  tab_column(d, "Available", "integer", NULL, "The number of nodes that should be running the "
                                              "daemon pod and have one or more of the daemon "
                                              "pod running and available (ready for at least "
                                              "spec.minReadySeconds)", 0);
  tab_column(d, "Node Selector", "string", NULL, "NodeSelector is a selector which must be true "
                                                 "for the pod to fit on a node.", 0);
  age_col(d);
  tab_column(d, "Containers", "string", NULL, "Names of each container in the template.", 1);
  tab_column(d, "Images", "string", NULL, "Images referenced by each container in the "
                                          "template.", 1);
  tab_column(d, "Selector", "string", NULL, "A label query over pods that are managed by the "
                                            "daemon set.", 1);
}

static cJSON *ds_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  static const char *const counts[] = { "desiredNumberScheduled", "currentNumberScheduled",
                                        "numberReady", "updatedNumberScheduled",
                                        "numberAvailable" };
  const cJSON *st = cJSON_GetObjectItem(o, "status");
  for(size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
    const cJSON *n = cJSON_GetObjectItem(st, counts[i]);
    cJSON_AddItemToArray(c, cJSON_CreateNumber(cJSON_IsNumber(n) ? n->valuedouble : 0));
  }
  const cJSON *spec = cJSON_GetObjectItem(o, "spec");
  const cJSON *tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "template"), "spec");
  char *ns = format_pairs(cJSON_GetObjectItem(tspec, "nodeSelector"), NULL);
  add_str(c, ns);
  free(ns);
  add_age(c, o);
  add_containers(c, tspec);
  add_selector(c, cJSON_GetObjectItem(spec, "selector"));
  return c;
}

/* ---- events (core and events.k8s.io forms) ---- */
static void event_cols(cJSON *d)
{
  tab_column(d, "Last Seen", "string", NULL, "Time when last event occurred", 0);
  tab_column(d, "Type", "string", NULL, "Type of this event (Normal, Warning), new types could "
                                        "be added in the future.", 0);
  tab_column(d, "Reason", "string", NULL, "Reason why the action was taken. It is "
                                          "human-readable.", 0);
  tab_column(d, "Object", "string", NULL, "The object this Event is about.", 0);
  tab_column(d, "Subobject", "string", NULL, "The subobject this Event is about.", 1);
  tab_column(d, "Source", "string", NULL, "The component reporting this event.", 1);
  tab_column(d, "Message", "string", NULL, "A human-readable description of the status of this "
                                           "operation.", 0);
  tab_column(d, "First Seen", "string", NULL, "Time when first event occurred", 1);
  tab_column(d, "Count", "string", NULL, "The number of times this event has occurred.", 1);
  tab_column(d, "Name", "string", "name", NAME_DESC, 1);
}

static const char *either(const cJSON *o, const char *a, const char *b)
{
  const char *s = ls_str(o, a);
  return *s ? s : ls_str(o, b);
}

static cJSON *since(const char *ts)
{
  time_t t = ls_time_parse(ts);
  if(t < 0)
    return cJSON_CreateString("<unknown>");
  char buf[32];
  ls_human_duration(time(NULL) - t, buf, sizeof(buf));
  return cJSON_CreateString(buf);
}

static cJSON *event_row(const cJSON *o)
{
  cJSON *c = cJSON_CreateArray();
  const char *first = either(o, "firstTimestamp", "deprecatedFirstTimestamp");
  if(!*first)
    first = ls_str(o, "eventTime");
  if(!*first)
    first = ls_meta(o, "creationTimestamp");
  const char *last = either(o, "lastTimestamp", "deprecatedLastTimestamp");
  if(!*last)
    last = first;
  const cJSON *series = cJSON_GetObjectItem(o, "series");
  if(series)
    last = ls_str(series, "lastObservedTime");
  const cJSON *cnt = cJSON_GetObjectItem(o, "count");
  if(!cnt)
    cnt = cJSON_GetObjectItem(o, "deprecatedCount");
  double count = series ? cJSON_GetNumberValue(cJSON_GetObjectItem(series, "count"))
                        : (cJSON_IsNumber(cnt) && cnt->valuedouble > 0 ? cnt->valuedouble : 1);
  const cJSON *io = cJSON_GetObjectItem(o, "involvedObject");
  if(!io)
    io = cJSON_GetObjectItem(o, "regarding");
  char target[600], kind[256];
  size_t i = 0;
  for(const char *k = ls_str(io, "kind"); *k && i + 1 < sizeof(kind); k++)
    kind[i++] = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
  kind[i] = '\0';
  if(*ls_str(io, "name"))
    snprintf(target, sizeof(target), "%s/%s", kind, ls_str(io, "name"));
  else
    snprintf(target, sizeof(target), "%s", kind);
  const cJSON *src = cJSON_GetObjectItem(o, "source");
  if(!src)
    src = cJSON_GetObjectItem(o, "deprecatedSource");
  char source[600];
  const char *comp = ls_str(src, "component");
  if(!*comp)
    comp = either(o, "reportingComponent", "reportingController");
  const char *host = ls_str(src, "host");
  if(!*host)
    host = ls_str(o, "reportingInstance");
  if(*host)
    snprintf(source, sizeof(source), "%s, %s", comp, host);
  else
    snprintf(source, sizeof(source), "%s", comp);
  cJSON_AddItemToArray(c, since(last));
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_str(o, "type")));
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_str(o, "reason")));
  cJSON_AddItemToArray(c, cJSON_CreateString(target));
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_str(io, "fieldPath")));
  cJSON_AddItemToArray(c, cJSON_CreateString(source));
  cJSON_AddItemToArray(c, cJSON_CreateString(either(o, "message", "note")));
  cJSON_AddItemToArray(c, since(first));
  cJSON_AddItemToArray(c, cJSON_CreateNumber(count));
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_meta(o, "name")));
  return c;
}

/* ---- leases, nodes, pvcs, crds, webhooks ---- */
static void lease_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Holder", "string", NULL, "HolderIdentity contains the identity of the holder "
                                          "of a current lease.", 0);
  age_col(d);
}
static cJSON *lease_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(o, "spec", "holderIdentity")));
  add_age(c, o);
  return c;
}

static void node_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Status", "string", NULL, "The status of the node", 0);
  tab_column(d, "Roles", "string", NULL, "The roles of the node", 0);
  age_col(d);
  tab_column(d, "Version", "string", NULL, "Kubelet Version reported by the node.", 0);
}
static cJSON *node_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  const char *s = "Unknown";
  const cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "status"), "conditions"))
  {
    if(!strcmp(ls_str(x, "type"), "Ready"))
      s = !strcmp(ls_str(x, "status"), "True") ? "Ready" : "NotReady";
  }
  cJSON_AddItemToArray(c, cJSON_CreateString(s));
  add_str(c, "");
  add_age(c, o);
  const char *kv = str_at(cJSON_GetObjectItem(o, "status"), "nodeInfo", "kubeletVersion");
  cJSON_AddItemToArray(c, cJSON_CreateString(kv));
  return c;
}

static void pvc_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Status", "string", NULL, "Phase represents the current phase of "
                                          "PersistentVolumeClaim.", 0);
  tab_column(d, "Volume", "string", NULL, "VolumeName is the binding reference to the "
                                          "PersistentVolume backing this claim.", 0);
  tab_column(d, "Capacity", "string", NULL, "Capacity represents the actual resources of the "
                                            "underlying volume.", 0);
  tab_column(d, "Access Modes", "string", NULL, "AccessModes contains the desired access modes "
                                                "the volume should have.", 0);
  tab_column(d, "StorageClass", "string", NULL, "StorageClassName is the name of the "
                                                "StorageClass required by the claim.", 0);
  tab_column(d, "VolumeAttributesClass", "string", NULL, "", 0);
  age_col(d);
  tab_column(d, "VolumeMode", "string", NULL, "volumeMode defines what type of volume is "
                                              "required by the claim.", 1);
}
static cJSON *pvc_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  const cJSON *st = cJSON_GetObjectItem(o, "status");
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_str(st, "phase")));
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(o, "spec", "volumeName")));
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(st, "capacity", "storage")));
  char modes[64] = "";
  const cJSON *m;
  cJSON_ArrayForEach(m, cJSON_GetObjectItem(st, "accessModes"))
  {
    const char *s = cJSON_GetStringValue(m);
    const char *ab = !s                              ? ""
                     : !strcmp(s, "ReadWriteOnce")    ? "RWO"
                     : !strcmp(s, "ReadOnlyMany")     ? "ROX"
                     : !strcmp(s, "ReadWriteMany")    ? "RWX"
                     : !strcmp(s, "ReadWriteOncePod") ? "RWOP"
                                                      : s;
    size_t l = strlen(modes);
    snprintf(modes + l, sizeof(modes) - l, "%s%s", l ? "," : "", ab);
  }
  cJSON_AddItemToArray(c, cJSON_CreateString(modes));
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(o, "spec", "storageClassName")));
  add_str(c, str_at(o, "spec", "volumeAttributesClassName"));
  add_age(c, o);
  cJSON_AddItemToArray(c, cJSON_CreateString(str_at(o, "spec", "volumeMode")));
  return c;
}

static void crd_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Created At", "date", NULL, "CreationTimestamp is a timestamp representing the "
                                            "server time when this object was created.", 0);
}
static cJSON *crd_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c, cJSON_CreateString(ls_meta(o, "creationTimestamp")));
  return c;
}

static void webhook_cols(cJSON *d)
{
  name_col(d);
  tab_column(d, "Webhooks", "integer", NULL, "Webhooks indicates the number of webhooks "
                                             "configured in this configuration", 0);
  age_col(d);
}
static cJSON *webhook_row(const cJSON *o)
{
  cJSON *c = cells_named(o);
  cJSON_AddItemToArray(c,
                       cJSON_CreateNumber(cJSON_GetArraySize(cJSON_GetObjectItem(o, "webhooks"))));
  add_age(c, o);
  return c;
}

static const struct tab_printer printers[] = {
  { "", "namespaces", ns_cols, ns_row },
  { "", "configmaps", cm_cols, cm_row },
  { "", "secrets", secret_cols, secret_row },
  { "", "serviceaccounts", sa_cols, sa_row },
  { "", "pods", pod_cols, pod_row },
  { "", "events", event_cols, event_row },
  { "events.k8s.io", "events", event_cols, event_row },
  { "", "nodes", node_cols, node_row },
  { "", "persistentvolumeclaims", pvc_cols, pvc_row },
  { "batch", "jobs", job_cols, job_row },
  { "apps", "daemonsets", ds_cols, ds_row },
  { "coordination.k8s.io", "leases", lease_cols, lease_row },
  { "apiextensions.k8s.io", "customresourcedefinitions", crd_cols, crd_row },
  { "admissionregistration.k8s.io", "mutatingwebhookconfigurations", webhook_cols, webhook_row },
  { "admissionregistration.k8s.io", "validatingwebhookconfigurations", webhook_cols,
    webhook_row },
  { NULL, NULL, default_cols, default_row },
};

const struct tab_printer *tab_printer_for(const struct ls_rtype *rt)
{
  const struct tab_printer *p = printers;
  for(; p->resource; p++)
    if(!strcmp(p->group, rt->group) && !strcmp(p->resource, rt->resource))
      return p;
  return p;
}
