/* test_version.c: what the binaries say they are (shared/version.h). */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "strbuf.h"
#include "version.h"

static bool matches(const char *re, const char *s)
{
  regex_t r;
  cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
  bool ok = regexec(&r, s, 0, NULL, 0) == 0;
  regfree(&r);
  return ok;
}

Test(version, the_release_is_the_version_file_and_the_build_is_named)
{
  FILE *f = fopen("VERSION", "r"); /* the suite runs from the repository's root */
  cr_assert_not_null(f, "no VERSION file in the working directory");
  char want[64] = "";
  cr_assert_not_null(fgets(want, sizeof(want), f));
  fclose(f);
  want[strcspn(want, "\n")] = '\0';
  cr_expect_str_eq(gw_version(), want);
  cr_expect(matches("^([0-9a-f]{12}|unknown)$", gw_commit()), "commit %s", gw_commit());
  cr_expect(matches("^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z|unknown)$",
                    gw_build_date()), "build date %s", gw_build_date());
}

Test(version, the_line_and_the_metric)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  gw_version_print(out, "godwit-x");
  fclose(out);
  char want[256];
  snprintf(want, sizeof(want), "godwit-x %s (commit %s, built %s)\n", gw_version(), gw_commit(),
           gw_build_date());
  cr_expect_str_eq(buf, want);
  free(buf);
  struct strbuf sb;
  strbuf_init(&sb, 4096);
  cr_assert(!gw_version_metric(&sb));
  cr_expect(strstr(strbuf_str(&sb), "# TYPE godwit_build_info gauge\n"));
  cr_expect(matches("\ngodwit_build_info\\{version=\"[^\"]+\",commit=\"[^\"]+\",build_date=\"[^\"]+\""
                    "\\} 1\n$", strbuf_str(&sb)), "%s", strbuf_str(&sb));
  strbuf_release(&sb);
}

Test(version, every_cfg_main_answers_version_and_runs_nothing)
{
  static const struct cfg_opt opts[] = { { NULL, NULL, 0, NULL, 0, 0, 0, NULL } };
  char *argv[] = { "godwit-x", "--version", NULL };
  int c = 0;
  cr_expect_eq(cfg_main(opts, &c, 2, argv, "godwit-x", "a test"), 0);
  char *bad[] = { "godwit-x", "--nope", NULL };
  cr_expect_eq(cfg_main(opts, &c, 2, bad, "godwit-x", "a test"), 2);
}
