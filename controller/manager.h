/*
 * manager.h: the controller manager (controller-runtime's job): shared informers, controllers
 * with their work queues and workers, leader election, Events, health and metrics.
 *
 * Writing a reconciler
 *
 *   static struct rec_result reconcile(struct rec_ctx *c)
 *   {
 *     cJSON *m = rec_get(c);                    // a copy from the cache; NULL: gone
 *     if(!m)
 *       return rec_done();                      // deleted: nothing to do
 *     ...decide from what is there, never from memory...
 *     gw_rc rc = rec_update_status(c, m, mutate, &my_ctx, NULL);
 *     cJSON_Delete(m);
 *     if(rc == GW_ENOTFOUND)
 *       return rec_done();
 *     return rc ? rec_retry(rc) : rec_requeue_after(30000);
 *   }
 *
 *   static const struct ctrl_def def = { "migration", "Migration", &MIGRATION_GVR, reconcile };
 *   struct ctrl *ctl;
 *   if(!rc) rc = mgr_add_controller(m, &def, &ctl);
 *   if(!rc) rc = ctrl_watch_owned(ctl, &KUBE_JOBS, "pgcopydb.io", "Migration");
 *
 * Reconcile is level-based: it re-reads the state each time (the cache, or the API for what is
 * not cached), and returns
 *   rec_done()              success: the key's backoff is forgotten
 *   rec_requeue_after(ms)   success, look again in ms (polling a Job, a lag sample)
 *   rec_retry(rc)           a retryable error (API unavailable, conflict): per-key exponential
 *                           backoff (5 ms .. 1000 s) and the queue's token bucket
 *   rec_terminal(rc)        an error retrying cannot fix: the reconciler has recorded it (a
 *                           condition, an Event); the key is forgotten until the object changes
 * A key is never reconciled by two workers at once; changes that arrive meanwhile are merged
 * into one more reconcile afterwards.
 *
 * Lifecycle: mgr_new, mgr_add_controller (and watches), mgr_start (informers, health), then
 * mgr_run, which waits for the caches, runs the leader elector (if enabled), starts the workers
 * only while leading (all of them at once when leadership is disabled), and returns when *stop
 * becomes nonzero (graceful: workers drain, the lease is released) or when leadership is lost
 * (GW_EDENIED: exit, a new process starts as a standby). mgr_free stops what is left.
 *
 * The manager enqueues every cached key of each controller when it starts leading and every
 * resync period, so a missed event is repaired within that period.
 */
#ifndef GW_CTRL_MANAGER_H
#define GW_CTRL_MANAGER_H

#include <cJSON.h>
#include <stdarg.h>
#include <stdbool.h>

#include "events.h"
#include "informer.h"
#include "kube/kube.h"
#include "leader.h"
#include "queue.h"
#include "rc.h"
#include "status.h"

struct mgr;
struct ctrl;

struct rec_result {
  gw_rc rc;
  long requeue_after_ms;
  bool terminal;
};

static inline struct rec_result rec_done(void)
{
  return (struct rec_result){ GW_OK, 0, false };
}
static inline struct rec_result rec_requeue_after(long ms)
{
  return (struct rec_result){ GW_OK, ms, false };
}
static inline struct rec_result rec_retry(gw_rc rc)
{
  return (struct rec_result){ rc ? rc : GW_EIO, 0, false };
}
static inline struct rec_result rec_terminal(gw_rc rc)
{
  return (struct rec_result){ rc ? rc : GW_EINVAL, 0, true };
}

/* What one reconcile sees. Valid during the call only. */
struct rec_ctx {
  struct mgr *mgr;
  struct ctrl *ctrl;
  struct kube_client *kube;
  struct recorder *events;
  struct informer *cache; /* the controller's primary resource */
  void *user;             /* ctrl_def.user */
  const char *key;        /* "ns/name" */
  const char *ns;         /* "" for cluster-scoped */
  const char *name;
};

typedef struct rec_result (*reconcile_fn)(struct rec_ctx *c);

struct ctrl_def {
  const char *name;           /* unique; the "controller" label of metrics and logs */
  const char *kind;           /* "Migration": the "kind" label */
  const struct kube_gvr *gvr; /* the primary resource, watched and cached */
  reconcile_fn reconcile;
  void *user;
  int workers; /* 0: the manager's default */
  /* Optional: whether a change deserves a reconcile (old is NULL on ADDED). Deletions and
   * relists always enqueue. */
  bool (*filter)(const cJSON *obj, const cJSON *old);
};

struct mgr_opts {
  struct kube_client *kube;         /* informers, reconcilers */
  struct kube_client *leader_kube;  /* leader election (short timeouts); NULL: kube */
  struct kube_client *events_kube;  /* Events, with a rate limiter of their own (as
                                     * controller-runtime's recorder has its own clientset), so
                                     * that Events never wait behind the reconcilers' writes nor
                                     * they behind Events; NULL: kube */
  const char *namespace;            /* watch one namespace; NULL: all */
  int workers;                      /* per controller; default 2 */
  long resync_ms;                   /* default 600000; negative: never */
  long cache_sync_timeout_ms;       /* default 120000 */
  long own_write_wait_ms;           /* read your own writes: how long a reconcile of an object
                                     * waits for the cache to show this controller's last status
                                     * write of it (default 1000; see rec_update_status) */
  bool leader_elect;
  struct leader_opts leader;        /* callbacks are the manager's; the rest is yours */
  const char *identity;             /* Event reportingInstance; default leader.identity */
  int metrics_port;                 /* -1: no listener; 0: any port */
  const char *bind;                 /* default 0.0.0.0 */
  struct wq_opts queue;             /* rate limits of every queue (name ignored) */
};

gw_rc mgr_new(struct mgr **out, const struct mgr_opts *o) GW_MUST_CHECK;
void mgr_free(struct mgr *m);

gw_rc mgr_add_controller(struct mgr *m, const struct ctrl_def *d, struct ctrl **out)
  GW_MUST_CHECK;
/* The shared informer of gvr (in the manager's namespace), created on first use. Before
 * mgr_start only. */
gw_rc mgr_informer(struct mgr *m, const struct kube_gvr *gvr, struct informer **out)
  GW_MUST_CHECK;

/* An informer of gvr that holds only the objects field_selector selects (as controller-runtime's
 * cache.Options.ByObject): mgr_cache(gvr) is then that cache, so one gvr has one selector, and a
 * second call with another selector is GW_EINVAL. Before mgr_start only. */
gw_rc mgr_informer_selected(struct mgr *m, const struct kube_gvr *gvr, const char *field_selector,
                            struct informer **out) GW_MUST_CHECK;

/* The cache of gvr, when a controller watches it (NULL otherwise): reconcilers read what they
 * watch from here, as controller-runtime's client does, and the API only where a decision needs
 * the freshest state (say so where it happens). Safe from any thread once started. */
struct informer *mgr_cache(struct mgr *m, const struct kube_gvr *gvr);

/* Enqueues a key of c from changes of another resource. */
typedef void (*ctrl_map_fn)(void *ctx, struct ctrl *c, const cJSON *obj);
gw_rc ctrl_watch(struct ctrl *c, const struct kube_gvr *gvr, ctrl_map_fn map, void *ctx)
  GW_MUST_CHECK;
/* Changes of objects whose controller ownerReference is an owner_group/owner_kind enqueue that
 * owner (Jobs of a Migration). */
gw_rc ctrl_watch_owned(struct ctrl *c, const struct kube_gvr *gvr, const char *owner_group,
                       const char *owner_kind) GW_MUST_CHECK;
void ctrl_enqueue(struct ctrl *c, const char *key);
void ctrl_enqueue_after(struct ctrl *c, const char *key, long ms);
struct wq *ctrl_queue(struct ctrl *c);
const char *ctrl_name(const struct ctrl *c);

/* Starts the informers and the health listener; returns at once. */
gw_rc mgr_start(struct mgr *m, char *err, size_t errlen) GW_MUST_CHECK;
/* Blocks: see above. */
gw_rc mgr_run(struct mgr *m, volatile int *stop) GW_MUST_CHECK;

bool mgr_synced(struct mgr *m);
bool mgr_leading(struct mgr *m); /* true without leader election once workers run */
int mgr_metrics_port(const struct mgr *m);
struct recorder *mgr_recorder(struct mgr *m);
struct leader *mgr_leader(struct mgr *m);
gw_rc mgr_render_metrics(struct mgr *m, struct strbuf *sb) GW_MUST_CHECK;
/* More series for /metrics, rendered after the manager's own (a controller's per-object
 * gauges). Before mgr_start only; at most MGR_MAX_METRICS. */
#define MGR_MAX_METRICS 8
typedef gw_rc (*mgr_metrics_fn)(void *ctx, struct strbuf *sb);
gw_rc mgr_add_metrics(struct mgr *m, mgr_metrics_fn fn, void *ctx) GW_MUST_CHECK;

/* Reconcile counts of a controller, by result. */
enum rec_outcome { REC_SUCCESS, REC_REQUEUE, REC_ERROR, REC_TERMINAL, REC_NOUTCOMES };
unsigned long long ctrl_reconciles(struct ctrl *c, enum rec_outcome o);

/* ---- for reconcilers ---- */

/* A copy of the object being reconciled from the cache (cJSON_Delete it), or NULL. */
cJSON *rec_get(struct rec_ctx *c);
/* status_update on the object being reconciled, starting from cached (may be NULL), counted
 * in the metrics (writes and conflicts). With out, the write is remembered: the next reconcile
 * of the object waits (mgr_opts.own_write_wait_ms at most) until the cache shows it, so a
 * decision is never made from a copy older than the controller's own last write (which would
 * cost a 409 and a second write); the write's watch event reconciles it at once. */
gw_rc rec_update_status(struct rec_ctx *c, const cJSON *cached, status_mutate_fn fn, void *ctx,
                        cJSON **out) GW_MUST_CHECK;
/* An Event on obj (best-effort; see events.h). */
void rec_event(struct rec_ctx *c, const cJSON *obj, const char *type, const char *reason,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
