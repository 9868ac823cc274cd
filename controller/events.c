#include "events.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "ktime.h"
#include "log.h"
#include "redact.h"
#include "strbuf.h"
#include "strmap.h"

/* ---- messages ---- */

size_t event_message(char *buf, size_t size, const char *fmt, va_list ap)
{
  char *raw = NULL;
  if(vasprintf(&raw, fmt, ap) < 0)
    raw = NULL;
  char *clean = raw ? redact(raw, NULL, 0) : NULL;
  free(raw);
  const char *m = clean ? clean : "(message unavailable)";
  size_t n = strlen(m);
  if(n >= size) {
    size_t cut = size - 4;
    while(cut > 0 && ((unsigned char)m[cut] & 0xC0) == 0x80)
      cut--;
    memcpy(buf, m, cut);
    memcpy(buf + cut, "...", 4);
    n = cut + 3;
  } else {
    memcpy(buf, m, n + 1);
  }
  free(clean);
  return n;
}

/* ---- the recorder ---- */

/* One per remembered Event. The names are allocated to their length: a full LRU holds
 * RECORDER_CACHE of these, and fixed buffers sized for the longest names cost 2 MiB there. */
struct seen {
  char *key;
  char *name, *ns;
  long count;
  char first[32];
  struct seen *prev, *next; /* LRU, most recent first */
};

struct recorder {
  struct kube_client *kube;
  char *component, *instance;
  pthread_mutex_t mu;
  struct strmap seen; /* aggregate key -> struct seen */
  struct seen *head, *tail;
  unsigned long long last_ns;
  struct recorder_stats stats;
};

gw_rc recorder_new(struct recorder **out, struct kube_client *k, const struct recorder_opts *o)
{
  struct recorder *r = calloc(1, sizeof(*r));
  if(!r)
    return GW_ENOMEM;
  r->kube = k;
  r->component = strdup(o && o->component ? o->component : "godwit-controller");
  r->instance = strdup(o && o->instance ? o->instance : "");
  if(!r->component || !r->instance) {
    free(r->component);
    free(r->instance);
    free(r);
    return GW_ENOMEM;
  }
  strmap_init(&r->seen);
  pthread_mutex_init(&r->mu, NULL);
  *out = r;
  return GW_OK;
}

static void free_seen(void *p)
{
  struct seen *s = p;
  free(s->key);
  free(s->name);
  free(s->ns);
  free(s);
}

void recorder_free(struct recorder *r)
{
  if(!r)
    return;
  strmap_release(&r->seen, free_seen);
  pthread_mutex_destroy(&r->mu);
  free(r->component);
  free(r->instance);
  free(r);
}

void recorder_stats(struct recorder *r, struct recorder_stats *out)
{
  pthread_mutex_lock(&r->mu);
  *out = r->stats;
  pthread_mutex_unlock(&r->mu);
}

static void lru_unlink(struct recorder *r, struct seen *s)
{
  if(s->prev)
    s->prev->next = s->next;
  else
    r->head = s->next;
  if(s->next)
    s->next->prev = s->prev;
  else
    r->tail = s->prev;
  s->prev = s->next = NULL;
}

static void lru_front(struct recorder *r, struct seen *s)
{
  s->next = r->head;
  s->prev = NULL;
  if(r->head)
    r->head->prev = s;
  r->head = s;
  if(!r->tail)
    r->tail = s;
}

static void forget(struct recorder *r, struct seen *s)
{
  lru_unlink(r, s);
  strmap_del(&r->seen, s->key);
  free_seen(s);
}

static cJSON *involved(const cJSON *obj)
{
  cJSON *io = cJSON_CreateObject();
  static const char *const fields[][2] = {
    { "apiVersion", "apiVersion" },
    { "kind", "kind" },
    { "metadata.namespace", "namespace" },
    { "metadata.name", "name" },
    { "metadata.uid", "uid" },
    { "metadata.resourceVersion", "resourceVersion" },
  };
  for(size_t i = 0; io && i < sizeof(fields) / sizeof(fields[0]); i++) {
    const char *v = json_get_str(obj, fields[i][0]);
    if(v)
      cJSON_AddStringToObject(io, fields[i][1], v);
  }
  return io;
}

/* A new Event; fills s->name. */
static gw_rc create_event(struct recorder *r, const cJSON *obj, const char *ns, const char *type,
                          const char *reason, const char *msg, struct seen *s,
                          struct kube_status *st)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long nsec = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned)ts.tv_nsec;
  if(nsec <= r->last_ns)
    nsec = r->last_ns + 1; /* names stay unique even within one clock tick */
  r->last_ns = nsec;
  const char *oname = json_get_str(obj, "metadata.name");
  char name[300];
  snprintf(name, sizeof(name), "%.200s.%llx", oname ? oname : "object", nsec);
  s->name = strdup(name);
  s->ns = strdup(ns);
  if(!s->name || !s->ns)
    return GW_ENOMEM;
  kt_rfc3339(s->first, sizeof(s->first), ts.tv_sec);
  s->count = 1;
  cJSON *ev = cJSON_CreateObject();
  cJSON *md = cJSON_AddObjectToObject(ev, "metadata");
  cJSON_AddStringToObject(ev, "apiVersion", "v1");
  cJSON_AddStringToObject(ev, "kind", "Event");
  cJSON_AddStringToObject(md, "name", s->name);
  cJSON_AddStringToObject(md, "namespace", ns);
  cJSON_AddItemToObject(ev, "involvedObject", involved(obj));
  cJSON_AddStringToObject(ev, "reason", reason);
  cJSON_AddStringToObject(ev, "message", msg);
  cJSON_AddStringToObject(ev, "type", type);
  cJSON *src = cJSON_AddObjectToObject(ev, "source");
  cJSON_AddStringToObject(src, "component", r->component);
  if(*r->instance)
    cJSON_AddStringToObject(src, "host", r->instance);
  cJSON_AddStringToObject(ev, "firstTimestamp", s->first);
  cJSON_AddStringToObject(ev, "lastTimestamp", s->first);
  cJSON_AddNumberToObject(ev, "count", 1);
  cJSON_AddStringToObject(ev, "reportingComponent", r->component);
  cJSON_AddStringToObject(ev, "reportingInstance", r->instance);
  cJSON *out = NULL;
  gw_rc rc = kube_create(r->kube, &KUBE_EVENTS, ns, ev, false, &out, st);
  cJSON_Delete(out);
  cJSON_Delete(ev);
  return rc;
}

static gw_rc count_event(struct recorder *r, struct seen *s, const char *msg,
                         struct kube_status *st)
{
  char now[32];
  kt_rfc3339(now, sizeof(now), time(NULL));
  struct strbuf sb;
  strbuf_init(&sb, 4096);
  gw_rc rc = strbuf_addf(&sb, "{\"count\":%ld,\"lastTimestamp\":\"%s\",\"message\":\"",
                         s->count + 1, now);
  if(!rc)
    rc = strbuf_add_json_escaped(&sb, msg);
  if(!rc)
    rc = strbuf_adds(&sb, "\"}");
  cJSON *out = NULL;
  if(!rc)
    rc = kube_patch(r->kube, &KUBE_EVENTS, s->ns, s->name, KUBE_PATCH_MERGE, strbuf_str(&sb),
                    NULL, &out, st);
  cJSON_Delete(out);
  strbuf_release(&sb);
  if(!rc)
    s->count++;
  return rc;
}

static void log_failure(const cJSON *obj, const char *reason, gw_rc rc,
                        const struct kube_status *st)
{
  char code[16];
  snprintf(code, sizeof(code), "%d", st->code);
  /* names only: never the message, never object data */
  log_kv(LOG_WARN, "event not recorded", "reason", reason, "kind", json_get_str(obj, "kind"),
         "namespace", json_get_str(obj, "metadata.namespace"), "name",
         json_get_str(obj, "metadata.name"), "error", gw_strerror(rc), "code", code, LOG_END);
}

gw_rc recorder_eventv(struct recorder *r, const cJSON *obj, const char *type, const char *reason,
                      const char *fmt, va_list ap)
{
  char msg[EVENT_MESSAGE_MAX + 1];
  event_message(msg, sizeof(msg), fmt, ap);
  const char *ns = json_get_str(obj, "metadata.namespace");
  if(!ns || !*ns)
    ns = "default";
  const char *uid = json_get_str(obj, "metadata.uid");
  struct strbuf key;
  strbuf_init(&key, 4096);
  gw_rc rc = strbuf_addf(&key, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", r->component,
                         json_get_str(obj, "kind") ? json_get_str(obj, "kind") : "", ns,
                         json_get_str(obj, "metadata.name") ? json_get_str(obj, "metadata.name")
                                                            : "",
                         uid ? uid : "", type, reason, msg);
  if(rc) {
    strbuf_release(&key);
    return rc;
  }
  struct kube_status st;
  kube_status_init(&st);
  pthread_mutex_lock(&r->mu);
  struct seen *s = strmap_get(&r->seen, strbuf_str(&key));
  if(s) {
    rc = count_event(r, s, msg, &st);
    if(!rc) {
      r->stats.counted++;
      lru_unlink(r, s);
      lru_front(r, s);
    } else if(rc == GW_ENOTFOUND) {
      forget(r, s); /* expired or deleted: start a new Event */
      s = NULL;
      kube_status_release(&st);
      kube_status_init(&st);
    }
  }
  if(!s) {
    s = calloc(1, sizeof(*s));
    if(s)
      s->key = strbuf_take(&key, NULL);
    if(!s || !s->key) {
      free(s);
      rc = GW_ENOMEM;
    } else {
      rc = create_event(r, obj, ns, type, reason, msg, s, &st);
      if(!rc && !strmap_put(&r->seen, s->key, s, NULL)) {
        r->stats.created++;
        lru_front(r, s);
        if(strmap_len(&r->seen) > RECORDER_CACHE)
          forget(r, r->tail);
      } else {
        if(!rc)
          r->stats.created++;
        free_seen(s);
      }
    }
  }
  if(rc)
    r->stats.failed++;
  pthread_mutex_unlock(&r->mu);
  if(rc)
    log_failure(obj, reason, rc, &st);
  kube_status_release(&st);
  strbuf_release(&key);
  return rc;
}

gw_rc recorder_event(struct recorder *r, const cJSON *obj, const char *type, const char *reason,
                     const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gw_rc rc = recorder_eventv(r, obj, type, reason, fmt, ap);
  va_end(ap);
  return rc;
}
