/*
 * conversion.c: CRD version conversion as apiextensions-apiserver's webhook converter does it.
 *
 * Strategy None rewrites apiVersion. Strategy Webhook sends the objects that are not already in
 * the desired version in one apiextensions.k8s.io/v1 ConversionReview {uid, desiredAPIVersion,
 * objects} to spec.conversion.webhook.clientConfig (`?timeout=30s`, kube's fixed budget), then
 * checks the answer as kube does: apiVersion/kind of the review, a response, the uid echoed,
 * result.status Success, as many objects as sent, each in the desired group/version with the
 * same kind, name, namespace and uid. Metadata other than labels and annotations is restored
 * from the original (kube does not refuse such changes, it undoes them); labels and
 * annotations are taken from the webhook and must be string maps.
 *
 * A failure is kube's plain error turned into a Status: code 500 with no reason (kubectl prints
 * "Error from server: conversion webhook for pgcopydb.io/v1alpha1, Kind=Migration failed: ...").
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"

#define CONVERSION_TIMEOUT_MS 30000

static cJSON *failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *failf(const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cJSON *st = ls_status(500, "", NULL, "%s", msg);
  cJSON_DeleteItemFromObjectCaseSensitive(st, "reason"); /* kube's StatusReasonUnknown */
  return st;
}

/* "group/version, Kind=kind" (schema.GroupVersionKind's String) of an object. */
static void gvk_of(const cJSON *o, char *out, size_t n)
{
  const char *av = json_get_str(o, "apiVersion"), *kind = json_get_str(o, "kind");
  snprintf(out, n, "%s, Kind=%s", av ? av : "", kind ? kind : "");
}

/* Moves src's members into dst (emptied first); frees src. */
static void replace_contents(cJSON *dst, cJSON *src)
{
  while(dst->child)
    cJSON_Delete(cJSON_DetachItemViaPointer(dst, dst->child));
  while(src->child) {
    cJSON *m = cJSON_DetachItemViaPointer(src, src->child);
    cJSON_AddItemToObject(dst, m->string, m);
  }
  cJSON_Delete(src);
}

static const char *meta_str(const cJSON *o, const char *k)
{
  const char *s = json_get_str(json_get(o, "metadata"), k);
  return s ? s : "";
}

/* validateConvertedObject: NULL, or why in buf. */
static const char *same_identity(const cJSON *in, const cJSON *out, char *buf, size_t n)
{
  static const char *const key[] = { "name", "namespace", "uid" };
  static const char *const label[] = { "name", "namespace", "UID" };
  for(size_t i = 0; i < 3; i++)
    if(strcmp(meta_str(in, key[i]), meta_str(out, key[i]))) {
      snprintf(buf, n, "must have the same %s: %s != %s", label[i], meta_str(in, key[i]), meta_str(out, key[i]));
      return buf;
    }
  return NULL;
}

/* restoreObjectMeta's check of the webhook's labels or annotations: NULL, or why in buf. */
static const char *string_map(const cJSON *m, const char *field, char *buf, size_t n)
{
  if(!cJSON_IsObject(m)) {
    snprintf(buf, n, "invalid metadata.%s of type %s in converted object", field, json_type_name(m));
    return buf;
  }
  const cJSON *k;
  cJSON_ArrayForEach(k, m)
    if(!cJSON_IsString(k)) {
      snprintf(buf, n, "metadata.%s[%s] must be a string, but is %s in converted object", field, k->string,
               json_type_name(k));
      return buf;
    }
  return NULL;
}

/* restoreObjectMeta: out's metadata becomes in's, with out's labels and annotations. */
static const char *restore_meta(const cJSON *in, cJSON *out, char *buf, size_t n)
{
  cJSON *resp = cJSON_DetachItemFromObjectCaseSensitive(out, "metadata");
  const char *bad = NULL;
  if(!resp)
    bad = "missing metadata in converted object";
  else if(!cJSON_IsObject(resp)) {
    snprintf(buf, n, "invalid metadata of type %s in converted object", json_type_name(resp));
    bad = buf;
  }
  const cJSON *orig = json_get(in, "metadata");
  cJSON *meta = cJSON_IsObject(orig) ? cJSON_Duplicate(orig, true) : cJSON_CreateObject();
  static const char *const fields[] = { "labels", "annotations" };
  for(size_t f = 0; f < 2 && !bad; f++) {
    cJSON *rf = cJSON_DetachItemFromObjectCaseSensitive(resp, fields[f]);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, fields[f]);
    if(rf && !cJSON_IsNull(rf) && !(bad = string_map(rf, fields[f], buf, n))) {
      cJSON_AddItemToObject(meta, fields[f], rf);
      rf = NULL;
    }
    cJSON_Delete(rf);
  }
  cJSON_Delete(resp);
  cJSON_AddItemToObject(out, "metadata", meta);
  return bad;
}

/* Sends the review; returns a Status, or NULL with *resp the parsed answer. */
static cJSON *post_review(const struct crd_entry *e, cJSON *const *objs, const size_t *idx, size_t nconv,
                          const char *desired, const char *uid, const char *gvk, cJSON **resp)
{
  cJSON *review = cJSON_CreateObject();
  cJSON_AddStringToObject(review, "kind", "ConversionReview");
  cJSON_AddStringToObject(review, "apiVersion", "apiextensions.k8s.io/v1");
  cJSON *rq = cJSON_AddObjectToObject(review, "request");
  cJSON_AddStringToObject(rq, "uid", uid);
  cJSON_AddStringToObject(rq, "desiredAPIVersion", desired);
  cJSON *arr = cJSON_AddArrayToObject(rq, "objects");
  for(size_t i = 0; i < nconv; i++)
    cJSON_AddItemToArray(arr, cJSON_Duplicate(objs[idx[i]], true));
  char *body = cJSON_PrintUnformatted(review);
  cJSON_Delete(review);
  char err[1024];
  struct whc_target t;
  struct whc_reply r = { 0 };
  cJSON *st = NULL;
  *resp = NULL;
  if(whc_target_init(&t, e->conversion_client, err, sizeof(err))) {
    cJSON_free(body);
    return failf("conversion webhook for %s failed: %s", gvk, err);
  }
  if(whc_post(&t, "?timeout=30s", body ? body : "{}", CONVERSION_TIMEOUT_MS, &r, err, sizeof(err)))
    st = failf("conversion webhook for %.400s failed: Post \"%.500s?timeout=30s\": %.1000s", gvk, t.url, err);
  else if(r.status < 200 || r.status > 299) {
    whc_status_error(&r, err, sizeof(err));
    st = failf("conversion webhook for %s failed: %s", gvk, err);
  } else if(json_parse_strict(r.body, r.len, resp, err, sizeof(err)))
    st = failf("conversion webhook for %s failed: couldn't get version/kind; json parse error: %s", gvk, err);
  cJSON_free(body);
  whc_reply_release(&r);
  whc_target_release(&t);
  return st;
}

/* getConvertedObjectsFromResponse: NULL, or why in buf. */
static const char *check_review(const cJSON *resp, const char *uid, char *buf, size_t n)
{
  const char *av = json_get_str(resp, "apiVersion"), *kind = json_get_str(resp, "kind");
  const cJSON *out = json_get(resp, "response");
  const char *ruid = json_get_str(out, "uid"), *status = json_get_str(out, "result.status");
  if(!av || !kind || strcmp(av, "apiextensions.k8s.io/v1") || strcmp(kind, "ConversionReview"))
    snprintf(buf, n, "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got %s, Kind=%s",
             av ? av : "", kind ? kind : "");
  else if(!cJSON_IsObject(out))
    snprintf(buf, n, "no response provided");
  else if(!ruid || strcmp(ruid, uid))
    snprintf(buf, n, "expected response.uid=\"%s\", got \"%s\"", uid, ruid ? ruid : "");
  else if(!status || strcmp(status, "Success")) {
    const char *m = json_get_str(out, "result.message");
    if(m && *m)
      snprintf(buf, n, "%s", m);
    else
      snprintf(buf, n, "result status is not Success (\"%s\")", status ? status : "");
  } else
    return NULL;
  return buf;
}

/* One converted object checked against its original; a Status or NULL. */
static cJSON *check_converted(const cJSON *o, cJSON *c, size_t n, size_t i, const char *desired, const char *gvk)
{
  char where[64], buf[1024];
  if(n == 1)
    snprintf(where, sizeof(where), "invalid object");
  else /* kube counts from 1 here */
    snprintf(where, sizeof(where), "invalid converted object at index %zu", i + 1);
  const char *cav = json_get_str(c, "apiVersion"), *ck = json_get_str(c, "kind"), *ok = json_get_str(o, "kind"), *why;
  if(!cJSON_IsObject(c))
    return failf("conversion webhook for %s returned %s: Object 'Kind' is missing in 'null'", gvk, where);
  if(!cav || strcmp(cav, desired))
    return failf("conversion webhook for %s returned %s: invalid groupVersion (expected %s, received %s)", gvk, where,
                 desired, cav ? cav : "");
  if(!ck || !ok || strcmp(ck, ok))
    return failf("conversion webhook for %s returned %s: invalid kind (expected %s, received %s)", gvk, where,
                 ok ? ok : "", ck ? ck : "");
  if((why = same_identity(o, c, buf, sizeof(buf))))
    return failf("conversion webhook for %s returned %s: %s", gvk, where, why);
  if((why = restore_meta(o, c, buf, sizeof(buf))))
    return failf("conversion webhook for %s returned invalid metadata%s: %s", gvk, n == 1 ? "" : " in object at index",
                 why);
  return NULL;
}

static cJSON *call_webhook(const struct crd_entry *e, cJSON *const *objs, size_t n, const size_t *idx,
                           size_t nconv, const char *desired, const char *gvk)
{
  char uid[37], buf[1024];
  whc_uuid(uid);
  cJSON *resp;
  cJSON *st = post_review(e, objs, idx, nconv, desired, uid, gvk, &resp);
  const char *why = st ? NULL : check_review(resp, uid, buf, sizeof(buf));
  const cJSON *conv = json_get(resp, "response.convertedObjects");
  if(why)
    st = failf("conversion webhook for %s failed: %s", gvk, why);
  else if(!st && (size_t)cJSON_GetArraySize(conv) != nconv)
    st = failf("conversion webhook for %s returned %d objects, expected %zu", gvk, cJSON_GetArraySize(conv), nconv);
  /* every object is checked before any changes: all or nothing */
  cJSON **done = st ? NULL : calloc(nconv ? nconv : 1, sizeof(*done));
  if(!st && !done)
    st = failf("conversion webhook for %s failed: out of memory", gvk);
  for(size_t i = 0; !st && i < nconv; i++) {
    done[i] = cJSON_Duplicate(cJSON_GetArrayItem(conv, (int)i), true);
    st = check_converted(objs[idx[i]], done[i], n, i, desired, gvk);
  }
  for(size_t i = 0; done && i < nconv; i++) {
    if(!st)
      replace_contents(objs[idx[i]], done[i]);
    else
      cJSON_Delete(done[i]);
  }
  free(done);
  cJSON_Delete(resp);
  return st;
}

cJSON *crd_convert(const char *group, const char *plural, cJSON *const *objs, size_t n, const char *version)
{
  const struct crd_entry *e = crd_lookup(group, plural);
  if(!e)
    return ls_status(404, "NotFound", NULL, "the server could not find the requested resource (%s.%s)", plural, group);
  char desired[300];
  snprintf(desired, sizeof(desired), "%s/%s", group, version);
  size_t *idx = n ? calloc(n, sizeof(*idx)) : NULL;
  size_t nconv = 0;
  for(size_t i = 0; i < n; i++) {
    const char *av = json_get_str(objs[i], "apiVersion");
    if(!av || strcmp(av, desired))
      idx[nconv++] = i;
  }
  cJSON *st = NULL;
  if(nconv && !e->conversion_webhook) {
    for(size_t i = 0; i < nconv; i++) {
      cJSON *o = objs[idx[i]];
      if(cJSON_GetObjectItemCaseSensitive(o, "apiVersion"))
        cJSON_ReplaceItemInObjectCaseSensitive(o, "apiVersion", cJSON_CreateString(desired));
      else
        cJSON_AddStringToObject(o, "apiVersion", desired);
    }
  } else if(nconv) {
    char gvk[400];
    gvk_of(objs[idx[0]], gvk, sizeof(gvk));
    st = call_webhook(e, objs, n, idx, nconv, desired, gvk);
  }
  free(idx);
  return st;
}
