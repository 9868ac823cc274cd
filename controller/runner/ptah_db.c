/*
 * ptah_db.c: the session of a ptah-migrate run: connecting (application_name
 * godwit-ptah-<operation>), the migration lock, the history table, and the proof that the lock
 * was held throughout.
 *
 * The lock is a session-level advisory lock, (PTAH_LOCK_CLASS, hashtext(<history table as
 * given>)): every run of every PtahMigration that shares a history table excludes the others,
 * and a session that dies (a killed runner) releases it with its backend. It survives the
 * ROLLBACK of a failed version. Continuity means the backend that took it (its pid, captured
 * then) is the one that still holds it at the end; a lost connection means it was not. The
 * ptah_lock_* functions do the same for any key: ptah-plan's Apply takes
 * (PTAH_LOCK_CLASS, hashtext('ptah.run/PtahSchema')) with them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptah.h"

#define LOCK_KEYS "%d, pg_catalog.hashtext($1)"
#define LOCK_ROW                                                                                 \
  "l.locktype = 'advisory' AND l.classid = %d::pg_catalog.oid"                                   \
  " AND l.objid = pg_catalog.hashtext($1)::pg_catalog.oid AND l.objsubid = 2 AND l.granted"      \
  " AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d"                                \
  "                    WHERE d.datname = pg_catalog.current_database())"

void pm_describe_err(const struct pgc_err *e, char *buf, size_t len)
{
  int n = snprintf(buf, len, "%s", e->msg[0] ? e->msg : "unknown error");
  if(n < 0 || (size_t)n >= len)
    return;
  if(e->sqlstate[0] && e->hint[0])
    snprintf(buf + n, len - (size_t)n, " (SQLSTATE %s; HINT: %s)", e->sqlstate, e->hint);
  else if(e->sqlstate[0])
    snprintf(buf + n, len - (size_t)n, " (SQLSTATE %s)", e->sqlstate);
  else if(e->hint[0])
    snprintf(buf + n, len - (size_t)n, " (HINT: %s)", e->hint);
}

void pm_result_err(PGconn *conn, const PGresult *res, struct pgc_err *e)
{
  memset(e, 0, sizeof(*e));
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  const char *h = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
  snprintf(e->sqlstate, sizeof(e->sqlstate), "%s", st ? st : "");
  snprintf(e->hint, sizeof(e->hint), "%s", h ? h : "");
  const char *msg = m ? m : PQerrorMessage(conn);
  while(*msg == ' ' || *msg == '\n')
    msg++;
  snprintf(e->msg, sizeof(e->msg), "%.*s", (int)strcspn(msg, "\n"), msg);
  e->transient = PQstatus(conn) != CONNECTION_OK;
}

char *pm_history_ident(struct pm_ctx *c)
{
  char *s = pgc_ident(c->conn, c->schema), *t = pgc_ident(c->conn, c->table);
  char *out = NULL;
  if(s && t && (out = malloc(strlen(s) + strlen(t) + 2)))
    sprintf(out, "%s.%s", s, t);
  free(s);
  free(t);
  return out;
}

/* ----- connecting ------------------------------------------------------------------------- */

/* application_name as a connection keyword (the URI's own, if any, is replaced): the lock's
 * holder is named by it in pg_stat_activity, from the first packet on. */
static int set_appname(struct pgc_endpoint *ep, const char *name)
{
  size_t n = 0;
  for(; ep->kw[n]; n++)
    if(!strcmp(ep->kw[n], "application_name")) {
      char *v = strdup(name);
      if(!v)
        return -1;
      free(ep->val[n]);
      ep->val[n] = v;
      return 0;
    }
  char **kw = realloc(ep->kw, (n + 2) * sizeof(char *));
  if(!kw)
    return -1;
  ep->kw = kw;
  char **val = realloc(ep->val, (n + 2) * sizeof(char *));
  if(!val)
    return -1;
  ep->val = val;
  kw[n + 1] = val[n + 1] = NULL;
  kw[n] = strdup("application_name");
  val[n] = strdup(name);
  if(!kw[n] || !val[n]) {
    free(kw[n]);
    free(val[n]);
    kw[n] = val[n] = NULL;
    return -1;
  }
  return 0;
}

static void quiet(void *arg, const char *message)
{
  (void)arg, (void)message; /* NOTICEs of the migrations' SQL would be stray stderr lines */
}

int pm_connect(struct pm_ctx *c)
{
  const char *uri = c->st.secrets[0]; /* GODWIT_DATABASE_URI */
  char err[256];
  if(!uri || !*uri) {
    st_fail(&c->st, false, "connect", "GODWIT_DATABASE_URI is not set");
    pm_set(c, PM_FAILED, "nothing was applied: GODWIT_DATABASE_URI is not set (the Job takes it "
           "from the Secret named by spec.database.connectionSecretRef)");
    return -1;
  }
  if(pgc_endpoint_parse(&c->st.src, "database", uri, err, sizeof(err))) {
    pgc_endpoint_release(&c->st.src);
    st_fail(&c->st, false, "connect", "%s (GODWIT_DATABASE_URI)", err);
    pm_set(c, PM_FAILED, "nothing was applied: %s (GODWIT_DATABASE_URI, from the Secret named "
           "by spec.database.connectionSecretRef)", err);
    return -1;
  }
  c->st.have_src = true;
  const char *desc = c->st.src.desc;
  if(set_appname(&c->st.src, c->appname)) {
    st_fail(&c->st, true, "connect", "out of memory");
    pm_set(c, PM_FAILED, "nothing was applied: out of memory");
    c->transient = true;
    return -1;
  }
  char why[512];
  enum pgc_class cls = pgc_connect(&c->st.src, &c->st.retry, &c->conn, why, sizeof(why));
  if(cls != PGC_OK) {
    st_fail(&c->st, cls == PGC_TRANSIENT, "connect", "cannot connect to %s: %s", desc, why);
    pm_set(c, PM_FAILED, "nothing was applied: cannot connect to %s: %s", desc, why);
    c->transient = cls == PGC_TRANSIENT;
    return -1;
  }
  PQsetNoticeProcessor(c->conn, quiet, NULL);
  /* PostgreSQL 14+: a backend whose runner was killed mid-statement notices within a second,
   * so it rolls back and frees the lock without running its statement to the end. */
  struct pgc_err e;
  if(PQserverVersion(c->conn) >= 140000)
    (void)pgc_exec(c->conn, &e, "SET client_connection_check_interval = '1s'");
  st_pass(&c->st, "connect", "connected to %s as application_name %s (PostgreSQL %s)", desc,
          c->appname, PQparameterStatus(c->conn, "server_version"));
  return 0;
}

/* A query before any version ran failed: a lost connection is transient (nothing ran, a retry
 * may help), an error is not. */
static int query_failed(struct pm_ctx *c, const char *id, const char *what,
                        const struct pgc_err *e)
{
  char why[800];
  pm_describe_err(e, why, sizeof(why));
  bool lost = PQstatus(c->conn) != CONNECTION_OK;
  st_fail(&c->st, lost, id, "could not %s: %s", what, why);
  pm_set(c, PM_FAILED, "nothing was applied: could not %s: %s", what, why);
  c->transient = lost;
  return -1;
}

/* ----- the lock --------------------------------------------------------------------------- */

void ptah_lock_holder(PGconn *conn, const char *key, char *buf, size_t len)
{
  char sql[768];
  snprintf(sql, sizeof(sql),
           "SELECT l.pid, COALESCE(a.application_name, ''),"
           "       COALESCE(a.usename::text, '')"
           "  FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
           " WHERE " LOCK_ROW " AND l.pid <> pg_catalog.pg_backend_pid() LIMIT 1",
           PTAH_LOCK_CLASS);
  const char *params[] = { key };
  struct pgc_err e;
  PGresult *res = pgc_query(conn, &e, sql, 1, params);
  if(!res)
    snprintf(buf, len, "a session this run cannot name (%.300s)", e.msg);
  else if(PQntuples(res) == 0)
    snprintf(buf, len, "a session that has released it since");
  else
    snprintf(buf, len, "pid %s (application_name \"%s\", user \"%s\")", PQgetvalue(res, 0, 0),
             PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
  PQclear(res);
}

/* The lock a dead run's session left behind (--release-owed): a session of that
 * application_name that holds it is terminated (pg_terminate_backend: the same role, or
 * pg_signal_backend); its open transaction rolls back, as it would when the server noticed its
 * client gone. Sessions of other names are never touched. */
static void release_owed(struct pm_ctx *c)
{
  const char *name = c->o.release_owed;
  if(!name || !*name || !strcmp(name, c->appname))
    return;
  char sql[768];
  snprintf(sql, sizeof(sql),
           "SELECT l.pid, pg_catalog.pg_terminate_backend(l.pid, 5000)"
           "  FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
           " WHERE " LOCK_ROW " AND a.application_name = $2"
           "   AND l.pid <> pg_catalog.pg_backend_pid()",
           PTAH_LOCK_CLASS);
  const char *params[] = { c->o.history_table, name };
  struct pgc_err e;
  PGresult *res = pgc_query(c->conn, &e, sql, 2, params);
  if(!res) {
    st_warn(&c->st, "release", "cannot release the lock session \"%s\" left: %s", name, e.msg);
    return;
  }
  for(int i = 0; i < PQntuples(res); i++) {
    bool done = !strcmp(PQgetvalue(res, i, 1), "t");
    if(done)
      c->released++;
    if(done)
      st_pass(&c->st, "release", "terminated pid %s (\"%s\"), which held the migration lock "
              "after its run ended", PQgetvalue(res, i, 0), name);
    else
      st_warn(&c->st, "release", "pid %s (\"%s\") holds the migration lock and did not end "
              "within 5 s", PQgetvalue(res, i, 0), name);
  }
  if(!PQntuples(res))
    st_pass(&c->st, "release", "no session \"%s\" holds the migration lock any more", name);
  PQclear(res);
}

int ptah_lock_take(PGconn *conn, const char *key, long wait_s, int *pid, struct pgc_err *e)
{
  char sql[256];
  snprintf(sql, sizeof(sql),
           "SELECT pg_catalog.pg_try_advisory_lock(" LOCK_KEYS "), pg_catalog.pg_backend_pid()",
           PTAH_LOCK_CLASS);
  const char *params[] = { key };
  long long deadline = pm_now_ms() + wait_s * 1000;
  for(;;) {
    PGresult *res = pgc_query(conn, e, sql, 1, params);
    if(!res)
      return -1;
    bool got = !strcmp(PQgetvalue(res, 0, 0), "t");
    *pid = atoi(PQgetvalue(res, 0, 1));
    PQclear(res);
    if(got)
      return 0;
    if(pm_now_ms() >= deadline)
      return 1;
    st_sleep_ms(PTAH_LOCK_POLL_MS);
  }
}

int pm_lock(struct pm_ctx *c)
{
  release_owed(c);
  struct pgc_err e;
  int r = ptah_lock_take(c->conn, c->o.history_table, c->o.lock_wait_s, &c->backend_pid, &e);
  if(r < 0)
    return query_failed(c, "lock", "take the migration lock", &e);
  if(r > 0) {
    char holder[512];
    ptah_lock_holder(c->conn, c->o.history_table, holder, sizeof(holder));
    st_fail(&c->st, false, "lock", "the migration lock of %s is held by %s; waited %ld s",
            c->o.history_table, holder, c->o.lock_wait_s);
    pm_set(c, PM_FAILED, "nothing was applied: the migration lock of %s is held by %s, "
           "waited %ld s. Another run (of this or another PtahMigration with the same "
           "history table) or a person is migrating this database; this run did nothing",
           c->o.history_table, holder, c->o.lock_wait_s);
    return -1;
  }
  c->locked = true;
  st_pass(&c->st, "lock", "holding the migration lock (%d, hashtext('%s')) as backend pid %d",
          PTAH_LOCK_CLASS, c->o.history_table, c->backend_pid);
  return 0;
}

bool ptah_lock_release(struct st_ctx *st, PGconn *conn, const char *key, int pid,
                       const char *what)
{
  if(PQstatus(conn) != CONNECTION_OK) {
    st_warn(st, "lock", "the connection was lost: the lock was not held throughout");
    return false;
  }
  struct pgc_err e;
  if(PQtransactionStatus(conn) != PQTRANS_IDLE)
    (void)pgc_exec(conn, &e, "ROLLBACK");
  char sql[768], spid[16];
  snprintf(spid, sizeof(spid), "%d", pid);
  snprintf(sql, sizeof(sql),
           "SELECT pg_catalog.pg_backend_pid() = $2::int AND EXISTS (SELECT 1"
           "  FROM pg_catalog.pg_locks l WHERE " LOCK_ROW " AND l.pid = $2::int)",
           PTAH_LOCK_CLASS);
  const char *params[] = { key, spid };
  char held[8] = "";
  if(pgc_value(conn, &e, held, sizeof(held), sql, 2, params)) {
    st_warn(st, "lock", "cannot tell whether the lock was held throughout: %s", e.msg);
    return false;
  }
  bool continuous = !strcmp(held, "t");
  if(continuous)
    st_pass(st, "lock", "backend pid %d held %s throughout", pid, what);
  else
    st_warn(st, "lock", "backend pid %d no longer holds %s", pid, what);
  snprintf(sql, sizeof(sql), "SELECT pg_catalog.pg_advisory_unlock(" LOCK_KEYS ")",
           PTAH_LOCK_CLASS);
  PGresult *res = pgc_query(conn, &e, sql, 1, params);
  PQclear(res);
  if(!res)
    st_warn(st, "lock", "could not release %s (it goes with the session): %s", what, e.msg);
  return continuous;
}

void pm_unlock(struct pm_ctx *c)
{
  if(!c->locked)
    return;
  c->locked = false;
  c->lock_continuous = ptah_lock_release(&c->st, c->conn, c->o.history_table, c->backend_pid,
                                         "the migration lock");
}

/* ----- the history table ------------------------------------------------------------------ */

static int by_row(const void *a, const void *b)
{
  const struct pm_row *x = a, *y = b;
  return x->version < y->version ? -1 : x->version > y->version;
}

static int create_history(struct pm_ctx *c, const char *ident)
{
  char *sql = malloc(strlen(ident) + 512);
  if(!sql)
    return -1;
  sprintf(sql,
          "CREATE TABLE IF NOT EXISTS %s (version bigint PRIMARY KEY, description text NOT NULL,"
          " checksum text NOT NULL, operation text NOT NULL,"
          " applied_by text NOT NULL DEFAULT current_user,"
          " applied_at timestamptz NOT NULL DEFAULT now(), execution_ms bigint NOT NULL)",
          ident);
  struct pgc_err e;
  int r = pgc_exec(c->conn, &e, sql);
  free(sql);
  if(r)
    return query_failed(c, "history", "create the history table", &e);
  st_pass(&c->st, "history", "created the history table %s", c->o.history_table);
  return 0;
}

static int read_rows(struct pm_ctx *c, const char *ident)
{
  char *sql = malloc(strlen(ident) + 128);
  if(!sql)
    return -1;
  sprintf(sql, "SELECT version, checksum FROM %s ORDER BY version", ident);
  struct pgc_err e;
  PGresult *res = pgc_query(c->conn, &e, sql, 0, NULL);
  free(sql);
  if(!res)
    return query_failed(c, "history", "read the history table", &e);
  int n = PQntuples(res);
  c->rows = calloc(n ? (size_t)n : 1, sizeof(*c->rows));
  for(int i = 0; c->rows && i < n; i++) {
    c->rows[i].version = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    snprintf(c->rows[i].checksum, sizeof(c->rows[i].checksum), "%s", PQgetvalue(res, i, 1));
  }
  PQclear(res);
  if(!c->rows)
    return -1;
  c->nrows = (size_t)n;
  qsort(c->rows, c->nrows, sizeof(*c->rows), by_row);
  return 0;
}

int pm_history_read(struct pm_ctx *c)
{
  const char *params[] = { c->schema, c->table };
  struct pgc_err e;
  char exists[8] = "";
  if(pgc_value(c->conn, &e, exists, sizeof(exists),
               "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
               " ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2)",
               2, params))
    return query_failed(c, "history", "look for the history table", &e);
  char *ident = pm_history_ident(c);
  int r = ident ? 0 : -1;
  if(!r && strcmp(exists, "t") && c->type == PM_APPLY)
    r = create_history(c, ident); /* only when missing: CREATE needs a right reads do not */
  if(!r && (!strcmp(exists, "t") || c->type == PM_APPLY))
    r = read_rows(c, ident);
  free(ident);
  if(r) {
    if(!c->message)
      pm_set(c, PM_FAILED, "nothing was applied: out of memory");
    return -1;
  }
  c->history_read = true;
  c->history_exists = !strcmp(exists, "t") || c->type == PM_APPLY;
  c->from = c->to = c->nrows ? c->rows[c->nrows - 1].version : 0;
  if(!c->history_exists)
    st_pass(&c->st, "history", "%s does not exist: no version was applied (version 0)",
            c->o.history_table);
  else
    st_pass(&c->st, "history", "%s records %zu version%s; the highest is %lld",
            c->o.history_table, c->nrows, c->nrows == 1 ? "" : "s", c->from);
  return 0;
}

void pm_db_release(struct pm_ctx *c)
{
  PQfinish(c->conn);
  c->conn = NULL;
  free(c->rows);
  c->rows = NULL;
  c->nrows = 0;
  free(c->applied);
  c->applied = NULL;
  c->napplied = 0;
}
