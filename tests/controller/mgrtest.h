/*
 * mgrtest.h: helpers of the controller-manager tests (test_manager*.c): objects, a manager run
 * on a thread, metrics lookups, waiting.
 */
#ifndef GW_TEST_MGRTEST_H
#define GW_TEST_MGRTEST_H

#include <cJSON.h>
#include <pthread.h>
#include <stdbool.h>

#include "harness.h"
#include "manager.h"

cJSON *mt_parse(const char *s);
void mt_ensure_namespace(struct kube_client *k, const char *ns);
/* A minimal valid pgcopydb.io/v1 Migration. */
void mt_create_migration(struct kube_client *k, const char *ns, const char *name);
/* Labelled godwit-test=1 (the cluster adds a kube-root-ca.crt ConfigMap to every namespace). */
void mt_create_configmap(struct kube_client *k, const char *ns, const char *name,
                         const char *value);
/* The object from the API (cJSON_Delete it), or NULL when absent. */
cJSON *mt_get(struct kube_client *k, const struct kube_gvr *r, const char *ns, const char *name);
/* status.phase of the Migration, or "" (static buffer of the caller's thread). */
const char *mt_phase(struct kube_client *k, const char *ns, const char *name);
/* Polls cond(arg) every 50 ms until true or timeout_ms. */
bool mt_wait(int timeout_ms, bool (*cond)(void *), void *arg);

/* A manager on its own thread. */
struct mt_mgr {
  struct mgr *m;
  pthread_t t;
  volatile int stop;
  gw_rc rc;
  bool running;
};
/* opts: NULL for defaults (2 workers, no listener, no leader election) with kube k. */
void mt_mgr_init(struct mt_mgr *r, struct kube_client *k, const struct mgr_opts *opts);
void mt_mgr_run(struct mt_mgr *r);
void mt_mgr_stop(struct mt_mgr *r);

/* The value of the series (exact text up to the value, e.g.
 * `godwit_controller_reconcile_total{controller="x",kind="X",result="success"}`) in text, or -1. */
double mt_metric(const char *text, const char *series);
double mt_mgr_metric(struct mgr *m, const char *series);

#endif
