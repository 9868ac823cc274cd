/* The client and the reflector under the API server's injected faults (/__faults): 500s and
 * 429s are retried (Retry-After honoured), 409s are not, dropped watches reconnect, compacted
 * history relists, and an unreachable server fails fast with GW_ECONNECT. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "kube/kube.h"
#include "strbuf.h"

#define NS "kube-faults"

static struct cl C;
static struct kube_client *K;

static void start(void)
{
  cl_start(&C, CL_NO_CRDS | CL_FAULTS);
  K = cl_client(&C, "admin");
  cJSON *o = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                         "{\"name\":\"" NS "\"}}");
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(K, &KUBE_NAMESPACES, NULL, o, false, NULL, &st);
  cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "%s", st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(kube_faults, .init = start, .fini = stop, .timeout = 180);

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put_cm(struct kube_client *k, const char *name, const char *value)
{
  char buf[512];
  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
           "{\"name\":\"%s\",\"labels\":{\"app\":\"faults\"}},\"data\":{\"a\":\"%s\"}}", name,
           value);
  cJSON *o = cJSON_Parse(buf), *cur = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(k, &KUBE_CONFIGMAPS, NS, name, &cur, &st);
  if(rc == GW_ENOTFOUND) {
    rc = kube_create(k, &KUBE_CONFIGMAPS, NS, o, false, NULL, &st);
  } else if(rc == GW_OK) {
    cr_assert_eq(json_set_str(o, "metadata.resourceVersion",
                              json_get_str(cur, "metadata.resourceVersion")), GW_OK);
    rc = kube_update(k, &KUBE_CONFIGMAPS, NS, o, NULL, NULL, &st);
  }
  cr_assert_eq(rc, GW_OK, "put %s: %s %s", name, gw_strerror(rc), st.message);
  cJSON_Delete(cur);
  cJSON_Delete(o);
  kube_status_release(&st);
}

/* The count of a metric line "name{labels} N", or -1. */
static double metric(struct kube_client *k, const char *series)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  cr_assert_eq(kube_client_metrics(k, &sb), GW_OK);
  /* At the start of a line, not in its # HELP. */
  const char *p = strbuf_str(&sb);
  while((p = strstr(p, series)) && p != strbuf_str(&sb) && p[-1] != '\n')
    p++;
  double v = p ? strtod(p + strlen(series), NULL) : -1;
  strbuf_release(&sb);
  return v;
}

static struct kube_client *client_with_retries(int retries)
{
  struct kube_config kc;
  char err[512];
  cr_assert_eq(kube_config_load(&kc, C.kubeconfig, "admin", err, sizeof(err)), GW_OK, "%s", err);
  kc.max_retries = retries;
  struct kube_client *k;
  cr_assert_eq(kube_client_new(&k, &kc, err, sizeof(err)), GW_OK, "%s", err);
  kube_config_release(&kc);
  return k;
}

Test(kube_faults, server_errors_are_retried)
{
  put_cm(K, "f500", "1");
  cl_fault(&C, "{\"pathRegex\":\"/configmaps/f500$\",\"code\":500,\"count\":2}");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "f500", &v, &st), GW_OK,
               "two 500s then the object: %s", st.message);
  cr_assert_str_eq(json_get_str(v, "data.a"), "1");
  cJSON_Delete(v);
  cr_assert_geq(metric(K, "godwit_kube_requests_total{verb=\"get\",code=\"500\"} "), 2);
  cr_assert_geq(metric(K, "godwit_kube_request_retries_total{verb=\"get\"} "), 2);
  kube_status_release(&st);
}

Test(kube_faults, a_create_that_met_503_is_sent_again)
{
  cl_fault(&C, "{\"pathRegex\":\"/namespaces/" NS "/configmaps([?]|$)\",\"code\":503,\"count\":1}");
  put_cm(K, "f503", "1");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "f503", &v, &st), GW_OK, "%s", st.message);
  cJSON_Delete(v);
  kube_status_release(&st);
}

Test(kube_faults, retries_end_with_the_last_status)
{
  put_cm(K, "fmany", "1");
  struct kube_client *k = client_with_retries(2);
  cl_fault(&C, "{\"pathRegex\":\"/configmaps/fmany$\",\"code\":500,\"count\":10}");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  gw_rc rc = kube_get(k, &KUBE_CONFIGMAPS, NS, "fmany", &v, &st);
  cr_assert_eq(rc, GW_ESTATUS, "%s", gw_strerror(rc));
  cr_assert_null(v);
  cr_assert_eq(st.code, 500);
  cr_assert(st.reason[0]);
  cr_assert_eq(metric(k, "godwit_kube_requests_total{verb=\"get\",code=\"500\"} "), 3,
               "one try and two retries");
  kube_client_free(k);
  kube_status_release(&st);
}

Test(kube_faults, too_many_requests_honours_retry_after)
{
  put_cm(K, "f429", "1");
  cl_fault(&C, "{\"pathRegex\":\"/configmaps/f429$\",\"code\":429,\"count\":1,"
               "\"retryAfter\":1}");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  double t0 = now_s();
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "f429", &v, &st), GW_OK, "%s", st.message);
  double el = now_s() - t0;
  cr_assert_geq(el, 0.95, "Retry-After: 1 waited %.3fs", el);
  cr_assert_lt(el, 5.0);
  cJSON_Delete(v);
  kube_status_release(&st);
}

Test(kube_faults, retry_after_is_reported_when_retries_run_out)
{
  put_cm(K, "f429b", "1");
  struct kube_client *k = client_with_retries(0);
  cl_fault(&C, "{\"pathRegex\":\"/configmaps/f429b$\",\"code\":429,\"count\":1,"
               "\"retryAfter\":7}");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_get(k, &KUBE_CONFIGMAPS, NS, "f429b", &v, &st), GW_ESTATUS);
  cr_assert_eq(st.code, 429);
  cr_assert_eq(st.retry_after_s, 7);
  kube_client_free(k);
  kube_status_release(&st);
}

static int count_events(void *ctx, const char *type, const cJSON *obj)
{
  (void)type, (void)obj;
  ++*(int *)ctx;
  return 0;
}

Test(kube_faults, refused_watch_keeps_status_and_retry_after)
{
  cl_fault(&C, "{\"verb\":\"watch\",\"pathRegex\":\"/namespaces/" NS "/configmaps([?]|$)\","
               "\"code\":429,\"count\":1,\"retryAfter\":3}");
  struct kube_status st;
  kube_status_init(&st);
  int n = 0;
  struct kube_watch_opts o = { .timeout_s = 5 };
  cr_assert_eq(kube_watch(K, &KUBE_CONFIGMAPS, NS, &o, count_events, &n, NULL, &st),
               GW_ESTATUS);
  cr_assert_eq(st.code, 429);
  cr_assert_eq(st.retry_after_s, 3);
  cr_assert_eq(n, 0);
  kube_status_release(&st);
}

Test(kube_faults, injected_conflict_is_not_retried)
{
  put_cm(K, "f409", "1");
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/configmaps/f409$\",\"code\":409,"
               "\"count\":1}");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *cur = NULL, *out = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "f409", &cur, &st), GW_OK);
  cr_assert_eq(json_set_str(cur, "data.a", "2"), GW_OK);
  cr_assert_eq(kube_update(K, &KUBE_CONFIGMAPS, NS, cur, NULL, &out, &st), GW_ECONFLICT);
  cr_assert_eq(st.code, 409);
  cr_assert_eq(kube_update(K, &KUBE_CONFIGMAPS, NS, cur, NULL, &out, &st), GW_OK,
               "the fault was used once: %s", st.message);
  cJSON_Delete(cur);
  cJSON_Delete(out);
  kube_status_release(&st);
}

Test(kube_faults, unreachable_server_is_a_connect_error)
{
  /* A port nobody listens on: bind one, learn it, close it. */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t al = sizeof(a);
  cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
  cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &al), 0);
  close(s);
  char server[64];
  snprintf(server, sizeof(server), "https://127.0.0.1:%d", ntohs(a.sin_port));
  struct kube_config kc = { .server = server, .max_retries = 2, .qps = 100, .burst = 100,
                            .timeout_ms = 2000 };
  struct kube_client *k;
  char err[256];
  cr_assert_eq(kube_client_new(&k, &kc, err, sizeof(err)), GW_OK, "%s", err);
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  double t0 = now_s();
  cr_assert_eq(kube_get(k, &KUBE_NAMESPACES, NULL, "x", &v, &st), GW_ECONNECT);
  cr_assert_eq(st.code, 0, "no answer: code 0");
  cr_assert(st.message[0]);
  cr_assert_lt(now_s() - t0, 5.0);
  cr_assert_eq(metric(k, "godwit_kube_requests_total{verb=\"get\",code=\"error\"} "), 3);
  kube_client_free(k);
  kube_status_release(&st);
}

/* ---- the reflector under faults ---- */

struct cache {
  pthread_mutex_t mu;
  char name[32][32];
  char value[32][16];
  int n, replaces;
  volatile int stop;
  gw_rc rc;
};

static int find(struct cache *c, const char *n)
{
  for(int i = 0; i < c->n; i++)
    if(!strcmp(c->name[i], n))
      return i;
  return -1;
}

static void put(struct cache *c, const cJSON *o)
{
  const char *n = json_get_str(o, "metadata.name"), *v = json_get_str(o, "data.a");
  int i = find(c, n);
  if(i < 0 && c->n < 32)
    i = c->n++;
  if(i >= 0) {
    snprintf(c->name[i], sizeof(c->name[i]), "%s", n);
    snprintf(c->value[i], sizeof(c->value[i]), "%s", v ? v : "");
  }
}

static void on_replace(void *ctx, const cJSON *items, const char *rv)
{
  (void)rv;
  struct cache *c = ctx;
  pthread_mutex_lock(&c->mu);
  c->n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
    put(c, it);
  c->replaces++;
  pthread_mutex_unlock(&c->mu);
}

static void on_event(void *ctx, const char *type, const cJSON *o)
{
  struct cache *c = ctx;
  pthread_mutex_lock(&c->mu);
  int i = find(c, json_get_str(o, "metadata.name"));
  if(!strcmp(type, "DELETED")) {
    if(i >= 0) {
      c->n--;
      memmove(c->name[i], c->name[i + 1], sizeof(c->name[0]) * (size_t)(c->n - i));
      memmove(c->value[i], c->value[i + 1], sizeof(c->value[0]) * (size_t)(c->n - i));
    }
  } else {
    put(c, o);
  }
  pthread_mutex_unlock(&c->mu);
}

static const struct kube_reflector_ops ops = { on_replace, on_event, NULL };

static void *reflect(void *arg)
{
  struct cache *c = arg;
  struct kube_reflector_opts o = { .label_selector = "app=faults", .page_size = 3,
                                   .backoff_min_ms = 50, .backoff_max_ms = 400 };
  c->rc = kube_reflector_run(K, &KUBE_CONFIGMAPS, NS, &o, &ops, c, &c->stop);
  return NULL;
}

struct want {
  struct cache *c;
  int n;
  const char *value; /* every object holds it */
  int min_replaces;
};

static int converged(void *arg)
{
  struct want *w = arg;
  pthread_mutex_lock(&w->c->mu);
  int ok = w->c->n == w->n && w->c->replaces >= w->min_replaces;
  for(int i = 0; i < w->c->n && ok; i++)
    ok = !strcmp(w->c->value[i], w->value);
  pthread_mutex_unlock(&w->c->mu);
  return ok;
}

static void expect(struct cache *c, int n, const char *value, int min_replaces)
{
  struct want w = { c, n, value, min_replaces };
  int ok = cl_eventually(20000, converged, &w);
  pthread_mutex_lock(&c->mu);
  int have = c->n, reps = c->replaces;
  char v0[16];
  snprintf(v0, sizeof(v0), "%s", c->n ? c->value[0] : "-");
  pthread_mutex_unlock(&c->mu);
  cr_assert(ok, "want %d objects = %s with replaces >= %d; have %d (first %s), replaces %d", n,
            value, min_replaces, have, v0, reps);
}

static void put_all(int n, const char *value)
{
  for(int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof(name), "rf-%d", i);
    put_cm(K, name, value);
  }
}

Test(kube_faults, reflector_survives_dropped_watches)
{
  put_all(4, "1");
  struct cache c = { .mu = PTHREAD_MUTEX_INITIALIZER };
  pthread_t t;
  pthread_create(&t, NULL, reflect, &c);
  expect(&c, 4, "1", 1);
  for(int round = 0; round < 3; round++) {
    cl_fault(&C, "{\"dropWatches\": true}");
    char v[16];
    snprintf(v, sizeof(v), "%d", round + 2);
    put_all(5, v);
    expect(&c, 5, v, 1);
  }
  c.stop = 1;
  pthread_join(t, NULL);
  cr_assert_eq(c.rc, GW_ESTOPPED);
}

Test(kube_faults, reflector_relists_after_compaction)
{
  put_all(3, "1");
  struct cache c = { .mu = PTHREAD_MUTEX_INITIALIZER };
  pthread_t t;
  pthread_create(&t, NULL, reflect, &c);
  expect(&c, 3, "1", 1);
  /* Keep the reflector away (its watches fail) while objects change and history is compacted:
   * when it comes back its resourceVersion is gone, and only a relist shows the changes. */
  cl_fault(&C, "{\"verb\":\"watch\",\"pathRegex\":\"/namespaces/" NS "/configmaps([?]|$)\","
               "\"code\":500,\"count\":4}");
  cl_fault(&C, "{\"dropWatches\": true}");
  put_all(6, "2");
  cl_fault(&C, "{\"compact\": true}");
  expect(&c, 6, "2", 2);
  cr_assert_geq(metric(K, "godwit_kube_relists_total "), 2);
  c.stop = 1;
  pthread_join(t, NULL);
  cr_assert_eq(c.rc, GW_ESTOPPED);
}

Test(kube_faults, reflector_backs_off_on_failing_lists)
{
  put_all(2, "1");
  cl_fault(&C, "{\"verb\":\"list\",\"pathRegex\":\"/namespaces/" NS "/configmaps([?]|$)\","
               "\"code\":500,\"count\":8}");
  struct cache c = { .mu = PTHREAD_MUTEX_INITIALIZER };
  pthread_t t;
  pthread_create(&t, NULL, reflect, &c);
  expect(&c, 2, "1", 1);
  c.stop = 1;
  pthread_join(t, NULL);
  cr_assert_eq(c.rc, GW_ESTOPPED);
}
