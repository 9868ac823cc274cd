/* rest_update.c: update (PUT), patch (PATCH), the /status subresource, internal modifications
 * (finalizer removal by the GC), and pods/NAME/binding. Optimistic concurrency: a write
 * carrying metadata.resourceVersion fails with 409 when the object moved; one without is
 * retried on the new state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ssa.h"
#include "write.h"

static const char *const server_meta[] = { "uid", "creationTimestamp", "deletionTimestamp",
                                           "deletionGracePeriodSeconds", "generation",
                                           "namespace" };

/* What the client may not change: server metadata; status through the main resource;
 * everything but status through /status. Returns the object to go on with. */
static cJSON *carry_over(const struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(!strcmp(w->sub, "status")) {
    cJSON *status = cJSON_DetachItemFromObject(obj, "status");
    cJSON_Delete(obj);
    obj = cJSON_Duplicate(old, 1);
    cJSON_DeleteItemFromObject(obj, "status");
    if(status)
      cJSON_AddItemToObject(obj, "status", status);
    return obj;
  }
  cJSON *m = ls_meta_obj(obj);
  const cJSON *om = cJSON_GetObjectItem(old, "metadata");
  for(size_t i = 0; i < sizeof(server_meta) / sizeof(server_meta[0]); i++) {
    cJSON_DeleteItemFromObject(m, server_meta[i]);
    const cJSON *v = cJSON_GetObjectItem(om, server_meta[i]);
    if(v)
      cJSON_AddItemToObject(m, server_meta[i], cJSON_Duplicate(v, 1));
  }
  cJSON_DeleteItemFromObject(m, "selfLink");
  ls_set_str(m, "resourceVersion", ls_str(om, "resourceVersion"));
  if(w->rt->status_sub) {
    cJSON_DeleteItemFromObject(obj, "status");
    const cJSON *s = cJSON_GetObjectItem(old, "status");
    if(s)
      cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(s, 1));
  }
  return obj;
}

static bool equal_without(const cJSON *a, const cJSON *b, const char *drop1, const char *drop2)
{
  cJSON *x = cJSON_Duplicate(a, 1), *y = cJSON_Duplicate(b, 1);
  cJSON_DeleteItemFromObject(x, drop1);
  cJSON_DeleteItemFromObject(y, drop1);
  if(drop2) {
    cJSON_DeleteItemFromObject(x, drop2);
    cJSON_DeleteItemFromObject(y, drop2);
  }
  bool eq = json_equal(x, y);
  cJSON_Delete(x);
  cJSON_Delete(y);
  return eq;
}

static void generation(const struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  long long g = ls_meta_generation(old);
  bool changed = false;
  if(w->rt->gen == LS_GEN_SPEC) {
    const cJSON *a = cJSON_GetObjectItem(old, "spec"), *b = cJSON_GetObjectItem(obj, "spec");
    changed = !((!a && !b) || (a && b && json_equal(a, b)));
  } else if(w->rt->gen == LS_GEN_NONMETA)
    changed = !equal_without(old, obj, "metadata", w->rt->status_sub ? "status" : NULL);
  cJSON *m = ls_meta_obj(obj);
  cJSON_DeleteItemFromObject(m, "generation");
  if(w->rt->gen != LS_GEN_NONE || g)
    cJSON_AddNumberToObject(m, "generation", (double)(g ? g : 1) + (changed ? 1 : 0));
}

static cJSON *no_new_finalizers(const struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  if(!*ls_meta(old, "deletionTimestamp"))
    return NULL;
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "finalizers"))
  {
    if(cJSON_IsString(f) && !ls_has_finalizer(old, f->valuestring))
      return rest_invalid1(w->rt, ls_meta(obj, "name"), "FieldValueForbidden",
                           "metadata.finalizers",
                           "Forbidden: no new finalizers can be added if the object is being "
                           "deleted, found new finalizers []string{\"%s\"}", f->valuestring);
  }
  return NULL;
}

/* Steps between the client's object and the stored form. */
static cJSON *admit_update(struct ls_wctx *w, cJSON **obj, const cJSON *old)
{
  const struct ls_rtype *rt = w->rt;
  struct ls_adm_attrs a;
  write_attrs(&a, w);
  *obj = carry_over(w, *obj, old);
  cJSON *st = NULL;
  if(rt->crd) {
    cJSON *before = cJSON_Duplicate(*obj, 1);
    crd_prune_and_default(rt->group, rt->resource, rt->version, *obj);
    st = write_field_validation(w, before, *obj);
    cJSON_Delete(before);
  }
  if(!st && w->r && !w->applied) { /* before mutating admission, as kube's field manager */
    char manager[256];
    ssa_manager(w->r, manager, sizeof(manager));
    ssa_update(rt, w->sub, manager, old, *obj);
  }
  if(!st)
    st = admission_mutate(&a, obj, old, w->warn);
  if(st)
    return st;
  *obj = carry_over(w, *obj, old);
  if(rt->b && rt->b->prepare)
    st = rt->b->prepare(w, *obj, old);
  if(st)
    return st;
  generation(w, *obj, old);
  st = no_new_finalizers(w, *obj, old);
  if(!st && rt->b && rt->b->validate)
    st = rt->b->validate(w, *obj, old);
  if(!st && rt->crd)
    st = crd_validate(rt->group, rt->resource, rt->version, *obj, old);
  if(!st)
    st = admission_validate(&a, *obj, old, w->warn);
  return st;
}

static bool finalized(const cJSON *obj)
{
  if(!*ls_meta(obj, "deletionTimestamp"))
    return false;
  const cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "finalizers");
  const cJSON *nf = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "spec"), "finalizers");
  if(!strcmp(ls_str(obj, "kind"), "Namespace") && cJSON_GetArraySize(nf))
    return false;
  return cJSON_GetArraySize(f) == 0;
}

enum commit { C_DONE, C_NOOP, C_RETRY, C_GONE };

static enum commit commit(struct ls_wctx *w, cJSON *stored, uint64_t expect, uint64_t *rv,
                          bool *removed)
{
  const struct ls_rtype *rt = w->rt;
  store_lock();
  const struct ls_entry *e = store_get(rt->store_group, rt->store_resource, w->ns, w->name);
  enum commit c = C_DONE;
  if(!e)
    c = C_GONE;
  else if(e->rv != expect)
    c = C_RETRY;
  else if(write_same(stored, e->obj->json))
    c = C_NOOP;
  else if(w->dry_run)
    *rv = e->rv;
  else if(finalized(stored)) {
    *rv = store_remove(rt->store_group, rt->store_resource, w->ns, w->name);
    *removed = true;
  } else {
    *rv = store_put(rt->store_group, rt->store_resource, w->ns, w->name, stored);
    stored = NULL;
  }
  store_unlock();
  if(c != C_DONE || w->dry_run || *removed)
    cJSON_Delete(stored);
  return c;
}

static cJSON *read_current(const struct ls_wctx *w, struct ls_obj **cur)
{
  store_lock();
  const struct ls_entry *e =
    store_get(w->rt->store_group, w->rt->store_resource, w->ns, w->name);
  *cur = e ? ls_obj_ref(e->obj) : NULL;
  store_unlock();
  return NULL;
}

static cJSON *check_identity(const struct ls_wctx *w, const cJSON *obj)
{
  const char *name = ls_meta(obj, "name");
  if(*name && strcmp(name, w->name))
    return ls_status(400, "BadRequest", NULL,
                     "the name of the object (%s) does not match the name on the URL (%s)", name,
                     w->name);
  const char *ns = ls_meta(obj, "namespace");
  if(w->rt->namespaced && *ns && strcmp(ns, w->ns))
    return ls_status(400, "BadRequest", NULL, "the namespace of the provided object does not "
                                              "match the namespace sent on the request");
  return NULL;
}

/* One attempt: C_RETRY asks for another. */
static cJSON *attempt(struct ls_wctx *w, write_update_fn fn, void *ctx, bool is_put,
                      struct ls_obj *cur, cJSON **out, enum commit *c)
{
  const struct ls_rtype *rt = w->rt;
  cJSON *old = cJSON_Duplicate(cur->json, 1);
  cJSON *st = rest_to_served(rt, &old, 1);
  cJSON *obj = NULL;
  if(!st)
    st = fn(ctx, old, &obj);
  if(!st && !obj) { /* nothing to change */
    *out = old;
    *c = C_NOOP;
    return NULL;
  }
  if(!st)
    st = check_identity(w, obj);
  const char *rv = obj ? ls_meta(obj, "resourceVersion") : "";
  bool precond = *rv != '\0';
  if(!st && precond && strcmp(rv, ls_meta(old, "resourceVersion")))
    st = rest_conflict(rt, w->name, NULL);
  if(!st && !precond && is_put && (rt->crd || (rt->b && (rt->b->flags & LS_B_NO_UNCOND))))
    st = rest_invalid1(rt, w->name, "FieldValueInvalid", "metadata.resourceVersion",
                       "Invalid value: 0x0: must be specified for an update");
  if(!st)
    st = admit_update(w, &obj, old);
  cJSON *stored = NULL;
  if(!st) {
    ls_meta_normalize(obj);
    stored = cJSON_Duplicate(obj, 1);
    st = rest_to_storage(rt, stored);
  }
  if(st) {
    builtin_write_aborted(w, cur->json);
    cJSON_Delete(stored);
    cJSON_Delete(obj);
    cJSON_Delete(old);
    return st;
  }
  uint64_t newrv = 0;
  bool removed = false;
  *c = commit(w, stored, strtoull(ls_meta(cur->json, "resourceVersion"), NULL, 10), &newrv,
              &removed);
  if(*c != C_DONE || w->dry_run)
    builtin_write_aborted(w, cur->json);
  if(*c == C_RETRY && precond) {
    *c = C_DONE;
    st = rest_conflict(rt, w->name, NULL);
  } else if(*c == C_GONE)
    st = rest_not_found(rt, w->name);
  if(st || *c == C_RETRY) {
    cJSON_Delete(obj);
    cJSON_Delete(old);
    return st;
  }
  if(*c == C_NOOP) {
    cJSON_Delete(obj);
    *out = old;
    return NULL;
  }
  char rvs[32];
  snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)newrv);
  ls_set_str(ls_meta_obj(obj), "resourceVersion", rvs);
  if(!w->dry_run) {
    builtin_after_commit(rt, removed ? NULL : obj, old);
    ls_gc_kick();
  }
  cJSON_Delete(old);
  *out = obj;
  return NULL;
}

cJSON *write_update(struct ls_wctx *w, write_update_fn fn, void *ctx, bool is_put,
                    cJSON **out, bool *created)
{
  *out = NULL;
  *created = false;
  for(int i = 0; i < 32; i++) {
    struct ls_obj *cur;
    read_current(w, &cur);
    if(!cur)
      return rest_not_found(w->rt, w->name);
    enum commit c = C_DONE;
    cJSON *st = attempt(w, fn, ctx, is_put, cur, out, &c);
    ls_obj_unref(cur);
    if(st || c != C_RETRY)
      return st;
  }
  return rest_conflict(w->rt, w->name, "too many concurrent writes; try again");
}

/* ---- PUT ---- */

struct put_ctx {
  const cJSON *body;
};

static cJSON *put_fn(void *ctx, const cJSON *current, cJSON **next)
{
  (void)current;
  struct put_ctx *p = ctx;
  *next = cJSON_Duplicate(p->body, 1);
  return NULL;
}

static bool create_on_update(const struct ls_rtype *rt)
{
  return rt->b && (rt->b->flags & LS_B_CREATE_ON_UPDATE);
}

void rest_update(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct ls_wctx w;
  cJSON *st = write_ctx(&w, r, rt, t, "UPDATE", "UpdateOptions");
  cJSON *body = NULL, *out = NULL;
  bool created = false;
  if(!st)
    st = write_decode(rt, r->body, r->body_len, &body);
  if(!st)
    st = check_identity(&w, body);
  if(!st) {
    struct put_ctx p = { body };
    st = write_update(&w, put_fn, &p, true, &out, &created);
    const cJSON *code = cJSON_GetObjectItem(st, "code");
    if(st && cJSON_IsNumber(code) && code->valueint == 404 && create_on_update(rt) &&
       !t->sub[0]) {
      cJSON_Delete(st);
      write_ctx_release(&w);
      st = write_ctx(&w, r, rt, t, "CREATE", "CreateOptions");
      if(!st)
        st = write_create(&w, cJSON_Duplicate(body, 1), &out);
      created = true;
    }
  }
  cJSON_Delete(body);
  write_ctx_release(&w);
  if(st)
    req_reply_status(r, st);
  else
    req_reply_take(r, created ? 201 : 200, out);
}

/* ---- PATCH ---- */

struct patch_ctx {
  const struct ls_rtype *rt;
  const char *ctype;
  const char *body;
  size_t len;
};

/* A patch is applied to the current object, so the result carries its resourceVersion; that is
 * a precondition only when the patch itself names one (kube-apiserver: a patch without it is
 * re-applied to the new state when the object moved meanwhile, never answered 409). */
static bool mentions_rv(const char *body, size_t len)
{
  static const char key[] = "resourceVersion";
  for(size_t i = 0; i + sizeof(key) - 1 <= len; i++)
    if(!memcmp(body + i, key, sizeof(key) - 1))
      return true;
  return false;
}

static cJSON *patch_fn(void *ctx, const cJSON *current, cJSON **next)
{
  struct patch_ctx *p = ctx;
  cJSON *st = patch_apply(p->rt, p->ctype, p->body, p->len, current, next);
  if(!st && *next && !mentions_rv(p->body, p->len) &&
     !strcmp(ls_meta(*next, "resourceVersion"), ls_meta(current, "resourceVersion")))
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(*next, "metadata"), "resourceVersion");
  return st;
}

/* ---- server-side apply (ssa.h) ---- */

struct apply_ctx {
  struct ls_wctx *w;
  const cJSON *applied;
  char manager[256];
  bool force;
};

/* kube's checks of an applied object against the request, in its order */
static cJSON *applied_ok(const struct ls_rtype *rt, const struct ls_target *t, const cJSON *a)
{
  char av[300];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  if(strcmp(ls_str(a, "apiVersion"), av) || strcmp(ls_str(a, "kind"), rt->kind)) {
    char g[128], v[64];
    ls_split_api_version(ls_str(a, "apiVersion"), g, sizeof(g), v, sizeof(v));
    return ls_status(400, "BadRequest", NULL, "invalid object type: %s/%s, Kind=%s", g, v,
                     ls_str(a, "kind"));
  }
  const cJSON *m = cJSON_GetObjectItem(a, "metadata");
  if(cJSON_GetObjectItem(m, "managedFields"))
    return ls_status(400, "BadRequest", NULL, "metadata.managedFields must be nil");
  const char *ns = ls_str(m, "namespace");
  if(*ns && strcmp(ns, rt->namespaced ? t->ns : ""))
    return ls_status(400, "BadRequest", NULL, "the namespace of the provided object does not "
                                              "match the namespace sent on the request");
  if(strcmp(ls_str(m, "name"), t->name))
    return ls_status(400, "BadRequest", NULL, "the name of the object (%s) does not match the "
                                              "name on the URL (%s)", ls_str(m, "name"), t->name);
  return NULL;
}

static cJSON *apply_fn(void *ctx, const cJSON *current, cJSON **next)
{
  struct apply_ctx *a = ctx;
  cJSON *st = ssa_apply(a->w->rt, a->w->sub, a->manager, a->force, current, a->applied, next);
  if(!st)
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(*next, "metadata"), "resourceVersion");
  return st;
}

/* PATCH application/apply-patch+yaml: the applied object merged into the live one (or created),
 * with its conflicts, as kube-apiserver's field manager does */
static cJSON *rest_apply(struct ls_req *r, struct ls_wctx *w, const struct ls_rtype *rt,
                         const struct ls_target *t, cJSON **out, bool *created)
{
  cJSON *applied = NULL;
  cJSON *st = patch_apply(rt, "application/apply-patch+yaml", r->body, r->body_len, NULL,
                          &applied);
  if(!st)
    st = applied_ok(rt, t, applied);
  struct apply_ctx a = { w, applied, "", req_param_true(r, "force") };
  snprintf(a.manager, sizeof(a.manager), "%s", req_param(r, "fieldManager"));
  w->applied = true;
  if(!st)
    st = write_update(w, apply_fn, &a, false, out, created);
  const cJSON *code = cJSON_GetObjectItem(st, "code");
  if(st && cJSON_IsNumber(code) && code->valueint == 404 && !t->sub[0]) {
    /* an apply of a missing object creates it (201) */
    cJSON_Delete(st);
    cJSON *obj = NULL;
    st = ssa_apply(rt, "", a.manager, a.force, NULL, applied, &obj);
    write_ctx_release(w);
    if(!st)
      st = write_ctx(w, r, rt, t, "CREATE", "CreateOptions");
    w->applied = true;
    if(!st)
      st = write_create(w, obj, out);
    else
      cJSON_Delete(obj);
    *created = true;
  }
  cJSON_Delete(applied);
  return st;
}

void rest_patch(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct ls_wctx w;
  cJSON *st = write_ctx(&w, r, rt, t, "UPDATE", "PatchOptions");
  const char *ct = req_header(r, "Content-Type");
  char ctype[128];
  snprintf(ctype, sizeof(ctype), "%.*s", ct ? (int)strcspn(ct, "; ") : 0, ct ? ct : "");
  bool apply = !strcmp(ctype, "application/apply-patch+yaml");
  struct patch_ctx p = { rt, ctype, r->body, r->body_len };
  cJSON *out = NULL;
  bool created = false;
  if(!st)
    st = ssa_check_options(r, "PatchOptions", apply);
  if(!st && apply)
    st = rest_apply(r, &w, rt, t, &out, &created);
  else if(!st)
    st = write_update(&w, patch_fn, &p, false, &out, &created);
  write_ctx_release(&w);
  if(st)
    req_reply_status(r, st);
  else
    req_reply_take(r, created ? 201 : 200, out);
}

/* ---- internal modifications ---- */

struct mod_ctx {
  bool (*fn)(void *ctx, cJSON *obj);
  void *ctx;
};

static cJSON *mod_fn(void *ctx, const cJSON *current, cJSON **next)
{
  struct mod_ctx *m = ctx;
  cJSON *obj = cJSON_Duplicate(current, 1);
  if(!m->fn(m->ctx, obj)) {
    cJSON_Delete(obj);
    *next = NULL;
    return NULL;
  }
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion");
  *next = obj;
  return NULL;
}

cJSON *rest_internal_modify(const char *group, const char *resource, const char *ns,
                            const char *name, bool (*fn)(void *ctx, cJSON *obj), void *ctx)
{
  struct ls_rtype rt;
  if(!res_lookup_stored(group, resource, &rt))
    return ls_status(404, "NotFound", NULL, "the server could not find the requested resource");
  struct ls_wctx w;
  struct ls_identity id;
  write_ctx_internal(&w, &rt, ns, name, "UPDATE", &id,
                     "system:serviceaccount:kube-system:generic-garbage-collector");
  struct mod_ctx m = { fn, ctx };
  cJSON *out = NULL;
  bool created;
  cJSON *st = write_update(&w, mod_fn, &m, false, &out, &created);
  cJSON_Delete(out);
  write_ctx_release(&w);
  auth_identity_release(&id);
  return st;
}

/* ---- pods/NAME/binding (the scheduler's share) ---- */

void rest_pod_binding(struct ls_req *r, const struct ls_target *t)
{
  cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
  const char *node = ls_str(cJSON_GetObjectItem(body, "target"), "name");
  struct ls_rtype rt;
  res_lookup("", "v1", "pods", &rt);
  cJSON *st = NULL;
  if(!*node)
    st = rest_invalid1(&rt, t->name, "FieldValueRequired", "target.name", "Required value");
  char now[32];
  ls_now(now);
  store_lock();
  const struct ls_entry *e = st ? NULL : store_get("", "pods", t->ns, t->name);
  if(!st && !e)
    st = rest_not_found(&rt, t->name);
  const char *cur = e ? ls_str(cJSON_GetObjectItem(e->obj->json, "spec"), "nodeName") : "";
  if(!st && *cur)
    st = ls_status(409, "Conflict", NULL, "Operation cannot be fulfilled on pods/binding \"%s\": "
                   "pod %s is already assigned to node \"%s\"", t->name, t->name, cur);
  if(!st && *ls_meta(e->obj->json, "deletionTimestamp"))
    st = ls_status(409, "Conflict", NULL, "Operation cannot be fulfilled on pods/binding \"%s\": "
                   "pod %s is being deleted, cannot be assigned to a host", t->name, t->name);
  if(!st) {
    cJSON *p = cJSON_Duplicate(e->obj->json, 1);
    cJSON *spec = cJSON_GetObjectItem(p, "spec");
    ls_set_str(spec, "nodeName", node);
    cJSON *status = cJSON_GetObjectItem(p, "status");
    if(!cJSON_IsObject(status))
      status = cJSON_AddObjectToObject(p, "status");
    cJSON *conds = cJSON_GetObjectItem(status, "conditions");
    if(!cJSON_IsArray(conds))
      conds = cJSON_AddArrayToObject(status, "conditions");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "PodScheduled");
    cJSON_AddStringToObject(c, "status", "True");
    cJSON_AddNullToObject(c, "lastProbeTime");
    cJSON_AddStringToObject(c, "lastTransitionTime", now);
    cJSON_AddItemToArray(conds, c);
    if(!req_param(r, "dryRun"))
      store_put("", "pods", t->ns, t->name, p);
    else
      cJSON_Delete(p);
  }
  store_unlock();
  cJSON_Delete(body);
  if(st) {
    req_reply_status(r, st);
    return;
  }
  cJSON *ok = cJSON_CreateObject();
  cJSON_AddStringToObject(ok, "kind", "Status");
  cJSON_AddStringToObject(ok, "apiVersion", "v1");
  cJSON_AddObjectToObject(ok, "metadata");
  cJSON_AddStringToObject(ok, "status", "Success");
  cJSON_AddNumberToObject(ok, "code", 201);
  req_reply_take(r, 201, ok);
}
