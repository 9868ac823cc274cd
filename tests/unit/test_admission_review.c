/*
 * test_admission_review.c: an AdmissionReview's metadata.managedFields changes nothing in the
 * answer. review.c keeps managedFields (of object and oldObject) as the text it was sent and
 * never parses it (json_parse_strict_raw); this holds that to the review without them: for
 * generated objects of every kind and version, CREATE and UPDATE, /mutate and /validate answer
 * the same (allowed, status, patch, warnings) with managed fields compact, indented, with '/'
 * written as "\/", or absent.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"
#include "policystore.h"
#include "review.h"
#include "strbuf.h"

static void setup(void)
{
  policy_store_init(NULL);
}

static void teardown(void)
{
  policy_store_shutdown();
}

TestSuite(admission_review, .init = setup, .fini = teardown);

enum mf { MF_NONE, MF_COMPACT, MF_INDENTED, MF_ESCAPED };

/* managed fields as kubectl leaves them: one entry per manager, fieldsV1 naming the spec's keys */
static cJSON *managed_fields(const cJSON *obj)
{
  cJSON *mf = cJSON_CreateArray();
  static const char *const managers[] = { "kubectl-client-side-apply", "godwit-controller" };
  for(int m = 0; m < 2; m++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "manager", managers[m]);
    cJSON_AddStringToObject(e, "operation", m ? "Update" : "Apply");
    cJSON_AddStringToObject(e, "apiVersion", json_get_str(obj, "apiVersion"));
    cJSON_AddStringToObject(e, "time", "2025-03-14T09:26:53Z");
    cJSON_AddStringToObject(e, "fieldsType", "FieldsV1");
    cJSON *f = cJSON_AddObjectToObject(e, "fieldsV1");
    cJSON *fs = cJSON_AddObjectToObject(f, m ? "f:status" : "f:spec");
    cJSON_AddObjectToObject(fs, ".");
    const cJSON *part = json_get(obj, m ? "status" : "spec");
    for(const cJSON *c = part ? part->child : NULL; c; c = c->next) {
      char key[160];
      snprintf(key, sizeof(key), "f:%s", c->string);
      cJSON_AddObjectToObject(fs, key);
    }
    if(m)
      cJSON_AddStringToObject(e, "subresource", "status");
    cJSON_AddItemToArray(mf, e);
  }
  return mf;
}

static void add(struct strbuf *sb, const char *s)
{
  cr_assert_eq(strbuf_add(sb, s, strlen(s)), GW_OK);
}

/* obj with managed fields spelled as mf says */
static void add_object(struct strbuf *sb, const cJSON *obj, enum mf mf)
{
  cJSON *o = cJSON_Duplicate(obj, 1);
  cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
  if(!md)
    md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
  if(mf != MF_NONE)
    cJSON_AddItemToObject(md, "managedFields", managed_fields(obj));
  char *t = mf == MF_INDENTED ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
  for(const char *p = t; *p; p++)
    if(*p == '/' && mf == MF_ESCAPED)
      add(sb, "\\/");
    else
      cr_assert_eq(strbuf_addc(sb, *p), GW_OK);
  cJSON_free(t);
  cJSON_Delete(o);
}

/* The review's response (uid removed) as text, for /mutate or /validate. */
static char *answer(const struct api_kind *k, enum wh_endpoint ep, const cJSON *obj,
                    const cJSON *old, enum mf mf)
{
  struct strbuf sb;
  strbuf_init(&sb, 16u << 20);
  char head[512];
  snprintf(head, sizeof(head),
           "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
           "\"uid\":\"5e1f\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"},"
           "\"resource\":{\"group\":\"%s\",\"version\":\"v1\",\"resource\":\"%s\"},"
           "\"name\":\"%s\",\"namespace\":\"shop\",\"operation\":\"%s\","
           "\"userInfo\":{\"username\":\"alice\",\"groups\":[\"system:authenticated\"]},"
           "\"object\":",
           k->group, k->kind, k->group, k->plural,
           json_get_str(obj, "metadata.name") ? json_get_str(obj, "metadata.name") : "",
           old ? "UPDATE" : "CREATE");
  add(&sb, head);
  add_object(&sb, obj, mf);
  add(&sb, ",\"oldObject\":");
  if(old)
    add_object(&sb, old, mf);
  else
    add(&sb, "null");
  add(&sb, ",\"dryRun\":false}}");
  struct http_request req = { "POST", ep == EP_MUTATE ? "/mutate" : "/validate",
                              "application/json", strbuf_str(&sb), sb.len, NULL };
  struct http_response resp = { 0 };
  review_admission(ep, &req, &resp);
  cr_assert_eq(resp.status, 200, "%.300s", resp.body ? resp.body : "");
  cJSON *doc;
  char err[160];
  cr_assert_eq(json_parse_strict(resp.body, resp.len, &doc, err, sizeof(err)), GW_OK, "%s", err);
  cJSON *r = json_get_mut(doc, "response");
  cr_assert_str_eq(json_get_str(r, "uid"), "5e1f");
  cJSON_DeleteItemFromObjectCaseSensitive(r, "uid");
  char *text = cJSON_PrintUnformatted(r);
  cJSON_Delete(doc);
  free(resp.body);
  strbuf_release(&sb);
  return text;
}

Test(admission_review, managed_fields_change_nothing_in_the_answer, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 31);
  long patched = 0, denied = 0;
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++) {
    const struct api_kind *k = *kp;
    for(size_t vi = 0; vi < k->nversions; vi++)
      for(int i = 0; i < 12; i++) {
        cJSON *obj = gen_object(&g, k, &k->versions[vi]);
        cJSON *old = i % 2 ? gen_object(&g, k, &k->versions[vi]) : NULL;
        if(old) /* an update of the same object */
          cJSON_ReplaceItemInObjectCaseSensitive(
            old, "metadata", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), 1));
        for(int e = 0; e < 2; e++) {
          enum wh_endpoint ep = e ? EP_VALIDATE : EP_MUTATE;
          char *want = answer(k, ep, obj, old, MF_NONE);
          patched += strstr(want, "\"patch\"") != NULL;
          denied += strstr(want, "\"allowed\":false") != NULL;
          for(enum mf mf = MF_COMPACT; mf <= MF_ESCAPED; mf++) {
            char *got = answer(k, ep, obj, old, mf);
            cr_assert_str_eq(got, want, "%s %s %s, managed fields %d: answered\n%s\nwithout them\n%s",
                             k->kind, k->versions[vi].name, e ? "/validate" : "/mutate", mf, got,
                             want);
            cJSON_free(got);
          }
          cJSON_free(want);
        }
        cJSON_Delete(obj);
        cJSON_Delete(old);
      }
  }
  /* patches and refusals must both occur, or the answers compared say little */
  cr_assert_gt(patched, 20, "patched %ld", patched);
  cr_assert_gt(denied, 5, "denied %ld", denied);
}
