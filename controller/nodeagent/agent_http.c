/* agent_http.c: the node agent's API over HTTPS (api.h) on the webhook's server layer: bearer
 * token, JSON in and out, metav1.Status errors, /healthz and /metrics without a token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "api.h"
#include "json.h"
#include "log.h"
#include "server.h"
#include "strbuf.h"

/* Constant time: how long a refusal takes says nothing about the token. */
static bool token_ok(const struct agent *a, const struct http_request *req)
{
  const char *h = http_request_header(req, "Authorization");
  if(!a->token || !*a->token || !h || strncmp(h, "Bearer ", 7))
    return false;
  const char *got = h + 7;
  size_t n = strlen(a->token), m = strlen(got);
  unsigned char diff = (unsigned char)(n != m);
  for(size_t i = 0; i < n; i++)
    diff |= (unsigned char)(a->token[i] ^ (i < m ? got[i] : 0));
  return !diff;
}

/* v as the answer (taken). The server frees the body with free(): printed into a strbuf, never
 * cJSON's allocator, whose hooks may be an arena's (arena.c, wherever it is linked). */
static void json_answer(struct http_response *resp, int code, cJSON *v)
{
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  gw_rc rc = v ? json_print_sb(&sb, v) : GW_ENOMEM;
  cJSON_Delete(v);
  char *text = rc ? NULL : strbuf_take(&sb, &resp->len);
  strbuf_release(&sb);
  if(!text) {
    http_status_response(resp, 500, "InternalError", "out of memory");
    return;
  }
  resp->status = code;
  resp->content_type = "application/json";
  resp->body = text;
}

typedef cJSON *(*op_fn)(struct agent *, const cJSON *, struct na_fail *);

static void dispatch(struct agent *a, const struct http_request *req, struct http_response *resp,
                     op_fn fn)
{
  if(!token_ok(a, req)) {
    http_status_response(resp, 401, "Unauthorized", "a valid bearer token is required");
    return;
  }
  cJSON *body = cJSON_ParseWithLength(req->body, req->len);
  if(!cJSON_IsObject(body)) {
    cJSON_Delete(body);
    http_status_response(resp, 400, "BadRequest", "the body must be a JSON object");
    return;
  }
  struct na_fail f = { 0 };
  cJSON *out = fn(a, body, &f);
  cJSON_Delete(body);
  if(!out) {
    if(!f.code)
      f.code = 500;
    log_kv(f.code >= 500 ? LOG_WARN : LOG_INFO, "request refused", "path", req->path, "reason",
           f.reason, "message", f.message, LOG_END);
    http_status_response(resp, f.code, f.reason[0] ? f.reason : "InternalError", f.message);
    return;
  }
  json_answer(resp, 200, out);
}

#define HANDLER(name, fn)                                                                     \
  static void name(void *ctx, const struct http_request *req, struct http_response *resp)     \
  {                                                                                           \
    dispatch(ctx, req, resp, fn);                                                             \
  }
HANDLER(h_checkpoint, agent_checkpoint)
HANDLER(h_send, agent_send)
HANDLER(h_received, agent_received)
HANDLER(h_state, agent_state)
HANDLER(h_release, agent_release)
HANDLER(h_detach, agent_detach)
HANDLER(h_attach, agent_attach)
HANDLER(h_probe, agent_probe)
HANDLER(h_address, agent_address)
HANDLER(h_remove, agent_remove)
HANDLER(h_list, agent_list)

static void h_files(void *ctx, const struct http_request *req, struct http_response *resp)
{
  struct agent *a = ctx;
  if(!token_ok(a, req)) {
    http_status_response(resp, 401, "Unauthorized", "a valid bearer token is required");
    return;
  }
  struct na_fail f = { 0 };
  cJSON *out = agent_put_file(a, http_request_header(req, NA_HDR_MIGRATION),
                              http_request_header(req, NA_HDR_FILE),
                              http_request_header(req, NA_HDR_SHA256), req->body, req->len, &f);
  if(!out) {
    log_kv(LOG_WARN, "file refused", "reason", f.reason, "message", f.message, LOG_END);
    http_status_response(resp, f.code ? f.code : 500, f.reason[0] ? f.reason : "InternalError",
                         f.message);
    return;
  }
  json_answer(resp, 200, out);
}

static void h_healthz(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  resp->status = 200;
  resp->content_type = "text/plain";
  resp->body = strdup("ok\n");
  resp->len = resp->body ? 3 : 0;
}

static void h_metrics(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)req;
  struct agent *a = ctx;
  struct strbuf sb;
  strbuf_init(&sb, 1 << 16);
  gw_rc rc = strbuf_addf(
    &sb,
    "# HELP godwit_nodeagent_checkpoints_total Checkpoints taken on this node, by result.\n"
    "# TYPE godwit_nodeagent_checkpoints_total counter\n"
    "godwit_nodeagent_checkpoints_total{node=\"%s\",result=\"success\"} %ld\n"
    "godwit_nodeagent_checkpoints_total{node=\"%s\",result=\"failure\"} %ld\n"
    "# HELP godwit_nodeagent_checkpoint_seconds_sum Time spent shielding and dumping pods.\n"
    "# TYPE godwit_nodeagent_checkpoint_seconds_sum counter\n"
    "godwit_nodeagent_checkpoint_seconds_sum{node=\"%s\"} %.3f\n"
    "# HELP godwit_nodeagent_transfer_bytes_total Checkpoint bytes sent and received.\n"
    "# TYPE godwit_nodeagent_transfer_bytes_total counter\n"
    "godwit_nodeagent_transfer_bytes_total{node=\"%s\",direction=\"sent\"} %lld\n"
    "godwit_nodeagent_transfer_bytes_total{node=\"%s\",direction=\"received\"} %lld\n"
    "# HELP godwit_nodeagent_files_refused_total Checkpoint files refused (checksum, names, "
    "after completion).\n"
    "# TYPE godwit_nodeagent_files_refused_total counter\n"
    "godwit_nodeagent_files_refused_total{node=\"%s\"} %ld\n"
    "# HELP godwit_nodeagent_network_changes_total Shield and link changes around handovers.\n"
    "# TYPE godwit_nodeagent_network_changes_total counter\n"
    "godwit_nodeagent_network_changes_total{node=\"%s\",change=\"release\"} %ld\n"
    "godwit_nodeagent_network_changes_total{node=\"%s\",change=\"detach\"} %ld\n"
    "godwit_nodeagent_network_changes_total{node=\"%s\",change=\"attach\"} %ld\n"
    "# HELP godwit_nodeagent_probes_total Verification probes run, by result.\n"
    "# TYPE godwit_nodeagent_probes_total counter\n"
    "godwit_nodeagent_probes_total{node=\"%s\",result=\"success\"} %ld\n"
    "godwit_nodeagent_probes_total{node=\"%s\",result=\"failure\"} %ld\n"
    "# HELP godwit_nodeagent_checkpoints_removed_total Checkpoint directories removed.\n"
    "# TYPE godwit_nodeagent_checkpoints_removed_total counter\n"
    "godwit_nodeagent_checkpoints_removed_total{node=\"%s\"} %ld\n",
    a->node, atomic_load(&a->checkpoints_ok), a->node, atomic_load(&a->checkpoints_failed),
    a->node, (double)atomic_load(&a->checkpoint_ms_sum) / 1000.0, a->node,
    (long long)atomic_load(&a->bytes_sent), a->node, (long long)atomic_load(&a->bytes_received),
    a->node, atomic_load(&a->files_refused), a->node, atomic_load(&a->releases), a->node,
    atomic_load(&a->detaches), a->node, atomic_load(&a->attaches), a->node,
    atomic_load(&a->probes_ok), a->node, atomic_load(&a->probes_failed), a->node,
    atomic_load(&a->removals));
  if(rc) {
    strbuf_release(&sb);
    http_status_response(resp, 500, "InternalError", "metrics too large");
    return;
  }
  resp->status = 200;
  resp->content_type = "text/plain; version=0.0.4";
  resp->body = strbuf_take(&sb, &resp->len);
}

static const struct http_route routes[] = {
  { "POST", NA_PATH_CHECKPOINT, h_checkpoint, true },
  { "POST", NA_PATH_SEND, h_send, true },
  { "PUT", NA_PATH_FILES, h_files, false },
  { "POST", NA_PATH_RECEIVED, h_received, true },
  { "POST", NA_PATH_STATE, h_state, true },
  { "POST", NA_PATH_RELEASE, h_release, true },
  { "POST", NA_PATH_DETACH, h_detach, true },
  { "POST", NA_PATH_ATTACH, h_attach, true },
  { "POST", NA_PATH_PROBE, h_probe, true },
  { "POST", NA_PATH_ADDRESS, h_address, true },
  { "POST", NA_PATH_REMOVE, h_remove, true },
  { "POST", NA_PATH_LIST, h_list, true },
  { "GET", "/healthz", h_healthz, false },
  { "GET", "/metrics", h_metrics, false },
  { NULL, NULL, NULL, false },
};

gw_rc agent_http_start(struct agent *a, const char *bind, int port, struct server **out,
                       char *err, size_t errlen)
{
  struct server_opts o = { .bind = bind, .port = port, .tls = true, .threads = 4,
                           .conn_timeout_s = 120, .max_conns = 64,
                           .body_limit = a->max_file_bytes, .routes = routes, .ctx = a };
  return server_start(out, &o, err, errlen);
}
