/* Helpers of the job runner's tests: see test_jobrunner.h. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "test_jobrunner.h"

static cJSON *parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

void jt_start(struct cl *c, unsigned extra)
{
  cl_start(c, CL_JOBRUNNER | extra);
  cJSON *ns = parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\""
                    JT_NS "\"}}");
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jt_admin(c), &KUBE_NAMESPACES, NULL, ns, false, NULL, &st);
  cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "namespace: %s %s", gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON_Delete(ns);
}

struct kube_client *jt_admin(struct cl *c)
{
  return cl_client(c, "admin");
}

static cJSON *pod_spec(const char *script)
{
  cJSON *spec = parse("{\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":5,"
                      "\"containers\":[{\"name\":\"main\",\"image\":\"debian:12\","
                      "\"command\":[\"sh\",\"-c\"],\"args\":[]}]}");
  cJSON *args = json_get_mut(spec, "containers");
  args = cJSON_GetObjectItem(cJSON_GetArrayItem(args, 0), "args");
  cJSON_AddItemToArray(args, cJSON_CreateString(script));
  return spec;
}

cJSON *jt_job(const char *name, const char *script)
{
  cJSON *job = parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"namespace\":"
                     "\"" JT_NS "\"},\"spec\":{\"backoffLimit\":0,\"template\":{}}}");
  cr_assert_eq(json_set_str(job, "metadata.name", name), GW_OK);
  cr_assert_eq(json_set(job, "spec.template.spec", pod_spec(script)), GW_OK);
  return job;
}

cJSON *jt_container(cJSON *job)
{
  cJSON *spec = json_get_mut(job, "spec.template.spec");
  if(!spec)
    spec = json_get_mut(job, "spec");
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0);
  cr_assert(c);
  return c;
}

cJSON *jt_pod(const char *name, const char *script)
{
  cJSON *pod = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\""
                     JT_NS "\"}}");
  cr_assert_eq(json_set_str(pod, "metadata.name", name), GW_OK);
  cr_assert_eq(json_set(pod, "spec", pod_spec(script)), GW_OK);
  return pod;
}

void jt_create(struct kube_client *k, const struct kube_gvr *r, cJSON *obj)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, r, JT_NS, obj, false, NULL, &st);
  cr_assert_eq(rc, GW_OK, "create %s: %s %s", r->resource, gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON_Delete(obj);
}

static void data_object(struct kube_client *k, const struct kube_gvr *r, const char *kind,
                        const char *name, const char *key, const char *value)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "v1");
  cJSON_AddStringToObject(o, "kind", kind);
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", JT_NS);
  /* stringData for a Secret: the API server encodes it */
  cJSON *d = cJSON_AddObjectToObject(o, r == &KUBE_SECRETS ? "stringData" : "data");
  cJSON_AddStringToObject(d, key, value);
  jt_create(k, r, o);
}

void jt_secret(struct kube_client *k, const char *name, const char *key, const char *value)
{
  data_object(k, &KUBE_SECRETS, "Secret", name, key, value);
}

void jt_configmap(struct kube_client *k, const char *name, const char *key, const char *value)
{
  data_object(k, &KUBE_CONFIGMAPS, "ConfigMap", name, key, value);
}

void jt_pvc(struct kube_client *k, const char *name)
{
  cJSON *o = parse("{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{},"
                   "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
                   "{\"storage\":\"1Gi\"}}}}");
  cr_assert_eq(json_set_str(o, "metadata.name", name), GW_OK);
  cr_assert_eq(json_set_str(o, "metadata.namespace", JT_NS), GW_OK);
  jt_create(k, &KUBE_PVCS, o);
}

cJSON *jt_get(struct kube_client *k, const struct kube_gvr *r, const char *name)
{
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(k, r, JT_NS, name, &out, &st);
  cr_assert(rc == GW_OK || rc == GW_ENOTFOUND, "get %s/%s: %s %s", r->resource, name,
            gw_strerror(rc), st.message);
  kube_status_release(&st);
  return out;
}

static cJSON *list_items(struct kube_client *k, const struct kube_gvr *r, const char *labels,
                         const char *fields)
{
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  struct kube_list_opts o = { .label_selector = labels, .field_selector = fields };
  gw_rc rc = kube_list(k, r, JT_NS, &o, &out, &st);
  cr_assert_eq(rc, GW_OK, "list %s: %s %s", r->resource, gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON *items = cJSON_DetachItemFromObject(out, "items");
  cJSON_Delete(out);
  return items ? items : cJSON_CreateArray();
}

cJSON *jt_job_pods(struct kube_client *k, const char *job)
{
  char sel[300];
  snprintf(sel, sizeof(sel), "job-name=%s", job);
  return list_items(k, &KUBE_PODS, sel, NULL);
}

static bool condition_true(const cJSON *conds, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, conds)
  {
    const char *t = json_get_str(c, "type"), *s = json_get_str(c, "status");
    if(t && s && !strcmp(t, type) && !strcmp(s, "True"))
      return true;
  }
  return false;
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

cJSON *jt_wait_job_condition(struct kube_client *k, const char *job, const char *type, int ms)
{
  for(int waited = 0; waited <= ms; waited += 100) {
    cJSON *j = jt_get(k, &KUBE_JOBS, job);
    if(j && condition_true(json_get(j, "status.conditions"), type))
      return j;
    cJSON_Delete(j);
    sleep_ms(100);
  }
  return NULL;
}

cJSON *jt_wait_pod(struct kube_client *k, const char *job, const char *pod,
                   bool (*pred)(const cJSON *pod), int ms)
{
  for(int waited = 0; waited <= ms; waited += 100) {
    if(job) {
      cJSON *pods = jt_job_pods(k, job);
      const cJSON *p;
      cJSON_ArrayForEach(p, pods)
      {
        if(pred(p)) {
          cJSON *copy = cJSON_Duplicate(p, 1);
          cJSON_Delete(pods);
          return copy;
        }
      }
      cJSON_Delete(pods);
    } else {
      cJSON *p = jt_get(k, &KUBE_PODS, pod);
      if(p && pred(p))
        return p;
      cJSON_Delete(p);
    }
    sleep_ms(100);
  }
  return NULL;
}

bool jt_pod_terminal(const cJSON *pod)
{
  const char *ph = json_get_str(pod, "status.phase");
  return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

bool jt_pod_running(const cJSON *pod)
{
  const char *ph = json_get_str(pod, "status.phase");
  return ph && !strcmp(ph, "Running");
}

const cJSON *jt_state(const cJSON *pod, const char *which)
{
  const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
  return cJSON_GetObjectItem(cJSON_GetObjectItem(cs, "state"), which);
}

long jt_num(const cJSON *obj, const char *path)
{
  const cJSON *v = json_get(obj, path);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

const cJSON *jt_condition(const cJSON *obj, const char *type)
{
  return jt_pod_condition(obj, type);
}

bool jt_condition_true(const cJSON *obj, const char *type)
{
  const char *s = json_get_str(jt_condition(obj, type), "status");
  return s && !strcmp(s, "True");
}

const cJSON *jt_pod_condition(const cJSON *pod, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(pod, "status.conditions"))
  {
    const char *t = json_get_str(c, "type");
    if(t && !strcmp(t, type))
      return c;
  }
  return NULL;
}

cJSON *jt_events(struct kube_client *k, const char *name, const char *reason)
{
  char fs[400];
  snprintf(fs, sizeof(fs), "involvedObject.name=%s", name);
  cJSON *items = list_items(k, &KUBE_EVENTS, NULL, fs);
  cJSON *out = cJSON_CreateArray();
  const cJSON *e;
  cJSON_ArrayForEach(e, items)
  {
    const char *r = json_get_str(e, "reason");
    const char *n = json_get_str(e, "involvedObject.name");
    if(r && !strcmp(r, reason) && n && !strcmp(n, name))
      cJSON_AddItemToArray(out, cJSON_Duplicate(e, 1));
  }
  cJSON_Delete(items);
  return out;
}

cJSON *jt_wait_event(struct kube_client *k, const char *name, const char *reason, int ms)
{
  for(int waited = 0; waited <= ms; waited += 200) {
    cJSON *ev = jt_events(k, name, reason);
    if(cJSON_GetArraySize(ev)) {
      cJSON *first = cJSON_DetachItemFromArray(ev, 0);
      cJSON_Delete(ev);
      return first;
    }
    cJSON_Delete(ev);
    sleep_ms(200);
  }
  return NULL;
}

char *jt_log(struct kube_client *k, const char *pod, long tail)
{
  char *out = NULL;
  size_t len;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_pod_log(k, JT_NS, pod, NULL, tail, &out, &len, &st);
  cr_assert_eq(rc, GW_OK, "log of %s: %s %s", pod, gw_strerror(rc), st.message);
  kube_status_release(&st);
  return out;
}

long jt_wait_pidfile(const char *path, int ms)
{
  for(int waited = 0; waited <= ms; waited += 50) {
    FILE *f = fopen(path, "r");
    long pid = 0;
    if(f) {
      if(fscanf(f, "%ld", &pid) != 1)
        pid = 0;
      fclose(f);
    }
    if(pid > 0)
      return pid;
    sleep_ms(50);
  }
  return 0;
}

bool jt_wait_gone(long pid, int ms)
{
  char proc[64];
  snprintf(proc, sizeof(proc), "/proc/%ld", pid);
  for(int waited = 0; waited <= ms; waited += 50) {
    struct stat st;
    if(stat(proc, &st) && errno == ENOENT)
      return true; /* a zombie still has its /proc entry: gone means reaped */
    sleep_ms(50);
  }
  return false;
}

