/*
 * agent.h: the node agent's API (api.h) served over HTTPS: its operations on this node's Pods
 * and checkpoints (agent_ops.c) and the HTTP layer (agent_http.c) on webhook/server.h.
 *
 * Operations take JSON and answer JSON; a failure fills struct na_fail (HTTP code, a reason in
 * Kubernetes' CamelCase, a message a person can act on). Per migration, one operation at a time
 * (flock on DIR/.lock): a controller that restarted and calls again waits for the call in
 * flight, then gets its recorded result.
 */
#ifndef GW_AGENT_H
#define GW_AGENT_H

#include <cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

#define AGENT_ROOT_MAX 600 /* the longest --checkpoint-dir */

struct agent {
  const char *node;
  const char *root;       /* --checkpoint-dir */
  const char *criu;       /* the binary */
  const char *token;      /* the bearer token every call must carry */
  const char *peer_ca;    /* to check the destination agent's certificate */
  size_t max_file_bytes;  /* the largest checkpoint file accepted or sent */
  const char *fault;      /* tests only (--fault): checkpoint, send, corrupt-restore, attach,
                          * slow-checkpoint, slow-send, slow-state */
  /* metrics */
  atomic_long checkpoints_ok, checkpoints_failed, releases, detaches, attaches;
  atomic_long probes_ok, probes_failed, files_received, files_refused, removals;
  atomic_llong bytes_sent, bytes_received, checkpoint_ms_sum;
};

/* Whether the injected fault is name (tests: docs/dev/podmotion-nodeagent.md, "Faults"). */
bool agent_fault(const struct agent *a, const char *name);

struct na_fail {
  int code;
  char reason[48];
  char message[1024];
};

/* agent_ops.c: each returns the answer (a new object) or NULL with *f filled. */
cJSON *agent_checkpoint(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_send(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_received(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_state(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_release(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_detach(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_attach(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_probe(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_address(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_remove(struct agent *a, const cJSON *req, struct na_fail *f);
cJSON *agent_list(struct agent *a, const cJSON *req, struct na_fail *f);
/* One received file: dir is the migration's directory name, file CONTAINER/FILE. */
cJSON *agent_put_file(struct agent *a, const char *dir, const char *file, const char *sha256,
                      const void *data, size_t len, struct na_fail *f);

/* agent_http.c */
struct server;
gw_rc agent_http_start(struct agent *a, const char *bind, int port, struct server **out,
                       char *err, size_t errlen) GW_MUST_CHECK;

#endif
