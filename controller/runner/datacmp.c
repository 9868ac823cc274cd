/*
 * datacmp.c: table contents compared by count and checksum, sequences synced (datacmp.h).
 */
#include "datacmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const session_sql[] = {
  "SET DateStyle = 'ISO, YMD'",
  "SET IntervalStyle = 'postgres'",
  "SET TimeZone = 'UTC'",
  "SET extra_float_digits = 3",
  "SET bytea_output = 'hex'",
  "SET lc_monetary = 'C'",
  "SET xmloption = 'content'",
  "SELECT pg_catalog.set_config('search_path', '', false)",
};

int dc_session(PGconn *c, struct pgc_err *e)
{
  for(size_t i = 0; i < sizeof(session_sql) / sizeof(session_sql[0]); i++)
    if(pgc_exec(c, e, session_sql[i]))
      return -1;
  return 0;
}

/* Ordinary tables outside system schemas and pgcopydb's sentinel schema, not extension members
 * (empty search_path: pg_catalog names resolve anyway). */
static const char *const source_tables_sql =
  "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c "
  "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
  " WHERE c.relkind = 'r' AND c.relpersistence <> 't' "
  "   AND n.nspname !~ '^pg_' AND n.nspname NOT IN ('information_schema', 'pgcopydb') "
  "   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
  "                    WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
  "                      AND d.objid = c.oid AND d.deptype = 'e') "
  " ORDER BY n.nspname COLLATE \"C\", c.relname COLLATE \"C\"";

static const char *const source_seqs_sql =
  "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c "
  "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
  " WHERE c.relkind = 'S' AND c.relpersistence <> 't' "
  "   AND n.nspname !~ '^pg_' AND n.nspname NOT IN ('information_schema', 'pgcopydb') "
  "   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
  "                    WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
  "                      AND d.objid = c.oid AND d.deptype = 'e') "
  " ORDER BY n.nspname COLLATE \"C\", c.relname COLLATE \"C\"";

static int add_table(struct dc_set *s, const char *schema, const char *name)
{
  struct dc_table *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
  if(!nv)
    return -1;
  s->v = nv;
  struct dc_table *t = &nv[s->n];
  memset(t, 0, sizeof(*t));
  t->schema = strdup(schema);
  t->name = strdup(name);
  if(!t->schema || !t->name) {
    free(t->schema);
    free(t->name);
    return -1;
  }
  s->n++;
  return 0;
}

int dc_tables(struct dc_set *s, const struct wd_catalog *w, PGconn *src, struct pgc_err *e)
{
  memset(s, 0, sizeof(*s));
  if(w && w->readable) {
    s->from_workdir = true;
    for(size_t i = 0; i < w->ntables; i++)
      if(add_table(s, w->tables[i].schema, w->tables[i].name)) {
        memset(e, 0, sizeof(*e));
        st_fmt(e->msg, sizeof(e->msg), "out of memory");
        return -1;
      }
    return 0;
  }
  PGresult *res = pgc_query(src, e, source_tables_sql, 0, NULL);
  if(!res)
    return -1;
  for(int i = 0; i < PQntuples(res); i++)
    if(add_table(s, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1))) {
      PQclear(res);
      memset(e, 0, sizeof(*e));
      st_fmt(e->msg, sizeof(e->msg), "out of memory");
      return -1;
    }
  PQclear(res);
  return 0;
}

void dc_release(struct dc_set *s)
{
  for(size_t i = 0; i < s->n; i++) {
    free(s->v[i].schema);
    free(s->v[i].name);
  }
  free(s->v);
  s->v = NULL;
  s->n = 0;
}

/* "schema"."name", quoted by the server's rules; malloc'd or NULL. */
static char *quoted(PGconn *c, const char *schema, const char *name)
{
  char *qs = PQescapeIdentifier(c, schema, strlen(schema));
  char *qn = PQescapeIdentifier(c, name, strlen(name));
  char *out = NULL;
  if(qs && qn) {
    size_t n = strlen(qs) + strlen(qn) + 2;
    out = malloc(n);
    if(out)
      st_fmt(out, n, "%s.%s", qs, qn);
  }
  PQfreemem(qs);
  PQfreemem(qn);
  return out;
}

static void side_error(struct dc_side *d, PGconn *c, const PGresult *res)
{
  const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if(!m) {
    m = PQerrorMessage(c);
    while(*m == ' ' || *m == '\n')
      m++;
  }
  st_fmt(d->err, sizeof(d->err), "%.*s", (int)strcspn(m, "\n"), m);
  d->missing = st && (!strcmp(st, "42P01") || !strcmp(st, "42703"));
  d->transient = PQstatus(c) != CONNECTION_OK ||
                 (st && (!strncmp(st, "08", 2) || !strncmp(st, "57P", 3) ||
                         !strncmp(st, "53", 2) || !strncmp(st, "40", 2) ||
                         !strcmp(st, "57014") || !strcmp(st, "55P03")));
}

/* The rows of the one result of a query sent with PQsendQuery. */
static void collect(PGconn *c, struct dc_side *d)
{
  PGresult *res;
  bool first = true;
  while((res = PQgetResult(c))) {
    if(first) {
      first = false;
      if(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        d->ok = true;
        d->rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        st_fmt(d->checksum, sizeof(d->checksum), "%s", PQgetvalue(res, 0, 1));
      } else {
        side_error(d, c, res);
      }
    }
    PQclear(res);
  }
  if(first)
    side_error(d, c, NULL);
}

static const char *const columns_sql =
  "SELECT pg_catalog.to_regclass($1) IS NOT NULL, "
  "       (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' "
  "                                     ORDER BY a.attnum) "
  "          FROM pg_catalog.pg_attribute a "
  "         WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 "
  "           AND NOT a.attisdropped)";

static void compare_one(struct st_ctx *c, struct dc_table *t)
{
  char *q = quoted(c->src_c, t->schema, t->name);
  if(!q) {
    st_fmt(t->src.err, sizeof(t->src.err), "out of memory");
    return;
  }
  struct pgc_err e;
  const char *params[] = { q };
  PGresult *res = pgc_query(c->src_c, &e, columns_sql, 1, params);
  if(!res) {
    st_fmt(t->src.err, sizeof(t->src.err), "%s", e.msg);
    t->src.transient = st_transient_state(&e);
    free(q);
    return;
  }
  if(PQgetvalue(res, 0, 0)[0] != 't') {
    st_fmt(t->src.err, sizeof(t->src.err), "the table does not exist on the source");
    t->src.missing = true;
    PQclear(res);
    free(q);
    return;
  }
  const char *cols = PQgetvalue(res, 0, 1);
  size_t n = strlen(cols) * 2 + strlen(q) + 512;
  char *sql = malloc(n);
  if(sql)
    st_fmt(sql, n,
             "SELECT pg_catalog.count(*), pg_catalog.md5(coalesce(pg_catalog.sum(('x' || "
             "pg_catalog.substr(pg_catalog.md5(ROW(%s)::pg_catalog.text), 1, 16))"
             "::pg_catalog.bit(64)::pg_catalog.int8), 0)::pg_catalog.text) FROM ONLY %s",
             cols, q);
  PQclear(res);
  free(q);
  if(!sql) {
    st_fmt(t->src.err, sizeof(t->src.err), "out of memory");
    return;
  }
  bool s_sent = PQsendQuery(c->src_c, sql) == 1;
  bool d_sent = PQsendQuery(c->dst_c, sql) == 1;
  free(sql);
  if(s_sent)
    collect(c->src_c, &t->src);
  else
    side_error(&t->src, c->src_c, NULL);
  if(d_sent)
    collect(c->dst_c, &t->dst);
  else
    side_error(&t->dst, c->dst_c, NULL);
  if(t->dst.err[0] && strstr(t->dst.err, "does not exist"))
    st_fmt(t->dst.err + strlen(t->dst.err), sizeof(t->dst.err) - strlen(t->dst.err),
             " on the target");
  t->match = t->src.ok && t->dst.ok && t->src.rows == t->dst.rows &&
             !strcmp(t->src.checksum, t->dst.checksum);
}

static void describe_side(char *buf, size_t len, const struct dc_side *d)
{
  if(d->ok)
    st_fmt(buf, len, "%lld rows (checksum %.12s)", d->rows, d->checksum);
  else if(d->err[0])
    st_fmt(buf, len, "error: %s", d->err);
  else
    st_fmt(buf, len, "not read");
}

void dc_compare_all(struct st_ctx *c, struct dc_set *s, const char *id, bool fail_lines)
{
  s->matching = s->differing = 0;
  for(size_t i = 0; i < s->n; i++) {
    struct dc_table *t = &s->v[i];
    compare_one(c, t);
    char name[300], a[400], b[400];
    st_qualname(name, sizeof(name), t->schema, t->name);
    if(t->match) {
      s->matching++;
      st_pass(c, id, "%s: %lld rows on both sides, checksums equal", name, t->src.rows);
      continue;
    }
    s->differing++;
    describe_side(a, sizeof(a), &t->src);
    describe_side(b, sizeof(b), &t->dst);
    if(fail_lines)
      st_print(c, "FAIL %s: %s differs: source %s, target %s", id, name, a, b);
    else
      st_warn(c, id, "%s differs: source %s, target %s", name, a, b);
    if(t->src.transient || t->dst.transient) {
      s->transient = true;
      if(PQstatus(c->src_c) != CONNECTION_OK || PQstatus(c->dst_c) != CONNECTION_OK)
        break; /* a lost connection fails every table after it the same way */
    }
  }
}

static gw_rc side_json(const struct st_ctx *c, struct strbuf *sb, const char *rows_key,
                       const char *sum_key, const struct dc_side *d)
{
  gw_rc rc = d->ok ? strbuf_addf(sb, ",\"%s\":%lld", rows_key, d->rows)
                   : strbuf_addf(sb, ",\"%s\":null", rows_key);
  if(!rc && d->ok)
    rc = strbuf_addf(sb, ",\"%s\":\"%s\"", sum_key, d->checksum);
  else if(!rc)
    rc = strbuf_addf(sb, ",\"%s\":null", sum_key);
  (void)c;
  return rc;
}

gw_rc dc_render(const struct st_ctx *c, struct strbuf *sb, const struct dc_set *s, size_t max,
                size_t strmax, bool differing_only, size_t *omitted, bool *cut)
{
  gw_rc rc = strbuf_addc(sb, '[');
  size_t k = 0;
  *omitted = 0;
  for(int pass = 0; pass < 2 && !rc; pass++) {
    if(pass == 1 && differing_only)
      break;
    for(size_t i = 0; i < s->n && !rc; i++) {
      const struct dc_table *t = &s->v[i];
      if(t->match != (pass == 1))
        continue;
      if(k >= max) {
        (*omitted)++;
        continue;
      }
      char name[300];
      st_qualname(name, sizeof(name), t->schema, t->name);
      rc = strbuf_adds(sb, k++ ? ",{\"table\":" : "{\"table\":");
      if(!rc)
        rc = st_json_str(c, sb, name, strmax, cut);
      if(!rc)
        rc = side_json(c, sb, "sourceRows", "sourceChecksum", &t->src);
      if(!rc)
        rc = side_json(c, sb, "targetRows", "targetChecksum", &t->dst);
      if(!rc && !t->match) {
        char err[700] = "";
        if(t->src.err[0])
          st_fmt(err, sizeof(err), "source: %s", t->src.err);
        if(t->dst.err[0])
          st_fmt(err + strlen(err), sizeof(err) - strlen(err), "%starget: %s",
                   err[0] ? "; " : "", t->dst.err);
        if(err[0])
          rc = st_json_field(c, sb, "error", err, strmax, cut);
      }
      if(!rc)
        rc = strbuf_addc(sb, '}');
    }
  }
  if(!rc)
    rc = strbuf_addc(sb, ']');
  return rc;
}

/* ----- sequences ---------------------------------------------------------------------------- */

static void seq_fail(struct st_ctx *c, struct sq_result *r, const char *id, const char *name,
                     const char *what, const struct pgc_err *e)
{
  r->failed++;
  r->transient |= st_transient_state(e);
  char msg[400];
  st_fmt(msg, sizeof(msg), "%s: could not %s: %s%s%s%s", name, what, e->msg,
           e->sqlstate[0] ? " (SQLSTATE " : "", e->sqlstate, e->sqlstate[0] ? ")" : "");
  if(!r->first_error[0])
    st_fmt(r->first_error, sizeof(r->first_error), "%s", msg);
  st_print(c, "FAIL %s: %s", id, msg);
}

static void sync_one(struct st_ctx *c, struct sq_result *r, const char *id, const char *schema,
                     const char *seq, bool must_exist)
{
  char name[300];
  st_qualname(name, sizeof(name), schema, seq);
  char *q = quoted(c->src_c, schema, seq);
  if(!q) {
    struct pgc_err e = { .msg = "out of memory" };
    seq_fail(c, r, id, name, "quote the name", &e);
    return;
  }
  struct pgc_err e;
  const char *p1[] = { q };
  char exists_t[8] = "";
  if(pgc_value(c->dst_c, &e, exists_t, sizeof(exists_t),
               "SELECT pg_catalog.to_regclass($1) IS NOT NULL", 1, p1)) {
    seq_fail(c, r, id, name, "look the sequence up on the target", &e);
    free(q);
    return;
  }
  if(exists_t[0] != 't') {
    if(must_exist) {
      struct pgc_err m = { .msg = "the sequence does not exist on the target" };
      seq_fail(c, r, id, name, "sync it", &m);
    } else {
      r->skipped++;
      st_print(c, "SKIP %s: %s does not exist on the target", id, name);
    }
    free(q);
    return;
  }
  size_t n = strlen(q) + 64;
  char *sql = malloc(n);
  if(!sql) {
    free(q);
    return;
  }
  st_fmt(sql, n, "SELECT last_value, is_called FROM %s", q);
  PGresult *res = pgc_query(c->src_c, &e, sql, 0, NULL);
  free(sql);
  if(!res) {
    seq_fail(c, r, id, name, "read it on the source", &e);
    free(q);
    return;
  }
  char last[32], called[8];
  st_fmt(last, sizeof(last), "%s", PQgetvalue(res, 0, 0));
  st_fmt(called, sizeof(called), "%s", PQgetvalue(res, 0, 1));
  PQclear(res);
  const char *p3[] = { q, last, called };
  char got[32];
  if(pgc_value(c->dst_c, &e, got, sizeof(got),
               "SELECT pg_catalog.setval($1::pg_catalog.regclass, $2::pg_catalog.int8, "
               "$3::pg_catalog.bool)",
               3, p3)) {
    seq_fail(c, r, id, name, "setval on the target", &e);
    free(q);
    return;
  }
  r->synced++;
  st_pass(c, id, "%s set to %s (is_called %s) on the target", name, last,
          called[0] == 't' ? "true" : "false");
  free(q);
}

static bool wd_lists_seq(const struct wd_catalog *w, const char *schema, const char *name)
{
  for(size_t i = 0; i < w->nseqs; i++)
    if(!strcmp(w->seqs[i].schema, schema) && !strcmp(w->seqs[i].name, name))
      return true;
  return false;
}

void dc_sync_sequences(struct st_ctx *c, const struct wd_catalog *w, struct sq_result *r,
                       const char *id)
{
  memset(r, 0, sizeof(*r));
  bool listed = w && w->readable && w->have_seqs;
  if(listed) {
    r->total = w->nseqs;
    for(size_t i = 0; i < w->nseqs; i++)
      sync_one(c, r, id, w->seqs[i].schema, w->seqs[i].name, true);
  }
  /* Then the source's sequences the list lacks, where the target has them: with any filter,
   * pgcopydb 0.10 lists only sequences owned by a table column, while pre-data restored the
   * standalone ones too (observed: sales.invoice_seq stayed at 1). */
  struct pgc_err e;
  PGresult *res = pgc_query(c->src_c, &e, source_seqs_sql, 0, NULL);
  if(!res) {
    seq_fail(c, r, id, "sequences", "list them on the source", &e);
    return;
  }
  for(int i = 0; i < PQntuples(res); i++) {
    if(listed && wd_lists_seq(w, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1)))
      continue;
    r->total++;
    sync_one(c, r, id, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), false);
  }
  PQclear(res);
}
