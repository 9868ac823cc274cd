/* godwit-yaml2json FILE...: prints each YAML document as one JSON line (for tests and demos). */
#include <stdio.h>

#include "version.h"
#include "yamldoc.h"

int main(int argc, char **argv)
{
  if(gw_version_asked(argc, argv, "godwit-yaml2json"))
    return 0;
  if(argc < 2) {
    fprintf(stderr, "usage: godwit-yaml2json FILE...\n");
    return 2;
  }
  for(int i = 1; i < argc; i++) {
    cJSON *docs;
    char err[256];
    if(yamldoc_parse_file(argv[i], &docs, err, sizeof(err))) {
      fprintf(stderr, "godwit-yaml2json: %s\n", err);
      return 1;
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, docs)
    {
      char *s = cJSON_PrintUnformatted(d);
      if(s) {
        puts(s);
        cJSON_free(s);
      }
    }
    cJSON_Delete(docs);
  }
  return 0;
}
