/* nodes.c: the primary job runner's worker nodes. With --worker-node NAME (repeatable) it makes
 * the cluster's pod network (podnet.h) and starts, per name, this same program as that node's
 * kubelet (--kubelet-only), with its slice of the addresses, in the same cluster directory (the
 * API server reads every container's log under DIR/logs; Pod directories are per uid); its own
 * log is DIR/nodes/NAME/kubelet.log. The primary stays the scheduler and the Job controller for
 * every node. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jr.h"
#include "log.h"

struct worker {
  const char *name;
  pid_t pid;
};

static struct podnet_cluster net = { .k = -1 };
static struct worker workers[CFG_MAX_LIST];

/* The argv of one worker (strings in buf, pointers in argv). */
static void worker_argv(const struct jr *jr, const char *self, int i, int n, char **argv,
                        char bufs[][PATH_MAX], size_t cap)
{
  const struct jr_config *c = jr->cfg;
  size_t a = 0, b = 0;
#define ARG(...)                                                                             \
  do {                                                                                       \
    if(a + 1 < cap && b < 16) {                                                              \
      jr_fmt(bufs[b], PATH_MAX, __VA_ARGS__);                                                \
      argv[a++] = bufs[b++];                                                                 \
    }                                                                                        \
  } while(0)
#define LIT(s)                                                                               \
  do {                                                                                       \
    if(a + 1 < cap)                                                                          \
      argv[a++] = (char *)(s);                                                               \
  } while(0)
  int size = 253 / n, first = 2 + i * size;
  LIT(self);
  LIT("--kubelet-only");
  LIT("--node-name");
  LIT(workers[i].name);
  LIT("--kubeconfig");
  LIT(c->kubeconfig);
  if(c->context) {
    LIT("--context");
    LIT(c->context);
  }
  LIT("--dir"); /* the cluster's: the API server reads every node's container logs there */
  LIT(jr->dir);
  LIT("--pod-network");
  ARG("%d", net.k);
  LIT("--pod-range");
  ARG("%d-%d", first, first + size - 1);
  LIT("--log-level");
  LIT(c->log_level);
  LIT("--resync-ms");
  ARG("%ld", c->resync_ms);
  LIT("--backoff-base-ms");
  ARG("%ld", c->backoff_base_ms);
  LIT("--backoff-max-ms");
  ARG("%ld", c->backoff_max_ms);
  LIT("--token-expiration-seconds");
  ARG("%ld", c->token_expiration_s);
  if(c->workdir) {
    LIT("--workdir");
    LIT(c->workdir);
  }
  for(size_t k = 0; c->pass_env[k]; k++) {
    LIT("--pass-env");
    LIT(c->pass_env[k]);
  }
  argv[a] = NULL;
#undef ARG
#undef LIT
}

gw_rc nodes_start(struct jr *jr, const char *self, char *err, size_t errlen)
{
  int n = 0;
  while(n < CFG_MAX_LIST && jr->cfg->worker_nodes[n])
    n++;
  if(!n)
    return GW_OK;
  if(!jr->cfg->kubeconfig) {
    jr_fmt(err, errlen, "--worker-node needs --kubeconfig (the worker nodes use it too)");
    return GW_EINVAL;
  }
  gw_rc rc = podnet_cluster_create(&net, err, errlen);
  if(rc)
    return rc;
  char gw[32];
  jr_fmt(gw, sizeof(gw), PODNET_PREFIX ".%d.1/24", net.k);
  log_kv(LOG_INFO, "pod network created", "bridge", net.bridge, "gateway", gw, LOG_END);
  for(int i = 0; i < n; i++) {
    workers[i].name = jr->cfg->worker_nodes[i];
    char dir[PATH_MAX + 64], logf[PATH_MAX + 80];
    jr_fmt(dir, sizeof(dir), "%s/nodes/%s", jr->dir, workers[i].name);
    jr_fmt(logf, sizeof(logf), "%s/kubelet.log", dir);
    if(jr_mkdirs(dir, 0755)) {
      jr_fmt(err, errlen, "cannot create %s: %s", dir, strerror(errno));
      return GW_EIO;
    }
    int log = open(logf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if(log < 0) {
      jr_fmt(err, errlen, "cannot create %s: %s", logf, strerror(errno));
      return GW_EIO;
    }
    char *argv[48];
    char bufs[16][PATH_MAX];
    worker_argv(jr, self, i, n, argv, bufs, sizeof(argv) / sizeof(argv[0]));
    pid_t pid = fork();
    if(pid < 0) {
      close(log);
      jr_fmt(err, errlen, "fork: %s", strerror(errno));
      return GW_EIO;
    }
    if(!pid) {
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, NULL);
      prctl(PR_SET_PDEATHSIG, SIGTERM); /* the primary gone, its nodes go */
      dup2(log, 1);
      dup2(log, 2);
      execv(self, argv);
      _exit(127);
    }
    close(log);
    workers[i].pid = pid;
    jr->nworkers = i + 1;
    log_kv(LOG_INFO, "worker node started", "node", workers[i].name, "log", logf, LOG_END);
  }
  return GW_OK;
}

bool nodes_reaped(struct jr *jr, pid_t pid, int status)
{
  for(int i = 0; i < jr->nworkers; i++)
    if(workers[i].pid == pid) {
      char how[32];
      if(WIFSIGNALED(status))
        jr_fmt(how, sizeof(how), "signal %d", WTERMSIG(status));
      else
        jr_fmt(how, sizeof(how), "exit %d", WEXITSTATUS(status));
      log_kv(LOG_ERROR, "worker node exited", "node", workers[i].name, "status", how, LOG_END);
      workers[i].pid = 0;
      return true;
    }
  return false;
}

void nodes_stop(struct jr *jr, long grace_ms)
{
  for(int i = 0; i < jr->nworkers; i++)
    if(workers[i].pid > 0)
      kill(workers[i].pid, SIGTERM);
  int64_t deadline = jr_mono_ms() + grace_ms;
  for(int i = 0; i < jr->nworkers; i++) {
    while(workers[i].pid > 0) {
      int status;
      pid_t r = waitpid(workers[i].pid, &status, WNOHANG);
      if(r == workers[i].pid || (r < 0 && errno == ECHILD)) {
        workers[i].pid = 0;
        break;
      }
      if(jr_mono_ms() >= deadline)
        kill(workers[i].pid, SIGKILL);
      usleep(20000);
    }
  }
  jr->nworkers = 0;
  podnet_cluster_destroy(&net);
}
