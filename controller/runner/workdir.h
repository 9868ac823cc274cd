/*
 * workdir.h: what pgcopydb's work dir says about a copy, read only after the worker exited
 * (reading a catalog pgcopydb is writing can kill its workers).
 *
 * pgcopydb 0.10 to 0.14 (observed with 0.10, docs/dev/pgcopydb-observed.md):
 *   DIR/schema.json   "tables": [{oid, schema, name, exclude-data, parts: [{number, total}]}],
 *                     "sequences": [{schema, name}]
 *   DIR/run/tables/<oid>.done          a table copied in one piece
 *   DIR/run/tables/<oid>.<n>.done      part n (0-based) of a table split in parts[].total
 * A done marker holds pid, oid, schema, name, start epoch, end epoch, duration, command, one
 * per line; a table counts as done when every marker it needs is there with an end epoch.
 *
 * pgcopydb 0.15 and later: SQLite catalogs DIR/schema/source.db: s_table(oid, nspname, relname,
 * exclude_data), s_table_part(oid, partnum), summary(tableoid, partnum, done_time_epoch), s_seq.
 * A table is done when summary holds a finished row for it (every part, for a split table).
 * libsqlite3 is loaded at run time (dlopen "libsqlite3.so.0", or $GODWIT_SQLITE_LIBRARY): an
 * image that runs pgcopydb 0.15+ ships it; without it the catalog is "unreadable", never
 * guessed. The catalog is only read, but for the sentinel's end position (below).
 */
#ifndef GW_RUNNER_WORKDIR_H
#define GW_RUNNER_WORKDIR_H

#include <stdbool.h>
#include <stddef.h>

enum wd_kind { WD_NONE, WD_MARKERS, WD_SQLITE };

struct wd_rel {
  char *schema, *name;
  long long oid;
  bool done;
  int parts; /* 0: not split */
};

struct wd_catalog {
  enum wd_kind kind;  /* which layout was found */
  bool readable;      /* tables (and done flags) were read */
  bool no_dir;        /* the work dir itself is missing (not mounted) */
  char reason[512];   /* why not, when !readable */
  struct wd_rel *tables;
  size_t ntables;
  size_t excluded_data; /* tables whose data the filters left out (not counted) */
  struct wd_rel *seqs;
  size_t nseqs;
  bool have_seqs;
};

/* Reads dir. Returns 0 (readable or not: see w->readable and w->reason), -1 when out of
 * memory. */
int wd_load(struct wd_catalog *w, const char *dir);
void wd_release(struct wd_catalog *w);
/* "markers (pgcopydb 0.10-0.14)", "sqlite (pgcopydb 0.15+)", "none". */
const char *wd_kind_name(enum wd_kind k);

/* pgcopydb 0.15+ (DIR/schema/source.db): the sentinel row's end position, the one pgcopydb's
 * `stream sentinel set endpos` writes, read and set here in one SQLite transaction, so that the
 * runner image needs no pgcopydb of the worker's version. When the row holds no end position
 * (NULL or 0/0) and set is not NULL, set (an LSN, "X/X") is written. 0 with out->endpos (the
 * end position now, "" when none) and out->already (it was set before); -1 with out->why, -2
 * when libsqlite3 cannot be loaded. */
struct wd_sentinel {
  char endpos[32];
  bool already;
  int apply; /* -1 unknown */
  char why[512];
};
int wd_sentinel_endpos(const char *dir, const char *set, struct wd_sentinel *out);

#endif
