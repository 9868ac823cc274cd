/* The controller manager against the local API server: the informer lists and follows, the
 * Migration's first observation sets Pending once, status writes survive conflicts, reconcile
 * results drive the queue (retry with backoff, terminal, requeue after), and the manager
 * converges after 500s, 429s, dropped watches and 410s. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "json.h"
#include "ktime.h"
#include "mgrtest.h"
#include "migration/migration.h"
#include "runjob.h"

#define NS "mgr-test"

static struct cl C;
static struct kube_client *K;

static void start(void)
{
  cl_start(&C, CL_FAULTS);
  K = cl_client(&C, "admin");
  mt_ensure_namespace(K, NS);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(ctrl_manager, .init = start, .fini = stop, .timeout = 240);

/* ---- the informer ---- */

struct seen {
  atomic_int added, modified, deleted;
};

static void count_events(void *ctx, enum inf_event ev, const cJSON *obj, const cJSON *old)
{
  struct seen *s = ctx;
  (void)obj;
  if(ev == INF_ADDED)
    atomic_fetch_add(&s->added, 1);
  else if(ev == INF_MODIFIED) {
    cr_assert_not_null(old, "a MODIFIED carries the object before");
    atomic_fetch_add(&s->modified, 1);
  } else
    atomic_fetch_add(&s->deleted, 1);
}

struct inf_state {
  struct informer *inf;
  const char *key, *value; /* value NULL: absent */
  size_t len;
};

static bool cache_has(void *arg)
{
  struct inf_state *s = arg;
  cJSON *o = informer_get(s->inf, s->key);
  bool ok = s->value ? o && json_get_str(o, "data.v") && !strcmp(json_get_str(o, "data.v"),
                                                                   s->value)
                     : !o;
  cJSON_Delete(o);
  return ok && (!s->len || informer_len(s->inf) == s->len);
}

static void expect_cache(struct informer *inf, const char *key, const char *value, size_t len)
{
  struct inf_state s = { inf, key, value, len };
  cr_assert(mt_wait(20000, cache_has, &s), "cache: %s should be %s (len %zu, has %zu)", key,
            value ? value : "absent", len, informer_len(inf));
}

static void put_value(const char *name, const char *value)
{
  char patch[128];
  snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%s\"}}", value);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &KUBE_CONFIGMAPS, NS, name, KUBE_PATCH_MERGE, patch, NULL, NULL,
                          &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
}

static void delete_obj(const struct kube_gvr *r, const char *name)
{
  struct kube_status st;
  kube_status_init(&st);
  struct kube_delete_opts o = { KUBE_PROPAGATE_DEFAULT, NULL, NULL, -1, false };
  cr_assert_eq(kube_delete(K, r, NS, name, &o, NULL, &st), GW_OK, "%s", st.message);
  kube_status_release(&st);
}

/* informer_test's predicate: data.v equals ctx (any value when ctx is NULL). */
static bool value_is(const cJSON *obj, void *ctx)
{
  const char *v = json_get_str(obj, "data.v");
  return v && (!ctx || !strcmp(v, ctx));
}

Test(ctrl_manager, informer_lists_then_follows_changes)
{
  mt_create_configmap(K, NS, "a", "1");
  mt_create_configmap(K, NS, "b", "1");
  struct informer *inf;
  struct informer_opts io = { &KUBE_CONFIGMAPS, NS, "godwit-test=1", NULL };
  cr_assert_eq(informer_new(&inf, K, &io), GW_OK);
  struct seen s = { 0 };
  cr_assert_eq(informer_add_handler(inf, count_events, &s), GW_OK);
  cr_assert_eq(informer_start(inf), GW_OK);
  cr_assert(informer_wait_synced(inf, 20000, NULL));
  cr_assert_eq(informer_len(inf), 2);
  cr_assert_eq(atomic_load(&s.added), 2, "the list reports each object as ADDED");
  cJSON *a = informer_get(inf, NS "/a");
  cr_assert_str_eq(json_get_str(a, "data.v"), "1");
  cJSON_Delete(a);
  cr_assert_null(informer_get(inf, NS "/zzz"));
  /* informer_test asks the cached object in place; an absent one is false whatever pred says */
  cr_assert(informer_test(inf, NS "/a", value_is, "1"));
  cr_assert_not(informer_test(inf, NS "/a", value_is, "2"));
  cr_assert_not(informer_test(inf, NS "/zzz", value_is, NULL));

  mt_create_configmap(K, NS, "c", "1");
  expect_cache(inf, NS "/c", "1", 3);
  put_value("a", "2");
  expect_cache(inf, NS "/a", "2", 3);
  delete_obj(&KUBE_CONFIGMAPS, "b");
  expect_cache(inf, NS "/b", NULL, 2);
  cr_assert_eq(atomic_load(&s.added), 3);
  cr_assert_geq(atomic_load(&s.modified), 1);
  cr_assert_eq(atomic_load(&s.deleted), 1);
  char rv[64];
  informer_resource_version(inf, rv, sizeof(rv));
  cr_assert(rv[0], "the informer knows the latest resourceVersion");
  informer_free(inf);
}

Test(ctrl_manager, informer_catches_up_after_dropped_watches_and_410)
{
  mt_create_configmap(K, NS, "keep", "1");
  mt_create_configmap(K, NS, "gone", "1");
  struct informer *inf;
  struct informer_opts io = { &KUBE_CONFIGMAPS, NS, "godwit-test=1", NULL };
  cr_assert_eq(informer_new(&inf, K, &io), GW_OK);
  struct seen s = { 0 };
  cr_assert_eq(informer_add_handler(inf, count_events, &s), GW_OK);
  cr_assert_eq(informer_start(inf), GW_OK);
  cr_assert(informer_wait_synced(inf, 20000, NULL));
  cl_fault(&C, "{\"dropWatches\": true}");
  put_value("keep", "2");
  expect_cache(inf, NS "/keep", "2", 2);
  /* While its watches fail, an object goes and one comes, and history is compacted: only a
   * relist (after 410 Gone) can tell; the DELETED must still reach the handlers. */
  cl_fault(&C, "{\"verb\":\"watch\",\"pathRegex\":\"/namespaces/" NS "/configmaps$\","
               "\"code\":500,\"count\":4}");
  cl_fault(&C, "{\"dropWatches\": true}");
  delete_obj(&KUBE_CONFIGMAPS, "gone");
  mt_create_configmap(K, NS, "new", "1");
  put_value("keep", "3");
  cl_fault(&C, "{\"compact\": true}");
  expect_cache(inf, NS "/gone", NULL, 0);
  expect_cache(inf, NS "/new", "1", 0);
  expect_cache(inf, NS "/keep", "3", 2);
  cr_assert_eq(atomic_load(&s.deleted), 1, "the deletion seen through the relist");
  informer_free(inf);
}

/* ---- a cache with a field selector: the Job FailedCreate Events ---- */

static void create_job_event(const char *name, const char *kind, const char *job,
                             const char *reason, const char *ts, const char *msg)
{
  char body[1024];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"" NS "\"},\"involvedObject\":{\"apiVersion\":\"batch/v1\","
           "\"kind\":\"%s\",\"namespace\":\"" NS "\",\"name\":\"%s\"},\"reason\":\"%s\","
           "\"message\":\"%s\",\"type\":\"Warning\",\"source\":{\"component\":"
           "\"job-controller\"},\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\","
           "\"count\":1}", name, kind, job, reason, msg, ts, ts);
  cJSON *ev = cJSON_Parse(body);
  cr_assert_not_null(ev);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_EVENTS, NS, ev, false, NULL, &st), GW_OK, "%s", st.message);
  kube_status_release(&st);
  cJSON_Delete(ev);
}

struct refusal_wait {
  struct informer *inf;
  const char *want;
};

static bool refusal_is(void *arg)
{
  struct refusal_wait *w = arg;
  char buf[256];
  return !rj_job_refusal(K, w->inf, NS, "rf-job", buf, sizeof(buf)) && !strcmp(buf, w->want);
}

Test(ctrl_manager, a_selected_cache_holds_only_the_job_refusals)
{
  create_job_event("rf-job.1", "Job", "rf-job", "FailedCreate", "2026-01-01T00:00:01Z",
                   "pods rf-job-a is forbidden: exceeded quota");
  create_job_event("rf-job.2", "Job", "rf-job", "SuccessfulCreate", "2026-01-01T00:00:02Z",
                   "Created pod: rf-job-b");
  create_job_event("rf-pod.1", "Pod", "rf-job", "FailedCreate", "2026-01-01T00:00:03Z",
                   "not a Job");
  struct mt_mgr r;
  mt_mgr_init(&r, K, NULL);
  cr_assert_eq(rj_watch_refusals(r.m), GW_OK);
  cr_assert_eq(rj_watch_refusals(r.m), GW_OK, "the same selector again is the same cache");
  struct informer *other = NULL;
  cr_assert_eq(mgr_informer_selected(r.m, &KUBE_EVENTS, "reason=Other", &other), GW_EINVAL,
               "one resource, one selector");
  cr_assert_eq(mgr_informer(r.m, &KUBE_EVENTS, &other), GW_EINVAL);
  mt_mgr_run(&r);
  struct informer *inf = mgr_cache(r.m, &KUBE_EVENTS);
  cr_assert_not_null(inf);
  cr_assert(informer_wait_synced(inf, 20000, NULL));
  cr_assert_eq(informer_len(inf), 1, "only the Job's FailedCreate is cached");
  struct refusal_wait w = { inf, "pods rf-job-a is forbidden: exceeded quota" };
  cr_assert(refusal_is(&w));
  w.inf = NULL; /* without the cache: a LIST, the same answer */
  cr_assert(refusal_is(&w));
  /* a newer refusal follows through the watch; the newest is the one said */
  create_job_event("rf-job.3", "Job", "rf-job", "FailedCreate", "2026-01-01T00:00:09Z",
                   "pods rf-job-c is forbidden: the runner-Pod guard");
  w.inf = inf;
  w.want = "pods rf-job-c is forbidden: the runner-Pod guard";
  cr_assert(mt_wait(10000, refusal_is, &w), "the cache follows a new refusal");
  cr_assert_eq(informer_len(inf), 2);
  mt_mgr_stop(&r);
}

/* ---- the Migration's first observation ---- */

struct phase_wait {
  const char *name, *phase;
};

static bool has_phase(void *arg)
{
  struct phase_wait *w = arg;
  return !strcmp(mt_phase(K, NS, w->name), w->phase);
}

static void expect_phase(const char *name, const char *phase, int timeout_ms)
{
  struct phase_wait w = { name, phase };
  cr_assert(mt_wait(timeout_ms, has_phase, &w), "%s: phase \"%s\", want %s", name,
            mt_phase(K, NS, name), phase);
}

#define WRITTEN "godwit_controller_status_updates_total{controller=\"migration\"," \
                "kind=\"Migration\",result=\"written\"}"
#define UNCHANGED "godwit_controller_status_updates_total{controller=\"migration\"," \
                  "kind=\"Migration\",result=\"unchanged\"}"
#define CONFLICTS "godwit_controller_status_conflicts_total{controller=\"migration\"," \
                  "kind=\"Migration\"}"
#define SUCCESS "godwit_controller_reconcile_total{controller=\"migration\",kind=\"Migration\"," \
                "result=\"success\"}"
#define ERRORS "godwit_controller_reconcile_total{controller=\"migration\",kind=\"Migration\"," \
               "result=\"error\"}"

static struct mgr *wait_m;
static double wait_min;
static bool success_reaches(void *arg)
{
  (void)arg;
  return mt_mgr_metric(wait_m, SUCCESS) >= wait_min;
}

Test(ctrl_manager, observation_sets_pending_once)
{
  struct mt_mgr r;
  mt_mgr_init(&r, K, NULL);
  cr_assert_eq(migration_register(r.m, NULL), GW_OK);
  mt_mgr_run(&r);
  mt_create_migration(K, NS, "shop");
  expect_phase("shop", "Pending", 20000);
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "shop");
  const cJSON *og = json_get(m, "status.observedGeneration");
  cr_assert(cJSON_IsNumber(og));
  cr_assert_eq((long long)og->valuedouble, (long long)json_get(m, "metadata.generation")->valuedouble);
  char rv[64];
  snprintf(rv, sizeof(rv), "%s", json_get_str(m, "metadata.resourceVersion"));
  cJSON_Delete(m);

  /* More reconciles (a label change, a resync of everything) write nothing. */
  double before = mt_mgr_metric(r.m, SUCCESS);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &MIGRATION_GVR, NS, "shop", KUBE_PATCH_MERGE,
                          "{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}", NULL, NULL, &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
  wait_m = r.m;
  wait_min = before + 1;
  cr_assert(mt_wait(10000, success_reaches, NULL), "the label change was reconciled");
  cr_assert_eq(mt_mgr_metric(r.m, WRITTEN), 1, "Pending written exactly once");
  m = mt_get(K, &MIGRATION_GVR, NS, "shop");
  cr_assert_str_eq(json_get_str(m, "status.phase"), "Pending");
  cr_assert_str_eq(json_get_str(m, "metadata.labels.touched"), "yes");
  cJSON_Delete(m);

  /* A Migration someone already moved on is left alone. */
  mt_create_migration(K, NS, "moved");
  mt_mgr_stop(&r);
  cJSON *moved = mt_get(K, &MIGRATION_GVR, NS, "moved");
  if(strcmp(json_get_str(moved, "status.phase") ? json_get_str(moved, "status.phase") : "",
            "Validating")) {
    cr_assert_eq(json_set_str(moved, "status.phase", "Validating"), GW_OK);
    kube_status_init(&st);
    cr_assert_eq(kube_update(K, &MIGRATION_GVR, NS, moved, "status", NULL, &st), GW_OK, "%s",
                 st.message);
    kube_status_release(&st);
  }
  cJSON_Delete(moved);
  mt_mgr_init(&r, K, NULL);
  cr_assert_eq(migration_register(r.m, NULL), GW_OK);
  mt_mgr_run(&r);
  wait_m = r.m;
  wait_min = 2; /* both Migrations reconciled by the new manager */
  cr_assert(mt_wait(10000, success_reaches, NULL));
  cr_assert_str_eq(mt_phase(K, NS, "moved"), "Validating");
  cr_assert_str_eq(mt_phase(K, NS, "shop"), "Pending");
  cr_assert_eq(mt_mgr_metric(r.m, WRITTEN), 0, "a restarted manager writes nothing new");
  (void)rv;
  mt_mgr_stop(&r);
}

/* ---- status writes and conflicts ---- */

static gw_rc bump_attempts(void *ctx, cJSON *obj, bool *changed)
{
  atomic_int *calls = ctx;
  atomic_fetch_add(calls, 1);
  const cJSON *a = json_get(obj, "status.attempts");
  double n = cJSON_IsNumber(a) ? a->valuedouble : 0;
  gw_rc rc = json_set(obj, "status.attempts", cJSON_CreateNumber(n + 1));
  *changed = !rc;
  return rc;
}

Test(ctrl_manager, status_update_reapplies_the_mutation_after_a_conflict)
{
  mt_create_migration(K, NS, "race");
  cJSON *stale = mt_get(K, &MIGRATION_GVR, NS, "race");
  /* someone else writes first: the stale copy's resourceVersion is now old */
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &MIGRATION_GVR, NS, "race", KUBE_PATCH_MERGE,
                          "{\"status\":{\"attempts\":5}}", "status", NULL, &st),
               GW_OK, "%s", st.message);
  atomic_int calls = 0;
  struct status_result res;
  cJSON *out = NULL;
  gw_rc rc = status_update(K, &MIGRATION_GVR, NS, "race", stale, bump_attempts, &calls, &out,
                           &res, &st);
  cr_assert_eq(rc, GW_OK, "%s %s", gw_strerror(rc), st.message);
  cr_assert(res.written);
  cr_assert_eq(res.conflicts, 1);
  cr_assert_eq(atomic_load(&calls), 2, "applied to the stale copy, then to the fresh one");
  cr_assert_eq(json_get(out, "status.attempts")->valuedouble, 6,
               "the other writer's 5 was not lost");
  cJSON_Delete(out);
  cJSON_Delete(stale);

  /* Injected 409s: retried until the write passes. */
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/migrations/race/status$\",\"code\":409,"
               "\"count\":3}");
  calls = 0;
  rc = status_update(K, &MIGRATION_GVR, NS, "race", NULL, bump_attempts, &calls, &out, &res,
                     &st);
  cr_assert_eq(rc, GW_OK, "%s %s", gw_strerror(rc), st.message);
  cr_assert_eq(res.conflicts, 3);
  cr_assert_eq(json_get(out, "status.attempts")->valuedouble, 7);
  cJSON_Delete(out);

  /* Gone: GW_ENOTFOUND, no write. */
  rc = status_update(K, &MIGRATION_GVR, NS, "nosuch", NULL, bump_attempts, &calls, &out, &res,
                     &st);
  cr_assert_eq(rc, GW_ENOTFOUND);
  cr_assert_null(out);
  kube_status_release(&st);
}

Test(ctrl_manager, observation_survives_conflicts)
{
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/migrations/[^/]+/status$\",\"code\":409,"
               "\"count\":12}");
  struct mt_mgr r;
  mt_mgr_init(&r, K, NULL);
  cr_assert_eq(migration_register(r.m, NULL), GW_OK);
  mt_mgr_run(&r);
  mt_create_migration(K, NS, "c1");
  mt_create_migration(K, NS, "c2");
  expect_phase("c1", "Pending", 30000);
  expect_phase("c2", "Pending", 30000);
  cr_assert_geq(mt_mgr_metric(r.m, CONFLICTS), 12, "every injected 409 was met and retried");
  cr_assert_eq(mt_mgr_metric(r.m, WRITTEN), 2);
  mt_mgr_stop(&r);
}

Test(ctrl_manager, converges_after_500s_429s_dropped_watches_and_410s)
{
  mt_create_migration(K, NS, "f0");
  /* the first lists fail beyond the client's own retries */
  cl_fault(&C, "{\"verb\":\"list\",\"pathRegex\":\"/migrations$\",\"code\":500,\"count\":8}");
  struct mt_mgr r;
  mt_mgr_init(&r, K, NULL);
  cr_assert_eq(migration_register(r.m, NULL), GW_OK);
  mt_mgr_run(&r);
  expect_phase("f0", "Pending", 60000);
  /* status writes throttled, then failing, beyond the client's retries: reconcile errors,
   * requeued with backoff */
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/status$\",\"code\":429,\"count\":3,"
               "\"retryAfter\":1}");
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/status$\",\"code\":500,\"count\":8}");
  mt_create_migration(K, NS, "f1");
  expect_phase("f1", "Pending", 60000);
  cr_assert_geq(mt_mgr_metric(r.m, ERRORS), 1, "a reconcile failed and was retried");
  /* watches dropped, then failing while history is compacted: relist on 410 */
  cl_fault(&C, "{\"dropWatches\": true}");
  mt_create_migration(K, NS, "f2");
  expect_phase("f2", "Pending", 30000);
  cl_fault(&C, "{\"verb\":\"watch\",\"pathRegex\":\"/migrations$\",\"code\":500,\"count\":4}");
  cl_fault(&C, "{\"dropWatches\": true}");
  mt_create_migration(K, NS, "f3");
  cl_fault(&C, "{\"compact\": true}");
  expect_phase("f3", "Pending", 60000);
  for(int i = 0; i < 4; i++) {
    char n[16];
    snprintf(n, sizeof(n), "f%d", i);
    cr_assert_str_eq(mt_phase(K, NS, n), "Pending");
  }
  mt_mgr_stop(&r);
}

/* ---- reconcile results drive the queue ---- */

struct metric_wait {
  struct mgr *m;
  const char *series;
  double min;
};

static bool metric_reaches(void *arg)
{
  struct metric_wait *w = arg;
  return mt_mgr_metric(w->m, w->series) >= w->min;
}

/* Waits for a series to reach min (it is counted just after the reconcile returns). */
static void expect_metric(struct mgr *m, const char *series, double want)
{
  struct metric_wait w = { m, series, want };
  cr_assert(mt_wait(10000, metric_reaches, &w), "%s: %g, want %g", series,
            mt_mgr_metric(m, series), want);
  cr_assert_eq(mt_mgr_metric(m, series), want, "%s", series);
}

struct script {
  const char *key; /* the key under test; others are ignored */
  atomic_int calls;
  int fail_first;        /* retryable errors before success */
  int want;              /* calls to wait for */
  bool terminal;         /* always a terminal error */
  long requeue_ms;       /* success with requeue after */
  atomic_llong last_ms;
  int64_t at[64]; /* when each call started (monotonic ms) */
  atomic_int concurrent, max_concurrent;
};

static struct rec_result scripted(struct rec_ctx *c)
{
  struct script *s = c->user;
  if(strcmp(c->key, s->key))
    return rec_done();
  int now = atomic_fetch_add(&s->concurrent, 1) + 1;
  int prev = atomic_load(&s->max_concurrent);
  while(now > prev && !atomic_compare_exchange_weak(&s->max_concurrent, &prev, now))
    ;
  int n = atomic_fetch_add(&s->calls, 1) + 1;
  atomic_store(&s->last_ms, kt_mono_ms());
  if(n <= 64)
    s->at[n - 1] = kt_mono_ms();
  cJSON *o = rec_get(c);
  cr_assert_not_null(o, "the reconciled object is in the cache");
  cJSON_Delete(o);
  kt_sleep_ms(5, NULL);
  atomic_fetch_sub(&s->concurrent, 1);
  if(s->terminal)
    return rec_terminal(GW_EINVAL);
  if(n <= s->fail_first)
    return rec_retry(GW_ECONNECT);
  if(s->requeue_ms)
    return rec_requeue_after(s->requeue_ms);
  return rec_done();
}

static bool forgotten(void *q)
{
  return wq_num_requeues(q, NS "/r") == 0;
}

static struct ctrl *scripted_manager(struct mt_mgr *r, struct script *s, const char *name)
{
  struct mgr_opts o = { 0 };
  o.namespace = NS;
  o.metrics_port = -1;
  mt_mgr_init(r, K, &o);
  struct ctrl_def d = { name, "ConfigMap", &KUBE_CONFIGMAPS, scripted, s, 4, NULL };
  struct ctrl *c = NULL;
  cr_assert_eq(mgr_add_controller(r->m, &d, &c), GW_OK);
  mt_mgr_run(r);
  return c;
}

static bool calls_reach(void *arg)
{
  struct script *s = arg;
  return atomic_load(&s->calls) >= s->fail_first + 1;
}

Test(ctrl_manager, retryable_errors_back_off_then_succeed)
{
  struct script s = { .key = NS "/r", .fail_first = 4 };
  struct mt_mgr r;
  struct ctrl *c = scripted_manager(&r, &s, "retry");
  int64_t t0 = kt_mono_ms();
  mt_create_configmap(K, NS, "r", "1");
  cr_assert(mt_wait(10000, calls_reach, &s));
  /* 4 failures: backoff 5 + 10 + 20 + 40 ms at least */
  cr_assert_geq(atomic_load(&s.last_ms) - t0, 75);
  kt_sleep_ms(300, NULL);
  cr_assert_eq(atomic_load(&s.calls), 5, "no reconcile after success");
  expect_metric(r.m, "godwit_controller_reconcile_total{controller=\"retry\","
                     "kind=\"ConfigMap\",result=\"error\"}", 4);
  expect_metric(r.m, "godwit_workqueue_retries_total{name=\"retry\"}", 4);
  char build[256];
  snprintf(build, sizeof(build), "godwit_build_info{version=\"%s\",commit=\"%s\","
           "build_date=\"%s\"}", gw_version(), gw_commit(), gw_build_date());
  expect_metric(r.m, build, 1);
  cr_assert(mt_wait(5000, forgotten, ctrl_queue(c)), "success forgets the backoff");
  mt_mgr_stop(&r);
}

Test(ctrl_manager, terminal_errors_are_not_retried)
{
  struct script s = { .key = NS "/t", .terminal = true };
  struct mt_mgr r;
  scripted_manager(&r, &s, "terminal");
  mt_create_configmap(K, NS, "t", "1");
  cr_assert(mt_wait(10000, calls_reach, &s));
  kt_sleep_ms(500, NULL);
  cr_assert_eq(atomic_load(&s.calls), 1, "a terminal error waits for the object to change");
  put_value("t", "2");
  s.fail_first = 1;
  cr_assert(mt_wait(10000, calls_reach, &s), "a change reconciles again");
  expect_metric(r.m, "godwit_controller_reconcile_total{controller=\"terminal\","
                     "kind=\"ConfigMap\",result=\"terminal\"}", 2);
  mt_mgr_stop(&r);
}

static int64_t min_gap_ms(const struct script *s, int from, int to)
{
  int64_t gap = INT64_MAX;
  for(int i = from + 1; i < to; i++)
    if(s->at[i] - s->at[i - 1] < gap)
      gap = s->at[i] - s->at[i - 1];
  return gap;
}

static bool calls_want(void *arg)
{
  struct script *s = arg;
  return atomic_load(&s->calls) >= s->want;
}

static bool eight_calls(void *arg)
{
  return atomic_load(&((struct script *)arg)->calls) >= 8;
}

Test(ctrl_manager, requeue_after_polls_and_one_key_is_never_reconciled_twice_at_once)
{
  struct script s = { .key = NS "/p", .requeue_ms = 100 };
  struct mt_mgr r;
  scripted_manager(&r, &s, "poll");
  mt_create_configmap(K, NS, "p", "1");
  for(int i = 0; i < 20; i++) /* changes pile up while it is reconciled: merged */
    put_value("p", i % 2 ? "a" : "b");
  kt_sleep_ms(300, NULL); /* the last events arrive */
  int after_puts = atomic_load(&s.calls);
  cr_assert(after_puts <= 21 + 3, "%d reconciles for 21 changes", after_puts);
  cr_assert(after_puts + 7 <= 64);
  s.want = after_puts + 7;
  cr_assert(mt_wait(10000, eight_calls, &s) && mt_wait(10000, calls_want, &s));
  int64_t gap = min_gap_ms(&s, after_puts + 1, after_puts + 7);
  cr_assert(gap >= 95, "without changes, reconciles come every 100 ms (min gap %lld ms)",
            (long long)gap);
  cr_assert_eq(atomic_load(&s.max_concurrent), 1, "4 workers, one key: never two at once");
  cr_assert_geq(mt_mgr_metric(r.m, "godwit_controller_reconcile_total{controller=\"poll\","
                                   "kind=\"ConfigMap\",result=\"requeue\"}"), 8);
  mt_mgr_stop(&r);
}

/* ---- owned objects enqueue their owner ---- */

static struct rec_result count_only(struct rec_ctx *c)
{
  struct script *s = c->user;
  atomic_fetch_add(&s->calls, 1);
  return rec_done();
}

static bool calls_at_least(void *arg)
{
  struct script *s = arg;
  return atomic_load(&s->calls) >= s->fail_first;
}

Test(ctrl_manager, a_change_of_an_owned_object_reconciles_its_owner)
{
  mt_create_migration(K, NS, "owner");
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "owner");
  char cm[1024];
  snprintf(cm, sizeof(cm),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"owned\","
           "\"namespace\":\"%s\",\"ownerReferences\":[{\"apiVersion\":\"pgcopydb.io/v1\","
           "\"kind\":\"Migration\",\"name\":\"owner\",\"uid\":\"%s\",\"controller\":true}]},"
           "\"data\":{\"v\":\"1\"}}",
           NS, json_get_str(m, "metadata.uid"));
  cJSON_Delete(m);
  struct script s = { .fail_first = 1 };
  struct mt_mgr r;
  mt_mgr_init(&r, K, NULL);
  struct ctrl_def d = { "owner", "Migration", &MIGRATION_GVR, count_only, &s, 1, NULL };
  struct ctrl *c;
  cr_assert_eq(mgr_add_controller(r.m, &d, &c), GW_OK);
  cr_assert_eq(ctrl_watch_owned(c, &KUBE_CONFIGMAPS, "pgcopydb.io", "Migration"), GW_OK);
  mt_mgr_run(&r);
  cr_assert(mt_wait(10000, calls_at_least, &s));
  kt_sleep_ms(200, NULL);
  int base = atomic_load(&s.calls);
  struct kube_status st;
  kube_status_init(&st);
  cJSON *o = mt_parse(cm);
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, NULL, &st), GW_OK, "%s",
               st.message);
  cJSON_Delete(o);
  kube_status_release(&st);
  s.fail_first = base + 1;
  cr_assert(mt_wait(10000, calls_at_least, &s), "creating the owned object reconciled the owner");
  put_value("owned", "2");
  s.fail_first = base + 2;
  cr_assert(mt_wait(10000, calls_at_least, &s), "changing it did too");
  mt_create_configmap(K, NS, "unowned", "1");
  kt_sleep_ms(300, NULL);
  cr_assert_eq(atomic_load(&s.calls), base + 2, "an object without that owner enqueues nothing");
  mt_mgr_stop(&r);
}

/* ---- read your own writes ---- */

struct own {
  atomic_int calls;
  atomic_int stale; /* reconciles that saw a copy older than their own last write */
  char last_rv[64];
};

static gw_rc own_bump(void *ctx, cJSON *obj, bool *changed)
{
  (void)ctx;
  const cJSON *a = json_get(obj, "status.attempts");
  int n = cJSON_IsNumber(a) ? (int)a->valuedouble : 0;
  *changed = true;
  return json_set(obj, "status.attempts", cJSON_CreateNumber(n + 1));
}

/* Writes status.attempts + 1 and asks to look again at once, 20 times: each reconcile must see
 * the write of the one before (the watch of the write, not the 1 ms requeue, brings it back). */
static struct rec_result writer(struct rec_ctx *c)
{
  struct own *s = c->user;
  if(strcmp(c->name, "own"))
    return rec_done();
  cJSON *o = rec_get(c);
  if(!o)
    return rec_done();
  int n = atomic_fetch_add(&s->calls, 1);
  const char *rv = json_get_str(o, "metadata.resourceVersion");
  if(n && (!rv || strcmp(rv, s->last_rv)))
    atomic_fetch_add(&s->stale, 1);
  const cJSON *a = json_get(o, "status.attempts");
  if(cJSON_IsNumber(a) && a->valuedouble >= 20) {
    cJSON_Delete(o);
    return rec_done();
  }
  cJSON *stored = NULL;
  gw_rc rc = rec_update_status(c, o, own_bump, NULL, &stored);
  const char *srv = json_get_str(stored, "metadata.resourceVersion");
  snprintf(s->last_rv, sizeof(s->last_rv), "%s", srv ? srv : "");
  cJSON_Delete(stored);
  cJSON_Delete(o);
  return rc ? rec_retry(rc) : rec_requeue_after(1);
}

static bool own_done(void *arg)
{
  (void)arg;
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "own");
  const cJSON *a = json_get(m, "status.attempts");
  bool done = cJSON_IsNumber(a) && a->valuedouble >= 20;
  cJSON_Delete(m);
  return done;
}

Test(ctrl_manager, a_reconcile_sees_its_own_last_status_write)
{
  struct own s = { 0 };
  struct mgr_opts o = { 0 };
  o.namespace = NS;
  o.metrics_port = -1;
  o.own_write_wait_ms = 60000; /* the watch always brings the write back before that */
  struct mt_mgr r;
  mt_mgr_init(&r, K, &o);
  struct ctrl_def d = { "own", "Migration", &MIGRATION_GVR, writer, &s, 2, NULL };
  cr_assert_eq(mgr_add_controller(r.m, &d, NULL), GW_OK);
  mt_mgr_run(&r);
  mt_create_migration(K, NS, "own");
  cr_assert(mt_wait(60000, own_done, NULL), "20 status writes");
  kt_sleep_ms(200, NULL);
  double conflicts = mt_mgr_metric(r.m, "godwit_controller_status_conflicts_total{"
                                        "controller=\"own\",kind=\"Migration\"}");
  double waits = mt_mgr_metric(r.m, "godwit_controller_own_write_waits_total{"
                                    "controller=\"own\",kind=\"Migration\"}");
  mt_mgr_stop(&r);
  cr_log_info("%d reconciles, %.0f put off until the cache had the write", atomic_load(&s.calls),
              waits);
  cr_assert_geq(atomic_load(&s.calls), 21);
  cr_assert_eq(atomic_load(&s.stale), 0, "a reconcile decided from a copy older than its write");
  cr_assert_eq(conflicts, 0, "no 409 on the way");
}
