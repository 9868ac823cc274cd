/* The client: its curl share, its pool of easy handles, its credentials, one HTTP exchange. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube_int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
  (void)h;
  (void)access;
  struct kube_client *k = ud;
  pthread_mutex_lock(&k->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
  (void)h;
  struct kube_client *k = ud;
  pthread_mutex_unlock(&k->share_mu[data]);
}

gw_rc kube_client_new(struct kube_client **out, const struct kube_config *c, char *err,
                      size_t errlen)
{
  *out = NULL;
  if(errlen)
    err[0] = '\0';
  if(!c || !c->server || !*c->server) {
    snprintf(err, errlen, "kube client: no server in the configuration");
    return GW_EINVAL;
  }
  pthread_once(&curl_once, curl_init_once);
  if(curl_init_rc) {
    snprintf(err, errlen, "kube client: curl_global_init: %s", curl_easy_strerror(curl_init_rc));
    return GW_EIO;
  }
  struct kube_client *k = calloc(1, sizeof(*k));
  if(!k)
    return GW_ENOMEM;
  gw_rc rc = kube_config_copy(&k->cfg, c);
  if(rc) {
    free(k);
    return rc;
  }
  if(!k->cfg.namespace && !(k->cfg.namespace = strdup("default")))
    rc = GW_ENOMEM;
  if(k->cfg.qps == 0 && k->cfg.burst == 0) {
    k->cfg.qps = 20;
    k->cfg.burst = 30;
  }
  if(k->cfg.burst < 1)
    k->cfg.burst = 1;
  if(k->cfg.timeout_ms <= 0)
    k->cfg.timeout_ms = 30000;
  if(k->cfg.max_retries < 0)
    k->cfg.max_retries = 0;
  k->base = strdup(c->server);
  if(!k->base)
    rc = GW_ENOMEM;
  for(size_t n = k->base ? strlen(k->base) : 0; n && k->base[n - 1] == '/'; n--)
    k->base[n - 1] = '\0';
  for(int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init(&k->share_mu[i], NULL);
  pthread_mutex_init(&k->pool_mu, NULL);
  pthread_mutex_init(&k->tok_mu, NULL);
  pthread_mutex_init(&k->rl_mu, NULL);
  pthread_mutex_init(&k->rng_mu, NULL);
  kube_metrics_init(&k->m);
  k->mp = &k->m;
  k->rl_tokens = k->cfg.burst;
  clock_gettime(CLOCK_MONOTONIC, &k->rl_last);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  k->rng = ((uint64_t)now.tv_nsec << 20) ^ (uint64_t)now.tv_sec ^ ((uint64_t)getpid() << 40) ^
           (uint64_t)(uintptr_t)k;
  k->share = curl_share_init();
  if(!k->share) {
    rc = GW_ENOMEM;
  } else {
    curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
    curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
  if(rc) {
    kube_client_free(k);
    snprintf(err, errlen, "kube client: out of memory");
    return rc;
  }
  *out = k;
  return GW_OK;
}

void kube_client_free(struct kube_client *k)
{
  if(!k)
    return;
  for(int i = 0; i < k->npool; i++)
    curl_easy_cleanup(k->pool[i]);
  if(k->share)
    curl_share_cleanup(k->share);
  for(int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy(&k->share_mu[i]);
  pthread_mutex_destroy(&k->pool_mu);
  pthread_mutex_destroy(&k->tok_mu);
  pthread_mutex_destroy(&k->rl_mu);
  pthread_mutex_destroy(&k->rng_mu);
  kube_metrics_release(&k->m);
  if(k->tok) {
    memset(k->tok, 0, strlen(k->tok));
    free(k->tok);
  }
  free(k->base);
  kube_config_release(&k->cfg);
  free(k);
}

const struct kube_config *kube_client_config(const struct kube_client *k)
{
  return &k->cfg;
}

/* ---- the handle pool ---- */

CURL *kube_handle_get(struct kube_client *k)
{
  CURL *h = NULL;
  pthread_mutex_lock(&k->pool_mu);
  if(k->npool)
    h = k->pool[--k->npool];
  pthread_mutex_unlock(&k->pool_mu);
  if(h)
    curl_easy_reset(h); /* keeps its live connections */
  else
    h = curl_easy_init();
  return h;
}

void kube_handle_put(struct kube_client *k, CURL *h)
{
  if(!h)
    return;
  pthread_mutex_lock(&k->pool_mu);
  if(k->npool < KUBE_POOL_MAX) {
    k->pool[k->npool++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&k->pool_mu);
  if(h)
    curl_easy_cleanup(h);
}

/* ---- credentials ---- */

bool kube_token_invalidate(struct kube_client *k)
{
  if(!k->cfg.token_file)
    return false;
  pthread_mutex_lock(&k->tok_mu);
  memset(&k->tok_mtime, 0, sizeof(k->tok_mtime));
  k->tok_size = -1;
  pthread_mutex_unlock(&k->tok_mu);
  return true;
}

/* Re-reads the token file when its mtime, size or inode changed (a kubelet rotates bound
 * tokens by swapping a symlink, so the inode changes too). Keeps the last good token when the
 * file cannot be read. Called with tok_mu held. */
static void token_refresh(struct kube_client *k)
{
  struct stat sb;
  if(stat(k->cfg.token_file, &sb) != 0)
    return;
  if(k->tok_from_file && sb.st_mtim.tv_sec == k->tok_mtime.tv_sec &&
     sb.st_mtim.tv_nsec == k->tok_mtime.tv_nsec && sb.st_size == k->tok_size &&
     sb.st_ino == k->tok_ino)
    return;
  FILE *f = fopen(k->cfg.token_file, "rb");
  if(!f)
    return;
  char buf[16384];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    n--;
  buf[n] = '\0';
  if(n) {
    char *t = strdup(buf);
    if(t) {
      if(k->tok) {
        memset(k->tok, 0, strlen(k->tok));
        free(k->tok);
      }
      k->tok = t;
      k->tok_from_file = true;
      k->tok_mtime = sb.st_mtim;
      k->tok_size = sb.st_size;
      k->tok_ino = sb.st_ino;
    }
  }
  memset(buf, 0, sizeof(buf));
}

/* "Authorization: Bearer ..." appended to *hdrs, when there is a token. */
static gw_rc add_auth(struct kube_client *k, struct curl_slist **hdrs)
{
  if(!k->cfg.token_file && !k->cfg.token)
    return GW_OK;
  gw_rc rc = GW_OK;
  pthread_mutex_lock(&k->tok_mu);
  if(k->cfg.token_file)
    token_refresh(k);
  const char *t = k->tok ? k->tok : k->cfg.token;
  if(t) {
    size_t n = strlen(t) + 32;
    char *h = malloc(n);
    if(h) {
      snprintf(h, n, "Authorization: Bearer %s", t);
      struct curl_slist *l = curl_slist_append(*hdrs, h);
      memset(h, 0, n);
      free(h);
      if(l)
        *hdrs = l;
      else
        rc = GW_ENOMEM;
    } else {
      rc = GW_ENOMEM;
    }
  }
  pthread_mutex_unlock(&k->tok_mu);
  return rc;
}

static gw_rc add_header(struct curl_slist **hdrs, const char *fmt, const char *v)
{
  char line[1024];
  snprintf(line, sizeof(line), fmt, v);
  struct curl_slist *l = curl_slist_append(*hdrs, line);
  if(!l)
    return GW_ENOMEM;
  *hdrs = l;
  return GW_OK;
}

static void set_blob(CURL *h, CURLoption opt, const char *pem)
{
  struct curl_blob b = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };
  curl_easy_setopt(h, opt, &b);
}

gw_rc kube_handle_setup(struct kube_client *k, CURL *h, const char *path, const char *accept,
                        const char *content_type, struct curl_slist **hdrs)
{
  *hdrs = NULL;
  size_t n = strlen(k->base) + strlen(path) + 1;
  char *url = malloc(n);
  if(!url)
    return GW_ENOMEM;
  snprintf(url, n, "%s%s", k->base, path);
  curl_easy_setopt(h, CURLOPT_URL, url); /* curl copies it */
  free(url);
  curl_easy_setopt(h, CURLOPT_SHARE, k->share);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "godwit/1.0 (kube client)");
  const struct kube_config *c = &k->cfg;
  if(c->insecure_skip_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if(c->ca_data)
    set_blob(h, CURLOPT_CAINFO_BLOB, c->ca_data);
  else if(c->ca_file)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
  if(c->cert_data)
    set_blob(h, CURLOPT_SSLCERT_BLOB, c->cert_data);
  else if(c->cert_file)
    curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
  if(c->key_data)
    set_blob(h, CURLOPT_SSLKEY_BLOB, c->key_data);
  else if(c->key_file)
    curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
  if(c->cert_data || c->cert_file) {
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  gw_rc rc = add_header(hdrs, "Accept: %s", accept ? accept : "application/json");
  if(!rc && content_type)
    rc = add_header(hdrs, "Content-Type: %s", content_type);
  if(!rc) /* no 100-continue round trip before a body */
    rc = add_header(hdrs, "Expect:%s", "");
  if(!rc && c->impersonate_user)
    rc = add_header(hdrs, "Impersonate-User: %s", c->impersonate_user);
  for(int i = 0; i < 8 && !rc && c->impersonate_groups[i]; i++)
    rc = add_header(hdrs, "Impersonate-Group: %s", c->impersonate_groups[i]);
  if(!rc)
    rc = add_auth(k, hdrs);
  if(rc) {
    curl_slist_free_all(*hdrs);
    *hdrs = NULL;
    return rc;
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
  return GW_OK;
}

/* ---- one exchange ---- */

void kube_resp_init(struct kube_resp *rs)
{
  memset(rs, 0, sizeof(*rs));
  strbuf_init(&rs->body, KUBE_BODY_MAX);
  rs->retry_after_s = -1;
}

void kube_resp_release(struct kube_resp *rs)
{
  strbuf_release(&rs->body);
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
  struct kube_resp *rs = ud;
  if(strbuf_add(&rs->body, data, size * n))
    return 0; /* too large: abort the transfer */
  return size * n;
}

/* Retry-After: delta-seconds or an HTTP date. */
size_t kube_retry_after_header(char *buf, size_t size, size_t n, void *ud)
{
  int *out = ud;
  size_t len = size * n;
  static const char name[] = "retry-after:";
  if(len > sizeof(name) - 1 && !strncasecmp(buf, name, sizeof(name) - 1)) {
    char v[128];
    size_t vl = len - (sizeof(name) - 1);
    if(vl >= sizeof(v))
      vl = sizeof(v) - 1;
    memcpy(v, buf + sizeof(name) - 1, vl);
    v[vl] = '\0';
    char *end;
    long s = strtol(v, &end, 10);
    while(*end == ' ' || *end == '\r' || *end == '\n')
      end++;
    if(end != v && !*end) {
      *out = s < 0 ? 0 : s > 3600 ? 3600 : (int)s;
    } else {
      time_t t = curl_getdate(v, NULL);
      time_t now = time(NULL);
      if(t > 0)
        *out = t > now ? (int)(t - now > 3600 ? 3600 : t - now) : 0;
    }
  }
  return len;
}

void kube_exchange(struct kube_client *k, const struct kube_req *rq, struct kube_resp *rs)
{
  strbuf_release(&rs->body); /* also clears a sticky error of an earlier attempt */
  strbuf_init(&rs->body, KUBE_BODY_MAX);
  rs->code = 0;
  rs->retry_after_s = -1;
  rs->sent = false;
  rs->curl_err[0] = '\0';
  CURL *h = kube_handle_get(k);
  if(!h) {
    rs->cc = CURLE_OUT_OF_MEMORY;
    snprintf(rs->curl_err, sizeof(rs->curl_err), "out of memory");
    return;
  }
  struct curl_slist *hdrs = NULL;
  if(kube_handle_setup(k, h, rq->path, rq->accept, rq->body ? rq->content_type : NULL, &hdrs)) {
    kube_handle_put(k, h);
    rs->cc = CURLE_OUT_OF_MEMORY;
    snprintf(rs->curl_err, sizeof(rs->curl_err), "out of memory");
    return;
  }
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)k->cfg.timeout_ms);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, rs->curl_err);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, rs);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, kube_retry_after_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &rs->retry_after_s);
  if(strcmp(rq->method, "GET")) {
    if(strcmp(rq->method, "POST"))
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    if(rq->body || !strcmp(rq->method, "POST")) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? rq->body_len : 0));
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
    }
  }
  rs->cc = curl_easy_perform(h);
  curl_off_t pre = 0;
  rs->sent = curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pre) != CURLE_OK || pre > 0;
  if(rs->cc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->code);
  else if(!rs->curl_err[0])
    snprintf(rs->curl_err, sizeof(rs->curl_err), "%s", curl_easy_strerror(rs->cc));
  if(rs->cc == CURLE_WRITE_ERROR && rs->body.err == GW_ETOOBIG)
    snprintf(rs->curl_err, sizeof(rs->curl_err), "answer larger than %zu bytes", KUBE_BODY_MAX);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(hdrs);
  kube_handle_put(k, h);
}
