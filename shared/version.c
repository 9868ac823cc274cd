/* version.c: see version.h. */
#include "version.h"

#include <string.h>

#include "strbuf.h"
#include "version_gen.h" /* $(BUILD)/gen: GODWIT_VERSION, GODWIT_COMMIT, GODWIT_BUILD_DATE */

const char *gw_version(void)
{
  return GODWIT_VERSION;
}

const char *gw_commit(void)
{
  return GODWIT_COMMIT;
}

const char *gw_build_date(void)
{
  return GODWIT_BUILD_DATE;
}

void gw_version_print(FILE *out, const char *prog)
{
  fprintf(out, "%s %s (commit %s, built %s)\n", prog, GODWIT_VERSION, GODWIT_COMMIT,
          GODWIT_BUILD_DATE);
}

int gw_version_asked(int argc, char **argv, const char *prog)
{
  for(int i = 1; i < argc; i++)
    if(!strcmp(argv[i], "--version")) {
      gw_version_print(stdout, prog);
      return 1;
    }
  return 0;
}

gw_rc gw_version_metric(struct strbuf *sb)
{
  return strbuf_addf(sb, "# HELP godwit_build_info The running build: version, commit and build "
                         "date (always 1).\n# TYPE godwit_build_info gauge\n"
                         "godwit_build_info{version=\"%s\",commit=\"%s\",build_date=\"%s\"} 1\n",
                     GODWIT_VERSION, GODWIT_COMMIT, GODWIT_BUILD_DATE);
}
