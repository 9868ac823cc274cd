/*
 * queue.h: the rate-limited work queue of a controller (client-go's workqueue, rate limiting
 * and delaying interfaces in one).
 *
 * Invariants (checked by tests/cluster/test_queue.c):
 *  - a key is in the queue at most once: adding a key that waits to be processed merges;
 *  - a key is never handed to two workers at once: a key added while a worker holds it is
 *    marked dirty and queued again only when that worker calls wq_done;
 *  - keys come out in the order they were first added (FIFO);
 *  - wq_add_after(key, ms) makes the key ready no earlier than ms from now; several delays of
 *    one key keep the earliest;
 *  - wq_add_rate_limited waits max(per-key backoff, overall token bucket): the per-key backoff is
 *    base * 2^failures capped at max (5 ms .. 1000 s), the bucket refills qps tokens a second up
 *    to burst (10 and 100), as client-go's DefaultControllerRateLimiter. wq_forget resets the
 *    key's failures (not the bucket).
 *  - after wq_shutdown, wq_get returns GW_ESTOPPED at once, even if keys remain: in-flight work
 *    finishes (its wq_done is accepted), nothing new starts. Adds are ignored.
 *
 * Keys are copied. Every function is thread-safe.
 */
#ifndef GW_CTRL_QUEUE_H
#define GW_CTRL_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "rc.h"

struct wq_opts {
  const char *name;    /* label of the queue's metrics (copied) */
  long base_delay_ms;  /* default 5 */
  long max_delay_ms;   /* default 1000000 (1000 s) */
  double qps;          /* default 10; negative: no bucket */
  int burst;           /* default 100 */
};

struct wq;

gw_rc wq_new(struct wq **out, const struct wq_opts *o) GW_MUST_CHECK;
/* Call after every worker has returned. */
void wq_free(struct wq *q);

void wq_add(struct wq *q, const char *key);
void wq_add_after(struct wq *q, const char *key, long ms);
void wq_add_rate_limited(struct wq *q, const char *key);
/* The delay wq_add_rate_limited would use now, counting one more failure of key. */
long wq_when(struct wq *q, const char *key);
void wq_forget(struct wq *q, const char *key);
int wq_num_requeues(struct wq *q, const char *key);

/* Blocks until a key is ready; *key is malloc'd (free it after wq_done). GW_ESTOPPED after
 * wq_shutdown. */
gw_rc wq_get(struct wq *q, char **key) GW_MUST_CHECK;
/* Like wq_get, giving up after timeout_ms with GW_ETIMEOUT. */
gw_rc wq_get_timed(struct wq *q, char **key, long timeout_ms) GW_MUST_CHECK;
void wq_done(struct wq *q, const char *key);
void wq_shutdown(struct wq *q);

/* Keys ready to be handed out (not the delayed ones, not those being processed). */
size_t wq_len(struct wq *q);
/* Keys waiting for their delay to pass. */
size_t wq_delayed(struct wq *q);

struct wq_stats {
  size_t depth, delayed, processing;
  uint64_t adds, retries;
  struct hist queue_latency; /* from ready to handed out */
  struct hist work_duration; /* from wq_get to wq_done */
  double longest_running_s;  /* the oldest key being processed now */
};
/* A consistent snapshot, for /metrics. */
void wq_stats(struct wq *q, struct wq_stats *out);
const char *wq_name(const struct wq *q);

#endif
