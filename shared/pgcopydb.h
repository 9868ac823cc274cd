/*
 * pgcopydb.h: which logical decoding output plugin a live migration decodes with, from what the
 * pgcopydb version can use and what the source server allows. The runner's preflight chooses
 * with it (and tries the slot for real); the controller renders the worker's --plugin with it.
 *
 * Plugins a pgcopydb version decodes with, in the order godwit prefers them:
 *   unknown version          wal2json          (every version knows it; see pgcopydb_plugin_flag)
 *   before 0.12              wal2json          (0.10 has nothing else and no --plugin)
 *   0.12 and newer           test_decoding, wal2json
 * test_decoding ships with PostgreSQL itself and every server that has output_plugin_libraries
 * lists it by default, so it is preferred over asking for a configuration change. pgoutput
 * (pgcopydb 0.18's default) is not offered: it needs publications, which the preflight does
 * not check (docs/api/migration.md, "Output plugin").
 *
 * output_plugin_libraries (new in the 2026 point releases of PostgreSQL 14 to 18, 15.20 among
 * them; 15.18 lacks it): a list of the libraries that may be named as output plugins; a NULL
 * setting = the server has no such setting and allows every installed plugin. It is a list setting: ALTER SYSTEM SET takes
 * one literal per element ('pgoutput', 'test_decoding', 'wal2json'); a single literal
 * 'pgoutput, test_decoding, wal2json' would be stored as one quoted element naming no library.
 */
#ifndef GW_PGCOPYDB_H
#define GW_PGCOPYDB_H

#include <stdbool.h>
#include <stddef.h>

#define PGCOPYDB_MAX_PLUGINS 2

/* The file the cutover Job leaves in pgcopydb's --dir once the end position is set (pgcopydb
 * 0.10 to 0.14): the live worker's shell then wakes pgcopydb's 10 s sleeps with SIGHUP
 * (controller/runner/cutover.c writes it, controller/migration/worker.c waits for it). */
#define PGCOPYDB_DRAIN_WAKE_FILE "godwit-drain-wake"

/* A pgcopydb version; known false when it could not be learned. */
struct pgcopydb_version {
  bool known;
  int major, minor;
};

/* The plugins v decodes with, best first, into out; returns how many (at least 1). */
size_t pgcopydb_plugins(const struct pgcopydb_version *v, const char *out[PGCOPYDB_MAX_PLUGINS]);

/* Whether the worker's command line names the plugin with --plugin: every version but a known
 * one before 0.12 (0.10 ignores unknown options with a warning and decodes with wal2json, the
 * only plugin an unknown version is given). */
bool pgcopydb_plugin_flag(const struct pgcopydb_version *v);

/* Whether plugin is one of the versions' plugins. */
bool pgcopydb_plugin_supported(const struct pgcopydb_version *v, const char *plugin);

/* Whether output_plugin_libraries (NULL: no such setting) allows plugin. Elements are compared
 * after trimming blanks and double quotes, as the server splits the list. */
bool pg_plugin_allowed(const char *setting, const char *plugin);

/* The right-hand side of ALTER SYSTEM SET output_plugin_libraries = ... that keeps the current
 * elements and adds plugin: "'pgoutput', 'test_decoding', 'wal2json'" (single quotes doubled).
 * Returns 0, or -1 when out is too small. */
int pg_plugin_list_add(const char *setting, const char *plugin, char *out, size_t len);

#endif
