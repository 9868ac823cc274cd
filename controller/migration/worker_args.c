/* The worker's command line, rendered for the pgcopydb version in use: never a flag the version
 * does not know (0.10 ignores unknown flags with a warning and goes on), see
 * docs/dev/pgcopydb-observed.md. Pure functions (tests/cluster/test_migration_unit.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mig.h"
#include "pgcopydb.h"
#include "strbuf.h"

void mig_version_parse(const char *s, struct pgc_version *v)
{
  memset(v, 0, sizeof(*v));
  if(!s || !*s)
    return;
  snprintf(v->text, sizeof(v->text), "%s", s);
  const char *p = s;
  while(*p && (*p < '0' || *p > '9'))
    p++; /* "v0.18", "pgcopydb 0.10-1" */
  int major, minor;
  if(sscanf(p, "%d.%d", &major, &minor) == 2 && major >= 0 && minor >= 0) {
    v->known = true;
    v->major = major;
    v->minor = minor;
  }
}

bool mig_version_at_least(const struct pgc_version *v, int major, int minor)
{
  /* An unknown version gets the flags every version knows (those of 0.10). */
  return v->known && (v->major > major || (v->major == major && v->minor >= minor));
}

static void addn(cJSON *a, const char *flag, long long n)
{
  char buf[32];
  snprintf(buf, sizeof(buf), "%lld", n);
  mig_arg(a, flag);
  mig_arg(a, buf);
}

static long long spec_int(const cJSON *spec, const char *path, long long dflt)
{
  const cJSON *v = json_get(spec, path);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

static bool has_items(const cJSON *spec, const char *path)
{
  return cJSON_GetArraySize(json_get(spec, path)) > 0;
}

cJSON *mig_worker_args(const cJSON *spec, const struct pgc_version *v, int attempt, bool restart,
                       const char *slot, const char *plugin)
{
  bool live = cJSON_IsObject(json_get(spec, "follow"));
  cJSON *a = cJSON_CreateArray();
  if(!a)
    return NULL;
  mig_arg(a, "clone");
  if(live) {
    mig_arg(a, "--follow");
    if(slot && *slot) {
      mig_arg(a, "--slot-name");
      mig_arg(a, slot);
      mig_arg(a, "--origin");
      mig_arg(a, slot);
    }
    /* the plugin the preflight tried; 0.10 has wal2json only (and no --plugin), later
     * versions default to another plugin than the preflight may have chosen */
    const struct pgcopydb_version pv = { v->known, v->major, v->minor };
    if(pgcopydb_plugin_flag(&pv)) {
      mig_arg(a, "--plugin");
      mig_arg(a, plugin && *plugin ? plugin : "wal2json");
    }
  }
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  addn(a, "--table-jobs", spec_int(spec, "clone.tableJobs", 4));
  addn(a, "--index-jobs", spec_int(spec, "clone.indexJobs", 4));
  /* the objects belong to the migration role (ownerAfterRestore hands them over), and the
   * source's ACLs name roles the target usually lacks */
  mig_arg(a, "--no-owner");
  mig_arg(a, "--no-acl");
  if(!has_items(spec, "clone.extensions"))
    mig_arg(a, "--skip-extensions");
  if(cJSON_IsTrue(json_get(spec, "clone.skipLargeObjects")))
    mig_arg(a, "--skip-large-objects");
  if(cJSON_IsTrue(json_get(spec, "clone.skipVacuum")) && mig_version_at_least(v, 0, 12))
    mig_arg(a, "--skip-vacuum");
  char *ini = mig_filters_ini_run(spec, v, live, restart || attempt > 1);
  if(ini && *ini) {
    mig_arg(a, "--filters");
    mig_arg(a, MIG_FILTERS_FILE);
  }
  free(ini);
  if(restart) {
    mig_arg(a, "--restart");
    mig_arg(a, "--drop-if-exists");
  } else if(attempt > 1) {
    /* the snapshot died with the attempt that exported it */
    mig_arg(a, "--resume");
    mig_arg(a, "--not-consistent");
  }
  return a;
}

static bool listed_str(const cJSON *list, const char *s)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
    if(cJSON_IsString(it) && !strcmp(it->valuestring, s))
      return true;
  return false;
}

static gw_rc section(struct strbuf *sb, const char *name, const cJSON *list, const char *extra)
{
  if(cJSON_GetArraySize(list) == 0 && !extra)
    return GW_OK;
  gw_rc rc = strbuf_addf(sb, "%s[%s]\n", sb->len ? "\n" : "", name);
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    if(cJSON_IsString(it) && !rc)
      rc = strbuf_addf(sb, "%s\n", it->valuestring);
  }
  if(extra && !rc)
    rc = strbuf_addf(sb, "%s\n", extra);
  return rc;
}

char *mig_filters_ini(const cJSON *spec, const struct pgc_version *v, bool live)
{
  return mig_filters_ini_run(spec, v, live, false);
}

char *mig_filters_ini_run(const cJSON *spec, const struct pgc_version *v, bool live, bool used)
{
  /* include-only-schema needs 0.13: the preflight fails older versions instead. No section of
   * our own on a first run: with any filter at all, 0.10 resets only the sequences owned by a
   * table column (observed), so pgcopydb's sentinel schema is not excluded there; the preflight
   * refuses a source where one is left over (source.sentinel). A live run on a used work dir
   * (--resume, --restart) with pgcopydb < 0.15 lists the source's tables again, now with the
   * sentinel table its first run created on the source after the snapshot, and its COPY fails
   * on the target (schema "pgcopydb" does not exist): exclude that schema then (verify syncs
   * the sequences of a live migration). 0.15+ keeps the table list of the first run in its
   * catalogs and refuses a resume whose filters changed. */
  const cJSON *f = json_get(spec, "clone.filters");
  const char *sentinel = live && used && !mig_version_at_least(v, 0, 15) &&
                             cJSON_GetArraySize(json_get(f, "includeOnlyTables")) == 0 &&
                             !listed_str(json_get(f, "excludeSchemas"), "pgcopydb")
                           ? "pgcopydb"
                           : NULL;
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = section(&sb, "include-only-schema", json_get(f, "includeOnlySchemas"), NULL);
  if(!rc)
    rc = section(&sb, "exclude-schema", json_get(f, "excludeSchemas"), sentinel);
  if(!rc)
    rc = section(&sb, "include-only-table", json_get(f, "includeOnlyTables"), NULL);
  if(!rc)
    rc = section(&sb, "exclude-table", json_get(f, "excludeTables"), NULL);
  if(!rc)
    rc = section(&sb, "exclude-index", json_get(f, "excludeIndexes"), NULL);
  if(!rc)
    rc = section(&sb, "exclude-table-data", json_get(f, "excludeTableData"), NULL);
  char *out = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return out;
}
