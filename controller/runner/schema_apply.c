/*
 * schema_apply.c: an Apply of a PtahSchema's approved plan (schema.h), in the target's
 * read-write session:
 *
 *   1. the PtahSchema lock, (PTAH_LOCK_CLASS, hashtext('ptah.run/PtahSchema')), a session-level
 *      advisory lock polled for --lock-wait-s: held elsewhere, the run fails naming the holder;
 *   2. (schema.c) in that session, the target's model (REPEATABLE READ READ ONLY, committed),
 *      the desired one materialised as a Plan does, the diff, the digest with --binding, the
 *      protected tables;
 *   3. the digest against --approved-digest: another one is PlanStale and nothing runs;
 *   4. an empty plan is UpToDate;
 *   5. the ownTransaction statements (enum values added) each on its own, committed, then
 *      BEGIN; <the others, in order>; COMMIT;
 *   6. after the COMMIT, the target's model read again and diffed against the desired model
 *      kept in memory: what a new plan would still hold is said in the message;
 *   7. (sp_unlock) whether the session still holds the lock (lockContinuous), then release.
 *
 * Outcomes: Applied (the transaction committed), UpToDate (the approved plan is empty), Failed
 * (nothing committed: the lock, a stale digest, a protected table, the first enum value or the
 * transaction failed and was rolled back), Partial (enum values committed, then the transaction
 * failed), Unknown (the connection went during the COMMIT, or during an enum value's statement).
 *
 * Kill-safety: every statement but the enum values runs in one transaction, so a SIGKILL at any
 * instant leaves the database without it (the server rolls back the transaction of a session
 * whose client went: at once when idle, within a second of client_connection_check_interval
 * during a statement on PostgreSQL 14+) or with all of it committed. The enum values are added
 * with ADD VALUE IF NOT EXISTS: one committed before a kill is harmless to the next Apply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptah.h"
#include "schema.h"
#include "strbuf.h"

#define VERIFY_SHOWN 5 /* statements a failed verification names */

/* ----- the lock ------------------------------------------------------------------------------ */

int sp_lock(struct sp_ctx *c)
{
  struct pgc_err e;
  int r = ptah_lock_take(c->conn, SP_LOCK_KEY, c->o.lock_wait_s, &c->backend_pid, &e);
  if(r < 0)
    return sp_query_failed(c, "lock", "take the PtahSchema lock", &e);
  if(r > 0) {
    char holder[512];
    ptah_lock_holder(c->conn, SP_LOCK_KEY, holder, sizeof(holder));
    st_fail(&c->st, false, "lock", "the PtahSchema lock of this database is held by %s; waited "
            "%ld s", holder, c->o.lock_wait_s);
    sp_set(c, SP_FAILED, "nothing was applied: the PtahSchema lock of this database (%d, "
           "hashtext('%s')) is held by %s, waited %ld s. Another Apply (of this or another "
           "PtahSchema on this database) or a person holds it; this run read and changed nothing",
           PTAH_LOCK_CLASS, SP_LOCK_KEY, holder, c->o.lock_wait_s);
    return -1;
  }
  c->locked = true;
  st_pass(&c->st, "lock", "holding the PtahSchema lock (%d, hashtext('%s')) as backend pid %d",
          PTAH_LOCK_CLASS, SP_LOCK_KEY, c->backend_pid);
  return 0;
}

void sp_unlock(struct sp_ctx *c)
{
  if(!c->locked)
    return;
  c->locked = false;
  c->lock_continuous = ptah_lock_release(&c->st, c->conn, SP_LOCK_KEY, c->backend_pid,
                                         "the PtahSchema lock");
  if(!c->lock_continuous && c->outcome != SP_FAILED)
    sp_add_message(c, "The PtahSchema lock was not held throughout the run (lockContinuous "
                   "false).");
}

/* ----- the approved digest ------------------------------------------------------------------ */

static int stale(struct sp_ctx *c)
{
  const struct sp_plan *p = &c->plan;
  if(!strcmp(p->digest, c->o.approved_digest)) {
    st_pass(&c->st, "digest", "the plan computed under the lock is the approved one (%s)",
            p->digest);
    return 0;
  }
  const char *fp = c->o.plan_fingerprint;
  char why[640];
  if(fp && strcmp(fp, p->fingerprint))
    snprintf(why, sizeof(why), "the target's catalog changed since the plan was computed "
             "(fingerprint %s then, %s now)", fp, p->fingerprint);
  else if(fp)
    snprintf(why, sizeof(why), "the target's catalog is as it was planned (fingerprint %s): "
             "the desired schema or the execution binding changed since", fp);
  else
    snprintf(why, sizeof(why), "whether the target's catalog (now fingerprint %s) or the "
             "desired schema or binding changed is not known (no --plan-fingerprint)",
             p->fingerprint);
  st_fail(&c->st, false, "digest", "the plan computed under the lock (%s) is not the approved "
          "one (%s): %s", p->digest, c->o.approved_digest, why);
  sp_set(c, SP_FAILED, "nothing was applied: the approved plan %s is stale: the plan computed "
         "now, under the lock, has digest %s (%zu statement%s); %s. Compute a new plan and "
         "approve it", c->o.approved_digest, p->digest, p->n, p->n == 1 ? "" : "s", why);
  c->refusal = "PlanStale";
  return -1;
}

/* ----- the statements ------------------------------------------------------------------------- */

/* One statement: 0, or -1 with e (e->transient: the connection went). */
static int exec(struct sp_ctx *c, const char *sql, struct pgc_err *e)
{
  PGresult *res = PQexec(c->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  if(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
    PQclear(res);
    return 0;
  }
  pm_result_err(c->conn, res, e);
  PQclear(res);
  return -1;
}

static void before(struct sp_ctx *c, size_t own_done)
{
  if(own_done)
    sp_add_message(c, "Before it, %zu enum value%s committed, each in its own transaction; "
                   "they stay (a later Apply adds them IF NOT EXISTS).", own_done,
                   own_done == 1 ? " was" : "s were");
}

/* The enum values, each committed on its own. 0, or -1 with the outcome set. */
static int own_statements(struct sp_ctx *c, size_t *done)
{
  for(size_t i = 0; i < c->plan.n; i++) {
    const struct sp_stmt *s = &c->plan.v[i];
    if(!s->own_txn)
      continue;
    struct pgc_err e;
    if(!exec(c, s->sql, &e)) {
      (*done)++;
      st_pass(&c->st, "apply", "committed statement %zu (\"%s\") in its own transaction", i + 1,
              s->label);
      continue;
    }
    char why[1024];
    pm_describe_err(&e, why, sizeof(why));
    st_fail(&c->st, false, "apply", "statement %zu (\"%s\") failed: %s", i + 1, s->label, why);
    if(e.transient)
      sp_set(c, SP_UNKNOWN, "the connection was lost while statement %zu (\"%s\") ran in its "
             "own transaction: %s. Whether it committed cannot be known from here (an Observe "
             "tells); the plan's transaction did not run.", i + 1, s->label, why);
    else
      sp_set(c, *done ? SP_PARTIAL : SP_FAILED, "statement %zu (\"%s\") failed in its own "
             "transaction: %s. It was rolled back, and the plan's transaction did not run.",
             i + 1, s->label, why);
    before(c, *done);
    return -1;
  }
  return 0;
}

/* BEGIN; the other statements; COMMIT. 0 committed, or -1 with the outcome set. */
static int transaction(struct sp_ctx *c, size_t own_done, size_t n)
{
  struct pgc_err e;
  long long t0 = pm_now_ms();
  const struct sp_stmt *s = NULL;
  size_t at = 0;
  int r = exec(c, "BEGIN", &e);
  for(size_t i = 0; i < c->plan.n && !r; i++)
    if(!c->plan.v[i].own_txn && (r = exec(c, c->plan.v[i].sql, &e)))
      s = &c->plan.v[at = i];
  char why[1024], what[1200] = "BEGIN";
  if(r) {
    pm_describe_err(&e, why, sizeof(why));
    if(s)
      snprintf(what, sizeof(what), "statement %zu (\"%s\")", at + 1, s->label);
    if(!e.transient)
      (void)exec(c, "ROLLBACK", &e);
    st_fail(&c->st, false, "apply", "%s failed, the transaction was rolled back: %s", what, why);
    sp_set(c, own_done ? SP_PARTIAL : SP_FAILED, "%s failed: %s. The plan's transaction was "
           "rolled back%s: none of its %zu statement%s was committed.", what, why,
           e.transient ? " (the connection went with it)" : "", n, n == 1 ? "" : "s");
    before(c, own_done);
    return -1;
  }
  PGresult *res = PQexec(c->conn, "COMMIT");
  bool lost = PQstatus(c->conn) != CONNECTION_OK;
  bool ok = !lost && PQresultStatus(res) == PGRES_COMMAND_OK && !strcmp(PQcmdStatus(res), "COMMIT");
  if(!ok && PQresultStatus(res) == PGRES_COMMAND_OK) {
    memset(&e, 0, sizeof(e));
    snprintf(e.msg, sizeof(e.msg), "the server rolled the transaction back at COMMIT");
  } else if(!ok) {
    pm_result_err(c->conn, res, &e); /* a deferred constraint, a serialization failure */
  }
  PQclear(res);
  if(ok) {
    st_pass(&c->st, "apply", "committed %zu statement%s in one transaction in %lld ms", n,
            n == 1 ? "" : "s", pm_now_ms() - t0);
    return 0;
  }
  pm_describe_err(&e, why, sizeof(why));
  st_fail(&c->st, false, "apply", "the COMMIT of the plan's transaction %s: %s",
          lost ? "was cut off" : "failed", why);
  if(lost)
    sp_set(c, SP_UNKNOWN, "the connection was lost during the COMMIT of the plan's transaction "
           "(%zu statement%s): %s. Whether it committed cannot be known from here; it committed "
           "all or nothing, and an Observe tells which (its plan is empty if it did).", n,
           n == 1 ? "" : "s", why);
  else
    sp_set(c, own_done ? SP_PARTIAL : SP_FAILED, "the plan's transaction failed at COMMIT: %s. "
           "None of its %zu statement%s was committed.", why, n, n == 1 ? "" : "s");
  before(c, own_done);
  return -1;
}

/* ----- the verification ---------------------------------------------------------------------- */

static void verify(struct sp_ctx *c)
{
  struct sm_model now;
  struct pgc_err e;
  bool read = false;
  int r = pgc_exec(c->conn, &e, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if(!r && !(r = sm_read(c->conn, &now, &e)))
    read = true;
  if(!r)
    r = pgc_exec(c->conn, &e, "COMMIT");
  if(r) {
    char why[800];
    pm_describe_err(&e, why, sizeof(why));
    if(PQstatus(c->conn) == CONNECTION_OK && PQtransactionStatus(c->conn) != PQTRANS_IDLE)
      (void)pgc_exec(c->conn, &e, "ROLLBACK");
    st_warn(&c->st, "verify", "could not read the catalog again: %s", why);
    sp_add_message(c, "The catalog could not be read again to verify it: %s.", why);
    if(read)
      sm_release(&now);
    return;
  }
  struct sp_plan rest;
  sp_plan_init(&rest);
  if(sd_diff(&now, &c->want, &rest)) {
    st_warn(&c->st, "verify", "could not diff the catalog again: %s",
            rest.err[0] ? rest.err : "out of memory");
    sp_add_message(c, "The catalog could not be verified: %s.",
                   rest.err[0] ? rest.err : "out of memory");
  } else if(!rest.n) {
    st_pass(&c->st, "verify", "the database now matches the desired schema");
    sp_add_message(c, "Verified: the database now matches the desired schema.");
  } else {
    struct strbuf sb;
    strbuf_init(&sb, 8192);
    gw_rc rc = GW_OK;
    for(size_t i = 0; i < rest.n && i < VERIFY_SHOWN && !rc; i++)
      rc = strbuf_addf(&sb, "%s\"%s\"", i ? ", " : "", rest.v[i].label);
    if(!rc && rest.n > VERIFY_SHOWN)
      rc = strbuf_addf(&sb, " and %zu more", rest.n - VERIFY_SHOWN);
    st_warn(&c->st, "verify", "the database does not match the desired schema: %zu statement%s "
            "would remain: %s", rest.n, rest.n == 1 ? "" : "s", strbuf_str(&sb));
    sp_add_message(c, "Verification: after the COMMIT the database does not match the desired "
                   "schema: a new plan would still hold %zu statement%s (%s). A concurrent "
                   "change, or a difference the engine does not converge on: compute a new "
                   "plan to see it.", rest.n, rest.n == 1 ? "" : "s", strbuf_str(&sb));
    strbuf_release(&sb);
  }
  sp_plan_release(&rest);
  sm_release(&now);
}

/* ----- the run ---------------------------------------------------------------------------- */

void sp_apply(struct sp_ctx *c)
{
  const struct sp_plan *p = &c->plan;
  if(stale(c))
    return;
  if(!p->n) {
    st_pass(&c->st, "apply", "the approved plan is empty: nothing to apply");
    sp_set(c, SP_UPTODATE, "no change: the database matches the desired schema (catalog %s); "
           "the approved plan %s is empty, nothing was applied", p->fingerprint, p->digest);
    return;
  }
  size_t own = 0, own_done = 0;
  for(size_t i = 0; i < p->n; i++)
    own += p->v[i].own_txn;
  if(own_statements(c, &own_done) || (own < p->n && transaction(c, own_done, p->n - own)))
    return;
  char parts[160] = "";
  if(own)
    snprintf(parts, sizeof(parts), " (%zu enum value%s, each in its own transaction, then %zu "
             "statement%s in one)", own, own == 1 ? "" : "s", p->n - own,
             p->n - own == 1 ? "" : "s");
  sp_set(c, SP_APPLIED, "applied the approved plan %s: %zu statement%s committed%s: %s.",
         p->digest, p->n, p->n == 1 ? "" : "s", parts, p->summary);
  verify(c);
}
