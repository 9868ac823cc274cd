/*
 * finalizer.h: a finalizer of a controller's own on its objects, added before the controller
 * holds anything outside the object (a frozen pod, a database lock) and removed once it let go.
 * The update is guarded by the object's resourceVersion (a conflict is decided again on the
 * next reconcile); on success the caller's copy gets the stored metadata, so its status write
 * that follows is guarded by the new resourceVersion.
 */
#ifndef GW_CTRL_FINALIZER_H
#define GW_CTRL_FINALIZER_H

#include <cJSON.h>
#include <stdbool.h>

#include "kube/kube.h"
#include "manager.h"

bool obj_has_finalizer(const cJSON *obj, const char *name);
/* Makes obj carry (want) or not carry the finalizer name. */
gw_rc obj_finalizer(struct rec_ctx *c, const struct kube_gvr *gvr, cJSON *obj, const char *name,
                    bool want) GW_MUST_CHECK;

#endif
