/*
 * podnet.h: the local cluster's pod network (podnet.c), the share of a CNI plugin that worker
 * nodes need so that a Pod is a process tree with an address of its own
 * (docs/dev/localcluster.md, "Worker nodes and the pod network").
 *
 *   198.18.K.0/24 (RFC 2544's benchmarking range, never routed on a real network)
 *   bridge gwbrK 198.18.K.1/24 in the machine's network namespace: the machine reaches every
 *   Pod address directly, as a node reaches Pods through its CNI bridge
 *     +-- gwKvN ==veth== eth0 198.18.K.N/24   netns gwK-N (/run/netns): one Pod's sandbox
 *
 * K is one local cluster: the primary job runner takes the first K whose bridge it can create
 * (creating the link is the lock), records its pid in /run/godwit-podnet/K, and removes the
 * bridge when it stops; a K whose recorded owner is dead is swept and taken again. Each worker
 * node hands out the addresses N of its own range (node i of n gets a disjoint slice of 2..254),
 * so nodes never need to agree on anything at run time. Everything here runs `ip` (iproute2) as
 * root; the functions say what failed, with `ip`'s own words.
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

/* A worker node's view: its K and address range, and which addresses are taken. */
struct podnet_node {
  int k; /* -1: this node runs Pods in the machine's namespaces */
  int first, last;
  bool used[256];
};

/* A Pod's sandbox: its network namespace and address. */
struct podnet_sandbox {
  int n; /* 0: none */
  char ip[16];
  char netns[32];      /* gwK-N */
  char netns_path[48]; /* /run/netns/gwK-N */
};

/* Sweeps sandboxes of the node's range that a previous run left (best effort). */
void podnet_node_sweep(const struct podnet_node *nd);
/* Takes a free address (want: a particular one, or NULL) and builds the sandbox. GW_OK;
 * GW_ECONFLICT when want is taken or outside the range; GW_ETOOBIG when the range is full;
 * GW_EIO with err. */
gw_rc podnet_sandbox_create(struct podnet_node *nd, const char *want, struct podnet_sandbox *sb,
                            char *err, size_t errlen) GW_MUST_CHECK;
/* Removes the sandbox and frees its address. */
void podnet_sandbox_destroy(struct podnet_node *nd, struct podnet_sandbox *sb);

/* Runs a shell command line; its output goes to err (cut) when it fails. Its exit status. */
int podnet_sh(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
