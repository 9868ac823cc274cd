/* podnet.c: the local cluster's pod network: one bridge per cluster, one network namespace and
 * veth pair per Pod (podnet.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jr.h"
#include "log.h"
#include "nodeagent/netns.h"
#include "podnet.h"

int podnet_sh(char *err, size_t errlen, const char *fmt, ...)
{
  char cmd[2048], full[2100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  jr_fmt(full, sizeof(full), "{ %s; } 2>&1", cmd);
  FILE *f = popen(full, "r");
  if(!f) {
    if(err)
      jr_fmt(err, errlen, "cannot run a shell: %s", strerror(errno));
    return -1;
  }
  char out[1024];
  size_t n = fread(out, 1, sizeof(out) - 1, f);
  out[n] = 0;
  char rest[256];
  while(fread(rest, 1, sizeof(rest), f) > 0)
    ;
  int st = pclose(f);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if(code && err) {
    out[strcspn(out, "\n")] = 0; /* the first line says what failed */
    jr_fmt(err, errlen, "%s", *out ? out : "failed");
  }
  return code;
}

/* Whether the pid recorded in PODNET_OWNERS/k is a live process. */
static bool owner_alive(int k)
{
  char path[64], buf[32] = "";
  jr_fmt(path, sizeof(path), PODNET_OWNERS "/%d", k);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return false;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  long pid = strtol(buf, NULL, 10);
  if(pid <= 0) /* being written: treat as alive, the next K will do */
    return true;
  return !kill((pid_t)pid, 0) || errno == EPERM;
}

/* Removes the sandboxes whose names start with prefix. */
static void sweep_netns(const char *prefix)
{
  DIR *d = opendir("/run/netns");
  struct dirent *e;
  while(d && (e = readdir(d)))
    if(!strncmp(e->d_name, prefix, strlen(prefix)))
      podnet_sh(NULL, 0, "ip netns pids '%s' | xargs -r kill -9; ip netns del '%s'", e->d_name,
                e->d_name);
  if(d)
    closedir(d);
}

/* Removes every sandbox gwK.*, the address records and the bridge of K. */
static void sweep_k(int k)
{
  char prefix[16];
  jr_fmt(prefix, sizeof(prefix), "gw%d.", k);
  sweep_netns(prefix);
  podnet_sh(NULL, 0, "rm -rf " PODNET_OWNERS "/%d.addr; ip link del gwbr%d 2>/dev/null || true",
            k, k);
}

gw_rc podnet_cluster_create(struct podnet_cluster *c, char *err, size_t errlen)
{
  c->k = -1;
  c->bridge[0] = 0;
  if(mkdir(PODNET_OWNERS, 0755) && errno != EEXIST) {
    jr_fmt(err, errlen, "cannot create %s: %s", PODNET_OWNERS, strerror(errno));
    return GW_EIO;
  }
  for(int k = 0; k < 256; k++) {
    char path[64];
    jr_fmt(path, sizeof(path), PODNET_OWNERS "/%d", k);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if(fd < 0 && errno == EEXIST && !owner_alive(k)) {
      unlink(path); /* a cluster that died without stopping: its K is free again */
      fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if(fd < 0)
      continue;
    char pid[24];
    int n = jr_fmt(pid, sizeof(pid), "%ld\n", (long)getpid());
    ssize_t w = write(fd, pid, (size_t)n);
    close(fd);
    if(w != n) {
      unlink(path);
      jr_fmt(err, errlen, "cannot write %s", path);
      return GW_EIO;
    }
    sweep_k(k);
    char why[512];
    if(podnet_sh(why, sizeof(why),
                 "ip link add gwbr%d type bridge && ip addr add " PODNET_PREFIX ".%d.1/24 dev "
                 "gwbr%d && ip link set gwbr%d up",
                 k, k, k, k)) {
      podnet_sh(NULL, 0, "ip link del gwbr%d 2>/dev/null", k);
      unlink(path);
      jr_fmt(err, errlen, "cannot create the pod network's bridge gwbr%d: %s (ip, from "
             "iproute2, as root)", k, why);
      return GW_EIO;
    }
    c->k = k;
    jr_fmt(c->bridge, sizeof(c->bridge), "gwbr%d", k);
    return GW_OK;
  }
  jr_fmt(err, errlen, "no free pod network: 256 local clusters hold one (%s)", PODNET_OWNERS);
  return GW_ETOOBIG;
}

void podnet_cluster_destroy(struct podnet_cluster *c)
{
  if(c->k < 0)
    return;
  sweep_k(c->k);
  char path[64];
  jr_fmt(path, sizeof(path), PODNET_OWNERS "/%d", c->k);
  unlink(path);
  c->k = -1;
}

/* The record of address n: "UID NODE". */
static void addr_path(int k, int n, char *buf, size_t len)
{
  jr_fmt(buf, len, PODNET_OWNERS "/%d.addr/%d", k, n);
}

/* Writes the record of address n; exclusive: only when nobody holds it. 0, or -1. */
static int addr_take(const struct podnet_node *nd, int n, const char *uid8, bool exclusive)
{
  char dir[64], path[64], rec[128];
  jr_fmt(dir, sizeof(dir), PODNET_OWNERS "/%d.addr", nd->k);
  if(mkdir(dir, 0755) && errno != EEXIST)
    return -1;
  addr_path(nd->k, n, path, sizeof(path));
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC), 0644);
  if(fd < 0)
    return -1;
  int len = jr_fmt(rec, sizeof(rec), "%s %s\n", uid8, nd->node);
  ssize_t w = write(fd, rec, (size_t)len);
  close(fd);
  return w == len ? 0 : -1;
}

/* The record's holder into uid8 and node ("" when none). */
static void addr_holder(int k, int n, char *uid8, size_t ulen, char *node, size_t nlen)
{
  char path[64];
  addr_path(k, n, path, sizeof(path));
  char *rec = jr_read_file(path, 256, NULL);
  *uid8 = *node = 0;
  if(rec) {
    char u[16] = "", nd[80] = "";
    if(sscanf(rec, "%15s %79s", u, nd) == 2) {
      jr_fmt(uid8, ulen, "%s", u);
      jr_fmt(node, nlen, "%s", nd);
    }
    free(rec);
  }
}

void podnet_node_sweep(const struct podnet_node *nd)
{
  if(nd->k < 0)
    return;
  char prefix[96];
  jr_fmt(prefix, sizeof(prefix), "gw%d.%s.", nd->k, nd->node);
  sweep_netns(prefix);
  for(int n = 2; n <= 254; n++) {
    char u[16], node[80], path[64];
    addr_holder(nd->k, n, u, sizeof(u), node, sizeof(node));
    addr_path(nd->k, n, path, sizeof(path));
    if(!strcmp(node, nd->node))
      unlink(path);
  }
}

gw_rc podnet_sandbox_create(struct podnet_node *nd, const struct podnet_want *want,
                            const char *uid, struct podnet_sandbox *sb, char *err,
                            size_t errlen)
{
  memset(sb, 0, sizeof(*sb));
  size_t u = 0;
  for(const char *c = uid; *c && u < 8; c++) /* uids are hex with dashes */
    if(*c != '-')
      sb->uid8[u++] = *c;
  sb->uid8[u] = 0;
  int n = 0, k = nd->k;
  if(want && want->ip) {
    char prefix[16];
    int len = jr_fmt(prefix, sizeof(prefix), PODNET_PREFIX ".%d.", k);
    char *end = NULL;
    long v = strncmp(want->ip, prefix, (size_t)len) ? -1 : strtol(want->ip + len, &end, 10);
    if(v < 2 || v > 254 || (end && *end) || addr_take(nd, (int)v, sb->uid8, false)) {
      jr_fmt(err, errlen, "address %s is not on this cluster's pod network (" PODNET_PREFIX
             ".%d.2-254)", want->ip, k);
      return GW_ECONFLICT;
    }
    n = (int)v;
  } else {
    for(int i = nd->first; i <= nd->last && !n; i++)
      if(!addr_take(nd, i, sb->uid8, true))
        n = i;
    if(!n) {
      jr_fmt(err, errlen, "no free pod address on this node (" PODNET_PREFIX ".%d.%d-%d)", k,
             nd->first, nd->last);
      return GW_ETOOBIG;
    }
  }
  sb->n = n;
  jr_fmt(sb->ip, sizeof(sb->ip), PODNET_PREFIX ".%d.%d", k, n);
  jr_fmt(sb->netns, sizeof(sb->netns), "gw%d.%s.%s", k, nd->node, sb->uid8);
  jr_fmt(sb->netns_path, sizeof(sb->netns_path), "/run/netns/%s", sb->netns);
  char why[512];
  const char *ns = sb->netns;
  /* IPv6 off: a link coming up sends nothing on its own (no DAD, no router solicitation), so a
   * shielded sandbox is silent and the bridge never learns its MAC address early. */
  if(podnet_sh(why, sizeof(why),
               "ip netns del %s 2>/dev/null; ip netns add %s && "
               "ip netns exec %s sh -c 'for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do "
               "echo 1 > $f; done' 2>/dev/null; true",
               ns, ns, ns)) {
    podnet_sandbox_destroy(nd, sb);
    jr_fmt(err, errlen, "cannot create the pod's network namespace: %s", why);
    return GW_EIO;
  }
  if(want && want->shielded && na_shield_raise(sb->netns_path, true, why, sizeof(why))) {
    podnet_sandbox_destroy(nd, sb);
    jr_fmt(err, errlen, "cannot shield the pod's network namespace: %s", why);
    return GW_EIO;
  }
  char mac[48] = "";
  if(want && want->mac) { /* it goes into a command line: exactly xx:xx:xx:xx:xx:xx */
    bool ok = strlen(want->mac) == 17;
    for(size_t i = 0; ok && i < 17; i++)
      ok = i % 3 == 2 ? want->mac[i] == ':' : strchr("0123456789abcdefABCDEF", want->mac[i]) != NULL;
    if(!ok) {
      podnet_sandbox_destroy(nd, sb);
      jr_fmt(err, errlen, "\"%s\" is not a MAC address", want->mac);
      return GW_EINVAL;
    }
    jr_fmt(mac, sizeof(mac), " address %s", want->mac);
  }
  if(podnet_sh(why, sizeof(why),
               "ip link add g%dx%s type veth peer name eth0%s netns %s && "
               "ip link set g%dx%s master gwbr%d up && ip -n %s link set lo up && "
               "ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up && "
               "ip -n %s route add default via " PODNET_PREFIX ".%d.1",
               k, sb->uid8, mac, ns, k, sb->uid8, k, ns, ns, sb->ip, ns, ns, k)) {
    podnet_sandbox_destroy(nd, sb);
    jr_fmt(err, errlen, "cannot create the pod's network: %s", why);
    return GW_EIO;
  }
  return GW_OK;
}

void podnet_sandbox_destroy(struct podnet_node *nd, struct podnet_sandbox *sb)
{
  if(!sb->n)
    return;
  char why[512];
  /* What still runs in it goes with it, as a runtime's sandbox takes its processes along */
  if(podnet_sh(why, sizeof(why), "ip netns pids %s 2>/dev/null | xargs -r kill -9; "
               "ip netns del %s 2>/dev/null || ! test -e /run/netns/%s",
               sb->netns, sb->netns, sb->netns))
    log_kv(LOG_WARN, "pod network namespace not removed", "netns", sb->netns, "error", why,
           LOG_END);
  podnet_sh(NULL, 0, "ip link del g%dx%s 2>/dev/null || true", nd->k, sb->uid8);
  char u[16], node[80];
  addr_holder(nd->k, sb->n, u, sizeof(u), node, sizeof(node));
  if(!strcmp(u, sb->uid8)) { /* the address was not taken over by a restored copy */
    char path[64];
    addr_path(nd->k, sb->n, path, sizeof(path));
    unlink(path);
  }
  memset(sb, 0, sizeof(*sb));
}
