/*
 * harness.h: a local cluster for one test (Criterion), started with tests/localcluster/up and
 * stopped with tests/localcluster/down, in a fresh directory.
 *
 *   struct cl c;
 *   cl_start(&c, CL_WEBHOOK | CL_JOBRUNNER);      // the API server always runs
 *   struct kube_client *k = cl_client(&c, "alice");
 *   char *out; int rc = cl_kubectl(&c, "admin", &out, "get migrations -o json");
 *   cl_stop(&c);
 *
 * Every process started dies with the test process even when an assertion fails.
 */
#ifndef GW_CLUSTER_HARNESS_H
#define GW_CLUSTER_HARNESS_H

#include <sys/types.h>

#include "kube/kube.h"

enum {
  CL_WEBHOOK = 1 << 0,    /* godwit-webhook, registered through the webhook configurations */
  CL_JOBRUNNER = 1 << 1,  /* godwit-jobrunner */
  CL_CONTROLLER = 1 << 2, /* godwit-controller (up --with-controller) */
  CL_FAULTS = 1 << 3,     /* the API server's /__faults endpoint */
  CL_NO_CRDS = 1 << 4,    /* do not apply manifests/crds */
  CL_NODES = 1 << 5,      /* worker nodes node-a, node-b, node-c with the pod network (root) */
};

struct cl {
  char dir[256];
  char kubeconfig[320];
  int api_port;
  unsigned what;
  struct kube_client *clients[4]; /* cached per user */
};

void cl_start(struct cl *c, unsigned what);
void cl_stop(struct cl *c);
/* A client authenticated as user ("admin", "alice", "bob"); owned by the harness. */
struct kube_client *cl_client(struct cl *c, const char *user);
/* Runs the real kubectl with the cluster's kubeconfig and --context user; *out gets stdout and
 * stderr (malloc'd). Returns kubectl's exit code. */
int cl_kubectl(struct cl *c, const char *user, char **out, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* Applies a fault rule (JSON) through /__faults (needs CL_FAULTS). */
void cl_fault(struct cl *c, const char *rule_json);
/* What the controller makes before a runner Pod's first Job in ns (controller/ptah/exec.c,
 * op_runner_identity): the ServiceAccount godwit-runner and its RoleBinding to the ClusterRole
 * godwit-runner of manifests/rbac-runner.yaml. For tests that create runner Jobs themselves. */
void cl_runner_identity(struct cl *c, const char *ns);
/* The repository's root (manifests/, tests/). */
const char *cl_root(void);
/* The count left of fault rule i (0 first, in the order added; -1 is every time), INT_MIN when
 * there is no rule i. */
int cl_fault_count(struct cl *c, int i);
/* The whole file at path (malloc'd; NULL when it cannot be read). */
char *cl_slurp(const char *path);
/* Path of a file in the cluster directory (logs: apiserver.log, webhook.log, ...). */
const char *cl_path(struct cl *c, const char *name);
/* Polls fn until it returns nonzero or timeout_ms passes; returns the last result. */
int cl_eventually(int timeout_ms, int (*fn)(void *), void *arg);

#endif
