/*
 * test_runner_preflight.c: godwit-runner preflight against real PostgreSQL 15 servers
 * (tests/pg/pgfixture.h), run as the controller's Job runs it: credentials in the environment,
 * the report in a file, the exit code. Every run also checks that no password or URI appears in
 * stdout, stderr or the report, and that the report is valid JSON of at most 4096 bytes.
 */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "pgfixture.h"

#define SRC_PW "Src-Secret-7319"
#define DST_PW "Dst-Secret-4482"
#define ADMIN_PW "Admin-Secret-9051"

struct run {
  int code;
  char *out;    /* stdout and stderr */
  char *report; /* the report file */
  cJSON *json;
};

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  if(!f)
    return strdup("");
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static const char *runner(void)
{
  static char path[512];
  const char *b = getenv("GODWIT_BUILD");
  snprintf(path, sizeof(path), "%s/godwit-runner", b && *b ? b : "build");
  return path;
}

/* Runs the preflight with the three URIs (NULL: unset) and extra arguments (NULL-terminated). */
static void preflight(struct run *r, const char *src, const char *dst, const char *su,
                      const char *const *args)
{
  char dir[] = "/tmp/godwit-pft-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char out[300], rep[300];
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(rep, sizeof(rep), "%s/report.json", dir);
  const char *argv[64] = { runner(), "preflight", "--report", rep, "--retry-delay-ms", "100",
                           "--connect-timeout", "2", "--attempts", "3" };
  int argc = 10;
  for(const char *const *a = args; a && *a && argc < 62; a++)
    argv[argc++] = *a;
  argv[argc] = NULL;
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    unsetenv("GODWIT_SOURCE_URI");
    unsetenv("GODWIT_TARGET_URI");
    unsetenv("GODWIT_SUPERUSER_URI");
    if(src)
      setenv("GODWIT_SOURCE_URI", src, 1);
    if(dst)
      setenv("GODWIT_TARGET_URI", dst, 1);
    if(su)
      setenv("GODWIT_SUPERUSER_URI", su, 1);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "the runner crashed");
  r->code = WEXITSTATUS(st);
  r->out = slurp(out);
  r->report = slurp(rep);
  unlink(out);
  unlink(rep);
  rmdir(dir);
  cr_log_info("runner exit %d\n%s\nreport: %s", r->code, r->out, r->report);
  cr_assert_leq(strlen(r->report), 4096, "report of %zu bytes", strlen(r->report));
  char err[256];
  cr_assert_eq(json_parse_strict(r->report, strlen(r->report), &r->json, err, sizeof(err)), 0,
               "report is not JSON: %s", err);
  const char *secrets[] = { SRC_PW, DST_PW, ADMIN_PW, "@127.0.0.1", "@unused", src, dst, su,
                            NULL };
  for(const char *const *s = secrets; s < secrets + 8; s++) {
    if(!*s || !**s)
      continue;
    cr_assert_null(strstr(r->out, *s), "\"%s\" leaked to the output", *s);
    cr_assert_null(strstr(r->report, *s), "\"%s\" leaked to the report", *s);
  }
}

static void run_free(struct run *r)
{
  free(r->out);
  free(r->report);
  cJSON_Delete(r->json);
}

static const char *jstr(const struct run *r, const char *path)
{
  const char *s = json_get_str(r->json, path);
  return s ? s : "";
}

/* The statements of report.<key>.<tier>, joined with "\n". */
static void statements(const struct run *r, const char *key, const char *tier, char *buf,
                       size_t len)
{
  char path[64];
  snprintf(path, sizeof(path), "%s.%s", key, tier);
  buf[0] = '\0';
  const cJSON *a = json_get(r->json, path), *e;
  cr_assert(cJSON_IsArray(a), "%s is not an array", path);
  cJSON_ArrayForEach(e, a)
  {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s: %s\n", json_get_str(e, "on"), json_get_str(e, "sql"));
  }
}

/* A source with a shop database: public.customers and sales.orders with primary keys, read by
 * role src_app; a target with an empty shop database; role dst_app on the target. */
struct pair {
  struct pgfx src, dst;
  char src_uri[256], dst_uri[256], su_uri[256];
};

static void pair_start_src(struct pair *p, const struct pgfx_opts *src, bool dst_owns_db)
{
  pgfx_start(&p->src, src);
  pgfx_start(&p->dst, NULL);
  pgfx_create_role(&p->src, "src_app", SRC_PW, "LOGIN");
  pgfx_create_db(&p->src, "shop", NULL);
  pgfx_exec(&p->src, "shop",
            "CREATE SCHEMA sales;"
            "CREATE TABLE public.customers(id serial PRIMARY KEY, name text);"
            "CREATE TABLE sales.orders(id bigserial PRIMARY KEY, customer int, amount numeric);"
            "INSERT INTO public.customers(name) SELECT 'c' || g FROM generate_series(1, 10) g;"
            "GRANT USAGE ON SCHEMA sales TO src_app;"
            "GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO src_app;"
            "GRANT SELECT ON ALL SEQUENCES IN SCHEMA public, sales TO src_app;");
  pgfx_create_role(&p->dst, "dst_app", DST_PW, "LOGIN");
  pgfx_create_db(&p->dst, "shop", dst_owns_db ? "dst_app" : NULL);
  /* One superuser, the same credentials on both servers, as one Secret would hold. */
  pgfx_create_role(&p->src, "godwit_admin", ADMIN_PW, "LOGIN SUPERUSER");
  pgfx_create_role(&p->dst, "godwit_admin", ADMIN_PW, "LOGIN SUPERUSER");
  pgfx_uri(&p->src, p->src_uri, sizeof(p->src_uri), "src_app", SRC_PW, "shop");
  pgfx_uri(&p->dst, p->dst_uri, sizeof(p->dst_uri), "dst_app", DST_PW, "shop");
  /* Host and database of the superuser URI are not used: each side's come from its own URI. */
  snprintf(p->su_uri, sizeof(p->su_uri),
           "postgres://godwit_admin:" ADMIN_PW "@unused.invalid:1/unused");
}

/* A logical source allows wal2json, as its admin does for pgcopydb 0.10 where the server has
 * output_plugin_libraries (docs/api/migration.md); the output plugin tests start their own. */
static void pair_start(struct pair *p, bool logical, bool dst_owns_db)
{
  pair_start_src(p, &(struct pgfx_opts){ .logical = logical, .allow_plugins = "wal2json" },
                 dst_owns_db);
}

/* What the follow tier needs, granted by hand. */
static void grant_follow(struct pair *p)
{
  pgfx_exec(&p->src, "shop", "ALTER ROLE src_app REPLICATION; GRANT CREATE ON DATABASE shop TO "
                             "src_app");
  pgfx_exec(&p->dst, "shop",
            "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT oid FROM pg_proc WHERE proname "
            "LIKE 'pg_replication_origin%%' LOOP EXECUTE format('GRANT EXECUTE ON FUNCTION %%s TO "
            "dst_app', f); END LOOP; END $$;"
            "GRANT SET ON PARAMETER session_replication_role TO dst_app");
}

static void pair_stop(struct pair *p)
{
  pgfx_stop(&p->src);
  pgfx_stop(&p->dst);
}

static bool yes(struct pgfx *pg, const char *db, const char *sql)
{
  char *v = pgfx_query1(pg, db, "%s", sql);
  bool t = v && !strcmp(v, "t");
  free(v);
  return t;
}

Test(runner_preflight, clone_only_passes, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, NULL);
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "result"), "Passed");
  cr_expect_null(json_get(r.json, "failed"));
  cr_expect_str_eq(jstr(&r, "pgcopydb.version"), "0.10-1");
  cr_expect_eq(json_get(r.json, "servers.source.versionNum")->valueint / 10000, 15);
  cr_expect_gt(json_get(r.json, "checks.passed")->valueint, 5);
  cr_expect_eq(cJSON_GetArraySize(json_get(r.json, "remediated.clone")), 0);
  cr_expect_not_null(strstr(r.out, "PASS target.createSchemas"));
  cr_expect_not_null(strstr(r.out, "source (127.0.0.1:"), "servers are named without secrets");
  cr_expect_null(strstr(r.out, "source.walLevel"), "no follow check without --follow");
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, live_passes_with_follow_prerequisites, .timeout = 90)
{
  struct pair p;
  pair_start(&p, true, true);
  grant_follow(&p);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "result"), "Passed");
  for(const char *const *id = (const char *[]){ "source.walLevel", "source.replicationSlots",
                                               "source.replicationRole", "source.outputPlugin",
                                               "source.sentinel", "source.replicaIdentity",
                                               "target.replicationOrigin",
                                               "target.sessionReplicationRole", NULL };
      *id; id++) {
    char line[96];
    snprintf(line, sizeof(line), "PASS %s:", *id);
    cr_expect_not_null(strstr(r.out, line), "missing %s", line);
  }
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "wal2json", "pgcopydb 0.10's only plugin");
  char *slots = pgfx_query1(&p.src, NULL, "SELECT count(*) FROM pg_replication_slots");
  cr_expect_str_eq(slots, "0", "the plugin probe's temporary slot is gone");
  free(slots);
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, wrong_password_fails_connectivity, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  char bad[256];
  pgfx_uri(&p.src, bad, sizeof(bad), "src_app", "Wrong-Secret-1234", "shop");
  struct run r;
  preflight(&r, bad, p.dst_uri, p.su_uri, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "result"), "Failed");
  cr_expect_str_eq(jstr(&r, "failed.id"), "source.connect");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "password authentication failed"));
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "user src_app"));
  cr_expect_null(strstr(r.out, "Wrong-Secret-1234"));
  cr_expect_null(strstr(r.report, "Wrong-Secret-1234"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, unknown_database_fails, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  char uri[256];
  pgfx_uri(&p.dst, uri, sizeof(uri), "dst_app", DST_PW, "nosuchdb");
  struct run r;
  preflight(&r, p.src_uri, uri, NULL, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.connect");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "database \"nosuchdb\" does not exist"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, unreachable_server_is_transient, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  struct run r;
  preflight(&r, p.src_uri, "postgres://dst_app:" DST_PW "@127.0.0.1:1/shop", NULL,
            (const char *[]){ "--attempts", "2", NULL });
  cr_expect_eq(r.code, 2);
  cr_expect_str_eq(jstr(&r, "result"), "Transient");
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.connect");
  run_free(&r);
  pair_stop(&p);
}

static const char *const grant_db = "target: GRANT CREATE ON DATABASE \"shop\" TO \"dst_app\"";
static const char *const grant_public = "target: GRANT CREATE ON SCHEMA \"public\" TO \"dst_app\"";

Test(runner_preflight, target_without_create_fails_with_the_grant, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, false);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.createDatabase");
  const char *rec = jstr(&r, "failed.recovery");
  cr_expect_not_null(strstr(rec, "GRANT CREATE ON DATABASE \"shop\" TO \"dst_app\""), "%s", rec);
  cr_expect_not_null(strstr(rec, "superuserSecretRef"));
  cr_expect_not_null(strstr(r.out, "FAIL target.createSchemas"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, target_without_create_is_remediated, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, false);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, NULL);
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "result"), "Passed");
  char buf[2048];
  statements(&r, "remediated", "clone", buf, sizeof(buf));
  cr_expect_not_null(strstr(buf, grant_db), "%s", buf);
  cr_expect_not_null(strstr(buf, grant_public), "%s", buf);
  statements(&r, "remediated", "follow", buf, sizeof(buf));
  cr_expect_str_eq(buf, "");
  cr_expect_not_null(strstr(r.out, "re-running the checks"));
  cr_expect(yes(&p.dst, "shop", "SELECT has_database_privilege('dst_app', 'shop', 'CREATE')"));
  cr_expect(yes(&p.dst, "shop", "SELECT has_schema_privilege('dst_app', 'public', 'CREATE')"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, dry_run_lists_and_applies_nothing, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, false);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--dry-run", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "result"), "Passed");
  cr_expect(cJSON_IsTrue(json_get(r.json, "dryRun")));
  char buf[2048];
  statements(&r, "wouldRemediate", "clone", buf, sizeof(buf));
  cr_expect_not_null(strstr(buf, grant_db), "%s", buf);
  cr_expect_not_null(strstr(buf, grant_public), "%s", buf);
  statements(&r, "remediated", "clone", buf, sizeof(buf));
  cr_expect_str_eq(buf, "");
  cr_expect_not_null(strstr(jstr(&r, "summary"), "would be applied"));
  cr_expect_not(yes(&p.dst, "shop", "SELECT has_database_privilege('dst_app', 'shop', 'CREATE')"));
  cr_expect_not(yes(&p.dst, "shop", "SELECT has_schema_privilege('dst_app', 'public', 'CREATE')"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, follow_without_replication_is_remediated, .timeout = 90)
{
  struct pair p;
  pair_start(&p, true, true);
  grant_follow(&p);
  pgfx_exec(&p.src, NULL, "ALTER ROLE src_app NOREPLICATION");
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "result"), "Passed");
  char buf[2048];
  statements(&r, "remediated", "follow", buf, sizeof(buf));
  cr_expect_str_eq(buf, "source: ALTER ROLE \"src_app\" REPLICATION\n");
  statements(&r, "remediated", "clone", buf, sizeof(buf));
  cr_expect_str_eq(buf, "");
  cr_expect(yes(&p.src, NULL, "SELECT rolreplication FROM pg_roles WHERE rolname = 'src_app'"));
  cr_expect_not_null(strstr(r.out, "PASS source.outputPlugin"), "probed after the grant");
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, follow_tier_grants_on_both_sides, .timeout = 90)
{
  struct pair p;
  pair_start(&p, true, true);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 0);
  char buf[4096];
  statements(&r, "remediated", "follow", buf, sizeof(buf));
  cr_expect_not_null(strstr(buf, "source: ALTER ROLE \"src_app\" REPLICATION"), "%s", buf);
  cr_expect_not_null(strstr(buf, "source: GRANT CREATE ON DATABASE \"shop\" TO \"src_app\""));
  cr_expect_not_null(strstr(buf, "target: GRANT EXECUTE ON FUNCTION "
                                 "pg_catalog.pg_replication_origin_session_setup(text) TO "
                                 "\"dst_app\""));
  cr_expect_not_null(strstr(buf, "target: GRANT SET ON PARAMETER session_replication_role TO "
                                 "\"dst_app\""));
  cr_expect(yes(&p.dst, "shop", "SELECT has_function_privilege('dst_app', "
                                "'pg_replication_origin_oid(text)', 'EXECUTE')"));
  cr_expect(yes(&p.dst, "shop", "SELECT has_parameter_privilege('dst_app', "
                                "'session_replication_role', 'SET')"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, wal_level_replica_fails_unremediated, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  grant_follow(&p);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "source.walLevel");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "wal_level is replica"));
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"), "ALTER SYSTEM SET wal_level = logical"));
  cr_expect_null(strstr(jstr(&r, "failed.recovery"), "superuserSecretRef"));
  char buf[2048];
  statements(&r, "remediated", "follow", buf, sizeof(buf));
  cr_expect_str_eq(buf, "", "nothing applied when a failure is not a grant");
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, table_without_replica_identity_fails, .timeout = 90)
{
  struct pair p;
  pair_start(&p, true, true);
  grant_follow(&p);
  pgfx_exec(&p.src, "shop", "CREATE TABLE sales.nopk(a int, b text); "
                            "GRANT SELECT ON sales.nopk TO src_app");
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "source.replicaIdentity");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "sales.nopk"));
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"),
                            "ALTER TABLE \"sales\".\"nopk\" REPLICA IDENTITY FULL"));
  run_free(&r);
  /* Out of scope, it no longer matters. */
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--exclude-table", "\"sales\".\"nopk\"", NULL });
  cr_expect_eq(r.code, 0);
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--exclude-schema", "sales", NULL });
  cr_expect_eq(r.code, 0);
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, owner_after_restore_membership_is_remediated, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  pgfx_create_role(&p.dst, "shop_owner", NULL, "NOLOGIN");
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--owner-after-restore", "shop_owner", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.ownerAfterRestore");
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"), "GRANT \"shop_owner\" TO \"dst_app\""));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri,
            (const char *[]){ "--owner-after-restore", "shop_owner", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect(yes(&p.dst, NULL, "SELECT pg_has_role('dst_app', 'shop_owner', 'MEMBER')"));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--owner-after-restore", "nobody_here", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "does not exist on the target"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, report_stays_within_4096_bytes, .timeout = 120)
{
  struct pair p;
  pair_start(&p, false, false);
  /* 150 schemas with long names on both sides, none writable by dst_app: 150 grants. */
  pgfx_exec(&p.src, "shop",
            "DO $$ BEGIN FOR i IN 1..150 LOOP EXECUTE format('CREATE SCHEMA %%I; "
            "GRANT USAGE ON SCHEMA %%1$I TO src_app', "
            "'a_rather_long_schema_name_for_the_report_budget_' || i); END LOOP; END $$");
  pgfx_exec(&p.dst, "shop",
            "DO $$ BEGIN FOR i IN 1..150 LOOP EXECUTE format('CREATE SCHEMA %%I', "
            "'a_rather_long_schema_name_for_the_report_budget_' || i); END LOOP; END $$");
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.createDatabase");
  run_free(&r);
  pgfx_exec(&p.dst, NULL, "GRANT CREATE ON DATABASE shop TO dst_app");
  preflight(&r, p.src_uri, p.dst_uri, NULL, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.createSchemas");
  cr_expect(cJSON_IsTrue(json_get(r.json, "truncated")), "151 statements are cut");
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"), "superuserSecretRef"));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, NULL);
  cr_expect_eq(r.code, 0);
  cr_expect(cJSON_IsTrue(json_get(r.json, "truncated")));
  const cJSON *omitted = json_get(r.json, "omittedStatements");
  cr_assert_not_null(omitted);
  cr_expect_gt(omitted->valueint, 100);
  cr_expect_not_null(strstr(r.out, "GRANTED clone tier on the target: GRANT USAGE, CREATE ON "
                                   "SCHEMA \"a_rather_long_schema_name_for_the_report_budget_99\""),
                     "every statement is in the log");
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, missing_credentials_fail_cleanly, .timeout = 30)
{
  struct run r;
  preflight(&r, "not a uri at all " SRC_PW, NULL, NULL, NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "config");
  run_free(&r);
}

/* Bad flags are the config check's failure, in the report --report names (also when a list
 * flag is the bad one: the lists are taken out of argv before the other flags are parsed). */
Test(runner_preflight, bad_flags_fail_as_config_in_the_report, .timeout = 30)
{
  struct run r;
  preflight(&r, "postgres://src_app:" SRC_PW "@127.0.0.1:1/shop",
            "postgres://dst_app:" DST_PW "@127.0.0.1:1/shop", NULL,
            (const char *[]){ "--extension", "pg_trgm", "--exclude-schema", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "result"), "Failed");
  cr_expect_str_eq(jstr(&r, "failed.id"), "config");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "--exclude-schema needs a value"));
  cr_expect_not_null(strstr(r.out, "FAIL config: --exclude-schema needs a value"));
  cr_expect_null(strstr(r.out, "source.connect"), "nothing was checked");
  run_free(&r);
  preflight(&r, "postgres://src_app:" SRC_PW "@127.0.0.1:1/shop",
            "postgres://dst_app:" DST_PW "@127.0.0.1:1/shop", NULL,
            (const char *[]){ "--attempts", "many", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "config");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "--attempts"));
  run_free(&r);
}

/* A malformed superuser URI fails as config and its password appears nowhere (preflight()
 * looks for every password and URI in the lines and the report). */
Test(runner_preflight, malformed_superuser_uri_fails_without_its_password, .timeout = 30)
{
  struct run r;
  preflight(&r, "postgres://src_app:" SRC_PW "@127.0.0.1:1/shop",
            "postgres://dst_app:" DST_PW "@127.0.0.1:1/shop",
            "postgres://godwit_admin:" ADMIN_PW "@[::1/postgres", NULL);
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "config");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "GODWIT_SUPERUSER_URI"));
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"), "spec.superuserSecretRef"));
  run_free(&r);
}

Test(runner_preflight, extensions_available_or_not, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--extension", "pg_trgm", "--extension", "no_such_ext", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "target.extensions");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "no_such_ext is not available"));
  cr_expect_null(strstr(jstr(&r, "failed.message"), "pg_trgm"));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--extension", "pg_trgm", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_not_null(strstr(r.out, "pg_trgm available"));
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, include_only_schemas_needs_pgcopydb_0_13, .timeout = 90)
{
  struct pair p;
  pair_start(&p, false, true);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--include-schema", "sales", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "pgcopydb.version");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "0.13"));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--include-schema", "sales", "--pgcopydb-version", "0.18", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_not_null(strstr(r.out, "1 schemas in scope on the source: sales"));
  run_free(&r);
  pair_stop(&p);
}

/* ---- the output plugin (source.outputPlugin) and output_plugin_libraries ---- */

#define ALLOW_WAL2JSON                                                                          \
  "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding', 'wal2json'"

/* A logical source as the package configures it (the current point release has
 * output_plugin_libraries, make deps installs it), with the follow rights granted. */
static void plugin_pair(struct pair *p, const char *const *conf)
{
  cr_assert(pgfx_has_setting(NULL, "output_plugin_libraries"),
            "the installed PostgreSQL 15 predates output_plugin_libraries: make deps upgrades it");
  pair_start_src(p, &(struct pgfx_opts){ .logical = true, .conf = conf }, true);
  grant_follow(p);
}

Test(runner_preflight, refused_plugin_says_why_and_the_statement, .timeout = 90)
{
  struct pair p;
  plugin_pair(&p, NULL);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "source.outputPlugin");
  const char *msg = jstr(&r, "failed.message"), *rec = jstr(&r, "failed.recovery");
  cr_expect_not_null(strstr(msg, "the source server refuses wal2json as an output plugin: "
                                 "library \"wal2json\" may not be used as an output plugin "
                                 "(HINT: If it is safe for all REPLICATION users"),
                     "%s", msg);
  /* the setting is for superusers and pg_read_all_settings to read */
  cr_expect_not_null(strstr(msg, "role \"src_app\" may not read its output_plugin_libraries "
                                 "(superusers and pg_read_all_settings may; the statement below "
                                 "keeps the default list 'pgoutput, test_decoding'"),
                     "%s", msg);
  cr_expect_not_null(strstr(msg, "pgcopydb 0.10-1 decodes with wal2json only"), "%s", msg);
  cr_expect_not_null(strstr(rec, "set spec.superuserSecretRef so the preflight grants it, or as "
                                 "a superuser on the source: " ALLOW_WAL2JSON
                                 "; SELECT pg_reload_conf()"),
                     "%s", rec);
  cr_expect_null(strstr(rec, "above"), "a condition has no \"above\": %s", rec);
  cr_expect_null(json_get(r.json, "outputPlugin"), "no plugin chosen");
  char *v = pgfx_query1(&p.src, NULL, "SHOW output_plugin_libraries");
  cr_expect_str_eq(v, "pgoutput, test_decoding", "nothing changed without a superuser");
  free(v);
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, refused_plugin_is_remediated_with_the_superuser, .timeout = 90)
{
  struct pair p;
  plugin_pair(&p, NULL);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 0);
  char buf[2048];
  statements(&r, "remediated", "follow", buf, sizeof(buf));
  cr_expect_str_eq(buf, "source: " ALLOW_WAL2JSON "\nsource: SELECT pg_reload_conf()\n");
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "wal2json");
  cr_expect_not_null(strstr(r.out, "PASS source.outputPlugin: the worker decodes with wal2json: "
                                   "a temporary logical slot with it was created and dropped on "
                                   "the source (output_plugin_libraries 'pgoutput, "
                                   "test_decoding, wal2json')"),
                     "the re-run saw the reloaded setting");
  /* a new session (pgcopydb's walsender) sees it too, and the list has three elements */
  char *v = pgfx_query1(&p.src, NULL, "SELECT count(*) FROM pg_create_logical_replication_slot("
                                      "'t', 'wal2json', true)");
  cr_expect_str_eq(v, "1");
  free(v);
  v = pgfx_query1(&p.src, NULL, "SHOW output_plugin_libraries");
  cr_expect_str_eq(v, "pgoutput, test_decoding, wal2json");
  free(v);
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, refused_plugin_dry_run_lists_the_statements, .timeout = 90)
{
  struct pair p;
  plugin_pair(&p, NULL);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, p.su_uri, (const char *[]){ "--follow", "--dry-run", NULL });
  cr_expect_eq(r.code, 0);
  char buf[2048];
  statements(&r, "wouldRemediate", "follow", buf, sizeof(buf));
  cr_expect_str_eq(buf, "source: " ALLOW_WAL2JSON "\nsource: SELECT pg_reload_conf()\n");
  char *v = pgfx_query1(&p.src, NULL, "SHOW output_plugin_libraries");
  cr_expect_str_eq(v, "pgoutput, test_decoding", "a dry run changes nothing");
  free(v);
  run_free(&r);
  pair_stop(&p);
}

/* A pgcopydb that decodes with test_decoding needs no configuration change; where the admin
 * took test_decoding out of the list, an allowed plugin it also knows is chosen. */
Test(runner_preflight, newer_pgcopydb_uses_an_allowed_plugin, .timeout = 90)
{
  struct pair p;
  plugin_pair(&p, NULL);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--pgcopydb-version", "0.17", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "test_decoding");
  cr_expect_not_null(strstr(r.out, "PASS source.outputPlugin: the worker decodes with "
                                   "test_decoding"));
  run_free(&r);
  pair_stop(&p);

  plugin_pair(&p, (const char *[]){ "output_plugin_libraries = 'pgoutput, wal2json'", NULL });
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--pgcopydb-version", "0.17", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "wal2json");
  run_free(&r);
  /* neither allowed: the first choice is the one to add */
  pgfx_exec(&p.src, NULL, "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput'");
  pgfx_exec(&p.src, NULL, "SELECT pg_reload_conf()");
  for(int i = 0; i < 100; i++) { /* the postmaster reloads asynchronously */
    char *v = pgfx_query1(&p.src, NULL, "SHOW output_plugin_libraries");
    bool done = !strcmp(v, "pgoutput");
    free(v);
    if(done)
      break;
    usleep(20000);
  }
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--pgcopydb-version", "0.17", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "refuses test_decoding"));
  cr_expect_not_null(strstr(jstr(&r, "failed.message"), "(tried test_decoding, wal2json)"));
  cr_expect_not_null(strstr(jstr(&r, "failed.recovery"),
                            "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', "
                            "'test_decoding'; SELECT pg_reload_conf()"));
  run_free(&r);
  pair_stop(&p);
}

/* The servers before the setting (15.18): a real one, unpacked from Debian's archive. */
Test(runner_preflight, server_without_the_setting_allows_every_plugin, .timeout = 180)
{
  char bin[512];
  pgfx_bin_without_plugin_setting(bin, sizeof(bin));
  struct pair p;
  pair_start_src(&p, &(struct pgfx_opts){ .logical = true, .bin = bin }, true);
  grant_follow(&p);
  char *ver = pgfx_query1(&p.src, NULL, "SHOW server_version");
  cr_log_info("the source runs %s", ver);
  free(ver);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "--follow", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "wal2json");
  cr_expect_not_null(strstr(r.out, "PASS source.outputPlugin: the worker decodes with wal2json: "
                                   "a temporary logical slot with it was created and dropped on "
                                   "the source\n"));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--pgcopydb-version", "0.17", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "test_decoding");
  run_free(&r);
  pair_stop(&p);
}

Test(runner_preflight, output_plugin_flag_must_suit_the_pgcopydb_version, .timeout = 90)
{
  struct pair p;
  pair_start(&p, true, true);
  grant_follow(&p);
  struct run r;
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--output-plugin", "test_decoding", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(jstr(&r, "failed.id"), "pgcopydb.version");
  cr_expect_not_null(strstr(jstr(&r, "failed.message"),
                            "pgcopydb 0.10-1 decodes changes with wal2json only, not "
                            "\"test_decoding\""));
  run_free(&r);
  preflight(&r, p.src_uri, p.dst_uri, NULL,
            (const char *[]){ "--follow", "--output-plugin", "test_decoding",
                              "--pgcopydb-version", "0.17", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(jstr(&r, "outputPlugin"), "test_decoding");
  run_free(&r);
  pair_stop(&p);
}
