#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "metrics.h"
#include "strbuf.h"
#include "tlsstore.h"

struct server {
  struct MHD_Daemon *daemon;
  struct server_opts opts;
  sem_t turns; /* opts.threads requests handled at once */
};

/* Each connection has its thread (TLS and HTTP); a whole request waits for one of the server's
 * turns before its handler runs, so at most opts.threads handlers (and their memory) at once. */
static void take_turn(struct server *s)
{
  while(sem_wait(&s->turns) && errno == EINTR)
    ;
}

/* Per request state, from the first call of the access handler to completion. */
struct req_state {
  const struct http_route *route;
  struct strbuf body;
  int refuse; /* an HTTP status decided before the handler, or 0 */
  bool drain_too_big; /* a 413 whose body is too large even to read and drop */
  const char *refuse_reason;
  char refuse_msg[160];
};

void http_status_response(struct http_response *resp, int code, const char *reason,
                          const char *message)
{
  struct strbuf sb;
  strbuf_init(&sb, 4096);
  gw_rc rc = strbuf_addf(&sb, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                              "\"status\":\"Failure\",\"message\":\"");
  if(!rc)
    rc = strbuf_add_json_escaped(&sb, message);
  if(!rc)
    rc = strbuf_addf(&sb, "\",\"reason\":\"%s\",\"code\":%d}\n", reason, code);
  resp->status = code;
  resp->content_type = "application/json";
  resp->body = rc ? NULL : strbuf_take(&sb, &resp->len);
  if(!resp->body)
    resp->len = 0;
  strbuf_release(&sb);
}

static enum MHD_Result reply(struct MHD_Connection *c, struct http_response *r, const char *allow)
{
  struct MHD_Response *mr =
    MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"",
                                    r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if(!mr) {
    free(r->body);
    return MHD_NO;
  }
  MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                          r->content_type ? r->content_type : "application/json");
  if(allow)
    MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, allow);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, mr);
  MHD_destroy_response(mr);
  return ret;
}

static void refuse(struct req_state *st, int code, const char *reason, const char *fmt,
                   const char *arg)
{
  st->refuse = code;
  st->refuse_reason = reason;
  snprintf(st->refuse_msg, sizeof(st->refuse_msg), fmt, arg);
}

/* "3 MiB", or a number of bytes when the limit is not a whole number of MiB. */
static void limit_text(size_t limit, char *buf, size_t len)
{
  if(limit && !(limit % (1024 * 1024)))
    snprintf(buf, len, "%zu MiB", limit / (1024 * 1024));
  else
    snprintf(buf, len, "%zu bytes", limit);
}

static bool is_json(const char *ct)
{
  if(!ct)
    return false;
  while(*ct == ' ')
    ct++;
  size_t n = strlen("application/json");
  return !strncasecmp(ct, "application/json", n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* First call for a request: route it and decide what can be refused from the headers. */
static void route(struct server *s, struct req_state *st, struct MHD_Connection *c,
                  const char *url, const char *method);

static void first_call(struct server *s, struct req_state *st, struct MHD_Connection *c,
                       const char *url, const char *method)
{
  route(s, st, c, url, method);
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  st->drain_too_big = cl && strtoull(cl, NULL, 10) > 16 * (unsigned long long)s->opts.body_limit;
}

static void route(struct server *s, struct req_state *st, struct MHD_Connection *c,
                  const char *url, const char *method)
{
  const struct http_route *path_match = NULL;
  for(const struct http_route *r = s->opts.routes; r->path; r++) {
    if(strcmp(r->path, url))
      continue;
    path_match = r;
    if(!strcmp(r->method, method)) {
      st->route = r;
      break;
    }
  }
  if(!path_match) {
    refuse(st, 404, "NotFound", "no handler for path \"%.80s\"", url);
    return;
  }
  if(!st->route) {
    refuse(st, 405, "MethodNotAllowed", "method %.16s is not allowed here", method);
    st->route = path_match;
    return;
  }
  if(!st->route->json_body)
    return;
  const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  if(!is_json(ct)) {
    refuse(st, 415, "UnsupportedMediaType",
           "content type must be application/json, got \"%.60s\"", ct ? ct : "");
    return;
  }
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if(cl && strtoull(cl, NULL, 10) > s->opts.body_limit) {
    char msg[160], lim[32];
    limit_text(s->opts.body_limit, lim, sizeof(lim));
    snprintf(msg, sizeof(msg), "request body of %.20s bytes is above the limit of %s", cl, lim);
    refuse(st, 413, "RequestEntityTooLarge", "%s", msg);
  }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
  (void)version;
  struct server *s = cls;
  struct req_state *st = *con_cls;
  if(!st) {
    st = calloc(1, sizeof(*st));
    if(!st)
      return MHD_NO;
    strbuf_init(&st->body, s->opts.body_limit);
    *con_cls = st;
    first_call(s, st, c, url, method);
    /* A refused request's body is read and dropped, so a client still sending sees the
     * answer; one far too large to drain is answered at once and the connection closed. */
    if(st->refuse && st->drain_too_big) {
      struct http_response r = { 0 };
      http_status_response(&r, st->refuse, st->refuse_reason, st->refuse_msg);
      metrics_http_refusal(st->refuse);
      log_kv(LOG_DEBUG, "request refused", "path", url, "reason", st->refuse_reason, LOG_END);
      char allow[16];
      snprintf(allow, sizeof(allow), "%s", st->route ? st->route->method : "");
      return reply(c, &r, st->refuse == 405 ? allow : NULL);
    }
    return MHD_YES;
  }
  if(*upload_size) {
    if(!st->refuse && strbuf_add(&st->body, upload_data, *upload_size)) {
      char lim[32];
      limit_text(s->opts.body_limit, lim, sizeof(lim));
      refuse(st, 413, "RequestEntityTooLarge", "request body is above the limit of %s", lim);
      strbuf_release(&st->body);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  struct http_response r = { 0 };
  if(st->refuse) {
    http_status_response(&r, st->refuse, st->refuse_reason, st->refuse_msg);
    metrics_http_refusal(st->refuse);
    return reply(c, &r, NULL);
  }
  const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  struct http_request req = { method, url, ct, strbuf_str(&st->body), st->body.len, c };
  take_turn(s);
  st->route->fn(s->opts.ctx, &req, &r);
  sem_post(&s->turns);
  return reply(c, &r, NULL);
}

const char *http_request_header(const struct http_request *req, const char *name)
{
  return req->conn ? MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name) : NULL;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)c;
  (void)toe;
  struct req_state *st = *con_cls;
  if(st) {
    strbuf_release(&st->body);
    free(st);
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

gw_rc server_start(struct server **out, const struct server_opts *o, char *err, size_t errlen)
{
  struct server *s = calloc(1, sizeof(*s));
  if(!s)
    return GW_ENOMEM;
  s->opts = *o;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t sl;
  /* A thread per connection, not a pool of event loops: a pool's thread keeps the connections it
   * accepted, and kube-apiserver (or any client) holding a few busy connections could leave
   * them all on one thread while the other cores idled (a 100-object /convert at 8 connections
   * used one core of two). The kernel spreads connection threads over the cores; the turns
   * bound the handlers running at once. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_ERROR_LOG;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if(inet_pton(AF_INET, o->bind, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)o->port);
    sl = sizeof(*v4);
  } else if(inet_pton(AF_INET6, o->bind, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)o->port);
    sl = sizeof(*v6);
    flags |= MHD_USE_IPv6;
  } else {
    snprintf(err, errlen, "bind address \"%s\" is not an IP address", o->bind);
    free(s);
    return GW_EINVAL;
  }
  (void)sl;
  struct MHD_OptionItem opts[10];
  size_t n = 0;
  /* The logger first, so libmicrohttpd prints nothing of its own. */
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL };
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &ss };
  /* a connection thread's stack: the handlers' deepest (JSON nested 100 deep, the schema walks)
   * takes a few tens of KiB; 2 MiB leaves room under the sanitizers, and 1024 connections
   * reserve 2 GiB of address space, not the 8 GiB of the default */
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_STACK_SIZE, 2u << 20, NULL };
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout_s, NULL };
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, o->max_conns, NULL };
  opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL };
  if(o->tls) {
    flags |= MHD_USE_TLS;
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
                                         (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                         (void *)tls_store_callback };
  }
  opts[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
  if(sem_init(&s->turns, 0, (unsigned)(o->threads > 0 ? o->threads : 1))) {
    snprintf(err, errlen, "cannot make the request turns: %s", strerror(errno));
    free(s);
    return GW_EIO;
  }
  s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
                               MHD_OPTION_END);
  if(!s->daemon) {
    snprintf(err, errlen, "cannot listen on %s:%d (address in use, or TLS unavailable)", o->bind,
             o->port);
    sem_destroy(&s->turns);
    free(s);
    return GW_EIO;
  }
  *out = s;
  return GW_OK;
}

int server_port(const struct server *s)
{
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : -1;
}

void server_stop(struct server *s)
{
  if(!s)
    return;
  MHD_stop_daemon(s->daemon);
  sem_destroy(&s->turns);
  free(s);
}
