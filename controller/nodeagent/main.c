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
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "criu.h"
#include "json.h"
#include "kube/kube.h"
#include "log.h"
#include "version.h"

#define NA_ANNOTATION "migration.podmotion.io/node-agent"

struct na_config {
  const char *kubeconfig, *context, *node, *criu, *log_level;
  long interval_s;
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

int main(int argc, char **argv)
{
  struct na_config c;
  memset(&c, 0, sizeof(c));
  int code = cfg_main(options, &c, argc, argv, "godwit-nodeagent",
                      "The PodMotion node agent, one per node. This release publishes what the "
                      "node can do (CRIU and its features) on its Node, for the PodMigration "
                      "controller; checkpoint, transfer and restore are not in it yet.");
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
  long waited = c.interval_s * 1000;
  while(!stopping) {
    if(waited >= c.interval_s * 1000) {
      char *v = facts(&c);
      if(v && !publish(k, c.node, v))
        log_kv(LOG_INFO, "published the node's facts", "node", c.node, "facts", v, LOG_END);
      free(v);
      waited = 0;
    }
    usleep(100 * 1000);
    waited += 100;
  }
  (void)publish(k, c.node, NULL); /* gone: the controller stops counting on this node */
  log_kv(LOG_INFO, "stopped", "node", c.node, LOG_END);
  kube_client_free(k);
  return 0;
}
