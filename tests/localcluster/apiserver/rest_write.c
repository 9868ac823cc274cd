/* rest_write.c: create (POST), the write context, body decoding, server-side field validation
 * (unknown fields of custom resources), and internal creates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ssa.h"
#include "write.h"

cJSON *write_ctx(struct ls_wctx *w, struct ls_req *r, const struct ls_rtype *rt,
                 const struct ls_target *t, const char *operation, const char *options_kind)
{
  memset(w, 0, sizeof(*w));
  w->r = r;
  w->rt = rt;
  w->ns = rt->namespaced ? t->ns : "";
  w->name = t->name;
  w->sub = t->sub;
  w->operation = operation;
  w->id = &r->id;
  w->warn = &r->warn;
  const char *dr = req_param(r, "dryRun");
  if(dr && *dr) {
    if(strcmp(dr, "All"))
      return ls_status(400, "BadRequest", NULL,
                       "Invalid dryRun value: \"%s\": supported values: \"All\"", dr);
    w->dry_run = true;
  }
  const char *fv = req_param(r, "fieldValidation");
  if(fv && *fv && strcmp(fv, "Strict") && strcmp(fv, "Warn") && strcmp(fv, "Ignore"))
    return ls_status(400, "BadRequest", NULL,
                     "fieldValidation: Unsupported value: \"%s\": supported values: \"Ignore\", "
                     "\"Strict\", \"Warn\"", fv);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kind", options_kind);
  cJSON_AddStringToObject(o, "apiVersion", "meta.k8s.io/v1");
  if(w->dry_run) {
    cJSON *a = cJSON_AddArrayToObject(o, "dryRun");
    cJSON_AddItemToArray(a, cJSON_CreateString("All"));
  }
  const char *fm = req_param(r, "fieldManager");
  if(fm)
    cJSON_AddStringToObject(o, "fieldManager", fm);
  w->options = o;
  return NULL;
}

void write_ctx_internal(struct ls_wctx *w, const struct ls_rtype *rt, const char *ns,
                        const char *name, const char *operation, struct ls_identity *id,
                        const char *user)
{
  memset(w, 0, sizeof(*w));
  w->rt = rt;
  w->ns = rt->namespaced ? ns : "";
  w->name = name;
  w->sub = "";
  w->operation = operation;
  auth_identity_system(id, user, "system:serviceaccounts");
  w->id = id;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kind", !strcmp(operation, "CREATE")   ? "CreateOptions"
                                     : !strcmp(operation, "DELETE") ? "DeleteOptions"
                                                                    : "UpdateOptions");
  cJSON_AddStringToObject(o, "apiVersion", "meta.k8s.io/v1");
  w->options = o;
}

void write_ctx_release(struct ls_wctx *w)
{
  cJSON_Delete((cJSON *)w->options);
  w->options = NULL;
}

void write_attrs(struct ls_adm_attrs *a, const struct ls_wctx *w)
{
  memset(a, 0, sizeof(*a));
  a->operation = w->operation;
  a->group = w->rt->group;
  a->version = w->rt->version;
  a->kind = w->rt->kind;
  a->resource = w->rt->resource;
  a->subresource = w->sub ? w->sub : "";
  a->name = w->name;
  a->namespace = w->ns;
  a->user = &w->id->user;
  a->dry_run = w->dry_run;
  a->options = w->options;
}

cJSON *write_decode(const struct ls_rtype *rt, const char *body, size_t len, cJSON **out)
{
  *out = NULL;
  cJSON *obj = NULL;
  char err[256];
  if(json_parse_strict(body, len, &obj, err, sizeof(err)) || !cJSON_IsObject(obj)) {
    cJSON_Delete(obj);
    return ls_status(400, "BadRequest", NULL,
                     "the object provided is unrecognized (must be of type %s): %s", rt->kind,
                     len ? err : "empty body");
  }
  char av[200];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  const char *gotav = ls_str(obj, "apiVersion");
  const char *gotk = ls_str(obj, "kind");
  cJSON *st = NULL;
  if(*gotav && strcmp(gotav, av))
    st = ls_status(400, "BadRequest", NULL,
                   "the API version in the data (%s) does not match the expected API version "
                   "(%s)", gotav, av);
  else if(*gotk && strcmp(gotk, rt->kind))
    st = ls_status(400, "BadRequest", NULL,
                   "the kind in the data (%s) does not match the expected kind (%s)", gotk,
                   rt->kind);
  if(st) {
    cJSON_Delete(obj);
    return st;
  }
  ls_set_str(obj, "apiVersion", av);
  ls_set_str(obj, "kind", rt->kind);
  const cJSON *m = cJSON_GetObjectItem(obj, "metadata");
  if(m && !cJSON_IsObject(m)) {
    cJSON_Delete(obj);
    return ls_status(400, "BadRequest", NULL, "metadata must be an object");
  }
  *out = obj;
  return NULL;
}

bool write_same(const cJSON *a, const cJSON *b)
{
  cJSON *x = cJSON_Duplicate(a, 1), *y = cJSON_Duplicate(b, 1);
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(x, "metadata"), "resourceVersion");
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(y, "metadata"), "resourceVersion");
  bool same = json_equal(x, y);
  cJSON_Delete(x);
  cJSON_Delete(y);
  return same;
}

/* Paths present in before and absent in after (pruned), as ".spec.foo". */
static void pruned(const cJSON *before, const cJSON *after, char *path, size_t plen,
                   cJSON *out)
{
  const cJSON *c;
  if(cJSON_IsObject(before)) {
    cJSON_ArrayForEach(c, before)
    {
      size_t l = strlen(path);
      snprintf(path + l, plen - l, ".%s", c->string);
      const cJSON *a = cJSON_GetObjectItemCaseSensitive(after, c->string);
      if(!a && strcmp(path, ".status"))
        cJSON_AddItemToArray(out, cJSON_CreateString(path));
      else if(a)
        pruned(c, a, path, plen, out);
      path[l] = '\0';
    }
  } else if(cJSON_IsArray(before) && cJSON_IsArray(after) &&
            cJSON_GetArraySize(before) == cJSON_GetArraySize(after)) {
    int i = 0;
    cJSON_ArrayForEach(c, before)
    {
      size_t l = strlen(path);
      snprintf(path + l, plen - l, "[%d]", i);
      pruned(c, cJSON_GetArrayItem(after, i), path, plen, out);
      path[l] = '\0';
      i++;
    }
  }
}

cJSON *write_field_validation(struct ls_wctx *w, const cJSON *before, const cJSON *after)
{
  const char *fv = w->r ? req_param(w->r, "fieldValidation") : "Ignore";
  if(!fv || !*fv)
    fv = "Warn";
  if(!strcmp(fv, "Ignore"))
    return NULL;
  cJSON *list = cJSON_CreateArray();
  char path[2048] = "";
  pruned(before, after, path, sizeof(path), list);
  cJSON *st = NULL;
  if(cJSON_GetArraySize(list)) {
    char msg[2048] = "";
    const cJSON *p;
    cJSON_ArrayForEach(p, list)
    {
      size_t l = strlen(msg);
      snprintf(msg + l, sizeof(msg) - l, "%sunknown field \"%s\"", l ? ", " : "",
               p->valuestring + 1);
      if(!strcmp(fv, "Warn")) {
        char one[600];
        snprintf(one, sizeof(one), "unknown field \"%s\"", p->valuestring + 1);
        if(w->warn)
          ls_warnings_add(w->warn, one);
      }
    }
    if(!strcmp(fv, "Strict"))
      st = ls_status(400, "BadRequest", NULL, "%s in version \"%s\" cannot be handled as a %s: "
                     "strict decoding error: %s", w->rt->kind, w->rt->version, w->rt->kind, msg);
  }
  cJSON_Delete(list);
  return st;
}

static cJSON *check_name(struct ls_wctx *w, cJSON *meta)
{
  const char *name = ls_str(meta, "name");
  const char *gen = ls_str(meta, "generateName");
  if(!*name && *gen) {
    char n[300], sfx[8];
    ls_random_suffix(sfx, 5);
    snprintf(n, sizeof(n), "%.58s%s", gen, sfx);
    ls_set_str(meta, "name", n);
    name = ls_str(meta, "name");
  }
  if(!*name)
    return rest_invalid1(w->rt, "", "FieldValueRequired", "metadata.name",
                         "Required value: name or generateName is required");
  if(!strcmp(w->rt->group, "rbac.authorization.k8s.io")) {
    /* kube's ValidateRBACName: a path segment ("system:basic-user" is one) */
    const char *why = !strcmp(name, ".")    ? "may not be '.'"
                      : !strcmp(name, "..") ? "may not be '..'"
                      : strchr(name, '/')   ? "may not contain '/'"
                      : strchr(name, '%')   ? "may not contain '%'"
                                            : NULL;
    return why ? rest_invalid1(w->rt, name, "FieldValueInvalid", "metadata.name",
                               "Invalid value: \"%s\": %s", name, why)
               : NULL;
  }
  if(!ls_dns_subdomain(name))
    return rest_invalid1(w->rt, name, "FieldValueInvalid", "metadata.name",
                         "Invalid value: \"%s\": a lowercase RFC 1123 subdomain must consist of "
                         "lower case alphanumeric characters, '-' or '.', and must start and end "
                         "with an alphanumeric character (e.g. 'example.com', regex used for "
                         "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                         "[a-z0-9])?)*')", name);
  return NULL;
}

/* uid, creationTimestamp, generation; what a client sent for them is replaced. */
static void stamp_create(struct ls_wctx *w, cJSON *obj, const char *uid, const char *now)
{
  cJSON *m = ls_meta_obj(obj);
  ls_set_str(m, "uid", uid);
  ls_set_str(m, "creationTimestamp", now);
  cJSON_DeleteItemFromObject(m, "deletionTimestamp");
  cJSON_DeleteItemFromObject(m, "deletionGracePeriodSeconds");
  cJSON_DeleteItemFromObject(m, "selfLink");
  if(w->rt->gen != LS_GEN_NONE)
    ls_set_item(m, "generation", cJSON_CreateNumber(1));
  else
    cJSON_DeleteItemFromObject(m, "generation");
  if(w->rt->namespaced)
    ls_set_str(m, "namespace", w->ns);
  else
    cJSON_DeleteItemFromObject(m, "namespace");
  if(w->rt->crd && w->rt->status_sub)
    cJSON_DeleteItemFromObject(obj, "status");
}

static cJSON *namespace_ok(struct ls_wctx *w)
{
  if(!w->rt->namespaced)
    return NULL;
  store_lock();
  int s = rest_namespace_state(w->ns);
  store_unlock();
  if(s < 0)
    return ls_status(404, "NotFound", NULL, "namespaces \"%s\" not found", w->ns);
  if(s > 0) {
    char q[300];
    rest_qualified(w->rt, q, sizeof(q));
    return ls_status(403, "Forbidden", NULL,
                     "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                     "because it is being terminated", q, w->name, w->ns);
  }
  return NULL;
}

static cJSON *crd_terminating(const struct ls_rtype *rt)
{
  if(!rt->crd)
    return NULL;
  char name[300];
  snprintf(name, sizeof(name), "%s.%s", rt->resource, rt->group);
  store_lock();
  const struct ls_entry *e = store_get("apiextensions.k8s.io", "customresourcedefinitions", "",
                                       name);
  bool term = e && *ls_meta(e->obj->json, "deletionTimestamp");
  store_unlock();
  if(term)
    return ls_status(405, "MethodNotAllowed", NULL,
                     "create not allowed while custom resource definition is terminating");
  return NULL;
}

/* Admission and validation of a create; obj may be replaced. */
static cJSON *admit_create(struct ls_wctx *w, cJSON **obj, const char *uid, const char *now)
{
  struct ls_adm_attrs a;
  write_attrs(&a, w);
  const struct ls_rtype *rt = w->rt;
  cJSON *st = NULL;
  if(rt->crd) {
    cJSON *before = cJSON_Duplicate(*obj, 1);
    crd_prune_and_default(rt->group, rt->resource, rt->version, *obj);
    st = write_field_validation(w, before, *obj);
    cJSON_Delete(before);
  }
  if(!st && rt->b && rt->b->prepare)
    st = rt->b->prepare(w, *obj, NULL);
  if(!st && w->r && !w->applied) { /* before mutating admission, as kube's field manager */
    char manager[256];
    ssa_manager(w->r, manager, sizeof(manager));
    ssa_update(rt, "", manager, NULL, *obj);
  }
  if(!st)
    st = admission_mutate(&a, obj, NULL, w->warn);
  if(st)
    return st;
  stamp_create(w, *obj, uid, now);
  if(rt->b && rt->b->validate)
    st = rt->b->validate(w, *obj, NULL);
  if(!st && rt->crd)
    st = crd_validate(rt->group, rt->resource, rt->version, *obj, NULL);
  if(!st)
    st = admission_validate(&a, *obj, NULL, w->warn);
  return st;
}

cJSON *write_create(struct ls_wctx *w, cJSON *obj, cJSON **out)
{
  *out = NULL;
  const struct ls_rtype *rt = w->rt;
  cJSON *m = ls_meta_obj(obj);
  const char *ns = ls_str(m, "namespace");
  cJSON *st = NULL;
  if(rt->namespaced && *ns && strcmp(ns, w->ns))
    st = ls_status(400, "BadRequest", NULL, "the namespace of the provided object does not match "
                                            "the namespace sent on the request");
  if(!st && *ls_str(m, "resourceVersion"))
    st = ls_status(500, "InternalError", NULL, "Internal error occurred: resourceVersion should "
                                               "not be set on objects to be created");
  if(!st)
    st = check_name(w, m);
  char name[300];
  snprintf(name, sizeof(name), "%s", ls_str(m, "name"));
  w->name = name;
  if(!st)
    st = namespace_ok(w);
  if(!st)
    st = crd_terminating(rt);
  char uid[37], now[32];
  ls_uuid(uid);
  ls_now(now);
  if(!st) {
    stamp_create(w, obj, uid, now);
    st = admit_create(w, &obj, uid, now);
  }
  cJSON *stored = NULL;
  if(!st) {
    ls_meta_normalize(obj);
    stored = cJSON_Duplicate(obj, 1);
    st = rest_to_storage(rt, stored);
  }
  if(!st && w->dry_run) {
    /* as kube-apiserver's dry-run storage: the name must still be free */
    store_lock();
    bool taken = store_get(rt->store_group, rt->store_resource, w->ns, name) != NULL;
    store_unlock();
    if(taken)
      st = rest_already_exists(rt, name);
  }
  if(st || w->dry_run) {
    builtin_write_aborted(w, NULL);
    cJSON_Delete(stored);
    if(st) {
      cJSON_Delete(obj);
      w->name = NULL;
      return st;
    }
    *out = obj;
    return NULL;
  }
  store_lock();
  int nss = rt->namespaced ? rest_namespace_state(w->ns) : 0;
  bool exists = store_get(rt->store_group, rt->store_resource, w->ns, name) != NULL;
  uint64_t rv = 0;
  if(!exists && nss == 0)
    rv = store_put(rt->store_group, rt->store_resource, w->ns, name, stored);
  store_unlock();
  if(!rv) {
    cJSON_Delete(stored);
    builtin_write_aborted(w, NULL);
    st = exists ? rest_already_exists(rt, name)
                : ls_status(404, "NotFound", NULL, "namespaces \"%s\" not found", w->ns);
    cJSON_Delete(obj);
    w->name = NULL;
    return st;
  }
  char rvs[32];
  snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
  ls_set_str(ls_meta_obj(obj), "resourceVersion", rvs);
  builtin_after_commit(rt, obj, NULL);
  ls_gc_kick();
  *out = obj;
  w->name = NULL;
  return NULL;
}

void rest_create(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct ls_wctx w;
  cJSON *st = write_ctx(&w, r, rt, t, "CREATE", "CreateOptions");
  cJSON *obj = NULL, *out = NULL;
  if(!st)
    st = write_decode(rt, r->body, r->body_len, &obj);
  if(!st)
    st = write_create(&w, obj, &out);
  write_ctx_release(&w);
  if(st)
    req_reply_status(r, st);
  else
    req_reply_take(r, 201, out);
}

cJSON *rest_internal_create(const char *group, const char *version, const char *resource,
                            const char *ns, cJSON *obj)
{
  struct ls_rtype rt;
  if(!res_lookup(group, version, resource, &rt)) {
    cJSON_Delete(obj);
    return ls_status(404, "NotFound", NULL, "the server could not find the requested resource");
  }
  struct ls_wctx w;
  struct ls_identity id;
  write_ctx_internal(&w, &rt, ns, "", "CREATE", &id, "system:apiserver");
  cJSON *out = NULL;
  cJSON *st = write_create(&w, obj, &out);
  cJSON_Delete(out);
  write_ctx_release(&w);
  auth_identity_release(&id);
  return st;
}
