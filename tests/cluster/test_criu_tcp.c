/*
 * test_criu_tcp.c: the mechanism PodMotion's node agent relies on, with real CRIU through
 * controller/nodeagent/criu.h: a process holding an ESTABLISHED TCP connection is checkpointed on
 * "node-a", its address moves to "node-b", it is restored there, and the client goes on with
 * the same socket, no reset. docs/dev/podmotion-runtime.md describes the model:
 *
 *   netns NET (the cluster network; the client's socket lives here)
 *     br0 10.244.1.1/24 --+-- va ==veth== eth0 10.244.1.10  netns A (the pod on node-a)
 *                         +-- vb ==veth== eth0 10.244.1.10  netns B (the pod on node-b, later)
 *
 * The pod is tests/criu/counter.c ($GODWIT_BUILD/tests/criu-counter) in its own pid namespace
 * (its init and session leader) and in A. The test process is the client. Everything it makes
 * (namespaces, processes, the 0700 images directory with criu's logs: GODWIT_KEEP_CLUSTER keeps
 * it) goes in .fini, and a run killed before that is swept by the next one (.init). As root;
 * CRIU missing is a failure, not a skip.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nodeagent/criu.h"

#define POD_IP "10.244.1.10"
#define NET_IP "10.244.1.1"
#define POD_PORT 7000
#define NS_PREFIX "gwct" /* gwct<pid of the test process>-{net,a,b} */
#define SHIELD "inet godwit_shield"

static struct {
  char ns[3][32]; /* NET, A, B */
  char path[3][64]; /* /run/netns/... */
  bool made;        /* the namespaces were asked for */
  char dir[64];   /* images and logs, 0700 */
  pid_t server;   /* the pod's pid-namespace init, our child, until it is dumped */
  int client;
} W = {.client = -1};

enum { NET, A, B };

static long mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Runs a shell command, its output appended to commands.log in the images directory. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
  char cmd[1024], full[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  snprintf(full, sizeof(full), "{ %s; } >>'%s/commands.log' 2>&1", cmd, *W.dir ? W.dir : "/tmp");
  int st = system(full);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define must(...) cr_assert_eq(sh(__VA_ARGS__), 0, "failed (see commands.log): " __VA_ARGS__)

static const char *ns_path(int which)
{
  return W.path[which];
}

/* Kills what runs in network namespace name and deletes it. */
static void drop_netns(const char *name)
{
  char cmd[320];
  snprintf(cmd, sizeof(cmd), "ip netns pids %s 2>/dev/null", name);
  FILE *p = popen(cmd, "r");
  long pid;
  while(p && fscanf(p, "%ld", &pid) == 1)
    kill((pid_t)pid, SIGKILL);
  if(p)
    pclose(p);
  snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", name);
  char path[300];
  snprintf(path, sizeof(path), "/run/netns/%s", name);
  if(system(cmd) != 0 && access(path, F_OK) == 0) /* a parallel sweep may have been first */
    cr_log_warn("could not delete network namespace %s", name);
}

static bool gone(int pid)
{
  return kill(pid, 0) < 0 && errno == ESRCH;
}

/* What earlier runs left when they were killed before their .fini: namespaces (with what runs
 * in them) and images directories, both named after the test process. */
static void sweep(void)
{
  DIR *d = opendir("/run/netns");
  struct dirent *e;
  int pid;
  while(d && (e = readdir(d)))
    if(sscanf(e->d_name, NS_PREFIX "%d-", &pid) == 1 && gone(pid))
      drop_netns(e->d_name);
  if(d)
    closedir(d);
  d = opendir("/run");
  while(d && (e = readdir(d))) {
    char cmd[320];
    snprintf(cmd, sizeof(cmd), "rm -rf '/run/%s'", e->d_name);
    if(sscanf(e->d_name, "godwit-criu-%d-", &pid) == 1 && gone(pid) && system(cmd) != 0)
      cr_log_warn("could not remove /run/%s", e->d_name);
  }
  if(d)
    closedir(d);
}

static void setup(void)
{
  sweep();
  /* the restored root is reparented to us once criu exits, so it is reaped here */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const char *names[] = {"net", "a", "b"};
  for(int i = 0; i < 3; i++) {
    snprintf(W.ns[i], sizeof(W.ns[i]), NS_PREFIX "%d-%s", (int)getpid(), names[i]);
    snprintf(W.path[i], sizeof(W.path[i]), "/run/netns/" NS_PREFIX "%d-%s", (int)getpid(),
             names[i]);
  }
}

static void teardown(void)
{
  if(W.client >= 0)
    close(W.client);
  if(W.server > 0)
    kill(W.server, SIGKILL);
  for(int i = 2; W.made && i >= 0; i--)
    drop_netns(W.ns[i]);
  while(waitpid(-1, NULL, WNOHANG) > 0)
    ;
  if(*W.dir && getenv("GODWIT_KEEP_CLUSTER")) {
    cr_log_info("kept %s (GODWIT_KEEP_CLUSTER)", W.dir);
  } else if(*W.dir) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", W.dir);
    if(system(cmd) != 0)
      cr_log_warn("could not remove %s", W.dir);
  }
}

TestSuite(criu_tcp, .init = setup, .fini = teardown, .timeout = 60);

static ino_t netns_ino(const char *path)
{
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
  return st.st_ino;
}

/* Root, the tools of make deps, a CRIU, the counter; the cluster network and pod A. */
static void start_world(void)
{
  cr_assert_eq(geteuid(), 0, "the CRIU tests run as root (network namespaces, CRIU)");
  cr_assert_eq(access(criu_path(), X_OK), 0,
               "no CRIU at %s: run `make deps` (tests/criu/install.sh installs it; CI does)",
               criu_path());
  cr_assert_eq(system("command -v ip >/dev/null && command -v nft >/dev/null"), 0,
               "ip or nft is missing: run `make deps`");
  snprintf(W.dir, sizeof(W.dir), "/run/godwit-criu-%d-XXXXXX", (int)getpid());
  cr_assert_not_null(mkdtemp(W.dir), "mkdtemp: %s", strerror(errno));
  cr_assert_eq(chmod(W.dir, 0700), 0);

  W.made = true;
  must("ip netns add %s && ip netns add %s && ip netns add %s", W.ns[NET], W.ns[A], W.ns[B]);
  must("ip -n %1$s link set lo up && ip -n %1$s link add br0 type bridge && "
       "ip -n %1$s addr add " NET_IP "/24 dev br0 && ip -n %1$s link set br0 up",
       W.ns[NET]);
  must("ip -n %1$s link add va type veth peer name eth0 netns %2$s && "
       "ip -n %1$s link set va master br0 up && ip -n %2$s link set lo up && "
       "ip -n %2$s addr add " POD_IP "/24 dev eth0 && ip -n %2$s link set eth0 up",
       W.ns[NET], W.ns[A]);
}

struct pod_args {
  const char *netns, *bin, *dir;
  int ready;
};

/* The pod's first process: pid 1 of a fresh pid namespace, in netns A, its own session, in a
 * directory of its own (the /proc of the host's mount namespace is not its pid namespace's, so
 * CRIU's parasite mounts one at ./proc.crtools: two pods sharing a directory collide there). */
static int pod_main(void *arg)
{
  struct pod_args *a = arg;
  int fd = open(a->netns, O_RDONLY);
  if(fd < 0 || setns(fd, CLONE_NEWNET) < 0 || setsid() < 0 || chdir(a->dir) < 0)
    _exit(126);
  int nul = open("/dev/null", O_RDWR);
  if(nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 || dup2(a->ready, 3) < 0)
    _exit(126);
  /* nothing of the test process (Criterion's pipes) may be in the checkpoint */
  close_range(4, ~0U, 0);
  char port[16];
  snprintf(port, sizeof(port), "%d", POD_PORT);
  execl(a->bin, a->bin, POD_IP, port, "3", (char *)NULL);
  _exit(127);
}

static void start_server(void)
{
  const char *build = getenv("GODWIT_BUILD") ? getenv("GODWIT_BUILD") : "build";
  char rel[256], bin[PATH_MAX];
  snprintf(rel, sizeof(rel), "%s/tests/criu-counter", build);
  cr_assert(realpath(rel, bin) && access(bin, X_OK) == 0,
            "%s is missing (make %s/tests/cluster builds it)", rel, build);
  int p[2];
  cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
  struct pod_args a = {.netns = ns_path(A), .bin = bin, .dir = W.dir, .ready = p[1]};
  static char stack[256 * 1024] __attribute__((aligned(16)));
  W.server = clone(pod_main, stack + sizeof(stack), CLONE_NEWPID | SIGCHLD, &a);
  cr_assert(W.server > 0, "clone: %s", strerror(errno));
  close(p[1]);
  struct pollfd pf = {.fd = p[0], .events = POLLIN};
  char buf[8] = "";
  cr_assert_eq(poll(&pf, 1, 5000), 1, "the counter did not start listening within 5 s");
  ssize_t n = read(p[0], buf, sizeof(buf) - 1);
  close(p[0]);
  cr_assert(n > 0 && !strncmp(buf, "ready", 5), "the counter ended before it listened");
}

/* A socket in netns which (the thread goes back to its own namespace at once). */
static int socket_in(int which)
{
  int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  int ns = open(ns_path(which), O_RDONLY | O_CLOEXEC);
  cr_assert(self >= 0 && ns >= 0 && setns(ns, CLONE_NEWNET) == 0, "setns: %s", strerror(errno));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int back = setns(self, CLONE_NEWNET);
  close(ns);
  close(self);
  cr_assert(fd >= 0 && back == 0, "socket in %s: %s", W.ns[which], strerror(errno));
  return fd;
}

static void connect_client(void)
{
  W.client = socket_in(NET);
  struct timeval tv = {.tv_sec = 5}; /* bounds connect() too */
  cr_assert_eq(setsockopt(W.client, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(POD_PORT)};
  inet_pton(AF_INET, POD_IP, &sa.sin_addr);
  cr_assert_eq(connect(W.client, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s",
               strerror(errno));
}

static void send_line(const char *req)
{
  char line[32];
  int n = snprintf(line, sizeof(line), "%s\n", req);
  ssize_t w = send(W.client, line, (size_t)n, MSG_NOSIGNAL);
  cr_assert_eq(w, n, "send '%s': %s (the connection was reset or closed)", req,
               w < 0 ? strerror(errno) : "short write");
}

/* The next reply line, within timeout_ms; any error (ECONNRESET, EPIPE, EOF) fails the test. */
static void recv_line(char *out, size_t size, int timeout_ms)
{
  size_t len = 0;
  long deadline = mono_ms() + timeout_ms;
  for(;;) {
    long left = deadline - mono_ms();
    struct pollfd pf = {.fd = W.client, .events = POLLIN};
    cr_assert(left > 0 && poll(&pf, 1, (int)left) == 1, "no reply within %d ms", timeout_ms);
    char c;
    ssize_t r = recv(W.client, &c, 1, 0);
    cr_assert(r == 1, "the connection broke: %s", r < 0 ? strerror(errno) : "closed by the peer");
    if(c == '\n')
      break;
    if(len + 1 < size)
      out[len++] = c;
  }
  out[len] = '\0';
}

static long ask_counter(const char *req)
{
  char reply[64];
  send_line(req);
  recv_line(reply, sizeof(reply), 5000);
  return strtol(reply, NULL, 10);
}

/* The network namespace the server says it runs in ("net:[INODE]"). */
static ino_t ask_netns(void)
{
  char reply[64];
  unsigned long ino = 0;
  send_line("net");
  recv_line(reply, sizeof(reply), 5000);
  cr_assert_eq(sscanf(reply, "net:[%lu]", &ino), 1, "unexpected reply '%s'", reply);
  return (ino_t)ino;
}

static void assert_connection_sound(void)
{
  int err = -1;
  socklen_t len = sizeof(err);
  cr_assert_eq(getsockopt(W.client, SOL_SOCKET, SO_ERROR, &err, &len), 0);
  cr_assert_eq(err, 0, "the client's socket saw %s", strerror(err));
  struct tcp_info ti;
  len = sizeof(ti);
  cr_assert_eq(getsockopt(W.client, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
  cr_assert_eq(ti.tcpi_state, TCP_ESTABLISHED, "client TCP state %d", ti.tcpi_state);
  cr_log_info("client socket: ESTABLISHED, %u segments retransmitted in all",
              ti.tcpi_total_retrans);
}

static struct criu_opts dump_opts(const char *images, bool leave_running)
{
  return (struct criu_opts){.pid = W.server, .images_dir = images, .netns = ns_path(A),
                            .verbosity = 4, .tcp_established = true, .network_lock = "nftables",
                            .leave_running = leave_running, .timeout_ms = 30000};
}

static void images_dir(char *out, size_t size, const char *name)
{
  snprintf(out, size, "%s/%s", W.dir, name);
  cr_assert_eq(mkdir(out, 0700), 0, "mkdir %s: %s", out, strerror(errno));
}

/* Bytes of the checkpoint's images (the logs left out). */
static long images_size(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  long total = 0;
  while(d && (e = readdir(d))) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    if(strstr(e->d_name, ".img") && stat(p, &st) == 0)
      total += (long)st.st_size;
  }
  if(d)
    closedir(d);
  return total;
}

static bool has_tcp_stream_image(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  bool found = false;
  while(d && (e = readdir(d)))
    found |= !strncmp(e->d_name, "tcp-stream-", 11);
  if(d)
    closedir(d);
  return found;
}

Test(criu_tcp, a_dump_that_leaves_the_source_running_is_a_rollback)
{
  start_world();
  start_server();
  connect_client();
  for(long i = 1; i <= 3; i++)
    cr_assert_eq(ask_counter("inc"), i);

  char images[128];
  images_dir(images, sizeof(images), "rollback");
  struct criu_opts o = dump_opts(images, true);
  struct criu_result r;
  gw_rc rc = criu_dump(&o, &r);
  cr_assert_eq(rc, GW_OK, "criu dump --leave-running: %s (exit %d):\n%s", gw_strerror(rc),
               r.status, r.errors);
  criu_result_release(&r);
  cr_log_info("dump --leave-running: %ld ms, %ld bytes of images", r.elapsed_ms,
              images_size(images));
  cr_assert(has_tcp_stream_image(images), "the checkpoint holds no established connection");

  /* nothing to undo: criu took its lock away, and the source serves the same client, its
   * counter and namespace unchanged */
  cr_assert_neq(sh("nsenter --net=%s nft list tables | grep -q CRIU-", ns_path(A)), 0,
                "criu's lock table is still in A after a dump with --leave-running");
  cr_assert_eq(waitpid(W.server, NULL, WNOHANG), 0, "the source ended after the dump");
  for(long i = 4; i <= 6; i++)
    cr_assert_eq(ask_counter("inc"), i);
  cr_assert_eq(ask_netns(), netns_ino(ns_path(A)));
  assert_connection_sound();
}

/* Moves the pod's address from A to B the way a CNI would: A's interface goes, B gets one with
 * the same address behind the shield (TCP to and from the pod dropped: B has the address before
 * it has the socket, and would answer the client's retransmissions with a reset), and the
 * cluster network forgets A's MAC address. */
static void move_address(void)
{
  must("ip -n %s link del eth0", W.ns[A]);
  must("nsenter --net=%s nft 'add table " SHIELD "; "
       "add chain " SHIELD " in { type filter hook input priority -400; }; "
       "add rule " SHIELD " in ip daddr " POD_IP " meta l4proto tcp drop; "
       "add chain " SHIELD " out { type filter hook output priority -400; }; "
       "add rule " SHIELD " out ip saddr " POD_IP " meta l4proto tcp drop'",
       ns_path(B));
  must("ip -n %1$s link add vb type veth peer name eth0 netns %2$s && "
       "ip -n %1$s link set vb master br0 up && ip -n %2$s link set lo up && "
       "ip -n %2$s addr add " POD_IP "/24 dev eth0 && ip -n %2$s link set eth0 up && "
       "ip -n %1$s neigh flush to " POD_IP,
       W.ns[NET], W.ns[B]);
}

Test(criu_tcp, an_established_connection_survives_a_move_to_another_network_namespace)
{
  start_world();
  start_server();
  connect_client();
  for(long i = 1; i <= 3; i++)
    cr_assert_eq(ask_counter("inc"), i);
  ino_t ino_a = netns_ino(ns_path(A)), ino_b = netns_ino(ns_path(B));
  cr_assert_eq(ask_netns(), ino_a);

  /* the final dump: the source ends, its connection locked in A (criu's nftables table) */
  char images[128];
  images_dir(images, sizeof(images), "move");
  struct criu_opts o = dump_opts(images, false);
  struct criu_result r;
  long t0 = mono_ms();
  gw_rc rc = criu_dump(&o, &r);
  cr_assert_eq(rc, GW_OK, "criu dump: %s (exit %d):\n%s", gw_strerror(rc), r.status, r.errors);
  long dump_ms = r.elapsed_ms;
  criu_result_release(&r);
  int st;
  cr_assert_eq(waitpid(W.server, &st, 0), W.server);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the source was not ended by criu");
  W.server = 0;
  cr_assert(has_tcp_stream_image(images), "the checkpoint holds no established connection");
  must("nsenter --net=%s nft list tables | grep -q CRIU-", ns_path(A)); /* A stays locked */

  /* a request while the pod is away: it waits in the client's send queue */
  send_line("inc");
  move_address();

  char pidfile[160];
  snprintf(pidfile, sizeof(pidfile), "%s/restored.pid", W.dir);
  struct criu_opts ro = {.images_dir = images, .netns = ns_path(B), .pidfile = pidfile,
                         .verbosity = 4, .tcp_established = true, .timeout_ms = 30000};
  rc = criu_restore(&ro, &r);
  cr_assert_eq(rc, GW_OK, "criu restore: %s (exit %d):\n%s", gw_strerror(rc), r.status, r.errors);
  long restore_ms = r.elapsed_ms, restored_at = mono_ms();
  criu_result_release(&r);
  must("nsenter --net=%s nft delete table " SHIELD, ns_path(B));

  /* the request sent during the move is answered by the restored copy, on the same socket */
  char reply[64];
  recv_line(reply, sizeof(reply), 15000);
  long answered = mono_ms();
  cr_assert_str_eq(reply, "4", "the counter did not go on from 3");
  for(long i = 5; i <= 7; i++)
    cr_assert_eq(ask_counter("inc"), i);

  /* the restored process runs in B, in a pid namespace of its own */
  FILE *f = fopen(pidfile, "r");
  long pid = 0;
  cr_assert(f && fscanf(f, "%ld", &pid) == 1 && pid > 0, "no pid in %s", pidfile);
  fclose(f);
  char p[64];
  snprintf(p, sizeof(p), "/proc/%ld/ns/net", pid);
  cr_assert_eq(netns_ino(p), ino_b, "the restored process is not in node-b's namespace");
  snprintf(p, sizeof(p), "/proc/%ld/ns/pid", pid);
  cr_assert_neq(netns_ino(p), netns_ino("/proc/self/ns/pid"), "restored into our pid namespace");
  cr_assert_eq(ask_netns(), ino_b);
  assert_connection_sound();

  cr_log_info("move: dump %ld ms, restore %ld ms, images %ld bytes, frozen (dump start to "
              "restored) %ld ms, the in-flight request answered %ld ms after the dump started "
              "(%ld ms after the restore: the client's retransmission timer)",
              dump_ms, restore_ms, images_size(images), restored_at - t0, answered - t0,
              answered - restored_at);
}

Test(criu_tcp, the_node_reports_its_criu_features)
{
  cr_assert_eq(access(criu_path(), X_OK), 0,
               "no CRIU at %s: run `make deps` (tests/criu/install.sh installs it; CI does)",
               criu_path());
  struct criu_features f;
  gw_rc rc = criu_check_features(NULL, &f);
  cr_assert_eq(rc, GW_OK, "'%s --version' named no version: %s", criu_path(), gw_strerror(rc));
  int major = 0, minor = 0;
  cr_assert_eq(sscanf(f.version, "%d.%d", &major, &minor), 2, "version '%s'", f.version);
  cr_assert(major > 4 || (major == 4 && minor >= 2),
            "CRIU %s cannot dump TCP sockets on Linux 6.16 and later; run `make deps`", f.version);
  cr_log_info("criu %s: mem_dirty_track %d, uffd %d, uffd-noncoop %d, tcp_half_closed %d",
              f.version, f.mem_dirty_track, f.uffd, f.uffd_noncoop, f.tcp_half_closed);
}

/* criu_run's promises (criu.h), with a shell standing in for criu. */
Test(criu_tcp, criu_run_reports_status_errors_and_timeouts)
{
  struct criu_result r;
  char *failing[] = {"/bin/sh", "-c",
                     "echo 'Error (util.c:1): Can'\\''t setup RLIMIT_NOFILE for self'; "
                     "echo 'Error (a.c:1): first'; echo 'Error (b.c:2): second'; echo done; exit 3",
                     NULL};
  cr_assert_eq(criu_run(failing, NULL, NULL, 5000, &r), GW_EIO);
  cr_assert_eq(r.status, 3);
  cr_assert_str_eq(r.errors, "Error (a.c:1): first\nError (b.c:2): second");
  cr_assert(strstr(r.output, "done\n"), "%s", r.output);
  criu_result_release(&r);

  /* the log file, when it names errors, is preferred to the output */
  char log[] = "/tmp/godwit-criu-log-XXXXXX";
  int fd = mkstemp(log);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "(00.1) Error (c.c:3): from the log\n", 35), 35);
  close(fd);
  cr_assert_eq(criu_run(failing, NULL, log, 5000, &r), GW_EIO);
  unlink(log);
  cr_assert_str_eq(r.errors, "(00.1) Error (c.c:3): from the log");
  criu_result_release(&r);

  /* a helper left holding the output open does not hold the caller */
  char *helper[] = {"/bin/sh", "-c", "sleep 3 & echo started", NULL};
  cr_assert_eq(criu_run(helper, NULL, NULL, 5000, &r), GW_OK);
  cr_assert_lt(r.elapsed_ms, 2000);
  cr_assert_str_eq(r.output, "started\n");
  criu_result_release(&r);

  char *slow[] = {"/bin/sh", "-c", "sleep 10", NULL};
  cr_assert_eq(criu_run(slow, NULL, NULL, 200, &r), GW_ETIMEOUT);
  cr_assert(r.timed_out && r.status == -1 && r.elapsed_ms < 2000, "%ld ms", r.elapsed_ms);
  criu_result_release(&r);

  char *missing[] = {"/nonexistent/criu", "--version", NULL};
  cr_assert_eq(criu_run(missing, NULL, NULL, 5000, &r), GW_ENOTFOUND);
  cr_assert(strstr(r.errors, "make deps"), "%s", r.errors);
  criu_result_release(&r);

  char *ok[] = {"/bin/true", NULL};
  cr_assert_eq(criu_run(ok, "/nonexistent/netns", NULL, 5000, &r), GW_ENOTFOUND);
  cr_assert(strstr(r.errors, "/nonexistent/netns"), "%s", r.errors);
  criu_result_release(&r);
}
