/*
 * kube_int.h: what the files of the Kubernetes client share among themselves (not for callers;
 * kube.h is the interface).
 *
 *   config.c     the loading order, in-cluster configuration, config copies
 *   kubeconfig.c kubeconfig files
 *   client.c     the client: curl share, easy-handle pool, credentials, one HTTP exchange
 *   request.c    retries, backoff, the token bucket, the Status of a failed call
 *   verbs.c      paths and the REST verbs (get, list, create, update, patch, delete, log)
 *   watch.c      the streaming watch
 *   reflector.c  list+watch forever
 *   metrics.c    request counters and latency histograms
 *   gvr.c        the built-in resource types
 *
 * A client is shared by many threads: every mutable member below is guarded by its own mutex.
 * Easy handles are not shared: a call takes one from the pool and gives it back, so keep-alive
 * connections live in the handles; DNS and TLS sessions live in the curl share (libcurl 7.88's
 * shared connection cache is not safe across concurrent threads).
 */
#ifndef GW_KUBE_INT_H
#define GW_KUBE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kube.h"
#include "strbuf.h"

#define KUBE_POOL_MAX 8
#define KUBE_BODY_MAX ((size_t)256 << 20) /* a List of many objects can be large */

enum kube_verb { KV_GET, KV_LIST, KV_WATCH, KV_CREATE, KV_UPDATE, KV_PATCH, KV_DELETE,
                 KV_COUNT };

#define KUBE_NBUCKETS 13
#define KUBE_NCODES 32

struct kube_metrics {
  pthread_mutex_t mu;
  struct {
    int code; /* HTTP code, or 0 for no answer */
    unsigned long long n;
  } codes[KV_COUNT][KUBE_NCODES];
  unsigned long long other[KV_COUNT]; /* codes past the table */
  unsigned long long buckets[KV_COUNT][KUBE_NBUCKETS];
  unsigned long long count[KV_COUNT];
  double sum[KV_COUNT];
  unsigned long long retries[KV_COUNT];
  unsigned long long watch_events;
  unsigned long long relists;
  double ratelimit_wait_s;
};

struct kube_client {
  struct kube_config cfg; /* a deep copy */
  char *base;             /* server without trailing '/' */

  CURLSH *share;
  pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

  pthread_mutex_t pool_mu;
  CURL *pool[KUBE_POOL_MAX];
  int npool;

  /* The bearer token: cfg.token, or the token file's contents once read. */
  pthread_mutex_t tok_mu;
  char *tok;
  struct timespec tok_mtime;
  off_t tok_size;
  ino_t tok_ino;
  bool tok_from_file;

  /* The token bucket. */
  pthread_mutex_t rl_mu;
  double rl_tokens;
  struct timespec rl_last;

  pthread_mutex_t rng_mu;
  uint64_t rng;

  struct kube_metrics m;
  struct kube_metrics *mp; /* where requests are counted: &m, or another client's */
};

/* ---- config.c, kubeconfig.c ---- */
gw_rc kube_config_copy(struct kube_config *dst, const struct kube_config *src) GW_MUST_CHECK;
void kube_config_defaults(struct kube_config *c);
/* Fills c from the kubeconfig at path, or from the ':'-separated list env when path is NULL. */
gw_rc kube_kubeconfig_load(struct kube_config *c, const char *path, const char *env,
                           const char *context, char *err, size_t errlen) GW_MUST_CHECK;

/* ---- client.c: one HTTP exchange ---- */

/* What one request sends. */
struct kube_req {
  enum kube_verb verb;
  const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
  const char *path;   /* absolute path with query */
  const char *content_type;
  const char *body;
  size_t body_len;
  const char *accept; /* NULL: application/json */
  bool raw;           /* hand the body over as bytes, not JSON */
  bool idempotent;    /* safe to send again after a transport error mid-request */
};

/* What came back. */
struct kube_resp {
  long code; /* 0: no answer */
  struct strbuf body;
  int retry_after_s; /* -1: no Retry-After header */
  CURLcode cc;
  bool sent; /* the request went out (a transport error after it may have been applied) */
  char curl_err[CURL_ERROR_SIZE];
};

CURL *kube_handle_get(struct kube_client *k);
void kube_handle_put(struct kube_client *k, CURL *h);
/* Sets the options every request needs: URL from path, TLS, credentials, impersonation,
 * keepalive. *hdrs receives the header list to free after the transfer. */
gw_rc kube_handle_setup(struct kube_client *k, CURL *h, const char *path, const char *accept,
                        const char *content_type, struct curl_slist **hdrs) GW_MUST_CHECK;
/* Forgets the cached token so the next request re-reads the token file (after a 401). */
bool kube_token_invalidate(struct kube_client *k);
/* One exchange, no retry. */
void kube_exchange(struct kube_client *k, const struct kube_req *rq, struct kube_resp *rs);
void kube_resp_init(struct kube_resp *rs);
void kube_resp_release(struct kube_resp *rs);
size_t kube_retry_after_header(char *buf, size_t size, size_t n, void *ud);

/* ---- request.c ---- */

/* Sends rq with the token bucket, retries and backoff; fills *out (JSON) or *raw (bytes) on 2xx,
 * else *st. st may be NULL. */
gw_rc kube_call(struct kube_client *k, const struct kube_req *rq, cJSON **out, char **raw,
                size_t *rawlen, struct kube_status *st) GW_MUST_CHECK;
/* Waits for a token of the bucket. */
void kube_ratelimit_wait(struct kube_client *k);
/* The status of an answer that is not 2xx, and its rc. */
gw_rc kube_status_from_answer(long code, const char *body, size_t len, int retry_after_s,
                              struct kube_status *st);
/* The rc and message of a transfer that got no answer. */
gw_rc kube_status_from_curl(CURLcode cc, const char *curl_err, struct kube_status *st);
/* Resets st for a new call (releases details). */
void kube_status_reset(struct kube_status *st);
/* Uniform in [0, 1). */
double kube_rand(struct kube_client *k);
/* Exponential backoff with jitter: min*2^attempt capped at max, then scaled into [d/2, d). */
long kube_backoff_ms(struct kube_client *k, int attempt, long min_ms, long max_ms);
/* Sleeps ms, waking early when *stop becomes true (stop may be NULL). Returns *stop. */
bool kube_sleep_ms(long ms, volatile int *stop);
double kube_now_s(void);

/* ---- verbs.c ---- */

/* /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] into sb. */
gw_rc kube_path(struct strbuf *sb, const struct kube_gvr *r, const char *ns, const char *name,
                const char *sub) GW_MUST_CHECK;
/* Appends "&key=value" (or "?key=value" for the first), value percent-encoded. */
gw_rc kube_query(struct strbuf *sb, const char *key, const char *value) GW_MUST_CHECK;

/* ---- metrics.c ---- */
void kube_metrics_init(struct kube_metrics *m);
void kube_metrics_release(struct kube_metrics *m);
void kube_metrics_observe(struct kube_metrics *m, enum kube_verb v, long code, double seconds);
void kube_metrics_retry(struct kube_metrics *m, enum kube_verb v);
void kube_metrics_watch_event(struct kube_metrics *m);
void kube_metrics_relist(struct kube_metrics *m);
void kube_metrics_ratelimit(struct kube_metrics *m, double waited_s);

#endif
