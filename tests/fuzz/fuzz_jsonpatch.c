/*
 * libFuzzer target: shared/jsonpatch.c. The input is a JSON array [from, to, patch]:
 *  - jsonpatch_apply(from, patch) either applies every operation or fails leaving from as it was;
 *  - jsonpatch_diff(from, to) applied to from gives to (when neither has duplicate keys, which a
 *    JSON pointer cannot tell apart).
 * Anything else is fed to jsonpatch_apply as a patch over an empty object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonpatch.h"

#include "fuzzutil.h"

static void apply_checked(const cJSON *from, const cJSON *patch)
{
  cJSON *doc = cJSON_Duplicate(from, 1);
  char err[256] = "";
  if(!doc)
    return;
  gw_rc rc = jsonpatch_apply(&doc, patch, err, sizeof(err));
  if(rc) {
    if(!err[0] && rc != GW_ENOMEM && rc != GW_ECONFLICT)
      fuzz_fail("jsonpatch_apply", "failed (%d) without a reason", (int)rc);
    if(!fuzz_same_text(doc, from))
      fuzz_fail("jsonpatch_apply", "a failed patch changed the document");
  }
  cJSON_Delete(doc);
}

static void diff_roundtrip(const cJSON *from, const cJSON *to)
{
  if(fuzz_has_duplicate_keys(from) || fuzz_has_duplicate_keys(to))
    return;
  cJSON *ops = jsonpatch_diff(from, to);
  if(!ops)
    fuzz_fail("jsonpatch_diff", "no patch");
  cJSON *doc = cJSON_Duplicate(from, 1);
  char err[256] = "";
  if(jsonpatch_apply(&doc, ops, err, sizeof(err)))
    fuzz_fail("jsonpatch_diff", "its own patch does not apply: %s", err);
  if(!json_equal(doc, to)) {
    char *a = cJSON_PrintUnformatted(doc), *b = cJSON_PrintUnformatted(to);
    fuzz_fail("jsonpatch_diff", "diff then apply gives %s, not %s", a, b);
  }
  cJSON_Delete(doc);
  cJSON_Delete(ops);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_body(data, size);
  cJSON *in = fuzz_try_parse(text, size);
  if(cJSON_IsArray(in) && cJSON_GetArraySize(in) == 3) {
    const cJSON *from = cJSON_GetArrayItem(in, 0), *to = cJSON_GetArrayItem(in, 1);
    apply_checked(from, cJSON_GetArrayItem(in, 2));
    diff_roundtrip(from, to);
  } else if(in) {
    cJSON *empty = cJSON_CreateObject();
    apply_checked(empty, in);
    cJSON_Delete(empty);
  }
  cJSON_Delete(in);
  free(text);
  return 0;
}
