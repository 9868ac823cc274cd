/*
 * test_jsonprint.c: json_print_sb() prints what cJSON_PrintUnformatted() prints, byte for byte,
 * on every kind of value: generated objects of every kind and version (gen.h), the benchmark's
 * fixtures, and values chosen for the corners (escapes, control bytes, UTF-8, integers at the
 * edges of int, fractions that need 17 digits, Raw items). The webhook's answers are printed
 * with it (webhook/review.c).
 */
#include <criterion/criterion.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"
#include "strbuf.h"

static void assert_prints_like_cjson(const cJSON *v, const char *what)
{
  char *want = cJSON_PrintUnformatted(v);
  cr_assert_not_null(want, "%s: cJSON printed nothing", what);
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  cr_assert_eq(json_print_sb(&sb, v), GW_OK, "%s", what);
  cr_assert_str_eq(strbuf_str(&sb), want, "%s:\n got  %s\n want %s", what, strbuf_str(&sb),
                   want);
  strbuf_release(&sb);
  cJSON_free(want);
}

Test(jsonprint, generated_objects_of_every_kind_and_version, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 7);
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++)
    for(size_t vi = 0; vi < (*kp)->nversions; vi++)
      for(int i = 0; i < 50; i++) {
        cJSON *o = gen_object(&g, *kp, &(*kp)->versions[vi]);
        char what[128];
        snprintf(what, sizeof(what), "%s %s #%d", (*kp)->kind, (*kp)->versions[vi].name, i);
        assert_prints_like_cjson(o, what);
        cJSON_Delete(o);
      }
}

Test(jsonprint, corners)
{
  static const char *const docs[] = {
    "{\"s\":\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f\"}",
    "[\"\\u0001\\u001f\\u007f control\", \"caf\\u00e9 \\u2603 \\ud83d\\ude00\", \"\"]",
    ("{\"\":0,\"a\":-0,\"b\":2147483647,\"c\":-2147483648,\"d\":2147483648,"
     "\"e\":-2147483649,\"f\":9007199254740993,\"g\":1e300,\"h\":-1.5e-300}"),
    "[0.1,0.2,0.30000000000000004,1.0000000000000002,3.141592653589793,1e21,123456789012.5]",
    "[true,false,null,[],{},[[[]]],{\"x\":{\"y\":{}}}]",
  };
  for(size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
    cJSON *v = cJSON_Parse(docs[i]);
    cr_assert_not_null(v, "%s", docs[i]);
    assert_prints_like_cjson(v, docs[i]);
    cJSON_Delete(v);
  }
  /* numbers as code makes them */
  cJSON *a = cJSON_CreateArray();
  double nums[] = { 0.1 + 0.2, DBL_MAX, DBL_MIN, -DBL_EPSILON, 1.0 / 3, 2.5e-7, 1e15 + 0.5,
                    (double)INT_MAX + 1, (double)INT_MIN, 4503599627370497.0 };
  for(size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(nums[i]));
  cJSON_AddItemToArray(a, cJSON_CreateRaw("{\"raw\":[1,2]}"));
  assert_prints_like_cjson(a, "numbers and a raw item");
  cJSON_Delete(a);
}

Test(jsonprint, what_cjson_would_not_print_is_refused)
{
  struct strbuf sb;
  strbuf_init(&sb, 1024);
  cJSON *r = cJSON_CreateRaw("x");
  cJSON_free(r->valuestring);
  r->valuestring = NULL;
  cr_assert_eq(json_print_sb(&sb, r), GW_EINVAL);
  cJSON_Delete(r);
  cr_assert_eq(json_print_sb(&sb, NULL), GW_EINVAL);
  /* and a buffer's limit is an error, not a cut answer */
  cJSON *big = cJSON_CreateString("0123456789012345678901234567890123456789");
  struct strbuf small;
  strbuf_init(&small, 16);
  cr_assert_neq(json_print_sb(&small, big), GW_OK);
  strbuf_release(&small);
  cJSON_Delete(big);
  strbuf_release(&sb);
}
