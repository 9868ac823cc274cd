/*
 * schema_scratch.c: the sessions of a ptah-plan run (schema.h): the target (read-only; an
 * Apply's is read-write), and the database the desired SQL is materialised in.
 *
 * Where the desired SQL goes, first that applies:
 *  1. GODWIT_DEV_DATABASE_URI (a devDatabase Secret), when set: an explicit choice wins. The
 *     database must hold nothing but what a database made from template0 holds (the public
 *     schema, plpgsql): whatever else it held would read as desired.
 *  2. A scratch database on the target's server when the role may create one (CREATEDB or
 *     superuser): CREATE DATABASE ptah_scratch_<unix seconds>_<8 hex> TEMPLATE template0 with
 *     the target's encoding and locale, dropped at the end of the run, after a failure too.
 *     A run killed before that leaves it behind: every run first drops those whose timestamp is
 *     older than SP_SCRATCH_STALE_S (WITH (FORCE): their sessions are dead runs').
 *  3. Neither: the plan fails saying both ways.
 * The SQL is loaded in one transaction that is read, then rolled back: a dev database is left
 * as it was. A load error fails the plan quoting the server's message and the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptah.h"
#include "schema.h"

static void quiet(void *arg, const char *message)
{
  (void)arg, (void)message; /* NOTICEs of the desired SQL would be stray stderr lines */
}

int sp_query_failed(struct sp_ctx *c, const char *id, const char *what, const struct pgc_err *e)
{
  char why[800];
  pm_describe_err(e, why, sizeof(why));
  st_fail(&c->st, e->transient, id, "could not %s: %s", what, why);
  sp_set(c, SP_FAILED, "nothing was planned: could not %s: %s", what, why);
  c->transient = e->transient;
  return -1;
}

static const char *kw_value(const struct pgc_endpoint *ep, const char *key)
{
  for(size_t i = 0; ep->kw && ep->kw[i]; i++)
    if(!strcmp(ep->kw[i], key))
      return ep->val[i];
  return NULL;
}

/* src's options with dbname (when db is not NULL) and application_name replaced. */
static int ep_copy(struct pgc_endpoint *dst, const struct pgc_endpoint *src, const char *label,
                   const char *db, const char *appname)
{
  memset(dst, 0, sizeof(*dst));
  size_t n = 0;
  while(src->kw[n])
    n++;
  dst->kw = calloc(n + 3, sizeof(char *));
  dst->val = calloc(n + 3, sizeof(char *));
  if(!dst->kw || !dst->val)
    return -1;
  size_t o = 0;
  for(size_t i = 0; i <= n; i++) {
    const char *k = i < n ? src->kw[i] : "application_name", *v = i < n ? src->val[i] : appname;
    if(i < n && (!strcmp(k, "application_name") || (db && !strcmp(k, "dbname"))))
      continue;
    if(!(dst->kw[o] = strdup(k)) || !(dst->val[o] = strdup(v)))
      return -1;
    if(!strcmp(k, "password"))
      dst->password = dst->val[o];
    o++;
  }
  if(db && (!(dst->kw[o] = strdup("dbname")) || !(dst->val[o] = strdup(db))))
    return -1;
  const char *host = kw_value(src, "host") ? kw_value(src, "host") : kw_value(src, "hostaddr");
  const char *port = kw_value(src, "port");
  snprintf(dst->label, sizeof(dst->label), "%s", label);
  snprintf(dst->user, sizeof(dst->user), "%s", src->user);
  snprintf(dst->db, sizeof(dst->db), "%s", db ? db : src->db);
  snprintf(dst->desc, sizeof(dst->desc), "%s (%s:%s/%s, user %s)", label,
           host ? host : "localhost", port ? port : "5432", dst->db, dst->user);
  return 0;
}

static PGconn *open_session(struct sp_ctx *c, const struct pgc_endpoint *ep, const char *id)
{
  PGconn *conn = NULL;
  char why[512];
  enum pgc_class cls = pgc_connect(ep, &c->st.retry, &conn, why, sizeof(why));
  if(cls != PGC_OK) {
    st_fail(&c->st, cls == PGC_TRANSIENT, id, "cannot connect to %s: %s", ep->desc, why);
    sp_set(c, SP_FAILED, "nothing was planned: cannot connect to %s: %s", ep->desc, why);
    c->transient = cls == PGC_TRANSIENT;
    return NULL;
  }
  PQsetNoticeProcessor(conn, quiet, NULL);
  return conn;
}

int sp_connect(struct sp_ctx *c)
{
  const char *uri = c->st.secrets[0];
  char err[256];
  struct pgc_endpoint parsed;
  if(!uri || !*uri) {
    st_fail(&c->st, false, "connect", "GODWIT_DATABASE_URI is not set");
    sp_set(c, SP_FAILED, "nothing was planned: GODWIT_DATABASE_URI is not set (the Job takes "
           "it from the Secret named by spec.database.connectionSecretRef)");
    return -1;
  }
  if(pgc_endpoint_parse(&parsed, "database", uri, err, sizeof(err))) {
    pgc_endpoint_release(&parsed);
    st_fail(&c->st, false, "connect", "%s (GODWIT_DATABASE_URI)", err);
    sp_set(c, SP_FAILED, "nothing was planned: %s (GODWIT_DATABASE_URI)", err);
    return -1;
  }
  int r = ep_copy(&c->st.src, &parsed, "database", NULL, c->appname);
  pgc_endpoint_release(&parsed);
  c->st.have_src = true;
  if(r) {
    st_fail(&c->st, true, "connect", "out of memory");
    sp_set(c, SP_FAILED, "nothing was planned: out of memory");
    c->transient = true;
    return -1;
  }
  if(!(c->conn = open_session(c, &c->st.src, "connect")))
    return -1;
  struct pgc_err e;
  bool apply = c->type == SP_APPLY;
  if(!apply && pgc_exec(c->conn, &e, "SET default_transaction_read_only = on")) /* no change */
    return sp_query_failed(c, "connect", "make the session read-only", &e);
  /* PostgreSQL 14+: a backend whose runner was killed mid-statement notices within a second,
   * so it rolls the Apply's transaction back and frees the lock without finishing it. */
  if(apply && PQserverVersion(c->conn) >= 140000)
    (void)pgc_exec(c->conn, &e, "SET client_connection_check_interval = '1s'");
  st_pass(&c->st, "connect", "connected to %s as application_name %s (PostgreSQL %s), %s",
          c->st.src.desc, c->appname, PQparameterStatus(c->conn, "server_version"),
          apply ? "read-write" : "read-only");
  return 0;
}

/* ----- the scratch database ---------------------------------------------------------------- */

static void drop_database(struct sp_ctx *c, const char *name, const char *why)
{
  char *q = PQescapeIdentifier(c->admin, name, strlen(name));
  char sql[256];
  snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s%s", q ? q : "\"?\"",
           PQserverVersion(c->admin) >= 130000 ? " WITH (FORCE)" : "");
  PQfreemem(q);
  struct pgc_err e;
  if(pgc_exec(c->admin, &e, sql))
    st_warn(&c->st, "scratch", "could not drop %s database %s: %s (a later run drops it once it "
            "is an hour old)", why, name, e.msg);
  else
    st_pass(&c->st, "scratch", "dropped %s database %s", why, name);
}

static void drop_stale(struct sp_ctx *c)
{
  char sql[512];
  snprintf(sql, sizeof(sql), "SELECT datname FROM pg_catalog.pg_database WHERE datname ~ '^"
           SP_SCRATCH_PREFIX "[0-9]{10}_[0-9a-f]{8}$' AND substr(datname, %d, 10)::bigint < "
           "extract(epoch FROM now())::bigint - %d ORDER BY 1",
           (int)sizeof(SP_SCRATCH_PREFIX), SP_SCRATCH_STALE_S);
  struct pgc_err e;
  PGresult *res = pgc_query(c->admin, &e, sql, 0, NULL);
  for(int i = 0; res && i < PQntuples(res); i++)
    drop_database(c, PQgetvalue(res, i, 0), "the leftover scratch");
  PQclear(res);
}

static void scratch_name(char *buf, size_t len)
{
  unsigned int r = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if(!f || fread(&r, sizeof(r), 1, f) != 1)
    r = (unsigned int)getpid() * 2654435761u ^ (unsigned int)clock();
  if(f)
    fclose(f);
  snprintf(buf, len, SP_SCRATCH_PREFIX "%010lld_%08x", (long long)time(NULL), r);
}

static int create_scratch(struct sp_ctx *c)
{
  if(!(c->admin = open_session(c, &c->st.src, "scratch")))
    return -1;
  drop_stale(c);
  struct pgc_err e;
  bool v15 = PQserverVersion(c->admin) >= 150000;
  PGresult *res = pgc_query(c->admin, &e, v15
    ? "SELECT pg_catalog.pg_encoding_to_char(encoding), datcollate, datctype, datlocprovider, "
      "coalesce(daticulocale, '') FROM pg_catalog.pg_database WHERE datname = current_database()"
    : "SELECT pg_catalog.pg_encoding_to_char(encoding), datcollate, datctype, 'c', '' FROM "
      "pg_catalog.pg_database WHERE datname = current_database()", 0, NULL);
  if(!res || PQntuples(res) != 1) {
    PQclear(res);
    return sp_query_failed(c, "scratch", "read the target database's encoding", &e);
  }
  scratch_name(c->scratch, sizeof(c->scratch));
  char *lit[4] = { NULL };
  for(int i = 0; i < 4; i++)
    lit[i] = PQescapeLiteral(c->admin, PQgetvalue(res, 0, i == 3 ? 4 : i),
                             strlen(PQgetvalue(res, 0, i == 3 ? 4 : i)));
  bool icu = !strcmp(PQgetvalue(res, 0, 3), "i");
  PQclear(res);
  char sql[1024];
  snprintf(sql, sizeof(sql), "CREATE DATABASE %s TEMPLATE template0 ENCODING %s LC_COLLATE %s "
           "LC_CTYPE %s%s%s", c->scratch, lit[0] ? lit[0] : "''", lit[1] ? lit[1] : "''",
           lit[2] ? lit[2] : "''", icu ? " LOCALE_PROVIDER icu ICU_LOCALE " : "",
           icu && lit[3] ? lit[3] : "");
  for(int i = 0; i < 4; i++)
    PQfreemem(lit[i]);
  if(pgc_exec(c->admin, &e, sql)) {
    c->scratch[0] = '\0';
    return sp_query_failed(c, "scratch", "create a scratch database", &e);
  }
  st_pass(&c->st, "scratch", "created the scratch database %s (template0, the target's "
          "encoding and locale)", c->scratch);
  if(ep_copy(&c->st.dst, &c->st.src, "scratch database", c->scratch, c->appname)) {
    st_fail(&c->st, true, "scratch", "out of memory");
    sp_set(c, SP_FAILED, "nothing was planned: out of memory");
    return -1;
  }
  c->st.have_dst = true;
  c->materialised = "scratch";
  return (c->dev = open_session(c, &c->st.dst, "scratch")) ? 0 : -1;
}

/* ----- the dev database -------------------------------------------------------------------- */

/* What a database made from template0 holds. */
static bool baseline(enum sm_kind k, const char *key)
{
  return (k == SM_SCHEMA && !strcmp(key, "public")) ||
         (k == SM_EXTENSION && !strcmp(key, "plpgsql")) ||
         (k == SM_COMMENT && (!strcmp(key, "schema:public") || !strcmp(key, "extension:plpgsql")));
}

static int open_dev(struct sp_ctx *c)
{
  char err[256];
  if(pgc_endpoint_parse(&c->st.dst, "dev database", c->st.secrets[1], err, sizeof(err))) {
    pgc_endpoint_release(&c->st.dst);
    st_fail(&c->st, false, "devdb", "%s (GODWIT_DEV_DATABASE_URI)", err);
    sp_set(c, SP_FAILED, "nothing was planned: %s (GODWIT_DEV_DATABASE_URI, from the "
           "devDatabase Secret)", err);
    return -1;
  }
  c->st.have_dst = true;
  c->materialised = "devDatabase";
  if(!(c->dev = open_session(c, &c->st.dst, "devdb")))
    return -1;
  struct sm_model m;
  struct pgc_err e;
  if(pgc_exec(c->dev, &e, "SET default_transaction_read_only = on") || sm_read(c->dev, &m, &e) ||
     pgc_exec(c->dev, &e, "RESET ALL"))
    return sp_query_failed(c, "devdb", "read the dev database's catalog", &e);
  bool found = false;
  for(int k = 0; k < SM_NKINDS && !found; k++)
    for(size_t i = 0; i < m.k[k].n && !found; i++)
      if((found = !baseline((enum sm_kind)k, m.k[k].v[i].key)))
        snprintf(err, sizeof(err), "%s %s", sm_kind_name((enum sm_kind)k), m.k[k].v[i].key);
  if(!found && (found = m.nrefused > 0))
    snprintf(err, sizeof(err), "%s", m.refused[0]);
  sm_release(&m);
  if(found) {
    st_fail(&c->st, false, "devdb", "the dev database %s is not empty: it holds %s",
            c->st.dst.desc, err);
    sp_set(c, SP_FAILED, "nothing was planned: the dev database (%s) must be empty, as one made "
           "from template0, but it holds %s: what it holds would read as desired",
           c->st.dst.desc, err);
    return -1;
  }
  st_pass(&c->st, "devdb", "connected to the empty %s", c->st.dst.desc);
  return 0;
}

/* ----- loading ------------------------------------------------------------------------------ */

/* " at line N: <the line>": the server's 1-based character position in stmt when it gave one,
 * else the statement's first line that is not blank nor a comment; line is stmt's first. */
static void where(const char *stmt, int line, const char *pos, char *buf, size_t len)
{
  long want = pos ? atol(pos) : 0, chars = 0;
  const char *start = stmt, *p = stmt;
  if(want > 0) {
    for(; *p; p++) {
      if(((unsigned char)*p & 0xC0) != 0x80 && ++chars == want)
        break;
      if(*p == '\n')
        line++, start = p + 1;
    }
  } else {
    for(;;) {
      size_t blank = strspn(start, " \t\r");
      if(start[blank] == '\n' || !strncmp(start + blank, "--", 2)) {
        start += strcspn(start, "\n");
        start += *start == '\n';
        line++;
        continue;
      }
      start += blank;
      break;
    }
  }
  int n = (int)strcspn(start, "\n");
  snprintf(buf, len, " at line %d: %.*s", line, n > 160 ? 160 : n, start);
}

static int load_failed(struct sp_ctx *c, PGresult *res, const char *stmt, int line)
{
  char why[800], at[200] = "";
  ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  struct pgc_err e;
  if(st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
    snprintf(why, sizeof(why), "COPY is not DDL");
    where(stmt, line, NULL, at, sizeof(at));
  } else {
    pm_result_err(c->dev, res, &e);
    pm_describe_err(&e, why, sizeof(why));
    where(stmt, line, res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL, at,
          sizeof(at));
  }
  PQclear(res);
  bool lost = PQstatus(c->dev) != CONNECTION_OK;
  st_fail(&c->st, lost, "load", "the desired SQL does not load: %s%s", why, at);
  sp_set(c, SP_FAILED, "nothing was planned: the desired SQL (\"%s\") does not load: %s%s",
         c->o.desired, why, at);
  c->transient = lost;
  return -1;
}

/* One statement at a time (schema_split.c), in one transaction left open. */
static int load(struct sp_ctx *c)
{
  struct pgc_err e;
  if(pgc_exec(c->dev, &e, "BEGIN"))
    return sp_query_failed(c, "load", "begin the desired schema's transaction", &e);
  int line = 1;
  for(const char *s = c->desired; *s;) {
    size_t n = sp_statement_len(s);
    char *stmt = strndup(s, n);
    if(!stmt) {
      st_fail(&c->st, true, "load", "out of memory");
      sp_set(c, SP_FAILED, "nothing was planned: out of memory");
      return -1;
    }
    PGresult *res = PQexec(c->dev, stmt);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    int r = 0;
    if(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY)
      PQclear(res);
    else
      r = load_failed(c, res, stmt, line);
    for(size_t i = 0; i < n; i++)
      line += s[i] == '\n';
    free(stmt);
    if(r)
      return -1;
    if(PQtransactionStatus(c->dev) != PQTRANS_INTRANS) {
      st_fail(&c->st, false, "load", "the desired SQL ended the transaction (COMMIT or "
              "ROLLBACK)");
      sp_set(c, SP_FAILED, "nothing was planned: the desired SQL must not end the transaction "
             "it is loaded in: remove its COMMIT, ROLLBACK or END");
      return -1;
    }
    s += n;
  }
  return 0;
}

int sp_materialise(struct sp_ctx *c)
{
  const char *dev = c->st.secrets[1];
  int r;
  if(dev && *dev) {
    r = open_dev(c);
  } else {
    char can[8] = "";
    struct pgc_err e;
    if(pgc_value(c->conn, &e, can, sizeof(can), "SELECT rolcreatedb OR rolsuper FROM "
                 "pg_catalog.pg_roles WHERE rolname = current_user", 0, NULL))
      return sp_query_failed(c, "scratch", "read whether the role may create a database", &e);
    if(strcmp(can, "t")) {
      st_fail(&c->st, false, "scratch", "no database to materialise the desired schema in");
      sp_set(c, SP_FAILED, "nothing was planned: the desired schema must be loaded into an "
             "empty database to be read, and there is none: give the role %s CREATEDB (a "
             "scratch database is then made and dropped on the target's server), or name an "
             "empty dev database in a Secret (spec.devDatabase, GODWIT_DEV_DATABASE_URI)",
             c->st.src.user);
      return -1;
    }
    r = create_scratch(c);
  }
  if(r || load(c))
    return -1;
  st_pass(&c->st, "load", "loaded the desired schema into the %s", c->st.dst.desc);
  return 0;
}

void sp_dematerialise(struct sp_ctx *c)
{
  if(c->dev) {
    if(PQstatus(c->dev) == CONNECTION_OK && PQtransactionStatus(c->dev) != PQTRANS_IDLE)
      PQclear(PQexec(c->dev, "ROLLBACK")); /* a dev database is left as it was */
    PQfinish(c->dev);
    c->dev = NULL;
  }
  if(c->scratch[0] && c->admin)
    drop_database(c, c->scratch, "the scratch");
  c->scratch[0] = '\0';
}
