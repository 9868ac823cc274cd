/* JSON Patch: the diff produces what apply consumes, and apply follows RFC 6902. */
#include <criterion/criterion.h>
#include <string.h>

#include "json.h"
#include "jsonpatch.h"

static cJSON *parse(const char *s)
{
  cJSON *v = NULL;
  char err[128];
  cr_assert_eq(json_parse_strict(s, strlen(s), &v, err, sizeof(err)), GW_OK, "%s", err);
  return v;
}

static void roundtrip(const char *a, const char *b, int expect_ops)
{
  cJSON *x = parse(a), *y = parse(b);
  cJSON *ops = jsonpatch_diff(x, y);
  cr_assert_not_null(ops);
  if(expect_ops >= 0)
    cr_assert_eq(cJSON_GetArraySize(ops), expect_ops, "ops: %s", cJSON_PrintUnformatted(ops));
  char err[128];
  cr_assert_eq(jsonpatch_apply(&x, ops, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(cJSON_Compare(x, y, 1), "patched %s != %s", cJSON_PrintUnformatted(x), b);
  cJSON_Delete(x);
  cJSON_Delete(y);
  cJSON_Delete(ops);
}

Test(jsonpatch, equal_documents_give_no_ops)
{
  roundtrip("{\"a\":{\"b\":[1,2]}}", "{\"a\":{\"b\":[1,2]}}", 0);
}

/* Numbers past a double's range read as infinity; two of them are equal (their difference is
 * NaN, which a tolerance test alone calls unequal: found by fuzz_jsonpatch). */
Test(jsonpatch, infinities_are_equal)
{
  cJSON *x = parse("{\"a\":[1e309,-1e-400,2]}"), *y = parse("{\"a\":[2e308,-0,2]}");
  cr_assert(json_equal(x, y));
  cJSON *ops = jsonpatch_diff(x, y);
  cr_assert_eq(cJSON_GetArraySize(ops), 0, "ops: %s", cJSON_PrintUnformatted(ops));
  cJSON *z = parse("{\"a\":[-1e309,0,2]}");
  cr_assert_not(json_equal(x, z), "+inf and -inf differ");
  cJSON_Delete(ops);
  cJSON_Delete(x);
  cJSON_Delete(y);
  cJSON_Delete(z);
}

Test(jsonpatch, adds_replaces_removes)
{
  roundtrip("{\"a\":1,\"b\":{\"c\":2},\"d\":3}", "{\"a\":2,\"b\":{\"c\":2,\"e\":true},\"f\":[1]}", 4);
}

Test(jsonpatch, escapes_pointer_tokens)
{
  cJSON *x = parse("{\"metadata\":{\"annotations\":{}}}");
  cJSON *y = parse("{\"metadata\":{\"annotations\":{\"godwit.dev/a~b\":\"x\"}}}");
  cJSON *ops = jsonpatch_diff(x, y);
  cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(ops, 0), "path")->valuestring,
                   "/metadata/annotations/godwit.dev~1a~0b");
  char err[128];
  cr_assert_eq(jsonpatch_apply(&x, ops, err, sizeof(err)), GW_OK);
  cr_assert(cJSON_Compare(x, y, 1));
  cJSON_Delete(x);
  cJSON_Delete(y);
  cJSON_Delete(ops);
}

Test(jsonpatch, apply_is_all_or_nothing)
{
  cJSON *x = parse("{\"a\":1}");
  cJSON *p = parse("[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
                   "{\"op\":\"remove\",\"path\":\"/missing\"}]");
  char err[128];
  cr_assert_eq(jsonpatch_apply(&x, p, err, sizeof(err)), GW_ENOTFOUND);
  cr_assert_null(cJSON_GetObjectItem(x, "b"), "a failed patch changes nothing");
  cJSON_Delete(x);
  cJSON_Delete(p);
}

Test(jsonpatch, array_ops)
{
  cJSON *x = parse("{\"a\":[1,2,3]}");
  cJSON *p = parse("[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":4},"
                   "{\"op\":\"remove\",\"path\":\"/a/0\"},"
                   "{\"op\":\"replace\",\"path\":\"/a/0\",\"value\":9},"
                   "{\"op\":\"test\",\"path\":\"/a/2\",\"value\":4}]");
  char err[128];
  cr_assert_eq(jsonpatch_apply(&x, p, err, sizeof(err)), GW_OK, "%s", err);
  cJSON *want = parse("{\"a\":[9,3,4]}");
  cr_assert(cJSON_Compare(x, want, 1));
  cJSON_Delete(x);
  cJSON_Delete(p);
  cJSON_Delete(want);
  x = parse("{\"a\":[1]}");
  p = parse("[{\"op\":\"remove\",\"path\":\"/a/01\"}]");
  cr_assert_neq(jsonpatch_apply(&x, p, err, sizeof(err)), GW_OK, "leading zeros are not indexes");
  cJSON_Delete(x);
  cJSON_Delete(p);
}

Test(json, strict_parse_refuses_trailing_garbage_and_depth)
{
  cJSON *v;
  char err[128];
  cr_assert_eq(json_parse_strict("{} x", 4, &v, err, sizeof(err)), GW_EPARSE);
  cr_assert(strstr(err, "after the value"), "%s", err);
  cr_assert_eq(json_parse_strict("{\"a\":", 5, &v, err, sizeof(err)), GW_EPARSE);
  char deep[512];
  memset(deep, '[', 300);
  memset(deep + 300, ']', 200);
  cr_assert_eq(json_parse_strict(deep, 500, &v, err, sizeof(err)), GW_EPARSE);
  cr_assert(strstr(err, "nested deeper"), "%s", err);
  cr_assert_eq(json_parse_strict(" {\"a\":[1]} \n", 12, &v, err, sizeof(err)), GW_OK);
  cJSON_Delete(v);
}

Test(json, canonical_sorts_keys)
{
  cJSON *v = parse("{\"b\":1,\"a\":{\"d\":[{\"y\":1,\"x\":2}],\"c\":\"s\"}}");
  char *s = json_print_canonical(v);
  cr_assert_str_eq(s, "{\"a\":{\"c\":\"s\",\"d\":[{\"x\":2,\"y\":1}]},\"b\":1}");
  cJSON_free(s);
  cJSON_Delete(v);
}
