/*
 * test_migration_plugin.c: a live Migration whose source is configured as the PostgreSQL package
 * leaves it (15.20: output_plugin_libraries lists pgoutput and test_decoding, not wal2json, the
 * only plugin of Debian's pgcopydb 0.10), end to end: without spec.superuserSecretRef the
 * preflight fails at once and its condition carries the server's words, the current value and
 * the exact statements; with it, the preflight adds wal2json (PreflightRemediated) and the
 * worker's own slot decodes with it until the Migration has caught up. A source of the point
 * release before the setting (15.18, unpacked from Debian's archive) needs nothing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json.h"

#define ADMIN_PW "Plugin-Admin-5521"
#define ALLOW_WAL2JSON                                                                          \
  "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding', 'wal2json'"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(migration_plugin, .fini = stop, .timeout = 300);

#define LIVE_YAML                                                                             \
  E2E_MIGRATION_HEAD                                                                          \
  "  follow: {maxCatchupLag: 1Mi}\n"                                                          \
  "  cutover: {mode: Manual}\n"

/* Waits for CaughtUp, then checks the plugin of pgcopydb's own slot on the source. */
static void caught_up_with(const char *plugin)
{
  bool caught = e2e_wait_cond(&E, "shop", "CaughtUp", "True", "LagBelowThreshold", 150000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(caught, "%s", d);
  free(d);
  char *p = pgfx_query1(&E.src, NULL, "SELECT string_agg(plugin, ',') FROM "
                                      "pg_replication_slots WHERE NOT temporary");
  cr_assert_not_null(p);
  cr_assert_str_eq(p, plugin);
  free(p);
}

static void setup(void)
{
  e2e_start(&E, &(struct e2e_opts){ .logical = true, .plugins_default = true });
  char *v = pgfx_query1(&E.src, NULL, "SELECT current_setting('output_plugin_libraries', true)");
  cr_assert_not_null(v, "the installed PostgreSQL predates output_plugin_libraries (make deps)");
  cr_assert_str_eq(v, "pgoutput, test_decoding", "the package's default");
  free(v);
  e2e_load(&E, 2000);
}

Test(migration_plugin, a_refused_plugin_fails_the_preflight_with_the_statement)
{
  setup();
  e2e_apply(&E, LIVE_YAML, "shop");
  long long t0 = e2e_mono_ms();
  bool failed = e2e_wait_cond(&E, "shop", "Failed", "True", "PreflightFailed", 120000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(failed, "%s", d);
  cr_log_info("Failed %lld ms after the apply", e2e_mono_ms() - t0);
  const char *msg = e2e_cond_message(&E, "shop", "Validated");
  cr_assert(strstr(msg, "source.outputPlugin: the source server refuses wal2json as an output "
                        "plugin: library \"wal2json\" may not be used as an output plugin (HINT: "
                        "If it is safe for all REPLICATION users to use this library as an "
                        "output plugin, add it to \"output_plugin_libraries\" and reload the "
                        "server configuration.)"),
            "the server's words and its hint: %s", msg);
  cr_assert(strstr(msg, "output_plugin_libraries"), "%s", msg);
  cr_assert(strstr(msg, "pgcopydb 0.10-1 decodes with wal2json only"), "%s", msg);
  cr_assert(strstr(msg, "set spec.superuserSecretRef so the preflight grants it, or as a "
                        "superuser on the source: " ALLOW_WAL2JSON "; SELECT pg_reload_conf()"),
            "the exact statements: %s", msg);
  cr_assert_null(strstr(msg, "above"), "%s", msg);
  char *jobs = e2e_jobs(&E, "shop");
  cr_assert_null(strstr(jobs, "-worker-"), "no worker:\n%s", jobs);
  free(jobs);
  free(d);
}

Test(migration_plugin, the_superuser_allows_wal2json_and_the_worker_decodes_with_it)
{
  setup();
  /* one superuser with the same credentials on both servers, as one Secret holds it */
  pgfx_create_role(&E.src, "godwit_admin", ADMIN_PW, "LOGIN SUPERUSER");
  pgfx_create_role(&E.dst, "godwit_admin", ADMIN_PW, "LOGIN SUPERUSER");
  char uri[256];
  e2e_secret(&E, "admin", pgfx_uri(&E.dst, uri, sizeof(uri), "godwit_admin", ADMIN_PW, "shop"));
  pgfx_exec(&E.src, "shop", "GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO src_app");
  e2e_apply(&E, LIVE_YAML "  superuserSecretRef: {name: admin}\n", "shop");
  bool remediated = e2e_wait_event(&E, "shop", "PreflightRemediated", 120000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(remediated, "%s", d);
  free(d);
  const char *ev = e2e_event_message(&E, "shop", "PreflightRemediated");
  /* one Event for the one tier that lacked something, Normal */
  cr_assert_eq(e2e_event_count(&E, "shop", "PreflightRemediated"), 1);
  char *all = e2e_events(&E, "shop");
  cr_assert(strstr(all, "Normal PreflightRemediated (x1)"), "%s", all);
  free(all);
  cr_assert(strstr(ev, "granted the follow tier through spec.superuserSecretRef: " ALLOW_WAL2JSON
                       " (source); SELECT pg_reload_conf() (source)"),
            "%s", ev);
  cr_assert(e2e_wait_cond(&E, "shop", "Validated", "True", "SpecValid", 10000));
  cr_assert(strstr(e2e_cond_message(&E, "shop", "Validated"),
                   "; changes are decoded with wal2json"),
            "%s", e2e_cond_message(&E, "shop", "Validated"));
  cJSON *m = e2e_get(&E, "shop");
  cr_assert_str_eq(json_get_str(m, "status.outputPlugin"), "wal2json");
  cJSON_Delete(m);
  /* pgcopydb's own slot and walsender decode with it, until the follow has caught up */
  caught_up_with("wal2json");
  char *v = pgfx_query1(&E.src, NULL, "SHOW output_plugin_libraries");
  cr_assert_str_eq(v, "pgoutput, test_decoding, wal2json");
  free(v);
}

Test(migration_plugin, a_server_without_the_setting_needs_nothing)
{
  char bin[512];
  pgfx_bin_without_plugin_setting(bin, sizeof(bin));
  e2e_start(&E, &(struct e2e_opts){ .logical = true, .src_bin = bin });
  char *v = pgfx_query1(&E.src, NULL, "SELECT current_setting('output_plugin_libraries', true)");
  cr_assert_null(v, "this server has the setting: %s", v);
  v = pgfx_query1(&E.src, NULL, "SHOW server_version");
  cr_log_info("the source runs PostgreSQL %s", v);
  free(v);
  e2e_load(&E, 2000);
  e2e_apply(&E, LIVE_YAML, "shop");
  caught_up_with("wal2json");
  cr_assert_eq(e2e_event_count(&E, "shop", "PreflightRemediated"), 0);
  cJSON *m = e2e_get(&E, "shop");
  cr_assert_str_eq(json_get_str(m, "status.outputPlugin"), "wal2json");
  cJSON_Delete(m);
}
