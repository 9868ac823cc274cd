/*
 * schema_diff.c: the plan engine's diff (schema.h): the statements that take the model `have`
 * (the target) to `want` (the desired SQL, materialised), in this order:
 *
 *   1. enum values added (ALTER TYPE ... ADD VALUE, each committed on its own: own_txn)
 *   2. drops of what stands in the way: views (dependents first), foreign keys, other
 *      constraints, indexes, then columns and tables (schema_table.c)
 *   3. creates: schemas, extensions, enum types, sequences, tables and columns (and the
 *      changes of columns), sequence ownership, constraints, indexes, foreign keys, views
 *      (dependencies first)
 *   4. comments
 *   5. drops of what nothing uses any more: sequences, enum types, extensions, schemas
 *
 * Which objects go is schema_mark.c's (and schema_table.c's for tables and columns). An
 * object is created when `want` has it and `have` does not, or has it but it goes.
 * Renames are not detected: a renamed object is a drop and a create (docs/dev/ptah-plan-engine.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

/* ----- helpers ----------------------------------------------------------------------------- */

#define KN(k) sm_kind_name(k)

/* Created by this plan: in want, and not in have or going. */
static bool creates(const struct sd_ctx *d, enum sm_kind k, const char *key)
{
  return sm_find(d->want, k, key) && (!sm_find(d->have, k, key) || sd_goes(d, k, key));
}

/* table: the key of the table the statement touches, NULL for none (sp_stmt.table). */
static void add(struct sd_ctx *d, const char *table, bool destructive, const char *label,
                const char *sql)
{
  if(!d->rc && (!label || !sql || sp_add(d->p, table, destructive, false, label, sql)))
    d->rc = -1;
}

static const char *table_q(const struct sm_model *m, const char *key)
{
  const struct sm_obj *t = sm_find(m, SM_TABLE, key);
  return t ? t->qname : key;
}

/* ----- enum values -------------------------------------------------------------------------- */

static bool has_line(const char *list, const char *s, size_t n)
{
  for(const char *p = list; *p;) {
    size_t m = strcspn(p, "\n");
    if(m == n && !strncmp(p, s, n))
      return true;
    p += m + (p[m] == '\n');
  }
  return false;
}

/* have's labels must appear in want's, in the same order: then each new one is added before
 * the next existing one (or after the one before it). */
static void enum_values(struct sd_ctx *d)
{
  for(size_t i = 0; i < d->want->k[SM_ENUM].n && !d->rc; i++) {
    const struct sm_obj *w = &d->want->k[SM_ENUM].v[i], *h = sm_find(d->have, SM_ENUM, w->key);
    if(!h || !strcmp(h->f[F_ENUM_LABELS], w->f[F_ENUM_LABELS]))
      continue;
    const char *hp = h->f[F_ENUM_LABELS];
    for(const char *p = w->f[F_ENUM_LABELS]; *p && *hp;) { /* subsequence check */
      size_t n = strcspn(p, "\n"), m = strcspn(hp, "\n");
      if(n == m && !strncmp(p, hp, n))
        hp += m + (hp[m] == '\n');
      p += n + (p[n] == '\n');
    }
    if(*hp) {
      snprintf(d->p->err, sizeof(d->p->err), "enum type %s: the desired values drop or reorder "
               "current ones (%.300s -> %.300s): the plan engine only adds values; migrate the "
               "columns to a new type in a PtahMigration first", w->key, h->f[F_ENUM_LABELS],
               w->f[F_ENUM_LABELS]);
      d->rc = -1;
      return;
    }
    const char *prev = NULL;
    size_t prevn = 0;
    for(const char *p = w->f[F_ENUM_LABELS]; *p && !d->rc;) {
      size_t n = strcspn(p, "\n");
      if(!has_line(h->f[F_ENUM_LABELS], p, n)) {
        const char *next = p + n + (p[n] == '\n');
        while(*next && !has_line(h->f[F_ENUM_LABELS], next, strcspn(next, "\n")))
          next += strcspn(next, "\n") + (next[strcspn(next, "\n")] == '\n');
        char *sql = *next ? sp_fmt(d->p, "ALTER TYPE %s ADD VALUE IF NOT EXISTS %.*s BEFORE %.*s",
                                   w->qname, (int)n, p, (int)strcspn(next, "\n"), next)
                          : sp_fmt(d->p, "ALTER TYPE %s ADD VALUE IF NOT EXISTS %.*s AFTER %.*s",
                                   w->qname, (int)n, p, (int)prevn, prev);
        if(!sql || sp_add(d->p, NULL, false, true, sp_fmt(d->p, "add value %.*s to type %s",
                                                          (int)n, p, w->key), sql))
          d->rc = -1;
      }
      prev = p;
      prevn = n;
      p += n + (p[n] == '\n');
    }
  }
}

/* ----- drops that clear the way ------------------------------------------------------------ */

static void drop_views(struct sd_ctx *d)
{
  const struct sm_list *l = &d->have->k[SM_VIEW];
  bool *done = calloc(l->n + 1, 1);
  if(!done) {
    d->rc = -1;
    return;
  }
  for(bool more = true; more && !d->rc;) { /* a view goes once no going view uses it */
    more = false;
    for(size_t i = 0; i < l->n; i++) {
      if(done[i] || !sd_goes(d, SM_VIEW, l->v[i].key))
        continue;
      bool used = false;
      for(size_t j = 0; j < l->n && !used; j++)
        used = j != i && !done[j] && sd_goes(d, SM_VIEW, l->v[j].key) &&
               sd_deps_name(l->v[j].deps, "view", l->v[i].key);
      if(used)
        continue;
      bool again = sm_find(d->want, SM_VIEW, l->v[i].key) != NULL;
      add(d, NULL, !again, sp_fmt(d->p, "drop view %s%s", l->v[i].key, again ? " (re-created)" : ""),
          sp_fmt(d->p, "DROP VIEW %s", l->v[i].qname));
      done[i] = more = true;
    }
  }
  free(done);
}

static void drop_constraints(struct sd_ctx *d, bool fk)
{
  const struct sm_list *l = &d->have->k[SM_CONSTRAINT];
  for(size_t i = 0; i < l->n && !d->rc; i++) {
    const struct sm_obj *o = &l->v[i];
    bool is_fk = !strcmp(o->f[F_CON_TYPE], "f");
    /* a foreign key goes first even with its table: it may point at a table dropped before */
    if(is_fk != fk || !sd_goes(d, SM_CONSTRAINT, o->key) ||
       (!fk && sd_has(d->gone, "table", o->parent)))
      continue;
    bool again = sm_find(d->want, SM_CONSTRAINT, o->key) != NULL;
    bool with_table = sd_has(d->gone, "table", o->parent); /* the table's drop is destructive */
    add(d, o->parent, !again && !with_table,
        sp_fmt(d->p, "drop constraint %s%s", o->key, again ? " (re-created)" : ""),
        sp_fmt(d->p, "ALTER TABLE %s DROP CONSTRAINT %s", table_q(d->have, o->parent), o->qname));
  }
}

static void drop_indexes(struct sd_ctx *d)
{
  const struct sm_list *l = &d->have->k[SM_INDEX];
  for(size_t i = 0; i < l->n && !d->rc; i++) {
    const struct sm_obj *o = &l->v[i];
    if(!sd_goes(d, SM_INDEX, o->key) || sd_has(d->gone, "table", o->parent))
      continue;
    bool again = sm_find(d->want, SM_INDEX, o->key) != NULL;
    add(d, o->parent, !again, sp_fmt(d->p, "drop index %s%s", o->key, again ? " (re-created)" : ""),
        sp_fmt(d->p, "DROP INDEX %s", o->qname));
  }
}

/* ----- creates ----------------------------------------------------------------------------- */

static char *literal(struct sp_plan *p, const char *s)
{
  size_t n = strlen(s), q = 0;
  for(size_t i = 0; i < n; i++)
    q += s[i] == '\'';
  char *out = arena_alloc(&p->arena, n + q + 3);
  if(out) {
    size_t o = 0;
    out[o++] = '\'';
    for(size_t i = 0; i < n; i++) {
      if(s[i] == '\'')
        out[o++] = '\'';
      out[o++] = s[i];
    }
    out[o++] = '\'';
    out[o] = '\0';
  }
  return out;
}

static void create_schemas_extensions_types(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_SCHEMA];
  for(size_t i = 0; i < l->n; i++)
    if(creates(d, SM_SCHEMA, l->v[i].key))
      add(d, NULL, false, sp_fmt(d->p, "create schema %s", l->v[i].key),
          sp_fmt(d->p, "CREATE SCHEMA %s", l->v[i].qname));
  l = &d->want->k[SM_EXTENSION];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *w = &l->v[i], *h = sm_find(d->have, SM_EXTENSION, w->key);
    const char *v = literal(d->p, w->f[F_EXT_VERSION]);
    if(!h)
      add(d, NULL, false, sp_fmt(d->p, "create extension %s", w->key),
          sp_fmt(d->p, "CREATE EXTENSION %s WITH SCHEMA %s VERSION %s", w->qname,
                 w->f[F_EXT_SCHEMA], v ? v : "''"));
    if(h && strcmp(h->f[F_EXT_SCHEMA], w->f[F_EXT_SCHEMA]))
      add(d, NULL, false, sp_fmt(d->p, "move extension %s", w->key),
          sp_fmt(d->p, "ALTER EXTENSION %s SET SCHEMA %s", w->qname, w->f[F_EXT_SCHEMA]));
    if(h && strcmp(h->f[F_EXT_VERSION], w->f[F_EXT_VERSION]))
      add(d, NULL, false, sp_fmt(d->p, "update extension %s", w->key),
          sp_fmt(d->p, "ALTER EXTENSION %s UPDATE TO %s", w->qname, v ? v : "''"));
  }
  l = &d->want->k[SM_ENUM];
  for(size_t i = 0; i < l->n && !d->rc; i++) {
    if(!creates(d, SM_ENUM, l->v[i].key))
      continue;
    char *labels = sp_fmt(d->p, "%s", l->v[i].f[F_ENUM_LABELS]);
    for(char *p = labels; p && *p; p++)
      if(*p == '\n')
        *p = ','; /* quoted literals: a newline inside one would read as its own \n escape */
    add(d, NULL, false, sp_fmt(d->p, "create type %s", l->v[i].key),
        sp_fmt(d->p, "CREATE TYPE %s AS ENUM (%s)", l->v[i].qname, labels ? labels : ""));
  }
}

static char *seq_opts(struct sp_plan *p, const struct sm_obj *s)
{
  return sp_fmt(p, "AS %s START WITH %s INCREMENT BY %s MINVALUE %s MAXVALUE %s CACHE %s%s",
                s->f[F_SEQ_TYPE], s->f[F_SEQ_START], s->f[F_SEQ_INC], s->f[F_SEQ_MIN],
                s->f[F_SEQ_MAX], s->f[F_SEQ_CACHE],
                !strcmp(s->f[F_SEQ_CYCLE], "true") ? " CYCLE" : " NO CYCLE");
}

static void create_sequences(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_SEQUENCE];
  for(size_t i = 0; i < l->n && !d->rc; i++) {
    const struct sm_obj *w = &l->v[i], *h = sm_find(d->have, SM_SEQUENCE, w->key);
    char *opts = seq_opts(d->p, w), *had = h ? seq_opts(d->p, h) : NULL;
    if(!opts || (h && !had))
      d->rc = -1;
    else if(creates(d, SM_SEQUENCE, w->key))
      add(d, NULL, false, sp_fmt(d->p, "create sequence %s", w->key),
          sp_fmt(d->p, "CREATE SEQUENCE %s %s", w->qname, opts));
    else if(h && strcmp(had, opts))
      add(d, NULL, false, sp_fmt(d->p, "alter sequence %s", w->key),
          sp_fmt(d->p, "ALTER SEQUENCE %s %s", w->qname, opts));
  }
}

static void own_sequences(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_SEQUENCE];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *w = &l->v[i], *h = sm_find(d->have, SM_SEQUENCE, w->key);
    bool fresh = creates(d, SM_SEQUENCE, w->key);
    const char *had = h && !fresh ? h->f[F_SEQ_OWNER] : "";
    if(!strcmp(had, w->f[F_SEQ_OWNER]) && !(had[0] && sd_has(d->gone, "column", had)))
      continue;
    add(d, NULL, false, sp_fmt(d->p, "set owner of sequence %s", w->key),
        sp_fmt(d->p, "ALTER SEQUENCE %s OWNED BY %s", w->qname,
               w->f[F_SEQ_OWNER][0] ? w->f[F_SEQ_OWNER_Q] : "NONE"));
  }
}

static void create_constraints(struct sd_ctx *d, bool fk)
{
  const struct sm_list *l = &d->want->k[SM_CONSTRAINT];
  for(size_t i = 0; i < l->n && !d->rc; i++) {
    const struct sm_obj *o = &l->v[i];
    if(!strcmp(o->f[F_CON_TYPE], "f") != fk || !creates(d, SM_CONSTRAINT, o->key))
      continue;
    add(d, o->parent, false, sp_fmt(d->p, "add constraint %s", o->key),
        sp_fmt(d->p, "ALTER TABLE %s ADD CONSTRAINT %s %s", table_q(d->want, o->parent), o->qname,
               o->f[F_CON_DEF]));
  }
}

static void create_indexes(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_INDEX];
  for(size_t i = 0; i < l->n; i++)
    if(creates(d, SM_INDEX, l->v[i].key))
      add(d, l->v[i].parent, false, sp_fmt(d->p, "create index %s", l->v[i].key),
          sp_fmt(d->p, "%s", l->v[i].f[F_IDX_DEF]));
}

static void create_views(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_VIEW];
  bool *done = calloc(l->n + 1, 1);
  if(!done) {
    d->rc = -1;
    return;
  }
  for(bool more = true; more && !d->rc;) { /* a view comes once the views it uses are there */
    more = false;
    for(size_t i = 0; i < l->n; i++) {
      if(done[i] || !creates(d, SM_VIEW, l->v[i].key))
        continue;
      bool waits = false;
      for(size_t j = 0; j < l->n && !waits; j++)
        waits = j != i && !done[j] && creates(d, SM_VIEW, l->v[j].key) &&
                sd_deps_name(l->v[i].deps, "view", l->v[j].key);
      if(waits)
        continue;
      const char *def = l->v[i].f[F_VIEW_DEF];
      int n = (int)strlen(def);
      while(*def == ' ' || *def == '\n')
        def++, n--;
      while(n > 0 && (def[n - 1] == ';' || def[n - 1] == ' ' || def[n - 1] == '\n'))
        n--;
      add(d, NULL, false, sp_fmt(d->p, "create view %s", l->v[i].key),
          sp_fmt(d->p, "CREATE VIEW %s AS %.*s", l->v[i].qname, n, def));
      done[i] = more = true;
    }
  }
  free(done);
}

/* ----- comments ---------------------------------------------------------------------------- */

static bool target_goes(const struct sd_ctx *d, const struct sm_obj *c)
{
  return sd_has_full(d->gone, c->parent) || sd_has_full(d->gone, c->f[F_COM_OWNER]);
}

/* The table a comment is on, or whose column, constraint or index it is on; NULL for none.
 * F_COM_OWNER is "table:<key>" for a table and its columns and constraints, "index:<key>" for
 * an index (whose parent is its table). */
static const char *comment_table(const struct sm_model *m, const struct sm_obj *c)
{
  const char *owner = c->f[F_COM_OWNER];
  if(!strncmp(owner, "table:", 6))
    return owner + 6;
  const struct sm_obj *i = strncmp(owner, "index:", 6) ? NULL : sm_find(m, SM_INDEX, owner + 6);
  return i ? i->parent : NULL;
}

static void comments(struct sd_ctx *d)
{
  const struct sm_list *l = &d->want->k[SM_COMMENT];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *w = &l->v[i], *h = sm_find(d->have, SM_COMMENT, w->key);
    if(h && !target_goes(d, h) && !strcmp(h->f[F_COM_TEXT], w->f[F_COM_TEXT]))
      continue;
    add(d, comment_table(d->want, w), false, sp_fmt(d->p, "comment on %s", w->key),
        sp_fmt(d->p, "COMMENT ON %s IS %s", w->qname, w->f[F_COM_TEXT]));
  }
  l = &d->have->k[SM_COMMENT];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *h = &l->v[i];
    if(!sm_find(d->want, SM_COMMENT, h->key) && !target_goes(d, h))
      add(d, comment_table(d->have, h), false, sp_fmt(d->p, "remove comment on %s", h->key),
          sp_fmt(d->p, "COMMENT ON %s IS NULL", h->qname));
  }
}

/* ----- the last drops ---------------------------------------------------------------------- */

static void drop_unused(struct sd_ctx *d)
{
  static const struct {
    enum sm_kind k;
    const char *sql;
  } order[] = {
    { SM_SEQUENCE, "DROP SEQUENCE %s" }, { SM_ENUM, "DROP TYPE %s" },
    { SM_EXTENSION, "DROP EXTENSION %s" }, { SM_SCHEMA, "DROP SCHEMA %s" },
  };
  for(size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
    const struct sm_list *l = &d->have->k[order[i].k];
    for(size_t j = 0; j < l->n && !d->rc; j++) {
      const struct sm_obj *o = &l->v[j];
      if(!sd_goes(d, order[i].k, o->key))
        continue;
      if(order[i].k == SM_SEQUENCE && o->f[F_SEQ_OWNER][0] &&
         sd_has(d->gone, "column", o->f[F_SEQ_OWNER]))
        continue; /* went with the column that owned it */
      char *sql = sp_fmt(d->p, order[i].sql, o->qname);
      add(d, NULL, true, sp_fmt(d->p, "drop %s %s", KN(order[i].k), o->key), sql);
    }
  }
}

int sd_diff(const struct sm_model *have, const struct sm_model *want, struct sp_plan *p)
{
  struct sd_set gone = { NULL, 0, 0 }, retyped = { NULL, 0, 0 };
  struct sd_ctx d = { have, want, p, &gone, &retyped, 0 };
  enum_values(&d);
  if(!d.rc)
    d.rc = sdt_mark(&d);
  if(!d.rc)
    d.rc = sd_mark(&d);
  if(!d.rc) {
    drop_views(&d);
    drop_constraints(&d, true);
    drop_constraints(&d, false);
    drop_indexes(&d);
  }
  if(!d.rc)
    d.rc = sdt_drop(&d);
  if(!d.rc) {
    create_schemas_extensions_types(&d);
    create_sequences(&d);
  }
  if(!d.rc)
    d.rc = sdt_create(&d);
  if(!d.rc) {
    own_sequences(&d);
    create_constraints(&d, false);
    create_indexes(&d);
    create_constraints(&d, true);
    create_views(&d);
    comments(&d);
    drop_unused(&d);
  }
  if(d.rc && !p->err[0])
    snprintf(p->err, sizeof(p->err), "out of memory computing the plan");
  sd_set_free(&gone);
  sd_set_free(&retyped);
  return d.rc;
}
