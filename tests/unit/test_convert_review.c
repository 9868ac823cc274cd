/*
 * test_convert_review.c: POST /convert as review_conversion() answers it converts every object
 * exactly as api_convert() converts the whole parsed object. review.c keeps each object's
 * metadata and status as the text it was sent (json_parse_strict_raw) and parses them only when
 * the conversion reaches into them; this holds that shortcut to the plain path over generated
 * objects of every kind, both ways (older -> hub, which reads the fields annotation, and hub ->
 * older, which splits status and writes the annotation), compact and indented, and with every
 * '/' written as the escape "\/" (so the annotation's name is not found as it is spelled).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"
#include "review.h"
#include "strbuf.h"

#define BATCH 20
#define BATCHES 10

static void add(struct strbuf *sb, const char *s)
{
  cr_assert_eq(strbuf_add(sb, s, strlen(s)), GW_OK);
}

/* obj's text as kube-apiserver might send it: compact or indented, '/' escaped or not */
static void add_object(struct strbuf *sb, const cJSON *obj, bool pretty, bool escape_slashes)
{
  char *t = pretty ? cJSON_Print(obj) : cJSON_PrintUnformatted(obj);
  for(const char *p = t; *p; p++)
    if(*p == '/' && escape_slashes)
      add(sb, "\\/");
    else
      cr_assert_eq(strbuf_addc(sb, *p), GW_OK);
  cJSON_free(t);
}

/* objs in one ConversionReview to desired: every converted object as api_convert makes it */
static void assert_converts_like_api(const struct api_kind *k, cJSON **objs, int n,
                                     const char *desired, bool pretty, bool escape_slashes)
{
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  add(&sb, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
           "\"request\":{\"uid\":\"7d1c\",\"desiredAPIVersion\":\"");
  add(&sb, desired);
  add(&sb, "\",\"objects\":[");
  for(int i = 0; i < n; i++) {
    if(i)
      add(&sb, ",");
    add_object(&sb, objs[i], pretty, escape_slashes);
  }
  add(&sb, "]}}");
  struct http_request req = { "POST", "/convert", "application/json", strbuf_str(&sb), sb.len,
                              NULL };
  struct http_response resp = { 0 };
  review_conversion(&req, &resp);
  cr_assert_eq(resp.status, 200, "%.300s", resp.body ? resp.body : "");
  cJSON *answer;
  char err[160];
  cr_assert_eq(json_parse_strict(resp.body, resp.len, &answer, err, sizeof(err)), GW_OK, "%s",
               err);
  cr_assert_str_eq(json_get_str(answer, "response.result.status"), "Success", "%s to %s: %s",
                   k->kind, desired, json_get_str(answer, "response.result.message"));
  const cJSON *got = json_get(answer, "response.convertedObjects");
  cr_assert_eq(cJSON_GetArraySize(got), n);
  const cJSON *g = got->child;
  for(int i = 0; i < n; i++, g = g->next) {
    cJSON *want = cJSON_Duplicate(objs[i], 1);
    char why[256];
    cr_assert_eq(api_convert(k, want, desired, why, sizeof(why)), GW_OK, "%s", why);
    if(!cJSON_Compare(want, g, 1)) {
      char *w = cJSON_PrintUnformatted(want), *x = cJSON_PrintUnformatted(g);
      cr_assert_fail("%s to %s (%s%s): the review converted\n%s\nwhere api_convert gives\n%s",
                     k->kind, desired, pretty ? "indented" : "compact",
                     escape_slashes ? ", '/' escaped" : "", x, w);
    }
    cJSON_Delete(want);
  }
  cJSON_Delete(answer);
  free(resp.body);
  strbuf_release(&sb);
}

static void version_name(const struct api_kind *k, const struct api_version *v, char *buf,
                         size_t n)
{
  snprintf(buf, n, "%s/%s", k->group, v->name);
}

Test(convert_review, converts_every_object_as_api_convert_does, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 23);
  long annotated = 0;
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++) {
    const struct api_kind *k = *kp;
    const struct api_version *hub = api_hub(k);
    char hubname[128];
    version_name(k, hub, hubname, sizeof(hubname));
    for(size_t vi = 0; vi + 1 < k->nversions; vi++) {
      const struct api_version *v = &k->versions[vi];
      char vname[128];
      version_name(k, v, vname, sizeof(vname));
      for(int b = 0; b < BATCHES; b++) {
        bool pretty = b % 2, escape = b % 4 >= 2;
        cJSON *older[BATCH], *hubs[BATCH], *from_hub[BATCH];
        for(int i = 0; i < BATCH; i++) {
          older[i] = gen_object(&g, k, v);
          hubs[i] = gen_object(&g, k, hub);
          /* an older object as the hub leaves it: what v cannot hold in the annotation */
          from_hub[i] = cJSON_Duplicate(hubs[i], 1);
          char why[256];
          cr_assert_eq(api_convert(k, from_hub[i], vname, why, sizeof(why)), GW_OK, "%s", why);
          char ann[96];
          snprintf(ann, sizeof(ann), API_FIELDS_ANNOTATION_FMT, hub->name);
          if(json_get(from_hub[i], "metadata.annotations") &&
             cJSON_GetObjectItemCaseSensitive(json_get(from_hub[i], "metadata.annotations"), ann))
            annotated++;
        }
        assert_converts_like_api(k, older, BATCH, hubname, pretty, escape);
        assert_converts_like_api(k, from_hub, BATCH, hubname, pretty, escape);
        assert_converts_like_api(k, hubs, BATCH, vname, pretty, escape);
        assert_converts_like_api(k, older, BATCH, vname, pretty, escape); /* nothing to do */
        for(int i = 0; i < BATCH; i++) {
          cJSON_Delete(older[i]);
          cJSON_Delete(hubs[i]);
          cJSON_Delete(from_hub[i]);
        }
      }
    }
  }
  /* objects must carry the annotation, or the path that reads it was not taken */
  cr_assert_gt(annotated, 100, "annotated %ld", annotated);
}
