/* main.c: godwit-apiserver, the local cluster's API server: flags, the objects every cluster
 * starts with, signals, and the parent watch that keeps it from outliving a test. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "rbac.h"
#include "rest.h"

struct ls_config ls_cfg;
volatile int ls_stopping;
char *ls_root_ca_pem;

#define O(f) offsetof(struct ls_config, f)
static const struct cfg_opt options[] = {
  { "port", NULL, CFG_INT, "6443", 0, 65535, O(port), "HTTPS port (0: any free one)" },
  { "port-file", NULL, CFG_STR, NULL, 0, 0, O(port_file),
    "write the bound port to this file once serving" },
  { "bind", NULL, CFG_STR, "127.0.0.1", 0, 0, O(bind), "IPv4 address to listen on" },
  { "tls-cert", NULL, CFG_STR, NULL, 0, 0, O(tls_cert), "serving certificate (PEM)" },
  { "tls-key", NULL, CFG_STR, NULL, 0, 0, O(tls_key), "its private key (PEM)" },
  { "token-auth-file", NULL, CFG_STR, NULL, 0, 0, O(token_auth_file),
    "kube-apiserver's static token CSV: token,user,uid,\"group1,group2\"" },
  { "root-ca-file", NULL, CFG_STR, NULL, 0, 0, O(root_ca_file),
    "CA published in every namespace as ConfigMap kube-root-ca.crt" },
  { "service-map", NULL, CFG_STRLIST, NULL, 0, 0, O(service_map),
    "NS/NAME=HOST:PORT: where a webhook Service is reached (repeatable)" },
  { "faults", NULL, CFG_BOOL, NULL, 0, 0, O(faults), "serve /__faults (fault injection)" },
  { "watch-history", NULL, CFG_INT, "10000", 1, 10000000, O(watch_history),
    "events kept for watch resumption; older resourceVersions get 410 Gone" },
  { "bookmark-interval", NULL, CFG_INT, "10", 1, 3600, O(bookmark_interval_s),
    "seconds between BOOKMARK events of idle watches that allow them" },
  { "parent-pid", NULL, CFG_INT, "0", 0, 1L << 30, O(parent_pid),
    "exit when this process is gone (tests)" },
  { "pod-log-dir", NULL, CFG_STR, NULL, 0, 0, O(pod_log_dir),
    "where the job runner writes container logs (NS/POD/CONTAINER.log) for pods/NAME/log" },
  { "log-level", NULL, CFG_STR, "info", 0, 0, O(log_level), "debug, info, warn or error" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static void on_signal(int sig)
{
  (void)sig;
  ls_stopping = 1;
}

static cJSON *cluster_ops_namespace(const char *ns)
{
  store_lock();
  const struct ls_entry *e = store_get("", "namespaces", "", ns);
  cJSON *copy = e ? cJSON_Duplicate(e->obj->json, 1) : NULL;
  store_unlock();
  return copy;
}

static void create(const char *group, const char *version, const char *resource, const char *ns,
                   const char *json)
{
  cJSON *obj = cJSON_Parse(json);
  cJSON *st = rest_internal_create(group, version, resource, ns, obj);
  if(st) {
    log_kv(LOG_ERROR, "cannot create a start-up object", "object", json, "error",
           ls_str(st, "message"), LOG_END);
    cJSON_Delete(st);
  }
}

static void bootstrap(void)
{
  static const char *const nss[] = { "default", "kube-system", "kube-public", "kube-node-lease",
                                     "godwit-system" };
  for(size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
    char j[256];
    snprintf(j, sizeof(j), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                           "\"%s\"}}", nss[i]);
    create("", "v1", "namespaces", "", j);
  }
  struct utsname u;
  char kernel[128] = "unknown";
  if(!uname(&u))
    snprintf(kernel, sizeof(kernel), "%s", u.release);
  char now[32];
  ls_now(now);
  char node[2048];
  snprintf(node, sizeof(node),
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"local\",\"labels\":"
           "{\"kubernetes.io/hostname\":\"local\",\"kubernetes.io/os\":\"linux\","
           "\"kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/os\":\"linux\","
           "\"beta.kubernetes.io/arch\":\"amd64\"}},\"spec\":{},\"status\":{\"conditions\":[{"
           "\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":"
           "\"kubelet is posting ready status\",\"lastHeartbeatTime\":\"%s\","
           "\"lastTransitionTime\":\"%s\"}],\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
           "\"127.0.0.1\"},{\"type\":\"Hostname\",\"address\":\"local\"}],\"capacity\":{\"cpu\":"
           "\"2\",\"memory\":\"8Gi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"2\",\"memory\":"
           "\"8Gi\",\"pods\":\"110\"},\"nodeInfo\":{\"kubeletVersion\":\"%s\",\"kubeProxyVersion\":"
           "\"%s\",\"operatingSystem\":\"linux\",\"architecture\":\"amd64\",\"osImage\":\"Debian "
           "GNU/Linux 12 (bookworm)\",\"kernelVersion\":\"%s\",\"containerRuntimeVersion\":"
           "\"godwit-jobrunner://local\",\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\"}}}",
           now, now, LS_KUBE_VERSION, LS_KUBE_VERSION, kernel);
  create("", "v1", "nodes", "", node);
  rbac_bootstrap();
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(n > 0 ? (size_t)n + 1 : 1);
  if(!b)
    abort();
  size_t got = n > 0 ? fread(b, 1, (size_t)n, f) : 0;
  b[got] = '\0';
  fclose(f);
  return b;
}

int main(int argc, char **argv)
{
  int code = cfg_main(options, &ls_cfg, argc, argv, "godwit-apiserver",
                      "The local cluster's Kubernetes API server (tests).");
  if(code >= 0)
    return code;
  if(!ls_cfg.tls_cert || !ls_cfg.tls_key) {
    fprintf(stderr, "godwit-apiserver: --tls-cert and --tls-key are required\n");
    return 2;
  }
  if(auth_init(ls_cfg.token_auth_file)) {
    fprintf(stderr, "godwit-apiserver: cannot read --token-auth-file %s\n",
            ls_cfg.token_auth_file);
    return 2;
  }
  if(ls_cfg.root_ca_file && !(ls_root_ca_pem = slurp(ls_cfg.root_ca_file))) {
    fprintf(stderr, "godwit-apiserver: cannot read --root-ca-file %s\n", ls_cfg.root_ca_file);
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  store_init((size_t)ls_cfg.watch_history);
  res_init();
  static const struct ls_core_ops ops = { cluster_ops_namespace };
  ls_hooks_init(&ops, ls_cfg.service_map);
  bootstrap();
  char err[256];
  if(http_start(err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot start", "reason", err, LOG_END);
    return 1;
  }
  char port[16];
  snprintf(port, sizeof(port), "%d", http_port());
  if(ls_cfg.port_file) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s.tmp", ls_cfg.port_file);
    FILE *f = fopen(tmp, "w");
    if(f) {
      fprintf(f, "%s\n", port);
      fclose(f);
      rename(tmp, ls_cfg.port_file);
    }
  }
  gc_start();
  log_kv(LOG_INFO, "serving", "port", port, LOG_END);
  while(!ls_stopping) {
    usleep(200 * 1000);
    if(ls_cfg.parent_pid && kill((pid_t)ls_cfg.parent_pid, 0))
      break;
  }
  log_kv(LOG_INFO, "stopping", LOG_END);
  ls_stopping = 1;
  store_lock();
  store_broadcast();
  store_unlock();
  gc_stop();
  http_stop();
  store_shutdown();
  free(ls_root_ca_pem);
  log_kv(LOG_INFO, "stopped", LOG_END);
  return 0;
}
