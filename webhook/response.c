#include "response.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static cJSON *envelope(const struct adm_subject *s, bool allowed, cJSON **response)
{
  cJSON *review = cJSON_CreateObject();
  cJSON_AddStringToObject(review, "apiVersion", "admission.k8s.io/v1");
  cJSON_AddStringToObject(review, "kind", "AdmissionReview");
  cJSON *r = cJSON_AddObjectToObject(review, "response");
  cJSON_AddStringToObject(r, "uid", s->uid);
  cJSON_AddBoolToObject(r, "allowed", allowed);
  *response = r;
  return review;
}

static void add_warnings(cJSON *r, const struct strlist *w)
{
  if(!w || !w->n)
    return;
  cJSON *a = cJSON_AddArrayToObject(r, "warnings");
  for(size_t i = 0; i < w->n; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(w->v[i]));
}

cJSON *response_allowed(const struct adm_subject *s, const cJSON *patch,
                        const struct strlist *warnings)
{
  cJSON *r;
  cJSON *review = envelope(s, true, &r);
  if(patch) {
    char *text = cJSON_PrintUnformatted(patch);
    if(text) {
      size_t n = strlen(text);
      char *b64 = malloc(4 * ((n + 2) / 3) + 1);
      if(b64) {
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)text, (int)n);
        cJSON_AddStringToObject(r, "patchType", "JSONPatch");
        cJSON_AddStringToObject(r, "patch", b64);
        free(b64);
      }
      cJSON_free(text);
    }
  }
  add_warnings(r, warnings);
  return review;
}

static void add_status(cJSON *r, int code, const char *reason, const char *message,
                       const struct adm_subject *s, const struct ferrs *errs)
{
  cJSON *st = cJSON_AddObjectToObject(r, "status");
  cJSON_AddItemToObject(st, "metadata", cJSON_CreateObject());
  cJSON_AddStringToObject(st, "status", "Failure");
  cJSON_AddStringToObject(st, "message", message);
  cJSON_AddStringToObject(st, "reason", reason);
  if(errs) {
    cJSON *d = cJSON_AddObjectToObject(st, "details");
    if(s->name && *s->name)
      cJSON_AddStringToObject(d, "name", s->name);
    cJSON_AddStringToObject(d, "group", s->group);
    cJSON_AddStringToObject(d, "kind", s->kind);
    cJSON *causes = cJSON_AddArrayToObject(d, "causes");
    for(size_t i = 0; i < errs->n; i++) {
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "reason", ferr_reason(errs->v[i].type));
      cJSON_AddStringToObject(c, "message", errs->v[i].msg);
      cJSON_AddStringToObject(c, "field", errs->v[i].field);
      cJSON_AddItemToArray(causes, c);
    }
  }
  cJSON_AddNumberToObject(st, "code", code);
}

cJSON *response_denied(const struct adm_subject *s, const struct ferrs *errs,
                       const struct strlist *warnings)
{
  bool policy = ferrs_all_policy(errs);
  struct strbuf sb;
  strbuf_init(&sb, 64 * 1024);
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  gw_rc rc = strbuf_addf(&sb, "%s \"%s\" is %s:", s->kind, name,
                         policy ? "forbidden by the admission policy" : "invalid");
  for(size_t i = 0; i < errs->n && !rc; i++)
    rc = strbuf_addf(&sb, "%s%s: %s", errs->n == 1 && !errs->dropped ? " " : "\n- ",
                     errs->v[i].field, errs->v[i].msg);
  if(!rc && errs->dropped)
    rc = strbuf_addf(&sb, "\n- ... and %zu more", errs->dropped);
  cJSON *r;
  cJSON *review = envelope(s, false, &r);
  add_status(r, policy ? 403 : 422, policy ? "Forbidden" : "Invalid",
             rc ? "the object is invalid (message too long to show)" : strbuf_str(&sb), s, errs);
  add_warnings(r, warnings);
  strbuf_release(&sb);
  return review;
}

cJSON *response_error(const struct adm_subject *s, int code, const char *reason,
                      const char *message)
{
  cJSON *r;
  cJSON *review = envelope(s, false, &r);
  add_status(r, code, reason, message, s, NULL);
  return review;
}
