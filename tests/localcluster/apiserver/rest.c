/* rest.c: routing of resource paths to the verbs, kube's standard errors, and the conversions
 * between the stored and the served form of an object. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbac.h"
#include "rest.h"
#include "yamldoc.h"

void rest_fail(struct ls_req *r, cJSON *st)
{
  if(r)
    req_reply_status(r, st);
  else
    cJSON_Delete(st);
}

void rest_qualified(const struct ls_rtype *rt, char *out, size_t len)
{
  if(*rt->group)
    snprintf(out, len, "%s.%s", rt->resource, rt->group);
  else
    snprintf(out, len, "%s", rt->resource);
}

static cJSON *details(const struct ls_rtype *rt, const char *name)
{
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "name", name);
  if(*rt->group)
    cJSON_AddStringToObject(d, "group", rt->group);
  cJSON_AddStringToObject(d, "kind", rt->resource);
  return d;
}

cJSON *rest_not_found(const struct ls_rtype *rt, const char *name)
{
  char q[300];
  rest_qualified(rt, q, sizeof(q));
  return ls_status(404, "NotFound", details(rt, name), "%s \"%s\" not found", q, name);
}

cJSON *rest_already_exists(const struct ls_rtype *rt, const char *name)
{
  char q[300];
  rest_qualified(rt, q, sizeof(q));
  return ls_status(409, "AlreadyExists", details(rt, name), "%s \"%s\" already exists", q, name);
}

cJSON *rest_conflict(const struct ls_rtype *rt, const char *name, const char *why)
{
  char q[300];
  rest_qualified(rt, q, sizeof(q));
  return ls_status(409, "Conflict", details(rt, name),
                   "Operation cannot be fulfilled on %s \"%s\": %s",
                   q, name,
                   why ? why
                       : "the object has been modified; please apply your changes to the latest "
                         "version and try again");
}

void rest_cause(cJSON *causes, const char *reason, const char *field, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "reason", reason);
  cJSON_AddStringToObject(c, "message", msg);
  cJSON_AddStringToObject(c, "field", field);
  cJSON_AddItemToArray(causes, c);
}

cJSON *rest_invalid1(const struct ls_rtype *rt, const char *name, const char *reason,
                     const char *field, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cJSON *causes = cJSON_CreateArray();
  rest_cause(causes, reason, field, "%s", msg);
  return ls_status_invalid(rt->group, rt->kind, name, causes);
}

static bool needs_conversion(const struct ls_rtype *rt, const cJSON *obj)
{
  char av[200];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  return strcmp(ls_str(obj, "apiVersion"), av) != 0;
}

cJSON *rest_to_served(const struct ls_rtype *rt, cJSON *const *objs, size_t n)
{
  if(rt->crd) {
    bool any = false;
    for(size_t i = 0; i < n && !any; i++)
      any = needs_conversion(rt, objs[i]);
    if(any) {
      cJSON *st = crd_convert(rt->group, rt->resource, objs, n, rt->version);
      if(st)
        return st;
    }
    for(size_t i = 0; i < n; i++)
      crd_prune_and_default(rt->group, rt->resource, rt->version, objs[i]);
    return NULL;
  }
  for(size_t i = 0; i < n; i++) {
    if(rt->b && rt->b->from_storage)
      rt->b->from_storage(objs[i]);
    if(!cJSON_GetObjectItem(objs[i], "kind"))
      ls_set_str(objs[i], "kind", rt->kind);
  }
  return NULL;
}

cJSON *rest_to_storage(const struct ls_rtype *rt, cJSON *obj)
{
  if(rt->crd) {
    if(strcmp(rt->storage_version, rt->version)) {
      cJSON *st = crd_convert(rt->group, rt->resource, &obj, 1, rt->storage_version);
      if(st)
        return st;
    }
    return NULL;
  }
  if(rt->b && rt->b->to_storage)
    rt->b->to_storage(obj);
  return NULL;
}

int rest_namespace_state(const char *ns)
{
  const struct ls_entry *e = store_get("", "namespaces", "", ns);
  if(!e)
    return -1;
  return *ls_meta(e->obj->json, "deletionTimestamp") ? 1 : 0;
}

/* /api/v1/... or /apis/G/V/...; false when the path is not a resource path. */
static bool parse_path(const char *path, struct ls_target *t, bool *watch_prefix)
{
  memset(t, 0, sizeof(*t));
  *watch_prefix = false;
  char buf[2048];
  snprintf(buf, sizeof(buf), "%s", path);
  char *seg[16];
  size_t n = 0;
  char *save = NULL;
  for(char *s = strtok_r(buf, "/", &save); s && n < 16; s = strtok_r(NULL, "/", &save))
    seg[n++] = s;
  size_t i;
  if(n >= 2 && !strcmp(seg[0], "api")) {
    snprintf(t->version, sizeof(t->version), "%s", seg[1]);
    i = 2;
  } else if(n >= 3 && !strcmp(seg[0], "apis")) {
    snprintf(t->group, sizeof(t->group), "%s", seg[1]);
    snprintf(t->version, sizeof(t->version), "%s", seg[2]);
    i = 3;
  } else
    return false;
  if(i < n && !strcmp(seg[i], "watch")) {
    *watch_prefix = true;
    i++;
  }
  size_t rest = n - i;
  if(rest == 0)
    return false;
  if(!strcmp(seg[i], "namespaces") && rest >= 3 &&
     !(rest == 3 && (!strcmp(seg[i + 2], "status") || !strcmp(seg[i + 2], "finalize")))) {
    t->has_ns = true;
    snprintf(t->ns, sizeof(t->ns), "%s", seg[i + 1]);
    i += 2;
    rest -= 2;
  }
  if(rest > 3)
    return false;
  snprintf(t->resource, sizeof(t->resource), "%s", seg[i]);
  if(rest >= 2)
    snprintf(t->name, sizeof(t->name), "%s", seg[i + 1]);
  if(rest >= 3)
    snprintf(t->sub, sizeof(t->sub), "%s", seg[i + 2]);
  return true;
}

static void not_found_path(struct ls_req *r)
{
  cJSON *st = ls_status(404, "NotFound", cJSON_CreateObject(),
                        "the server could not find the requested resource");
  req_reply_status(r, st);
}

static void method_not_allowed(struct ls_req *r)
{
  req_reply_status(r, ls_status(405, "MethodNotAllowed", cJSON_CreateObject(),
                                "the server does not allow this method on the requested "
                                "resource"));
}

static void review(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
  if(!cJSON_IsObject(body)) {
    cJSON_Delete(body);
    req_reply_status(r, ls_status(400, "BadRequest", NULL, "the body of the request is not a %s",
                                  rt->kind));
    return;
  }
  char av[200];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  ls_set_str(body, "apiVersion", av);
  ls_set_str(body, "kind", rt->kind);
  if(!strcmp(rt->resource, "selfsubjectreviews")) {
    cJSON *status = cJSON_CreateObject();
    cJSON_AddItemToObject(status, "userInfo", auth_user_info(&r->id));
    ls_set_item(body, "status", status);
  } else {
    cJSON *st = rbac_review(&r->id, rt, t->ns, body);
    if(st) {
      cJSON_Delete(body);
      req_reply_status(r, st);
      return;
    }
  }
  req_reply_take(r, 201, body);
}

static const char *verb_of(const struct ls_req *r, const struct ls_target *t, bool watch_prefix)
{
  const char *m = r->method;
  if(!strcmp(m, "GET"))
    return t->name[0] ? (watch_prefix ? "watch" : "get")
                      : (watch_prefix || req_param_true(r, "watch")) ? "watch" : "list";
  if(!strcmp(m, "POST"))
    return "create";
  if(!strcmp(m, "PUT"))
    return "update";
  if(!strcmp(m, "PATCH"))
    return "patch";
  if(!strcmp(m, "DELETE"))
    return t->name[0] ? "delete" : "deletecollection";
  return "";
}

/* Bodies in YAML or protobuf become JSON; false when answered (415, 400). */
static bool decode_body(struct ls_req *r, const char *verb)
{
  const char *ct = req_header(r, "Content-Type");
  if((strcmp(verb, "create") && strcmp(verb, "update")) || !ct)
    return true;
  char err[256];
  if(!strncmp(ct, "application/vnd.kubernetes.protobuf", 35)) {
    r->body_alloc = ls_protobuf_to_json(r->body, r->body_len, err, sizeof(err));
    if(!r->body_alloc) {
      req_reply_status(r, ls_status(415, "UnsupportedMediaType", NULL, "%s", err));
      return false;
    }
  } else if(!strncmp(ct, "application/yaml", 16)) {
    cJSON *docs = NULL;
    if(yamldoc_parse(r->body, r->body_len, &docs, err, sizeof(err)) ||
       cJSON_GetArraySize(docs) != 1) {
      cJSON_Delete(docs);
      req_reply_status(r, ls_status(400, "BadRequest", NULL, "error decoding YAML: %s",
                                    err[0] ? err : "one document expected"));
      return false;
    }
    r->body_alloc = ls_print(cJSON_GetArrayItem(docs, 0));
    cJSON_Delete(docs);
  } else if(strncmp(ct, "application/json", 16) && strncmp(ct, "*/*", 3)) {
    req_reply_status(r, ls_status(415, "UnsupportedMediaType", NULL,
                                  "the body of the request was in an unknown format - accepted "
                                  "media types include: application/json, application/yaml, "
                                  "application/vnd.kubernetes.protobuf"));
    return false;
  } else
    return true;
  r->body = r->body_alloc;
  r->body_len = strlen(r->body_alloc);
  return true;
}

/* kube's RequestInfo for a list or watch names the object a metadata.name field selector
 * picks, so that resourceNames rules can allow it. */
static void selected_name(const struct ls_req *r, char *out, size_t len)
{
  const char *fs = req_param(r, "fieldSelector");
  const char *key = "metadata.name=";
  if(fs && !strncmp(fs, key, strlen(key)) && !strchr(fs, ','))
    snprintf(out, len, "%s", fs + strlen(key) + (fs[strlen(key)] == '='));
}

/* RBAC on the request's attributes (rbac.h); NULL when allowed. */
static cJSON *authorize(const struct ls_req *r, const struct ls_target *t, const char *verb)
{
  char name[254];
  snprintf(name, sizeof(name), "%s", t->name);
  if(!*name && (!strcmp(verb, "list") || !strcmp(verb, "watch")))
    selected_name(r, name, sizeof(name));
  /* /api/v1/namespaces/NAME is in its own namespace */
  const char *ns = t->has_ns ? t->ns
                   : (!*t->group && !strcmp(t->resource, "namespaces")) ? t->name : "";
  struct rbac_attrs a = { verb, true, t->group, t->resource, t->sub, ns, name, "" };
  return rbac_check(&r->id, &a);
}

bool rest_resource_path(const char *path)
{
  struct ls_target t;
  bool watch_prefix;
  return parse_path(path, &t, &watch_prefix);
}

void rest_dispatch(struct ls_req *r)
{
  struct ls_target t;
  bool watch_prefix;
  struct ls_rtype rt;
  if(!parse_path(r->path, &t, &watch_prefix)) {
    not_found_path(r);
    return;
  }
  /* kube authorizes what the path names before looking the resource up */
  const char *verb = verb_of(r, &t, watch_prefix);
  cJSON *denied = authorize(r, &t, verb);
  if(denied) {
    req_reply_status(r, denied);
    return;
  }
  if(!res_lookup(t.group, t.version, t.resource, &rt) || (t.has_ns && !rt.namespaced) ||
     (t.sub[0] && !res_has_sub(&rt, t.sub))) {
    not_found_path(r);
    return;
  }
  if(faults_apply(r, verb))
    return;
  if(rt.deprecated && rt.deprecation_warning[0])
    ls_warnings_add(&r->warn, rt.deprecation_warning);
  bool named = t.name[0] != '\0';
  if(rt.namespaced && !t.has_ns && (named || (strcmp(verb, "list") && strcmp(verb, "watch")))) {
    if(named)
      not_found_path(r);
    else
      method_not_allowed(r);
    return;
  }
  if(!decode_body(r, verb))
    return;
  if(!strcmp(t.sub, "log")) {
    if(strcmp(verb, "get"))
      method_not_allowed(r);
    else
      rest_pod_log(r, &t);
    return;
  }
  if(!strcmp(t.sub, "token") || !strcmp(t.sub, "binding")) {
    if(strcmp(verb, "create"))
      method_not_allowed(r);
    else if(!strcmp(t.sub, "token"))
      auth_token_request(r, t.ns, t.name);
    else
      rest_pod_binding(r, &t);
    return;
  }
  if(builtin_is_review(&rt)) {
    if(strcmp(verb, "create") || t.name[0])
      method_not_allowed(r);
    else
      review(r, &rt, &t);
    return;
  }
  if(!strcmp(verb, "get"))
    rest_get(r, &rt, &t);
  else if(!strcmp(verb, "list"))
    rest_list(r, &rt, &t);
  else if(!strcmp(verb, "watch"))
    rest_watch(r, &rt, &t);
  else if(!strcmp(verb, "create") && !named)
    rest_create(r, &rt, &t);
  else if(!strcmp(verb, "update") && named)
    rest_update(r, &rt, &t);
  else if(!strcmp(verb, "patch") && named)
    rest_patch(r, &rt, &t);
  else if(!strcmp(verb, "delete") && !t.sub[0])
    rest_delete(r, &rt, &t);
  else if(!strcmp(verb, "deletecollection"))
    rest_delete_collection(r, &rt, &t);
  else
    method_not_allowed(r);
}
