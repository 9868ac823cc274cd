/*
 * test_runner_schema.c: `godwit-runner ptah-plan` (controller/runner/schema*.c) on a real
 * PostgreSQL 15, run as a Job runs it: the target's URI in GODWIT_DATABASE_URI, the desired SQL
 * in a file, the report and the plan in files, the exit code. The covered kinds, both ways, are
 * the corpus's (test_runner_schema_corpus.c); these are the step's other promises: determinism,
 * refusals by name, the materialisation choices, load errors, the read-only target, secrets.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "json.h"
#include "test_runner_schema_util.h"
#include "test_runner_steps_util.h"

#define SHOP                                                                                     \
  "CREATE TYPE st AS ENUM ('new', 'paid');\n"                                                    \
  "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);\n"                        \
  "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n"                   \
  "  customer int REFERENCES customers, s st DEFAULT 'new');\n"                                  \
  "CREATE VIEW open_orders AS SELECT id FROM orders WHERE s = 'new';\n"

static bool has(const char *hay, const char *needle)
{
  return strstr(hay, needle) != NULL;
}

static long scratch_dbs(struct scfx *f)
{
  char *n = sr_q(&f->pg, "postgres", "SELECT count(*) FROM pg_database WHERE datname LIKE "
                                     "'ptah\\_scratch\\_%'");
  long v = atol(n);
  free(n);
  return v;
}

Test(runner_schema, same_catalog_same_desired_same_digest, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", "CREATE TABLE customers (id int PRIMARY KEY, nick text);\n");
  struct splan a, b, c;
  sc_plan(&a, &f, "shop", SHOP, (const char *[]){ "--binding", "shop/target-1", NULL }, NULL);
  sc_plan(&b, &f, "shop", SHOP, (const char *[]){ "--binding", "shop/target-1", NULL }, NULL);
  cr_assert_eq(a.code, 0, "%s", a.out);
  cr_assert_eq(b.code, 0, "%s", b.out);
  cr_assert_str_eq(sc_str(&a, "planDigest"), sc_str(&b, "planDigest"));
  cr_assert_str_eq(sc_str(&a, "fingerprint"), sc_str(&b, "fingerprint"));
  char *sa = sc_statements(&a), *sb = sc_statements(&b);
  cr_assert_str_eq(sa, sb);
  cr_assert(has(sa, "DROP COLUMN nick"), "%s", sa);
  cr_assert_eq(sc_num(&a, "destructive"), 1, "%s", a.report);
  cr_assert(has(sc_str(&a, "summary"), "[destructive] drop column public.customers.nick"), "%s",
            a.report);
  cr_assert_str_eq(sc_str(&a, "materialisation"), "scratch");
  cr_assert_str_eq(json_get_str(a.plan, "binding"), "shop/target-1");
  cr_assert_str_eq(json_get_str(a.plan, "fingerprint"), sc_str(&a, "fingerprint"));

  /* another binding: the same statements, another digest */
  sc_plan(&c, &f, "shop", SHOP, (const char *[]){ "--binding", "shop/target-2", NULL }, NULL);
  char *sc = sc_statements(&c);
  cr_assert_str_eq(sa, sc);
  cr_assert_str_neq(sc_str(&a, "planDigest"), sc_str(&c, "planDigest"));
  free(sc);
  sc_free(&c);

  /* another catalog: another fingerprint and digest */
  sc_exec(&f, "shop", "COMMENT ON TABLE customers IS 'changed';");
  sc_plan(&c, &f, "shop", SHOP, (const char *[]){ "--binding", "shop/target-1", NULL }, NULL);
  cr_assert_str_neq(sc_str(&a, "fingerprint"), sc_str(&c, "fingerprint"));
  cr_assert_str_neq(sc_str(&a, "planDigest"), sc_str(&c, "planDigest"));
  cr_assert(has(sc_str(&c, "summary"), "remove comment on table:public.customers"), "%s",
            c.report);
  cr_assert_eq(scratch_dbs(&f), 0, "a scratch database was left behind");
  free(sa);
  free(sb);
  sc_free(&a);
  sc_free(&b);
  sc_free(&c);
  sc_stop(&f);
}

Test(runner_schema, uncovered_objects_are_refused_by_name, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop",
          "CREATE TABLE audit (id int);\n"
          "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;\n"
          "CREATE TRIGGER audit_touch BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION touch();\n");
  char *before = sc_dump(&f, "shop");
  struct splan r;
  sc_plan(&r, &f, "shop",
          "CREATE TABLE audit (id int);\nCREATE DOMAIN positive AS int CHECK (VALUE > 0);\n"
          "CREATE MATERIALIZED VIEW m AS SELECT 1 AS one;\n", NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  const char *msg = sc_str(&r, "message");
  cr_assert(has(msg, "function public.touch() (in the target)"), "%s", msg);
  cr_assert(has(msg, "trigger audit_touch on public.audit (in the target)"), "%s", msg);
  cr_assert(has(msg, "domain public.positive (in the desired schema)"), "%s", msg);
  cr_assert(has(msg, "materialized view public.m (in the desired schema)"), "%s", msg);
  cr_assert(has(r.out, "FAIL refused: 4 objects"), "%s", r.out);
  cr_assert(json_get(r.json, "planDigest") && cJSON_IsNull(json_get(r.json, "planDigest")));
  cr_assert_null(r.plan, "a refused plan was written");
  sc_free(&r);
  char *after = sc_dump(&f, "shop");
  cr_assert_str_eq(before, after, "the target changed");
  cr_assert_eq(scratch_dbs(&f), 0, "a scratch database was left behind");
  free(before);
  free(after);
  sc_stop(&f);
}

Test(runner_schema, enum_values_removed_are_refused, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  sc_exec(&f, "shop", "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');");
  struct splan r;
  sc_plan(&r, &f, "shop", "CREATE TYPE mood AS ENUM ('happy', 'sad');", NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "enum type public.mood: the desired values drop or "
                                       "reorder current ones"), "%s", r.report);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema, desired_sql_that_does_not_load_names_the_line, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  struct splan r;
  sc_plan(&r, &f, "shop", "CREATE TABLE a (id int);\n\nCREATE TABLE b (id int REFERENCES nope);\n",
          NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  const char *msg = sc_str(&r, "message");
  cr_assert(has(msg, "does not load: relation \"nope\" does not exist (SQLSTATE 42P01) at line 3: "
                     "CREATE TABLE b (id int REFERENCES nope);"), "%s", msg);
  sc_free(&r);
  sc_plan(&r, &f, "shop", "CREATE TABLE a (id int);\nCOMMIT;\n", NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "must not end the transaction"), "%s", r.report);
  sc_free(&r);
  sc_plan(&r, &f, "shop", "  \n\n", NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "is empty"), "%s", r.report);
  sc_free(&r);
  cr_assert_eq(scratch_dbs(&f), 0, "a scratch database was left behind");
  sc_stop(&f);
}

Test(runner_schema, without_createdb_nor_dev_database_fails_saying_both, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, false);
  struct splan r;
  sc_plan(&r, &f, "shop", SHOP, NULL, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  const char *msg = sc_str(&r, "message");
  cr_assert(has(msg, "give the role app CREATEDB") && has(msg, "GODWIT_DEV_DATABASE_URI"), "%s",
            msg);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema, dev_database_is_used_and_left_as_it_was, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, false);
  sc_db(&f, "dev");
  char uri[256], env[300];
  snprintf(env, sizeof(env), "GODWIT_DEV_DATABASE_URI=%s", sc_uri(&f, uri, sizeof(uri), "dev"));
  struct splan r;
  sc_plan(&r, &f, "shop", SHOP, NULL, (const char *[]){ env, NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(sc_str(&r, "materialisation"), "devDatabase");
  cr_assert(has(r.out, "PASS devdb: connected to the empty dev database"), "%s", r.out);
  cr_assert_null(strstr(r.report, uri), "the dev URI leaked");
  char err[4096];
  cr_assert_eq(sc_apply(&f, "shop", &r, err, sizeof(err)), 0, "%s", err);
  sc_free(&r);
  char *n = sr_q(&f.pg, "dev", "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                               "c.relnamespace WHERE n.nspname = 'public'");
  cr_assert_str_eq(n, "0", "the dev database kept the desired schema");
  free(n);
  sc_plan(&r, &f, "shop", SHOP, NULL, (const char *[]){ env, NULL });
  cr_assert_eq(sc_num(&r, "statements"), 0, "%s", r.report);
  sc_free(&r);

  sc_exec(&f, "dev", "CREATE TABLE leftover (id int);");
  sc_plan(&r, &f, "shop", SHOP, NULL, (const char *[]){ env, NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "must be empty") &&
              has(sc_str(&r, "message"), "table public.leftover"), "%s", r.report);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema, a_dead_runs_scratch_database_is_dropped_after_an_hour, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  sc_db(&f, "ptah_scratch_1000000000_deadbeef");
  char recent[64], sql[128];
  char *now = sr_q(&f.pg, "postgres", "SELECT extract(epoch FROM now())::bigint - 60");
  snprintf(recent, sizeof(recent), "ptah_scratch_%s_0badf00d", now);
  free(now);
  sc_db(&f, recent);
  struct splan r;
  sc_plan(&r, &f, "shop", SHOP, NULL, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert(has(r.out, "PASS scratch: dropped the leftover scratch database "
                       "ptah_scratch_1000000000_deadbeef"), "%s", r.out);
  sc_free(&r);
  snprintf(sql, sizeof(sql), "SELECT string_agg(datname, ',') FROM pg_database WHERE datname "
                             "LIKE 'ptah\\_scratch\\_%%'");
  char *left = sr_q(&f.pg, "postgres", sql);
  cr_assert_str_eq(left, recent, "only the recent one (a run that may be alive) stays");
  free(left);
  sc_stop(&f);
}

Test(runner_schema, bad_password_and_missing_uri_leak_nothing, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  char bad[300], uri[256];
  pgfx_uri(&f.pg, uri, sizeof(uri), "app", "wrong-" SC_PW, "shop");
  snprintf(bad, sizeof(bad), "GODWIT_DATABASE_URI=%s", uri);
  struct splan r;
  sc_plan(&r, &f, "shop", SHOP, (const char *[]){ "--attempts", "1", NULL },
          (const char *[]){ bad, NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "cannot connect to database"), "%s", r.report);
  cr_assert_null(strstr(r.out, "wrong-"), "%s", r.out);
  cr_assert_null(strstr(r.report, "wrong-"), "%s", r.report);
  sc_free(&r);
  sc_plan(&r, &f, "shop", SHOP, NULL, (const char *[]){ "GODWIT_DATABASE_URI=", NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(sc_str(&r, "message"), "GODWIT_DATABASE_URI is not set"), "%s", r.report);
  sc_free(&r);
  sc_plan(&r, &f, "shop", SHOP, (const char *[]){ "--result", "log", NULL }, NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(r.out, "FAIL config: --result must be none or durable"), "%s", r.out);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema, a_comment_holding_the_password_is_not_written, .timeout = 120)
{
  struct scfx f;
  sc_start(&f, true);
  struct splan r;
  sc_plan(&r, &f, "shop", "CREATE TABLE t (id int);\nCOMMENT ON TABLE t IS '" SC_PW "';\n", NULL,
          NULL);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert(has(r.out, "FAIL plan-out: the plan holds the connection's password"), "%s", r.out);
  sc_free(&r);
  sc_stop(&f);
}

Test(runner_schema, another_protocol_is_refused_before_anything, .timeout = 60)
{
  struct scfx f;
  sc_start(&f, true);
  char dir[64], rep[128], cmd[1024];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(rep, sizeof(rep), "%s/report.json", dir);
  const char *b = getenv("GODWIT_BUILD");
  snprintf(cmd, sizeof(cmd), "%s/godwit-runner ptah-plan --protocol 2 --operation x --report %s "
           ">/dev/null 2>&1", b && *b ? b : "build", rep);
  int st = system(cmd);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d", st);
  char *report = sr_slurp(rep);
  cr_assert(has(report, "\"result\":\"ProtocolMismatch\"") && has(report, "\"requested\":\"2\""),
            "%s", report);
  free(report);
  sr_rmrf(dir);
  sc_stop(&f);
}
