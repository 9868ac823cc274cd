/* The probe: pg_stat_activity on the target, counting this migration's copy workers and its other
 * workers, never reading pgcopydb's catalog (a client reading it while the copy writes it can
 * kill the workers). It sets CopyingData and moves Cloning to Finalizing; zero on both counts is
 * the unknown answer and keeps the phase. See docs/dev/migration-controller.md, "The probe". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "mig.h"
#include "redact.h"
#include "probe_sql.h"

static const char probe_sql[] = MIG_PROBE_SQL;

/* Milliseconds since the time in status path (RFC 3339, seconds), or a large number. */
static long long since_ms(const struct mig *m, const char *path)
{
  const char *s = mig_status_str(m, path);
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  if(!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
    return 1LL << 40;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  return now_ms - (long long)timegm(&tm) * 1000;
}

long long mig_since_ms(const struct mig *m, const char *path)
{
  return since_ms(m, path);
}

void mig_probe(struct mig *m, const struct job_view *worker)
{
  (void)worker;
  if(m->phase != MP_CLONING && m->phase != MP_FINALIZING)
    return;
  long long age = since_ms(m, "lastProbe.time");
  if(age < m->o->probe_interval_ms) {
    edit_requeue(&m->ed, (long)(m->o->probe_interval_ms - age));
    return;
  }
  edit_requeue(&m->ed, m->o->probe_interval_ms);
  char err[512];
  const char *params[1] = { m->appname };
  long long copy = -1, other = -1, size = -1;
  /* a pooled session the server closed meanwhile fails once: then a fresh one */
  for(int round = 0; round < 2 && copy < 0; round++) {
    struct mig_pg pg;
    if(!mig_pg_open(m, false, &pg, err, sizeof(err))) {
      log_kv(LOG_INFO, "probe: no answer from the target", "key", m->ctx->key, "reason", err,
             LOG_END);
      return; /* unknown: the phase stays */
    }
    PGresult *r = PQexecParams(pg.c, probe_sql, 1, NULL, params, NULL, NULL, 0);
    if(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      copy = atoll(PQgetvalue(r, 0, 0));
      other = atoll(PQgetvalue(r, 0, 1));
      size = atoll(PQgetvalue(r, 0, 2));
    } else if(!pg.reused || PQstatus(pg.c) == CONNECTION_OK) {
      char *msg = redact_cut(PQresultErrorMessage(r), 300, NULL, 0, NULL);
      log_kv(LOG_INFO, "probe: the query failed", "key", m->ctx->key, "reason", msg ? msg : "",
             LOG_END);
      free(msg);
      round = 2;
    }
    PQclear(r);
    mig_pg_close(m, &pg, copy >= 0);
  }
  if(copy < 0)
    return;
  edit_set_now(&m->ed, "lastProbe.time");
  edit_set_int(&m->ed, "lastProbe.copyWorkers", copy);
  edit_set_int(&m->ed, "lastProbe.otherWorkers", other);
  edit_set_int(&m->ed, "lastProbe.targetSizeBytes", size);
  int n = (int)mig_status_int(m, "attempts", 1);
  bool seen = mig_status_bool(m, "copyingDataSeen");
  if(copy > 0 && !seen) {
    edit_set_bool(&m->ed, "copyingDataSeen", true);
    if(!cond_is_true(m->obj, C_CLONE))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CopyingData",
               "attempt %d: %lld COPY workers of this migration are connected to the target", n,
               copy);
  } else if(copy == 0 && other > 0 && seen && m->phase == MP_CLONING) {
    /* the tail: indexes, constraints, vacuum, post-data; the target stops growing */
    edit_phase(&m->ed, MP_FINALIZING);
  }
}
