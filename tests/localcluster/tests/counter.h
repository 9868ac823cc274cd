/*
 * counter.h: the CRIU counter ($GODWIT_BUILD/tests/criu-counter, tests/criu/counter.c) as a Pod
 * of the local cluster's worker nodes (CL_NODES), and its client: shared by the job runner's,
 * the node agent's and the PodMotion tests. Every helper asserts (Criterion).
 */
#ifndef GW_TEST_COUNTER_H
#define GW_TEST_COUNTER_H

#include <cJSON.h>

/* A Pod on node running the counter on 0.0.0.0:7000: no token, no volumes (it can be
 * checkpointed), grace period 1 s. */
cJSON *jt_counter_pod(const char *name, const char *node);
/* The pid in a local-runtime container ID (godwit://UID-INDEX-PID) of the first container. */
long jt_container_pid(const cJSON *pod);
/* A connection from this machine to ip:7000 (retried for 5 s while the server starts). */
int jt_counter_connect(const char *ip);
/* One request ("inc", "get", "net") on it; the answer line (static; waits up to 5 s). */
const char *jt_counter_req(int fd, const char *what);

#endif
