/*
 * checks_clone.c: the clone tier on the target: the extensions the clone creates, CREATE on the
 * database and on every in-scope schema, clone.ownerAfterRestore, and the database owner for
 * database properties. The grants go to the target's migration role.
 */
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

/* GRANT "owner" TO "role" on the target, clone tier. */
static void fix_membership(struct pf_ctx *c, struct pf_out *r, const char *owner)
{
  char *qo = pgc_ident(c->st.dst_c, owner), *qr = pgc_ident(c->st.dst_c, c->dst_role);
  if(qo && qr)
    pf_fix(c, r, PF_CLONE, ST_TARGET, "GRANT %s TO %s", qo, qr);
  else
    pf_block(r, "out of memory");
  free(qo);
  free(qr);
}

static bool dst_is_super(struct pf_ctx *c)
{
  char v[8] = "";
  struct pgc_err e;
  return !pgc_value(c->st.dst_c, &e, v, sizeof(v),
                    "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", 0, NULL) &&
         !strcmp(v, "t");
}

/* One extension: appends to ok or bad; may add a fix or block. */
static void one_extension(struct pf_ctx *c, struct pf_out *r, const char *name, bool super,
                          char *ok, size_t oklen, char *bad, size_t badlen)
{
  const char *params[] = { name };
  struct pgc_err e;
  PGresult *res = pgc_query(
    c->st.dst_c, &e,
    "SELECT e.extversion, pg_get_userbyid(e.extowner), "
    "  coalesce(pg_has_role(e.extowner, 'USAGE'), false), "
    "  (SELECT o.rolsuper FROM pg_roles o WHERE o.oid = e.extowner), a.default_version, "
    "  coalesce((SELECT v.superuser AND NOT v.trusted FROM pg_available_extension_versions v "
    "            WHERE v.name = a.name AND v.version = a.default_version), false) "
    "FROM (SELECT $1::name AS name) x "
    "LEFT JOIN pg_extension e ON e.extname = x.name "
    "LEFT JOIN pg_available_extensions a ON a.name = x.name",
    1, params);
  if(!res) {
    pf_query_failed(r, &e, "read the target's extensions");
    return;
  }
  bool installed = !PQgetisnull(res, 0, 0), available = !PQgetisnull(res, 0, 4);
  const char *owner = PQgetvalue(res, 0, 1);
  bool usable = super || PQgetvalue(res, 0, 2)[0] == 't';
  bool owner_super = PQgetvalue(res, 0, 3)[0] == 't';
  bool needs_super = PQgetvalue(res, 0, 5)[0] == 't';
  if(installed && usable) {
    pf_appendf(ok, oklen, "%s%s %s installed", ok[0] ? ", " : "", name, PQgetvalue(res, 0, 0));
  } else if(installed && owner_super) {
    /* pgcopydb creates extensions with IF NOT EXISTS: a superuser's extension stays as it is. */
    pf_appendf(ok, oklen, "%s%s %s installed by superuser %s (left as it is; role %s cannot "
               "write its configuration tables)", ok[0] ? ", " : "", name,
               PQgetvalue(res, 0, 0), owner, c->dst_role);
    if(r->status == PF_PASS)
      r->status = PF_WARN;
  } else if(installed) {
    pf_appendf(bad, badlen, "%s%s belongs to role \"%s\", of which \"%s\" is not a member",
               bad[0] ? "; " : "", name, owner, c->dst_role);
    fix_membership(c, r, owner);
  } else if(!available) {
    pf_appendf(bad, badlen, "%s%s is not available on the target server", bad[0] ? "; " : "",
               name);
    pf_block(r, "install the extension's package on the target server (Debian: "
                "postgresql-contrib or postgresql-15-<name>), or remove \"%s\" from "
                "spec.clone.extensions", name);
  } else if(needs_super && !super) {
    pf_appendf(bad, badlen, "%s%s needs a superuser to be created (it is not trusted)",
               bad[0] ? "; " : "", name);
    char *q = pgc_ident(c->st.dst_c, name);
    pf_block(r, "as a superuser on the target: CREATE EXTENSION %s (the clone then finds it "
                "installed)", q ? q : name);
    free(q);
  } else {
    pf_appendf(ok, oklen, "%s%s available (%s, the clone creates it)", ok[0] ? ", " : "", name,
               PQgetvalue(res, 0, 4));
  }
  PQclear(res);
}

void pf_chk_extensions(struct pf_ctx *c, struct pf_out *r)
{
  const struct pf_list *l = &c->o.extensions;
  if(!l->n) {
    pf_skip(r, "no extension listed: pgcopydb runs with --skip-extensions, and the target must "
               "already have the extensions the schema uses");
    return;
  }
  bool super = dst_is_super(c);
  char ok[512] = "", bad[512] = "";
  r->status = PF_PASS;
  for(size_t i = 0; i < l->n && !r->transient; i++)
    one_extension(c, r, l->v[i], super, ok, sizeof(ok), bad, sizeof(bad));
  if(r->transient)
    return;
  if(bad[0])
    pf_fail(r, "extensions on the target: %s", bad);
  else if(r->status == PF_WARN)
    pf_warn(r, "extensions on the target: %s", ok);
  else
    pf_pass(r, "extensions on the target: %s", ok);
}

void pf_chk_create_db(struct pf_ctx *c, struct pf_out *r)
{
  struct pgc_err e;
  PGresult *res = pgc_query(c->st.dst_c, &e,
                            "SELECT has_database_privilege(current_database(), 'CREATE'), "
                            "current_database()",
                            0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "read the target database's privileges");
    return;
  }
  const char *db = PQgetvalue(res, 0, 1);
  if(PQgetvalue(res, 0, 0)[0] == 't') {
    pf_pass(r, "role \"%s\" has CREATE on database \"%s\" of the target", c->dst_role, db);
  } else {
    pf_fail(r, "role \"%s\" lacks CREATE on database \"%s\" of the target: pg_restore cannot "
               "create the schemas", c->dst_role, db);
    char *qd = pgc_ident(c->st.dst_c, db), *qr = pgc_ident(c->st.dst_c, c->dst_role);
    if(qd && qr)
      pf_fix(c, r, PF_CLONE, ST_TARGET, "GRANT CREATE ON DATABASE %s TO %s", qd, qr);
    free(qd);
    free(qr);
  }
  PQclear(res);
}

/* PostgreSQL 15 no longer grants CREATE on public to everyone: every in-scope schema that
 * already exists on the target needs USAGE and CREATE for the migration role. */
void pf_chk_create_schemas(struct pf_ctx *c, struct pf_out *r)
{
  char *arr = pgc_text_array((const char *const *)c->schemas, c->nschemas);
  const char *params[] = { arr ? arr : "{}" };
  struct pgc_err e;
  PGresult *res = pgc_query(c->st.dst_c, &e,
                            "SELECT n.nspname, has_schema_privilege(n.oid, 'USAGE'), "
                            "has_schema_privilege(n.oid, 'CREATE') FROM pg_namespace n "
                            "WHERE n.nspname = ANY($1::text[]) ORDER BY 1",
                            1, params);
  free(arr);
  if(!res) {
    pf_query_failed(r, &e, "read the target's schema privileges");
    return;
  }
  char lacking[400] = "", present[400] = "";
  int nbad = 0, n = PQntuples(res);
  for(int i = 0; i < n; i++) {
    const char *s = PQgetvalue(res, i, 0);
    bool usage = PQgetvalue(res, i, 1)[0] == 't', create = PQgetvalue(res, i, 2)[0] == 't';
    pf_appendf(present, sizeof(present), "%s%s", i ? ", " : "", s);
    if(usage && create)
      continue;
    pf_appendf(lacking, sizeof(lacking), "%s%s", nbad++ ? ", " : "", s);
    char *qs = pgc_ident(c->st.dst_c, s), *qr = pgc_ident(c->st.dst_c, c->dst_role);
    if(qs && qr)
      pf_fix(c, r, PF_CLONE, ST_TARGET, "GRANT %s ON SCHEMA %s TO %s",
             usage ? "CREATE" : "USAGE, CREATE", qs, qr);
    free(qs);
    free(qr);
  }
  PQclear(res);
  if(nbad)
    pf_fail(r, "role \"%s\" lacks CREATE on %d in-scope schemas of the target: %s",
            c->dst_role, nbad, lacking);
  else if(n)
    pf_pass(r, "role \"%s\" can create in the in-scope schemas that exist on the target (%s); "
               "the clone creates the other %zu", c->dst_role, present, c->nschemas - (size_t)n);
  else
    pf_pass(r, "no in-scope schema exists on the target yet: the clone creates all %zu",
            c->nschemas);
}

void pf_chk_owner_after_restore(struct pf_ctx *c, struct pf_out *r)
{
  const char *owner = c->o.owner_after_restore;
  if(!owner || !*owner) {
    pf_skip(r, "spec.clone.ownerAfterRestore is not set");
    return;
  }
  const char *params[] = { owner };
  char super[8] = "";
  struct pgc_err e;
  if(pgc_value(c->st.dst_c, &e, super, sizeof(super),
               "SELECT rolsuper FROM pg_roles WHERE rolname = $1", 1, params)) {
    pf_query_failed(r, &e, "read the target's roles");
    return;
  }
  char *qo = pgc_ident(c->st.dst_c, owner);
  if(!super[0]) {
    pf_fail(r, "role \"%s\" (spec.clone.ownerAfterRestore) does not exist on the target", owner);
    pf_block(r, "as a superuser on the target: CREATE ROLE %s NOLOGIN; or fix "
                "spec.clone.ownerAfterRestore", qo ? qo : owner);
    free(qo);
    return;
  }
  char sql[400];
  snprintf(sql, sizeof(sql), "SET LOCAL ROLE %s", qo ? qo : "none");
  int rc = pgc_exec(c->st.dst_c, &e, "BEGIN");
  if(!rc)
    rc = pgc_exec(c->st.dst_c, &e, sql);
  struct pgc_err ignored;
  (void)pgc_exec(c->st.dst_c, &ignored, "ROLLBACK");
  if(!rc) {
    pf_pass(r, "role \"%s\" can SET ROLE to \"%s\" on the target (tried in a rolled-back "
               "transaction)", c->dst_role, owner);
  } else if(strcmp(e.sqlstate, "42501")) {
    pf_query_failed(r, &e, "try SET ROLE on the target");
  } else if(super[0] == 't') {
    pf_fail(r, "role \"%s\" cannot SET ROLE to \"%s\", a superuser, on the target", c->dst_role,
            owner);
    pf_block(r, "hand the objects over to a role that is not a superuser: membership in a "
                "superuser role is not granted by the preflight");
  } else {
    pf_fail(r, "role \"%s\" cannot SET ROLE to \"%s\" on the target, so the ownership handover "
               "would fail", c->dst_role, owner);
    fix_membership(c, r, owner);
  }
  free(qo);
}

/* pgcopydb 0.14 and newer copy database properties (ALTER DATABASE ... SET), which needs the
 * privileges of the target database's owner. */
void pf_chk_db_owner(struct pf_ctx *c, struct pf_out *r)
{
  if(pf_pgcopydb_older(c, 0, 14)) {
    pf_skip(r, "pgcopydb %s does not copy database properties (0.14 and newer do)",
            c->pgcopydb.text);
    return;
  }
  char n[32] = "";
  struct pgc_err e;
  if(pgc_value(c->st.src_c, &e, n, sizeof(n),
               "SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d "
               "ON d.oid = s.setdatabase WHERE d.datname = current_database() AND s.setrole = 0",
               0, NULL)) {
    pf_query_failed(r, &e, "read the source database's properties");
    return;
  }
  if(!strcmp(n, "0")) {
    pf_pass(r, "the source database has no properties (ALTER DATABASE ... SET) to copy");
    return;
  }
  PGresult *res = pgc_query(c->st.dst_c, &e,
                            "SELECT pg_has_role(d.datdba, 'USAGE'), pg_get_userbyid(d.datdba), "
                            "o.rolsuper, d.datname, (SELECT rolsuper FROM pg_roles "
                            "WHERE rolname = current_user) FROM pg_database d "
                            "JOIN pg_roles o ON o.oid = d.datdba "
                            "WHERE d.datname = current_database()",
                            0, NULL);
  if(!res) {
    pf_query_failed(r, &e, "read the target database's owner");
    return;
  }
  const char *owner = PQgetvalue(res, 0, 1), *db = PQgetvalue(res, 0, 3);
  if(PQgetvalue(res, 0, 0)[0] == 't' || PQgetvalue(res, 0, 4)[0] == 't') {
    pf_pass(r, "role \"%s\" acts as the owner (\"%s\") of the target database \"%s\", for its "
               "%s properties", c->dst_role, owner, db, n);
  } else if(PQgetvalue(res, 0, 2)[0] == 't') {
    pf_fail(r, "the source database has %s properties, and the target database \"%s\" belongs "
               "to superuser \"%s\": role \"%s\" cannot set them", n, db, owner, c->dst_role);
    char *qd = pgc_ident(c->st.dst_c, db), *qr = pgc_ident(c->st.dst_c, c->dst_role);
    pf_block(r, "as a superuser on the target: ALTER DATABASE %s OWNER TO %s", qd ? qd : db,
             qr ? qr : c->dst_role);
    free(qd);
    free(qr);
  } else {
    pf_fail(r, "the source database has %s properties, and role \"%s\" is not a member of "
               "\"%s\", the owner of the target database \"%s\"", n, c->dst_role, owner, db);
    fix_membership(c, r, owner);
  }
  PQclear(res);
}
