/*
 * status.h: writing an object's status through its /status subresource with optimistic
 * concurrency.
 *
 * status_update() applies a mutation function to the object and PUTs it to /status carrying the
 * object's metadata.resourceVersion. On 409 Conflict it fetches the object again, applies the
 * mutation again to the fresh copy and retries (up to STATUS_MAX_ATTEMPTS, with a short
 * jittered backoff), as client-go's RetryOnConflict. The mutation must therefore be a function of
 * the object it is given (level-based): it decides from what it sees, sets *changed when it
 * changed something, and is called once per attempt. When it changes nothing, nothing is
 * written. The first attempt may start from a cached copy to save a GET; a stale cache costs one
 * conflict.
 *
 * Errors: the mutation's own rc; GW_ENOTFOUND when the object is gone; GW_ECONFLICT when every
 * attempt conflicted; any other client error with the API server's Status in *st.
 */
#ifndef GW_CTRL_STATUS_H
#define GW_CTRL_STATUS_H

#include <cJSON.h>
#include <stdbool.h>

#include "kube/kube.h"
#include "rc.h"

#define STATUS_MAX_ATTEMPTS 8

typedef gw_rc (*status_mutate_fn)(void *ctx, cJSON *obj, bool *changed);

struct status_result {
  bool written;  /* an update was accepted */
  int conflicts; /* 409s met on the way */
};

/* cached: a copy of the object to start from, or NULL to GET it first. *out (may be NULL)
 * receives the object as stored after the write (or as read, when nothing changed). st (may be
 * NULL) must be initialized (kube_status_init); it holds the last refusal. */
gw_rc status_update(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                    const char *name, const cJSON *cached, status_mutate_fn fn, void *ctx,
                    cJSON **out, struct status_result *res, struct kube_status *st)
  GW_MUST_CHECK;

#endif
