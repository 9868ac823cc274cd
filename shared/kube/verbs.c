/* The REST verbs: where each goes and what it sends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kube_int.h"

#define PATH_MAX_LEN 8192

static bool unreserved(unsigned char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

static gw_rc add_escaped(struct strbuf *sb, const char *s)
{
  gw_rc rc = GW_OK;
  for(const unsigned char *p = (const unsigned char *)s; *p && !rc; p++)
    rc = unreserved(*p) ? strbuf_addc(sb, (char)*p) : strbuf_addf(sb, "%%%02X", *p);
  return rc;
}

static gw_rc add_segment(struct strbuf *sb, const char *s)
{
  gw_rc rc = strbuf_addc(sb, '/');
  if(!rc)
    rc = add_escaped(sb, s);
  return rc;
}

gw_rc kube_path(struct strbuf *sb, const struct kube_gvr *r, const char *ns, const char *name,
                const char *sub)
{
  gw_rc rc = r->group && *r->group ? strbuf_addf(sb, "/apis/%s/%s", r->group, r->version)
                                   : strbuf_addf(sb, "/api/%s", r->version);
  if(!rc && r->namespaced && ns && *ns) {
    rc = strbuf_adds(sb, "/namespaces");
    if(!rc)
      rc = add_segment(sb, ns);
  }
  if(!rc)
    rc = strbuf_addf(sb, "/%s", r->resource);
  if(!rc && name)
    rc = add_segment(sb, name);
  if(!rc && sub && *sub)
    rc = strbuf_addf(sb, "/%s", sub);
  return rc;
}

gw_rc kube_query(struct strbuf *sb, const char *key, const char *value)
{
  if(!value)
    return GW_OK;
  gw_rc rc = strbuf_addf(sb, "%c%s=", strchr(strbuf_str(sb), '?') ? '&' : '?', key);
  if(!rc)
    rc = add_escaped(sb, value);
  return rc;
}

static gw_rc bad_arg(struct kube_status *st, const char *msg)
{
  if(st) {
    kube_status_reset(st);
    snprintf(st->reason, sizeof(st->reason), "BadRequest");
    snprintf(st->message, sizeof(st->message), "%s", msg);
  }
  return GW_EINVAL;
}

/* The namespace of a namespaced call: the argument, else the object's, else the client's. */
static const char *pick_ns(const struct kube_client *k, const struct kube_gvr *r, const char *ns,
                           const cJSON *obj)
{
  if(!r->namespaced)
    return NULL;
  if(ns && *ns)
    return ns;
  const char *o = obj ? json_get_str(obj, "metadata.namespace") : NULL;
  return o && *o ? o : k->cfg.namespace;
}

static gw_rc send_json(struct kube_client *k, enum kube_verb verb, const char *method,
                       struct strbuf *path, const char *ctype, const char *body, bool idempotent,
                       cJSON **out, struct kube_status *st)
{
  if(path->err)
    return bad_arg(st, "request path too long");
  struct kube_req rq = { .verb = verb, .method = method, .path = strbuf_str(path),
                         .content_type = ctype, .body = body,
                         .body_len = body ? strlen(body) : 0, .idempotent = idempotent };
  return kube_call(k, &rq, out, NULL, NULL, st);
}

gw_rc kube_get(struct kube_client *k, const struct kube_gvr *r, const char *ns, const char *name,
               cJSON **out, struct kube_status *st)
{
  if(out)
    *out = NULL;
  if(!name || !*name)
    return bad_arg(st, "get: no name");
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, r, pick_ns(k, r, ns, NULL), name, NULL);
  if(!rc)
    rc = send_json(k, KV_GET, "GET", &p, NULL, NULL, true, out, st);
  strbuf_release(&p);
  return rc;
}

gw_rc kube_list(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                const struct kube_list_opts *o, cJSON **out, struct kube_status *st)
{
  if(out)
    *out = NULL;
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, r, ns, NULL, NULL);
  if(o) {
    char lim[32];
    snprintf(lim, sizeof(lim), "%ld", o->limit);
    if(!rc)
      rc = kube_query(&p, "labelSelector", o->label_selector);
    if(!rc)
      rc = kube_query(&p, "fieldSelector", o->field_selector);
    if(!rc && o->limit > 0)
      rc = kube_query(&p, "limit", lim);
    if(!rc && o->continue_token && *o->continue_token)
      rc = kube_query(&p, "continue", o->continue_token);
    if(!rc)
      rc = kube_query(&p, "resourceVersion", o->resource_version);
  }
  if(!rc)
    rc = send_json(k, KV_LIST, "GET", &p, NULL, NULL, true, out, st);
  strbuf_release(&p);
  return rc;
}

/* Appends the items of page to all's items. */
static gw_rc append_items(cJSON *all, cJSON *page)
{
  cJSON *dst = cJSON_GetObjectItemCaseSensitive(all, "items");
  cJSON *src = cJSON_GetObjectItemCaseSensitive(page, "items");
  if(!cJSON_IsArray(dst)) {
    cJSON_DeleteItemFromObjectCaseSensitive(all, "items");
    dst = cJSON_AddArrayToObject(all, "items");
    if(!dst)
      return GW_ENOMEM;
  }
  while(cJSON_IsArray(src) && cJSON_GetArraySize(src) > 0)
    cJSON_AddItemToArray(dst, cJSON_DetachItemFromArray(src, 0));
  return GW_OK;
}

gw_rc kube_list_all(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                    const struct kube_list_opts *o, cJSON **out, struct kube_status *st)
{
  struct kube_status local;
  kube_status_init(&local);
  if(!st)
    st = &local;
  struct kube_list_opts po = { 0 };
  if(o)
    po = *o;
  if(po.limit <= 0)
    po.limit = 500;
  po.continue_token = NULL;
  *out = NULL;
  cJSON *all = NULL;
  char *cont = NULL;
  gw_rc rc;
  for(;;) {
    cJSON *page = NULL;
    rc = kube_list(k, r, ns, &po, &page, st);
    if(rc == GW_EGONE && po.continue_token) {
      /* The continue token expired (history compacted): one full list, no paging, as
       * client-go's pager falls back. */
      cJSON_Delete(all);
      all = NULL;
      po.limit = 0;
      po.continue_token = NULL;
      continue;
    }
    if(!rc && !cJSON_IsObject(page)) {
      snprintf(st->reason, sizeof(st->reason), "BadResponse");
      snprintf(st->message, sizeof(st->message), "list: the answer is not a List object");
      rc = GW_EPARSE;
    }
    if(rc) {
      cJSON_Delete(page);
      break;
    }
    if(!all) {
      all = page;
      if(!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(all, "items"))) {
        cJSON_DeleteItemFromObjectCaseSensitive(all, "items");
        if(!cJSON_AddArrayToObject(all, "items"))
          rc = GW_ENOMEM;
      }
    } else {
      rc = append_items(all, page);
      /* The pages share the first one's snapshot; keep the last metadata (same RV). */
      cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(page, "metadata");
      if(md)
        cJSON_ReplaceItemInObjectCaseSensitive(all, "metadata", md);
      cJSON_Delete(page);
    }
    const char *c = json_get_str(all, "metadata.continue");
    free(cont);
    cont = c && *c && !rc ? strdup(c) : NULL;
    if(rc || !cont)
      break;
    po.continue_token = cont;
    po.resource_version = NULL; /* not allowed with continue */
  }
  free(cont);
  kube_status_release(&local);
  if(rc) {
    cJSON_Delete(all);
    return rc;
  }
  json_remove(all, "metadata.continue");
  json_remove(all, "metadata.remainingItemCount");
  *out = all;
  return GW_OK;
}

gw_rc kube_create(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const cJSON *obj, bool dry_run, cJSON **out, struct kube_status *st)
{
  if(out)
    *out = NULL;
  if(!cJSON_IsObject(obj))
    return bad_arg(st, "create: the object is not a JSON object");
  char *body = cJSON_PrintUnformatted(obj);
  if(!body)
    return GW_ENOMEM;
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, r, pick_ns(k, r, ns, obj), NULL, NULL);
  if(!rc && dry_run)
    rc = kube_query(&p, "dryRun", "All");
  if(!rc)
    rc = send_json(k, KV_CREATE, "POST", &p, "application/json", body, false, out, st);
  strbuf_release(&p);
  cJSON_free(body);
  return rc;
}

gw_rc kube_update(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const cJSON *obj, const char *subresource, cJSON **out, struct kube_status *st)
{
  if(out)
    *out = NULL;
  const char *name = json_get_str(obj, "metadata.name");
  if(!name || !*name)
    return bad_arg(st, "update: the object has no metadata.name");
  char *body = cJSON_PrintUnformatted(obj);
  if(!body)
    return GW_ENOMEM;
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, r, pick_ns(k, r, ns, obj), name, subresource);
  /* A PUT with a resourceVersion is a precondition: sending it twice yields 409, never a
   * double write, so it may be retried after a transport error. */
  bool idem = json_get_str(obj, "metadata.resourceVersion") != NULL;
  if(!rc)
    rc = send_json(k, KV_UPDATE, "PUT", &p, "application/json", body, idem, out, st);
  strbuf_release(&p);
  cJSON_free(body);
  return rc;
}

gw_rc kube_patch(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                 const char *name, enum kube_patch_type type, const char *patch,
                 const char *subresource, cJSON **out, struct kube_status *st)
{
  if(out)
    *out = NULL;
  if(!name || !*name || !patch)
    return bad_arg(st, "patch: no name or no patch");
  static const char *const ctypes[] = { "application/merge-patch+json",
                                        "application/json-patch+json",
                                        "application/strategic-merge-patch+json" };
  if((unsigned)type > KUBE_PATCH_STRATEGIC)
    return bad_arg(st, "patch: unknown patch type");
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, r, pick_ns(k, r, ns, NULL), name, subresource);
  /* A merge patch sets values: applying it twice gives the same object. A JSON patch may
   * add to arrays, so it is not sent twice. */
  if(!rc)
    rc = send_json(k, KV_PATCH, "PATCH", &p, ctypes[type], patch, type != KUBE_PATCH_JSON, out,
                   st);
  strbuf_release(&p);
  return rc;
}

static const char *propagation_name(enum kube_propagation p)
{
  switch(p) {
  case KUBE_PROPAGATE_BACKGROUND: return "Background";
  case KUBE_PROPAGATE_FOREGROUND: return "Foreground";
  case KUBE_PROPAGATE_ORPHAN: return "Orphan";
  default: return NULL;
  }
}

static gw_rc delete_body(const struct kube_delete_opts *o, char **out)
{
  *out = NULL;
  cJSON *b = cJSON_CreateObject();
  if(!b)
    return GW_ENOMEM;
  cJSON_AddStringToObject(b, "kind", "DeleteOptions");
  cJSON_AddStringToObject(b, "apiVersion", "v1");
  const char *prop = propagation_name(o->propagation);
  if(prop)
    cJSON_AddStringToObject(b, "propagationPolicy", prop);
  if(o->grace_period_s >= 0)
    cJSON_AddNumberToObject(b, "gracePeriodSeconds", (double)o->grace_period_s);
  if(o->precondition_uid || o->precondition_rv) {
    cJSON *pre = cJSON_AddObjectToObject(b, "preconditions");
    if(pre && o->precondition_uid)
      cJSON_AddStringToObject(pre, "uid", o->precondition_uid);
    if(pre && o->precondition_rv)
      cJSON_AddStringToObject(pre, "resourceVersion", o->precondition_rv);
  }
  if(o->dry_run) {
    cJSON *dr = cJSON_AddArrayToObject(b, "dryRun");
    if(dr)
      cJSON_AddItemToArray(dr, cJSON_CreateString("All"));
  }
  *out = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  return *out ? GW_OK : GW_ENOMEM;
}

gw_rc kube_delete(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const char *name, const struct kube_delete_opts *o, cJSON **out,
                  struct kube_status *st)
{
  if(out)
    *out = NULL;
  if(!name || !*name)
    return bad_arg(st, "delete: no name");
  static const struct kube_delete_opts dflt = { .grace_period_s = -1 };
  char *body = NULL;
  gw_rc rc = delete_body(o ? o : &dflt, &body);
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  if(!rc)
    rc = kube_path(&p, r, pick_ns(k, r, ns, NULL), name, NULL);
  /* A delete sent twice answers 404 the second time: not retried after a transport error. */
  if(!rc)
    rc = send_json(k, KV_DELETE, "DELETE", &p, "application/json", body, false, out, st);
  strbuf_release(&p);
  cJSON_free(body);
  return rc;
}

gw_rc kube_pod_log(struct kube_client *k, const char *ns, const char *pod, const char *container,
                   long tail_lines, char **out, size_t *len, struct kube_status *st)
{
  *out = NULL;
  if(len)
    *len = 0;
  if(!pod || !*pod)
    return bad_arg(st, "log: no pod name");
  struct strbuf p;
  strbuf_init(&p, PATH_MAX_LEN);
  gw_rc rc = kube_path(&p, &KUBE_PODS, pick_ns(k, &KUBE_PODS, ns, NULL), pod, "log");
  char tl[32];
  snprintf(tl, sizeof(tl), "%ld", tail_lines);
  if(!rc && container && *container)
    rc = kube_query(&p, "container", container);
  if(!rc && tail_lines > 0)
    rc = kube_query(&p, "tailLines", tl);
  if(!rc && p.err)
    rc = bad_arg(st, "request path too long");
  if(!rc) {
    struct kube_req rq = { .verb = KV_GET, .method = "GET", .path = strbuf_str(&p),
                           .accept = "*/*", .raw = true, .idempotent = true };
    rc = kube_call(k, &rq, NULL, out, len, st);
  }
  strbuf_release(&p);
  return rc;
}

static enum kube_verb verb_of(const char *method)
{
  if(!strcmp(method, "POST"))
    return KV_CREATE;
  if(!strcmp(method, "PUT"))
    return KV_UPDATE;
  if(!strcmp(method, "PATCH"))
    return KV_PATCH;
  if(!strcmp(method, "DELETE"))
    return KV_DELETE;
  return KV_GET;
}

gw_rc kube_request(struct kube_client *k, const char *method, const char *path,
                   const char *content_type, const char *body, cJSON **out,
                   struct kube_status *st)
{
  if(out)
    *out = NULL;
  if(!method || !path || path[0] != '/')
    return bad_arg(st, "request: the path must be absolute");
  struct kube_req rq = { .verb = verb_of(method), .method = method, .path = path,
                         .content_type = body ? (content_type ? content_type
                                                              : "application/json")
                                              : NULL,
                         .body = body, .body_len = body ? strlen(body) : 0,
                         .idempotent = !strcmp(method, "GET") || !strcmp(method, "HEAD") };
  return kube_call(k, &rq, out, NULL, NULL, st);
}
