/*
 * webhook_call.c: HTTPS calls from the API server to admission and conversion webhooks, as
 * kube-apiserver makes them, and ls_hooks_init.
 *
 * A service reference NS/NAME is reached at the HOST:PORT that --service-map gives it, while the
 * URL, the Host header, SNI and the certificate check all use NAME.NS.svc:PORT, as kube-apiserver
 * dials a Service's cluster IP and verifies the name. curl's CONNECT_TO does exactly that (RESOLVE
 * cannot change the port). The caBundle is the only trust root when set (CAINFO_BLOB); without it
 * the system roots apply, as in kube. Connections are kept alive: idle easy handles (each with its
 * connection cache) wait in a small pool, one handle per call in flight, so calls are thread-safe.
 *
 * Errors are worded as Go's http client words them after `Post "<url>": `, since kube-apiserver
 * quotes them in `failed calling webhook "<name>": failed to call webhook: Post "...": <here>`.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "json.h"
#include "layers.h"

struct ls_core_ops layers_core;

#define MAX_SERVICES 32
#define POOL_MAX 32
#define BODY_MAX (64u << 20)

static struct {
  char key[300];  /* NS/NAME */
  char addr[300]; /* HOST:PORT */
} services[MAX_SERVICES];
static size_t nservices;
static pthread_rwlock_t services_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static CURL *pool[POOL_MAX];
static size_t npool;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

void ls_hooks_init(const struct ls_core_ops *ops, const char *const *service_map)
{
  pthread_once(&curl_once, curl_init_once);
  if(ops)
    layers_core = *ops;
  pthread_rwlock_wrlock(&services_lock);
  nservices = 0;
  for(const char *const *m = service_map; m && *m && nservices < MAX_SERVICES; m++) {
    const char *eq = strchr(*m, '=');
    if(!eq || eq == *m || !eq[1])
      continue;
    snprintf(services[nservices].key, sizeof(services[0].key), "%.*s", (int)(eq - *m), *m);
    snprintf(services[nservices].addr, sizeof(services[0].addr), "%s", eq + 1);
    nservices++;
  }
  pthread_rwlock_unlock(&services_lock);
}

/* Copies the HOST:PORT of NS/NAME into out; false when the map has none. */
static bool service_addr(const char *ns, const char *name, char *out, size_t n)
{
  char key[300];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  bool found = false;
  pthread_rwlock_rdlock(&services_lock);
  for(size_t i = 0; i < nservices && !found; i++)
    if(!strcmp(services[i].key, key)) {
      snprintf(out, n, "%s", services[i].addr);
      found = true;
    }
  pthread_rwlock_unlock(&services_lock);
  return found;
}

static char *b64decode(const char *in, size_t *outlen)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(in);
  char *out = malloc(n / 4 * 3 + 4);
  if(!out)
    return NULL;
  unsigned acc = 0;
  int bits = 0;
  size_t o = 0;
  for(size_t i = 0; i < n; i++) {
    if(in[i] == '=' || in[i] == '\n' || in[i] == '\r' || in[i] == ' ')
      continue;
    const char *p = strchr(tbl, in[i]);
    if(!p || !in[i]) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (unsigned)(p - tbl);
    bits += 6;
    if(bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  out[o] = '\0';
  *outlen = o;
  return out;
}

gw_rc whc_target_init(struct whc_target *t, const cJSON *cc, char *err, size_t errlen)
{
  memset(t, 0, sizeof(*t));
  const char *ca = json_get_str(cc, "caBundle");
  if(ca && *ca) {
    t->ca = b64decode(ca, &t->ca_len);
    if(!t->ca) {
      snprintf(err, errlen, "invalid caBundle: not base64");
      return GW_EINVAL;
    }
  }
  const char *url = json_get_str(cc, "url");
  const cJSON *svc = json_get(cc, "service");
  if(url && *url) {
    snprintf(t->url, sizeof(t->url), "%s", url);
    return GW_OK;
  }
  const char *ns = json_get_str(svc, "namespace"), *name = json_get_str(svc, "name");
  if(!ns || !name) {
    snprintf(err, errlen, "the webhook's clientConfig has neither url nor service");
    whc_target_release(t);
    return GW_EINVAL;
  }
  const cJSON *port = json_get(svc, "port");
  int p = cJSON_IsNumber(port) ? port->valueint : 443;
  const char *path = json_get_str(svc, "path");
  snprintf(t->url, sizeof(t->url), "https://%s.%s.svc:%d%s", name, ns, p, path ? path : "");
  char addr[300];
  if(!service_addr(ns, name, addr, sizeof(addr)))
    snprintf(t->missing, sizeof(t->missing), "service \"%s\" not found", name);
  else {
    snprintf(t->connect_to, sizeof(t->connect_to), "%s.%s.svc:%d:%s", name, ns, p, addr);
    snprintf(t->dial, sizeof(t->dial), "%s", addr);
  }
  return GW_OK;
}

void whc_target_release(struct whc_target *t)
{
  free(t->ca);
  t->ca = NULL;
}

static CURL *take(void)
{
  pthread_once(&curl_once, curl_init_once);
  CURL *c = NULL;
  pthread_mutex_lock(&pool_lock);
  if(npool)
    c = pool[--npool];
  pthread_mutex_unlock(&pool_lock);
  if(c)
    curl_easy_reset(c); /* keeps the handle's live connections */
  else
    c = curl_easy_init();
  return c;
}

static void give_back(CURL *c)
{
  pthread_mutex_lock(&pool_lock);
  if(npool < POOL_MAX) {
    pool[npool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  if(c)
    curl_easy_cleanup(c);
}

static size_t collect(char *data, size_t size, size_t n, void *userp)
{
  struct whc_reply *r = userp;
  size_t add = size * n;
  if(r->len + add > BODY_MAX)
    return 0;
  char *b = realloc(r->body, r->len + add + 1);
  if(!b)
    return 0;
  memcpy(b + r->len, data, add);
  r->body = b;
  r->len += add;
  b[r->len] = '\0';
  return add;
}

/* The host:port Go's dialer would name for a URL without a service map entry. */
static void url_hostport(const char *url, char *out, size_t n)
{
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  size_t len = strcspn(h, "/?");
  if(memchr(h, ':', len))
    snprintf(out, n, "%.*s", (int)len, h);
  else
    snprintf(out, n, "%.*s:443", (int)len, h);
}

static void go_error(CURLcode cc, const char *curlerr, const struct whc_target *t, char *err, size_t errlen)
{
  char dial[300];
  if(*t->dial)
    snprintf(dial, sizeof(dial), "%s", t->dial);
  else
    url_hostport(t->url, dial, sizeof(dial));
  switch(cc) {
  case CURLE_OPERATION_TIMEDOUT: snprintf(err, errlen, "context deadline exceeded"); break;
  case CURLE_COULDNT_CONNECT: snprintf(err, errlen, "dial tcp %s: connect: connection refused", dial); break;
  case CURLE_COULDNT_RESOLVE_HOST: snprintf(err, errlen, "dial tcp: lookup %s: no such host", dial); break;
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
    if(strstr(curlerr, "subject name") || strstr(curlerr, "host name"))
      snprintf(err, errlen, "tls: failed to verify certificate: x509: certificate is not valid for the host (%s)", curlerr);
    else
      snprintf(err, errlen, "tls: failed to verify certificate: x509: certificate signed by unknown authority");
    break;
  case CURLE_GOT_NOTHING:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR: snprintf(err, errlen, "EOF"); break;
  default: snprintf(err, errlen, "%s", *curlerr ? curlerr : curl_easy_strerror(cc)); break;
  }
}

gw_rc whc_post(const struct whc_target *t, const char *query, const char *body, long timeout_ms,
               struct whc_reply *r, char *err, size_t errlen)
{
  memset(r, 0, sizeof(*r));
  if(*t->missing) {
    snprintf(err, errlen, "%s", t->missing);
    return GW_ECONNECT;
  }
  CURL *c = take();
  if(!c) {
    snprintf(err, errlen, "out of memory");
    return GW_ENOMEM;
  }
  char url[800], curlerr[CURL_ERROR_SIZE] = "";
  snprintf(url, sizeof(url), "%s%s", t->url, query ? query : "");
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "Accept: application/json, */*");
  h = curl_slist_append(h, "Expect:");
  struct curl_slist *ct = *t->connect_to ? curl_slist_append(NULL, t->connect_to) : NULL;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "kube-apiserver-admission");
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curlerr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  if(ct)
    curl_easy_setopt(c, CURLOPT_CONNECT_TO, ct);
  if(t->ca) {
    struct curl_blob blob = { t->ca, t->ca_len, CURL_BLOB_COPY };
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  CURLcode cc = curl_easy_perform(c);
  gw_rc rc = GW_OK;
  if(cc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  else {
    go_error(cc, curlerr, t, err, errlen);
    rc = cc == CURLE_OPERATION_TIMEDOUT ? GW_ETIMEOUT : GW_ECONNECT;
  }
  curl_slist_free_all(h);
  curl_slist_free_all(ct);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
  give_back(c);
  if(!r->body)
    r->body = strdup("");
  return rc;
}

void whc_reply_release(struct whc_reply *r)
{
  free(r->body);
  r->body = NULL;
  r->len = 0;
}

void whc_status_error(const struct whc_reply *r, char *err, size_t errlen)
{
  cJSON *doc = NULL;
  char perr[64];
  if(r->len && !json_parse_strict(r->body, r->len, &doc, perr, sizeof(perr))) {
    const char *kind = json_get_str(doc, "kind"), *msg = json_get_str(doc, "message");
    if(kind && !strcmp(kind, "Status") && msg && *msg) {
      snprintf(err, errlen, "%s", msg);
      cJSON_Delete(doc);
      return;
    }
  }
  cJSON_Delete(doc);
  long s = r->status;
  const char *m = s == 400   ? "the server rejected our request for an unknown reason"
                  : s == 401 ? "Unauthorized"
                  : s == 403 ? "Forbidden"
                  : s == 404 ? "the server could not find the requested resource"
                  : s == 405 ? "the server does not allow this method on the requested resource"
                  : s == 409 ? "the server reported a conflict"
                  : s == 415 ? "the server responded with the status code 415 but did not return more information"
                  : s == 422 ? "the server rejected our request due to an error in our request"
                  : s == 429 ? "the server has received too many requests and has asked us to try again later"
                  : s == 503 ? "the server is currently unable to handle the request"
                  : s == 504 ? "the server was unable to return a response in the time allotted, but may still be processing the request"
                             : NULL;
  if(m)
    snprintf(err, errlen, "%s", m);
  else if(s >= 500)
    snprintf(err, errlen, "an error on the server (\"%.200s\") has prevented the request from succeeding", r->body);
  else
    snprintf(err, errlen, "the server responded with the status code %ld but did not return more information", s);
}

void whc_uuid(char out[37])
{
  unsigned char b[16];
  if(getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
    for(size_t i = 0; i < sizeof(b); i++)
      b[i] = (unsigned char)rand();
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
