/*
 * test_migration_unit.c: the pure pieces of the Migration controller (controller/migration/):
 * the phase transition table, the status edit (refused transitions, decisions made on another
 * object), the worker's command line per pgcopydb version, the filters file, the log-tail
 * classification and redaction, the catch-up counting, and the rendering of a runner Job
 * (labels, ownerReference, template digest, credentials only through secretKeyRef).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditions.h"
#include "json.h"
#include "migration/mig.h"
#include "podtemplate.h"
#include "redact.h"

/* ---- the phase machine ---- */

struct tr {
  const char *from, *to;
  bool ok;
};

/* Every pair of the documented table, and what it leaves out. */
static const struct tr table[] = {
  { "Pending", "Validating", true },      { "Pending", "Failed", true },
  { "Pending", "Suspended", true },       { "Pending", "Cloning", false },
  { "Pending", "Completed", false },      { "Validating", "Cloning", true },
  { "Validating", "Completed", true },    { "Validating", "Failed", true },
  { "Validating", "Suspended", true },    { "Validating", "Streaming", false },
  { "Validating", "Pending", false },     { "Cloning", "Finalizing", true },
  { "Cloning", "Streaming", true },       { "Cloning", "Completed", true },
  { "Cloning", "Failed", true },          { "Cloning", "Suspended", true },
  { "Cloning", "Verifying", false },      { "Cloning", "CutoverPending", false },
  { "Finalizing", "Streaming", true },    { "Finalizing", "Verifying", true },
  { "Finalizing", "Completed", true },    { "Finalizing", "Failed", true },
  { "Finalizing", "Suspended", true },    { "Finalizing", "Cloning", false },
  { "Streaming", "CutoverPending", true }, { "Streaming", "Failed", true },
  { "Streaming", "Suspended", true },     { "Streaming", "CuttingOver", false },
  { "Streaming", "Completed", false },    { "CutoverPending", "CuttingOver", true },
  { "CutoverPending", "Suspended", true }, { "CutoverPending", "Failed", true },
  { "CutoverPending", "Streaming", false }, { "CuttingOver", "Verifying", true },
  { "CuttingOver", "Completed", true },   { "CuttingOver", "Failed", true },
  { "CuttingOver", "Suspended", true },   { "CuttingOver", "Streaming", false },
  { "Verifying", "Completed", true },     { "Verifying", "Failed", true },
  { "Verifying", "Suspended", true },     { "Verifying", "Cloning", false },
  { "Completed", "Failed", false },       { "Completed", "Pending", false },
  { "Completed", "Suspended", false },    { "Failed", "Completed", false },
  { "Failed", "Suspended", false },       { "Failed", "Pending", false },
};

Test(migration_unit, transition_table)
{
  for(size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    enum mig_phase f = mig_phase_parse(table[i].from), t = mig_phase_parse(table[i].to);
    cr_assert_neq(f, MP_NONE, "%s", table[i].from);
    cr_assert_neq(t, MP_NONE, "%s", table[i].to);
    cr_assert_eq(phase_allowed(&mig_phases, f, t, MP_NONE), table[i].ok, "%s -> %s", table[i].from,
                 table[i].to);
  }
  /* counted exactly: the allowed pairs are the table's 30 (CutoverPending -> Failed: issue 17) */
  int allowed = 0;
  for(int f = 0; f < MP_COUNT; f++)
    for(int t = 0; t < MP_COUNT; t++)
      if(f != t && f != MP_SUSPENDED && phase_allowed(&mig_phases, f, t, MP_NONE))
        allowed++;
  cr_assert_eq(allowed, 30);
  /* the first observation, staying, resuming */
  cr_assert(phase_allowed(&mig_phases, MP_NONE, MP_PENDING, MP_NONE));
  cr_assert(!phase_allowed(&mig_phases, MP_NONE, MP_VALIDATING, MP_NONE));
  cr_assert(phase_allowed(&mig_phases, MP_CLONING, MP_CLONING, MP_NONE));
  for(int t = 0; t < MP_COUNT; t++)
    cr_assert_eq(phase_allowed(&mig_phases, MP_SUSPENDED, t, MP_STREAMING),
                 t == MP_STREAMING || t == MP_SUSPENDED, "Suspended -> %s",
                 mig_phase_name(t));
  cr_assert(!phase_allowed(&mig_phases, MP_SUSPENDED, MP_CLONING, MP_NONE));
  for(int p = 0; p < MP_COUNT; p++)
    cr_assert_eq(mig_phase_parse(mig_phase_name(p)), p);
  /* the names are the API's, in the order of the enum */
  cr_assert_null(migration_phases[MP_COUNT]);
  cr_assert_str_eq(mig_phase_name(MP_CUTOVER_PENDING), "CutoverPending");
  cr_assert_str_eq(mig_phase_name(MP_SUSPENDED), "Suspended");
  cr_assert_str_eq(mig_phase_name(MP_NONE), "");
}

Test(migration_unit, a_full_edit_table_is_a_bug_not_out_of_memory)
{
  struct status_edit ed;
  edit_init(&ed, &mig_phases);
  for(int i = 0; i < EDIT_MAX_FIELDS + 1; i++) {
    char path[32];
    snprintf(path, sizeof(path), "f%d", i);
    edit_set_int(&ed, path, i);
  }
  cr_assert_str_eq(ed.full, "fields");
  cr_assert_not(ed.oom);
  struct rec_ctx rc = { .key = "ns/m" };
  cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"m\"}}");
  cr_assert_eq(edit_commit(&ed, &rc, &o), GW_ETOOBIG, "nothing is written, and it says why");
  cr_assert_eq(ed.nfields, 0, "the queue is released");
  cJSON_Delete(o);
}

static cJSON *obj_with(const char *phase)
{
  char buf[512];
  snprintf(buf, sizeof(buf),
           "{\"metadata\":{\"name\":\"m\",\"generation\":3,\"resourceVersion\":\"7\"},"
           "\"status\":{\"phase\":\"%s\"}}", phase);
  return cJSON_Parse(buf);
}

Test(migration_unit, the_status_edit_refuses_what_the_table_refuses)
{
  struct mig m;
  memset(&m, 0, sizeof(m));
  edit_init(&m.ed, &mig_phases);
  edit_phase(&m.ed, MP_COMPLETED);
  edit_cond(&m.ed, C_COMPLETE, COND_TRUE, "MigrationSucceeded", "done");
  cJSON *o = obj_with("Streaming");
  bool changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_EINVAL, "Streaming -> Completed");
  cJSON_Delete(o);
  /* allowed: phase, condition with observedGeneration, startTime */
  o = obj_with("Verifying");
  changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_OK);
  cr_assert(changed);
  cr_assert_str_eq(json_get_str(o, "status.phase"), "Completed");
  cr_assert(cond_is_true(o, C_COMPLETE));
  const cJSON *c = cond_find(o, C_COMPLETE);
  cr_assert_eq(json_get(c, "observedGeneration")->valuedouble, 3);
  cr_assert_eq(json_get(o, "status.observedGeneration")->valuedouble, 3);
  cr_assert(m.ed.phase_changed && m.ed.conds[0].changed);
  /* applied again: nothing changes, and nothing counts as changed */
  changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_OK);
  cr_assert(!changed && !m.ed.phase_changed && !m.ed.conds[0].changed);
  cJSON_Delete(o);
  /* decided on another object: a conflict, decide again */
  m.ed.expect = MP_VERIFYING;
  snprintf(m.ed.expect_rv, sizeof(m.ed.expect_rv), "6");
  o = obj_with("Verifying");
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_ECONFLICT);
  cJSON_Delete(o);
  m.ed.expect_rv[0] = '\0';
  o = obj_with("Cloning");
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_ECONFLICT);
  cJSON_Delete(o);
  edit_release(&m.ed);
}

Test(migration_unit, resume_goes_back_to_suspended_from_only)
{
  struct mig m;
  memset(&m, 0, sizeof(m));
  edit_init(&m.ed, &mig_phases);
  edit_phase(&m.ed, MP_CUTOVER_PENDING);
  cJSON *o = cJSON_Parse("{\"metadata\":{\"generation\":1},\"status\":{\"phase\":\"Suspended\","
                         "\"suspendedFrom\":\"Streaming\"}}");
  bool changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_EINVAL);
  edit_phase(&m.ed, MP_STREAMING);
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_OK);
  cr_assert_str_eq(json_get_str(o, "status.phase"), "Streaming");
  cJSON_Delete(o);
  edit_release(&m.ed);
}

/* A failure decided in CutoverPending (a worker's permission error, the attempts spent, an
 * invalid spec) is written: Failed with its condition, not refused by the table (issue 17). */
Test(migration_unit, a_failure_in_cutover_pending_is_written)
{
  struct mig m;
  memset(&m, 0, sizeof(m));
  m.phase = MP_CUTOVER_PENDING;
  edit_init(&m.ed, &mig_phases);
  mig_fail(&m, "PermissionDenied", "attempt 2 of 7 hit a permission error retries cannot fix");
  cJSON *o = cJSON_Parse("{\"metadata\":{\"generation\":1},\"status\":{\"phase\":"
                         "\"CutoverPending\"}}");
  bool changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_OK);
  cr_assert(changed);
  cr_assert_str_eq(json_get_str(o, "status.phase"), "Failed");
  cr_assert(cond_is_true(o, "Failed"));
  cr_assert_str_eq(cond_reason(o, "Failed"), "PermissionDenied");
  cJSON_Delete(o);
  edit_release(&m.ed);
}

/* A condition carries the generation it was decided at: a write at a newer generation stamps
 * status.observedGeneration and the conditions it decided, not the others (issue 17; a
 * restamp of every condition hid which ones were stale). */
Test(migration_unit, a_condition_keeps_the_generation_it_was_decided_at)
{
  struct mig m;
  memset(&m, 0, sizeof(m));
  edit_init(&m.ed, &mig_phases);
  edit_cond(&m.ed, C_CUTOVER, COND_TRUE, "DrainVerified", "drained");
  cJSON *o = cJSON_Parse("{\"metadata\":{\"generation\":2},\"status\":{\"phase\":"
                         "\"CuttingOver\",\"observedGeneration\":1,\"conditions\":[{\"type\":"
                         "\"Validated\",\"status\":\"True\",\"reason\":\"SpecValid\","
                         "\"message\":\"ok\",\"observedGeneration\":1,"
                         "\"lastTransitionTime\":\"2026-12-01T00:00:00Z\"}]}}");
  bool changed = false;
  cr_assert_eq(edit_apply(&m.ed, o, "ns/m", &changed), GW_OK);
  cr_assert(changed);
  cr_assert_eq(json_get(o, "status.observedGeneration")->valuedouble, 2);
  cr_assert_eq(json_get(cond_find(o, C_CUTOVER), "observedGeneration")->valuedouble, 2);
  cr_assert_eq(json_get(cond_find(o, C_VALIDATED), "observedGeneration")->valuedouble, 1,
               "a condition this write did not decide was restamped");
  cr_assert(!cond_is_current(o, C_VALIDATED) && cond_is_current(o, C_CUTOVER));
  cJSON_Delete(o);
  edit_release(&m.ed);
}

/* ---- the worker's command line ---- */

static char *joined(cJSON *args)
{
  static char buf[2048];
  buf[0] = '\0';
  const cJSON *a;
  cJSON_ArrayForEach(a, args)
  {
    strcat(buf, buf[0] ? " " : "");
    strcat(buf, a->valuestring);
  }
  cJSON_Delete(args);
  return buf;
}

static char *args_plugin(const char *spec, const char *version, int attempt, bool restart,
                         const char *plugin)
{
  cJSON *s = cJSON_Parse(spec);
  cr_assert_not_null(s, "%s", spec);
  struct pgc_version v;
  mig_version_parse(version, &v);
  char *out = joined(mig_worker_args(s, &v, attempt, restart, "godwit_0a1b2c3d", plugin));
  cJSON_Delete(s);
  return out;
}

static char *args_of(const char *spec, const char *version, int attempt, bool restart)
{
  return args_plugin(spec, version, attempt, restart, "wal2json");
}

Test(migration_unit, worker_arguments_per_version)
{
  const char *clone = "{\"clone\":{\"tableJobs\":3,\"indexJobs\":2,\"skipVacuum\":true,"
                      "\"skipLargeObjects\":true}}";
  /* 0.10 knows neither --skip-vacuum nor --plugin: never a flag it does not know */
  cr_assert_str_eq(args_of(clone, "0.10-1", 1, false),
                   "clone --dir " MIG_WORK_DIR " --table-jobs 3 --index-jobs 2 --no-owner "
                   "--no-acl --skip-extensions --skip-large-objects");
  cr_assert_str_eq(args_of(clone, "0.18", 1, false),
                   "clone --dir " MIG_WORK_DIR " --table-jobs 3 --index-jobs 2 --no-owner "
                   "--no-acl --skip-extensions --skip-large-objects --skip-vacuum");
  /* every attempt after the first resumes; the snapshot died with the first */
  cr_assert_str_eq(args_of("{}", "0.10-1", 2, false),
                   "clone --dir " MIG_WORK_DIR " --table-jobs 4 --index-jobs 4 --no-owner "
                   "--no-acl --skip-extensions --resume --not-consistent");
  cr_assert_str_eq(args_of("{}", "0.10-1", 3, true),
                   "clone --dir " MIG_WORK_DIR " --table-jobs 4 --index-jobs 4 --no-owner "
                   "--no-acl --skip-extensions --restart --drop-if-exists");
  /* live */
  cr_assert_str_eq(args_of("{\"follow\":{}}", "0.10-1", 1, false),
                   "clone --follow --slot-name godwit_0a1b2c3d --origin godwit_0a1b2c3d --dir "
                   MIG_WORK_DIR " --table-jobs 4 --index-jobs 4 --no-owner --no-acl "
                   "--skip-extensions");
  cr_assert_str_eq(args_of("{\"follow\":{},\"clone\":{\"extensions\":[\"pg_trgm\"]}}", "0.17",
                           2, false),
                   "clone --follow --slot-name godwit_0a1b2c3d --origin godwit_0a1b2c3d "
                   "--plugin wal2json --dir " MIG_WORK_DIR " --table-jobs 4 --index-jobs 4 "
                   "--no-owner --no-acl --resume --not-consistent");
  /* an unknown version gets what every version knows */
  cr_assert_str_eq(args_of(clone, NULL, 1, false), args_of(clone, "0.10-1", 1, false));
}

/* The worker prologue's appname() (MIG_WORKER_APPNAME_SH) run by /bin/sh as the Pod runs it,
 * the connection string in the environment as the Secret puts it there. */
static char *appname_sh(const char *uri)
{
  setenv("GODWIT_FN", MIG_WORKER_APPNAME_SH, 1);
  setenv("GODWIT_URI", uri, 1);
  FILE *p = popen("PGAPPNAME=godwit-0a1b2c3d /bin/sh -c 'eval \"$GODWIT_FN\"; appname "
                  "\"$GODWIT_URI\"' 2>&1", "r");
  cr_assert_not_null(p);
  char out[1024] = "";
  size_t n = fread(out, 1, sizeof(out) - 1, p);
  out[n] = '\0';
  cr_assert_eq(pclose(p), 0, "appname failed: %s", out);
  unsetenv("GODWIT_FN");
  unsetenv("GODWIT_URI");
  return strdup(out);
}

/* application_name=$PGAPPNAME added to a connection string in each form a Secret may hold
 * (pgcopydb 0.15+ overwrite PGAPPNAME; a parameter of the string wins). */
Test(migration_unit, the_worker_names_its_sessions_in_the_connection_strings)
{
  static const char *const cases[][2] = {
    { "postgres://u:p@db:5432/shop", "postgres://u:p@db:5432/shop?application_name=godwit-0a1b2c3d" },
    { "postgresql://u:p@db/shop?sslmode=require",
      "postgresql://u:p@db/shop?sslmode=require&application_name=godwit-0a1b2c3d" },
    /* kubectl create secret --from-file keeps the file's newline */
    { "postgres://db/shop\n", "postgres://db/shop?application_name=godwit-0a1b2c3d" },
    { "host=db dbname=shop user=u", "host=db dbname=shop user=u application_name=godwit-0a1b2c3d" },
    /* not a connection string: left as it is, for pgcopydb to refuse */
    { "shop", "shop" },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *got = appname_sh(cases[i][0]);
    cr_expect_str_eq(got, cases[i][1], "from %s", cases[i][0]);
    free(got);
  }
}

/* The plugin the preflight chose (status.outputPlugin) reaches the worker wherever the version
 * takes --plugin; a Migration validated before the preflight chose keeps wal2json, the plugin
 * its slot was made with. */
Test(migration_unit, worker_decodes_with_the_plugin_the_preflight_chose)
{
  const char *live = "{\"follow\":{}}";
  cr_assert(strstr(args_plugin(live, "0.17", 1, false, "test_decoding"),
                   "--origin godwit_0a1b2c3d --plugin test_decoding --dir"));
  cr_assert(strstr(args_plugin(live, "0.12", 1, false, "test_decoding"), "--plugin test_decoding"));
  cr_assert(strstr(args_plugin(live, "0.17", 2, false, NULL), "--plugin wal2json --dir"));
  cr_assert(strstr(args_plugin(live, "0.17", 2, false, ""), "--plugin wal2json --dir"));
  /* 0.10 and 0.11 know no --plugin (0.10 would ignore it with a warning) */
  cr_assert_null(strstr(args_plugin(live, "0.10-1", 1, false, "wal2json"), "--plugin"));
  cr_assert_null(strstr(args_plugin(live, "0.11", 1, false, "wal2json"), "--plugin"));
  /* an unknown version is told wal2json, which every version decodes with, instead of its own
   * default (pgoutput in 0.18) */
  cr_assert(strstr(args_plugin(live, NULL, 1, false, "wal2json"), "--plugin wal2json --dir"));
  /* a clone has no plugin */
  cr_assert_null(strstr(args_plugin("{}", "0.17", 1, false, "test_decoding"), "--plugin"));
  /* filters */
  cr_assert(strstr(args_of("{\"clone\":{\"filters\":{\"excludeSchemas\":[\"tmp\"]}}}", "0.10", 1,
                           false), "--filters " MIG_FILTERS_FILE));
}

Test(migration_unit, versions)
{
  struct pgc_version v;
  mig_version_parse("0.10-1", &v);
  cr_assert(v.known && v.major == 0 && v.minor == 10);
  cr_assert(mig_version_at_least(&v, 0, 10) && !mig_version_at_least(&v, 0, 12));
  mig_version_parse("v0.18", &v);
  cr_assert(v.known && v.minor == 18 && mig_version_at_least(&v, 0, 15));
  mig_version_parse("", &v);
  cr_assert(!v.known && !mig_version_at_least(&v, 0, 0));
  mig_version_parse("dev", &v);
  cr_assert(!v.known);
}

Test(migration_unit, filters_file)
{
  cJSON *s = cJSON_Parse("{\"clone\":{\"filters\":{\"excludeSchemas\":[\"tmp\",\"scratch\"],"
                         "\"excludeTables\":[\"sales.\\\"Q1\\\"\"],"
                         "\"excludeTableData\":[\"audit.log\"],\"excludeIndexes\":[\"s.i\"]}}}");
  struct pgc_version v;
  mig_version_parse("0.10-1", &v);
  char *ini = mig_filters_ini(s, &v, false);
  cr_assert_str_eq(ini, "[exclude-schema]\ntmp\nscratch\n\n[exclude-table]\nsales.\"Q1\"\n\n"
                        "[exclude-index]\ns.i\n\n[exclude-table-data]\naudit.log\n");
  free(ini);
  cJSON_Delete(s);
  /* nothing to filter: no file at all (0.10 resets only owned sequences under a filter) */
  s = cJSON_Parse("{\"follow\":{}}");
  ini = mig_filters_ini(s, &v, true);
  cr_assert_str_eq(ini, "");
  free(ini);
  cJSON_Delete(s);
}

/* ---- the log tail ---- */

#define T010(level, msg) "12:47:08 22892 " level "  " msg "\n"

Test(migration_unit, permission_errors_are_classified)
{
  struct tail_verdict v;
  mig_classify_tail(T010("INFO", "STEP 3: restore the pre-data section to the target database")
                    T010("ERROR", "pg_restore: error: could not execute query: ERROR:  "
                                  "permission denied for database shop2")
                    T010("ERROR", "HINT:  Must be superuser to create a schema.")
                    T010("ERROR", "Command was: CREATE SCHEMA sales;")
                    T010("ERROR", "Failed to run pg_restore: exit code 1")
                    T010("FATAL", "Terminating all processes in our process group"),
                    &v);
  cr_assert_eq(v.cls, TAIL_PERMISSION);
  cr_assert(strstr(v.line, "permission denied for database shop2"), "%s", v.line);
  cr_assert(strstr(v.last_error, "Command was: CREATE SCHEMA sales;"), "%s", v.last_error);

  static const char *const perm[] = {
    T010("ERROR", "[SOURCE] ERROR:  must be superuser or replication role to use replication "
                  "slots"),
    T010("ERROR", "pg_restore: error: could not execute query: ERROR:  must be member of role "
                  "\"postgres\""),
    T010("ERROR", "[TARGET] ERROR:  permission denied for function pg_replication_origin_oid"),
    "2024-05-01 10:00:00.123 77 ERROR pgsql.c:123 [SOURCE] ERROR:  permission denied for "
    "table t\n",
    NULL,
  };
  for(int i = 0; perm[i]; i++) {
    mig_classify_tail(perm[i], &v);
    cr_assert_eq(v.cls, TAIL_PERMISSION, "%s", perm[i]);
  }
  /* not permissions: a password, a network error, an INFO line quoting SQL */
  static const char *const other[] = {
    T010("ERROR", "Connection to database failed: FATAL:  password authentication failed for "
                  "user \"src_app\""),
    T010("ERROR", "could not connect to server: Connection refused"),
    T010("INFO", "GRANT ... permission denied for whatever"),
    NULL,
  };
  for(int i = 0; other[i]; i++) {
    mig_classify_tail(other[i], &v);
    cr_assert_eq(v.cls, TAIL_NONE, "%s", other[i]);
  }
}

/* What a person must fix outside the Migration, named from the first line that says it. */
Test(migration_unit, causes_outside_the_migration_are_named)
{
  struct tail_verdict v;
  mig_classify_tail(T010("INFO", "STEP 4: starting 2 table-data COPY processes")
                    T010("ERROR", "[SOURCE 7123] server closed the connection unexpectedly")
                    T010("ERROR", "[TARGET] could not connect to server: Connection refused")
                    T010("ERROR", "Failed to run the COPY, see above for details"),
                    &v);
  cr_assert_eq(v.cause, CAUSE_UNREACHABLE);
  cr_assert(strstr(v.cause_line, "server closed the connection"), "the first: %s",
            v.cause_line);
  mig_classify_tail(T010("ERROR", "Failed to write file \"/var/lib/godwit/pgcopydb/schema/"
                                  "pre.dump\": No space left on device"),
                    &v);
  cr_assert_eq(v.cause, CAUSE_WORKDIR_FULL);
  mig_classify_tail(T010("ERROR", "[TARGET 55] ERROR:  could not extend file \"base/16384/"
                                  "16390\": No space left on device"),
                    &v);
  cr_assert_eq(v.cause, CAUSE_SERVER_DISK_FULL);
  static const char *const none[] = {
    T010("ERROR", "Connection to database failed: FATAL:  password authentication failed for "
                  "user \"src_app\""),
    T010("ERROR", "[TARGET] ERROR:  relation \"orders\" already exists"),
    T010("INFO", "could not connect to server: Connection refused"), /* not an error line */
    NULL,
  };
  for(int i = 0; none[i]; i++) {
    mig_classify_tail(none[i], &v);
    cr_assert_eq(v.cause, CAUSE_NONE, "%s", none[i]);
  }
}

Test(migration_unit, the_post_data_failure_of_a_resume_starts_over)
{
  struct tail_verdict v;
  mig_classify_tail(T010("INFO", "STEP 10: restore the post-data section to the target database")
                    T010("ERROR", "pg_restore: error: could not execute query: ERROR:  "
                                  "relation \"orders_pkey\" already exists")
                    T010("ERROR", "Command was: ALTER TABLE ONLY sales.orders")
                    T010("ERROR", "Failed to run pg_restore: exit code 1")
                    T010("ERROR", "Failed to clone source database, see above for details"),
                    &v);
  cr_assert_eq(v.cls, TAIL_RESTART);
  cr_assert(strstr(v.line, "orders_pkey"));
  /* a replication slot that exists is no reason to start over */
  mig_classify_tail(T010("INFO", "post-data") T010("ERROR", "Failed to create replication slot "
                                                          "\"pgcopydb\": already exists"),
                    &v);
  cr_assert_eq(v.cls, TAIL_NONE);
  /* the benign pg_restore warnings 0.10 logs at ERROR are not the last error */
  mig_classify_tail(T010("ERROR", "pg_restore: warning: line ignored: \"sequences\": [")
                    T010("ERROR", "[TARGET] ERROR:  database \"nosuchdb\" does not exist")
                    T010("ERROR", "Failed to run pg_restore: exit code 1"),
                    &v);
  cr_assert(strstr(v.last_error, "nosuchdb"), "%s", v.last_error);
}

Test(migration_unit, redaction)
{
  /* 0.10 prints the source URI with its password after a failed login */
  char *s = redact_cut("FATAL Failed to export a snapshot on "
                       "\"postgres://src_app:S3cret-pw@127.0.0.1:5432/shop\"; password=hunter2 x",
                       4096, NULL, 0, NULL);
  cr_assert_null(strstr(s, "S3cret-pw"), "%s", s);
  cr_assert_null(strstr(s, "hunter2"), "%s", s);
  cr_assert(strstr(s, "postgres://src_app:***@127.0.0.1"), "%s", s);
  free(s);
  s = redact_cut("0123456789abcdef", 10, NULL, 0, NULL);
  cr_assert_str_eq(s, "0123456...");
  free(s);
}

Test(migration_unit, fatal_exit_and_base_copy_markers)
{
  cr_assert(mig_tail_fatal_exit(T010("INFO", "Replaying changes")
                                  T010("FATAL", "Failed to receive changes")));
  cr_assert(!mig_tail_fatal_exit(T010("FATAL", "x") T010("INFO", "Replaying changes")));
  cr_assert(!mig_tail_fatal_exit(""));
  cr_assert(mig_tail_base_copy_done(
    T010("INFO", "Updating the pgcopydb.sentinel to enable applying changes")));
  cr_assert(!mig_tail_base_copy_done(T010("INFO", "COPY phase is done")));
}

/* A container's exit code 128 + N says signal N: a crash of pgcopydb (whose 0.10 may have
 * marked a failed COPY done first) only for the signals of a fault, not for a kill. */
Test(migration_unit, crash_signals_from_exit_codes)
{
  cr_assert_str_eq(mig_crash_signal(128 + SIGSEGV), "SIGSEGV");
  cr_assert_str_eq(mig_crash_signal(128 + SIGABRT), "SIGABRT");
  cr_assert_str_eq(mig_crash_signal(128 + SIGBUS), "SIGBUS");
  cr_assert_null(mig_crash_signal(128 + SIGKILL), "a kill (OOM, deleted Pod) is no crash");
  cr_assert_null(mig_crash_signal(128 + SIGTERM));
  cr_assert_null(mig_crash_signal(1));
  cr_assert_null(mig_crash_signal(SIGSEGV), "exit(11) is an exit, not a signal");
  cr_assert_null(mig_crash_signal(0));
}

/* ---- catch-up ---- */

Test(migration_unit, catch_up_needs_two_consecutive_samples)
{
  const int64_t max = 1000;
  int n = 0;
  n = mig_catchup_next(n, false, -1, max);
  cr_assert_eq(n, 0);
  cr_assert_str_eq(mig_catchup_reason(n), "Lagging");
  n = mig_catchup_next(n, true, 999, max);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(mig_catchup_reason(n), "ConfirmingCatchUp");
  n = mig_catchup_next(n, true, 5000, max); /* above: the count starts over */
  cr_assert_eq(n, 0);
  cr_assert_str_eq(mig_catchup_reason(n), "Lagging");
  n = mig_catchup_next(n, true, 1000, max); /* "at or below" */
  n = mig_catchup_next(n, true, 0, max);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(mig_catchup_reason(n), "LagBelowThreshold");
  n = mig_catchup_next(n, false, -1, max); /* no sample: not caught up */
  cr_assert_eq(n, 0);
  cr_assert_eq(mig_catchup_next(0, true, 0, 0), 1, "maxCatchupLag 0: exactly no lag");
  cr_assert_eq(mig_catchup_next(1, true, 1, 0), 0);
}

/* ---- a runner Job ---- */

Test(migration_unit, a_rendered_job)
{
  static const struct migration_opts o = { .runner_image = "r/godwit:1" };
  cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"shop\",\"namespace\":\"prod\","
                           "\"uid\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\"},"
                           "\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"s\","
                           "\"key\":\"uri\"}},\"target\":{\"connectionSecretRef\":{\"name\":\"d\"}},"
                           "\"superuserSecretRef\":{\"name\":\"su\",\"key\":\"k\"}}}");
  struct rec_ctx rc = { .ns = "prod", .name = "shop", .key = "prod/shop" };
  struct mig m;
  mig_init(&m, &rc, &o, obj);
  cr_assert_str_eq(m.appname, "godwit-0a1b2c3d");
  cr_assert_str_eq(m.slot, "godwit_0a1b2c3d");
  static const char *const cmd[] = { "godwit-runner", NULL };
  cJSON *args = cJSON_CreateArray();
  cJSON_AddItemToArray(args, cJSON_CreateString("preflight"));
  struct job_spec s = { .step = "preflight", .attempt = 2, .image = "r/godwit:1",
                        .container = "runner", .command = cmd, .args = args, .source = true,
                        .target = true, .superuser = true };
  cJSON *job = mig_job_render(&m, &s);
  cr_assert_not_null(job);
  cr_assert_str_eq(json_get_str(job, "metadata.name"), "shop-preflight-2");
  const cJSON *l = json_get(job, "metadata.labels");
  cr_assert_str_eq(cJSON_GetObjectItem(l, "godwit.dev/migration")->valuestring, "shop");
  cr_assert_str_eq(cJSON_GetObjectItem(l, "godwit.dev/step")->valuestring, "preflight");
  cr_assert_str_eq(cJSON_GetObjectItem(l, "godwit.dev/attempt")->valuestring, "2");
  cr_assert_str_eq(cJSON_GetObjectItem(l, "app.kubernetes.io/managed-by")->valuestring,
                   "godwit");
  const cJSON *ref = cJSON_GetArrayItem(json_get(job, "metadata.ownerReferences"), 0);
  cr_assert_str_eq(json_get_str(ref, "kind"), "Migration");
  cr_assert_str_eq(json_get_str(ref, "uid"), "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
  cr_assert(json_get_bool(ref, "controller", false) && json_get_bool(ref, "blockOwnerDeletion",
                                                                     false));
  cr_assert_eq(json_get(job, "spec.backoffLimit")->valuedouble, 0);
  const cJSON *tpl = json_get(job, "spec.template");
  cr_assert_str_eq(json_get_str(tpl, "spec.restartPolicy"), "Never");
  const cJSON *tl = json_get(tpl, "metadata.labels");
  cr_assert_str_eq(cJSON_GetObjectItem(tl, PODTEMPLATE_RUNNER_LABEL)->valuestring, "migration");
  const char *digest = cJSON_GetObjectItem(json_get(tpl, "metadata.annotations"),
                                           PODTEMPLATE_DIGEST_ANNOTATION)->valuestring;
  char want[80];
  cr_assert_eq(podtemplate_digest(tpl, want, sizeof(want)), GW_OK);
  cr_assert_str_eq(digest, want, "the digest covers the template as rendered");
  const cJSON *env = json_get(cJSON_GetArrayItem(json_get(tpl, "spec.containers"), 0), "env");
  cr_assert_eq(cJSON_GetArraySize(env), 3);
  const cJSON *e;
  cJSON_ArrayForEach(e, env)
  {
    cr_assert_null(json_get(e, "value"), "credentials only through secretKeyRef");
    cr_assert_not_null(json_get(e, "valueFrom.secretKeyRef.name"));
  }
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(env, 1), "valueFrom.secretKeyRef.key"),
                   "uri", "the key defaults to uri");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(env, 2), "name"), "GODWIT_SUPERUSER_URI");
  cJSON_Delete(job);
  mig_release(&m);
}

/* spec.worker shapes every runner Pod: service account, labels and annotations (godwit's own
 * keys win), node selector, tolerations, pull secrets; the digest the runner-Pod guard checks
 * covers what was rendered (issue 12). */
Test(migration_unit, a_rendered_job_carries_the_runner_pod_settings)
{
  static const struct migration_opts o = { .runner_image = "r/godwit:1" };
  cJSON *obj = cJSON_Parse(
    "{\"metadata\":{\"name\":\"shop\",\"namespace\":\"prod\",\"uid\":\"0a1b2c3d-4e5f\"},"
    "\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"s\"}},\"target\":{"
    "\"connectionSecretRef\":{\"name\":\"d\"}},\"worker\":{\"serviceAccountName\":\"copier\","
    "\"podMetadata\":{\"labels\":{\"team\":\"data\",\"godwit.dev/step\":\"forged\"},"
    "\"annotations\":{\"sidecar.istio.io/inject\":\"false\"}},"
    "\"nodeSelector\":{\"pool\":\"db\"},"
    "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"db\","
    "\"effect\":\"NoSchedule\"}],\"imagePullSecrets\":[{\"name\":\"regcred\"}]}}}");
  struct rec_ctx rc = { .ns = "prod", .name = "shop", .key = "prod/shop" };
  struct mig m;
  mig_init(&m, &rc, &o, obj);
  static const char *const cmd[] = { "godwit-runner", NULL };
  cJSON *args = cJSON_CreateArray();
  struct job_spec js = { .step = "catalog", .attempt = 1, .image = "r/godwit:1",
                         .container = "runner", .command = cmd, .args = args };
  cJSON *job = mig_job_render(&m, &js);
  cr_assert_not_null(job);
  const cJSON *tpl = json_get(job, "spec.template");
  cr_assert_str_eq(json_get_str(tpl, "spec.serviceAccountName"), "copier");
  const cJSON *tl = json_get(tpl, "metadata.labels");
  cr_assert_str_eq(cJSON_GetObjectItem(tl, "team")->valuestring, "data");
  cr_assert_str_eq(cJSON_GetObjectItem(tl, "godwit.dev/step")->valuestring, "catalog",
                   "godwit's own label wins");
  const cJSON *ta = json_get(tpl, "metadata.annotations");
  cr_assert_str_eq(cJSON_GetObjectItem(ta, "sidecar.istio.io/inject")->valuestring, "false");
  cr_assert_str_eq(json_get_str(tpl, "spec.nodeSelector.pool"), "db");
  const cJSON *t0 = cJSON_GetArrayItem(json_get(tpl, "spec.tolerations"), 0);
  cr_assert_str_eq(json_get_str(t0, "key"), "dedicated");
  cr_assert_str_eq(json_get_str(t0, "effect"), "NoSchedule");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(json_get(tpl, "spec.imagePullSecrets"), 0),
                                "name"), "regcred");
  /* a step's container declares its resources, so a ResourceQuota that requires them admits it */
  const cJSON *ctr = cJSON_GetArrayItem(json_get(tpl, "spec.containers"), 0);
  cr_assert_str_eq(json_get_str(ctr, "resources.requests.cpu"), "100m");
  cr_assert_str_eq(json_get_str(ctr, "resources.limits.memory"), "1Gi");
  char want[80];
  cr_assert_eq(podtemplate_digest(tpl, want, sizeof(want)), GW_OK);
  cr_assert_str_eq(cJSON_GetObjectItem(ta, PODTEMPLATE_DIGEST_ANNOTATION)->valuestring, want);
  cJSON_Delete(job);
  mig_release(&m);
}

/* The command line of a resumed live run with 0.10 (pure functions, no cluster): the sentinel
 * table its first run created on the source is listed by the resumed run's catalog queries and
 * its COPY fails on the target, so the pgcopydb schema is excluded; not on a first run, not for
 * a clone, not with 0.15+ (its catalogs keep the first run's table list and refuse changed
 * filters). */
static char *joined_args_of(const char *spec_json, const char *version, int attempt)
{
  cJSON *spec = cJSON_Parse(spec_json);
  struct pgc_version v;
  mig_version_parse(version, &v);
  cJSON *a = mig_worker_args(spec, &v, attempt, false, "godwit_0a1b2c3d", "wal2json");
  char *out = cJSON_PrintUnformatted(a);
  cJSON_Delete(a);
  cJSON_Delete(spec);
  return out;
}

static char *ini_of(const char *spec_json, const char *version, bool used)
{
  cJSON *spec = cJSON_Parse(spec_json);
  struct pgc_version v;
  mig_version_parse(version, &v);
  char *out = mig_filters_ini_run(spec, &v, cJSON_IsObject(json_get(spec, "follow")), used);
  cJSON_Delete(spec);
  return out;
}

Test(migration_unit, a_resumed_live_run_of_0_10_leaves_the_sentinel_schema_out)
{
  char *a = joined_args_of("{\"follow\":{}}", "0.10-1", 2);
  cr_assert(strstr(a, "\"--filters\"") && strstr(a, "\"--resume\""), "%s", a);
  cJSON_free(a);
  a = joined_args_of("{\"follow\":{}}", "0.10-1", 1);
  cr_assert_null(strstr(a, "--filters"), "a first run filters nothing: %s", a);
  cJSON_free(a);
  a = joined_args_of("{}", "0.10-1", 2);
  cr_assert_null(strstr(a, "--filters"), "a clone has no sentinel: %s", a);
  cJSON_free(a);
  a = joined_args_of("{\"follow\":{}}", "0.17", 2);
  cr_assert_null(strstr(a, "--filters"), "0.17 refuses changed filters on resume: %s", a);
  cJSON_free(a);

  char *ini = ini_of("{\"follow\":{}}", "0.10-1", true);
  cr_assert_str_eq(ini, "[exclude-schema]\npgcopydb\n");
  free(ini);
  ini = ini_of("{\"follow\":{},\"clone\":{\"filters\":{\"excludeSchemas\":[\"tmp\"]}}}", "0.10-1",
               true);
  cr_assert_str_eq(ini, "[exclude-schema]\ntmp\npgcopydb\n");
  free(ini);
  ini = ini_of("{\"follow\":{},\"clone\":{\"filters\":{\"excludeSchemas\":[\"pgcopydb\"]}}}",
               "0.10-1", true);
  cr_assert_str_eq(ini, "[exclude-schema]\npgcopydb\n", "not twice");
  free(ini);
  ini = ini_of("{\"follow\":{},\"clone\":{\"filters\":{\"includeOnlyTables\":[\"a.b\"]}}}",
               "0.10-1", true);
  cr_assert_str_eq(ini, "[include-only-table]\na.b\n", "only listed tables are copied anyway");
  free(ini);
}
