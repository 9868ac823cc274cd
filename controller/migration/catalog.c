/* The steps "finalizing" and "catalog" of a clone, once the worker exited 0: the phase moves to
 * Finalizing, then the catalog Job <name>-catalog-<n> mounts the same work dir (the worker is
 * gone, so reading pgcopydb's catalog cannot kill it) and counts the tables done:
 * CloneSucceeded, or CloneIncomplete (terminal). What follows is in the clone tail of
 * reconcile.c. See docs/dev/migration-controller.md, step 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "log.h"
#include "mig.h"
#include "strbuf.h"

static void render(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "catalog", attempt);
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  s->workdir = true;
}

/* The tables the report names as not done, "a.b, c.d (and 3 more)". */
static void not_done(const cJSON *report, char *buf, size_t len)
{
  struct strbuf sb;
  strbuf_init(&sb, len > 1 ? len - 1 : 1);
  const cJSON *it;
  int i = 0;
  gw_rc rc = GW_OK;
  cJSON_ArrayForEach(it, json_get(report, "notDone"))
  {
    const char *t = cJSON_IsString(it) ? it->valuestring : json_get_str(it, "table");
    if(t && !rc && i < MIG_LIST_TABLES)
      rc = strbuf_addf(&sb, "%s%s", i ? ", " : "", t);
    i++;
  }
  if(i > MIG_LIST_TABLES && !rc)
    rc = strbuf_addf(&sb, " (and %d more)", i - MIG_LIST_TABLES);
  snprintf(buf, len, "%s", rc ? "" : strbuf_str(&sb));
  strbuf_release(&sb);
}

/* CloneCompleted from the catalog. */
enum step_outcome mig_step_catalog(struct mig *m)
{
  if(cond_is_true(m->obj, C_CLONE))
    return STEP_PASSED;
  struct step_run r = { .step = "catalog", .max_attempts = m->o->step_attempts };
  enum step_outcome o = mig_step_drive(m, &r, render, NULL);
  enum step_outcome out = STEP_WAIT;
  const cJSON *rep = r.v.report;
  const cJSON *total = json_get(rep, "tablesTotal"), *done = json_get(rep, "tablesDone");
  char names[1024];
  not_done(rep, names, sizeof(names));
  const char *verdict = json_get_str(rep, "verdict");
  bool incomplete = (verdict && !strcmp(verdict, "CloneIncomplete")) ||
                    (o == STEP_FAILED && *names);
  char *empty_names = NULL, err[512] = "";
  int empty = 0;
  /* After a later attempt with pgcopydb < 0.15 the markers are not trusted alone: a table whose
   * COPY failed or was killed can be marked done and skipped by a resume. A sample of the target
   * then decides (not after a first attempt: a table empty at the snapshot may have rows on the
   * source by now). */
  bool resumed = mig_status_int(m, "attempts", 1) > 1;
  if((o == STEP_PASSED || (o == STEP_FAILED && !incomplete)) && resumed &&
     !mig_version_at_least(&m->version, 0, 15)) {
    empty = mig_presence_sample(m, &empty_names, err, sizeof(err));
    if(empty < 0) {
      log_kv(LOG_INFO, "presence sample not taken", "key", m->ctx->key, "reason", err, LOG_END);
      edit_requeue(&m->ed, m->o->poll_interval_ms);
      step_run_release(&r);
      return STEP_WAIT;
    }
  }
  if(empty > 0) {
    step_record(&m->ed, "catalog", r.attempt, "Failed", r.message);
    edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneIncomplete",
              "the resumed worker exited 0 and pgcopydb's catalog counts every table done, "
              "but %d tables hold rows on the source and none on the target: %s", empty,
              empty_names);
    mig_fail(m, "CloneIncomplete",
             "the worker exited 0 while %d tables hold rows on the source and none on the "
             "target (%s): do not use the target as a complete copy", empty, empty_names);
  } else if(o == STEP_PASSED || (o == STEP_FAILED && !incomplete)) {
    if(cJSON_IsNumber(total) && cJSON_IsNumber(done))
      edit_cond(&m->ed, C_CLONE, COND_TRUE, "CloneSucceeded",
               "the worker Job finished and pgcopydb's catalog counts every table done (%d of "
               "%d)", (int)done->valuedouble, (int)total->valuedouble);
    else
      edit_cond(&m->ed, C_CLONE, COND_TRUE, "CloneSucceeded",
               "the worker Job finished; pgcopydb's catalog could not be read: %s", r.message);
    step_record(&m->ed, "catalog", r.attempt, o == STEP_PASSED ? "Passed" : "Failed", r.message);
    out = STEP_PASSED; /* decided: the next steps go on in this pass, one write for all */
  } else if(o == STEP_FAILED) {
    step_record(&m->ed, "catalog", r.attempt, "Failed", r.message);
    edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneIncomplete",
             "the worker exited 0, but pgcopydb's catalog counts %d of %d tables not done: %s",
             cJSON_IsNumber(total) && cJSON_IsNumber(done)
               ? (int)(total->valuedouble - done->valuedouble) : 0,
             cJSON_IsNumber(total) ? (int)total->valuedouble : 0, names);
    mig_fail(m, "CloneIncomplete",
             "the worker exited 0 while pgcopydb's catalog counts tables not done (%s): do not "
             "use the target as a complete copy", names);
  }
  free(empty_names);
  step_run_release(&r);
  return m->ed.phase == MP_FAILED ? STEP_FAILED : out;
}

/* The worker exited 0: the copy is past, what remains is the tail of the clone. The phase
 * reaches Finalizing only once CopyingData is set (seed 000): a worker no probe saw copying (it
 * finished between two samples, or the target hides its sessions' queries) is written as
 * CopyingData first, from its exit, and Finalizing comes on the next pass. */
enum step_outcome mig_step_finalizing(struct mig *m)
{
  if(m->phase != MP_CLONING)
    return STEP_PASSED;
  if(!mig_status_bool(m, "copyingDataSeen")) {
    edit_set_bool(&m->ed, "copyingDataSeen", true);
    if(!cond_is_true(m->obj, C_CLONE))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CopyingData",
                "attempt %d: the worker copied the data and exited 0; no probe of the target "
                "(one every %g s) saw its COPY workers", (int)mig_status_int(m, "attempts", 1),
                (double)m->o->probe_interval_ms / 1000);
    edit_requeue(&m->ed, 1);
    return STEP_WAIT;
  }
  edit_phase(&m->ed, MP_FINALIZING); /* the catalog starts in the same write */
  return STEP_PASSED;
}
