/*
 * godwit-bench-baseline: the webhook's own HTTP layer (webhook/server.c, libmicrohttpd + GnuTLS
 * through tlsstore) answering each of /validate, /mutate and /convert with a constant,
 * precomputed body. bench/webhook/run.sh measures it next to godwit-webhook with the same
 * certificate, threads and connection settings, so the difference between the two is what the
 * decoders, the rules and the response builders cost per request.
 *
 * The body of a route is read from a file once at start (run.sh saves there what godwit-webhook
 * answered for the same request, so both servers send the same bytes). Like every handler, it
 * hands the server a malloc'd copy per request. A route without a file answers {}.
 *
 *   godwit-bench-baseline --tls-cert F --tls-key F [--port 0 --port-file F] [--threads N]
 *                         [--validate-body F] [--mutate-body F] [--convert-body F]
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "server.h"
#include "strbuf.h"
#include "tlsstore.h"

struct baseline_config {
  const char *tls_cert;
  const char *tls_key;
  long port;
  const char *port_file;
  const char *bind;
  long threads;
  const char *bodies[3]; /* validate, mutate, convert */
};

#define O(f) offsetof(struct baseline_config, f)
static const struct cfg_opt options[] = {
  { "tls-cert", NULL, CFG_STR, "build/certs/tls.crt", 0, 0, O(tls_cert), "PEM certificate" },
  { "tls-key", NULL, CFG_STR, "build/certs/tls.key", 0, 0, O(tls_key), "PEM private key" },
  { "port", NULL, CFG_INT, "0", 0, 65535, O(port), "HTTPS port (0: any free)" },
  { "port-file", NULL, CFG_STR, NULL, 0, 0, O(port_file), "write the bound port here" },
  { "bind", NULL, CFG_STR, "127.0.0.1", 0, 0, O(bind), "address to listen on" },
  { "threads", NULL, CFG_INT, "2", 1, 256, O(threads), "requests handled at once (as godwit-webhook)" },
  { "validate-body", NULL, CFG_STR, NULL, 0, 0, O(bodies[0]), "answer of POST /validate" },
  { "mutate-body", NULL, CFG_STR, NULL, 0, 0, O(bodies[1]), "answer of POST /mutate" },
  { "convert-body", NULL, CFG_STR, NULL, 0, 0, O(bodies[2]), "answer of POST /convert" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

struct constant {
  char *body;
  size_t len;
};

static struct constant answers[3];
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

static void answer(const struct constant *c, struct http_response *resp)
{
  resp->body = malloc(c->len + 1);
  if(!resp->body) {
    http_status_response(resp, 500, "InternalError", "out of memory");
    return;
  }
  memcpy(resp->body, c->body, c->len + 1);
  resp->len = c->len;
  resp->status = 200;
  resp->content_type = "application/json";
}

static void on_validate(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  answer(&answers[0], resp);
}

static void on_mutate(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  answer(&answers[1], resp);
}

static void on_convert(void *ctx, const struct http_request *req, struct http_response *resp)
{
  (void)ctx;
  (void)req;
  answer(&answers[2], resp);
}

static const struct http_route routes[] = {
  { "POST", "/validate", on_validate, true },
  { "POST", "/mutate", on_mutate, true },
  { "POST", "/convert", on_convert, true },
  { NULL, NULL, NULL, false },
};

static int load(const char *path, struct constant *c)
{
  if(!path) {
    c->body = strdup("{}");
    c->len = 2;
    return c->body ? 0 : -1;
  }
  FILE *f = fopen(path, "rb");
  if(!f) {
    fprintf(stderr, "godwit-bench-baseline: cannot open \"%s\"\n", path);
    return -1;
  }
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  char buf[65536];
  size_t n;
  gw_rc rc = GW_OK;
  while(!rc && (n = fread(buf, 1, sizeof(buf), f)) > 0)
    rc = strbuf_add(&sb, buf, n);
  fclose(f);
  c->body = rc ? NULL : strbuf_take(&sb, &c->len);
  strbuf_release(&sb);
  if(!c->body)
    fprintf(stderr, "godwit-bench-baseline: cannot read \"%s\"\n", path);
  return c->body ? 0 : -1;
}

int main(int argc, char **argv)
{
  struct baseline_config c;
  char err[256];
  gw_rc rc = cfg_parse(options, &c, argc, argv, err, sizeof(err));
  if(rc == GW_ENOTFOUND) {
    cfg_usage(stdout, "godwit-bench-baseline",
              "The webhook's HTTP layer answering constant bodies (benchmark baseline).", options);
    return 0;
  }
  if(rc) {
    fprintf(stderr, "godwit-bench-baseline: %s\n", err);
    return 2;
  }
  for(int i = 0; i < 3; i++)
    if(load(c.bodies[i], &answers[i]))
      return 2;
  log_set_level(LOG_WARN);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  tls_store_init(c.tls_cert, c.tls_key);
  bool changed;
  if(tls_store_reload(&changed, err, sizeof(err))) {
    fprintf(stderr, "godwit-bench-baseline: %s\n", err);
    return 1;
  }
  /* The same settings as godwit-webhook's HTTPS listener (webhook/main.c, serve()). */
  struct server_opts so = { c.bind, (int)c.port, true, (int)c.threads, 10, 1024, 3u << 20,
                            routes, NULL };
  struct server *s = NULL;
  if(server_start(&s, &so, err, sizeof(err))) {
    fprintf(stderr, "godwit-bench-baseline: %s\n", err);
    return 1;
  }
  if(c.port_file) {
    FILE *f = fopen(c.port_file, "w");
    if(f) {
      fprintf(f, "%d\n", server_port(s));
      fclose(f);
    }
  }
  struct timespec tick = { 0, 100 * 1000000L };
  while(!stopping)
    nanosleep(&tick, NULL);
  server_stop(s);
  tls_store_shutdown();
  for(int i = 0; i < 3; i++)
    free(answers[i].body);
  return 0;
}
