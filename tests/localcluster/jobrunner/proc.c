/* proc.c: a container is a process group on this machine. The child sets itself up between
 * fork and exec with system calls only (the parent has threads: no malloc, no locks there), and
 * reports a failed step through a close-on-exec pipe, as a container runtime reports a
 * StartError. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kubelet.h"

enum { STEP_NONE, STEP_NS, STEP_NETNS, STEP_MOUNT, STEP_LOG, STEP_CHDIR, STEP_EXEC };

struct child_err {
  int step;
  int err;
  char detail[PATH_MAX];
};

__attribute__((noreturn)) static void report(int fd, int step, int err, const char *detail)
{
  struct child_err ce;
  memset(&ce, 0, sizeof(ce));
  ce.step = step;
  ce.err = err;
  size_t i = 0;
  for(; detail && detail[i] && i + 1 < sizeof(ce.detail); i++)
    ce.detail[i] = detail[i];
  ssize_t n = write(fd, &ce, sizeof(ce));
  (void)n;
  _exit(127);
}

/* mkdir -p of path's directories (the last component too when dir). Stack only. */
static int mkdirs_child(const char *path, bool dir)
{
  char buf[PATH_MAX];
  size_t n = 0;
  for(; path[n] && n + 1 < sizeof(buf); n++)
    buf[n] = path[n];
  buf[n] = 0;
  for(size_t i = 1; i < n; i++) {
    if(buf[i] != '/')
      continue;
    buf[i] = 0;
    if(mkdir(buf, 0755) && errno != EEXIST)
      return -1;
    buf[i] = '/';
  }
  if(dir)
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
  return 0;
}

/* One bind mount, its mount point created on the host when missing; 0 or an errno. */
static int bind(const struct proc_mount *m)
{
  struct stat st;
  if(stat(m->src, &st))
    return errno;
  bool dir = S_ISDIR(st.st_mode);
  if(mkdirs_child(m->dst, dir))
    return errno;
  if(!dir) {
    int fd = open(m->dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if(fd < 0 && errno != EISDIR)
      return errno;
    if(fd >= 0)
      close(fd);
  }
  if(mount(m->src, m->dst, NULL, MS_BIND | MS_REC, NULL))
    return errno;
  if(m->ro && mount(NULL, m->dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, NULL))
    return errno;
  return 0;
}

static void setup_mounts(const struct proc_spec *s, int efd)
{
  if(unshare(CLONE_NEWNS))
    report(efd, STEP_NS, errno, NULL);
  /* Nothing mounted here may propagate back to the host. */
  if(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL))
    report(efd, STEP_NS, errno, NULL);
  for(size_t i = 0; i < s->nmounts; i++) {
    const struct proc_mount *m = &s->mounts[i];
    int err = bind(m);
    if(err && !m->optional)
      report(efd, STEP_MOUNT, err, m->dst);
  }
}

static const char *env_path(char *const *envp)
{
  for(size_t i = 0; envp[i]; i++)
    if(!strncmp(envp[i], "PATH=", 5))
      return envp[i] + 5;
  return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

/* execvpe with the container's PATH, looked up after the mounts (the program may live in a
 * volume). */
static void exec_child(const struct proc_spec *s, int efd)
{
  const char *file = s->argv[0] ? s->argv[0] : "";
  if(!*file)
    report(efd, STEP_EXEC, ENOENT, "");
  if(strchr(file, '/')) {
    execve(file, s->argv, s->envp);
    report(efd, STEP_EXEC, errno, file);
  }
  int saved = ENOENT;
  const char *p = env_path(s->envp);
  while(*p) {
    const char *end = strchr(p, ':');
    size_t dl = end ? (size_t)(end - p) : strlen(p);
    char buf[PATH_MAX];
    size_t fl = strlen(file);
    if(dl + fl + 2 <= sizeof(buf)) {
      memcpy(buf, p, dl);
      size_t o = dl;
      if(!o)
        buf[o++] = '.';
      buf[o++] = '/';
      memcpy(buf + o, file, fl + 1);
      execve(buf, s->argv, s->envp);
      if(errno == EACCES)
        saved = EACCES;
    }
    if(!end)
      break;
    p = end + 1;
  }
  report(efd, STEP_EXEC, saved == EACCES ? EACCES : -1, file);
}

static void child(const struct proc_spec *s, int efd)
{
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  for(int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL); /* SIGPIPE was ignored by the parent: not the container's business */
  if(setsid() < 0)
    report(efd, STEP_NS, errno, NULL);
  if(s->netns) {
    int fd = open(s->netns, O_RDONLY | O_CLOEXEC);
    if(fd < 0 || setns(fd, CLONE_NEWNET))
      report(efd, STEP_NETNS, errno, s->netns);
    close(fd);
  }
  /* A runner killed outright takes its containers' main processes along. Not in a sandbox: a
   * checkpoint would carry the signal to the restored copy, which criu's exit would then kill;
   * there, removing the sandbox kills what runs in it (podnet.c). */
  if(!s->netns)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  /* The default directory is the runner's own: entered before the mounts, so a volume mounted
   * over one of its parents cannot hide it. An explicit workingDir may be in a volume. */
  if(s->workdir_first && s->workdir && *s->workdir && chdir(s->workdir))
    report(efd, STEP_CHDIR, errno, s->workdir);
  if(s->nmounts)
    setup_mounts(s, efd);
  int log = open(s->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if(log < 0)
    report(efd, STEP_LOG, errno, s->log_path);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if(null < 0 || dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
    report(efd, STEP_LOG, errno, s->log_path);
  /* Only 0, 1, 2 and the report pipe (close-on-exec) reach the program. */
  if(efd != 3) {
    if(dup3(efd, 3, O_CLOEXEC) < 0)
      report(efd, STEP_LOG, errno, "fd 3");
    efd = 3;
  }
  syscall(SYS_close_range, 4u, ~0u, 0u);
  if(!s->workdir_first && s->workdir && *s->workdir && chdir(s->workdir))
    report(efd, STEP_CHDIR, errno, s->workdir);
  exec_child(s, efd);
}

gw_rc proc_spawn(const struct proc_spec *s, pid_t *pid, char *err, size_t errlen)
{
  int p[2];
  if(pipe2(p, O_CLOEXEC)) {
    jr_fmt(err, errlen, "pipe: %s", strerror(errno));
    return GW_EIO;
  }
  /* A pid namespace of its own: clone with fork's semantics (no new stack), the child being
   * its namespace's init. */
  pid_t c = s->new_pidns ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL)
                         : fork();
  if(c < 0) {
    jr_fmt(err, errlen, "%s: %s", s->new_pidns ? "clone(CLONE_NEWPID)" : "fork",
           strerror(errno));
    close(p[0]);
    close(p[1]);
    return GW_EIO;
  }
  if(!c) {
    close(p[0]);
    child(s, p[1]);
    _exit(127);
  }
  close(p[1]);
  struct child_err ce;
  ssize_t n;
  do
    n = read(p[0], &ce, sizeof(ce));
  while(n < 0 && errno == EINTR);
  close(p[0]);
  *pid = c;
  if(n <= 0)
    return GW_OK; /* exec succeeded: the pipe closed */
  ce.detail[sizeof(ce.detail) - 1] = 0;
  switch(ce.step) {
  case STEP_NS:
    jr_fmt(err, errlen, "cannot create the container's mount namespace: %s (volume mounts "
             "need root)", strerror(ce.err));
    break;
  case STEP_NETNS:
    jr_fmt(err, errlen, "cannot join the pod's network namespace \"%s\": %s", ce.detail,
           strerror(ce.err));
    break;
  case STEP_MOUNT:
    jr_fmt(err, errlen, "error mounting to rootfs at \"%s\": %s", ce.detail,
             strerror(ce.err));
    break;
  case STEP_LOG:
    jr_fmt(err, errlen, "cannot open the container log \"%s\": %s", ce.detail,
             strerror(ce.err));
    break;
  case STEP_CHDIR:
    jr_fmt(err, errlen, "chdir to cwd (\"%s\") set in config.json failed: %s", ce.detail,
             strerror(ce.err));
    break;
  default:
    if(ce.err < 0)
      jr_fmt(err, errlen, "exec: \"%s\": executable file not found in $PATH", ce.detail);
    else
      jr_fmt(err, errlen, "exec: \"%s\": %s", ce.detail, strerror(ce.err));
  }
  return GW_EIO;
}

void proc_kill_group(pid_t pgid, int sig)
{
  if(pgid > 1)
    kill(-pgid, sig);
}

bool proc_mntns_works(void)
{
  pid_t c = fork();
  if(c < 0)
    return false;
  if(!c)
    _exit(unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ? 1 : 0);
  int status;
  while(waitpid(c, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
