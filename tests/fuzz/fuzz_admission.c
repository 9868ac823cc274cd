/*
 * libFuzzer target: an AdmissionReview body through review_admission() for /validate and then
 * /mutate, exactly as server.c hands it over (a NUL-terminated copy and its length).
 *
 * Besides what the sanitizers catch (memory errors, leaks, undefined behaviour), it checks what
 * the webhook contract promises for every body (DESIGN.md, "Webhook contract"):
 *  - the answer is HTTP 200 (an AdmissionReview) or 400 (a Status), never anything else;
 *  - a 200 body is JSON, an admission.k8s.io/v1 AdmissionReview whose response.uid echoes
 *    request.uid;
 *  - reinvocation: when /mutate answers with a patch, the patch applies to request.object, and
 *    /mutate over the patched object answers without a patch (defaulting is idempotent).
 *    Not checked for bodies with duplicate object keys, which kube-apiserver never sends and
 *    a JSON pointer cannot address (see fuzz_has_duplicate_keys).
 * A broken promise aborts with a message, so libFuzzer keeps the input as a crash.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonpatch.h"
#include "policystore.h"
#include "review.h"

#include "fuzzutil.h"

static void answer(enum wh_endpoint ep, const char *body, size_t len, struct http_response *r)
{
  struct http_request req = { "POST", ep == EP_MUTATE ? "/mutate" : "/validate",
                              "application/json", body, len };
  memset(r, 0, sizeof(*r));
  review_admission(ep, &req, r);
}

/* Checks the HTTP answer and returns the parsed AdmissionReview of a 200 (NULL for a 400). */
static cJSON *check_answer(const struct http_response *r, const cJSON *request, const char *what)
{
  fuzz_check_body(r, what);
  if(r->status == 400)
    return NULL;
  if(r->status != 200)
    fuzz_fail(what, "HTTP status %d (only 200 and 400 are expected)", r->status);
  if(!request)
    fuzz_fail(what, "HTTP 200 for a body that is not JSON");
  cJSON *out = fuzz_parse(r->body, r->len, what);
  const char *uid = json_get_str(request, "request.uid");
  const char *got = json_get_str(out, "response.uid");
  if(!uid || !got || strcmp(uid, got))
    fuzz_fail(what, "response.uid \"%s\" does not echo request.uid \"%s\"", got ? got : "(none)",
              uid ? uid : "(none)");
  if(!cJSON_IsBool(json_get(out, "response.allowed")))
    fuzz_fail(what, "response.allowed is missing");
  return out;
}

/* The JSON patch of an answer, or NULL when it has none. */
static cJSON *patch_of(const cJSON *review)
{
  const char *b64 = json_get_str(review, "response.patch");
  if(!b64)
    return NULL;
  size_t n = strlen(b64);
  unsigned char *raw = malloc(n / 4 * 3 + 4);
  if(!raw)
    abort();
  int m = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
  if(m < 0)
    fuzz_fail("mutate", "response.patch is not base64");
  while(m > 0 && raw[m - 1] == '\0') /* EVP_DecodeBlock counts the padding */
    m--;
  cJSON *patch = fuzz_parse((const char *)raw, (size_t)m, "mutate patch");
  free(raw);
  const char *type = json_get_str(review, "response.patchType");
  if(!type || strcmp(type, "JSONPatch"))
    fuzz_fail("mutate", "a patch without patchType JSONPatch");
  return patch;
}

/* Reinvocation: /mutate over its own output must not patch again. */
static void check_idempotent(cJSON *request, const cJSON *patch)
{
  cJSON *obj = json_detach(request, "request.object");
  char err[256];
  if(jsonpatch_apply(&obj, patch, err, sizeof(err)))
    fuzz_fail("mutate", "its patch does not apply to request.object: %s", err);
  if(json_set(request, "request.object", obj))
    abort();
  char *again = cJSON_PrintUnformatted(request);
  if(!again)
    abort();
  struct http_response r;
  answer(EP_MUTATE, again, strlen(again), &r);
  cJSON *out = check_answer(&r, request, "mutate (reinvoked)");
  if(!out)
    fuzz_fail("mutate (reinvoked)", "HTTP 400 over its own output: %s", r.body);
  if(json_get(out, "response.patch")) {
    char *p = NULL;
    cJSON *p2 = patch_of(out);
    p = cJSON_PrintUnformatted(p2);
    fuzz_fail("mutate (reinvoked)", "defaulting is not idempotent: second patch %s", p);
  }
  cJSON_Delete(out);
  free(r.body);
  cJSON_free(again);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init();
  policy_store_init(NULL);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *body = fuzz_body(data, size);
  cJSON *request = fuzz_try_parse(body, size); /* NULL: the webhook must answer 400 */
  struct http_response r;
  answer(EP_VALIDATE, body, size, &r);
  cJSON *out = check_answer(&r, request, "validate");
  cJSON_Delete(out);
  free(r.body);

  answer(EP_MUTATE, body, size, &r);
  out = check_answer(&r, request, "mutate");
  if(out && cJSON_IsTrue(json_get(out, "response.allowed"))) {
    cJSON *patch = patch_of(out);
    if(patch && fuzz_reinvoke && !fuzz_has_duplicate_keys(request))
      check_idempotent(request, patch);
    cJSON_Delete(patch);
  }
  cJSON_Delete(out);
  free(r.body);
  cJSON_Delete(request);
  free(body);
  return 0;
}
