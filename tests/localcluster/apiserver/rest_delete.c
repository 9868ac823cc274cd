/* rest_delete.c: delete and deletecollection. An object with finalizers (or one the requested
 * propagation gives a finalizer: orphan, foregroundDeletion) is only marked with
 * deletionTimestamp; a Pod bound to a node is deleted gracefully; a Namespace always waits for
 * its content to go. The garbage collector (gc.c) does the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "write.h"

struct delopts {
  char propagation[32];
  long grace; /* -1: default */
  char uid[64], rv[32];
  bool dry_run;
  bool orphan_set, orphan; /* the deprecated orphanDependents */
};

static cJSON *parse_opts(struct ls_req *r, struct delopts *o)
{
  memset(o, 0, sizeof(*o));
  o->grace = -1;
  cJSON *b = NULL;
  if(r->body_len) {
    b = cJSON_ParseWithLength(r->body, r->body_len);
    if(!cJSON_IsObject(b)) {
      cJSON_Delete(b);
      return ls_status(400, "BadRequest", NULL, "the body of the request is not DeleteOptions");
    }
  }
  const char *pp = req_param(r, "propagationPolicy");
  if(!pp)
    pp = cJSON_GetStringValue(cJSON_GetObjectItem(b, "propagationPolicy"));
  if(pp)
    snprintf(o->propagation, sizeof(o->propagation), "%s", pp);
  const char *gp = req_param(r, "gracePeriodSeconds");
  const cJSON *gj = cJSON_GetObjectItem(b, "gracePeriodSeconds");
  if(gp)
    o->grace = atol(gp);
  else if(cJSON_IsNumber(gj))
    o->grace = (long)gj->valuedouble;
  const cJSON *pre = cJSON_GetObjectItem(b, "preconditions");
  snprintf(o->uid, sizeof(o->uid), "%s", ls_str(pre, "uid"));
  snprintf(o->rv, sizeof(o->rv), "%s", ls_str(pre, "resourceVersion"));
  const cJSON *od = cJSON_GetObjectItem(b, "orphanDependents");
  const char *odq = req_param(r, "orphanDependents");
  if(cJSON_IsBool(od) || odq) {
    o->orphan_set = true;
    o->orphan = odq ? !strcmp(odq, "true") : cJSON_IsTrue(od);
  }
  const char *dr = req_param(r, "dryRun");
  const cJSON *drb = cJSON_GetObjectItem(b, "dryRun");
  o->dry_run = (dr && !strcmp(dr, "All")) || cJSON_GetArraySize(drb) > 0;
  cJSON_Delete(b);
  if(o->propagation[0] && strcmp(o->propagation, "Orphan") &&
     strcmp(o->propagation, "Background") && strcmp(o->propagation, "Foreground"))
    return ls_status(422, "Invalid", NULL,
                     "propagationPolicy: Unsupported value: \"%s\": supported values: "
                     "\"Foreground\", \"Background\", \"Orphan\", \"nil\"", o->propagation);
  if(o->orphan_set && o->propagation[0])
    return ls_status(422, "Invalid", NULL,
                     "propagationPolicy: Invalid value: \"%s\": orphanDependents and deletion "
                     "propagation policy cannot be both set", o->propagation);
  return NULL;
}

static const char *policy(const struct ls_wctx *w, const struct delopts *o)
{
  if(o->propagation[0])
    return o->propagation;
  if(o->orphan_set)
    return o->orphan ? "Orphan" : "Background";
  if(w->rt->b && (w->rt->b->flags & LS_B_ORPHAN_DEFAULT)) {
    if(w->warn)
      ls_warnings_add(w->warn, "child pods are preserved by default when jobs are deleted; set "
                               "propagationPolicy=Background to remove them or set "
                               "propagationPolicy=Orphan to suppress this warning");
    return "Orphan";
  }
  return "Background";
}

static long pod_grace(const cJSON *pod, const struct delopts *o)
{
  const cJSON *spec = cJSON_GetObjectItem(pod, "spec");
  const char *phase = ls_str(cJSON_GetObjectItem(pod, "status"), "phase");
  if(!*ls_str(spec, "nodeName") || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))
    return 0;
  if(o->grace >= 0)
    return o->grace;
  const cJSON *t = cJSON_GetObjectItem(spec, "terminationGracePeriodSeconds");
  return cJSON_IsNumber(t) ? (long)t->valuedouble : 30;
}

/* Marks obj (stored form) as being deleted. */
static void mark(const struct ls_wctx *w, cJSON *obj, long grace)
{
  cJSON *m = ls_meta_obj(obj);
  if(*ls_str(m, "deletionTimestamp"))
    return;
  char ts[32];
  ls_time_format(time(NULL) + grace, ts);
  ls_set_str(m, "deletionTimestamp", ts);
  ls_set_item(m, "deletionGracePeriodSeconds", cJSON_CreateNumber((double)grace));
  long long g = ls_meta_generation(obj);
  if(g > 0)
    ls_set_item(m, "generation", cJSON_CreateNumber((double)(g + 1)));
  const char *r = w->rt->store_resource;
  if(!strcmp(r, "namespaces")) {
    cJSON *st = cJSON_GetObjectItem(obj, "status");
    if(!cJSON_IsObject(st))
      st = cJSON_AddObjectToObject(obj, "status");
    ls_set_str(st, "phase", "Terminating");
  } else if(!strcmp(r, "customresourcedefinitions")) {
    cJSON *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "status"), "conditions");
    if(cJSON_IsArray(conds)) {
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "type", "Terminating");
      cJSON_AddStringToObject(c, "status", "True");
      cJSON_AddStringToObject(c, "lastTransitionTime", ts);
      cJSON_AddStringToObject(c, "reason", "InstanceDeletionInProgress");
      cJSON_AddStringToObject(c, "message", "CustomResource deletion is in progress");
      cJSON_AddItemToArray(conds, c);
    }
  }
}

static cJSON *success_status(const struct ls_rtype *rt, const char *name, const char *uid)
{
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "kind", "Status");
  cJSON_AddStringToObject(s, "apiVersion", "v1");
  cJSON_AddObjectToObject(s, "metadata");
  cJSON_AddStringToObject(s, "status", "Success");
  cJSON *d = cJSON_AddObjectToObject(s, "details");
  cJSON_AddStringToObject(d, "name", name);
  if(*rt->group)
    cJSON_AddStringToObject(d, "group", rt->group);
  cJSON_AddStringToObject(d, "kind", rt->resource);
  cJSON_AddStringToObject(d, "uid", uid);
  return s;
}

static cJSON *check_preconditions(const struct ls_wctx *w, const cJSON *cur,
                                  const struct delopts *o)
{
  const char *uid = ls_meta(cur, "uid"), *rv = ls_meta(cur, "resourceVersion");
  char why[256];
  if(o->uid[0] && strcmp(o->uid, uid)) {
    snprintf(why, sizeof(why), "Precondition failed: UID in precondition: %s, UID in object "
                               "meta: %s", o->uid, uid);
    return rest_conflict(w->rt, w->name, why);
  }
  if(o->rv[0] && strcmp(o->rv, rv)) {
    snprintf(why, sizeof(why), "Precondition failed: ResourceVersion in precondition: %s, "
                               "ResourceVersion in object meta: %s", o->rv, rv);
    return rest_conflict(w->rt, w->name, why);
  }
  if(!strcmp(w->rt->store_resource, "namespaces") &&
     (!strcmp(w->name, "default") || !strcmp(w->name, "kube-system") ||
      !strcmp(w->name, "kube-public")))
    return ls_status(403, "Forbidden", NULL,
                     "namespaces \"%s\" is forbidden: this namespace may not be deleted", w->name);
  return NULL;
}

static cJSON *admit_delete(struct ls_wctx *w, const cJSON *old)
{
  struct ls_adm_attrs a;
  write_attrs(&a, w);
  cJSON *none = NULL;
  cJSON *st = admission_mutate(&a, &none, old, w->warn);
  cJSON_Delete(none);
  if(!st)
    st = admission_validate(&a, NULL, old, w->warn);
  return st;
}

/* The stored form after the delete request: *remove when it goes now. */
static cJSON *next_state(const struct ls_wctx *w, const cJSON *cur, const struct delopts *o,
                         bool *remove)
{
  cJSON *n = cJSON_Duplicate(cur, 1);
  const char *pol = policy(w, o);
  if(!strcmp(pol, "Orphan")) {
    ls_remove_finalizer(n, "foregroundDeletion");
    ls_add_finalizer(n, "orphan");
  } else if(!strcmp(pol, "Foreground")) {
    ls_remove_finalizer(n, "orphan");
    ls_add_finalizer(n, "foregroundDeletion");
  } else if(o->propagation[0] || o->orphan_set) {
    ls_remove_finalizer(n, "orphan");
    ls_remove_finalizer(n, "foregroundDeletion");
  }
  long grace = !strcmp(w->rt->store_resource, "pods") ? pod_grace(cur, o) : 0;
  bool pending = cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "metadata"),
                                                         "finalizers")) > 0 ||
                 !strcmp(w->rt->store_resource, "namespaces") || grace > 0;
  *remove = !pending;
  if(pending)
    mark(w, n, grace);
  return n;
}

static cJSON *delete_one(struct ls_wctx *w, const struct delopts *o, cJSON **out)
{
  const struct ls_rtype *rt = w->rt;
  *out = NULL;
  for(int attempt = 0; attempt < 32; attempt++) {
    store_lock();
    const struct ls_entry *e = store_get(rt->store_group, rt->store_resource, w->ns, w->name);
    struct ls_obj *cur = e ? ls_obj_ref(e->obj) : NULL;
    uint64_t cur_rv = e ? e->rv : 0;
    store_unlock();
    if(!cur)
      return rest_not_found(rt, w->name);
    cJSON *served = cJSON_Duplicate(cur->json, 1);
    cJSON *st = rest_to_served(rt, &served, 1);
    if(!st)
      st = check_preconditions(w, served, o);
    if(!st)
      st = admit_delete(w, served);
    if(st) {
      cJSON_Delete(served);
      ls_obj_unref(cur);
      return st;
    }
    bool remove;
    cJSON *n = next_state(w, cur->json, o, &remove);
    bool changed = !write_same(n, cur->json);
    ls_obj_unref(cur);
    bool retry = false, removed = false;
    cJSON *now = NULL; /* the marked object as stored */
    store_lock();
    e = store_get(rt->store_group, rt->store_resource, w->ns, w->name);
    if(!e || e->rv != cur_rv)
      retry = true;
    else if(!o->dry_run && remove) {
      store_remove(rt->store_group, rt->store_resource, w->ns, w->name);
      removed = true;
    } else if(!o->dry_run && changed) {
      store_put(rt->store_group, rt->store_resource, w->ns, w->name, n);
      n = NULL;
      e = store_get(rt->store_group, rt->store_resource, w->ns, w->name);
      now = cJSON_Duplicate(e->obj->json, 1);
    } else if(!o->dry_run)
      now = cJSON_Duplicate(e->obj->json, 1);
    store_unlock();
    if(retry) {
      cJSON_Delete(n);
      cJSON_Delete(served);
      cJSON_Delete(now);
      continue;
    }
    if(removed)
      builtin_after_commit(rt, NULL, served);
    ls_gc_kick();
    if(remove) {
      cJSON_Delete(n);
      cJSON_Delete(now);
      if(rt->crd || (rt->b && (rt->b->flags & LS_B_RETURN_DELETED)))
        *out = served;
      else {
        *out = success_status(rt, w->name, ls_meta(served, "uid"));
        cJSON_Delete(served);
      }
      return NULL;
    }
    cJSON_Delete(served);
    if(!now) { /* dry run */
      now = n;
      n = NULL;
    }
    cJSON_Delete(n);
    st = rest_to_served(rt, &now, 1);
    if(st) {
      cJSON_Delete(now);
      return st;
    }
    *out = now;
    return NULL;
  }
  return rest_conflict(rt, w->name, "too many concurrent writes; try again");
}

void rest_delete(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct ls_wctx w;
  struct delopts o;
  memset(&o, 0, sizeof(o));
  cJSON *st = write_ctx(&w, r, rt, t, "DELETE", "DeleteOptions");
  if(!st)
    st = parse_opts(r, &o);
  cJSON *out = NULL;
  if(!st) {
    w.dry_run = o.dry_run;
    st = delete_one(&w, &o, &out);
  }
  write_ctx_release(&w);
  if(st)
    req_reply_status(r, st);
  else
    req_reply_take(r, 200, out);
}

struct names {
  char (*v)[254];
  size_t n;
  const struct ls_selector *sel;
};

static int collect_name(void *ctx, const struct ls_entry *e)
{
  struct names *n = ctx;
  if(!sel_match(n->sel, e->obj->json))
    return 0;
  n->v = realloc(n->v, (n->n + 1) * sizeof(*n->v));
  if(!n->v)
    abort();
  snprintf(n->v[n->n++], 254, "%s", e->name);
  return 0;
}

void rest_delete_collection(struct ls_req *r, const struct ls_rtype *rt,
                            const struct ls_target *t)
{
  struct delopts o;
  struct ls_selector *sel = NULL;
  cJSON *st = parse_opts(r, &o);
  if(!st)
    st = sel_parse(rt, req_param(r, "labelSelector"), req_param(r, "fieldSelector"), &sel);
  if(st) {
    req_reply_status(r, st);
    return;
  }
  struct names names = { NULL, 0, sel };
  store_lock();
  store_each(rt->store_group, rt->store_resource, t->has_ns ? t->ns : NULL, NULL, collect_name,
             &names);
  store_unlock();
  sel_free(sel);
  cJSON *list = cJSON_CreateObject();
  char av[200];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  cJSON_AddStringToObject(list, "kind", rt->list_kind);
  cJSON_AddStringToObject(list, "apiVersion", av);
  cJSON_AddObjectToObject(list, "metadata");
  cJSON *items = cJSON_AddArrayToObject(list, "items");
  for(size_t i = 0; i < names.n && !st; i++) {
    struct ls_target one = *t;
    snprintf(one.name, sizeof(one.name), "%s", names.v[i]);
    struct ls_wctx w;
    st = write_ctx(&w, r, rt, &one, "DELETE", "DeleteOptions");
    cJSON *out = NULL;
    if(!st) {
      w.dry_run = o.dry_run;
      st = delete_one(&w, &o, &out);
    }
    write_ctx_release(&w);
    const cJSON *code = cJSON_GetObjectItem(st, "code");
    if(st && cJSON_IsNumber(code) && code->valueint == 404) {
      cJSON_Delete(st); /* gone meanwhile */
      st = NULL;
    }
    if(out && strcmp(ls_str(out, "kind"), "Status"))
      cJSON_AddItemToArray(items, out);
    else
      cJSON_Delete(out);
  }
  free(names.v);
  if(st) {
    cJSON_Delete(list);
    req_reply_status(r, st);
  } else
    req_reply_take(r, 200, list);
}

cJSON *rest_internal_delete(const char *group, const char *resource, const char *ns,
                            const char *name, const struct ls_delete_opts *io)
{
  struct ls_rtype rt;
  if(!res_lookup_stored(group, resource, &rt))
    return ls_status(404, "NotFound", NULL, "the server could not find the requested resource");
  struct ls_wctx w;
  struct ls_identity id;
  write_ctx_internal(&w, &rt, ns, name, "DELETE", &id,
                     "system:serviceaccount:kube-system:generic-garbage-collector");
  struct delopts o;
  memset(&o, 0, sizeof(o));
  o.grace = io ? io->grace : -1;
  if(io && io->propagation)
    snprintf(o.propagation, sizeof(o.propagation), "%s", io->propagation);
  if(io && io->uid)
    snprintf(o.uid, sizeof(o.uid), "%s", io->uid);
  if(io && io->rv)
    snprintf(o.rv, sizeof(o.rv), "%s", io->rv);
  cJSON *out = NULL;
  cJSON *st = delete_one(&w, &o, &out);
  cJSON_Delete(out);
  write_ctx_release(&w);
  auth_identity_release(&id);
  return st;
}
