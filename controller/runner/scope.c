/*
 * scope.c: what the migration copies, as the checks see it: the source's non-system schemas
 * (minus extension-owned ones and pgcopydb's own sentinel schema), narrowed by
 * --include-schema / --exclude-schema, and the tables in them, narrowed by --include-table /
 * --exclude-table (pgcopydb's filter spelling: schema.name, either part in double quotes).
 */
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

static bool listed(const struct pf_list *l, const char *s)
{
  for(size_t i = 0; i < l->n; i++)
    if(!strcmp(l->v[i], s))
      return true;
  return false;
}

/* One part: a quoted identifier ("" is a quote) or bare text up to stop. Returns the rest. */
static const char *part(const char *s, char stop, char *out, size_t len)
{
  size_t o = 0;
  if(*s == '"') {
    for(s++;; s++) {
      if(!*s)
        return NULL;
      if(*s == '"') {
        if(s[1] != '"')
          break;
        s++;
      }
      if(o + 1 < len)
        out[o++] = *s;
    }
    s++;
  } else {
    for(; *s && *s != stop; s++)
      if(o + 1 < len)
        out[o++] = *s;
  }
  out[o] = '\0';
  return o ? s : NULL;
}

int pf_split_qualified(const char *s, char *schema, size_t slen, char *name, size_t nlen)
{
  const char *p = part(s, '.', schema, slen);
  if(!p || *p != '.')
    return -1;
  p = part(p + 1, '\0', name, nlen);
  return p && !*p ? 0 : -1;
}

static bool table_listed(const struct pf_list *l, const char *schema, const char *name)
{
  char s[256], n[256];
  for(size_t i = 0; i < l->n; i++)
    if(!pf_split_qualified(l->v[i], s, sizeof(s), n, sizeof(n)) && !strcmp(s, schema) &&
       !strcmp(n, name))
      return true;
  return false;
}

bool pf_table_in_scope(const struct pf_ctx *c, const char *schema, const char *name)
{
  if(c->o.include_tables.n && !table_listed(&c->o.include_tables, schema, name))
    return false;
  return !table_listed(&c->o.exclude_tables, schema, name);
}

int pf_scope_load(struct pf_ctx *c, struct pgc_err *e)
{
  if(c->schemas)
    return 0;
  PGresult *res = pgc_query(
    c->st.src_c, e,
    "SELECT n.nspname FROM pg_namespace n "
    "WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' "
    "  AND n.nspname <> 'pgcopydb' "
    "  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass "
    "                  AND d.objid = n.oid AND d.deptype = 'e') "
    "ORDER BY 1",
    0, NULL);
  if(!res)
    return -1;
  int n = PQntuples(res);
  c->schemas = calloc((size_t)n + 1, sizeof(char *));
  for(int i = 0; i < n && c->schemas; i++) {
    const char *s = PQgetvalue(res, i, 0);
    if(c->o.include_schemas.n && !listed(&c->o.include_schemas, s))
      continue;
    if(listed(&c->o.exclude_schemas, s))
      continue;
    c->schemas[c->nschemas] = strdup(s);
    if(c->schemas[c->nschemas])
      c->nschemas++;
  }
  PQclear(res);
  return 0;
}

int pf_tables_load(struct pf_ctx *c, struct pgc_err *e)
{
  if(c->tables_read)
    return 0;
  char *arr = pgc_text_array((const char *const *)c->schemas, c->nschemas);
  const char *params[] = { arr ? arr : "{}" };
  PGresult *res = pgc_query(
    c->st.src_c, e,
    "SELECT n.nspname, c.relname, c.relreplident::text, "
    "  EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary), "
    "  EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident), "
    "  c.relpersistence = 'u' "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = 'r' AND c.relpersistence <> 't' AND n.nspname = ANY($1::text[]) "
    "ORDER BY 1, 2",
    1, params);
  free(arr);
  if(!res)
    return -1;
  int n = PQntuples(res);
  c->tables = calloc((size_t)n + 1, sizeof(*c->tables));
  for(int i = 0; i < n && c->tables; i++) {
    const char *s = PQgetvalue(res, i, 0), *t = PQgetvalue(res, i, 1);
    if(!pf_table_in_scope(c, s, t))
      continue;
    struct pf_table *tb = &c->tables[c->ntables];
    tb->schema = strdup(s);
    tb->name = strdup(t);
    tb->replident = PQgetvalue(res, i, 2)[0];
    tb->has_pk = PQgetvalue(res, i, 3)[0] == 't';
    tb->has_ri_index = PQgetvalue(res, i, 4)[0] == 't';
    tb->unlogged = PQgetvalue(res, i, 5)[0] == 't';
    if(tb->schema && tb->name)
      c->ntables++;
    else {
      free(tb->schema);
      free(tb->name);
    }
  }
  PQclear(res);
  c->tables_read = true;
  return 0;
}

void pf_scope_release(struct pf_ctx *c)
{
  for(size_t i = 0; i < c->nschemas; i++)
    free(c->schemas[i]);
  free(c->schemas);
  c->schemas = NULL;
  c->nschemas = 0;
  for(size_t i = 0; i < c->ntables; i++) {
    free(c->tables[i].schema);
    free(c->tables[i].name);
  }
  free(c->tables);
  c->tables = NULL;
  c->ntables = 0;
  c->tables_read = false;
}
