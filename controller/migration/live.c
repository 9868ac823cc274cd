/* Live migrations: the worker's base-copy marker, the controller's own presence sample
 * (TablesEmptyOnTarget / BaseCopyDone), Streaming, lag samples of the slot, the two-sample
 * catch-up, and CutoverPending. See docs/dev/migration-controller.md, step 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "api/format.h"
#include "json.h"
#include "log.h"
#include "mig.h"
#include "redact.h"
#include "strbuf.h"

int mig_catchup_next(int count, bool have_sample, int64_t lag, int64_t max)
{
  if(!have_sample || lag < 0 || lag > max)
    return 0;
  return count + 1;
}

const char *mig_catchup_reason(int count)
{
  return count <= 0 ? "Lagging" : count == 1 ? "ConfirmingCatchUp" : "LagBelowThreshold";
}

int64_t mig_max_lag(const struct mig *m)
{
  const cJSON *v = json_get(m->obj, "spec.follow.maxCatchupLag");
  int64_t q = 16 << 20;
  if(cJSON_IsNumber(v))
    q = (int64_t)v->valuedouble;
  else if(cJSON_IsString(v) && !quantity_parse(v->valuestring, &q))
    q = 16 << 20;
  return q;
}

/* ---- the presence sample ---- */

static bool listed(const cJSON *list, const char *s)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
    if(cJSON_IsString(it) && !strcmp(it->valuestring, s))
      return true;
  return false;
}

/* "schema.name" of the filters (parts optionally double-quoted) against a table. */
static bool table_listed(const cJSON *list, const char *schema, const char *name)
{
  char plain[300], quoted[300];
  snprintf(plain, sizeof(plain), "%s.%s", schema, name);
  snprintf(quoted, sizeof(quoted), "\"%s\".\"%s\"", schema, name);
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    if(!cJSON_IsString(it))
      continue;
    const char *s = it->valuestring;
    char a[300];
    snprintf(a, sizeof(a), "\"%s\".%s", schema, name);
    char b[300];
    snprintf(b, sizeof(b), "%s.\"%s\"", schema, name);
    if(!strcmp(s, plain) || !strcmp(s, quoted) || !strcmp(s, a) || !strcmp(s, b))
      return true;
  }
  return false;
}

static bool in_scope(const cJSON *f, const char *schema, const char *name)
{
  if(cJSON_GetArraySize(json_get(f, "includeOnlySchemas")) &&
     !listed(json_get(f, "includeOnlySchemas"), schema))
    return false;
  if(listed(json_get(f, "excludeSchemas"), schema))
    return false;
  if(cJSON_GetArraySize(json_get(f, "includeOnlyTables")) &&
     !table_listed(json_get(f, "includeOnlyTables"), schema, name))
    return false;
  if(table_listed(json_get(f, "excludeTables"), schema, name) ||
     table_listed(json_get(f, "excludeTableData"), schema, name))
    return false;
  return true;
}

static const char tables_sql[] =
  "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
  " WHERE c.relkind = 'r' AND c.relpersistence = 'p'"
  "   AND n.nspname NOT IN ('information_schema', 'pgcopydb') AND n.nspname NOT LIKE 'pg\\_%'"
  "   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass"
  "                   AND d.objid = n.oid AND d.deptype = 'e')"
  "   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass"
  "                   AND d.objid = c.oid AND d.deptype = 'e')"
  " ORDER BY 1, 2";

/* 1: a row, 0: none (or no such table), -1: the query failed. */
static int has_row(PGconn *c, const char *schema, const char *name)
{
  char *s = PQescapeIdentifier(c, schema, strlen(schema));
  char *n = PQescapeIdentifier(c, name, strlen(name));
  int out = -1;
  if(s && n) {
    char sql[600];
    snprintf(sql, sizeof(sql), "SELECT 1 FROM %s.%s LIMIT 1", s, n);
    PGresult *r = PQexec(c, sql);
    if(PQresultStatus(r) == PGRES_TUPLES_OK)
      out = PQntuples(r) > 0;
    else {
      const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      if(state && !strcmp(state, "42P01"))
        out = 0; /* not on the target at all */
    }
    PQclear(r);
  }
  PQfreemem(s);
  PQfreemem(n);
  return out;
}

/* Tables holding rows on the source and none on the target, as "a.b, c.d" into *out; -1 when
 * the sample could not be taken (err says why), else the count. */
int mig_presence_sample(struct mig *m, char **out, char *err, size_t errlen)
{
  *out = NULL;
  struct mig_pg sp, dp;
  if(!mig_pg_open(m, true, &sp, err, errlen))
    return -1;
  if(!mig_pg_open(m, false, &dp, err, errlen)) {
    mig_pg_close(m, &sp, false);
    return -1;
  }
  PGconn *src = sp.c, *dst = dp.c;
  int empty = 0;
  struct strbuf sb;
  strbuf_init(&sb, 2048);
  PGresult *t = PQexec(src, tables_sql);
  if(PQresultStatus(t) != PGRES_TUPLES_OK) {
    char *msg = redact_cut(PQresultErrorMessage(t), 300, NULL, 0, NULL);
    snprintf(err, errlen, "listing the source's tables: %s", msg ? msg : "failed");
    free(msg);
    empty = -1;
  }
  const cJSON *f = json_get(m->obj, "spec.clone.filters");
  for(int i = 0; empty >= 0 && i < PQntuples(t); i++) {
    const char *schema = PQgetvalue(t, i, 0), *name = PQgetvalue(t, i, 1);
    if(!in_scope(f, schema, name))
      continue;
    int s = has_row(src, schema, name);
    if(s <= 0)
      continue; /* empty on the source, or unreadable: nothing owed */
    int d = has_row(dst, schema, name);
    if(d < 0) {
      snprintf(err, errlen, "sampling %s.%s on the target failed", schema, name);
      empty = -1;
    } else if(d == 0) {
      gw_rc arc = GW_OK;
      if(empty < MIG_LIST_TABLES)
        arc = strbuf_addf(&sb, "%s%s.%s", empty ? ", " : "", schema, name);
      else if(empty == MIG_LIST_TABLES)
        arc = strbuf_adds(&sb, ", ...");
      (void)arc; /* a name list cut short still names the first ones */
      empty++;
    }
  }
  PQclear(t);
  mig_pg_close(m, &sp, empty >= 0);
  mig_pg_close(m, &dp, empty >= 0);
  if(empty > 0)
    *out = strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return empty;
}

/* ---- lag ---- */

static const char lag_sql[] =
  "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint"
  "  FROM pg_replication_slots WHERE slot_name = $1 AND confirmed_flush_lsn IS NOT NULL";

/* The slot's lag in bytes, or -1 without a sample. */
static int64_t lag_sample(struct mig *m)
{
  char err[512];
  const char *params[1] = { m->slot };
  int64_t lag = -1;
  bool answered = false;
  /* a pooled session the server closed meanwhile fails once: then a fresh one */
  for(int round = 0; round < 2 && !answered; round++) {
    struct mig_pg pg;
    if(!mig_pg_open(m, true, &pg, err, sizeof(err))) {
      log_kv(LOG_INFO, "lag: no answer from the source", "key", m->ctx->key, "reason", err,
             LOG_END);
      return -1;
    }
    PGresult *r = PQexecParams(pg.c, lag_sql, 1, NULL, params, NULL, NULL, 0);
    answered = PQresultStatus(r) == PGRES_TUPLES_OK;
    if(answered && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
      lag = atoll(PQgetvalue(r, 0, 0));
      if(lag < 0)
        lag = 0; /* confirmed ahead of the insert position: nothing to apply */
    }
    if(!answered && (!pg.reused || PQstatus(pg.c) == CONNECTION_OK))
      round = 2;
    PQclear(r);
    mig_pg_close(m, &pg, answered);
  }
  return lag;
}

static void sample_lag(struct mig *m)
{
  long long age = mig_since_ms(m, "lagSampleTime");
  if(age < m->o->lag_interval_ms) {
    edit_requeue(&m->ed, (long)(m->o->lag_interval_ms - age));
    return;
  }
  edit_requeue(&m->ed, m->o->lag_interval_ms);
  int64_t lag = lag_sample(m);
  int64_t max = mig_max_lag(m);
  int count = (int)mig_status_int(m, "catchUpSamples", 0);
  int next = mig_catchup_next(count, lag >= 0, lag, max);
  edit_set_int(&m->ed, "catchUpSamples", next);
  edit_set_now(&m->ed, "lagSampleTime");
  if(lag >= 0)
    edit_set_int(&m->ed, "lagBytes", lag);
  const char *reason = mig_catchup_reason(next);
  if(lag < 0)
    edit_cond(&m->ed, C_CAUGHT_UP, COND_FALSE, reason, "no replication sample is available yet");
  else if(next >= 2)
    edit_cond(&m->ed, C_CAUGHT_UP, COND_TRUE, reason,
             "the replication lag was at or below %lld bytes on %d consecutive samples",
             (long long)max, next);
  else if(next == 1)
    edit_cond(&m->ed, C_CAUGHT_UP, COND_FALSE, reason,
             "one sample measured %lld bytes of lag, at or below %lld; waiting for a second "
             "consecutive one", (long long)lag, (long long)max);
  else
    edit_cond(&m->ed, C_CAUGHT_UP, COND_FALSE, reason,
             "the replication lag is %lld bytes, above spec.follow.maxCatchupLag (%lld)",
             (long long)lag, (long long)max);
  if(next >= 2 && m->phase == MP_STREAMING)
    edit_phase(&m->ed, MP_CUTOVER_PENDING);
}

/* ---- the base copy ---- */

static void base_copy(struct mig *m, const struct job_view *worker)
{
  if(!mig_status_bool(m, "baseCopyLogged")) {
    char *tail = NULL;
    if(!rj_log_tail(&m->owner, worker->pod, 20000, &tail) && mig_tail_base_copy_done(tail)) {
      edit_set_bool(&m->ed, "baseCopyLogged", true);
      edit_requeue(&m->ed, 1);
    }
    free(tail);
    return;
  }
  /* the copy is over: the sample may read every table */
  long long age = mig_since_ms(m, "lagSampleTime");
  const char *reason = cond_reason(m->obj, C_CLONE);
  if(reason && !strcmp(reason, "TablesEmptyOnTarget") && age < m->o->lag_interval_ms) {
    edit_requeue(&m->ed, (long)(m->o->lag_interval_ms - age));
    return;
  }
  char *names = NULL, err[512] = "";
  int empty = mig_presence_sample(m, &names, err, sizeof(err));
  if(empty < 0) {
    log_kv(LOG_INFO, "presence sample not taken", "key", m->ctx->key, "reason", err, LOG_END);
    edit_requeue(&m->ed, m->o->lag_interval_ms);
  } else if(empty > 0) {
    edit_cond(&m->ed, C_CLONE, COND_FALSE, "TablesEmptyOnTarget",
             "the worker logged the base copy finished, but %d tables hold rows on the source "
             "and none on the target: %s; the stream is reported but not driven until a "
             "sample finds a row in each", empty, names);
    edit_event_if_cond(&m->ed, C_CLONE, EV_WARNING, "TablesEmptyOnTarget",
                      "the worker logged the base copy finished while %d tables hold rows on "
                      "the source and none on the target: %s", empty, names);
    edit_cond(&m->ed, C_STREAMING, COND_TRUE, "Replaying",
             "the worker's apply process is replaying changes (not driven: tables are empty "
             "on the target)");
    edit_set_now(&m->ed, "lagSampleTime");
    edit_requeue(&m->ed, m->o->lag_interval_ms);
  } else {
    edit_cond(&m->ed, C_CLONE, COND_TRUE, "BaseCopyDone",
             "the worker logged the base copy finished and no table holds rows on the source "
             "and none on the target; change replay took over");
    edit_cond(&m->ed, C_STREAMING, COND_TRUE, "Replaying",
             "the worker's apply process is replaying changes to the target");
    edit_cond(&m->ed, C_CAUGHT_UP, COND_FALSE, "Lagging", "no replication sample is available yet");
    edit_set_int(&m->ed, "catchUpSamples", 0);
    edit_phase(&m->ed, MP_STREAMING);
    edit_requeue(&m->ed, 1);
  }
  free(names);
}

void mig_live(struct mig *m, const struct job_view *worker)
{
  const char *reason = cond_reason(m->obj, C_CLONE);
  bool done = cond_is_true(m->obj, C_CLONE) && reason && !strcmp(reason, "BaseCopyDone");
  if(!done) {
    if(m->phase == MP_CLONING || m->phase == MP_FINALIZING)
      base_copy(m, worker);
    return;
  }
  if(m->phase == MP_STREAMING || m->phase == MP_CUTOVER_PENDING)
    sample_lag(m);
}
