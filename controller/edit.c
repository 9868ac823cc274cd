/* edit.c: one reconcile's status changes, written once (edit.h). */
#include "edit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conditions.h"
#include "json.h"
#include "ktime.h"
#include "log.h"
#include "manager.h"

void edit_init(struct status_edit *ed, const struct phase_table *phases)
{
  memset(ed, 0, sizeof(*ed));
  ed->phases = phases;
  ed->phase = PHASE_NONE;
  ed->expect = PHASE_NONE;
}

void edit_release(struct status_edit *ed)
{
  for(size_t i = 0; i < ed->nconds; i++)
    free(ed->conds[i].message);
  for(size_t i = 0; i < ed->nfields; i++)
    cJSON_Delete(ed->fields[i].value);
  for(size_t i = 0; i < ed->nevents; i++)
    free(ed->events[i].message);
  const struct phase_table *t = ed->phases;
  long requeue = ed->requeue_ms;
  bool written = ed->written;
  edit_init(ed, t);
  ed->requeue_ms = requeue;
  ed->written = written;
}

long edit_next_look(const struct status_edit *ed)
{
  if(ed->requeue_ms > 0 && ed->written && ed->requeue_ms < EDIT_SETTLE_MS)
    return EDIT_SETTLE_MS;
  return ed->requeue_ms;
}

/* ---- queuing ---- */

static char *vfmt(const char *fmt, va_list ap)
{
  char *s = NULL;
  if(vasprintf(&s, fmt, ap) < 0)
    return NULL;
  return s;
}

static void table_full(struct status_edit *ed, const char *table, const char *what)
{
  if(!ed->full)
    log_kv(LOG_ERROR, "status edit: too many rows in one reconcile (a bug)", "table", table,
           "row", what, LOG_END);
  ed->full = table;
}

void edit_phase(struct status_edit *ed, int phase)
{
  ed->phase = phase;
}

static struct edit_cond *cond_slot(struct status_edit *ed, const char *type)
{
  for(size_t i = 0; i < ed->nconds; i++)
    if(!strcmp(ed->conds[i].type, type))
      return &ed->conds[i];
  if(ed->nconds >= EDIT_MAX_CONDS) {
    table_full(ed, "conditions", type);
    return NULL;
  }
  struct edit_cond *c = &ed->conds[ed->nconds++];
  memset(c, 0, sizeof(*c));
  snprintf(c->type, sizeof(c->type), "%s", type);
  return c;
}

void edit_vcond(struct status_edit *ed, const char *type, const char *status, const char *reason,
                const char *fmt, va_list ap)
{
  struct edit_cond *c = cond_slot(ed, type);
  if(!c)
    return;
  free(c->message);
  c->remove = false;
  snprintf(c->status, sizeof(c->status), "%s", status);
  snprintf(c->reason, sizeof(c->reason), "%s", reason);
  c->message = vfmt(fmt, ap);
  if(!c->message)
    ed->oom = true;
}

void edit_cond(struct status_edit *ed, const char *type, const char *status, const char *reason,
               const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  edit_vcond(ed, type, status, reason, fmt, ap);
  va_end(ap);
}

const struct edit_cond *edit_queued_cond(const struct status_edit *ed, const char *type)
{
  for(size_t i = 0; i < ed->nconds; i++)
    if(!strcmp(ed->conds[i].type, type))
      return ed->conds[i].remove ? NULL : &ed->conds[i];
  return NULL;
}

void edit_cond_remove(struct status_edit *ed, const char *type)
{
  struct edit_cond *c = cond_slot(ed, type);
  if(c) {
    free(c->message);
    c->message = NULL;
    c->remove = true;
  }
}

void edit_set(struct status_edit *ed, const char *path, cJSON *v)
{
  for(size_t i = 0; i < ed->nfields; i++)
    if(!strcmp(ed->fields[i].path, path)) {
      cJSON_Delete(ed->fields[i].value);
      ed->fields[i].value = v;
      return;
    }
  if(ed->nfields >= EDIT_MAX_FIELDS) {
    cJSON_Delete(v);
    table_full(ed, "fields", path);
    return;
  }
  snprintf(ed->fields[ed->nfields].path, sizeof(ed->fields[0].path), "%s", path);
  ed->fields[ed->nfields++].value = v;
}

static void set_new(struct status_edit *ed, const char *path, cJSON *v)
{
  if(!v)
    ed->oom = true;
  else
    edit_set(ed, path, v);
}

void edit_set_int(struct status_edit *ed, const char *path, long long v)
{
  set_new(ed, path, cJSON_CreateNumber((double)v));
}

void edit_set_str(struct status_edit *ed, const char *path, const char *v)
{
  set_new(ed, path, cJSON_CreateString(v));
}

void edit_set_bool(struct status_edit *ed, const char *path, bool v)
{
  set_new(ed, path, cJSON_CreateBool(v));
}

void edit_set_now(struct status_edit *ed, const char *path)
{
  char ts[32];
  kt_rfc3339(ts, sizeof(ts), time(NULL));
  edit_set_str(ed, path, ts);
}

void edit_unset(struct status_edit *ed, const char *path)
{
  edit_set(ed, path, NULL);
}

const cJSON *edit_queued(const struct status_edit *ed, const char *path)
{
  for(size_t i = 0; i < ed->nfields; i++)
    if(!strcmp(ed->fields[i].path, path))
      return ed->fields[i].value;
  return NULL;
}

static void queue_event(struct status_edit *ed, enum edit_ev_dep dep, const char *dep_type,
                        const char *type, const char *reason, const char *fmt, va_list ap)
{
  if(ed->nevents >= EDIT_MAX_EVENTS) {
    table_full(ed, "events", reason);
    return;
  }
  struct edit_event *e = &ed->events[ed->nevents];
  memset(e, 0, sizeof(*e));
  e->type = type;
  snprintf(e->reason, sizeof(e->reason), "%s", reason);
  e->dep = dep;
  if(dep_type)
    snprintf(e->dep_type, sizeof(e->dep_type), "%s", dep_type);
  e->message = vfmt(fmt, ap);
  if(e->message)
    ed->nevents++;
  else
    ed->oom = true;
}

void edit_event(struct status_edit *ed, const char *type, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(ed, EVD_ALWAYS, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void edit_event_if_written(struct status_edit *ed, const char *type, const char *reason,
                           const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(ed, EVD_WRITTEN, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void edit_event_if_phase(struct status_edit *ed, const char *type, const char *reason,
                         const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(ed, EVD_PHASE, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void edit_event_if_cond(struct status_edit *ed, const char *cond_type, const char *type,
                        const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(ed, EVD_COND, cond_type, type, reason, fmt, ap);
  va_end(ap);
}

void edit_requeue(struct status_edit *ed, long ms)
{
  if(ms > 0 && (!ed->requeue_ms || ms < ed->requeue_ms))
    ed->requeue_ms = ms;
}

/* ---- applying ---- */

static gw_rc apply_phase(struct status_edit *ed, cJSON *obj, const char *key, int cur,
                         bool *changed)
{
  const struct phase_table *t = ed->phases;
  ed->phase_changed = false;
  if(ed->phase == PHASE_NONE || ed->phase == cur)
    return GW_OK;
  char path[80] = "";
  if(t->resume_field)
    snprintf(path, sizeof(path), "status.%s", t->resume_field);
  int resume_to = *path ? phase_parse(t, json_get_str(obj, path)) : PHASE_NONE;
  if(!phase_allowed(t, cur, ed->phase, resume_to)) {
    log_kv(LOG_ERROR, "refusing a phase transition the table does not allow", "kind", t->kind,
           "key", key, "from", phase_name(t, cur), "to", phase_name(t, ed->phase), LOG_END);
    return GW_EINVAL;
  }
  gw_rc rc = json_set_str(obj, "status.phase", phase_name(t, ed->phase));
  if(!rc)
    ed->phase_changed = *changed = true;
  return rc;
}

static gw_rc apply_conds(struct status_edit *ed, cJSON *obj, bool *changed)
{
  for(size_t i = 0; i < ed->nconds; i++) {
    struct edit_cond *c = &ed->conds[i];
    const cJSON *before = cond_find(obj, c->type);
    char os[8] = "", orsn[48] = "";
    if(before) {
      const char *s = json_get_str(before, "status"), *r = json_get_str(before, "reason");
      snprintf(os, sizeof(os), "%s", s ? s : "");
      snprintf(orsn, sizeof(orsn), "%s", r ? r : "");
    }
    bool ch = false;
    if(c->remove) {
      cond_remove(obj, c->type, &ch);
      c->changed = ch;
    } else {
      struct cond cd = { c->type, c->status, c->reason, c->message };
      gw_rc rc = cond_set(obj, &cd, &ch);
      if(rc)
        return rc;
      c->changed = !before || strcmp(os, c->status) || strcmp(orsn, c->reason);
    }
    *changed = *changed || ch;
  }
  return GW_OK;
}

static gw_rc apply_fields(struct status_edit *ed, cJSON *obj, bool *changed)
{
  for(size_t i = 0; i < ed->nfields; i++) {
    char path[80];
    snprintf(path, sizeof(path), "status.%s", ed->fields[i].path);
    if(json_equal_opt(json_get(obj, path), ed->fields[i].value))
      continue;
    if(!ed->fields[i].value) {
      json_remove(obj, path);
    } else {
      cJSON *dup = cJSON_Duplicate(ed->fields[i].value, 1);
      if(!dup)
        return GW_ENOMEM;
      gw_rc rc = json_set(obj, path, dup);
      if(rc)
        return rc;
    }
    *changed = true;
  }
  return GW_OK;
}

/* What every write carries: status.observedGeneration, and the start time on the first one. */
static gw_rc stamp(const struct status_edit *ed, cJSON *obj)
{
  long long gen = obj_generation(obj);
  const cJSON *og = json_get(obj, "status.observedGeneration");
  if(!cJSON_IsNumber(og) || (long long)og->valuedouble != gen) {
    gw_rc rc = json_set(obj, "status.observedGeneration", cJSON_CreateNumber((double)gen));
    if(rc)
      return rc;
    /* the conditions keep the generation they were decided at (cond_set_at stamps the ones
     * this write decided): one left older says it was not looked at again since */
  }
  const char *start = ed->phases->start_field;
  char path[80];
  snprintf(path, sizeof(path), "status.%s", start ? start : "");
  if(start && !json_get(obj, path)) {
    char ts[32];
    kt_rfc3339(ts, sizeof(ts), time(NULL));
    return json_set_str(obj, path, ts);
  }
  return GW_OK;
}

gw_rc edit_apply(struct status_edit *ed, cJSON *obj, const char *key, bool *changed)
{
  int cur = phase_parse(ed->phases, json_get_str(obj, "status.phase"));
  if(ed->expect != PHASE_NONE && cur != ed->expect)
    return GW_ECONFLICT; /* someone moved it: decide again from the fresh object */
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(ed->expect_rv[0] && (!rv || strcmp(rv, ed->expect_rv)))
    return GW_ECONFLICT; /* changed since the decision (a spec edit, another writer) */
  gw_rc rc = apply_phase(ed, obj, key, cur, changed);
  if(!rc)
    rc = apply_conds(ed, obj, changed);
  if(!rc)
    rc = apply_fields(ed, obj, changed);
  if(!rc && *changed)
    rc = stamp(ed, obj);
  return rc;
}

struct apply_ctx {
  struct status_edit *ed;
  const char *key;
  bool last_changed; /* the last application changed something: that one was written */
};

static gw_rc mutate(void *ctx, cJSON *obj, bool *changed)
{
  struct apply_ctx *a = ctx;
  gw_rc rc = edit_apply(a->ed, obj, a->key, changed);
  a->last_changed = !rc && *changed;
  return rc;
}

static bool event_due(const struct status_edit *ed, const struct edit_event *e, bool written)
{
  if(e->dep == EVD_ALWAYS)
    return true;
  if(!written)
    return false;
  if(e->dep == EVD_WRITTEN)
    return true;
  if(e->dep == EVD_PHASE)
    return ed->phase_changed;
  for(size_t i = 0; i < ed->nconds; i++)
    if(!strcmp(ed->conds[i].type, e->dep_type))
      return ed->conds[i].changed;
  return false;
}

gw_rc edit_commit(struct status_edit *ed, struct rec_ctx *rc_ctx, cJSON **obj)
{
  gw_rc rc = ed->full ? GW_ETOOBIG : ed->oom ? GW_ENOMEM : GW_OK;
  cJSON *stored = NULL;
  bool written = false;
  ed->written = false;
  if(!rc && (ed->phase != PHASE_NONE || ed->nconds || ed->nfields)) {
    ed->expect = phase_parse(ed->phases, json_get_str(*obj, "status.phase"));
    const char *rv = json_get_str(*obj, "metadata.resourceVersion");
    snprintf(ed->expect_rv, sizeof(ed->expect_rv), "%s", rv ? rv : "");
    struct apply_ctx a = { ed, rc_ctx->key, false };
    rc = rec_update_status(rc_ctx, *obj, mutate, &a, &stored);
    written = !rc && a.last_changed;
  }
  if(!rc) {
    const cJSON *target = stored ? stored : *obj;
    for(size_t i = 0; i < ed->nevents; i++)
      if(event_due(ed, &ed->events[i], written))
        rec_event(rc_ctx, target, ed->events[i].type, ed->events[i].reason, "%s",
                  ed->events[i].message);
  }
  ed->written = written;
  if(!rc && stored) {
    cJSON_Delete(*obj);
    *obj = stored;
  } else {
    cJSON_Delete(stored);
  }
  edit_release(ed);
  return rc;
}

struct rec_result edit_result(const struct status_edit *ed, gw_rc rc)
{
  if(rc == GW_ECONFLICT)
    return rec_requeue_after(500); /* it changed meanwhile: decide again from the fresh copy */
  if(rc == GW_ENOTFOUND)
    return rec_done();
  if(rc)
    return rec_retry(rc);
  long next = edit_next_look(ed);
  return next > 0 ? rec_requeue_after(next) : rec_done();
}
