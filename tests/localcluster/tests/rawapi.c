/* rawapi.c: plain libcurl calls for the core conformance tests (rawapi.h). */
#include "rawapi.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "strbuf.h"

void ra_init(struct ra *a, struct cl *c, const char *user)
{
  memset(a, 0, sizeof(*a));
  snprintf(a->base, sizeof(a->base), "https://127.0.0.1:%d", c->api_port);
  snprintf(a->ca, sizeof(a->ca), "%s", cl_path(c, "pki/apiserver/ca.crt"));
  if(!user || !*user)
    return;
  FILE *f = fopen(cl_path(c, "tokens.csv"), "r");
  cr_assert(f, "no tokens.csv in %s", c->dir);
  char line[512];
  char want[64];
  snprintf(want, sizeof(want), ",%s,", user);
  while(fgets(line, sizeof(line), f)) {
    char *p = strstr(line, want);
    if(p) {
      *p = '\0';
      snprintf(a->token, sizeof(a->token), "%s", line);
    }
  }
  fclose(f);
  cr_assert(a->token[0], "no token for %s", user);
}

void ra_token(struct ra *a, const char *token)
{
  snprintf(a->token, sizeof(a->token), "%s", token ? token : "");
}

void ra_header(struct ra *a, const char *header)
{
  if(a->nextra < 8)
    snprintf(a->extra_headers[a->nextra++], 256, "%s", header);
}

struct collect {
  struct strbuf body;
  struct ra_resp *r;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
  struct collect *c = ud;
  return strbuf_add(&c->body, p, size * n) ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
  struct collect *c = ud;
  size_t len = size * n;
  char line[2048];
  snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1), p);
  line[strcspn(line, "\r\n")] = '\0';
  if(!strncasecmp(line, "Content-Type:", 13))
    snprintf(c->r->ctype, sizeof(c->r->ctype), "%s", line + 13 + strspn(line + 13, " "));
  else if(!strncasecmp(line, "Retry-After:", 12))
    snprintf(c->r->retry_after, sizeof(c->r->retry_after), "%s",
             line + 12 + strspn(line + 12, " "));
  else if(!strncasecmp(line, "Warning:", 8)) {
    size_t l = strlen(c->r->warning);
    snprintf(c->r->warning + l, sizeof(c->r->warning) - l, "%s%s", l ? "\n" : "",
             line + 8 + strspn(line + 8, " "));
  }
  return len;
}

static struct curl_slist *headers(struct ra *a, const char *ctype)
{
  struct curl_slist *h = NULL;
  char buf[2200];
  if(a->token[0]) {
    snprintf(buf, sizeof(buf), "Authorization: Bearer %s", a->token);
    h = curl_slist_append(h, buf);
  }
  if(ctype) {
    snprintf(buf, sizeof(buf), "Content-Type: %s", ctype);
    h = curl_slist_append(h, buf);
  }
  if(a->accept[0]) {
    snprintf(buf, sizeof(buf), "Accept: %s", a->accept);
    h = curl_slist_append(h, buf);
  }
  for(int i = 0; i < a->nextra; i++)
    h = curl_slist_append(h, a->extra_headers[i]);
  h = curl_slist_append(h, "Expect:");
  return h;
}

long ra_call(struct ra *a, const char *method, const char *path, const char *ctype,
             const char *body, struct ra_resp *r)
{
  memset(r, 0, sizeof(*r));
  struct collect c = { .r = r };
  strbuf_init(&c.body, 64u << 20);
  char url[4096];
  snprintf(url, sizeof(url), "%s%s", a->base, path);
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = headers(a, body && !ctype ? "application/json" : ctype);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CAINFO, a->ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if(body)
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &c);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->code);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  size_t len;
  r->body = strbuf_take(&c.body, &len);
  strbuf_release(&c.body);
  if(!r->body)
    r->body = strdup("");
  r->json = cJSON_ParseWithLength(r->body, strlen(r->body));
  return r->code;
}

void ra_resp_free(struct ra_resp *r)
{
  free(r->body);
  cJSON_Delete(r->json);
  memset(r, 0, sizeof(*r));
}

cJSON *ra_ok(struct ra *a, const char *method, const char *path, const char *body, long code)
{
  struct ra_resp r;
  ra_call(a, method, path, NULL, body, &r);
  cr_assert_eq(r.code, code, "%s %s: %ld, expected %ld: %s", method, path, r.code, code, r.body);
  cJSON *j = r.json;
  r.json = NULL;
  ra_resp_free(&r);
  return j;
}

struct watch_collect {
  struct strbuf line;
  cJSON *events;
  int want;
};

static size_t on_watch(char *p, size_t size, size_t n, void *ud)
{
  struct watch_collect *w = ud;
  size_t len = size * n;
  for(size_t i = 0; i < len; i++) {
    if(p[i] != '\n') {
      if(strbuf_addc(&w->line, p[i]))
        return 0;
      continue;
    }
    cJSON *ev = cJSON_Parse(strbuf_str(&w->line));
    if(ev)
      cJSON_AddItemToArray(w->events, ev);
    strbuf_reset(&w->line);
    if(w->want > 0 && cJSON_GetArraySize(w->events) >= w->want)
      return 0; /* enough: end the transfer */
  }
  return len;
}

cJSON *ra_watch(struct ra *a, const char *path, int n, int timeout_ms)
{
  struct watch_collect w = { .events = cJSON_CreateArray(), .want = n };
  strbuf_init(&w.line, 16u << 20);
  char url[4096];
  snprintf(url, sizeof(url), "%s%s", a->base, path);
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = headers(a, NULL);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CAINFO, a->ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_perform(h);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  strbuf_release(&w.line);
  return w.events;
}

const char *ra_str(const cJSON *o, const char *dotted)
{
  const char *s = json_get_str(o, dotted);
  return s ? s : "";
}

long long ra_num(const cJSON *o, const char *dotted)
{
  const cJSON *v = json_get(o, dotted);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

#define WIDGET_SCHEMA                                                                          \
  "{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"                                 \
  "\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\"},"             \
  "\"color\":{\"type\":\"string\"}}},"                                                         \
  "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"},"           \
  "\"conditions\":{\"type\":\"array\",\"items\":{\"type\":\"object\","                         \
  "\"x-kubernetes-preserve-unknown-fields\":true}}}}}}}"

void ra_widget_crd(struct ra *a)
{
  static const char crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
    "\"shortNames\":[\"wd\"]},\"scope\":\"Namespaced\",\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
    "\"schema\":" WIDGET_SCHEMA ",\"additionalPrinterColumns\":["
    "{\"name\":\"Size\",\"type\":\"integer\",\"jsonPath\":\".spec.size\"},"
    "{\"name\":\"Phase\",\"type\":\"string\",\"jsonPath\":\".status.phase\"},"
    "{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"}]},"
    "{\"name\":\"v1beta1\",\"served\":true,\"storage\":false,\"subresources\":{\"status\":{}},"
    "\"schema\":" WIDGET_SCHEMA "}]}}";
  cJSON_Delete(ra_ok(a, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd,
                      201));
}

cJSON *ra_widget(struct ra *a, const char *ns, const char *name, int size)
{
  char body[512], path[256];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"%s\"},"
           "\"spec\":{\"size\":%d}}", name, size);
  snprintf(path, sizeof(path), "/apis/example.com/v1/namespaces/%s/widgets", ns);
  return ra_ok(a, "POST", path, body, 201);
}

cJSON *ra_configmap(struct ra *a, const char *ns, const char *name, const char *labels_json)
{
  char body[1024], path[256];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
           "\"labels\":%s},\"data\":{\"k\":\"v\"}}", name, labels_json ? labels_json : "{}");
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
  return ra_ok(a, "POST", path, body, 201);
}
