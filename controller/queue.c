#include "queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ktime.h"
#include "strmap.h"

/* One record per key that is queued, delayed, being processed, or has failures to remember. */
struct item {
  char *key;
  bool dirty;       /* must be processed (in the FIFO unless processing) */
  bool processing;  /* a worker holds it */
  int failures;
  size_t heap_idx;  /* position in the delay heap, or SIZE_MAX */
  int64_t ready_at; /* when delayed: monotonic ms */
  int64_t queued_at;
  int64_t started_at;
  struct item *next; /* FIFO link */
};

struct wq {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *name;
  long base_ms, max_ms;
  double qps;
  int burst;
  double tokens;
  int64_t tokens_at;
  bool shutdown;
  struct strmap items; /* key -> struct item */
  struct item *head, *tail;
  size_t len, processing;
  struct item **heap;
  size_t heap_len, heap_cap;
  uint64_t adds, retries;
  struct hist latency, work;
};

gw_rc wq_new(struct wq **out, const struct wq_opts *o)
{
  struct wq *q = calloc(1, sizeof(*q));
  if(!q)
    return GW_ENOMEM;
  q->name = strdup(o && o->name ? o->name : "queue");
  q->base_ms = o && o->base_delay_ms > 0 ? o->base_delay_ms : 5;
  q->max_ms = o && o->max_delay_ms > 0 ? o->max_delay_ms : 1000000;
  q->qps = o && o->qps ? o->qps : 10;
  q->burst = o && o->burst > 0 ? o->burst : 100;
  q->tokens = q->burst;
  q->tokens_at = kt_mono_ms();
  strmap_init(&q->items);
  if(!q->name || pthread_mutex_init(&q->mu, NULL)) {
    free(q->name);
    free(q);
    return GW_ENOMEM;
  }
  if(kt_cond_init(&q->cv)) {
    pthread_mutex_destroy(&q->mu);
    free(q->name);
    free(q);
    return GW_ENOMEM;
  }
  *out = q;
  return GW_OK;
}

static void free_item(void *p)
{
  struct item *it = p;
  free(it->key);
  free(it);
}

void wq_free(struct wq *q)
{
  if(!q)
    return;
  strmap_release(&q->items, free_item);
  free(q->heap);
  pthread_cond_destroy(&q->cv);
  pthread_mutex_destroy(&q->mu);
  free(q->name);
  free(q);
}

const char *wq_name(const struct wq *q)
{
  return q->name;
}

/* ---- items ---- */

static struct item *item_get(struct wq *q, const char *key, bool create)
{
  struct item *it = strmap_get(&q->items, key);
  if(it || !create)
    return it;
  it = calloc(1, sizeof(*it));
  if(!it)
    return NULL;
  it->key = strdup(key);
  it->heap_idx = SIZE_MAX;
  if(!it->key || strmap_put(&q->items, key, it, NULL)) {
    free(it->key);
    free(it);
    return NULL;
  }
  return it;
}

/* Drops the record once nothing refers to it. */
static void item_maybe_free(struct wq *q, struct item *it)
{
  if(it->dirty || it->processing || it->failures || it->heap_idx != SIZE_MAX)
    return;
  strmap_del(&q->items, it->key);
  free_item(it);
}

static void fifo_push(struct wq *q, struct item *it, int64_t now)
{
  it->next = NULL;
  it->queued_at = now;
  if(q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  q->len++;
}

static struct item *fifo_pop(struct wq *q)
{
  struct item *it = q->head;
  if(!it)
    return NULL;
  q->head = it->next;
  if(!q->head)
    q->tail = NULL;
  it->next = NULL;
  q->len--;
  return it;
}

/* Marks key to be processed; the caller holds the lock. */
static void add_locked(struct wq *q, struct item *it, int64_t now)
{
  q->adds++;
  if(it->dirty)
    return; /* merged with the pending one */
  it->dirty = true;
  if(it->processing)
    return; /* queued again by wq_done */
  fifo_push(q, it, now);
  pthread_cond_signal(&q->cv);
}

/* ---- the delay heap (min on ready_at) ---- */

static void heap_swap(struct wq *q, size_t a, size_t b)
{
  struct item *t = q->heap[a];
  q->heap[a] = q->heap[b];
  q->heap[b] = t;
  q->heap[a]->heap_idx = a;
  q->heap[b]->heap_idx = b;
}

static void heap_up(struct wq *q, size_t i)
{
  while(i > 0) {
    size_t p = (i - 1) / 2;
    if(q->heap[p]->ready_at <= q->heap[i]->ready_at)
      break;
    heap_swap(q, p, i);
    i = p;
  }
}

static void heap_down(struct wq *q, size_t i)
{
  for(;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if(l < q->heap_len && q->heap[l]->ready_at < q->heap[m]->ready_at)
      m = l;
    if(r < q->heap_len && q->heap[r]->ready_at < q->heap[m]->ready_at)
      m = r;
    if(m == i)
      return;
    heap_swap(q, m, i);
    i = m;
  }
}

static bool heap_push(struct wq *q, struct item *it)
{
  if(q->heap_len == q->heap_cap) {
    size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
    struct item **h = realloc(q->heap, cap * sizeof(*h));
    if(!h)
      return false;
    q->heap = h;
    q->heap_cap = cap;
  }
  it->heap_idx = q->heap_len;
  q->heap[q->heap_len++] = it;
  heap_up(q, it->heap_idx);
  return true;
}

static struct item *heap_pop(struct wq *q)
{
  struct item *top = q->heap[0];
  q->heap_len--;
  if(q->heap_len) {
    q->heap[0] = q->heap[q->heap_len];
    q->heap[0]->heap_idx = 0;
    heap_down(q, 0);
  }
  top->heap_idx = SIZE_MAX;
  return top;
}

/* Moves every delayed key whose time has come into the FIFO. */
static void promote_ready(struct wq *q, int64_t now)
{
  while(q->heap_len && q->heap[0]->ready_at <= now) {
    struct item *it = heap_pop(q);
    add_locked(q, it, now);
  }
}

/* ---- adding ---- */

void wq_add(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  if(!q->shutdown) {
    struct item *it = item_get(q, key, true);
    if(it)
      add_locked(q, it, kt_mono_ms());
  }
  pthread_mutex_unlock(&q->mu);
}

static void add_after_locked(struct wq *q, const char *key, long ms)
{
  if(q->shutdown)
    return;
  struct item *it = item_get(q, key, true);
  if(!it)
    return;
  int64_t now = kt_mono_ms();
  if(ms <= 0) {
    add_locked(q, it, now);
    return;
  }
  int64_t at = now + ms;
  if(it->heap_idx != SIZE_MAX) {
    if(at < it->ready_at) { /* keep the earliest */
      it->ready_at = at;
      heap_up(q, it->heap_idx);
    }
  } else {
    it->ready_at = at;
    if(!heap_push(q, it))
      add_locked(q, it, now); /* out of memory: rather now than never */
  }
  pthread_cond_broadcast(&q->cv); /* a sleeping worker may need an earlier wake-up */
}

void wq_add_after(struct wq *q, const char *key, long ms)
{
  pthread_mutex_lock(&q->mu);
  add_after_locked(q, key, ms);
  pthread_mutex_unlock(&q->mu);
}

static long when_locked(struct wq *q, const char *key)
{
  long item_ms = q->max_ms;
  struct item *it = item_get(q, key, true);
  if(it) {
    int f = it->failures;
    double d = (double)q->base_ms;
    for(int i = 0; i < f && d < (double)q->max_ms; i++)
      d *= 2;
    item_ms = d > (double)q->max_ms ? q->max_ms : (long)d;
    if(it->failures < 1000000)
      it->failures++;
  }
  long bucket_ms = 0;
  if(q->qps > 0) {
    int64_t now = kt_mono_ms();
    q->tokens += (double)(now - q->tokens_at) * q->qps / 1000.0;
    if(q->tokens > q->burst)
      q->tokens = q->burst;
    q->tokens_at = now;
    q->tokens -= 1; /* a reservation: may go negative, the wait pays it back */
    if(q->tokens < 0)
      bucket_ms = (long)(-q->tokens * 1000.0 / q->qps + 0.999);
  }
  return item_ms > bucket_ms ? item_ms : bucket_ms;
}

long wq_when(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  long ms = when_locked(q, key);
  pthread_mutex_unlock(&q->mu);
  return ms;
}

void wq_add_rate_limited(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  if(!q->shutdown) {
    q->retries++;
    add_after_locked(q, key, when_locked(q, key));
  }
  pthread_mutex_unlock(&q->mu);
}

void wq_forget(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  struct item *it = item_get(q, key, false);
  if(it) {
    it->failures = 0;
    item_maybe_free(q, it);
  }
  pthread_mutex_unlock(&q->mu);
}

int wq_num_requeues(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  struct item *it = item_get(q, key, false);
  int n = it ? it->failures : 0;
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* ---- taking ---- */

gw_rc wq_get_timed(struct wq *q, char **key, long timeout_ms)
{
  *key = NULL;
  int64_t deadline = timeout_ms >= 0 ? kt_mono_ms() + timeout_ms : INT64_MAX;
  pthread_mutex_lock(&q->mu);
  gw_rc rc = GW_OK;
  for(;;) {
    if(q->shutdown) {
      rc = GW_ESTOPPED;
      break;
    }
    int64_t now = kt_mono_ms();
    promote_ready(q, now);
    struct item *it = fifo_pop(q);
    if(it) {
      char *k = strdup(it->key);
      if(!k) { /* put it back and report */
        it->next = q->head;
        q->head = it;
        if(!q->tail)
          q->tail = it;
        q->len++;
        rc = GW_ENOMEM;
        break;
      }
      it->dirty = false;
      it->processing = true;
      it->started_at = now;
      q->processing++;
      hist_observe(&q->latency, (double)(now - it->queued_at) / 1000.0);
      *key = k;
      break;
    }
    if(now >= deadline) {
      rc = GW_ETIMEOUT;
      break;
    }
    int64_t wake = deadline;
    if(q->heap_len && q->heap[0]->ready_at < wake)
      wake = q->heap[0]->ready_at;
    if(wake == INT64_MAX) {
      pthread_cond_wait(&q->cv, &q->mu);
    } else {
      struct timespec ts = kt_deadline((long)(wake - now));
      int e = pthread_cond_timedwait(&q->cv, &q->mu, &ts);
      (void)e; /* ETIMEDOUT or a wake-up: either way, look again */
    }
  }
  pthread_mutex_unlock(&q->mu);
  return rc;
}

gw_rc wq_get(struct wq *q, char **key)
{
  return wq_get_timed(q, key, -1);
}

void wq_done(struct wq *q, const char *key)
{
  pthread_mutex_lock(&q->mu);
  struct item *it = item_get(q, key, false);
  if(it && it->processing) {
    int64_t now = kt_mono_ms();
    it->processing = false;
    q->processing--;
    hist_observe(&q->work, (double)(now - it->started_at) / 1000.0);
    if(it->dirty && !q->shutdown) {
      fifo_push(q, it, now);
      pthread_cond_signal(&q->cv);
    } else {
      item_maybe_free(q, it);
    }
  }
  pthread_mutex_unlock(&q->mu);
}

void wq_shutdown(struct wq *q)
{
  pthread_mutex_lock(&q->mu);
  q->shutdown = true;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

size_t wq_len(struct wq *q)
{
  pthread_mutex_lock(&q->mu);
  promote_ready(q, kt_mono_ms());
  size_t n = q->len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

size_t wq_delayed(struct wq *q)
{
  pthread_mutex_lock(&q->mu);
  promote_ready(q, kt_mono_ms());
  size_t n = q->heap_len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

struct longest {
  int64_t now;
  int64_t oldest;
};

static int find_longest(void *ctx, const char *key, void *val)
{
  (void)key;
  struct longest *l = ctx;
  const struct item *it = val;
  if(it->processing && l->now - it->started_at > l->oldest)
    l->oldest = l->now - it->started_at;
  return 0;
}

void wq_stats(struct wq *q, struct wq_stats *out)
{
  pthread_mutex_lock(&q->mu);
  int64_t now = kt_mono_ms();
  promote_ready(q, now);
  out->depth = q->len;
  out->delayed = q->heap_len;
  out->processing = q->processing;
  out->adds = q->adds;
  out->retries = q->retries;
  out->queue_latency = q->latency;
  out->work_duration = q->work;
  struct longest l = { now, 0 };
  if(q->processing)
    strmap_foreach(&q->items, find_longest, &l);
  out->longest_running_s = (double)l.oldest / 1000.0;
  pthread_mutex_unlock(&q->mu);
}
