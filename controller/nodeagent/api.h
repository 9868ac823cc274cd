/*
 * api.h: the node agent's HTTPS API, shared by the agent (agent_*.c) and its clients (client.h:
 * the controller, and the source agent sending a checkpoint to the destination agent).
 * docs/dev/podmotion-nodeagent.md documents every call.
 *
 * Every call but /healthz and /metrics carries `Authorization: Bearer <token>` (the token file
 * both sides mount); a wrong or missing token is 401. Bodies are JSON (POST) except a file's
 * bytes (PUT NA_PATH_FILES). Errors are metav1.Status bodies with a reason and a message a
 * person can act on. Every call is idempotent: a controller that restarts calls again.
 *
 * A migration is named by its checkpoint directory, NAMESPACE_NAME_UID8 (the PodMigration's
 * namespace, name and the first 8 hex digits of its uid), under the agent's --checkpoint-dir
 * (/run/podmotion/checkpoints), mode 0700; one sub-directory per container.
 */
#ifndef GW_AGENT_API_H
#define GW_AGENT_API_H

#define NA_PATH_CHECKPOINT "/v1/checkpoint" /* source: shield, dump --leave-running */
#define NA_PATH_SEND "/v1/send"             /* source: copy the checkpoint to a peer */
#define NA_PATH_FILES "/v1/files"           /* destination: PUT one file (raw bytes) */
#define NA_PATH_RECEIVED "/v1/received"     /* destination: check the manifest, complete */
#define NA_PATH_STATE "/v1/state"           /* either: what this node holds of a migration */
#define NA_PATH_RELEASE "/v1/release"       /* source: rollback (link up, shield down) */
#define NA_PATH_DETACH "/v1/detach"         /* source: the handover (link down) */
#define NA_PATH_ATTACH "/v1/attach"         /* destination: the handover (shield down) */
#define NA_PATH_PROBE "/v1/probe"           /* destination: the verification probe */
#define NA_PATH_ADDRESS "/v1/address"       /* source: the pod's address and MAC */
#define NA_PATH_REMOVE "/v1/remove"         /* either: delete the checkpoint */
#define NA_PATH_LIST "/v1/list"             /* either: the checkpoints kept here */

/* PUT NA_PATH_FILES headers */
#define NA_HDR_MIGRATION "X-Godwit-Migration" /* the directory name */
#define NA_HDR_FILE "X-Godwit-File"           /* CONTAINER/FILE */
#define NA_HDR_SHA256 "X-Godwit-Sha256"       /* sha256:<hex> of the body */

/* files in a migration's directory */
#define NA_CHECKPOINT_JSON "checkpoint.json" /* the source's record of its dump */
#define NA_MANIFEST_JSON "manifest.json"     /* every file: path, size, sha256 */
#define NA_RECEIVED_JSON "received.json"     /* the destination's: the manifest checked */

#define NA_DIRNAME_MAX 160

#endif
