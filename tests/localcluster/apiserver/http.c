/* http.c: libmicrohttpd (one thread per connection, TLS from GnuTLS): request parsing (path,
 * query, headers, body up to 3 MiB), authentication, routing, and streamed answers for watches. */
#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "log.h"
#include "rbac.h"
#include "strbuf.h"

static struct MHD_Daemon *daemon_;
static char *cert_pem, *key_pem;

struct conn_state {
  struct ls_req req;
  struct strbuf body;
  bool started;
  int refuse; /* 413 decided from the headers */
};

const char *req_header(const struct ls_req *r, const char *name)
{
  if(!r->conn)
    return NULL;
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

struct hdr_iter {
  const char *prefix;
  void (*fn)(void *ctx, const char *name, const char *value);
  void *ctx;
};

static enum MHD_Result hdr_cb(void *cls, enum MHD_ValueKind kind, const char *key,
                              const char *value)
{
  (void)kind;
  struct hdr_iter *it = cls;
  if(key && !strncasecmp(key, it->prefix, strlen(it->prefix)))
    it->fn(it->ctx, key, value ? value : "");
  return MHD_YES;
}

void req_headers(const struct ls_req *r, const char *prefix,
                 void (*fn)(void *ctx, const char *name, const char *value), void *ctx)
{
  if(!r->conn)
    return;
  struct hdr_iter it = { prefix, fn, ctx };
  MHD_get_connection_values(r->conn, MHD_HEADER_KIND, hdr_cb, &it);
}

int req_fd(const struct ls_req *r)
{
  if(!r->conn)
    return -1;
  const union MHD_ConnectionInfo *ci =
    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

const char *req_param(const struct ls_req *r, const char *key)
{
  for(size_t i = 0; i < r->nparams; i++)
    if(!strcmp(r->params[i].key, key))
      return r->params[i].val;
  return NULL;
}

bool req_param_true(const struct ls_req *r, const char *key)
{
  const char *v = req_param(r, key);
  return v && (!strcmp(v, "true") || !strcmp(v, "1") || !*v);
}

void req_reply_text(struct ls_req *r, int status, const char *ctype, const char *text,
                    size_t len)
{
  free(r->resp);
  r->resp = malloc(len + 1);
  if(!r->resp)
    abort();
  memcpy(r->resp, text, len);
  r->resp[len] = '\0';
  r->resp_len = len;
  r->status = status;
  snprintf(r->ctype, sizeof(r->ctype), "%s", ctype);
}

void req_reply(struct ls_req *r, int status, const cJSON *obj)
{
  char *s = ls_print(obj);
  free(r->resp);
  r->resp = s;
  r->resp_len = strlen(s);
  r->status = status;
  snprintf(r->ctype, sizeof(r->ctype), "application/json");
}

void req_reply_take(struct ls_req *r, int status, cJSON *obj)
{
  req_reply(r, status, obj);
  cJSON_Delete(obj);
}

void req_reply_status(struct ls_req *r, cJSON *st)
{
  const cJSON *code = cJSON_GetObjectItem(st, "code");
  int c = cJSON_IsNumber(code) ? code->valueint : 500;
  if(c == 429) {
    const cJSON *ra = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "details"), "retryAfterSeconds");
    if(cJSON_IsNumber(ra))
      r->retry_after = ra->valueint;
  }
  req_reply_take(r, c, st);
}

static int hexval(int c)
{
  if(c >= '0' && c <= '9')
    return c - '0';
  c = tolower(c);
  if(c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

static char *decode(const char *s, size_t n, bool plus)
{
  char *out = malloc(n + 1);
  if(!out)
    abort();
  size_t j = 0;
  for(size_t i = 0; i < n; i++) {
    if(s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out[j++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else if(plus && s[i] == '+')
      out[j++] = ' ';
    else
      out[j++] = s[i];
  }
  out[j] = '\0';
  return out;
}

static void parse_uri(struct ls_req *r)
{
  const char *uri = r->raw_uri ? r->raw_uri : "/";
  const char *q = strchr(uri, '?');
  size_t plen = q ? (size_t)(q - uri) : strlen(uri);
  r->path = decode(uri, plen, false);
  if(!q)
    return;
  const char *p = q + 1;
  while(*p) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if(len) {
      const char *eq = memchr(p, '=', len);
      size_t klen = eq ? (size_t)(eq - p) : len;
      r->params = realloc(r->params, (r->nparams + 1) * sizeof(*r->params));
      if(!r->params)
        abort();
      r->params[r->nparams].key = decode(p, klen, true);
      r->params[r->nparams].val = eq ? decode(eq + 1, len - klen - 1, true) : decode("", 0, true);
      r->nparams++;
    }
    if(!amp)
      break;
    p = amp + 1;
  }
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
  (void)cls;
  struct conn_state *st = calloc(1, sizeof(*st));
  if(!st)
    abort();
  st->req.raw_uri = strdup(uri ? uri : "/");
  st->req.conn = c;
  strbuf_init(&st->body, LS_MAX_BODY);
  return st;
}

static void state_free(struct conn_state *st)
{
  struct ls_req *r = &st->req;
  free(r->raw_uri);
  free(r->path);
  for(size_t i = 0; i < r->nparams; i++) {
    free(r->params[i].key);
    free(r->params[i].val);
  }
  free(r->params);
  free(r->resp);
  free(r->body_alloc);
  auth_identity_release(&r->id);
  ls_warnings_release(&r->warn);
  strbuf_release(&st->body);
  free(st);
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  (void)pos;
  struct ls_stream *s = cls;
  return s->read(s->ctx, buf, max);
}

static void stream_free(void *cls)
{
  struct ls_stream *s = cls;
  s->free(s->ctx);
  free(s);
}

static void add_warning_headers(struct MHD_Response *mr, const struct ls_req *r)
{
  for(size_t i = 0; i < r->warn.n; i++) {
    char h[1200];
    size_t j = 0;
    j += (size_t)snprintf(h, sizeof(h), "299 - \"");
    for(const char *p = r->warn.v[i]; *p && j < sizeof(h) - 4; p++) {
      if(*p == '"' || *p == '\\')
        h[j++] = '\\';
      h[j++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    }
    h[j++] = '"';
    h[j] = '\0';
    MHD_add_response_header(mr, "Warning", h);
  }
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct ls_req *r)
{
  struct MHD_Response *mr;
  if(r->stream.read) {
    struct ls_stream *s = malloc(sizeof(*s));
    if(!s)
      abort();
    *s = r->stream;
    memset(&r->stream, 0, sizeof(r->stream)); /* the response owns it now */
    mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_cb, s,
                                           stream_free);
  } else {
    mr = MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (char *)"",
                                         r->resp ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    r->resp = NULL;
  }
  if(!mr)
    return MHD_NO;
  MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                          r->ctype[0] ? r->ctype : "application/json");
  MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
  if(r->retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof(ra), "%d", r->retry_after);
    MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, ra);
  }
  add_warning_headers(mr, r);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)(r->status ? r->status : 500), mr);
  MHD_destroy_response(mr);
  return ret;
}

static bool is_public(const char *path)
{
  return !strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/livez") ||
         !strcmp(path, "/version");
}

static void handle(struct ls_req *r)
{
  parse_uri(r);
  if(is_public(r->path)) {
    if(!strcmp(r->path, "/version"))
      discovery_handle(r);
    else
      req_reply_text(r, 200, "text/plain; charset=utf-8", "ok", 2);
    return;
  }
  cJSON *st = auth_request(r, &r->id);
  if(st) {
    req_reply_status(r, st);
    return;
  }
  if(!rest_resource_path(r->path)) {
    char verb[16];
    size_t i = 0;
    for(; r->method[i] && i + 1 < sizeof(verb); i++)
      verb[i] = (char)tolower((unsigned char)r->method[i]);
    verb[i] = '\0';
    struct rbac_attrs a = { verb, false, "", "", "", "", "", r->path };
    st = rbac_check(&r->id, &a);
    if(st) {
      req_reply_status(r, st);
      return;
    }
  }
  if(!strcmp(r->path, "/__faults")) {
    faults_handle(r);
    return;
  }
  if(discovery_handle(r))
    return;
  rest_dispatch(r);
}

static void log_request(const struct ls_req *r)
{
  if(!log_enabled(LOG_DEBUG))
    return;
  char code[8];
  snprintf(code, sizeof(code), "%d", r->status);
  log_kv(LOG_DEBUG, "request", "method", r->method, "uri", r->raw_uri, "code", code, "user",
         r->id.name, LOG_END);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
  (void)cls;
  (void)url;
  (void)version;
  struct conn_state *st = *con_cls;
  if(!st)
    return MHD_NO;
  struct ls_req *r = &st->req;
  if(!st->started) {
    st->started = true;
    r->method = method;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if(cl && strtoull(cl, NULL, 10) > LS_MAX_BODY)
      st->refuse = 413;
    return MHD_YES;
  }
  if(*upload_size) {
    if(!st->refuse && strbuf_add(&st->body, upload_data, *upload_size))
      st->refuse = 413;
    *upload_size = 0;
    return MHD_YES;
  }
  if(st->refuse) {
    req_reply_status(r, ls_status(413, "RequestEntityTooLarge", NULL,
                                  "the request body is above the limit of 3 MiB"));
  } else {
    r->body = strbuf_str(&st->body);
    r->body_len = st->body.len;
    handle(r);
  }
  log_request(r);
  return send_reply(c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)c;
  (void)toe;
  struct conn_state *st = *con_cls;
  if(st) {
    if(st->req.stream.free)
      st->req.stream.free(st->req.stream.ctx);
    state_free(st);
    *con_cls = NULL;
  }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
  (void)cls;
  char buf[512];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  size_t n = strlen(buf);
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  log_kv(LOG_DEBUG, "http server", "detail", buf, LOG_END);
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  char buf[4096];
  size_t n;
  gw_rc rc = GW_OK;
  while(!rc && (n = fread(buf, 1, sizeof(buf), f)) > 0)
    rc = strbuf_add(&sb, buf, n);
  fclose(f);
  char *s = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

int http_start(char *err, size_t errlen)
{
  cert_pem = slurp(ls_cfg.tls_cert);
  key_pem = slurp(ls_cfg.tls_key);
  if(!cert_pem || !key_pem) {
    snprintf(err, errlen, "cannot read --tls-cert \"%s\" or --tls-key \"%s\"", ls_cfg.tls_cert,
             ls_cfg.tls_key);
    return -1;
  }
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)ls_cfg.port);
  if(inet_pton(AF_INET, ls_cfg.bind, &sa.sin_addr) != 1) {
    snprintf(err, errlen, "--bind \"%s\" is not an IPv4 address", ls_cfg.bind);
    return -1;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_TLS | MHD_USE_ERROR_LOG;
  daemon_ = MHD_start_daemon(
    flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
    MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_HTTPS_MEM_CERT, cert_pem, MHD_OPTION_HTTPS_MEM_KEY,
    key_pem, MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
    MHD_OPTION_END);
  if(!daemon_) {
    snprintf(err, errlen, "cannot listen on %s:%ld", ls_cfg.bind, ls_cfg.port);
    return -1;
  }
  return 0;
}

int http_port(void)
{
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : -1;
}

void http_stop(void)
{
  if(daemon_)
    MHD_stop_daemon(daemon_);
  daemon_ = NULL;
  free(cert_pem);
  free(key_pem);
}
