#include "leader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json.h"
#include "ktime.h"
#include "log.h"

struct leader {
  struct kube_client *kube;
  struct leader_opts o;
  char *ns, *name, *id;
  pthread_mutex_t mu;
  pthread_t thread;
  bool running;
  volatile int stop;
  /* under mu */
  bool leading, lost;
  int64_t last_renew; /* monotonic ms at the start of the last successful write */
  char holder[256];
  struct leader_stats stats;
  /* the elector thread only */
  char *observed;       /* the last record seen, canonical JSON of spec */
  int64_t observed_at;  /* when it last changed, monotonic ms */
  char rv[64];
};

gw_rc leader_new(struct leader **out, struct kube_client *k, const struct leader_opts *o)
{
  if(!o->namespace || !o->name || !o->identity || !*o->identity)
    return GW_EINVAL;
  struct leader *l = calloc(1, sizeof(*l));
  if(!l)
    return GW_ENOMEM;
  pthread_mutex_init(&l->mu, NULL);
  l->kube = k;
  l->o = *o;
  if(l->o.lease_duration_s <= 0)
    l->o.lease_duration_s = 15;
  if(l->o.renew_deadline_ms <= 0)
    l->o.renew_deadline_ms = 10000;
  if(l->o.retry_period_ms <= 0)
    l->o.retry_period_ms = 2000;
  l->ns = strdup(o->namespace);
  l->name = strdup(o->name);
  l->id = strdup(o->identity);
  if(!l->ns || !l->name || !l->id) {
    leader_free(l);
    return GW_ENOMEM;
  }
  l->o.namespace = l->ns;
  l->o.name = l->name;
  l->o.identity = l->id;
  *out = l;
  return GW_OK;
}

const char *leader_identity(const struct leader *l)
{
  return l->id;
}

/* ---- the record ---- */

struct record {
  const char *holder;
  long duration_s;
  const char *acquire;
  long transitions;
};

static void read_record(const cJSON *lease, struct record *r)
{
  const cJSON *d = json_get(lease, "spec.leaseDurationSeconds");
  const cJSON *t = json_get(lease, "spec.leaseTransitions");
  r->holder = json_get_str(lease, "spec.holderIdentity");
  if(!r->holder)
    r->holder = "";
  r->duration_s = cJSON_IsNumber(d) ? (long)d->valuedouble : 0;
  r->acquire = json_get_str(lease, "spec.acquireTime");
  r->transitions = cJSON_IsNumber(t) ? (long)t->valuedouble : 0;
}

static void set_holder(struct leader *l, const char *holder)
{
  bool changed;
  pthread_mutex_lock(&l->mu);
  changed = strcmp(l->holder, holder) != 0;
  snprintf(l->holder, sizeof(l->holder), "%s", holder);
  pthread_mutex_unlock(&l->mu);
  if(changed) {
    log_kv(LOG_INFO, "lease holder changed", "lease", l->name, "holder", holder, "identity",
           l->id, LOG_END);
    if(l->o.on_new_leader)
      l->o.on_new_leader(l->o.ctx, holder);
  }
}

/* Notes when the record last changed, by our clock. */
static void observe(struct leader *l, const cJSON *lease, int64_t now)
{
  char *c = json_print_canonical(cJSON_GetObjectItemCaseSensitive(lease, "spec"));
  if(!c)
    return;
  if(!l->observed || strcmp(l->observed, c)) {
    if(l->observed)
      cJSON_free(l->observed);
    l->observed = c;
    l->observed_at = now;
  } else {
    cJSON_free(c);
  }
  const char *rv = json_get_str(lease, "metadata.resourceVersion");
  snprintf(l->rv, sizeof(l->rv), "%s", rv ? rv : "");
}

static cJSON *make_spec(const struct leader *l, const char *holder, long duration_s,
                        const char *acquire, const char *renew, long transitions)
{
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "holderIdentity", holder);
  cJSON_AddNumberToObject(s, "leaseDurationSeconds", (double)duration_s);
  cJSON_AddStringToObject(s, "acquireTime", acquire);
  cJSON_AddStringToObject(s, "renewTime", renew);
  cJSON_AddNumberToObject(s, "leaseTransitions", (double)transitions);
  (void)l;
  return s;
}

static bool create_lease(struct leader *l, int64_t start)
{
  char now[40];
  kt_rfc3339_micro_now(now, sizeof(now));
  cJSON *lease = cJSON_CreateObject();
  cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1");
  cJSON_AddStringToObject(lease, "kind", "Lease");
  cJSON *md = cJSON_AddObjectToObject(lease, "metadata");
  cJSON_AddStringToObject(md, "name", l->name);
  cJSON_AddStringToObject(md, "namespace", l->ns);
  cJSON_AddItemToObject(lease, "spec", make_spec(l, l->id, l->o.lease_duration_s, now, now, 0));
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  gw_rc rc = kube_create(l->kube, &KUBE_LEASES, l->ns, lease, false, &out, &st);
  if(!rc) {
    observe(l, out, start);
    set_holder(l, l->id);
  }
  else
    log_kv(LOG_DEBUG, "lease not created", "lease", l->name, "error", gw_strerror(rc), "reason",
           st.reason, LOG_END);
  cJSON_Delete(out);
  cJSON_Delete(lease);
  kube_status_release(&st);
  return !rc;
}

/* One round of client-go's tryAcquireOrRenew. start: when it began (monotonic ms). */
static bool try_acquire_or_renew(struct leader *l, int64_t start)
{
  struct kube_status st;
  kube_status_init(&st);
  cJSON *lease = NULL;
  gw_rc rc = kube_get(l->kube, &KUBE_LEASES, l->ns, l->name, &lease, &st);
  kube_status_release(&st);
  if(rc == GW_ENOTFOUND)
    return create_lease(l, start);
  if(rc)
    return false;
  int64_t now = kt_mono_ms();
  observe(l, lease, now);
  struct record r;
  read_record(lease, &r);
  set_holder(l, r.holder);
  bool mine = !strcmp(r.holder, l->id);
  if(*r.holder && !mine && l->observed_at + r.duration_s * 1000 > now) {
    cJSON_Delete(lease);
    return false; /* held, and not expired by our clock */
  }
  char ts[40];
  kt_rfc3339_micro_now(ts, sizeof(ts));
  const char *acquire = mine && r.acquire ? r.acquire : ts;
  long transitions = mine ? r.transitions : r.transitions + 1;
  cJSON *spec = make_spec(l, l->id, l->o.lease_duration_s, acquire, ts, transitions);
  cJSON_DeleteItemFromObjectCaseSensitive(lease, "spec");
  cJSON_AddItemToObject(lease, "spec", spec);
  cJSON *out = NULL;
  kube_status_init(&st);
  rc = kube_update(l->kube, &KUBE_LEASES, l->ns, lease, NULL, &out, &st);
  if(!rc) {
    observe(l, out, start);
    set_holder(l, l->id);
    pthread_mutex_lock(&l->mu);
    l->stats.transitions = transitions;
    pthread_mutex_unlock(&l->mu);
  } else {
    log_kv(LOG_DEBUG, "lease not written", "lease", l->name, "error", gw_strerror(rc), "reason",
           st.reason, LOG_END);
  }
  kube_status_release(&st);
  cJSON_Delete(out);
  cJSON_Delete(lease);
  return !rc;
}

static long jittered(long ms)
{
  return ms + (long)((double)ms * 0.2 * ((double)rand() / RAND_MAX));
}

static void became_leader(struct leader *l, int64_t start)
{
  pthread_mutex_lock(&l->mu);
  l->leading = true;
  l->last_renew = start;
  l->stats.leading = true;
  l->stats.acquired++;
  pthread_mutex_unlock(&l->mu);
  log_kv(LOG_INFO, "became leader", "lease", l->name, "namespace", l->ns, "identity", l->id,
         LOG_END);
  if(l->o.events) {
    cJSON *ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", "coordination.k8s.io/v1");
    cJSON_AddStringToObject(ref, "kind", "Lease");
    cJSON *md = cJSON_AddObjectToObject(ref, "metadata");
    cJSON_AddStringToObject(md, "name", l->name);
    cJSON_AddStringToObject(md, "namespace", l->ns);
    (void)recorder_event(l->o.events, ref, EV_NORMAL, "LeaderElection", "%s became leader",
                         l->id);
    cJSON_Delete(ref);
  }
  if(l->o.on_started)
    l->o.on_started(l->o.ctx);
}

static void *run(void *arg)
{
  struct leader *l = arg;
  log_kv(LOG_INFO, "waiting for the lease", "lease", l->name, "namespace", l->ns, "identity",
         l->id, LOG_END);
  while(!l->stop) {
    int64_t start = kt_mono_ms();
    if(try_acquire_or_renew(l, start)) {
      became_leader(l, start);
      break;
    }
    kt_sleep_ms(jittered(l->o.retry_period_ms), &l->stop);
  }
  while(!l->stop) {
    kt_sleep_ms(l->o.retry_period_ms, &l->stop);
    if(l->stop)
      break;
    int64_t start = kt_mono_ms();
    bool ok = try_acquire_or_renew(l, start);
    pthread_mutex_lock(&l->mu);
    if(ok)
      l->last_renew = start;
    else
      l->stats.renew_failures++;
    bool expired = !ok && kt_mono_ms() - l->last_renew >= l->o.renew_deadline_ms;
    if(expired) {
      l->leading = false;
      l->lost = true;
      l->stats.leading = false;
    }
    pthread_mutex_unlock(&l->mu);
    if(expired) {
      log_kv(LOG_ERROR, "leadership lost: the lease was not renewed within the renew deadline",
             "lease", l->name, "identity", l->id, LOG_END);
      if(l->o.on_stopped)
        l->o.on_stopped(l->o.ctx);
      break;
    }
  }
  return NULL;
}

gw_rc leader_start(struct leader *l)
{
  if(l->running)
    return GW_EINVAL;
  l->stop = 0;
  if(pthread_create(&l->thread, NULL, run, l))
    return GW_ENOMEM;
  l->running = true;
  return GW_OK;
}

bool leader_is_leader(struct leader *l)
{
  pthread_mutex_lock(&l->mu);
  bool ok = l->leading && kt_mono_ms() - l->last_renew < l->o.renew_deadline_ms;
  pthread_mutex_unlock(&l->mu);
  return ok;
}

bool leader_lost(struct leader *l)
{
  pthread_mutex_lock(&l->mu);
  bool lost = l->lost;
  pthread_mutex_unlock(&l->mu);
  return lost;
}

void leader_holder(struct leader *l, char *buf, size_t len)
{
  pthread_mutex_lock(&l->mu);
  snprintf(buf, len, "%s", l->holder);
  pthread_mutex_unlock(&l->mu);
}

void leader_stats(struct leader *l, struct leader_stats *out)
{
  pthread_mutex_lock(&l->mu);
  *out = l->stats;
  out->leading = l->leading && kt_mono_ms() - l->last_renew < l->o.renew_deadline_ms;
  pthread_mutex_unlock(&l->mu);
}

/* Writes an empty holder so the next candidate need not wait for the lease to expire. */
static gw_rc give_up(struct leader *l)
{
  struct kube_status st;
  kube_status_init(&st);
  cJSON *lease = NULL;
  gw_rc rc = kube_get(l->kube, &KUBE_LEASES, l->ns, l->name, &lease, &st);
  if(!rc) {
    struct record r;
    read_record(lease, &r);
    if(strcmp(r.holder, l->id)) {
      rc = GW_OK; /* someone else holds it already: nothing to give up */
    } else {
      char ts[40];
      kt_rfc3339_micro_now(ts, sizeof(ts));
      cJSON *spec = make_spec(l, "", 1, ts, ts, r.transitions);
      cJSON_DeleteItemFromObjectCaseSensitive(lease, "spec");
      cJSON_AddItemToObject(lease, "spec", spec);
      cJSON *out = NULL;
      kube_status_release(&st);
      kube_status_init(&st);
      rc = kube_update(l->kube, &KUBE_LEASES, l->ns, lease, NULL, &out, &st);
      cJSON_Delete(out);
      if(!rc)
        log_kv(LOG_INFO, "lease released", "lease", l->name, "identity", l->id, LOG_END);
    }
  }
  if(rc)
    log_kv(LOG_WARN, "lease not released; the other replica takes over when it expires", "lease",
           l->name, "error", gw_strerror(rc), "reason", st.reason, LOG_END);
  cJSON_Delete(lease);
  kube_status_release(&st);
  return rc;
}

gw_rc leader_release(struct leader *l)
{
  if(!l || !l->running)
    return GW_OK;
  l->stop = 1;
  pthread_join(l->thread, NULL);
  l->running = false;
  pthread_mutex_lock(&l->mu);
  bool was = l->leading;
  l->leading = false;
  l->stats.leading = false;
  pthread_mutex_unlock(&l->mu);
  return was ? give_up(l) : GW_OK;
}

void leader_free(struct leader *l)
{
  if(!l)
    return;
  if(l->running) {
    l->stop = 1;
    pthread_join(l->thread, NULL);
  }
  if(l->observed)
    cJSON_free(l->observed);
  pthread_mutex_destroy(&l->mu);
  free(l->ns);
  free(l->name);
  free(l->id);
  free(l);
}
