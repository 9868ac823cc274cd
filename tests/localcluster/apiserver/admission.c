/*
 * admission.c: the admission chain's webhook steps, as kube-apiserver runs them.
 *
 * Mutating (admission_mutate): webhooks in configuration-name order, then webhook order, one at
 * a time, each seeing the previous one's result. A webhook that changed the object makes every
 * webhook called before it with reinvocationPolicy IfNeeded due for a second round; the second
 * round (at most one) calls only those, and only if they still match. A patched custom resource
 * gets its schema's defaults again (the dispatcher's object defaulter). A webhook reached through
 * matchPolicy Equivalent gets the object converted to the version its rule names (crd_convert)
 * and the result is converted back to the request's version at the end.
 *
 * Validating (admission_validate): every matching webhook is called at once (one thread per
 * webhook, as kube's goroutines); the first failure in webhook order is returned (kube returns
 * whichever arrives first), warnings are added in webhook order.
 *
 * Failures: a webhook that cannot be called (transport, HTTP status, malformed or mismatched
 * review, timeout) fails the request with kube's InternalError `Internal error occurred:
 * failed calling webhook "<name>": ...` under failurePolicy Fail, and is logged and skipped
 * under Ignore; a denial is the webhook's Status (admission_call.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_int.h"
#include "json.h"
#include "log.h"

/* The object and old object in the version the current webhook is called with. */
struct vattr {
  const struct ls_adm_attrs *a;
  cJSON *cur;
  char cur_version[32];
  const cJSON *old;
  cJSON *old_conv;
  char old_version[32];
};

static cJSON *convert_one(const struct ls_adm_attrs *a, cJSON *o, const char *version)
{
  cJSON *st = crd_convert(a->group, a->resource, &o, 1, version);
  if(!st)
    return NULL;
  const char *m = json_get_str(st, "message");
  cJSON *ie = adm_internal_error(m ? m : "conversion failed");
  cJSON_Delete(st);
  return ie;
}

static cJSON *to_version(struct vattr *v, const char *version, const cJSON **obj, const cJSON **old)
{
  cJSON *st = NULL;
  if(v->cur && strcmp(v->cur_version, version) && !(st = convert_one(v->a, v->cur, version)))
    snprintf(v->cur_version, sizeof(v->cur_version), "%s", version);
  *obj = v->cur;
  *old = v->old;
  if(st || !v->old || !strcmp(version, v->a->version))
    return st;
  if(!v->old_conv || strcmp(v->old_version, version)) {
    cJSON_Delete(v->old_conv);
    v->old_conv = cJSON_Duplicate(v->old, true);
    snprintf(v->old_version, sizeof(v->old_version), "%s", version);
    if((st = convert_one(v->a, v->old_conv, version)))
      return st;
  }
  *old = v->old_conv;
  return NULL;
}

/* The attributes with "" for every absent string, so the rest may read them freely. */
static struct ls_adm_attrs normalized(const struct ls_adm_attrs *in)
{
  struct ls_adm_attrs a = *in;
  const char **f[] = { &a.operation, &a.group, &a.version, &a.kind, &a.resource, &a.subresource, &a.name, &a.namespace };
  for(size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    if(!*f[i])
      *f[i] = "";
  return a;
}

static void add_warnings(struct ls_warnings *w, const struct adm_result *res)
{
  for(size_t i = 0; w && i < res->nwarnings; i++)
    ls_warnings_add(w, res->warnings[i]);
}

static void fail_open(const struct adm_hook *h, const char *why)
{
  log_kv(LOG_WARN, "Failed calling webhook, failing open", "webhook", h->name, "error", why, LOG_END);
}

/* One mutating round; *changed_any is set when a webhook changed the object. */
static cJSON *mutate_round(struct adm_set *set, struct vattr *v, int round, bool *prev, bool *reinvoke,
                           bool *changed_any, struct ls_warnings *w)
{
  for(size_t i = 0; i < set->n; i++) {
    const struct adm_hook *h = &set->hooks[i];
    struct adm_invocation inv;
    bool call;
    cJSON *st = adm_should_call(h, v->a, v->cur, v->old, &inv, &call);
    if(st)
      return st;
    if(!call || (round == 1 && !reinvoke[i]))
      continue;
    const cJSON *obj, *old;
    if((st = to_version(v, inv.version, &obj, &old)))
      return st;
    struct adm_result res;
    adm_call(&inv, v->a, obj, old, &res);
    add_warnings(w, &res);
    if(res.outcome == ADM_CALL_ERROR && !h->fail_open)
      st = adm_internal_error(res.why);
    else if(res.outcome == ADM_CALL_ERROR)
      fail_open(h, res.why);
    else if(res.outcome == ADM_REJECTED) {
      st = res.status;
      res.status = NULL;
    } else if(res.patched) {
      cJSON_Delete(v->cur);
      v->cur = res.patched;
      res.patched = NULL;
      /* the dispatcher runs the object defaulter on a patched object (structural defaults for CRs) */
      crd_default(inv.group, inv.resource, inv.version, v->cur);
      for(size_t j = 0; j < set->n; j++)
        if(prev[j])
          reinvoke[j] = true, prev[j] = false;
      *changed_any = true;
    }
    adm_result_release(&res);
    if(st)
      return st;
    if(h->reinvoke)
      prev[i] = true;
  }
  return NULL;
}

cJSON *admission_mutate(const struct ls_adm_attrs *attrs, cJSON **obj, const cJSON *old, struct ls_warnings *w)
{
  struct ls_adm_attrs na = normalized(attrs);
  const struct ls_adm_attrs *a = &na;
  struct adm_set *set = adm_set_get(true);
  if(!set || !set->n) {
    adm_set_put(set);
    return NULL;
  }
  struct vattr v = { .a = a, .cur = obj && *obj ? cJSON_Duplicate(*obj, true) : NULL, .old = old };
  snprintf(v.cur_version, sizeof(v.cur_version), "%s", a->version);
  bool *prev = calloc(set->n, sizeof(bool)), *reinvoke = calloc(set->n, sizeof(bool));
  bool changed = false, changed_first = false;
  cJSON *st = prev && reinvoke ? NULL : adm_internal_error("out of memory");
  if(!st)
    st = mutate_round(set, &v, 0, prev, reinvoke, &changed_first, w);
  if(!st && changed_first)
    st = mutate_round(set, &v, 1, prev, reinvoke, &changed, w);
  if(!st && v.cur && strcmp(v.cur_version, a->version))
    st = convert_one(a, v.cur, a->version);
  if(!st && v.cur && obj && *obj && !json_equal(v.cur, *obj)) {
    cJSON_Delete(*obj);
    *obj = v.cur;
    v.cur = NULL;
  }
  cJSON_Delete(v.cur);
  cJSON_Delete(v.old_conv);
  free(prev);
  free(reinvoke);
  adm_set_put(set);
  return st;
}

/* ---- validating ---- */

struct vcall {
  struct adm_invocation inv;
  const struct ls_adm_attrs *a;
  const cJSON *obj, *old;
  struct adm_result res;
  pthread_t thread;
  bool started;
};

static void *vcall_run(void *arg)
{
  struct vcall *c = arg;
  adm_call(&c->inv, c->a, c->obj, c->old, &c->res);
  return NULL;
}

/* Copies of obj and old per version the webhooks are called with. */
struct versions {
  char v[8][32];
  cJSON *obj[8], *old[8];
  size_t n;
};

static cJSON *versioned(struct versions *vs, const struct ls_adm_attrs *a, const cJSON *obj, const cJSON *old,
                        const char *version, const cJSON **o, const cJSON **ol)
{
  *o = obj;
  *ol = old;
  if(!strcmp(version, a->version))
    return NULL;
  size_t i;
  for(i = 0; i < vs->n && strcmp(vs->v[i], version); i++)
    ;
  if(i == vs->n) {
    if(vs->n == 8)
      return adm_internal_error("too many versions");
    snprintf(vs->v[i], sizeof(vs->v[i]), "%s", version);
    vs->obj[i] = obj ? cJSON_Duplicate(obj, true) : NULL;
    vs->old[i] = old ? cJSON_Duplicate(old, true) : NULL;
    vs->n++;
    cJSON *st = NULL;
    if(vs->obj[i])
      st = convert_one(a, vs->obj[i], version);
    if(!st && vs->old[i])
      st = convert_one(a, vs->old[i], version);
    if(st)
      return st;
  }
  *o = vs->obj[i];
  *ol = vs->old[i];
  return NULL;
}

cJSON *admission_validate(const struct ls_adm_attrs *attrs, const cJSON *obj, const cJSON *old, struct ls_warnings *w)
{
  struct ls_adm_attrs na = normalized(attrs);
  const struct ls_adm_attrs *a = &na;
  struct adm_set *set = adm_set_get(false);
  if(!set || !set->n) {
    adm_set_put(set);
    return NULL;
  }
  struct vcall *calls = calloc(set->n, sizeof(*calls));
  struct versions vs = { 0 };
  size_t n = 0;
  cJSON *st = calls ? NULL : adm_internal_error("out of memory");
  for(size_t i = 0; !st && i < set->n; i++) {
    bool call;
    st = adm_should_call(&set->hooks[i], a, obj, old, &calls[n].inv, &call);
    if(!st && call) {
      calls[n].a = a;
      st = versioned(&vs, a, obj, old, calls[n].inv.version, &calls[n].obj, &calls[n].old);
      n++;
    }
  }
  for(size_t i = 0; !st && n > 1 && i < n; i++)
    calls[i].started = pthread_create(&calls[i].thread, NULL, vcall_run, &calls[i]) == 0;
  for(size_t i = 0; !st && i < n; i++) {
    if(calls[i].started)
      pthread_join(calls[i].thread, NULL);
    else
      vcall_run(&calls[i]);
  }
  for(size_t i = 0; i < n; i++) {
    struct adm_result *res = &calls[i].res;
    add_warnings(w, res);
    if(!st && res->outcome == ADM_CALL_ERROR && !calls[i].inv.h->fail_open)
      st = adm_internal_error(res->why);
    else if(res->outcome == ADM_CALL_ERROR && calls[i].inv.h->fail_open)
      fail_open(calls[i].inv.h, res->why);
    else if(!st && res->outcome == ADM_REJECTED) {
      st = res->status;
      res->status = NULL;
    }
    adm_result_release(res);
  }
  for(size_t i = 0; i < vs.n; i++) {
    cJSON_Delete(vs.obj[i]);
    cJSON_Delete(vs.old[i]);
  }
  free(calls);
  adm_set_put(set);
  return st;
}
