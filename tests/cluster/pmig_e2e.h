/*
 * pmig_e2e.h: what the PodMotion end-to-end suites share (test_podmotion_move.c,
 * test_podmotion_faults.c): a cluster with worker nodes and their agents, the CRIU counter as the
 * pod to move, its policy and the PodMigration. Every helper asserts.
 */
#ifndef GW_TESTS_PMIG_E2E_H
#define GW_TESTS_PMIG_E2E_H

#include "e2e.h"

/* The local cluster with node-a, node-b, node-c, their agents and the controller; E's kind is
 * PodMigration. */
void pm_start(struct e2e *e);
/* MigrationPolicy "counters" selecting app=counter, PreCopy and StopAndCopy allowed, plus extra
 * YAML lines of its spec. */
void pm_policy(struct e2e *e, const char *extra);
/* A counter pod named name on node-a, labelled app=counter, with a tcpSocket readiness probe on
 * probe_port (a JSON value: 7001 or "\"counter\""); returns a client connected from this machine. */
int pm_counter(struct e2e *e, const char *name, const char *probe_port);
/* One request on the client; the number answered. */
long pm_value(int fd, const char *req);
/* PodMigration name moving pod to node-b, plus extra YAML lines of its spec. */
void pm_move(struct e2e *e, const char *name, const char *pod, const char *extra);

#endif
