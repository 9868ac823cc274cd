/* The worker attempts: Job <name>-worker-<n> running pgcopydb (clone, or clone --follow), n from
 * 1 to backoffLimit + 1; resume from the work dir on every attempt after the first; a failed
 * attempt classified from its log tail (PermissionDenied, AttemptFailed, BackoffLimitExceeded);
 * WorkerZombie. See mig.h and docs/dev/migration-controller.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../conditions.h"
#include "../ktime.h"
#include "json.h"
#include "log.h"
#include "mig.h"

/* The prologue of every attempt, before pgcopydb runs:
 *  - the work dir is this Migration's: the stamp MIG_WORK_MOUNT/owner holds its uid; a work dir
 *    without it (another Migration's, a claim of the same name that outlived it, a completed
 *    run's) is removed and the attempt starts fresh, dropping --resume and --not-consistent;
 *    so does a later attempt of a clone on pgcopydb < 0.15 whose predecessor failed before its
 *    schema dump was done (nothing to resume). It says so on stderr ("godwit: starting
 *    fresh: ..."), which the controller turns into an Event (WorkDirReset);
 *  - the filters file, from GODWIT_FILTERS;
 *  - on a later attempt, or a re-run of an attempt a suspension stopped (GODWIT_RESUME), the
 *    pidfile of the run that died (its pid may be alive in another Pod's namespace, or reused
 *    here, and pgcopydb would refuse to start);
 *  - with GODWIT_CLEAN_LOCKS (pgcopydb < 0.15, whose progress is marker files), the lock files
 *    a killed attempt left for the tables and indexes it was working on: with them, every worker
 *    of the resumed run skips its table and the clone "succeeds" with empty tables
 *    (docs/dev/pgcopydb-observed.md, "Killed mid-copy, then resumed"). A COPY that was killed
 *    rolled back; the resumed run copies those tables again;
 *  - live (GODWIT_LIVE) on pgcopydb < 0.15: pgcopydb runs as the shell's child instead of
 *    replacing it. Those versions' apply process sleeps 10 s whenever it has nothing to apply
 *    (CATCHINGUP_SLEEP_MS: waiting for the sentinel, for the next SQL file, at the end of one),
 *    which held a drain up to 10 s after the receiver had reached the end position. Once the
 *    cutover Job has set the end position it leaves MIG_DRAIN_WAKE in the work dir; from then
 *    on the shell sends SIGHUP to its process group every 200 ms, which ends those sleeps early
 *    (pgcopydb's handler only records the signal; 0.10's receiver still learns the end position
 *    at its 10 s feedback). The shell ignores SIGHUP itself, passes SIGTERM and SIGINT on, and
 *    exits with pgcopydb's status (128 + the signal when one ended it);
 *  - with GODWIT_APPNAME_IN_URI (pgcopydb 0.15 and later), PGAPPNAME (godwit-<uid8>, which the
 *    probe matches) added to both connection strings as application_name: those versions set
 *    PGAPPNAME to their own "pgcopydb[PID] ROLE", and a connection string's parameter wins over
 *    the environment (docs/dev/pgcopydb-observed.md);
 *  - with GODWIT_WAL_SENDER_TIMEOUT_MS (live, pgcopydb 0.15 and later, a source on PostgreSQL
 *    12 or later, the controller's --wal-sender-timeout-ms), options=-c wal_sender_timeout=<ms>
 *    added to the source's connection string, unless it sets options itself (a second options=
 *    would replace the user's): the source asks the receiver for feedback every half of it, and each feedback
 *    reads the end position, so the drain ends within a second of the cutover instead of at
 *    pgcopydb's 10 s feedback. */
static const char worker_script[] =
  "set -e\n"
  "d=" MIG_WORK_DIR "\n"
  "stamp=" MIG_WORK_MOUNT "/owner\n"
  "fresh=\n"
  /* the work dir is this Migration's (its uid in the stamp), or it is not resumed */
  "later=\n"
  "if [ \"${GODWIT_ATTEMPT:-1}\" != 1 ] || [ \"${GODWIT_RESUME:-}\" = 1 ]; then later=1; fi\n"
  "owner=$(cat \"$stamp\" 2>/dev/null || true)\n"
  /* no stamp on a later attempt: a work dir begun before stamps (an upgrade), kept */
  "if [ -d \"$d\" ] && { [ -n \"$owner\" ] || [ -z \"$later\" ]; } &&"
  " [ \"$owner\" != \"$GODWIT_OWNER_UID\" ]; then\n"
  "  echo \"godwit: starting fresh: the work directory holds the files of another run (owner"
  " ${owner:-unknown}, not $GODWIT_OWNER_UID)\" >&2\n"
  "  rm -rf \"$d\"; fresh=1\n"
  "elif [ \"${GODWIT_CLEAN_LOCKS:-}\" = 1 ] && [ -z \"${GODWIT_LIVE:-}\" ] && [ -n \"$later\" ]"
  " && [ ! -f \"$d/run/dump-pre.done\" ]; then\n"
  "  echo \"godwit: starting fresh: the attempt before failed before its schema dump was done,"
  " nothing to resume\" >&2\n"
  "  rm -rf \"$d\"; fresh=1\n"
  "fi\n"
  "printf '%s\\n' \"$GODWIT_OWNER_UID\" > \"$stamp\"\n"
  "if [ -n \"$fresh\" ]; then\n"
  "  for a do shift; case \"$a\" in --resume|--not-consistent) ;; *) set -- \"$@\" \"$a\";;"
  " esac; done\n"
  "fi\n"
  "if [ -n \"${GODWIT_FILTERS:-}\" ]; then\n"
  "  printf '%s\\n' \"$GODWIT_FILTERS\" > " MIG_FILTERS_FILE "\n"
  "fi\n"
  "if [ -z \"$fresh\" ] && [ -n \"$later\" ] && [ -d \"$d\" ]; then\n"
  "  rm -f \"$d/pgcopydb.pid\"\n"
  "  if [ \"${GODWIT_CLEAN_LOCKS:-}\" = 1 ]; then\n"
  "    for f in \"$d\"/run/[0-9]*; do\n"
  "      if [ -f \"$f\" ]; then echo \"godwit: removing the lock file $f of a killed attempt\" >&2;"
  " rm -f \"$f\"; fi\n"
  "    done\n"
  "  fi\n"
  "fi\n"
  /* pgcopydb 0.15 and later name their sessions themselves (PGAPPNAME is overwritten with
   * "pgcopydb[PID] ROLE"): the name goes into the connection strings, which win over it */
  MIG_WORKER_APPNAME_SH
  "if [ -n \"${GODWIT_APPNAME_IN_URI:-}\" ] && [ -n \"${PGAPPNAME:-}\" ]; then\n"
  "  PGCOPYDB_SOURCE_PGURI=$(appname \"${PGCOPYDB_SOURCE_PGURI:-}\")\n"
  "  PGCOPYDB_TARGET_PGURI=$(appname \"${PGCOPYDB_TARGET_PGURI:-}\")\n"
  "  export PGCOPYDB_SOURCE_PGURI PGCOPYDB_TARGET_PGURI\n"
  "fi\n"
  /* live on pgcopydb 0.15 and later: the source asks the receiver for feedback every half of
   * wal_sender_timeout, and each feedback reads the cutover's end position */
  "if [ -n \"${GODWIT_WAL_SENDER_TIMEOUT_MS:-}\" ]; then\n"
  "  case \"${PGCOPYDB_SOURCE_PGURI:-}\" in\n"
  "  *options=*) echo \"godwit: the source's connection string sets options: wal_sender_timeout"
  " is left to it (the drain may wait for pgcopydb's 10 s feedback)\" >&2;;\n"
  "  *) PGCOPYDB_SOURCE_PGURI=$(uriparam \"${PGCOPYDB_SOURCE_PGURI:-}\" options"
  " \"'-c wal_sender_timeout=$GODWIT_WAL_SENDER_TIMEOUT_MS'\""
  " \"-c%20wal_sender_timeout%3D$GODWIT_WAL_SENDER_TIMEOUT_MS\")\n"
  "    export PGCOPYDB_SOURCE_PGURI;;\n"
  "  esac\n"
  "fi\n"
  /* live on pgcopydb < 0.15: pgcopydb runs as a child, so that once the cutover Job has set the
   * end position (and left MIG_DRAIN_WAKE) the processes' 10 s sleeps are cut with SIGHUP */
  "if [ -n \"${GODWIT_LIVE:-}\" ] && [ \"${GODWIT_CLEAN_LOCKS:-}\" = 1 ]; then\n"
  "  trap '' HUP\n"
  "  pgcopydb \"$@\" &\n"
  "  pid=$!\n"
  "  trap 'kill -TERM \"$pid\" 2>/dev/null || true' TERM\n"
  "  trap 'kill -INT \"$pid\" 2>/dev/null || true' INT\n"
  "  (while kill -0 \"$pid\" 2>/dev/null; do\n"
  "    if [ -f " MIG_DRAIN_WAKE " ]; then kill -HUP 0 2>/dev/null || true; sleep 0.2;"
  " else sleep 1; fi\n"
  "  done) &\n"
  "  while :; do\n"
  "    rc=0; wait \"$pid\" || rc=$?\n"
  "    kill -0 \"$pid\" 2>/dev/null || break\n"
  "  done\n"
  "  exit \"$rc\"\n"
  "fi\n"
  "exec pgcopydb \"$@\"\n";

static const char *const worker_command[] = { "/bin/sh", "-c", worker_script, "godwit-worker",
                                              NULL };

const char *mig_worker_script(void)
{
  return worker_script;
}

const char *mig_image(const struct mig *m)
{
  const char *img = json_get_str(m->obj, "spec.worker.image");
  return img && *img ? img : m->o->runner_image;
}

/* wal_sender_timeout may be set per connection from PostgreSQL 12 on; an older server refuses
 * the connection ("parameter cannot be changed now"). Read from the controller's pooled source
 * session (the server's version comes with the login). Not known (the source does not answer
 * the controller now) is no: the drain then waits for pgcopydb's 10 s feedback, slower, never
 * wrong. */
static bool source_takes_wal_sender_timeout(struct mig *m)
{
  char err[512];
  struct mig_pg pg;
  if(!mig_pg_open(m, true, &pg, err, sizeof(err))) {
    log_kv(LOG_INFO, "the worker gets no wal_sender_timeout: the source's version is not known",
           "key", m->ctx->key, "reason", err, LOG_END);
    return false;
  }
  int v = PQserverVersion(pg.c);
  mig_pg_close(m, &pg, v > 0);
  return v >= 120000;
}

gw_rc mig_worker_ensure(struct mig *m, int attempt)
{
  gw_rc rc = mig_pvc_ensure(m);
  if(rc)
    return rc;
  if(m->live && !m->deleting) {
    rc = mig_finalizer(m, true);
    if(rc)
      return rc;
  }
  const cJSON *spec = json_get(m->obj, "spec");
  bool restart = mig_status_bool(m, "restartNextAttempt");
  /* a suspension deleted this attempt's worker after it was created: the work dir is used, so
   * its re-run resumes like a later attempt (the same attempt: no budget spent) */
  bool rerun = attempt == 1 && mig_status_int(m, "workerStarted", 0) >= attempt;
  char *filters =
    mig_filters_ini_run(spec, &m->version, m->live, restart || attempt > 1 || rerun);
  char n[16];
  snprintf(n, sizeof(n), "%d", attempt);
  struct job_spec s;
  memset(&s, 0, sizeof(s));
  s.step = "worker";
  s.attempt = attempt;
  s.image = mig_image(m);
  s.container = "worker";
  s.command = worker_command;
  s.args = mig_worker_args(spec, &m->version, rerun ? 2 : attempt, restart, m->slot,
                           json_get_str(m->obj, "status.outputPlugin"));
  s.source = s.target = s.worker = s.workdir = true;
  s.resources = json_get(spec, "worker.resources");
  size_t e = 0;
  s.env[e][0] = "GODWIT_ATTEMPT";
  s.env[e++][1] = n;
  s.env[e][0] = "GODWIT_OWNER_UID";
  s.env[e++][1] = m->uid;
  if(m->live) {
    s.env[e][0] = "GODWIT_LIVE";
    s.env[e++][1] = "1";
  }
  if(filters && *filters) {
    s.env[e][0] = "GODWIT_FILTERS";
    s.env[e++][1] = filters;
  }
  if(rerun && !restart) {
    s.env[e][0] = "GODWIT_RESUME";
    s.env[e++][1] = "1";
  }
  if(!mig_version_at_least(&m->version, 0, 15)) {
    s.env[e][0] = "GODWIT_CLEAN_LOCKS";
    s.env[e++][1] = "1";
  } else {
    s.env[e][0] = "GODWIT_APPNAME_IN_URI";
    s.env[e++][1] = "1";
  }
  char wst[24];
  if(m->live && mig_version_at_least(&m->version, 0, 15) && m->o->wal_sender_timeout_ms > 0 &&
     source_takes_wal_sender_timeout(m)) {
    snprintf(wst, sizeof(wst), "%ld", m->o->wal_sender_timeout_ms);
    s.env[e][0] = "GODWIT_WAL_SENDER_TIMEOUT_MS";
    s.env[e++][1] = wst;
  }
  bool created = false;
  rc = s.args ? mig_job_create(m, &s, &created) : GW_ENOMEM;
  free(filters);
  if(!rc && mig_status_int(m, "workerStarted", 0) < attempt)
    edit_set_int(&m->ed, "workerStarted", attempt);
  if(!rc && created)
    edit_event(&m->ed, EV_NORMAL, "AttemptStarted", "attempt %d of %d: %s-worker-%d, pgcopydb %s%s%s",
              attempt, m->backoff_limit + 1, m->name, attempt,
              m->live ? "clone --follow" : "clone",
              restart ? " starting over (--restart)" : attempt > 1 || rerun ? " --resume" : "",
              rerun ? " after the suspension" : "");
  return rc;
}

static bool clone_done(const struct mig *m)
{
  return cond_is_true(m->obj, C_CLONE);
}

/* The prologue started the attempt fresh (the work dir was another run's, or held nothing to
 * resume): read once per attempt from its log (status.workDirChecked), as soon as its Pod has
 * one, and said with a Warning. */
static void fresh_check(struct mig *m, const struct job_view *v, int n)
{
  if(mig_status_int(m, "workDirChecked", 0) >= n)
    return;
  char *log = NULL;
  if(!*v->pod || rj_log_tail(&m->owner, v->pod, 400, &log))
    return;
  if(!strstr(log, "godwit: ") && !strstr(log, "pgcopydb")) {
    free(log); /* the prologue has not run yet */
    return;
  }
  edit_set_int(&m->ed, "workDirChecked", n);
  static const char mark[] = "godwit: starting fresh: ";
  const char *p = strstr(log, mark);
  if(p) {
    p += sizeof(mark) - 1;
    size_t len = strcspn(p, "\n");
    edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt %d of %d started fresh "
              "(no --resume): %.*s", n, m->backoff_limit + 1, (int)(len < 400 ? len : 400), p);
    edit_event(&m->ed, EV_WARNING, "WorkDirReset", "attempt %d started fresh instead of "
               "resuming: %.*s", n, (int)(len < 400 ? len : 400), p);
  }
  free(log);
}

/* WorkerZombie: the Pod runs, but the supervisor's fatal exit is the last thing it logged. */
static void zombie_check(struct mig *m, const struct job_view *v)
{
  char *tail = NULL;
  if(rj_log_tail(&m->owner, v->pod, MIG_TAIL_WORKER, &tail)) {
    free(tail);
    return;
  }
  bool fatal = mig_tail_fatal_exit(tail);
  free(tail);
  const char *since = mig_status_str(m, "zombieSince");
  if(!fatal) {
    if(since)
      edit_unset(&m->ed, "zombieSince");
    return;
  }
  if(!since) {
    edit_set_now(&m->ed, "zombieSince");
    edit_requeue(&m->ed, m->o->zombie_grace_ms);
    return;
  }
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  long long t0 = strptime(since, "%Y-%m-%dT%H:%M:%S", &tm) ? (long long)timegm(&tm) : 0;
  long long age_ms = ((long long)time(NULL) - t0) * 1000;
  if(age_ms < m->o->zombie_grace_ms) {
    edit_requeue(&m->ed, m->o->zombie_grace_ms - age_ms + 100);
    return;
  }
  if(!rj_pod_delete(&m->owner, v->pod)) {
    edit_unset(&m->ed, "zombieSince");
    edit_event(&m->ed, EV_WARNING, "WorkerZombie",
              "the pgcopydb supervisor of %s exited fatally but Pod %s stayed alive (a child "
              "process kept it); removed the Pod so the next attempt resumes",
              v->name, v->pod);
  }
}

/* What a person must fix outside the Migration, said with the failure in place of the last
 * pgcopydb error (the line it quotes); else that last error line. */
static void cause_hint(const struct mig *m, const struct tail_verdict *tv, char *buf,
                       size_t len)
{
  switch(tv->cause) {
  case CAUSE_WORKDIR_FULL:
    snprintf(buf, len, "the work volume %s-workdir is full (%s): pgcopydb keeps its dumps and "
             "change files there; expand the PVC if its StorageClass allows it, or create the "
             "Migration again with a larger spec.worker.workDir.size", m->name, tv->cause_line);
    break;
  case CAUSE_SERVER_DISK_FULL:
    snprintf(buf, len, "a database server's disk is full (%s): free space on it",
             tv->cause_line);
    break;
  case CAUSE_UNREACHABLE:
    snprintf(buf, len, "a database server stopped answering (%s): check that the source and "
             "the target are up and reachable from the cluster", tv->cause_line);
    break;
  case CAUSE_NONE:
    snprintf(buf, len, "last pgcopydb error: %s",
             *tv->last_error ? tv->last_error : "no pgcopydb error line in the log");
    break;
  }
}

/* The log names no cause (a pgcopydb that crashed, or whose last lines went with the killed
 * container, says nothing): whether each server answers the controller now. A fresh session
 * each, where a decision (what the failure says) needs it. */
static void ask_servers(struct mig *m, struct tail_verdict *tv)
{
  for(int s = 0; s < 2; s++) {
    char err[400];
    if(mig_pg_answers(m, s == 0, err, sizeof(err)) != 0)
      continue;
    tv->cause = CAUSE_UNREACHABLE;
    snprintf(tv->cause_line, sizeof(tv->cause_line), "the %s does not answer the controller: %s",
             s == 0 ? "source" : "target", err);
    return;
  }
}

/* A failed attempt: classify, then retry, or fail for good. */
static void attempt_failed(struct mig *m, int n, const struct job_view *v)
{
  int total = m->backoff_limit + 1;
  char *tail = NULL;
  gw_rc rc = rj_log_tail(&m->owner, v->pod, 300, &tail);
  struct tail_verdict tv;
  mig_classify_tail(rc ? NULL : tail, &tv);
  free(tail);
  if(tv.cause == CAUSE_NONE && tv.cls != TAIL_PERMISSION)
    ask_servers(m, &tv);
  const char *crash = mig_crash_signal(v->exit_code);
  char code[96];
  if(crash)
    snprintf(code, sizeof(code), "exit code %d: pgcopydb crashed with %s", v->exit_code, crash);
  else
    snprintf(code, sizeof(code), "exit code %d", v->exit_code);
  char why[768];
  if(*v->failure)
    snprintf(why, sizeof(why), "%s (%s)", v->failure, code);
  else
    snprintf(why, sizeof(why), "%s", code);
  const char *last = *tv.last_error ? tv.last_error : "no pgcopydb error line in the log";
  char detail[900];
  cause_hint(m, &tv, detail, sizeof(detail));
  if(tv.cls == TAIL_PERMISSION) {
    if(!clone_done(m))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneFailed", "attempt %d failed: %s: %s", n, why,
               tv.line);
    mig_fail(m, "PermissionDenied",
             "attempt %d of %d hit a permission error retries cannot fix: %s; the remaining "
             "%d attempts are not spent: grant what is missing, then create a new Migration",
             n, total, tv.line, total - n);
    return;
  }
  if(n >= total) {
    if(!clone_done(m))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneFailed", "attempt %d of %d failed: %s; last "
               "pgcopydb error: %s%s%s", n, total, why, last, tv.cause ? "; " : "",
               tv.cause ? detail : "");
    mig_fail(m, "BackoffLimitExceeded",
             "%d attempts failed (backoffLimit %d); the last: %s; %s", total, m->backoff_limit,
             why, detail);
    return;
  }
  /* a resume cannot get past a post-data failure; and pgcopydb < 0.15 marks a table whose COPY
   * failed as done (observed with 0.10 when the source went away mid-COPY: the resumed run
   * skipped it and "succeeded" with the table empty), so a clone starts over after one */
  bool copy_restart = !m->live && (tv.copy_failed || crash) &&
                      !mig_version_at_least(&m->version, 0, 15);
  bool restart = (tv.cls == TAIL_RESTART && n > 1) || copy_restart;
  /* the Job controller's back-off: a failure that repeats itself does not spend the budget in
   * seconds (10 s doubling per failed attempt, six minutes at most) */
  long wait_s = m->o->attempt_backoff_s;
  for(int i = 1; i < n && wait_s < MIG_ATTEMPT_BACKOFF_MAX_S; i++)
    wait_s *= 2;
  if(wait_s > MIG_ATTEMPT_BACKOFF_MAX_S)
    wait_s = MIG_ATTEMPT_BACKOFF_MAX_S;
  /* whole seconds on the wire: rounded up, so the wait is never shorter than the back-off */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char at[32];
  kt_rfc3339(at, sizeof(at), now.tv_sec + wait_s + (now.tv_nsec > 0));
  edit_set_str(&m->ed, "nextAttemptTime", at);
  edit_set_int(&m->ed, "attempts", n + 1);
  edit_set_bool(&m->ed, "copyingDataSeen", false);
  edit_unset(&m->ed, "zombieSince");
  if(restart)
    edit_set_bool(&m->ed, "restartNextAttempt", true);
  else
    edit_unset(&m->ed, "restartNextAttempt");
  if(!clone_done(m))
    edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt %d of %d starts at %s "
             "(back-off %ld s) after attempt %d failed: %s", n + 1, total, at, wait_s, n,
             detail);
  edit_event_if_written(&m->ed, EV_WARNING, "AttemptFailed",
                       "attempt %d of %d failed: %s; %s; attempt %d %s in %ld s, at %s", n,
                       total, why, detail, n + 1,
                       copy_restart && !tv.copy_failed
                         ? "starts over (--restart --drop-if-exists): this pgcopydb marks a "
                           "table whose COPY failed as done, and it crashed before saying "
                           "which: a resume could skip one,"
                       : copy_restart ? "starts over (--restart --drop-if-exists): this "
                                        "pgcopydb marks a table whose COPY failed as done, and "
                                        "a resume would skip it,"
                       : restart ? "starts over (--restart --drop-if-exists): a resume cannot "
                                   "get past this post-data failure,"
                                 : "resumes from the work-dir catalogs",
                       wait_s, at);
  edit_requeue(&m->ed, wait_s * 1000);
}

enum worker_state mig_worker(struct mig *m, struct job_view *v)
{
  memset(v, 0, sizeof(*v));
  int n = (int)mig_status_int(m, "attempts", 0);
  if(n < 1) { /* recorded first (the preflight records it as it passes) */
    edit_set_int(&m->ed, "attempts", 1);
    edit_requeue(&m->ed, 1);
    return W_WAIT;
  }
  gw_rc rc = mig_job_get(m, "worker", n, v);
  if(rc) {
    edit_requeue(&m->ed, STEP_ERROR_RETRY_MS); /* the API will answer again */
    return W_WAIT;
  }
  switch(v->state) {
  case JOB_ABSENT: {
    if(m->suspend)
      return W_WAIT;
    long long early = -mig_since_ms(m, "nextAttemptTime");
    if(mig_status_str(m, "nextAttemptTime") && early > 0) {
      edit_requeue(&m->ed, (long)early);
      return W_WAIT; /* the back-off of a failed attempt (attempt_failed) */
    }
    int running = 0;
    if(rj_pods_running(&m->owner, "worker", &running) || running) {
      edit_requeue(&m->ed, 1000); /* the worker a suspension deleted is still stopping */
      return W_WAIT;
    }
    rc = mig_worker_ensure(m, n);
    if(!rc && mig_status_str(m, "nextAttemptTime"))
      edit_unset(&m->ed, "nextAttemptTime");
    if(!rc && !clone_done(m) && !mig_status_bool(m, "copyingDataSeen") &&
       (n > 1 || !(cond_reason(m->obj, C_CLONE) &&
                   !strcmp(cond_reason(m->obj, C_CLONE), "CloneRunning"))))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt %d of %d is running the base "
               "copy", n, m->backoff_limit + 1);
    edit_requeue(&m->ed, rc ? 2000 : m->o->poll_interval_ms);
    return W_WAIT;
  }
  case JOB_DELETING:
    edit_requeue(&m->ed, 1000);
    return W_WAIT;
  case JOB_PENDING:
    if(rj_refusal_due(v)) { /* no Pod yet: refused, or not made yet */
      char refused[768] = "";
      if(!rj_job_refusal(m->ctx->kube, m->owner.refusals, m->ns, v->name, refused,
                         sizeof(refused)) &&
         *refused)
        snprintf(v->waiting, sizeof(v->waiting), "FailedCreate: %s", refused);
    }
    if(*v->waiting && !clone_done(m))
      edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt %d of %d: the worker Pod "
               "cannot start: %s", n, m->backoff_limit + 1, v->waiting);
    edit_requeue(&m->ed, m->o->poll_interval_ms);
    return W_RUNNING;
  case JOB_RUNNING:
    zombie_check(m, v);
    fresh_check(m, v, n);
    edit_requeue(&m->ed, m->o->poll_interval_ms);
    return W_RUNNING;
  case JOB_SUCCEEDED:
    fresh_check(m, v, n);
    if(mig_status_str(m, "zombieSince"))
      edit_unset(&m->ed, "zombieSince");
    return W_SUCCEEDED;
  case JOB_FAILED:
    fresh_check(m, v, n);
    attempt_failed(m, n, v);
    return W_FAILED;
  }
  return W_WAIT;
}
