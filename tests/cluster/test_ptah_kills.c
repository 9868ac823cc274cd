/*
 * test_ptah_kills.c: the controller SIGKILLed and restarted ten times during each of two runs of
 * a PtahMigration, at instants spread over the claim, the dispatch, the run and the settling.
 * Whatever instant the kill lands on: one Job per operation, every version applied once and
 * recorded with it, no version recorded that the database does not hold, and no run called
 * uncertain (the runner was never hurt, so its result is always known).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ptah_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_kills, .fini = stop, .timeout = 300);

#define SLOW(n) "SELECT pg_sleep(0.3); CREATE TABLE t" #n " (id int);"

/* Ten kills, each followed by a fresh controller, spread over about three seconds. */
static void kill_ten_times(void)
{
  static const int gaps_ms[10] = { 0, 50, 120, 200, 300, 400, 250, 350, 500, 600 };
  for(int i = 0; i < 10; i++) {
    e2e_sleep_ms(gaps_ms[i]);
    e2e_controller_kill(&E);
    e2e_controller_start(&E);
  }
}

static void assert_versions(const char *want)
{
  char *v = pgfx_query1(&E.dst, "shop", "SELECT string_agg(version::text, ',' ORDER BY version) "
                        "FROM public.ptah_migrations");
  cr_expect_str_eq(v, want, "the history table");
  free(v);
  /* every recorded version's table exists: nothing recorded that was not applied */
  char *missing = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM public.ptah_migrations h "
                              "WHERE to_regclass('public.t' || h.version) IS NULL");
  cr_expect_str_eq(missing, "0");
  free(missing);
}

Test(ptah_kills, a_controller_killed_at_any_instant_never_runs_a_version_twice)
{
  ptah_start(&E, NULL);
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){ "0001_a.sql", SLOW(1), "0002_b.sql", SLOW(2),
                                        "0003_c.sql", SLOW(3), "0004_d.sql", SLOW(4), NULL });
  e2e_apply(&E, PTAH_HEAD);
  kill_ten_times();
  bool ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 90000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied:\n%s", d);
  free(d);
  assert_versions("1,2,3,4");

  /* the next release, and ten more kills */
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){ "0001_a.sql", SLOW(1), "0002_b.sql", SLOW(2),
                                        "0003_c.sql", SLOW(3), "0004_d.sql", SLOW(4),
                                        "0005_e.sql", SLOW(5), "0006_f.sql", SLOW(6), NULL });
  kill_ten_times();
  ok = ptah_wait_version(&E, "shop", 6, 90000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "version 6 not reached:\n%s", d);
  free(d);
  assert_versions("1,2,3,4,5,6");
  char *jobs = NULL;
  cr_assert_eq(e2e_kubectl(&E, &jobs, "get jobs -l ptah.run/migration=shop -o name"), 0);
  cr_expect_str_eq(jobs, "job.batch/shop-apply-1-1\njob.batch/shop-apply-2-1\n",
                   "one Job per operation");
  free(jobs);
  cr_expect_eq(e2e_event_count(&E, "shop", "MigrationRunUncertain"), 0,
               "a run whose runner was never hurt was called uncertain");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "Accepted");
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-2-1"), "Accepted");
}

static int all_committed(void *arg)
{
  (void)arg;
  /* each table commits with its history row */
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_class WHERE relname IN "
                        "('t1', 't2') AND relkind = 'r'");
  int done = atoi(n) == 2;
  free(n);
  return done;
}

Test(ptah_kills, a_runner_killed_between_commit_and_its_record_is_settled_without_a_rerun)
{
  ptah_start(&E, &(struct e2e_opts){ .faults = true });
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){ "0001_a.sql", "CREATE TABLE t1 (id int);", "0002_b.sql",
                                        "CREATE TABLE t2 (id int);", NULL });
  /* the record's delivery hangs: the runner is caught after its last COMMIT */
  cl_fault(&E.c, "{\"verb\":\"create\",\"pathRegex\":\"/ptahresultrecords$\",\"code\":503,"
                 "\"delayMs\":8000,\"count\":1,\"dryRun\":false}");
  e2e_apply(&E, PTAH_HEAD);
  cr_assert(cl_eventually(60000, all_committed, NULL), "the versions were never committed");
  e2e_sleep_ms(500);
  pid_t pid = e2e_pod_pid(&E, "ptah.run/migration=shop");
  cr_assert_gt(pid, 0, "no running runner");
  cr_assert_eq(kill(-pid, SIGKILL), 0);
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not Uncertain:\n%s", d);
  free(d);
  cr_expect_str_eq(ptah_record_phase(&E, "shop-apply-1-1"), "", "a record was delivered");
  /* alice finds both versions recorded and says so; the next run reads the history and has
   * nothing to do */
  ptah_acknowledge(&E, "alice", "shop-apply-1-ack", "shop-apply-1", "Applied");
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "UpToDate", 60000);
  d = e2e_describe(&E, "shop");
  cr_assert(ok, "not UpToDate after the acknowledgment:\n%s", d);
  free(d);
  cr_expect_eq(ptah_int(&E, "shop", "status.currentVersion"), 2);
  assert_versions("1,2");
  cr_expect(strstr(e2e_event_message(&E, "shop", "MigrationRunFinished"), "UpToDate") != NULL);
}

static int waiting_for_lock(void *arg)
{
  (void)arg;
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE "
                        "application_name = 'godwit-ptah-shop-apply-1'");
  int found = atoi(n) > 0;
  free(n);
  return found;
}

Test(ptah_kills, a_runner_killed_before_it_began_is_uncertain_and_the_next_run_applies_once)
{
  ptah_start(&E, NULL);
  /* another session holds the migration lock: the runner waits before its first BEGIN */
  char uri[256];
  pgfx_super_uri(&E.dst, uri, sizeof(uri), "shop");
  pid_t holder = fork();
  cr_assert(holder >= 0);
  if(!holder) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_WRONLY);
    if(null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    execlp("psql", "psql", "-X", "-q", uri, "-c",
           "SELECT pg_advisory_lock(1886675304, hashtext('public.ptah_migrations'))", "-c",
           "SELECT pg_sleep(120)", (char *)NULL);
    _exit(127);
  }
  ptah_configmap(&E, "shop-migrations",
                 (const char *const[]){ "0001_a.sql", "CREATE TABLE t1 (id int);", "0002_b.sql",
                                        "CREATE TABLE t2 (id int);", NULL });
  e2e_apply(&E, PTAH_HEAD);
  cr_assert(cl_eventually(60000, waiting_for_lock, NULL), "the runner never connected");
  e2e_sleep_ms(500);
  pid_t pid = e2e_pod_pid(&E, "ptah.run/migration=shop");
  cr_assert_gt(pid, 0, "no running runner");
  cr_assert_eq(kill(-pid, SIGKILL), 0);
  bool ok = e2e_wait_phase(&E, "shop", "Uncertain", 60000);
  cr_assert(ok, "not Uncertain: the controller cannot know the runner had not begun");
  /* the holder ends (its server session too: a killed psql would leave it sleeping) */
  pgfx_exec(&E.dst, "shop", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
            "query LIKE '%%pg_sleep(120)%%' AND pid <> pg_backend_pid()");
  waitpid(holder, NULL, 0);
  char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_class WHERE relname IN "
                        "('t1', 't2', 'ptah_migrations')");
  cr_expect_str_eq(n, "0", "the runner did something before it was killed");
  free(n);
  ptah_acknowledge(&E, "alice", "shop-apply-1-ack", "shop-apply-1", "NotApplied");
  ok = e2e_wait_cond(&E, "shop", "Ready", "True", "Applied", 60000);
  char *d = e2e_describe(&E, "shop");
  cr_assert(ok, "not applied after the acknowledgment:\n%s", d);
  free(d);
  assert_versions("1,2");
}
