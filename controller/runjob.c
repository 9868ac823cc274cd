/* runjob.c: runner Jobs for any kind (runjob.h). */
#include "runjob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "log.h"
#include "manager.h"
#include "podtemplate.h"
#include "redact.h"

void rj_name(const struct rj_owner *o, const char *step, int attempt, char *buf, size_t len)
{
  snprintf(buf, len, "%s-%s-%d", o->name, step, attempt);
}

/* ---- rendering ---- */

static cJSON *labels(const struct rj_owner *o, const struct rj_spec *s, const char *step,
                     int attempt, bool pod)
{
  cJSON *l = cJSON_CreateObject();
  if(pod && s && cJSON_IsObject(s->pod_labels)) { /* the user's first: godwit's own keys win */
    const cJSON *x;
    cJSON_ArrayForEach(x, s->pod_labels)
      if(cJSON_IsString(x) && x->string)
        cJSON_AddStringToObject(l, x->string, x->valuestring);
  }
  for(size_t i = 0; s && i < RJ_MAX_LABELS && s->labels[i][0]; i++) {
    cJSON_DeleteItemFromObjectCaseSensitive(l, s->labels[i][0]);
    cJSON_AddStringToObject(l, s->labels[i][0], s->labels[i][1] ? s->labels[i][1] : "");
  }
  char n[16];
  snprintf(n, sizeof(n), "%d", attempt);
  static const char *const own[] = { "app.kubernetes.io/managed-by", RJ_STEP_LABEL,
                                      RJ_ATTEMPT_LABEL, PODTEMPLATE_RUNNER_LABEL, NULL };
  for(size_t i = 0; own[i]; i++)
    cJSON_DeleteItemFromObjectCaseSensitive(l, own[i]);
  cJSON_DeleteItemFromObjectCaseSensitive(l, o->label);
  cJSON_AddStringToObject(l, "app.kubernetes.io/managed-by", "godwit");
  cJSON_AddStringToObject(l, o->label, o->name);
  if(step) {
    cJSON_AddStringToObject(l, RJ_STEP_LABEL, step);
    cJSON_AddStringToObject(l, RJ_ATTEMPT_LABEL, n);
  }
  if(pod)
    cJSON_AddStringToObject(l, PODTEMPLATE_RUNNER_LABEL, o->runner);
  return l;
}

static cJSON *owner_refs(const struct rj_owner *o)
{
  cJSON *a = cJSON_CreateArray();
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "apiVersion", o->api_version);
  cJSON_AddStringToObject(r, "kind", o->kind);
  cJSON_AddStringToObject(r, "name", o->name);
  cJSON_AddStringToObject(r, "uid", o->uid ? o->uid : "");
  cJSON_AddTrueToObject(r, "controller");
  cJSON_AddTrueToObject(r, "blockOwnerDeletion");
  cJSON_AddItemToArray(a, r);
  return a;
}

static cJSON *metadata(const struct rj_owner *o, const struct rj_spec *s, const char *name,
                       const char *step, int attempt)
{
  cJSON *md = cJSON_CreateObject();
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", o->ns);
  cJSON_AddItemToObject(md, "labels", labels(o, s, step, attempt, false));
  cJSON_AddItemToObject(md, "ownerReferences", owner_refs(o));
  return md;
}

static void env_secret(cJSON *env, const struct rj_secret_env *s)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", s->var);
  cJSON *k = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "secretKeyRef");
  cJSON_AddStringToObject(k, "name", s->secret);
  cJSON_AddStringToObject(k, "key", s->key && *s->key ? s->key : "uri");
  cJSON_AddItemToArray(env, e);
}

static void env_value(cJSON *env, const char *var, const char *value)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", var);
  cJSON_AddStringToObject(e, "value", value ? value : "");
  cJSON_AddItemToArray(env, e);
}

/* Takes s->args. */
static cJSON *container(struct rj_spec *s)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "name", s->container ? s->container : "runner");
  cJSON_AddStringToObject(c, "image", s->image);
  cJSON *cmd = cJSON_AddArrayToObject(c, "command");
  for(size_t i = 0; s->command && s->command[i]; i++)
    cJSON_AddItemToArray(cmd, cJSON_CreateString(s->command[i]));
  cJSON_AddItemToObject(c, "args", s->args ? s->args : cJSON_CreateArray());
  s->args = NULL;
  cJSON *env = cJSON_AddArrayToObject(c, "env");
  for(size_t i = 0; i < RJ_MAX_SECRETS && s->secrets[i].var; i++)
    if(s->secrets[i].secret && *s->secrets[i].secret)
      env_secret(env, &s->secrets[i]);
  for(size_t i = 0; i < RJ_MAX_ENV && s->env[i][0]; i++)
    env_value(env, s->env[i][0], s->env[i][1]);
  cJSON *mounts = NULL;
  if(s->claim && s->mount) {
    cJSON *vm = cJSON_CreateObject();
    cJSON_AddStringToObject(vm, "name", "work");
    cJSON_AddStringToObject(vm, "mountPath", s->mount);
    cJSON_AddItemToArray(mounts = cJSON_AddArrayToObject(c, "volumeMounts"), vm);
  }
  if(s->config_map && s->config_mount) {
    cJSON *vm = cJSON_CreateObject();
    cJSON_AddStringToObject(vm, "name", "config");
    cJSON_AddStringToObject(vm, "mountPath", s->config_mount);
    cJSON_AddTrueToObject(vm, "readOnly");
    cJSON_AddItemToArray(mounts ? mounts : cJSON_AddArrayToObject(c, "volumeMounts"), vm);
  }
  if(cJSON_IsObject(s->resources))
    cJSON_AddItemToObject(c, "resources", cJSON_Duplicate(s->resources, 1));
  /* the restricted Pod Security Standard */
  cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
  cJSON_AddFalseToObject(sc, "allowPrivilegeEscalation");
  cJSON *drop = cJSON_AddArrayToObject(cJSON_AddObjectToObject(sc, "capabilities"), "drop");
  cJSON_AddItemToArray(drop, cJSON_CreateString("ALL"));
  return c;
}

cJSON *rj_render(const struct rj_owner *o, struct rj_spec *s)
{
  cJSON *job = cJSON_CreateObject();
  cJSON_AddStringToObject(job, "apiVersion", "batch/v1");
  cJSON_AddStringToObject(job, "kind", "Job");
  cJSON_AddItemToObject(job, "metadata", metadata(o, s, s->name, s->step, s->attempt));
  cJSON *spec = cJSON_AddObjectToObject(job, "spec");
  cJSON_AddNumberToObject(spec, "backoffLimit", 0);
  if(s->deadline_s > 0)
    cJSON_AddNumberToObject(spec, "activeDeadlineSeconds", (double)s->deadline_s);
  if(s->ttl_s > 0)
    cJSON_AddNumberToObject(spec, "ttlSecondsAfterFinished", (double)s->ttl_s);
  cJSON *tpl = cJSON_AddObjectToObject(spec, "template");
  cJSON *tmd = cJSON_AddObjectToObject(tpl, "metadata");
  cJSON_AddItemToObject(tmd, "labels", labels(o, s, s->step, s->attempt, true));
  cJSON *annotations = cJSON_AddObjectToObject(tmd, "annotations");
  if(annotations && cJSON_IsObject(s->pod_annotations)) {
    const cJSON *x;
    cJSON_ArrayForEach(x, s->pod_annotations)
      if(cJSON_IsString(x) && x->string && strcmp(x->string, PODTEMPLATE_DIGEST_ANNOTATION))
        cJSON_AddStringToObject(annotations, x->string, x->valuestring);
  }
  cJSON *ps = cJSON_AddObjectToObject(tpl, "spec");
  cJSON_AddStringToObject(ps, "restartPolicy", "Never");
  if(s->service_account && *s->service_account)
    cJSON_AddStringToObject(ps, "serviceAccountName", s->service_account);
  /* where the Pods may run and how their images are pulled, as the owner's user declared */
  if(cJSON_IsObject(s->node_selector) && s->node_selector->child)
    cJSON_AddItemToObject(ps, "nodeSelector", cJSON_Duplicate(s->node_selector, 1));
  if(cJSON_GetArraySize(s->tolerations) > 0)
    cJSON_AddItemToObject(ps, "tolerations", cJSON_Duplicate(s->tolerations, 1));
  if(cJSON_GetArraySize(s->image_pull_secrets) > 0)
    cJSON_AddItemToObject(ps, "imagePullSecrets", cJSON_Duplicate(s->image_pull_secrets, 1));
  /* non-root, and a volume writable by the group */
  cJSON *psc = cJSON_AddObjectToObject(ps, "securityContext");
  cJSON_AddTrueToObject(psc, "runAsNonRoot");
  cJSON_AddNumberToObject(psc, "runAsUser", RJ_RUN_AS);
  cJSON_AddNumberToObject(psc, "runAsGroup", RJ_RUN_AS);
  cJSON_AddNumberToObject(psc, "fsGroup", RJ_RUN_AS);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(psc, "seccompProfile"), "type",
                          "RuntimeDefault");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "containers"), container(s));
  cJSON *vols = NULL;
  if(s->claim && s->mount) {
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", "work");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "persistentVolumeClaim"), "claimName",
                            s->claim);
    cJSON_AddItemToArray(vols = cJSON_AddArrayToObject(ps, "volumes"), v);
  }
  if(s->config_map && s->config_mount) {
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", "config");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "configMap"), "name", s->config_map);
    cJSON_AddItemToArray(vols ? vols : cJSON_AddArrayToObject(ps, "volumes"), v);
  }
  char digest[80];
  if(!annotations || podtemplate_digest(tpl, digest, sizeof(digest))) {
    cJSON_Delete(job);
    return NULL;
  }
  cJSON_AddStringToObject(annotations, PODTEMPLATE_DIGEST_ANNOTATION, digest);
  return job;
}

/* Creates obj in gvr; AlreadyExists is success with *created false. */
static gw_rc create(const struct rj_owner *o, const struct kube_gvr *gvr, const cJSON *obj,
                    bool *created)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(o->kube, gvr, o->ns, obj, false, NULL, &st);
  *created = !rc;
  if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists"))
    rc = GW_OK; /* a restart, or a stale cache: it is there */
  else if(rc)
    log_kv(LOG_WARN, "cannot create a runner object", "key", o->key, "resource", gvr->resource,
           "name", json_get_str(obj, "metadata.name"), "error", gw_strerror(rc), "reason",
           st.reason, LOG_END);
  kube_status_release(&st);
  return rc;
}

gw_rc rj_create(const struct rj_owner *o, struct rj_spec *s, bool *created)
{
  *created = false;
  cJSON *job = rj_render(o, s);
  if(!job)
    return GW_ENOMEM;
  gw_rc rc = create(o, &KUBE_JOBS, job, created);
  cJSON_Delete(job);
  return rc;
}

/* Whose Job (or claim) this is: 1 the owner's; 0 a predecessor's, an object of the owner's kind and name
 * with another uid, deleted with its dependents orphaned (kubectl delete --cascade=orphan drops
 * their ownerReferences), so the Job has no controller or that one, and carries the owner's
 * label; -1 anyone else's. */
static int job_owner(const cJSON *job, const struct rj_owner *o)
{
  const cJSON *ref, *ctl = NULL;
  cJSON_ArrayForEach(ref, json_get(job, "metadata.ownerReferences"))
    if(json_get_bool(ref, "controller", false))
      ctl = ref;
  const char *uid = json_get_str(ctl, "uid"), *kind = json_get_str(ctl, "kind");
  const char *name = json_get_str(ctl, "name");
  if(ctl && uid && o->uid && !strcmp(uid, o->uid))
    return 1;
  const char *lbl = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(job, "metadata.labels"), o->label));
  bool labelled = lbl && !strcmp(lbl, o->name);
  if(labelled && (!ctl || (kind && name && !strcmp(kind, o->kind) && !strcmp(name, o->name))))
    return 0;
  return -1;
}

/* A claim of this name that a predecessor left (deleted with --cascade=orphan) becomes this
 * owner's, so that it goes with it; its content is the worker's to judge (the work dir's stamp).
 * A claim another object controls is left alone. */
static gw_rc adopt_pvc(const struct rj_owner *o, const char *claim)
{
  cJSON *pvc = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(o->kube, &KUBE_PVCS, o->ns, claim, &pvc, &st);
  kube_status_release(&st);
  if(rc) {
    cJSON_Delete(pvc);
    return rc;
  }
  if(job_owner(pvc, o) == 0) {
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddItemToObject(cJSON_AddObjectToObject(patch, "metadata"), "ownerReferences",
                          owner_refs(o));
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    kube_status_init(&st);
    rc = body ? kube_patch(o->kube, &KUBE_PVCS, o->ns, claim, KUBE_PATCH_MERGE, body, NULL, NULL,
                           &st)
              : GW_ENOMEM;
    kube_status_release(&st);
    free(body);
    if(!rc)
      log_kv(LOG_INFO, "adopted a work volume a deleted predecessor left", "key", o->key, "claim",
             claim, LOG_END);
  }
  cJSON_Delete(pvc);
  return rc;
}

gw_rc rj_pvc_ensure(const struct rj_owner *o, const char *claim, const cJSON *size,
                    const char *dflt, const char *storage_class)
{
  cJSON *pvc = cJSON_CreateObject();
  cJSON_AddStringToObject(pvc, "apiVersion", "v1");
  cJSON_AddStringToObject(pvc, "kind", "PersistentVolumeClaim");
  cJSON_AddItemToObject(pvc, "metadata", metadata(o, NULL, claim, NULL, 0));
  cJSON *spec = cJSON_AddObjectToObject(pvc, "spec");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "accessModes"),
                       cJSON_CreateString("ReadWriteOnce"));
  cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"), "requests");
  if(cJSON_IsString(size))
    cJSON_AddStringToObject(req, "storage", size->valuestring);
  else if(cJSON_IsNumber(size))
    cJSON_AddNumberToObject(req, "storage", size->valuedouble);
  else
    cJSON_AddStringToObject(req, "storage", dflt);
  if(storage_class && *storage_class)
    cJSON_AddStringToObject(spec, "storageClassName", storage_class);
  bool created;
  gw_rc rc = create(o, &KUBE_PVCS, pvc, &created);
  cJSON_Delete(pvc);
  if(!rc && !created)
    rc = adopt_pvc(o, claim);
  return rc;
}

/* ---- reading ---- */

static long long parse_time(const char *s)
{
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  if(!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
    return 0;
  return (long long)timegm(&tm);
}

/* The owner's namespace's Pods matching a label selector, from the API. */
static gw_rc list_pods(const struct rj_owner *o, const char *selector, cJSON **list)
{
  struct kube_list_opts lo = { .label_selector = selector };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(o->kube, &KUBE_PODS, o->ns, &lo, list, &st);
  kube_status_release(&st);
  return rc;
}

/* The newest of the pods seen (by creationTimestamp). */
struct newest {
  const char *job_uid;
  const cJSON *best;
  const char *best_ts;
  cJSON *copy;
};

static void consider(struct newest *n, const cJSON *p)
{
  const char *uid = json_get_str(p, "metadata.labels.controller-uid");
  if(!uid || strcmp(uid, n->job_uid))
    return;
  const char *ts = json_get_str(p, "metadata.creationTimestamp");
  if(!n->best || (ts && strcmp(ts, n->best_ts) > 0)) {
    n->best = p;
    n->best_ts = ts ? ts : "";
  }
}

static void consider_cached(void *ctx, const char *key, const cJSON *p)
{
  (void)key;
  struct newest *n = ctx;
  consider(n, p);
  if(n->best == p) { /* the cache's objects are only valid under its lock: keep a copy */
    cJSON_Delete(n->copy);
    n->copy = cJSON_Duplicate(p, 1);
    n->best = n->copy;
    const char *ts = json_get_str(n->copy, "metadata.creationTimestamp");
    n->best_ts = ts ? ts : "";
  }
}

/* The newest Pod of the Job, a copy, or NULL; from the cache unless fresh. */
static cJSON *newest_pod(const struct rj_owner *o, const char *job_uid, bool fresh)
{
  struct newest n = { job_uid, NULL, "", NULL };
  if(o->pods && !fresh) {
    informer_each(o->pods, o->ns, consider_cached, &n);
    return n.copy;
  }
  char sel[160];
  snprintf(sel, sizeof(sel), "controller-uid=%s", job_uid);
  cJSON *list = NULL;
  gw_rc rc = list_pods(o, sel, &list);
  const cJSON *p, *items = rc ? NULL : json_get(list, "items");
  cJSON_ArrayForEach(p, items)
    consider(&n, p);
  cJSON *out = n.best ? cJSON_Duplicate(n.best, 1) : NULL;
  cJSON_Delete(list);
  return out;
}

/* The Job from the cache, or the API. */
static gw_rc read_job(const struct rj_owner *o, const char *name, cJSON **job)
{
  if(o->jobs) {
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", o->ns, name);
    *job = informer_get(o->jobs, key);
    return *job ? GW_OK : GW_ENOTFOUND;
  }
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(o->kube, &KUBE_JOBS, o->ns, name, job, &st);
  kube_status_release(&st);
  return rc;
}

/* What keeps a Pod from starting, kubelet-style: "Reason: message". */
static void pod_waiting(const cJSON *pod, char *buf, size_t len)
{
  buf[0] = '\0';
  const cJSON *sched = json_condition(pod, "PodScheduled");
  const char *ss = json_get_str(sched, "status");
  if(ss && !strcmp(ss, "False")) {
    const char *r = json_get_str(sched, "reason"), *msg = json_get_str(sched, "message");
    snprintf(buf, len, "%s: %s", r ? r : "Unschedulable", msg ? msg : "");
    return;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "status.containerStatuses"))
  {
    const char *r = json_get_str(c, "state.waiting.reason");
    const char *msg = json_get_str(c, "state.waiting.message");
    if(r && strcmp(r, "ContainerCreating") && strcmp(r, "PodInitializing")) {
      if(msg && *msg)
        snprintf(buf, len, "%s: %s", r, msg);
      else
        snprintf(buf, len, "%s", r);
      return;
    }
  }
}

static void pod_terminated(const cJSON *pod, struct job_view *v)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "status.containerStatuses"))
  {
    const char *st = json_get_str(c, "state.running.startedAt");
    if(!st)
      st = json_get_str(c, "state.terminated.startedAt");
    if(st)
      v->pod_started = parse_time(st);
    const cJSON *code = json_get(c, "state.terminated.exitCode");
    if(cJSON_IsNumber(code))
      v->exit_code = (int)code->valuedouble;
    const char *msg = json_get_str(c, "state.terminated.message");
    if(msg && *msg && !v->report) {
      cJSON *r = cJSON_Parse(msg);
      if(cJSON_IsObject(r))
        v->report = r;
      else
        cJSON_Delete(r);
    }
  }
}

/* Whether the Pod's containers have all terminated (its report, if any, is there). */
static bool pod_ended(const cJSON *pod)
{
  const cJSON *c, *list = json_get(pod, "status.containerStatuses");
  if(!cJSON_GetArraySize(list))
    return false;
  cJSON_ArrayForEach(c, list)
    if(!json_get(c, "state.terminated"))
      return false;
  return true;
}

gw_rc rj_get(const struct rj_owner *o, const char *name, struct job_view *v)
{
  memset(v, 0, sizeof(*v));
  v->exit_code = -1;
  snprintf(v->name, sizeof(v->name), "%s", name);
  cJSON *job = NULL;
  gw_rc rc = read_job(o, v->name, &job);
  if(rc == GW_ENOTFOUND) {
    v->state = JOB_ABSENT;
    return GW_OK;
  }
  if(rc) {
    cJSON_Delete(job);
    return rc;
  }
  char uid[64];
  const char *u = json_get_str(job, "metadata.uid");
  snprintf(uid, sizeof(uid), "%s", u ? u : "");
  int own = job_owner(job, o);
  if(own < 0) {
    log_kv(LOG_WARN, "a Job of this name belongs to another object: it is not used", "key",
           o->key, "job", v->name, LOG_END);
    cJSON_Delete(job);
    return GW_ECONFLICT;
  }
  if(own == 0 && !json_get(job, "metadata.deletionTimestamp")) {
    /* never read a predecessor's verdict as this owner's: it goes, and this owner's Job is
     * made once it is gone */
    log_kv(LOG_WARN, "removing a Job a deleted predecessor of the same name left", "key", o->key,
           "job", v->name, LOG_END);
    cJSON_Delete(job);
    rc = rj_delete(o, v->name);
    v->state = JOB_DELETING;
    return rc == GW_ENOTFOUND ? GW_OK : rc;
  }
  if(json_get(job, "metadata.deletionTimestamp")) {
    v->state = JOB_DELETING;
  } else if(json_condition_true(job, "Complete")) {
    v->state = JOB_SUCCEEDED;
  } else if(json_condition_true(job, "Failed")) {
    const cJSON *fc = json_condition(job, "Failed");
    v->state = JOB_FAILED;
    const char *r = json_get_str(fc, "reason"), *msg = json_get_str(fc, "message");
    snprintf(v->failure, sizeof(v->failure), "%s: %s", r ? r : "Failed", msg ? msg : "");
  } else {
    v->state = JOB_PENDING;
  }
  const cJSON *nf = json_get(job, "status.failed"), *ns = json_get(job, "status.succeeded");
  v->pods_ended = (cJSON_IsNumber(nf) ? (int)nf->valuedouble : 0) +
                  (cJSON_IsNumber(ns) ? (int)ns->valuedouble : 0);
  v->suspended = json_get_bool(job, "spec.suspend", false);
  if(v->state == JOB_SUCCEEDED || v->state == JOB_FAILED) {
    const char *ct = json_get_str(job, "status.completionTime");
    if(!ct)
      ct = json_get_str(json_condition(job, v->state == JOB_FAILED ? "Failed" : "Complete"),
                        "lastTransitionTime");
    v->finished = ct ? parse_time(ct) : 0;
  }
  cJSON_Delete(job);
  cJSON *pod = *uid ? newest_pod(o, uid, false) : NULL;
  bool finished = v->state == JOB_SUCCEEDED || v->state == JOB_FAILED;
  if(finished && o->pods && !pod_ended(pod)) {
    /* a fresh read: the verdict of a finished Job is its Pod's report, and the Pod cache may
     * not have the Pod's last update yet (see runjob.h) */
    cJSON_Delete(pod);
    pod = *uid ? newest_pod(o, uid, true) : NULL;
  }
  if(pod) {
    snprintf(v->pod, sizeof(v->pod), "%s", json_get_str(pod, "metadata.name"));
    const char *phase = json_get_str(pod, "status.phase");
    if(v->state == JOB_PENDING && phase && !strcmp(phase, "Running"))
      v->state = JOB_RUNNING;
    if(v->state == JOB_PENDING)
      pod_waiting(pod, v->waiting, sizeof(v->waiting));
    pod_terminated(pod, v);
    cJSON_Delete(pod);
  }
  return GW_OK;
}

void job_view_release(struct job_view *v)
{
  cJSON_Delete(v->report);
  v->report = NULL;
}

const char *job_report_result(const struct job_view *v)
{
  return v->report ? json_get_str(v->report, "result") : NULL;
}

void job_report_message(const struct job_view *v, char *buf, size_t len)
{
  const char *summary = v->report ? json_get_str(v->report, "summary") : NULL;
  const char *fid = v->report ? json_get_str(v->report, "failed.id") : NULL;
  const char *fmsg = v->report ? json_get_str(v->report, "failed.message") : NULL;
  const char *frec = v->report ? json_get_str(v->report, "failed.recovery") : NULL;
  if(fid && fmsg)
    snprintf(buf, len, "%s: %s%s%s", fid, fmsg, frec && *frec ? "; " : "", frec ? frec : "");
  else if(summary)
    snprintf(buf, len, "%s", summary);
  else if(*v->failure)
    snprintf(buf, len, "%s (exit code %d, no report)", v->failure, v->exit_code);
  else
    snprintf(buf, len, "exit code %d, no report", v->exit_code);
}

/* ---- deleting, listing, logs ---- */

static gw_rc delete(const struct rj_owner *o, const struct kube_gvr *gvr, const char *name,
                    enum kube_propagation p)
{
  struct kube_delete_opts d = { .propagation = p, .grace_period_s = -1 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(o->kube, gvr, o->ns, name, &d, NULL, &st);
  kube_status_release(&st);
  return rc == GW_ENOTFOUND ? GW_OK : rc;
}

gw_rc rj_suspend(const struct rj_owner *o, const char *name)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_patch(o->kube, &KUBE_JOBS, o->ns, name, KUBE_PATCH_MERGE,
                        "{\"spec\":{\"suspend\":true}}", NULL, NULL, &st);
  if(rc == GW_ENOTFOUND)
    rc = GW_OK;
  if(rc)
    log_kv(LOG_WARN, "cannot suspend a runner Job", "key", o->key, "job", name, "error",
           gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  return rc;
}

gw_rc rj_delete(const struct rj_owner *o, const char *name)
{
  return delete(o, &KUBE_JOBS, name, KUBE_PROPAGATE_BACKGROUND);
}

gw_rc rj_pod_delete(const struct rj_owner *o, const char *pod)
{
  return delete(o, &KUBE_PODS, pod, KUBE_PROPAGATE_DEFAULT);
}

gw_rc rj_pods_running(const struct rj_owner *o, const char *step, int *running)
{
  /* a fresh read: it decides whether a new worker or the cleanup may start while an old Pod
   * could still write the work dir or hold the slot; a cache a moment behind must not say yes */
  *running = 0;
  char sel[200];
  snprintf(sel, sizeof(sel), "%s=%s,%s=%s", o->label, o->name, RJ_STEP_LABEL, step);
  cJSON *list = NULL;
  gw_rc rc = list_pods(o, sel, &list);
  const cJSON *p, *items = rc ? NULL : json_get(list, "items");
  cJSON_ArrayForEach(p, items)
  {
    const char *phase = json_get_str(p, "status.phase");
    if(!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed")))
      (*running)++;
  }
  cJSON_Delete(list);
  return rc;
}

gw_rc rj_log_tail(const struct rj_owner *o, const char *pod, long lines, char **out)
{
  *out = NULL;
  if(!pod || !*pod)
    return GW_ENOTFOUND;
  char *raw = NULL;
  size_t len = 0;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_pod_log(o->kube, o->ns, pod, NULL, lines, &raw, &len, &st);
  kube_status_release(&st);
  if(!rc) {
    *out = redact(raw, NULL, 0);
    if(!*out)
      rc = GW_ENOMEM;
  }
  if(raw) {
    memset(raw, 0, len); /* it may hold a password a program printed */
    free(raw);
  }
  return rc;
}

bool rj_refusal_due(const struct job_view *v)
{
  return v->state == JOB_PENDING && !*v->pod && !*v->waiting && !v->suspended;
}

gw_rc rj_watch_refusals(struct mgr *m)
{
  struct informer *inf = NULL;
  return mgr_informer_selected(m, &KUBE_EVENTS, RJ_REFUSAL_SELECTOR, &inf);
}

/* The newest FailedCreate Event of a Job seen so far. */
struct refusal {
  const char *job;
  char *buf;
  size_t len;
  char newest[40];
};

static void consider_refusal(void *ctx, const char *key, const cJSON *ev)
{
  (void)key;
  struct refusal *r = ctx;
  const char *kind = json_get_str(ev, "involvedObject.kind");
  const char *name = json_get_str(ev, "involvedObject.name");
  const char *reason = json_get_str(ev, "reason");
  const char *ts = json_get_str(ev, "lastTimestamp");
  if(!ts)
    ts = json_get_str(ev, "eventTime");
  if(!kind || strcmp(kind, "Job") || !name || strcmp(name, r->job) || !reason ||
     strcmp(reason, "FailedCreate"))
    return;
  if(ts && strcmp(ts, r->newest) < 0)
    return;
  if(ts)
    snprintf(r->newest, sizeof(r->newest), "%s", ts);
  const char *msg = json_get_str(ev, "message");
  snprintf(r->buf, r->len, "%s", msg ? msg : "");
}

gw_rc rj_job_refusal(struct kube_client *k, struct informer *refusals, const char *ns,
                     const char *job, char *buf, size_t len)
{
  buf[0] = '\0';
  struct refusal r = { job, buf, len, "" };
  if(refusals) {
    informer_each(refusals, ns, consider_refusal, &r);
    return GW_OK;
  }
  char sel[160];
  snprintf(sel, sizeof(sel), "involvedObject.name=%s", job);
  struct kube_list_opts lo = { .field_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(k, &KUBE_EVENTS, ns, &lo, &list, &st);
  kube_status_release(&st);
  const cJSON *items = rc ? NULL : json_get(list, "items"), *ev;
  cJSON_ArrayForEach(ev, items)
    consider_refusal(&r, NULL, ev);
  cJSON_Delete(list);
  return rc;
}
