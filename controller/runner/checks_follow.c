/*
 * checks_follow.c: what a live migration (clone --follow) needs.
 *
 * On the source: wal_level = logical, a free slot and WAL sender, REPLICATION, the output plugin
 * (chosen here: the first of the pgcopydb version's plugins that the server's
 * output_plugin_libraries allows and that is installed, see shared/pgcopydb.h), pgcopydb's
 * sentinel schema (0.10 to 0.17 keep it in the source database, so they need CREATE
 * there), and tables whose changes can be replayed (a usable replica identity, logged).
 * On the target, where pgcopydb's apply runs (observed with 0.10: docs/dev/pgcopydb-observed.md):
 * EXECUTE on the pg_replication_origin_* functions, and the right to SET
 * session_replication_role (newer pgcopydb sets it to replica; 0.10 does not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pgcopydb.h"
#include "preflight.h"

static bool passed(const struct pf_ctx *c, const char *id)
{
  for(size_t i = 0; i < c->nout; i++)
    if(!strcmp(c->out[i].id, id))
      return c->out[i].status == PF_PASS || c->out[i].status == PF_WARN;
  return false;
}

void pf_chk_wal_level(struct pf_ctx *c, struct pf_out *r)
{
  char v[32];
  struct pgc_err e;
  if(pgc_value(c->st.src_c, &e, v, sizeof(v), "SELECT current_setting('wal_level')", 0, NULL)) {
    pf_query_failed(r, &e, "read wal_level on the source");
    return;
  }
  if(!strcmp(v, "logical")) {
    pf_pass(r, "wal_level is logical on the source");
    return;
  }
  pf_fail(r, "wal_level is %s on the source: logical decoding needs wal_level = logical", v);
  pf_block(r, "as a superuser on the source: ALTER SYSTEM SET wal_level = logical, then restart "
              "the server (managed services: the provider's logical replication parameter)");
}

void pf_chk_slots(struct pf_ctx *c, struct pf_out *r)
{
  const char *params[] = { c->st.o.slot_name };
  struct pgc_err e;
  PGresult *res = pgc_query(c->st.src_c, &e,
                            "SELECT current_setting('max_replication_slots')::int, "
                            "(SELECT count(*) FROM pg_replication_slots)::int, "
                            "current_setting('max_wal_senders')::int, "
                            "(SELECT count(*) FROM pg_stat_replication)::int, "
                            "EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)",
                            1, params);
  if(!res) {
    pf_query_failed(r, &e, "read the source's replication slots");
    return;
  }
  int maxs = atoi(PQgetvalue(res, 0, 0)), used = atoi(PQgetvalue(res, 0, 1));
  int maxw = atoi(PQgetvalue(res, 0, 2)), senders = atoi(PQgetvalue(res, 0, 3));
  bool taken = PQgetvalue(res, 0, 4)[0] == 't';
  PQclear(res);
  char *lit = PQescapeLiteral(c->st.src_c, c->st.o.slot_name, strlen(c->st.o.slot_name));
  if(taken) {
    pf_fail(r, "a replication slot named \"%s\" already exists on the source (another migration, "
               "or one not cleaned up): pgcopydb would fail to create it", c->st.o.slot_name);
    pf_block(r, "if no migration uses it, on the source: SELECT pg_drop_replication_slot(%s) "
                "(or pgcopydb stream cleanup)", lit ? lit : "?");
  } else if(maxs - used < 1) {
    pf_fail(r, "all %d replication slots of the source are in use", maxs);
    pf_block(r, "drop an unused slot on the source (SELECT pg_drop_replication_slot('name')), or "
                "raise max_replication_slots (ALTER SYSTEM, then restart)");
  } else if(maxw - senders < 1) {
    pf_fail(r, "all %d WAL senders of the source are busy", maxw);
    pf_block(r, "raise max_wal_senders on the source (ALTER SYSTEM, then restart)");
  } else {
    pf_pass(r, "%d of %d replication slots and %d of %d WAL senders free on the source; no slot "
               "named \"%s\" yet", maxs - used, maxs, maxw - senders, maxw, c->st.o.slot_name);
  }
  PQfreemem(lit);
}

void pf_chk_replication_role(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  PGresult *res = pgc_query(c->st.src_c, &e,
                            "SELECT rolreplication, rolsuper FROM pg_roles "
                            "WHERE rolname = current_user",
                            0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "read the source role's attributes");
    return;
  }
  bool ok = PQgetvalue(res, 0, 0)[0] == 't' || PQgetvalue(res, 0, 1)[0] == 't';
  PQclear(res);
  if(ok) {
    pf_pass(r, "role \"%s\" may use replication on the source", c->src_role);
    return;
  }
  pf_fail(r, "role \"%s\" has neither REPLICATION nor superuser on the source: it cannot create "
             "the replication slot", c->src_role);
  char *q = pgc_ident(c->st.src_c, c->src_role);
  if(q)
    pf_fix(c, r, PF_FOLLOW, ST_SOURCE, "ALTER ROLE %s REPLICATION", q);
  free(q);
}

/* Creates and drops a temporary logical slot with plugin: proves that the plugin is installed,
 * that the server allows it, and that a slot can be made. A slot waits for running transactions
 * to finish; a source busy with a long one makes this wait, bounded by a statement timeout.
 * 0, or -1 with e filled. */
static int try_slot(struct pf_ctx *c, const char *plugin, struct pgc_err *e)
{
  char name[64];
  snprintf(name, sizeof(name), "godwit_preflight_%ld", (long)getpid());
  const char *params[] = { name, plugin };
  struct pgc_err ignored;
  (void)pgc_exec(c->st.src_c, &ignored, "SET statement_timeout = '20s'");
  PGresult *res = pgc_query(c->st.src_c, e,
                            "SELECT lsn FROM pg_create_logical_replication_slot($1, $2, true)", 2,
                            params);
  if(res) {
    PQclear(res);
    PQclear(pgc_query(c->st.src_c, &ignored, "SELECT pg_drop_replication_slot($1)", 1, params));
  }
  (void)pgc_exec(c->st.src_c, &ignored, "RESET statement_timeout");
  return res ? 0 : -1;
}

/* The source's output_plugin_libraries. The setting is readable by superusers and
 * pg_read_all_settings only; a migration role that may not read it learns only that it exists,
 * and the superuser's session reads it when there is one. */
struct allowed_list {
  bool has;   /* the server has the setting (not 15.18 and older point releases) */
  bool known; /* value holds it */
  char value[400];
};

/* 0 with *isnull, or -1 with e filled. */
static int setting_of(PGconn *conn, struct pgc_err *e, char *out, size_t len, bool *isnull)
{
  PGresult *res = pgc_query(conn, e, "SELECT current_setting('output_plugin_libraries', true)",
                            0, NULL);
  if(!res)
    return -1;
  *isnull = PQgetisnull(res, 0, 0); /* missing_ok: NULL where the setting does not exist */
  snprintf(out, len, "%s", *isnull ? "" : PQgetvalue(res, 0, 0));
  PQclear(res);
  return 0;
}

static int read_allowed(struct pf_ctx *c, struct pgc_err *e, struct allowed_list *l)
{
  memset(l, 0, sizeof(*l));
  bool isnull = false;
  if(!setting_of(c->st.src_c, e, l->value, sizeof(l->value), &isnull)) {
    l->has = l->known = !isnull;
    return 0;
  }
  if(strcmp(e->sqlstate, "42501"))
    return -1;
  l->has = true; /* it exists, and role may not read it */
  struct pgc_err ignored;
  l->known = c->su_src_c &&
             !setting_of(c->su_src_c, &ignored, l->value, sizeof(l->value), &isnull) && !isnull;
  return 0;
}

/* The list a statement starts from when the migration role may not read the setting and no
 * superuser session could: the server's default. */
#define DEFAULT_PLUGIN_LIBRARIES "pgoutput, test_decoding"

/* The plugin refused by output_plugin_libraries: the server's own words, the current value, and
 * the statements that allow it (applied through spec.superuserSecretRef, like a grant). */
static void not_allowed(struct pf_ctx *c, struct pf_out *r, const char *plugin,
                        const char *const *cand, size_t ncand, const struct allowed_list *l,
                        const struct pgc_err *e)
{
  char tried[128] = "", hint[300] = "", value[480];
  for(size_t i = 0; i < ncand; i++)
    pf_appendf(tried, sizeof(tried), "%s%s", i ? ", " : "", cand[i]);
  if(e->hint[0])
    snprintf(hint, sizeof(hint), " (HINT: %s)", e->hint);
  if(l->known)
    snprintf(value, sizeof(value), "its output_plugin_libraries is '%s'", l->value);
  else
    snprintf(value, sizeof(value), "role \"%s\" may not read its output_plugin_libraries "
                                   "(superusers and pg_read_all_settings may; the statement "
                                   "below keeps the default list '%s', compare it with SHOW "
                                   "output_plugin_libraries)", c->src_role,
             DEFAULT_PLUGIN_LIBRARIES);
  pf_fail(r, "the source server refuses %s as an output plugin: %s%s; %s, and pgcopydb %s "
             "decodes with %s%s%s",
          plugin, e->msg, hint, value, c->pgcopydb.known ? c->pgcopydb.text : "(version unknown)",
          ncand > 1 ? "none of the plugins the server allows and has installed (tried " : "",
          ncand > 1 ? tried : plugin, ncand > 1 ? ")" : " only");
  char list[512];
  if(pg_plugin_list_add(l->known ? l->value : DEFAULT_PLUGIN_LIBRARIES, plugin, list,
                        sizeof(list))) {
    pf_block(r, "as a superuser on the source, add %s to output_plugin_libraries (ALTER SYSTEM "
                "SET, one quoted name per library) and reload the configuration", plugin);
    return;
  }
  pf_fix(c, r, PF_FOLLOW, ST_SOURCE, "ALTER SYSTEM SET output_plugin_libraries = %s", list);
  pf_fix(c, r, PF_FOLLOW, ST_SOURCE, "%s", PF_RELOAD_SQL);
}

/* Whether e is the server refusing the plugin because output_plugin_libraries lacks it. */
static bool refused_by_list(const struct pgc_err *e, const struct allowed_list *l,
                            const char *plugin)
{
  return !strcmp(e->sqlstate, "42501") && l->has &&
         (l->known ? !pg_plugin_allowed(l->value, plugin)
                   : strstr(e->msg, "may not be used as an output plugin") != NULL);
}

/* Chooses the plugin the worker decodes with: the first of pgcopydb's plugins (or the one
 * --output-plugin names) that the source server allows and has installed (pgcopydb.h). */
void pf_chk_output_plugin(struct pf_ctx *c, struct pf_out *r)
{
  if(!passed(c, "source.walLevel") || !passed(c, "source.replicationSlots") ||
     !passed(c, "source.replicationRole")) {
    pf_skip(r, "not tried: needs wal_level = logical, a free slot and REPLICATION first");
    return;
  }
  const struct pgcopydb_version v = { c->pgcopydb.known, c->pgcopydb.major, c->pgcopydb.minor };
  const char *cand[PGCOPYDB_MAX_PLUGINS];
  size_t n = pgcopydb_plugins(&v, cand);
  if(c->st.o.plugin && *c->st.o.plugin) {
    cand[0] = c->st.o.plugin;
    n = 1;
  }
  struct allowed_list l;
  struct pgc_err e, refused = { 0 }, missing = { 0 };
  const char *refused_p = NULL, *missing_p = NULL;
  if(read_allowed(c, &e, &l)) {
    pf_query_failed(r, &e, "read output_plugin_libraries on the source");
    return;
  }
  for(size_t i = 0; i < n; i++) {
    if(!try_slot(c, cand[i], &e)) {
      snprintf(c->plugin, sizeof(c->plugin), "%s", cand[i]);
      pf_pass(r, "the worker decodes with %s: a temporary logical slot with it was created and "
                 "dropped on the source%s%s%s", cand[i], l.known ? " (output_plugin_libraries '" : "",
              l.known ? l.value : "", l.known ? "')" : "");
      return;
    }
    if(!strcmp(e.sqlstate, "57014")) {
      snprintf(c->plugin, sizeof(c->plugin), "%s", cand[i]);
      pf_warn(r, "creating a logical slot with %s waited 20 s for transactions running on the "
                 "source: pgcopydb will wait for them too (see pg_stat_activity for long "
                 "transactions)", cand[i]);
      return;
    }
    if(refused_by_list(&e, &l, cand[i])) {
      if(!refused_p) {
        refused = e;
        refused_p = cand[i];
      }
    } else if(!strcmp(e.sqlstate, "58P01")) {
      if(!missing_p) {
        missing = e;
        missing_p = cand[i];
      }
    } else {
      pf_query_failed(r, &e, "create a temporary logical slot on the source");
      return;
    }
  }
  if(refused_p) {
    not_allowed(c, r, refused_p, cand, n, &l, &refused);
    return;
  }
  pf_fail(r, "the output plugin %s is not installed on the source server: %s", missing_p,
          missing.msg);
  pf_block(r, "install %s on the source server (%s; managed services: enable the plugin)",
           missing_p, strcmp(missing_p, "wal2json") ? "it ships with the server"
                                                    : "Debian: postgresql-15-wal2json");
}

/* 0.10 to 0.17: `create schema if not exists pgcopydb`, `drop table if exists pgcopydb.sentinel`
 * and `create table pgcopydb.sentinel` on the source database (observed with 0.10). */
void pf_chk_sentinel(struct pf_ctx *c, struct pf_out *r)
{
  if(c->pgcopydb.known && !pf_pgcopydb_older(c, 0, 18)) {
    pf_skip(r, "pgcopydb %s keeps its sentinel outside the source database", c->pgcopydb.text);
    return;
  }
  struct pgc_err e;
  PGresult *res = pgc_query(
    c->st.src_c, &e,
    "SELECT has_database_privilege(current_database(), 'CREATE'), current_database(), "
    "  n.oid IS NOT NULL, "
    "  coalesce(has_schema_privilege(n.oid, 'USAGE') AND has_schema_privilege(n.oid, 'CREATE'), "
    "           false), "
    "  EXISTS (SELECT 1 FROM pg_class s WHERE s.relnamespace = n.oid AND s.relname = 'sentinel') "
    "FROM (SELECT 1) x LEFT JOIN pg_namespace n ON n.nspname = 'pgcopydb'",
    0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "read the source database's privileges");
    return;
  }
  bool dbcreate = PQgetvalue(res, 0, 0)[0] == 't', exists = PQgetvalue(res, 0, 2)[0] == 't';
  bool usable = PQgetvalue(res, 0, 3)[0] == 't', sentinel = PQgetvalue(res, 0, 4)[0] == 't';
  char db[128];
  snprintf(db, sizeof(db), "%s", PQgetvalue(res, 0, 1));
  PQclear(res);
  if(sentinel) {
    pf_fail(r, "pgcopydb.sentinel already exists in the source database \"%s\": another live "
               "migration from it may be running, and clone --follow drops and recreates that "
               "table", db);
    pf_block(r, "finish or clean up the other migration (pgcopydb stream cleanup); if none runs, "
                "on the source: DROP SCHEMA pgcopydb CASCADE");
  } else if(exists && !usable) {
    pf_fail(r, "a pgcopydb schema left in the source database \"%s\" is not usable by role "
               "\"%s\"", db, c->src_role);
    pf_block(r, "on the source: DROP SCHEMA pgcopydb CASCADE (pgcopydb creates it again)");
  } else if(exists || dbcreate) {
    pf_pass(r, "role \"%s\" can create pgcopydb's sentinel schema in the source database \"%s\"",
            c->src_role, db);
  } else {
    pf_fail(r, "role \"%s\" lacks CREATE on the source database \"%s\": pgcopydb %s keeps its "
               "follow sentinel in a pgcopydb schema there", c->src_role, db,
            c->pgcopydb.known ? c->pgcopydb.text : "before 0.18");
    char *qd = pgc_ident(c->st.src_c, db), *qr = pgc_ident(c->st.src_c, c->src_role);
    if(qd && qr)
      pf_fix(c, r, PF_FOLLOW, ST_SOURCE, "GRANT CREATE ON DATABASE %s TO %s", qd, qr);
    free(qd);
    free(qr);
  }
}

static bool identity_ok(const struct pf_table *t)
{
  return t->replident == 'f' || (t->replident == 'd' && t->has_pk) ||
         (t->replident == 'i' && t->has_ri_index);
}

static bool is_unlogged(const struct pf_table *t)
{
  return t->unlogged;
}

/* Lists the in-scope tables failing ok(); returns how many. fix gets the first table's
 * statement from fmt (two %s: the quoted schema and table). */
static size_t list_tables(struct pf_ctx *c, bool (*bad)(const struct pf_table *), char *list,
                          size_t len, char *fix, size_t fixlen, const char *fmt)
{
  size_t n = 0;
  for(size_t i = 0; i < c->ntables; i++) {
    const struct pf_table *t = &c->tables[i];
    if(!bad(t))
      continue;
    if(n++ < 8)
      pf_appendf(list, len, "%s%s.%s", n > 1 ? ", " : "", t->schema, t->name);
    if(n == 1) {
      char *qs = pgc_ident(c->st.src_c, t->schema), *qt = pgc_ident(c->st.src_c, t->name);
      snprintf(fix, fixlen, fmt, qs ? qs : t->schema, qt ? qt : t->name);
      free(qs);
      free(qt);
    }
  }
  if(n > 8)
    pf_appendf(list, len, " and %zu more", n - 8);
  return n;
}

static bool no_identity(const struct pf_table *t)
{
  return !identity_ok(t) && !t->unlogged;
}

void pf_chk_replica_identity(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  if(pf_tables_load(c, &e)) {
    pf_query_failed(r, &e, "read the source's tables");
    return;
  }
  char list[512] = "", fix[300] = "";
  size_t n = list_tables(c, no_identity, list, sizeof(list), fix, sizeof(fix),
                         "ALTER TABLE %s.%s REPLICA IDENTITY FULL");
  if(!n) {
    pf_pass(r, "every one of the %zu tables in scope has a usable replica identity",
            c->ntables);
    return;
  }
  pf_fail(r, "%zu tables in scope have no usable replica identity, so their UPDATEs and DELETEs "
             "would be lost (wal2json: \"no tuple identifier\"): %s", n, list);
  pf_block(r, "give each table a primary key, or on the source: %s (and the same for the "
              "others); or leave them out with spec.clone.filters.excludeTables", fix);
}

void pf_chk_unlogged(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  if(pf_tables_load(c, &e)) {
    pf_query_failed(r, &e, "read the source's tables");
    return;
  }
  char list[512] = "", fix[300] = "";
  size_t n = list_tables(c, is_unlogged, list, sizeof(list), fix, sizeof(fix),
                         "ALTER TABLE %s.%s SET LOGGED");
  if(!n) {
    pf_pass(r, "no unlogged table in scope");
    return;
  }
  pf_fail(r, "%zu unlogged tables in scope: logical decoding never sees their changes: %s", n,
          list);
  pf_block(r, "on the source: %s (and the same for the others); or leave them out with "
              "spec.clone.filters.excludeTables", fix);
}

void pf_chk_origin(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  PGresult *res = pgc_query(c->st.dst_c, &e,
                            "SELECT p.oid::regprocedure::text, "
                            "has_function_privilege(p.oid, 'EXECUTE') FROM pg_proc p "
                            "WHERE p.pronamespace = 'pg_catalog'::regnamespace "
                            "AND p.proname LIKE 'pg\\_replication\\_origin\\_%' ORDER BY 1",
                            0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "read the target's replication origin functions");
    return;
  }
  int n = PQntuples(res), missing = 0;
  char *qr = pgc_ident(c->st.dst_c, c->dst_role);
  for(int i = 0; i < n && qr; i++)
    if(PQgetvalue(res, i, 1)[0] != 't') {
      missing++;
      pf_fix(c, r, PF_FOLLOW, ST_TARGET, "GRANT EXECUTE ON FUNCTION pg_catalog.%s TO %s",
             PQgetvalue(res, i, 0), qr);
    }
  free(qr);
  PQclear(res);
  if(missing)
    pf_fail(r, "role \"%s\" cannot execute %d of the %d pg_replication_origin_* functions on the "
               "target, where pgcopydb tracks the replay position", c->dst_role, missing, n);
  else
    pf_pass(r, "role \"%s\" can execute the %d pg_replication_origin_* functions on the target",
            c->dst_role, n);
}

void pf_chk_session_role(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e, ignored;
  int rc = pgc_exec(c->st.dst_c, &e, "BEGIN");
  if(!rc)
    rc = pgc_exec(c->st.dst_c, &e, "SET LOCAL session_replication_role = replica");
  (void)pgc_exec(c->st.dst_c, &ignored, "ROLLBACK");
  if(!rc) {
    pf_pass(r, "role \"%s\" may SET session_replication_role on the target (tried in a "
               "rolled-back transaction)", c->dst_role);
    return;
  }
  if(strcmp(e.sqlstate, "42501")) {
    pf_query_failed(r, &e, "try SET session_replication_role on the target");
    return;
  }
  pf_fail(r, "role \"%s\" may not SET session_replication_role on the target: pgcopydb's apply "
             "sets it to replica (newer versions apply nothing without it)", c->dst_role);
  if(c->dst_num < 150000) {
    pf_block(r, "before PostgreSQL 15 only a superuser may set it: run the migration as a "
                "superuser on the target");
    return;
  }
  char *q = pgc_ident(c->st.dst_c, c->dst_role);
  if(q)
    pf_fix(c, r, PF_FOLLOW, ST_TARGET, "GRANT SET ON PARAMETER session_replication_role TO %s", q);
  free(q);
}
