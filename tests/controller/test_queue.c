/* The work queue's promises (controller/queue.h): merged duplicates, one worker per key, FIFO,
 * AddAfter, per-key exponential backoff reset by forget, the overall token bucket, shutdown. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktime.h"
#include "queue.h"

static struct wq *new_queue(double qps, int burst)
{
  struct wq *q = NULL;
  struct wq_opts o = { "test", 5, 1000000, qps, burst };
  cr_assert_eq(wq_new(&q, &o), GW_OK);
  return q;
}

static char *get_now(struct wq *q)
{
  char *k = NULL;
  gw_rc rc = wq_get_timed(q, &k, 0);
  return rc ? NULL : k;
}

Test(ctrl_queue, merges_duplicate_keys)
{
  struct wq *q = new_queue(10, 100);
  wq_add(q, "ns/a");
  wq_add(q, "ns/b");
  wq_add(q, "ns/a");
  wq_add(q, "ns/a");
  cr_assert_eq(wq_len(q), 2);
  char *k1 = get_now(q), *k2 = get_now(q);
  cr_assert_str_eq(k1, "ns/a"); /* first-added order */
  cr_assert_str_eq(k2, "ns/b");
  cr_assert_null(get_now(q));
  wq_done(q, k1);
  wq_done(q, k2);
  free(k1);
  free(k2);
  cr_assert_eq(wq_len(q), 0);
  wq_free(q);
}

Test(ctrl_queue, a_key_added_while_processing_waits_for_done)
{
  struct wq *q = new_queue(10, 100);
  wq_add(q, "ns/a");
  char *k = get_now(q);
  cr_assert_str_eq(k, "ns/a");
  wq_add(q, "ns/a"); /* changed while a worker holds it */
  wq_add(q, "ns/a");
  cr_assert_null(get_now(q), "a key must never go to a second worker");
  cr_assert_eq(wq_len(q), 0);
  wq_done(q, k);
  free(k);
  cr_assert_eq(wq_len(q), 1, "the merged change is processed once more after done");
  k = get_now(q);
  cr_assert_str_eq(k, "ns/a");
  wq_done(q, k);
  free(k);
  cr_assert_null(get_now(q));
  wq_free(q);
}

/* Many workers, few keys, many adds: no key is ever held by two workers at once. */
struct race {
  struct wq *q;
  atomic_int held[4];
  atomic_int violations;
  atomic_int processed;
};

static void *race_worker(void *arg)
{
  struct race *r = arg;
  for(;;) {
    char *k = NULL;
    if(wq_get(r->q, &k))
      break;
    int i = k[0] - 'a';
    if(atomic_fetch_add(&r->held[i], 1) != 0)
      atomic_fetch_add(&r->violations, 1);
    struct timespec ts = { 0, 200000 };
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&r->held[i], 1);
    atomic_fetch_add(&r->processed, 1);
    wq_done(r->q, k);
    free(k);
  }
  return NULL;
}

Test(ctrl_queue, never_hands_one_key_to_two_workers)
{
  struct race r = { 0 };
  r.q = new_queue(10, 100);
  pthread_t t[8];
  for(int i = 0; i < 8; i++)
    pthread_create(&t[i], NULL, race_worker, &r);
  static const char *keys[] = { "a", "b", "c", "d" };
  for(int n = 0; n < 4000; n++) {
    wq_add(r.q, keys[n % 4]);
    if(n % 50 == 0) {
      struct timespec ts = { 0, 100000 };
      nanosleep(&ts, NULL);
    }
  }
  while(wq_len(r.q) > 0)
    kt_sleep_ms(5, NULL);
  kt_sleep_ms(50, NULL);
  wq_shutdown(r.q);
  for(int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  cr_assert_eq(atomic_load(&r.violations), 0);
  int p = atomic_load(&r.processed);
  cr_assert(p >= 4 && p < 4000, "duplicates were merged (%d reconciles for 4000 adds)", p);
  wq_free(r.q);
}

Test(ctrl_queue, add_after_waits_and_keeps_the_earliest)
{
  struct wq *q = new_queue(10, 100);
  int64_t t0 = kt_mono_ms();
  wq_add_after(q, "ns/late", 300);
  wq_add_after(q, "ns/soon", 100);
  wq_add_after(q, "ns/soon", 5000); /* a later delay does not postpone */
  cr_assert_eq(wq_len(q), 0);
  cr_assert_eq(wq_delayed(q), 2);
  char *k = NULL;
  cr_assert_eq(wq_get_timed(q, &k, 2000), GW_OK);
  int64_t t1 = kt_mono_ms();
  cr_assert_str_eq(k, "ns/soon");
  cr_assert(t1 - t0 >= 100 && t1 - t0 < 1000, "ready after %lld ms", (long long)(t1 - t0));
  wq_done(q, k);
  free(k);
  cr_assert_eq(wq_get_timed(q, &k, 2000), GW_OK);
  int64_t t2 = kt_mono_ms();
  cr_assert_str_eq(k, "ns/late");
  cr_assert(t2 - t0 >= 300, "ready after %lld ms", (long long)(t2 - t0));
  wq_done(q, k);
  free(k);
  cr_assert_eq(wq_delayed(q), 0, "the 5 s delay of ns/soon was merged into the 100 ms one");
  wq_free(q);
}

Test(ctrl_queue, add_after_zero_is_add)
{
  struct wq *q = new_queue(10, 100);
  wq_add_after(q, "k", 0);
  cr_assert_eq(wq_len(q), 1);
  wq_free(q);
}

Test(ctrl_queue, backoff_grows_per_key_and_resets_on_forget)
{
  struct wq *q = new_queue(-1, 0); /* no bucket: the per-key backoff alone */
  long expect = 5;
  for(int i = 0; i < 10; i++) {
    cr_assert_eq(wq_when(q, "ns/a"), expect, "failure %d", i);
    expect *= 2;
  }
  cr_assert_eq(wq_num_requeues(q, "ns/a"), 10);
  cr_assert_eq(wq_when(q, "ns/b"), 5, "keys back off independently");
  wq_forget(q, "ns/a");
  cr_assert_eq(wq_num_requeues(q, "ns/a"), 0);
  cr_assert_eq(wq_when(q, "ns/a"), 5);
  for(int i = 0; i < 40; i++)
    (void)wq_when(q, "ns/c");
  cr_assert_eq(wq_when(q, "ns/c"), 1000000, "capped at 1000 s");
  wq_free(q);
}

Test(ctrl_queue, token_bucket_limits_overall_retries)
{
  struct wq *q = new_queue(10, 100);
  char key[32];
  for(int i = 0; i < 100; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    cr_assert_eq(wq_when(q, key), 5, "within the burst the per-key 5 ms wins");
  }
  long d1 = wq_when(q, "k100"), d2 = wq_when(q, "k101");
  cr_assert(d1 >= 90 && d1 <= 110, "101st retry waits for a token (%ld ms)", d1);
  cr_assert(d2 >= 190 && d2 <= 210, "102nd waits for the one after (%ld ms)", d2);
  wq_free(q);
}

Test(ctrl_queue, rate_limited_add_comes_back_after_the_backoff)
{
  struct wq *q = new_queue(10, 100);
  for(int i = 0; i < 5; i++)
    (void)wq_when(q, "ns/a"); /* 5 failures: next is 160 ms */
  int64_t t0 = kt_mono_ms();
  wq_add_rate_limited(q, "ns/a");
  cr_assert_eq(wq_len(q), 0);
  char *k = NULL;
  cr_assert_eq(wq_get_timed(q, &k, 2000), GW_OK);
  int64_t dt = kt_mono_ms() - t0;
  cr_assert(dt >= 160 && dt < 1000, "came back after %lld ms", (long long)dt);
  wq_done(q, k);
  free(k);
  struct wq_stats s;
  wq_stats(q, &s);
  cr_assert_eq(s.retries, 1);
  cr_assert_eq(s.queue_latency.count, 1);
  cr_assert_eq(s.work_duration.count, 1);
  wq_free(q);
}

Test(ctrl_queue, shutdown_stops_handing_out_and_accepts_done)
{
  struct wq *q = new_queue(10, 100);
  wq_add(q, "a");
  wq_add(q, "b");
  char *k = get_now(q);
  wq_shutdown(q);
  char *k2 = NULL;
  cr_assert_eq(wq_get(q, &k2), GW_ESTOPPED, "nothing new starts after shutdown");
  wq_done(q, k); /* the in-flight one finishes */
  free(k);
  wq_add(q, "c");
  cr_assert_eq(wq_get(q, &k2), GW_ESTOPPED);
  wq_free(q);
}

static void *blocked_get(void *arg)
{
  char *k = NULL;
  gw_rc rc = wq_get(arg, &k);
  free(k);
  return (void *)(intptr_t)rc;
}

Test(ctrl_queue, shutdown_wakes_blocked_workers)
{
  struct wq *q = new_queue(10, 100);
  pthread_t t;
  pthread_create(&t, NULL, blocked_get, q);
  kt_sleep_ms(50, NULL);
  wq_shutdown(q);
  void *ret;
  pthread_join(t, &ret);
  cr_assert_eq((gw_rc)(intptr_t)ret, GW_ESTOPPED);
  wq_free(q);
}

Test(ctrl_queue, a_delayed_key_wakes_a_sleeping_worker)
{
  struct wq *q = new_queue(10, 100);
  pthread_t t;
  pthread_create(&t, NULL, blocked_get, q); /* sleeps with nothing delayed */
  kt_sleep_ms(20, NULL);
  wq_add_after(q, "x", 50);
  void *ret;
  pthread_join(t, &ret);
  cr_assert_eq((gw_rc)(intptr_t)ret, GW_OK);
  wq_free(q);
}
