/*
 * cleanup.c: `godwit-runner cleanup --slot-name S --origin O [--publication P]`: drops what a
 * live migration leaves behind, as `pgcopydb stream cleanup` does, and is idempotent:
 *   source: the replication slot S (its walsender terminated first when the slot is active),
 *           the publication P (default "pgcopydb": pgoutput-era pgcopydb creates it; 0.10 with
 *           wal2json creates none), the sentinel schema "pgcopydb" (DROP SCHEMA ... CASCADE;
 *           0.10-0.17 keep the sentinel table there);
 *   target: the replication origin O.
 * Each is "dropped", "absent" (already gone: fine) or "failed" with the server's message. The
 * migration roles are enough: the slot's walsender runs as the source role (so it may terminate
 * it) and REPLICATION lets it drop the slot; the role created the schema; the origin functions
 * are granted by the preflight.
 *
 * Exit: 0 everything dropped or absent, 1 a drop failed for good, 2 transient (a connection, an
 * object still in use after --wait seconds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "step.h"

static const struct cfg_opt cleanup_opts[] = {
  { "slot-name", NULL, CFG_STR, NULL, 0, 0, ST_OFF(slot_name), "the replication slot (source)" },
  { "origin", NULL, CFG_STR, NULL, 0, 0, ST_OFF(origin), "the replication origin (target)" },
  { "publication", NULL, CFG_STR, "pgcopydb", 0, 0, ST_OFF(publication),
    "the publication pgcopydb created (source), if any" },
  { "wait", NULL, CFG_INT, "30", 1, 600, ST_OFF(wait),
    "seconds to wait for an active slot or origin to be released" },
  { "statement-timeout", NULL, CFG_INT, "60", 0, 86400, ST_OFF(statement_timeout),
    "seconds per statement (0: none)" },
  ST_COMMON_OPTS,
  { NULL },
};

enum obj_state { OBJ_NOT_TRIED, OBJ_ABSENT, OBJ_DROPPED, OBJ_FAILED };

struct obj {
  const char *key;  /* report key */
  const char *what; /* in lines */
  const char *name;
  enum obj_state state;
  char error[400];
  int terminated; /* walsender pid terminated (slot) */
};

struct cleanup_out {
  struct obj slot, publication, sentinel, origin;
};

static const char *state_name(enum obj_state s)
{
  static const char *const n[] = { "notTried", "absent", "dropped", "failed" };
  return n[s];
}

static gw_rc render_obj(const struct st_ctx *c, struct strbuf *sb, const struct obj *o,
                        const struct st_level *l, bool *cut)
{
  gw_rc rc = strbuf_addf(sb, ",\"%s\":{\"name\":", o->key);
  if(!rc)
    rc = st_json_str(c, sb, o->name, l->str, cut);
  if(!rc)
    rc = strbuf_addf(sb, ",\"state\":\"%s\"", state_name(o->state));
  if(!rc && o->terminated)
    rc = strbuf_addf(sb, ",\"terminatedPid\":%d", o->terminated);
  if(!rc && o->error[0])
    rc = st_json_field(c, sb, "error", o->error, l->str, cut);
  if(!rc)
    rc = strbuf_addc(sb, '}');
  return rc;
}

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, const struct st_level *l,
                    bool *cut, void *arg)
{
  const struct cleanup_out *o = arg;
  const struct obj *all[] = { &o->slot, &o->publication, &o->sentinel, &o->origin };
  gw_rc rc = strbuf_adds(sb, ",\"dropped\":[");
  for(size_t i = 0, k = 0; i < 4 && !rc; i++)
    if(all[i]->state == OBJ_DROPPED)
      rc = strbuf_addf(sb, "%s\"%s\"", k++ ? "," : "", all[i]->key);
  if(!rc)
    rc = strbuf_addc(sb, ']');
  for(size_t i = 0; i < 4 && !rc; i++)
    rc = render_obj(c, sb, all[i], l, cut);
  return rc;
}

static void failed(struct st_ctx *c, struct obj *o, const struct pgc_err *e, const char *what)
{
  o->state = OBJ_FAILED;
  st_fmt(o->error, sizeof(o->error), "could not %s: %s%s%s%s", what, e->msg,
           e->sqlstate[0] ? " (SQLSTATE " : "", e->sqlstate, e->sqlstate[0] ? ")" : "");
  st_fail(c, st_transient_state(e), "cleanup.drop", "%s \"%s\": %s", o->what, o->name, o->error);
}

/* st_connect failed: its summary says why. */
static void not_connected(struct st_ctx *c, struct obj *o, const char *side)
{
  o->state = OBJ_FAILED;
  if(*c->summary)
    st_fmt(o->error, sizeof(o->error), "%s", c->summary);
  else
    st_fmt(o->error, sizeof(o->error), "not connected to the %s", side);
}

static void done_line(const struct st_ctx *c, const struct obj *o)
{
  if(o->state == OBJ_DROPPED)
    st_pass(c, "cleanup.drop", "%s \"%s\" dropped", o->what, o->name);
  else if(o->state == OBJ_ABSENT)
    st_pass(c, "cleanup.drop", "%s \"%s\" absent: nothing to drop", o->what, o->name);
}

static void drop_slot(struct st_ctx *c, struct obj *o)
{
  PGconn *s = c->src_c;
  struct pgc_err e;
  const char *p[] = { o->name };
  time_t deadline = time(NULL) + c->o.wait;
  for(;;) {
    PGresult *res = pgc_query(s, &e,
                              "SELECT active_pid FROM pg_catalog.pg_replication_slots "
                              "WHERE slot_name = $1",
                              1, p);
    if(!res) {
      failed(c, o, &e, "read pg_replication_slots");
      return;
    }
    bool present = PQntuples(res) == 1;
    bool active = present && !PQgetisnull(res, 0, 0);
    char pid[16] = "";
    if(active)
      st_fmt(pid, sizeof(pid), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    if(!present) {
      if(o->state != OBJ_DROPPED)
        o->state = OBJ_ABSENT;
      return;
    }
    if(active) {
      const char *pp[] = { pid };
      char ok[8];
      if(pgc_value(s, &e, ok, sizeof(ok), "SELECT pg_catalog.pg_terminate_backend($1::int4)", 1,
                   pp)) {
        failed(c, o, &e, "terminate the slot's walsender");
        return;
      }
      o->terminated = atoi(pid);
      st_print(c, "INFO cleanup.drop: slot \"%s\" was active: terminated its walsender (pid %s)",
               o->name, pid);
    } else {
      PGresult *d = pgc_query(s, &e, "SELECT pg_catalog.pg_drop_replication_slot($1)", 1, p);
      if(d) {
        PQclear(d);
        o->state = OBJ_DROPPED;
        return;
      }
      if(!strcmp(e.sqlstate, "42704")) {
        o->state = OBJ_ABSENT;
        return;
      }
      if(strcmp(e.sqlstate, "55006")) { /* anything but "is active for PID" */
        failed(c, o, &e, "drop the slot");
        return;
      }
    }
    if(time(NULL) >= deadline) {
      struct pgc_err t = { .sqlstate = "55006", .transient = true };
      st_fmt(t.msg, sizeof(t.msg), "the slot is still in use after %ld s", c->o.wait);
      failed(c, o, &t, "drop the slot");
      return;
    }
    st_sleep_ms(300);
  }
}

static void drop_publication(struct st_ctx *c, struct obj *o)
{
  struct pgc_err e;
  const char *p[] = { o->name };
  char v[8] = "";
  if(pgc_value(c->src_c, &e, v, sizeof(v),
               "SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $1", 1, p)) {
    failed(c, o, &e, "read pg_publication");
    return;
  }
  if(!v[0]) {
    o->state = OBJ_ABSENT;
    return;
  }
  char *q = pgc_ident(c->src_c, o->name);
  char sql[512];
  st_fmt(sql, sizeof(sql), "DROP PUBLICATION IF EXISTS %s", q ? q : "\"\"");
  free(q);
  if(pgc_exec(c->src_c, &e, sql))
    failed(c, o, &e, "drop the publication");
  else
    o->state = OBJ_DROPPED;
}

static void drop_sentinel(struct st_ctx *c, struct obj *o)
{
  struct pgc_err e;
  char v[8] = "";
  if(pgc_value(c->src_c, &e, v, sizeof(v),
               "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'pgcopydb'", 0, NULL)) {
    failed(c, o, &e, "read pg_namespace");
    return;
  }
  if(!v[0]) {
    o->state = OBJ_ABSENT;
    return;
  }
  if(pgc_exec(c->src_c, &e, "DROP SCHEMA IF EXISTS pgcopydb CASCADE"))
    failed(c, o, &e, "drop the schema");
  else
    o->state = OBJ_DROPPED;
}

static void drop_origin(struct st_ctx *c, struct obj *o)
{
  struct pgc_err e;
  const char *p[] = { o->name };
  time_t deadline = time(NULL) + c->o.wait;
  for(;;) {
    char v[16] = "";
    if(pgc_value(c->dst_c, &e, v, sizeof(v),
                 "SELECT pg_catalog.pg_replication_origin_oid($1)::text", 1, p)) {
      failed(c, o, &e, "look the origin up");
      return;
    }
    if(!v[0]) {
      if(o->state != OBJ_DROPPED)
        o->state = OBJ_ABSENT;
      return;
    }
    PGresult *d = pgc_query(c->dst_c, &e, "SELECT pg_catalog.pg_replication_origin_drop($1)", 1, p);
    if(d) {
      PQclear(d);
      o->state = OBJ_DROPPED;
      return;
    }
    if(strcmp(e.sqlstate, "55006") || time(NULL) >= deadline) {
      failed(c, o, &e, "drop the origin");
      return;
    }
    st_sleep_ms(300);
  }
}

int cleanup_main(int argc, char **argv)
{
  struct st_ctx c;
  struct cleanup_out o = {
    .slot = { .key = "slot", .what = "replication slot" },
    .publication = { .key = "publication", .what = "publication" },
    .sentinel = { .key = "sentinelSchema", .what = "sentinel schema", .name = "pgcopydb" },
    .origin = { .key = "origin", .what = "replication origin" },
  };
  int rc = st_init(&c, "cleanup", "CleanupReport", cleanup_opts,
                   "Drops what a live migration leaves: the replication slot, the publication and\n"
                   "the pgcopydb sentinel schema on the source, the replication origin on the\n"
                   "target. Idempotent. Credentials: GODWIT_SOURCE_URI, GODWIT_TARGET_URI.\n"
                   "Exit: 0 all dropped or absent, 1 failed, 2 transient.",
                   argc, argv);
  if(rc == 1)
    return RUNNER_EXIT_PASSED;
  o.slot.name = c.o.slot_name;
  o.publication.name = c.o.publication;
  o.origin.name = c.o.origin;
  if(rc < 0 || st_endpoints(&c, true, true))
    goto done;
  if(!c.o.slot_name || !c.o.origin) {
    st_fail(&c, false, "config", "--slot-name and --origin are required");
    st_summary(&c, "--slot-name and --origin are required");
    goto done;
  }
  if(st_connect(&c, ST_SOURCE, "source.connect")) {
    drop_slot(&c, &o.slot);
    done_line(&c, &o.slot);
    if(c.o.publication && *c.o.publication) {
      drop_publication(&c, &o.publication);
      done_line(&c, &o.publication);
    }
    drop_sentinel(&c, &o.sentinel);
    done_line(&c, &o.sentinel);
  } else {
    not_connected(&c, &o.slot, "source");
    not_connected(&c, &o.publication, "source");
    not_connected(&c, &o.sentinel, "source");
  }
  if(st_connect(&c, ST_TARGET, "target.connect")) {
    drop_origin(&c, &o.origin);
    done_line(&c, &o.origin);
  } else {
    not_connected(&c, &o.origin, "target");
  }
  const struct obj *all[] = { &o.slot, &o.publication, &o.sentinel, &o.origin };
  size_t dropped = 0, absent = 0, bad = 0;
  for(size_t i = 0; i < 4; i++) {
    dropped += all[i]->state == OBJ_DROPPED;
    absent += all[i]->state == OBJ_ABSENT;
    bad += all[i]->state == OBJ_FAILED;
  }
  st_summary(&c, "%zu dropped, %zu already absent", dropped, absent);
  if(bad) {
    const struct obj *first = NULL;
    for(size_t i = 0; i < 4 && !first; i++)
      if(all[i]->state == OBJ_FAILED)
        first = all[i];
    st_summary_add(&c, ", %zu not dropped, the first %s \"%s\": %s", bad, first->what,
                   first->name ? first->name : "", first->error);
  }
done:;
  int code = st_finish(&c, render, &o);
  st_release(&c);
  return code;
}
