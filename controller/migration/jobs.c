/* Runner Jobs and the work-dir PVC: rendering, idempotent creation, the state of a step's Job
 * and its Pod, the termination report, the redacted log tail. See mig.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../events.h"
#include "json.h"
#include "log.h"
#include "mig.h"
#include "podtemplate.h"
#include "redact.h"

void job_name(const struct mig *m, const char *step, int attempt, char *buf, size_t len)
{
  /* The handover is "the <name>-reown Job" (seed 000); its rare retries are numbered. */
  if(!strcmp(step, "reown") && attempt <= 1)
    snprintf(buf, len, "%s-%s", m->name, step);
  else
    snprintf(buf, len, "%s-%s-%d", m->name, step, attempt);
}

char *mig_scrub(const char *s, size_t max)
{
  return redact_cut(s, max, NULL, 0, NULL);
}

/* ---- rendering ---- */

static cJSON *labels(const struct mig *m, const char *step, int attempt, bool pod)
{
  cJSON *l = cJSON_CreateObject();
  char n[16];
  snprintf(n, sizeof(n), "%d", attempt);
  cJSON_AddStringToObject(l, "app.kubernetes.io/managed-by", "godwit");
  cJSON_AddStringToObject(l, MIG_LABEL, m->name);
  if(step) {
    cJSON_AddStringToObject(l, MIG_STEP_LABEL, step);
    cJSON_AddStringToObject(l, MIG_ATTEMPT_LABEL, n);
  }
  if(pod)
    cJSON_AddStringToObject(l, PODTEMPLATE_RUNNER_LABEL, "migration");
  return l;
}

static cJSON *owner_refs(const struct mig *m)
{
  cJSON *a = cJSON_CreateArray();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "pgcopydb.io/v1");
  cJSON_AddStringToObject(o, "kind", "Migration");
  cJSON_AddStringToObject(o, "name", m->name);
  cJSON_AddStringToObject(o, "uid", m->uid ? m->uid : "");
  cJSON_AddTrueToObject(o, "controller");
  cJSON_AddTrueToObject(o, "blockOwnerDeletion");
  cJSON_AddItemToArray(a, o);
  return a;
}

static cJSON *metadata(const struct mig *m, const char *name, const char *step, int attempt)
{
  cJSON *md = cJSON_CreateObject();
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", m->ns);
  cJSON_AddItemToObject(md, "labels", labels(m, step, attempt, false));
  cJSON_AddItemToObject(md, "ownerReferences", owner_refs(m));
  return md;
}

static void env_secret(cJSON *env, const char *var, const cJSON *ref)
{
  const char *name = json_get_str(ref, "name");
  const char *key = json_get_str(ref, "key");
  if(!name)
    return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", var);
  cJSON *k = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "secretKeyRef");
  cJSON_AddStringToObject(k, "name", name);
  cJSON_AddStringToObject(k, "key", key && *key ? key : "uri");
  cJSON_AddItemToArray(env, e);
}

static void env_value(cJSON *env, const char *var, const char *value)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", var);
  cJSON_AddStringToObject(e, "value", value);
  cJSON_AddItemToArray(env, e);
}

static cJSON *container(const struct mig *m, const struct job_spec *s)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "name", s->container ? s->container : "runner");
  cJSON_AddStringToObject(c, "image", s->image);
  cJSON *cmd = cJSON_AddArrayToObject(c, "command");
  for(size_t i = 0; s->command && s->command[i]; i++)
    cJSON_AddItemToArray(cmd, cJSON_CreateString(s->command[i]));
  cJSON_AddItemToObject(c, "args", s->args ? s->args : cJSON_CreateArray());
  cJSON *env = cJSON_AddArrayToObject(c, "env");
  const cJSON *spec = json_get(m->obj, "spec");
  if(s->source)
    env_secret(env, s->worker ? "PGCOPYDB_SOURCE_PGURI" : "GODWIT_SOURCE_URI",
               json_get(spec, "source.connectionSecretRef"));
  if(s->target)
    env_secret(env, s->worker ? "PGCOPYDB_TARGET_PGURI" : "GODWIT_TARGET_URI",
               json_get(spec, "target.connectionSecretRef"));
  if(s->superuser)
    env_secret(env, "GODWIT_SUPERUSER_URI", json_get(spec, "superuserSecretRef"));
  if(s->worker)
    env_value(env, "PGAPPNAME", m->appname);
  for(size_t i = 0; i < sizeof(s->env) / sizeof(s->env[0]) && s->env[i][0]; i++)
    env_value(env, s->env[i][0], s->env[i][1] ? s->env[i][1] : "");
  if(s->workdir) {
    cJSON *vm = cJSON_CreateObject();
    cJSON_AddStringToObject(vm, "name", "work");
    cJSON_AddStringToObject(vm, "mountPath", MIG_WORK_MOUNT);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "volumeMounts"), vm);
  }
  if(s->resources && cJSON_IsObject(s->resources))
    cJSON_AddItemToObject(c, "resources", cJSON_Duplicate(s->resources, 1));
  /* the restricted Pod Security Standard */
  cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
  cJSON_AddFalseToObject(sc, "allowPrivilegeEscalation");
  cJSON *drop = cJSON_AddArrayToObject(cJSON_AddObjectToObject(sc, "capabilities"), "drop");
  cJSON_AddItemToArray(drop, cJSON_CreateString("ALL"));
  return c;
}

cJSON *mig_job_render(const struct mig *m, const struct job_spec *s)
{
  char name[96], claim[96];
  job_name(m, s->step, s->attempt, name, sizeof(name));
  snprintf(claim, sizeof(claim), "%s-workdir", m->name);
  cJSON *job = cJSON_CreateObject();
  cJSON_AddStringToObject(job, "apiVersion", "batch/v1");
  cJSON_AddStringToObject(job, "kind", "Job");
  cJSON_AddItemToObject(job, "metadata", metadata(m, name, s->step, s->attempt));
  cJSON *spec = cJSON_AddObjectToObject(job, "spec");
  cJSON_AddNumberToObject(spec, "backoffLimit", 0);
  cJSON *tpl = cJSON_AddObjectToObject(spec, "template");
  cJSON *tmd = cJSON_AddObjectToObject(tpl, "metadata");
  cJSON_AddItemToObject(tmd, "labels", labels(m, s->step, s->attempt, true));
  cJSON *annotations = cJSON_AddObjectToObject(tmd, "annotations");
  cJSON *ps = cJSON_AddObjectToObject(tpl, "spec");
  cJSON_AddStringToObject(ps, "restartPolicy", "Never");
  /* Non-root (the image's user 65532), and the work-dir volume writable by its group. */
  cJSON *psc = cJSON_AddObjectToObject(ps, "securityContext");
  cJSON_AddTrueToObject(psc, "runAsNonRoot");
  cJSON_AddNumberToObject(psc, "runAsUser", 65532);
  cJSON_AddNumberToObject(psc, "runAsGroup", 65532);
  cJSON_AddNumberToObject(psc, "fsGroup", 65532);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(psc, "seccompProfile"), "type",
                          "RuntimeDefault");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "containers"), container(m, s));
  if(s->workdir) {
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", "work");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "persistentVolumeClaim"), "claimName",
                            claim);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "volumes"), v);
  }
  char digest[80];
  if(!annotations || podtemplate_digest(tpl, digest, sizeof(digest))) {
    cJSON_Delete(job);
    return NULL;
  }
  cJSON_AddStringToObject(annotations, PODTEMPLATE_DIGEST_ANNOTATION, digest);
  return job;
}

gw_rc mig_job_create(struct mig *m, const struct job_spec *s, bool *created)
{
  *created = false;
  cJSON *job = mig_job_render(m, s);
  if(!job)
    return GW_ENOMEM;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(m->rc->kube, &KUBE_JOBS, m->ns, job, false, NULL, &st);
  if(!rc)
    *created = true;
  else if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists"))
    rc = GW_OK; /* a restart, or a stale cache: it is there */
  else
    log_kv(LOG_WARN, "cannot create a runner Job", "key", m->rc->key, "job",
           json_get_str(job, "metadata.name"), "error", gw_strerror(rc), "reason", st.reason,
           LOG_END);
  kube_status_release(&st);
  cJSON_Delete(job);
  return rc;
}

gw_rc mig_pvc_ensure(struct mig *m)
{
  char claim[96];
  snprintf(claim, sizeof(claim), "%s-workdir", m->name);
  cJSON *pvc = cJSON_CreateObject();
  cJSON_AddStringToObject(pvc, "apiVersion", "v1");
  cJSON_AddStringToObject(pvc, "kind", "PersistentVolumeClaim");
  cJSON *md = metadata(m, claim, NULL, 0);
  cJSON_AddItemToObject(pvc, "metadata", md);
  cJSON *spec = cJSON_AddObjectToObject(pvc, "spec");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "accessModes"),
                       cJSON_CreateString("ReadWriteOnce"));
  const cJSON *size = json_get(m->obj, "spec.worker.workDir.size");
  cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"), "requests");
  if(cJSON_IsString(size))
    cJSON_AddStringToObject(req, "storage", size->valuestring);
  else if(cJSON_IsNumber(size))
    cJSON_AddNumberToObject(req, "storage", size->valuedouble);
  else
    cJSON_AddStringToObject(req, "storage", "10Gi");
  const char *sc = json_get_str(m->obj, "spec.worker.workDir.storageClassName");
  if(sc && *sc)
    cJSON_AddStringToObject(spec, "storageClassName", sc);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(m->rc->kube, &KUBE_PVCS, m->ns, pvc, false, NULL, &st);
  if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists"))
    rc = GW_OK;
  kube_status_release(&st);
  cJSON_Delete(pvc);
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

/* The newest Pod of the Job (by creationTimestamp), a copy, or NULL. By the Job's uid: a Job
 * re-created under the same name (after a suspension) must not see the old one's Pods. */
static cJSON *newest_pod(struct mig *m, const char *job_uid)
{
  char sel[160];
  snprintf(sel, sizeof(sel), "controller-uid=%s", job_uid);
  struct kube_list_opts lo = { .label_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(m->rc->kube, &KUBE_PODS, m->ns, &lo, &list, &st);
  kube_status_release(&st);
  if(rc) {
    cJSON_Delete(list);
    return NULL;
  }
  const cJSON *p, *best = NULL;
  const char *best_ts = "";
  cJSON_ArrayForEach(p, json_get(list, "items"))
  {
    const char *ts = json_get_str(p, "metadata.creationTimestamp");
    if(!best || (ts && strcmp(ts, best_ts) > 0)) {
      best = p;
      best_ts = ts ? ts : "";
    }
  }
  cJSON *out = best ? cJSON_Duplicate(best, 1) : NULL;
  cJSON_Delete(list);
  return out;
}

/* What keeps a Pod from starting, kubelet-style: "Reason: message". */
static void pod_waiting(const cJSON *pod, char *buf, size_t len)
{
  buf[0] = '\0';
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "status.conditions"))
  {
    const char *t = json_get_str(c, "type"), *s = json_get_str(c, "status");
    if(t && s && !strcmp(t, "PodScheduled") && !strcmp(s, "False")) {
      const char *r = json_get_str(c, "reason"), *msg = json_get_str(c, "message");
      snprintf(buf, len, "%s: %s", r ? r : "Unschedulable", msg ? msg : "");
      return;
    }
  }
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

gw_rc mig_job_get(struct mig *m, const char *step, int attempt, struct job_view *v)
{
  memset(v, 0, sizeof(*v));
  v->exit_code = -1;
  job_name(m, step, attempt, v->name, sizeof(v->name));
  cJSON *job = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(m->rc->kube, &KUBE_JOBS, m->ns, v->name, &job, &st);
  kube_status_release(&st);
  if(rc == GW_ENOTFOUND) {
    v->state = JOB_ABSENT;
    return GW_OK;
  }
  if(rc) {
    cJSON_Delete(job);
    return rc;
  }
  const cJSON *fc = NULL;
  char uid[64];
  snprintf(uid, sizeof(uid), "%s", json_get_str(job, "metadata.uid") ? json_get_str(job, "metadata.uid") : "");
  if(json_get(job, "metadata.deletionTimestamp"))
    v->state = JOB_DELETING;
  else if(json_condition_true(job, "Complete"))
    v->state = JOB_SUCCEEDED;
  else if(json_condition_true(job, "Failed")) {
    fc = json_condition(job, "Failed");
    v->state = JOB_FAILED;
    const char *r = json_get_str(fc, "reason"), *msg = json_get_str(fc, "message");
    snprintf(v->failure, sizeof(v->failure), "%s: %s", r ? r : "Failed", msg ? msg : "");
  } else
    v->state = JOB_PENDING;
  cJSON_Delete(job);
  cJSON *pod = *uid ? newest_pod(m, uid) : NULL;
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

gw_rc mig_job_delete(struct mig *m, const char *step, int attempt)
{
  char name[96];
  job_name(m, step, attempt, name, sizeof(name));
  struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_BACKGROUND, .grace_period_s = -1 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(m->rc->kube, &KUBE_JOBS, m->ns, name, &o, NULL, &st);
  kube_status_release(&st);
  return rc == GW_ENOTFOUND ? GW_OK : rc;
}

gw_rc mig_pod_delete(struct mig *m, const char *pod)
{
  struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_DEFAULT, .grace_period_s = -1 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(m->rc->kube, &KUBE_PODS, m->ns, pod, &o, NULL, &st);
  kube_status_release(&st);
  return rc == GW_ENOTFOUND ? GW_OK : rc;
}

gw_rc mig_log_tail(struct mig *m, const char *pod, long lines, char **out)
{
  *out = NULL;
  if(!pod || !*pod)
    return GW_ENOTFOUND;
  char *raw = NULL;
  size_t len = 0;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_pod_log(m->rc->kube, m->ns, pod, NULL, lines, &raw, &len, &st);
  kube_status_release(&st);
  if(!rc) {
    *out = redact(raw, NULL, 0);
    if(!*out)
      rc = GW_ENOMEM;
  }
  if(raw) {
    memset(raw, 0, len); /* it may hold a password pgcopydb printed */
    free(raw);
  }
  return rc;
}

/* ---- a runner step driven to a verdict ---- */

void step_run_release(struct step_run *r)
{
  job_view_release(&r->v);
}

static void report_message(const struct job_view *v, char *buf, size_t len)
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

enum step_outcome mig_step_drive(struct mig *m, struct step_run *r, step_render_fn render,
                                 void *ctx)
{
  r->attempt = mig_step_attempt(m, r->step);
  r->created = false;
  r->retried = false;
  r->message[0] = '\0';
  memset(&r->v, 0, sizeof(r->v));
  if(r->attempt <= 0) {
    /* decided first, then created: a restart between the two creates it */
    mig_step_set(m, r->step, 1, "Running", NULL);
    r->attempt = 1;
    mig_requeue(m, 1);
    snprintf(r->message, sizeof(r->message), "starting %s-%s-1", m->name, r->step);
    return STEP_WAIT;
  }
  gw_rc rc = mig_job_get(m, r->step, r->attempt, &r->v);
  if(rc) {
    snprintf(r->message, sizeof(r->message), "cannot read Job %s: %s", r->v.name,
             gw_strerror(rc));
    return STEP_ERROR;
  }
  switch(r->v.state) {
  case JOB_ABSENT: {
    struct job_spec s;
    memset(&s, 0, sizeof(s));
    render(m, r->attempt, &s, ctx);
    rc = mig_job_create(m, &s, &r->created);
    if(rc) {
      snprintf(r->message, sizeof(r->message), "cannot create Job %s: %s", r->v.name,
               gw_strerror(rc));
      return STEP_ERROR;
    }
    if(r->created && r->started_reason)
      mig_event(m, EV_NORMAL, r->started_reason, r->started_fmt, r->attempt);
    snprintf(r->message, sizeof(r->message), "Job %s created", r->v.name);
    mig_requeue(m, m->o->poll_interval_ms);
    return STEP_WAIT;
  }
  case JOB_DELETING:
    snprintf(r->message, sizeof(r->message), "Job %s is being deleted", r->v.name);
    mig_requeue(m, 1000);
    return STEP_WAIT;
  case JOB_PENDING:
  case JOB_RUNNING:
    if(*r->v.waiting)
      snprintf(r->message, sizeof(r->message), "Job %s: pod cannot start: %.900s", r->v.name,
               r->v.waiting);
    else
      snprintf(r->message, sizeof(r->message), "Job %s is running", r->v.name);
    mig_requeue(m, m->o->poll_interval_ms);
    return STEP_WAIT;
  case JOB_SUCCEEDED:
  case JOB_FAILED:
    break;
  }
  const char *result = job_report_result(&r->v);
  report_message(&r->v, r->message, sizeof(r->message));
  if(r->v.state == JOB_SUCCEEDED && (!result || !strcmp(result, "Passed")))
    return STEP_PASSED;
  if(result && !strcmp(result, "Failed"))
    return STEP_FAILED;
  /* transient, or no verdict at all: another attempt, within the budget */
  if(r->attempt >= r->max_attempts) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%d attempts without a verdict; last: %.900s", r->attempt,
             r->message);
    snprintf(r->message, sizeof(r->message), "%.1000s", tmp);
    return STEP_FAILED;
  }
  mig_step_set(m, r->step, r->attempt + 1, "Running", NULL);
  mig_requeue(m, 1000L << (r->attempt < 5 ? r->attempt : 5));
  r->retried = true;
  return STEP_WAIT;
}

gw_rc mig_worker_pods_running(struct mig *m, int *running)
{
  *running = 0;
  char sel[200];
  snprintf(sel, sizeof(sel), "%s=%s,%s=worker", MIG_LABEL, m->name, MIG_STEP_LABEL);
  struct kube_list_opts lo = { .label_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(m->rc->kube, &KUBE_PODS, m->ns, &lo, &list, &st);
  kube_status_release(&st);
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

cJSON *mig_runner_spec(const struct mig *m, struct job_spec *s, const char *step, int attempt)
{
  static const char *const runner_command[] = { "godwit-runner", NULL };
  s->step = step;
  s->attempt = attempt;
  s->image = m->o->runner_image;
  s->container = "runner";
  s->command = runner_command;
  s->args = cJSON_CreateArray();
  mig_arg(s->args, step);
  return s->args;
}

void mig_arg(cJSON *args, const char *value)
{
  cJSON_AddItemToArray(args, cJSON_CreateString(value ? value : ""));
}
