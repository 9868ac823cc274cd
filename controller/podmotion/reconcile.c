/* The PodMigration reconcile, its phase table, its metrics and its registration (pmig.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "../events.h"
#include "../informer.h"
#include "../metrics.h"
#include "api/api.h"
#include "json.h"
#include "pmig.h"
#include "strbuf.h"

#define B(p) PHASE_BIT(p)
static const char *const names[PG_COUNT] = { "Pending",     "Validating", "PreCopying",
                                             "Checkpointing", "Transferring", "Restoring",
                                             "Verifying",   "RollingBack", "Completed",
                                             "Failed",      "Cancelled" };
#define RUNNING_TO (B(PG_ROLLINGBACK))
static const unsigned transitions[PG_COUNT] = {
  [PG_PENDING] = B(PG_VALIDATING) | B(PG_CANCELLED) | B(PG_FAILED),
  [PG_VALIDATING] = B(PG_PRECOPYING) | B(PG_CHECKPOINTING) | B(PG_FAILED) | B(PG_CANCELLED),
  [PG_PRECOPYING] = B(PG_CHECKPOINTING) | RUNNING_TO,
  [PG_CHECKPOINTING] = B(PG_TRANSFERRING) | RUNNING_TO,
  [PG_TRANSFERRING] = B(PG_RESTORING) | RUNNING_TO,
  [PG_RESTORING] = B(PG_VERIFYING) | RUNNING_TO,
  [PG_VERIFYING] = B(PG_COMPLETED) | RUNNING_TO,
  [PG_ROLLINGBACK] = B(PG_FAILED) | B(PG_CANCELLED),
};
const struct phase_table pmig_phases = { "PodMigration", names, transitions, PG_COUNT,
                                         PG_PENDING, PHASE_NONE, NULL, NULL };

static char *vfmt(const char *fmt, va_list ap)
{
  char *msg = NULL;
  if(vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  return msg;
}

void pmig_cond(struct pmig *p, const char *type, const char *status, const char *reason,
               const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  edit_vcond(&p->ed, type, status, reason, fmt, ap);
  va_end(ap);
}

void pmig_phase(struct pmig *p, int phase, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  const char *was = p->phase == PHASE_NONE ? "none" : phase_name(&pmig_phases, p->phase);
  edit_phase(&p->ed, phase);
  edit_event_if_phase(&p->ed, phase == PG_FAILED ? EV_WARNING : EV_NORMAL, "PhaseTransition",
                      "%s -> %s: %s", was, phase_name(&pmig_phases, phase), msg ? msg : "");
  free(msg);
}

void pmig_refuse(struct pmig *p, const char *cond, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  const char *m = msg ? msg : reason;
  pmig_cond(p, cond, COND_FALSE, reason, "%s", m);
  pmig_cond(p, "Complete", COND_FALSE, reason, "the migration ended without moving the pod, "
            "which was never frozen: %s", m);
  edit_set_now(&p->ed, "completionTime");
  pmig_phase(p, PG_FAILED, "%s", m);
  free(msg);
}

static bool final_phase(int phase)
{
  return phase == PG_COMPLETED || phase == PG_FAILED || phase == PG_CANCELLED;
}

static gw_rc step(struct pmig *p)
{
  if(final_phase(p->phase))
    return pmig_settle(p);
  bool deleting = json_get(p->obj, "metadata.deletionTimestamp") != NULL;
  if(deleting && (p->phase == PHASE_NONE || p->phase == PG_PENDING || p->phase == PG_VALIDATING))
    return GW_OK; /* nothing was frozen, no finalizer holds it */
  if(p->phase == PHASE_NONE) {
    pmig_cond(p, "Scheduled", COND_TRUE, "Accepted", "the controller accepted the migration of "
              "pod %s and will validate it", json_get_str(p->obj, "spec.source.podName")
              ? json_get_str(p->obj, "spec.source.podName") : "");
    pmig_phase(p, PG_PENDING, "accepted by the controller");
    edit_requeue(&p->ed, 1);
    return GW_OK;
  }
  if(p->phase == PG_PENDING) {
    edit_set_now(&p->ed, "startTime");
    pmig_cond(p, "Validating", COND_TRUE, "InProgress", "validating the source pod, the "
              "destination node and the MigrationPolicies");
    pmig_phase(p, PG_VALIDATING, "validating the pod, the node and the policies");
    edit_requeue(&p->ed, 1);
    return GW_OK;
  }
  if(p->phase == PG_VALIDATING)
    return pmig_validate(p);
  const char *tv = json_get_str(cond_find(p->obj, "TrafficVerified"), "status");
  if(deleting && p->phase != PG_ROLLINGBACK && !(tv && !strcmp(tv, "True"))) {
    pmig_rollback(p, "Deleted", "the PodMigration is being deleted");
    return GW_OK;
  }
  return pmig_move(p);
}

static void enqueue_ns(void *ctx, const char *key, const cJSON *obj)
{
  (void)obj;
  ctrl_enqueue(ctx, key);
}

/* Every PodMigration still deciding (Pending, Validating) in obj's namespace, or in all when
 * obj is cluster-scoped (a Node). */
struct waiting {
  struct ctrl *c;
};

/* Every one not ended: a pod, node or policy change may concern any of them. */
static void enqueue_waiting(void *ctx, const char *key, const cJSON *obj)
{
  const char *phase = json_get_str(obj, "status.phase");
  if(!final_phase(phase_parse(&pmig_phases, phase)))
    enqueue_ns(((struct waiting *)ctx)->c, key, obj);
}

/* Ready, for readers that know no PodMigration (kstatus, Flux's wait, Argo CD health, kubectl
 * wait): True once the pod moved, False with the reason it ended without moving (Complete's
 * reason: a refusal, a rollback, Cancelled), else False with the phase. Derived from what this
 * reconcile decided, so it is written with it; beyond the seed's 14 types (issue 12). */
static void ready(struct pmig *p)
{
  int phase = p->ed.phase != PHASE_NONE ? p->ed.phase : p->phase;
  if(phase == PHASE_NONE)
    return;
  const struct edit_cond *q = edit_queued_cond(&p->ed, "Complete");
  const cJSON *c = cond_find(p->obj, "Complete");
  const char *reason = q ? q->reason : json_get_str(c, "reason");
  const char *msg = q && q->message ? q->message : json_get_str(c, "message");
  const char *name = phase_name(&pmig_phases, phase);
  if(phase == PG_COMPLETED)
    pmig_cond(p, "Ready", COND_TRUE, reason ? reason : "Completed", "%s",
              msg ? msg : "the pod moved");
  else if(final_phase(phase))
    pmig_cond(p, "Ready", COND_FALSE, reason ? reason : name, "%s",
              msg ? msg : "the migration ended without moving the pod");
  else
    pmig_cond(p, "Ready", COND_FALSE, name, "the migration is %s", name);
}

static struct rec_result reconcile(struct rec_ctx *c)
{
  if(!strcmp(c->key, PG_JANITOR_KEY)) {
    pmig_janitor(c);
    return pmig_opts.janitor_interval_ms > 0 ? rec_requeue_after(pmig_opts.janitor_interval_ms)
                                             : rec_done();
  }
  cJSON *obj = rec_get(c);
  if(!obj)
    return rec_done();
  struct pmig p;
  memset(&p, 0, sizeof(p));
  p.ctx = c;
  p.obj = obj;
  p.ns = c->ns;
  p.name = c->name;
  p.phase = phase_parse(&pmig_phases, json_get_str(obj, "status.phase"));
  edit_init(&p.ed, &pmig_phases);
  gw_rc rc = step(&p);
  ready(&p);
  gw_rc crc = edit_commit(&p.ed, c, &p.obj);
  if(!rc)
    rc = crc;
  /* one that ended may free a place under its policy */
  int now = phase_parse(&pmig_phases, json_get_str(p.obj, "status.phase"));
  if(final_phase(now) && now != p.phase) {
    struct waiting w = { c->ctrl };
    informer_each(c->cache, c->ns, enqueue_waiting, &w);
  }
  struct rec_result r = edit_result(&p.ed, rc);
  edit_release(&p.ed);
  cJSON_Delete(p.obj);
  return r;
}

/* ---- metrics: godwit_podmigration_phase{namespace,name,phase} ---- */

static gw_rc metrics(void *ctx, struct strbuf *sb)
{
  gw_rc rc = metric_phase_gauge(sb, ctx, "godwit_podmigration_phase",
                                "The PodMigration's phase: 1 for the current one.", &pmig_phases);
  return rc ? rc : pmig_metrics(sb);
}

/* ---- registration ---- */

static void map_related(void *ctx, struct ctrl *c, const cJSON *obj)
{
  struct informer *migs = ctx;
  /* a restored pod names its PodMigration */
  const char *owner = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(obj, "metadata.labels"), PG_MIGRATION_LABEL));
  if(owner) {
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", json_get_str(obj, "metadata.namespace") ?
             json_get_str(obj, "metadata.namespace") : "", owner);
    ctrl_enqueue(c, key);
  }
  struct waiting w = { c };
  informer_each(migs, json_get_str(obj, "metadata.namespace"), enqueue_waiting, &w);
}

gw_rc podmotion_register(struct mgr *m, const struct pmig_opts *o)
{
  if(o)
    pmig_opts = *o;
  struct informer *migs = NULL;
  struct ctrl *ctl = NULL;
  struct ctrl_def def = { "podmigration", "PodMigration", &KUBE_POD_MIGRATIONS, reconcile, NULL,
                          0, NULL };
  gw_rc rc = mgr_add_controller(m, &def, &ctl);
  if(!rc)
    rc = mgr_informer(m, &KUBE_POD_MIGRATIONS, &migs);
  /* what validation reads: a pod appearing or starting, a node or its agent appearing, a
   * policy changing (another migration of the namespace ending is seen by its own reconcile,
   * which wakes the waiting ones: a handler of this informer may not walk it) */
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PODS, map_related, migs);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_NODES, map_related, migs);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_MIGRATION_POLICIES, map_related, migs);
  if(!rc)
    rc = mgr_add_metrics(m, metrics, migs);
  if(!rc && pmig_opts.token && pmig_opts.janitor_interval_ms > 0)
    ctrl_enqueue_after(ctl, PG_JANITOR_KEY, pmig_opts.janitor_interval_ms);
  return rc;
}
