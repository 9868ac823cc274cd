/*
 * ssa.h: server-side apply and metadata.managedFields (ssa.c), as kube-apiserver 1.32 keeps them;
 * docs/dev/server-side-apply.md is the reference and says where this differs.
 *
 * Every write a client makes records who changed what: ssa_update for creates, updates and
 * non-apply patches (before mutating admission, so what webhooks change is nobody's), ssa_apply
 * for application/apply-patch+yaml. Writes the server makes itself record nothing.
 */
#ifndef LS_SSA_H
#define LS_SSA_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

/* The manager of a write: ?fieldManager, else the User-Agent up to its first '/', else
 * "unknown". */
void ssa_manager(const struct ls_req *r, char *out, size_t len);
/* kube's checks of fieldManager (required for apply, at most 128 bytes, printable) and force
 * (apply only), as a 422 of options_kind ("PatchOptions"), or NULL. */
cJSON *ssa_check_options(const struct ls_req *r, const char *options_kind, bool apply);
/* A non-apply write of obj (old: the stored object, NULL on a create) through sub ("" or
 * "status") by manager: obj's managedFields become old's (or the ones the request set; [{}]
 * clears them), and what the write added or changed becomes the manager's. */
void ssa_update(const struct ls_rtype *rt, const char *sub, const char *manager, const cJSON *old,
                cJSON *obj);
/* applied merged into live (NULL: the object is created) by manager; *out the new object with
 * its managedFields. NULL, or a 409 Conflict naming every other manager's field it would change
 * (none with force: they become the applier's). */
cJSON *ssa_apply(const struct ls_rtype *rt, const char *sub, const char *manager, bool force,
                 const cJSON *live, const cJSON *applied, cJSON **out);

#endif
