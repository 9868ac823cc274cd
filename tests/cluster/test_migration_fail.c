/*
 * test_migration_fail.c: failures with clear messages (issue test 4), end to end: a wrong
 * password (PreflightFailed naming the check), a missing Secret (PreflightRunning with the
 * kubelet's reason), a target role without CREATE (remediated through superuserSecretRef, and
 * PreflightWouldRemediate in a dry run that applies nothing), a worker that hits a permission
 * error (PermissionDenied, budget unspent), one that keeps failing (BackoffLimitExceeded), and a
 * spec that slipped past a disabled webhook (InvalidSpec).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(migration_fail, .fini = stop, .timeout = 300);

#define MIG_YAML                                                                              \
  "apiVersion: pgcopydb.io/v1\n"                                                              \
  "kind: Migration\n"                                                                         \
  "metadata:\n"                                                                               \
  "  name: %s\n"                                                                              \
  "spec:\n"                                                                                   \
  "  source:\n"                                                                               \
  "    connectionSecretRef: {name: %s}\n"                                                     \
  "  target:\n"                                                                               \
  "    connectionSecretRef: {name: dst}\n"                                                    \
  "  backoffLimit: %d\n"                                                                      \
  "  worker:\n"                                                                               \
  "    workDir: {size: 1Gi}\n"

static void no_worker(const char *name)
{
  char *jobs = e2e_jobs(&E, name);
  cr_assert_null(strstr(jobs, "-worker-"), "a worker Job was created:\n%s", jobs);
  free(jobs);
}

Test(migration_fail, a_wrong_password_fails_the_preflight_naming_the_check)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 100);
  char uri[256];
  e2e_secret(&E, "badsrc", pgfx_uri(&E.src, uri, sizeof(uri), "src_app", "Wrong-Pw-1", "shop"));
  e2e_apply(&E, MIG_YAML, "pw", "badsrc", 2);
  bool failed = e2e_wait_cond(&E, "pw", "Failed", "True", "PreflightFailed", 120000) &&
                e2e_wait_event(&E, "pw", "PreflightFailed", 10000);
  char *d = e2e_describe(&E, "pw");
  cr_assert(failed, "%s", d);
  cr_assert_str_eq(e2e_phase(&E, "pw"), "Failed");
  cr_assert_str_eq(e2e_cond_reason(&E, "pw", "Validated"), "PreflightFailed");
  const char *msg = e2e_cond_message(&E, "pw", "Validated");
  cr_assert(strstr(msg, "source.connect"), "the message names the check: %s", msg);
  cr_assert(strstr(msg, "password authentication failed"), "the server's line: %s", msg);
  cr_assert(strstr(msg, "Secret"), "the recovery names what to fix: %s", msg);
  cr_assert_null(strstr(d, "Wrong-Pw-1"), "no password anywhere:\n%s", d);
  cr_assert_eq(e2e_event_count(&E, "pw", "PreflightFailed"), 1, "a Warning Event:\n%s", d);
  char *ev = e2e_events(&E, "pw");
  cr_assert(strstr(ev, "Warning PreflightFailed"), "%s", ev);
  free(ev);
  no_worker("pw");
  free(d);
}

Test(migration_fail, a_missing_secret_keeps_validating_with_the_kubelet_reason)
{
  e2e_start(&E, NULL);
  e2e_apply(&E, MIG_YAML, "nosecret", "nosuch", 2);
  bool waiting = false;
  for(int i = 0; i < 300 && !waiting; i++) {
    waiting = strstr(e2e_cond_message(&E, "nosecret", "Validated"), "CreateContainerConfigError");
    if(!waiting)
      e2e_sleep_ms(200);
  }
  char *d = e2e_describe(&E, "nosecret");
  cr_assert(waiting, "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "nosecret", "Validated"), "PreflightRunning");
  const char *msg = e2e_cond_message(&E, "nosecret", "Validated");
  cr_assert(strstr(msg, "secret \"nosuch\" not found"), "the kubelet reason verbatim: %s", msg);
  cr_assert_str_eq(e2e_phase(&E, "nosecret"), "Validating");
  cr_assert_eq(e2e_event_count(&E, "nosecret", "PreflightStarted"), 1, "%s", d);
  free(d);
  /* the Secret appears: the preflight starts and passes */
  char uri[256];
  e2e_secret(&E, "nosuch", pgfx_uri(&E.src, uri, sizeof(uri), "src_app", E2E_SRC_PW, "shop"));
  d = NULL;
  cr_assert(e2e_wait_cond(&E, "nosecret", "Validated", "True", "SpecValid", 120000), "%s",
            (d = e2e_describe(&E, "nosecret")));
  free(d);
}

#define REMEDIATE_YAML E2E_MIGRATION_HEAD \
  "  superuserSecretRef: {name: super}\n" \
  "  dryRun: %s\n"

Test(migration_fail, a_target_role_without_create_is_remediated_and_a_dry_run_applies_nothing)
{
  e2e_start(&E, &(struct e2e_opts){ .no_target_create = true });
  e2e_load(&E, 2000);
  /* the dry run: the grants it would apply, none applied, no worker, no data */
  e2e_apply(&E, REMEDIATE_YAML, "dry", "true");
  bool done = e2e_wait_cond(&E, "dry", "Complete", "True", "DryRunSucceeded", 120000) &&
              e2e_wait_event(&E, "dry", "Completed", 10000);
  char *d = e2e_describe(&E, "dry");
  cr_assert(done, "%s", d);
  cr_assert_str_eq(e2e_phase(&E, "dry"), "Completed");
  cr_assert_eq(e2e_event_count(&E, "dry", "PreflightWouldRemediate"), 1, "the clone tier:\n%s",
               d);
  const char *would = e2e_event_message(&E, "dry", "PreflightWouldRemediate");
  cr_assert(strstr(would, "GRANT CREATE ON DATABASE"), "%s", would);
  cr_assert(strstr(would, "dst_app"), "%s", would);
  cr_assert_eq(e2e_event_count(&E, "dry", "PreflightRemediated"), 0, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "dry", "DryRunSucceeded"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "dry", "PreflightPassed"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "dry", "Completed"), 1, "%s", d);
  no_worker("dry");
  char *has = pgfx_query1(&E.dst, "shop", "SELECT has_database_privilege('dst_app', 'shop', "
                                          "'CREATE')::text");
  cr_assert_str_eq(has, "false", "a dry run applies nothing");
  free(has);
  char *tables = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_tables WHERE schemaname "
                                             "NOT IN ('pg_catalog', 'information_schema')");
  cr_assert_str_eq(tables, "0", "no data moved");
  free(tables);
  free(d);

  /* the real one: granted, one Event per tier listing the statements, then the copy */
  e2e_apply(&E, REMEDIATE_YAML, "fix", "false");
  done = e2e_wait_cond(&E, "fix", "Complete", "True", "MigrationSucceeded", 180000) &&
         e2e_wait_event(&E, "fix", "Completed", 10000);
  d = e2e_describe(&E, "fix");
  cr_assert(done, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "fix", "PreflightRemediated"), 1, "%s", d);
  const char *granted = e2e_event_message(&E, "fix", "PreflightRemediated");
  cr_assert(strstr(granted, "GRANT CREATE ON DATABASE"), "%s", granted);
  cr_assert(strstr(granted, "clone tier"), "%s", granted);
  cr_assert_eq(e2e_event_count(&E, "fix", "PreflightWouldRemediate"), 0, "%s", d);
  cr_assert(strstr(e2e_event_message(&E, "fix", "PreflightPassed"), "grant"), "%s", d);
  cJSON *m = e2e_get(&E, "fix");
  cr_assert_gt(json_get(m, "status.preflight.remediated")->valuedouble, 0);
  cJSON_Delete(m);
  e2e_assert_same(&E);
  cr_assert_null(strstr(d, E.dst.password), "the superuser's password stays secret");
  free(d);
}

/* Suspended while Validating: the preflight Job, held by a superuser Secret that does not exist
 * yet, is deleted with the suspension, so when the Secret appears nothing grants anything
 * while the Migration says Suspended; on resume the preflight runs again (same attempt),
 * remediates and the copy completes (issue 17). */
Test(migration_fail, a_suspension_while_validating_stops_the_preflight)
{
  e2e_start(&E, &(struct e2e_opts){ .no_target_create = true });
  e2e_load(&E, 500);
  e2e_apply(&E, E2E_MIGRATION_HEAD "  superuserSecretRef: {name: later}\n", "held");
  bool waiting = false;
  for(int i = 0; i < 300 && !waiting; i++) {
    waiting = strstr(e2e_cond_message(&E, "held", "Validated"), "CreateContainerConfigError");
    if(!waiting)
      e2e_sleep_ms(200);
  }
  char *d = e2e_describe(&E, "held");
  cr_assert(waiting, "%s", d);
  free(d);
  cr_assert(e2e_job_exists(&E, "held", "held-preflight-1"));
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch migration held --type merge -p "
                                     "'{\"spec\":{\"suspend\":true}}'"), 0);
  bool suspended = e2e_wait_phase(&E, "held", "Suspended", 30000);
  d = e2e_describe(&E, "held");
  cr_assert(suspended, "%s", d);
  cJSON *m = e2e_get(&E, "held");
  cr_assert_str_eq(json_get_str(m, "status.suspendedFrom"), "Validating", "%s", d);
  cJSON_Delete(m);
  cr_assert(strstr(e2e_cond_message(&E, "held", "Validated"), "spec.suspend deleted the running "
                   "Job held-preflight-1"), "%s", d);
  cr_assert(strstr(e2e_event_message(&E, "held", "Suspended"), "preflight Job deleted"), "%s", d);
  free(d);
  long long end = e2e_mono_ms() + 30000;
  while(e2e_job_exists(&E, "held", "held-preflight-1") && e2e_mono_ms() < end)
    e2e_sleep_ms(100);
  cr_assert_not(e2e_job_exists(&E, "held", "held-preflight-1"), "the preflight Job is kept");
  /* the Secret appears while suspended: nothing runs, nothing is granted */
  char uri[256];
  e2e_secret(&E, "later", pgfx_super_uri(&E.dst, uri, sizeof(uri), "shop"));
  e2e_sleep_ms(3000); /* the job runner retries a missing Secret every second */
  char *has = pgfx_query1(&E.dst, "shop", "SELECT has_database_privilege('dst_app', 'shop', "
                                          "'CREATE')::text");
  cr_assert_str_eq(has, "false", "a grant was applied while Suspended");
  free(has);
  cr_assert_str_eq(e2e_phase(&E, "held"), "Suspended");
  /* resumed: the same preflight attempt runs, remediates, and the copy completes */
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch migration held --type merge -p "
                                     "'{\"spec\":{\"suspend\":false}}'"), 0);
  bool done = e2e_wait_cond(&E, "held", "Complete", "True", "MigrationSucceeded", 180000) &&
              e2e_wait_event(&E, "held", "Completed", 10000);
  d = e2e_describe(&E, "held");
  cr_assert(done, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "held", "PreflightRemediated"), 1, "%s", d);
  char *jobs = e2e_jobs(&E, "held");
  cr_assert(strstr(jobs, "held-preflight-1\n") && !strstr(jobs, "held-preflight-2"), "%s", jobs);
  free(jobs);
  e2e_assert_same(&E);
  free(d);
}

/* A preflight that never ends fails at its Job's deadline: the source Secret names a port that
 * accepts connections and never answers (libpq waits for the server's first byte), so each
 * preflight attempt hangs until activeDeadlineSeconds (--step-deadline, 3 s here) ends it; the
 * attempts spent, PreflightFailed says so (issue 17: a runner Job without a deadline held the
 * Migration in Validating forever). */
Test(migration_fail, a_preflight_that_never_ends_fails_at_its_deadline)
{
  setenv("GODWIT_STEP_DEADLINE", "3", 1);
  e2e_start(&E, NULL);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  cr_assert(ls >= 0 && !bind(ls, (struct sockaddr *)&a, sizeof(a)) && !listen(ls, 64));
  socklen_t al = sizeof(a);
  cr_assert(!getsockname(ls, (struct sockaddr *)&a, &al));
  char uri[256];
  snprintf(uri, sizeof(uri), "postgresql://src_app:%s@127.0.0.1:%d/shop", E2E_SRC_PW,
           ntohs(a.sin_port));
  e2e_secret(&E, "mute", uri);
  e2e_apply(&E, MIG_YAML, "mute", "mute", 2);
  bool failed = e2e_wait_cond(&E, "mute", "Failed", "True", "PreflightFailed", 120000) &&
                e2e_wait_event(&E, "mute", "PreflightFailed", 10000);
  char *d = e2e_describe(&E, "mute");
  cr_assert(failed, "%s", d);
  const char *msg = e2e_cond_message(&E, "mute", "Validated");
  cr_assert(strstr(msg, "3 attempts without a verdict") && strstr(msg, "DeadlineExceeded"),
            "the deadline is not said: %s", msg);
  char *jobs = e2e_jobs(&E, "mute");
  cr_assert_str_eq(jobs, "mute-preflight-1\nmute-preflight-2\nmute-preflight-3\n", "%s", d);
  free(jobs);
  char *ads = NULL;
  cr_assert_eq(e2e_kubectl(&E, &ads, "get job mute-preflight-3 -o "
                                      "jsonpath={.spec.activeDeadlineSeconds}"), 0);
  cr_assert_str_eq(ads, "3");
  free(ads);
  close(ls);
  free(d);
}

/* A live migration of a table without a usable replica identity is refused before anything is
 * copied (seed 000's follow tier): its UPDATEs and DELETEs could not be replayed. The table is
 * named, with the ways out. */
Test(migration_fail, a_live_table_without_replica_identity_fails_the_preflight)
{
  e2e_start(&E, &(struct e2e_opts){ .logical = true });
  e2e_load(&E, 100);
  pgfx_exec(&E.src, "shop", "CREATE TABLE audit.nokey(v text); INSERT INTO audit.nokey "
                            "VALUES ('x'); GRANT SELECT ON audit.nokey TO src_app");
  e2e_apply(&E, E2E_MIGRATION_HEAD "  follow: {}\n", "nokey");
  bool failed = e2e_wait_cond(&E, "nokey", "Failed", "True", "PreflightFailed", 120000) &&
                e2e_wait_event(&E, "nokey", "PreflightFailed", 10000);
  char *d = e2e_describe(&E, "nokey");
  cr_assert(failed, "%s", d);
  const char *msg = e2e_cond_message(&E, "nokey", "Validated");
  cr_assert(strstr(msg, "no usable replica identity") && strstr(msg, "audit.nokey"), "%s", msg);
  cr_assert(strstr(msg, "REPLICA IDENTITY FULL") && strstr(msg, "excludeTables"),
            "the ways out: %s", msg);
  no_worker("nokey");
  char *tables = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_tables WHERE schemaname "
                                             "NOT IN ('pg_catalog', 'information_schema')");
  cr_assert_str_eq(tables, "0", "something was copied");
  free(tables);
  free(d);
}

/* A runner Pod the API server refuses (here: spec.worker.serviceAccountName names no service
 * account) is said where a person looks: Validated PreflightRunning quotes the Job's
 * FailedCreate message; the Job's deadline then ends the attempt (issue 12). */
Test(migration_fail, a_refused_runner_pod_is_named)
{
  setenv("GODWIT_STEP_DEADLINE", "5", 1);
  e2e_start(&E, NULL);
  e2e_apply(&E, MIG_YAML "    serviceAccountName: nosuch\n", "refused", "src", 1);
  bool said = false;
  for(int i = 0; i < 300 && !said; i++) {
    said = strstr(e2e_cond_message(&E, "refused", "Validated"), "FailedCreate") != NULL;
    if(!said)
      e2e_sleep_ms(200);
  }
  char *d = e2e_describe(&E, "refused");
  cr_assert(said, "%s", d);
  free(d);
  const char *m = e2e_cond_message(&E, "refused", "Validated");
  cr_assert(strstr(m, "refused-preflight-1") && strstr(m, "nosuch"), "%s", m);
  cr_assert_str_eq(e2e_cond_reason(&E, "refused", "Validated"), "PreflightRunning");
  bool failed = e2e_wait_cond(&E, "refused", "Failed", "True", "PreflightFailed", 120000);
  d = e2e_describe(&E, "refused");
  cr_assert(failed, "the deadline did not end the attempts:\n%s", d);
  cr_assert(strstr(e2e_cond_message(&E, "refused", "Validated"), "DeadlineExceeded"), "%s", d);
  no_worker("refused");
  free(d);
}

/* A service mesh injects its proxy into Pods (tests/tools/injector.c, a real mutating webhook):
 * the runner-Pod guard refuses the changed runner Pod, and the Migration says why and what to
 * declare; with the mesh's opt-out label in spec.worker.podMetadata nothing is injected and the
 * copy completes (issue 12, docs/operations/runner-pods.md). */
Test(migration_fail, an_injected_sidecar_is_refused_and_the_opt_out_runs)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 500);
  e2e_injector_start(&E);
  e2e_apply(&E, MIG_YAML, "meshed", "src", 1);
  bool said = false;
  for(int i = 0; i < 300 && !said; i++) {
    said = strstr(e2e_cond_message(&E, "meshed", "Validated"), "FailedCreate") != NULL;
    if(!said)
      e2e_sleep_ms(200);
  }
  char *d = e2e_describe(&E, "meshed");
  cr_assert(said, "%s", d);
  free(d);
  const char *m = e2e_cond_message(&E, "meshed", "Validated");
  cr_assert(strstr(m, "differs from the template the controller recorded") &&
              strstr(m, "spec.worker.podMetadata"), "%s", m);
  char *log = cl_slurp(cl_path(&E.c, "injector.log"));
  cr_assert(log && strstr(log, "injected istio-proxy"), "the injector saw no runner Pod");
  free(log);
  cr_assert_eq(e2e_kubectl(&E, NULL, "delete migration meshed"), 0);
  e2e_apply(&E, MIG_YAML "    podMetadata:\n"
                         "      labels: {sidecar.istio.io/inject: \"false\"}\n",
            "optout", "src", 1);
  bool done = e2e_wait_complete(&E, "optout", 120000);
  d = e2e_describe(&E, "optout");
  cr_assert(done, "%s", d);
  e2e_assert_same(&E);
  free(d);
}

Test(migration_fail, a_permission_error_in_the_worker_is_permission_denied)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 500);
  /* the preflight does not look at event triggers; restoring one needs a superuser */
  pgfx_exec(&E.src, "shop", "CREATE FUNCTION public.noop() RETURNS event_trigger LANGUAGE "
                            "plpgsql AS $$ BEGIN END $$;"
                            "CREATE EVENT TRIGGER audit_ddl ON ddl_command_start "
                            "EXECUTE FUNCTION public.noop()");
  e2e_apply(&E, MIG_YAML, "perm", "src", 3);
  bool failed = e2e_wait_cond(&E, "perm", "Failed", "True", "PermissionDenied", 180000) &&
                e2e_wait_event(&E, "perm", "PermissionDenied", 10000);
  char *d = e2e_describe(&E, "perm");
  cr_assert(failed, "%s", d);
  const char *msg = e2e_cond_message(&E, "perm", "Failed");
  cr_assert(strstr(msg, "permission denied to create event trigger"), "the matched line: %s",
            msg);
  cr_assert_null(strstr(msg, "HINT"), "%s", msg);
  cr_assert(strstr(msg, "remaining 3 attempts"), "the budget stays unspent: %s", msg);
  cJSON *m = e2e_get(&E, "perm");
  cr_assert_eq(json_get(m, "status.attempts")->valuedouble, 1, "one attempt:\n%s", d);
  cJSON_Delete(m);
  cr_assert_eq(e2e_event_count(&E, "perm", "AttemptFailed"), 0, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "perm", "PermissionDenied"), 1, "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "perm", "CloneCompleted"), "CloneFailed");
  cr_assert_str_eq(e2e_phase(&E, "perm"), "Failed");
  cr_assert(e2e_wait_cond(&E, "perm", "Ready", "False", "PermissionDenied", 5000),
            "Ready does not carry the failure's reason:\n%s", d);
  cr_assert_null(strstr(d, E2E_SRC_PW));
  cr_assert_null(strstr(d, E2E_DST_PW));
  free(d);
}

/* The creation time of Job name, epoch seconds. */
static long long job_created(const char *name)
{
  char *out = NULL;
  cr_assert_eq(e2e_kubectl(&E, &out, "get job %s -o jsonpath={.metadata.creationTimestamp}",
                           name), 0, "%s", out);
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  cr_assert(strptime(out, "%Y-%m-%dT%H:%M:%S", &tm), "%s", out);
  free(out);
  return (long long)timegm(&tm);
}

/* A failure that repeats itself: both attempts fail the same way, the second after the Job
 * controller's back-off (3 s here; it doubles with each failure), then BackoffLimitExceeded. */
Test(migration_fail, a_worker_that_keeps_failing_exceeds_the_backoff_limit)
{
  setenv("GODWIT_ATTEMPT_BACKOFF", "3", 1);
  e2e_start(&E, NULL);
  e2e_load(&E, 500);
  /* a table in the way on the target: the pre-data restore fails on every attempt */
  pgfx_exec(&E.dst, "shop", "CREATE TABLE public.customers(id int); "
                            "ALTER TABLE public.customers OWNER TO dst_app");
  e2e_apply(&E, MIG_YAML, "again", "src", 1);
  bool failed = e2e_wait_cond(&E, "again", "Failed", "True", "BackoffLimitExceeded", 240000) &&
                e2e_wait_event(&E, "again", "BackoffLimitExceeded", 10000);
  char *d = e2e_describe(&E, "again");
  cr_assert(failed, "%s", d);
  cJSON *m = e2e_get(&E, "again");
  cr_assert_eq(json_get(m, "status.attempts")->valuedouble, 2, "backoffLimit + 1:\n%s", d);
  cr_assert_null(json_get(m, "status.nextAttemptTime"), "%s", d);
  cJSON_Delete(m);
  cr_assert_eq(e2e_event_count(&E, "again", "AttemptStarted"), 2, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "again", "AttemptFailed"), 1, "%s", d);
  cr_assert(strstr(d, "attempt 2 resumes from the work-dir catalogs in 3 s"), "%s", d);
  /* the second attempt began after the back-off (whole seconds; the failed attempt itself
   * takes about one) */
  long long t1 = job_created("again-worker-1"), t2 = job_created("again-worker-2");
  cr_assert_geq(t2 - t1, 3, "attempt 2 %lld s after attempt 1:\n%s", t2 - t1, d);
  cr_assert_eq(e2e_event_count(&E, "again", "BackoffLimitExceeded"), 1, "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "again", "CloneCompleted"), "CloneFailed");
  const char *msg = e2e_cond_message(&E, "again", "CloneCompleted");
  cr_assert(strstr(msg, "exit code"), "the Job failure: %s", msg);
  cr_assert(strstr(msg, "pgcopydb error"), "the last pgcopydb error line: %s", msg);
  char *jobs = e2e_jobs(&E, "again");
  cr_assert(strstr(jobs, "again-worker-1\nagain-worker-2\n"), "%s", jobs);
  cr_assert_null(strstr(jobs, "again-worker-3"), "%s", jobs);
  free(jobs);
  free(d);
}

Test(migration_fail, a_spec_past_a_disabled_webhook_is_invalid)
{
  e2e_start(&E, NULL);
  cr_assert_eq(e2e_kubectl(&E, NULL, "delete validatingwebhookconfiguration godwit-validating"),
               0);
  /* source and target: the same Secret and key */
  e2e_apply(&E, MIG_YAML, "same", "dst", 2);
  bool failed = e2e_wait_cond(&E, "same", "Failed", "True", "InvalidSpec", 60000) &&
                e2e_wait_event(&E, "same", "InvalidSpec", 10000);
  char *d = e2e_describe(&E, "same");
  cr_assert(failed, "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "same", "Validated"), "InvalidSpec");
  cr_assert(strstr(e2e_cond_message(&E, "same", "Validated"), "spec.target.connectionSecretRef"),
            "%s", d);
  cr_assert_eq(e2e_event_count(&E, "same", "InvalidSpec"), 1, "%s", d);
  char *jobs = e2e_jobs(&E, "same");
  cr_assert_str_eq(jobs, "", "nothing runs");
  free(jobs);
  free(d);
}

/* Immutability holds in two layers: the webhook refuses a changed spec.source (shown with the
 * CRD's rule taken out), and with the webhook uninstalled (the CRDs kept) the CRD's transition
 * rule self == oldSelf refuses it in the API server, with the same message (issue 12). Other
 * changes still pass. */
Test(migration_fail, an_immutable_field_is_refused_with_and_without_the_webhook)
{
  e2e_start(&E, NULL);
  e2e_apply(&E, MIG_YAML, "fixed", "nosuch", 1); /* held in Validating: no such Secret */
  static const char patch[] = "patch migration fixed --type merge -p "
                              "'{\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":"
                              "\"elsewhere\"}}}}'";
  char *out = NULL;
  /* the webhook alone: the CRD's rule taken out (kube-apiserver checks the schema before the
   * validating webhooks, so with both the CRD answers first) */
  cr_assert_eq(e2e_kubectl(&E, &out, "patch crd migrations.pgcopydb.io --type json -p "
                                     "'[{\"op\":\"test\",\"path\":\"/spec/versions/1/name\","
                                     "\"value\":\"v1\"},{\"op\":\"remove\",\"path\":"
                                     "\"/spec/versions/1/schema/openAPIV3Schema/properties/spec/"
                                     "properties/source/x-kubernetes-validations\"}]'"), 0, "%s",
               out);
  free(out);
  cr_assert_neq(e2e_kubectl(&E, &out, patch), 0, "the webhook let it change: %s", out);
  cr_assert(strstr(out, "spec.source: is immutable: a Migration copies from the database it "
                        "was created with") && !strstr(out, "Invalid value: \"object\""),
            "not the webhook's refusal: %s", out);
  free(out);
  /* the CRD alone: its rule back, the webhook uninstalled */
  cr_assert_eq(e2e_kubectl(&E, &out, "apply -f manifests/crds/pgcopydb.io_migrations.yaml"), 0,
               "%s", out);
  free(out);
  cr_assert_eq(e2e_kubectl(&E, NULL, "delete validatingwebhookconfiguration godwit-validating"),
               0);
  out = NULL;
  cr_assert_neq(e2e_kubectl(&E, &out, patch), 0, "the CRD let it change: %s", out);
  cr_assert(strstr(out, "The Migration \"fixed\" is invalid: spec.source: Invalid value: "
                        "\"object\": is immutable: a Migration copies from the database it was "
                        "created with"), "%s", out);
  free(out);
  cJSON *m = e2e_get(&E, "fixed");
  cr_assert_str_eq(json_get_str(m, "spec.source.connectionSecretRef.name"), "nosuch");
  cJSON_Delete(m);
  cr_assert_eq(e2e_kubectl(&E, NULL, "label migration fixed team=data"), 0);
}
