/* client.c: HTTPS calls to a node agent (client.h). */
#include "client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json.h"
#include "strbuf.h"

#define ANSWER_MAX (4u << 20)

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
  struct strbuf *sb = ctx;
  size_t len = size * n;
  if(sb->len + len > ANSWER_MAX || strbuf_add(sb, p, len))
    return 0; /* curl then fails with a write error */
  return len;
}

/* The URL https://NAME:PORT/path and curl's CONNECT_TO NAME:PORT:ADDRESS:PORT from the
 * endpoint. */
static gw_rc urls(const struct na_target *t, const char *path, char *url, size_t ulen,
                  char *conn, size_t clen, char *err, size_t errlen)
{
  const char *e = t->endpoint ? t->endpoint : "";
  if(strncmp(e, "https://", 8)) {
    snprintf(err, errlen, "node agent endpoint \"%s\" is not https://ADDRESS:PORT", e);
    return GW_EINVAL;
  }
  const char *host = e + 8, *colon = strrchr(host, ':');
  if(!colon || colon == host || !colon[1] || strchr(colon, '/')) {
    snprintf(err, errlen, "node agent endpoint \"%s\" has no port", e);
    return GW_EINVAL;
  }
  const char *name = t->server_name ? t->server_name : NA_SERVER_NAME;
  snprintf(url, ulen, "https://%s:%s%s", name, colon + 1, path);
  snprintf(conn, clen, "%s:%s:%.*s:%s", name, colon + 1, (int)(colon - host), host, colon + 1);
  return GW_OK;
}

/* Curl handles per thread and per agent endpoint, reset before each call: a reset keeps its
 * live connections and TLS sessions, so the calls of a transfer (a file each) and of a reconcile
 * to the same agent reuse one connection instead of a handshake each. A handle only ever talks
 * to one endpoint: every agent's URL names the same service, and a connection must never be
 * taken for another node's. Freed when the thread ends. */
#define HANDLES 8
struct handles {
  char endpoint[HANDLES][160];
  CURL *c[HANDLES];
  unsigned next;
};

static pthread_key_t handle_key;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

static void handles_free(void *p)
{
  struct handles *h = p;
  for(size_t i = 0; i < HANDLES; i++)
    if(h->c[i])
      curl_easy_cleanup(h->c[i]);
  free(h);
}

static void handle_key_make(void)
{
  if(pthread_key_create(&handle_key, handles_free))
    handle_key = 0;
}

static CURL *handle(const char *endpoint)
{
  pthread_once(&handle_once, handle_key_make);
  struct handles *h = pthread_getspecific(handle_key);
  if(!h) {
    h = calloc(1, sizeof(*h));
    if(!h || pthread_setspecific(handle_key, h)) {
      free(h);
      return NULL;
    }
  }
  for(size_t i = 0; i < HANDLES; i++)
    if(h->c[i] && !strcmp(h->endpoint[i], endpoint)) {
      curl_easy_reset(h->c[i]);
      return h->c[i];
    }
  size_t i = h->next++ % HANDLES; /* the oldest goes */
  if(h->c[i])
    curl_easy_cleanup(h->c[i]);
  h->c[i] = curl_easy_init();
  snprintf(h->endpoint[i], sizeof(h->endpoint[i]), "%s", endpoint);
  return h->c[i];
}

static gw_rc perform(const struct na_target *t, const char *method, const char *path,
                     const char *ctype, const void *body, size_t len,
                     struct curl_slist *extra, struct strbuf *answer, int *code, char *err,
                     size_t errlen)
{
  char url[512], conn[512];
  *code = 0;
  gw_rc rc = urls(t, path, url, sizeof(url), conn, sizeof(conn), err, errlen);
  if(rc)
    return rc;
  CURL *c = handle(t->endpoint);
  if(!c)
    return GW_ENOMEM;
  struct curl_slist *h = extra, *to = curl_slist_append(NULL, conn);
  char auth[600], ct[96];
  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", t->token ? t->token : "");
  snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
  h = curl_slist_append(h, auth);
  h = curl_slist_append(h, ct);
  h = curl_slist_append(h, "Expect:");
  char cerr[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CONNECT_TO, to);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t->timeout_ms > 0 ? t->timeout_ms : 30000L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if(t->ca_file)
    curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file);
  CURLcode cc = curl_easy_perform(c);
  long http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  curl_slist_free_all(h);
  curl_slist_free_all(to);
  *code = (int)http;
  if(cc != CURLE_OK) {
    snprintf(err, errlen, "node agent %s: %s", t->endpoint, *cerr ? cerr : curl_easy_strerror(cc));
    switch(cc) {
    case CURLE_OPERATION_TIMEDOUT:
      return GW_ETIMEOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      return GW_ECONNECT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return GW_ETLS;
    default:
      return GW_EIO;
    }
  }
  if(http < 200 || http > 299) {
    cJSON *st = cJSON_ParseWithLength(strbuf_str(answer), answer->len);
    const char *msg = json_get_str(st, "message");
    snprintf(err, errlen, "node agent %s answered %ld: %s", t->endpoint, http,
             msg ? msg : strbuf_str(answer));
    cJSON_Delete(st);
    return GW_ESTATUS;
  }
  return GW_OK;
}

gw_rc na_post(const struct na_target *t, const char *path, const cJSON *body, cJSON **out,
              int *code, char *err, size_t errlen)
{
  if(out)
    *out = NULL;
  char *text = body ? cJSON_PrintUnformatted(body) : NULL;
  if(body && !text)
    return GW_ENOMEM;
  struct strbuf answer;
  strbuf_init(&answer, ANSWER_MAX);
  int dummy = 0;
  gw_rc rc = perform(t, "POST", path, "application/json", text ? text : "{}",
                     text ? strlen(text) : 2, NULL, &answer, code ? code : &dummy, err, errlen);
  cJSON_free(text);
  if(!rc && out) {
    *out = cJSON_ParseWithLength(strbuf_str(&answer), answer.len);
    if(!*out) {
      snprintf(err, errlen, "node agent %s answered something that is not JSON", t->endpoint);
      rc = GW_EPARSE;
    }
  }
  strbuf_release(&answer);
  return rc;
}

gw_rc na_put_file(const struct na_target *t, const char *migration, const char *file,
                  const void *data, size_t len, const char *sha256, int *code, char *err,
                  size_t errlen)
{
  char m[NA_DIRNAME_MAX + 64], f[320], s[128];
  snprintf(m, sizeof(m), NA_HDR_MIGRATION ": %s", migration);
  snprintf(f, sizeof(f), NA_HDR_FILE ": %s", file);
  snprintf(s, sizeof(s), NA_HDR_SHA256 ": %s", sha256);
  struct curl_slist *h = curl_slist_append(NULL, m);
  h = curl_slist_append(h, f);
  h = curl_slist_append(h, s);
  struct strbuf answer;
  strbuf_init(&answer, ANSWER_MAX);
  int dummy = 0;
  gw_rc rc = perform(t, "PUT", NA_PATH_FILES, "application/octet-stream", data, len, h, &answer,
                     code ? code : &dummy, err, errlen);
  strbuf_release(&answer);
  return rc;
}

static bool dns_part(const char *s, size_t max)
{
  size_t n = s ? strlen(s) : 0;
  if(!n || n > max || s[0] == '.' || s[0] == '-')
    return false;
  for(size_t i = 0; i < n; i++)
    if(!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
         s[i] == '-'))
      return false;
  return !strstr(s, "..");
}

gw_rc na_dirname(const char *ns, const char *name, const char *uid, char out[NA_DIRNAME_MAX])
{
  out[0] = 0;
  if(!dns_part(ns, 63) || !dns_part(name, 80) || !dns_part(uid, 64))
    return GW_EINVAL;
  char u8[9];
  size_t k = 0;
  for(const char *c = uid; *c && k < 8; c++)
    if(*c != '-')
      u8[k++] = *c;
  u8[k] = 0;
  snprintf(out, NA_DIRNAME_MAX, "%s_%s_%s", ns, name, u8);
  return GW_OK;
}

gw_rc na_dirname_json(const cJSON *m, char out[NA_DIRNAME_MAX])
{
  return na_dirname(json_get_str(m, "namespace"), json_get_str(m, "name"),
                    json_get_str(m, "uid"), out);
}
