/*
 * schema_read.c: the plan engine's model of one database (schema.h), read with libpq from the
 * catalogs with the queries of schema_catalog.c, and its canonical text and fingerprint.
 *
 * The canonical text lists the kinds in creation order, each object's key, parent, deps and
 * fields, one object a line, tab-separated, with '\\', tab and newline escaped; objects sorted
 * by key (strcmp). Nothing in it depends on OIDs, owners or the database's name, so two
 * databases built from the same SQL give the same text and the same fingerprint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "strbuf.h"

#define SM_ARENA_CHUNK (256 * 1024)
#define SM_ARENA_LIMIT (512L << 20)
#define SM_CANON_MAX (1024L << 20)

static int cmp_obj(const void *a, const void *b)
{
  return strcmp(((const struct sm_obj *)a)->key, ((const struct sm_obj *)b)->key);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int read_kind(PGconn *conn, struct sm_model *m, enum sm_kind k, struct pgc_err *e)
{
  PGresult *res = pgc_query(conn, e, sm_queries[k].sql, 0, NULL);
  if(!res)
    return -1;
  int rows = PQntuples(res), cols = PQnfields(res);
  if(cols < 4 || cols - 4 > SM_NFIELDS) {
    PQclear(res);
    snprintf(e->msg, sizeof(e->msg), "the %s query returned %d columns", sm_queries[k].name, cols);
    return -1;
  }
  struct sm_list *l = &m->k[k];
  l->v = rows ? arena_alloc(&m->arena, (size_t)rows * sizeof(*l->v)) : NULL;
  if(rows && !l->v) {
    PQclear(res);
    snprintf(e->msg, sizeof(e->msg), "out of memory reading the %s objects", sm_queries[k].name);
    return -1;
  }
  for(int r = 0; r < rows; r++) {
    struct sm_obj *o = &l->v[r];
    memset(o, 0, sizeof(*o));
    const char **dst[4] = { &o->key, &o->parent, &o->qname, &o->deps };
    for(int c = 0; c < cols; c++) {
      const char *s = arena_strdup(&m->arena, PQgetvalue(res, r, c)); /* NULL reads as "" */
      if(!s) {
        PQclear(res);
        snprintf(e->msg, sizeof(e->msg), "out of memory reading the %s objects",
                 sm_queries[k].name);
        return -1;
      }
      if(c < 4)
        *dst[c] = s;
      else
        o->f[c - 4] = s;
    }
    for(int c = cols - 4; c < SM_NFIELDS; c++)
      o->f[c] = "";
  }
  l->n = (size_t)rows;
  PQclear(res);
  if(l->n) /* bytewise, whatever the server's collation */
    qsort(l->v, l->n, sizeof(*l->v), cmp_obj);
  return 0;
}

static int read_refused(PGconn *conn, struct sm_model *m, struct pgc_err *e)
{
  PGresult *res = pgc_query(conn, e, sm_refusal_sql, 0, NULL);
  if(!res)
    return -1;
  int rows = PQntuples(res);
  m->refused = rows ? arena_alloc(&m->arena, (size_t)rows * sizeof(char *)) : NULL;
  for(int r = 0; r < rows && m->refused; r++)
    if(!(m->refused[m->nrefused++] = arena_strdup(&m->arena, PQgetvalue(res, r, 0))))
      m->refused = NULL;
  PQclear(res);
  if(rows && !m->refused) {
    snprintf(e->msg, sizeof(e->msg), "out of memory reading the refused objects");
    return -1;
  }
  if(m->nrefused)
    qsort(m->refused, m->nrefused, sizeof(char *), cmp_str);
  return 0;
}

int sm_read(PGconn *conn, struct sm_model *m, struct pgc_err *e)
{
  memset(m, 0, sizeof(*m));
  arena_init(&m->arena, SM_ARENA_CHUNK, SM_ARENA_LIMIT);
  memset(e, 0, sizeof(*e));
  /* Every name the server prints qualified; pg_catalog is searched first all the same. */
  int r = pgc_exec(conn, e, "SET search_path = ''");
  for(int k = 0; k < SM_NKINDS && !r; k++)
    r = read_kind(conn, m, (enum sm_kind)k, e);
  if(!r)
    r = read_refused(conn, m, e);
  if(r)
    sm_release(m); /* the caller owns a model only when it was read */
  return r;
}

void sm_release(struct sm_model *m)
{
  arena_release(&m->arena);
  memset(m, 0, sizeof(*m));
}

const struct sm_obj *sm_find(const struct sm_model *m, enum sm_kind k, const char *key)
{
  const struct sm_list *l = &m->k[k];
  struct sm_obj probe = { .key = key };
  return l->n ? bsearch(&probe, l->v, l->n, sizeof(*l->v), cmp_obj) : NULL;
}

/* ----- the canonical text ------------------------------------------------------------------ */

static gw_rc add_escaped(struct strbuf *sb, const char *s)
{
  gw_rc rc = strbuf_addc(sb, '\t');
  for(; *s && !rc; s++) {
    if(*s == '\\')
      rc = strbuf_adds(sb, "\\\\");
    else if(*s == '\t')
      rc = strbuf_adds(sb, "\\t");
    else if(*s == '\n')
      rc = strbuf_adds(sb, "\\n");
    else
      rc = strbuf_addc(sb, *s);
  }
  return rc;
}

char *sm_canonical(const struct sm_model *m)
{
  struct strbuf sb;
  strbuf_init(&sb, SM_CANON_MAX);
  gw_rc rc = strbuf_adds(&sb, "ptah-model/1\n");
  for(int k = 0; k < SM_NKINDS && !rc; k++)
    for(size_t i = 0; i < m->k[k].n && !rc; i++) {
      const struct sm_obj *o = &m->k[k].v[i];
      rc = strbuf_adds(&sb, sm_queries[k].name);
      const char *parts[] = { o->key, o->parent, o->deps };
      for(size_t p = 0; p < 3 && !rc; p++)
        rc = add_escaped(&sb, parts[p]);
      for(int f = 0; f < SM_NFIELDS && !rc; f++)
        rc = add_escaped(&sb, o->f[f] ? o->f[f] : "");
      if(!rc)
        rc = strbuf_addc(&sb, '\n');
    }
  for(size_t i = 0; i < m->nrefused && !rc; i++)
    rc = strbuf_addf(&sb, "refused\t%s\n", m->refused[i]);
  char *s = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

int sm_fingerprint(const struct sm_model *m, char out[DIGEST_SHA256_LEN])
{
  char *s = sm_canonical(m);
  gw_rc rc = s ? digest_sha256(s, strlen(s), out) : GW_ENOMEM;
  free(s);
  return rc ? -1 : 0;
}
