/* The steps "approval" (CutoverPending: Manual waits for spec.cutover.approved, Automatic goes
 * at once), "cutover" (the cutover Job sets the end position: CutoverStarted, CutoverRetry) and
 * "drain" (the worker drains to it and exits 0). What follows is in the live tail of
 * reconcile.c. See docs/dev/migration-controller.md, steps 4 and 5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

/* How often the drain nudges a quiet source (drain_nudge): the receiver stops at the first
 * keepalive or record past the end position once it knows it, so the nudge's period is the
 * drain's last wait (0.4 s on average at 1000 in bench/migration/live.sh); an empty transaction
 * (0.15+) or a no-op sentinel update (< 0.15) four times a second, for the seconds of a drain. */
#define DRAIN_NUDGE_MS 250

static void render_cutover(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "cutover", attempt);
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  mig_arg(a, "--slot-name");
  mig_arg(a, m->slot);
  const char *plugin = json_get_str(m->obj, "status.outputPlugin");
  if(plugin && *plugin) {
    mig_arg(a, "--plugin");
    mig_arg(a, plugin);
  }
  s->source = s->target = s->workdir = true;
}

enum step_outcome mig_step_approval(struct mig *m)
{
  if(m->phase != MP_CUTOVER_PENDING)
    return STEP_PASSED; /* CuttingOver: approved before */
  if(!cond_is_true(m->obj, C_CAUGHT_UP))
    return STEP_WAIT; /* the lag moved above the threshold again: wait for two samples */
  const char *mode = json_get_str(m->obj, "spec.cutover.mode");
  bool automatic = mode && !strcmp(mode, "Automatic");
  if(!automatic && !cJSON_IsTrue(json_get(m->obj, "spec.cutover.approved")))
    return STEP_WAIT; /* an approval changes the spec, which reconciles */
  edit_phase(&m->ed, MP_CUTTING_OVER);
  edit_requeue(&m->ed, 1);
  return STEP_WAIT;
}

/* Sets the end position. */
enum step_outcome mig_step_cutover(struct mig *m)
{
  if(!strcmp(step_result(m->obj, "cutover"), "Passed"))
    return STEP_PASSED;
  if(m->ws != W_RUNNING) {
    edit_requeue(&m->ed, m->o->poll_interval_ms);
    return STEP_WAIT; /* the stream is not running (a retry is starting): set it once it runs */
  }
  struct step_run r = { .step = "cutover", .max_attempts = m->backoff_limit + 1 };
  enum step_outcome o = mig_step_drive(m, &r, render_cutover, NULL);
  if(o == STEP_WAIT && r.retried)
    edit_event_if_written(&m->ed, EV_WARNING, "CutoverRetry",
                         "setting the cutover LSN failed transiently (%s); retried on the next "
                         "pass", r.message);
  if(o == STEP_PASSED) {
    const char *lsn = json_get_str(r.v.report, "endLSN");
    if(lsn && *lsn) {
      edit_set_str(&m->ed, "cutoverLSN", lsn);
      step_record(&m->ed, "cutover", r.attempt, "Passed", r.message);
      edit_event_if_written(&m->ed, EV_NORMAL, "CutoverStarted",
                           "the cutover LSN is %s; the stream is frozen and draining to it", lsn);
      edit_requeue(&m->ed, m->o->poll_interval_ms);
    } else {
      o = STEP_FAILED;
      snprintf(r.message, sizeof(r.message), "the cutover Job reported no endLSN");
    }
  }
  if(o == STEP_FAILED) {
    step_record(&m->ed, "cutover", r.attempt, "Failed", r.message);
    mig_fail(m, "BackoffLimitExceeded",
             "setting the cutover LSN failed %d times; the last: %s; the replication slot %s "
             "is kept", r.attempt, r.message, m->slot);
  }
  step_run_release(&r);
  return o == STEP_FAILED ? STEP_FAILED : STEP_WAIT;
}

/* The drain's nudge, pgcopydb 0.15 and later: their receiver reads the end position from the
 * catalog at its next feedback (every 10 s) and stops on a server keepalive past it, but a quiet
 * source sends none once the client has confirmed all it was sent, until wal_sender_timeout / 2
 * (30 s by default): a drain waited up to a minute after the apply reached the end. Any WAL
 * record after it makes the walsender send a keepalive at once; an empty transaction with an
 * xid (txid_current()) is the smallest, and decodes to no change with either plugin (0.17's
 * test_decoding parser stops on a logical message). One per pass while the worker drains, on
 * the pooled source session; no answer is fine (the keepalive comes later).
 *
 * 0.10 to 0.14 need a decoded change instead: their receiver reads the sentinel (and so a new
 * end position) only when the time of the last record it received is 10 s past its last read
 * (streamFeedback, ld_stream.c, compares the record clock, not the wall clock). On a source that
 * went quiet before the approval it never reads it again: seen in bench/migration/live.sh, the
 * Migration stayed CuttingOver. An empty transaction decodes to nothing (no base snapshot, no
 * callbacks); a no-op UPDATE of the sentinel row, in the pgcopydb schema that wal2json filters
 * out, decodes to the transaction's BEGIN and COMMIT records: the record clock moves, the
 * receiver reads the end position and stops at the next record past it, and the apply replays
 * an empty transaction. The worker's role owns the sentinel (pgcopydb created it). */
static void drain_nudge(struct mig *m)
{
  char err[512];
  struct mig_pg pg;
  if(!mig_pg_open(m, true, &pg, err, sizeof(err)))
    return;
  PGresult *r = PQexec(pg.c, mig_version_at_least(&m->version, 0, 15)
                               ? "SELECT pg_catalog.txid_current()"
                               : "UPDATE pgcopydb.sentinel SET endpos = endpos");
  bool ok = PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  mig_pg_close(m, &pg, ok);
}

/* The worker drains to the end position and exits 0. */
enum step_outcome mig_step_drain(struct mig *m)
{
  if(m->ws == W_SUCCEEDED)
    return STEP_PASSED;
  long every = m->o->poll_interval_ms;
  if(m->ws == W_RUNNING) {
    drain_nudge(m);
    every = every < DRAIN_NUDGE_MS ? every : DRAIN_NUDGE_MS;
  }
  edit_requeue(&m->ed, every);
  return STEP_WAIT;
}

