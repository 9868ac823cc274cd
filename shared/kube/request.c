/* A call: the token bucket, retries with backoff and jitter, and the apiserver's Status of a
 * failed call, kept whole for the caller. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "kube_int.h"
#include "log.h"

#define RETRY_MIN_MS 200
#define RETRY_MAX_MS 10000
#define RETRY_AFTER_MAX_S 60

void kube_status_init(struct kube_status *st)
{
  memset(st, 0, sizeof(*st));
}

void kube_status_release(struct kube_status *st)
{
  if(!st)
    return;
  cJSON_Delete(st->details);
  kube_status_init(st);
}

void kube_status_reset(struct kube_status *st)
{
  kube_status_release(st);
}

double kube_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double kube_rand(struct kube_client *k)
{
  pthread_mutex_lock(&k->rng_mu);
  /* xorshift64* */
  uint64_t x = k->rng ? k->rng : 0x9e3779b97f4a7c15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  k->rng = x;
  pthread_mutex_unlock(&k->rng_mu);
  return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

long kube_backoff_ms(struct kube_client *k, int attempt, long min_ms, long max_ms)
{
  double d = (double)min_ms;
  for(int i = 0; i < attempt && d < (double)max_ms; i++)
    d *= 2;
  if(d > (double)max_ms)
    d = (double)max_ms;
  return (long)(d / 2 + kube_rand(k) * d / 2);
}

bool kube_sleep_ms(long ms, volatile int *stop)
{
  while(ms > 0 && !(stop && *stop)) {
    long step = ms > 50 ? 50 : ms;
    struct timespec ts = { step / 1000, (step % 1000) * 1000000L };
    while(nanosleep(&ts, &ts) != 0 && errno == EINTR)
      ;
    ms -= step;
  }
  return stop && *stop;
}

/* client-go's token bucket with reservations: a caller that finds the bucket empty takes a
 * token from the future and sleeps until it is due, so waiters are served in order. */
void kube_ratelimit_wait(struct kube_client *k)
{
  if(k->cfg.qps <= 0)
    return;
  struct timespec now;
  pthread_mutex_lock(&k->rl_mu);
  clock_gettime(CLOCK_MONOTONIC, &now);
  double el = (double)(now.tv_sec - k->rl_last.tv_sec) +
              (double)(now.tv_nsec - k->rl_last.tv_nsec) / 1e9;
  k->rl_last = now;
  k->rl_tokens += el * k->cfg.qps;
  if(k->rl_tokens > k->cfg.burst)
    k->rl_tokens = k->cfg.burst;
  k->rl_tokens -= 1;
  double wait_s = k->rl_tokens < 0 ? -k->rl_tokens / k->cfg.qps : 0;
  pthread_mutex_unlock(&k->rl_mu);
  if(wait_s > 0) {
    kube_metrics_ratelimit(k->mp, wait_s);
    kube_sleep_ms((long)(wait_s * 1000 + 0.5), NULL);
  }
}

static const char *reason_for(long code)
{
  switch(code) {
  case 400: return "BadRequest";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "NotFound";
  case 405: return "MethodNotAllowed";
  case 406: return "NotAcceptable";
  case 409: return "Conflict";
  case 410: return "Expired";
  case 413: return "RequestEntityTooLarge";
  case 415: return "UnsupportedMediaType";
  case 422: return "Invalid";
  case 429: return "TooManyRequests";
  case 500: return "InternalError";
  case 503: return "ServiceUnavailable";
  case 504: return "Timeout";
  default: return "Unknown";
  }
}

/* The last refusal by the API server's authorizer on this thread (kube_forbidden_last). */
static __thread char forbidden_last[1024];

void kube_forbidden_clear(void)
{
  forbidden_last[0] = '\0';
}

const char *kube_forbidden_last(void)
{
  return forbidden_last;
}

/* kube's authorizer refusals, not other 403s (admission denials, a terminating namespace):
 * `<resource> ["<name>"] is forbidden: User "<user>" cannot ...`, `forbidden: User ...` */
static bool authorization_refusal(const char *msg)
{
  const char *p = strstr(msg, "forbidden: User \"");
  return p && (p == msg || !strncmp(p - 4, " is ", 4)) && strstr(p, "\" cannot ");
}

gw_rc kube_status_from_answer(long code, const char *body, size_t len, int retry_after_s,
                              struct kube_status *st)
{
  kube_status_reset(st);
  st->code = (int)code;
  st->retry_after_s = retry_after_s > 0 ? retry_after_s : 0;
  cJSON *v = NULL;
  char perr[128];
  const char *kind = NULL;
  if(len && !json_parse_strict(body, len, &v, perr, sizeof(perr)))
    kind = json_get_str(v, "kind");
  if(kind && !strcmp(kind, "Status")) {
    const char *reason = json_get_str(v, "reason");
    const char *msg = json_get_str(v, "message");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "code");
    if(cJSON_IsNumber(c) && c->valueint > 0)
      st->code = c->valueint;
    snprintf(st->reason, sizeof(st->reason), "%s",
             reason && *reason ? reason : reason_for(st->code));
    snprintf(st->message, sizeof(st->message), "%s", msg ? msg : "");
    st->details = cJSON_DetachItemFromObjectCaseSensitive(v, "details");
    if(st->details && !cJSON_IsObject(st->details)) {
      cJSON_Delete(st->details);
      st->details = NULL;
    }
  } else {
    /* Not a Status (a proxy's page): keep the first line, short; never the whole body. */
    snprintf(st->reason, sizeof(st->reason), "%s", reason_for(code));
    size_t n = 0;
    while(n < len && n < 200 && body[n] != '\n' && body[n] != '\r')
      n++;
    snprintf(st->message, sizeof(st->message), "the server answered %ld%s%.*s", code,
             n ? ": " : "", (int)n, body);
    for(char *p = st->message; *p; p++)
      if((unsigned char)*p < 0x20)
        *p = ' ';
  }
  cJSON_Delete(v);
  if(st->code == 403 && authorization_refusal(st->message))
    snprintf(forbidden_last, sizeof(forbidden_last), "%s", st->message);
  switch(code) {
  case 404: return GW_ENOTFOUND;
  case 409: return GW_ECONFLICT;
  case 410: return GW_EGONE;
  default: return GW_ESTATUS;
  }
}

gw_rc kube_status_from_curl(CURLcode cc, const char *curl_err, struct kube_status *st)
{
  kube_status_reset(st);
  snprintf(st->message, sizeof(st->message), "%s", curl_err && *curl_err ? curl_err
                                                                          : curl_easy_strerror(cc));
  switch(cc) {
  case CURLE_OPERATION_TIMEDOUT:
    snprintf(st->reason, sizeof(st->reason), "Timeout");
    return GW_ETIMEOUT;
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_ENGINE_NOTFOUND:
    snprintf(st->reason, sizeof(st->reason), "TLSError");
    return GW_ETLS;
  case CURLE_OUT_OF_MEMORY:
    return GW_ENOMEM;
  case CURLE_WRITE_ERROR:
    return GW_ETOOBIG;
  case CURLE_ABORTED_BY_CALLBACK:
    return GW_ESTOPPED;
  default:
    snprintf(st->reason, sizeof(st->reason), "ConnectionError");
    return GW_ECONNECT;
  }
}

/* Whether a transfer that got no answer may be sent again: always when the request never
 * went out (no connection, TLS handshake failed); after it went out, only when it is idempotent
 * and the connection broke (a POST may have been applied), and never after a timeout: a server
 * that is slow to answer would hold the caller for max_retries times timeout_ms. */
static bool transport_retryable(CURLcode cc, bool sent, bool idempotent)
{
  switch(cc) {
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    if(!sent)
      return true;
    return idempotent && cc != CURLE_OPERATION_TIMEDOUT;
  default:
    return false;
  }
}

static bool code_retryable(long code)
{
  return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

static gw_rc deliver(const struct kube_req *rq, struct kube_resp *rs, cJSON **out, char **raw,
                     size_t *rawlen, struct kube_status *st)
{
  if(rq->raw) {
    size_t n;
    char *b = strbuf_take(&rs->body, &n);
    if(!b)
      return GW_ENOMEM;
    if(raw) {
      *raw = b;
      if(rawlen)
        *rawlen = n;
    } else {
      free(b);
    }
    return GW_OK;
  }
  if(!out || rs->body.len == 0)
    return GW_OK;
  char perr[160];
  gw_rc rc = json_parse_strict(strbuf_str(&rs->body), rs->body.len, out, perr, sizeof(perr));
  if(rc) {
    snprintf(st->reason, sizeof(st->reason), "BadResponse");
    snprintf(st->message, sizeof(st->message), "the answer to %s %.200s is not JSON: %s",
             rq->method, rq->path, perr);
    return GW_EPARSE;
  }
  return GW_OK;
}

gw_rc kube_call(struct kube_client *k, const struct kube_req *rq, cJSON **out, char **raw,
                size_t *rawlen, struct kube_status *st)
{
  struct kube_status local;
  kube_status_init(&local);
  if(!st)
    st = &local;
  else
    kube_status_reset(st);
  if(out)
    *out = NULL;
  if(raw)
    *raw = NULL;
  if(rawlen)
    *rawlen = 0;
  struct kube_resp rs;
  kube_resp_init(&rs);
  gw_rc rc = GW_OK;
  bool reauth = true;
  for(int attempt = 0;; attempt++) {
    kube_ratelimit_wait(k);
    double t0 = kube_now_s();
    kube_exchange(k, rq, &rs);
    kube_metrics_observe(k->mp, rq->verb, rs.code, kube_now_s() - t0);
    bool again = attempt < k->cfg.max_retries;
    long delay_ms = kube_backoff_ms(k, attempt, RETRY_MIN_MS, RETRY_MAX_MS);
    if(rs.cc != CURLE_OK) {
      rc = kube_status_from_curl(rs.cc, rs.curl_err, st);
      again = again && transport_retryable(rs.cc, rs.sent, rq->idempotent);
    } else if(rs.code >= 200 && rs.code < 300) {
      st->code = (int)rs.code;
      rc = deliver(rq, &rs, out, raw, rawlen, st);
      break;
    } else {
      rc = kube_status_from_answer(rs.code, strbuf_str(&rs.body), rs.body.len, rs.retry_after_s,
                                   st);
      if(rs.code == 401 && reauth && kube_token_invalidate(k)) {
        reauth = false; /* a rotated token file: read it again, once */
        attempt--;
        continue;
      }
      again = again && code_retryable(rs.code);
      if(rs.retry_after_s >= 0)
        delay_ms = (long)(rs.retry_after_s > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S
                                                               : rs.retry_after_s) * 1000 +
                   (long)(kube_rand(k) * 100);
    }
    if(!again)
      break;
    kube_metrics_retry(k->mp, rq->verb);
    if(log_enabled(LOG_DEBUG)) {
      char code[16], d[16];
      snprintf(code, sizeof(code), "%ld", rs.code);
      snprintf(d, sizeof(d), "%ld", delay_ms);
      log_kv(LOG_DEBUG, "kube request retried", "method", rq->method, "code", code, "reason",
             st->reason, "delay_ms", d, LOG_END);
    }
    kube_sleep_ms(delay_ms, NULL);
  }
  kube_resp_release(&rs);
  kube_status_release(&local);
  return rc;
}
