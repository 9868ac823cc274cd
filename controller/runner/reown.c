/*
 * reown.c: `godwit-runner reown --owner R`: clone.ownerAfterRestore. On the target, as the
 * migration role (the user of GODWIT_TARGET_URI), in the target database:
 *
 *   ALTER SCHEMA s OWNER TO R                      schemas it owns
 *   ALTER TABLE|VIEW|MATERIALIZED VIEW|SEQUENCE|FOREIGN TABLE s.n OWNER TO R
 *                                                  relations it owns (a sequence owned by a
 *                                                  table column moves with its table: ALTER
 *                                                  SEQUENCE refuses it)
 *   ALTER FUNCTION|PROCEDURE|AGGREGATE s.f(args) OWNER TO R
 *   ALTER TYPE|DOMAIN s.t OWNER TO R               enums, composites, ranges and their
 *                                                  multiranges (PostgreSQL 15 does not move a
 *                                                  multirange with its range), base types,
 *                                                  domains (not array types nor a table's row
 *                                                  type: they follow)
 *
 * outside pg_catalog, information_schema and pg_toast, not extension members (an extension's
 * objects belong to it). Schemas go first: R then owns them, so it has the CREATE right on the
 * schema that changing the owner of what is inside requires. Where an object to hand over lives
 * in a schema the migration role does not own (public, owned by pg_database_owner since
 * PostgreSQL 15), R gets that right first: GRANT CREATE ON SCHEMA s TO R (the database owner may
 * grant it on public; elsewhere the GRANT grants nothing without the grant option, and the ALTER
 * that follows names the missing right). Identifiers are quoted by the
 * server (format %I, regprocedure under an empty search_path). One statement per transaction
 * (autocommit): a failure or a kill loses nothing done, and a re-run lists only what the role
 * still owns. The first failure stops the run; its FAIL line and the RESULT line name the exact
 * statement and the server's message (a missing role: `role "x" does not exist`).
 *
 * Exit: 0 nothing left, 1 a statement failed, 2 transient (lock timeout, lost connection).
 */
#include <stdio.h>
#include <string.h>

#include "step.h"

static const struct cfg_opt reown_opts[] = {
  { "owner", NULL, CFG_STR, NULL, 0, 0, ST_OFF(owner),
    "the role that receives the objects (spec.clone.ownerAfterRestore)" },
  { "lock-timeout", NULL, CFG_INT, "30", 0, 3600, ST_OFF(lock_timeout),
    "seconds an ALTER may wait for its lock (0: forever)" },
  { "statement-timeout", NULL, CFG_INT, "300", 0, 86400, ST_OFF(statement_timeout),
    "seconds per statement (0: none)" },
  ST_COMMON_OPTS,
  { NULL },
};

static const char *const pending_sql =
  "WITH me AS (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER),"
  " ns AS (SELECT n.oid, n.nspname, n.nspowner FROM pg_catalog.pg_namespace n"
  "         WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema')"
  " SELECT kind, stmt FROM ("
  "  SELECT 1 AS ord, 'schema' AS kind,"
  "         pg_catalog.format('ALTER SCHEMA %I OWNER TO %I', ns.nspname, $1::text) AS stmt,"
  "         ns.nspname AS k"
  "    FROM ns, me WHERE ns.nspowner = me.oid"
  "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
  "          WHERE d.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass"
  "            AND d.objid = ns.oid AND d.deptype = 'e')"
  "  UNION ALL"
  "  SELECT 1, 'schema privilege',"
  "         pg_catalog.format('GRANT CREATE ON SCHEMA %I TO %I', ns.nspname, $1::text),"
  "         ns.nspname"
  "    FROM ns, me WHERE ns.nspowner <> me.oid"
  "     AND CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = $1::text)"
  "         THEN NOT pg_catalog.has_schema_privilege($1::text, ns.oid, 'CREATE') ELSE false END"
  "     AND (EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace = ns.oid"
  "                   AND c.relowner = me.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f'))"
  "          OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.pronamespace = ns.oid"
  "                      AND p.proowner = me.oid)"
  "          OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.typnamespace = ns.oid"
  "                      AND t.typowner = me.oid AND t.typtype IN ('e', 'd', 'r', 'm', 'b')))"
  "  UNION ALL"
  "  SELECT 2, CASE c.relkind WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'"
  "              WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END,"
  "         pg_catalog.format('ALTER %s %I.%I OWNER TO %I',"
  "           CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'"
  "             WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,"
  "           ns.nspname, c.relname, $1::text),"
  "         ns.nspname || '.' || c.relname"
  "    FROM pg_catalog.pg_class c JOIN ns ON ns.oid = c.relnamespace, me"
  "   WHERE c.relowner = me.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')"
  "     AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
  "          WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid"
  "            AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
  "            AND d.refobjsubid > 0 AND d.deptype IN ('a', 'i')))"
  "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
  "          WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
  "            AND d.objid = c.oid AND d.deptype = 'e')"
  "  UNION ALL"
  "  SELECT 3, CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate'"
  "              ELSE 'function' END,"
  "         pg_catalog.format('ALTER %s %s OWNER TO %I',"
  "           CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'"
  "             ELSE 'FUNCTION' END, p.oid::pg_catalog.regprocedure, $1::text),"
  "         ns.nspname || '.' || p.proname"
  "    FROM pg_catalog.pg_proc p JOIN ns ON ns.oid = p.pronamespace, me"
  "   WHERE p.proowner = me.oid"
  "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
  "          WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
  "            AND d.objid = p.oid AND d.deptype = 'e')"
  "  UNION ALL"
  "  SELECT 4, CASE t.typtype WHEN 'd' THEN 'domain' ELSE 'type' END,"
  "         pg_catalog.format('ALTER %s %I.%I OWNER TO %I',"
  "           CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, ns.nspname, t.typname,"
  "           $1::text),"
  "         ns.nspname || '.' || t.typname"
  "    FROM pg_catalog.pg_type t JOIN ns ON ns.oid = t.typnamespace, me"
  "   WHERE t.typowner = me.oid"
  "     AND (t.typtype IN ('e', 'd', 'r', 'm', 'b')"
  "          OR (t.typtype = 'c' AND (SELECT c2.relkind FROM pg_catalog.pg_class c2"
  "                                    WHERE c2.oid = t.typrelid) = 'c'))"
  "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type ar WHERE ar.typarray = t.oid)"
  "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
  "          WHERE d.classid = 'pg_catalog.pg_type'::pg_catalog.regclass"
  "            AND d.objid = t.oid AND d.deptype = 'e')"
  " ) x ORDER BY ord, k COLLATE \"C\", stmt COLLATE \"C\"";

static const char *const kinds[] = { "schema", "schema privilege", "table", "view",
                                     "materialized view", "sequence",
                                     "foreign table", "function", "procedure", "aggregate",
                                     "type", "domain" };
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct reown_out {
  char role[128];
  bool listed;
  size_t run, left, total;
  size_t by_kind[NKINDS];
  char failed_stmt[1024];
  char failed_err[600];
};

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                    bool *cut, void *arg)
{
  const struct reown_out *o = arg;
  gw_rc rc = GW_OK;
  if(c->o.owner)
    rc = st_json_field(c, sb, "owner", c->o.owner, l->str, cut);
  if(!rc && o->role[0])
    rc = st_json_field(c, sb, "role", o->role, l->str, cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"statementsRun\":%zu", o->run);
  if(!rc)
    rc = o->listed ? strbuf_addf(sb, ",\"statementsLeft\":%zu", o->left)
                   : strbuf_adds(sb, ",\"statementsLeft\":null");
  if(!rc)
    rc = strbuf_adds(sb, ",\"byKind\":{");
  for(size_t i = 0, k = 0; i < NKINDS && !rc; i++)
    if(o->by_kind[i])
      rc = strbuf_addf(sb, "%s\"%s\":%zu", k++ ? "," : "", kinds[i], o->by_kind[i]);
  if(!rc)
    rc = strbuf_addc(sb, '}');
  if(!rc && o->failed_stmt[0]) {
    rc = strbuf_adds(sb, ",\"failed\":{\"statement\":");
    if(!rc)
      rc = st_json_str(c, sb, o->failed_stmt, l->str > 1000 ? 1000 : l->str + 200, cut);
    if(!rc)
      rc = st_json_field(c, sb, "error", o->failed_err, l->str, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  return rc;
}

static PGresult *pending(struct st_ctx *c, struct pgc_err *e)
{
  const char *p[] = { c->o.owner };
  return pgc_query(c->dst_c, e, pending_sql, 1, p);
}

int reown_main(int argc, char **argv)
{
  struct st_ctx c;
  struct reown_out o = { 0 };
  PGresult *res = NULL;
  int rc = st_init(&c, "reown", "ReownReport", reown_opts,
                   "Hands every schema, relation, routine and type the migration role owns in the\n"
                   "target database over to --owner, one ALTER ... OWNER TO per transaction; a\n"
                   "re-run picks up what is left. Credentials: GODWIT_TARGET_URI.\n"
                   "Exit: 0 nothing left, 1 a statement failed (named), 2 transient.",
                   argc, argv);
  if(rc == 1)
    return RUNNER_EXIT_PASSED;
  if(rc < 0 || st_endpoints(&c, false, true))
    goto done;
  if(!c.o.owner || !*c.o.owner) {
    st_fail(&c, false, "config", "--owner is required");
    st_summary(&c, "--owner is required");
    goto done;
  }
  if(!st_connect(&c, ST_TARGET, "target.connect")) {
    goto done; /* st_connect wrote the summary */
  }
  struct pgc_err e;
  if(pgc_value(c.dst_c, &e, o.role, sizeof(o.role), "SELECT CURRENT_USER::text", 0, NULL) ||
     pgc_exec(c.dst_c, &e, "SELECT pg_catalog.set_config('search_path', '', false)")) {
    st_query_failed(&c, "reown.list", "prepare the session", &e);
    st_summary(&c, "could not prepare the session");
    goto done;
  }
  if(!strcmp(o.role, c.o.owner)) {
    o.listed = true;
    st_pass(&c, "reown.list", "the migration role is %s itself: nothing to hand over",
            c.o.owner);
    st_summary(&c, "the migration role is the owner: nothing to do");
    goto done;
  }
  res = pending(&c, &e);
  if(!res) {
    st_query_failed(&c, "reown.list", "list the objects the migration role owns", &e);
    st_summary(&c, "could not list the objects");
    goto done;
  }
  o.total = (size_t)PQntuples(res);
  st_pass(&c, "reown.list", "role %s owns %zu schemas, relations, routines and types in %s to "
                            "hand over to %s",
          o.role, o.total, c.dst.db, c.o.owner);
  for(size_t i = 0; i < o.total; i++) {
    const char *kind = PQgetvalue(res, (int)i, 0), *stmt = PQgetvalue(res, (int)i, 1);
    if(pgc_exec(c.dst_c, &e, stmt)) {
      st_fmt(o.failed_stmt, sizeof(o.failed_stmt), "%s", stmt);
      st_fmt(o.failed_err, sizeof(o.failed_err), "%s%s%s%s", e.msg,
               e.sqlstate[0] ? " (SQLSTATE " : "", e.sqlstate, e.sqlstate[0] ? ")" : "");
      st_fail(&c, st_transient_state(&e), "reown.alter", "%s: %s", stmt, o.failed_err);
      break;
    }
    o.run++;
    for(size_t k = 0; k < NKINDS; k++)
      if(!strcmp(kinds[k], kind))
        o.by_kind[k]++;
    st_pass(&c, "reown.alter", "%s", stmt);
  }
  PQclear(res);
  res = NULL;
  if(PQstatus(c.dst_c) == CONNECTION_OK && (res = pending(&c, &e))) {
    o.listed = true;
    o.left = (size_t)PQntuples(res);
  }
  if(o.failed_stmt[0] && o.listed)
    st_summary(&c, "%zu statements run, %zu left; failed: %s: %s", o.run,
             o.left, o.failed_stmt, o.failed_err);
  else if(o.failed_stmt[0])
    st_summary(&c, "%zu statements run; failed: %s: %s", o.run,
             o.failed_stmt, o.failed_err);
  else if(o.listed && o.left) {
    st_fail(&c, false, "reown.left", "%zu objects still belong to %s after the run", o.left,
            o.role);
    st_summary(&c, "%zu statements run, %zu left", o.run, o.left);
  } else
    st_summary(&c, "%zu statements run, none left: every object %s "
                                           "owned now belongs to %s",
             o.run, o.role, c.o.owner);
done:
  PQclear(res);
  int code = st_finish(&c, render, &o);
  st_release(&c);
  return code;
}
