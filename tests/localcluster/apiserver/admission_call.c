/*
 * admission_call.c: one admission webhook call, as kube-apiserver's dispatchers make it.
 *
 * The request is an admission.k8s.io/v1 AdmissionReview built like CreateV1AdmissionReview:
 * a fresh uid per call, kind/resource/subResource in the version the webhook is called with,
 * requestKind/requestResource/requestSubResource as the client asked, name and namespace
 * (omitted when empty), operation, userInfo {username, uid, groups, extra} (empty members
 * omitted), object and oldObject (null where there is none), dryRun, and options
 * ({kind: CreateOptions|UpdateOptions|DeleteOptions, apiVersion: meta.k8s.io/v1, ...}). It is
 * POSTed with ?timeout=<timeoutSeconds>s and that budget.
 *
 * The answer is checked like VerifyAdmissionResponse (a response, the uid echoed, the
 * admission.k8s.io/v1 AdmissionReview kind, patch and patchType together and only from mutating
 * webhooks); warnings are kept; a denial becomes ToStatusErr's Status (code below 400 raised to
 * 400, message `admission webhook "<name>" denied the request: <message>`, the webhook's reason
 * and details kept); a JSONPatch is applied to a copy of the object.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_int.h"
#include "json.h"
#include "jsonpatch.h"

cJSON *adm_internal_error(const char *msg)
{
  cJSON *d = cJSON_CreateObject();
  cJSON *causes = cJSON_AddArrayToObject(d, "causes");
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "message", msg);
  cJSON_AddItemToArray(causes, c);
  return ls_status(500, "InternalError", d, "Internal error occurred: %s", msg);
}

static cJSON *gvk(const char *g, const char *v, const char *k, const char *kkey)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "group", g);
  cJSON_AddStringToObject(o, "version", v);
  cJSON_AddStringToObject(o, kkey, k);
  return o;
}

static cJSON *user_info(const struct ls_user *u)
{
  cJSON *o = cJSON_CreateObject();
  if(!u)
    return o;
  if(u->name && *u->name)
    cJSON_AddStringToObject(o, "username", u->name);
  if(u->uid && *u->uid)
    cJSON_AddStringToObject(o, "uid", u->uid);
  if(u->ngroups) {
    cJSON *g = cJSON_AddArrayToObject(o, "groups");
    for(size_t i = 0; i < u->ngroups; i++)
      cJSON_AddItemToArray(g, cJSON_CreateString(u->groups[i]));
  }
  if(cJSON_GetArraySize(u->extra) > 0)
    cJSON_AddItemToObject(o, "extra", cJSON_Duplicate(u->extra, true));
  return o;
}

static cJSON *options(const struct ls_adm_attrs *a)
{
  const char *kind = !strcmp(a->operation, "CREATE")   ? "CreateOptions"
                     : !strcmp(a->operation, "UPDATE") ? "UpdateOptions"
                     : !strcmp(a->operation, "DELETE") ? "DeleteOptions"
                                                       : NULL;
  if(!kind && !a->options)
    return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  const char *k = json_get_str(a->options, "kind"), *av = json_get_str(a->options, "apiVersion");
  cJSON_AddStringToObject(o, "kind", k ? k : kind);
  cJSON_AddStringToObject(o, "apiVersion", av ? av : "meta.k8s.io/v1");
  const cJSON *m;
  cJSON_ArrayForEach(m, a->options)
    if(strcmp(m->string, "kind") && strcmp(m->string, "apiVersion"))
      cJSON_AddItemToObject(o, m->string, cJSON_Duplicate(m, true));
  if(a->dry_run && !cJSON_GetObjectItemCaseSensitive(o, "dryRun")) {
    cJSON *d = cJSON_AddArrayToObject(o, "dryRun");
    cJSON_AddItemToArray(d, cJSON_CreateString("All"));
  }
  return o;
}

static char *review(const struct adm_invocation *inv, const struct ls_adm_attrs *a, const cJSON *obj,
                    const cJSON *old, const char *uid)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "kind", "AdmissionReview");
  cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
  cJSON *q = cJSON_AddObjectToObject(r, "request");
  const char *sub = a->subresource ? a->subresource : "";
  cJSON_AddStringToObject(q, "uid", uid);
  cJSON_AddItemToObject(q, "kind", gvk(inv->group, inv->version, inv->kind, "kind"));
  cJSON_AddItemToObject(q, "resource", gvk(inv->group, inv->version, inv->resource, "resource"));
  if(*sub)
    cJSON_AddStringToObject(q, "subResource", sub);
  cJSON_AddItemToObject(q, "requestKind", gvk(a->group, a->version, a->kind, "kind"));
  cJSON_AddItemToObject(q, "requestResource", gvk(a->group, a->version, a->resource, "resource"));
  if(*sub)
    cJSON_AddStringToObject(q, "requestSubResource", sub);
  if(a->name && *a->name)
    cJSON_AddStringToObject(q, "name", a->name);
  if(a->namespace && *a->namespace)
    cJSON_AddStringToObject(q, "namespace", a->namespace);
  cJSON_AddStringToObject(q, "operation", a->operation);
  cJSON_AddItemToObject(q, "userInfo", user_info(a->user));
  cJSON_AddItemToObject(q, "object", obj ? cJSON_Duplicate(obj, true) : cJSON_CreateNull());
  cJSON_AddItemToObject(q, "oldObject", old ? cJSON_Duplicate(old, true) : cJSON_CreateNull());
  cJSON_AddBoolToObject(q, "dryRun", a->dry_run);
  cJSON_AddItemToObject(q, "options", options(a));
  char *s = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  return s;
}

static void call_error(struct adm_result *res, const char *hook, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void call_error(struct adm_result *res, const char *hook, const char *fmt, ...)
{
  char why[1800];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  res->outcome = ADM_CALL_ERROR;
  snprintf(res->why, sizeof(res->why), "failed calling webhook \"%s\": %s", hook, why);
}

static void rejected(struct adm_result *res, cJSON *status)
{
  res->outcome = ADM_REJECTED;
  res->status = status;
}

/* webhookerrors.ToStatusErr */
static cJSON *denial(const char *hook, const cJSON *result)
{
  const cJSON *code = json_get(result, "code");
  const char *msg = json_get_str(result, "message"), *reason = json_get_str(result, "reason");
  int c = cJSON_IsNumber(code) && code->valueint >= 400 ? code->valueint : 400;
  char text[4096];
  if(msg && *msg)
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request: %s", hook, msg);
  else if(reason && *reason)
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request: %s", hook, reason);
  else
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request without explanation", hook);
  const cJSON *details = json_get(result, "details");
  cJSON *st = ls_status(c, reason ? reason : "", cJSON_IsObject(details) ? cJSON_Duplicate(details, true) : NULL, "%s", text);
  if(!reason || !*reason)
    cJSON_DeleteItemFromObjectCaseSensitive(st, "reason");
  const cJSON *meta = json_get(result, "metadata");
  if(cJSON_IsObject(meta))
    cJSON_ReplaceItemInObjectCaseSensitive(st, "metadata", cJSON_Duplicate(meta, true));
  return st;
}

static char *b64decode(const char *in, size_t *outlen, size_t *bad_at)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(in), o = 0;
  char *out = malloc(n / 4 * 3 + 4);
  unsigned acc = 0;
  int bits = 0;
  for(size_t i = 0; out && i < n; i++) {
    if(in[i] == '=')
      break;
    const char *p = strchr(tbl, in[i]);
    if(!p || !in[i]) {
      *bad_at = i;
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (unsigned)(p - tbl);
    bits += 6;
    if(bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  if(out) {
    out[o] = '\0';
    *outlen = o;
  }
  return out;
}

/* Applies the response's patch to a copy of obj; sets res. */
static void apply_patch(const char *hook, const cJSON *resp, const cJSON *obj, struct adm_result *res)
{
  const char *patch64 = json_get_str(resp, "patch"), *ptype = json_get_str(resp, "patchType");
  size_t len = 0, bad = 0;
  char *raw = b64decode(patch64, &len, &bad);
  char err[512], msg[700];
  if(!raw) {
    snprintf(err, sizeof(err), "illegal base64 data at input byte %zu", bad);
    call_error(res, hook, "failed to call webhook: %s", err);
    return;
  }
  if(!len) {
    free(raw);
    return;
  }
  cJSON *ops = NULL;
  if(json_parse_strict(raw, len, &ops, err, sizeof(err)) || !cJSON_IsArray(ops)) {
    snprintf(msg, sizeof(msg), "%s", ops ? "json: cannot unmarshal into Go value of type jsonpatch.Patch" : err);
    rejected(res, adm_internal_error(msg));
  } else if(cJSON_GetArraySize(ops) == 0) {
    /* nothing to apply */
  } else if(!obj) {
    snprintf(msg, sizeof(msg), "admission webhook \"%s\" attempted to modify the object, which is not supported for this operation", hook);
    rejected(res, adm_internal_error(msg));
  } else if(!ptype || strcmp(ptype, "JSONPatch")) {
    snprintf(msg, sizeof(msg), "unsupported patch type \"%s\"", ptype ? ptype : "");
    call_error(res, hook, "%s", msg);
  } else {
    cJSON *doc = cJSON_Duplicate(obj, true);
    if(jsonpatch_apply(&doc, ops, err, sizeof(err))) {
      rejected(res, adm_internal_error(err));
      cJSON_Delete(doc);
    } else if(json_equal(doc, obj))
      cJSON_Delete(doc);
    else
      res->patched = doc;
  }
  cJSON_Delete(ops);
  free(raw);
}

/* VerifyAdmissionResponse; NULL when the envelope is acceptable. */
static const char *verify(const cJSON *doc, const char *uid, bool mutating, char *buf, size_t n)
{
  const cJSON *resp = json_get(doc, "response");
  if(!cJSON_IsObject(resp))
    return "webhook response was absent";
  const char *ruid = json_get_str(resp, "uid");
  if(!ruid || strcmp(ruid, uid)) {
    snprintf(buf, n, "expected response.uid=\"%s\", got \"%s\"", uid, ruid ? ruid : "");
    return buf;
  }
  const char *av = json_get_str(doc, "apiVersion"), *kind = json_get_str(doc, "kind");
  if(!av || !kind || strcmp(av, "admission.k8s.io/v1") || strcmp(kind, "AdmissionReview")) {
    av = av ? av : "";
    snprintf(buf, n, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s%s, Kind=%s",
             strchr(av, '/') ? "" : "/", av, kind ? kind : "");
    return buf;
  }
  const cJSON *patch = json_get(resp, "patch"), *ptype = json_get(resp, "patchType");
  bool has_patch = cJSON_IsString(patch) && *patch->valuestring, has_type = ptype && !cJSON_IsNull(ptype);
  if(mutating) {
    if(has_patch && !has_type)
      return "webhook returned response.patch but not response.patchType";
    if(!has_patch && has_type)
      return "webhook returned response.patchType but not response.patch";
    if(has_type && (!cJSON_IsString(ptype) || !*ptype->valuestring)) {
      snprintf(buf, n, "webhook returned invalid response.patchType of \"%s\"", cJSON_GetStringValue(ptype) ? ptype->valuestring : "");
      return buf;
    }
  } else {
    if(has_patch)
      return "validating webhook may not return response.patch";
    if(has_type)
      return "validating webhook may not return response.patchType";
  }
  return NULL;
}

void adm_call(const struct adm_invocation *inv, const struct ls_adm_attrs *a, const cJSON *obj,
              const cJSON *old, struct adm_result *res)
{
  memset(res, 0, sizeof(*res));
  const struct adm_hook *h = inv->h;
  if(a->dry_run && !h->side_effects_set) {
    call_error(res, h->name, "%s", "Webhook SideEffects is nil");
    return;
  }
  if(a->dry_run && !h->side_effects_safe) {
    rejected(res, ls_status(400, "BadRequest", NULL, "admission webhook \"%s\" does not support dry run", h->name));
    return;
  }
  if(!h->review_v1) {
    call_error(res, h->name, "%s", "webhook does not accept v1 AdmissionReview");
    return;
  }
  char uid[37], err[1024], detail[1600];
  whc_uuid(uid);
  struct whc_target t;
  if(whc_target_init(&t, h->client, err, sizeof(err))) {
    call_error(res, h->name, "could not get REST client: %s", err);
    return;
  }
  char *body = review(inv, a, obj, old, uid);
  char query[32];
  snprintf(query, sizeof(query), "?timeout=%ds", h->timeout_s);
  struct whc_reply r;
  gw_rc rc = whc_post(&t, query, body ? body : "{}", (long)h->timeout_s * 1000, &r, err, sizeof(err));
  cJSON_free(body);
  cJSON *doc = NULL;
  if(rc) {
    snprintf(detail, sizeof(detail), "Post \"%.500s%s\": %.1000s", t.url, query, err);
    call_error(res, h->name, "failed to call webhook: %s", detail);
  } else if(r.status < 200 || r.status > 299) {
    whc_status_error(&r, err, sizeof(err));
    call_error(res, h->name, "failed to call webhook: %s", err);
  } else if(json_parse_strict(r.body, r.len, &doc, err, sizeof(err))) {
    snprintf(detail, sizeof(detail), "couldn't get version/kind; json parse error: %s", err);
    call_error(res, h->name, "failed to call webhook: %s", detail);
  }
  whc_reply_release(&r);
  whc_target_release(&t);
  if(res->outcome != ADM_OK) {
    cJSON_Delete(doc);
    return;
  }
  const char *why = verify(doc, uid, h->mutating, err, sizeof(err));
  if(why) {
    call_error(res, h->name, "received invalid webhook response: %s", why);
    cJSON_Delete(doc);
    return;
  }
  const cJSON *resp = json_get(doc, "response"), *w;
  cJSON_ArrayForEach(w, json_get(resp, "warnings"))
    if(cJSON_IsString(w) && res->nwarnings < sizeof(res->warnings) / sizeof(res->warnings[0]))
      res->warnings[res->nwarnings++] = strdup(w->valuestring);
  if(!json_get_bool(resp, "allowed", false))
    rejected(res, denial(h->name, json_get(resp, "status")));
  else if(h->mutating && json_get_str(resp, "patch"))
    apply_patch(h->name, resp, obj, res);
  cJSON_Delete(doc);
}

void adm_result_release(struct adm_result *res)
{
  cJSON_Delete(res->status);
  cJSON_Delete(res->patched);
  for(size_t i = 0; i < res->nwarnings; i++)
    free(res->warnings[i]);
  memset(res, 0, sizeof(*res));
}
