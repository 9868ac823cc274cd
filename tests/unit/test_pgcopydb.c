/* shared/pgcopydb.c: the output plugin of a live migration, by pgcopydb version and by the
 * source server's output_plugin_libraries. */
#include <criterion/criterion.h>
#include <string.h>

#include "pgcopydb.h"

static const struct pgcopydb_version unknown = { false, 0, 0 }, v010 = { true, 0, 10 },
                                     v011 = { true, 0, 11 }, v012 = { true, 0, 12 },
                                     v017 = { true, 0, 17 }, v100 = { true, 1, 0 };

Test(pgcopydb, plugins_by_version_best_first)
{
  const char *p[PGCOPYDB_MAX_PLUGINS];
  cr_assert_eq(pgcopydb_plugins(&v010, p), 1);
  cr_assert_str_eq(p[0], "wal2json");
  cr_assert_eq(pgcopydb_plugins(&v011, p), 1);
  cr_assert_str_eq(p[0], "wal2json");
  cr_assert_eq(pgcopydb_plugins(&unknown, p), 1, "an unknown version gets what every one knows");
  cr_assert_str_eq(p[0], "wal2json");
  for(const struct pgcopydb_version *v = &v012; v; v = v == &v012 ? &v017 : v == &v017 ? &v100
                                                                                       : NULL) {
    cr_assert_eq(pgcopydb_plugins(v, p), 2);
    cr_assert_str_eq(p[0], "test_decoding", "the plugin every server allows comes first");
    cr_assert_str_eq(p[1], "wal2json");
  }
  cr_assert(pgcopydb_plugin_supported(&v017, "test_decoding"));
  cr_assert_not(pgcopydb_plugin_supported(&v010, "test_decoding"));
  cr_assert_not(pgcopydb_plugin_supported(&v017, "pgoutput"));
  cr_assert_not(pgcopydb_plugin_supported(&v017, NULL));
}

Test(pgcopydb, plugin_flag_everywhere_but_known_old_versions)
{
  cr_assert_not(pgcopydb_plugin_flag(&v010), "0.10 has no --plugin");
  cr_assert_not(pgcopydb_plugin_flag(&v011));
  cr_assert(pgcopydb_plugin_flag(&v012));
  cr_assert(pgcopydb_plugin_flag(&v017));
  cr_assert(pgcopydb_plugin_flag(&unknown), "0.18 would otherwise decode with pgoutput");
}

Test(pgcopydb, allowed_follows_the_server_list)
{
  cr_assert(pg_plugin_allowed(NULL, "wal2json"), "no setting (15.18): every plugin");
  cr_assert(pg_plugin_allowed("pgoutput, test_decoding", "test_decoding"));
  cr_assert(pg_plugin_allowed("pgoutput, test_decoding", "pgoutput"));
  cr_assert_not(pg_plugin_allowed("pgoutput, test_decoding", "wal2json"));
  cr_assert_not(pg_plugin_allowed("pgoutput, test_decoding", "test"), "whole names only");
  cr_assert_not(pg_plugin_allowed("", "test_decoding"));
  cr_assert(pg_plugin_allowed("pgoutput,wal2json", "wal2json"));
  cr_assert(pg_plugin_allowed(" \"wal2json\" ,pgoutput", "wal2json"), "quoted elements");
  /* what a single literal makes of the list: one element that names no library */
  cr_assert_not(pg_plugin_allowed("\"pgoutput, test_decoding, wal2json\"x", "wal2json"));
}

static void adds(const char *setting, const char *plugin, const char *want)
{
  char out[128];
  cr_assert_eq(pg_plugin_list_add(setting, plugin, out, sizeof(out)), 0);
  cr_assert_str_eq(out, want, "%s + %s", setting ? setting : "(none)", plugin);
}

Test(pgcopydb, list_add_writes_one_literal_per_element)
{
  adds("pgoutput, test_decoding", "wal2json", "'pgoutput', 'test_decoding', 'wal2json'");
  adds("", "wal2json", "'wal2json'");
  adds(NULL, "wal2json", "'wal2json'");
  adds("pgoutput, wal2json", "wal2json", "'pgoutput', 'wal2json'");
  adds("\"my lib\",pgoutput", "wal2json", "'my lib', 'pgoutput', 'wal2json'");
  adds("o'brien", "wal2json", "'o''brien', 'wal2json'");
  char small[20];
  cr_assert_eq(pg_plugin_list_add("pgoutput, test_decoding", "wal2json", small, sizeof(small)),
               -1, "a buffer too small is an error, not a cut list");
  const size_t need = strlen("'pgoutput', 'test_decoding', 'wal2json'") + 1;
  for(size_t len = 1; len < need + 4; len++) {
    char buf[64];
    memset(buf, 'x', sizeof(buf));
    int rc = pg_plugin_list_add("pgoutput, test_decoding", "wal2json", buf, len);
    cr_assert_eq(buf[len], 'x', "wrote past %zu bytes", len);
    cr_assert_eq(rc, len >= need ? 0 : -1, "%zu bytes", len);
  }
}
