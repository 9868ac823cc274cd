/* pods.c: the kubelet's Pod workers. Each pass walks the Pod snapshot: a Pod for this node gets a
 * struct pod_rt and moves through scheduling, volume setup, init containers one by one, then
 * its containers; a Pod with a deletionTimestamp, or gone from the API, is stopped (SIGTERM,
 * SIGKILL after the grace period), reported terminal, deleted for good (grace 0, as the kubelet
 * does) and cleaned up. The status is written only when it changes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container.h"
#include "json.h"
#include "log.h"
#include "nodeagent/restore.h"

struct jr_kubelet {
  struct pod_rt *pods;
};

gw_rc kubelet_init(struct jr *jr)
{
  jr->kubelet = calloc(1, sizeof(*jr->kubelet));
  return jr->kubelet ? GW_OK : GW_ENOMEM;
}

static struct pod_rt *find(struct jr_kubelet *kl, const char *uid)
{
  for(struct pod_rt *p = kl->pods; p; p = p->next)
    if(!strcmp(p->uid, uid))
      return p;
  return NULL;
}

static void rt_free(struct jr *jr, struct pod_rt *p)
{
  podnet_sandbox_destroy(&jr->podnet, &p->sb);
  for(size_t i = 0; i < p->nctr; i++) {
    free(p->ctr[i].wait_msg);
    ctr_term_release(&p->ctr[i].term);
    ctr_term_release(&p->ctr[i].last);
  }
  free(p->ctr);
  volumes_release(&p->vols);
  cJSON_Delete(p->pod);
  cJSON_Delete(p->posted);
  free(p->unschedulable);
  free(p->message);
  free(p);
}

static bool add_ctrs(struct pod_rt *p, const cJSON *list, bool init)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, list)
  {
    struct ctr_rt *r = &p->ctr[p->nctr++];
    jr_fmt(r->name, sizeof(r->name), "%s", json_get_str(c, "name") ? json_get_str(c, "name") : "");
    jr_fmt(r->image, sizeof(r->image), "%s",
             json_get_str(c, "image") ? json_get_str(c, "image") : "");
    r->init = init;
    r->state = CS_WAITING;
    jr_fmt(r->wait_reason, sizeof(r->wait_reason), "ContainerCreating");
  }
  return true;
}

static struct pod_rt *rt_new(struct jr *jr, const cJSON *pod)
{
  struct pod_rt *p = calloc(1, sizeof(*p));
  if(!p)
    return NULL;
  jr_fmt(p->uid, sizeof(p->uid), "%s", json_get_str(pod, "metadata.uid"));
  jr_fmt(p->ns, sizeof(p->ns), "%s", json_get_str(pod, "metadata.namespace"));
  jr_fmt(p->name, sizeof(p->name), "%s", json_get_str(pod, "metadata.name"));
  jr_fmt(p->pod_dir, sizeof(p->pod_dir), "%s/pods/%s", jr->dir, p->uid);
  const cJSON *init = json_get(pod, "spec.initContainers");
  const cJSON *ctrs = json_get(pod, "spec.containers");
  size_t n = (size_t)cJSON_GetArraySize(init) + (size_t)cJSON_GetArraySize(ctrs);
  p->ctr = calloc(n ? n : 1, sizeof(*p->ctr));
  if(!p->ctr) {
    free(p);
    return NULL;
  }
  add_ctrs(p, init, true);
  p->ninit = p->nctr;
  add_ctrs(p, ctrs, false);
  const char *node = json_get_str(pod, "spec.nodeName");
  p->stage = node && *node ? PS_SETUP : PS_SCHEDULING;
  p->scheduled = p->stage == PS_SETUP;
  jr_fmt(p->phase, sizeof(p->phase), "Pending");
  return p;
}

static long grace_s(const struct pod_rt *p)
{
  long g = jr_json_long(p->pod, "metadata.deletionGracePeriodSeconds", -1);
  if(g < 0)
    g = jr_json_long(p->pod, "spec.terminationGracePeriodSeconds", 30);
  return g;
}

static void post_status(struct jr *jr, struct pod_rt *p)
{
  if(p->stage == PS_SCHEDULING && !p->unschedulable)
    return; /* nothing to say before the scheduler decides */
  cJSON *st = podstatus_build(jr, p);
  if(!st)
    return;
  if(p->posted && json_equal(st, p->posted)) {
    cJSON_Delete(st);
    return;
  }
  cJSON *patch = cJSON_CreateObject();
  cJSON_AddItemReferenceToObject(patch, "status", st);
  char *body = cJSON_PrintUnformatted(patch);
  cJSON_Delete(patch);
  struct kube_status ks;
  kube_status_init(&ks);
  cJSON *out = NULL;
  gw_rc rc = body ? kube_patch(jr->k, &KUBE_PODS, p->ns, p->name, KUBE_PATCH_MERGE, body,
                               "status", &out, &ks)
                  : GW_ENOMEM;
  cJSON_free(body);
  if(out)
    jr_cache_write_through(&jr->pods, out);
  cJSON_Delete(out);
  if(rc && rc != GW_ENOTFOUND) {
    log_kv(LOG_WARN, "pod status not written", "pod", p->name, "namespace", p->ns, "error",
           ks.message[0] ? ks.message : gw_strerror(rc), LOG_END);
    cJSON_Delete(st);
    p->retry_ms = jr_mono_ms() + 500;
    jr_wake_at(jr, p->retry_ms);
  } else {
    cJSON_Delete(p->posted);
    p->posted = st;
    jr_fmt(p->phase, sizeof(p->phase), "%s", podstatus_phase(p));
  }
  kube_status_release(&ks);
}

static bool any_running(const struct pod_rt *p)
{
  for(size_t i = 0; i < p->nctr; i++)
    if(p->ctr[i].state == CS_RUNNING)
      return true;
  return false;
}

/* A Pod being deleted: stop its containers; once they are down, report the terminal status
 * and remove the object (grace 0), as the kubelet ends a graceful deletion. */
static void step_deleting(struct jr *jr, struct pod_rt *p)
{
  for(size_t i = 0; i < p->nctr; i++)
    ctr_stop(jr, p, &p->ctr[i], grace_s(p));
  if(any_running(p) || p->gone || p->final_sent)
    return;
  if(p->stage != PS_SCHEDULING) {
    if(p->stage < PS_DONE) {
      p->stage = PS_RUN; /* so the phase is computed from the containers */
      for(size_t i = 0; i < p->nctr; i++)
        if(p->ctr[i].state == CS_WAITING && p->ctr[i].ever_started) {
          p->ctr[i].state = CS_TERMINATED; /* killed while backing off */
          if(!p->ctr[i].term.set && p->ctr[i].last.set) {
            p->ctr[i].term = p->ctr[i].last;
            p->ctr[i].term.message = p->ctr[i].last.message ? strdup(p->ctr[i].last.message)
                                                            : NULL;
          }
        }
    }
    post_status(jr, p);
  }
  struct kube_delete_opts o = { .grace_period_s = 0, .precondition_uid = p->uid };
  struct kube_status ks;
  kube_status_init(&ks);
  gw_rc rc = kube_delete(jr->k, &KUBE_PODS, p->ns, p->name, &o, NULL, &ks);
  if(rc && rc != GW_ENOTFOUND && rc != GW_ECONFLICT) {
    log_kv(LOG_WARN, "pod not deleted", "pod", p->name, "error",
           ks.message[0] ? ks.message : gw_strerror(rc), LOG_END);
  } else {
    p->final_sent = true;
  }
  kube_status_release(&ks);
}

static void step_schedule(struct jr *jr, struct pod_rt *p)
{
  char *why = NULL, node[254];
  if(!sched_fits(jr, p->pod, node, sizeof(node), &why)) {
    bool changed = !p->unschedulable || !why || strcmp(p->unschedulable, why);
    free(p->unschedulable);
    p->unschedulable = why ? why : strdup("0/1 nodes are available.");
    if(changed)
      jr_event(jr, p->pod, "Pod", "v1", "Warning", "default-scheduler", "FailedScheduling", "%s",
               p->unschedulable);
    p->retry_ms = jr_mono_ms() + 1000;
    return;
  }
  bool here = !strcmp(node, jr->cfg->node_name);
  gw_rc rc = sched_bind(jr, p->pod, node);
  if(rc == GW_ECONFLICT && !here) {
    p->elsewhere = true; /* bound by an earlier pass whose watch event is still on its way */
    return;
  }
  if(rc) {
    p->retry_ms = jr_mono_ms() + 1000;
    return;
  }
  free(p->unschedulable);
  p->unschedulable = NULL;
  jr_event(jr, p->pod, "Pod", "v1", "Normal", "default-scheduler", "Scheduled",
           "Successfully assigned %s/%s to %s", p->ns, p->name, node);
  if(!here) { /* that node's kubelet runs it */
    p->elsewhere = true;
    return;
  }
  p->scheduled = true;
  p->stage = PS_SETUP;
}

/* The Pod's address in our copy of it, so that the downward API sees it before the status
 * carrying it is written. */
static void note_ip(struct pod_rt *p)
{
  if(!p->sb.n || !p->pod)
    return;
  cJSON *st = cJSON_GetObjectItemCaseSensitive(p->pod, "status");
  if(!cJSON_IsObject(st)) {
    cJSON_DeleteItemFromObjectCaseSensitive(p->pod, "status");
    st = cJSON_AddObjectToObject(p->pod, "status");
  }
  cJSON_DeleteItemFromObjectCaseSensitive(st, "podIP");
  cJSON_AddStringToObject(st, "podIP", p->sb.ip);
}

/* Worker nodes: the Pod's network namespace and address (the kubelet's RunPodSandbox). */
static bool sandbox(struct jr *jr, struct pod_rt *p)
{
  if(jr->podnet.k < 0 || p->sb.n || json_get_bool(p->pod, "spec.hostNetwork", false))
    return true;
  /* A restored Pod keeps the source's address and MAC, and starts shielded (restore.h) */
  const cJSON *ann = json_get(p->pod, "metadata.annotations");
  struct podnet_want want = {
    .ip = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, RESTORE_IP_ANNOTATION)),
    .mac = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, RESTORE_MAC_ANNOTATION)),
  };
  want.shielded = want.ip != NULL;
  char err[1024];
  gw_rc rc = podnet_sandbox_create(&jr->podnet, &want, p->uid, &p->sb, err, sizeof(err));
  if(rc) {
    jr_event(jr, p->pod, "Pod", "v1", "Warning", "kubelet", "FailedCreatePodSandBox",
             "Failed to create pod sandbox: %s", err);
    p->retry_ms = jr_mono_ms() + 2000;
    return false;
  }
  log_kv(LOG_INFO, "pod sandbox created", "pod", p->name, "namespace", p->ns, "ip", p->sb.ip,
         "netns", p->sb.netns, LOG_END);
  note_ip(p);
  return true;
}

static void step_setup(struct jr *jr, struct pod_rt *p)
{
  if(!p->start_time) {
    p->start_time = time(NULL);
    p->start_ms = jr_mono_ms();
  }
  if(!sandbox(jr, p))
    return;
  char err[2048];
  struct kcache kc = { 0 };
  gw_rc rc = jr_mkdirs(p->pod_dir, 0755) ? GW_EIO : GW_OK;
  if(rc)
    jr_fmt(err, sizeof(err), "cannot create %s: %s", p->pod_dir, strerror(errno));
  else
    rc = volumes_setup(jr, &kc, p->pod, p->pod_dir, &p->vols, err, sizeof(err));
  kcache_release(&kc);
  if(rc) {
    jr_event(jr, p->pod, "Pod", "v1", "Warning", "kubelet", "FailedMount", "%s", err);
    p->retry_ms = jr_mono_ms() + 2000;
    return;
  }
  p->vols_ready = true;
  p->stage = PS_RUN;
}

static void deadline_exceeded(struct jr *jr, struct pod_rt *p)
{
  long ads = jr_json_long(p->pod, "spec.activeDeadlineSeconds", -1);
  if(ads < 0 || p->reason[0] || !p->start_ms)
    return;
  int64_t due = p->start_ms + (int64_t)ads * 1000;
  if(jr_mono_ms() < due) {
    jr_wake_at(jr, due);
    return;
  }
  jr_fmt(p->reason, sizeof(p->reason), "DeadlineExceeded");
  free(p->message);
  p->message = strdup("Pod was active on the node longer than the specified deadline");
  jr_event(jr, p->pod, "Pod", "v1", "Normal", "kubelet", "DeadlineExceeded", "%s", p->message);
}

/* One pass over the containers: restarts, then starts, in kubelet order. */
static void step_run(struct jr *jr, struct pod_rt *p)
{
  int64_t now = jr_mono_ms();
  deadline_exceeded(jr, p);
  if(p->reason[0]) { /* DeadlineExceeded: stop everything, restart nothing */
    for(size_t i = 0; i < p->nctr; i++)
      ctr_stop(jr, p, &p->ctr[i], grace_s(p));
    if(!any_running(p))
      p->stage = PS_DONE;
    return;
  }
  const char *rp = json_get_str(p->pod, "spec.restartPolicy");
  bool never = rp && !strcmp(rp, "Never");
  for(size_t i = 0; i < p->ninit; i++) {
    struct ctr_rt *c = &p->ctr[i];
    if(c->state == CS_RUNNING)
      return;
    if(c->state == CS_TERMINATED && !c->term.exit_code)
      continue;
    if(c->state == CS_TERMINATED) { /* a failed init container */
      if(never) {
        p->stage = PS_DONE;
        return;
      }
      ctr_schedule_restart(jr, p, c);
    }
    if(now >= c->restart_at_ms)
      ctr_start(jr, p, c, i);
    else
      jr_wake_at(jr, c->restart_at_ms);
    return;
  }
  bool all_done = true;
  for(size_t i = p->ninit; i < p->nctr; i++) {
    struct ctr_rt *c = &p->ctr[i];
    if(c->state == CS_TERMINATED && ctr_should_restart(p, c))
      ctr_schedule_restart(jr, p, c);
    if(c->state == CS_WAITING) {
      if(now >= c->restart_at_ms)
        ctr_start(jr, p, c, i);
      else
        jr_wake_at(jr, c->restart_at_ms);
    }
    if(c->state == CS_TERMINATED && ctr_should_restart(p, c))
      ctr_schedule_restart(jr, p, c); /* a StartError under OnFailure */
    if(c->state != CS_TERMINATED)
      all_done = false;
  }
  if(all_done)
    p->stage = PS_DONE;
}

static void step(struct jr *jr, struct pod_rt *p)
{
  if(p->deleting) {
    step_deleting(jr, p);
    return;
  }
  if(p->retry_ms && jr_mono_ms() < p->retry_ms) {
    jr_wake_at(jr, p->retry_ms);
    return;
  }
  p->retry_ms = 0;
  if(p->stage == PS_SCHEDULING)
    step_schedule(jr, p);
  if(p->stage == PS_SETUP && !p->retry_ms)
    step_setup(jr, p);
  if(p->stage == PS_RUN)
    step_run(jr, p);
  if(p->stage == PS_RUN || p->stage == PS_DONE) {
    if(any_running(p))
      volumes_refresh(jr, p->pod, &p->vols);
  }
  post_status(jr, p);
  if(p->retry_ms)
    jr_wake_at(jr, p->retry_ms);
}

/* A Pod bound here that claims to run, but has no worker: the job runner restarted and lost
 * its processes. Reported as the kubelet reports containers it can no longer find. */
static void orphan(struct jr *jr, const cJSON *pod)
{
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "phase", "Failed");
  cJSON *cs = cJSON_AddArrayToObject(st, "containerStatuses");
  char now[32];
  jr_rfc3339(now, sizeof(now), time(NULL));
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
  {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", json_get_str(c, "name"));
    cJSON_AddStringToObject(s, "image", json_get_str(c, "image") ? json_get_str(c, "image") : "");
    cJSON_AddStringToObject(s, "imageID", "");
    cJSON_AddBoolToObject(s, "ready", false);
    cJSON_AddNumberToObject(s, "restartCount", 0);
    cJSON_AddBoolToObject(s, "started", false);
    cJSON *t = cJSON_AddObjectToObject(cJSON_AddObjectToObject(s, "state"), "terminated");
    cJSON_AddNumberToObject(t, "exitCode", 137);
    cJSON_AddStringToObject(t, "reason", "ContainerStatusUnknown");
    cJSON_AddStringToObject(t, "message",
                            "The container could not be located when the pod was terminated");
    cJSON_AddStringToObject(t, "finishedAt", now);
    cJSON_AddItemToObject(s, "lastState", cJSON_CreateObject());
    cJSON_AddItemToArray(cs, s);
  }
  cJSON *patch = cJSON_CreateObject();
  cJSON_AddItemToObject(patch, "status", st);
  char *body = cJSON_PrintUnformatted(patch);
  cJSON_Delete(patch);
  struct kube_status ks;
  kube_status_init(&ks);
  if(body) {
    gw_rc rc = kube_patch(jr->k, &KUBE_PODS, json_get_str(pod, "metadata.namespace"),
                          json_get_str(pod, "metadata.name"), KUBE_PATCH_MERGE, body, "status",
                          NULL, &ks);
    (void)rc;
  }
  kube_status_release(&ks);
  cJSON_free(body);
}

/* Whether this node runs the Pod. */
static bool ours(struct jr *jr, const cJSON *pod)
{
  const char *node = json_get_str(pod, "spec.nodeName");
  if(node && *node)
    return !strcmp(node, jr->cfg->node_name);
  if(jr->cfg->kubelet_only) /* the primary schedules */
    return false;
  const char *sched = json_get_str(pod, "spec.schedulerName");
  return !sched || !*sched || !strcmp(sched, "default-scheduler");
}

void kubelet_sync(struct jr *jr, const cJSON *pods)
{
  struct jr_kubelet *kl = jr->kubelet;
  for(struct pod_rt *p = kl->pods; p; p = p->next)
    p->gone = true;
  const cJSON *pod;
  cJSON_ArrayForEach(pod, pods)
  {
    const char *uid = json_get_str(pod, "metadata.uid");
    if(!uid)
      continue;
    struct pod_rt *p = find(kl, uid);
    if(!p) {
      const char *phase = json_get_str(pod, "status.phase");
      bool terminal = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
      bool deleting = jr_json_has(pod, "metadata.deletionTimestamp");
      if(!ours(jr, pod) || (terminal && !deleting))
        continue;
      if(phase && !strcmp(phase, "Running") && !deleting) {
        orphan(jr, pod);
        continue;
      }
      p = rt_new(jr, pod);
      if(!p)
        continue;
      if(deleting || terminal) {
        /* Nothing runs here for it: only finish the deletion, leave its status alone. */
        p->stage = PS_SCHEDULING;
        p->deleting = true;
      }
      p->next = kl->pods;
      kl->pods = p;
      log_kv(LOG_INFO, "pod admitted", "pod", p->name, "namespace", p->ns, LOG_END);
    }
    p->gone = false;
    cJSON_Delete(p->pod);
    p->pod = cJSON_Duplicate(pod, 1);
    note_ip(p);
    if(jr_json_has(pod, "metadata.deletionTimestamp"))
      p->deleting = true;
  }
  for(struct pod_rt **pp = &kl->pods; *pp;) {
    struct pod_rt *p = *pp;
    if(p->elsewhere) {
      *pp = p->next;
      rt_free(jr, p);
      continue;
    }
    if(p->gone)
      p->deleting = true;
    if(p->pod)
      step(jr, p);
    if(p->gone && !any_running(p)) {
      log_kv(LOG_INFO, "pod removed", "pod", p->name, "namespace", p->ns, LOG_END);
      jr_rmtree(p->pod_dir);
      logs_remove(jr, p->ns, p->name);
      *pp = p->next;
      rt_free(jr, p);
      continue;
    }
    pp = &p->next;
  }
}

bool kubelet_reaped(struct jr *jr, pid_t pid, int status)
{
  for(struct pod_rt *p = jr->kubelet ? jr->kubelet->pods : NULL; p; p = p->next)
    for(size_t i = 0; i < p->nctr; i++)
      if(p->ctr[i].state == CS_RUNNING && p->ctr[i].pid == pid) {
        ctr_exited(jr, p, &p->ctr[i], status);
        return true;
      }
  return false;
}

void kubelet_shutdown(struct jr *jr, long grace_ms)
{
  struct jr_kubelet *kl = jr->kubelet;
  if(!kl)
    return;
  for(struct pod_rt *p = kl->pods; p; p = p->next)
    for(size_t i = 0; i < p->nctr; i++)
      if(p->ctr[i].state == CS_RUNNING)
        proc_kill_group(p->ctr[i].pid, SIGTERM);
  int64_t deadline = jr_mono_ms() + grace_ms;
  for(;;) {
    int status;
    pid_t pid;
    while((pid = waitpid(-1, &status, WNOHANG)) > 0)
      kubelet_reaped(jr, pid, status);
    bool left = false;
    for(struct pod_rt *p = kl->pods; p; p = p->next)
      left = left || any_running(p);
    if(!left)
      break;
    if(jr_mono_ms() >= deadline) {
      for(struct pod_rt *p = kl->pods; p; p = p->next)
        for(size_t i = 0; i < p->nctr; i++)
          if(p->ctr[i].state == CS_RUNNING)
            proc_kill_group(p->ctr[i].pid, SIGKILL);
      deadline = jr_mono_ms() + 5000;
    }
    usleep(20000);
  }
  /* Orphans of the containers (we are their subreaper) */
  int status;
  while(waitpid(-1, &status, WNOHANG) > 0)
    ;
  while(kl->pods) {
    struct pod_rt *p = kl->pods;
    kl->pods = p->next;
    rt_free(jr, p);
  }
  free(kl);
  jr->kubelet = NULL;
}
