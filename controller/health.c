#include "health.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

#define METRICS_MAX (8u << 20)

struct health {
  struct MHD_Daemon *d;
  struct health_ops ops;
  int port;
};

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, const char *ctype,
                              char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if(!r) {
    if(mode == MHD_RESPMEM_MUST_FREE)
      free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned code, const char *msg)
{
  char *b = NULL;
  int n = asprintf(&b, "%s\n", msg);
  if(n < 0)
    return MHD_NO;
  return answer(c, code, "text/plain; charset=utf-8", b, (size_t)n, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
  (void)version;
  (void)upload_data;
  struct health *h = cls;
  if(!*con_cls) { /* first call: headers only */
    *con_cls = h;
    return MHD_YES;
  }
  if(*upload_size) { /* never read a body */
    *upload_size = 0;
    return MHD_YES;
  }
  if(strcmp(method, "GET") && strcmp(method, "HEAD"))
    return text(c, 405, "method not allowed");
  char why[256] = "";
  if(!strcmp(url, "/healthz")) {
    bool ok = !h->ops.healthy || h->ops.healthy(h->ops.ctx, why, sizeof(why));
    return text(c, ok ? 200 : 500, ok ? "ok" : why);
  }
  if(!strcmp(url, "/readyz")) {
    bool ok = !h->ops.ready || h->ops.ready(h->ops.ctx, why, sizeof(why));
    return text(c, ok ? 200 : 503, ok ? "ok" : why);
  }
  if(!strcmp(url, "/metrics")) {
    struct strbuf sb;
    strbuf_init(&sb, METRICS_MAX);
    gw_rc rc = h->ops.metrics ? h->ops.metrics(h->ops.ctx, &sb) : GW_OK;
    if(rc) {
      strbuf_release(&sb);
      return text(c, 500, gw_strerror(rc));
    }
    size_t len = 0;
    char *body = strbuf_take(&sb, &len);
    if(!body)
      return text(c, 500, "out of memory");
    return answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", body, len,
                  MHD_RESPMEM_MUST_FREE);
  }
  return text(c, 404, "not found");
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
  (void)cls;
  char msg[256];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  size_t n = strlen(msg);
  if(n && msg[n - 1] == '\n')
    msg[n - 1] = 0;
  log_kv(LOG_DEBUG, "metrics listener", "detail", msg, LOG_END);
}

gw_rc health_start(struct health **out, const char *bind, int port, const struct health_ops *ops,
                   char *err, size_t errlen)
{
  struct health *h = calloc(1, sizeof(*h));
  if(!h)
    return GW_ENOMEM;
  h->ops = *ops;
  struct sockaddr_in6 a6;
  struct sockaddr_in a4;
  struct sockaddr *sa;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  memset(&a4, 0, sizeof(a4));
  memset(&a6, 0, sizeof(a6));
  if(bind && strchr(bind, ':')) {
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((uint16_t)port);
    if(inet_pton(AF_INET6, bind, &a6.sin6_addr) != 1) {
      snprintf(err, errlen, "--bind \"%s\": not an IP address", bind);
      free(h);
      return GW_EINVAL;
    }
    sa = (struct sockaddr *)&a6;
    flags |= MHD_USE_IPv6;
  } else {
    a4.sin_family = AF_INET;
    a4.sin_port = htons((uint16_t)port);
    if(inet_pton(AF_INET, bind ? bind : "0.0.0.0", &a4.sin_addr) != 1) {
      snprintf(err, errlen, "--bind \"%s\": not an IP address", bind);
      free(h);
      return GW_EINVAL;
    }
    sa = (struct sockaddr *)&a4;
  }
  h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, h,
                          MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                          MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_EXTERNAL_LOGGER, on_log,
                          NULL, MHD_OPTION_END);
  if(!h->d) {
    snprintf(err, errlen, "cannot listen on %s port %d", bind ? bind : "0.0.0.0", port);
    free(h);
    return GW_EIO;
  }
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = i ? i->port : port;
  *out = h;
  return GW_OK;
}

int health_port(const struct health *h)
{
  return h ? h->port : 0;
}

void health_stop(struct health *h)
{
  if(!h)
    return;
  MHD_stop_daemon(h->d);
  free(h);
}
