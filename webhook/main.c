/* godwit-webhook: HTTPS admission and conversion for every godwit kind. See docs/operations. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "version.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "review.h"
#include "policystore.h"
#include "routes.h"
#include "server.h"
#include "tlsstore.h"

struct webhook_config {
  const char *tls_cert;
  const char *tls_key;
  long port;
  const char *policy;
  long metrics_port;
  const char *bind;
  long threads;
  long conn_timeout;
  long max_conns;
  long reload_interval_ms;
  const char *log_level;
  const char *port_file;
};

#define O(f) offsetof(struct webhook_config, f)
static const struct cfg_opt options[] = {
  { "tls-cert", "GODWIT_TLS_CERT", CFG_STR, "/etc/godwit/tls/tls.crt", 0, 0, O(tls_cert),
    "PEM certificate chain to serve; reloaded when it changes" },
  { "tls-key", "GODWIT_TLS_KEY", CFG_STR, "/etc/godwit/tls/tls.key", 0, 0, O(tls_key),
    "PEM private key of the certificate; reloaded with it" },
  { "port", "GODWIT_PORT", CFG_INT, "9443", 0, 65535, O(port),
    "HTTPS port for /mutate, /validate, /convert, /healthz, /readyz, /metrics (0: any free)" },
  { "policy", "GODWIT_POLICY", CFG_STR, NULL, 0, 0, O(policy),
    "admission policy JSON file; reloaded when it changes (default: built-in policy)" },
  { "metrics-port", "GODWIT_METRICS_PORT", CFG_INT, "0", 0, 65535, O(metrics_port),
    "also serve /metrics, /healthz and /readyz over plain HTTP on this port (0: off)" },
  { "bind", "GODWIT_BIND", CFG_STR, "0.0.0.0", 0, 0, O(bind), "address to listen on" },
  { "threads", "GODWIT_THREADS", CFG_INT, "2", 1, 256, O(threads),
    "requests handled at once (a connection has its own thread; its request waits for a turn)" },
  { "connection-timeout", NULL, CFG_INT, "10", 1, 3600, O(conn_timeout),
    "seconds an idle or stalled connection is kept" },
  { "max-connections", NULL, CFG_INT, "1024", 1, 65536, O(max_conns),
    "concurrent connections accepted" },
  { "reload-interval-ms", NULL, CFG_INT, "1000", 50, 600000, O(reload_interval_ms),
    "how often the certificate and policy files are checked for changes" },
  { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, O(log_level),
    "debug (one line per request), info, warn or error" },
  { "port-file", NULL, CFG_STR, NULL, 0, 0, O(port_file),
    "write the bound HTTPS port to this file once serving (for tests with --port 0)" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

static void reload_all(bool first)
{
  char err[512];
  bool changed;
  gw_rc rc = tls_store_reload(&changed, err, sizeof(err));
  if(rc) {
    static char last_cert_err[512];
    if(first || strcmp(err, last_cert_err)) {
      log_kv(LOG_ERROR, "serving certificate not loaded", "reason", err, LOG_END);
      metrics_cert_reload(false);
      snprintf(last_cert_err, sizeof(last_cert_err), "%s", err);
    }
  } else if(changed) {
    char exp[32];
    snprintf(exp, sizeof(exp), "%lld", (long long)tls_store_not_after());
    log_kv(LOG_INFO, "serving certificate loaded", "notAfterUnix", exp, LOG_END);
    metrics_cert_reload(true);
  }
  rc = policy_store_reload(&changed, err, sizeof(err));
  if(rc) {
    static char last_policy_err[512];
    if(first || strcmp(err, last_policy_err)) {
      log_kv(LOG_ERROR, "admission policy not loaded", "reason", err, LOG_END);
      metrics_policy_reload(false);
      snprintf(last_policy_err, sizeof(last_policy_err), "%s", err);
    }
  } else if(changed) {
    char digest[80];
    policy_store_digest(digest, sizeof(digest));
    log_kv(LOG_INFO, "admission policy loaded", "digest", digest, LOG_END);
    metrics_policy_reload(true);
  }
}

static int serve(const struct webhook_config *c)
{
  char err[256];
  struct server *https = NULL, *plain = NULL;
  struct server_opts so = { c->bind, (int)c->port, true, (int)c->threads, (int)c->conn_timeout,
                            (int)c->max_conns, 3u << 20, routes_https, NULL };
  if(server_start(&https, &so, err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot start", "reason", err, LOG_END);
    return 1;
  }
  if(c->metrics_port) {
    struct server_opts mo = { c->bind, (int)c->metrics_port, false, 1, (int)c->conn_timeout,
                              64, 4096, routes_metrics, NULL };
    if(server_start(&plain, &mo, err, sizeof(err))) {
      log_kv(LOG_ERROR, "cannot start the metrics listener", "reason", err, LOG_END);
      server_stop(https);
      return 1;
    }
  }
  char port[16];
  snprintf(port, sizeof(port), "%d", server_port(https));
  if(c->port_file) {
    FILE *f = fopen(c->port_file, "w");
    if(f) {
      fprintf(f, "%s\n", port);
      fclose(f);
    }
  }
  log_kv(LOG_INFO, "serving", "port", port, "bind", c->bind, "version", gw_version(), "commit",
         gw_commit(), "buildDate", gw_build_date(), LOG_END);
  struct timespec tick = { c->reload_interval_ms / 1000, (c->reload_interval_ms % 1000) * 1000000L };
  while(!stopping) {
    nanosleep(&tick, NULL);
    if(!stopping)
      reload_all(false);
  }
  log_kv(LOG_INFO, "stopping: finishing requests in flight", LOG_END);
  server_stop(plain);
  server_stop(https);
  return 0;
}

int main(int argc, char **argv)
{
  struct webhook_config c;
  int code = cfg_main(options, &c, argc, argv, "godwit-webhook",
                      "HTTPS admission (mutating, validating) and conversion webhook for godwit's "
                      "kinds.");
  if(code >= 0)
    return code;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  review_tune_malloc();
  tls_store_init(c.tls_cert, c.tls_key);
  policy_store_init(c.policy);
  reload_all(true);
  code = serve(&c);
  tls_store_shutdown();
  policy_store_shutdown();
  return code;
}
