/*
 * options.c: the preflight's flags, one cfg table parsed by st_init (the common flags are
 * ST_COMMON_OPTS). The repeatable lists (extensions, schemas, tables) are taken out of argv
 * first: a Migration may list more of them than CFG_MAX_LIST, and cfg_parse then sees only the
 * scalar flags.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

_Static_assert(offsetof(struct pf_ctx, st) == 0, "ST_COMMON_OPTS offsets are into st");

#define OFF(f) offsetof(struct pf_ctx, o.f)
#define SUMMARY                                                                                  \
  "Checks that a Migration can run: connectivity, the clone tier on the target, the\n"          \
  "follow tier (--follow), and grants what is missing through GODWIT_SUPERUSER_URI.\n"          \
  "Credentials: GODWIT_SOURCE_URI, GODWIT_TARGET_URI, GODWIT_SUPERUSER_URI.\n"                  \
  "Exit: 0 passed, 1 failed, 2 transient."
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
  { "slot-name", NULL, CFG_STR, "pgcopydb", 0, 0, ST_OFF(slot_name),
    "the replication slot pgcopydb will create on the source" },
  { "output-plugin", NULL, CFG_STR, NULL, 0, 0, ST_OFF(plugin),
    "the only logical decoding plugin to try (default: the best one pgcopydb's version and the "
    "source server allow, reported as outputPlugin)" },
  { "pgcopydb-version", NULL, CFG_STR, NULL, 0, 0, OFF(pgcopydb_version),
    "the worker's pgcopydb version (default: ask pgcopydb on PATH)" },
  ST_COMMON_OPTS,
  { NULL },
};

#define LOFF(f) offsetof(struct pf_opts, f)
static const struct {
  const char *name;
  size_t off; /* into struct pf_opts */
} pf_list_opts[] = {
  { "extension", LOFF(extensions) },           { "include-schema", LOFF(include_schemas) },
  { "exclude-schema", LOFF(exclude_schemas) }, { "include-table", LOFF(include_tables) },
  { "exclude-table", LOFF(exclude_tables) },
};

/* Moves the list flags out of argv into o and the rest into rest (NULL-terminated). The first
 * bad list flag is described in err (the rest are still taken, so --report is honoured). */
static void take_lists(struct pf_opts *o, int argc, char **argv, char **rest, int *nrest,
                       char *err, size_t errlen)
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
      taken = true;
      const char *v = a[2 + len] == '=' ? a + 3 + len : (i + 1 < argc ? argv[++i] : NULL);
      struct pf_list *l = (struct pf_list *)((char *)o + pf_list_opts[k].off);
      const char **nv = v && *v ? realloc(l->v, (l->n + 1) * sizeof(char *)) : NULL;
      if(!nv) {
        if(!*err)
          snprintf(err, errlen, v && *v ? "out of memory" : "--%s needs a value",
                   pf_list_opts[k].name);
        continue;
      }
      l->v = nv;
      l->v[l->n++] = v;
    }
    if(!taken)
      rest[(*nrest)++] = argv[i];
  }
  rest[*nrest] = NULL;
}

void pf_opts_release(struct pf_opts *o)
{
  for(size_t k = 0; k < sizeof(pf_list_opts) / sizeof(pf_list_opts[0]); k++)
    free(((struct pf_list *)((char *)o + pf_list_opts[k].off))->v);
}

int pf_opts_parse(struct pf_ctx *c, int argc, char **argv)
{
  char **rest = calloc((size_t)argc + 1, sizeof(char *));
  int nrest = 0;
  char err[256] = "";
  if(rest)
    take_lists(&c->o, argc, argv, rest, &nrest, err, sizeof(err)); /* st_init clears only st */
  else
    snprintf(err, sizeof(err), "out of memory"); /* still parsed, for --report and --help */
  int rc = st_init(&c->st, "preflight", "PreflightReport", pf_opt_table, SUMMARY,
                   rest ? nrest : argc, rest ? rest : argv);
  free(rest);
  if(!rc && *err) {
    st_fail(&c->st, false, "config", "%s (see godwit-runner preflight --help)", err);
    st_summary(&c->st, "bad arguments: %s", err);
    rc = -1;
  }
  return rc;
}
