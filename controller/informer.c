#include "informer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ktime.h"
#include "log.h"
#include "strmap.h"

#define INF_MAX_HANDLERS 16

struct handler {
  inf_handler_fn fn;
  void *ctx;
};

struct informer {
  struct kube_client *kube;
  struct kube_gvr gvr;
  char *ns, *label_selector, *field_selector;
  pthread_rwlock_t mu;
  pthread_mutex_t sync_mu;
  pthread_cond_t sync_cv;
  struct strmap cache; /* key -> cJSON* (owned) */
  bool synced;
  char rv[64];
  struct handler handlers[INF_MAX_HANDLERS];
  size_t nhandlers;
  pthread_t thread;
  bool running;
  volatile int stop;
};

gw_rc informer_key(const cJSON *obj, char *buf, size_t len)
{
  const char *name = json_get_str(obj, "metadata.name");
  const char *ns = json_get_str(obj, "metadata.namespace");
  if(!name || !*name)
    return GW_EINVAL;
  int n = ns && *ns ? snprintf(buf, len, "%s/%s", ns, name) : snprintf(buf, len, "%s", name);
  return n < 0 || (size_t)n >= len ? GW_ETOOBIG : GW_OK;
}

gw_rc informer_split_key(const char *key, char *ns, size_t nslen, char *name, size_t namelen)
{
  const char *slash = strchr(key, '/');
  size_t nl = slash ? (size_t)(slash - key) : 0;
  const char *nm = slash ? slash + 1 : key;
  if(nl >= nslen || strlen(nm) >= namelen || !*nm || strchr(nm, '/'))
    return GW_EINVAL;
  memcpy(ns, key, nl);
  ns[nl] = 0;
  strcpy(name, nm);
  return GW_OK;
}

static char *dup_or_null(const char *s)
{
  return s ? strdup(s) : NULL;
}

gw_rc informer_new(struct informer **out, struct kube_client *k, const struct informer_opts *o)
{
  struct informer *inf = calloc(1, sizeof(*inf));
  if(!inf)
    return GW_ENOMEM;
  inf->kube = k;
  inf->gvr = *o->gvr;
  inf->ns = dup_or_null(o->namespace);
  inf->label_selector = dup_or_null(o->label_selector);
  inf->field_selector = dup_or_null(o->field_selector);
  strmap_init(&inf->cache);
  pthread_rwlock_init(&inf->mu, NULL);
  pthread_mutex_init(&inf->sync_mu, NULL);
  kt_cond_init(&inf->sync_cv);
  *out = inf;
  return GW_OK;
}

gw_rc informer_add_handler(struct informer *inf, inf_handler_fn fn, void *ctx)
{
  if(inf->running || inf->nhandlers == INF_MAX_HANDLERS)
    return GW_EINVAL;
  inf->handlers[inf->nhandlers++] = (struct handler){ fn, ctx };
  return GW_OK;
}

static void dispatch(struct informer *inf, enum inf_event ev, const cJSON *obj, const cJSON *old)
{
  for(size_t i = 0; i < inf->nhandlers; i++)
    inf->handlers[i].fn(inf->handlers[i].ctx, ev, obj, old);
}

static void free_obj(void *p)
{
  cJSON_Delete(p);
}

static void mark_synced(struct informer *inf, const char *rv)
{
  pthread_mutex_lock(&inf->sync_mu);
  if(rv)
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  inf->synced = true;
  pthread_cond_broadcast(&inf->sync_cv);
  pthread_mutex_unlock(&inf->sync_mu);
}

/* ---- reflector callbacks (the reflector thread) ---- */

struct pending {
  enum inf_event ev;
  const cJSON *obj, *old;
};

struct replace_state {
  struct strmap *fresh;
  struct pending *p;
  size_t n;
};

static int collect_deleted(void *ctx, const char *key, void *val)
{
  struct replace_state *s = ctx;
  if(!strmap_get(s->fresh, key))
    s->p[s->n++] = (struct pending){ INF_DELETED, val, NULL };
  return 0;
}

/* What the cache keeps of an object: all but metadata.managedFields, which no reconciler reads
 * and which would grow every cached object (controller-runtime's TransformStripManagedFields). */
static cJSON *cached_copy(const cJSON *obj)
{
  /* managedFields set aside while copying, not copied and freed: the cache's allocations stay
   * dense (the controller's RSS with 5,000 cached Migrations: 64.2 MiB copying them, 64.0 not).
   * obj is the reflector's, on this thread, and gets them back (last in metadata). */
  cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  cJSON *mf = cJSON_DetachItemFromObjectCaseSensitive(meta, "managedFields");
  cJSON *copy = cJSON_Duplicate(obj, 1);
  if(mf)
    cJSON_AddItemToObject(meta, "managedFields", mf);
  return copy;
}

static void on_replace(void *ctx, const cJSON *items, const char *rv)
{
  struct informer *inf = ctx;
  struct strmap fresh;
  strmap_init(&fresh);
  int nitems = cJSON_GetArraySize(items);
  pthread_rwlock_rdlock(&inf->mu);
  size_t cap = (size_t)nitems + strmap_len(&inf->cache) + 1;
  pthread_rwlock_unlock(&inf->mu);
  struct pending *p = calloc(cap, sizeof(*p));
  size_t n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
  {
    char key[512];
    if(informer_key(it, key, sizeof(key)))
      continue;
    cJSON *copy = cached_copy(it);
    void *dupe = NULL;
    if(!copy || strmap_put(&fresh, key, copy, &dupe)) {
      cJSON_Delete(copy);
      continue;
    }
    cJSON_Delete(dupe);
  }
  if(!p) { /* out of memory: store without telling the handlers; the next relist tells */
    log_kv(LOG_ERROR, "informer: out of memory while relisting", "resource", inf->gvr.resource,
           LOG_END);
  }
  pthread_rwlock_wrlock(&inf->mu);
  struct strmap old = inf->cache;
  inf->cache = fresh;
  pthread_rwlock_unlock(&inf->mu);
  /* Only this thread changes the cache, so both maps are stable while we compare them. */
  if(p) {
    struct replace_state s = { &fresh, p, 0 };
    struct strmap *cur = &inf->cache;
    strmap_foreach(&old, collect_deleted, &s);
    n = s.n;
    cJSON_ArrayForEach(it, items)
    {
      char key[512];
      if(informer_key(it, key, sizeof(key)))
        continue;
      const cJSON *now = strmap_get(cur, key);
      const cJSON *before = strmap_get(&old, key);
      if(!now || n >= cap)
        continue;
      if(!before) {
        p[n++] = (struct pending){ INF_ADDED, now, NULL };
      } else {
        const char *r1 = json_get_str(now, "metadata.resourceVersion");
        const char *r0 = json_get_str(before, "metadata.resourceVersion");
        if(!r1 || !r0 || strcmp(r1, r0))
          p[n++] = (struct pending){ INF_MODIFIED, now, before };
      }
    }
  }
  /* synced only once the handlers have been told about the list: a waiter then sees each
   * listed object reported (client-go's handler registration HasSynced) */
  for(size_t i = 0; i < n; i++)
    dispatch(inf, p[i].ev, p[i].obj, p[i].old);
  mark_synced(inf, rv);
  free(p);
  strmap_release(&old, free_obj);
}

static void on_event(void *ctx, const char *type, const cJSON *obj)
{
  struct informer *inf = ctx;
  char key[512];
  if(informer_key(obj, key, sizeof(key)))
    return;
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(rv) {
    pthread_mutex_lock(&inf->sync_mu);
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    pthread_mutex_unlock(&inf->sync_mu);
  }
  if(!strcmp(type, "DELETED")) {
    pthread_rwlock_wrlock(&inf->mu);
    cJSON *gone = strmap_del(&inf->cache, key);
    pthread_rwlock_unlock(&inf->mu);
    dispatch(inf, INF_DELETED, obj, NULL);
    cJSON_Delete(gone);
    return;
  }
  if(strcmp(type, "ADDED") && strcmp(type, "MODIFIED"))
    return;
  cJSON *copy = cached_copy(obj);
  if(!copy)
    return;
  void *old = NULL;
  pthread_rwlock_wrlock(&inf->mu);
  gw_rc rc = strmap_put(&inf->cache, key, copy, &old);
  pthread_rwlock_unlock(&inf->mu);
  if(rc) {
    cJSON_Delete(copy);
    return;
  }
  dispatch(inf, old ? INF_MODIFIED : INF_ADDED, copy, old);
  cJSON_Delete(old);
}

static void on_progress(void *ctx, const char *rv)
{
  struct informer *inf = ctx;
  pthread_mutex_lock(&inf->sync_mu);
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  pthread_mutex_unlock(&inf->sync_mu);
}

static void *run(void *arg)
{
  struct informer *inf = arg;
  static const struct kube_reflector_ops ops = { on_replace, on_event, on_progress };
  struct kube_reflector_opts o = { inf->label_selector, inf->field_selector, 0, 0, 0 };
  gw_rc rc = kube_reflector_run(inf->kube, &inf->gvr, inf->ns, &o, &ops, inf, &inf->stop);
  if(rc != GW_ESTOPPED)
    log_kv(LOG_ERROR, "informer stopped", "resource", inf->gvr.resource, "reason",
           gw_strerror(rc), LOG_END);
  return NULL;
}

gw_rc informer_start(struct informer *inf)
{
  if(inf->running)
    return GW_EINVAL;
  inf->stop = 0;
  if(pthread_create(&inf->thread, NULL, run, inf))
    return GW_ENOMEM;
  inf->running = true;
  return GW_OK;
}

void informer_request_stop(struct informer *inf)
{
  if(inf && inf->running)
    inf->stop = 1;
}

void informer_stop(struct informer *inf)
{
  if(!inf || !inf->running)
    return;
  inf->stop = 1;
  pthread_join(inf->thread, NULL);
  inf->running = false;
  pthread_mutex_lock(&inf->sync_mu);
  pthread_cond_broadcast(&inf->sync_cv);
  pthread_mutex_unlock(&inf->sync_mu);
}

void informer_free(struct informer *inf)
{
  if(!inf)
    return;
  informer_stop(inf);
  strmap_release(&inf->cache, free_obj);
  pthread_rwlock_destroy(&inf->mu);
  pthread_mutex_destroy(&inf->sync_mu);
  pthread_cond_destroy(&inf->sync_cv);
  free(inf->ns);
  free(inf->label_selector);
  free(inf->field_selector);
  free(inf);
}

bool informer_synced(struct informer *inf)
{
  pthread_mutex_lock(&inf->sync_mu);
  bool s = inf->synced;
  pthread_mutex_unlock(&inf->sync_mu);
  return s;
}

bool informer_wait_synced(struct informer *inf, long timeout_ms, volatile int *stop)
{
  int64_t end = timeout_ms < 0 ? INT64_MAX : kt_mono_ms() + timeout_ms;
  pthread_mutex_lock(&inf->sync_mu);
  while(!inf->synced && !(stop && *stop)) {
    int64_t now = kt_mono_ms();
    if(now >= end)
      break;
    long wait = end - now > 100 ? 100 : (long)(end - now);
    struct timespec ts = kt_deadline(wait);
    pthread_cond_timedwait(&inf->sync_cv, &inf->sync_mu, &ts);
  }
  bool s = inf->synced;
  pthread_mutex_unlock(&inf->sync_mu);
  return s;
}

cJSON *informer_get(struct informer *inf, const char *key)
{
  pthread_rwlock_rdlock(&inf->mu);
  const cJSON *o = strmap_get(&inf->cache, key);
  cJSON *copy = o ? cJSON_Duplicate(o, 1) : NULL;
  pthread_rwlock_unlock(&inf->mu);
  return copy;
}

bool informer_test(struct informer *inf, const char *key,
                   bool (*pred)(const cJSON *obj, void *ctx), void *ctx)
{
  pthread_rwlock_rdlock(&inf->mu);
  const cJSON *o = strmap_get(&inf->cache, key);
  bool yes = o && pred(o, ctx);
  pthread_rwlock_unlock(&inf->mu);
  return yes;
}

struct each_state {
  const char *ns;
  size_t nslen;
  void (*fn)(void *ctx, const char *key, const cJSON *obj);
  void *ctx;
};

static int each_one(void *ctx, const char *key, void *val)
{
  struct each_state *s = ctx;
  if(s->ns && (strncmp(key, s->ns, s->nslen) || key[s->nslen] != '/'))
    return 0;
  s->fn(s->ctx, key, val);
  return 0;
}

void informer_each(struct informer *inf, const char *ns,
                   void (*fn)(void *ctx, const char *key, const cJSON *obj), void *ctx)
{
  struct each_state s = { ns, ns ? strlen(ns) : 0, fn, ctx };
  pthread_rwlock_rdlock(&inf->mu);
  strmap_foreach(&inf->cache, each_one, &s);
  pthread_rwlock_unlock(&inf->mu);
}

size_t informer_len(struct informer *inf)
{
  pthread_rwlock_rdlock(&inf->mu);
  size_t n = strmap_len(&inf->cache);
  pthread_rwlock_unlock(&inf->mu);
  return n;
}

void informer_resource_version(struct informer *inf, char *buf, size_t len)
{
  pthread_mutex_lock(&inf->sync_mu);
  snprintf(buf, len, "%s", inf->rv);
  pthread_mutex_unlock(&inf->sync_mu);
}

const struct kube_gvr *informer_gvr(const struct informer *inf)
{
  return &inf->gvr;
}

const char *informer_namespace(const struct informer *inf)
{
  return inf->ns;
}
