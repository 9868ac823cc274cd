/* Watches and the reflector against the local API server: events in order, selectors,
 * bookmarks, 410 Gone after compaction, the stop flag, and a reflector that converges. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "kube/kube.h"
#include "strbuf.h"

#define NS "kube-watch"

static struct cl C;
static struct kube_client *K;

static void ensure_namespace(const char *ns)
{
  char buf[256];
  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
           "{\"name\":\"%s\"}}", ns);
  cJSON *o = cJSON_Parse(buf);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(K, &KUBE_NAMESPACES, NULL, o, false, NULL, &st);
  cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "namespace %s: %s", ns, st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

static void start(void)
{
  cl_start(&C, CL_NO_CRDS | CL_FAULTS);
  K = cl_client(&C, "admin");
  ensure_namespace(NS);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(kube_watch, .init = start, .fini = stop, .timeout = 180);

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put_cm(const char *name, const char *app, const char *value)
{
  char buf[512];
  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
           "{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"data\":{\"a\":\"%s\"}}", name, app,
           value);
  cJSON *o = cJSON_Parse(buf), *cur = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(K, &KUBE_CONFIGMAPS, NS, name, &cur, &st);
  if(rc == GW_ENOTFOUND) {
    rc = kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, NULL, &st);
  } else if(rc == GW_OK) {
    cr_assert_eq(json_set_str(o, "metadata.resourceVersion",
                              json_get_str(cur, "metadata.resourceVersion")), GW_OK);
    rc = kube_update(K, &KUBE_CONFIGMAPS, NS, o, NULL, NULL, &st);
  }
  cr_assert_eq(rc, GW_OK, "put %s: %s %s", name, gw_strerror(rc), st.message);
  cJSON_Delete(cur);
  cJSON_Delete(o);
  kube_status_release(&st);
}

static void del_cm(const char *name)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(K, &KUBE_CONFIGMAPS, NS, name, NULL, NULL, &st);
  cr_assert_eq(rc, GW_OK, "delete %s: %s", name, st.message);
  kube_status_release(&st);
}

/* The collection's current resourceVersion. */
static char *list_rv(const char *selector)
{
  struct kube_list_opts o = { .label_selector = selector };
  cJSON *l = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_list(K, &KUBE_CONFIGMAPS, NS, &o, &l, &st), GW_OK, "%s", st.message);
  char *rv = strdup(json_get_str(l, "metadata.resourceVersion"));
  cJSON_Delete(l);
  kube_status_release(&st);
  return rv;
}

struct rec {
  int n, stop_after;
  char type[32][16];
  char name[32][64];
  char rv[32][32];
  int bookmarks;
  char bookmark_rv[32];
};

static int record(void *ctx, const char *type, const cJSON *obj)
{
  struct rec *r = ctx;
  if(!strcmp(type, "BOOKMARK")) {
    r->bookmarks++;
    const char *rv = json_get_str(obj, "metadata.resourceVersion");
    snprintf(r->bookmark_rv, sizeof(r->bookmark_rv), "%s", rv ? rv : "");
    return r->stop_after < 0; /* stop_after -1: stop at the first bookmark */
  }
  if(r->n < 32) {
    snprintf(r->type[r->n], sizeof(r->type[0]), "%s", type);
    const char *n = json_get_str(obj, "metadata.name");
    const char *rv = json_get_str(obj, "metadata.resourceVersion");
    snprintf(r->name[r->n], sizeof(r->name[0]), "%s", n ? n : "");
    snprintf(r->rv[r->n], sizeof(r->rv[0]), "%s", rv ? rv : "");
  }
  r->n++;
  return r->stop_after > 0 && r->n >= r->stop_after;
}

Test(kube_watch, events_arrive_in_order)
{
  char *rv0 = list_rv(NULL);
  put_cm("w-a", "order", "1");
  put_cm("w-a", "order", "2");
  del_cm("w-a");
  put_cm("w-b", "order", "1");
  struct rec r = { .stop_after = 4 };
  struct kube_watch_opts o = { .resource_version = rv0, .timeout_s = 20 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, NULL, &st);
  cr_assert_eq(rc, GW_OK, "%s: %s", gw_strerror(rc), st.message);
  cr_assert_eq(r.n, 4);
  const char *types[] = { "ADDED", "MODIFIED", "DELETED", "ADDED" };
  const char *names[] = { "w-a", "w-a", "w-a", "w-b" };
  for(int i = 0; i < 4; i++) {
    cr_assert_str_eq(r.type[i], types[i], "event %d", i);
    cr_assert_str_eq(r.name[i], names[i], "event %d", i);
    if(i)
      cr_assert_gt(strtoull(r.rv[i], NULL, 10), strtoull(r.rv[i - 1], NULL, 10),
                   "resourceVersions grow: %s then %s", r.rv[i - 1], r.rv[i]);
  }
  free(rv0);
  kube_status_release(&st);
}

struct big {
  size_t len;
  int n;
};

static int measure(void *ctx, const char *type, const cJSON *obj)
{
  struct big *b = ctx;
  if(strcmp(type, "ADDED"))
    return 0;
  const char *v = json_get_str(obj, "data.a");
  b->len = v ? strlen(v) : 0;
  b->n++;
  return 1;
}

/* An event far larger than a chunk or a socket read is reassembled whole. */
Test(kube_watch, large_event_spans_many_chunks)
{
  char *rv0 = list_rv(NULL);
  size_t n = 600 * 1024;
  char *v = malloc(n + 1);
  for(size_t i = 0; i < n; i++)
    v[i] = (char)('a' + i % 26);
  v[n] = '\0';
  cJSON *o = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                         "\"metadata\":{\"name\":\"big\"},\"data\":{}}");
  cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "data"), "a", v);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, NULL, &st), GW_OK, "%s",
               st.message);
  struct big b = { 0 };
  struct kube_watch_opts wo = { .resource_version = rv0, .timeout_s = 20 };
  cr_assert_eq(kube_watch(K, &KUBE_CONFIGMAPS, NS, &wo, measure, &b, NULL, &st), GW_OK, "%s",
               st.message);
  cr_assert_eq(b.n, 1);
  cr_assert_eq(b.len, n);
  cJSON_Delete(o);
  free(v);
  free(rv0);
  kube_status_release(&st);
}

Test(kube_watch, label_selector_filters_events)
{
  char *rv0 = list_rv(NULL);
  put_cm("sel-x", "other", "1");
  put_cm("sel-y", "mine", "1");
  put_cm("sel-z", "other", "1");
  put_cm("sel-w", "mine", "1");
  struct rec r = { .stop_after = 2 };
  struct kube_watch_opts o = { .resource_version = rv0, .label_selector = "app=mine",
                               .timeout_s = 20 };
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, NULL, &st), GW_OK, "%s",
               st.message);
  cr_assert_str_eq(r.name[0], "sel-y");
  cr_assert_str_eq(r.name[1], "sel-w");
  free(rv0);
  kube_status_release(&st);
}

Test(kube_watch, bookmarks_carry_a_resource_version)
{
  char *rv0 = list_rv(NULL);
  struct rec r = { .stop_after = -1 };
  struct kube_watch_opts o = { .resource_version = rv0, .bookmarks = true, .timeout_s = 5 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, NULL, &st);
  cr_assert_eq(rc, GW_OK, "%s: %s", gw_strerror(rc), st.message);
  cr_assert_geq(r.bookmarks, 1, "a watch that asked for bookmarks gets one");
  cr_assert(r.bookmark_rv[0], "a bookmark carries metadata.resourceVersion");
  cr_assert_geq(strtoull(r.bookmark_rv, NULL, 10), strtoull(rv0, NULL, 10));
  free(rv0);
  kube_status_release(&st);
}

Test(kube_watch, server_timeout_ends_the_stream_cleanly)
{
  struct rec r = { 0 };
  struct kube_watch_opts o = { .timeout_s = 1 };
  struct kube_status st;
  kube_status_init(&st);
  double t0 = now_s();
  cr_assert_eq(kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, NULL, &st), GW_OK, "%s",
               st.message);
  cr_assert_lt(now_s() - t0, 10.0);
  kube_status_release(&st);
}

Test(kube_watch, compacted_history_is_gone)
{
  char *rv0 = list_rv(NULL);
  put_cm("old-1", "gone", "1");
  put_cm("old-1", "gone", "2");
  cl_fault(&C, "{\"compact\": true}");
  put_cm("old-1", "gone", "3");
  struct rec r = { 0 };
  struct kube_watch_opts o = { .resource_version = rv0, .timeout_s = 10 };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, NULL, &st);
  cr_assert_eq(rc, GW_EGONE, "watching compacted history: %s (%d %s)", gw_strerror(rc), st.code,
               st.message);
  cr_assert_eq(st.code, 410);
  cr_assert(st.reason[0]);
  free(rv0);
  kube_status_release(&st);
}

struct bg_watch {
  volatile int stop;
  gw_rc rc;
  double ended;
};

static void *bg_watch_run(void *arg)
{
  struct bg_watch *b = arg;
  struct kube_status st;
  kube_status_init(&st);
  struct rec r = { 0 };
  struct kube_watch_opts o = { .timeout_s = 120 };
  b->rc = kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, record, &r, &b->stop, &st);
  b->ended = now_s();
  kube_status_release(&st);
  return NULL;
}

Test(kube_watch, stop_flag_ends_a_quiet_watch_promptly)
{
  struct bg_watch b = { 0 };
  pthread_t t;
  pthread_create(&t, NULL, bg_watch_run, &b);
  usleep(500000);
  double t0 = now_s();
  b.stop = 1;
  pthread_join(t, NULL);
  cr_assert_eq(b.rc, GW_ESTOPPED);
  cr_assert_lt(b.ended - t0, 2.0, "stopped after %.2fs", b.ended - t0);
}

/* ---- the reflector ---- */

#define MAXOBJ 64

struct cache {
  pthread_mutex_t mu;
  char name[MAXOBJ][64];
  char value[MAXOBJ][16];
  int n;
  int replaces, events;
  char rv[64];
  volatile int stop;
  gw_rc rc;
  const char *selector;
};

static int cache_find(struct cache *c, const char *name)
{
  for(int i = 0; i < c->n; i++)
    if(!strcmp(c->name[i], name))
      return i;
  return -1;
}

static void cache_put(struct cache *c, const cJSON *obj)
{
  const char *n = json_get_str(obj, "metadata.name");
  const char *v = json_get_str(obj, "data.a");
  int i = cache_find(c, n);
  if(i < 0 && c->n < MAXOBJ)
    i = c->n++;
  if(i >= 0) {
    snprintf(c->name[i], sizeof(c->name[i]), "%s", n);
    snprintf(c->value[i], sizeof(c->value[i]), "%s", v ? v : "");
  }
}

static void on_replace(void *ctx, const cJSON *items, const char *rv)
{
  struct cache *c = ctx;
  pthread_mutex_lock(&c->mu);
  c->n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
    cache_put(c, it);
  c->replaces++;
  snprintf(c->rv, sizeof(c->rv), "%s", rv);
  pthread_mutex_unlock(&c->mu);
}

static void on_event(void *ctx, const char *type, const cJSON *obj)
{
  struct cache *c = ctx;
  pthread_mutex_lock(&c->mu);
  c->events++;
  if(!strcmp(type, "DELETED")) {
    int i = cache_find(c, json_get_str(obj, "metadata.name"));
    if(i >= 0) {
      c->n--;
      memmove(c->name[i], c->name[i + 1], sizeof(c->name[0]) * (size_t)(c->n - i));
      memmove(c->value[i], c->value[i + 1], sizeof(c->value[0]) * (size_t)(c->n - i));
    }
  } else {
    cache_put(c, obj);
  }
  pthread_mutex_unlock(&c->mu);
}

static void on_progress(void *ctx, const char *rv)
{
  struct cache *c = ctx;
  pthread_mutex_lock(&c->mu);
  snprintf(c->rv, sizeof(c->rv), "%s", rv);
  pthread_mutex_unlock(&c->mu);
}

static const struct kube_reflector_ops cache_ops = { on_replace, on_event, on_progress };

static void *reflect(void *arg)
{
  struct cache *c = arg;
  struct kube_reflector_opts o = { .label_selector = c->selector, .page_size = 2,
                                   .backoff_min_ms = 50, .backoff_max_ms = 500 };
  c->rc = kube_reflector_run(K, &KUBE_CONFIGMAPS, NS, &o, &cache_ops, c, &c->stop);
  return NULL;
}

/* What the cache must hold: "name=value,..." in any order. */
struct want {
  struct cache *c;
  const char *set;
  int min_replaces;
};

static int cache_matches(void *arg)
{
  struct want *w = arg;
  struct cache *c = w->c;
  pthread_mutex_lock(&c->mu);
  int ok = c->replaces >= w->min_replaces, count = 0;
  char buf[512], *save = NULL;
  snprintf(buf, sizeof(buf), "%s", w->set);
  for(char *kv = strtok_r(buf, ",", &save); kv && ok; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    *eq = '\0';
    int i = cache_find(c, kv);
    ok = i >= 0 && !strcmp(c->value[i], eq + 1);
    count++;
  }
  ok = ok && count == c->n;
  pthread_mutex_unlock(&c->mu);
  return ok;
}

static void cache_init(struct cache *c, const char *selector)
{
  memset(c, 0, sizeof(*c));
  pthread_mutex_init(&c->mu, NULL);
  c->selector = selector;
}

static void expect_cache(struct cache *c, const char *set, int min_replaces)
{
  struct want w = { c, set, min_replaces };
  int ok = cl_eventually(15000, cache_matches, &w);
  pthread_mutex_lock(&c->mu);
  char have[1024] = "";
  for(int i = 0; i < c->n; i++) {
    size_t l = strlen(have);
    snprintf(have + l, sizeof(have) - l, "%s%s=%s", i ? "," : "", c->name[i], c->value[i]);
  }
  int reps = c->replaces;
  pthread_mutex_unlock(&c->mu);
  cr_assert(ok, "cache wants {%s} (replaces >= %d), has {%s} (replaces %d)", set, min_replaces,
            have, reps);
}

static void stop_reflector(struct cache *c, pthread_t t)
{
  double t0 = now_s();
  c->stop = 1;
  pthread_join(t, NULL);
  cr_assert_eq(c->rc, GW_ESTOPPED);
  cr_assert_lt(now_s() - t0, 3.0, "the reflector stopped after %.2fs", now_s() - t0);
}

Test(kube_watch, reflector_lists_pages_then_follows)
{
  for(int i = 0; i < 5; i++) {
    char n[16];
    snprintf(n, sizeof(n), "r-%d", i);
    put_cm(n, "refl", "1");
  }
  put_cm("r-other", "not-mine", "1");
  struct cache c;
  cache_init(&c, "app=refl");
  pthread_t t;
  pthread_create(&t, NULL, reflect, &c);
  expect_cache(&c, "r-0=1,r-1=1,r-2=1,r-3=1,r-4=1", 1);
  put_cm("r-5", "refl", "1");
  put_cm("r-0", "refl", "2");
  del_cm("r-3");
  expect_cache(&c, "r-0=2,r-1=1,r-2=1,r-4=1,r-5=1", 1);
  pthread_mutex_lock(&c.mu);
  cr_assert_eq(c.replaces, 1, "no relist without a reason");
  cr_assert_geq(c.events, 3);
  cr_assert(c.rv[0]);
  pthread_mutex_unlock(&c.mu);
  stop_reflector(&c, t);
}
