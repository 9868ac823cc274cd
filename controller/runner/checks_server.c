/*
 * checks_server.c: connectivity, versions, the superuser URI, database listing, the scope and
 * the source read rights.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "pgcopydb.h"
#include "preflight.h"

static void connect_side(struct pf_ctx *c, struct pf_out *r, enum st_side s)
{
  struct pgc_endpoint *ep = s == ST_SOURCE ? &c->st.src : &c->st.dst;
  PGconn **cp = s == ST_SOURCE ? &c->st.src_c : &c->st.dst_c;
  if(!*cp) {
    char why[512];
    enum pgc_class k = pgc_connect(ep, &c->st.retry, cp, why, sizeof(why));
    if(k != PGC_OK) {
      pf_fail(r, "cannot connect to %s: %s", ep->desc, why);
      r->transient = k == PGC_TRANSIENT;
      if(r->transient)
        pf_block(r,
                 "the server did not answer %d attempts of %d s: check that it runs and that "
                 "the cluster reaches it (host, port, network policy); the step is retried",
                 c->st.retry.attempts, c->st.retry.connect_timeout);
      else
        pf_block(r,
                 "fix the user, password or database of the URI in the Secret named by "
                 "spec.%s.connectionSecretRef, or let the server admit this role (pg_hba.conf, "
                 "CONNECT on the database)",
                 st_side_name(s));
      return;
    }
  }
  struct pgc_err e;
  PGresult *res = pgc_query(*cp,
                            &e,
                            "SELECT 1, current_user, current_setting('server_version'), "
                            "current_setting('server_version_num')::int",
                            0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "run select 1");
    return;
  }
  char *role = s == ST_SOURCE ? c->src_role : c->dst_role;
  char *ver = s == ST_SOURCE ? c->src_ver : c->dst_ver;
  snprintf(role, sizeof(c->src_role), "%s", PQgetvalue(res, 0, 1));
  snprintf(ver, sizeof(c->src_ver), "%s", PQgetvalue(res, 0, 2));
  *(s == ST_SOURCE ? &c->src_num : &c->dst_num) = atoi(PQgetvalue(res, 0, 3));
  PQclear(res);
  pf_pass(r, "%s answered select 1 (PostgreSQL %s)", ep->desc, ver);
}

void pf_chk_connect_source(struct pf_ctx *c, struct pf_out *r)
{
  connect_side(c, r, ST_SOURCE);
}

void pf_chk_connect_target(struct pf_ctx *c, struct pf_out *r)
{
  connect_side(c, r, ST_TARGET);
}

/* Decision: the same major version passes; an older source than target (an upgrade) passes
 * with a warning; a newer source than target fails (pg_restore cannot go back), and so does a
 * source newer than the PostgreSQL pgcopydb was built with (its pg_dump refuses newer servers). */
void pf_chk_versions(struct pf_ctx *c, struct pf_out *r)
{
  int sm = c->src_num / 10000, tm = c->dst_num / 10000, pm = c->pgcopydb.pg_major;
  if(pm && sm > pm) {
    pf_fail(r, "the source runs PostgreSQL %d but pgcopydb %s is built with PostgreSQL %d: its "
               "pg_dump cannot dump a newer server", sm, c->pgcopydb.text, pm);
    pf_block(r, "use a worker image whose pgcopydb is built for PostgreSQL %d or newer", sm);
  } else if(sm > tm) {
    pf_fail(r, "the source runs PostgreSQL %d and the target %d: a dump cannot be restored into "
               "an older major version", sm, tm);
    pf_block(r, "migrate to a target running PostgreSQL %d or newer", sm);
  } else if(sm < tm) {
    pf_warn(r, "the source runs PostgreSQL %d and the target %d: a major version upgrade, "
               "supported by pg_dump and pg_restore; test the application against %d", sm, tm, tm);
  } else {
    pf_pass(r, "both servers run PostgreSQL %d (source %s, target %s)", sm, c->src_ver,
            c->dst_ver);
  }
}

static void parse_version(struct pf_pgcopydb *p, const char *text)
{
  snprintf(p->text, sizeof(p->text), "%s", text);
  p->text[strcspn(p->text, " \n")] = '\0';
  p->known = sscanf(p->text, "%d.%d", &p->major, &p->minor) == 2;
}

static char *slurp(const char *cmd)
{
  FILE *f = popen(cmd, "r");
  if(!f)
    return NULL;
  char *buf = calloc(1, 8192);
  size_t n = buf ? fread(buf, 1, 8191, f) : 0;
  if(buf)
    buf[n] = '\0';
  pclose(f);
  return buf;
}

void pf_detect_pgcopydb(struct pf_pgcopydb *p, const char *override)
{
  memset(p, 0, sizeof(*p));
  if(override && *override) {
    parse_version(p, override);
    return;
  }
  char *out = slurp("pgcopydb version --json 2>/dev/null");
  cJSON *j = NULL;
  char err[128];
  if(out && *out && !json_parse_strict(out, strlen(out), &j, err, sizeof(err))) {
    const char *v = json_get_str(j, "pgcopydb"), *pg = json_get_str(j, "pg_major");
    if(v)
      parse_version(p, v);
    if(pg)
      p->pg_major = atoi(pg);
  }
  cJSON_Delete(j);
  free(out);
  if(p->known)
    return;
  out = slurp("pgcopydb --version 2>/dev/null");
  const char *v = out ? strstr(out, "pgcopydb version ") : NULL;
  if(v)
    parse_version(p, v + strlen("pgcopydb version "));
  free(out);
}

void pf_chk_pgcopydb(struct pf_ctx *c, struct pf_out *r)
{
  const struct pf_pgcopydb *p = &c->pgcopydb;
  if(c->o.include_schemas.n && pf_pgcopydb_older(c, 0, 13)) {
    pf_fail(r, "spec.clone.filters.includeOnlySchemas needs pgcopydb 0.13 or newer, and the "
               "worker runs %s, which would ignore the section and copy every schema", p->text);
    pf_block(r, "list the schemas to leave out in spec.clone.filters.excludeSchemas instead, or "
                "use a worker image with pgcopydb 0.13 or newer");
    return;
  }
  const struct pgcopydb_version v = { p->known, p->major, p->minor };
  const char *want = c->st.o.plugin;
  if(c->o.follow && want && *want && !pgcopydb_plugin_supported(&v, want)) {
    const char *can[PGCOPYDB_MAX_PLUGINS];
    size_t n = pgcopydb_plugins(&v, can);
    pf_fail(r, "pgcopydb %s decodes changes with %s%s%s, not \"%s\"",
            p->known ? p->text : "(version unknown)", can[0], n > 1 ? " or " : " only",
            n > 1 ? can[1] : "", want);
    pf_block(r, "leave --output-plugin out (the preflight chooses), or use a worker image whose "
                "pgcopydb decodes with %s", want);
    return;
  }
  if(!p->known) {
    pf_warn(r, "pgcopydb's version is unknown (not on PATH, no --pgcopydb-version): the checks "
               "assume the newest pgcopydb");
    return;
  }
  if(p->pg_major)
    pf_pass(r, "pgcopydb %s, built for PostgreSQL %d", p->text, p->pg_major);
  else
    pf_pass(r, "pgcopydb %s", p->text);
}

static void su_side(struct pf_ctx *c, struct pf_out *r, enum st_side s)
{
  struct pgc_endpoint *ep = s == ST_SOURCE ? &c->su_src : &c->su_dst;
  PGconn **cp = s == ST_SOURCE ? &c->su_src_c : &c->su_dst_c;
  if(!*cp) {
    char why[512];
    enum pgc_class k = pgc_connect(ep, &c->st.retry, cp, why, sizeof(why));
    if(k != PGC_OK) {
      pf_fail(r, "cannot connect to %s: %s", ep->desc, why);
      r->transient = k == PGC_TRANSIENT;
      pf_block(r, "fix the user or password of the URI in the Secret named by "
                  "spec.superuserSecretRef (its host and database are not used: each side's "
                  "come from spec.%s)", st_side_name(s));
      return;
    }
  }
  char super[8];
  struct pgc_err e;
  if(pgc_value(*cp, &e, super, sizeof(super),
               "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", 0, NULL)) {
    pf_query_failed(r, &e, "read the superuser's role");
    return;
  }
  if(strcmp(super, "t"))
    pf_warn(r, "%s connects, but the role is not a superuser: a grant it has no right to give "
               "will fail", ep->desc);
  else
    pf_pass(r, "%s connects (superuser)", ep->desc);
}

void pf_chk_su_source(struct pf_ctx *c, struct pf_out *r)
{
  su_side(c, r, ST_SOURCE);
}

void pf_chk_su_target(struct pf_ctx *c, struct pf_out *r)
{
  su_side(c, r, ST_TARGET);
}

/* pgcopydb reads pg_database (encoding, properties); 0.18's --all-databases lists every
 * database. godwit does not offer --all-databases, so the probe is the listing alone. */
void pf_chk_listing(struct pf_ctx *c, struct pf_out *r)
{
  char n[2][32];
  for(int s = 0; s < 2; s++) {
    struct pgc_err e;
    if(pgc_value(pf_conn(c, (enum st_side)s), &e, n[s], sizeof(n[s]),
                 "SELECT count(*) FROM pg_catalog.pg_database", 0, NULL)) {
      char what[160];
      snprintf(what, sizeof(what), "list the databases on the %s", st_side_name((enum st_side)s));
      pf_query_failed(r, &e, what);
      if(!r->transient)
        pf_block(r, "as a superuser on the %s: GRANT SELECT ON pg_catalog.pg_database TO %s",
                 st_side_name((enum st_side)s), pf_role(c, (enum st_side)s));
      return;
    }
  }
  pf_pass(r, "the migration roles can list the databases (%s on the source, %s on the target)",
          n[0], n[1]);
}

void pf_chk_scope(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  if(pf_scope_load(c, &e)) {
    pf_query_failed(r, &e, "list the source's schemas");
    return;
  }
  char list[400] = "";
  for(size_t i = 0; i < c->nschemas; i++)
    if(i < 12)
      pf_appendf(list, sizeof(list), "%s%s", i ? ", " : "", c->schemas[i]);
  if(c->nschemas > 12)
    pf_appendf(list, sizeof(list), " and %zu more", c->nschemas - 12);
  char missing[300] = "";
  for(size_t i = 0; i < c->o.include_schemas.n; i++) {
    bool found = false;
    for(size_t k = 0; k < c->nschemas && !found; k++)
      found = !strcmp(c->schemas[k], c->o.include_schemas.v[i]);
    if(!found)
      pf_appendf(missing, sizeof(missing), "%s\"%s\"", missing[0] ? ", " : "",
                 c->o.include_schemas.v[i]);
  }
  if(missing[0])
    pf_warn(r, "included schemas missing on the source: %s; %zu schemas in scope: %s", missing,
            c->nschemas, list);
  else if(!c->nschemas)
    pf_warn(r, "no schema in scope on the source: the clone copies no table");
  else
    pf_pass(r, "%zu schemas in scope on the source: %s", c->nschemas, list);
}

/* Not in the grant tiers: the source's tables belong to their owners, who grant SELECT. */
void pf_chk_read(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  char *arr = pgc_text_array((const char *const *)c->schemas, c->nschemas);
  const char *params[] = { arr ? arr : "{}" };
  PGresult *res = pgc_query(
    c->st.src_c, &e,
    "SELECT n.nspname, coalesce(c.relname, ''), c.relkind::text, "
    "       has_schema_privilege(n.oid, 'USAGE') "
    "FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid "
    "     AND c.relkind IN ('r', 'p', 'S') AND c.relpersistence <> 't' "
    "     AND NOT has_table_privilege(c.oid, 'SELECT') "
    "WHERE n.nspname = ANY($1::text[]) "
    "  AND (c.oid IS NOT NULL OR NOT has_schema_privilege(n.oid, 'USAGE')) "
    "ORDER BY 1, 2",
    1, params);
  free(arr);
  if(!res) {
    pf_query_failed(r, &e, "read the source's table privileges");
    return;
  }
  char list[400] = "", fix[600] = "", last[128] = "";
  size_t bad = 0;
  for(int i = 0; i < PQntuples(res); i++) {
    const char *sch = PQgetvalue(res, i, 0), *rel = PQgetvalue(res, i, 1);
    const char *kind = PQgetvalue(res, i, 2);
    if(*rel && (kind[0] == 'r' || kind[0] == 'p') && !pf_table_in_scope(c, sch, rel))
      continue;
    if(bad++ < 8)
      pf_appendf(list, sizeof(list), "%s%s%s%s", bad > 1 ? ", " : "", sch, *rel ? "." : "",
                 *rel ? rel : " (schema)");
    if(strcmp(last, sch)) {
      snprintf(last, sizeof(last), "%s", sch);
      char *qs = pgc_ident(c->st.src_c, sch), *qr = pgc_ident(c->st.src_c, c->src_role);
      if(qs && qr)
        pf_appendf(fix, sizeof(fix), "%sGRANT USAGE ON SCHEMA %s TO %s; GRANT SELECT ON ALL "
                   "TABLES IN SCHEMA %s TO %s; GRANT SELECT ON ALL SEQUENCES IN SCHEMA %s TO %s",
                   fix[0] ? "; " : "", qs, qr, qs, qr, qs, qr);
      free(qs);
      free(qr);
    }
  }
  PQclear(res);
  if(!bad) {
    pf_pass(r, "role \"%s\" can read every table and sequence in scope on the source",
            c->src_role);
    return;
  }
  if(bad > 8)
    pf_appendf(list, sizeof(list), " and %zu more", bad - 8);
  pf_fail(r, "role \"%s\" cannot read %zu relations in scope on the source: %s", c->src_role, bad,
          list);
  pf_block(r, "as their owner or a superuser on the source: %s; or leave them out with "
              "spec.clone.filters", fix);
}
