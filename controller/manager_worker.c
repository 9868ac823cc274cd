/* The manager's workers: one reconcile at a time per key, results turned into queue actions
 * and metrics; and the helpers reconcilers call (manager.h, "for reconcilers"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktime.h"
#include "log.h"
#include "manager_int.h"

/* ---- workers ---- */

static void record(struct ctrl *c, enum rec_outcome o, double seconds)
{
  pthread_mutex_lock(&c->mu);
  c->count[o]++;
  hist_observe(&c->dur[o], seconds);
  pthread_mutex_unlock(&c->mu);
}

static void process(struct ctrl *c, const char *key)
{
  struct mgr *m = c->m;
  char ns[256], name[256];
  if(informer_split_key(key, ns, sizeof(ns), name, sizeof(name))) {
    wq_forget(c->q, key);
    return;
  }
  struct rec_ctx rc = { m, c, m->o.kube, m->rec, c->inf, c->def.user, key, ns, name };
  int64_t t0 = kt_mono_ms();
  struct rec_result r = c->def.reconcile(&rc);
  double secs = (double)(kt_mono_ms() - t0) / 1000.0;
  char ms[24];
  snprintf(ms, sizeof(ms), "%.1f", secs * 1000);
  enum rec_outcome o;
  if(!r.rc && r.requeue_after_ms > 0) {
    o = REC_REQUEUE;
    wq_forget(c->q, key);
    wq_add_after(c->q, key, r.requeue_after_ms);
  } else if(!r.rc) {
    o = REC_SUCCESS;
    wq_forget(c->q, key);
  } else if(r.terminal) {
    o = REC_TERMINAL;
    wq_forget(c->q, key);
    log_kv(LOG_ERROR, "reconcile failed for good", "controller", c->name, "key", key, "error",
           gw_strerror(r.rc), LOG_END);
  } else {
    o = REC_ERROR;
    char n[16];
    snprintf(n, sizeof(n), "%d", wq_num_requeues(c->q, key) + 1);
    wq_add_rate_limited(c->q, key);
    log_kv(LOG_WARN, "reconcile failed; retrying with backoff", "controller", c->name, "key",
           key, "error", gw_strerror(r.rc), "failures", n, LOG_END);
  }
  record(c, o, secs);
  if(log_enabled(LOG_DEBUG))
    log_kv(LOG_DEBUG, "reconciled", "controller", c->name, "key", key, "result",
           rec_outcome_names[o], "ms", ms, "identity", m->leader ? leader_identity(m->leader) : "",
           LOG_END);
}

void *mgr_worker(void *arg)
{
  struct ctrl *c = arg;
  struct mgr *m = c->m;
  for(;;) {
    char *key = NULL;
    gw_rc rc = wq_get(c->q, &key);
    if(rc == GW_ESTOPPED)
      break;
    if(rc) {
      kt_sleep_ms(100, NULL);
      continue;
    }
    if(m->leader && !leader_is_leader(m->leader)) {
      /* the lease lapsed: reconcile nothing until the elector decides */
      wq_done(c->q, key);
      wq_add_after(c->q, key, 1000);
      free(key);
      kt_sleep_ms(100, &m->lost);
      continue;
    }
    process(c, key);
    wq_done(c->q, key);
    free(key);
  }
  return NULL;
}

/* ---- for reconcilers ---- */

cJSON *rec_get(struct rec_ctx *c)
{
  return informer_get(c->cache, c->key);
}

gw_rc rec_update_status(struct rec_ctx *c, const cJSON *cached, status_mutate_fn fn, void *ctx,
                        cJSON **out)
{
  struct kube_status st;
  kube_status_init(&st);
  struct status_result res;
  gw_rc rc = status_update(c->kube, informer_gvr(c->cache), *c->ns ? c->ns : NULL, c->name,
                           cached, fn, ctx, out, &res, &st);
  pthread_mutex_lock(&c->ctrl->mu);
  c->ctrl->st_conflicts += (unsigned)res.conflicts;
  if(rc)
    c->ctrl->st_failed++;
  else if(res.written)
    c->ctrl->st_written++;
  else
    c->ctrl->st_unchanged++;
  pthread_mutex_unlock(&c->ctrl->mu);
  if(rc && rc != GW_ENOTFOUND) {
    char code[16];
    snprintf(code, sizeof(code), "%d", st.code);
    log_kv(LOG_WARN, "status not written", "controller", c->ctrl->name, "key", c->key, "error",
           gw_strerror(rc), "code", code, "reason", st.reason, LOG_END);
  }
  kube_status_release(&st);
  return rc;
}

void rec_event(struct rec_ctx *c, const cJSON *obj, const char *type, const char *reason,
               const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  (void)recorder_eventv(c->events, obj, type, reason, fmt, ap);
  va_end(ap);
}
