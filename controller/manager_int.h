/*
 * manager_int.h: the manager's insides, shared by manager.c and manager_metrics.c only.
 */
#ifndef GW_CTRL_MANAGER_INT_H
#define GW_CTRL_MANAGER_INT_H

#include <pthread.h>

#include "manager.h"
#include "metrics.h"
#include "strmap.h"

struct health;

#define MGR_MAX_INFORMERS 16
#define MGR_MAX_CTRLS 16
#define CTRL_MAX_WATCHES 8
#define CTRL_MAX_WORKERS 64

struct watch {
  struct ctrl *c;
  ctrl_map_fn map;
  void *ctx;
  char group[128], kind[128]; /* owner filter of ctrl_watch_owned */
};

struct ctrl {
  struct mgr *m;
  struct ctrl_def def;
  char *name, *kind;
  struct wq *q;
  struct informer *inf;
  int nworkers;
  pthread_t threads[CTRL_MAX_WORKERS];
  int nthreads;
  struct watch watches[CTRL_MAX_WATCHES];
  int nwatches;
  pthread_mutex_t mu;
  unsigned long long count[REC_NOUTCOMES];
  struct hist dur[REC_NOUTCOMES];
  unsigned long long st_written, st_unchanged, st_failed, st_conflicts;
  /* Read your own writes: key -> struct own_write, the resourceVersion of this controller's last
   * status write of the object until the cache has it (under mu). */
  struct strmap written;
  unsigned long long own_write_waits;
};

/* A status write the cache has not shown yet. */
struct own_write {
  char rv[64];
  int64_t at_ms; /* kt_mono_ms() of the write */
};
/* The default of mgr_opts.own_write_wait_ms: how long a reconcile of an object waits for the
 * cache to show this controller's own write before it reads the cache anyway (a relist can skip
 * the exact version). */
#define MGR_OWN_WRITE_WAIT_MS 1000

struct mgr {
  struct mgr_opts o;
  struct informer *infs[MGR_MAX_INFORMERS];
  char *inf_selectors[MGR_MAX_INFORMERS]; /* each one's field selector, or NULL */
  int ninfs;
  struct ctrl *ctrls[MGR_MAX_CTRLS];
  int nctrls;
  struct leader *leader;
  struct recorder *rec;
  struct health *health;
  char *ns, *bind;
  mgr_metrics_fn metrics_fn[MGR_MAX_METRICS];
  void *metrics_ctx[MGR_MAX_METRICS];
  int nmetrics;
  pthread_mutex_t mu;
  bool started, synced, workers_running, stopping;
  volatile int lost;
};

extern const char *const rec_outcome_names[REC_NOUTCOMES];

/* A worker thread of a controller (manager_worker.c); arg is the struct ctrl. */
void *mgr_worker(void *arg);

#endif
