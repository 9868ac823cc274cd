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
 *  - pgcopydb 0.15 and later keep the sentinel in the work dir's SQLite catalog (or behind the
 *    0.18 follow coordinator): the runner runs `pgcopydb stream sentinel set endpos --current
 *    --dir DIR` with the source URI in PGCOPYDB_SOURCE_PGURI (never in an argument). Not
 *    exercised on this machine (Debian ships 0.10).
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
 *  - 0.15+: pg_logical_emit_message(false, 'godwit', ...) puts a change after the end position
 *    in the stream (the notes' advice for an idle source).
 *
 * Exit: 0 set, 1 failed for good (no sentinel, no right to update it), 2 transient.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "step.h"

static const struct cfg_opt cutover_opts[] = {
  { "dir", "PGCOPYDB_DIR", CFG_STR, NULL, 0, 0, ST_OFF(dir), "pgcopydb's work dir (the PVC)" },
  { "slot-name", NULL, CFG_STR, NULL, 0, 0, ST_OFF(slot_name),
    "the replication slot of the follow (reported; must exist)" },
  { "pgcopydb", NULL, CFG_STR, "pgcopydb", 0, 0, ST_OFF(pgcopydb),
    "the pgcopydb binary (0.15+ work dirs)" },
  { "statement-timeout", NULL, CFG_INT, "60", 0, 86400, ST_OFF(statement_timeout),
    "seconds per statement (0: none)" },
  ST_COMMON_OPTS,
  { NULL },
};

struct cutover_out {
  char end_lsn[32];
  bool set, already;
  const char *method; /* "sentinel-table", "pgcopydb" */
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

/* ----- 0.15+: pgcopydb itself ---------------------------------------------------------------- */

/* Runs pgcopydb with args and the source URI in its environment; out gets stdout and stderr
 * (NUL-terminated, cut at len). Returns the exit status, or -1. */
static int run_pgcopydb(struct st_ctx *c, const char *const *args, char *out, size_t len)
{
  int fds[2];
  out[0] = '\0';
  if(pipe(fds))
    return -1;
  pid_t pid = fork();
  if(pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if(pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    setenv("PGCOPYDB_SOURCE_PGURI", getenv("GODWIT_SOURCE_URI"), 1);
    const char *argv[16] = { c->o.pgcopydb };
    int n = 1;
    for(const char *const *a = args; *a && n < 15; a++)
      argv[n++] = *a;
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  size_t used = 0;
  time_t deadline = time(NULL) + (c->o.statement_timeout > 0 ? c->o.statement_timeout : 120);
  for(;;) {
    struct pollfd p = { fds[0], POLLIN, 0 };
    int r = poll(&p, 1, 1000);
    if(r > 0) {
      char tmp[1024];
      ssize_t n = read(fds[0], tmp, sizeof(tmp));
      if(n <= 0)
        break;
      size_t take = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;
      memcpy(out + used, tmp, take);
      used += take;
      out[used] = '\0';
    } else if(r < 0 && errno != EINTR) {
      break;
    }
    if(time(NULL) > deadline) {
      kill(pid, SIGKILL);
      break;
    }
  }
  close(fds[0]);
  int st;
  while(waitpid(pid, &st, 0) < 0)
    if(errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last LSN-looking token of the line that starts with key (or of any line when key is
 * NULL). */
static bool find_lsn(const char *text, const char *key, char *lsn, size_t len)
{
  bool found = false;
  for(const char *line = text; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) : strlen(line);
    if(!key || (n > strlen(key) && !strncmp(line, key, strlen(key)))) {
      char buf[256];
      st_fmt(buf, sizeof(buf), "%.*s", (int)(n < 255 ? n : 255), line);
      for(char *tok = strtok(buf, " \t\r\""); tok; tok = strtok(NULL, " \t\r\"")) {
        uint64_t v;
        if(!st_lsn_parse(tok, &v)) {
          st_fmt(lsn, len, "%s", tok);
          found = true;
        }
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return found;
}

static const char *last_line(char *text)
{
  size_t n = strlen(text);
  while(n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
    text[--n] = '\0';
  const char *nl = strrchr(text, '\n');
  return nl ? nl + 1 : text;
}

static int set_with_pgcopydb(struct st_ctx *c, struct cutover_out *o)
{
  o->method = "pgcopydb";
  char out[8192];
  const char *get[] = { "stream", "sentinel", "get", "--dir", c->o.dir, NULL };
  int st = run_pgcopydb(c, get, out, sizeof(out));
  char cur[32];
  uint64_t lsn;
  if(st == 0 && find_lsn(out, "endpos", cur, sizeof(cur)) && !st_lsn_parse(cur, &lsn) &&
     lsn != 0) {
    o->already = true;
    o->set = true;
    st_fmt(o->end_lsn, sizeof(o->end_lsn), "%s", cur);
    return 0;
  }
  const char *set[] = { "stream", "sentinel", "set", "endpos", "--current", "--dir", c->o.dir,
                        NULL };
  st = run_pgcopydb(c, set, out, sizeof(out));
  if(st != 0) {
    st_fail(c, true, "cutover.endpos",
            "`%s stream sentinel set endpos --current` exited %d: %s", c->o.pgcopydb, st,
            last_line(out));
    return -1;
  }
  if(!find_lsn(out, NULL, o->end_lsn, sizeof(o->end_lsn))) {
    st_fail(c, true, "cutover.endpos",
            "`%s stream sentinel set endpos --current` printed no LSN: %s", c->o.pgcopydb,
            last_line(out));
    return -1;
  }
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
    /* 0.15+: a logical message after the end position moves a quiet stream. */
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
    rc = set_with_pgcopydb(&c, &o);
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
  read_slot(&c, &o);
  nudge(&c, &o);
  st_summary(&c, "end position %s%s", o.end_lsn,
           o.already ? " (already set, kept)" : "");
done:;
  int code = st_finish(&c, render, &o);
  st_release(&c);
  return code;
}
