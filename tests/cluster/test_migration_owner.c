/*
 * test_migration_owner.c: clone.ownerAfterRestore end to end: the preflight grants the migration
 * role membership in the owner role (superuserSecretRef, PreflightRemediated), the worker copies,
 * then the <name>-reown Job hands every schema, table and sequence the migration role owns over
 * to the owner: OwnershipApplied True with its Events, Complete.
 */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(migration_owner, .fini = stop, .timeout = 300);

/* A clone whose restored objects go to shop_owner (the superuser Secret lets the preflight
 * grant the migration role what the handover needs). */
#define OWNED_YAML                                                                             \
  "apiVersion: pgcopydb.io/v1\n"                                                              \
  "kind: Migration\n"                                                                         \
  "metadata: {name: %s}\n"                                                                    \
  "spec:\n"                                                                                   \
  "  source: {connectionSecretRef: {name: src}}\n"                                            \
  "  target: {connectionSecretRef: {name: dst}}\n"                                            \
  "  superuserSecretRef: {name: super}\n"                                                     \
  "  clone:\n"                                                                                \
  "    ownerAfterRestore: shop_owner\n"                                                       \
  "  worker: {workDir: {size: 1Gi}}\n"

Test(migration_owner, the_reown_job_hands_the_restored_objects_to_the_owner)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 5000);
  pgfx_exec(&E.dst, "postgres", "CREATE ROLE shop_owner NOLOGIN");
  e2e_apply(&E, OWNED_YAML, "shop");
  struct e2e_phases ph;
  e2e_phases_start(&ph, &E, "shop");
  /* Events are emitted after the status write: Completed is the last one */
  bool done = e2e_wait_cond(&E, "shop", "Complete", "True", "MigrationSucceeded", 180000) &&
              e2e_wait_event(&E, "shop", "Completed", 10000);
  e2e_phases_stop(&ph);
  char *d = e2e_describe(&E, "shop");
  cr_assert(done, "not Complete:\n%s", d);
  /* the handover was seen running, in Finalizing (seed 000) */
  cr_assert(e2e_phases_saw_reason(&ph, "OwnershipApplied", "OwnershipRunning"), "%s",
            e2e_phases_reasons(&ph));

  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "OwnershipApplied"), "OwnershipApplied", "%s", d);
  cr_assert(strstr(e2e_cond_message(&E, "shop", "OwnershipApplied"), "shop_owner"), "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "CloneCompleted"), "CloneSucceeded", "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "OwnershipStarted"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "shop", "OwnershipApplied"), 1, "%s", d);
  cr_assert_geq(e2e_event_count(&E, "shop", "PreflightRemediated"), 1, "%s", d);
  cr_assert(strstr(e2e_event_message(&E, "shop", "PreflightRemediated"), "shop_owner"),
            "the remediation names the grant: %s", d);

  /* the handover is "the <name>-reown Job", run once */
  char *jobs = e2e_jobs(&E, "shop");
  cr_assert_str_eq(jobs, "shop-catalog-1\nshop-preflight-1\nshop-reown\nshop-worker-1\n");
  free(jobs);

  /* on the target, nothing of the sample is left to the migration role */
  char *left = pgfx_query1(&E.dst, "shop",
                           "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                           "c.relnamespace WHERE n.nspname IN ('public', 'sales', 'audit') AND "
                           "c.relkind IN ('r', 'S') AND "
                           "pg_get_userbyid(c.relowner) <> 'shop_owner'");
  cr_assert_str_eq(left, "0", "relations not handed over");
  free(left);
  char *orders = pgfx_query1(&E.dst, "shop", "SELECT tableowner FROM pg_tables WHERE "
                                             "schemaname = 'sales' AND tablename = 'orders'");
  cr_assert_str_eq(orders, "shop_owner");
  free(orders);
  char *seq = pgfx_query1(&E.dst, "shop", "SELECT pg_get_userbyid(relowner) FROM pg_class "
                                          "WHERE oid = 'sales.invoice_seq'::regclass");
  cr_assert_str_eq(seq, "shop_owner");
  free(seq);
  char *schemas = pgfx_query1(&E.dst, "shop", "SELECT string_agg(pg_get_userbyid(nspowner), ',' "
                                              "ORDER BY nspname) FROM pg_namespace WHERE "
                                              "nspname IN ('sales', 'audit')");
  cr_assert_str_eq(schemas, "shop_owner,shop_owner");
  free(schemas);
  e2e_assert_same(&E);
  free(d);
}

/* The owner's membership withdrawn while the worker copies (after the preflight granted it):
 * the handover cannot run, OwnershipFailed on both conditions with the Job's last lines, the
 * data on the target all the same. */
Test(migration_owner, a_handover_that_cannot_run_fails_with_the_statement)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 200000);
  pgfx_exec(&E.dst, "postgres", "CREATE ROLE shop_owner NOLOGIN");
  e2e_apply(&E, OWNED_YAML, "lost");
  bool cloning = e2e_wait_phase(&E, "lost", "Cloning", 120000);
  char *d = e2e_describe(&E, "lost");
  cr_assert(cloning, "never Cloning:\n%s", d);
  free(d);
  pgfx_exec(&E.dst, "postgres", "REVOKE shop_owner FROM dst_app");

  bool failed = e2e_wait_cond(&E, "lost", "Failed", "True", "OwnershipFailed", 180000) &&
                e2e_wait_event(&E, "lost", "OwnershipFailed", 10000);
  d = e2e_describe(&E, "lost");
  cr_assert(failed, "not Failed with OwnershipFailed:\n%s", d);
  cr_assert_str_eq(e2e_phase(&E, "lost"), "Failed");
  cr_assert_str_eq(e2e_cond_reason(&E, "lost", "OwnershipApplied"), "OwnershipFailed", "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "lost", "CloneCompleted"), "CloneSucceeded", "%s", d);
  const char *msg = e2e_cond_message(&E, "lost", "OwnershipApplied");
  cr_assert(strstr(msg, "OWNER TO shop_owner"), "the statement that failed: %s", msg);
  cr_assert(strstr(msg, "the data is on the target"), "%s", msg);
  cr_assert_eq(e2e_event_count(&E, "lost", "OwnershipStarted"), 1, "%s", d);
  cr_assert_eq(e2e_event_count(&E, "lost", "OwnershipApplied"), 0, "%s", d);
  char *ev = e2e_events(&E, "lost");
  cr_assert(strstr(ev, "Warning OwnershipFailed"), "%s", ev);
  free(ev);
  /* the copy itself is whole; only the handover is left to do by hand */
  e2e_assert_same(&E);
  char *owner = pgfx_query1(&E.dst, "shop", "SELECT tableowner FROM pg_tables WHERE "
                                            "schemaname = 'sales' AND tablename = 'orders'");
  cr_assert_str_eq(owner, "dst_app");
  free(owner);
  free(d);
}

/* Suspended while the handover runs: the reown Job, held on a lock the test takes on a table the
 * migration role owns on the target, is deleted with the suspension (OwnershipSuspended), and
 * runs again on resume, picking up what is left (seed 000). */
Test(migration_owner, a_handover_suspended_runs_again_on_resume)
{
  e2e_start(&E, NULL);
  e2e_load(&E, 2000);
  pgfx_exec(&E.dst, "postgres", "CREATE ROLE shop_owner NOLOGIN");
  /* an object of the migration role that the copy does not touch, and the handover does */
  pgfx_exec(&E.dst, "shop", "SET ROLE dst_app; CREATE TABLE public.held(id int)");
  PGconn *lock = pgfx_connect(&E.dst, "shop");
  PGresult *r = PQexec(lock, "BEGIN; LOCK TABLE public.held IN ACCESS SHARE MODE");
  cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(lock));
  PQclear(r);
  struct e2e_phases ph;
  e2e_phases_start(&ph, &E, "shop");
  e2e_apply(&E, OWNED_YAML, "shop");
  bool waiting = false;
  for(int i = 0; i < 1200 && !waiting; i++) {
    char *n = pgfx_query1(&E.dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE query "
                                          "ILIKE '%%held%%OWNER%%' AND wait_event_type = 'Lock'");
    waiting = atoi(n) > 0;
    free(n);
    if(!waiting)
      e2e_sleep_ms(100);
  }
  char *d = e2e_describe(&E, "shop");
  cr_assert(waiting, "the handover never waited on public.held:\n%s", d);
  free(d);
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch migration shop --type merge -p "
                                     "'{\"spec\":{\"suspend\":true}}'"), 0);
  bool suspended = e2e_wait_cond(&E, "shop", "OwnershipApplied", "Unknown", "OwnershipSuspended",
                                 30000) && e2e_wait_phase(&E, "shop", "Suspended", 30000);
  d = e2e_describe(&E, "shop");
  cr_assert(suspended, "%s", d);
  free(d);
  cr_assert(strstr(e2e_event_message(&E, "shop", "Suspended"), "the running handover Job"));
  long long end = e2e_mono_ms() + 30000;
  while(e2e_job_exists(&E, "shop", "shop-reown") && e2e_mono_ms() < end)
    e2e_sleep_ms(100);
  cr_assert_not(e2e_job_exists(&E, "shop", "shop-reown"), "the handover Job was kept");
  r = PQexec(lock, "COMMIT");
  PQclear(r);
  PQfinish(lock);
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch migration shop --type merge -p "
                                     "'{\"spec\":{\"suspend\":false}}'"), 0);
  bool done = e2e_wait_cond(&E, "shop", "Complete", "True", "MigrationSucceeded", 120000) &&
              e2e_wait_event(&E, "shop", "Completed", 10000);
  e2e_phases_stop(&ph);
  d = e2e_describe(&E, "shop");
  cr_assert(done, "%s", d);
  cr_assert_str_eq(e2e_cond_reason(&E, "shop", "OwnershipApplied"), "OwnershipApplied", "%s", d);
  cr_assert(e2e_phases_saw_reason(&ph, "OwnershipApplied", "OwnershipRunning") &&
              e2e_phases_saw_reason(&ph, "OwnershipApplied", "OwnershipSuspended"),
            "%s", e2e_phases_reasons(&ph));
  char *owner = pgfx_query1(&E.dst, "shop", "SELECT tableowner FROM pg_tables WHERE tablename = "
                                            "'held'");
  cr_assert_str_eq(owner, "shop_owner");
  free(owner);
  e2e_assert_same(&E);
  free(d);
}
