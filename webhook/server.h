/*
 * server.h: the HTTP(S) layer. Everything about libmicrohttpd lives in server.c; a handler sees
 * a whole request (method, path, content type, body) and fills a response. It never touches a
 * socket or a TLS session.
 *
 * Before a handler runs, the server has already refused, with a JSON Status body:
 *   404 unknown path, 405 wrong method (with Allow), 415 a body route without application/json,
 *   413 a body above the limit (known from Content-Length, or when a chunked body passes it).
 * The body of a refused request is read and dropped before the answer, so a client still
 * sending sees it; a body above 16 times the limit is answered at once and the connection
 * closed.
 * The query string (kube-apiserver appends ?timeout=10s) is ignored. Each connection has its own
 * thread for TLS and HTTP (the kernel spreads them over the cores, whichever connections are
 * busy); a handler runs only once its request is whole and one of `threads` turns is free, so a
 * client that sends headers and stalls takes no turn from anyone, and at most `threads`
 * handlers hold memory at once. Connections idle for longer than the connection timeout are
 * closed.
 * With TLS, only TLS 1.2 and 1.3 are offered and the certificate comes from tlsstore.
 */
#ifndef GW_SERVER_H
#define GW_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

struct http_request {
  const char *method;
  const char *path;
  const char *content_type;
  const char *body; /* NUL-terminated copy; len excludes the NUL */
  size_t len;
  void *conn; /* the server's connection: http_request_header */
};

/* A request header's value, or NULL. */
const char *http_request_header(const struct http_request *req, const char *name);

struct http_response {
  int status;
  const char *content_type;
  char *body; /* malloc'd; the server frees it */
  size_t len;
};

typedef void (*http_handler)(void *ctx, const struct http_request *req,
                             struct http_response *resp);

struct http_route {
  const char *method;
  const char *path;
  http_handler fn;
  bool json_body; /* POST with an application/json body */
};

struct server_opts {
  const char *bind;    /* "0.0.0.0", "127.0.0.1", "::" */
  int port;            /* 0 = any free port */
  bool tls;
  int threads;
  int conn_timeout_s;
  int max_conns;
  size_t body_limit;
  const struct http_route *routes; /* terminated by a row with path == NULL */
  void *ctx;
};

struct server;

gw_rc server_start(struct server **out, const struct server_opts *o, char *err, size_t errlen)
  GW_MUST_CHECK;
int server_port(const struct server *s);
/* Stops accepting, lets requests in flight finish, frees. */
void server_stop(struct server *s);

/* Fills resp with a metav1.Status JSON body (also used by handlers for HTTP-level errors). */
void http_status_response(struct http_response *resp, int code, const char *reason,
                          const char *message);

#endif
