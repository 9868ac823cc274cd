/*
 * informer.h: a cache of one resource type, fed by kube_reflector_run (list, then watch from the
 * list's resourceVersion, relist on 410 Gone, reconnect with backoff), indexed by
 * "namespace/name" ("name" for cluster-scoped objects), with event handlers.
 *
 * Threads: one reflector thread per informer (informer_start .. informer_stop). Readers on any
 * thread; the cache lock is never held while a handler runs. Handlers run on the reflector
 * thread, in the order the changes arrived, and must be quick (enqueue keys, nothing more).
 * After a relist the handlers see ADDED for new objects, MODIFIED for objects whose
 * resourceVersion moved, and DELETED for objects gone while the watch was down.
 *
 * Objects are the API server's JSON; the cache owns its copies, readers get their own
 * (informer_get) or look while the lock is held (informer_each).
 */
#ifndef GW_CTRL_INFORMER_H
#define GW_CTRL_INFORMER_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"
#include "rc.h"

enum inf_event { INF_ADDED, INF_MODIFIED, INF_DELETED };

/* obj: the object now (the last known state for DELETED); old: the cached one before a
 * MODIFIED, else NULL. Both valid only during the call. */
typedef void (*inf_handler_fn)(void *ctx, enum inf_event ev, const cJSON *obj, const cJSON *old);

struct informer;

struct informer_opts {
  const struct kube_gvr *gvr; /* copied by value; its strings must outlive the informer */
  const char *namespace;      /* NULL: all namespaces */
  const char *label_selector;
  const char *field_selector;
};

gw_rc informer_new(struct informer **out, struct kube_client *k, const struct informer_opts *o)
  GW_MUST_CHECK;
/* Adds a handler; before informer_start only. */
gw_rc informer_add_handler(struct informer *inf, inf_handler_fn fn, void *ctx) GW_MUST_CHECK;
gw_rc informer_start(struct informer *inf) GW_MUST_CHECK;
/* Stops the reflector and joins its thread; the cache stays readable. */
/* Asks the informer's thread to stop and returns at once (informer_stop then joins it): a
 * manager asks all of them first, so stopping takes the slowest one's time, not their sum. */
void informer_request_stop(struct informer *inf);
void informer_stop(struct informer *inf);
void informer_free(struct informer *inf);

/* Whether the first list has been stored and every handler has been called for each of its
 * objects. client-go tells the store's sync (HasSynced) from each handler registration's; here
 * handlers are added before the start, so the two are one: once synced, a handler has seen an
 * ADDED for every listed object. */
bool informer_synced(struct informer *inf);
/* Waits until synced, *stop, or timeout_ms (negative: no limit). */
bool informer_wait_synced(struct informer *inf, long timeout_ms, volatile int *stop);

/* A copy of the cached object (cJSON_Delete it), or NULL. key: "ns/name" or "name". */
cJSON *informer_get(struct informer *inf, const char *key);
/* pred of the cached object, asked with the lock held (no copy); false when none is cached.
 * pred must not call back into the informer. */
bool informer_test(struct informer *inf, const char *key,
                   bool (*pred)(const cJSON *obj, void *ctx), void *ctx);
/* Calls fn for every cached object (in namespace ns, or all when NULL) with the lock held;
 * fn must not call back into the informer. */
void informer_each(struct informer *inf, const char *ns,
                   void (*fn)(void *ctx, const char *key, const cJSON *obj), void *ctx);
size_t informer_len(struct informer *inf);
/* The last resourceVersion seen (bookmarks included), copied into buf. */
void informer_resource_version(struct informer *inf, char *buf, size_t len);
const struct kube_gvr *informer_gvr(const struct informer *inf);
const char *informer_namespace(const struct informer *inf);

/* The cache key of obj ("ns/name" or "name") into buf; GW_EINVAL without a name. */
gw_rc informer_key(const cJSON *obj, char *buf, size_t len) GW_MUST_CHECK;
/* Splits "ns/name" into ns (or "" when cluster-scoped) and name. */
gw_rc informer_split_key(const char *key, char *ns, size_t nslen, char *name, size_t namelen)
  GW_MUST_CHECK;

#endif
