/* netns.c: the shield, the link and the probe inside a Pod's network namespace (netns.h). */
#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "criu.h"

#define TOOL_TIMEOUT_MS 10000L

static const char *tool(const char *name)
{
  static char found[2][32];
  size_t i = strcmp(name, "ip") ? 1 : 0;
  if(!found[i][0]) {
    snprintf(found[i], sizeof(found[i]), "/usr/sbin/%s", name);
    if(access(found[i], X_OK))
      snprintf(found[i], sizeof(found[i]), "/sbin/%s", name);
  }
  return found[i];
}

/* Runs argv in netns; GW_OK, or the tool's last error line in err. */
static gw_rc run(char *const argv[], const char *netns, char *err, size_t errlen)
{
  struct criu_result r;
  gw_rc rc = criu_run(argv, netns, NULL, TOOL_TIMEOUT_MS, &r);
  if(rc && err) {
    const char *why = r.errors[0] ? r.errors : r.output && *r.output ? r.output : gw_strerror(rc);
    snprintf(err, errlen, "%s: %.*s", argv[1] ? argv[1] : argv[0], (int)strcspn(why, "\n"), why);
  }
  criu_result_release(&r);
  return rc;
}

/* "add" then "delete" makes removing a table idempotent. */
#define DROP_TABLES                                                                          \
  "add table inet " NA_SHIELD_TABLE "; delete table inet " NA_SHIELD_TABLE "; "              \
  "add table arp " NA_SHIELD_TABLE "; delete table arp " NA_SHIELD_TABLE "; "
#define TCP_SHIELD                                                                           \
  "add table inet " NA_SHIELD_TABLE "; "                                                     \
  "add chain inet " NA_SHIELD_TABLE " in { type filter hook input priority -400; }; "        \
  "add chain inet " NA_SHIELD_TABLE " out { type filter hook output priority -400; }; "      \
  "add rule inet " NA_SHIELD_TABLE " in iif != lo meta l4proto tcp drop; "                   \
  "add rule inet " NA_SHIELD_TABLE " out oif != lo meta l4proto tcp drop; "
#define ARP_SHIELD                                                                           \
  "add table arp " NA_SHIELD_TABLE "; "                                                      \
  "add chain arp " NA_SHIELD_TABLE " in { type filter hook input priority -400; policy drop; }; " \
  "add chain arp " NA_SHIELD_TABLE " out { type filter hook output priority -400; policy drop; }; "

gw_rc na_shield_raise(const char *netns, bool arp, char *err, size_t errlen)
{
  /* One nft run is one transaction: the old shield goes and the new one comes at once. */
  char *script = arp ? DROP_TABLES TCP_SHIELD ARP_SHIELD : DROP_TABLES TCP_SHIELD;
  char *argv[] = { (char *)tool("nft"), script, NULL };
  return run(argv, netns, err, errlen);
}

gw_rc na_shield_lower(const char *netns, char *err, size_t errlen)
{
  char *argv[] = { (char *)tool("nft"), DROP_TABLES, NULL };
  return run(argv, netns, err, errlen);
}

bool na_shield_up(const char *netns)
{
  char *argv[] = { (char *)tool("nft"), "list", "table", "inet", NA_SHIELD_TABLE, NULL };
  return run(argv, netns, NULL, 0) == GW_OK;
}

gw_rc na_link_set(const char *netns, const char *dev, bool up, char *err, size_t errlen)
{
  char *argv[] = { (char *)tool("ip"), "link", "set", (char *)dev, up ? "up" : "down", NULL };
  return run(argv, netns, err, errlen);
}

gw_rc na_link_addr(const char *netns, const char *dev, char *mac, size_t maclen, char *ip,
                   size_t iplen, char *err, size_t errlen)
{
  char *argv[] = { (char *)tool("ip"), "-o", "-4", "addr", "show", "dev", (char *)dev, NULL };
  char *argl[] = { (char *)tool("ip"), "-o", "link", "show", "dev", (char *)dev, NULL };
  struct criu_result r = { 0 }, l = { 0 };
  gw_rc rc = criu_run(argv, netns, NULL, TOOL_TIMEOUT_MS, &r);
  if(!rc)
    rc = criu_run(argl, netns, NULL, TOOL_TIMEOUT_MS, &l);
  const char *inet = !rc && r.output ? strstr(r.output, " inet ") : NULL;
  const char *ether = !rc && l.output ? strstr(l.output, "link/ether ") : NULL;
  if(inet)
    snprintf(ip, iplen, "%.*s", (int)strcspn(inet + 6, "/ \n"), inet + 6);
  if(ether)
    snprintf(mac, maclen, "%.*s", (int)strcspn(ether + 11, " \n"), ether + 11);
  if(!inet || !ether) {
    snprintf(err, errlen, "no IPv4 address or MAC address on %s in %s", dev, netns);
    rc = rc ? rc : GW_ENOTFOUND;
  }
  criu_result_release(&r);
  criu_result_release(&l);
  return rc;
}

/* ---- the probe: a child in the namespace (system calls only after fork) ---- */
enum { P_OK, P_NETNS, P_CONNECT, P_TIMEOUT, P_HTTP, P_IO };

static long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits for fd to be ready for events until deadline; false on timeout. */
static bool ready(int fd, short events, long deadline)
{
  for(;;) {
    long left = deadline - now_ms();
    if(left <= 0)
      return false;
    struct pollfd p = { .fd = fd, .events = events };
    int n = poll(&p, 1, (int)left);
    if(n > 0)
      return true;
    if(n < 0 && errno != EINTR)
      return false;
  }
}

__attribute__((noreturn)) static void probe_child(const char *netns, struct sockaddr_in *sa,
                                                  const char *req, size_t reqlen,
                                                  long deadline, int report)
{
  int code = P_OK, err = 0;
  int nfd = open(netns, O_RDONLY | O_CLOEXEC);
  if(nfd < 0 || setns(nfd, CLONE_NEWNET)) {
    code = P_NETNS;
    err = errno;
    goto out;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if(fd < 0 || (connect(fd, (struct sockaddr *)sa, sizeof(*sa)) && errno != EINPROGRESS)) {
    code = P_CONNECT;
    err = errno;
    goto out;
  }
  if(!ready(fd, POLLOUT, deadline)) {
    code = P_TIMEOUT;
    goto out;
  }
  socklen_t l = sizeof(err);
  if(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
    code = P_CONNECT;
    goto out;
  }
  if(reqlen) {
    if(write(fd, req, reqlen) != (ssize_t)reqlen) {
      code = P_IO;
      err = errno;
      goto out;
    }
    char buf[64];
    size_t got = 0;
    while(got < 12) { /* "HTTP/1.x NNN" */
      if(!ready(fd, POLLIN, deadline)) {
        code = P_TIMEOUT;
        goto out;
      }
      ssize_t n = read(fd, buf + got, sizeof(buf) - got);
      if(n <= 0) {
        code = P_IO;
        err = n < 0 ? errno : 0;
        goto out;
      }
      got += (size_t)n;
    }
    int status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    if(memcmp(buf, "HTTP/1.", 7) || status < 200 || status >= 400) {
      code = P_HTTP;
      err = status;
    }
  }
out:;
  int msg[2] = { code, err };
  ssize_t w = write(report, msg, sizeof(msg));
  (void)w;
  _exit(0);
}

gw_rc na_probe_run(const char *netns, const struct na_probe *p, char *err, size_t errlen)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)p->port) };
  if(!p->address || inet_pton(AF_INET, p->address, &sa.sin_addr) != 1 || p->port <= 0 ||
     p->port > 65535) {
    snprintf(err, errlen, "cannot probe '%s' port %d", p->address ? p->address : "", p->port);
    return GW_EINVAL;
  }
  if(p->https) {
    snprintf(err, errlen, "HTTPS probes are not supported by this agent: use HTTP or TCPSocket");
    return GW_EUNSUPPORTED;
  }
  char req[2300] = "";
  size_t reqlen = 0;
  if(p->http_path) {
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s:%d\r\nUser-Agent: "
                     "godwit-nodeagent\r\nConnection: close\r\n\r\n", p->http_path, p->address,
                     p->port);
    if(n < 0 || (size_t)n >= sizeof(req)) {
      snprintf(err, errlen, "the probe's path is too long");
      return GW_EINVAL;
    }
    reqlen = (size_t)n;
  }
  long deadline = now_ms() + (p->timeout_ms > 0 ? p->timeout_ms : 1000);
  int pfd[2];
  if(pipe2(pfd, O_CLOEXEC))
    return GW_EIO;
  pid_t c = fork();
  if(c < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return GW_EIO;
  }
  if(!c)
    probe_child(netns, &sa, req, reqlen, deadline, pfd[1]);
  close(pfd[1]);
  int msg[2] = { P_IO, 0 };
  ssize_t n;
  do
    n = read(pfd[0], msg, sizeof(msg));
  while(n < 0 && errno == EINTR);
  close(pfd[0]);
  while(waitpid(c, NULL, 0) < 0 && errno == EINTR)
    ;
  if(n != (ssize_t)sizeof(msg))
    msg[0] = P_IO;
  const char *what = p->http_path ? "HTTP GET" : "TCP connection";
  switch(msg[0]) {
  case P_OK:
    return GW_OK;
  case P_NETNS:
    snprintf(err, errlen, "cannot enter the network namespace %s: %s", netns, strerror(msg[1]));
    return GW_ENOTFOUND;
  case P_CONNECT:
    snprintf(err, errlen, "%s to %s:%d: %s", what, p->address, p->port,
             strerror(msg[1] ? msg[1] : ECONNREFUSED));
    return GW_ECONNECT;
  case P_TIMEOUT:
    snprintf(err, errlen, "%s to %s:%d: no answer within %ld ms", what, p->address, p->port,
             p->timeout_ms);
    return GW_ETIMEOUT;
  case P_HTTP:
    snprintf(err, errlen, "HTTP GET http://%s:%d%s answered %d", p->address, p->port,
             p->http_path, msg[1]);
    return GW_EDENIED;
  default:
    snprintf(err, errlen, "%s to %s:%d: %s", what, p->address, p->port,
             msg[1] ? strerror(msg[1]) : "the connection closed");
    return GW_EIO;
  }
}
