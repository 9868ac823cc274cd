/* events.c: core/v1 Events as client-go's recorder writes them: one Event per (object, reason,
 * message), its count and lastTimestamp bumped on repeats. Best effort: an Event that cannot
 * be written is logged and dropped, never retried. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "jr.h"
#include "json.h"
#include "log.h"

#define EV_SLOTS 512

struct ev_slot {
  char *key;  /* uid \n reason \n message */
  char name[320];
  char ns[254];
  long count;
  int64_t last_ms;
};

struct jr_events {
  struct ev_slot slot[EV_SLOTS];
  size_t next; /* round robin: the oldest aggregation is forgotten first */
  char host[256];
};

gw_rc jr_events_init(struct jr *jr)
{
  jr->events = calloc(1, sizeof(*jr->events));
  if(!jr->events)
    return GW_ENOMEM;
  jr_fmt(jr->events->host, sizeof(jr->events->host), "%s", jr->cfg->node_name);
  return GW_OK;
}

void jr_events_free(struct jr *jr)
{
  if(!jr->events)
    return;
  for(size_t i = 0; i < EV_SLOTS; i++)
    free(jr->events->slot[i].key);
  free(jr->events);
  jr->events = NULL;
}

static struct ev_slot *lookup(struct jr_events *e, const char *key)
{
  for(size_t i = 0; i < EV_SLOTS; i++)
    if(e->slot[i].key && !strcmp(e->slot[i].key, key))
      return &e->slot[i];
  return NULL;
}

static gw_rc bump(struct jr *jr, struct ev_slot *s)
{
  char now[32], patch[128];
  jr_rfc3339(now, sizeof(now), time(NULL));
  jr_fmt(patch, sizeof(patch), "{\"count\":%ld,\"lastTimestamp\":\"%s\"}", s->count + 1, now);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_patch(jr->k, &KUBE_EVENTS, s->ns, s->name, KUBE_PATCH_MERGE, patch, NULL, NULL,
                        &st);
  kube_status_release(&st);
  if(!rc)
    s->count++;
  return rc;
}

static void create(struct jr *jr, const cJSON *obj, const char *kind, const char *api_version,
                   const char *type, const char *component, const char *reason,
                   const char *msg, const char *key)
{
  struct jr_events *e = jr->events;
  const char *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  if(!ns || !*ns)
    ns = "default";
  struct timeval tv;
  gettimeofday(&tv, NULL);
  char now[32], ename[320];
  jr_rfc3339(now, sizeof(now), tv.tv_sec);
  jr_fmt(ename, sizeof(ename), "%.250s.%llx", name ? name : "object",
           (unsigned long long)tv.tv_sec * 1000000000ull +
             (unsigned long long)tv.tv_usec * 1000ull);

  cJSON *ev = cJSON_CreateObject();
  cJSON_AddStringToObject(ev, "apiVersion", "v1");
  cJSON_AddStringToObject(ev, "kind", "Event");
  cJSON *md = cJSON_AddObjectToObject(ev, "metadata");
  cJSON_AddStringToObject(md, "name", ename);
  cJSON_AddStringToObject(md, "namespace", ns);
  cJSON *io = cJSON_AddObjectToObject(ev, "involvedObject");
  cJSON_AddStringToObject(io, "kind", kind);
  if(json_get_str(obj, "metadata.namespace"))
    cJSON_AddStringToObject(io, "namespace", ns);
  cJSON_AddStringToObject(io, "name", name ? name : "");
  const char *uid = json_get_str(obj, "metadata.uid");
  if(uid)
    cJSON_AddStringToObject(io, "uid", uid);
  cJSON_AddStringToObject(io, "apiVersion", api_version);
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(rv)
    cJSON_AddStringToObject(io, "resourceVersion", rv);
  cJSON_AddStringToObject(ev, "reason", reason);
  cJSON_AddStringToObject(ev, "message", msg);
  cJSON *src = cJSON_AddObjectToObject(ev, "source");
  cJSON_AddStringToObject(src, "component", component);
  if(!strcmp(component, "kubelet"))
    cJSON_AddStringToObject(src, "host", e->host);
  cJSON_AddStringToObject(ev, "firstTimestamp", now);
  cJSON_AddStringToObject(ev, "lastTimestamp", now);
  cJSON_AddNumberToObject(ev, "count", 1);
  cJSON_AddStringToObject(ev, "type", type);
  cJSON_AddNullToObject(ev, "eventTime");
  cJSON_AddStringToObject(ev, "reportingComponent", component);
  cJSON_AddStringToObject(ev, "reportingInstance",
                          !strcmp(component, "kubelet") ? e->host : "");

  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jr->k, &KUBE_EVENTS, ns, ev, false, NULL, &st);
  cJSON_Delete(ev);
  if(rc) {
    log_kv(LOG_WARN, "event not recorded", "reason", reason, "object", name ? name : "",
           "error", st.message[0] ? st.message : gw_strerror(rc), LOG_END);
    kube_status_release(&st);
    return;
  }
  kube_status_release(&st);

  struct ev_slot *s = &e->slot[e->next];
  e->next = (e->next + 1) % EV_SLOTS;
  free(s->key);
  s->key = strdup(key);
  jr_fmt(s->name, sizeof(s->name), "%s", ename);
  jr_fmt(s->ns, sizeof(s->ns), "%s", ns);
  s->count = 1;
  s->last_ms = jr_mono_ms();
}

void jr_event(struct jr *jr, const cJSON *obj, const char *kind, const char *api_version,
              const char *type, const char *component, const char *reason, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log_kv(LOG_INFO, "event", "object", json_get_str(obj, "metadata.name"), "kind", kind,
         "reason", reason, "message", msg, LOG_END);
  if(!jr->events)
    return;

  const char *uid = json_get_str(obj, "metadata.uid");
  size_t klen = strlen(msg) + strlen(reason) + (uid ? strlen(uid) : 0) + 4;
  char *key = malloc(klen);
  if(!key)
    return;
  jr_fmt(key, klen, "%s\n%s\n%s", uid ? uid : "", reason, msg);
  struct ev_slot *s = lookup(jr->events, key);
  if(s) {
    int64_t now = jr_mono_ms();
    /* A retry loop repeats the same Event every pass; one bump a second is plenty. */
    if(now - s->last_ms < 1000) {
      free(key);
      return;
    }
    if(!bump(jr, s)) {
      s->last_ms = now;
      free(key);
      return;
    }
    /* The Event is gone (expired or deleted): write a new one. */
    free(s->key);
    s->key = NULL;
  }
  create(jr, obj, kind, api_version, type, component, reason, msg, key);
  free(key);
}
