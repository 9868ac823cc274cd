/*
 * test_migration_zombie.c: what pgcopydb does wrong in versions other than Debian's, end to end.
 * The job runner finds commands on its PATH, and these tests put a stand-in `pgcopydb` first that
 * misbehaves once, the way the upstream defect does, and otherwise runs the real
 * /usr/bin/pgcopydb (the preflight's version probe, later attempts):
 *  - WorkerZombie: pgcopydb 0.18 can log its supervisor's fatal exit while a child keeps the
 *    worker Pod alive. The controller must remove the Pod after the grace period (Warning
 *    WorkerZombie), and the next attempt must finish the clone.
 *  - CloneIncomplete: a worker that exits 0 while pgcopydb's own catalog in the work dir counts a
 *    table not done. The catalog Job must see it: CloneIncomplete on CloneCompleted and Failed.
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

/* A stand-in pgcopydb (body: a shell script; %1$s is a directory for its markers) first on the
 * PATH the job runner inherits. */
static void install_stand_in(const char *body)
{
  snprintf(fake_dir, sizeof(fake_dir), "/tmp/godwit-zombie-XXXXXX");
  cr_assert_not_null(mkdtemp(fake_dir));
  char path[128];
  snprintf(path, sizeof(path), "%s/pgcopydb", fake_dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, body, fake_dir);
  fclose(f);
  cr_assert_eq(chmod(path, 0755), 0);
  cr_assert_eq(chmod(fake_dir, 0755), 0);
  char *old = getenv("PATH");
  char *p = NULL;
  cr_assert(asprintf(&p, "%s:%s", fake_dir, old ? old : "/usr/bin:/bin") > 0);
  setenv("PATH", p, 1); /* `up` starts the job runner with it */
  free(p);
}

/* The first `pgcopydb clone` logs a fatal exit and stays alive. */
static const char zombie_sh[] =
  "#!/bin/sh\n"
  "if [ \"$1\" = clone ] && mkdir '%1$s/first' 2>/dev/null; then\n"
  "  echo \"$(date +%%H:%%M:%%S) $$ INFO   Running pgcopydb version 0.18 from "
  "\\\"/usr/bin/pgcopydb\\\"\" >&2\n"
  "  echo \"$(date +%%H:%%M:%%S) $$ INFO   STEP 4: copy data from source to target in 2 "
  "sub-processes\" >&2\n"
  "  echo \"$(date +%%H:%%M:%%S) $$ FATAL  Failed to wait for sub-processes, see above "
  "for details\" >&2\n"
  "  exec sleep 600\n"
  "fi\n"
  "exec /usr/bin/pgcopydb \"$@\"\n";

Test(migration_zombie, a_worker_alive_after_its_fatal_exit_is_removed_and_the_next_resumes)
{
  install_stand_in(zombie_sh);
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

/* The first `pgcopydb clone` succeeds, then one table's done marker goes from the work dir. */
static const char incomplete_sh[] =
  "#!/bin/sh\n"
  "if [ \"$1\" = clone ]; then\n"
  "  /usr/bin/pgcopydb \"$@\"; rc=$?\n"
  "  if [ $rc = 0 ] && mkdir '%1$s/first' 2>/dev/null; then\n"
  "    dir=; prev=\n"
  "    for a in \"$@\"; do [ \"$prev\" = --dir ] && dir=$a; prev=$a; done\n"
  "    for f in \"$dir\"/run/tables/*.done; do\n"
  "      if grep -q orders \"$f\"; then rm -f \"$f\"; fi\n"
  "    done\n"
  "  fi\n"
  "  exit $rc\n"
  "fi\n"
  "exec /usr/bin/pgcopydb \"$@\"\n";

Test(migration_zombie, a_clone_its_catalog_counts_unfinished_is_clone_incomplete)
{
  install_stand_in(incomplete_sh);
  e2e_start(&E, NULL);
  e2e_load(&E, 5000);
  e2e_apply(&E, "apiVersion: pgcopydb.io/v1\n"
                "kind: Migration\n"
                "metadata: {name: partial}\n"
                "spec:\n"
                "  source: {connectionSecretRef: {name: src}}\n"
                "  target: {connectionSecretRef: {name: dst}}\n"
                "  worker: {workDir: {size: 1Gi}}\n");
  bool failed = e2e_wait_cond(&E, "partial", "Failed", "True", "CloneIncomplete", 180000);
  char *d = e2e_describe(&E, "partial");
  cr_assert(failed, "not Failed with CloneIncomplete:\n%s", d);
  cr_assert_str_eq(e2e_phase(&E, "partial"), "Failed");
  cr_assert_str_eq(e2e_cond_reason(&E, "partial", "CloneCompleted"), "CloneIncomplete", "%s", d);
  const char *msg = e2e_cond_message(&E, "partial", "CloneCompleted");
  cr_assert(strstr(msg, "sales.orders") || strstr(msg, "\"sales\".\"orders\""),
            "the unfinished table is named: %s", msg);
  cr_assert(!strstr(msg, "customers"), "only the unfinished table: %s", msg);
  cr_assert(!e2e_cond_reason(&E, "partial", "Complete")[0] ||
              strcmp(e2e_cond_reason(&E, "partial", "Complete"), "MigrationSucceeded"),
            "%s", d);
  char *jobs = e2e_jobs(&E, "partial");
  cr_assert_str_eq(jobs, "partial-catalog-1\npartial-preflight-1\npartial-worker-1\n");
  free(jobs);
  free(d);
}
