#include "routes.h"

#include <stdlib.h>
#include <string.h>

#include "policystore.h"
#include "review.h"
#include "tlsstore.h"

static void plain(struct http_response *resp, int status, const char *text)
{
  resp->status = status;
  resp->content_type = "text/plain; charset=utf-8";
  resp->body = strdup(text);
  resp->len = resp->body ? strlen(resp->body) : 0;
}

bool routes_ready(void)
{
  return tls_store_loaded() && policy_store_loaded();
}

static void on_mutate(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  review_admission(EP_MUTATE, req, resp);
}

static void on_validate(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  review_admission(EP_VALIDATE, req, resp);
}

static void on_convert(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  review_conversion(req, resp);
}

static void on_healthz(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  plain(resp, 200, "ok\n");
}

static void on_readyz(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  if(routes_ready())
    plain(resp, 200, "ok\n");
  else if(!tls_store_loaded())
    plain(resp, 503, "not ready: no serving certificate loaded\n");
  else
    plain(resp, 503, "not ready: no admission policy loaded\n");
}

static void on_metrics(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  char digest[80];
  policy_store_digest(digest, sizeof(digest));
  struct metrics_gauges g = { tls_store_not_after(), digest, routes_ready() };
  struct strbuf sb;
  strbuf_init(&sb, 4u << 20);
  if(metrics_render(&sb, &g)) {
    strbuf_release(&sb);
    http_status_response(resp, 500, "InternalError", "cannot render metrics");
    return;
  }
  resp->status = 200;
  resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
  resp->body = strbuf_take(&sb, &resp->len);
  strbuf_release(&sb);
}

const struct http_route routes_https[] = {
  { "POST", "/mutate", on_mutate, true },
  { "POST", "/validate", on_validate, true },
  { "POST", "/convert", on_convert, true },
  { "GET", "/healthz", on_healthz, false },
  { "GET", "/readyz", on_readyz, false },
  { "GET", "/metrics", on_metrics, false },
  { NULL, NULL, NULL, false },
};

const struct http_route routes_metrics[] = {
  { "GET", "/healthz", on_healthz, false },
  { "GET", "/readyz", on_readyz, false },
  { "GET", "/metrics", on_metrics, false },
  { NULL, NULL, NULL, false },
};
