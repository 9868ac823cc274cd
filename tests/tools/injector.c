/*
 * godwit-injector: a sidecar injector for tests, as a service mesh runs one: a mutating
 * admission webhook (AdmissionReview v1 on POST /mutate, HTTPS) that adds a proxy container to
 * every Pod labelled godwit.dev/runner, unless the Pod opts out with the label or annotation
 * sidecar.istio.io/inject: "false", as Istio honours them. The local cluster registers it with a
 * MutatingWebhookConfiguration (tests/cluster/e2e.c, e2e_injector_start) to show how the
 * runner-Pod guard meets injected sidecars (docs/operations/runner-pods.md).
 *
 *   godwit-injector --cert tls.crt --key tls.key --port-file FILE [--bind 127.0.0.1]
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certgen.h"
#include "config.h"
#include "json.h"
#include "strbuf.h"

struct inj_config {
  const char *cert, *key, *port_file, *bind;
};

#define O(f) offsetof(struct inj_config, f)
static const struct cfg_opt options[] = {
  { "cert", NULL, CFG_STR, NULL, 0, 0, O(cert), "serving certificate (PEM)" },
  { "key", NULL, CFG_STR, NULL, 0, 0, O(key), "its private key (PEM)" },
  { "port-file", NULL, CFG_STR, NULL, 0, 0, O(port_file), "where the chosen port is written" },
  { "bind", NULL, CFG_STR, "127.0.0.1", 0, 0, O(bind), "the address to listen on" },
  { NULL },
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

static bool opted_out(const cJSON *pod)
{
  const char *k = "sidecar.istio.io/inject";
  const char *l = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(pod, "metadata.labels"), k));
  const char *a = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(pod, "metadata.annotations"), k));
  return (l && !strcmp(l, "false")) || (a && !strcmp(a, "false"));
}

/* The AdmissionReview answer for one request body (malloc'd JSON). */
static char *review(const char *body, size_t len)
{
  cJSON *in = cJSON_ParseWithLength(body, len);
  const cJSON *pod = json_get(in, "request.object");
  const char *uid = json_get_str(in, "request.uid");
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "apiVersion", "admission.k8s.io/v1");
  cJSON_AddStringToObject(out, "kind", "AdmissionReview");
  cJSON *resp = cJSON_AddObjectToObject(out, "response");
  cJSON_AddStringToObject(resp, "uid", uid ? uid : "");
  cJSON_AddTrueToObject(resp, "allowed");
  bool runner = cJSON_GetObjectItemCaseSensitive(json_get(pod, "metadata.labels"),
                                                 "godwit.dev/runner") != NULL;
  if(runner && !opted_out(pod)) {
    const char *patch =
      "[{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":{\"name\":\"istio-proxy\","
      "\"image\":\"docker.io/istio/proxyv2:1.24.0\",\"args\":[\"proxy\",\"sidecar\"]}}]";
    size_t n = strlen(patch);
    char *b64 = malloc(4 * ((n + 2) / 3) + 1);
    if(b64) {
      EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)patch, (int)n);
      cJSON_AddStringToObject(resp, "patchType", "JSONPatch");
      cJSON_AddStringToObject(resp, "patch", b64);
      free(b64);
      fprintf(stderr, "godwit-injector: injected istio-proxy into %s\n",
              json_get_str(pod, "metadata.generateName") ? json_get_str(pod,
                                                                        "metadata.generateName")
                                                         : "a Pod");
    }
  }
  char *s = cJSON_PrintUnformatted(out);
  cJSON_Delete(out);
  cJSON_Delete(in);
  return s;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **ctx)
{
  (void)cls, (void)version;
  struct strbuf *sb = *ctx;
  if(!sb) {
    sb = malloc(sizeof(*sb));
    if(!sb)
      return MHD_NO;
    strbuf_init(sb, 4u << 20);
    *ctx = sb;
    return MHD_YES;
  }
  if(*upload_size) {
    if(strbuf_add(sb, upload_data, *upload_size))
      return MHD_NO;
    *upload_size = 0;
    return MHD_YES;
  }
  char *answer = strcmp(method, "POST") || strcmp(url, "/mutate")
                   ? NULL : review(strbuf_str(sb), sb->len);
  struct MHD_Response *r =
    answer ? MHD_create_response_from_buffer(strlen(answer), answer, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if(answer)
    MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(conn, answer ? 200 : 404, r);
  MHD_destroy_response(r);
  return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **ctx,
                    enum MHD_RequestTerminationCode code)
{
  (void)cls, (void)conn, (void)code;
  struct strbuf *sb = *ctx;
  if(sb) {
    strbuf_release(sb);
    free(sb);
  }
}

int main(int argc, char **argv)
{
  struct inj_config cfg = { 0 };
  int code = cfg_main(options, &cfg, argc, argv, "godwit-injector",
                      "A sidecar injector for tests (a mutating admission webhook).");
  if(code >= 0)
    return code;
  char *cert = NULL, *key = NULL;
  size_t n;
  if(!cfg.cert || !cfg.key || !cfg.port_file || certgen_read_file(cfg.cert, 1u << 20, &cert, &n) ||
     certgen_read_file(cfg.key, 1u << 20, &key, &n)) {
    fprintf(stderr, "godwit-injector: --cert, --key and --port-file are required\n");
    return 2;
  }
  struct sockaddr_in sa = { .sin_family = AF_INET };
  if(inet_pton(AF_INET, cfg.bind, &sa.sin_addr) != 1) {
    fprintf(stderr, "godwit-injector: --bind %s is not an IPv4 address\n", cfg.bind);
    return 2;
  }
  struct MHD_Daemon *d = MHD_start_daemon(
    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG, 0, NULL, NULL,
    on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_HTTPS_MEM_CERT, cert,
    MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
  if(!d) {
    fprintf(stderr, "godwit-injector: cannot listen on %s\n", cfg.bind);
    return 1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  FILE *f = fopen(cfg.port_file, "w");
  if(!f || !info) {
    MHD_stop_daemon(d);
    return 1;
  }
  fprintf(f, "%u\n", (unsigned)info->port);
  fclose(f);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  while(!stopping)
    pause();
  MHD_stop_daemon(d);
  free(cert);
  free(key);
  return 0;
}
