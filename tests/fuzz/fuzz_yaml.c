/*
 * libFuzzer target: shared/yamldoc.c, the YAML reader of the tools (godwit-admit, the samples
 * test). Any text must give either documents or an error naming where; a result must print
 * as JSON that reads back the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "yamldoc.h"

#include "fuzzutil.h"

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
  cJSON *docs = NULL;
  char err[256] = "";
  if(yamldoc_parse(text, size, &docs, err, sizeof(err))) {
    if(docs)
      fuzz_fail("yamldoc_parse", "an error (%s) with a result", err);
    if(!err[0])
      fuzz_fail("yamldoc_parse", "an error without a reason");
  } else {
    if(!cJSON_IsArray(docs))
      fuzz_fail("yamldoc_parse", "the documents are not an array");
    char *json = cJSON_PrintUnformatted(docs);
    if(json) { /* NULL only when a number cannot print (cJSON prints NaN/inf as null) */
      cJSON *back = fuzz_parse(json, strlen(json), "yamldoc output");
      cJSON_Delete(back);
      cJSON_free(json);
    }
  }
  cJSON_Delete(docs);
  free(text);
  return 0;
}
