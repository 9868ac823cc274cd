/* What one reconcile changes, written once through /status; the phase transition table; the
 * Events emitted after the write. See mig.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "mig.h"

static const char *const phase_names[MP_COUNT] = {
  "Pending",        "Validating",  "Cloning",   "Finalizing", "Streaming", "CutoverPending",
  "CuttingOver",    "Verifying",   "Completed", "Failed",     "Suspended",
};

const char *mig_phase_name(enum mig_phase p)
{
  return p > MP_NONE && p < MP_COUNT ? phase_names[p] : "";
}

enum mig_phase mig_phase_parse(const char *s)
{
  for(int i = 0; s && i < MP_COUNT; i++)
    if(!strcmp(phase_names[i], s))
      return (enum mig_phase)i;
  return MP_NONE;
}

#define B(p) (1u << (p))
/* Rows: from; bits: the phases it may move to (docs/dev/migration-controller.md). */
static const unsigned transitions[MP_COUNT] = {
  [MP_PENDING] = B(MP_VALIDATING) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_VALIDATING] = B(MP_CLONING) | B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_CLONING] = B(MP_FINALIZING) | B(MP_STREAMING) | B(MP_COMPLETED) | B(MP_FAILED) |
                 B(MP_SUSPENDED),
  [MP_FINALIZING] = B(MP_STREAMING) | B(MP_VERIFYING) | B(MP_COMPLETED) | B(MP_FAILED) |
                    B(MP_SUSPENDED),
  [MP_STREAMING] = B(MP_CUTOVER_PENDING) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_CUTOVER_PENDING] = B(MP_CUTTING_OVER) | B(MP_SUSPENDED),
  [MP_CUTTING_OVER] = B(MP_VERIFYING) | B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_VERIFYING] = B(MP_COMPLETED) | B(MP_FAILED) | B(MP_SUSPENDED),
  [MP_COMPLETED] = 0,
  [MP_FAILED] = 0,
  [MP_SUSPENDED] = 0, /* only to suspendedFrom */
};

bool mig_transition_allowed(enum mig_phase from, enum mig_phase to, enum mig_phase resume_to)
{
  if(to <= MP_NONE || to >= MP_COUNT)
    return false;
  if(from == to)
    return true;
  if(from == MP_NONE)
    return to == MP_PENDING;
  if(from == MP_SUSPENDED)
    return to == resume_to && resume_to != MP_SUSPENDED && resume_to != MP_NONE;
  return (transitions[from] & B(to)) != 0;
}

/* ---- queuing ---- */

static char *vfmt(const char *fmt, va_list ap)
{
  char *s = NULL;
  if(vasprintf(&s, fmt, ap) < 0)
    return NULL;
  return s;
}

void mig_set_phase(struct mig *m, enum mig_phase p)
{
  m->ed.phase = p;
}

static struct mig_cond_edit *cond_slot(struct mig *m, const char *type)
{
  for(size_t i = 0; i < m->ed.nconds; i++)
    if(!strcmp(m->ed.conds[i].type, type))
      return &m->ed.conds[i];
  if(m->ed.nconds >= MIG_MAX_CONDS) {
    m->ed.oom = true;
    return NULL;
  }
  struct mig_cond_edit *c = &m->ed.conds[m->ed.nconds++];
  memset(c, 0, sizeof(*c));
  snprintf(c->type, sizeof(c->type), "%s", type);
  return c;
}

void mig_cond(struct mig *m, const char *type, const char *status, const char *reason,
              const char *fmt, ...)
{
  struct mig_cond_edit *c = cond_slot(m, type);
  if(!c)
    return;
  free(c->message);
  c->remove = false;
  snprintf(c->status, sizeof(c->status), "%s", status);
  snprintf(c->reason, sizeof(c->reason), "%s", reason);
  va_list ap;
  va_start(ap, fmt);
  c->message = vfmt(fmt, ap);
  va_end(ap);
  if(!c->message)
    m->ed.oom = true;
}

void mig_cond_remove(struct mig *m, const char *type)
{
  struct mig_cond_edit *c = cond_slot(m, type);
  if(c) {
    free(c->message);
    c->message = NULL;
    c->remove = true;
  }
}

void mig_set(struct mig *m, const char *path, cJSON *v)
{
  struct mig_edit *ed = &m->ed;
  for(size_t i = 0; i < ed->nfields; i++)
    if(!strcmp(ed->fields[i].path, path)) {
      cJSON_Delete(ed->fields[i].value);
      ed->fields[i].value = v;
      return;
    }
  if(ed->nfields >= MIG_MAX_FIELDS) {
    cJSON_Delete(v);
    ed->oom = true;
    return;
  }
  snprintf(ed->fields[ed->nfields].path, sizeof(ed->fields[0].path), "%s", path);
  ed->fields[ed->nfields++].value = v;
}

void mig_set_int(struct mig *m, const char *path, long long v)
{
  cJSON *n = cJSON_CreateNumber((double)v);
  if(!n)
    m->ed.oom = true;
  else
    mig_set(m, path, n);
}

void mig_set_str(struct mig *m, const char *path, const char *v)
{
  cJSON *s = cJSON_CreateString(v);
  if(!s)
    m->ed.oom = true;
  else
    mig_set(m, path, s);
}

void mig_set_bool(struct mig *m, const char *path, bool v)
{
  cJSON *b = cJSON_CreateBool(v);
  if(!b)
    m->ed.oom = true;
  else
    mig_set(m, path, b);
}

void mig_set_now(struct mig *m, const char *path)
{
  char ts[32];
  kt_rfc3339(ts, sizeof(ts), time(NULL));
  mig_set_str(m, path, ts);
}

void mig_unset(struct mig *m, const char *path)
{
  mig_set(m, path, NULL);
}

static void queue_event(struct mig *m, enum mig_ev_dep dep, const char *dep_type,
                        const char *type, const char *reason, const char *fmt, va_list ap)
{
  struct mig_edit *ed = &m->ed;
  if(ed->nevents >= MIG_MAX_EVENTS) {
    log_kv(LOG_WARN, "event dropped: too many in one reconcile", "reason", reason, LOG_END);
    return;
  }
  struct mig_event *e = &ed->events[ed->nevents];
  memset(e, 0, sizeof(*e));
  e->type = type;
  snprintf(e->reason, sizeof(e->reason), "%s", reason);
  e->dep = dep;
  if(dep_type)
    snprintf(e->dep_type, sizeof(e->dep_type), "%s", dep_type);
  e->message = vfmt(fmt, ap);
  if(e->message)
    ed->nevents++;
}

void mig_event(struct mig *m, const char *type, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(m, EVD_ALWAYS, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void mig_event_if_written(struct mig *m, const char *type, const char *reason, const char *fmt,
                          ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(m, EVD_WRITTEN, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void mig_event_if_phase(struct mig *m, const char *type, const char *reason, const char *fmt,
                        ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(m, EVD_PHASE, NULL, type, reason, fmt, ap);
  va_end(ap);
}

void mig_event_if_cond(struct mig *m, const char *cond_type, const char *type,
                       const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  queue_event(m, EVD_COND, cond_type, type, reason, fmt, ap);
  va_end(ap);
}

void mig_requeue(struct mig *m, long ms)
{
  if(ms > 0 && (!m->requeue_ms || ms < m->requeue_ms))
    m->requeue_ms = ms;
}

void mig_fail(struct mig *m, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  mig_cond(m, C_FAILED, COND_TRUE, reason, "%s", msg ? msg : reason);
  mig_set_phase(m, MP_FAILED);
  mig_set_now(m, "completionTime");
  mig_event_if_cond(m, C_FAILED, EV_WARNING, reason, "%s", msg ? msg : reason);
  free(msg);
}

void mig_complete(struct mig *m, const char *reason, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = vfmt(fmt, ap);
  va_end(ap);
  mig_cond(m, C_COMPLETE, COND_TRUE, reason, "%s", msg ? msg : reason);
  mig_set_phase(m, MP_COMPLETED);
  mig_set_now(m, "completionTime");
  mig_event_if_cond(m, C_COMPLETE, EV_NORMAL, "Completed", "%s", msg ? msg : "completed");
  free(msg);
}

void mig_edit_release(struct mig_edit *ed)
{
  for(size_t i = 0; i < ed->nconds; i++)
    free(ed->conds[i].message);
  for(size_t i = 0; i < ed->nfields; i++)
    cJSON_Delete(ed->fields[i].value);
  for(size_t i = 0; i < ed->nevents; i++)
    free(ed->events[i].message);
  memset(ed, 0, sizeof(*ed));
  ed->phase = MP_NONE;
  ed->expect = MP_NONE;
}

/* ---- applying ---- */

static bool json_same(const cJSON *a, const cJSON *b)
{
  return (!a && !b) || (a && b && json_equal(a, b));
}

gw_rc mig_edit_apply(struct mig_edit *ed, cJSON *obj, const char *key, bool *changed)
{
  const char *cur_s = json_get_str(obj, "status.phase");
  enum mig_phase cur = mig_phase_parse(cur_s);
  if(ed->expect != MP_NONE && cur != ed->expect)
    return GW_ECONFLICT; /* someone moved it: decide again from the fresh object */
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(ed->expect_rv[0] && (!rv || strcmp(rv, ed->expect_rv)))
    return GW_ECONFLICT; /* changed since the decision (a spec edit, another writer) */
  ed->phase_changed = false;
  if(ed->phase != MP_NONE && ed->phase != cur) {
    /* a resume returns to the phase written in the object being edited */
    enum mig_phase resume_to = mig_phase_parse(json_get_str(obj, "status.suspendedFrom"));
    if(!mig_transition_allowed(cur, ed->phase, resume_to)) {
      log_kv(LOG_ERROR, "refusing a phase transition the table does not allow", "key", key,
             "from", mig_phase_name(cur), "to", mig_phase_name(ed->phase), LOG_END);
      return GW_EINVAL;
    }
    gw_rc rc = json_set_str(obj, "status.phase", mig_phase_name(ed->phase));
    if(rc)
      return rc;
    ed->phase_changed = *changed = true;
  }
  for(size_t i = 0; i < ed->nconds; i++) {
    struct mig_cond_edit *c = &ed->conds[i];
    const cJSON *before = cond_find(obj, c->type);
    char os[8] = "", orsn[48] = "";
    if(before) {
      snprintf(os, sizeof(os), "%s", json_get_str(before, "status") ? json_get_str(before, "status") : "");
      snprintf(orsn, sizeof(orsn), "%s", json_get_str(before, "reason") ? json_get_str(before, "reason") : "");
    }
    if(c->remove) {
      bool ch = false;
      cond_remove(obj, c->type, &ch);
      c->changed = ch;
      *changed = *changed || ch;
      continue;
    }
    struct cond cd = { c->type, c->status, c->reason, c->message };
    bool ch = false;
    gw_rc rc = cond_set(obj, &cd, &ch);
    if(rc)
      return rc;
    c->changed = !before || strcmp(os, c->status) || strcmp(orsn, c->reason);
    *changed = *changed || ch;
  }
  for(size_t i = 0; i < ed->nfields; i++) {
    char path[80];
    snprintf(path, sizeof(path), "status.%s", ed->fields[i].path);
    const cJSON *old = json_get(obj, path);
    if(json_same(old, ed->fields[i].value))
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
  if(*changed) {
    long long gen = obj_generation(obj);
    const cJSON *og = json_get(obj, "status.observedGeneration");
    if(!cJSON_IsNumber(og) || (long long)og->valuedouble != gen) {
      gw_rc rc = json_set(obj, "status.observedGeneration", cJSON_CreateNumber((double)gen));
      if(rc)
        return rc;
      /* this write decided every condition again from the object at this generation (those
       * it did not touch still hold): none of them is stale after a spec change such as the
       * cutover approval or a suspension */
      cJSON *c;
      cJSON_ArrayForEach(c, json_get_mut(obj, "status.conditions"))
      {
        cJSON *cg = cJSON_GetObjectItemCaseSensitive(c, "observedGeneration");
        if(cJSON_IsNumber(cg))
          cJSON_SetNumberValue(cg, (double)gen);
      }
    }
    if(!json_get(obj, "status.startTime")) {
      char ts[32];
      kt_rfc3339(ts, sizeof(ts), time(NULL));
      gw_rc rc = json_set_str(obj, "status.startTime", ts);
      if(rc)
        return rc;
    }
  }
  return GW_OK;
}

struct apply_ctx {
  struct mig_edit *ed;
  const char *key;
  bool last_changed; /* the last application changed something: that one was written */
};

static gw_rc mutate(void *ctx, cJSON *obj, bool *changed)
{
  struct apply_ctx *a = ctx;
  gw_rc rc = mig_edit_apply(a->ed, obj, a->key, changed);
  a->last_changed = !rc && *changed;
  return rc;
}

static bool event_due(const struct mig_edit *ed, const struct mig_event *e, bool written)
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

gw_rc mig_commit(struct mig *m)
{
  struct mig_edit *ed = &m->ed;
  if(ed->oom)
    return GW_ENOMEM;
  gw_rc rc = GW_OK;
  cJSON *stored = NULL;
  bool written = false;
  if(ed->phase != MP_NONE || ed->nconds || ed->nfields) {
    ed->expect = m->phase;
    const char *rv = json_get_str(m->obj, "metadata.resourceVersion");
    snprintf(ed->expect_rv, sizeof(ed->expect_rv), "%s", rv ? rv : "");
    struct apply_ctx a = { ed, m->rc->key, false };
    rc = rec_update_status(m->rc, m->obj, mutate, &a, &stored);
    written = !rc && a.last_changed;
  }
  if(!rc) {
    const cJSON *target = stored ? stored : m->obj;
    for(size_t i = 0; i < ed->nevents; i++)
      if(event_due(ed, &ed->events[i], written))
        rec_event(m->rc, target, ed->events[i].type, ed->events[i].reason, "%s",
                  ed->events[i].message);
  }
  if(!rc && stored) {
    cJSON_Delete(m->obj);
    m->obj = stored;
    m->phase = mig_phase_parse(json_get_str(m->obj, "status.phase"));
  } else {
    cJSON_Delete(stored);
  }
  mig_edit_release(ed);
  return rc;
}
