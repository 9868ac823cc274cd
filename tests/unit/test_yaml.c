/* YAML as kubectl reads manifests. */
#include <criterion/criterion.h>
#include <string.h>

#include "json.h"
#include "yamldoc.h"

static cJSON *docs_of(const char *y)
{
  cJSON *d;
  char err[200];
  cr_assert_eq(yamldoc_parse(y, strlen(y), &d, err, sizeof(err)), GW_OK, "%s", err);
  return d;
}

Test(yaml, scalars_resolve_like_kubectl)
{
  cJSON *d = docs_of("a: 1\nb: \"1\"\nc: true\nd: yes\ne: ~\nf: 1.5\ng: '0x10'\nh: 0x10\ni: plain text\n"
                     "j: !!str 12\nk: ''\nl: |\n  line1\n  line2\n");
  cJSON *o = cJSON_GetArrayItem(d, 0);
  cr_assert(cJSON_IsNumber(json_get(o, "a")));
  cr_assert_str_eq(json_get_str(o, "b"), "1");
  cr_assert(cJSON_IsTrue(json_get(o, "c")));
  cr_assert(cJSON_IsTrue(json_get(o, "d")));
  cr_assert(cJSON_IsNull(json_get(o, "e")));
  cr_assert_float_eq(json_get(o, "f")->valuedouble, 1.5, 1e-9);
  cr_assert_str_eq(json_get_str(o, "g"), "0x10");
  cr_assert_eq(json_get(o, "h")->valueint, 16);
  cr_assert_str_eq(json_get_str(o, "i"), "plain text");
  cr_assert_str_eq(json_get_str(o, "j"), "12");
  cr_assert_str_eq(json_get_str(o, "k"), "");
  cr_assert_str_eq(json_get_str(o, "l"), "line1\nline2\n");
  cJSON_Delete(d);
}

Test(yaml, documents_and_aliases)
{
  cJSON *d = docs_of("---\nx: &a {k: [1, 2]}\ny: *a\n---\n# only a comment\n---\nz: 3\n");
  cr_assert_eq(cJSON_GetArraySize(d), 2, "empty documents are skipped");
  cJSON *o = cJSON_GetArrayItem(d, 0);
  cr_assert(cJSON_Compare(json_get(o, "x"), json_get(o, "y"), 1));
  cJSON_Delete(d);
}

Test(yaml, errors_name_the_line)
{
  cJSON *d;
  char err[200];
  const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
  cr_assert_neq(yamldoc_parse(bad, strlen(bad), &d, err, sizeof(err)), GW_OK);
  cr_assert(strstr(err, "line"), "%s", err);
}
