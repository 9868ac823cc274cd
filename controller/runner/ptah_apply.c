/*
 * ptah_apply.c: an Apply checks the history against the files, then runs each pending version
 * in its own transaction:
 *
 *   BEGIN; <the file's text, one PQexec>; INSERT INTO <history> (...); COMMIT
 *
 * so a version and its history row commit together or not at all, whatever kills the runner.
 * The first failure stops the run (rolled back: Failed, or Partial when an earlier version of
 * this run committed). A connection lost during a COMMIT leaves that one version in doubt
 * (Unknown); lost anywhere else, the server rolled the open transaction back.
 *
 * A migration must not hold transaction control (BEGIN, COMMIT, ROLLBACK): a file that ends the
 * transaction itself is caught when it returns (the session is no longer in a transaction) and
 * ends the run as Unknown, since what it committed has no history row.
 *
 * An Observe reads the history only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptah.h"
#include "strbuf.h"

#define LIST_MAX 20 /* versions named in a message before "and N more" */

enum v_end { V_COMMITTED, V_FAILED, V_IN_DOUBT, V_ENDED_BY_FILE };

/* "1, 2, 3" or "1, 2, ... and 7 more"; "none" when n is 0. */
static void list_versions(char *buf, size_t len, const long long *v, size_t n, size_t max)
{
  size_t o = 0;
  buf[0] = '\0';
  for(size_t i = 0; i < n && i < max && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", v[i]);
  if(n > max && o < len)
    snprintf(buf + o, len - o, " and %zu more", n - max);
  if(!n)
    snprintf(buf, len, "none");
}

static bool is_applied(const struct pm_ctx *c, long long v)
{
  size_t lo = 0, hi = c->nrows;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if(c->rows[mid].version < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->nrows && c->rows[lo].version == v;
}

/* ----- validation ------------------------------------------------------------------------- */

/* Applied versions whose file changed, and unapplied files below the highest applied version.
 * 0, or -1 with the outcome Failed. */
static int validate(struct pm_ctx *c)
{
  struct strbuf changed, order;
  strbuf_init(&changed, 1 << 15);
  strbuf_init(&order, 1 << 15);
  size_t nchanged = 0, norder = 0;
  gw_rc rc = GW_OK;
  for(size_t i = 0; i < c->nrows && !rc; i++) {
    const struct pm_file *f = pm_file_find(c, c->rows[i].version);
    if(!f || !strcmp(f->checksum, c->rows[i].checksum) || nchanged++ >= LIST_MAX)
      continue;
    rc = strbuf_addf(&changed, "%sversion %lld (\"%s\") was applied with checksum %s, the file "
                     "now has %s", nchanged > 1 ? "; " : "", f->version, f->name,
                     c->rows[i].checksum, f->checksum);
    st_fail(&c->st, false, "checksum", "version %lld (\"%s\") was applied with %s, the file now "
            "has %s", f->version, f->name, c->rows[i].checksum, f->checksum);
  }
  for(size_t i = 0; i < c->nfiles && !rc; i++) {
    const struct pm_file *f = &c->files[i];
    if(f->version >= c->from || is_applied(c, f->version) || norder++ >= LIST_MAX)
      continue;
    rc = strbuf_addf(&order, "%sversion %lld (\"%s\")", norder > 1 ? ", " : "", f->version,
                     f->name);
    st_fail(&c->st, false, "order", "version %lld (\"%s\") is not applied, but the database is "
            "already at version %lld", f->version, f->name, c->from);
  }
  if(!rc && (nchanged || norder)) {
    pm_set(c, PM_FAILED, "nothing was applied:");
    if(nchanged)
      pm_add(c, "an applied migration changed: %s%s. An applied version must never change: "
             "restore its text, or add a new version that makes the change.",
             strbuf_str(&changed), nchanged > LIST_MAX ? "; and more" : "");
    if(norder)
      pm_add(c, "out of order: %s%s %s not applied, but the database is already at version "
             "%lld, and a version never runs after a higher one: give %s a version above %lld.",
             strbuf_str(&order), norder > LIST_MAX ? " and more" : "",
             norder > 1 ? "are" : "is", c->from, norder > 1 ? "them" : "it", c->from);
  } else if(rc) {
    pm_set(c, PM_FAILED, "nothing was applied: out of memory");
  }
  strbuf_release(&changed);
  strbuf_release(&order);
  return rc || nchanged || norder ? -1 : 0;
}

/* ----- one version ------------------------------------------------------------------------ */

static void rollback(struct pm_ctx *c)
{
  struct pgc_err e;
  if(PQstatus(c->conn) == CONNECTION_OK && PQtransactionStatus(c->conn) != PQTRANS_IDLE)
    (void)pgc_exec(c->conn, &e, "ROLLBACK");
}

/* Runs the file's text: 0, or -1 with the error in e. COPY from or to the client
 * is refused: the runner has no data to give it. */
static int exec_file(struct pm_ctx *c, const struct pm_file *f, struct pgc_err *e)
{
  PGresult *res = PQexec(c->conn, f->text);
  ExecStatusType st = PQresultStatus(res);
  if(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
    PQclear(res);
    return 0;
  }
  if(st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
    PQclear(res);
    if(st == PGRES_COPY_IN)
      PQputCopyEnd(c->conn, "COPY FROM STDIN is not supported in a migration");
    char *buf;
    while(st != PGRES_COPY_IN && PQgetCopyData(c->conn, &buf, 0) > 0)
      PQfreemem(buf);
    while((res = PQgetResult(c->conn)))
      PQclear(res);
    memset(e, 0, sizeof(*e));
    snprintf(e->msg, sizeof(e->msg), "the file uses COPY FROM STDIN or TO STDOUT, which a "
             "migration cannot (there is no client data): use INSERT or COPY with a server file");
    e->transient = PQstatus(c->conn) != CONNECTION_OK;
    return -1;
  }
  pm_result_err(c->conn, res, e);
  PQclear(res);
  return -1;
}

static enum v_end run_version(struct pm_ctx *c, const struct pm_file *f, const char *insert_sql,
                              struct pgc_err *e, long long *ms)
{
  if(pgc_exec(c->conn, e, "BEGIN"))
    return V_FAILED;
  long long t0 = pm_now_ms();
  if(exec_file(c, f, e)) {
    rollback(c);
    return V_FAILED;
  }
  *ms = pm_now_ms() - t0;
  if(PQtransactionStatus(c->conn) != PQTRANS_INTRANS)
    return V_ENDED_BY_FILE;
  char version[24], took[24];
  snprintf(version, sizeof(version), "%lld", f->version);
  snprintf(took, sizeof(took), "%lld", *ms);
  const char *params[] = { version, f->description, f->checksum, c->o.operation, took };
  PGresult *res = pgc_query(c->conn, e, insert_sql, 5, params);
  if(!res) {
    rollback(c);
    return V_FAILED;
  }
  PQclear(res);
  res = PQexec(c->conn, "COMMIT");
  enum v_end end = V_COMMITTED;
  if(PQstatus(c->conn) != CONNECTION_OK) {
    pm_result_err(c->conn, res, e);
    end = V_IN_DOUBT;
  } else if(PQresultStatus(res) != PGRES_COMMAND_OK) {
    pm_result_err(c->conn, res, e); /* a deferred constraint, a serialization failure */
    end = V_FAILED;
  } else if(strcmp(PQcmdStatus(res), "COMMIT")) {
    memset(e, 0, sizeof(*e));
    snprintf(e->msg, sizeof(e->msg), "the server rolled the transaction back at COMMIT");
    end = V_FAILED;
  }
  PQclear(res);
  return end;
}

/* ----- the run ---------------------------------------------------------------------------- */

static void stopped(struct pm_ctx *c, const struct pm_file *f, enum v_end end,
                    const struct pgc_err *e, size_t pending)
{
  char why[1024], done[400], id[40];
  pm_describe_err(e, why, sizeof(why));
  snprintf(id, sizeof(id), "version %lld", f->version);
  list_versions(done, sizeof(done), c->applied, c->napplied, LIST_MAX);
  size_t left = pending - c->napplied - 1;
  if(end == V_IN_DOUBT) {
    st_fail(&c->st, false, id, "the connection was lost during the COMMIT of \"%s\": %s",
            f->name, why);
    pm_set(c, PM_UNKNOWN, "the connection was lost during the COMMIT of version %lld (\"%s\"): "
           "%s. Whether version %lld committed cannot be known from here; its history row "
           "commits with it, so the history table tells.", f->version, f->name, why,
           f->version);
  } else if(end == V_ENDED_BY_FILE) {
    st_fail(&c->st, false, id, "\"%s\" ended the transaction itself", f->name);
    pm_set(c, PM_UNKNOWN, "version %lld (\"%s\") ended the transaction itself (it holds COMMIT "
           "or ROLLBACK): what it committed has no history row, and the run stopped. Remove "
           "transaction control from migrations (each version already runs in its own "
           "transaction) and check the database before going on.", f->version, f->name);
  } else {
    st_fail(&c->st, false, id, "\"%s\" failed and was rolled back: %s", f->name, why);
    pm_set(c, c->napplied ? PM_PARTIAL : PM_FAILED, "version %lld (\"%s\") failed: %s. It was "
           "rolled back: nothing of version %lld was committed. Fix the file (a version that "
           "was never applied may still change) and run again.", f->version, f->name, why,
           f->version);
  }
  if(c->napplied)
    pm_add(c, "This run committed version%s %s before it (the database went from version %lld "
           "to %lld).", c->napplied > 1 ? "s" : "", done, c->from, c->to);
  else if(end != V_ENDED_BY_FILE)
    pm_add(c, "This run committed nothing before it: the database %s at version %lld.",
           end == V_IN_DOUBT ? "was" : "stays", c->from);
  if(left)
    pm_add(c, "%zu later version%s did not run.", left, left > 1 ? "s" : "");
}

static int plan(struct pm_ctx *c, size_t *pending)
{
  long long highest = c->nfiles ? c->files[c->nfiles - 1].version : 0;
  c->target = c->o.target ? c->o.target : highest;
  *pending = 0;
  for(size_t i = 0; i < c->nfiles; i++)
    *pending += c->files[i].version > c->from && c->files[i].version <= c->target;
  if(c->target < c->from) {
    st_pass(&c->st, "plan", "target %lld is below the database's version %lld", c->target,
            c->from);
    pm_set(c, PM_UPTODATE, "the target version %lld%s is below the database's version %lld: "
           "migrations only go forward, nothing was applied.", c->target,
           c->o.target ? "" : " (the highest in the directory)", c->from);
    return 1;
  }
  if(c->target > highest && c->target > c->from) {
    st_fail(&c->st, false, "plan", "target %lld has no migration: the highest is %lld",
            c->target, highest);
    pm_set(c, PM_FAILED, "nothing was applied: the target version %lld has no migration in "
           "\"%s\" (the highest is %lld): add its file to the ConfigMap, or lower "
           "spec.targetVersion.", c->target, c->o.migrations_dir, highest);
    return -1;
  }
  if(!*pending) { /* the target is reached, or no file lies between */
    st_pass(&c->st, "plan", "the database is at version %lld, the target is %lld: nothing to do",
            c->from, c->target);
    if(c->target == c->from)
      pm_set(c, PM_UPTODATE, "the database is at version %lld, the target: nothing to apply.",
             c->from);
    else
      pm_set(c, PM_UPTODATE, "the database is at version %lld and no migration lies between it "
             "and the target %lld: nothing to apply.", c->from, c->target);
    return 1;
  }
  st_pass(&c->st, "plan", "%zu version%s to apply, from %lld to %lld", *pending,
          *pending == 1 ? "" : "s", c->from, c->target);
  return 0;
}

void pm_apply(struct pm_ctx *c)
{
  size_t pending = 0;
  if(validate(c) || plan(c, &pending))
    return;
  char *ident = pm_history_ident(c);
  char *sql = ident ? malloc(strlen(ident) + 200) : NULL;
  c->applied = calloc(pending, sizeof(*c->applied));
  if(!sql || !c->applied) {
    free(ident);
    free(sql);
    pm_set(c, PM_FAILED, "nothing was applied: out of memory");
    return;
  }
  sprintf(sql, "INSERT INTO %s (version, description, checksum, operation, execution_ms)"
               " VALUES ($1::bigint, $2, $3, $4, $5::bigint)", ident);
  free(ident);
  for(size_t i = 0; i < c->nfiles; i++) {
    const struct pm_file *f = &c->files[i];
    if(f->version <= c->from || f->version > c->target)
      continue;
    struct pgc_err e;
    long long ms = 0;
    enum v_end end = run_version(c, f, sql, &e, &ms);
    if(end != V_COMMITTED) {
      stopped(c, f, end, &e, pending);
      free(sql);
      return;
    }
    c->applied[c->napplied++] = f->version;
    c->to = f->version;
    char id[40];
    snprintf(id, sizeof(id), "version %lld", f->version);
    st_pass(&c->st, id, "applied %s in %lld ms", f->name, ms);
  }
  free(sql);
  char done[400];
  list_versions(done, sizeof(done), c->applied, c->napplied, LIST_MAX);
  pm_set(c, PM_APPLIED, "applied version%s %s: the database went from version %lld to %lld.",
         c->napplied > 1 ? "s" : "", done, c->from, c->to);
}

void pm_observe(struct pm_ctx *c)
{
  long long *v = calloc(c->nrows ? c->nrows : 1, sizeof(*v));
  if(!v) {
    pm_set(c, PM_FAILED, "out of memory");
    return;
  }
  for(size_t i = 0; i < c->nrows; i++)
    v[i] = c->rows[i].version;
  char list[600];
  list_versions(list, sizeof(list), v, c->nrows, 40);
  free(v);
  if(!c->history_exists)
    pm_set(c, PM_SUCCEEDED, "the database is at version 0: the history table %s does not "
           "exist, so no version was applied.", c->o.history_table);
  else
    pm_set(c, PM_SUCCEEDED, "the database is at version %lld: the history table %s records "
           "%zu version%s (%s).", c->from, c->o.history_table, c->nrows,
           c->nrows == 1 ? "" : "s", list);
}
