/* Runs nobody can account for (seed 001: MigrationRunUncertain). A run that ended without
 * proving what it committed is recorded in status.unresolvedRun and, for a restore that drops
 * status, in the annotation operator.ptah.run/unresolved-run; nothing is planned until a
 * person's PtahMigrationRunAcknowledgment names it (UnresolvedRunAcknowledged). The next run
 * reads the history table under the lock before it applies anything, so what the person stated
 * cannot make a version be skipped or applied twice. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../events.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "pm.h"

void pm_uncertain(struct pm *p, const struct ptah_op *op, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *why = NULL;
  if(vasprintf(&why, fmt, ap) < 0)
    why = NULL;
  va_end(ap);
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON *u = cJSON_CreateObject();
  cJSON_AddStringToObject(u, "operation", op->id);
  cJSON_AddStringToObject(u, "jobName", op->job);
  cJSON_AddNumberToObject(u, "fromVersion", (double)op->from);
  cJSON_AddNumberToObject(u, "toVersion", (double)op->to);
  cJSON_AddStringToObject(u, "recordedAt", now);
  cJSON_Delete(p->set_annotation);
  p->set_annotation = cJSON_Duplicate(u, 1);
  edit_set(&p->ed, "unresolvedRun", u);
  cJSON *last = cJSON_CreateObject();
  cJSON_AddStringToObject(last, "operation", op->id);
  cJSON_AddStringToObject(last, "outcome", "Unknown");
  cJSON_AddNumberToObject(last, "fromVersion", (double)op->from);
  cJSON_AddNumberToObject(last, "toVersion", (double)op->to);
  cJSON_AddStringToObject(last, "finishedAt", now);
  cJSON_AddStringToObject(last, "message", why ? why : "");
  edit_set(&p->ed, "lastRun", last);
  edit_unset(&p->ed, "operation");
  edit_phase(&p->ed, PM_UNCERTAIN);
  pm_ready(p, COND_FALSE, "RunUncertain", "operation %s (versions %lld to %lld) ended without "
           "establishing what it committed: %s. Nothing is planned until a "
           "PtahMigrationRunAcknowledgment names operation %s", op->id, op->from, op->to,
           why ? why : "", op->id);
  edit_event(&p->ed, EV_WARNING, "MigrationRunFinished", "Unknown: operation %s ended without "
             "establishing what it committed", op->id);
  edit_event(&p->ed, EV_WARNING, "MigrationRunUncertain", "operation %s (versions %lld to "
             "%lld, Job %s): %s; settle it with a PtahMigrationRunAcknowledgment naming "
             "operation %s", op->id, op->from, op->to, op->job, why ? why : "", op->id);
  free(why);
}

/* The first acknowledgment of this migration naming operation, or NULL. */
struct ackfind {
  const char *name, *operation;
  cJSON *found;
  const char *found_ts;
};

static void find_ack(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct ackfind *f = ctx;
  const char *m = json_get_str(obj, "spec.migrationRef.name");
  const char *op = json_get_str(obj, "spec.operation");
  const char *phase = json_get_str(obj, "status.phase");
  const char *ts = json_get_str(obj, "metadata.creationTimestamp");
  if(!m || strcmp(m, f->name) || !op || strcmp(op, f->operation) ||
     (phase && !strcmp(phase, "Refused")))
    return;
  if(f->found && f->found_ts && ts && strcmp(ts, f->found_ts) >= 0)
    return; /* the oldest statement settles it */
  cJSON_Delete(f->found);
  f->found = cJSON_Duplicate(obj, 1);
  f->found_ts = json_get_str(f->found, "metadata.creationTimestamp");
}

gw_rc pm_unresolved(struct pm *p)
{
  const cJSON *u = edit_queued(&p->ed, "unresolvedRun");
  if(!u)
    u = json_get(p->obj, "status.unresolvedRun");
  const char *op = json_get_str(u, "operation");
  if(p->phase != PM_UNCERTAIN)
    edit_phase(&p->ed, PM_UNCERTAIN);
  struct informer *acks = mgr_cache(p->ctx->mgr, &KUBE_PTAH_RUN_ACKS);
  struct ackfind f = { p->name, op ? op : "", NULL, NULL };
  if(acks && op)
    informer_each(acks, p->ns, find_ack, &f);
  if(!f.found)
    return GW_OK; /* an acknowledgment's creation is watched */
  const char *who = json_get_str(f.found, "spec.acknowledgedBy");
  const char *outcome = json_get_str(f.found, "spec.outcome");
  const char *ack = json_get_str(f.found, "metadata.name");
  char now[40];
  kt_rfc3339(now, sizeof(now), time(NULL));
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "name", ack ? ack : "");
  cJSON_AddStringToObject(a, "acknowledgedBy", who ? who : "");
  cJSON_AddStringToObject(a, "operation", op);
  cJSON_AddStringToObject(a, "outcome", outcome ? outcome : "");
  cJSON_AddStringToObject(a, "acceptedAt", now);
  edit_set(&p->ed, "acknowledgment", a);
  edit_unset(&p->ed, "unresolvedRun");
  edit_unset(&p->ed, "appliedInputs"); /* the next run reads the database again */
  p->clear_annotation = true;
  snprintf(p->accept_ack, sizeof(p->accept_ack), "%s", ack ? ack : "");
  edit_phase(&p->ed, PM_MIGRATING);
  pm_ready(p, COND_FALSE, "Acknowledged", "%s acknowledged operation %s as %s; the database is "
           "read again before anything is planned", who ? who : "", op, outcome ? outcome : "");
  edit_event(&p->ed, EV_NORMAL, "UnresolvedRunAcknowledged", "%s acknowledged operation %s as "
             "%s (PtahMigrationRunAcknowledgment %s); the history table is read again before "
             "the next run plans anything", who ? who : "", op, outcome ? outcome : "",
             ack ? ack : "");
  edit_requeue(&p->ed, 1);
  cJSON_Delete(f.found);
  return GW_OK;
}

void pm_restore(struct pm *p)
{
  const cJSON *ann = json_get(p->obj, "metadata.annotations");
  const char *text =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, PM_UNRESOLVED_ANNOTATION));
  if(!text || cJSON_IsObject(json_get(p->obj, "status.unresolvedRun")))
    return;
  cJSON *u = cJSON_Parse(text);
  const char *op = json_get_str(u, "operation");
  const char *acked = json_get_str(p->obj, "status.acknowledgment.operation");
  if(!op || (acked && !strcmp(acked, op)) ||
     (json_get_str(p->obj, "status.operation.id") &&
      !strcmp(json_get_str(p->obj, "status.operation.id"), op))) {
    /* settled (the annotation's removal did not happen), or not recorded yet: drop it */
    cJSON_Delete(u);
    if(op && acked && !strcmp(acked, op))
      p->clear_annotation = true;
    return;
  }
  edit_set(&p->ed, "unresolvedRun", u);
  edit_unset(&p->ed, "operation");
  edit_phase(&p->ed, PM_UNCERTAIN);
  pm_ready(p, COND_FALSE, "RunUncertain", "operation %s ended without establishing what it "
           "committed (restored from the %s annotation). Nothing is planned until a "
           "PtahMigrationRunAcknowledgment names operation %s", op, PM_UNRESOLVED_ANNOTATION, op);
  edit_event(&p->ed, EV_WARNING, "UnresolvedRunRestored", "the status came back without the "
             "record of operation %s, a run nobody accounted for; it was put back from the %s "
             "annotation, and nothing is planned until a reading or an acknowledgment settles "
             "it", op, PM_UNRESOLVED_ANNOTATION);
}

/* ---- after the status write ---- */

static void patch(struct pm *p, const struct kube_gvr *gvr, const char *name, const char *sub,
                  cJSON *body)
{
  char *text = cJSON_PrintUnformatted(body);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = text ? kube_patch(p->ctx->kube, gvr, p->ns, name, KUBE_PATCH_MERGE, text, sub, NULL,
                               &st)
                  : GW_ENOMEM;
  if(rc)
    log_kv(LOG_WARN, "cannot patch", "key", p->ctx->key, "resource", gvr->resource, "name",
           name, "error", gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  cJSON_free(text);
}

static bool has_finalizer(const cJSON *obj)
{
  const cJSON *f;
  cJSON_ArrayForEach(f, json_get(obj, "metadata.finalizers"))
    if(cJSON_IsString(f) && !strcmp(f->valuestring, PM_FINALIZER))
      return true;
  return false;
}

/* Adds or removes the finalizer with an update guarded by the resourceVersion (a conflict is
 * decided again on the next pass). */
static gw_rc finalizer(struct pm *p, bool want)
{
  if(has_finalizer(p->obj) == want)
    return GW_OK;
  cJSON *o = cJSON_Duplicate(p->obj, 1);
  if(!o)
    return GW_ENOMEM;
  cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
  cJSON *list = cJSON_GetObjectItemCaseSensitive(md, "finalizers");
  if(!list)
    list = cJSON_AddArrayToObject(md, "finalizers");
  if(want) {
    cJSON_AddItemToArray(list, cJSON_CreateString(PM_FINALIZER));
  } else {
    for(int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
      if(!strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(list, i)) ?
                   cJSON_GetStringValue(cJSON_GetArrayItem(list, i)) : "", PM_FINALIZER))
        cJSON_DeleteItemFromArray(list, i);
  }
  cJSON_DeleteItemFromObjectCaseSensitive(o, "status");
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_update(p->ctx->kube, &KUBE_PTAH_MIGRATIONS, p->ns, o, NULL, NULL, &st);
  if(rc && rc != GW_ECONFLICT && rc != GW_ENOTFOUND)
    log_kv(LOG_WARN, "cannot update the finalizer", "key", p->ctx->key, "finalizer",
           PM_FINALIZER, "error", gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  cJSON_Delete(o);
  return rc;
}

gw_rc pm_finalize(struct pm *p)
{
  if(!has_finalizer(p->obj))
    return GW_OK;
  struct ptah_op op;
  if(op_read(p->obj, &op) && op.dispatched)
    return pm_drive(p); /* the run in flight ends (its Job keeps its deadline), then settles */
  const cJSON *u = json_get(p->obj, "status.unresolvedRun");
  if(cJSON_IsObject(u)) {
    const cJSON *from = json_get(u, "fromVersion"), *to = json_get(u, "toVersion");
    const char *secret = json_get_str(p->obj, "spec.database.connectionSecretRef.name");
    const char *hist = json_get_str(p->obj, "spec.migrations.historyTable");
    rec_event(p->ctx, p->obj, EV_WARNING, "UnresolvedRunDiscarded", "deleting %s discarded "
              "the record of operation %s, a run nobody accounted for: outcome Unknown, "
              "versions %lld to %lld, the database of Secret \"%s\" (history table %s)",
              p->name, json_get_str(u, "operation") ? json_get_str(u, "operation") : "",
              cJSON_IsNumber(from) ? (long long)from->valuedouble : 0,
              cJSON_IsNumber(to) ? (long long)to->valuedouble : 0, secret ? secret : "",
              hist ? hist : "public.ptah_migrations");
  }
  gw_rc rc = finalizer(p, false);
  return rc == GW_ECONFLICT || rc == GW_ENOTFOUND ? GW_OK : rc;
}

void pm_after_commit(struct pm *p)
{
  if(!json_get(p->obj, "metadata.deletionTimestamp") &&
     (json_get_str(p->obj, "status.operation.id") ||
      cJSON_IsObject(json_get(p->obj, "status.unresolvedRun"))))
    (void)finalizer(p, true);
  if(p->set_annotation || p->clear_annotation) {
    cJSON *b = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(b, "metadata"), "annotations");
    char *v = p->set_annotation ? cJSON_PrintUnformatted(p->set_annotation) : NULL;
    if(v)
      cJSON_AddStringToObject(ann, PM_UNRESOLVED_ANNOTATION, v);
    else
      cJSON_AddNullToObject(ann, PM_UNRESOLVED_ANNOTATION);
    cJSON_free(v);
    patch(p, &KUBE_PTAH_MIGRATIONS, p->name, NULL, b);
    cJSON_Delete(b);
  }
  if(*p->accept_ack) {
    char now[40];
    kt_rfc3339(now, sizeof(now), time(NULL));
    cJSON *b = cJSON_CreateObject();
    cJSON *s = cJSON_AddObjectToObject(b, "status");
    cJSON_AddStringToObject(s, "phase", "Accepted");
    cJSON_AddNumberToObject(s, "observedGeneration", 1);
    cJSON *cd = cJSON_CreateObject();
    cJSON_AddStringToObject(cd, "type", "Accepted");
    cJSON_AddStringToObject(cd, "status", "True");
    cJSON_AddNumberToObject(cd, "observedGeneration", 1);
    cJSON_AddStringToObject(cd, "lastTransitionTime", now);
    cJSON_AddStringToObject(cd, "reason", "RunSettled");
    cJSON_AddStringToObject(cd, "message", "it settled the unresolved run it names");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "conditions"), cd);
    patch(p, &KUBE_PTAH_RUN_ACKS, p->accept_ack, "status", b);
    cJSON_Delete(b);
  }
}
