/* podstatus.c: the Pod status the kubelet writes (pkg/kubelet/status, generateAPIPodStatus):
 * phase, the five conditions, IPs, startTime, qosClass, and one status per container with its
 * state (waiting with a reason, running, terminated) and lastState. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "json.h"

static bool init_done(const struct pod_rt *p)
{
  for(size_t i = 0; i < p->ninit; i++)
    if(p->ctr[i].state != CS_TERMINATED || p->ctr[i].term.exit_code)
      return false;
  return true;
}

static bool init_failed(const struct pod_rt *p)
{
  const char *rp = json_get_str(p->pod, "spec.restartPolicy");
  if(!rp || strcmp(rp, "Never"))
    return false;
  for(size_t i = 0; i < p->ninit; i++)
    if(p->ctr[i].state == CS_TERMINATED && p->ctr[i].term.exit_code)
      return true;
  return false;
}

const char *podstatus_phase(const struct pod_rt *p)
{
  if(p->stage < PS_RUN)
    return "Pending";
  size_t running = 0, waiting = 0, failed = 0, started = 0;
  for(size_t i = 0; i < p->nctr; i++)
    if(p->ctr[i].state == CS_RUNNING)
      running++;
  if(p->reason[0] && !running)
    return "Failed"; /* DeadlineExceeded */
  if(init_failed(p))
    return "Failed";
  if(!init_done(p))
    return p->deleting && !running ? "Failed" : "Pending";
  for(size_t i = p->ninit; i < p->nctr; i++) {
    const struct ctr_rt *c = &p->ctr[i];
    started += c->ever_started;
    if(c->state == CS_WAITING)
      waiting++;
    else if(c->state == CS_TERMINATED && c->term.exit_code)
      failed++;
  }
  if(running)
    return "Running";
  if(waiting)
    return started ? "Running" : (p->deleting ? "Failed" : "Pending");
  return failed ? "Failed" : "Succeeded";
}

static void add_term(cJSON *parent, const char *key, const struct ctr_term *t)
{
  char a[32], b[32];
  cJSON *o = cJSON_AddObjectToObject(parent, key);
  cJSON_AddNumberToObject(o, "exitCode", t->exit_code);
  if(t->signal)
    cJSON_AddNumberToObject(o, "signal", t->signal);
  cJSON_AddStringToObject(o, "reason", t->reason);
  if(t->message)
    cJSON_AddStringToObject(o, "message", t->message);
  jr_rfc3339(a, sizeof(a), t->started);
  jr_rfc3339(b, sizeof(b), t->finished);
  cJSON_AddStringToObject(o, "startedAt", a);
  cJSON_AddStringToObject(o, "finishedAt", b);
  if(t->container_id[0])
    cJSON_AddStringToObject(o, "containerID", t->container_id);
}

static cJSON *ctr_status(const struct pod_rt *p, const struct ctr_rt *c)
{
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "name", c->name);
  cJSON *st = cJSON_AddObjectToObject(s, "state");
  bool running = c->state == CS_RUNNING;
  if(c->state == CS_RUNNING) {
    char t[32];
    jr_rfc3339(t, sizeof(t), c->started);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "running"), "startedAt", t);
  } else if(c->state == CS_TERMINATED) {
    add_term(st, "terminated", &c->term);
  } else {
    cJSON *w = cJSON_AddObjectToObject(st, "waiting");
    const char *reason = c->wait_reason[0] ? c->wait_reason : "ContainerCreating";
    if(!c->init && !init_done(p) && !strcmp(reason, "ContainerCreating"))
      reason = "PodInitializing";
    cJSON_AddStringToObject(w, "reason", reason);
    if(c->wait_msg)
      cJSON_AddStringToObject(w, "message", c->wait_msg);
  }
  cJSON *ls = cJSON_AddObjectToObject(s, "lastState");
  if(c->last.set)
    add_term(ls, "terminated", &c->last);
  cJSON_AddBoolToObject(s, "ready", running);
  cJSON_AddNumberToObject(s, "restartCount", c->restarts);
  cJSON_AddStringToObject(s, "image", c->image);
  cJSON_AddStringToObject(s, "imageID", c->image);
  const char *cid = c->state == CS_RUNNING ? c->container_id
                    : c->state == CS_TERMINATED ? c->term.container_id : "";
  if(cid[0])
    cJSON_AddStringToObject(s, "containerID", cid);
  cJSON_AddBoolToObject(s, "started", running);
  return s;
}

static const char *qos_class(const cJSON *pod)
{
  bool any = false, guaranteed = true;
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "spec.containers"))
  {
    const cJSON *req = json_get(c, "resources.requests"), *lim = json_get(c, "resources.limits");
    if(cJSON_GetArraySize(req) || cJSON_GetArraySize(lim))
      any = true;
    static const char *const res[] = { "cpu", "memory" };
    for(int i = 0; i < 2; i++) {
      const char *l = json_get_str(lim, res[i]), *r = json_get_str(req, res[i]);
      if(!l || (r && strcmp(l, r)))
        guaranteed = false;
    }
  }
  return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* "[a b]": the containers for which unready is true. */
static void names(const struct pod_rt *p, bool init, bool (*pick)(const struct ctr_rt *),
                  char *buf, size_t len)
{
  size_t o = (size_t)jr_fmt(buf, len, "[");
  size_t from = init ? 0 : p->ninit, to = init ? p->ninit : p->nctr;
  bool firstn = true;
  for(size_t i = from; i < to && o < len; i++)
    if(pick(&p->ctr[i])) {
      o += (size_t)jr_fmt(buf + o, len - o, "%s%s", firstn ? "" : " ", p->ctr[i].name);
      firstn = false;
    }
  if(o < len)
    jr_fmt(buf + o, len - o, "]");
}

static bool not_running(const struct ctr_rt *c)
{
  return c->state != CS_RUNNING;
}

static bool not_completed(const struct ctr_rt *c)
{
  return c->state != CS_TERMINATED || c->term.exit_code;
}

cJSON *podstatus_build(struct jr *jr, struct pod_rt *p)
{
  (void)jr;
  cJSON *s = cJSON_CreateObject();
  const char *phase = podstatus_phase(p);
  /* Transition times continue from what was last written (the cache may lag behind it). */
  const cJSON *old = json_get(p->posted ? p->posted : p->pod, p->posted ? "conditions"
                                                                       : "status.conditions");
  cJSON_AddStringToObject(s, "phase", phase);
  cJSON *conds = cJSON_AddArrayToObject(s, "conditions");
  if(p->stage == PS_SCHEDULING) {
    jr_set_condition(conds, old, "PodScheduled", "False", "Unschedulable", p->unschedulable,
                     false);
    return s;
  }
  bool terminal = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
  char list[1024];
  jr_set_condition(conds, old, "PodReadyToStartContainers",
                   p->stage >= PS_RUN && !terminal ? "True" : "False", NULL, NULL, false);
  if(init_done(p) || terminal) {
    jr_set_condition(conds, old, "Initialized", "True",
                     terminal && p->ninit ? "PodCompleted" : NULL, NULL, false);
  } else {
    names(p, true, not_completed, list, sizeof(list));
    char msg[1100];
    jr_fmt(msg, sizeof(msg), "containers with incomplete status: %s", list);
    jr_set_condition(conds, old, "Initialized", "False", "ContainersNotInitialized", msg, false);
  }
  bool ready = !strcmp(phase, "Running");
  for(size_t i = p->ninit; i < p->nctr; i++)
    ready = ready && p->ctr[i].state == CS_RUNNING;
  for(int k = 0; k < 2; k++) {
    const char *type = k ? "ContainersReady" : "Ready";
    if(ready) {
      jr_set_condition(conds, old, type, "True", NULL, NULL, false);
    } else if(terminal) {
      jr_set_condition(conds, old, type, "False", "PodCompleted", NULL, false);
    } else {
      names(p, false, not_running, list, sizeof(list));
      char msg[1100];
      jr_fmt(msg, sizeof(msg), "containers with unready status: %s", list);
      jr_set_condition(conds, old, type, "False", "ContainersNotReady", msg, false);
    }
  }
  jr_set_condition(conds, old, "PodScheduled", "True", NULL, NULL, false);
  cJSON_AddStringToObject(s, "hostIP", "127.0.0.1");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "hostIPs"),
                       cJSON_Parse("{\"ip\":\"127.0.0.1\"}"));
  /* A sandboxed Pod has its own address; the others share the node's, as hostNetwork Pods */
  const char *ip = p->sb.n ? p->sb.ip : "127.0.0.1";
  cJSON_AddStringToObject(s, "podIP", ip);
  cJSON *one = cJSON_CreateObject();
  cJSON_AddStringToObject(one, "ip", ip);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "podIPs"), one);
  if(p->start_time) {
    char t[32];
    jr_rfc3339(t, sizeof(t), p->start_time);
    cJSON_AddStringToObject(s, "startTime", t);
  }
  if(p->ninit) {
    cJSON *a = cJSON_AddArrayToObject(s, "initContainerStatuses");
    for(size_t i = 0; i < p->ninit; i++)
      cJSON_AddItemToArray(a, ctr_status(p, &p->ctr[i]));
  }
  cJSON *a = cJSON_AddArrayToObject(s, "containerStatuses");
  for(size_t i = p->ninit; i < p->nctr; i++)
    cJSON_AddItemToArray(a, ctr_status(p, &p->ctr[i]));
  cJSON_AddStringToObject(s, "qosClass", qos_class(p->pod));
  if(p->reason[0]) {
    cJSON_AddStringToObject(s, "reason", p->reason);
    cJSON_AddStringToObject(s, "message", p->message ? p->message : "");
  } else {
    cJSON_AddNullToObject(s, "reason");
    cJSON_AddNullToObject(s, "message");
  }
  return s;
}
