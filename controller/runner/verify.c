/*
 * verify.c: `godwit-runner verify --dir DIR --end-lsn L --origin O`: proves the drain of a live
 * migration after follow reached the end position, then syncs sequences.
 *
 * The proof (docs/dev/migration-controller.md, /work/shared/notes/pgcopydb.md): the target's
 * replication origin O (pg_replication_origin_status.remote_lsn; pg_replication_origin_progress
 * when the role may not read the view) exactly equal to L proves it. Anything else, a few bytes
 * below included (a byte tolerance once blessed a cutover that had lost three commits), is
 * decided by content: every migrated table (the work dir's list, else the source's tables)
 * counted and checksummed on both sides (datacmp.h); drained only when every table matches.
 * Then every sequence is copied to the target (setval with is_called).
 *
 * The data compare assumes the source no longer takes writes (applications stopped before the
 * cutover): a write after L shows as a difference, and the verdict is DrainIncomplete (fail
 * closed).
 *
 * Verdicts and exit codes: DrainVerified (exit 0: drained, sequences synced); DrainIncomplete
 * (exit 1: a table differs, a table or sequence could not be read or written for good); no
 * verdict (exit 2: a connection or statement failed in a way a retry may fix).
 */
#include <stdio.h>
#include <string.h>

#include "datacmp.h"
#include "step.h"
#include "workdir.h"

static const struct cfg_opt verify_opts[] = {
  { "dir", "PGCOPYDB_DIR", CFG_STR, NULL, 0, 0, ST_OFF(dir),
    "pgcopydb's work dir: the tables and sequences the copy covered" },
  { "end-lsn", NULL, CFG_STR, NULL, 0, 0, ST_OFF(end_lsn), "the end position the cutover set" },
  { "origin", NULL, CFG_STR, NULL, 0, 0, ST_OFF(origin),
    "the replication origin follow applies with, on the target" },
  { "statement-timeout", NULL, CFG_INT, "0", 0, 86400, ST_OFF(statement_timeout),
    "seconds per statement (0: none; a checksum reads a whole table)" },
  ST_COMMON_OPTS,
  { NULL },
};

struct verify_out {
  struct wd_catalog w;
  struct dc_set tables;
  struct sq_result seq;
  char origin_lsn[32];
  bool origin_known, exact, compared, drained, synced_run;
  const char *verdict;
};

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                    bool *cut, void *arg)
{
  const struct verify_out *o = arg;
  gw_rc rc = o->verdict ? strbuf_addf(sb, ",\"verdict\":\"%s\"", o->verdict)
                        : strbuf_adds(sb, ",\"verdict\":null");
  if(!rc && c->o.end_lsn)
    rc = st_json_field(c, sb, "endLSN", c->o.end_lsn, 40, cut);
  if(!rc && c->o.origin)
    rc = st_json_field(c, sb, "origin", c->o.origin, l->str, cut);
  if(!rc)
    rc = o->origin_known ? strbuf_addf(sb, ",\"originLSN\":\"%s\"", o->origin_lsn)
                         : strbuf_adds(sb, ",\"originLSN\":null");
  if(!rc)
    rc = strbuf_addf(sb, ",\"exact\":%s,\"method\":%s", o->exact ? "true" : "false",
                     o->exact ? "\"origin\"" : (o->compared ? "\"data\"" : "null"));
  if(!rc && o->compared) {
    rc = strbuf_addf(sb, ",\"tablesFrom\":\"%s\",\"tablesCompared\":%zu,\"tablesMatching\":%zu,"
                         "\"tablesDiffering\":%zu,\"compared\":",
                     o->tables.from_workdir ? "workdir" : "source", o->tables.n,
                     o->tables.matching, o->tables.differing);
    size_t omitted = 0;
    if(!rc)
      rc = dc_render(c, sb, &o->tables, l->list, l->str, true, &omitted, cut);
    if(!rc)
      rc = strbuf_addf(sb, ",\"comparedOmitted\":%zu", omitted);
  } else if(!rc) {
    rc = strbuf_adds(sb, ",\"tablesCompared\":0,\"tablesMatching\":0,\"tablesDiffering\":0,"
                         "\"compared\":[]");
  }
  if(!rc)
    rc = strbuf_addf(sb, ",\"drained\":%s,\"sequencesSynced\":%s", o->drained ? "true" : "false",
                     o->synced_run && !o->seq.failed ? "true" : "false");
  if(!rc && o->synced_run) {
    rc = strbuf_addf(sb, ",\"sequences\":{\"total\":%zu,\"synced\":%zu,\"skipped\":%zu,"
                         "\"failed\":%zu",
                     o->seq.total, o->seq.synced, o->seq.skipped, o->seq.failed);
    if(!rc && o->seq.first_error[0])
      rc = st_json_field(c, sb, "firstError", o->seq.first_error, l->str, cut);
    if(!rc)
      rc = strbuf_addc(sb, '}');
  }
  return rc;
}

/* The origin's remote_lsn: from the view, or through pg_replication_origin_progress (EXECUTE on
 * the pg_replication_origin_* functions is what the preflight grants; the view is
 * superuser-only by default). 1 known, 0 no origin or no progress, -1 failed (line printed). */
static int read_origin(struct st_ctx *c, struct verify_out *o)
{
  struct pgc_err e;
  const char *p[] = { c->o.origin };
  char v[32] = "";
  if(pgc_value(c->dst_c, &e, v, sizeof(v),
               "SELECT pg_catalog.pg_replication_origin_oid($1)::text", 1, p)) {
    st_warn(c, "verify.origin", "could not look the origin \"%s\" up on the target: %s",
            c->o.origin, e.msg);
    return st_transient_state(&e) ? -1 : 0;
  }
  if(!v[0]) {
    st_warn(c, "verify.origin", "no replication origin \"%s\" on the target", c->o.origin);
    return 0;
  }
  if(pgc_value(c->dst_c, &e, v, sizeof(v),
               "SELECT remote_lsn::text FROM pg_catalog.pg_replication_origin_status "
               "WHERE external_id = $1",
               1, p)) {
    if(st_transient_state(&e)) {
      st_query_failed(c, "verify.origin", "read pg_replication_origin_status", &e);
      return -1;
    }
    if(pgc_value(c->dst_c, &e, v, sizeof(v),
                 "SELECT pg_catalog.pg_replication_origin_progress($1, false)::text", 1, p)) {
      st_warn(c, "verify.origin", "could not read the progress of origin \"%s\": %s",
              c->o.origin, e.msg);
      return st_transient_state(&e) ? -1 : 0;
    }
  }
  if(!v[0]) {
    st_warn(c, "verify.origin", "origin \"%s\" has no progress on the target", c->o.origin);
    return 0;
  }
  st_fmt(o->origin_lsn, sizeof(o->origin_lsn), "%s", v);
  return 1;
}

int verify_main(int argc, char **argv)
{
  struct st_ctx c;
  struct verify_out o = { 0 };
  int rc = st_init(&c, "verify", "VerifyReport", verify_opts,
                   "Proves the drain of a live migration: the target's origin progress exactly at\n"
                   "the end position, else every migrated table matching by count and checksum;\n"
                   "then syncs sequences. Credentials: GODWIT_SOURCE_URI, GODWIT_TARGET_URI.\n"
                   "Exit: 0 DrainVerified, 1 DrainIncomplete, 2 transient (no verdict).",
                   argc, argv);
  if(rc == 1)
    return RUNNER_EXIT_PASSED;
  uint64_t end = 0, at = 0;
  if(rc < 0 || st_endpoints(&c, true, true))
    goto done;
  if(!c.o.end_lsn || !c.o.origin || st_lsn_parse(c.o.end_lsn, &end)) {
    st_fail(&c, false, "config", "--end-lsn (an LSN such as 0/43005538) and --origin are required");
    st_summary(&c, "--end-lsn and --origin are required");
    goto done;
  }
  if(!st_connect(&c, ST_TARGET, "target.connect") || !st_connect(&c, ST_SOURCE, "source.connect")) {
    goto done; /* st_connect wrote the summary */
  }
  if(wd_load(&o.w, c.o.dir)) {
    st_fail(&c, false, "verify.tables", "out of memory");
    goto done;
  }
  int known = read_origin(&c, &o);
  if(known < 0) {
    st_summary(&c, "could not read the origin's progress");
    goto done;
  }
  o.origin_known = known == 1;
  if(o.origin_known && !st_lsn_parse(o.origin_lsn, &at) && at == end) {
    o.exact = true;
    o.drained = true;
    st_pass(&c, "verify.origin", "origin \"%s\" is exactly at the end position %s: drained",
            c.o.origin, c.o.end_lsn);
  } else {
    if(o.origin_known)
      st_print(&c, "INFO verify.origin: origin \"%s\" at %s, end position %s: not equal, the "
                   "content decides",
               c.o.origin, o.origin_lsn, c.o.end_lsn);
    if(!o.w.readable)
      st_warn(&c, "verify.tables", "the work dir gives no table list (%s): comparing every "
                                   "table of the source",
              o.w.reason);
    struct pgc_err e;
    if(dc_session(c.src_c, &e) || dc_session(c.dst_c, &e)) {
      st_query_failed(&c, "verify.data", "prepare the sessions", &e);
      st_summary(&c, "could not prepare the sessions");
      goto done;
    }
    if(dc_tables(&o.tables, &o.w, c.src_c, &e)) {
      st_query_failed(&c, "verify.tables", "list the tables on the source", &e);
      st_summary(&c, "could not list the tables");
      goto done;
    }
    o.compared = true;
    dc_compare_all(&c, &o.tables, "verify.data", true);
    o.drained = o.tables.differing == 0;
    if(o.tables.transient) {
      st_escalate(&c, ST_TRANSIENT);
      st_fmt(c.summary, sizeof(c.summary),
               "no verdict: reading a table failed in a way a retry may fix (%zu of %zu tables "
               "matched)",
               o.tables.matching, o.tables.n);
      o.drained = false;
      goto done;
    }
    if(!o.drained) {
      char first[300] = "";
      for(size_t i = 0; i < o.tables.n && !first[0]; i++)
        if(!o.tables.v[i].match)
          st_qualname(first, sizeof(first), o.tables.v[i].schema, o.tables.v[i].name);
      st_escalate(&c, ST_FAILED);
      o.verdict = "DrainIncomplete";
      st_fmt(c.summary, sizeof(c.summary),
               "DrainIncomplete: %zu of %zu tables differ (first: %s); origin %s, end position %s",
               o.tables.differing, o.tables.n, first, o.origin_known ? o.origin_lsn : "unknown",
               c.o.end_lsn);
      goto done;
    }
    st_pass(&c, "verify.data", "all %zu tables match: drained", o.tables.n);
  }
  o.synced_run = true;
  dc_sync_sequences(&c, &o.w, &o.seq, "verify.sequences");
  if(o.seq.failed) {
    st_escalate(&c, o.seq.transient ? ST_TRANSIENT : ST_FAILED);
    o.verdict = o.seq.transient ? NULL : "DrainIncomplete";
    st_summary(&c, "drained, but %zu of %zu sequences not synced: %s",
             o.seq.failed, o.seq.total, o.seq.first_error);
    goto done;
  }
  o.verdict = "DrainVerified";
  st_summary(&c, "DrainVerified by %s; %zu sequences synced",
           o.exact ? "origin progress exactly at the end position" : "a clean data compare",
           o.seq.synced);
done:;
  int code = st_finish(&c, render, &o);
  dc_release(&o.tables);
  wd_release(&o.w);
  st_release(&c);
  return code;
}
