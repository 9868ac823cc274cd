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

/* Removes every sandbox gwK-* and the bridge of K. */
static void sweep_k(int k)
{
  char prefix[16];
  jr_fmt(prefix, sizeof(prefix), "gw%d-", k);
  DIR *d = opendir("/run/netns");
  struct dirent *e;
  while(d && (e = readdir(d)))
    if(!strncmp(e->d_name, prefix, strlen(prefix)))
      podnet_sh(NULL, 0, "ip netns del '%s'", e->d_name);
  if(d)
    closedir(d);
  podnet_sh(NULL, 0, "ip link del gwbr%d 2>/dev/null || true", k);
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

void podnet_node_sweep(const struct podnet_node *nd)
{
  if(nd->k < 0)
    return;
  for(int n = nd->first; n <= nd->last; n++) {
    char path[64];
    jr_fmt(path, sizeof(path), "/run/netns/gw%d-%d", nd->k, n);
    if(!access(path, F_OK))
      podnet_sh(NULL, 0, "ip netns del gw%d-%d", nd->k, n);
  }
}

gw_rc podnet_sandbox_create(struct podnet_node *nd, const char *want, struct podnet_sandbox *sb,
                            char *err, size_t errlen)
{
  memset(sb, 0, sizeof(*sb));
  int n = 0;
  if(want) {
    char prefix[16];
    int len = jr_fmt(prefix, sizeof(prefix), PODNET_PREFIX ".%d.", nd->k);
    char *end = NULL;
    long v = strncmp(want, prefix, (size_t)len) ? -1 : strtol(want + len, &end, 10);
    if(v < nd->first || v > nd->last || (end && *end) || nd->used[v]) {
      jr_fmt(err, errlen, "address %s is not free on this node (its range: " PODNET_PREFIX
             ".%d.%d-%d)", want, nd->k, nd->first, nd->last);
      return GW_ECONFLICT;
    }
    n = (int)v;
  } else {
    for(int i = nd->first; i <= nd->last && !n; i++)
      if(!nd->used[i])
        n = i;
    if(!n) {
      jr_fmt(err, errlen, "no free pod address on this node (" PODNET_PREFIX ".%d.%d-%d)",
             nd->k, nd->first, nd->last);
      return GW_ETOOBIG;
    }
  }
  int k = nd->k;
  char why[512];
  if(podnet_sh(why, sizeof(why),
               "ip netns del gw%d-%d 2>/dev/null; ip netns add gw%d-%d && "
               "ip link add gw%dv%d type veth peer name eth0 netns gw%d-%d && "
               "ip link set gw%dv%d master gwbr%d up && ip -n gw%d-%d link set lo up && "
               "ip -n gw%d-%d addr add " PODNET_PREFIX ".%d.%d/24 dev eth0 && "
               "ip -n gw%d-%d link set eth0 up && "
               "ip -n gw%d-%d route add default via " PODNET_PREFIX ".%d.1",
               k, n, k, n, k, n, k, n, k, n, k, k, n, k, n, k, n, k, n, k, n, k)) {
    podnet_sh(NULL, 0, "ip netns del gw%d-%d 2>/dev/null; ip link del gw%dv%d 2>/dev/null", k,
              n, k, n);
    jr_fmt(err, errlen, "cannot create the pod's network namespace: %s", why);
    return GW_EIO;
  }
  nd->used[n] = true;
  sb->n = n;
  jr_fmt(sb->ip, sizeof(sb->ip), PODNET_PREFIX ".%d.%d", k, n);
  jr_fmt(sb->netns, sizeof(sb->netns), "gw%d-%d", k, n);
  jr_fmt(sb->netns_path, sizeof(sb->netns_path), "/run/netns/gw%d-%d", k, n);
  return GW_OK;
}

void podnet_sandbox_destroy(struct podnet_node *nd, struct podnet_sandbox *sb)
{
  if(!sb->n)
    return;
  char why[512];
  if(podnet_sh(why, sizeof(why), "ip netns del %s", sb->netns))
    log_kv(LOG_WARN, "pod network namespace not removed", "netns", sb->netns, "error", why,
           LOG_END);
  podnet_sh(NULL, 0, "ip link del gw%dv%d 2>/dev/null || true", nd->k, sb->n);
  nd->used[sb->n] = false;
  memset(sb, 0, sizeof(*sb));
}
