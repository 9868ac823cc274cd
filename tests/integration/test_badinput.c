/* Bad input gets a clear 4xx and the server keeps serving. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"

static struct wh w;
static void up(void) { wh_start(&w, NULL); }
static void down(void) { wh_stop(&w); }

static void still_serving(void)
{
  struct wh_reply r;
  wh_get(&w, "/healthz", &r);
  cr_assert_eq(r.status, 200, "the server stopped serving");
  wh_reply_free(&r);
}

static void expect(const char *path, const char *ct, const char *body, size_t len, long status,
                   const char *reason, const char *msg_part)
{
  struct wh_reply r;
  wh_post(&w, path, ct, body, len, &r);
  cr_assert_eq(r.status, status, "%s: got HTTP %ld: %.300s", msg_part, r.status, r.body);
  cJSON *st = cJSON_Parse(r.body);
  cr_assert_not_null(st, "the error body is a JSON Status: %.200s", r.body);
  cr_assert_str_eq(json_get_str(st, "kind"), "Status");
  cr_assert_str_eq(json_get_str(st, "reason"), reason);
  cr_assert_eq(json_get(st, "code")->valueint, status);
  const char *m = json_get_str(st, "message");
  cr_assert(m && strstr(m, msg_part), "message \"%s\" lacks \"%s\"", m, msg_part);
  cr_assert_null(strchr(m, '\n'), "one line");
  cJSON_Delete(st);
  wh_reply_free(&r);
  still_serving();
}

Test(badinput, not_json, .init = up, .fini = down)
{
  expect("/validate", "application/json", "hello", 5, 400, "BadRequest", "malformed JSON");
}

Test(badinput, truncated_json, .init = up, .fini = down)
{
  const char *b = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":";
  expect("/validate", "application/json", b, strlen(b), 400, "BadRequest", "malformed JSON");
}

Test(badinput, deep_nesting, .init = up, .fini = down)
{
  size_t n = 100000;
  char *b = malloc(2 * n);
  memset(b, '[', n);
  memset(b + n, ']', n);
  expect("/mutate", "application/json", b, 2 * n, 400, "BadRequest", "nested deeper");
  free(b);
}

Test(badinput, four_mib_body, .init = up, .fini = down)
{
  size_t n = 4u << 20;
  char *b = malloc(n);
  memset(b, ' ', n);
  b[0] = '{';
  b[n - 1] = '}';
  expect("/validate", "application/json", b, n, 413, "RequestEntityTooLarge", "3 MiB");
  free(b);
}

Test(badinput, wrong_content_type, .init = up, .fini = down)
{
  expect("/validate", "application/yaml", "{}", 2, 415, "UnsupportedMediaType", "application/json");
}

Test(badinput, wrong_review_kind, .init = up, .fini = down)
{
  const char *b = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{}}";
  expect("/validate", "application/json", b, strlen(b), 400, "BadRequest",
         "expected a admission.k8s.io/v1 AdmissionReview");
  const char *c = "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}";
  expect("/mutate", "application/json", c, strlen(c), 400, "BadRequest", "admissionReviewVersions");
  const char *d = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}";
  expect("/convert", "application/json", d, strlen(d), 400, "BadRequest", "ConversionReview");
}

Test(badinput, missing_uid, .init = up, .fini = down)
{
  const char *b = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
                  "{\"operation\":\"CREATE\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}}}";
  expect("/validate", "application/json", b, strlen(b), 400, "BadRequest", "request.uid is missing");
}

Test(badinput, unknown_path_and_method, .init = up, .fini = down)
{
  expect("/admit", "application/json", "{}", 2, 404, "NotFound", "no handler");
  struct wh_reply r;
  wh_get(&w, "/validate", &r);
  cr_assert_eq(r.status, 405);
  wh_reply_free(&r);
}
