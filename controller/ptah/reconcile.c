/* The PtahMigration reconcile and the controller's registration (pm.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "../events.h"
#include "api/api.h"
#include "json.h"
#include "log.h"
#include "pm.h"

static const struct ptah_opts defaults = {
  .runner_image = "ghcr.io/godwit-dev/godwit:latest",
  .protocol = PTAH_PROTOCOL,
  .poll_interval_ms = 5000,
  .failure_interval_ms = 30000,
  .job_deadline_s = 3600,
  .job_ttl_s = 86400,
  .lock_wait_s = 30,
  .retry_base_ms = 2000,
  .log_window_ms = 120000,
};

#define B(p) PHASE_BIT(p)
static const char *const names[PM_COUNT] = { "Pending", "Migrating", "UpToDate", "Uncertain",
                                             "Failed" };
static const unsigned transitions[PM_COUNT] = {
  [PM_PENDING] = B(PM_MIGRATING) | B(PM_FAILED) | B(PM_UNCERTAIN),
  [PM_MIGRATING] = B(PM_UPTODATE) | B(PM_FAILED) | B(PM_UNCERTAIN),
  [PM_UPTODATE] = B(PM_MIGRATING) | B(PM_FAILED) | B(PM_UNCERTAIN),
  [PM_UNCERTAIN] = B(PM_MIGRATING) | B(PM_FAILED),
  [PM_FAILED] = B(PM_MIGRATING) | B(PM_UNCERTAIN),
};
const struct phase_table pm_phases = { "PtahMigration", names, transitions, PM_COUNT,
                                       PM_PENDING, PHASE_NONE, NULL, NULL };

void pm_ready(struct pm *p, const char *status, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  edit_vcond(&p->ed, C_READY, status, reason, fmt, ap);
  va_end(ap);
}

/* ---- this PtahMigration as the host of its operation (drive.h) ---- */

static gw_rc host_digest(void *self, const struct ptah_op *op, bool full, char *out, size_t len)
{
  return full ? pm_job_full_digest(self, op, out, len) : pm_job_digest(self, op, out, len);
}

static gw_rc host_create(void *self, const struct ptah_op *op, bool *created)
{
  return pm_job_create(self, op, created);
}

static void host_detail(void *self, const struct ptah_op *op, char *buf, size_t len)
{
  (void)self;
  snprintf(buf, len, "versions %lld to %lld", op->from, op->to);
}

static void init(struct pm *p, struct rec_ctx *c, const struct ptah_opts *o, cJSON *obj)
{
  memset(p, 0, sizeof(*p));
  p->ctx = c;
  p->o = o;
  p->obj = obj;
  p->ns = c->ns;
  p->name = c->name;
  snprintf(p->uid, sizeof(p->uid), "%s",
           json_get_str(obj, "metadata.uid") ? json_get_str(obj, "metadata.uid") : "");
  p->phase = phase_parse(&pm_phases, json_get_str(obj, "status.phase"));
  const cJSON *bl = json_get(obj, "spec.backoffLimit");
  p->backoff_limit = cJSON_IsNumber(bl) ? (int)bl->valuedouble : PM_DEFAULT_BACKOFF_LIMIT;
  edit_init(&p->ed, &pm_phases);
  p->owner = (struct rj_owner){ .kube = c->kube, .key = c->key, .api_version = "ptah.run/v1",
                                .kind = "PtahMigration", .ns = p->ns, .name = p->name,
                                .uid = p->uid, .label = PM_LABEL, .runner = "ptah",
                                .jobs = mgr_cache(c->mgr, &KUBE_JOBS),
                                .pods = mgr_cache(c->mgr, &KUBE_PODS),
                                .refusals = mgr_cache(c->mgr, &KUBE_EVENTS) };
  p->host = (struct op_host){ .ctx = c, .ed = &p->ed, .obj = obj, .o = o, .owner = &p->owner,
                              .busy_reason = "Migrating", .self = p,
                              .digest = host_digest, .create = host_create,
                              .detail = host_detail };
}

static void release(struct pm *p)
{
  edit_release(&p->ed);
  cJSON_Delete(p->obj);
  cJSON_Delete(p->set_annotation);
}

static gw_rc step(struct pm *p)
{
  if(json_get(p->obj, "metadata.deletionTimestamp"))
    return pm_finalize(p); /* owned Jobs go with it (ownerReferences) */
  if(p->phase == PHASE_NONE) {
    /* the first observation, written alone: a new object enters the table at Pending */
    edit_phase(&p->ed, PM_PENDING);
    pm_ready(p, COND_FALSE, "Pending",
             "the controller has seen the resource and will plan its first run");
    edit_requeue(&p->ed, 1);
    return GW_OK;
  }
  pm_restore(p);
  char msg[2048];
  if(!api_revalidate("ptah.run", "PtahMigration", p->obj, msg, sizeof(msg))) {
    edit_phase(&p->ed, PM_FAILED);
    pm_ready(p, COND_FALSE, "InvalidSpec", "the spec does not validate: %s; fix the spec",
             msg);
    edit_event_if_cond(&p->ed, C_READY, EV_WARNING, "InvalidSpec", "the spec does not "
                       "validate: %s", msg);
    return GW_OK;
  }
  if(json_get_str(p->obj, "status.operation.id") && !edit_queued(&p->ed, "unresolvedRun"))
    return pm_drive(p);
  if(cJSON_IsObject(json_get(p->obj, "status.unresolvedRun")) ||
     edit_queued(&p->ed, "unresolvedRun"))
    return pm_unresolved(p);
  return pm_plan(p);
}

static struct rec_result reconcile(struct rec_ctx *c)
{
  const struct ptah_opts *o = c->user ? c->user : &defaults;
  cJSON *obj = rec_get(c);
  if(!obj)
    return rec_done();
  struct pm p;
  init(&p, c, o, obj);
  gw_rc rc = step(&p);
  gw_rc crc = edit_commit(&p.ed, c, &p.obj);
  if(!rc)
    rc = crc;
  if(!crc)
    pm_after_commit(&p);
  struct rec_result r = edit_result(&p.ed, rc);
  release(&p);
  return r;
}

/* ---- registration ---- */

/* Each PtahMigration whose field at path names obj (in obj's namespace). */
struct refmap {
  struct ctrl *c;
  const char *path;
  const char *ns, *name;
};

static void enqueue_ref(void *ctx, const char *key, const cJSON *obj)
{
  struct refmap *m = ctx;
  const char *n = json_get_str(obj, m->path);
  if(n && !strcmp(n, m->name))
    ctrl_enqueue(m->c, key);
}

static void map_configmap(void *ctx, struct ctrl *c, const cJSON *obj)
{
  struct informer *pms = ctx;
  struct refmap m = { c, "spec.migrations.configMapRef.name",
                      json_get_str(obj, "metadata.namespace"), json_get_str(obj, "metadata.name") };
  if(m.ns && m.name)
    informer_each(pms, m.ns, enqueue_ref, &m);
}

/* A label or a spec field that names the PtahMigration. */
static void map_named(struct ctrl *c, const cJSON *obj, const char *name)
{
  const char *ns = json_get_str(obj, "metadata.namespace");
  if(!ns || !name)
    return;
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  ctrl_enqueue(c, key);
}

static void map_pod(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  const cJSON *labels = json_get(obj, "metadata.labels");
  map_named(c, obj, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, PM_LABEL)));
}

static void map_record(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  const char *kind = json_get_str(obj, "spec.ownerRef.kind");
  if(kind && !strcmp(kind, "PtahMigration"))
    map_named(c, obj, json_get_str(obj, "spec.ownerRef.name"));
}

static void map_ack(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  map_named(c, obj, json_get_str(obj, "spec.migrationRef.name"));
}

gw_rc ptah_register(struct mgr *m, const struct ptah_opts *o)
{
  struct ctrl_def def = { "ptahmigration", "PtahMigration", &KUBE_PTAH_MIGRATIONS, reconcile,
                          (void *)(o ? o : &defaults), 0, NULL };
  struct ctrl *ctl = NULL;
  struct informer *pms = NULL;
  gw_rc rc = mgr_add_controller(m, &def, &ctl);
  if(!rc)
    rc = mgr_informer(m, &KUBE_PTAH_MIGRATIONS, &pms);
  if(!rc)
    rc = ctrl_watch_owned(ctl, &KUBE_JOBS, "ptah.run", "PtahMigration");
  if(!rc)
    rc = rj_watch_refusals(m);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PODS, map_pod, NULL);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_CONFIGMAPS, map_configmap, pms);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PTAH_RESULT_RECORDS, map_record, NULL);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PTAH_RUN_ACKS, map_ack, NULL);
  if(!rc)
    rc = mgr_add_metrics(m, pm_metrics, pms);
  return rc;
}
