/* container.c: one container of a Pod: its command line, mounts and environment, start, exit,
 * restart with CrashLoopBackOff, and stop (SIGTERM to the group, SIGKILL after the grace
 * period). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container.h"
#include "json.h"
#include "log.h"

#define SA_MOUNT "/var/run/secrets/kubernetes.io/serviceaccount"
#define TERM_MSG_MAX 4096

const cJSON *ctr_spec(const struct pod_rt *p, const struct ctr_rt *c)
{
  const cJSON *list = json_get(p->pod, c->init ? "spec.initContainers" : "spec.containers");
  const cJSON *s;
  cJSON_ArrayForEach(s, list)
  {
    const char *n = json_get_str(s, "name");
    if(n && !strcmp(n, c->name))
      return s;
  }
  return NULL;
}

void ctr_set_waiting(struct ctr_rt *c, const char *reason, const char *msg)
{
  c->state = CS_WAITING;
  jr_fmt(c->wait_reason, sizeof(c->wait_reason), "%s", reason);
  free(c->wait_msg);
  c->wait_msg = msg && *msg ? strdup(msg) : NULL;
}

void ctr_term_release(struct ctr_term *t)
{
  free(t->message);
  memset(t, 0, sizeof(*t));
}

static void pod_event(struct jr *jr, const struct pod_rt *p, const char *type, const char *reason,
                      const char *fmt, const char *arg)
{
  jr_event(jr, p->pod, "Pod", "v1", type, "kubelet", reason, fmt, arg);
}

/* argv: command then args, each with $(VAR) expansion. No command: args alone (the image's
 * entrypoint is not known here). */
static char **build_argv(const cJSON *spec, char *const *env, char *err, size_t errlen)
{
  const cJSON *cmd = json_get(spec, "command"), *args = json_get(spec, "args");
  size_t n = (size_t)cJSON_GetArraySize(cmd) + (size_t)cJSON_GetArraySize(args);
  if(!n) {
    jr_fmt(err, errlen, "no command specified: the local cluster runs the container's "
             "command and args on this machine (the image %s is not pulled)", "entrypoint");
    return NULL;
  }
  char **argv = calloc(n + 1, sizeof(char *));
  size_t i = 0;
  const cJSON *lists[2] = { cmd, args };
  for(int l = 0; argv && l < 2; l++) {
    const cJSON *a;
    cJSON_ArrayForEach(a, lists[l])
    {
      argv[i] = env_expand(cJSON_IsString(a) ? a->valuestring : "", env);
      if(!argv[i]) {
        env_free(argv);
        jr_fmt(err, errlen, "out of memory");
        return NULL;
      }
      i++;
    }
  }
  return argv;
}

static bool add_mount(struct proc_mount *m, size_t *n, size_t max, const char *src,
                      const char *dst, bool ro, bool optional)
{
  if(*n >= max)
    return false;
  jr_fmt(m[*n].src, sizeof(m[*n].src), "%s", src);
  jr_fmt(m[*n].dst, sizeof(m[*n].dst), "%s", dst);
  m[*n].ro = ro;
  m[*n].optional = optional;
  (*n)++;
  return true;
}

/* The bind mounts of one container: its volumeMounts, the service-account directory at the
 * well-known path (unless a volume covers it), the termination-message file. */
static gw_rc build_mounts(struct jr *jr, struct pod_rt *p, const cJSON *spec, const char *term,
                          struct proc_mount *m, size_t *n, size_t max, char *err,
                          size_t errlen)
{
  *n = 0;
  bool sa_covered = false;
  const cJSON *vm;
  cJSON_ArrayForEach(vm, json_get(spec, "volumeMounts"))
  {
    const char *name = json_get_str(vm, "name");
    const char *dst = json_get_str(vm, "mountPath");
    const struct vol *v = name ? volumes_find(&p->vols, name) : NULL;
    if(!v || !dst) {
      jr_fmt(err, errlen, "cannot find volume \"%s\" to mount into container \"%s\"",
               name ? name : "", json_get_str(spec, "name"));
      return GW_ENOTFOUND;
    }
    char src[PATH_MAX];
    const char *sub = json_get_str(vm, "subPath");
    char *subx = NULL;
    if(!sub && json_get_str(vm, "subPathExpr"))
      sub = subx = env_expand(json_get_str(vm, "subPathExpr"), NULL);
    if(sub && *sub) {
      if(sub[0] == '/' || strstr(sub, "..")) {
        free(subx);
        jr_fmt(err, errlen, "invalid subPath \"%s\"", sub);
        return GW_EINVAL;
      }
      jr_fmt(src, sizeof(src), "%s/%s", v->path, sub);
      if(access(src, F_OK))
        jr_mkdirs(src, 0777); /* the kubelet creates a missing subPath as a directory */
    } else {
      jr_fmt(src, sizeof(src), "%s", v->path);
    }
    free(subx);
    bool sa = !strcmp(dst, SA_MOUNT); /* GODWIT_SA_DIR holds the same: best effort */
    sa_covered = sa_covered || sa;
    if(!add_mount(m, n, max, src, dst, json_get_bool(vm, "readOnly", false) || v->ro, sa)) {
      jr_fmt(err, errlen, "too many volume mounts");
      return GW_ETOOBIG;
    }
  }
  /* Only what the Pod cannot do without: without mount namespaces; and in a sandbox on a
   * worker node when the container mounts nothing itself, so that it shares the node's mount
   * namespace, which CRIU needs to checkpoint it (docs/dev/localcluster.md). */
  if(!jr->mntns || (p->sb.n && !*n && !p->vols.sa_dir[0])) {
    size_t keep = 0;
    for(size_t i = 0; i < *n; i++)
      if(!m[i].optional)
        m[keep++] = m[i];
    *n = keep;
    return GW_OK;
  }
  /* Conveniences a real node would give: best effort, they never keep a container from
   * starting. */
  if(!sa_covered && p->vols.sa_dir[0])
    add_mount(m, n, max, p->vols.sa_dir, SA_MOUNT, true, true);
  const char *tmp = json_get_str(spec, "terminationMessagePath");
  add_mount(m, n, max, term, tmp && *tmp ? tmp : "/dev/termination-log", false, true);
  return GW_OK;
}

static void term_path(const struct pod_rt *p, const struct ctr_rt *c, char *buf, size_t len)
{
  jr_fmt(buf, len, "%s/containers/%s/termination-log", p->pod_dir, c->name);
}

/* A container that could not start: terminated with StartError, as containerd reports it. */
static void start_error(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, const char *msg)
{
  ctr_term_release(&c->term);
  c->term.set = true;
  c->term.exit_code = 128;
  jr_fmt(c->term.reason, sizeof(c->term.reason), "StartError");
  c->term.message = strdup(msg);
  c->term.started = c->term.finished = time(NULL);
  c->state = CS_TERMINATED;
  c->ever_started = true;
  pod_event(jr, p, "Warning", "Failed", "Error: %s", msg);
}

void ctr_start(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, size_t index)
{
  const cJSON *spec = ctr_spec(p, c);
  if(!spec)
    return;
  /* A restore's sandbox made ahead of its checkpoint: the containers wait for it (the Pod's
   * update naming it wakes this node at once) */
  if(ctr_restore_pending(p) && !c->init && !c->ever_started) {
    if(strcmp(c->wait_reason, "ContainerCreating") || !c->wait_msg)
      ctr_set_waiting(c, "ContainerCreating", "waiting for the checkpoint to restore "
                      "(annotation " "migration.podmotion.io/restore-from)");
    return;
  }
  struct kcache kc = { 0 };
  char err[2048];
  char **env = env_build(jr, &kc, p->pod, spec, p->vols.sa_dir, err, sizeof(err));
  kcache_release(&kc);
  if(!env) {
    /* CreateContainerConfigError: retried, as the kubelet does on each sync */
    ctr_set_waiting(c, "CreateContainerConfigError", err);
    pod_event(jr, p, "Warning", "Failed", "Error: %s", err);
    c->restart_at_ms = jr_mono_ms() + 1000;
    jr_wake_at(jr, c->restart_at_ms);
    return;
  }
  char **argv = build_argv(spec, env, err, sizeof(err));
  char term[PATH_MAX], log[PATH_MAX], dir[PATH_MAX];
  term_path(p, c, term, sizeof(term));
  jr_fmt(dir, sizeof(dir), "%s/containers/%s", p->pod_dir, c->name);
  struct proc_mount *mounts = calloc(64, sizeof(*mounts));
  size_t nm = 0;
  gw_rc rc = argv && mounts ? GW_OK : GW_EINVAL;
  if(!mounts)
    jr_fmt(err, sizeof(err), "out of memory");
  if(!rc && (jr_mkdirs(dir, 0755) || jr_write_file(term, "", 0, 0666))) {
    jr_fmt(err, sizeof(err), "cannot create %s: %s", term, strerror(errno));
    rc = GW_EIO;
  }
  if(!rc)
    rc = build_mounts(jr, p, spec, term, mounts, &nm, 64, err, sizeof(err));
  if(!rc && nm && !jr->mntns) {
    jr_fmt(err, sizeof(err), "volume mounts need mount namespaces, which this job runner "
             "cannot create (run it as root)");
    rc = GW_EUNSUPPORTED;
  }
  bool first = index == p->ninit;
  if(!rc && logs_prepare(jr, p->ns, p->name, c->name, c->ever_started, first)) {
    jr_fmt(err, sizeof(err), "cannot create the log of container %s", c->name);
    rc = GW_EIO;
  }
  const char *wd = json_get_str(spec, "workingDir");
  logs_path(jr, p->ns, p->name, c->name, false, log, sizeof(log));
  pid_t pid = 0;
  if(!rc) {
    if(!c->ever_started) {
      pod_event(jr, p, "Normal", "Pulled", "Container image \"%s\" already present on machine",
                c->image);
    }
    /* A sandboxed container without workingDir starts in a directory of its own: CRIU's
     * parasite mounts a private /proc in the working directory of the tree it dumps, and two
     * trees dumped at once must not share one (docs/dev/podmotion-runtime.md). */
    bool sandboxed = p->sb.n != 0;
    /* ...and one that outlives the Pod (DIR/workdirs/UID/NAME, removed with the cluster): a copy
     * restored elsewhere keeps the working directory it was dumped in, as a container keeps its
     * root filesystem, and must be able to be checkpointed there again */
    char wdir[PATH_MAX];
    jr_fmt(wdir, sizeof(wdir), "%s/workdirs/%s/%s", jr->dir, p->uid, c->name);
    if(sandboxed && jr_mkdirs(wdir, 0755))
      jr_fmt(wdir, sizeof(wdir), "%s", dir);
    const char *dflt = sandboxed ? wdir : jr->workdir;
    struct proc_spec ps = { .argv = argv, .envp = env, .workdir = wd && *wd ? wd : dflt,
                            .workdir_first = !(wd && *wd), .log_path = log, .mounts = mounts,
                            .nmounts = nm, .netns = sandboxed ? p->sb.netns_path : NULL,
                            .new_pidns = jr->podnet.k >= 0 &&
                                         !json_get_bool(p->pod, "spec.hostPID", false) };
    /* A restored Pod's containers come back from their checkpoint the first time they start */
    if(ctr_restore_dir(p) && !c->init && !c->ever_started)
      rc = ctr_restore(jr, p, c, log, &pid, err, sizeof(err));
    else
      rc = proc_spawn(&ps, &pid, err, sizeof(err));
  }
  env_free(argv);
  env_free(env);
  free(mounts);
  if(rc) {
    start_error(jr, p, c, err);
    return;
  }
  c->state = CS_RUNNING;
  c->pid = pid;
  c->started = time(NULL);
  c->ever_started = true;
  c->kill_sent = false;
  jr_fmt(c->container_id, sizeof(c->container_id), "godwit://%.36s-%d-%ld", p->uid,
           (int)index, (long)pid);
  pod_event(jr, p, "Normal", "Created", "Created container %s", c->name);
  pod_event(jr, p, "Normal", "Started", "Started container %s", c->name);
  log_kv(LOG_INFO, "container started", "pod", p->name, "namespace", p->ns, "container", c->name,
         LOG_END);
}

void ctr_exited(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, int status)
{
  /* The main process is gone: the rest of the container goes with it. */
  proc_kill_group(c->pid, SIGKILL);
  ctr_term_release(&c->term);
  struct ctr_term *t = &c->term;
  t->set = true;
  if(WIFEXITED(status)) {
    t->exit_code = WEXITSTATUS(status);
  } else {
    t->signal = WTERMSIG(status);
    t->exit_code = 128 + t->signal;
  }
  jr_fmt(t->reason, sizeof(t->reason), "%s", t->exit_code ? "Error" : "Completed");
  t->started = c->started;
  t->finished = time(NULL);
  jr_fmt(t->container_id, sizeof(t->container_id), "%s", c->container_id);
  char term[PATH_MAX];
  term_path(p, c, term, sizeof(term));
  size_t len = 0;
  char *msg = jr_read_file(term, TERM_MSG_MAX, &len);
  const cJSON *spec = ctr_spec(p, c);
  const char *policy = json_get_str(spec, "terminationMessagePolicy");
  if((!msg || !len) && t->exit_code && policy && !strcmp(policy, "FallbackToLogsOnError")) {
    char log[PATH_MAX];
    logs_path(jr, p->ns, p->name, c->name, false, log, sizeof(log));
    free(msg);
    msg = logs_tail(log, 80, 2048);
  }
  if(msg && *msg)
    t->message = msg;
  else
    free(msg);
  c->state = CS_TERMINATED;
  c->pid = 0;
  log_kv(LOG_INFO, "container exited", "pod", p->name, "namespace", p->ns, "container", c->name,
         "reason", t->reason, LOG_END);
}

bool ctr_should_restart(const struct pod_rt *p, const struct ctr_rt *c)
{
  const char *rp = json_get_str(p->pod, "spec.restartPolicy");
  if(!rp || !strcmp(rp, "Always"))
    return true;
  return !strcmp(rp, "OnFailure") && c->term.exit_code != 0;
}

void ctr_schedule_restart(struct jr *jr, struct pod_rt *p, struct ctr_rt *c)
{
  int64_t delay = jr_backoff_ms(jr, c->restarts, jr->cfg->backoff_base_ms * 30);
  ctr_term_release(&c->last);
  c->last = c->term;
  memset(&c->term, 0, sizeof(c->term));
  c->restarts++;
  c->restart_at_ms = jr_mono_ms() + delay;
  char msg[768];
  jr_fmt(msg, sizeof(msg), "back-off %llds restarting failed container=%s pod=%s_%s(%s)",
           (long long)((delay + 999) / 1000), c->name, p->name, p->ns, p->uid);
  if(delay) {
    ctr_set_waiting(c, "CrashLoopBackOff", msg);
    jr_fmt(msg, sizeof(msg), "%s in pod %s_%s(%s)", c->name, p->name, p->ns, p->uid);
    pod_event(jr, p, "Warning", "BackOff", "Back-off restarting failed container %s", msg);
  } else {
    ctr_set_waiting(c, "ContainerCreating", NULL);
  }
  jr_wake_at(jr, c->restart_at_ms);
}

void ctr_stop(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, long grace_s)
{
  if(c->state != CS_RUNNING || !c->pid)
    return;
  int64_t now = jr_mono_ms();
  if(!c->kill_sent) {
    c->kill_sent = true;
    proc_kill_group(c->pid, grace_s > 0 ? SIGTERM : SIGKILL);
    pod_event(jr, p, "Normal", "Killing", "Stopping container %s", c->name);
    p->kill_at_ms = now + grace_s * 1000;
  } else if(now >= p->kill_at_ms) {
    proc_kill_group(c->pid, SIGKILL);
    p->kill_at_ms = now + 1000; /* again if it lingers (a stopped process group) */
  }
  jr_wake_at(jr, p->kill_at_ms);
}
