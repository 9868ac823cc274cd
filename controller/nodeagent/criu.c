/* criu.c: runs the criu binary for the node agent and reports what it said (criu.h). */
#include "criu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strbuf.h"

#define ERROR_LINES 4
#define LOG_TAIL_BYTES 65536L
#define CHILD_NO_NETNS 126 /* exit codes of the child before criu runs */
#define CHILD_NO_EXEC 127

/* Error lines criu prints on success too, left out of res->errors. */
static const char *const harmless[] = {
  /* every run as root in a container: the soft limit cannot be raised past the hard one */
  "Can't setup RLIMIT_NOFILE for self",
  /* a restore deletes the dump's nftables lock table, which stayed in the source namespace */
  "Could not process rule: No such file or directory",
};

static const struct {
  const char *name;
  size_t offset;
} features[] = {
  {"mem_dirty_track", offsetof(struct criu_features, mem_dirty_track)},
  {"uffd", offsetof(struct criu_features, uffd)},
  {"uffd-noncoop", offsetof(struct criu_features, uffd_noncoop)},
  {"tcp_half_closed", offsetof(struct criu_features, tcp_half_closed)},
};

const char *criu_path(void)
{
  const char *p = getenv("GODWIT_CRIU");
  return p && *p ? p : CRIU_DEFAULT_PATH;
}

static long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static bool is_error_line(const char *line)
{
  if(!strstr(line, "Error"))
    return false;
  for(size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
    if(strstr(line, harmless[i]))
      return false;
  return true;
}

/* The last error lines of text into res->errors; false when there are none. */
static bool keep_errors(struct criu_result *res, const char *text)
{
  const char *last[ERROR_LINES];
  size_t lens[ERROR_LINES], n = 0;
  for(const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char copy[512];
    snprintf(copy, sizeof(copy), "%.*s", (int)len, line);
    if(is_error_line(copy)) {
      last[n % ERROR_LINES] = line;
      lens[n % ERROR_LINES] = len;
      n++;
    }
    line += len + (end ? 1 : 0);
  }
  size_t first = n > ERROR_LINES ? n - ERROR_LINES : 0, used = 0;
  res->errors[0] = '\0';
  for(size_t i = first; i < n && used + 1 < sizeof(res->errors); i++) {
    int w = snprintf(res->errors + used, sizeof(res->errors) - used, "%s%.*s", used ? "\n" : "",
                     (int)lens[i % ERROR_LINES], last[i % ERROR_LINES]);
    if(w < 0)
      break;
    used += (size_t)w;
  }
  return n > 0;
}

/* The tail of the log file (NULL when it cannot be read). */
static char *log_tail(const char *path)
{
  FILE *f = path ? fopen(path, "rb") : NULL;
  if(!f)
    return NULL;
  if(fseek(f, 0, SEEK_END) == 0 && ftell(f) > LOG_TAIL_BYTES)
    fseek(f, -LOG_TAIL_BYTES, SEEK_END);
  else
    rewind(f);
  char *buf = malloc(LOG_TAIL_BYTES + 1);
  size_t n = buf ? fread(buf, 1, LOG_TAIL_BYTES, f) : 0;
  fclose(f);
  if(buf)
    buf[n] = '\0';
  return buf;
}

/* The child: async-signal-safe calls only (the agent has threads). */
#define INHERIT_FD 10 /* where an inherited descriptor sits in criu */

static void child(char *const argv[], const char *netns, int out, int keep)
{
  setpgid(0, 0);
  if(keep > 0 && dup2(keep, INHERIT_FD) < 0) /* dup2 clears close-on-exec */
    _exit(CHILD_NO_EXEC);
  if(netns) {
    int fd = open(netns, O_RDONLY | O_CLOEXEC);
    if(fd < 0 || setns(fd, CLONE_NEWNET) < 0)
      _exit(CHILD_NO_NETNS);
  }
  int nul = open("/dev/null", O_RDONLY);
  if(nul < 0 || dup2(nul, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
    _exit(CHILD_NO_EXEC);
  execv(argv[0], argv);
  _exit(CHILD_NO_EXEC);
}

/* Appends what the pipe holds now (non-blocking); false at end of file. */
static bool drain(int out, struct strbuf *sb)
{
  char buf[4096];
  for(;;) {
    ssize_t n = read(out, buf, sizeof(buf));
    if(n == 0)
      return false;
    if(n < 0)
      return errno == EAGAIN || errno == EINTR;
    /* past the limit the rest is dropped; a failed append leaves an empty output (strbuf.h) */
    if(sb->len + (size_t)n <= CRIU_OUTPUT_MAX && strbuf_add(sb, buf, (size_t)n))
      continue;
  }
}

static bool exited(pid_t pid, int pidfd)
{
  if(pidfd >= 0) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
  }
  siginfo_t si = {0};
  return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* Collects the child's output until it exits or the deadline passes (then kills its group).
 * The end of the output is not awaited: a helper of criu may keep the pipe open. */
static void collect(pid_t pid, int out, long deadline, struct strbuf *sb, struct criu_result *res)
{
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1 before Linux 5.3: look every 10 ms */
  bool open_out = true;
  fcntl(out, F_SETFL, O_NONBLOCK);
  while(!exited(pid, pidfd)) {
    long left = deadline - now_ms();
    if(left <= 0) {
      kill(-pid, SIGKILL);
      res->timed_out = true;
      break;
    }
    struct pollfd p[2];
    nfds_t n = 0;
    if(open_out)
      p[n++] = (struct pollfd){.fd = out, .events = POLLIN};
    if(pidfd >= 0)
      p[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
    poll(p, n, (int)(pidfd >= 0 ? left : left < 10 ? left : 10));
    if(open_out)
      open_out = drain(out, sb);
  }
  if(open_out)
    drain(out, sb);
  if(pidfd >= 0)
    close(pidfd);
}

static gw_rc run_keep(char *const argv[], const char *netns, const char *log_file,
                      long timeout_ms, int keep, struct criu_result *res)
{
  memset(res, 0, sizeof(*res));
  res->status = -1;
  if(!argv || !argv[0])
    return GW_EINVAL;
  long start = now_ms();
  int out[2];
  if(pipe2(out, O_CLOEXEC) < 0)
    return GW_EIO;
  pid_t pid = fork();
  if(pid < 0) {
    close(out[0]);
    close(out[1]);
    return GW_EIO;
  }
  if(pid == 0)
    child(argv, netns, out[1], keep);
  setpgid(pid, pid); /* also here: a timeout may come before the child ran */
  close(out[1]);
  struct strbuf sb;
  strbuf_init(&sb, CRIU_OUTPUT_MAX);
  collect(pid, out[0], start + (timeout_ms > 0 ? timeout_ms : CRIU_DEFAULT_TIMEOUT_MS), &sb, res);
  close(out[0]);
  int st;
  while(waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  res->elapsed_ms = now_ms() - start;
  res->status = !res->timed_out && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  res->output = strbuf_take(&sb, NULL);

  char *tail = log_tail(log_file);
  if(!(tail && keep_errors(res, tail)) && res->output)
    keep_errors(res, res->output);
  free(tail);
  if(res->timed_out) {
    snprintf(res->errors, sizeof(res->errors), "'%s' killed after %ld ms", argv[0],
             res->elapsed_ms);
    return GW_ETIMEOUT;
  }
  if(res->status == CHILD_NO_NETNS && netns) {
    snprintf(res->errors, sizeof(res->errors), "cannot enter the network namespace '%s'", netns);
    return GW_ENOTFOUND;
  }
  if(res->status == CHILD_NO_EXEC) {
    snprintf(res->errors, sizeof(res->errors), "cannot run '%s' (run make deps)", argv[0]);
    return GW_ENOTFOUND;
  }
  return res->status == 0 ? GW_OK : GW_EIO;
}

gw_rc criu_run(char *const argv[], const char *netns, const char *log_file, long timeout_ms,
               struct criu_result *res)
{
  return run_keep(argv, netns, log_file, timeout_ms, -1, res);
}

void criu_result_release(struct criu_result *res)
{
  free(res->output);
  res->output = NULL;
}

gw_rc criu_check_features(const char *criu, struct criu_features *out)
{
  memset(out, 0, sizeof(*out));
  char *bin = (char *)(criu ? criu : criu_path());
  struct criu_result r;
  gw_rc rc = criu_run((char *[]){bin, "--version", NULL}, NULL, NULL, 10000, &r);
  const char *v = r.output ? strstr(r.output, "Version: ") : NULL;
  if(!rc && v)
    sscanf(v, "Version: %31s", out->version);
  criu_result_release(&r);
  if(!out->version[0])
    return GW_ENOTFOUND;
  for(size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
    char *argv[] = {bin, "check", "--feature", (char *)features[i].name, NULL};
    *(bool *)((char *)out + features[i].offset) = criu_run(argv, NULL, NULL, 10000, &r) == GW_OK;
    criu_result_release(&r);
  }
  return GW_OK;
}

/* argv of a dump or restore, from o; strings point into o or into buffers of a. */
struct args {
  char *v[32];
  int n;
  char pid[16], verbosity[16], log[PATH_MAX], inherit[PATH_MAX + 16];
};

static void add(struct args *a, const char *s)
{
  if(a->n < (int)(sizeof(a->v) / sizeof(a->v[0])) - 1)
    a->v[a->n++] = (char *)s;
  a->v[a->n] = NULL;
}

static gw_rc common(struct args *a, const struct criu_opts *o, const char *cmd, const char *log)
{
  if(!o->images_dir || !*o->images_dir)
    return GW_EINVAL;
  if(!o->log_file || o->log_file[0] != '/')
    snprintf(a->log, sizeof(a->log), "%s/%s", o->images_dir, o->log_file ? o->log_file : log);
  else
    snprintf(a->log, sizeof(a->log), "%s", o->log_file);
  a->n = 0;
  add(a, o->criu ? o->criu : criu_path());
  add(a, cmd);
  add(a, "-D");
  add(a, o->images_dir);
  add(a, "-o");
  add(a, a->log);
  if(o->verbosity > 0) {
    snprintf(a->verbosity, sizeof(a->verbosity), "-v%d", o->verbosity);
    add(a, a->verbosity);
  }
  if(o->tcp_established)
    add(a, "--tcp-established");
  if(o->shell_job)
    add(a, "--shell-job");
  if(o->ext_unix_sk)
    add(a, "--ext-unix-sk");
  return GW_OK;
}

gw_rc criu_dump(const struct criu_opts *o, struct criu_result *res)
{
  struct args a;
  memset(res, 0, sizeof(*res));
  res->status = -1;
  if(o->pid <= 0 || common(&a, o, "dump", "dump.log"))
    return GW_EINVAL;
  snprintf(a.pid, sizeof(a.pid), "%d", (int)o->pid);
  add(&a, "-t");
  add(&a, a.pid);
  if(o->leave_running)
    add(&a, "--leave-running");
  if(o->skip_in_flight)
    add(&a, "--skip-in-flight");
  if(o->network_lock) {
    add(&a, "--network-lock");
    add(&a, o->network_lock);
  }
  return criu_run(a.v, o->netns, a.log, o->timeout_ms, res);
}

gw_rc criu_restore(const struct criu_opts *o, struct criu_result *res)
{
  struct args a;
  memset(res, 0, sizeof(*res));
  res->status = -1;
  if(common(&a, o, "restore", "restore.log"))
    return GW_EINVAL;
  add(&a, "--restore-detached");
  if(o->pidfile) {
    add(&a, "--pidfile");
    add(&a, o->pidfile);
  }
  if(o->inherit_fd > 0 && o->inherit_key) {
    snprintf(a.inherit, sizeof(a.inherit), "fd[%d]:%s", INHERIT_FD, o->inherit_key);
    add(&a, "--inherit-fd");
    add(&a, a.inherit);
  }
  return run_keep(a.v, o->netns, a.log, o->timeout_ms, o->inherit_fd, res);
}
