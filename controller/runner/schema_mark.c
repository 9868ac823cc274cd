/*
 * schema_mark.c: which objects of the target a plan drops (schema.h, schema_diff.c): the sets of
 * "kind:key" strings the diff keeps, and the marking of what goes.
 *
 * What goes: objects of `have` missing from `want`; constraints, indexes and views whose
 * definition (or table) differs, dropped to be re-created; then, to a fixed point, every
 * constraint, index, view or sequence that depends (pg_depend, as read into deps) on something
 * that goes, views on a column whose type changes (PostgreSQL refuses that change under a view),
 * the constraints and indexes of a table that goes, and sequences owned by a column that goes
 * (dropped with it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

#define KN(k) sm_kind_name(k)

/* ----- sets of "kind:key" -------------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
  uint64_t h = 1469598103934665603ULL;
  for(; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static size_t slot(const struct sd_set *s, const char *full)
{
  size_t i = (size_t)hash(full) & (s->cap - 1);
  while(s->v[i] && strcmp(s->v[i], full))
    i = (i + 1) & (s->cap - 1);
  return i;
}

bool sd_has_full(const struct sd_set *s, const char *full)
{
  return s->cap && s->v[slot(s, full)];
}

static int put_full(struct sd_set *s, char *full) /* takes full */
{
  if(2 * (s->n + 1) > s->cap) {
    struct sd_set g = { calloc(s->cap ? 2 * s->cap : 64, sizeof(char *)), s->cap ? 2 * s->cap : 64,
                        s->n };
    if(!g.v) {
      free(full);
      return -1;
    }
    for(size_t i = 0; i < s->cap; i++)
      if(s->v[i])
        g.v[slot(&g, s->v[i])] = s->v[i];
    free(s->v);
    *s = g;
  }
  size_t i = slot(s, full);
  if(s->v[i])
    free(full);
  else {
    s->v[i] = full;
    s->n++;
  }
  return 0;
}

static char *join(const char *kind, const char *key)
{
  size_t a = strlen(kind), b = strlen(key);
  char *s = malloc(a + b + 2);
  if(s) {
    memcpy(s, kind, a);
    s[a] = ':';
    memcpy(s + a + 1, key, b + 1);
  }
  return s;
}

bool sd_has(const struct sd_set *s, const char *kind, const char *key)
{
  char *full = join(kind, key);
  bool r = full && sd_has_full(s, full);
  free(full);
  return r;
}

int sd_put(struct sd_set *s, const char *kind, const char *key)
{
  char *full = join(kind, key);
  return full ? put_full(s, full) : -1;
}

void sd_set_free(struct sd_set *s)
{
  for(size_t i = 0; i < s->cap; i++)
    free(s->v[i]);
  free(s->v);
}

/* Whether one of deps' "kind:key" lines is in s (or, for views, names a retyped column). */
bool sd_deps_in(const char *deps, const struct sd_set *s)
{
  char buf[1024];
  for(const char *p = deps; *p;) {
    size_t n = strcspn(p, "\n");
    if(n < sizeof(buf)) {
      memcpy(buf, p, n);
      buf[n] = '\0';
      if(sd_has_full(s, buf))
        return true;
    }
    p += n + (p[n] == '\n');
  }
  return false;
}

bool sd_deps_name(const char *deps, const char *kind, const char *key)
{
  size_t a = strlen(kind), b = strlen(key);
  for(const char *p = deps; *p;) {
    size_t n = strcspn(p, "\n");
    if(n == a + 1 + b && !strncmp(p, kind, a) && p[a] == ':' && !strncmp(p + a + 1, key, b))
      return true;
    p += n + (p[n] == '\n');
  }
  return false;
}

bool sd_goes(const struct sd_ctx *d, enum sm_kind k, const char *key)
{
  return sd_has(d->gone, KN(k), key);
}

/* ----- marking what goes ----------------------------------------------------------------- */

static void mark(struct sd_ctx *d, enum sm_kind k, const char *key)
{
  if(!d->rc && sd_put(d->gone, KN(k), key))
    d->rc = -1;
}

static void mark_changed(struct sd_ctx *d)
{
  static const enum sm_kind kinds[] = { SM_SCHEMA, SM_EXTENSION, SM_ENUM, SM_SEQUENCE,
                                        SM_CONSTRAINT, SM_INDEX, SM_VIEW };
  for(size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
    enum sm_kind k = kinds[i];
    int def = k == SM_CONSTRAINT ? F_CON_DEF : k == SM_INDEX ? F_IDX_DEF : F_VIEW_DEF;
    for(size_t j = 0; j < d->have->k[k].n; j++) {
      const struct sm_obj *h = &d->have->k[k].v[j], *w = sm_find(d->want, k, h->key);
      bool rebuilt = (k == SM_CONSTRAINT || k == SM_INDEX || k == SM_VIEW) && w &&
                     (strcmp(h->f[def], w->f[def]) || strcmp(h->parent, w->parent));
      if(!w || rebuilt)
        mark(d, k, h->key);
    }
  }
}

/* Dependents of what goes go too, to a fixed point; so do sequences owned by a column that
 * goes (dropped with it). */
static void mark_dependents(struct sd_ctx *d)
{
  static const enum sm_kind kinds[] = { SM_CONSTRAINT, SM_INDEX, SM_VIEW, SM_SEQUENCE };
  for(bool more = true; more && !d->rc;) {
    more = false;
    for(size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
      for(size_t j = 0; j < d->have->k[kinds[i]].n; j++) {
        const struct sm_obj *o = &d->have->k[kinds[i]].v[j];
        if(sd_goes(d, kinds[i], o->key))
          continue;
        bool dep = kinds[i] == SM_SEQUENCE
                     ? o->f[F_SEQ_OWNER][0] && sd_has(d->gone, "column", o->f[F_SEQ_OWNER])
                     : sd_deps_in(o->deps, d->gone) ||
                         (kinds[i] == SM_VIEW && sd_deps_in(o->deps, d->retyped)) ||
                         (o->parent[0] && sd_has(d->gone, "table", o->parent));
        if(dep) {
          mark(d, kinds[i], o->key);
          more = true;
        }
      }
  }
}

int sd_mark(struct sd_ctx *d)
{
  mark_changed(d);
  if(!d->rc)
    mark_dependents(d);
  return d->rc;
}
