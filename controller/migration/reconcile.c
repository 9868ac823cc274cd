/* The Migration reconcile: read the object fresh, the first observation (Pending), then one of
 * deletion, the absorbing ends, suspension and resumption, or the step of the phase; the changes
 * written once, the Events after. See mig.h and docs/dev/migration-controller.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "log.h"
#include "mig.h"

static const struct migration_opts defaults = {
  .runner_image = "ghcr.io/godwit-dev/godwit:latest",
  .probe_interval_ms = 5000,
  .lag_interval_ms = 10000,
  .wal_sender_timeout_ms = 2000,
  .poll_interval_ms = 5000,
  .zombie_grace_ms = 60000,
  .step_attempts = 5,
  .cleanup_attempts = 3,
  .connect_timeout_s = 5,
  .step_deadline_s = MIG_STEP_DEADLINE_S,
  .long_step_deadline_s = MIG_LONG_STEP_DEADLINE_S,
  .attempt_backoff_s = MIG_ATTEMPT_BACKOFF_S,
};

/* ---- the context ---- */

void mig_init(struct mig *m, struct rec_ctx *rc, const struct migration_opts *o, cJSON *obj)
{
  memset(m, 0, sizeof(*m));
  m->ctx = rc;
  m->o = o;
  m->obj = obj;
  m->ns = rc->ns;
  m->name = rc->name;
  snprintf(m->uid_buf, sizeof(m->uid_buf), "%s",
           json_get_str(obj, "metadata.uid") ? json_get_str(obj, "metadata.uid") : "");
  m->uid = m->uid_buf;
  m->gen = obj_generation(obj);
  m->phase = mig_phase_parse(json_get_str(obj, "status.phase"));
  m->live = cJSON_IsObject(json_get(obj, "spec.follow"));
  m->dry_run = cJSON_IsTrue(json_get(obj, "spec.dryRun"));
  m->suspend = cJSON_IsTrue(json_get(obj, "spec.suspend"));
  m->deleting = json_get(obj, "metadata.deletionTimestamp") != NULL;
  const cJSON *bl = json_get(obj, "spec.backoffLimit");
  m->backoff_limit = cJSON_IsNumber(bl) ? (int)bl->valuedouble : MIGRATION_DEFAULT_BACKOFF_LIMIT;
  if(m->backoff_limit < 0)
    m->backoff_limit = 0;
  char uid8[9];
  snprintf(uid8, sizeof(uid8), "%s", m->uid);
  snprintf(m->appname, sizeof(m->appname), "godwit-%s", uid8);
  const char *slot = json_get_str(obj, "status.slotName");
  if(slot && *slot)
    snprintf(m->slot, sizeof(m->slot), "%s", slot);
  else
    snprintf(m->slot, sizeof(m->slot), "godwit_%s", uid8);
  mig_version_parse(json_get_str(obj, "status.pgcopydbVersion"), &m->version);
  edit_init(&m->ed, &mig_phases);
  mig_owner_init(m);
}

void mig_release(struct mig *m)
{
  edit_release(&m->ed);
  cJSON_Delete(m->obj);
  m->obj = NULL;
}

long long mig_status_int(const struct mig *m, const char *path, long long dflt)
{
  char p[96];
  snprintf(p, sizeof(p), "status.%s", path);
  const cJSON *v = json_get(m->obj, p);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

const char *mig_status_str(const struct mig *m, const char *path)
{
  char p[96];
  snprintf(p, sizeof(p), "status.%s", path);
  return json_get_str(m->obj, p);
}

bool mig_status_bool(const struct mig *m, const char *path)
{
  char p[96];
  snprintf(p, sizeof(p), "status.%s", path);
  return json_get_bool(m->obj, p, false);
}

/* ---- the steps of the phases ---- */

static bool finished(const struct mig *m)
{
  return m->phase == MP_COMPLETED || m->phase == MP_FAILED || cond_is_true(m->obj, C_COMPLETE) ||
         cond_is_true(m->obj, C_FAILED);
}

/* A spec that cannot run: InvalidSpec, terminal where the phase machine allows Failed. */
static void invalid(struct mig *m, const char *msg)
{
  if(!phase_allowed(&mig_phases, m->phase, MP_FAILED, MP_NONE)) {
    log_kv(LOG_WARN, "the spec does not validate; holding (Failed is not reachable from this "
           "phase)", "key", m->ctx->key, "phase", mig_phase_name(m->phase), LOG_END);
    edit_requeue(&m->ed, m->o->poll_interval_ms);
    return;
  }
  edit_cond(&m->ed, C_VALIDATED, COND_FALSE, "InvalidSpec", "the spec cannot be rendered into a "
           "worker Job: %s", msg);
  mig_fail(m, "InvalidSpec", "spec validation failed: %s; retrying cannot help (source and "
           "target are immutable): fix the spec or create a new Migration", msg);
}

/* ---- the order of the steps after the copy ---- */

/* A step of a tail runs once every row above it has passed. It returns STEP_PASSED when it is
 * done (now, or on an earlier pass: its record is in status), STEP_WAIT while it is not (it
 * asked for the next look), STEP_FAILED when the Migration failed (recorded). */
struct tail_step {
  const char *name;
  enum step_outcome (*run)(struct mig *m);
};

/* The way out of the copy: Verifying when a compare is asked for, else Completed. */
static enum step_outcome finish(struct mig *m)
{
  if(cJSON_GetArraySize(json_get(m->obj, "spec.verify.compare")) > 0) {
    edit_phase(&m->ed, MP_VERIFYING);
    edit_requeue(&m->ed, 1);
    return STEP_WAIT;
  }
  mig_complete(m, "MigrationSucceeded", "%s", m->live
               ? "the migration finished: drained, verified and cleaned up"
               : "the migration finished: the clone is complete");
  return STEP_WAIT;
}

/* The cleanup's failure is a Warning (CleanupFailed), not the Migration's. */
static enum step_outcome cleanup(struct mig *m)
{
  return mig_cleanup(m, false) == STEP_WAIT ? STEP_WAIT : STEP_PASSED;
}

/* A clone, once the worker exited 0. */
static const struct tail_step clone_tail[] = {
  { "finalizing", mig_step_finalizing },
  { "catalog", mig_step_catalog },
  { "reown", mig_step_reown },
  { "finish", finish },
  { NULL, NULL },
};

/* A live migration, from CutoverPending. */
static const struct tail_step live_tail[] = {
  { "approval", mig_step_approval },
  { "cutover", mig_step_cutover },
  { "drain", mig_step_drain },
  { "verify", mig_step_verify },
  { "reown", mig_step_reown },
  { "cutoverCompleted", mig_step_cutover_completed },
  { "cleanup", cleanup },
  { "finish", finish },
  { NULL, NULL },
};

static void run_tail(struct mig *m, const struct tail_step *t)
{
  for(; t->run; t++)
    if(t->run(m) != STEP_PASSED)
      return;
}

static void running(struct mig *m)
{
  struct job_view v;
  m->ws = mig_worker(m, &v);
  if(m->ed.phase == MP_FAILED) {
    job_view_release(&v);
    return;
  }
  /* the samplers: what the target and the source show while the worker runs */
  if(m->ws == W_RUNNING && (!m->live || !mig_status_bool(m, "baseCopyLogged")))
    mig_probe(m, &v);
  if(m->ws == W_RUNNING && m->live)
    mig_live(m, &v);
  job_view_release(&v);
  if(!m->live && m->ws == W_SUCCEEDED)
    run_tail(m, clone_tail);
  else if(m->live && (m->phase == MP_CUTOVER_PENDING || m->phase == MP_CUTTING_OVER))
    run_tail(m, live_tail);
}

static gw_rc step(struct mig *m)
{
  if(m->deleting || finished(m) || m->suspend)
    pg_pool_forget(m->o->pool, m->uid); /* no more samples: the pooled sessions go */
  if(m->deleting)
    return mig_deletion(m);
  if(finished(m))
    return GW_OK; /* Complete and Failed are absorbing */
  if(m->suspend)
    return mig_suspend(m);
  if(m->phase == MP_SUSPENDED)
    return mig_resume(m);
  char msg[2048];
  if(!mig_validate(m, msg, sizeof(msg))) {
    invalid(m, msg);
    return GW_OK;
  }
  if(m->phase > MP_VALIDATING) {
    /* refreshed on every reconcile of an active Migration (observedGeneration follows) */
    mig_spec_valid(m, json_get_str(m->obj, "status.steps.preflight.message"),
                   json_get_str(m->obj, "status.outputPlugin"));
  }
  switch(m->phase) {
  case MP_PENDING:
    /* Validating and the preflight's first attempt go in one write: one status write fewer per
     * Migration (bench-controller); mig_step_validating keeps a verdict for the next pass */
    edit_phase(&m->ed, MP_VALIDATING);
    return mig_step_validating(m);
  case MP_VALIDATING:
    return mig_step_validating(m);
  case MP_CLONING:
  case MP_FINALIZING:
  case MP_STREAMING:
  case MP_CUTOVER_PENDING:
  case MP_CUTTING_OVER:
    running(m);
    return GW_OK;
  case MP_VERIFYING:
    (void)mig_step_compare(m);
    return GW_OK;
  default:
    return GW_OK;
  }
}

struct rec_result migration_reconcile(struct rec_ctx *c)
{
  const struct migration_opts *o = c->user ? c->user : &defaults;
  /* from the cache, as controller-runtime reads: a decision made on a copy a moment behind is
   * refused by the status write, which is guarded by the resourceVersion decided from
   * (mig_commit: a conflict, decided again from the cache once it has caught up) */
  cJSON *obj = rec_get(c);
  if(!obj)
    return rec_done(); /* deleted: owned objects go with it (ownerReferences) */
  gw_rc rc = migration_observe(c, &obj);
  if(rc) {
    cJSON_Delete(obj);
    return rc == GW_ENOTFOUND ? rec_done() : rec_retry(rc);
  }
  struct mig m;
  mig_init(&m, c, o, obj);
  rc = step(&m);
  gw_rc crc = mig_commit(&m);
  if(!rc)
    rc = crc;
  struct rec_result r = mig_result(&m, rc);
  mig_release(&m);
  return r;
}

struct rec_result mig_result(struct mig *m, gw_rc rc)
{
  if(rc == GW_ECONFLICT)
    return rec_requeue_after(MIG_CONFLICT_RETRY_MS); /* it changed meanwhile: decide again */
  if(rc == GW_ENOTFOUND)
    return rec_done();
  if(rc == GW_EINVAL)
    return rec_terminal(rc);
  if(rc)
    return rec_retry(rc);
  long next = edit_next_look(&m->ed);
  return next > 0 ? rec_requeue_after(next) : rec_done();
}

/* ---- registration ---- */

static void map_pod(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  const cJSON *labels = json_get(obj, "metadata.labels");
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, MIG_LABEL));
  const char *ns = json_get_str(obj, "metadata.namespace");
  if(!name || !ns)
    return;
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  ctrl_enqueue(c, key);
}

gw_rc migration_register_opts(struct mgr *m, const struct migration_opts *o, struct ctrl **out)
{
  struct ctrl_def def = { "migration", "Migration", &MIGRATION_GVR, migration_reconcile,
                          (void *)(o ? o : &defaults), 0, NULL };
  struct ctrl *ctl = NULL;
  gw_rc rc = mgr_add_controller(m, &def, &ctl);
  if(!rc)
    rc = ctrl_watch_owned(ctl, &KUBE_JOBS, "pgcopydb.io", "Migration");
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PODS, map_pod, NULL);
  if(!rc)
    rc = rj_watch_refusals(m);
  struct informer *inf = NULL;
  if(!rc)
    rc = mgr_informer(m, &MIGRATION_GVR, &inf);
  if(!rc)
    rc = mgr_add_metrics(m, migration_metrics, inf);
  if(out)
    *out = ctl;
  return rc;
}
