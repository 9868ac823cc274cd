#include "review.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "arena.h"
#include "json.h"
#include "log.h"
#include "policystore.h"
#include "response.h"
#include "runnerpod.h"
#include "strbuf.h"

#define ARENA_LIMIT (64u << 20)
/* the largest answer printed (a ConversionReview of many objects stays far below) */
#define REPLY_MAX (64u << 20)

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints v into a malloc'd HTTP body (the server frees it with free()). */
/* hint: about how long the answer will be (a conversion answers about the request's size) */
static void reply_json(struct http_response *resp, const cJSON *v, size_t hint)
{
  /* printed once into the buffer that becomes the body */
  struct strbuf sb;
  strbuf_init(&sb, REPLY_MAX);
  if((hint && strbuf_reserve(&sb, hint < REPLY_MAX ? hint : REPLY_MAX)) ||
     json_print_sb(&sb, v)) {
    strbuf_release(&sb);
    http_status_response(resp, 500, "InternalError", "out of memory building the response");
    return;
  }
  size_t n;
  resp->body = strbuf_take(&sb, &n);
  if(!resp->body) {
    http_status_response(resp, 500, "InternalError", "out of memory building the response");
    return;
  }
  resp->len = n;
  resp->status = 200;
  resp->content_type = "application/json";
}

static void bad_request(struct http_response *resp, const char *msg)
{
  metrics_http_refusal(400);
  http_status_response(resp, 400, "BadRequest", msg);
}

static enum api_op parse_op(const char *s, bool *ok)
{
  *ok = true;
  if(!strcmp(s, "CREATE"))
    return API_CREATE;
  if(!strcmp(s, "UPDATE"))
    return API_UPDATE;
  if(!strcmp(s, "DELETE"))
    return API_DELETE;
  if(!strcmp(s, "CONNECT"))
    return API_CONNECT;
  *ok = false;
  return API_CONNECT;
}

/* Checks the envelope; returns the review's top object or NULL with resp filled. */
static cJSON *decode(const struct http_request *req, const char *want_kind, const char *want_av,
                     const struct json_raw *raw, struct http_response *resp)
{
  cJSON *doc;
  char err[160];
  if(json_parse_strict_raw(req->body, req->len, raw, &doc, err, sizeof(err))) {
    bad_request(resp, err);
    return NULL;
  }
  const char *av = json_get_str(doc, "apiVersion"), *kind = json_get_str(doc, "kind");
  if(!cJSON_IsObject(doc) || !av || !kind || strcmp(kind, want_kind) || strcmp(av, want_av)) {
    char msg[256];
    snprintf(msg, sizeof(msg), "expected a %s %s, got %.60s %.60s%s", want_av, want_kind,
             av ? av : "(no apiVersion)", kind ? kind : "(no kind)",
             av && !strcmp(want_kind, "AdmissionReview") && !strcmp(av, "admission.k8s.io/v1beta1")
               ? ": set admissionReviewVersions: [v1] in the webhook configuration"
               : "");
    bad_request(resp, msg);
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

/* The user of a review: every group is kept (an approver-group check may depend on the last
 * one), pointing into the review. GW_ENOMEM when the group list cannot be held. */
static gw_rc decode_user(const cJSON *ui, struct api_user *u, const char ***groups)
{
  memset(u, 0, sizeof(*u));
  *groups = NULL;
  u->username = json_get_str(ui, "username");
  if(!u->username)
    u->username = "";
  u->uid = json_get_str(ui, "uid");
  u->extra = json_get(ui, "extra");
  const cJSON *list = json_get(ui, "groups"), *g;
  int n = cJSON_GetArraySize(list);
  if(n <= 0)
    return GW_OK;
  *groups = malloc((size_t)n * sizeof(**groups));
  if(!*groups)
    return GW_ENOMEM;
  cJSON_ArrayForEach(g, list)
  {
    if(cJSON_IsString(g))
      (*groups)[u->ngroups++] = g->valuestring;
  }
  u->groups = *groups;
  return GW_OK;
}

static enum wh_verdict admit(enum wh_endpoint ep, const cJSON *rq, const struct adm_subject *subj,
                             enum api_op op, cJSON **out)
{
  const struct api_kind *k = api_find_kind(subj->group, subj->kind);
  const char *sub = json_get_str(rq, "subResource");
  bool is_pod = !*subj->group && !strcmp(subj->kind, "Pod");
  if((sub && *sub) || (!k && !is_pod) || (is_pod && ep != EP_VALIDATE)) {
    *out = response_allowed(subj, NULL, NULL);
    return V_IGNORED;
  }
  const cJSON *obj = json_get(rq, "object");
  if(cJSON_IsNull(obj))
    obj = NULL;
  if(is_pod) {
    struct ferrs e;
    ferrs_init(&e);
    if(op == API_CREATE && obj)
      runnerpod_check(obj, &e);
    enum wh_verdict v = e.n ? V_DENIED : V_ALLOWED;
    *out = e.n ? response_denied(subj, &e, NULL) : response_allowed(subj, NULL, NULL);
    ferrs_release(&e);
    return v;
  }
  struct policy_ref pol = policy_store_acquire();
  if(!pol.policy) {
    *out = response_error(subj, 503, "ServiceUnavailable",
                          "the godwit admission policy is not loaded yet; retry shortly");
    return V_ERROR;
  }
  struct api_user user;
  const char **groups;
  if(decode_user(json_get(rq, "userInfo"), &user, &groups)) {
    *out = response_error(subj, 500, "InternalError", gw_strerror(GW_ENOMEM));
    policy_store_release(pol);
    return V_ERROR;
  }
  const cJSON *old = json_get(rq, "oldObject");
  struct api_request ar = {
    .kind = k,
    .obj = obj,
    .old = cJSON_IsNull(old) ? NULL : old,
    .op = op,
    .user = &user,
    .policy = pol.policy,
    .dry_run = json_get_bool(rq, "dryRun", false),
    .request_version = json_get_str(rq, "requestKind.version"),
    .in_arena = true,
  };
  struct api_result res;
  api_result_init(&res);
  gw_rc rc = ep == EP_MUTATE ? api_mutate(&ar, &res) : api_validate(&ar, &res);
  enum wh_verdict v;
  if(rc) {
    *out = response_error(subj, 500, "InternalError", gw_strerror(rc));
    v = V_ERROR;
  } else if(res.errs.n) {
    *out = response_denied(subj, &res.errs, &res.warns);
    v = V_DENIED;
  } else {
    *out = response_allowed(subj, res.patch, &res.warns);
    v = res.patch ? V_PATCHED : V_ALLOWED;
  }
  api_result_release(&res);
  policy_store_release(pol);
  free(groups);
  return v;
}

static const char *object_name(const cJSON *rq)
{
  const char *n = json_get_str(rq, "name");
  if(n && *n)
    return n;
  n = json_get_str(rq, "object.metadata.name");
  if(n && *n)
    return n;
  n = json_get_str(rq, "object.metadata.generateName");
  return n ? n : "";
}

/*
 * An AdmissionReview's object and oldObject carry metadata.managedFields (values at depth 5):
 * often a fifth to a half of the review, read by no rule, default or conversion. It is checked
 * but kept as text (json.h): a copy of the object copies one string, the patch diff compares
 * two, and nothing is built for it.
 */
static const char *const review_raw_names[] = { "managedFields", NULL };
static const struct json_raw review_raw = { 5, review_raw_names };

static void admission(enum wh_endpoint ep, const struct http_request *req,
                      struct http_response *resp, double t0)
{
  cJSON *doc = decode(req, "AdmissionReview", "admission.k8s.io/v1", &review_raw, resp);
  if(!doc)
    return;
  const cJSON *rq = json_get(doc, "request");
  const char *uid = json_get_str(rq, "uid");
  const char *opname = json_get_str(rq, "operation");
  const char *group = json_get_str(rq, "kind.group"), *kind = json_get_str(rq, "kind.kind");
  bool op_ok = false;
  enum api_op op = opname ? parse_op(opname, &op_ok) : API_CONNECT;
  const char *problem = !cJSON_IsObject(rq)       ? "the AdmissionReview has no request"
                        : !uid || !*uid           ? "request.uid is missing"
                        : !op_ok                  ? "request.operation must be CREATE, UPDATE, DELETE or CONNECT"
                        : !group || !kind         ? "request.kind must have group and kind"
                        : NULL;
  if(problem) {
    bad_request(resp, problem);
    cJSON_Delete(doc);
    return;
  }
  struct adm_subject subj = { uid, group, kind, object_name(rq) };
  cJSON *out = NULL;
  enum wh_verdict v = admit(ep, rq, &subj, op, &out);
  reply_json(resp, out, 0);
  double dt = now_s() - t0;
  metrics_request(ep, kind, opname, v, dt);
  if(log_enabled(LOG_DEBUG)) {
    static const char *const vn[] = { "allowed", "patched", "denied", "ignored", "error" };
    char ms[32];
    snprintf(ms, sizeof(ms), "%.3f", dt * 1000);
    log_kv(LOG_DEBUG, "admission", "endpoint", ep == EP_MUTATE ? "mutate" : "validate", "uid",
           uid, "kind", kind, "operation", opname, "namespace", json_get_str(rq, "namespace"),
           "name", subj.name, "user", json_get_str(rq, "userInfo.username"), "verdict", vn[v],
           "ms", ms, LOG_END);
  }
  /* the arena releases doc and out in one call: walking them to free nothing cost a sixth of
   * a review */
}

void review_admission(enum wh_endpoint ep, const struct http_request *req,
                      struct http_response *resp)
{
  double t0 = now_s();
  struct arena a;
  arena_init(&a, 32768, ARENA_LIMIT);
  struct arena *prev = arena_activate(&a);
  admission(ep, req, resp, t0);
  arena_activate(prev);
  arena_release(&a);
}

/* "<kind> <namespace>/<name>" of an object, for a message (formatted only when one is sent). */
static const char *who(const cJSON *obj, char *buf, size_t n)
{
  const char *kind = json_get_str(obj, "kind"), *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  snprintf(buf, n, "%s %s%s%s", kind ? kind : "object", ns ? ns : "", ns ? "/" : "",
           name ? name : "(unnamed)");
  return buf;
}

/* Converts one object; on failure fills err naming the object. */
static gw_rc convert_one(cJSON *obj, const char *desired, char *err, size_t errlen)
{
  const char *av = json_get_str(obj, "apiVersion"), *kind = json_get_str(obj, "kind");
  char w[200];
  if(!av || !kind) {
    snprintf(err, errlen, "%s: apiVersion and kind are required", who(obj, w, sizeof(w)));
    return GW_EINVAL;
  }
  const char *slash = strchr(av, '/');
  char group[128];
  size_t gl = slash ? (size_t)(slash - av) : 0;
  if(gl >= sizeof(group))
    gl = sizeof(group) - 1;
  memcpy(group, av, gl);
  group[gl] = '\0';
  const struct api_kind *k = api_find_kind(group, kind);
  if(!k) {
    snprintf(err, errlen, "%s: %s %s is not a kind this webhook converts",
             who(obj, w, sizeof(w)), av, kind);
    return GW_EUNSUPPORTED;
  }
  char why[256];
  gw_rc rc = api_convert(k, obj, desired, why, sizeof(why));
  if(rc)
    snprintf(err, errlen, "%s: %s", who(obj, w, sizeof(w)), why);
  return rc;
}

/*
 * A ConversionReview's objects are answered mostly as they came: a conversion moves fields of
 * spec (and of status only towards an older version), and reads metadata only for the fields
 * annotation. Their metadata and status (members of request.objects[i], values at depth 5) are
 * checked but kept as text, parsed only when the conversion reaches into them (json.h), and
 * otherwise copied back byte for byte: a 100-object review builds and prints a third of the
 * nodes it would.
 */
static const char *const objects_raw_names[] = { "metadata", "status", NULL };
static const struct json_raw objects_raw = { 5, objects_raw_names };

static void conversion(const struct http_request *req, struct http_response *resp, double t0)
{
  cJSON *doc = decode(req, "ConversionReview", "apiextensions.k8s.io/v1", &objects_raw, resp);
  if(!doc)
    return;
  cJSON *rq = json_get_mut(doc, "request");
  const char *uid = json_get_str(rq, "uid");
  const char *desired = json_get_str(rq, "desiredAPIVersion");
  cJSON *objects = json_get_mut(rq, "objects");
  const char *problem = !cJSON_IsObject(rq)        ? "the ConversionReview has no request"
                        : !uid || !*uid            ? "request.uid is missing"
                        : !desired || !*desired    ? "request.desiredAPIVersion is missing"
                        : !cJSON_IsArray(objects)  ? "request.objects must be a list"
                        : NULL;
  if(problem) {
    bad_request(resp, problem);
    cJSON_Delete(doc);
    return;
  }
  char err[512] = "";
  gw_rc rc = GW_OK;
  const char *kind = NULL;
  cJSON *o;
  cJSON_ArrayForEach(o, objects)
  {
    if(!kind)
      kind = json_get_str(o, "kind");
    if(!cJSON_IsObject(o)) {
      snprintf(err, sizeof(err), "request.objects: every item must be an object");
      rc = GW_EINVAL;
    } else
      rc = convert_one(o, desired, err, sizeof(err));
    if(rc)
      break;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "apiVersion", "apiextensions.k8s.io/v1");
  cJSON_AddStringToObject(out, "kind", "ConversionReview");
  cJSON *r = cJSON_AddObjectToObject(out, "response");
  cJSON_AddStringToObject(r, "uid", uid);
  cJSON *result = cJSON_AddObjectToObject(r, "result");
  if(rc) {
    cJSON_AddStringToObject(result, "status", "Failure");
    cJSON_AddStringToObject(result, "message", err);
    cJSON_AddItemToObject(r, "convertedObjects", cJSON_CreateArray());
  } else {
    cJSON_AddStringToObject(result, "status", "Success");
    cJSON_AddItemToObject(r, "convertedObjects", cJSON_DetachItemViaPointer(rq, objects));
  }
  reply_json(resp, out, req->len + 256);
  metrics_request(EP_CONVERT, kind, "CONVERT", rc ? V_DENIED : V_ALLOWED, now_s() - t0);
  if(rc)
    log_kv(LOG_INFO, "conversion refused", "uid", uid, "reason", err, LOG_END);
  /* doc and out are left to the arena (see admission) */
}

void review_conversion(const struct http_request *req, struct http_response *resp)
{
  double t0 = now_s();
  struct arena a;
  arena_init(&a, 65536, ARENA_LIMIT);
  struct arena *prev = arena_activate(&a);
  conversion(req, resp, t0);
  arena_activate(prev);
  arena_release(&a);
}

void review_tune_malloc(void)
{
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  /* every connection has a thread (server.c): without a cap glibc gives up to 8 per core their
   * own heap, each keeping its free memory */
  mallopt(M_ARENA_MAX, 2);
}
