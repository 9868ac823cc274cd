#include "manager.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "manager_int.h"
#include "json.h"
#include "ktime.h"
#include "log.h"

const char *const rec_outcome_names[REC_NOUTCOMES] = { "success", "requeue", "error",
                                                       "terminal" };

/* ---- construction ---- */

static void mgr_on_started(void *ctx);
static void mgr_on_stopped(void *ctx);

gw_rc mgr_new(struct mgr **out, const struct mgr_opts *o)
{
  if(!o->kube)
    return GW_EINVAL;
  struct mgr *m = calloc(1, sizeof(*m));
  if(!m)
    return GW_ENOMEM;
  pthread_mutex_init(&m->mu, NULL);
  m->o = *o;
  if(!m->o.leader_kube)
    m->o.leader_kube = o->kube;
  if(m->o.workers <= 0)
    m->o.workers = 2;
  if(!m->o.resync_ms)
    m->o.resync_ms = 600000;
  if(m->o.cache_sync_timeout_ms <= 0)
    m->o.cache_sync_timeout_ms = 120000;
  if(m->o.own_write_wait_ms <= 0)
    m->o.own_write_wait_ms = MGR_OWN_WRITE_WAIT_MS;
  m->ns = o->namespace ? strdup(o->namespace) : NULL;
  m->bind = strdup(o->bind ? o->bind : "0.0.0.0");
  m->o.namespace = m->ns;
  m->o.bind = m->bind;
  const char *id = o->identity ? o->identity : o->leader.identity;
  struct recorder_opts ro = { "godwit-controller", id };
  gw_rc rc = (o->namespace && !m->ns) || !m->bind ? GW_ENOMEM : GW_OK;
  if(!rc)
    rc = recorder_new(&m->rec, o->events_kube ? o->events_kube : o->kube, &ro);
  if(!rc && o->leader_elect) {
    struct leader_opts lo = o->leader;
    lo.events = m->rec;
    lo.ctx = m;
    lo.on_started = mgr_on_started;
    lo.on_stopped = mgr_on_stopped;
    lo.on_new_leader = NULL;
    rc = leader_new(&m->leader, m->o.leader_kube, &lo);
  }
  if(rc) {
    mgr_free(m);
    return rc;
  }
  *out = m;
  return GW_OK;
}

static bool same_gvr(const struct kube_gvr *a, const struct kube_gvr *b)
{
  return !strcmp(a->group, b->group) && !strcmp(a->version, b->version) &&
         !strcmp(a->resource, b->resource);
}

gw_rc mgr_informer_selected(struct mgr *m, const struct kube_gvr *gvr, const char *field_selector,
                            struct informer **out)
{
  for(int i = 0; i < m->ninfs; i++)
    if(same_gvr(informer_gvr(m->infs[i]), gvr)) {
      const char *had = m->inf_selectors[i];
      if((had || field_selector) && (!had || !field_selector || strcmp(had, field_selector)))
        return GW_EINVAL;
      *out = m->infs[i];
      return GW_OK;
    }
  if(m->started || m->ninfs == MGR_MAX_INFORMERS)
    return GW_EINVAL;
  char *sel = field_selector ? strdup(field_selector) : NULL;
  if(field_selector && !sel)
    return GW_ENOMEM;
  struct informer_opts io = { gvr, gvr->namespaced ? m->ns : NULL, NULL, sel };
  gw_rc rc = informer_new(out, m->o.kube, &io);
  if(rc) {
    free(sel);
    return rc;
  }
  m->inf_selectors[m->ninfs] = sel;
  m->infs[m->ninfs++] = *out;
  return GW_OK;
}

gw_rc mgr_informer(struct mgr *m, const struct kube_gvr *gvr, struct informer **out)
{
  return mgr_informer_selected(m, gvr, NULL, out);
}

struct informer *mgr_cache(struct mgr *m, const struct kube_gvr *gvr)
{
  for(int i = 0; m && i < m->ninfs; i++)
    if(same_gvr(informer_gvr(m->infs[i]), gvr))
      return m->infs[i];
  return NULL;
}

/* The cache now shows obj: an own write it was waiting for is seen (or the object is gone). */
static void own_write_seen(struct ctrl *c, const char *key, enum inf_event ev, const cJSON *obj)
{
  pthread_mutex_lock(&c->mu);
  struct own_write *w = strmap_get(&c->written, key);
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(w && (ev == INF_DELETED || (rv && !strcmp(rv, w->rv))))
    free(strmap_del(&c->written, key));
  pthread_mutex_unlock(&c->mu);
}

static void on_primary(void *ctx, enum inf_event ev, const cJSON *obj, const cJSON *old)
{
  struct ctrl *c = ctx;
  char key[512];
  if(informer_key(obj, key, sizeof(key)))
    return;
  own_write_seen(c, key, ev, obj);
  if(ev != INF_DELETED && c->def.filter && !c->def.filter(obj, ev == INF_MODIFIED ? old : NULL))
    return;
  wq_add(c->q, key);
}

gw_rc mgr_add_controller(struct mgr *m, const struct ctrl_def *d, struct ctrl **out)
{
  if(m->started || m->nctrls == MGR_MAX_CTRLS || !d->name || !d->gvr || !d->reconcile)
    return GW_EINVAL;
  for(int i = 0; i < m->nctrls; i++)
    if(!strcmp(m->ctrls[i]->name, d->name))
      return GW_EINVAL;
  struct ctrl *c = calloc(1, sizeof(*c));
  if(!c)
    return GW_ENOMEM;
  pthread_mutex_init(&c->mu, NULL);
  strmap_init(&c->written);
  c->m = m;
  c->def = *d;
  c->name = strdup(d->name);
  c->kind = strdup(d->kind ? d->kind : d->gvr->resource);
  c->nworkers = d->workers > 0 ? d->workers : m->o.workers;
  if(c->nworkers > CTRL_MAX_WORKERS)
    c->nworkers = CTRL_MAX_WORKERS;
  struct wq_opts qo = m->o.queue;
  qo.name = d->name;
  gw_rc rc = c->name && c->kind ? GW_OK : GW_ENOMEM;
  if(!rc)
    rc = wq_new(&c->q, &qo);
  if(!rc)
    rc = mgr_informer(m, d->gvr, &c->inf);
  if(!rc)
    rc = informer_add_handler(c->inf, on_primary, c);
  if(rc) {
    wq_free(c->q);
    free(c->name);
    free(c->kind);
    strmap_release(&c->written, free);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return rc;
  }
  m->ctrls[m->nctrls++] = c;
  if(out)
    *out = c;
  return GW_OK;
}

static bool same_member(const cJSON *a, const cJSON *b, const char *path)
{
  const cJSON *x = json_get(a, path), *y = json_get(b, path);
  return (!x && !y) || (x && y && json_equal(x, y));
}

static void on_watch(void *ctx, enum inf_event ev, const cJSON *obj, const cJSON *old)
{
  (void)ev;
  struct watch *w = ctx;
  w->map(w->ctx, w->c, obj);
  /* an owner (or a selected object) that the change moved away from hears of it too */
  if(old && !(same_member(obj, old, "metadata.ownerReferences") &&
              same_member(obj, old, "metadata.labels")))
    w->map(w->ctx, w->c, old);
}

gw_rc ctrl_watch(struct ctrl *c, const struct kube_gvr *gvr, ctrl_map_fn map, void *ctx)
{
  if(c->nwatches == CTRL_MAX_WATCHES)
    return GW_EINVAL;
  struct informer *inf;
  gw_rc rc = mgr_informer(c->m, gvr, &inf);
  if(rc)
    return rc;
  struct watch *w = &c->watches[c->nwatches];
  w->c = c;
  w->map = map;
  w->ctx = ctx ? ctx : w;
  rc = informer_add_handler(inf, on_watch, w);
  if(!rc)
    c->nwatches++;
  return rc;
}

static void map_owner(void *ctx, struct ctrl *c, const cJSON *obj)
{
  const struct watch *w = ctx;
  const char *ns = json_get_str(obj, "metadata.namespace");
  size_t gl = strlen(w->group);
  const cJSON *ref;
  cJSON_ArrayForEach(ref, json_get(obj, "metadata.ownerReferences"))
  {
    const char *av = json_get_str(ref, "apiVersion");
    const char *kind = json_get_str(ref, "kind");
    const char *name = json_get_str(ref, "name");
    if(!json_get_bool(ref, "controller", false) || !av || !kind || !name)
      continue;
    bool group_ok = gl ? !strncmp(av, w->group, gl) && av[gl] == '/' : !strchr(av, '/');
    if(!group_ok || strcmp(kind, w->kind))
      continue;
    char key[512];
    if(ns && *ns)
      snprintf(key, sizeof(key), "%s/%s", ns, name);
    else
      snprintf(key, sizeof(key), "%s", name);
    wq_add(c->q, key);
  }
}

gw_rc ctrl_watch_owned(struct ctrl *c, const struct kube_gvr *gvr, const char *owner_group,
                       const char *owner_kind)
{
  if(c->nwatches == CTRL_MAX_WATCHES)
    return GW_EINVAL;
  struct watch *w = &c->watches[c->nwatches];
  snprintf(w->group, sizeof(w->group), "%s", owner_group ? owner_group : "");
  snprintf(w->kind, sizeof(w->kind), "%s", owner_kind);
  return ctrl_watch(c, gvr, map_owner, w);
}

void ctrl_enqueue(struct ctrl *c, const char *key)
{
  wq_add(c->q, key);
}

void ctrl_enqueue_after(struct ctrl *c, const char *key, long ms)
{
  wq_add_after(c->q, key, ms);
}

struct wq *ctrl_queue(struct ctrl *c)
{
  return c->q;
}

const char *ctrl_name(const struct ctrl *c)
{
  return c->name;
}

unsigned long long ctrl_reconciles(struct ctrl *c, enum rec_outcome o)
{
  pthread_mutex_lock(&c->mu);
  unsigned long long n = c->count[o];
  pthread_mutex_unlock(&c->mu);
  return n;
}

static void enqueue_key(void *ctx, const char *key, const cJSON *obj)
{
  (void)obj;
  wq_add(((struct ctrl *)ctx)->q, key);
}

static void resync(struct mgr *m)
{
  for(int i = 0; i < m->nctrls; i++)
    informer_each(m->ctrls[i]->inf, NULL, enqueue_key, m->ctrls[i]);
}

static void start_workers(struct mgr *m)
{
  pthread_mutex_lock(&m->mu);
  if(!m->stopping && !m->workers_running) {
    resync(m);
    for(int i = 0; i < m->nctrls; i++) {
      struct ctrl *c = m->ctrls[i];
      while(c->nthreads < c->nworkers &&
            !pthread_create(&c->threads[c->nthreads], NULL, mgr_worker, c))
        c->nthreads++;
    }
    m->workers_running = true;
    log_kv(LOG_INFO, "workers started", LOG_END);
  }
  pthread_mutex_unlock(&m->mu);
}

/* Lets in-flight reconciles finish; starts none. */
static void stop_workers(struct mgr *m)
{
  pthread_mutex_lock(&m->mu);
  m->stopping = true;
  bool were = m->workers_running;
  pthread_mutex_unlock(&m->mu);
  for(int i = 0; i < m->nctrls; i++)
    wq_shutdown(m->ctrls[i]->q);
  for(int i = 0; i < m->nctrls; i++) {
    struct ctrl *c = m->ctrls[i];
    for(int t = 0; t < c->nthreads; t++)
      pthread_join(c->threads[t], NULL);
    c->nthreads = 0;
  }
  pthread_mutex_lock(&m->mu);
  m->workers_running = false;
  pthread_mutex_unlock(&m->mu);
  if(were)
    log_kv(LOG_INFO, "workers drained", LOG_END);
}

static void mgr_on_started(void *ctx)
{
  start_workers(ctx);
}

static void mgr_on_stopped(void *ctx)
{
  struct mgr *m = ctx;
  m->lost = 1;
}

/* ---- running ---- */

static bool healthy(void *ctx, char *why, size_t len)
{
  struct mgr *m = ctx;
  if(m->lost) {
    snprintf(why, len, "leadership lost");
    return false;
  }
  return true;
}

static bool ready(void *ctx, char *why, size_t len)
{
  struct mgr *m = ctx;
  if(!mgr_synced(m)) {
    snprintf(why, len, "caches not synced");
    return false;
  }
  if(m->lost) {
    snprintf(why, len, "leadership lost");
    return false;
  }
  return true; /* leading, or a standby with a warm cache */
}

static gw_rc render(void *ctx, struct strbuf *sb)
{
  return mgr_render_metrics(ctx, sb);
}

gw_rc mgr_start(struct mgr *m, char *err, size_t errlen)
{
  if(m->started)
    return GW_EINVAL;
  m->started = true;
  gw_rc rc = GW_OK;
  if(m->o.metrics_port >= 0) {
    struct health_ops ops = { healthy, ready, render, m };
    rc = health_start(&m->health, m->o.bind, m->o.metrics_port, &ops, err, errlen);
    if(rc)
      return rc;
  }
  for(int i = 0; i < m->ninfs && !rc; i++) {
    rc = informer_start(m->infs[i]);
    if(rc)
      snprintf(err, errlen, "cannot start the informer of %s", informer_gvr(m->infs[i])->resource);
  }
  return rc;
}

static bool all_synced(struct mgr *m, volatile int *stop)
{
  int64_t end = kt_mono_ms() + m->o.cache_sync_timeout_ms;
  for(int i = 0; i < m->ninfs; i++) {
    long left = (long)(end - kt_mono_ms());
    if(left <= 0 || !informer_wait_synced(m->infs[i], left, stop))
      return false;
  }
  return true;
}

gw_rc mgr_run(struct mgr *m, volatile int *stop)
{
  if(!m->started)
    return GW_EINVAL;
  if(!all_synced(m, stop)) {
    if(*stop)
      return GW_OK;
    log_kv(LOG_ERROR, "caches did not sync in time", LOG_END);
    return GW_ETIMEOUT;
  }
  pthread_mutex_lock(&m->mu);
  m->synced = true;
  pthread_mutex_unlock(&m->mu);
  log_kv(LOG_INFO, "caches synced", LOG_END);
  gw_rc rc = GW_OK;
  if(m->leader)
    rc = leader_start(m->leader);
  else
    start_workers(m);
  int64_t next_resync = kt_mono_ms() + m->o.resync_ms;
  while(!rc && !*stop && !m->lost) {
    kt_sleep_ms(100, stop);
    if(m->o.resync_ms > 0 && kt_mono_ms() >= next_resync) {
      resync(m);
      next_resync = kt_mono_ms() + m->o.resync_ms;
    }
  }
  log_kv(LOG_INFO, m->lost ? "stopping: leadership lost" : "stopping: draining workers",
         LOG_END);
  stop_workers(m);
  if(m->leader)
    (void)leader_release(m->leader);
  return rc ? rc : m->lost ? GW_EDENIED : GW_OK;
}

bool mgr_synced(struct mgr *m)
{
  pthread_mutex_lock(&m->mu);
  bool s = m->synced;
  pthread_mutex_unlock(&m->mu);
  return s;
}

bool mgr_leading(struct mgr *m)
{
  if(m->leader)
    return leader_is_leader(m->leader);
  pthread_mutex_lock(&m->mu);
  bool r = m->workers_running;
  pthread_mutex_unlock(&m->mu);
  return r;
}

int mgr_metrics_port(const struct mgr *m)
{
  return health_port(m->health);
}

struct recorder *mgr_recorder(struct mgr *m)
{
  return m->rec;
}

struct leader *mgr_leader(struct mgr *m)
{
  return m->leader;
}

void mgr_free(struct mgr *m)
{
  if(!m)
    return;
  stop_workers(m);
  if(m->leader) {
    (void)leader_release(m->leader);
    leader_free(m->leader);
  }
  health_stop(m->health);
  for(int i = 0; i < m->ninfs; i++)
    informer_request_stop(m->infs[i]); /* all at once: each may wait a watch read out */
  for(int i = 0; i < m->ninfs; i++)
    informer_stop(m->infs[i]);
  for(int i = 0; i < m->nctrls; i++) {
    struct ctrl *c = m->ctrls[i];
    wq_free(c->q);
    strmap_release(&c->written, free);
    pthread_mutex_destroy(&c->mu);
    free(c->name);
    free(c->kind);
    free(c);
  }
  for(int i = 0; i < m->ninfs; i++) {
    informer_free(m->infs[i]);
    free(m->inf_selectors[i]);
  }
  recorder_free(m->rec);
  pthread_mutex_destroy(&m->mu);
  free(m->ns);
  free(m->bind);
  free(m);
}

