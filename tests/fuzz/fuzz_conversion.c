/*
 * libFuzzer target: a ConversionReview body through review_conversion(), as server.c hands it
 * over for POST /convert.
 *
 * Besides the sanitizers, it checks the conversion contract (DESIGN.md) on every body:
 *  - the answer is HTTP 200 (a ConversionReview) or 400 (a Status);
 *  - a 200 body is an apiextensions.k8s.io/v1 ConversionReview echoing request.uid, with
 *    result.status Success or Failure; a Failure converts nothing;
 *  - on Success: as many objects as were sent, in order, each in desiredAPIVersion, same kind,
 *    metadata untouched except annotations;
 *  - round trip (FUZZ_ROUNDTRIP=0 turns it off): for objects as they are stored (unknown fields
 *    pruned, defaults applied, spec and status valid against their version's schema, metadata
 *    with a name), converting to desiredAPIVersion and back gives them back unchanged.
 *    Inputs whose objects cannot be made such are skipped: only stored objects are converted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "json.h"
#include "review.h"

#include "fuzzutil.h"

static bool roundtrip;

static cJSON *convert(const char *body, size_t len, const cJSON *request, const char *what)
{
  struct http_request req = { "POST", "/convert", "application/json", body, len };
  struct http_response r = { 0 };
  review_conversion(&req, &r);
  fuzz_check_body(&r, what);
  cJSON *out = NULL;
  if(r.status == 200) {
    if(!request)
      fuzz_fail(what, "HTTP 200 for a body that is not JSON");
    out = fuzz_parse(r.body, r.len, what);
  } else if(r.status != 400)
    fuzz_fail(what, "HTTP status %d (only 200 and 400 are expected)", r.status);
  free(r.body);
  return out;
}

/* metadata without annotations; an object without metadata has an empty one (conversion may
 * add annotations to it) */
static cJSON *plain_metadata(const cJSON *o)
{
  const cJSON *m = json_get(o, "metadata");
  cJSON *c = m ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
  cJSON_DeleteItemFromObjectCaseSensitive(c, "annotations");
  return c;
}

static void check_success(const cJSON *request, const cJSON *out, const char *what)
{
  const cJSON *in = json_get(request, "request.objects");
  const cJSON *conv = json_get(out, "response.convertedObjects");
  const char *desired = json_get_str(request, "request.desiredAPIVersion");
  if(!cJSON_IsArray(conv) || cJSON_GetArraySize(conv) != cJSON_GetArraySize(in))
    fuzz_fail(what, "%d objects sent, %d converted", cJSON_GetArraySize(in),
              cJSON_GetArraySize(conv));
  const cJSON *a = in->child, *b = conv->child;
  for(int i = 0; a && b; a = a->next, b = b->next, i++) {
    const char *av = json_get_str(b, "apiVersion");
    if(!av || strcmp(av, desired))
      fuzz_fail(what, "object %d converted to \"%s\", not \"%s\"", i, av ? av : "(none)", desired);
    const char *k1 = json_get_str(a, "kind"), *k2 = json_get_str(b, "kind");
    if(!k1 || !k2 || strcmp(k1, k2))
      fuzz_fail(what, "object %d changed kind", i);
    cJSON *m1 = plain_metadata(a), *m2 = plain_metadata(b);
    if(!fuzz_same_text(m1, m2))
      fuzz_fail(what, "object %d: metadata other than annotations changed", i);
    cJSON_Delete(m1);
    cJSON_Delete(m2);
  }
}

/* What kube-apiserver would have stored: unknown fields pruned, defaults applied (the premise of
 * the unit tests' round-trip property, tests/unit/gen.h), and only if spec and status then pass
 * their version's schema. Returns false when o cannot be such an object. */
static bool as_stored(cJSON *o)
{
  const char *av = json_get_str(o, "apiVersion"), *kind = json_get_str(o, "kind");
  const cJSON *meta = json_get(o, "metadata");
  if(!cJSON_IsObject(o) || !av || !kind || !cJSON_IsObject(meta) ||
     !json_get_str(meta, "name") || fuzz_has_duplicate_keys(o))
    return false;
  const char *slash = strchr(av, '/');
  if(!slash || (size_t)(slash - av) >= 128)
    return false;
  char group[128];
  snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
  const struct api_kind *k = api_find_kind(group, kind);
  const struct api_version *v = k ? api_find_version(k, slash + 1) : NULL;
  if(!v)
    return false;
  for(cJSON *c = o->child, *next; c; c = next) {
    next = c->next;
    if(strcmp(c->string, "apiVersion") && strcmp(c->string, "kind") &&
       strcmp(c->string, "metadata") && strcmp(c->string, "spec") && strcmp(c->string, "status"))
      cJSON_Delete(cJSON_DetachItemViaPointer(o, c));
  }
  static const char *const parts[] = { "spec", "status" };
  for(int i = 0; i < 2; i++) {
    cJSON *part = json_get_mut(o, parts[i]);
    const struct sch_field *fields = i ? v->status : v->spec;
    if(!part)
      continue;
    if(!cJSON_IsObject(part) || !fields)
      return false;
    cJSON *pruned = cJSON_CreateObject();
    bool ok = sch_split_unknown(fields, part, pruned) && sch_default(fields, part);
    cJSON_Delete(pruned);
    struct ferrs e;
    ferrs_init(&e);
    sch_validate(fields, part, parts[i], &e, NULL);
    ok = ok && e.n == 0;
    ferrs_release(&e);
    if(!ok)
      return false;
  }
  return true;
}

/* Converts the stored form of the request's objects to desiredAPIVersion and back. */
static void check_roundtrip(const cJSON *request)
{
  const char *desired = json_get_str(request, "request.desiredAPIVersion");
  cJSON *there = cJSON_Duplicate(request, 1);
  cJSON *objs = json_get_mut(there, "request.objects");
  const char *from = json_get_str(objs ? objs->child : NULL, "apiVersion");
  if(!desired || !cJSON_IsArray(objs) || !from || !strcmp(from, desired)) {
    cJSON_Delete(there);
    return;
  }
  cJSON *o;
  cJSON_ArrayForEach(o, objs)
  {
    const char *av = json_get_str(o, "apiVersion");
    if(!av || strcmp(av, from) || !as_stored(o)) {
      cJSON_Delete(there);
      return;
    }
  }
  from = json_get_str(objs->child, "apiVersion");
  char *text = cJSON_PrintUnformatted(there);
  cJSON *out = convert(text, strlen(text), there, "convert stored objects");
  cJSON_free(text);
  const char *st = json_get_str(out, "response.result.status");
  if(!st || strcmp(st, "Success")) { /* refusing is allowed; only a success must be lossless */
    cJSON_Delete(out);
    cJSON_Delete(there);
    return;
  }
  check_success(there, out, "convert stored objects");
  cJSON *back = cJSON_Duplicate(there, 1);
  cJSON_ReplaceItemInObjectCaseSensitive(json_get_mut(back, "request"), "objects",
                                         cJSON_Duplicate(json_get(out, "response.convertedObjects"), 1));
  cJSON_ReplaceItemInObjectCaseSensitive(json_get_mut(back, "request"), "desiredAPIVersion",
                                         cJSON_CreateString(from));
  text = cJSON_PrintUnformatted(back);
  cJSON *again = convert(text, strlen(text), back, "convert back");
  st = json_get_str(again, "response.result.status");
  if(!st || strcmp(st, "Success"))
    fuzz_fail("convert back", "converting back to %s failed: %s", from,
              json_get_str(again, "response.result.message"));
  const cJSON *a = objs->child, *b = json_get(again, "response.convertedObjects")->child;
  for(int i = 0; a && b; a = a->next, b = b->next, i++)
    if(!json_equal(a, b)) {
      char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
      fuzz_fail("convert back", "object %d is not the same after %s -> %s -> %s:\n  sent %s\n  "
                "back %s", i, from, desired, from, x, y);
    }
  cJSON_Delete(again);
  cJSON_free(text);
  cJSON_Delete(back);
  cJSON_Delete(out);
  cJSON_Delete(there);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init();
  const char *r = getenv("FUZZ_ROUNDTRIP");
  roundtrip = !r || strcmp(r, "0");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *body = fuzz_body(data, size);
  cJSON *request = fuzz_try_parse(body, size);
  cJSON *out = convert(body, size, request, "convert");
  if(out) {
    const char *uid = json_get_str(request, "request.uid");
    const char *got = json_get_str(out, "response.uid");
    if(!uid || !got || strcmp(uid, got))
      fuzz_fail("convert", "response.uid does not echo request.uid");
    const char *st = json_get_str(out, "response.result.status");
    if(st && !strcmp(st, "Success")) {
      check_success(request, out, "convert");
    } else if(st && !strcmp(st, "Failure")) {
      if(cJSON_GetArraySize(json_get(out, "response.convertedObjects")) != 0)
        fuzz_fail("convert", "a Failure that still converted objects");
    } else
      fuzz_fail("convert", "response.result.status is \"%s\"", st ? st : "(none)");
  }
  cJSON_Delete(out);
  if(roundtrip && request)
    check_roundtrip(request);
  cJSON_Delete(request);
  free(body);
  return 0;
}
