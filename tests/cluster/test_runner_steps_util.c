/*
 * test_runner_steps_util.c: fixtures for the runner step tests (test_runner_steps_util.h).
 */
#include "test_runner_steps_util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

char *sr_slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  if(!f)
    return strdup("");
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  cr_assert_not_null(buf);
  size_t n;
  while((n = fread(buf + len, 1, cap - 1 - len, f)) > 0) {
    len += n;
    if(len + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      cr_assert_not_null(buf);
    }
  }
  buf[len] = '\0';
  fclose(f);
  return buf;
}

void sr_tmpdir(char *buf, size_t len)
{
  snprintf(buf, len, "/tmp/godwit-steps-XXXXXX");
  cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
  (void)st, (void)flag, (void)f;
  remove(path);
  return 0;
}

void sr_rmrf(const char *dir)
{
  if(dir && !strncmp(dir, "/tmp/godwit-steps-", 18))
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

bool sr_wait_file(const char *path, int timeout_ms)
{
  for(int waited = 0; waited <= timeout_ms; waited += 50) {
    if(access(path, F_OK) == 0)
      return true;
    sleep_ms(50);
  }
  return false;
}

bool sr_wait_text(const char *path, const char *needle, int timeout_ms)
{
  for(int waited = 0; waited <= timeout_ms; waited += 100) {
    char *s = sr_slurp(path);
    bool found = strstr(s, needle) != NULL;
    free(s);
    if(found)
      return true;
    sleep_ms(100);
  }
  return false;
}

char *sr_q(struct pgfx *pg, const char *db, const char *sql)
{
  char *v = pgfx_query1(pg, db, "%s", sql);
  return v ? v : strdup("");
}

bool sr_true(struct pgfx *pg, const char *db, const char *sql)
{
  char *v = sr_q(pg, db, sql);
  bool t = !strcmp(v, "t");
  free(v);
  return t;
}

/* ----- the pair ------------------------------------------------------------------------------ */

void sr_grant_source(struct srpair *p)
{
  pgfx_exec(&p->src, "shop",
            "DO $$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace "
            "WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' LOOP "
            "EXECUTE format('GRANT USAGE ON SCHEMA %%I TO src_app', s); "
            "EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %%I TO src_app', s); "
            "EXECUTE format('GRANT SELECT ON ALL SEQUENCES IN SCHEMA %%I TO src_app', s); "
            "END LOOP; END $$;");
}

void sr_pair_start(struct srpair *p, bool logical)
{
  /* its admin allowed wal2json, pgcopydb 0.10's plugin (docs/api/migration.md) */
  pgfx_start(&p->src, &(struct pgfx_opts){ .logical = logical, .allow_plugins = "wal2json" });
  pgfx_start(&p->dst, NULL);
  pgfx_create_role(&p->src, "src_app", SR_SRC_PW, "LOGIN REPLICATION");
  pgfx_create_db(&p->src, "shop", NULL);
  pgfx_exec(&p->src, "shop",
            "CREATE SCHEMA sales;"
            "CREATE TABLE public.customers(id serial PRIMARY KEY, name text NOT NULL, "
            "  email text UNIQUE, created timestamptz DEFAULT now(), score float8, "
            "  blob bytea);"
            "CREATE TABLE sales.orders(id bigserial PRIMARY KEY, "
            "  customer int REFERENCES public.customers(id), amount numeric(12,2), "
            "  note text);"
            "CREATE INDEX orders_customer_idx ON sales.orders(customer);"
            "CREATE TABLE public.\"Mixed Case\"(id int PRIMARY KEY, \"Value\" text);"
            "INSERT INTO public.customers(name, email, score, blob) "
            "  SELECT 'c' || g, 'e' || g || '@example.org', g / 7.0, "
            "         decode(md5(g::text), 'hex') FROM generate_series(1, 500) g;"
            "INSERT INTO sales.orders(customer, amount, note) "
            "  SELECT 1 + g %% 500, g * 1.25, CASE WHEN g %% 3 = 0 THEN NULL ELSE 'n' || g END "
            "  FROM generate_series(1, 3000) g;"
            "GRANT CREATE ON DATABASE shop TO src_app;"
            "GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO src_app;");
  sr_grant_source(p);
  pgfx_create_role(&p->dst, "dst_app", SR_DST_PW, "LOGIN");
  pgfx_create_db(&p->dst, "shop", "dst_app");
  pgfx_exec(&p->dst, "shop",
            "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT oid FROM pg_proc WHERE proname "
            "LIKE 'pg_replication_origin%%' LOOP EXECUTE format('GRANT EXECUTE ON FUNCTION %%s TO "
            "dst_app', f); END LOOP; END $$;");
  pgfx_uri(&p->src, p->src_uri, sizeof(p->src_uri), "src_app", SR_SRC_PW, "shop");
  pgfx_uri(&p->dst, p->dst_uri, sizeof(p->dst_uri), "dst_app", SR_DST_PW, "shop");
}

void sr_pair_stop(struct srpair *p)
{
  pgfx_stop(&p->src);
  pgfx_stop(&p->dst);
}

/* ----- godwit-runner -------------------------------------------------------------------------- */

static const char *runner(void)
{
  static char path[512];
  const char *b = getenv("GODWIT_BUILD");
  snprintf(path, sizeof(path), "%s/godwit-runner", b && *b ? b : "build");
  return path;
}

void sr_run(struct srun *r, const char *src, const char *dst, const char *const *env,
            const char *const *args)
{
  char dir[64];
  sr_tmpdir(dir, sizeof(dir));
  char out[128], rep[128];
  snprintf(out, sizeof(out), "%s/out", dir);
  snprintf(rep, sizeof(rep), "%s/report.json", dir);
  const char *argv[64] = { runner() };
  int argc = 1;
  for(const char *const *a = args; a && *a && argc < 56; a++)
    argv[argc++] = *a;
  argv[argc++] = "--report";
  argv[argc++] = rep;
  argv[argc++] = "--retry-delay-ms";
  argv[argc++] = "100";
  argv[argc++] = "--connect-timeout";
  argv[argc++] = "3";
  argv[argc] = NULL;
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    unsetenv("GODWIT_SOURCE_URI");
    unsetenv("GODWIT_TARGET_URI");
    unsetenv("PGCOPYDB_DIR");
    if(src)
      setenv("GODWIT_SOURCE_URI", src, 1);
    if(dst)
      setenv("GODWIT_TARGET_URI", dst, 1);
    for(const char *const *e = env; e && *e; e++)
      putenv((char *)*e);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "the runner crashed (status %d)", st);
  r->code = WEXITSTATUS(st);
  r->out = sr_slurp(out);
  r->report = sr_slurp(rep);
  sr_rmrf(dir);
  cr_log_info("godwit-runner %s: exit %d\n%s\nreport: %s", args[0], r->code, r->out, r->report);
  cr_assert_leq(strlen(r->report), 4096, "report of %zu bytes", strlen(r->report));
  char err[256];
  r->json = NULL;
  cr_assert_eq(json_parse_strict(r->report, strlen(r->report), &r->json, err, sizeof(err)), 0,
               "report is not JSON: %s: %s", err, r->report);
  const char *secrets[] = { SR_SRC_PW, SR_DST_PW, "@127.0.0.1", src, dst, NULL };
  for(size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
    const char *s = secrets[i];
    if(!s || !*s)
      continue;
    cr_assert_null(strstr(r->out, s), "\"%s\" leaked to the output:\n%s", s, r->out);
    cr_assert_null(strstr(r->report, s), "\"%s\" leaked to the report:\n%s", s, r->report);
  }
  cr_assert_null(strstr(r->out, "postgres://"), "a URI in the output:\n%s", r->out);
  cr_assert_null(strstr(r->report, "postgres://"), "a URI in the report:\n%s", r->report);
}

void sr_free(struct srun *r)
{
  free(r->out);
  free(r->report);
  cJSON_Delete(r->json);
  memset(r, 0, sizeof(*r));
}

const char *sr_str(const struct srun *r, const char *path)
{
  const char *s = json_get_str(r->json, path);
  return s ? s : "";
}

long sr_num(const struct srun *r, const char *path)
{
  const cJSON *v = json_get(r->json, path);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

bool sr_bool(const struct srun *r, const char *path)
{
  return json_get_bool(r->json, path, false);
}

const char *sr_tail(const struct srun *r, int n)
{
  size_t len = strlen(r->out);
  while(len > 0 && r->out[len - 1] == '\n')
    len--;
  const char *p = r->out + len;
  while(p > r->out && n > 0) {
    p--;
    if(*p == '\n')
      n--;
  }
  return p == r->out ? p : p + 1;
}

/* ----- pgcopydb ----------------------------------------------------------------------------- */

pid_t sr_pgcopydb_start(const char *src, const char *dst, const char *const *args,
                        const char *log)
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("PGCOPYDB_SOURCE_PGURI", src, 1);
    setenv("PGCOPYDB_TARGET_PGURI", dst, 1);
    const char *argv[48] = { "pgcopydb" };
    int n = 1;
    for(const char *const *a = args; *a && n < 47; a++)
      argv[n++] = *a;
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid); /* also from here: no race with a kill right after */
  return pid;
}

int sr_pgcopydb_wait(pid_t pid, int timeout_s)
{
  for(int waited = 0; waited <= timeout_s * 10; waited++) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if(w == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    sleep_ms(100);
  }
  sr_pgcopydb_kill(pid);
  return -1;
}

void sr_pgcopydb_kill(pid_t pid)
{
  kill(-pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  /* its children finish alone unless the whole group goes (pgcopydb-observed.md); give the
   * kernel a moment to reap them */
  for(int i = 0; i < 50 && kill(-pid, 0) == 0; i++)
    sleep_ms(100);
}

void sr_pgcopydb(const char *src, const char *dst, const char *const *args, int timeout_s)
{
  char dir[64], log[128];
  sr_tmpdir(dir, sizeof(dir));
  snprintf(log, sizeof(log), "%s/pgcopydb.log", dir);
  pid_t pid = sr_pgcopydb_start(src, dst, args, log);
  int rc = sr_pgcopydb_wait(pid, timeout_s);
  char *text = sr_slurp(log);
  cr_assert_eq(rc, 0, "pgcopydb exited %d:\n%s", rc, text);
  free(text);
  sr_rmrf(dir);
}
