/*
 * jr.h: godwit-jobrunner, the local cluster's Job and DaemonSet controllers, scheduler and
 * kubelet in one process (docs/dev/localcluster.md, "godwit-jobrunner").
 *
 * Threads
 *   Reflector threads (kube_reflector_run) keep the Pod, Job, DaemonSet and Node caches (cache.c;
 *   a worker node's kubelet-only runner keeps Pods only) and wake the main thread through a
 *   pipe. Everything else runs on the main thread: the kubelet (pods.c, which starts and watches
 *   processes through proc.c), the scheduler (sched.c), the Job controller (jobs.c) and the
 *   DaemonSet controller (daemonsets.c). Each pass is level-based: it re-reads a snapshot of the
 *   caches and converges towards it, so a lost event costs one resync period, never a wrong
 *   state.
 *
 * Time
 *   Deadlines and backoffs use the monotonic clock (jr_mono_ms); the wall clock is only for what
 *   goes on the wire (metav1.Time, RFC 3339 in seconds). A module that needs to run again at a
 *   given instant calls jr_wake_at(); the main loop sleeps until the earliest such instant or
 *   the next event.
 *
 * Files (under --dir DIR)
 *   logs/NS/POD/CONTAINER.log            what the container wrote to stdout and stderr
 *   logs/NS/POD/CONTAINER.previous.log   the instance before the last restart
 *   logs/NS/POD.log                      symlink to the first container's log
 *   volumes/NS/CLAIM/                    a PersistentVolumeClaim's data (outlives Pods)
 *   pods/UID/                            per-Pod: serviceaccount/, volumes/, termination logs
 */
#ifndef GW_JR_H
#define GW_JR_H

#include <cJSON.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "kube/kube.h"
#include "podnet.h"
#include "rc.h"

struct jr_config {
  const char *kubeconfig;
  const char *context;
  const char *dir;
  const char *node_name;
  const char *log_level;
  const char *workdir;
  long backoff_base_ms;
  long backoff_max_ms;
  long resync_ms;
  long token_expiration_s;
  const char *pass_env[CFG_MAX_LIST + 1];
  const char *worker_nodes[CFG_MAX_LIST + 1]; /* primary: the worker nodes it starts */
  int kubelet_only;   /* (CFG_BOOL) a worker node: no Job controller, no scheduler */
  const char *image_paths[CFG_MAX_LIST + 1]; /* IMAGE=DIR: DIR first on that image's PATH */
  int check_mounts;   /* (CFG_BOOL) only say whether Pods can get their volume mounts here */
  long pod_network;   /* a worker node: the cluster's K (podnet.h); -1 none */
  const char *pod_range; /* a worker node: "FIRST-LAST" of its addresses */
};

/* A thread-safe set of objects of one resource, keyed by namespace/name. */
struct jr_cache_ent {
  char *key;
  cJSON *obj;
};
#define JR_TOMBSTONES 256
struct jr_cache {
  pthread_mutex_t mu;
  struct jr_cache_ent *v;
  size_t n, cap;
  bool synced; /* a first list arrived */
  char tomb[JR_TOMBSTONES][64]; /* uids of the last objects deleted */
  size_t ntomb;
};

struct jr_kubelet;
struct jr_jobctl;
struct jr_dsctl;
struct jr_events;

struct jr {
  const struct jr_config *cfg;
  struct kube_client *k;
  char dir[PATH_MAX];
  char workdir[PATH_MAX];
  char api_host[256];
  char api_port[16];
  char *ca_pem; /* the API server's CA, written into each Pod's ca.crt */
  struct jr_cache jobs, pods;
  struct jr_cache daemonsets, nodes; /* the primary's only */
  int wake_fd[2];
  volatile int stop;
  int64_t next_wake_ms;
  bool mntns;   /* mount namespaces work: volumeMounts are bind mounts */
  struct podnet_node podnet; /* worker nodes: Pods get sandboxes; else k == -1 */
  int nworkers;              /* the primary's worker nodes (nodes.c) */
  struct jr_kubelet *kubelet;
  struct jr_jobctl *jobctl;
  struct jr_dsctl *dsctl;
  struct jr_events *events;
};

/* ---- util.c ---- */
/* snprintf (what it returns, the output cut to len) for names and messages whose inputs may be
 * long: a truncated message is still a message, and a truncated path fails where it is used. */
int jr_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t jr_mono_ms(void);
/* metav1.Time of t ("2024-05-01T12:00:00Z"); buf holds at least 21 bytes. */
void jr_rfc3339(char *buf, size_t len, time_t t);
/* Parses a metav1.Time; -1 when malformed. */
time_t jr_parse_time(const char *s);
/* Asks the main loop to run again no later than at (monotonic ms). */
void jr_wake_at(struct jr *jr, int64_t at);
/* Wakes the main loop now (any thread). */
void jr_wake(struct jr *jr);
/* mkdir -p; 0 or -1 with errno. */
int jr_mkdirs(const char *path, mode_t mode);
/* rm -rf; best effort. */
void jr_rmtree(const char *path);
/* Writes data to path atomically (temporary file and rename) with mode. 0 or -1. */
int jr_write_file(const char *path, const void *data, size_t len, mode_t mode);
/* Reads at most max bytes of path into a malloc'd NUL-terminated buffer, or NULL. */
char *jr_read_file(const char *path, size_t max, size_t *len);
/* A JSON integer member (or dflt when missing or not a number). */
long jr_json_long(const cJSON *o, const char *path, long dflt);
/* True when the JSON member exists and is not null. */
bool jr_json_has(const cJSON *o, const char *path);
/* The condition of type in conditions (an array), or NULL. */
const cJSON *jr_condition(const cJSON *conditions, const char *type);
/* Sets cond{type,status,reason,message,lastTransitionTime[,lastProbeTime]} in the array conds,
 * keeping lastTransitionTime when the status does not change. */
void jr_set_condition(cJSON *conds, const cJSON *old_conds, const char *type, const char *status,
                      const char *reason, const char *message, bool probe_time);
/* "ns/name" of an object into buf. */
const char *jr_key(const cJSON *obj, char *buf, size_t len);
/* Whether obj carries a controller ownerReference with uid. */
bool jr_owned_by(const cJSON *obj, const char *uid);
/* Backoff: base * 2^(n-1), capped at max; 0 when n <= 0. */
int64_t jr_backoff_ms(const struct jr *jr, int n, long cap_ms);

/* ---- cache.c ---- */
void jr_cache_init(struct jr_cache *c);
void jr_cache_release(struct jr_cache *c);
/* Replaces the whole set with copies of items (a JSON array). */
void jr_cache_replace(struct jr_cache *c, const cJSON *items);
/* Applies a watch event (ADDED, MODIFIED, DELETED) with a copy of obj. */
void jr_cache_event(struct jr_cache *c, const char *type, const cJSON *obj);
/* Inserts a copy of obj unless an object with its key is present or it was deleted: what was
 * just created, so the next pass sees it even before its watch event. */
void jr_cache_put_if_absent(struct jr_cache *c, const cJSON *obj);
/* Replaces the cached object with obj (an answer to a write) when obj is newer; never inserts.
 * Watch events older than what is cached are dropped, so a pass never sees a write undone. */
void jr_cache_write_through(struct jr_cache *c, const cJSON *obj);
/* A JSON array of copies of every object; NULL until the first list arrived. */
cJSON *jr_cache_snapshot(struct jr_cache *c);

/* ---- events.c: core/v1 Events, aggregated by (object, reason, message) ---- */
gw_rc jr_events_init(struct jr *jr);
void jr_events_free(struct jr *jr);
void jr_event(struct jr *jr, const cJSON *obj, const char *kind, const char *api_version,
              const char *type, const char *component, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 8, 9)));

/* ---- sched.c: the scheduler ---- */
/* Registers the Node (best effort). */
void sched_register_node(struct jr *jr);
/* Where an unbound Pod goes: this node when it fits here, else (with worker nodes) the first
 * schedulable Node by name that fits; its name into node. On a refusal *why gets the
 * scheduler's message (malloc'd) and the result is false. */
bool sched_fits(struct jr *jr, const cJSON *pod, char *node, size_t nodelen, char **why);
/* Whether a Pod spec may run on the Node with these labels and name: nodeSelector and the
 * required node affinity (matchExpressions on labels, matchFields on metadata.name). */
bool sched_spec_fits(const cJSON *spec, const cJSON *labels, const char *name);
/* Binds the Pod to node (pods/NAME/binding). GW_OK also when the server has no binding
 * subresource: this node then owns the Pod without spec.nodeName. GW_ECONFLICT: already bound. */
gw_rc sched_bind(struct jr *jr, const cJSON *pod, const char *node);

/* ---- nodes.c: the primary's worker nodes ---- */
/* Creates the pod network and starts one kubelet-only job runner per --worker-node. */
gw_rc nodes_start(struct jr *jr, const char *self, char *err, size_t errlen) GW_MUST_CHECK;
/* A reaped child was a worker node: says so (it is not restarted). */
bool nodes_reaped(struct jr *jr, pid_t pid, int status);
/* Stops the worker nodes (SIGTERM, SIGKILL after grace_ms) and removes the pod network. */
void nodes_stop(struct jr *jr, long grace_ms);

/* ---- pods.c: the kubelet ---- */
gw_rc kubelet_init(struct jr *jr);
/* One pass over the Pod snapshot. */
void kubelet_sync(struct jr *jr, const cJSON *pods);
/* A child exited (status from waitpid). Returns whether it belonged to a container. */
bool kubelet_reaped(struct jr *jr, pid_t pid, int status);
/* Stops every container (SIGTERM, then SIGKILL after at most grace_ms) and frees the kubelet. */
void kubelet_shutdown(struct jr *jr, long grace_ms);

/* ---- jobs.c: the Job controller ---- */
gw_rc jobctl_init(struct jr *jr);
void jobctl_sync(struct jr *jr, const cJSON *jobs, const cJSON *pods);
void jobctl_free(struct jr *jr);

/* ---- daemonsets.c: the DaemonSet controller ---- */
extern const struct kube_gvr JR_DAEMONSETS; /* apps/v1 daemonsets */
gw_rc dsctl_init(struct jr *jr);
/* One pass over every DaemonSet (snapshots of the caches): their Pods, one per fitting Node,
 * created or deleted through the API; their status. */
void dsctl_sync(struct jr *jr, const cJSON *daemonsets, const cJSON *nodes, const cJSON *pods);
void dsctl_free(struct jr *jr);

#endif
