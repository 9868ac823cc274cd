/* The cleanup Job <name>-cleanup-<n> (slot, publication, origin, sentinel schema on the source)
 * at the end of a live migration and when a live Migration is deleted (finalizer
 * pgcopydb.io/cleanup); CleanupStarted, CleanupFailed. See docs/dev/migration-controller.md,
 * steps 5 and 10. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "log.h"
#include "mig.h"

static void render(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "cleanup", attempt);
  mig_arg(a, "--slot-name");
  mig_arg(a, m->slot);
  mig_arg(a, "--origin");
  mig_arg(a, m->slot);
  s->source = s->target = true;
}

static bool has_finalizer(const struct mig *m)
{
  const cJSON *f;
  cJSON_ArrayForEach(f, json_get(m->obj, "metadata.finalizers"))
    if(cJSON_IsString(f) && !strcmp(f->valuestring, MIG_FINALIZER))
      return true;
  return false;
}

gw_rc mig_finalizer(struct mig *m, bool want)
{
  if(has_finalizer(m) == want)
    return GW_OK;
  cJSON *obj = cJSON_Duplicate(m->obj, 1);
  if(!obj)
    return GW_ENOMEM;
  cJSON *list = json_get_mut(obj, "metadata.finalizers");
  if(want) {
    if(!cJSON_IsArray(list)) {
      list = cJSON_CreateArray();
      if(json_set(obj, "metadata.finalizers", list)) {
        cJSON_Delete(obj);
        return GW_ENOMEM;
      }
    }
    cJSON_AddItemToArray(list, cJSON_CreateString(MIG_FINALIZER));
  } else {
    for(int i = cJSON_GetArraySize(list) - 1; i >= 0; i--) {
      const cJSON *f = cJSON_GetArrayItem(list, i);
      if(cJSON_IsString(f) && !strcmp(f->valuestring, MIG_FINALIZER))
        cJSON_DeleteItemFromArray(list, i);
    }
  }
  json_remove(obj, "status"); /* the main resource ignores it; keep the body small */
  cJSON *stored = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_update(m->ctx->kube, &MIGRATION_GVR, m->ns, obj, NULL, &stored, &st);
  if(rc)
    log_kv(LOG_WARN, "cannot update the finalizers", "key", m->ctx->key, "error",
           gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  cJSON_Delete(obj);
  if(!rc && stored) {
    /* decide on from what is stored now (its resourceVersion guards the status write): only
     * the metadata changed, and only it is replaced, so what callers read from the object's
     * spec and status stays valid */
    cJSON *meta = cJSON_DetachItemFromObjectCaseSensitive(stored, "metadata");
    if(meta && !cJSON_ReplaceItemInObjectCaseSensitive(m->obj, "metadata", meta))
      cJSON_Delete(meta);
  }
  cJSON_Delete(stored);
  return rc;
}

/* Whether the Migration's namespace is being deleted: kube-apiserver then refuses every new
 * object in it (403 Forbidden, "unable to create new content in namespace ... because it is
 * being terminated"), the cleanup Job included. A failed read says no: the step retries. */
static bool namespace_terminating(struct mig *m)
{
  cJSON *ns = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(m->ctx->kube, &KUBE_NAMESPACES, NULL, m->ns, &ns, &st);
  kube_status_release(&st);
  bool t = !rc && (json_get_str(ns, "metadata.deletionTimestamp") ||
                   (json_get_str(ns, "status.phase") &&
                    !strcmp(json_get_str(ns, "status.phase"), "Terminating")));
  cJSON_Delete(ns);
  return t;
}

/* The deletion cannot run a cleanup Job (its namespace is being deleted): it fails now, naming
 * what is left on both servers and how to remove it, and the finalizer goes on the next pass.
 * The Event may be refused as well (a terminating namespace takes no new Events either), so the
 * controller's log says it too. */
static void cleanup_impossible(struct mig *m, const struct step_run *r)
{
  char what[2048];
  snprintf(what, sizeof(what), "the namespace %s is being deleted and refuses new Jobs, so the "
           "cleanup Job could not run (%.300s). Left behind: on the source the replication slot %s, "
           "its publication and the schema pgcopydb (sentinel); on the target the replication "
           "origin %s. Remove them by hand: on the source SELECT "
           "pg_drop_replication_slot('%s'); DROP SCHEMA pgcopydb CASCADE; on the target SELECT "
           "pg_replication_origin_drop('%s')", m->ns, r->message, m->slot, m->slot, m->slot,
           m->slot);
  step_record(&m->ed, "cleanup", r->attempt > 0 ? r->attempt : 1, "Failed", what);
  edit_event(&m->ed, EV_WARNING, "CleanupFailed", "%s", what);
  log_kv(LOG_WARN, "CleanupFailed", "key", m->ctx->key, "message", what, LOG_END);
  edit_requeue(&m->ed, 1);
}

enum step_outcome mig_cleanup(struct mig *m, bool deleting)
{
  if(!m->live || !*m->slot)
    return STEP_PASSED;
  const char *res = step_result(m->obj, "cleanup");
  bool passed = !strcmp(res, "Passed"), failed = !strcmp(res, "Failed");
  if(passed || failed) {
    if(has_finalizer(m) && (deleting || passed) && mig_finalizer(m, false))
      edit_requeue(&m->ed, 1000);
    return passed ? STEP_PASSED : STEP_FAILED;
  }
  struct step_run r = { .step = "cleanup", .max_attempts = m->o->cleanup_attempts,
                        .started_reason = "CleanupStarted",
                        .started_fmt = "cleanup Job attempt %d created: the replication slot, "
                                       "publication, origin and sentinel go" };
  enum step_outcome o = mig_step_drive(m, &r, render, NULL);
  if(o == STEP_ERROR && deleting && namespace_terminating(m)) {
    cleanup_impossible(m, &r);
  } else if(o == STEP_PASSED) {
    step_record(&m->ed, "cleanup", r.attempt, "Passed", r.message);
    edit_requeue(&m->ed, 1);
  } else if(o == STEP_FAILED) {
    step_record(&m->ed, "cleanup", r.attempt, "Failed", r.message);
    edit_event_if_written(&m->ed, EV_WARNING, "CleanupFailed",
                         "cleanup failed after %d attempts (%s): the replication slot %s may "
                         "still hold WAL on the source; remove it by hand: SELECT "
                         "pg_drop_replication_slot('%s')", r.attempt, r.message, m->slot,
                         m->slot);
    edit_requeue(&m->ed, 1);
  }
  step_run_release(&r);
  return STEP_WAIT;
}

gw_rc mig_deletion(struct mig *m)
{
  if(!has_finalizer(m))
    return GW_OK; /* owned objects go with it (ownerReferences) */
  /* the stream holds the slot: stop it first */
  int n = (int)mig_status_int(m, "attempts", 0);
  if(n > 0) {
    struct job_view v;
    if(mig_job_get(m, "worker", n, &v))
      return GW_EIO;
    enum job_state st = v.state;
    job_view_release(&v);
    if(st == JOB_PENDING || st == JOB_RUNNING) {
      gw_rc rc = mig_job_delete(m, "worker", n);
      edit_requeue(&m->ed, 1000);
      return rc;
    }
    if(st == JOB_DELETING) {
      edit_requeue(&m->ed, 1000);
      return GW_OK;
    }
    /* the Job is gone or ended: wait for its Pods to stop too (the grace period) */
    int left = 0;
    gw_rc rc = rj_pods_running(&m->owner, "worker", &left);
    if(rc || left) {
      edit_requeue(&m->ed, 1000);
      return rc;
    }
  }
  if(!m->live || !*m->slot || mig_status_int(m, "attempts", 0) == 0) {
    gw_rc rc = mig_finalizer(m, false);
    return rc;
  }
  enum step_outcome o = mig_cleanup(m, true);
  if(o != STEP_WAIT && has_finalizer(m)) {
    gw_rc rc = mig_finalizer(m, false);
    return rc;
  }
  return GW_OK;
}
