#include "version.h"
#include "metrics.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "api/api.h"

#define MAX_KINDS 18 /* served kinds + Pod + other */
#define NOPS 5

static const char *const endpoints[EP_COUNT] = { "mutate", "validate", "convert" };
static const char *const verdicts[V_COUNT] = { "allowed", "patched", "denied", "ignored",
                                               "error" };
static const char *const ops[NOPS] = { "CREATE", "UPDATE", "DELETE", "CONNECT", "CONVERT" };
static const double buckets[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                  0.025,  0.05,    0.1,    0.25,  0.5,    1.0 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static atomic_ullong requests[EP_COUNT][MAX_KINDS][NOPS][V_COUNT];
static atomic_ullong hist[EP_COUNT][NBUCKETS + 1];
static atomic_ullong hist_sum_ns[EP_COUNT];
static atomic_ullong refusals[600];
static atomic_ullong policy_reloads[2], cert_reloads[2];

static size_t nkinds(void)
{
  size_t n = 0;
  for(const struct api_kind *const *k = api_kinds(); *k && n < MAX_KINDS - 2; k++)
    n++;
  return n;
}

static const char *kind_name(size_t i)
{
  size_t n = nkinds();
  if(i < n)
    return api_kinds()[i]->kind;
  return i == n ? "Pod" : "other";
}

static size_t kind_index(const char *kind)
{
  size_t n = nkinds();
  for(size_t i = 0; i < n; i++)
    if(kind && !strcmp(api_kinds()[i]->kind, kind))
      return i;
  return kind && !strcmp(kind, "Pod") ? n : n + 1;
}

static size_t op_index(const char *op)
{
  for(size_t i = 0; i < NOPS; i++)
    if(op && !strcmp(op, ops[i]))
      return i;
  return NOPS - 1;
}

void metrics_request(enum wh_endpoint ep, const char *kind, const char *op, enum wh_verdict v,
                     double seconds)
{
  atomic_fetch_add_explicit(&requests[ep][kind_index(kind)][op_index(op)][v], 1,
                            memory_order_relaxed);
  size_t b = 0;
  while(b < NBUCKETS && seconds > buckets[b])
    b++;
  atomic_fetch_add_explicit(&hist[ep][b], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hist_sum_ns[ep], (unsigned long long)(seconds * 1e9),
                            memory_order_relaxed);
}

void metrics_http_refusal(int code)
{
  if(code >= 0 && code < 600)
    atomic_fetch_add_explicit(&refusals[code], 1, memory_order_relaxed);
}

void metrics_policy_reload(bool ok)
{
  atomic_fetch_add_explicit(&policy_reloads[ok], 1, memory_order_relaxed);
}

void metrics_cert_reload(bool ok)
{
  atomic_fetch_add_explicit(&cert_reloads[ok], 1, memory_order_relaxed);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static gw_rc render_requests(struct strbuf *sb)
{
  gw_rc rc = strbuf_adds(sb, "# HELP godwit_webhook_requests_total Admission and conversion "
                             "requests by endpoint, kind, operation and verdict.\n"
                             "# TYPE godwit_webhook_requests_total counter\n");
  size_t nk = nkinds() + 2;
  for(size_t e = 0; e < EP_COUNT; e++)
    for(size_t k = 0; k < nk; k++)
      for(size_t o = 0; o < NOPS; o++)
        for(size_t v = 0; v < V_COUNT && !rc; v++) {
          unsigned long long n = LOAD(requests[e][k][o][v]);
          if(n)
            rc = strbuf_addf(sb,
                             "godwit_webhook_requests_total{endpoint=\"%s\",kind=\"%s\","
                             "operation=\"%s\",verdict=\"%s\"} %llu\n",
                             endpoints[e], kind_name(k), ops[o], verdicts[v], n);
        }
  if(!rc)
    rc = strbuf_adds(sb, "# HELP godwit_webhook_request_duration_seconds Time from the whole "
                         "body received to the response built.\n"
                         "# TYPE godwit_webhook_request_duration_seconds histogram\n");
  for(size_t e = 0; e < EP_COUNT && !rc; e++) {
    unsigned long long cum = 0;
    for(size_t b = 0; b <= NBUCKETS && !rc; b++) {
      cum += LOAD(hist[e][b]);
      if(b < NBUCKETS)
        rc = strbuf_addf(sb,
                         "godwit_webhook_request_duration_seconds_bucket{endpoint=\"%s\","
                         "le=\"%g\"} %llu\n",
                         endpoints[e], buckets[b], cum);
      else
        rc = strbuf_addf(sb,
                         "godwit_webhook_request_duration_seconds_bucket{endpoint=\"%s\","
                         "le=\"+Inf\"} %llu\n"
                         "godwit_webhook_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n"
                         "godwit_webhook_request_duration_seconds_count{endpoint=\"%s\"} %llu\n",
                         endpoints[e], cum, endpoints[e], LOAD(hist_sum_ns[e]) / 1e9,
                         endpoints[e], cum);
    }
  }
  return rc;
}

gw_rc metrics_render(struct strbuf *sb, const struct metrics_gauges *g)
{
  gw_rc rc = gw_version_metric(sb);
  if(!rc)
    rc = render_requests(sb);
  if(!rc)
    rc = strbuf_adds(sb, "# HELP godwit_webhook_http_refusals_total Requests refused before "
                         "admission: malformed, too large, wrong method or content type.\n"
                         "# TYPE godwit_webhook_http_refusals_total counter\n");
  for(int c = 0; c < 600 && !rc; c++) {
    unsigned long long n = LOAD(refusals[c]);
    if(n)
      rc = strbuf_addf(sb, "godwit_webhook_http_refusals_total{code=\"%d\"} %llu\n", c, n);
  }
  if(!rc)
    rc = strbuf_addf(sb,
                     "# HELP godwit_webhook_policy_reloads_total Admission policy loads by "
                     "result; a failed load keeps the last good policy.\n"
                     "# TYPE godwit_webhook_policy_reloads_total counter\n"
                     "godwit_webhook_policy_reloads_total{result=\"success\"} %llu\n"
                     "godwit_webhook_policy_reloads_total{result=\"error\"} %llu\n"
                     "# HELP godwit_webhook_policy_reload_errors_total Policy files refused.\n"
                     "# TYPE godwit_webhook_policy_reload_errors_total counter\n"
                     "godwit_webhook_policy_reload_errors_total %llu\n"
                     "# HELP godwit_webhook_policy_info The policy in force.\n"
                     "# TYPE godwit_webhook_policy_info gauge\n"
                     "godwit_webhook_policy_info{digest=\"%s\"} 1\n"
                     "# HELP godwit_webhook_certificate_reloads_total Serving certificate loads "
                     "by result.\n"
                     "# TYPE godwit_webhook_certificate_reloads_total counter\n"
                     "godwit_webhook_certificate_reloads_total{result=\"success\"} %llu\n"
                     "godwit_webhook_certificate_reloads_total{result=\"error\"} %llu\n",
                     LOAD(policy_reloads[1]), LOAD(policy_reloads[0]), LOAD(policy_reloads[0]),
                     g->policy_digest ? g->policy_digest : "none", LOAD(cert_reloads[1]),
                     LOAD(cert_reloads[0]));
  if(!rc && g->cert_not_after)
    rc = strbuf_addf(sb,
                     "# HELP godwit_webhook_certificate_expiry_seconds Seconds until the serving "
                     "certificate expires (negative once expired).\n"
                     "# TYPE godwit_webhook_certificate_expiry_seconds gauge\n"
                     "godwit_webhook_certificate_expiry_seconds %lld\n",
                     (long long)(g->cert_not_after - time(NULL)));
  if(!rc)
    rc = strbuf_addf(sb,
                     "# HELP godwit_webhook_ready Whether certificate and policy are loaded.\n"
                     "# TYPE godwit_webhook_ready gauge\n"
                     "godwit_webhook_ready %d\n",
                     g->ready ? 1 : 0);
  return rc;
}
