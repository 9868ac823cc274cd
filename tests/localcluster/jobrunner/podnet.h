/*
 * podnet.h: the local cluster's pod network (podnet.c), the share of a CNI plugin that worker
 * nodes need so that a Pod is a process tree with an address of its own
 * (docs/dev/localcluster.md, "Worker nodes and the pod network").
 *
 *   198.18.K.0/24 (RFC 2544's benchmarking range, never routed on a real network)
 *   bridge gwbrK 198.18.K.1/24 in the machine's network namespace: the machine reaches every
 *   Pod address directly, as a node reaches Pods through its CNI bridge
 *     +-- gKxUID8 ==veth== eth0 198.18.K.N/24   netns gwK.NODE.UID8 (/run/netns): one Pod
 *
 * K is one local cluster: the primary job runner takes the first K whose record
 * /run/godwit-podnet/K it can create exclusively (the lock, holding its pid), and removes the
 * bridge when it stops; a K whose recorded owner is dead is swept and taken again. Each worker
 * node hands out the addresses N of its own range (node i of n gets a disjoint slice of 2..254)
 * and records each in /run/godwit-podnet/K.addr/N ("UID NODE"), so that an address a migrated
 * Pod took to another node is not handed out again by its first node. A sandbox asked for a
 * given address and MAC (a PodMigration's restored Pod: the address moves with the Pod, as a
 * CNI's preserve mode does) takes the record over and starts shielded (controller/nodeagent/
 * netns.h): it answers nothing, not even ARP, until the node agent lowers the shield.
 * Everything here runs `ip` (iproute2) and `nft` as root; failures say what failed, with the
 * tools' own words.
 */
#ifndef GW_JR_PODNET_H
#define GW_JR_PODNET_H

#include <stdbool.h>

#include "rc.h"

#define PODNET_PREFIX "198.18"
#define PODNET_OWNERS "/run/godwit-podnet"

/* The cluster's network, made by the primary job runner. */
struct podnet_cluster {
  int k; /* -1: none */
  char bridge[16];
};

/* Creates the bridge of a free K. GW_OK, or an rc with err. */
gw_rc podnet_cluster_create(struct podnet_cluster *c, char *err, size_t errlen) GW_MUST_CHECK;
/* Removes the bridge and every sandbox left in it (best effort). */
void podnet_cluster_destroy(struct podnet_cluster *c);

/* A worker node's view: its K, name and address range. */
struct podnet_node {
  int k; /* -1: this node runs Pods in the machine's namespaces */
  char node[64];
  int first, last;
};

/* What a sandbox is asked for: a restored Pod keeps its address and MAC, and starts shielded. */
struct podnet_want {
  const char *ip;  /* NULL: the next free address of the node's range */
  const char *mac; /* NULL: the kernel's */
  bool shielded;
};

/* A Pod's sandbox: its network namespace and address. */
struct podnet_sandbox {
  int n; /* 0: none */
  char uid8[9];
  char ip[16];
  char netns[96];       /* gwK.NODE.UID8 */
  char netns_path[112]; /* /run/netns/gwK.NODE.UID8 */
};

/* Sweeps sandboxes and address records of this node that a previous run left (best effort). */
void podnet_node_sweep(const struct podnet_node *nd);
/* Takes an address and builds the sandbox of the Pod with that uid. GW_OK; GW_ECONFLICT when
 * want->ip is not on the pod network; GW_ETOOBIG when the range is full; GW_EIO with err. */
gw_rc podnet_sandbox_create(struct podnet_node *nd, const struct podnet_want *want,
                            const char *uid, struct podnet_sandbox *sb, char *err,
                            size_t errlen) GW_MUST_CHECK;
/* Removes the sandbox and frees its address. */
void podnet_sandbox_destroy(struct podnet_node *nd, struct podnet_sandbox *sb);

/* Runs a shell command line; its output goes to err (cut) when it fails. Its exit status. */
int podnet_sh(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
