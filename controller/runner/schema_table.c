/*
 * schema_table.c: the diff of tables and columns (schema.h, schema_diff.c's steps 2 and 3).
 *
 * A column present on both sides is changed in place, in this order: DROP IDENTITY, DROP
 * EXPRESSION (a generated column that becomes a plain one keeps its values), DROP DEFAULT (before
 * a type change: the old default may not cast), TYPE ... USING col::type, SET/DROP NOT NULL, SET
 * DEFAULT, then identity (ADD GENERATED, SET GENERATED, or the identity sequence's options).
 * A column that becomes generated, or whose generation expression changes, is dropped and added
 * again (PostgreSQL 15 cannot change a generation expression): destructive. New columns are
 * appended (PostgreSQL has no column order to change); new tables list their columns in the
 * desired order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

/* ----- type changes ------------------------------------------------------------------------- */

/* "name(n)" or "name(n,s)": the numbers, or -1 when s does not have that shape. */
static int typmod(const char *s, const char *name, int *n, int *scale)
{
  size_t l = strlen(name);
  if(strncmp(s, name, l) || s[l] != '(')
    return -1;
  int used = 0;
  *scale = -1;
  if(sscanf(s + l, "(%d,%d)%n", n, scale, &used) == 2 && !s[l + (size_t)used])
    return 0;
  used = 0;
  *scale = -1;
  return sscanf(s + l, "(%d)%n", n, &used) == 1 && !s[l + (size_t)used] ? 0 : -1;
}

bool sdt_widening(const char *a, const char *b)
{
  int n, m, s, t;
  if(!strcmp(a, b))
    return true; /* a collation change */
  bool b_text = !strcmp(b, "text") || !strcmp(b, "character varying");
  if(!typmod(a, "character varying", &n, &s))
    return b_text || (!typmod(b, "character varying", &m, &t) && m >= n);
  if(!strcmp(a, "character varying") || !strcmp(a, "text"))
    return b_text;
  if(!typmod(a, "numeric", &n, &s))
    return !strcmp(b, "numeric") || (!typmod(b, "numeric", &m, &t) && t == s && m - t >= n - s);
  return false;
}

/* ----- marking ------------------------------------------------------------------------------ */

static bool regenerates(const struct sm_obj *h, const struct sm_obj *w)
{
  return w->f[F_COL_GENERATED][0] && strcmp(h->f[F_COL_GENERATED], w->f[F_COL_GENERATED]);
}

int sdt_mark(struct sd_ctx *d)
{
  const struct sm_list *l = &d->have->k[SM_TABLE];
  for(size_t i = 0; i < l->n; i++)
    if(!sm_find(d->want, SM_TABLE, l->v[i].key) && sd_put(d->gone, "table", l->v[i].key))
      return -1;
  l = &d->have->k[SM_COLUMN];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *h = &l->v[i], *w = sm_find(d->want, SM_COLUMN, h->key);
    bool gone = !w || sd_has(d->gone, "table", h->parent) || regenerates(h, w);
    bool retyped = !gone && (strcmp(h->f[F_COL_TYPE], w->f[F_COL_TYPE]) ||
                             strcmp(h->f[F_COL_COLLATE], w->f[F_COL_COLLATE]));
    if((gone && sd_put(d->gone, "column", h->key)) ||
       (retyped && sd_put(d->retyped, "column", h->key)))
      return -1;
  }
  return 0;
}

/* ----- drops -------------------------------------------------------------------------------- */

static const char *table_q(const struct sm_model *m, const char *key)
{
  const struct sm_obj *t = sm_find(m, SM_TABLE, key);
  return t ? t->qname : key;
}

int sdt_drop(struct sd_ctx *d)
{
  struct sp_plan *p = d->p;
  const struct sm_list *l = &d->have->k[SM_COLUMN];
  for(size_t i = 0; i < l->n; i++) {
    const struct sm_obj *h = &l->v[i];
    if(!sd_has(d->gone, "column", h->key) || sd_has(d->gone, "table", h->parent))
      continue;
    bool again = sm_find(d->want, SM_COLUMN, h->key) != NULL;
    if(sp_add(p, h->parent, true, false,
              sp_fmt(p, "drop column %s%s", h->key, again ? " (added again: generation changes)"
                                                          : ""),
              sp_fmt(p, "ALTER TABLE %s DROP COLUMN %s", table_q(d->have, h->parent), h->qname)))
      return -1;
  }
  l = &d->have->k[SM_TABLE];
  for(size_t i = 0; i < l->n; i++)
    if(sd_has(d->gone, "table", l->v[i].key) &&
       sp_add(p, l->v[i].key, true, false, sp_fmt(p, "drop table %s", l->v[i].key),
              sp_fmt(p, "DROP TABLE %s", l->v[i].qname)))
      return -1;
  return 0;
}

/* ----- creates and changes ------------------------------------------------------------------ */

static int cmp_col(const void *a, const void *b)
{
  const struct sm_obj *x = *(const struct sm_obj *const *)a, *y = *(const struct sm_obj *const *)b;
  int r = strcmp(x->parent, y->parent);
  return r ? r : strcmp(x->f[F_COL_POS], y->f[F_COL_POS]);
}

static const char *identity_kind(const struct sm_obj *c)
{
  return !strcmp(c->f[F_COL_IDENTITY], "a") ? "ALWAYS" : "BY DEFAULT";
}

static char *col_def(struct sp_plan *p, const struct sm_obj *c)
{
  const char *gen = c->f[F_COL_GENERATED], *dflt = c->f[F_COL_DEFAULT];
  char *what = gen[0] ? sp_fmt(p, " GENERATED ALWAYS AS (%s) STORED", gen)
               : c->f[F_COL_IDENTITY][0]
                 ? sp_fmt(p, " GENERATED %s AS IDENTITY (%s)", identity_kind(c), c->f[F_COL_IDOPTS])
               : dflt[0] ? sp_fmt(p, " DEFAULT %s", dflt)
                         : "";
  return what ? sp_fmt(p, "%s %s%s%s%s", c->qname, c->f[F_COL_TYPE], c->f[F_COL_COLLATE], what,
                       !strcmp(c->f[F_COL_NOTNULL], "true") ? " NOT NULL" : "")
              : NULL;
}

/* "START WITH 1 INCREMENT BY 1 ... NO CYCLE" as ALTER COLUMN's "SET START WITH 1 SET ...". */
static char *set_form(struct sp_plan *p, const char *opts)
{
  char *out = arena_alloc(&p->arena, 2 * strlen(opts) + 1);
  if(!out)
    return NULL;
  static const char *const words[] = { "START ", "INCREMENT ", "MINVALUE ", "MAXVALUE ",
                                       "CACHE ", "NO CYCLE", "CYCLE" };
  size_t o = 0;
  for(const char *s = opts; *s;) {
    bool word = false;
    for(size_t i = 0; i < sizeof(words) / sizeof(words[0]) && !word; i++)
      word = !strncmp(s, words[i], strlen(words[i])) && (s == opts || s[-1] == ' ') &&
             (s < opts + 3 || strncmp(s - 3, "NO ", 3));
    if(word) {
      memcpy(out + o, "SET ", 4);
      o += 4;
    }
    size_t n = strcspn(s, " ");
    n += s[n] == ' ';
    memcpy(out + o, s, n);
    o += n;
    s += n;
  }
  out[o] = '\0';
  return out;
}

struct alter {
  struct sd_ctx *d;
  const char *tq, *cq, *key, *table;
  int rc;
};

static void alter(struct alter *a, bool destructive, const char *what, const char *action)
{
  struct sp_plan *p = a->d->p;
  if(!a->rc && sp_add(p, a->table, destructive, false,
                      sp_fmt(p, "alter column %s: %s", a->key, what),
                      sp_fmt(p, "ALTER TABLE %s ALTER COLUMN %s %s", a->tq, a->cq, action)))
    a->rc = -1;
}

static int alter_column(struct sd_ctx *d, const char *tq, const struct sm_obj *h,
                        const struct sm_obj *w)
{
  struct sp_plan *p = d->p;
  struct alter a = { d, tq, w->qname, w->key, w->parent, 0 };
  const char *hid = h->f[F_COL_IDENTITY], *wid = w->f[F_COL_IDENTITY];
  if(hid[0] && !wid[0])
    alter(&a, false, "drop identity", "DROP IDENTITY");
  if(h->f[F_COL_GENERATED][0] && !w->f[F_COL_GENERATED][0])
    alter(&a, false, "drop generation expression (values kept)", "DROP EXPRESSION");
  const char *had_default = h->f[F_COL_DEFAULT];
  bool retype = strcmp(h->f[F_COL_TYPE], w->f[F_COL_TYPE]) ||
                strcmp(h->f[F_COL_COLLATE], w->f[F_COL_COLLATE]);
  if(retype && had_default[0]) {
    alter(&a, false, "drop default before the type change", "DROP DEFAULT");
    had_default = "";
  }
  if(retype) {
    bool wide = sdt_widening(h->f[F_COL_TYPE], w->f[F_COL_TYPE]);
    alter(&a, !wide, sp_fmt(p, "type %s -> %s%s", h->f[F_COL_TYPE], w->f[F_COL_TYPE],
                            wide ? "" : " (rewrite or narrowing)"),
          sp_fmt(p, "TYPE %s%s USING %s::%s", w->f[F_COL_TYPE], w->f[F_COL_COLLATE], w->qname,
                 w->f[F_COL_TYPE]));
  }
  if(strcmp(h->f[F_COL_NOTNULL], w->f[F_COL_NOTNULL])) {
    bool set = !strcmp(w->f[F_COL_NOTNULL], "true");
    alter(&a, false, set ? "set not null" : "drop not null", set ? "SET NOT NULL" : "DROP NOT NULL");
  }
  if(strcmp(had_default, w->f[F_COL_DEFAULT])) {
    if(w->f[F_COL_DEFAULT][0])
      alter(&a, false, "set default", sp_fmt(p, "SET DEFAULT %s", w->f[F_COL_DEFAULT]));
    else
      alter(&a, false, "drop default", "DROP DEFAULT");
  }
  if(wid[0] && !hid[0])
    alter(&a, false, "add identity", sp_fmt(p, "ADD GENERATED %s AS IDENTITY (%s)",
                                            identity_kind(w), w->f[F_COL_IDOPTS]));
  if(wid[0] && hid[0] && strcmp(hid, wid))
    alter(&a, false, "set generated", sp_fmt(p, "SET GENERATED %s", identity_kind(w)));
  if(wid[0] && hid[0] && strcmp(h->f[F_COL_IDOPTS], w->f[F_COL_IDOPTS]))
    alter(&a, false, "identity options", set_form(p, w->f[F_COL_IDOPTS]));
  return a.rc;
}

static int create_table(struct sd_ctx *d, const struct sm_obj *t, const struct sm_obj *const *cols,
                        size_t n)
{
  struct sp_plan *p = d->p;
  char *sql = sp_fmt(p, "CREATE TABLE %s (", t->qname);
  for(size_t i = 0; i < n && sql; i++) {
    char *def = col_def(p, cols[i]);
    sql = def ? sp_fmt(p, "%s%s%s", sql, i ? ", " : "", def) : NULL;
  }
  return sp_add(p, t->key, false, false, sp_fmt(p, "create table %s", t->key),
                sql ? sp_fmt(p, "%s)", sql) : NULL);
}

int sdt_create(struct sd_ctx *d)
{
  const struct sm_list *cl = &d->want->k[SM_COLUMN], *tl = &d->want->k[SM_TABLE];
  const struct sm_obj **cols = calloc(cl->n + 1, sizeof(*cols));
  if(!cols)
    return -1;
  for(size_t i = 0; i < cl->n; i++)
    cols[i] = &cl->v[i];
  qsort(cols, cl->n, sizeof(*cols), cmp_col); /* by table, then desired position */
  int rc = 0;
  size_t c = 0;
  for(size_t i = 0; i < tl->n && !rc; i++) {
    const struct sm_obj *t = &tl->v[i];
    while(c < cl->n && strcmp(cols[c]->parent, t->key) < 0)
      c++;
    size_t n = 0;
    while(c + n < cl->n && !strcmp(cols[c + n]->parent, t->key))
      n++;
    if(!sm_find(d->have, SM_TABLE, t->key)) {
      rc = create_table(d, t, cols + c, n);
      continue;
    }
    for(size_t j = 0; j < n && !rc; j++) {
      const struct sm_obj *w = cols[c + j], *h = sm_find(d->have, SM_COLUMN, w->key);
      if(h && !sd_has(d->gone, "column", w->key))
        rc = alter_column(d, t->qname, h, w);
      else {
        char *def = col_def(d->p, w);
        rc = sp_add(d->p, w->parent, false, false, sp_fmt(d->p, "add column %s", w->key),
                    def ? sp_fmt(d->p, "ALTER TABLE %s ADD COLUMN %s", t->qname, def) : NULL);
      }
    }
  }
  free(cols);
  return rc;
}
