/* The PtahSchema reconcile and its registration (ps.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "../events.h"
#include "api/api.h"
#include "json.h"
#include "log.h"
#include "ps.h"

#define B(p) PHASE_BIT(p)
#define ALL (B(PS_PLANNING) | B(PS_AWAITING) | B(PS_APPLYING) | B(PS_OBSERVING) | B(PS_READY) | \
             B(PS_BLOCKED) | B(PS_FAILED))
static const char *const names[PS_COUNT] = { "Pending", "Planning", "AwaitingApproval",
                                             "Applying", "Observing", "Ready", "Blocked",
                                             "Failed" };
/* Pending is the first observation only; an Observe is entered from an Apply only. */
static const unsigned transitions[PS_COUNT] = {
  [PS_PENDING] = ALL & ~B(PS_OBSERVING),
  [PS_PLANNING] = ALL & ~B(PS_PLANNING) & ~B(PS_OBSERVING),
  [PS_AWAITING] = ALL & ~B(PS_AWAITING) & ~B(PS_OBSERVING),
  [PS_APPLYING] = ALL & ~B(PS_APPLYING),
  [PS_OBSERVING] = ALL & ~B(PS_OBSERVING),
  [PS_READY] = ALL & ~B(PS_READY) & ~B(PS_OBSERVING),
  [PS_BLOCKED] = ALL & ~B(PS_BLOCKED) & ~B(PS_OBSERVING),
  [PS_FAILED] = ALL & ~B(PS_FAILED) & ~B(PS_OBSERVING),
};
const struct phase_table ps_phases = { "PtahSchema", names, transitions, PS_COUNT, PS_PENDING,
                                       PHASE_NONE, NULL, NULL };

void ps_ready(struct ps *p, const char *status, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  edit_vcond(&p->ed, C_READY, status, reason, fmt, ap);
  va_end(ap);
}

/* ---- this PtahSchema as the host of its operation (drive.h) ---- */

static gw_rc host_digest(void *self, const struct ptah_op *op, bool full, char *out, size_t len)
{
  return ps_job_digest(self, op, full, out, len);
}

static gw_rc host_create(void *self, const struct ptah_op *op, bool *created)
{
  return ps_job_create(self, op, created);
}

static void host_detail(void *self, const struct ptah_op *op, char *buf, size_t len)
{
  struct ps *p = self;
  const char *digest = json_get_str(p->obj, "status.plan.digest");
  if(!strcmp(op->type, "Plan"))
    snprintf(buf, len, "the plan of desired schema %s", op->desired);
  else
    snprintf(buf, len, "plan %s", digest ? digest : "");
}

static void init(struct ps *p, struct rec_ctx *c, const struct ptah_opts *o, cJSON *obj)
{
  memset(p, 0, sizeof(*p));
  p->ctx = c;
  p->o = o;
  p->obj = obj;
  p->ns = c->ns;
  p->name = c->name;
  snprintf(p->uid, sizeof(p->uid), "%s",
           json_get_str(obj, "metadata.uid") ? json_get_str(obj, "metadata.uid") : "");
  p->phase = phase_parse(&ps_phases, json_get_str(obj, "status.phase"));
  edit_init(&p->ed, &ps_phases);
  p->owner = (struct rj_owner){ .kube = c->kube, .key = c->key, .api_version = "ptah.run/v1",
                                .kind = "PtahSchema", .ns = p->ns, .name = p->name,
                                .uid = p->uid, .label = PS_LABEL, .runner = "ptah",
                                .jobs = mgr_cache(c->mgr, &KUBE_JOBS),
                                .pods = mgr_cache(c->mgr, &KUBE_PODS),
                                .refusals = mgr_cache(c->mgr, &KUBE_EVENTS) };
  p->host = (struct op_host){ .ctx = c, .ed = &p->ed, .obj = obj, .o = o, .owner = &p->owner,
                              .busy_reason = "Planning", .self = p,
                              .digest = host_digest, .create = host_create,
                              .detail = host_detail };
}

static gw_rc step(struct ps *p)
{
  if(json_get(p->obj, "metadata.deletionTimestamp"))
    return GW_OK; /* owned Jobs and ConfigMaps go with it (ownerReferences) */
  if(p->phase == PHASE_NONE) {
    edit_phase(&p->ed, PS_PENDING);
    ps_ready(p, COND_FALSE, "Pending", "the controller has seen the resource and will compute "
             "its first plan");
    edit_requeue(&p->ed, 1);
    return GW_OK;
  }
  char msg[2048];
  if(!api_revalidate("ptah.run", "PtahSchema", p->obj, msg, sizeof(msg))) {
    edit_phase(&p->ed, PS_FAILED);
    ps_ready(p, COND_FALSE, "InvalidSpec", "the spec does not validate: %s; fix the spec", msg);
    edit_event_if_cond(&p->ed, C_READY, EV_WARNING, "InvalidSpec", "the spec does not "
                       "validate: %s", msg);
    return GW_OK;
  }
  if(json_get_str(p->obj, "status.operation.id"))
    return ps_drive(p);
  return ps_decide(p);
}

static struct rec_result reconcile(struct rec_ctx *c)
{
  const struct ptah_opts *o = c->user;
  cJSON *obj = rec_get(c);
  if(!obj)
    return rec_done();
  struct ps p;
  init(&p, c, o, obj);
  gw_rc rc = step(&p);
  gw_rc crc = edit_commit(&p.ed, c, &p.obj);
  if(!rc)
    rc = crc;
  if(!crc)
    ps_after_commit(&p);
  struct rec_result r = edit_result(&p.ed, rc);
  edit_release(&p.ed);
  cJSON_Delete(p.obj);
  return r;
}

/* ---- registration ---- */

static void map_named(struct ctrl *c, const cJSON *obj, const char *name)
{
  const char *ns = json_get_str(obj, "metadata.namespace");
  if(!ns || !name)
    return;
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  ctrl_enqueue(c, key);
}

struct refmap {
  struct ctrl *c;
  const char *name;
};

static void enqueue_ref(void *ctx, const char *key, const cJSON *obj)
{
  struct refmap *m = ctx;
  const char *n = json_get_str(obj, "spec.schema.configMapRef.name");
  if(n && !strcmp(n, m->name))
    ctrl_enqueue(m->c, key);
}

static void map_configmap(void *ctx, struct ctrl *c, const cJSON *obj)
{
  struct informer *schemas = ctx;
  const char *ns = json_get_str(obj, "metadata.namespace");
  struct refmap m = { c, json_get_str(obj, "metadata.name") };
  if(ns && m.name)
    informer_each(schemas, ns, enqueue_ref, &m);
  const cJSON *labels = json_get(obj, "metadata.labels");
  map_named(c, obj, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, PS_LABEL)));
}

static void map_pod(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  const cJSON *labels = json_get(obj, "metadata.labels");
  map_named(c, obj, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, PS_LABEL)));
}

static void map_record(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  const char *kind = json_get_str(obj, "spec.ownerRef.kind");
  if(kind && !strcmp(kind, "PtahSchema"))
    map_named(c, obj, json_get_str(obj, "spec.ownerRef.name"));
}

static void map_approval(void *ctx, struct ctrl *c, const cJSON *obj)
{
  (void)ctx;
  map_named(c, obj, json_get_str(obj, "spec.schemaRef.name"));
}

gw_rc ptah_schema_register(struct mgr *m, const struct ptah_opts *o)
{
  struct ctrl_def def = { "ptahschema", "PtahSchema", &KUBE_PTAH_SCHEMAS, reconcile,
                          (void *)o, 0, NULL };
  struct ctrl *ctl = NULL;
  struct informer *schemas = NULL;
  gw_rc rc = o ? GW_OK : GW_EINVAL;
  if(!rc)
    rc = mgr_add_controller(m, &def, &ctl);
  if(!rc)
    rc = mgr_informer(m, &KUBE_PTAH_SCHEMAS, &schemas);
  if(!rc)
    rc = ctrl_watch_owned(ctl, &KUBE_JOBS, "ptah.run", "PtahSchema");
  if(!rc)
    rc = rj_watch_refusals(m);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PODS, map_pod, NULL);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_CONFIGMAPS, map_configmap, schemas);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PTAH_RESULT_RECORDS, map_record, NULL);
  if(!rc)
    rc = ctrl_watch(ctl, &KUBE_PTAH_APPROVALS, map_approval, NULL);
  if(!rc)
    rc = mgr_add_metrics(m, ps_metrics, schemas);
  return rc;
}
