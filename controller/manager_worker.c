/* The manager's workers: one reconcile at a time per key, results turned into queue actions
 * and metrics; and the helpers reconcilers call (manager.h, "for reconcilers"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditions.h"
#include "json.h"
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

/* Milliseconds this reconcile of key should wait for the cache to show the controller's own last
 * write (0: go). Deciding from a copy older than one's own write is a 409 and a second write;
 * the watch event of the write enqueues the key again as soon as the cache has it. */
static long own_write_wait(struct ctrl *c, const char *key)
{
  long wait = 0;
  pthread_mutex_lock(&c->mu);
  struct own_write *w = strmap_get(&c->written, key);
  if(w) {
    int64_t age = kt_mono_ms() - w->at_ms;
    if(age >= c->m->o.own_write_wait_ms) {
      free(strmap_del(&c->written, key));
    } else {
      wait = (long)(c->m->o.own_write_wait_ms - age);
      c->own_write_waits++;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return wait;
}

static void own_write_record(struct ctrl *c, const char *key, const cJSON *stored)
{
  const char *rv = json_get_str(stored, "metadata.resourceVersion");
  struct own_write *w = rv ? calloc(1, sizeof(*w)) : NULL;
  if(!w)
    return;
  snprintf(w->rv, sizeof(w->rv), "%s", rv);
  w->at_ms = kt_mono_ms();
  void *old = NULL;
  pthread_mutex_lock(&c->mu);
  /* the cache may have shown it already, before this record: then it is current */
  cJSON *cached = informer_get(c->inf, key);
  const char *crv = json_get_str(cached, "metadata.resourceVersion");
  if(crv && !strcmp(crv, rv)) {
    old = strmap_del(&c->written, key);
    free(w);
  } else if(strmap_put(&c->written, key, w, &old)) {
    free(w);
  }
  pthread_mutex_unlock(&c->mu);
  cJSON_Delete(cached);
  free(old);
}

/* kstatus' Stalled: the controller cannot go on for a reason outside the object. Owned by the
 * core alone (no kind writes it), so it never fights a kind's Ready. */
#define COND_STALLED "Stalled"

static gw_rc stalled_forbidden(void *ctx, cJSON *obj, bool *changed)
{
  struct cond c = { COND_STALLED, COND_TRUE, "Forbidden", ctx };
  return cond_set(obj, &c, changed);
}

static gw_rc not_stalled(void *ctx, cJSON *obj, bool *changed)
{
  (void)ctx;
  cond_remove(obj, COND_STALLED, changed);
  return GW_OK;
}

/* A reconcile in which the API server's authorization refused a call (the controller's role
 * lacks a right; kube's message names the verb and the resource), failed or requeued, is said,
 * not retried in silence: in the log at error, as a Warning Event Forbidden on the object, and
 * as Stalled=True reason Forbidden in its conditions when the status may still be written. The
 * first pass without a refusal removes Stalled. */
static void report_forbidden(struct ctrl *c, struct rec_ctx *rc, const char *refusal)
{
  char msg[1200];
  snprintf(msg, sizeof(msg), "%s", refusal);
  log_kv(LOG_ERROR, "refused by the API server's authorization: the controller's role lacks a "
         "right (manifests/rbac-controller.yaml)", "controller", c->name, "key", rc->key,
         "status", msg, LOG_END);
  cJSON *obj = rec_get(rc);
  if(!obj)
    return;
  rec_event(rc, obj, "Warning", "Forbidden", "the controller may not do what this %s needs: %s",
            c->def.kind, msg);
  char text[1400];
  snprintf(text, sizeof(text), "the controller may not do what this %s needs: %s", c->def.kind,
           msg);
  gw_rc wrc = rec_update_status(rc, obj, stalled_forbidden, text, NULL);
  if(wrc && wrc != GW_ENOTFOUND)
    log_kv(LOG_WARN, "cannot say Forbidden in the status", "controller", c->name, "key", rc->key,
           "error", gw_strerror(wrc), LOG_END);
  cJSON_Delete(obj);
}

/* after a pass without a refusal: a Stalled=Forbidden left by an earlier one goes */
static bool is_stalled_forbidden(const cJSON *obj, void *ctx)
{
  (void)ctx;
  const char *reason = cond_reason(obj, COND_STALLED);
  return reason && !strcmp(reason, "Forbidden");
}

/* Asked of the cached object in place: every clean pass asks, and nearly every answer is no,
 * so no pass copies the object for it. */
static void clear_forbidden(struct rec_ctx *rc)
{
  if(!informer_test(rc->cache, rc->key, is_stalled_forbidden, NULL))
    return;
  cJSON *obj = rec_get(rc);
  if(obj && is_stalled_forbidden(obj, NULL)) {
    gw_rc wrc = rec_update_status(rc, obj, not_stalled, NULL, NULL);
    (void)wrc; /* a failed write leaves it for the next pass */
  }
  cJSON_Delete(obj);
}

static void process(struct ctrl *c, const char *key)
{
  struct mgr *m = c->m;
  long wait = own_write_wait(c, key);
  if(wait > 0) {
    wq_forget(c->q, key);
    wq_add_after(c->q, key, wait); /* the fallback: the watch event comes first */
    return;
  }
  char ns[256], name[256];
  if(informer_split_key(key, ns, sizeof(ns), name, sizeof(name))) {
    wq_forget(c->q, key);
    return;
  }
  struct rec_ctx rc = { m, c, m->o.kube, m->rec, c->inf, c->def.user, key, ns, name };
  int64_t t0 = kt_mono_ms();
  kube_forbidden_clear();
  struct rec_result r = c->def.reconcile(&rc);
  double secs = (double)(kt_mono_ms() - t0) / 1000.0;
  if(*kube_forbidden_last()) /* also when the reconcile took it as a reason to look again */
    report_forbidden(c, &rc, kube_forbidden_last());
  else
    clear_forbidden(&rc);
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
  if(!rc && res.written && out && *out)
    own_write_record(c->ctrl, c->key, *out);
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
