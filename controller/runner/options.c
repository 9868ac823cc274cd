/*
 * options.c: the preflight's flags, from one cfg table. The repeatable lists (extensions,
 * schemas, tables) are taken out of argv first: a Migration may list more of them than
 * CFG_MAX_LIST, and cfg_parse then sees only the scalar flags.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

#define OFF(f) offsetof(struct pf_opts, f)
/* The list options are parsed before cfg_parse (a Migration may list more than CFG_MAX_LIST
 * extensions or schemas); their rows are here for --help and point at a scratch array. */
static const struct cfg_opt pf_opt_table[] = {
  { "follow", NULL, CFG_BOOL, NULL, 0, 0, OFF(follow),
    "live migration: also check the follow prerequisites" },
  { "extension", NULL, CFG_STRLIST, NULL, 0, 0, OFF(unused_list),
    "an extension the clone creates on the target (repeatable)" },
  { "owner-after-restore", NULL, CFG_STR, NULL, 0, 0, OFF(owner_after_restore),
    "the role that receives the restored objects (spec.clone.ownerAfterRestore)" },
  { "include-schema", NULL, CFG_STRLIST, NULL, 0, 0, OFF(unused_list),
    "a schema in scope (repeatable; default: every non-system schema of the source)" },
  { "exclude-schema", NULL, CFG_STRLIST, NULL, 0, 0, OFF(unused_list),
    "a schema out of scope (repeatable)" },
  { "include-table", NULL, CFG_STRLIST, NULL, 0, 0, OFF(unused_list),
    "schema.table: only these tables are in scope (repeatable)" },
  { "exclude-table", NULL, CFG_STRLIST, NULL, 0, 0, OFF(unused_list),
    "schema.table out of scope (repeatable)" },
  { "dry-run", NULL, CFG_BOOL, NULL, 0, 0, OFF(dry_run),
    "list the grants the superuser would apply, apply nothing" },
  { "report", "GODWIT_REPORT", CFG_STR, "/dev/termination-log", 0, 0, OFF(report),
    "where the JSON report goes (- for stdout)" },
  { "connect-timeout", NULL, CFG_INT, "10", 1, 300, OFF(connect_timeout),
    "seconds per connection attempt" },
  { "attempts", NULL, CFG_INT, "5", 1, 20, OFF(attempts),
    "connection attempts before a transient failure" },
  { "retry-delay-ms", NULL, CFG_INT, "1000", 0, 60000, OFF(retry_delay_ms),
    "delay before the second attempt, doubling after" },
  { "slot-name", NULL, CFG_STR, "pgcopydb", 0, 0, OFF(slot_name),
    "the replication slot pgcopydb will create on the source" },
  { "output-plugin", NULL, CFG_STR, NULL, 0, 0, OFF(plugin),
    "the only logical decoding plugin to try (default: the best one pgcopydb's version and the "
    "source server allow, reported as outputPlugin)" },
  { "pgcopydb-version", NULL, CFG_STR, NULL, 0, 0, OFF(pgcopydb_version),
    "the worker's pgcopydb version (default: ask pgcopydb on PATH)" },
  { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, OFF(log_level),
    "debug, info, warn or error (stderr)" },
  { NULL },
};

static const struct {
  const char *name;
  size_t off;
} pf_list_opts[] = {
  { "extension", OFF(extensions) },         { "include-schema", OFF(include_schemas) },
  { "exclude-schema", OFF(exclude_schemas) }, { "include-table", OFF(include_tables) },
  { "exclude-table", OFF(exclude_tables) },
};

static int take_lists(struct pf_opts *o, int argc, char **argv, char **rest, int *nrest, char *err,
                      size_t errlen)
{
  *nrest = 0;
  rest[(*nrest)++] = argv[0];
  for(int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool taken = false;
    for(size_t k = 0; k < sizeof(pf_list_opts) / sizeof(pf_list_opts[0]) && !taken; k++) {
      size_t len = strlen(pf_list_opts[k].name);
      if(strncmp(a, "--", 2) || strncmp(a + 2, pf_list_opts[k].name, len) ||
         (a[2 + len] != '\0' && a[2 + len] != '='))
        continue;
      const char *v = a[2 + len] == '=' ? a + 3 + len : (i + 1 < argc ? argv[++i] : NULL);
      if(!v || !*v) {
        snprintf(err, errlen, "--%s needs a value", pf_list_opts[k].name);
        return -1;
      }
      struct pf_list *l = (struct pf_list *)((char *)o + pf_list_opts[k].off);
      const char **nv = realloc(l->v, (l->n + 1) * sizeof(char *));
      if(!nv) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      l->v = nv;
      l->v[l->n++] = v;
      taken = true;
    }
    if(!taken)
      rest[(*nrest)++] = argv[i];
  }
  rest[*nrest] = NULL;
  return 0;
}

void pf_opts_release(struct pf_opts *o)
{
  for(size_t k = 0; k < sizeof(pf_list_opts) / sizeof(pf_list_opts[0]); k++)
    free(((struct pf_list *)((char *)o + pf_list_opts[k].off))->v);
}

int pf_opts_parse(struct pf_opts *o, int argc, char **argv, char *err, size_t errlen)
{
  char **rest = calloc((size_t)argc + 1, sizeof(char *));
  int nrest = 0;
  if(!rest) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  gw_rc rc = take_lists(o, argc, argv, rest, &nrest, err, errlen)
               ? GW_EINVAL
               : cfg_parse(pf_opt_table, o, nrest, rest, err, errlen);
  free(rest);
  if(rc == GW_ENOTFOUND) {
    cfg_usage(stdout, "godwit-runner preflight",
              "Checks that a Migration can run: connectivity, the clone tier on the target, the\n"
              "follow tier (--follow), and grants what is missing through GODWIT_SUPERUSER_URI.\n"
              "Credentials: GODWIT_SOURCE_URI, GODWIT_TARGET_URI, GODWIT_SUPERUSER_URI.\n"
              "Exit: 0 passed, 1 failed, 2 transient.",
              pf_opt_table);
    return 1;
  }
  return rc ? -1 : 0;
}
