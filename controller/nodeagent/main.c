/*
 * godwit-nodeagent: one per node (the DaemonSet manifests/nodeagent.yaml). This release's agent
 * publishes what its node can do, so that the PodMigration controller decides with facts: on
 * its own Node, the annotation migration.podmotion.io/node-agent holds
 *
 *   {"agent":"<godwit version>","criu":"4.1.1","features":{"memDirtyTrack":false,
 *    "lazyPages":true,"tcpEstablished":true},"publishedAt":"<RFC 3339>","ttlSeconds":180}
 *
 * or, when CRIU does not run here, {"agent":..., "error":"<why>", ...}. It publishes at start and
 * every --publish-interval-s (ttlSeconds is three intervals: a dead agent's facts expire), and
 * removes the annotation when it stops (SIGTERM, SIGINT). Checkpoint, transfer and restore come
 * next (issue "PodMotion"); docs/dev/podmotion-nodeagent.md.
 */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "client.h"
#include "config.h"
#include "criu.h"
#include "json.h"
#include "kube/kube.h"
#include "log.h"
#include "server.h"
#include "tlsstore.h"
#include "version.h"

#define NA_ANNOTATION "migration.podmotion.io/node-agent"

struct na_config {
  const char *kubeconfig, *context, *node, *criu, *log_level;
  long interval_s;
  const char *tls_cert, *tls_key, *token_file, *peer_ca, *checkpoint_dir, *bind, *advertise;
  const char *fault;
  long port, max_file_mib;
};

#define O(f) offsetof(struct na_config, f)
static const struct cfg_opt options[] = {
  { "kubeconfig", NULL, CFG_STR, NULL, 0, 0, O(kubeconfig),
    "kubeconfig file (default: $KUBECONFIG, then in-cluster, then ~/.kube/config)" },
  { "context", NULL, CFG_STR, NULL, 0, 0, O(context), "kubeconfig context (default: current)" },
  { "node", "NODE_NAME", CFG_STR, NULL, 0, 0, O(node),
    "the Node this agent runs on (required; the DaemonSet passes spec.nodeName)" },
  { "criu", "GODWIT_CRIU", CFG_STR, CRIU_DEFAULT_PATH, 0, 0, O(criu), "the criu binary" },
  { "publish-interval-s", "GODWIT_PUBLISH_INTERVAL_S", CFG_INT, "60", 1, 3600, O(interval_s),
    "how often the node's facts are published again (they expire after three intervals)" },
  { "tls-cert", NULL, CFG_STR, NULL, 0, 0, O(tls_cert),
    "serving certificate of the agent's API (without it the agent only publishes its node's "
    "facts); it must name " NA_SERVER_NAME },
  { "tls-key", NULL, CFG_STR, NULL, 0, 0, O(tls_key), "its key" },
  { "token-file", "GODWIT_NODEAGENT_TOKEN_FILE", CFG_STR, NULL, 0, 0, O(token_file),
    "the bearer token every API call must carry (the controller's and the other agents')" },
  { "ca-file", NULL, CFG_STR, NULL, 0, 0, O(peer_ca),
    "CA of the other agents' certificates (a checkpoint is sent to the destination's agent)" },
  { "checkpoint-dir", NULL, CFG_STR, "/run/podmotion/checkpoints", 0, 0, O(checkpoint_dir),
    "where checkpoints are kept, one 0700 directory per migration" },
  { "bind", NULL, CFG_STR, "0.0.0.0", 0, 0, O(bind), "address the API listens on" },
  { "port", NULL, CFG_INT, "9650", 0, 65535, O(port), "port of the API (0: any free one)" },
  { "advertise-address", NULL, CFG_STR, NULL, 0, 0, O(advertise),
    "address the controller and the agents reach this one at (default: the Node's "
    "InternalIP)" },
  { "max-file-mib", NULL, CFG_INT, "256", 1, 65536, O(max_file_mib),
    "largest checkpoint file sent or received, in MiB (each is held in memory once)" },
  { "fault", "GODWIT_NODEAGENT_FAULT", CFG_STR, NULL, 0, 0, O(fault),
    "tests only: make one operation fail (checkpoint, send, corrupt-restore, attach) or "
    "take 3 s longer (slow-checkpoint, slow-send, slow-state)" },
  { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, O(log_level),
    "debug, info, warn or error" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

/* The annotation's value (malloc'd). */
static char endpoint[128]; /* https://ADDRESS:PORT once the API serves */

static char *facts(const struct na_config *c)
{
  struct criu_features f;
  gw_rc rc = criu_check_features(c->criu, &f);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "agent", gw_version());
  if(rc) {
    char why[512];
    snprintf(why, sizeof(why), "criu (%s) does not run on this node: %s", c->criu,
             gw_strerror(rc));
    cJSON_AddStringToObject(o, "error", why);
  } else {
    cJSON_AddStringToObject(o, "criu", f.version);
    cJSON *fe = cJSON_AddObjectToObject(o, "features");
    cJSON_AddBoolToObject(fe, "memDirtyTrack", f.mem_dirty_track);
    cJSON_AddBoolToObject(fe, "lazyPages", f.uffd && f.uffd_noncoop);
    cJSON_AddBoolToObject(fe, "tcpEstablished", true);
    cJSON_AddBoolToObject(fe, "tcpHalfClosed", f.tcp_half_closed);
  }
  char now[40];
  struct tm tm;
  time_t t = time(NULL);
  gmtime_r(&t, &tm);
  strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
  cJSON_AddStringToObject(o, "publishedAt", now);
  cJSON_AddNumberToObject(o, "ttlSeconds", (double)(3 * c->interval_s));
  if(endpoint[0])
    cJSON_AddStringToObject(o, "endpoint", endpoint);
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return text;
}

/* Sets (value) or removes (NULL) the annotation on the Node. */
static gw_rc publish(struct kube_client *k, const char *node, const char *value)
{
  cJSON *b = cJSON_CreateObject();
  cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(b, "metadata"), "annotations");
  if(value)
    cJSON_AddStringToObject(ann, NA_ANNOTATION, value);
  else
    cJSON_AddNullToObject(ann, NA_ANNOTATION);
  char *text = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = text ? kube_patch(k, &KUBE_NODES, NULL, node, KUBE_PATCH_MERGE, text, NULL, NULL,
                               &st)
                  : GW_ENOMEM;
  if(rc)
    log_kv(LOG_WARN, "cannot publish the node's facts", "node", node, "error", gw_strerror(rc),
           "reason", st.reason, "message", st.message, LOG_END);
  kube_status_release(&st);
  cJSON_free(text);
  return rc;
}

/* The Node's InternalIP, else 127.0.0.1. */
static void node_address(struct kube_client *k, const char *node, char *buf, size_t len)
{
  snprintf(buf, len, "127.0.0.1");
  cJSON *n = NULL;
  struct kube_status st;
  kube_status_init(&st);
  if(!kube_get(k, &KUBE_NODES, NULL, node, &n, &st)) {
    const cJSON *ad;
    cJSON_ArrayForEach(ad, json_get(n, "status.addresses"))
    {
      const char *t = json_get_str(ad, "type"), *v = json_get_str(ad, "address");
      if(t && v && !strcmp(t, "InternalIP")) {
        snprintf(buf, len, "%s", v);
        break;
      }
    }
  }
  kube_status_release(&st);
  cJSON_Delete(n);
}

/* Starts the API: TLS pair, token, checkpoint directory; fills the endpoint. */
static int serve(const struct na_config *c, struct kube_client *k, struct agent *a,
                 struct server **srv, char **token)
{
  char err[512];
  if(!c->tls_key || !c->token_file) {
    fprintf(stderr, "godwit-nodeagent: --tls-cert needs --tls-key and --token-file\n");
    return 1;
  }
  FILE *f = fopen(c->token_file, "r");
  char buf[512] = "";
  if(f && fgets(buf, sizeof(buf), f))
    buf[strcspn(buf, "\r\n")] = 0;
  if(!f || !*buf) {
    fprintf(stderr, "godwit-nodeagent: cannot read a token from %s\n", c->token_file);
    if(f)
      fclose(f);
    return 1;
  }
  fclose(f);
  *token = strdup(buf);
  if(strlen(c->checkpoint_dir) > AGENT_ROOT_MAX) {
    fprintf(stderr, "godwit-nodeagent: --checkpoint-dir is longer than %d characters\n",
            AGENT_ROOT_MAX);
    return 1;
  }
  if(mkdir(c->checkpoint_dir, 0700) && errno != EEXIST) {
    fprintf(stderr, "godwit-nodeagent: cannot create %s: %s\n", c->checkpoint_dir,
            strerror(errno));
    return 1;
  }
  chmod(c->checkpoint_dir, 0700);
  tls_store_init(c->tls_cert, c->tls_key);
  bool changed = false;
  if(tls_store_reload(&changed, err, sizeof(err))) {
    fprintf(stderr, "godwit-nodeagent: %s\n", err);
    return 1;
  }
  a->node = c->node;
  a->root = c->checkpoint_dir;
  a->criu = c->criu;
  a->token = *token;
  a->peer_ca = c->peer_ca;
  a->max_file_bytes = (size_t)c->max_file_mib << 20;
  a->fault = c->fault;
  if(c->fault)
    log_kv(LOG_WARN, "a fault is injected: this agent is for tests", "fault", c->fault, LOG_END);
  if(agent_http_start(a, c->bind, (int)c->port, srv, err, sizeof(err))) {
    fprintf(stderr, "godwit-nodeagent: %s\n", err);
    return 1;
  }
  char addr[64];
  if(c->advertise)
    snprintf(addr, sizeof(addr), "%s", c->advertise);
  else
    node_address(k, c->node, addr, sizeof(addr));
  snprintf(endpoint, sizeof(endpoint), "https://%s:%d", addr, server_port(*srv));
  log_kv(LOG_INFO, "serving", "endpoint", endpoint, "checkpoints", c->checkpoint_dir, LOG_END);
  return 0;
}

int main(int argc, char **argv)
{
  struct na_config c;
  memset(&c, 0, sizeof(c));
  int code = cfg_main(options, &c, argc, argv, "godwit-nodeagent",
                      "The PodMotion node agent, one per node: publishes what the node can do "
                      "(CRIU and its features) on its Node, and serves the API the "
                      "PodMigration controller drives (checkpoint, transfer, handover, probe).");
  if(code >= 0)
    return code;
  int lvl = log_level_parse(c.log_level);
  if(lvl < 0) {
    fprintf(stderr, "godwit-nodeagent: --log-level must be debug, info, warn or error\n");
    return 1;
  }
  log_set_level((enum log_level)lvl);
  if(!c.node || !*c.node) {
    fprintf(stderr, "godwit-nodeagent: --node (or $NODE_NAME) is required\n");
    return 1;
  }
  struct kube_config cfg;
  struct kube_client *k = NULL;
  char err[512];
  if(kube_config_load(&cfg, c.kubeconfig, c.context, err, sizeof(err)) ||
     kube_client_new(&k, &cfg, err, sizeof(err))) {
    fprintf(stderr, "godwit-nodeagent: %s\n", err);
    return 1;
  }
  kube_config_release(&cfg);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  log_kv(LOG_INFO, "starting", "node", c.node, "version", gw_version(), "criu", c.criu,
         LOG_END);
  struct server *srv = NULL;
  static struct agent a;
  char *token = NULL;
  if(c.tls_cert && serve(&c, k, &a, &srv, &token))
    return 1;
  long waited = c.interval_s * 1000;
  while(!stopping) {
    if(waited >= c.interval_s * 1000) {
      char *v = facts(&c);
      if(v && !publish(k, c.node, v))
        log_kv(LOG_INFO, "published the node's facts", "node", c.node, "facts", v, LOG_END);
      cJSON_free(v); /* cJSON's allocator printed it */
      waited = 0;
    }
    usleep(100 * 1000);
    waited += 100;
  }
  (void)publish(k, c.node, NULL); /* gone: the controller stops counting on this node */
  if(srv)
    server_stop(srv);
  tls_store_shutdown();
  free(token);
  log_kv(LOG_INFO, "stopped", "node", c.node, LOG_END);
  kube_client_free(k);
  return 0;
}
