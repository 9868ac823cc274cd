/* discovery.c: /version, /api, /apis (plain, and aggregated apidiscovery.k8s.io/v2 when asked
 * first), group and group-version documents, and /openapi/v2 and /openapi/v3 (enough for kubectl:
 * every PATCH path declares fieldValidation, so kubectl leaves validation to the server; the
 * schemas of custom resources for kubectl explain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openapi.h"

static const char *const VERBS[] = { "create", "delete", "deletecollection", "get",
                                     "list",   "patch",  "update",           "watch" };

static cJSON *verbs(const struct ls_rtype *rt)
{
  cJSON *v = cJSON_CreateArray();
  if(builtin_is_review(rt)) {
    cJSON_AddItemToArray(v, cJSON_CreateString("create"));
    return v;
  }
  for(size_t i = 0; i < 8; i++)
    cJSON_AddItemToArray(v, cJSON_CreateString(VERBS[i]));
  return v;
}

static cJSON *strs(const char (*v)[32], size_t n)
{
  cJSON *a = cJSON_CreateArray();
  for(size_t i = 0; i < n; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
  return a;
}

struct sub {
  const char *name, *group, *version, *kind, *verbs;
};

/* The subresources of rt. */
static size_t subresources(const struct ls_rtype *rt, struct sub *out)
{
  size_t n = 0;
  if(rt->status_sub)
    out[n++] = (struct sub){ "status", NULL, NULL, NULL, "get,patch,update" };
  if(res_has_sub(rt, "log"))
    out[n++] = (struct sub){ "log", NULL, NULL, "Pod", "get" };
  if(res_has_sub(rt, "binding"))
    out[n++] = (struct sub){ "binding", "", "v1", "Binding", "create" };
  if(res_has_sub(rt, "token"))
    out[n++] = (struct sub){ "token", "authentication.k8s.io", "v1", "TokenRequest", "create" };
  return n;
}

static cJSON *verb_list(const char *csv)
{
  cJSON *a = cJSON_CreateArray();
  char buf[64];
  snprintf(buf, sizeof(buf), "%s", csv);
  char *save = NULL;
  for(char *v = strtok_r(buf, ",", &save); v; v = strtok_r(NULL, ",", &save))
    cJSON_AddItemToArray(a, cJSON_CreateString(v));
  return a;
}

static cJSON *resource_list(const char *group, const char *version, const struct ls_rtype *types,
                            size_t n)
{
  cJSON *l = cJSON_CreateObject();
  char gv[200];
  ls_api_version(group, version, gv, sizeof(gv));
  cJSON_AddStringToObject(l, "kind", "APIResourceList");
  cJSON_AddStringToObject(l, "apiVersion", "v1");
  cJSON_AddStringToObject(l, "groupVersion", gv);
  cJSON *res = cJSON_AddArrayToObject(l, "resources");
  for(size_t i = 0; i < n; i++) {
    const struct ls_rtype *t = &types[i];
    if(strcmp(t->group, group) || strcmp(t->version, version))
      continue;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "name", t->resource);
    cJSON_AddStringToObject(r, "singularName", t->singular);
    cJSON_AddBoolToObject(r, "namespaced", t->namespaced);
    cJSON_AddStringToObject(r, "kind", t->kind);
    cJSON_AddItemToObject(r, "verbs", verbs(t));
    if(t->nshort)
      cJSON_AddItemToObject(r, "shortNames", strs(t->short_names, t->nshort));
    if(t->ncat)
      cJSON_AddItemToObject(r, "categories", strs(t->categories, t->ncat));
    cJSON_AddItemToArray(res, r);
    struct sub subs[4];
    size_t ns = subresources(t, subs);
    for(size_t k = 0; k < ns; k++) {
      cJSON *s = cJSON_CreateObject();
      char name[200];
      snprintf(name, sizeof(name), "%s/%s", t->resource, subs[k].name);
      cJSON_AddStringToObject(s, "name", name);
      cJSON_AddStringToObject(s, "singularName", "");
      cJSON_AddBoolToObject(s, "namespaced", t->namespaced);
      if(subs[k].group) {
        cJSON_AddStringToObject(s, "group", subs[k].group);
        cJSON_AddStringToObject(s, "version", subs[k].version);
      }
      cJSON_AddStringToObject(s, "kind", subs[k].kind ? subs[k].kind : t->kind);
      cJSON_AddItemToObject(s, "verbs", verb_list(subs[k].verbs));
      cJSON_AddItemToArray(res, s);
    }
  }
  return l;
}

/* Groups in the order of first appearance (built-ins as the table lists them, then CRDs);
 * versions by kube's priority. */
struct group {
  char name[128];
  char versions[8][32];
  size_t nversions;
};

static size_t groups_of(const struct ls_rtype *types, size_t n, struct group *g, size_t max)
{
  size_t ng = 0;
  for(size_t i = 0; i < n; i++) {
    if(!*types[i].group)
      continue;
    size_t k = 0;
    while(k < ng && strcmp(g[k].name, types[i].group))
      k++;
    if(k == ng) {
      if(ng == max)
        continue;
      memset(&g[ng], 0, sizeof(g[ng]));
      snprintf(g[ng].name, sizeof(g[ng].name), "%s", types[i].group);
      ng++;
    }
    size_t v = 0;
    while(v < g[k].nversions && strcmp(g[k].versions[v], types[i].version))
      v++;
    if(v == g[k].nversions && v < 8)
      snprintf(g[k].versions[g[k].nversions++], 32, "%s", types[i].version);
  }
  for(size_t k = 0; k < ng; k++) /* insertion sort by priority */
    for(size_t a = 1; a < g[k].nversions; a++)
      for(size_t b = a; b > 0 && ls_version_cmp(g[k].versions[b], g[k].versions[b - 1]) < 0; b--) {
        char tmp[32];
        memcpy(tmp, g[k].versions[b], 32);
        memcpy(g[k].versions[b], g[k].versions[b - 1], 32);
        memcpy(g[k].versions[b - 1], tmp, 32);
      }
  return ng;
}

static cJSON *group_doc(const struct group *g, bool with_kind)
{
  cJSON *o = cJSON_CreateObject();
  if(with_kind) {
    cJSON_AddStringToObject(o, "kind", "APIGroup");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
  }
  cJSON_AddStringToObject(o, "name", g->name);
  cJSON *vs = cJSON_AddArrayToObject(o, "versions");
  for(size_t i = 0; i < g->nversions; i++) {
    cJSON *v = cJSON_CreateObject();
    char gv[200];
    snprintf(gv, sizeof(gv), "%s/%s", g->name, g->versions[i]);
    cJSON_AddStringToObject(v, "groupVersion", gv);
    cJSON_AddStringToObject(v, "version", g->versions[i]);
    cJSON_AddItemToArray(vs, v);
  }
  if(g->nversions)
    cJSON_AddItemToObject(o, "preferredVersion", cJSON_Duplicate(cJSON_GetArrayItem(vs, 0), 1));
  return o;
}

/* ---- aggregated discovery (apidiscovery.k8s.io/v2) ---- */

static cJSON *agg_resource(const struct ls_rtype *t)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "resource", t->resource);
  cJSON *rk = cJSON_AddObjectToObject(r, "responseKind");
  cJSON_AddStringToObject(rk, "group", t->group);
  cJSON_AddStringToObject(rk, "version", t->version);
  cJSON_AddStringToObject(rk, "kind", t->kind);
  cJSON_AddStringToObject(r, "scope", t->namespaced ? "Namespaced" : "Cluster");
  cJSON_AddStringToObject(r, "singularResource", t->singular);
  cJSON_AddItemToObject(r, "verbs", verbs(t));
  if(t->nshort)
    cJSON_AddItemToObject(r, "shortNames", strs(t->short_names, t->nshort));
  if(t->ncat)
    cJSON_AddItemToObject(r, "categories", strs(t->categories, t->ncat));
  struct sub subs[4];
  size_t ns = subresources(t, subs);
  if(ns) {
    cJSON *sa = cJSON_AddArrayToObject(r, "subresources");
    for(size_t k = 0; k < ns; k++) {
      cJSON *s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "subresource", subs[k].name);
      cJSON *k2 = cJSON_AddObjectToObject(s, "responseKind");
      cJSON_AddStringToObject(k2, "group", subs[k].group ? subs[k].group : t->group);
      cJSON_AddStringToObject(k2, "version", subs[k].version ? subs[k].version : t->version);
      cJSON_AddStringToObject(k2, "kind", subs[k].kind ? subs[k].kind : t->kind);
      cJSON_AddItemToObject(s, "verbs", verb_list(subs[k].verbs));
      cJSON_AddItemToArray(sa, s);
    }
  }
  return r;
}

static cJSON *agg_group(const char *name, const char (*versions)[32], size_t nv,
                        const struct ls_rtype *types, size_t n)
{
  cJSON *g = cJSON_CreateObject();
  cJSON *m = cJSON_AddObjectToObject(g, "metadata");
  cJSON_AddStringToObject(m, "name", name);
  cJSON_AddNullToObject(m, "creationTimestamp");
  cJSON *vs = cJSON_AddArrayToObject(g, "versions");
  for(size_t v = 0; v < nv; v++) {
    cJSON *ver = cJSON_CreateObject();
    cJSON_AddStringToObject(ver, "version", versions[v]);
    cJSON *rs = cJSON_AddArrayToObject(ver, "resources");
    for(size_t i = 0; i < n; i++)
      if(!strcmp(types[i].group, name) && !strcmp(types[i].version, versions[v]))
        cJSON_AddItemToArray(rs, agg_resource(&types[i]));
    cJSON_AddStringToObject(ver, "freshness", "Current");
    cJSON_AddItemToArray(vs, ver);
  }
  return g;
}

/* "v2" or "v2beta1" when Accept asks for aggregated discovery first, else NULL. */
static const char *wants_aggregated(const struct ls_req *r)
{
  const char *acc = req_header(r, "Accept");
  if(!acc)
    return NULL;
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", acc);
  char *save = NULL;
  for(char *mt = strtok_r(buf, ",", &save); mt; mt = strtok_r(NULL, ",", &save)) {
    if(strstr(mt, "as=APIGroupDiscoveryList") && strstr(mt, "g=apidiscovery.k8s.io")) {
      if(strstr(mt, "v=v2beta1"))
        return "v2beta1";
      if(strstr(mt, "v=v2"))
        return "v2";
      continue;
    }
    if(strstr(mt, "application/json") || strstr(mt, "*/*"))
      return NULL;
  }
  return NULL;
}

static void reply_aggregated(struct ls_req *r, const char *v, bool core,
                             const struct ls_rtype *types, size_t n)
{
  cJSON *l = cJSON_CreateObject();
  char av[64];
  snprintf(av, sizeof(av), "apidiscovery.k8s.io/%s", v);
  cJSON_AddStringToObject(l, "kind", "APIGroupDiscoveryList");
  cJSON_AddStringToObject(l, "apiVersion", av);
  cJSON_AddObjectToObject(l, "metadata");
  cJSON *items = cJSON_AddArrayToObject(l, "items");
  if(core) {
    char v1[1][32] = { "v1" };
    cJSON_AddItemToArray(items, agg_group("", (const char(*)[32])v1, 1, types, n));
  } else {
    struct group g[64];
    size_t ng = groups_of(types, n, g, 64);
    for(size_t i = 0; i < ng; i++)
      cJSON_AddItemToArray(items, agg_group(g[i].name, (const char(*)[32])g[i].versions,
                                            g[i].nversions, types, n));
  }
  req_reply_take(r, 200, l);
  snprintf(r->ctype, sizeof(r->ctype),
           "application/json;g=apidiscovery.k8s.io;v=%s;as=APIGroupDiscoveryList", v);
}

static void version_doc(struct ls_req *r)
{
  cJSON *v = cJSON_CreateObject();
  cJSON_AddStringToObject(v, "major", "1");
  cJSON_AddStringToObject(v, "minor", LS_KUBE_MINOR);
  cJSON_AddStringToObject(v, "gitVersion", LS_KUBE_VERSION);
  cJSON_AddStringToObject(v, "gitCommit", "godwit-local");
  cJSON_AddStringToObject(v, "gitTreeState", "clean");
  cJSON_AddStringToObject(v, "buildDate", "2024-12-11T00:00:00Z");
  cJSON_AddStringToObject(v, "goVersion", "go1.23.3");
  cJSON_AddStringToObject(v, "compiler", "gc");
  cJSON_AddStringToObject(v, "platform", "linux/amd64");
  req_reply_take(r, 200, v);
}

bool discovery_handle(struct ls_req *r)
{
  const char *p = r->path;
  if(!strcmp(p, "/version")) {
    version_doc(r);
    return true;
  }
  if(!strncmp(p, "/openapi/", 9))
    return openapi_handle(r);
  bool api = !strcmp(p, "/api") || !strcmp(p, "/api/");
  bool apis = !strcmp(p, "/apis") || !strcmp(p, "/apis/");
  bool core_v1 = !strcmp(p, "/api/v1") || !strcmp(p, "/api/v1/");
  char g[128] = "", v[32] = "";
  int segs = 0;
  if(!strncmp(p, "/apis/", 6)) {
    char rest[300];
    snprintf(rest, sizeof(rest), "%s", p + 6);
    size_t len = strlen(rest);
    if(len && rest[len - 1] == '/')
      rest[len - 1] = '\0';
    char *slash = strchr(rest, '/');
    if(slash && !strchr(slash + 1, '/')) {
      snprintf(g, sizeof(g), "%.*s", (int)(slash - rest), rest);
      snprintf(v, sizeof(v), "%.31s", slash + 1);
      segs = 2;
    } else if(!slash && *rest) {
      snprintf(g, sizeof(g), "%.127s", rest);
      segs = 1;
    }
  }
  if(!api && !apis && !core_v1 && !segs)
    return false;
  if(strcmp(r->method, "GET")) {
    req_reply_status(r, ls_status(405, "MethodNotAllowed", NULL, "the server does not allow "
                                                                 "this method on the requested "
                                                                 "resource"));
    return true;
  }
  struct ls_rtype *types;
  size_t n = res_snapshot(&types);
  const char *agg = (api || apis) ? wants_aggregated(r) : NULL;
  if(agg) {
    reply_aggregated(r, agg, api, types, n);
  } else if(api) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", "APIVersions");
    cJSON *vs = cJSON_AddArrayToObject(o, "versions");
    cJSON_AddItemToArray(vs, cJSON_CreateString("v1"));
    cJSON *addrs = cJSON_AddArrayToObject(o, "serverAddressByClientCIDRs");
    cJSON *a = cJSON_CreateObject();
    char sa[64];
    snprintf(sa, sizeof(sa), "127.0.0.1:%d", http_port());
    cJSON_AddStringToObject(a, "clientCIDR", "0.0.0.0/0");
    cJSON_AddStringToObject(a, "serverAddress", sa);
    cJSON_AddItemToArray(addrs, a);
    req_reply_take(r, 200, o);
  } else if(apis) {
    struct group gs[64];
    size_t ng = groups_of(types, n, gs, 64);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", "APIGroupList");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON *arr = cJSON_AddArrayToObject(o, "groups");
    for(size_t i = 0; i < ng; i++)
      cJSON_AddItemToArray(arr, group_doc(&gs[i], false));
    req_reply_take(r, 200, o);
  } else if(core_v1) {
    req_reply_take(r, 200, resource_list("", "v1", types, n));
  } else {
    struct group gs[64];
    size_t ng = groups_of(types, n, gs, 64);
    const struct group *found = NULL;
    for(size_t i = 0; i < ng; i++)
      if(!strcmp(gs[i].name, g))
        found = &gs[i];
    bool has_v = false;
    for(size_t i = 0; found && i < found->nversions; i++)
      has_v |= !strcmp(found->versions[i], v);
    if(!found || (segs == 2 && !has_v))
      req_reply_status(r, ls_status(404, "NotFound", cJSON_CreateObject(),
                                    "the server could not find the requested resource"));
    else if(segs == 1)
      req_reply_take(r, 200, group_doc(found, true));
    else
      req_reply_take(r, 200, resource_list(g, v, types, n));
  }
  free(types);
  return true;
}
