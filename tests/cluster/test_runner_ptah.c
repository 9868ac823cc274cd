/*
 * test_runner_ptah.c: `godwit-runner ptah-migrate` (controller/runner/ptah*.c) on a real
 * PostgreSQL 15, run as the controller's Job runs it: the URI in GODWIT_DATABASE_URI, the
 * migrations as files in a directory (a mounted ConfigMap), the report in a file, the exit code.
 *
 * Every run is checked for the documented invariants: no password nor URI in stdout, stderr or
 * the report; a report of at most 4096 bytes that is one JSON object of kind PtahRunnerReport;
 * exit code and "result" agreeing (0 Passed, 1 Failed, 2 Transient, 3 ProtocolMismatch).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "kube/kube.h"
#include "pgfixture.h"
#include "test_runner_steps_util.h"

#define PT_PW "Ptah-Secret-7731"
#define PT_LOCK_SQL "pg_advisory_lock(1886675304, hashtext('public.ptah_migrations'))"

struct ptfx {
  struct pgfx pg;
  char uri[256];
  char dir[64]; /* the migrations */
};

struct prun {
  int code;
  char *out, *report;
  cJSON *json;
  const char *uri; /* checked for leaks */
  char tmp[64], outp[128], repp[128];
  pid_t pid;
};

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

static void pt_start(struct ptfx *f)
{
  pgfx_start(&f->pg, NULL);
  pgfx_create_role(&f->pg, "app", PT_PW, "LOGIN");
  pgfx_create_db(&f->pg, "shop", "app");
  pgfx_uri(&f->pg, f->uri, sizeof(f->uri), "app", PT_PW, "shop");
  sr_tmpdir(f->dir, sizeof(f->dir));
}

static void pt_stop(struct ptfx *f)
{
  pgfx_stop(&f->pg);
  sr_rmrf(f->dir);
}

static void pt_file(struct ptfx *f, const char *name, const char *sql)
{
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", f->dir, name);
  FILE *out = fopen(path, "w");
  cr_assert_not_null(out, "%s: %s", path, strerror(errno));
  fputs(sql, out);
  fclose(out);
}

static void pt_sha256(const char *text, char out[72])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  cr_assert(EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL));
  strcpy(out, "sha256:");
  for(unsigned i = 0; i < n; i++)
    snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static char *pt_q(struct ptfx *f, const char *sql)
{
  return sr_q(&f->pg, "shop", sql);
}

static bool pt_true(struct ptfx *f, const char *sql)
{
  return sr_true(&f->pg, "shop", sql);
}

static bool pt_table(struct ptfx *f, const char *name)
{
  char sql[256];
  snprintf(sql, sizeof(sql), "SELECT to_regclass('%s') IS NOT NULL", name);
  return pt_true(f, sql);
}

static const char *runner(void)
{
  static char path[512];
  const char *b = getenv("GODWIT_BUILD");
  snprintf(path, sizeof(path), "%s/godwit-runner", b && *b ? b : "build");
  return path;
}

/* godwit-runner ptah-migrate with the Job's flags for the fixture (Apply of shop-apply-1,
 * --result none), then args (later flags win), env entries "NAME=value" after the URI. */
static void pt_spawn(struct prun *r, struct ptfx *f, const char *uri, const char *const *args,
                     const char *const *env)
{
  memset(r, 0, sizeof(*r));
  r->uri = uri;
  sr_tmpdir(r->tmp, sizeof(r->tmp));
  snprintf(r->outp, sizeof(r->outp), "%s/out", r->tmp);
  snprintf(r->repp, sizeof(r->repp), "%s/report.json", r->tmp);
  const char *argv[80] = { runner(), "ptah-migrate", "--protocol", "1", "--operation",
                           "shop-apply-1", "--type", "Apply", "--owner-name", "shop",
                           "--namespace", "default", "--job-name", "shop-apply-1",
                           "--migrations-dir", f->dir, "--result", "none", "--report", r->repp,
                           "--retry-delay-ms", "100", "--connect-timeout", "3" };
  int argc = 24;
  for(const char *const *a = args; a && *a && argc < 78; a++)
    argv[argc++] = *a;
  argv[argc] = NULL;
  r->pid = fork();
  cr_assert_neq(r->pid, -1);
  if(r->pid == 0) {
    int fd = open(r->outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    unsetenv("GODWIT_DATABASE_URI");
    unsetenv("GODWIT_REPORT");
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    if(uri)
      setenv("GODWIT_DATABASE_URI", uri, 1);
    for(const char *const *e = env; e && *e; e++)
      putenv((char *)*e);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
}

static void pt_wait(struct prun *r)
{
  int st;
  cr_assert_eq(waitpid(r->pid, &st, 0), r->pid);
  cr_assert(WIFEXITED(st), "the runner did not exit (status %d)", st);
  r->code = WEXITSTATUS(st);
  r->out = sr_slurp(r->outp);
  r->report = sr_slurp(r->repp);
  sr_rmrf(r->tmp);
  cr_log_info("godwit-runner ptah-migrate: exit %d\n%s\nreport: %s", r->code, r->out, r->report);
  cr_assert_leq(strlen(r->report), 4096, "report of %zu bytes", strlen(r->report));
  char err[256];
  cr_assert_eq(json_parse_strict(r->report, strlen(r->report), &r->json, err, sizeof(err)), 0,
               "report is not JSON: %s: %s", err, r->report);
  cr_assert_str_eq(json_get_str(r->json, "kind"), "PtahRunnerReport");
  static const char *const results[] = { "Passed", "Failed", "Transient", "ProtocolMismatch",
                                          "CredentialFailed" };
  cr_assert(r->code >= 0 && r->code <= 4, "exit %d", r->code);
  cr_assert_str_eq(json_get_str(r->json, "result"), results[r->code]);
  const char *secrets[] = { PT_PW, r->uri, "postgres://", "app:" };
  for(size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
    if(!secrets[i])
      continue;
    cr_assert_null(strstr(r->out, secrets[i]), "\"%s\" leaked to the output:\n%s", secrets[i],
                   r->out);
    cr_assert_null(strstr(r->report, secrets[i]), "\"%s\" leaked to the report:\n%s",
                   secrets[i], r->report);
  }
}

static void pt_run(struct prun *r, struct ptfx *f, const char *const *args)
{
  pt_spawn(r, f, f->uri, args, NULL);
  pt_wait(r);
}

static void pt_free(struct prun *r)
{
  free(r->out);
  free(r->report);
  cJSON_Delete(r->json);
  memset(r, 0, sizeof(*r));
}

static const char *pt_str(const struct prun *r, const char *path)
{
  const char *s = json_get_str(r->json, path);
  return s ? s : "";
}

static long long pt_num(const struct prun *r, const char *path)
{
  const cJSON *v = json_get(r->json, path);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

/* The report's "applied" as "1,2,3". */
static void pt_applied(const struct prun *r, char *buf, size_t len)
{
  const cJSON *a = json_get(r->json, "applied");
  cr_assert(cJSON_IsArray(a), "no applied list: %s", r->report);
  size_t o = 0;
  buf[0] = '\0';
  const cJSON *v;
  cJSON_ArrayForEach(v, a)
    o += (size_t)snprintf(buf + o, len - o, "%s%lld", o ? "," : "", (long long)v->valuedouble);
}

static void assert_outcome(const struct prun *r, int code, const char *outcome, long long from,
                           long long to, const char *applied)
{
  cr_assert_eq(r->code, code, "exit %d, expected %d:\n%s", r->code, code, r->out);
  cr_assert_str_eq(pt_str(r, "outcome"), outcome, "%s", r->report);
  cr_assert_eq(pt_num(r, "fromVersion"), from, "%s", r->report);
  cr_assert_eq(pt_num(r, "toVersion"), to, "%s", r->report);
  char got[256];
  pt_applied(r, got, sizeof(got));
  cr_assert_str_eq(got, applied, "%s", r->report);
  cr_assert_str_eq(pt_str(r, "operation"), "shop-apply-1");
  cr_assert(!json_get_bool(r->json, "recordDelivered", true));
}

static void three_versions(struct ptfx *f)
{
  pt_file(f, "0001_create_users.sql",
          "CREATE TABLE users (id bigint PRIMARY KEY, name text NOT NULL);\n"
          "CREATE INDEX users_name ON users (name);\n");
  pt_file(f, "0002_create_orders.sql",
          "CREATE TABLE orders (id bigint PRIMARY KEY, user_id bigint REFERENCES users);\n");
  pt_file(f, "0003_seed.sql", "INSERT INTO users VALUES (1, 'ada'), (2, 'grace');\n");
}

/* ------------------------------------------------------------------------------------------ */

Test(runner_ptah, applies_three_versions_then_is_up_to_date, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  three_versions(&f);
  struct prun r;
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "Applied", 0, 3, "1,2,3");
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  cr_assert_str_eq(pt_str(&r, "type"), "Apply");
  cr_assert_eq(pt_num(&r, "attempt"), 1);
  cr_assert_not_null(strstr(r.out, "PASS version 1: applied 0001_create_users.sql in "), "%s",
                     r.out);
  cr_assert_not_null(strstr(r.out, "PASS version 3: applied 0003_seed.sql in "), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "RESULT Passed: "), "%s", r.out);
  cr_assert_null(strstr(r.out, "WARN"), "%s", r.out);
  pt_free(&r);

  cr_assert(pt_table(&f, "public.users") && pt_table(&f, "public.orders"));
  char *n = pt_q(&f, "SELECT count(*) FROM users");
  cr_assert_str_eq(n, "2");
  free(n);
  static const char *const names[] = { "0001_create_users.sql", "0002_create_orders.sql",
                                       "0003_seed.sql" };
  for(int v = 1; v <= 3; v++) {
    char path[256], sql[256], want[72];
    snprintf(path, sizeof(path), "%s/%s", f.dir, names[v - 1]);
    char *text = sr_slurp(path);
    pt_sha256(text, want);
    free(text);
    snprintf(sql, sizeof(sql), "SELECT checksum || '|' || description || '|' || operation || '|'"
             " || applied_by || '|' || (execution_ms >= 0) || '|' || (applied_at <= now())"
             " FROM public.ptah_migrations WHERE version = %d", v);
    char *row = pt_q(&f, sql);
    char expect[256];
    snprintf(expect, sizeof(expect), "%s|%s|shop-apply-1|app|true|true", want,
             v == 1 ? "create_users" : v == 2 ? "create_orders" : "seed");
    cr_assert_str_eq(row, expect);
    free(row);
  }
  /* the lock went with the run */
  cr_assert(pt_true(&f, "SELECT NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory')"));

  pt_run(&r, &f, (const char *[]){ "--operation", "shop-apply-2", NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "UpToDate", "%s", r.report);
  cr_assert_eq(pt_num(&r, "fromVersion"), 3);
  cr_assert_eq(pt_num(&r, "toVersion"), 3);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  pt_free(&r);
  n = pt_q(&f, "SELECT count(*) FROM public.ptah_migrations");
  cr_assert_str_eq(n, "3");
  free(n);
  pt_stop(&f);
}

Test(runner_ptah, target_two_applies_only_one_and_two, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  three_versions(&f);
  struct prun r;
  pt_run(&r, &f, (const char *[]){ "--target", "2", NULL });
  assert_outcome(&r, 0, "Applied", 0, 2, "1,2");
  pt_free(&r);
  cr_assert(pt_table(&f, "public.orders"));
  cr_assert(pt_true(&f, "SELECT NOT EXISTS (SELECT 1 FROM users)"), "version 3 ran");
  cr_assert(pt_true(&f, "SELECT array_agg(version ORDER BY version)::text = '{1,2}'"
                        " FROM public.ptah_migrations"));

  pt_run(&r, &f, (const char *[]){ "--target", "1", NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "UpToDate");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "only go forward"), "%s", r.report);
  pt_free(&r);

  pt_run(&r, &f, (const char *[]){ "--target", "7", NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Failed");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "target version 7 has no migration"), "%s",
                     r.report);
  pt_free(&r);

  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "Applied", 2, 3, "3");
  pt_free(&r);

  /* a release that ships only new versions: none here yet, the applied ones need no file */
  sr_rmrf(f.dir);
  cr_assert_eq(mkdir(f.dir, 0700), 0);
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "UpToDate", 3, 3, "");
  pt_free(&r);
  pt_run(&r, &f, (const char *[]){ "--target", "3", NULL });
  assert_outcome(&r, 0, "UpToDate", 3, 3, "");
  pt_free(&r);
  pt_file(&f, "0004_more.sql", "CREATE TABLE more (id int);");
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "Applied", 3, 4, "4");
  pt_free(&r);
  pt_stop(&f);
}

Test(runner_ptah, changed_applied_file_is_refused, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  three_versions(&f);
  struct prun r;
  pt_run(&r, &f, (const char *[]){ "--target", "2", NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  pt_free(&r);
  char old[72], now[72];
  pt_sha256("CREATE TABLE orders (id bigint PRIMARY KEY, user_id bigint REFERENCES users);\n",
            old);
  const char *changed = "CREATE TABLE orders (id bigint PRIMARY KEY, note text);\n";
  pt_sha256(changed, now);
  pt_file(&f, "0002_create_orders.sql", changed);

  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Failed", 2, 2, "");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "version 2 (\"0002_create_orders.sql\")"), "%s", m);
  cr_assert_not_null(strstr(m, old), "%s", m);
  cr_assert_not_null(strstr(m, now), "%s", m);
  cr_assert_not_null(strstr(m, "restore its text, or add a new version"), "%s", m);
  cr_assert_not_null(strstr(r.out, "FAIL checksum: version 2"), "%s", r.out);
  pt_free(&r);
  cr_assert(pt_true(&f, "SELECT NOT EXISTS (SELECT 1 FROM users)"), "version 3 ran");
  cr_assert(pt_true(&f, "SELECT max(version) = 2 FROM public.ptah_migrations"));
  pt_stop(&f);
}

Test(runner_ptah, error_in_version_two_of_three_is_partial, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE t1 (id int);");
  pt_file(&f, "0002_two.sql", "CREATE TABLE t2 (id int);\nSELECT no_such_function(1);\n");
  pt_file(&f, "0003_three.sql", "CREATE TABLE t3 (id int);");
  struct prun r;
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Partial", 0, 1, "1");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "version 2 (\"0002_two.sql\") failed: function "
                               "no_such_function(integer) does not exist (SQLSTATE 42883; HINT: "),
                     "%s", m);
  cr_assert_not_null(strstr(m, "rolled back"), "%s", m);
  cr_assert_not_null(strstr(r.out, "FAIL version 2: "), "%s", r.out);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  pt_free(&r);
  cr_assert(pt_table(&f, "public.t1"));
  cr_assert(!pt_table(&f, "public.t2"), "version 2 left its table");
  cr_assert(!pt_table(&f, "public.t3"), "version 3 ran");
  cr_assert(pt_true(&f, "SELECT array_agg(version)::text = '{1}' FROM public.ptah_migrations"));
  pt_stop(&f);
}

Test(runner_ptah, error_in_first_version_fails, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE t1 (id int);\nSELECT 1/0;\n");
  pt_file(&f, "0002_two.sql", "CREATE TABLE t2 (id int);");
  struct prun r;
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Failed", 0, 0, "");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "version 1 (\"0001_one.sql\") failed: division by zero "
                               "(SQLSTATE 22012)"), "%s", m);
  cr_assert_not_null(strstr(m, "1 later version did not run"), "%s", m);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.t1") && !pt_table(&f, "public.t2"));
  cr_assert(pt_true(&f, "SELECT count(*) = 0 FROM public.ptah_migrations"));
  pt_stop(&f);
}

Test(runner_ptah, out_of_order_file_is_refused, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE t1 (id int);");
  pt_file(&f, "0003_three.sql", "CREATE TABLE t3 (id int);");
  struct prun r;
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "Applied", 0, 3, "1,3");
  pt_free(&r);
  pt_file(&f, "0002_two.sql", "CREATE TABLE t2 (id int);");
  pt_file(&f, "0004_four.sql", "CREATE TABLE t4 (id int);");
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Failed", 3, 3, "");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "out of order: version 2 (\"0002_two.sql\") is not applied"), "%s",
                     m);
  cr_assert_not_null(strstr(r.out, "FAIL order: version 2"), "%s", r.out);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.t2") && !pt_table(&f, "public.t4"));
  pt_stop(&f);
}

Test(runner_ptah, bad_file_name_is_refused_before_connecting, .timeout = 60)
{
  struct ptfx f;
  sr_tmpdir(f.dir, sizeof(f.dir));
  pt_file(&f, "0001_one.sql", "SELECT 1;");
  pt_file(&f, "notes.txt", "a note");
  pt_file(&f, "0002_.sql", "SELECT 2;");
  pt_file(&f, ".hidden", "kubelet's");
  char sub[128];
  snprintf(sub, sizeof(sub), "%s/..data", f.dir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  /* nothing listens on port 1: a connection attempt would end Transient (exit 2) */
  const char *uri = "postgres://app:" PT_PW "@127.0.0.1:1/shop";
  struct prun r;
  pt_spawn(&r, &f, uri, NULL, NULL);
  pt_wait(&r);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Failed");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "\"notes.txt\" is not named <digits>_<description>.sql"), "%s", m);
  cr_assert_not_null(strstr(m, "\"0002_.sql\" has no description"), "%s", m);
  cr_assert_null(strstr(m, "hidden"), "%s", m);
  cr_assert_null(strstr(m, "..data"), "%s", m);
  cr_assert_not_null(strstr(m, "the database was not contacted"), "%s", m);
  cr_assert_null(strstr(r.out, "connect"), "it tried to connect:\n%s", r.out);
  cr_assert(cJSON_IsNull(json_get(r.json, "fromVersion")), "%s", r.report);
  pt_free(&r);

  /* two files of one version, an empty one */
  char p[256];
  snprintf(p, sizeof(p), "%s/notes.txt", f.dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/0002_.sql", f.dir);
  unlink(p);
  pt_file(&f, "1_again.sql", "SELECT 1;");
  pt_file(&f, "0005_empty.sql", " \n");
  pt_spawn(&r, &f, uri, NULL, NULL);
  pt_wait(&r);
  cr_assert_eq(r.code, 1, "%s", r.out);
  m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "\"0001_one.sql\" and \"1_again.sql\" both have version 1"), "%s",
                     m);
  cr_assert_not_null(strstr(m, "\"0005_empty.sql\" is empty"), "%s", m);
  pt_free(&r);
  sr_rmrf(f.dir);
}

Test(runner_ptah, protocol_mismatch_exits_3_without_connecting, .timeout = 60)
{
  struct ptfx f;
  sr_tmpdir(f.dir, sizeof(f.dir));
  pt_file(&f, "not-a-migration", "x");
  const char *uri = "postgres://app:" PT_PW "@127.0.0.1:1/shop";
  struct prun r;
  /* a flag this runner does not know: a Job of another protocol may well pass one */
  pt_spawn(&r, &f, uri, (const char *[]){ "--protocol", "2", "--future-flag", "x", NULL }, NULL);
  pt_wait(&r);
  cr_assert_eq(r.code, 3, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "protocol"), "1");
  cr_assert_str_eq(pt_str(&r, "requested"), "2");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "protocol 1"), "%s", r.report);
  cr_assert_not_null(strstr(r.out, "FAIL protocol: "), "%s", r.out);
  cr_assert_null(strstr(r.out, "connect"), "%s", r.out);
  cr_assert_null(strstr(r.out, "not-a-migration"), "it read the files:\n%s", r.out);
  cr_assert_null(json_get(r.json, "recordDelivered"), "%s", r.report);
  pt_free(&r);
  sr_rmrf(f.dir);
}

Test(runner_ptah, lock_held_by_another_session_fails_naming_it, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  three_versions(&f);
  PGconn *holder = pgfx_connect(&f.pg, "shop");
  PGresult *res = PQexec(holder, "SET application_name = 'ptah-blocker'; SELECT " PT_LOCK_SQL);
  cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(holder));
  PQclear(res);
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(holder));

  struct prun r;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pt_run(&r, &f, (const char *[]){ "--lock-wait-s", "1", NULL });
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cr_assert_geq(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9, 0.95);
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Failed");
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, pid), "%s (want %s)", m, pid);
  cr_assert_not_null(strstr(m, "application_name \"ptah-blocker\""), "%s", m);
  cr_assert_not_null(strstr(m, "nothing was applied"), "%s", m);
  cr_assert(!json_get_bool(r.json, "lockContinuous", true));
  cr_assert_not_null(strstr(r.out, "FAIL lock: "), "%s", r.out);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.ptah_migrations") && !pt_table(&f, "public.users"));

  PQfinish(holder);
  pt_run(&r, &f, (const char *[]){ "--lock-wait-s", "5", NULL });
  assert_outcome(&r, 0, "Applied", 0, 3, "1,2,3");
  pt_free(&r);
  pt_stop(&f);
}

Test(runner_ptah, observe_reports_the_highest_version_and_creates_nothing, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  const char *observe[] = { "--type", "Observe", NULL };
  struct prun r;
  pt_run(&r, &f, observe);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Succeeded");
  cr_assert_eq(pt_num(&r, "fromVersion"), 0);
  cr_assert_eq(pt_num(&r, "toVersion"), 0);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "does not exist"), "%s", r.report);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.ptah_migrations"), "Observe created the history table");

  three_versions(&f);
  pt_run(&r, &f, (const char *[]){ "--target", "2", NULL });
  cr_assert_eq(r.code, 0, "%s", r.out);
  pt_free(&r);
  /* Observe does not read the files: a broken ConfigMap does not hide the database's version */
  pt_file(&f, "garbage", "x");
  pt_run(&r, &f, observe);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Succeeded");
  cr_assert_eq(pt_num(&r, "fromVersion"), 2);
  cr_assert_eq(pt_num(&r, "toVersion"), 2);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "records 2 versions (1, 2)"), "%s", r.report);
  pt_free(&r);
  pt_stop(&f);
}

Test(runner_ptah, passwords_never_appear, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  /* the server quotes the value in its error: the runner must not pass it on */
  pt_file(&f, "0001_leak.sql", "SELECT '" PT_PW "'::int;");
  struct prun r;
  pt_run(&r, &f, NULL); /* pt_wait asserts the password, the URI and "app:" are absent */
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "invalid input syntax for type integer"),
                     "%s", r.report);
  pt_free(&r);

  char bad[256];
  pgfx_uri(&f.pg, bad, sizeof(bad), "app", "Wrong-Secret-1234", "shop");
  pt_spawn(&r, &f, bad, (const char *[]){ "--attempts", "2", NULL }, NULL);
  pt_wait(&r);
  cr_assert_eq(r.code, 1, "a bad password is not transient:\n%s", r.out);
  cr_assert_null(strstr(r.out, "Wrong-Secret-1234"), "%s", r.out);
  cr_assert_null(strstr(r.report, "Wrong-Secret-1234"), "%s", r.report);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "nothing was applied: cannot connect"), "%s",
                     r.report);
  pt_free(&r);
  pt_stop(&f);
}

Test(runner_ptah, unreachable_database_is_transient, .timeout = 60)
{
  struct ptfx f;
  sr_tmpdir(f.dir, sizeof(f.dir));
  pt_file(&f, "0001_one.sql", "SELECT 1;");
  struct prun r;
  pt_spawn(&r, &f, "postgres://app:" PT_PW "@127.0.0.1:1/shop",
           (const char *[]){ "--attempts", "2", NULL }, NULL);
  pt_wait(&r);
  cr_assert_eq(r.code, 2, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Failed");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "nothing was applied: cannot connect"), "%s",
                     r.report);
  pt_free(&r);
  sr_rmrf(f.dir);
}

Test(runner_ptah, a_version_that_drops_the_lock_is_not_continuous, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE t1 (id int); SELECT pg_advisory_unlock_all();");
  struct prun r;
  pt_run(&r, &f, NULL);
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Applied");
  cr_assert(!json_get_bool(r.json, "lockContinuous", true), "%s", r.report);
  cr_assert_not_null(strstr(r.out, "WARN lock: "), "%s", r.out);
  pt_free(&r);
  pt_stop(&f);
}

Test(runner_ptah, custom_history_table_is_quoted, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pgfx_exec(&f.pg, "shop", "CREATE SCHEMA \"Audit Trail\" AUTHORIZATION app");
  pt_file(&f, "0001_one.sql", "CREATE TABLE t1 (id int);");
  struct prun r;
  pt_run(&r, &f, (const char *[]){ "--history-table", "Audit Trail.Ptah History", NULL });
  assert_outcome(&r, 0, "Applied", 0, 1, "1");
  pt_free(&r);
  cr_assert(pt_true(&f, "SELECT count(*) = 1 FROM \"Audit Trail\".\"Ptah History\""));
  cr_assert(!pt_table(&f, "public.ptah_migrations"));

  pt_run(&r, &f, (const char *[]){ "--history-table", "ptah_migrations", NULL });
  cr_assert_eq(r.code, 1, "%s", r.out);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "--history-table must be \"schema.table\""),
                     "%s", r.report);
  pt_free(&r);
  pt_stop(&f);
}

/* The runner's backend, once it runs query_like (0 when none within timeout_ms). */
static int wait_backend(struct ptfx *f, const char *query_like, int timeout_ms)
{
  char sql[512];
  snprintf(sql, sizeof(sql), "SELECT pid FROM pg_stat_activity WHERE application_name = "
           "'godwit-ptah-shop-apply-1' AND query LIKE '%s' AND state = 'active'", query_like);
  for(int waited = 0; waited < timeout_ms; waited += 100) {
    char *pid = pt_q(f, sql);
    int p = atoi(pid);
    free(pid);
    if(p > 0)
      return p;
    sleep_ms(100);
  }
  return 0;
}

static bool backend_gone(struct ptfx *f, int timeout_ms)
{
  for(int waited = 0; waited < timeout_ms; waited += 100) {
    if(pt_true(f, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name"
                  " = 'godwit-ptah-shop-apply-1')"))
      return true;
    sleep_ms(100);
  }
  return false;
}

Test(runner_ptah, sigkill_during_a_version_leaves_it_unapplied, .timeout = 120)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE k1 (id int);");
  pt_file(&f, "0002_two.sql", "CREATE TABLE k2 (id int);\nSELECT pg_sleep(60);\n"
                              "CREATE TABLE k2b (id int);\n");
  pt_file(&f, "0003_three.sql", "CREATE TABLE k3 (id int);");
  struct prun r;
  pt_spawn(&r, &f, f.uri, NULL, NULL);
  cr_assert_gt(wait_backend(&f, "%pg_sleep(60)%", 30000), 0, "version 2 never started");
  kill(r.pid, SIGKILL);
  int st;
  cr_assert_eq(waitpid(r.pid, &st, 0), r.pid);
  cr_assert(WIFSIGNALED(st));
  sr_rmrf(r.tmp);
  /* client_connection_check_interval: the backend notices within about a second */
  cr_assert(backend_gone(&f, 20000), "the killed runner's backend lingers");
  cr_assert(pt_table(&f, "public.k1"));
  cr_assert(!pt_table(&f, "public.k2"), "half of version 2 committed");
  cr_assert(pt_true(&f, "SELECT array_agg(version)::text = '{1}' FROM public.ptah_migrations"));
  cr_assert(pt_true(&f, "SELECT NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory')"),
            "the lock outlived its session");

  /* never applied, so its text may change; a new run takes over from version 1 */
  pt_file(&f, "0002_two.sql", "CREATE TABLE k2 (id int);\nCREATE TABLE k2b (id int);\n");
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 0, "Applied", 1, 3, "2,3");
  pt_free(&r);
  cr_assert(pt_table(&f, "public.k2") && pt_table(&f, "public.k2b") && pt_table(&f, "public.k3"));
  pt_stop(&f);
}

Test(runner_ptah, connection_lost_during_commit_is_unknown, .timeout = 120)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE u1 (id int);");
  /* a deferred constraint trigger runs at COMMIT: a window to cut the connection in */
  pt_file(&f, "0002_slow_commit.sql",
          "CREATE TABLE u2 (id int);\n"
          "CREATE FUNCTION u2_slow() RETURNS trigger LANGUAGE plpgsql AS\n"
          "  $$BEGIN PERFORM pg_sleep(60); RETURN NULL; END$$;\n"
          "CREATE CONSTRAINT TRIGGER u2_slow AFTER INSERT ON u2 DEFERRABLE INITIALLY DEFERRED\n"
          "  FOR EACH ROW EXECUTE FUNCTION u2_slow();\n"
          "INSERT INTO u2 VALUES (1);\n");
  pt_file(&f, "0003_three.sql", "CREATE TABLE u3 (id int);");
  struct prun r;
  pt_spawn(&r, &f, f.uri, NULL, NULL);
  int pid = wait_backend(&f, "COMMIT", 30000);
  cr_assert_gt(pid, 0, "version 2 never reached its COMMIT");
  pgfx_exec(&f.pg, "shop", "SELECT pg_terminate_backend(%d)", pid);
  pt_wait(&r);
  assert_outcome(&r, 1, "Unknown", 0, 1, "1");
  cr_assert(!json_get_bool(r.json, "lockContinuous", true), "%s", r.report);
  const char *m = pt_str(&r, "message");
  cr_assert_not_null(strstr(m, "during the COMMIT of version 2 (\"0002_slow_commit.sql\")"),
                     "%s", m);
  cr_assert_not_null(strstr(r.out, "FAIL version 2: "), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "RESULT Failed: outcome Unknown"), "%s", r.out);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.u3"), "version 3 ran after an uncertain commit");
  /* whichever way the COMMIT went, version 2 and its history row went together */
  cr_assert(pt_true(&f, "SELECT (to_regclass('public.u2') IS NOT NULL) = EXISTS (SELECT 1 FROM"
                        " public.ptah_migrations WHERE version = 2)"));
  pt_stop(&f);
}

Test(runner_ptah, durable_result_without_kubernetes_runs_nothing, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE d1 (id int);");
  char home[64], env_home[96];
  sr_tmpdir(home, sizeof(home));
  snprintf(env_home, sizeof(env_home), "HOME=%s", home);
  struct prun r;
  pt_spawn(&r, &f, f.uri, (const char *[]){ "--result", "durable", NULL },
           (const char *[]){ env_home, NULL });
  pt_wait(&r);
  /* a result that could not be delivered is never produced: nothing runs */
  cr_assert_eq(r.code, 4, "a credential that cannot deliver stops the run:\n%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Failed");
  cr_assert_str_eq(pt_str(&r, "result"), "CredentialFailed");
  cr_assert(!json_get_bool(r.json, "recordDelivered", true), "%s", r.report);
  cr_assert_not_null(strstr(r.out, "FAIL credential: cannot deliver the result record: no Kubernetes configuration"), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "RESULT CredentialFailed: outcome Failed"), "%s", r.out);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.d1"), "the run went on without a credential");
  sr_rmrf(home);
  pt_stop(&f);
}

/* ----- the durable record, through the local cluster ---------------------------------------- */

/* A Job of the local cluster that runs godwit-runner ptah-migrate as the controller's Job does:
 * the URI from a Secret, the service account's bound token (the job runner's TokenRequest), the
 * report in the termination message. The job runner finds godwit-runner in $GODWIT_BUILD. */
static void job_create(struct kube_client *k, const char *operation, const char *dir)
{
  char json[3072];
  snprintf(json, sizeof(json),
           "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"shop-apply-1\","
           "\"namespace\":\"default\"},\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{"
           "\"restartPolicy\":\"Never\",\"serviceAccountName\":\"godwit-runner\",\"containers\":[{"
           "\"name\":\"runner\",\"image\":\"godwit-runner:test\",\"command\":[\"godwit-runner\"],"
           "\"args\":[\"ptah-migrate\",\"--operation\",\"%s\",\"--type\",\"Apply\",\"--attempt\","
           "\"1\",\"--owner-name\",\"shop\",\"--namespace\",\"default\",\"--job-name\","
           "\"shop-apply-1\",\"--migrations-dir\",\"%s\",\"--protocol\",\"1\","
           "\"--connect-timeout\",\"3\",\"--retry-delay-ms\",\"100\"],"
           "\"env\":[{\"name\":\"GODWIT_DATABASE_URI\",\"valueFrom\":{\"secretKeyRef\":"
           "{\"name\":\"shop-db\",\"key\":\"uri\"}}}]}]}}}}",
           operation, dir);
  cJSON *job = cJSON_Parse(json);
  cr_assert_not_null(job);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, &KUBE_JOBS, "default", job, false, NULL, &st);
  cr_assert_eq(rc, GW_OK, "Job: %d %s %s", st.code, st.reason, st.message);
  kube_status_release(&st);
  cJSON_Delete(job);
}

/* The finished Pod of the Job (its container terminated), or NULL after timeout_ms. */
static cJSON *job_pod_done(struct kube_client *k, int timeout_ms)
{
  for(int waited = 0; waited < timeout_ms; waited += 200) {
    cJSON *list = NULL;
    struct kube_list_opts o = { .label_selector = "batch.kubernetes.io/job-name=shop-apply-1" };
    if(!kube_list(k, &KUBE_PODS, "default", &o, &list, NULL)) {
      cJSON *pod;
      cJSON_ArrayForEach(pod, cJSON_GetObjectItem(list, "items"))
      {
        const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
        if(json_get(cs, "state.terminated")) {
          cJSON *out = cJSON_Duplicate(pod, true);
          cJSON_Delete(list);
          return out;
        }
      }
      cJSON_Delete(list);
    }
    sleep_ms(200);
  }
  return NULL;
}

/* The Pod's log contains needle. */
static void pod_log_has(struct kube_client *k, const cJSON *pod, const char *needle)
{
  char *log = NULL;
  size_t len = 0;
  cr_assert_eq(kube_pod_log(k, "default", json_get_str(pod, "metadata.name"), NULL, 0, &log, &len,
                            NULL), GW_OK);
  cr_log_info("%s", log);
  cr_assert_not_null(strstr(log, needle), "no \"%s\" in the log:\n%s", needle, log);
  cr_assert_null(strstr(log, PT_PW), "%s", log);
  free(log);
}

/* The Pod's exit code and its report (the termination message, parsed). */
static cJSON *pod_report(const cJSON *pod, int *code)
{
  const cJSON *t = json_get(cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0),
                            "state.terminated");
  const cJSON *ec = json_get(t, "exitCode");
  *code = cJSON_IsNumber(ec) ? (int)ec->valuedouble : -1;
  const char *msg = json_get_str(t, "message");
  cr_assert_not_null(msg, "no termination message in Pod %s", json_get_str(pod, "metadata.name"));
  cr_assert_null(strstr(msg, PT_PW), "%s", msg);
  cJSON *rep = cJSON_Parse(msg);
  cr_assert_not_null(rep, "the termination message is not JSON: %s", msg);
  return rep;
}

static void job_delete(struct kube_client *k)
{
  struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_FOREGROUND, .grace_period_s = -1 };
  cr_assert_eq(kube_delete(k, &KUBE_JOBS, "default", "shop-apply-1", &o, NULL, NULL), GW_OK);
  for(int waited = 0; waited < 30000; waited += 200) {
    cJSON *got = NULL;
    gw_rc rc = kube_get(k, &KUBE_JOBS, "default", "shop-apply-1", &got, NULL);
    cJSON_Delete(got);
    if(rc == GW_ENOTFOUND)
      return;
    sleep_ms(200);
  }
  cr_assert_fail("the Job was not deleted");
}

static void create_ignoring_conflict(struct kube_client *k, const struct kube_gvr *r,
                                     const char *json)
{
  cJSON *obj = cJSON_Parse(json);
  cr_assert_not_null(obj);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, r, "default", obj, false, NULL, &st);
  cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "%s: %d %s", json, st.code, st.message);
  kube_status_release(&st);
  cJSON_Delete(obj);
}

Test(runner_ptah, durable_result_is_a_record_written_once_per_job, .timeout = 240)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_one.sql", "CREATE TABLE r1 (id int);");
  pt_file(&f, "0002_two.sql", "CREATE TABLE r2 (id int);");
  struct cl c;
  cl_start(&c, CL_WEBHOOK | CL_JOBRUNNER | CL_FAULTS);
  struct kube_client *k = cl_client(&c, "admin");
  /* the API server fails the first creates: more than one call's own retries absorb */
  cl_fault(&c, "{\"verb\":\"create\",\"pathRegex\":\"/ptahresultrecords$\",\"code\":503,"
               "\"count\":4,\"dryRun\":false}");
  cl_runner_identity(&c, "default");
  char secret[512];
  snprintf(secret, sizeof(secret), "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
           "{\"name\":\"shop-db\",\"namespace\":\"default\"},\"stringData\":{\"uri\":\"%s\"}}",
           f.uri);
  create_ignoring_conflict(k, &KUBE_SECRETS, secret);

  /* 1: applied, and the record says so, stamped with the Pod's identity by the webhook */
  job_create(k, "shop-apply-1", f.dir);
  cJSON *pod = job_pod_done(k, 90000);
  cr_assert_not_null(pod, "the runner Pod never finished");
  int code;
  cJSON *rep = pod_report(pod, &code);
  cr_assert_eq(code, 0, "exit %d, %s", code, json_get_str(rep, "message"));
  cr_assert_str_eq(json_get_str(rep, "outcome"), "Applied");
  cr_assert(json_get_bool(rep, "recordDelivered", false));
  pod_log_has(k, pod, "PASS record: created PtahResultRecord default/shop-apply-1 (outcome "
                      "Applied), after transient failures");
  char podname[128];
  snprintf(podname, sizeof(podname), "%s", json_get_str(pod, "metadata.name"));
  cJSON_Delete(rep);
  cJSON_Delete(pod);
  cJSON *rec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_get(k, &KUBE_PTAH_RESULT_RECORDS, "default", "shop-apply-1", &rec, &st),
               GW_OK, "no record: %d %s", st.code, st.message);
  kube_status_release(&st);
  char *text = cJSON_PrintUnformatted(rec);
  cr_log_info("record: %s", text);
  cJSON_free(text);
  cr_assert_str_eq(json_get_str(rec, "spec.ownerRef.kind"), "PtahMigration");
  cr_assert_str_eq(json_get_str(rec, "spec.ownerRef.name"), "shop");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.id"), "shop-apply-1");
  cr_assert_str_eq(json_get_str(rec, "spec.operation.type"), "Apply");
  cr_assert_eq(json_get(rec, "spec.operation.attempt")->valuedouble, 1);
  cr_assert_str_eq(json_get_str(rec, "spec.jobName"), "shop-apply-1");
  cr_assert_str_eq(json_get_str(rec, "spec.result.outcome"), "Applied");
  cr_assert_eq(json_get(rec, "spec.result.fromVersion")->valuedouble, 0);
  cr_assert_eq(json_get(rec, "spec.result.toVersion")->valuedouble, 2);
  cr_assert(json_get_bool(rec, "spec.result.lockContinuous", false));
  cr_assert_not_null(strstr(json_get_str(rec, "spec.result.message"), "applied versions 1, 2"));
  cr_assert_eq(strlen(json_get_str(rec, "spec.result.finishedAt")), 20);
  cr_assert_str_eq(json_get_str(rec, "spec.writer.serviceAccount"),
                   "system:serviceaccount:default:godwit-runner");
  cr_assert_str_eq(json_get_str(rec, "spec.writer.podName"), podname);
  cJSON_Delete(rec);
  cr_assert(pt_table(&f, "public.r2"));

  /* 2: the same Job again (a new Pod of the same operation): the record exists, it is ours */
  job_delete(k);
  job_create(k, "shop-apply-1", f.dir);
  pod = job_pod_done(k, 90000);
  cr_assert_not_null(pod);
  rep = pod_report(pod, &code);
  cr_assert_eq(code, 0, "exit %d, %s", code, json_get_str(rep, "message"));
  cr_assert_str_eq(json_get_str(rep, "outcome"), "UpToDate");
  cr_assert(json_get_bool(rep, "recordDelivered", false));
  pod_log_has(k, pod, "PASS record: PtahResultRecord default/shop-apply-1 was already delivered");
  cJSON_Delete(rep);
  cJSON_Delete(pod);

  /* 3: a Job of another operation under that name cannot pass the record off as its own */
  job_delete(k);
  job_create(k, "shop-apply-9", f.dir);
  pod = job_pod_done(k, 90000);
  cr_assert_not_null(pod);
  rep = pod_report(pod, &code);
  cr_assert_eq(code, 4, "exit %d, %s", code, json_get_str(rep, "message"));
  cr_assert_str_eq(json_get_str(rep, "result"), "CredentialFailed");
  cr_assert(!json_get_bool(rep, "recordDelivered", true));
  pod_log_has(k, pod, "a record of operation \"shop-apply-1\" already has this name");
  cJSON_Delete(rep);
  cJSON_Delete(pod);
  rec = NULL;
  cr_assert_eq(kube_get(k, &KUBE_PTAH_RESULT_RECORDS, "default", "shop-apply-1", &rec, NULL),
               GW_OK);
  cr_assert_str_eq(json_get_str(rec, "spec.operation.id"), "shop-apply-1", "the record changed");
  cJSON_Delete(rec);
  cl_stop(&c);
  pt_stop(&f);
}

Test(runner_ptah, copy_and_transaction_control_in_a_file, .timeout = 90)
{
  struct ptfx f;
  pt_start(&f);
  pt_file(&f, "0001_copy.sql", "CREATE TABLE c1 (id int);\nCOPY c1 FROM STDIN;\n");
  struct prun r;
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Failed", 0, 0, "");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "COPY FROM STDIN or TO STDOUT"), "%s",
                     r.report);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.c1"));

  /* a file that commits by itself escapes its transaction: the run cannot vouch for it */
  pt_file(&f, "0001_copy.sql", "CREATE TABLE c1 (id int);\nCOMMIT;\n");
  pt_file(&f, "0002_next.sql", "CREATE TABLE c2 (id int);\n");
  pt_run(&r, &f, NULL);
  assert_outcome(&r, 1, "Unknown", 0, 0, "");
  cr_assert_not_null(strstr(pt_str(&r, "message"), "ended the transaction itself"), "%s",
                     r.report);
  cr_assert(json_get_bool(r.json, "lockContinuous", false), "%s", r.report);
  pt_free(&r);
  cr_assert(!pt_table(&f, "public.c2"), "a version ran after an unrecorded one");
  cr_assert(pt_true(&f, "SELECT count(*) = 0 FROM public.ptah_migrations"));
  pt_stop(&f);
}

Test(runner_ptah, many_long_versions_keep_the_report_within_4096_bytes, .timeout = 120)
{
  struct ptfx f;
  pt_start(&f);
  for(int i = 1; i <= 300; i++) {
    char name[64], sql[96];
    snprintf(name, sizeof(name), "%lld_step.sql", 20260101000000LL + i);
    snprintf(sql, sizeof(sql), "CREATE TABLE m%d (id int);", i);
    pt_file(&f, name, sql);
  }
  struct prun r;
  pt_run(&r, &f, NULL); /* pt_wait asserts the 4096 bytes */
  cr_assert_eq(r.code, 0, "%s", r.out);
  cr_assert_str_eq(pt_str(&r, "outcome"), "Applied");
  cr_assert_eq(pt_num(&r, "toVersion"), 20260101000300LL);
  cr_assert(json_get_bool(r.json, "truncated", false), "%s", r.report);
  cr_assert_gt(cJSON_GetArraySize(json_get(r.json, "applied")), 0);
  cr_assert_not_null(strstr(pt_str(&r, "message"), "and 280 more"), "%s", r.report);
  pt_free(&r);
  cr_assert(pt_true(&f, "SELECT count(*) = 300 AND max(version) = 20260101000300"
                        " FROM public.ptah_migrations"));
  pt_stop(&f);
}
