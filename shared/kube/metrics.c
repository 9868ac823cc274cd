/* Client metrics in Prometheus text: requests by verb and code, latency by verb, retries,
 * rate-limiter waits, watch events and relists. */
#include <stdio.h>
#include <string.h>

#include "kube_int.h"

static const char *const verb_names[KV_COUNT] = { "get", "list", "watch", "create",
                                                  "update", "patch", "delete" };
static const double bounds[KUBE_NBUCKETS] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                              1, 2.5, 5, 10, 30, 60 };

void kube_metrics_init(struct kube_metrics *m)
{
  memset(m, 0, sizeof(*m));
  pthread_mutex_init(&m->mu, NULL);
}

void kube_metrics_release(struct kube_metrics *m)
{
  pthread_mutex_destroy(&m->mu);
}

void kube_metrics_observe(struct kube_metrics *m, enum kube_verb v, long code, double seconds)
{
  pthread_mutex_lock(&m->mu);
  int i = 0;
  while(i < KUBE_NCODES && m->codes[v][i].n && m->codes[v][i].code != code)
    i++;
  if(i < KUBE_NCODES) {
    m->codes[v][i].code = (int)code;
    m->codes[v][i].n++;
  } else {
    m->other[v]++;
  }
  for(int b = 0; b < KUBE_NBUCKETS; b++)
    if(seconds <= bounds[b])
      m->buckets[v][b]++;
  m->count[v]++;
  m->sum[v] += seconds;
  pthread_mutex_unlock(&m->mu);
}

void kube_metrics_retry(struct kube_metrics *m, enum kube_verb v)
{
  pthread_mutex_lock(&m->mu);
  m->retries[v]++;
  pthread_mutex_unlock(&m->mu);
}

void kube_metrics_watch_event(struct kube_metrics *m)
{
  pthread_mutex_lock(&m->mu);
  m->watch_events++;
  pthread_mutex_unlock(&m->mu);
}

void kube_metrics_relist(struct kube_metrics *m)
{
  pthread_mutex_lock(&m->mu);
  m->relists++;
  pthread_mutex_unlock(&m->mu);
}

void kube_metrics_ratelimit(struct kube_metrics *m, double waited_s)
{
  pthread_mutex_lock(&m->mu);
  m->ratelimit_wait_s += waited_s;
  pthread_mutex_unlock(&m->mu);
}

static gw_rc write_requests(const struct kube_metrics *m, struct strbuf *sb)
{
  gw_rc rc = strbuf_adds(sb, "# HELP godwit_kube_requests_total Kubernetes API requests by verb "
                             "and HTTP code (code \"error\": no answer).\n"
                             "# TYPE godwit_kube_requests_total counter\n");
  for(int v = 0; v < KV_COUNT && !rc; v++) {
    for(int i = 0; i < KUBE_NCODES && m->codes[v][i].n && !rc; i++) {
      char code[16];
      if(m->codes[v][i].code)
        snprintf(code, sizeof(code), "%d", m->codes[v][i].code);
      else
        snprintf(code, sizeof(code), "error");
      rc = strbuf_addf(sb, "godwit_kube_requests_total{verb=\"%s\",code=\"%s\"} %llu\n",
                       verb_names[v], code, m->codes[v][i].n);
    }
    if(!rc && m->other[v])
      rc = strbuf_addf(sb, "godwit_kube_requests_total{verb=\"%s\",code=\"other\"} %llu\n",
                       verb_names[v], m->other[v]);
  }
  return rc;
}

static gw_rc write_latency(const struct kube_metrics *m, struct strbuf *sb)
{
  gw_rc rc = strbuf_adds(sb, "# HELP godwit_kube_request_duration_seconds Kubernetes API "
                             "request latency by verb (watch: until the answer starts).\n"
                             "# TYPE godwit_kube_request_duration_seconds histogram\n");
  for(int v = 0; v < KV_COUNT && !rc; v++) {
    if(!m->count[v])
      continue;
    for(int b = 0; b < KUBE_NBUCKETS && !rc; b++)
      rc = strbuf_addf(sb, "godwit_kube_request_duration_seconds_bucket{verb=\"%s\",le=\"%g\"} "
                       "%llu\n", verb_names[v], bounds[b], m->buckets[v][b]);
    if(!rc)
      rc = strbuf_addf(sb, "godwit_kube_request_duration_seconds_bucket{verb=\"%s\",le=\"+Inf\"} "
                       "%llu\n"
                       "godwit_kube_request_duration_seconds_sum{verb=\"%s\"} %.6f\n"
                       "godwit_kube_request_duration_seconds_count{verb=\"%s\"} %llu\n",
                       verb_names[v], m->count[v], verb_names[v], m->sum[v], verb_names[v],
                       m->count[v]);
  }
  return rc;
}

static gw_rc write_others(const struct kube_metrics *m, struct strbuf *sb)
{
  gw_rc rc = strbuf_adds(sb, "# HELP godwit_kube_request_retries_total Kubernetes API requests "
                             "sent again after 429, 5xx or a connection error.\n"
                             "# TYPE godwit_kube_request_retries_total counter\n");
  for(int v = 0; v < KV_COUNT && !rc; v++)
    if(m->retries[v])
      rc = strbuf_addf(sb, "godwit_kube_request_retries_total{verb=\"%s\"} %llu\n",
                       verb_names[v], m->retries[v]);
  if(!rc)
    rc = strbuf_addf(sb,
                     "# HELP godwit_kube_ratelimiter_wait_seconds_total Time requests waited "
                     "for the client-side rate limiter.\n"
                     "# TYPE godwit_kube_ratelimiter_wait_seconds_total counter\n"
                     "godwit_kube_ratelimiter_wait_seconds_total %.6f\n"
                     "# HELP godwit_kube_watch_events_total Watch events received.\n"
                     "# TYPE godwit_kube_watch_events_total counter\n"
                     "godwit_kube_watch_events_total %llu\n"
                     "# HELP godwit_kube_relists_total Full lists made by reflectors.\n"
                     "# TYPE godwit_kube_relists_total counter\n"
                     "godwit_kube_relists_total %llu\n",
                     m->ratelimit_wait_s, m->watch_events, m->relists);
  return rc;
}

void kube_client_count_in(struct kube_client *k, struct kube_client *into)
{
  k->mp = into ? into->mp : &k->m;
}

gw_rc kube_client_metrics(const struct kube_client *k, struct strbuf *sb)
{
  /* A snapshot under the lock, written out after it. */
  struct kube_metrics snap;
  pthread_mutex_t *mu = &k->mp->mu;
  pthread_mutex_lock(mu);
  memcpy(&snap, k->mp, sizeof(snap));
  pthread_mutex_unlock(mu);
  gw_rc rc = write_requests(&snap, sb);
  if(!rc)
    rc = write_latency(&snap, sb);
  if(!rc)
    rc = write_others(&snap, sb);
  return rc;
}
