/*
 * catalog.c: `godwit-runner catalog --dir DIR`: pgcopydb's own progress, read from the work dir
 * after the worker exited (workdir.h), for a clone-only Migration whose worker exited 0.
 *
 * Verdicts: every table the copy covered done: CloneSucceeded (exit 0); a table not done:
 * CloneIncomplete (exit 1, the tables named); no catalog the runner can read (no schema.json nor
 * schema/source.db, or no libsqlite3 for a 0.15+ catalog): "unreadable", CloneSucceeded with the
 * reason (exit 0): the seed's "where it could be read". A missing work dir is a failure (exit 1):
 * the volume is not mounted, nothing was read. No database connection.
 */
#include <stdio.h>
#include <string.h>

#include "step.h"
#include "workdir.h"

static const struct cfg_opt catalog_opts[] = {
  { "dir", "PGCOPYDB_DIR", CFG_STR, NULL, 0, 0, ST_OFF(dir), "pgcopydb's work dir (the PVC)" },
  ST_COMMON_OPTS,
  { NULL },
};

struct catalog_out {
  struct wd_catalog w;
  size_t done;
  const char *verdict;
};

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                    bool *cut, void *arg)
{
  const struct catalog_out *o = arg;
  gw_rc rc = GW_OK;
  if(o->verdict)
    rc = strbuf_addf(sb, ",\"verdict\":\"%s\"", o->verdict);
  if(!rc)
    rc = strbuf_addf(sb, ",\"catalog\":\"%s\"",
                     o->w.readable ? (o->w.kind == WD_SQLITE ? "sqlite" : "markers")
                                   : "unreadable");
  if(!rc && !o->w.readable) {
    rc = st_json_field(c, sb, "reason", o->w.reason, l->str, cut);
    if(!rc)
      rc = strbuf_adds(sb, ",\"tablesTotal\":null,\"tablesDone\":null,\"notDone\":[]");
    return rc;
  }
  if(!rc)
    rc = strbuf_addf(sb, ",\"tablesTotal\":%zu,\"tablesDone\":%zu,\"excludedData\":%zu",
                     o->w.ntables, o->done, o->w.excluded_data);
  if(!rc)
    rc = strbuf_adds(sb, ",\"notDone\":[");
  size_t k = 0, omitted = 0;
  for(size_t i = 0; i < o->w.ntables && !rc; i++) {
    if(o->w.tables[i].done)
      continue;
    if(k >= l->list) {
      omitted++;
      continue;
    }
    char name[300];
    st_qualname(name, sizeof(name), o->w.tables[i].schema, o->w.tables[i].name);
    if(k++)
      rc = strbuf_addc(sb, ',');
    if(!rc)
      rc = st_json_str(c, sb, name, l->str, cut);
  }
  if(!rc)
    rc = strbuf_addf(sb, "],\"notDoneOmitted\":%zu", omitted);
  return rc;
}

int catalog_main(int argc, char **argv)
{
  struct st_ctx c;
  struct catalog_out o = { 0 };
  int rc = st_init(&c, "catalog", "CatalogReport", catalog_opts,
                   "Reads pgcopydb's own progress from the work dir after the worker exited:\n"
                   "the tables the copy covered and which it finished. No credentials needed.\n"
                   "Exit: 0 every table done (or no catalog readable: see \"catalog\"), 1 tables\n"
                   "not done or no work dir, 2 never.",
                   argc, argv);
  if(rc == 1)
    return RUNNER_EXIT_PASSED;
  if(rc < 0)
    return st_finish(&c, NULL, NULL);
  if(!c.o.dir) {
    st_fail(&c, false, "config", "--dir is required (pgcopydb's work dir)");
    st_summary(&c, "--dir is required");
    return st_finish(&c, NULL, NULL);
  }
  if(wd_load(&o.w, c.o.dir)) {
    st_fail(&c, false, "catalog.read", "out of memory reading %s", c.o.dir);
    st_summary(&c, "out of memory");
    wd_release(&o.w);
    return st_finish(&c, NULL, NULL);
  }
  if(!o.w.readable && !o.w.no_dir) {
    st_warn(&c, "catalog.read", "pgcopydb's catalog is unreadable: %s; nothing counted", o.w.reason);
    o.verdict = "CloneSucceeded";
    st_summary(&c, "catalog unreadable (%s): not counted", o.w.reason);
  } else if(!o.w.readable) {
    st_fail(&c, false, "catalog.read", "%s: is the work volume mounted?", o.w.reason);
    st_summary(&c, "%s", o.w.reason);
  } else {
    st_pass(&c, "catalog.read", "%s: %zu tables in the copy (%zu more with their data excluded)",
            wd_kind_name(o.w.kind), o.w.ntables, o.w.excluded_data);
    size_t listed = 0;
    char first[600] = "";
    for(size_t i = 0; i < o.w.ntables; i++) {
      char name[300];
      st_qualname(name, sizeof(name), o.w.tables[i].schema, o.w.tables[i].name);
      if(o.w.tables[i].done) {
        o.done++;
        continue;
      }
      st_print(&c, "FAIL catalog.table: %s (oid %lld) is not done%s", name, o.w.tables[i].oid,
               o.w.tables[i].parts ? " (split table: a part has no done marker)" : "");
      if(listed++ < 5)
        st_fmt(first + strlen(first), sizeof(first) - strlen(first), "%s%s",
                 listed > 1 ? ", " : "", name);
    }
    if(o.done == o.w.ntables) {
      o.verdict = "CloneSucceeded";
      st_pass(&c, "catalog.tables", "%zu of %zu tables done", o.done, o.w.ntables);
      st_summary(&c, "%zu of %zu tables done", o.done, o.w.ntables);
    } else {
      o.verdict = "CloneIncomplete";
      st_escalate(&c, ST_FAILED);
      st_summary(&c, "%zu of %zu tables done; not done: %s%s", o.done,
               o.w.ntables, first, listed > 5 ? ", ..." : "");
    }
  }
  int code = st_finish(&c, render, &o);
  wd_release(&o.w);
  st_release(&c);
  return code;
}
