/*
 * migration.h: the Migration controller (pgcopydb.io, seed 000).
 *
 * migration_register_opts() registers the whole controller: it drives a Migration through the
 * phases of seed 000 with runner Jobs (preflight, worker, catalog, cutover, verify, reown,
 * compare, cleanup), a pg_stat_activity probe of the target and lag samples of the source, as
 * docs/dev/migration-controller.md designs it. It watches the Migrations, their Jobs (owned)
 * and their Pods (label godwit.dev/migration).
 *
 * Its first step is the first observation (observe.c): a Migration without status.phase gets
 * status.phase Pending and status.observedGeneration, written through /status, once.
 * API-server creation does not initialize status, so Pending is the controller's record that it
 * has seen the object, before validation or provisioning. The step is idempotent (a Migration
 * with any phase is left alone) and conflict-safe (status.c re-reads and re-decides on 409).
 *
 * migration_register() registers that first step alone: the manager's own tests use it as a
 * small real reconciler.
 */
#ifndef GW_CTRL_MIGRATION_H
#define GW_CTRL_MIGRATION_H

#include <cJSON.h>

#include "../manager.h"
#include "../pgpool.h"

extern const struct kube_gvr MIGRATION_GVR; /* pgcopydb.io/v1 migrations */

#define MIGRATION_PHASE_PENDING "Pending"

struct migration_opts {
  const char *runner_image;   /* runner steps' image, and the worker's default */
  long probe_interval_ms;     /* pg_stat_activity samples of the target (default 5000) */
  long lag_interval_ms;       /* lag samples of the source (default 10000) */
  long wal_sender_timeout_ms; /* of a live worker's source connections, pgcopydb 0.15+ (default
                               * 2000; 0: the server's) */
  long poll_interval_ms;      /* look again while a Job runs (default 5000) */
  long zombie_grace_ms;       /* a worker Pod alive this long after its fatal exit (60000) */
  int step_attempts;          /* attempts of a runner step that fails transiently (default 5) */
  int cleanup_attempts;       /* attempts of the cleanup Job (default 3) */
  long connect_timeout_s;     /* the controller's libpq connections (default 5) */
  long step_deadline_s;       /* activeDeadlineSeconds of the short runner Jobs: version probe,
                               * preflight, catalog, cutover, cleanup (default 900) */
  long attempt_backoff_s;     /* before the second worker attempt, doubling after, at most six
                               * minutes (default 10, the Job controller's) */
  long long_step_deadline_s;  /* of those that read or change every table: verify, compare,
                               * reown (default 86400); the worker has none */
  struct pg_pool *pool;       /* sessions kept between samples (controller/pgpool.h), the
                               * program's; NULL: a login at every sample */
};

/* The first observation of *m (the object from the cache). When it writes, *m is replaced by
 * the stored object. GW_ENOTFOUND: the Migration is gone. */
gw_rc migration_observe(struct rec_ctx *c, cJSON **m) GW_MUST_CHECK;

/* The whole Migration reconcile (ctrl_def.user is the struct migration_opts). */
struct rec_result migration_reconcile(struct rec_ctx *c);

/* Registers the whole controller ("migration"); o is copied (its strings must outlive the
 * manager); NULL: defaults. */
gw_rc migration_register_opts(struct mgr *m, const struct migration_opts *o, struct ctrl **out)
  GW_MUST_CHECK;
/* Registers the first observation alone (see above). */
gw_rc migration_register(struct mgr *m, struct ctrl **out) GW_MUST_CHECK;


/* Prometheus series of every cached Migration (metrics.c), rendered into sb. */
struct strbuf;
gw_rc migration_metrics(void *ctx, struct strbuf *sb) GW_MUST_CHECK;

#endif
