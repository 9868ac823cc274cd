/* The flag table: defaults, environment, command line, ranges, and no uninitialized option. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

struct cfg {
  const char *name;
  long port;
  int flag;
  int flag_on;
  const char *list[CFG_MAX_LIST];
};

#define O(f) offsetof(struct cfg, f)
static const struct cfg_opt opts[] = {
  { "name", "GW_TEST_NAME", CFG_STR, NULL, 0, 0, O(name), "a name" },
  { "port", NULL, CFG_INT, "9443", 1, 65535, O(port), "a port" },
  { "flag", NULL, CFG_BOOL, NULL, 0, 0, O(flag), "a flag without default" },
  { "flag-on", NULL, CFG_BOOL, "true", 0, 0, O(flag_on), "a flag defaulting to true" },
  { "dns", NULL, CFG_STRLIST, NULL, 0, 0, O(list), "repeatable" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

Test(config, unset_options_are_zero_whatever_memory_held)
{
  struct cfg c;
  memset(&c, 0xab, sizeof(c));
  char *argv[] = { "prog", NULL };
  char err[128];
  unsetenv("GW_TEST_NAME");
  cr_assert_eq(cfg_parse(opts, &c, 1, argv, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_null(c.name);
  cr_assert_eq(c.port, 9443);
  cr_assert_eq(c.flag, 0, "a bool without default must be false");
  cr_assert_eq(c.flag_on, 1);
  cr_assert_null(c.list[0]);
}

Test(config, command_line_env_and_ranges)
{
  struct cfg c;
  setenv("GW_TEST_NAME", "from-env", 1);
  char *argv[] = { "prog", "--port=80", "--flag", "--dns", "a", "--dns", "b", NULL };
  char err[128];
  cr_assert_eq(cfg_parse(opts, &c, 7, argv, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(c.name, "from-env");
  cr_assert_eq(c.port, 80);
  cr_assert_eq(c.flag, 1);
  cr_assert_str_eq(c.list[0], "a");
  cr_assert_str_eq(c.list[1], "b");
  cr_assert_null(c.list[2]);
  char *bad[] = { "prog", "--port", "0", NULL };
  cr_assert_eq(cfg_parse(opts, &c, 3, bad, err, sizeof(err)), GW_EINVAL);
  cr_assert(strstr(err, "between 1 and 65535"), "%s", err);
  char *unknown[] = { "prog", "--prot", "1", NULL };
  cr_assert_eq(cfg_parse(opts, &c, 3, unknown, err, sizeof(err)), GW_EINVAL);
  cr_assert(strstr(err, "--prot"), "%s", err);
  unsetenv("GW_TEST_NAME");
}
