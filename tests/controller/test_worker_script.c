/*
 * The worker container's shell script (controller/migration/worker.c), run for real under
 * /bin/sh with a stand-in for pgcopydb on PATH, its paths moved from /var/lib/godwit into a
 * temporary directory: a live worker on pgcopydb < 0.15 wakes pgcopydb with SIGHUP once the
 * cutover Job left the wake file, not before; it passes SIGTERM on and exits with pgcopydb's
 * status; other workers exec pgcopydb and get no SIGHUP.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pgcopydb.h"
#include "migration/mig.h"
#include "strbuf.h"

/* The stand-in, in Perl (Essential in Debian): like pgcopydb it installs its own SIGHUP handler
 * (a shell cannot trap a signal it was started with ignored, which the script's shell does
 * to itself and its helpers). It counts SIGHUPs, says it started, ends when told (exit code in
 * file "code"; "segv": it crashes), or by SIGTERM (recorded, exit 143). It writes the
 * connection strings it was given to file "uris", source then target, a line each. */
static const char fake_pgcopydb[] =
  "#!/usr/bin/perl\n"
  "use strict;\n"
  "my $t = $ENV{T};\n"
  "sub mark { open(my $f, '>>', \"$t/$_[0]\") or die; print $f \"$_[0]\\n\"; close($f); }\n"
  "$SIG{HUP} = sub { mark('hups') };\n"
  "$SIG{TERM} = sub { mark('terms'); exit 143 };\n"
  "open(my $e, '>', \"$t/uris\") or die;\n"
  "print $e ($ENV{PGCOPYDB_SOURCE_PGURI} // ''), \"\\n\", ($ENV{PGCOPYDB_TARGET_PGURI} // ''), \"\\n\";\n"
  "close($e);\n"
  "mark('started');\n"
  "for (1 .. 600) {\n"
  "  kill('SEGV', $$) if -e \"$t/segv\";\n"
  "  if (-e \"$t/code\") { open(my $c, '<', \"$t/code\") or die; my $n = <$c>; exit(int($n)); }\n"
  "  select(undef, undef, undef, 0.05);\n"
  "}\n"
  "exit 99;\n";

struct run {
  char dir[64];
  pid_t pid;
};

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
  char p[256];
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f, "%s: %s", p, strerror(errno));
  fputs(text, f);
  fclose(f);
  chmod(p, mode);
}

static bool exists(const struct run *r, const char *name)
{
  char p[256];
  snprintf(p, sizeof(p), "%s/%s", r->dir, name);
  return access(p, F_OK) == 0;
}

static int lines(const struct run *r, const char *name)
{
  char p[256];
  snprintf(p, sizeof(p), "%s/%s", r->dir, name);
  FILE *f = fopen(p, "r");
  int n = 0, c;
  while(f && (c = fgetc(f)) != EOF)
    n += c == '\n';
  if(f)
    fclose(f);
  return n;
}

static void sleep_ms(int ms)
{
  nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

/* Waits up to ms for name to exist (true) or not. */
static bool wait_file(const struct run *r, const char *name, int ms)
{
  for(int t = 0; t < ms; t += 20) {
    if(exists(r, name))
      return true;
    sleep_ms(20);
  }
  return exists(r, name);
}

/* The script with /var/lib/godwit moved to r->dir/mnt, started with env KEY=VALUE pairs. */
static void start(struct run *r, const char *const *env)
{
  strcpy(r->dir, "/tmp/godwit-wscript-XXXXXX");
  cr_assert_not_null(mkdtemp(r->dir));
  char bin[128], mnt[128];
  snprintf(bin, sizeof(bin), "%s/bin", r->dir);
  snprintf(mnt, sizeof(mnt), "%s/mnt", r->dir);
  cr_assert_eq(mkdir(bin, 0755), 0);
  cr_assert_eq(mkdir(mnt, 0755), 0);
  put(bin, "pgcopydb", fake_pgcopydb, 0755);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  for(const char *p = mig_worker_script(), *q; *p; p = q + strlen(MIG_WORK_MOUNT)) {
    q = strstr(p, MIG_WORK_MOUNT);
    if(!q) {
      cr_assert_eq(strbuf_adds(&sb, p), GW_OK);
      break;
    }
    cr_assert_eq(strbuf_add(&sb, p, (size_t)(q - p)), GW_OK);
    cr_assert_eq(strbuf_adds(&sb, mnt), GW_OK);
  }
  char *script = strbuf_take(&sb, NULL);
  r->pid = fork();
  cr_assert_neq(r->pid, -1);
  if(r->pid == 0) {
    char path[512];
    snprintf(path, sizeof(path), "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    setenv("T", r->dir, 1);
    setenv("GODWIT_ATTEMPT", "1", 1);
    setenv("GODWIT_OWNER_UID", "0a1b2c3d", 1);
    for(const char *const *e = env; e && *e; e += 2)
      setenv(e[0], e[1], 1);
    setpgid(0, 0); /* its own process group, as a container's */
    execl("/bin/sh", "sh", "-c", script, "godwit-worker", "clone", "--follow", (char *)NULL);
    _exit(127);
  }
  free(script);
  cr_assert(wait_file(r, "started", 10000), "the stand-in pgcopydb never started");
}

/* The script's exit status (waits up to ms; -1 when it did not end). */
static int finish(struct run *r, int ms)
{
  int st = 0;
  for(int t = 0; t <= ms; t += 20) {
    pid_t w = waitpid(r->pid, &st, WNOHANG);
    if(w == r->pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    sleep_ms(20);
  }
  kill(-r->pid, SIGKILL);
  waitpid(r->pid, &st, 0);
  return -1;
}

static void cleanup(struct run *r)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
  cr_expect_eq(system(cmd), 0);
}

static const char *const live010[] = { "GODWIT_LIVE", "1", "GODWIT_CLEAN_LOCKS", "1", NULL };

Test(worker_script, a_live_worker_on_0_10_is_woken_only_after_the_cutover)
{
  struct run r;
  start(&r, live010);
  sleep_ms(1500);
  cr_expect_eq(lines(&r, "hups"), 0, "no SIGHUP before the cutover left the wake file");
  char wake[128];
  snprintf(wake, sizeof(wake), "%s/mnt/pgcopydb", r.dir);
  mkdir(wake, 0755);
  put(wake, PGCOPYDB_DRAIN_WAKE_FILE, "end position set\n", 0644);
  bool woken = false;
  for(int t = 0; t < 10000 && !woken; t += 50) {
    woken = lines(&r, "hups") >= 3;
    sleep_ms(50);
  }
  cr_expect(woken, "pgcopydb was not woken after the wake file: %d SIGHUPs", lines(&r, "hups"));
  put(r.dir, "code", "3\n", 0644);
  cr_expect_eq(finish(&r, 10000), 3, "the shell exits with pgcopydb's status");
  cleanup(&r);
}

Test(worker_script, a_live_worker_passes_sigterm_on_and_a_crash_is_its_exit_code)
{
  struct run r;
  start(&r, live010);
  cr_assert_eq(kill(r.pid, SIGTERM), 0); /* the shell only, as the kubelet signals PID 1 */
  cr_expect(wait_file(&r, "terms", 10000), "SIGTERM did not reach pgcopydb");
  cr_expect_eq(finish(&r, 10000), 143);
  cleanup(&r);
  start(&r, live010);
  put(r.dir, "segv", "", 0644);
  cr_expect_eq(finish(&r, 10000), 128 + SIGSEGV, "a crash is 128 + SIGSEGV, as a container's");
  cleanup(&r);
}

Test(worker_script, other_workers_exec_pgcopydb_and_are_never_woken)
{
  static const char *const clone010[] = { "GODWIT_CLEAN_LOCKS", "1", NULL };
  static const char *const live017[] = { "GODWIT_LIVE", "1", "GODWIT_APPNAME_IN_URI", "1",
                                         NULL };
  const char *const *const envs[] = { clone010, live017 };
  for(size_t i = 0; i < 2; i++) {
    struct run r;
    start(&r, envs[i]);
    char wake[128];
    snprintf(wake, sizeof(wake), "%s/mnt/pgcopydb", r.dir);
    mkdir(wake, 0755);
    put(wake, PGCOPYDB_DRAIN_WAKE_FILE, "end position set\n", 0644);
    sleep_ms(1500);
    cr_expect_eq(lines(&r, "hups"), 0, "case %zu: woken", i);
    put(r.dir, "code", "0\n", 0644);
    cr_expect_eq(finish(&r, 10000), 0, "case %zu", i);
    cleanup(&r);
  }
}

/* The connection strings the stand-in was given: source and target, without their newlines. */
static void given_uris(const struct run *r, char *src, char *dst, size_t len)
{
  char p[256];
  snprintf(p, sizeof(p), "%s/uris", r->dir);
  FILE *f = fopen(p, "r");
  cr_assert_not_null(f, "%s: %s", p, strerror(errno));
  cr_assert_not_null(fgets(src, (int)len, f));
  cr_assert_not_null(fgets(dst, (int)len, f));
  fclose(f);
  src[strcspn(src, "\n")] = '\0';
  dst[strcspn(dst, "\n")] = '\0';
}

/* What libpq reads as the options of a connection string ("" when none). */
static void conninfo_options(const char *conninfo, char *out, size_t len)
{
  char *err = NULL;
  PQconninfoOption *o = PQconninfoParse(conninfo, &err);
  cr_assert_not_null(o, "libpq cannot parse %s: %s", conninfo, err ? err : "");
  out[0] = '\0';
  for(PQconninfoOption *i = o; i->keyword; i++)
    if(!strcmp(i->keyword, "options") && i->val)
      snprintf(out, len, "%s", i->val);
  PQconninfoFree(o);
}

/* A live worker on pgcopydb 0.15+ gets GODWIT_WAL_SENDER_TIMEOUT_MS: the script puts
 * wal_sender_timeout into the source's connection string, in each form a Secret may hold, so
 * that the walsender asks pgcopydb's receiver for feedback every half of it, and each feedback
 * reads the end position (docs/dev/pgcopydb-observed.md). libpq reads it back as the session
 * option; the target's string is never touched; a string with options of its own keeps them. */
Test(worker_script, a_live_worker_on_0_15_asks_the_source_for_feedback_every_second)
{
  static const char *const cases[][2] = {
    { "postgres://u:p@db:5432/shop", "-c wal_sender_timeout=2000" },
    { "postgresql://u:p@db/shop?sslmode=require\n", "-c wal_sender_timeout=2000" },
    { "host=db dbname=shop user=u", "-c wal_sender_timeout=2000" },
    /* the user's own options stay as they are (a second options= would replace them) */
    { "postgres://u:p@db/shop?options=-c%20search_path%3Dsales", "-c search_path=sales" },
    { "host=db dbname=shop options='-c search_path=sales'", "-c search_path=sales" },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *const env[] = { "GODWIT_LIVE", "1", "GODWIT_APPNAME_IN_URI", "1",
                                "GODWIT_WAL_SENDER_TIMEOUT_MS", "2000",
                                "PGCOPYDB_SOURCE_PGURI", cases[i][0],
                                "PGCOPYDB_TARGET_PGURI", "postgres://v:q@other/shop", NULL };
    struct run r;
    start(&r, env);
    char src[512], dst[512], opts[256];
    given_uris(&r, src, dst, sizeof(src));
    conninfo_options(src, opts, sizeof(opts));
    cr_expect_str_eq(opts, cases[i][1], "case %zu: the source's options in %s", i, src);
    cr_expect_str_eq(dst, "postgres://v:q@other/shop", "case %zu: the target is untouched", i);
    put(r.dir, "code", "0\n", 0644);
    cr_expect_eq(finish(&r, 10000), 0, "case %zu", i);
    cleanup(&r);
  }
  /* without the variable (0.10, a clone, or the controller's --wal-sender-timeout-ms 0) the
   * source's string is the Secret's */
  const char *const env[] = { "GODWIT_LIVE", "1", "PGCOPYDB_SOURCE_PGURI", "postgres://u:p@db/shop",
                              NULL };
  struct run r;
  start(&r, env);
  char src[512], dst[512];
  given_uris(&r, src, dst, sizeof(src));
  cr_expect_str_eq(src, "postgres://u:p@db/shop");
  put(r.dir, "code", "0\n", 0644);
  cr_expect_eq(finish(&r, 10000), 0);
  cleanup(&r);
}
