/* godwit-jobrunner: the local cluster's Job and DaemonSet controllers, scheduler and kubelet. See
 * docs/dev/localcluster.md ("godwit-jobrunner") and jr.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "config.h"
#include "json.h"
#include "kubelet.h"
#include "log.h"

#define O(f) offsetof(struct jr_config, f)
static const struct cfg_opt options[] = {
  { "kubeconfig", "KUBECONFIG", CFG_STR, NULL, 0, 0, O(kubeconfig),
    "kubeconfig of the API server (its current context's user runs the controllers)" },
  { "context", NULL, CFG_STR, NULL, 0, 0, O(context), "kubeconfig context (default: current)" },
  { "dir", "GODWIT_CLUSTER_DIR", CFG_STR, "/tmp/godwit-cluster", 0, 0, O(dir),
    "cluster directory: logs/, volumes/ and pods/ go under it" },
  { "node-name", "GODWIT_NODE_NAME", CFG_STR, "local", 0, 0, O(node_name),
    "the Node this kubelet registers and runs Pods for" },
  { "backoff-base-ms", "GODWIT_JOBRUNNER_BACKOFF_BASE_MS", CFG_INT, "1000", 1, 600000,
    O(backoff_base_ms),
    "first delay before a failed Job Pod is replaced and a crashed container restarted, "
    "doubling after each failure (Kubernetes: 10000)" },
  { "backoff-max-ms", "GODWIT_JOBRUNNER_BACKOFF_MAX_MS", CFG_INT, "36000", 1, 3600000,
    O(backoff_max_ms), "cap of the Job backoff (Kubernetes: 360000)" },
  { "resync-ms", NULL, CFG_INT, "1000", 50, 600000, O(resync_ms),
    "the longest time between two passes over every Job and Pod" },
  { "token-expiration-seconds", NULL, CFG_INT, "3607", 600, 86400, O(token_expiration_s),
    "lifetime asked for each Pod's service-account token (renewed at 80%)" },
  { "workdir", NULL, CFG_STR, NULL, 0, 0, O(workdir),
    "working directory of containers without workingDir (default: the runner's own)" },
  { "pass-env", NULL, CFG_STRLIST, NULL, 0, 0, O(pass_env),
    "also give containers this variable of the runner's environment (repeatable)" },
  { "worker-node", NULL, CFG_STRLIST, NULL, 0, 0, O(worker_nodes),
    "also start this worker node (repeatable; as root): its kubelet runs each Pod in network "
    "and pid namespaces of its own with an address on the cluster's pod network" },
  { "image-path", NULL, CFG_STRLIST, NULL, 0, 0, O(image_paths),
    "IMAGE=DIR: containers of that image find their programs in DIR first (repeatable)" },
  { "check-mounts", NULL, CFG_BOOL, "false", 0, 0, O(check_mounts),
    "only check that this machine lets the kubelet give Pods their volume mounts (a mount "
    "namespace of their own): exit 0, or 1 with one line saying what is missing" },
  { "kubelet-only", NULL, CFG_BOOL, "false", 0, 0, O(kubelet_only),
    "a worker node (started by the primary): only the kubelet of --node-name" },
  { "pod-network", NULL, CFG_INT, "-1", -1, 255, O(pod_network),
    "a worker node: the cluster's pod network K (198.18.K.0/24); -1: Pods share the machine's" },
  { "pod-range", NULL, CFG_STR, NULL, 0, 0, O(pod_range),
    "a worker node: FIRST-LAST, the last octets of the addresses it hands out" },
  { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, O(log_level),
    "debug, info, warn or error" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static int sig_fd[2] = { -1, -1 };
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
  int saved = errno;
  if(sig != SIGCHLD)
    stopping = 1;
  char c = (char)sig;
  ssize_t n = write(sig_fd[1], &c, 1);
  (void)n;
  errno = saved;
}

/* ---- reflectors ---- */
struct refl {
  struct jr *jr;
  struct jr_cache *cache;
  const struct kube_gvr *gvr;
  pthread_t th;
};

static void on_replace(void *ctx, const cJSON *items, const char *rv)
{
  (void)rv;
  struct refl *r = ctx;
  jr_cache_replace(r->cache, items);
  jr_wake(r->jr);
}

static void on_event(void *ctx, const char *type, const cJSON *obj)
{
  struct refl *r = ctx;
  jr_cache_event(r->cache, type, obj);
  jr_wake(r->jr);
}

static void *refl_main(void *arg)
{
  struct refl *r = arg;
  struct kube_reflector_ops ops = { .replace = on_replace, .event = on_event };
  struct kube_reflector_opts o = { .backoff_min_ms = 100, .backoff_max_ms = 2000 };
  gw_rc rc = kube_reflector_run(r->jr->k, r->gvr, NULL, &o, &ops, r, &r->jr->stop);
  if(rc != GW_ESTOPPED)
    log_kv(LOG_ERROR, "reflector ended", "resource", r->gvr->resource, "error", gw_strerror(rc),
           LOG_END);
  return NULL;
}

/* ---- setup ---- */
static gw_rc api_endpoint(struct jr *jr, char *err, size_t errlen)
{
  const struct kube_config *kc = kube_client_config(jr->k);
  const char *s = kc->server ? kc->server : "";
  const char *h = strstr(s, "://");
  h = h ? h + 3 : s;
  const char *end = h + strcspn(h, "/");
  const char *colon = NULL;
  if(*h == '[') { /* [::1]:6443 */
    const char *rb = strchr(h, ']');
    if(rb && rb < end) {
      jr_fmt(jr->api_host, sizeof(jr->api_host), "%.*s", (int)(rb - h - 1), h + 1);
      colon = rb[1] == ':' ? rb + 1 : NULL;
    }
  } else {
    colon = memchr(h, ':', (size_t)(end - h));
    jr_fmt(jr->api_host, sizeof(jr->api_host), "%.*s", (int)((colon ? colon : end) - h), h);
  }
  if(colon)
    jr_fmt(jr->api_port, sizeof(jr->api_port), "%.*s", (int)(end - colon - 1), colon + 1);
  else
    jr_fmt(jr->api_port, sizeof(jr->api_port), "%s", strncmp(s, "http://", 7) ? "443" : "80");
  if(!jr->api_host[0]) {
    jr_fmt(err, errlen, "the kubeconfig's server \"%s\" has no host", s);
    return GW_EINVAL;
  }
  if(kc->ca_data)
    jr->ca_pem = strdup(kc->ca_data);
  else if(kc->ca_file)
    jr->ca_pem = jr_read_file(kc->ca_file, 1 << 20, NULL);
  if((kc->ca_data || kc->ca_file) && !jr->ca_pem) {
    jr_fmt(err, errlen, "cannot read the API server's CA \"%s\"",
             kc->ca_file ? kc->ca_file : "certificate-authority-data");
    return GW_EIO;
  }
  return GW_OK;
}

static gw_rc setup(struct jr *jr, const struct jr_config *cfg, char *err, size_t errlen)
{
  jr->cfg = cfg;
  if(!realpath(cfg->dir, jr->dir)) {
    if(jr_mkdirs(cfg->dir, 0755) || !realpath(cfg->dir, jr->dir)) {
      jr_fmt(err, errlen, "cannot create --dir \"%s\": %s", cfg->dir, strerror(errno));
      return GW_EIO;
    }
  }
  if(cfg->workdir)
    jr_fmt(jr->workdir, sizeof(jr->workdir), "%s", cfg->workdir);
  else if(!getcwd(jr->workdir, sizeof(jr->workdir)))
    jr_fmt(jr->workdir, sizeof(jr->workdir), "/");
  static const char *const sub[] = { "logs", "volumes", "pods" };
  for(int i = 0; i < 3; i++) {
    char p[PATH_MAX + 16];
    jr_fmt(p, sizeof(p), "%s/%s", jr->dir, sub[i]);
    if(jr_mkdirs(p, 0755)) {
      jr_fmt(err, errlen, "cannot create \"%s\": %s", p, strerror(errno));
      return GW_EIO;
    }
  }
  struct kube_config kc = { 0 };
  gw_rc rc = kube_config_load(&kc, cfg->kubeconfig, cfg->context, err, errlen);
  if(!rc) {
    kc.qps = 200;
    kc.burst = 400;
    rc = kube_client_new(&jr->k, &kc, err, errlen);
  }
  kube_config_release(&kc);
  if(!rc)
    rc = api_endpoint(jr, err, errlen);
  if(!rc && pipe2(jr->wake_fd, O_CLOEXEC | O_NONBLOCK)) {
    jr_fmt(err, errlen, "pipe: %s", strerror(errno));
    rc = GW_EIO;
  }
  jr_cache_init(&jr->jobs);
  jr_cache_init(&jr->pods);
  jr_cache_init(&jr->daemonsets);
  jr_cache_init(&jr->nodes);
  if(!rc)
    rc = jr_events_init(jr);
  if(!rc)
    rc = kubelet_init(jr);
  if(!rc)
    rc = jobctl_init(jr);
  if(!rc)
    rc = dsctl_init(jr);
  jr->podnet.k = (int)cfg->pod_network;
  if(!rc && jr->podnet.k >= 0) {
    int first = 0, last = 0;
    if(!cfg->pod_range || sscanf(cfg->pod_range, "%d-%d", &first, &last) != 2 || first < 2 ||
       last > 254 || first > last) {
      jr_fmt(err, errlen, "--pod-range \"%s\": want FIRST-LAST within 2-254",
             cfg->pod_range ? cfg->pod_range : "");
      rc = GW_EINVAL;
    }
    jr->podnet.first = first;
    jr->podnet.last = last;
    jr_fmt(jr->podnet.node, sizeof(jr->podnet.node), "%s", cfg->node_name);
    podnet_node_sweep(&jr->podnet);
  }
  jr->mntns = proc_mntns_works();
  if(!jr->mntns)
    log_kv(LOG_WARN, "no mount namespaces: Pods with volumeMounts will not start (run as root)",
           LOG_END);
  return rc;
}

static void drain(int fd)
{
  char buf[256];
  while(read(fd, buf, sizeof(buf)) > 0)
    ;
}

static void reap(struct jr *jr)
{
  int status;
  pid_t pid;
  /* Containers, and their orphans: this process is their subreaper. */
  while((pid = waitpid(-1, &status, WNOHANG)) > 0)
    if(!kubelet_reaped(jr, pid, status))
      nodes_reaped(jr, pid, status);
}

static void pass(struct jr *jr)
{
  cJSON *pods = jr_cache_snapshot(&jr->pods);
  cJSON *jobs = jr_cache_snapshot(&jr->jobs);
  cJSON *daemonsets = jr_cache_snapshot(&jr->daemonsets);
  cJSON *nodes = jr_cache_snapshot(&jr->nodes);
  if(pods)
    kubelet_sync(jr, pods);
  if(pods && jobs)
    jobctl_sync(jr, jobs, pods);
  if(pods && daemonsets && nodes)
    dsctl_sync(jr, daemonsets, nodes, pods);
  /* the PV controller's Delete reclaim policy, every few seconds, on the node that holds the
   * volumes */
  static int64_t last_reclaim;
  if(!jr->cfg->kubelet_only && jr_mono_ms() - last_reclaim >= 2000) {
    last_reclaim = jr_mono_ms();
    volumes_reclaim(jr);
  }
  cJSON_Delete(pods);
  cJSON_Delete(jobs);
  cJSON_Delete(daemonsets);
  cJSON_Delete(nodes);
}

static void run(struct jr *jr)
{
  while(!stopping) {
    reap(jr);
    jr->next_wake_ms = 0;
    pass(jr);
    reap(jr); /* a container that failed to start */
    int64_t now = jr_mono_ms();
    int64_t until = now + jr->cfg->resync_ms;
    if(jr->next_wake_ms && jr->next_wake_ms < until)
      until = jr->next_wake_ms;
    int timeout = until > now ? (int)(until - now) : 0;
    struct pollfd pf[2] = { { .fd = sig_fd[0], .events = POLLIN },
                            { .fd = jr->wake_fd[0], .events = POLLIN } };
    if(poll(pf, 2, timeout) > 0) {
      drain(sig_fd[0]);
      drain(jr->wake_fd[0]);
      /* Let a burst of watch events land before the next pass. */
      usleep(10000);
      drain(jr->wake_fd[0]);
    }
  }
}

int main(int argc, char **argv)
{
  struct jr_config cfg = { 0 };
  int code = cfg_main(options, &cfg, argc, argv, "godwit-jobrunner",
                      "The local cluster's Job and DaemonSet controllers and kubelet (tests): "
                      "Jobs and DaemonSets into Pods, Pods into local processes.");
  if(code >= 0)
    return code;
  if(cfg.check_mounts) {
    if(proc_mntns_works())
      return 0;
    fprintf(stderr, "godwit-jobrunner: this machine does not let it create mount namespaces "
                    "(unshare(CLONE_NEWNS) and a private / are refused), so Pods cannot get their "
                    "volumes: run the local cluster as root, in a VM, or in a container with "
                    "CAP_SYS_ADMIN (docker run --privileged)\n");
    return 1;
  }
  arena_install_json_hooks();

  if(pipe2(sig_fd, O_CLOEXEC | O_NONBLOCK)) {
    perror("godwit-jobrunner: pipe");
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* Orphans of containers come back to us, to be reaped (no zombies) */
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  struct jr jr = { .podnet.k = -1 };
  jr.wake_fd[0] = jr.wake_fd[1] = -1;
  char err[1024];
  gw_rc rc = setup(&jr, &cfg, err, sizeof(err));
  if(rc) {
    log_kv(LOG_ERROR, "cannot start", "error", err, LOG_END);
    return 1;
  }
  sched_register_node(&jr);
  char self[PATH_MAX];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
  self[sl > 0 ? sl : 0] = 0;
  if(!cfg.kubelet_only && nodes_start(&jr, self, err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot start the worker nodes", "error", err, LOG_END);
    nodes_stop(&jr, 2000);
    return 1;
  }
  struct refl refl[] = { { &jr, &jr.pods, &KUBE_PODS, 0 }, { &jr, &jr.jobs, &KUBE_JOBS, 0 },
                         { &jr, &jr.daemonsets, &JR_DAEMONSETS, 0 },
                         { &jr, &jr.nodes, &KUBE_NODES, 0 } };
  /* Reflector threads must not take the signals meant for the main loop. */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  /* A worker node has no controllers: only the Pod reflector. */
  size_t nrefl = cfg.kubelet_only ? 1 : sizeof(refl) / sizeof(refl[0]);
  for(size_t i = 0; i < nrefl; i++)
    pthread_create(&refl[i].th, NULL, refl_main, &refl[i]);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  log_kv(LOG_INFO, cfg.kubelet_only ? "worker node started" : "job runner started", "node",
         cfg.node_name, "dir", jr.dir, "server", kube_client_config(jr.k)->server,
         "mountNamespaces", jr.mntns ? "true" : "false", LOG_END);

  run(&jr);

  log_kv(LOG_INFO, "stopping", LOG_END);
  jr.stop = 1;
  /* down waits 5 s before SIGKILL: the worker nodes first (their containers get 0.3 s: a
   * sandboxed main process is its namespace's init and may ignore SIGTERM), then ours, so the
   * pod network is removed in time */
  nodes_stop(&jr, 1500);
  kubelet_shutdown(&jr, cfg.kubelet_only ? 300 : 2000);
  for(size_t i = 0; i < nrefl; i++)
    pthread_join(refl[i].th, NULL);
  jobctl_free(&jr);
  dsctl_free(&jr);
  jr_events_free(&jr);
  jr_cache_release(&jr.jobs);
  jr_cache_release(&jr.pods);
  jr_cache_release(&jr.daemonsets);
  jr_cache_release(&jr.nodes);
  kube_client_free(jr.k);
  free(jr.ca_pem);
  close(jr.wake_fd[0]);
  close(jr.wake_fd[1]);
  close(sig_fd[0]);
  close(sig_fd[1]);
  return 0;
}
