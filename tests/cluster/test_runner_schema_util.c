/*
 * test_runner_schema_util.c: fixtures of the ptah-plan tests (test_runner_schema_util.h).
 */
#include "test_runner_schema_util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "test_runner_steps_util.h"

void sc_start(struct scfx *f, bool createdb)
{
  memset(f, 0, sizeof(*f));
  pgfx_start(&f->pg, NULL);
  pgfx_create_role(&f->pg, "app", SC_PW, createdb ? "LOGIN CREATEDB" : "LOGIN");
  pgfx_create_db(&f->pg, "shop", "app");
  pgfx_uri(&f->pg, f->uri, sizeof(f->uri), "app", SC_PW, "shop");
  sr_tmpdir(f->tmp, sizeof(f->tmp));
}

void sc_stop(struct scfx *f)
{
  pgfx_stop(&f->pg);
  sr_rmrf(f->tmp);
}

void sc_db(struct scfx *f, const char *name)
{
  pgfx_create_db(&f->pg, name, "app");
}

const char *sc_uri(struct scfx *f, char *buf, size_t len, const char *db)
{
  return pgfx_uri(&f->pg, buf, len, "app", SC_PW, db);
}

void sc_exec(struct scfx *f, const char *db, const char *sql)
{
  char uri[256];
  PGconn *c = PQconnectdb(sc_uri(f, uri, sizeof(uri), db));
  cr_assert_eq(PQstatus(c), CONNECTION_OK, "connect to %s: %s", db, PQerrorMessage(c));
  PGresult *res = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(res);
  cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY,
            "on %s: %s\n%s", db, PQresultErrorMessage(res), sql);
  PQclear(res);
  PQfinish(c);
}

static const char *runner(void)
{
  static char path[512];
  const char *b = getenv("GODWIT_BUILD");
  snprintf(path, sizeof(path), "%s/godwit-runner", b && *b ? b : "build");
  return path;
}

static void write_file(const char *path, const char *text)
{
  FILE *out = fopen(path, "w");
  cr_assert_not_null(out, "%s: %s", path, strerror(errno));
  fputs(text, out);
  fclose(out);
}

/* Starts argv with stdout and stderr into outp, env entries added (no Kubernetes
 * configuration unless env gives one); its pid. */
static pid_t start(const char *const *argv, const char *const *env, const char *outp)
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    unsetenv("GODWIT_DATABASE_URI");
    unsetenv("GODWIT_DEV_DATABASE_URI");
    unsetenv("GODWIT_REPORT");
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    for(const char *const *e = env; e && *e; e++)
      putenv((char *)*e);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int finish(pid_t pid, const char *what)
{
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "%s did not exit (status %d)", what, st);
  return WEXITSTATUS(st);
}

/* Runs argv with stdout and stderr into outp, env entries added; the exit code. */
static int run(const char *const *argv, const char *const *env, const char *outp)
{
  return finish(start(argv, env, outp), argv[0]);
}

static void check_leaks(const char *what, const char *text, const char *uri)
{
  const char *secrets[] = { SC_PW, uri, "postgres://", "app:" };
  for(size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
    cr_assert_null(strstr(text, secrets[i]), "\"%s\" leaked to the %s:\n%s", secrets[i], what,
                   text);
}

pid_t sc_plan_start(struct splan *r, struct scfx *f, const char *db, const char *desired,
                    const char *const *args, const char *const *env)
{
  memset(r, 0, sizeof(*r));
  char dpath[128], ppath[128], rpath[128], opath[128], uri[256];
  snprintf(dpath, sizeof(dpath), "%s/desired.sql", f->tmp);
  snprintf(ppath, sizeof(ppath), "%s/plan.json", f->tmp);
  snprintf(rpath, sizeof(rpath), "%s/report.json", f->tmp);
  snprintf(opath, sizeof(opath), "%s/out", f->tmp);
  unlink(ppath);
  unlink(rpath);
  write_file(dpath, desired);
  snprintf(r->envuri, sizeof(r->envuri), "GODWIT_DATABASE_URI=%s",
           sc_uri(f, uri, sizeof(uri), db));
  const char *argv[64] = { runner(), "ptah-plan", "--protocol", "1", "--operation", "shop-plan-1",
                           "--owner-name", "shop", "--namespace", "default", "--job-name",
                           "shop-plan-1", "--desired", dpath, "--plan-out", ppath, "--report",
                           rpath, "--retry-delay-ms", "100", "--connect-timeout", "3" };
  int argc = 22;
  for(const char *const *a = args; a && *a && argc < 62; a++)
    argv[argc++] = *a;
  const char *envv[16] = { r->envuri };
  int envc = 1;
  for(const char *const *e = env; e && *e && envc < 15; e++)
    envv[envc++] = *e;
  return start(argv, envv, opath);
}

static bool one_of(const char *s, const char *const *list)
{
  for(; s && *list; list++)
    if(!strcmp(s, *list))
      return true;
  return false;
}

void sc_plan_wait(struct splan *r, struct scfx *f, const char *db, pid_t pid)
{
  char ppath[128], rpath[128], opath[128], uri[256];
  snprintf(ppath, sizeof(ppath), "%s/plan.json", f->tmp);
  snprintf(rpath, sizeof(rpath), "%s/report.json", f->tmp);
  snprintf(opath, sizeof(opath), "%s/out", f->tmp);
  sc_uri(f, uri, sizeof(uri), db);
  r->code = finish(pid, "godwit-runner ptah-plan");
  r->out = sr_slurp(opath);
  r->report = sr_slurp(rpath);
  r->planfile = sr_slurp(ppath);
  cr_log_info("godwit-runner ptah-plan: exit %d\n%s\nreport: %s", r->code, r->out, r->report);
  cr_assert_leq(strlen(r->report), 4096, "report of %zu bytes", strlen(r->report));
  char err[256];
  cr_assert_eq(json_parse_strict(r->report, strlen(r->report), &r->json, err, sizeof(err)), 0,
               "report is not JSON: %s: %s", err, r->report);
  cr_assert_str_eq(json_get_str(r->json, "kind"), "PtahPlanReport", "%s", r->report);
  static const char *const results[] = { "Passed", "Failed", "Transient", "ProtocolMismatch",
                                          "CredentialFailed" };
  cr_assert(r->code >= 0 && r->code <= 4 && r->code != 3, "exit %d:\n%s", r->code, r->out);
  cr_assert_str_eq(json_get_str(r->json, "result"), results[r->code]);
  const char *type = json_get_str(r->json, "type"), *outcome = json_get_str(r->json, "outcome");
  bool apply = type && !strcmp(type, "Apply");
  static const char *const apply_passed[] = { "Applied", "UpToDate", NULL };
  static const char *const apply_failed[] = { "Failed", "Partial", "Unknown", NULL };
  static const char *const passed[] = { "Succeeded", NULL }, *const failed[] = { "Failed", NULL };
  cr_assert(one_of(outcome, r->code ? (apply ? apply_failed : failed)
                                    : (apply ? apply_passed : passed)),
            "exit %d with outcome %s (%s)", r->code, outcome ? outcome : "none", r->report);
  check_leaks("output", r->out, uri);
  check_leaks("report", r->report, uri);
  check_leaks("plan file", r->planfile, uri);
  if(r->planfile[0])
    cr_assert_eq(json_parse_strict(r->planfile, strlen(r->planfile), &r->plan, err, sizeof(err)),
                 0, "plan file is not JSON: %s", err);
  if(r->code == 0) {
    cr_assert_not_null(r->plan, "no plan file:\n%s", r->out);
    cr_assert_str_eq(json_get_str(r->plan, "digest"), json_get_str(r->json, "planDigest"));
  }
}

void sc_plan(struct splan *r, struct scfx *f, const char *db, const char *desired,
             const char *const *args, const char *const *env)
{
  pid_t pid = sc_plan_start(r, f, db, desired, args, env);
  sc_plan_wait(r, f, db, pid);
}

void sc_free(struct splan *r)
{
  free(r->out);
  free(r->report);
  free(r->planfile);
  cJSON_Delete(r->json);
  cJSON_Delete(r->plan);
  memset(r, 0, sizeof(*r));
}

const char *sc_str(const struct splan *r, const char *path)
{
  const char *s = json_get_str(r->json, path);
  return s ? s : "";
}

long sc_num(const struct splan *r, const char *path)
{
  const cJSON *v = json_get(r->json, path);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

/* realloc that asserts (a test has nothing to fall back on). */
static void *grow(void *p, size_t n)
{
  void *q = realloc(p, n);
  cr_assert_not_null(q, "out of memory");
  return q;
}

static char *statements(const struct splan *r, int own) /* own: 1 only, 0 none, -1 all */
{
  size_t cap = 1 << 16, len = 0;
  char *s = calloc(1, cap);
  const cJSON *v, *list = r->plan ? json_get(r->plan, "statements") : NULL;
  cJSON_ArrayForEach(v, list)
  {
    const char *sql = json_get_str(v, "sql");
    bool o = json_get_bool(v, "ownTransaction", false);
    if(own >= 0 && o != (own == 1))
      continue;
    size_t n = strlen(sql) + 3;
    while(len + n + 1 > cap)
      s = grow(s, cap *= 2);
    len += (size_t)sprintf(s + len, "%s;\n", sql);
  }
  return s;
}

char *sc_statements(const struct splan *r)
{
  return statements(r, -1);
}

static int psql(struct scfx *f, const char *db, const char *file, bool single, char *err,
                size_t errlen)
{
  char port[16], out[128], pw[64];
  snprintf(port, sizeof(port), "%d", f->pg.port);
  snprintf(out, sizeof(out), "%s/psql.out", f->tmp);
  snprintf(pw, sizeof(pw), "PGPASSWORD=%s", SC_PW);
  const char *argv[] = { "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                         port, "-U", "app", "-d", db, "-f", file,
                         single ? "--single-transaction" : NULL, NULL };
  const char *env[] = { pw, NULL };
  int code = run(argv, env, out);
  char *text = sr_slurp(out);
  snprintf(err, errlen, "%s", text);
  free(text);
  return code ? -1 : 0;
}

int sc_apply(struct scfx *f, const char *db, const struct splan *r, char *err, size_t errlen)
{
  char path[128];
  snprintf(path, sizeof(path), "%s/apply.sql", f->tmp);
  for(int own = 1; own >= 0; own--) {
    char *sql = statements(r, own);
    write_file(path, sql);
    free(sql);
    if(psql(f, db, path, own == 0, err, errlen))
      return -1;
  }
  return 0;
}

char *sc_dump(struct scfx *f, const char *db)
{
  char port[16], out[128];
  snprintf(port, sizeof(port), "%d", f->pg.port);
  snprintf(out, sizeof(out), "%s/dump.sql", f->tmp);
  const char *argv[] = { "pg_dump", "--schema-only", "--no-owner", "--no-privileges", "-h",
                         f->pg.sock, "-p", port, "-U", "postgres", "-f", out, db, NULL };
  char log[128];
  snprintf(log, sizeof(log), "%s/dump.log", f->tmp);
  int code = run(argv, NULL, log);
  char *logtext = sr_slurp(log);
  cr_assert_eq(code, 0, "pg_dump %s: %s", db, logtext);
  free(logtext);
  char *dump = sr_slurp(out);
  char *canon = sc_canonical(dump);
  free(dump);
  return canon;
}

/* ----- canonicalisation ---------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool dropped_line(const char *l)
{
  return !*l || !strncmp(l, "--", 2) || !strncmp(l, "SET ", 4) || !strncmp(l, "\\restrict", 9) ||
         !strncmp(l, "\\unrestrict", 11) || !strncmp(l, "SELECT pg_catalog.set_config(", 29);
}

/* A CREATE TABLE statement with its column lines sorted (a trailing comma taken off each). */
static char *sort_columns(char *stmt)
{
  if(strncmp(stmt, "CREATE TABLE ", 13))
    return stmt;
  char *lines[2048];
  size_t n = 0;
  for(char *save = NULL, *l = strtok_r(stmt, "\n", &save); l && n < 2048;
      l = strtok_r(NULL, "\n", &save))
    lines[n++] = l;
  if(n < 3)
    return stmt;
  for(size_t i = 1; i + 1 < n; i++) {
    size_t len = strlen(lines[i]);
    if(len && lines[i][len - 1] == ',')
      lines[i][len - 1] = '\0';
  }
  qsort(lines + 1, n - 2, sizeof(char *), cmp_str);
  size_t total = 0;
  for(size_t i = 0; i < n; i++)
    total += strlen(lines[i]) + 1;
  char *out = calloc(1, total + 1);
  for(size_t i = 0; i < n; i++) {
    strcat(out, lines[i]);
    strcat(out, "\n");
  }
  free(stmt);
  return out;
}

char *sc_canonical(const char *dump)
{
  char *copy = strdup(dump);
  size_t cap = 256, n = 0;
  char **stmts = calloc(cap, sizeof(char *));
  size_t cur_cap = 1024, cur_len = 0;
  char *cur = calloc(1, cur_cap);
  for(char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if(!cur_len && dropped_line(l))
      continue;
    size_t len = strlen(l);
    while(cur_len + len + 2 > cur_cap)
      cur = grow(cur, cur_cap *= 2);
    memcpy(cur + cur_len, l, len);
    cur_len += len;
    cur[cur_len++] = '\n';
    cur[cur_len] = '\0';
    if(l[len - 1] == ';') {
      if(n == cap)
        stmts = grow(stmts, (cap *= 2) * sizeof(char *));
      stmts[n++] = sort_columns(cur);
      cur_cap = 1024;
      cur_len = 0;
      cur = calloc(1, cur_cap);
    }
  }
  free(cur);
  free(copy);
  qsort(stmts, n, sizeof(char *), cmp_str);
  size_t total = 1;
  for(size_t i = 0; i < n; i++)
    total += strlen(stmts[i]);
  char *out = calloc(1, total);
  for(size_t i = 0; i < n; i++) {
    strcat(out, stmts[i]);
    free(stmts[i]);
  }
  free(stmts);
  return out;
}
