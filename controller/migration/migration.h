/*
 * migration.h: the Migration controller (pgcopydb.io, seed 000).
 *
 * This stage holds one step, the first observation (observe.c): a Migration without
 * status.phase gets status.phase Pending and status.observedGeneration, written through /status,
 * once. API-server creation does not initialize status, so Pending is the controller's record
 * that it has seen the object, before validation or provisioning. The step is idempotent (a
 * Migration with any phase is left alone) and conflict-safe (status.c re-reads and re-decides
 * on 409). Later steps (preflight, worker, probe, cutover, verify) run after it in the same
 * reconcile.
 */
#ifndef GW_CTRL_MIGRATION_H
#define GW_CTRL_MIGRATION_H

#include <cJSON.h>

#include "../manager.h"

extern const struct kube_gvr MIGRATION_GVR; /* pgcopydb.io/v1 migrations */

#define MIGRATION_PHASE_PENDING "Pending"

/* The first observation of *m (the object from the cache). When it writes, *m is replaced by
 * the stored object. GW_ENOTFOUND: the Migration is gone. */
gw_rc migration_observe(struct rec_ctx *c, cJSON **m) GW_MUST_CHECK;

/* The Migration reconcile (registered by migration_register). */
struct rec_result migration_reconcile(struct rec_ctx *c);

/* Registers the Migration controller ("migration") with the manager. */
gw_rc migration_register(struct mgr *m, struct ctrl **out) GW_MUST_CHECK;

#endif
