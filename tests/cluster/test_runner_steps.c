/*
 * test_runner_steps.c: godwit-runner catalog, compare, cleanup and reown against real
 * PostgreSQL 15 servers and real pgcopydb 0.10 (test_runner_steps_util.h). The live steps
 * (cutover, verify) are in test_runner_steps_live.c.
 */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "test_runner_steps_util.h"

static const char *const clone_flags[] = { "--no-owner", "--no-acl", "--skip-extensions" };

/* pgcopydb clone of the pair into dir (extra flags NULL-terminated, may be NULL). */
static void clone_into(struct srpair *p, const char *dir, const char *dsturi,
                       const char *const *extra)
{
  const char *args[32] = { "clone", "--dir", dir, clone_flags[0], clone_flags[1],
                           clone_flags[2] };
  int n = 6;
  for(const char *const *e = extra; e && *e && n < 30; e++)
    args[n++] = *e;
  args[n] = NULL;
  sr_pgcopydb(p->src_uri, dsturi ? dsturi : p->dst_uri, args, 120);
}

static bool listed(const struct srun *r, const char *path, const char *name)
{
  const cJSON *a = json_get(r->json, path), *e;
  cJSON_ArrayForEach(e, a)
  {
    if(cJSON_IsString(e) && !strcmp(e->valuestring, name))
      return true;
    const char *t = json_get_str(e, "table");
    if(t && !strcmp(t, name))
      return true;
  }
  return false;
}

/* ----- catalog -------------------------------------------------------------------------------- */

Test(runner_steps, catalog_after_a_complete_clone, .timeout = 180)
{
  struct srpair p;
  sr_pair_start(&p, false);
  char dir[64], work[128];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(work, sizeof(work), "%s/work", dir);
  clone_into(&p, work, NULL, NULL);

  struct srun r;
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", work, NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "result"), "Passed");
  cr_expect_str_eq(sr_str(&r, "verdict"), "CloneSucceeded");
  cr_expect_str_eq(sr_str(&r, "catalog"), "markers");
  cr_expect_eq(sr_num(&r, "tablesTotal"), 3);
  cr_expect_eq(sr_num(&r, "tablesDone"), 3);
  cr_expect_eq(cJSON_GetArraySize(json_get(r.json, "notDone")), 0);
  cr_expect_not_null(strstr(r.out, "PASS catalog.tables: 3 of 3 tables done"));
  sr_free(&r);

  /* The same source split in parts (sales.orders is 11 COPY processes): every part's marker is
   * needed. */
  pgfx_create_db(&p.dst, "shop2", "dst_app");
  char uri2[256], work2[128];
  pgfx_uri(&p.dst, uri2, sizeof(uri2), "dst_app", SR_DST_PW, "shop2");
  snprintf(work2, sizeof(work2), "%s/work2", dir);
  clone_into(&p, work2, uri2, (const char *[]){ "--split-tables-larger-than", "64kB", NULL });
  char *oid = sr_q(&p.src, "shop", "SELECT 'sales.orders'::regclass::oid");
  char part[256];
  snprintf(part, sizeof(part), "%s/run/tables/%s.1.done", work2, oid);
  cr_assert_eq(access(part, F_OK), 0, "no part marker %s: was the table split?", part);
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", work2, NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_eq(sr_num(&r, "tablesDone"), 3);
  sr_free(&r);
  cr_assert_eq(unlink(part), 0);
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", work2, NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "verdict"), "CloneIncomplete");
  cr_expect_eq(sr_num(&r, "tablesDone"), 2);
  cr_expect(listed(&r, "notDone", "sales.orders"), "%s", r.report);
  cr_expect_not_null(strstr(r.out, "FAIL catalog.table: sales.orders"));
  sr_free(&r);
  free(oid);

  /* No work dir: the volume is not mounted. An empty one: no catalog to read. */
  char missing[160], empty[160];
  snprintf(missing, sizeof(missing), "%s/nothing-here", dir);
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", missing, NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "result"), "Failed");
  sr_free(&r);
  snprintf(empty, sizeof(empty), "%s/empty", dir);
  mkdir(empty, 0700);
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", empty, NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "catalog"), "unreadable");
  cr_expect_eq(sr_num(&r, "tablesTotal"), -1, "tablesTotal is null when nothing was read");
  sr_free(&r);

  sr_rmrf(dir);
  sr_pair_stop(&p);
}

Test(runner_steps, catalog_after_a_killed_clone, .timeout = 180)
{
  struct srpair p;
  sr_pair_start(&p, false);
  /* A table whose COPY into the target takes seconds: its CHECK calls a function that sleeps
   * (restored with the pre-data section, so it runs on the target for every copied row). */
  pgfx_exec(&p.src, "shop",
            "CREATE FUNCTION public.slow_ok(int) RETURNS boolean LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(0.02); RETURN true; END $$;"
            "CREATE TABLE public.slow(id int PRIMARY KEY CHECK (public.slow_ok(id)));"
            "INSERT INTO public.slow SELECT generate_series(1, 1500);");
  sr_grant_source(&p);
  char *oid = sr_q(&p.src, "shop", "SELECT 'public.slow'::regclass::oid");
  char dir[64], work[128], log[128], lock[200];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(work, sizeof(work), "%s/work", dir);
  snprintf(log, sizeof(log), "%s/pgcopydb.log", dir);
  snprintf(lock, sizeof(lock), "%s/run/%s", work, oid);
  pid_t pid = sr_pgcopydb_start(p.src_uri, p.dst_uri,
                                (const char *[]){ "clone", "--dir", work, "--no-owner",
                                                  "--no-acl", "--skip-extensions", NULL },
                                log);
  bool copying = sr_wait_file(lock, 60000);
  sr_pgcopydb_kill(pid);
  char *text = sr_slurp(log);
  cr_assert(copying, "the slow table's COPY never started:\n%s", text);
  free(text);

  struct srun r;
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", work, NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "result"), "Failed");
  cr_expect_str_eq(sr_str(&r, "verdict"), "CloneIncomplete");
  cr_expect_eq(sr_num(&r, "tablesTotal"), 4);
  cr_expect_lt(sr_num(&r, "tablesDone"), 4);
  cr_expect(listed(&r, "notDone", "public.slow"), "%s", r.report);
  cr_expect_not_null(strstr(sr_str(&r, "summary"), "public.slow"));
  sr_free(&r);
  free(oid);
  sr_rmrf(dir);
  sr_pair_stop(&p);
}

/* pgcopydb 0.15+ keeps its progress in schema/source.db. Debian has no such pgcopydb: the
 * catalog is built here with the tables of pgcopydb's own DDL (src/bin/pgcopydb/catalog.c). */
Test(runner_steps, catalog_reads_a_sqlite_catalog, .timeout = 60)
{
  cr_assert_eq(system("command -v sqlite3 >/dev/null 2>&1"), 0,
               "no sqlite3 command to build the catalog with (make deps installs it)");
  char dir[64], cmd[2048];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(cmd, sizeof(cmd),
           "mkdir -p %s/schema && sqlite3 %s/schema/source.db \""
           "create table s_table(oid integer primary key, datname text, qname text, "
           "  nspname text, relname text, amname text, restore_list_name text, "
           "  relpages integer, reltuples integer, exclude_data boolean, part_key text);"
           "create table s_table_part(oid integer references s_table(oid), partnum integer, "
           "  partcount integer, min integer, max integer, count integer, "
           "  primary key(oid, partnum));"
           "create table summary(pid integer, tableoid integer references s_table(oid), "
           "  partnum integer, indexoid integer, conoid integer, start_time_epoch integer, "
           "  done_time_epoch integer, duration integer, bytes integer, command text, "
           "  unique(tableoid, partnum));"
           "create table s_seq(oid integer, ownedby integer, attrelid integer, attroid integer, "
           "  datname text, qname text, nspname text, relname text, restore_list_name text, "
           "  last_value integer, isCalled bool, primary key(oid, ownedby, attrelid, attroid));"
           "insert into s_table(oid, nspname, relname, exclude_data) values "
           "  (1, 'public', 'done', 0), (2, 'public', 'running', 0), (3, 'sales', 'split', 0), "
           "  (4, 'sales', 'split_done', 0), (5, 'public', 'no_data', 1);"
           "insert into s_table_part(oid, partnum, partcount) values (3, 0, 2), (3, 1, 2), "
           "  (4, 0, 2), (4, 1, 2);"
           "insert into summary(pid, tableoid, partnum, start_time_epoch, done_time_epoch) "
           "  values (10, 1, 0, 100, 200), (11, 2, 0, 100, NULL), (12, 3, 0, 100, 200), "
           "  (13, 4, 0, 100, 200), (14, 4, 1, 100, 300);"
           "insert into s_seq(oid, ownedby, attrelid, attroid, nspname, relname) values "
           "  (7, 1, 1, 1, 'public', 'done_id_seq');\"",
           dir, dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  struct srun r;
  sr_run(&r, NULL, NULL, NULL, (const char *[]){ "catalog", "--dir", dir, NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "catalog"), "sqlite");
  cr_expect_eq(sr_num(&r, "tablesTotal"), 4);
  cr_expect_eq(sr_num(&r, "tablesDone"), 2);
  cr_expect_eq(sr_num(&r, "excludedData"), 1);
  cr_expect(listed(&r, "notDone", "public.running"), "%s", r.report);
  cr_expect(listed(&r, "notDone", "sales.split"), "%s", r.report);
  sr_free(&r);

  /* No libsqlite3 for the runner: "unreadable", said, never guessed. */
  sr_run(&r, NULL, NULL, (const char *[]){ "GODWIT_SQLITE_LIBRARY=/nonexistent/libsqlite3.so", NULL },
         (const char *[]){ "catalog", "--dir", dir, NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "catalog"), "unreadable");
  cr_expect_not_null(strstr(sr_str(&r, "reason"), "cannot load"), "%s", r.report);
  sr_free(&r);
  sr_rmrf(dir);
}

/* ----- compare -------------------------------------------------------------------------------- */

Test(runner_steps, compare_equal_then_data_and_schema_differences, .timeout = 180)
{
  struct srpair p;
  sr_pair_start(&p, false);
  char dir[64], work[128];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(work, sizeof(work), "%s/work", dir);
  clone_into(&p, work, NULL, NULL);

  struct srun r;
  sr_run(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "compare", "--schema", "--data", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "verdict"), "ComparePassed");
  cr_expect_str_eq(sr_str(&r, "method"), "libpq");
  cr_expect(sr_bool(&r, "schema.equal"));
  cr_expect(sr_bool(&r, "data.equal"));
  cr_expect_eq(sr_num(&r, "data.tablesCompared"), 3);
  cr_expect_eq(sr_num(&r, "data.tablesMatching"), 3);
  sr_free(&r);

  /* One changed value, same row count: the checksum sees it. */
  pgfx_exec(&p.dst, "shop", "UPDATE sales.orders SET note = 'changed' WHERE id = 1234");
  sr_run(&r, p.src_uri, p.dst_uri, NULL,
         (const char *[]){ "compare", "--data", "--dir", work, NULL });
  cr_expect_eq(r.code, 0, "a mismatch is a result, not a failure");
  cr_expect_str_eq(sr_str(&r, "result"), "Passed");
  cr_expect_str_eq(sr_str(&r, "verdict"), "DataMismatch");
  cr_expect_str_eq(sr_str(&r, "data.tablesFrom"), "workdir");
  cr_expect_eq(sr_num(&r, "data.tablesDiffering"), 1);
  const cJSON *first = cJSON_GetArrayItem(json_get(r.json, "data.tables"), 0);
  cr_expect_str_eq(json_get_str(first, "table"), "sales.orders");
  cr_expect_eq(json_get(first, "sourceRows")->valueint, json_get(first, "targetRows")->valueint);
  cr_expect_str_neq(json_get_str(first, "sourceChecksum"), json_get_str(first, "targetChecksum"));
  cr_expect_null(json_get(r.json, "schema"), "no schema compare asked");
  sr_free(&r);
  pgfx_exec(&p.dst, "shop", "DELETE FROM public.\"Mixed Case\"; "
                            "INSERT INTO public.\"Mixed Case\" VALUES (1, 'extra')");
  sr_run(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "compare", "--data", NULL });
  cr_expect_str_eq(sr_str(&r, "verdict"), "DataMismatch");
  cr_expect_eq(sr_num(&r, "data.tablesDiffering"), 2);
  cr_expect(listed(&r, "data.tables", "public.\"Mixed Case\""), "%s", r.report);
  sr_free(&r);

  /* A schema difference wins over the data: a column's type, a dropped index, an extra
   * table. */
  pgfx_exec(&p.dst, "shop",
            "ALTER TABLE public.customers ALTER COLUMN score TYPE numeric;"
            "DROP INDEX sales.orders_customer_idx;"
            "CREATE TABLE public.only_here(id int)");
  sr_run(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "compare", "--schema", "--data", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "verdict"), "SchemaMismatch");
  cr_expect_not(sr_bool(&r, "schema.equal"));
  cr_expect_geq(sr_num(&r, "schema.differencesTotal"), 3);
  cr_expect(listed(&r, "schema.differences",
                   "column public.customers.score: source double precision; target numeric"),
            "%s", r.report);
  cr_expect_not_null(strstr(r.report, "only on the source: index sales.orders orders_customer_idx"));
  cr_expect_not_null(strstr(r.report, "only on the target: relation public.only_here (table)"));
  cr_expect_not_null(strstr(r.out, "WARN compare.schema: column public.customers.score"));
  sr_free(&r);

  /* Nothing asked, or a target that is not there: it could not compare. */
  sr_run(&r, p.src_uri, p.dst_uri, NULL, (const char *[]){ "compare", NULL });
  cr_expect_eq(r.code, 1);
  sr_free(&r);
  char bad[256];
  pgfx_uri(&p.dst, bad, sizeof(bad), "dst_app", "Wrong-Secret-0001", "shop");
  sr_run(&r, p.src_uri, bad, NULL,
         (const char *[]){ "compare", "--schema", "--attempts", "1", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_null(strstr(r.out, "Wrong-Secret-0001"));
  cr_expect(json_get(r.json, "verdict") && cJSON_IsNull(json_get(r.json, "verdict")));
  sr_free(&r);

  sr_rmrf(dir);
  sr_pair_stop(&p);
}

/* ----- cleanup -------------------------------------------------------------------------------- */

Test(runner_steps, cleanup_drops_everything_and_is_idempotent, .timeout = 120)
{
  struct srpair p;
  sr_pair_start(&p, true);
  /* What a live migration leaves, made by the migration roles as pgcopydb makes it. */
  pgfx_exec(&p.src, "shop",
            "SET ROLE src_app;"
            "CREATE SCHEMA pgcopydb;"
            "CREATE TABLE pgcopydb.sentinel(startpos pg_lsn, endpos pg_lsn, apply bool, "
            "  write_lsn pg_lsn, flush_lsn pg_lsn, replay_lsn pg_lsn);"
            "CREATE PUBLICATION pgcopydb;");
  pgfx_exec(&p.src, "shop",
            "SET ROLE src_app; SELECT pg_create_logical_replication_slot('godwit_t1', 'wal2json')");
  pgfx_exec(&p.dst, "shop", "SELECT pg_replication_origin_create('godwit_t1')");
  /* The slot held active by a walsender, as a running follow holds it. */
  char conninfo[512];
  snprintf(conninfo, sizeof(conninfo),
           "host=127.0.0.1 port=%d user=src_app password=%s dbname=shop replication=database",
           p.src.port, SR_SRC_PW);
  PGconn *walsender = PQconnectdb(conninfo);
  cr_assert_eq(PQstatus(walsender), CONNECTION_OK, "%s", PQerrorMessage(walsender));
  PGresult *res = PQexec(walsender, "START_REPLICATION SLOT godwit_t1 LOGICAL 0/0");
  cr_assert_eq(PQresultStatus(res), PGRES_COPY_BOTH, "%s", PQerrorMessage(walsender));
  PQclear(res);
  cr_assert(sr_true(&p.src, NULL, "SELECT active FROM pg_replication_slots "
                                  "WHERE slot_name = 'godwit_t1'"));

  struct srun r;
  sr_run(&r, p.src_uri, p.dst_uri, NULL,
         (const char *[]){ "cleanup", "--slot-name", "godwit_t1", "--origin", "godwit_t1", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "result"), "Passed");
  cr_expect_str_eq(sr_str(&r, "slot.state"), "dropped");
  cr_expect_gt(sr_num(&r, "slot.terminatedPid"), 0, "the active slot's walsender was ended");
  cr_expect_str_eq(sr_str(&r, "publication.state"), "dropped");
  cr_expect_str_eq(sr_str(&r, "sentinelSchema.state"), "dropped");
  cr_expect_str_eq(sr_str(&r, "origin.state"), "dropped");
  cr_expect_eq(cJSON_GetArraySize(json_get(r.json, "dropped")), 4);
  sr_free(&r);
  PQfinish(walsender);
  cr_expect(sr_true(&p.src, "shop", "SELECT NOT EXISTS (SELECT 1 FROM pg_replication_slots)"));
  cr_expect(sr_true(&p.src, "shop", "SELECT NOT EXISTS (SELECT 1 FROM pg_publication)"));
  cr_expect(sr_true(&p.src, "shop", "SELECT to_regnamespace('pgcopydb') IS NULL"));
  cr_expect(sr_true(&p.dst, "shop", "SELECT NOT EXISTS (SELECT 1 FROM pg_replication_origin)"));

  /* Again: everything is absent, which is fine. */
  sr_run(&r, p.src_uri, p.dst_uri, NULL,
         (const char *[]){ "cleanup", "--slot-name", "godwit_t1", "--origin", "godwit_t1", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_eq(cJSON_GetArraySize(json_get(r.json, "dropped")), 0);
  cr_expect_str_eq(sr_str(&r, "slot.state"), "absent");
  cr_expect_str_eq(sr_str(&r, "publication.state"), "absent");
  cr_expect_str_eq(sr_str(&r, "sentinelSchema.state"), "absent");
  cr_expect_str_eq(sr_str(&r, "origin.state"), "absent");
  sr_free(&r);
  sr_pair_stop(&p);
}

/* ----- reown ---------------------------------------------------------------------------------- */

static const char *const every_kind_sql =
  "CREATE SCHEMA app;"
  "CREATE TABLE app.t(id serial PRIMARY KEY, x int GENERATED ALWAYS AS IDENTITY, m text);"
  "CREATE TABLE app.parted(id int) PARTITION BY RANGE (id);"
  "CREATE TABLE app.parted_1 PARTITION OF app.parted FOR VALUES FROM (0) TO (100);"
  "CREATE VIEW app.v AS SELECT id FROM app.t;"
  "CREATE MATERIALIZED VIEW app.mv AS SELECT id FROM app.t;"
  "CREATE SEQUENCE app.free_seq;"
  "CREATE FUNCTION app.f(a int, b text) RETURNS int LANGUAGE sql AS 'SELECT 1';"
  "CREATE PROCEDURE app.pr() LANGUAGE sql AS 'SELECT 1';"
  "CREATE AGGREGATE app.agg(int) (sfunc = int4pl, stype = int);"
  "CREATE TYPE app.mood AS ENUM ('ok', 'sad');"
  "CREATE TYPE app.pair AS (a int, b text);"
  "CREATE DOMAIN app.positive AS int CHECK (VALUE > 0);"
  "CREATE TYPE app.floatrange AS RANGE (subtype = float8);"
  "CREATE SCHEMA \"Odd Schema\";"
  "CREATE TABLE \"Odd Schema\".\"Odd \"\"T\"\"\"(id int);"
  "CREATE TABLE public.in_public(id int)";

/* Objects of every kind (outside pg_catalog and information_schema) owned by role. */
static char *owned_by(struct srpair *p, const char *role)
{
  char sql[2048];
  snprintf(sql, sizeof(sql),
           "SELECT pg_catalog.set_config('search_path', '', false);"
           "SELECT coalesce(string_agg(what, ', ' ORDER BY what), '') FROM ("
           " SELECT 'schema ' || nspname AS what FROM pg_namespace WHERE nspowner = '%s'::regrole"
           " UNION ALL SELECT 'rel ' || oid::regclass FROM pg_class WHERE relowner = '%s'::regrole"
           "   AND relnamespace::regnamespace::text NOT IN ('pg_catalog', 'information_schema')"
           "   AND relkind <> 't'"
           " UNION ALL SELECT 'proc ' || oid::regprocedure FROM pg_proc"
           "   WHERE proowner = '%s'::regrole AND pronamespace <> 'pg_catalog'::regnamespace"
           "   AND pronamespace <> 'information_schema'::regnamespace"
           " UNION ALL SELECT 'type ' || oid::regtype FROM pg_type WHERE typowner = '%s'::regrole"
           "   AND typnamespace <> 'pg_catalog'::regnamespace"
           "   AND typnamespace <> 'information_schema'::regnamespace) x",
           role, role, role, role);
  return sr_q(&p->dst, "shop", sql);
}

Test(runner_steps, reown_hands_every_kind_over, .timeout = 120)
{
  struct srpair p;
  sr_pair_start(&p, false);
  pgfx_exec(&p.dst, "shop", "CREATE ROLE app_owner; GRANT app_owner TO dst_app;");
  pgfx_exec(&p.dst, "shop", "SET ROLE dst_app; %s; RESET ROLE", every_kind_sql);
  /* a schema the migration role may create in but not grant on */
  pgfx_exec(&p.dst, "shop", "CREATE SCHEMA locked; GRANT USAGE, CREATE ON SCHEMA locked TO "
                            "dst_app; SET ROLE dst_app; CREATE TABLE locked.t(x int); RESET ROLE");
  char *before = owned_by(&p, "dst_app");
  cr_log_info("owned by dst_app before: %s", before);
  cr_assert_not_null(strstr(before, "rel app.parted_1"));
  free(before);

  /* A role that does not exist: the first statement fails, and the last lines say which. */
  struct srun r;
  sr_run(&r, NULL, p.dst_uri, NULL, (const char *[]){ "reown", "--owner", "nobody_here", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "result"), "Failed");
  cr_expect_eq(sr_num(&r, "statementsRun"), 0);
  long total = sr_num(&r, "statementsLeft");
  cr_expect_gt(total, 15);
  cr_expect_str_eq(sr_str(&r, "failed.statement"), "ALTER SCHEMA \"Odd Schema\" OWNER TO nobody_here");
  cr_expect_not_null(strstr(sr_str(&r, "failed.error"), "role \"nobody_here\" does not exist"));
  const char *tail = sr_tail(&r, 2);
  cr_expect_not_null(strstr(tail, "FAIL reown.alter: ALTER SCHEMA \"Odd Schema\" OWNER TO nobody_here: "
                                  "role \"nobody_here\" does not exist"),
                     "%s", tail);
  cr_expect_not_null(strstr(tail, "RESULT Failed:"), "%s", tail);
  cr_expect_not_null(strstr(strstr(tail, "RESULT"), "OWNER TO nobody_here"), "%s", tail);
  sr_free(&r);

  /* app_owner gets CREATE on public from the database owner (dst_app), but nobody here may
   * grant it on "locked": the schemas and the tables before locked.t move, then locked.t fails;
   * the re-run after the superuser's grant picks up exactly what is left. */
  sr_run(&r, NULL, p.dst_uri, NULL, (const char *[]){ "reown", "--owner", "app_owner", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "failed.statement"), "ALTER TABLE locked.t OWNER TO app_owner");
  cr_expect_not_null(strstr(sr_str(&r, "failed.error"), "permission denied for schema locked"));
  cr_expect_eq(sr_num(&r, "byKind.schema"), 2);
  cr_expect_eq(sr_num(&r, "byKind.schema privilege"), 2, "GRANT CREATE on locked and public");
  char *pub = pgfx_query1(&p.dst, "shop", "SELECT has_schema_privilege('app_owner', 'public', "
                                          "'CREATE')::text");
  cr_expect_str_eq(pub, "true", "the handover granted CREATE on public");
  free(pub);
  long left = sr_num(&r, "statementsLeft");
  /* the list for nobody_here had no GRANT (no such role); here both GRANTs ran and the one on
   * locked, which granted nothing, is still pending */
  cr_expect_eq(sr_num(&r, "statementsRun") + left, total + 3);
  cr_expect_gt(left, 0);
  static const char *const kinds[] = { "byKind.table", "byKind.view", "byKind.materialized view",
                                       "byKind.sequence", "byKind.function", "byKind.procedure",
                                       "byKind.aggregate", "byKind.type", "byKind.domain" };
  long per_kind[sizeof(kinds) / sizeof(kinds[0])];
  for(size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
    per_kind[k] = sr_num(&r, kinds[k]) > 0 ? sr_num(&r, kinds[k]) : 0;
  sr_free(&r);
  pgfx_exec(&p.dst, "shop", "GRANT CREATE ON SCHEMA locked TO app_owner");
  sr_run(&r, NULL, p.dst_uri, NULL, (const char *[]){ "reown", "--owner", "app_owner", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_eq(sr_num(&r, "statementsRun"), left - 1, "all that was left but the GRANT on locked");
  cr_expect_eq(sr_num(&r, "statementsLeft"), 0);
  for(size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) /* over both runs */
    cr_expect_gt(per_kind[k] + (sr_num(&r, kinds[k]) > 0 ? sr_num(&r, kinds[k]) : 0), 0, "%s",
                 kinds[k]);
  sr_free(&r);
  char *after = owned_by(&p, "dst_app");
  cr_expect_str_eq(after, "", "still owned by the migration role: %s", after);
  free(after);
  char *moved = owned_by(&p, "app_owner");
  cr_log_info("owned by app_owner after: %s", moved);
  for(const char *const *w = (const char *[]){ "schema app", "schema Odd Schema",
                                               "rel \"Odd Schema\".\"Odd \"\"T\"\"\"",
                                               "rel app.t", "rel app.t_id_seq", "rel app.t_x_seq",
                                               "rel app.parted_1", "rel app.v", "rel app.mv",
                                               "rel app.free_seq", "proc app.f(integer,text)",
                                               "proc app.pr()", "proc app.agg(integer)",
                                               "type app.mood", "type app.pair",
                                               "type app.positive", "type app.floatrange",
                                               "type app.floatmultirange",
                                               "rel public.in_public", "rel locked.t", NULL };
      *w; w++)
    cr_expect_not_null(strstr(moved, *w), "%s not handed over: %s", *w, moved);
  free(moved);

  /* Nothing left: a re-run runs nothing. */
  sr_run(&r, NULL, p.dst_uri, NULL, (const char *[]){ "reown", "--owner", "app_owner", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_eq(sr_num(&r, "statementsRun"), 0);
  cr_expect_eq(sr_num(&r, "statementsLeft"), 0);
  sr_free(&r);
  sr_pair_stop(&p);
}

/* ----- verify without pgcopydb: the exact-equality rule ------------------------------------ */

Test(runner_steps, verify_takes_exact_origin_progress_only, .timeout = 120)
{
  struct srpair p;
  sr_pair_start(&p, false);
  pgfx_exec(&p.dst, "shop",
            "SELECT pg_replication_origin_create('godwit_x');"
            "SELECT pg_replication_origin_advance('godwit_x', '0/3000AB8')");

  /* Exactly at the end position: drained, nothing compared (the target has no tables). */
  struct srun r;
  sr_run(&r, p.src_uri, p.dst_uri, NULL,
         (const char *[]){ "verify", "--end-lsn", "0/3000AB8", "--origin", "godwit_x", NULL });
  cr_expect_eq(r.code, 0);
  cr_expect_str_eq(sr_str(&r, "verdict"), "DrainVerified");
  cr_expect(sr_bool(&r, "exact"));
  cr_expect_str_eq(sr_str(&r, "method"), "origin");
  cr_expect_str_eq(sr_str(&r, "originLSN"), "0/3000AB8");
  cr_expect_eq(sr_num(&r, "tablesCompared"), 0);
  cr_expect(sr_bool(&r, "sequencesSynced"));
  cr_expect_eq(sr_num(&r, "sequences.skipped"), 2, "not on the target: skipped, not failed");
  sr_free(&r);

  /* One byte further: no tolerance; the content decides, and the target has none of it. */
  sr_run(&r, p.src_uri, p.dst_uri, NULL,
         (const char *[]){ "verify", "--end-lsn", "0/3000AB9", "--origin", "godwit_x", NULL });
  cr_expect_eq(r.code, 1);
  cr_expect_str_eq(sr_str(&r, "verdict"), "DrainIncomplete");
  cr_expect_not(sr_bool(&r, "exact"));
  cr_expect_str_eq(sr_str(&r, "method"), "data");
  cr_expect_eq(sr_num(&r, "tablesDiffering"), 3);
  cr_expect_not_null(strstr(r.report, "does not exist on the target"), "%s", r.report);
  sr_free(&r);

  /* A target that does not answer: no verdict, retry. */
  const char *unreachable = "postgres://dst_app:" SR_DST_PW "@127.0.0.1:1/shop";
  sr_run(&r, p.src_uri, unreachable, NULL,
         (const char *[]){ "verify", "--end-lsn", "0/3000AB8", "--origin", "godwit_x",
                           "--attempts", "2", NULL });
  cr_expect_eq(r.code, 2);
  cr_expect_str_eq(sr_str(&r, "result"), "Transient");
  cr_expect(cJSON_IsNull(json_get(r.json, "verdict")));
  sr_free(&r);
  sr_pair_stop(&p);
}
