/*
 * workdir.c: the tables and sequences pgcopydb's work dir lists, and which tables it finished
 * (workdir.h).
 */
#include "workdir.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "json.h"

/* snprintf that may cut on purpose (bounded messages and paths). */
static void fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t len, const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, len, f, ap);
  va_end(ap);
}

#define SCHEMA_JSON_MAX (256u << 20)

const char *wd_kind_name(enum wd_kind k)
{
  switch(k) {
  case WD_MARKERS:
    return "markers (pgcopydb 0.10-0.14)";
  case WD_SQLITE:
    return "sqlite (pgcopydb 0.15+)";
  case WD_NONE:
    break;
  }
  return "none";
}

static void rel_free(struct wd_rel *v, size_t n)
{
  for(size_t i = 0; i < n; i++) {
    free(v[i].schema);
    free(v[i].name);
  }
  free(v);
}

void wd_release(struct wd_catalog *w)
{
  rel_free(w->tables, w->ntables);
  rel_free(w->seqs, w->nseqs);
  w->tables = w->seqs = NULL;
  w->ntables = w->nseqs = 0;
}

static int rel_add(struct wd_rel **v, size_t *n, const char *schema, const char *name,
                   long long oid)
{
  struct wd_rel *nv = realloc(*v, (*n + 1) * sizeof(**v));
  if(!nv)
    return -1;
  *v = nv;
  struct wd_rel *r = &nv[*n];
  memset(r, 0, sizeof(*r));
  r->schema = strdup(schema);
  r->name = strdup(name);
  r->oid = oid;
  if(!r->schema || !r->name) {
    free(r->schema);
    free(r->name);
    return -1;
  }
  (*n)++;
  return 0;
}

static bool exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

/* ----- 0.10 to 0.14: schema.json and the run/ markers ------------------------------------- */

static char *slurp(const char *path, size_t max, char *why, size_t whylen)
{
  FILE *f = fopen(path, "r");
  if(!f) {
    fmt(why, whylen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while(buf) {
    if(len + 1 >= cap) {
      if(cap >= max) {
        fmt(why, whylen, "%s is larger than %zu bytes", path, max);
        free(buf);
        buf = NULL;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if(!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - 1 - len, f);
    len += n;
    if(n == 0) {
      if(ferror(f)) {
        fmt(why, whylen, "cannot read %s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
  }
  fclose(f);
  if(buf)
    buf[len] = '\0';
  else if(!why[0])
    fmt(why, whylen, "out of memory reading %s", path);
  return buf;
}

/* A done marker: present, and its end epoch (line 6) is not 0. A marker in another format
 * counts as done: only a marker that positively says "not finished" does not. */
static bool marker_done(const char *path)
{
  FILE *f = fopen(path, "r");
  if(!f)
    return false;
  char line[512];
  int n = 0;
  bool done = true;
  while(fgets(line, sizeof(line), f)) {
    if(++n == 6) {
      char *end;
      long long v = strtoll(line, &end, 10);
      if(end != line && (*end == '\n' || *end == '\0') && v == 0)
        done = false;
      break;
    }
  }
  fclose(f);
  return done;
}

static bool table_done_markers(const char *dir, long long oid, int parts)
{
  char path[4096];
  fmt(path, sizeof(path), "%s/run/tables/%lld.done", dir, oid);
  if(marker_done(path))
    return true;
  if(parts <= 0)
    return false;
  for(int i = 0; i < parts; i++) {
    fmt(path, sizeof(path), "%s/run/tables/%lld.%d.done", dir, oid, i);
    if(!marker_done(path))
      return false;
  }
  return true;
}

static int load_markers(struct wd_catalog *w, const char *dir, const char *path)
{
  w->kind = WD_MARKERS;
  char why[512] = "";
  char *text = slurp(path, SCHEMA_JSON_MAX, why, sizeof(why));
  if(!text) {
    fmt(w->reason, sizeof(w->reason), "%s", why);
    return 0;
  }
  cJSON *j = NULL;
  char err[200];
  if(json_parse_strict(text, strlen(text), &j, err, sizeof(err))) {
    fmt(w->reason, sizeof(w->reason), "%s/schema.json is not valid JSON: %s", dir, err);
    free(text);
    return 0;
  }
  free(text);
  const cJSON *tables = json_get(j, "tables"), *t;
  if(!cJSON_IsArray(tables)) {
    fmt(w->reason, sizeof(w->reason), "%s/schema.json has no \"tables\" list", dir);
    cJSON_Delete(j);
    return 0;
  }
  int rc = 0;
  cJSON_ArrayForEach(t, tables)
  {
    const char *schema = json_get_str(t, "schema"), *name = json_get_str(t, "name");
    const cJSON *oid = json_get(t, "oid");
    if(!schema || !name || !cJSON_IsNumber(oid)) {
      fmt(w->reason, sizeof(w->reason),
               "%s/schema.json lists a table without schema, name or oid", dir);
      wd_release(w);
      cJSON_Delete(j);
      return 0;
    }
    if(json_get_bool(t, "exclude-data", false)) {
      w->excluded_data++;
      continue;
    }
    int parts = 0;
    const cJSON *pl = json_get(t, "parts");
    if(cJSON_IsArray(pl) && cJSON_GetArraySize(pl) > 0) {
      const cJSON *total = json_get(cJSON_GetArrayItem(pl, 0), "total");
      parts = cJSON_IsNumber(total) ? total->valueint : cJSON_GetArraySize(pl);
    }
    if(rel_add(&w->tables, &w->ntables, schema, name, (long long)oid->valuedouble)) {
      rc = -1;
      break;
    }
    struct wd_rel *r = &w->tables[w->ntables - 1];
    r->parts = parts;
    r->done = table_done_markers(dir, r->oid, parts);
  }
  const cJSON *seqs = json_get(j, "sequences"), *s;
  if(!rc && cJSON_IsArray(seqs)) {
    w->have_seqs = true;
    cJSON_ArrayForEach(s, seqs)
    {
      const char *schema = json_get_str(s, "schema"), *name = json_get_str(s, "name");
      if(schema && name && rel_add(&w->seqs, &w->nseqs, schema, name, 0)) {
        rc = -1;
        break;
      }
    }
  }
  cJSON_Delete(j);
  if(!rc)
    w->readable = true;
  return rc;
}

/* ----- 0.15 and later: SQLite, loaded at run time ----------------------------------------- */

#define SQLITE_OK 0
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_OPEN_READONLY 0x00000001
#define SQLITE_OPEN_READWRITE 0x00000002
#define SQLITE_TRANSIENT ((void (*)(void *))-1)

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

struct sqlite_api {
  void *h;
  int (*open_v2)(const char *, sqlite3 **, int, const char *);
  int (*close)(sqlite3 *);
  int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
  int (*step)(sqlite3_stmt *);
  int (*finalize)(sqlite3_stmt *);
  const unsigned char *(*column_text)(sqlite3_stmt *, int);
  long long (*column_int64)(sqlite3_stmt *, int);
  const char *(*errmsg)(sqlite3 *);
  int (*busy_timeout)(sqlite3 *, int);
  int (*exec)(sqlite3 *, const char *, void *, void *, char **);
  int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
  int (*changes)(sqlite3 *);
};

static int sqlite_load(struct sqlite_api *a, char *why, size_t whylen)
{
  const char *lib = getenv("GODWIT_SQLITE_LIBRARY");
  if(!lib || !*lib)
    lib = "libsqlite3.so.0";
  memset(a, 0, sizeof(*a));
  a->h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if(!a->h) {
    fmt(why, whylen, "the runner cannot load %s (%s), so it cannot read pgcopydb's SQLite "
                          "catalog",
             lib, dlerror());
    return -1;
  }
  struct {
    void **fn;
    const char *name;
  } syms[] = {
    { (void **)&a->open_v2, "sqlite3_open_v2" },
    { (void **)&a->close, "sqlite3_close" },
    { (void **)&a->prepare_v2, "sqlite3_prepare_v2" },
    { (void **)&a->step, "sqlite3_step" },
    { (void **)&a->finalize, "sqlite3_finalize" },
    { (void **)&a->column_text, "sqlite3_column_text" },
    { (void **)&a->column_int64, "sqlite3_column_int64" },
    { (void **)&a->errmsg, "sqlite3_errmsg" },
    { (void **)&a->busy_timeout, "sqlite3_busy_timeout" },
    { (void **)&a->exec, "sqlite3_exec" },
    { (void **)&a->bind_text, "sqlite3_bind_text" },
    { (void **)&a->changes, "sqlite3_changes" },
  };
  for(size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    *syms[i].fn = dlsym(a->h, syms[i].name);
    if(!*syms[i].fn) {
      fmt(why, whylen, "%s has no %s", lib, syms[i].name);
      dlclose(a->h);
      a->h = NULL;
      return -1;
    }
  }
  return 0;
}

static const char *col(struct sqlite_api *a, sqlite3_stmt *st, int i)
{
  const unsigned char *t = a->column_text(st, i);
  return t ? (const char *)t : "";
}

static bool truthy(const char *s)
{
  return !strcmp(s, "1") || !strcasecmp(s, "t") || !strcasecmp(s, "true");
}

static const char *const sqlite_tables_sql =
  "SELECT t.oid, t.nspname, t.relname, coalesce(t.exclude_data, 0), "
  "       (SELECT count(*) FROM s_table_part p WHERE p.oid = t.oid), "
  "       CASE WHEN EXISTS (SELECT 1 FROM s_table_part p WHERE p.oid = t.oid) "
  "            THEN NOT EXISTS (SELECT 1 FROM s_table_part p WHERE p.oid = t.oid AND NOT EXISTS "
  "                   (SELECT 1 FROM summary s WHERE s.tableoid = p.oid "
  "                       AND s.partnum = p.partnum AND s.done_time_epoch > 0)) "
  "            ELSE EXISTS (SELECT 1 FROM summary s WHERE s.tableoid = t.oid "
  "                            AND s.done_time_epoch > 0) END "
  "  FROM s_table t ORDER BY t.nspname, t.relname";

static const char *const sqlite_seqs_sql =
  "SELECT DISTINCT nspname, relname FROM s_seq ORDER BY nspname, relname";

static int load_sqlite(struct wd_catalog *w, const char *path)
{
  w->kind = WD_SQLITE;
  struct sqlite_api a;
  if(sqlite_load(&a, w->reason, sizeof(w->reason)))
    return 0;
  sqlite3 *db = NULL;
  int rc = 0;
  if(a.open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fmt(w->reason, sizeof(w->reason), "cannot open %s: %s", path,
             db ? a.errmsg(db) : "out of memory");
    goto out;
  }
  a.busy_timeout(db, 5000);
  sqlite3_stmt *st = NULL;
  if(a.prepare_v2(db, sqlite_tables_sql, -1, &st, NULL) != SQLITE_OK) {
    fmt(w->reason, sizeof(w->reason), "cannot read the tables in %s: %s", path,
             a.errmsg(db));
    goto out;
  }
  int s;
  while((s = a.step(st)) == SQLITE_ROW) {
    if(truthy(col(&a, st, 3))) {
      w->excluded_data++;
      continue;
    }
    if(rel_add(&w->tables, &w->ntables, col(&a, st, 1), col(&a, st, 2), a.column_int64(st, 0))) {
      rc = -1;
      break;
    }
    struct wd_rel *r = &w->tables[w->ntables - 1];
    r->parts = (int)a.column_int64(st, 4);
    r->done = a.column_int64(st, 5) != 0;
  }
  a.finalize(st);
  if(!rc && s != SQLITE_DONE) {
    fmt(w->reason, sizeof(w->reason), "cannot read the tables in %s: %s", path,
             a.errmsg(db));
    wd_release(w);
    goto out;
  }
  if(!rc && a.prepare_v2(db, sqlite_seqs_sql, -1, &st, NULL) == SQLITE_OK) {
    w->have_seqs = true;
    while((s = a.step(st)) == SQLITE_ROW && !rc)
      rc = rel_add(&w->seqs, &w->nseqs, col(&a, st, 0), col(&a, st, 1), 0);
    if(s != SQLITE_DONE && !rc)
      w->have_seqs = false;
    a.finalize(st);
  }
  if(!rc)
    w->readable = true;
out:
  if(db)
    a.close(db);
  dlclose(a.h);
  return rc;
}

int wd_load(struct wd_catalog *w, const char *dir)
{
  memset(w, 0, sizeof(*w));
  if(!dir || !*dir) {
    w->no_dir = true;
    fmt(w->reason, sizeof(w->reason), "no work dir given");
    return 0;
  }
  struct stat st;
  if(stat(dir, &st) || !S_ISDIR(st.st_mode)) {
    w->no_dir = true;
    fmt(w->reason, sizeof(w->reason), "the work dir %s does not exist", dir);
    return 0;
  }
  char path[4096];
  fmt(path, sizeof(path), "%s/schema/source.db", dir);
  if(exists(path))
    return load_sqlite(w, path);
  fmt(path, sizeof(path), "%s/schema.json", dir);
  if(exists(path))
    return load_markers(w, dir, path);
  fmt(w->reason, sizeof(w->reason),
           "%s holds no pgcopydb catalog: neither schema/source.db (0.15+) nor schema.json "
           "(0.10-0.14)",
           dir);
  return 0;
}

/* ----- 0.15 and later: the sentinel row, read and set ------------------------------------ */

static bool lsn_unset(const char *s)
{
  return !*s || !strcmp(s, "0/0");
}

int wd_sentinel_endpos(const char *dir, const char *set, struct wd_sentinel *out)
{
  memset(out, 0, sizeof(*out));
  out->apply = -1;
  char path[4096];
  fmt(path, sizeof(path), "%s/schema/source.db", dir);
  struct sqlite_api a;
  if(sqlite_load(&a, out->why, sizeof(out->why)))
    return -2;
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int rc = -1;
  bool open_tx = false;
  if(a.open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    fmt(out->why, sizeof(out->why), "cannot open %s: %s", path, db ? a.errmsg(db) : "out of "
        "memory");
    goto out;
  }
  /* pgcopydb's processes write the catalog too (WAL journal): wait for them */
  a.busy_timeout(db, 10000);
  /* no writer between the read and the write: the end position is chosen once */
  if(a.exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    fmt(out->why, sizeof(out->why), "cannot lock %s: %s", path, a.errmsg(db));
    goto out;
  }
  open_tx = true;
  if(a.prepare_v2(db, "SELECT coalesce(endpos, ''), coalesce(apply, -1) FROM sentinel WHERE id "
                      "= 1", -1, &st, NULL) != SQLITE_OK) {
    fmt(out->why, sizeof(out->why), "cannot read the sentinel in %s: %s", path, a.errmsg(db));
    goto out;
  }
  if(a.step(st) != SQLITE_ROW) {
    fmt(out->why, sizeof(out->why), "%s holds no sentinel row: follow has not initialised it",
        path);
    goto out;
  }
  fmt(out->endpos, sizeof(out->endpos), "%s", col(&a, st, 0));
  const char *ap = col(&a, st, 1);
  out->apply = !strcmp(ap, "-1") ? -1 : truthy(ap);
  a.finalize(st);
  st = NULL;
  if(!lsn_unset(out->endpos)) {
    out->already = true;
    rc = 0;
    goto out;
  }
  out->endpos[0] = '\0';
  if(!set) {
    rc = 0;
    goto out;
  }
  if(a.prepare_v2(db, "UPDATE sentinel SET endpos = ? WHERE id = 1", -1, &st, NULL) != SQLITE_OK ||
     a.bind_text(st, 1, set, -1, SQLITE_TRANSIENT) != SQLITE_OK || a.step(st) != SQLITE_DONE ||
     a.changes(db) != 1) {
    fmt(out->why, sizeof(out->why), "cannot set the end position in %s: %s", path,
        a.errmsg(db));
    goto out;
  }
  a.finalize(st);
  st = NULL;
  if(a.exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    fmt(out->why, sizeof(out->why), "cannot commit the end position in %s: %s", path,
        a.errmsg(db));
    goto out;
  }
  open_tx = false;
  fmt(out->endpos, sizeof(out->endpos), "%s", set);
  rc = 0;
out:
  if(st)
    a.finalize(st);
  if(open_tx)
    a.exec(db, "ROLLBACK", NULL, NULL, NULL);
  if(db)
    a.close(db);
  dlclose(a.h);
  return rc;
}
