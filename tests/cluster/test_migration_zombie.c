/*
 * test_migration_zombie.c: WorkerZombie end to end. pgcopydb 0.18 can log its supervisor's fatal
 * exit while a child keeps the worker Pod alive; Debian's 0.10 has no such defect, so the first
 * worker attempt here runs a stand-in that does exactly that (logs the FATAL line the way
 * pgcopydb does, then stays alive). The job runner finds commands on its PATH, and this test
 * puts the stand-in first; every other pgcopydb call (the preflight's version probe, the second
 * attempt) goes to the real /usr/bin/pgcopydb. The controller must remove the Pod after the
 * grace period (Warning WorkerZombie), and the next attempt must finish the clone.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;
static char fake_dir[64];

static void stop(void)
{
  e2e_stop(&E);
  if(*fake_dir) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_dir);
    if(system(cmd) != 0)
      cr_log_warn("could not remove %s", fake_dir);
  }
}

TestSuite(migration_zombie, .fini = stop, .timeout = 240);

/* The stand-in: the first `pgcopydb clone` logs a fatal exit and stays alive. */
static void install_stand_in(void)
{
  snprintf(fake_dir, sizeof(fake_dir), "/tmp/godwit-zombie-XXXXXX");
  cr_assert_not_null(mkdtemp(fake_dir));
  char path[128];
  snprintf(path, sizeof(path), "%s/pgcopydb", fake_dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "#!/bin/sh\n"
          "if [ \"$1\" = clone ] && mkdir '%s/first' 2>/dev/null; then\n"
          "  echo \"$(date +%%H:%%M:%%S) $$ INFO   Running pgcopydb version 0.18 from "
          "\\\"/usr/bin/pgcopydb\\\"\" >&2\n"
          "  echo \"$(date +%%H:%%M:%%S) $$ INFO   STEP 4: copy data from source to target in 2 "
          "sub-processes\" >&2\n"
          "  echo \"$(date +%%H:%%M:%%S) $$ FATAL  Failed to wait for sub-processes, see above "
          "for details\" >&2\n"
          "  exec sleep 600\n"
          "fi\n"
          "exec /usr/bin/pgcopydb \"$@\"\n",
          fake_dir);
  fclose(f);
  cr_assert_eq(chmod(path, 0755), 0);
  cr_assert_eq(chmod(fake_dir, 0755), 0);
  char *old = getenv("PATH");
  char *p = NULL;
  cr_assert(asprintf(&p, "%s:%s", fake_dir, old ? old : "/usr/bin:/bin") > 0);
  setenv("PATH", p, 1); /* `up` starts the job runner with it */
  free(p);
}

Test(migration_zombie, a_worker_alive_after_its_fatal_exit_is_removed_and_the_next_resumes)
{
  install_stand_in();
  setenv("GODWIT_ZOMBIE_GRACE_MS", "2000", 1);
  e2e_start(&E, NULL);
  e2e_load(&E, 5000);
  e2e_apply(&E, "apiVersion: pgcopydb.io/v1\n"
                "kind: Migration\n"
                "metadata: {name: undead}\n"
                "spec:\n"
                "  source: {connectionSecretRef: {name: src}}\n"
                "  target: {connectionSecretRef: {name: dst}}\n"
                "  worker: {workDir: {size: 1Gi}}\n");
  bool done = e2e_wait_cond(&E, "undead", "Complete", "True", "MigrationSucceeded", 180000) &&
              e2e_wait_event(&E, "undead", "Completed", 10000);
  char *d = e2e_describe(&E, "undead");
  cr_assert(done, "not Complete:\n%s", d);
  cr_assert_eq(e2e_event_count(&E, "undead", "WorkerZombie"), 1, "%s", d);
  char *ev = e2e_events(&E, "undead");
  cr_assert(strstr(ev, "Warning WorkerZombie"), "%s", ev);
  free(ev);
  const char *zm = e2e_event_message(&E, "undead", "WorkerZombie");
  cr_assert(strstr(zm, "undead-worker-1"), "the Event names the worker: %s", zm);
  /* the removed Pod failed the attempt; the next one finished the copy */
  cr_assert_eq(e2e_event_count(&E, "undead", "AttemptFailed"), 1, "%s", d);
  cJSON *m = e2e_get(&E, "undead");
  cr_assert_eq(json_get(m, "status.attempts")->valuedouble, 2, "%s", d);
  cr_assert_null(json_get(m, "status.zombieSince"), "%s", d);
  cJSON_Delete(m);
  char *jobs = e2e_jobs(&E, "undead");
  cr_assert(strstr(jobs, "undead-worker-1\n") && strstr(jobs, "undead-worker-2\n"), "%s", jobs);
  free(jobs);
  e2e_assert_same(&E);
  free(d);
}
