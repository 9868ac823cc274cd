/*
 * cutover.c: `godwit-runner cutover --dir DIR --slot-name S`: sets pgcopydb's end position at
 * the source's current WAL position, then nudges a quiet source so follow reaches it.
 *
 * Where the end position lives:
 *  - pgcopydb 0.10 to 0.14: the table pgcopydb.sentinel in the source database. pgcopydb 0.10's
 *    own `stream sentinel set endpos --current` runs
 *      update pgcopydb.sentinel set endpos = pg_current_wal_flush_lsn()
 *    (seen in the server's statement log); the runner runs the same update over libpq, in a
 *    transaction that first reads the row FOR UPDATE, with pg_current_wal_insert_lsn(): a
 *    commit acknowledged under synchronous_commit = off is inserted but not yet flushed, and a
 *    flush-based end position cut the last transaction off in test_runner_steps_live.c (the
 *    verify step caught it). Decoding reaches the insert position as soon as the WAL writer
 *    flushes it.
 *  - pgcopydb 0.15 to 0.17 keep the sentinel in the work dir's SQLite catalog
 *    (DIR/schema/source.db, table sentinel): the runner writes the end position there itself,
 *    in one SQLite transaction that reads the row first (workdir.h, wd_sentinel_endpos), as
 *    `pgcopydb stream sentinel set endpos` does, with the source's insert position. Not by
 *    running that command: the runner image's pgcopydb need not be the worker's (Debian 12's
 *    0.10 cannot read a 0.17 work dir). 0.18's follow coordinator is not handled.
 * The end position is chosen once: when the sentinel already holds one (a retried cutover Job),
 * it is kept and reported (alreadySet), so a retry never moves the end of the stream.
 *
 * The nudge, so a quiet source reaches the end position:
 *  - 0.10 (sentinel table): SELECT pg_switch_wal(): WAL after the end position, and the segment
 *    file 0.10 applies from is closed. Never pg_logical_emit_message: 0.10's wal2json transform
 *    does not know the message action and its transform worker exits 12 ("Unknown message action
 *    77"), which stalls follow for good (seen in test_runner_steps_live.c). Without EXECUTE on
 *    pg_switch_wal() the step warns and goes on: 0.10's receiver also stops on its own once the
 *    server's WAL end passes the end position, and a busy source switches segments anyway.
 *  - 0.15+ with wal2json: pg_logical_emit_message(false, 'godwit', ...) puts a change after
 *    the end position in the stream (the notes' advice for an idle source; 0.17 skips the
 *    message). Not with test_decoding (or an unknown plugin): 0.17's test_decoding parser
 *    refuses a message line ("Failed to parse test_decoding message"), its receiver reconnects
 *    before the transactions it had already applied and the apply process aborts on the
 *    duplicate (docs/dev/pgcopydb-observed.md). There the Job sends nothing; while the worker
 *    drains, the controller writes an empty transaction on the source every 250 ms
 *    (controller/migration/cutover.c, drain_nudge), which moves a quiet stream for either
 *    plugin.
 *
 * The wake (0.10 to 0.14): DIR/godwit-drain-wake, for the live worker's shell, which then cuts
 * pgcopydb's 10 s sleeps short (controller/migration/worker.c).
 *
 * Exit: 0 set, 1 failed for good (no sentinel, no right to update it), 2 transient.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pgcopydb.h"
#include "step.h"
#include "workdir.h"

static const struct cfg_opt cutover_opts[] = {
  { "dir", "PGCOPYDB_DIR", CFG_STR, NULL, 0, 0, ST_OFF(dir), "pgcopydb's work dir (the PVC)" },
  { "slot-name", NULL, CFG_STR, NULL, 0, 0, ST_OFF(slot_name),
    "the replication slot of the follow (reported; must exist)" },
  { "plugin", NULL, CFG_STR, NULL, 0, 0, ST_OFF(plugin),
    "the follow's output plugin (0.15+: a logical message nudges wal2json only)" },
  { "statement-timeout", NULL, CFG_INT, "60", 0, 86400, ST_OFF(statement_timeout),
    "seconds per statement (0: none)" },
  ST_COMMON_OPTS,
  { NULL },
};

struct cutover_out {
  char end_lsn[32];
  bool set, already;
  const char *method; /* "sentinel-table", "catalog" */
  int apply;          /* -1 unknown */
  bool slot_known, slot_exists, slot_active;
  char slot_flush[32];
  bool message;
  int switch_wal; /* -1 not tried, 0 refused, 1 done */
  char nudge_note[300];
};

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                    bool *cut, void *arg)
{
  const struct cutover_out *o = arg;
  gw_rc rc = o->set ? strbuf_addf(sb, ",\"endLSN\":\"%s\"", o->end_lsn)
                    : strbuf_adds(sb, ",\"endLSN\":null");
  if(!rc)
    rc = strbuf_addf(sb, ",\"alreadySet\":%s", o->already ? "true" : "false");
  if(!rc && o->method)
    rc = strbuf_addf(sb, ",\"sentinel\":\"%s\"", o->method);
  if(!rc && o->apply >= 0)
    rc = strbuf_addf(sb, ",\"applyEnabled\":%s", o->apply ? "true" : "false");
  if(!rc && o->slot_known) {
    rc = strbuf_adds(sb, ",\"slot\":{\"name\":");
    if(!rc)
      rc = st_json_str(c, sb, c->o.slot_name, l->str, cut);
    if(!rc)
      rc = strbuf_addf(sb, ",\"exists\":%s,\"active\":%s", o->slot_exists ? "true" : "false",
                       o->slot_active ? "true" : "false");
    if(!rc && o->slot_flush[0])
      rc = strbuf_addf(sb, ",\"confirmedFlushLSN\":\"%s\"", o->slot_flush);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  if(!rc && o->set) {
    rc = strbuf_addf(sb, ",\"nudge\":{\"message\":%s,\"switchWal\":%s", o->message ? "true" : "false",
                     o->switch_wal < 0 ? "null" : (o->switch_wal ? "true" : "false"));
    if(!rc && o->nudge_note[0])
      rc = st_json_field(c, sb, "note", o->nudge_note, l->str, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  return rc;
}

/* ----- 0.10 to 0.14: the sentinel table on the source ------------------------------------- */

static int set_in_table(struct st_ctx *c, struct cutover_out *o)
{
  PGconn *s = c->src_c;
  struct pgc_err e;
  o->method = "sentinel-table";
  if(pgc_exec(s, &e, "BEGIN")) {
    st_query_failed(c, "cutover.endpos", "begin a transaction on the source", &e);
    return -1;
  }
  PGresult *res = pgc_query(s, &e,
                            "SELECT endpos::text, apply FROM pgcopydb.sentinel FOR UPDATE", 0,
                            NULL);
  if(!res) {
    st_query_failed(c, "cutover.endpos", "read pgcopydb.sentinel on the source", &e);
    PQclear(PQexec(s, "ROLLBACK"));
    return -1;
  }
  if(PQntuples(res) != 1) {
    st_fail(c, false, "cutover.endpos",
            "pgcopydb.sentinel on %s holds %d rows, not 1: follow has not initialised it",
            st_desc(c, ST_SOURCE), PQntuples(res));
    PQclear(res);
    PQclear(PQexec(s, "ROLLBACK"));
    return -1;
  }
  const char *cur = PQgetisnull(res, 0, 0) ? "0/0" : PQgetvalue(res, 0, 0);
  o->apply = PQgetisnull(res, 0, 1) ? -1 : PQgetvalue(res, 0, 1)[0] == 't';
  uint64_t lsn = 0;
  if(!st_lsn_parse(cur, &lsn) && lsn != 0) {
    o->already = true;
    st_fmt(o->end_lsn, sizeof(o->end_lsn), "%s", cur);
    PQclear(res);
  } else {
    PQclear(res);
    char got[32] = "";
    if(pgc_value(s, &e, got, sizeof(got),
                 "UPDATE pgcopydb.sentinel SET endpos = pg_catalog.pg_current_wal_insert_lsn() "
                 "RETURNING endpos::text",
                 0, NULL)) {
      st_query_failed(c, "cutover.endpos", "update pgcopydb.sentinel on the source", &e);
      PQclear(PQexec(s, "ROLLBACK"));
      return -1;
    }
    st_fmt(o->end_lsn, sizeof(o->end_lsn), "%s", got);
  }
  if(pgc_exec(s, &e, "COMMIT")) {
    st_query_failed(c, "cutover.endpos", "commit the end position on the source", &e);
    return -1;
  }
  o->set = true;
  return 0;
}

/* ----- 0.15+: the sentinel row of the work dir's SQLite catalog ------------------------------ */

static int set_in_catalog(struct st_ctx *c, struct cutover_out *o)
{
  o->method = "catalog";
  struct pgc_err e;
  char now[32];
  if(pgc_value(c->src_c, &e, now, sizeof(now), "SELECT pg_catalog.pg_current_wal_insert_lsn()::text",
               0, NULL)) {
    st_query_failed(c, "cutover.endpos", "read the source's WAL position", &e);
    return -1;
  }
  struct wd_sentinel w;
  int r = wd_sentinel_endpos(c->o.dir, now, &w);
  if(r) {
    /* a catalog that cannot be loaded stays so; a busy or unready one may not */
    st_fail(c, r != -2, "cutover.endpos", "%s", w.why);
    return -1;
  }
  o->apply = w.apply;
  o->already = w.already;
  st_fmt(o->end_lsn, sizeof(o->end_lsn), "%s", w.endpos);
  o->set = true;
  return 0;
}

/* ----- the rest ------------------------------------------------------------------------------ */

static void read_slot(struct st_ctx *c, struct cutover_out *o)
{
  struct pgc_err e;
  const char *p[] = { c->o.slot_name };
  PGresult *res = pgc_query(c->src_c, &e,
                            "SELECT active, confirmed_flush_lsn::text FROM "
                            "pg_catalog.pg_replication_slots WHERE slot_name = $1",
                            1, p);
  if(!res) {
    st_warn(c, "cutover.slot", "could not read the slot \"%s\": %s", c->o.slot_name, e.msg);
    return;
  }
  o->slot_known = true;
  o->slot_exists = PQntuples(res) == 1;
  if(o->slot_exists) {
    o->slot_active = PQgetvalue(res, 0, 0)[0] == 't';
    st_fmt(o->slot_flush, sizeof(o->slot_flush), "%s", PQgetvalue(res, 0, 1));
    st_pass(c, "cutover.slot", "slot \"%s\" %s, confirmed flush at %s", c->o.slot_name,
            o->slot_active ? "is active" : "exists (not active)", o->slot_flush);
  } else {
    st_warn(c, "cutover.slot",
            "no replication slot \"%s\" on %s: follow cannot reach the end position without it",
            c->o.slot_name, st_desc(c, ST_SOURCE));
  }
  PQclear(res);
}

static void nudge(struct st_ctx *c, struct cutover_out *o)
{
  struct pgc_err e;
  char lsn[32];
  if(strcmp(o->method, "sentinel-table")) {
    if(!c->o.plugin || strcmp(c->o.plugin, "wal2json")) {
      st_pass(c, "cutover.nudge", "no nudge with the %s plugin: pgcopydb 0.15+ cannot parse a "
              "logical message in its output; the controller nudges the source while the worker drains",
              c->o.plugin ? c->o.plugin : "(unknown)");
      return;
    }
    /* 0.15+ with wal2json: a logical message after the end position moves a quiet stream. */
    char msg[96];
    snprintf(msg, sizeof(msg), "cutover at %s", o->end_lsn);
    const char *p[] = { msg };
    if(pgc_value(c->src_c, &e, lsn, sizeof(lsn),
                 "SELECT pg_catalog.pg_logical_emit_message(false, 'godwit', $1)::text", 1, p)) {
      st_warn(c, "cutover.nudge", "pg_logical_emit_message failed: %s", e.msg);
      st_fmt(o->nudge_note, sizeof(o->nudge_note), "pg_logical_emit_message: %s", e.msg);
    } else {
      o->message = true;
      st_pass(c, "cutover.nudge", "logical message at %s, after the end position", lsn);
    }
    return;
  }
  /* 0.10: never a logical message (its wal2json transform dies on one: "Unknown message action
   * 77", exit 12); a segment switch puts WAL after the end position and closes the segment
   * file 0.10 applies from. */
  if(pgc_value(c->src_c, &e, lsn, sizeof(lsn), "SELECT pg_catalog.pg_switch_wal()::text", 0,
               NULL)) {
    o->switch_wal = 0;
    st_warn(c, "cutover.nudge",
            "pg_switch_wal() refused (%s): pgcopydb 0.10 applies only closed WAL segments, so a "
            "quiet source may not reach the end position; grant it with GRANT EXECUTE ON "
            "FUNCTION pg_catalog.pg_switch_wal() TO %s",
            e.msg, c->src.user);
    st_fmt(o->nudge_note, sizeof(o->nudge_note),
           "pg_switch_wal(): %s; GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO %s",
           e.msg, c->src.user);
    return;
  }
  o->switch_wal = 1;
  st_pass(c, "cutover.nudge", "WAL segment switched at %s, after the end position", lsn);
}

/* pgcopydb 0.10 to 0.14: the live worker's shell wakes pgcopydb's sleeping processes once this
 * file exists (controller/migration/worker.c): their apply sleeps 10 s whenever it has nothing
 * to apply. Best effort: without it the drain ends all the same, up to 10 s later. */
static void wake_worker(const struct st_ctx *c)
{
  char path[4096];
  st_fmt(path, sizeof(path), "%s/" PGCOPYDB_DRAIN_WAKE_FILE, c->o.dir);
  FILE *f = fopen(path, "w");
  bool ok = f && fputs("end position set\n", f) != EOF;
  if(f && fclose(f))
    ok = false;
  if(!ok) {
    st_warn(c, "cutover.wake", "could not leave %s for the worker (%m): its apply may wait up "
            "to 10 s more before it drains", path);
    return;
  }
  st_pass(c, "cutover.wake", "left %s: the worker wakes pgcopydb's apply to drain now", path);
}

int cutover_main(int argc, char **argv)
{
  struct st_ctx c;
  struct cutover_out o = { .apply = -1, .switch_wal = -1 };
  int rc = st_init(&c, "cutover", "CutoverReport", cutover_opts,
                   "Sets pgcopydb's end position at the source's current WAL position and nudges\n"
                   "a quiet source so follow reaches it. Credentials: GODWIT_SOURCE_URI.\n"
                   "Exit: 0 set, 1 failed, 2 transient (retry).",
                   argc, argv);
  if(rc == 1)
    return RUNNER_EXIT_PASSED;
  if(rc < 0 || st_endpoints(&c, true, false))
    goto done;
  if(!c.o.dir || !c.o.slot_name) {
    st_fail(&c, false, "config", "--dir and --slot-name are required");
    st_summary(&c, "--dir and --slot-name are required");
    goto done;
  }
  if(!st_connect(&c, ST_SOURCE, "source.connect")) {
    goto done; /* st_connect wrote the summary */
  }
  struct pgc_err e;
  char has[8] = "";
  if(pgc_value(c.src_c, &e, has, sizeof(has),
               "SELECT pg_catalog.to_regclass('pgcopydb.sentinel') IS NOT NULL", 0, NULL)) {
    st_query_failed(&c, "cutover.endpos", "look for pgcopydb.sentinel on the source", &e);
    st_summary(&c, "could not look for the sentinel");
    goto done;
  }
  char db[4096];
  st_fmt(db, sizeof(db), "%s/schema/source.db", c.o.dir);
  struct stat sst;
  if(has[0] == 't')
    rc = set_in_table(&c, &o);
  else if(!stat(db, &sst))
    rc = set_in_catalog(&c, &o);
  else {
    st_fail(&c, false, "cutover.endpos",
            "no pgcopydb sentinel: neither pgcopydb.sentinel in the source database (pgcopydb "
            "0.10-0.14) nor %s (0.15+): is follow running on this source?",
            db);
    rc = -1;
  }
  if(rc) {
    st_summary(&c, "the end position is not set");
    goto done;
  }
  if(o.already)
    st_pass(&c, "cutover.endpos", "the end position was already set at %s (%s): kept", o.end_lsn,
            o.method);
  else
    st_pass(&c, "cutover.endpos", "end position set at %s (%s) on %s", o.end_lsn, o.method,
            st_desc(&c, ST_SOURCE));
  if(o.apply == 0)
    st_warn(&c, "cutover.apply",
            "the sentinel does not enable apply yet: the base copy has not finished");
  if(has[0] == 't')
    wake_worker(&c);
  read_slot(&c, &o);
  nudge(&c, &o);
  st_summary(&c, "end position %s%s", o.end_lsn,
           o.already ? " (already set, kept)" : "");
done:;
  int code = st_finish(&c, render, &o);
  st_release(&c);
  return code;
}
