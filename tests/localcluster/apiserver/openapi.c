/* openapi.c: the OpenAPI documents kubectl reads. /openapi/v3 lists one document per group
 * version; each declares, for every resource, a PATCH operation with the fieldValidation and
 * dryRun query parameters tagged with x-kubernetes-group-version-kind (what kubectl's
 * QueryParamVerifierV3 looks for, so `kubectl apply` validates on the server), and the schemas
 * of custom resources (kubectl explain). /openapi/v2 is an empty document (protobuf or JSON):
 * kubectl 1.20 then skips client-side validation of unknown kinds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openapi.h"

static void gv_path(const char *group, const char *version, char *out, size_t len)
{
  if(*group)
    snprintf(out, len, "apis/%s/%s", group, version);
  else
    snprintf(out, len, "api/%s", version);
}

static cJSON *param(const char *name)
{
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "name", name);
  cJSON_AddStringToObject(p, "in", "query");
  cJSON *s = cJSON_AddObjectToObject(p, "schema");
  cJSON_AddStringToObject(s, "type", "string");
  cJSON_AddBoolToObject(s, "uniqueItems", 1);
  return p;
}

static cJSON *gvk(const struct ls_rtype *t)
{
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "group", t->group);
  cJSON_AddStringToObject(k, "version", t->version);
  cJSON_AddStringToObject(k, "kind", t->kind);
  return k;
}

static cJSON *operation(const struct ls_rtype *t, const char *action, bool params)
{
  cJSON *op = cJSON_CreateObject();
  char id[300];
  snprintf(id, sizeof(id), "%s%s", action, t->kind);
  cJSON_AddStringToObject(op, "operationId", id);
  if(params) {
    cJSON *ps = cJSON_AddArrayToObject(op, "parameters");
    cJSON_AddItemToArray(ps, param("dryRun"));
    cJSON_AddItemToArray(ps, param("fieldManager"));
    cJSON_AddItemToArray(ps, param("fieldValidation"));
  }
  cJSON *rs = cJSON_AddObjectToObject(op, "responses");
  cJSON *ok = cJSON_AddObjectToObject(rs, "200");
  cJSON_AddStringToObject(ok, "description", "OK");
  cJSON_AddStringToObject(op, "x-kubernetes-action", action);
  cJSON_AddItemToObject(op, "x-kubernetes-group-version-kind", gvk(t));
  return op;
}

static void component_name(const struct ls_rtype *t, char *out, size_t len)
{
  char rev[256] = "";
  char g[128];
  snprintf(g, sizeof(g), "%s", t->group);
  while(*g) {
    char *dot = strrchr(g, '.');
    const char *part = dot ? dot + 1 : g;
    size_t l = strlen(rev);
    snprintf(rev + l, sizeof(rev) - l, "%s%s", l ? "." : "", part);
    if(!dot)
      break;
    *dot = '\0';
  }
  snprintf(out, len, "%s.%s.%s", rev, t->version, t->kind);
}

/* The openAPIV3Schema of a custom resource version, tagged, or NULL. */
static cJSON *crd_schema(const struct ls_rtype *t)
{
  char name[300];
  snprintf(name, sizeof(name), "%s.%s", t->resource, t->group);
  cJSON *schema = NULL;
  store_lock();
  const struct ls_entry *e = store_get("apiextensions.k8s.io", "customresourcedefinitions", "",
                                       name);
  const cJSON *versions =
    e ? cJSON_GetObjectItem(cJSON_GetObjectItem(e->obj->json, "spec"), "versions") : NULL;
  const cJSON *v;
  cJSON_ArrayForEach(v, versions)
  {
    if(!strcmp(ls_str(v, "name"), t->version)) {
      const cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(v, "schema"), "openAPIV3Schema");
      if(s)
        schema = cJSON_Duplicate(s, 1);
    }
  }
  store_unlock();
  if(!schema)
    return NULL;
  cJSON *tags = cJSON_CreateArray();
  cJSON_AddItemToArray(tags, gvk(t));
  ls_set_item(schema, "x-kubernetes-group-version-kind", tags);
  return schema;
}

static cJSON *gv_doc(const char *group, const char *version, const struct ls_rtype *types,
                     size_t n)
{
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "openapi", "3.0.0");
  cJSON *info = cJSON_AddObjectToObject(d, "info");
  cJSON_AddStringToObject(info, "title", "Kubernetes");
  cJSON_AddStringToObject(info, "version", LS_KUBE_VERSION);
  cJSON *paths = cJSON_AddObjectToObject(d, "paths");
  cJSON *schemas = cJSON_AddObjectToObject(cJSON_AddObjectToObject(d, "components"), "schemas");
  char base[300];
  gv_path(group, version, base, sizeof(base));
  for(size_t i = 0; i < n; i++) {
    const struct ls_rtype *t = &types[i];
    if(strcmp(t->group, group) || strcmp(t->version, version) || builtin_is_review(t))
      continue;
    char p[700];
    snprintf(p, sizeof(p), "/%s/%s%s/{name}", base, t->namespaced ? "namespaces/{namespace}/" : "",
             t->resource);
    cJSON *item = cJSON_CreateObject();
    cJSON_AddItemToObject(item, "get", operation(t, "get", false));
    cJSON_AddItemToObject(item, "put", operation(t, "put", true));
    cJSON_AddItemToObject(item, "patch", operation(t, "patch", true));
    cJSON_AddItemToObject(item, "delete", operation(t, "delete", true));
    cJSON_AddItemToObject(paths, p, item);
    snprintf(p, sizeof(p), "/%s/%s%s", base, t->namespaced ? "namespaces/{namespace}/" : "",
             t->resource);
    cJSON *coll = cJSON_CreateObject();
    cJSON_AddItemToObject(coll, "post", operation(t, "post", true));
    cJSON_AddItemToObject(paths, p, coll);
    if(t->crd) {
      cJSON *s = crd_schema(t);
      char cn[400];
      component_name(t, cn, sizeof(cn));
      if(s)
        cJSON_AddItemToObject(schemas, cn, s);
    }
  }
  return d;
}

static void hash_hex(const char *s, char out[17])
{
  unsigned long long h = 1469598103934665603ULL;
  for(; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  snprintf(out, 17, "%016llX", h);
}

static void reply_index(struct ls_req *r, const struct ls_rtype *types, size_t n)
{
  cJSON *idx = cJSON_CreateObject();
  cJSON *paths = cJSON_AddObjectToObject(idx, "paths");
  for(size_t i = 0; i < n; i++) {
    char gp[300];
    gv_path(types[i].group, types[i].version, gp, sizeof(gp));
    if(cJSON_GetObjectItem(paths, gp))
      continue;
    cJSON *doc = gv_doc(types[i].group, types[i].version, types, n);
    char *s = ls_print(doc);
    cJSON_Delete(doc);
    char h[17], url[400];
    hash_hex(s, h);
    free(s);
    snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", gp, h);
    cJSON *e = cJSON_AddObjectToObject(paths, gp);
    cJSON_AddStringToObject(e, "serverRelativeURL", url);
  }
  req_reply_take(r, 200, idx);
}

bool openapi_handle(struct ls_req *r)
{
  const char *p = r->path;
  if(!strcmp(p, "/openapi/v2")) {
    const char *acc = req_header(r, "Accept");
    if(acc && strstr(acc, "protobuf"))
      req_reply_text(r, 200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", "", 0);
    else {
      cJSON *d = cJSON_CreateObject();
      cJSON_AddStringToObject(d, "swagger", "2.0");
      cJSON *info = cJSON_AddObjectToObject(d, "info");
      cJSON_AddStringToObject(info, "title", "Kubernetes");
      cJSON_AddStringToObject(info, "version", LS_KUBE_VERSION);
      cJSON_AddObjectToObject(d, "paths");
      cJSON_AddObjectToObject(d, "definitions");
      req_reply_take(r, 200, d);
    }
    return true;
  }
  struct ls_rtype *types;
  size_t n = res_snapshot(&types);
  if(!strcmp(p, "/openapi/v3") || !strcmp(p, "/openapi/v3/")) {
    reply_index(r, types, n);
    free(types);
    return true;
  }
  const char *gp = !strncmp(p, "/openapi/v3/", 12) ? p + 12 : "";
  for(size_t i = 0; i < n; i++) {
    char want[300];
    gv_path(types[i].group, types[i].version, want, sizeof(want));
    if(!strcmp(want, gp)) {
      req_reply_take(r, 200, gv_doc(types[i].group, types[i].version, types, n));
      free(types);
      return true;
    }
  }
  free(types);
  req_reply_status(r, ls_status(404, "NotFound", cJSON_CreateObject(),
                                "the server could not find the requested resource"));
  return true;
}
