#include "pgfixture.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG_BIN "/usr/lib/postgresql/15/bin"
#define PG_OS_USER "godwit-pg"
#define DIR_PREFIX "godwit-pg-"

/* The server's user: ourselves, or godwit-pg when we are root. */
struct osuser {
  uid_t uid;
  gid_t gid;
  bool drop; /* setuid in children */
};

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

static void become(const struct osuser *u)
{
  if(!u->drop)
    return;
  if(setgroups(0, NULL) || setgid(u->gid) || setuid(u->uid))
    _exit(126);
}

/* Runs argv (as the server's user when drop) with stdout and stderr to out (or /dev/null);
 * returns the exit status, or -1. */
static int run(const struct osuser *u, bool drop, const char *const *argv, const char *out)
{
  pid_t pid = fork();
  if(pid < 0)
    return -1;
  if(pid == 0) {
    if(drop)
      become(u);
    int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if(fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  while(waitpid(pid, &st, 0) < 0)
    if(errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static struct osuser server_user(void)
{
  struct osuser u = { getuid(), getgid(), false };
  if(geteuid() != 0)
    return u;
  struct passwd *pw = getpwnam(PG_OS_USER);
  if(!pw) {
    /* Two tests may race here: useradd exits 9 when the user exists by then. */
    const char *argv[] = { "/usr/sbin/useradd", "--system", "--no-create-home", "--home-dir",
                           "/nonexistent", "--shell", "/usr/sbin/nologin", PG_OS_USER, NULL };
    run(&u, false, argv, NULL);
    pw = getpwnam(PG_OS_USER);
  }
  cr_assert_not_null(pw, "cannot create the system user %s for the PostgreSQL fixture", PG_OS_USER);
  u.uid = pw->pw_uid;
  u.gid = pw->pw_gid;
  u.drop = true;
  return u;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
  (void)st, (void)flag, (void)f;
  remove(path);
  return 0;
}

static void rm_rf(const char *dir)
{
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static long read_long(const char *path)
{
  FILE *f = fopen(path, "r");
  long v = 0;
  if(f) {
    if(fscanf(f, "%ld", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v;
}

/* Removes the directories of fixtures whose test process is gone (a crash, or a test killed
 * before pgfx_stop), and their postmaster if it somehow survived. */
static void sweep(void)
{
  DIR *d = opendir("/tmp");
  if(!d)
    return;
  struct dirent *e;
  while((e = readdir(d))) {
    if(strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)) ||
       strlen(e->d_name) != strlen(DIR_PREFIX) + 6)
      continue;
    char path[300], file[340];
    snprintf(path, sizeof(path), "/tmp/%s", e->d_name);
    snprintf(file, sizeof(file), "%s/owner", path);
    long owner = read_long(file);
    if(owner <= 0 || kill((pid_t)owner, 0) == 0 || errno != ESRCH)
      continue;
    snprintf(file, sizeof(file), "%s/data/postmaster.pid", path);
    long pm = read_long(file);
    if(pm > 0)
      kill((pid_t)pm, SIGKILL);
    rm_rf(path);
  }
  closedir(d);
}

static void write_owner(const char *dir)
{
  char path[200];
  snprintf(path, sizeof(path), "%s/owner", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fprintf(f, "%ld\n", (long)getpid());
  fclose(f);
}

/* The initdb'd template, made once per machine and server user. */
static void template_dir(const struct osuser *u, char *out, size_t len)
{
  snprintf(out, len, "/tmp/godwit-pg-template-15-%ld", (long)u->uid);
  char probe[300];
  snprintf(probe, sizeof(probe), "%s/data/PG_VERSION", out);
  if(access(probe, R_OK) == 0)
    return;
  char tmp[] = "/tmp/" DIR_PREFIX "XXXXXX";
  cr_assert_not_null(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
  write_owner(tmp);
  cr_assert_eq(chown(tmp, u->uid, u->gid), 0, "chown %s: %s", tmp, strerror(errno));
  char data[300], log[300];
  snprintf(data, sizeof(data), "%s/data", tmp);
  snprintf(log, sizeof(log), "%s/initdb.log", tmp);
  const char *argv[] = { PG_BIN "/initdb", "-D", data, "-U", "postgres", "--no-sync", "-E",
                         "UTF8", "--locale=C.UTF-8", "--auth-local=trust",
                         "--auth-host=scram-sha-256", "--no-instructions", NULL };
  int rc = run(u, true, argv, log);
  cr_assert_eq(rc, 0, "initdb failed (%d), see %s", rc, log);
  char owner[300];
  snprintf(owner, sizeof(owner), "%s/owner", tmp);
  unlink(owner);
  unlink(log);
  if(rename(tmp, out) != 0) /* another test made it first */
    rm_rf(tmp);
}

static int free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(fd, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t l = sizeof(a);
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
  close(fd);
  return ntohs(a.sin_port);
}

static void write_conf(struct pgfx *pg, const struct pgfx_opts *o)
{
  char path[200];
  snprintf(path, sizeof(path), "%s/postgresql.conf", pg->data);
  FILE *f = fopen(path, "a");
  cr_assert_not_null(f, "cannot open %s", path);
  fprintf(f,
          "\n# pgfixture\nlisten_addresses = '127.0.0.1'\nport = %d\n"
          "unix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\n"
          "full_page_writes = off\ndynamic_shared_memory_type = mmap\nshared_buffers = 32MB\n"
          "max_connections = 60\nlogging_collector = off\n"
          "log_line_prefix = '%%m [%%p] %%a %%u@%%d '\n",
          pg->port, pg->sock);
  fprintf(f, "wal_level = %s\nmax_replication_slots = %d\nmax_wal_senders = %d\n",
          o->logical ? "logical" : "replica",
          o->max_replication_slots > 0 ? o->max_replication_slots : 10,
          o->max_wal_senders > 0 ? o->max_wal_senders : 10);
  if(o->shared_preload_libraries)
    fprintf(f, "shared_preload_libraries = '%s'\n", o->shared_preload_libraries);
  if(o->log_statements)
    fprintf(f, "log_statement = 'all'\n");
  if(o->allow_plugins && pgfx_has_setting(pg->bin, "output_plugin_libraries"))
    fprintf(f, "output_plugin_libraries = 'pgoutput, test_decoding, %s'\n", o->allow_plugins);
  for(const char *const *c = o->conf; c && *c; c++)
    fprintf(f, "%s\n", *c);
  fclose(f);
}

static void set_port(struct pgfx *pg, int port)
{
  char path[200];
  snprintf(path, sizeof(path), "%s/postgresql.conf", pg->data);
  FILE *f = fopen(path, "a");
  cr_assert_not_null(f);
  fprintf(f, "port = %d\n", port);
  fclose(f);
  pg->port = port;
}

static bool log_says(const struct pgfx *pg, const char *needle)
{
  FILE *f = fopen(pg->log, "r");
  if(!f)
    return false;
  char line[1024];
  bool found = false;
  while(!found && fgets(line, sizeof(line), f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* Starts the postmaster; returns 0 once it answers, 1 when the port was taken, or asserts. */
static int spawn(struct pgfx *pg)
{
  struct osuser u = server_user();
  pid_t parent = getpid();
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    become(&u);
    /* After setuid: a credential change clears the parent-death signal. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if(getppid() != parent)
      _exit(1);
    int fd = open(pg->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if(fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int nul = open("/dev/null", O_RDONLY);
    if(nul >= 0)
      dup2(nul, 0);
    char postgres[256];
    snprintf(postgres, sizeof(postgres), "%s/postgres", pg->bin);
    execl(postgres, postgres, "-D", pg->data, (char *)NULL);
    _exit(127);
  }
  pg->pid = pid;
  char conninfo[300];
  snprintf(conninfo, sizeof(conninfo),
           "host=%s port=%d user=postgres dbname=postgres connect_timeout=2", pg->sock, pg->port);
  for(int i = 0; i < 1500; i++) {
    int st;
    if(waitpid(pid, &st, WNOHANG) == pid) {
      pg->pid = 0;
      if(log_says(pg, "could not bind") || log_says(pg, "could not create any TCP/IP"))
        return 1;
      cr_assert_fail("postgres exited at start, see %s", pg->log);
    }
    if(PQping(conninfo) == PQPING_OK)
      return 0;
    sleep_ms(10);
  }
  cr_assert_fail("postgres did not answer within 15 s, see %s", pg->log);
  return 0;
}

static void random_hex(char *out, size_t n)
{
  unsigned char b[16];
  FILE *f = fopen("/dev/urandom", "r");
  cr_assert_not_null(f);
  cr_assert_eq(fread(b, 1, sizeof(b), f), sizeof(b));
  fclose(f);
  for(size_t i = 0; i < sizeof(b) && 2 * i + 2 < n; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

bool pgfx_has_setting(const char *bin, const char *name)
{
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "'%s/postgres' --describe-config 2>/dev/null", bin ? bin : PG_BIN);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "cannot run %s", cmd);
  char line[2048];
  bool found = false;
  size_t n = strlen(name);
  while(fgets(line, sizeof(line), p))
    found = found || (!strncmp(line, name, n) && line[n] == '\t');
  int st = pclose(p);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
  return found;
}

void pgfx_bin_without_plugin_setting(char *out, size_t len)
{
  out[0] = '\0';
  FILE *f = popen("tests/pg/pg-without-plugin-setting.sh", "r");
  cr_assert_not_null(f, "cannot run tests/pg/pg-without-plugin-setting.sh");
  bool got = fgets(out, (int)len, f) != NULL;
  int st = pclose(f);
  cr_assert(got && WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "tests/pg/pg-without-plugin-setting.sh failed (see its message above)");
  out[strcspn(out, "\n")] = '\0';
  cr_assert_not(pgfx_has_setting(out, "output_plugin_libraries"), "%s has the setting", out);
}

void pgfx_start(struct pgfx *pg, const struct pgfx_opts *opts)
{
  static const struct pgfx_opts none;
  const struct pgfx_opts *o = opts ? opts : &none;
  memset(pg, 0, sizeof(*pg));
  snprintf(pg->bin, sizeof(pg->bin), "%s", o->bin ? o->bin : PG_BIN);
  sweep();
  struct osuser u = server_user();
  char tmpl[200];
  template_dir(&u, tmpl, sizeof(tmpl));

  snprintf(pg->dir, sizeof(pg->dir), "/tmp/" DIR_PREFIX "XXXXXX");
  cr_assert_not_null(mkdtemp(pg->dir), "mkdtemp: %s", strerror(errno));
  write_owner(pg->dir);
  snprintf(pg->data, sizeof(pg->data), "%s/data", pg->dir);
  snprintf(pg->sock, sizeof(pg->sock), "%s/sock", pg->dir);
  snprintf(pg->log, sizeof(pg->log), "%s/server.log", pg->dir);
  cr_assert_eq(mkdir(pg->sock, 0700), 0);
  cr_assert_eq(chown(pg->dir, u.uid, u.gid), 0);
  cr_assert_eq(chown(pg->sock, u.uid, u.gid), 0);
  char src[300];
  snprintf(src, sizeof(src), "%s/data", tmpl);
  const char *cp[] = { "/bin/cp", "-a", src, pg->data, NULL };
  cr_assert_eq(run(&u, u.drop, cp, NULL), 0, "cannot copy the template %s", src);

  pg->port = free_port();
  write_conf(pg, o);
  int r = spawn(pg);
  for(int i = 0; r == 1 && i < 5; i++) { /* someone took the port meanwhile */
    set_port(pg, free_port());
    r = spawn(pg);
  }
  cr_assert_eq(r, 0, "no free port for postgres, see %s", pg->log);
  random_hex(pg->password, sizeof(pg->password));
  pgfx_exec(pg, NULL, "ALTER ROLE postgres PASSWORD '%s'", pg->password);
}

static void halt(struct pgfx *pg)
{
  if(pg->pid <= 0)
    return;
  kill(pg->pid, SIGINT); /* fast shutdown */
  int st;
  for(int i = 0; i < 1500; i++) {
    if(waitpid(pg->pid, &st, WNOHANG) == pg->pid) {
      pg->pid = 0;
      return;
    }
    sleep_ms(10);
  }
  kill(pg->pid, SIGKILL);
  waitpid(pg->pid, &st, 0);
  pg->pid = 0;
}

void pgfx_stop(struct pgfx *pg)
{
  halt(pg);
  if(pg->dir[0]) {
    rm_rf(pg->dir);
    pg->dir[0] = '\0';
  }
}

void pgfx_restart(struct pgfx *pg)
{
  halt(pg);
  cr_assert_eq(spawn(pg), 0, "postgres did not restart on port %d, see %s", pg->port, pg->log);
}

void pgfx_halt(struct pgfx *pg)
{
  halt(pg);
}

void pgfx_resume(struct pgfx *pg)
{
  cr_assert_eq(spawn(pg), 0, "postgres did not start again on port %d, see %s", pg->port,
               pg->log);
}

PGconn *pgfx_connect(struct pgfx *pg, const char *db)
{
  const char *kw[] = { "host", "port", "user", "dbname", "connect_timeout", NULL };
  char port[16];
  snprintf(port, sizeof(port), "%d", pg->port);
  const char *val[] = { pg->sock, port, "postgres", db ? db : "postgres", "5", NULL };
  PGconn *c = PQconnectdbParams(kw, val, 0);
  cr_assert(c && PQstatus(c) == CONNECTION_OK, "fixture connect to %s: %s", db ? db : "postgres",
            c ? PQerrorMessage(c) : "out of memory");
  return c;
}

static int vtry(struct pgfx *pg, const char *db, char *err, size_t errlen, const char *fmt,
                va_list ap)
{
  char sql[8192];
  vsnprintf(sql, sizeof(sql), fmt, ap);
  PGconn *c = pgfx_connect(pg, db);
  PGresult *res = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? 0 : -1;
  if(rc && err)
    snprintf(err, errlen, "%s", PQresultErrorMessage(res));
  PQclear(res);
  PQfinish(c);
  return rc;
}

int pgfx_try(struct pgfx *pg, const char *db, char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int rc = vtry(pg, db, err, errlen, fmt, ap);
  va_end(ap);
  return rc;
}

void pgfx_exec(struct pgfx *pg, const char *db, const char *fmt, ...)
{
  char err[1024] = "";
  va_list ap;
  va_start(ap, fmt);
  int rc = vtry(pg, db, err, sizeof(err), fmt, ap);
  va_end(ap);
  cr_assert_eq(rc, 0, "fixture SQL failed: %s", err);
}

char *pgfx_query1(struct pgfx *pg, const char *db, const char *fmt, ...)
{
  char sql[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof(sql), fmt, ap);
  va_end(ap);
  PGconn *c = pgfx_connect(pg, db);
  PGresult *res = PQexec(c, sql);
  cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "fixture query failed: %s\n%s", sql,
               PQresultErrorMessage(res));
  char *out = NULL;
  if(PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
    out = strdup(PQgetvalue(res, 0, 0));
  PQclear(res);
  PQfinish(c);
  return out;
}

void pgfx_create_role(struct pgfx *pg, const char *name, const char *password, const char *attrs)
{
  PGconn *c = pgfx_connect(pg, NULL);
  char *id = PQescapeIdentifier(c, name, strlen(name));
  char *pw = password ? PQescapeLiteral(c, password, strlen(password)) : NULL;
  char sql[1024];
  snprintf(sql, sizeof(sql), "CREATE ROLE %s %s %s %s", id, attrs ? attrs : "",
           pw ? "PASSWORD" : "", pw ? pw : "");
  PGresult *res = PQexec(c, sql);
  cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "create role %s: %s", name,
               PQresultErrorMessage(res));
  PQclear(res);
  PQfreemem(id);
  PQfreemem(pw);
  PQfinish(c);
}

void pgfx_create_db(struct pgfx *pg, const char *name, const char *owner)
{
  PGconn *c = pgfx_connect(pg, NULL);
  char *id = PQescapeIdentifier(c, name, strlen(name));
  char *ow = owner ? PQescapeIdentifier(c, owner, strlen(owner)) : NULL;
  char sql[512];
  snprintf(sql, sizeof(sql), "CREATE DATABASE %s%s%s", id, ow ? " OWNER " : "", ow ? ow : "");
  PGresult *res = PQexec(c, sql);
  cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "create database %s: %s", name,
               PQresultErrorMessage(res));
  PQclear(res);
  PQfreemem(id);
  PQfreemem(ow);
  PQfinish(c);
}

/* Percent-encodes the characters a URI's user, password or path cannot hold as they are. */
static void enc(char *out, size_t len, const char *s)
{
  size_t o = 0;
  for(; *s && o + 4 < len; s++) {
    unsigned char ch = (unsigned char)*s;
    if((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
       strchr("-._~", ch))
      out[o++] = (char)ch;
    else
      o += (size_t)snprintf(out + o, len - o, "%%%02X", ch);
  }
  out[o] = '\0';
}

const char *pgfx_uri(const struct pgfx *pg, char *buf, size_t len, const char *user,
                     const char *password, const char *db)
{
  char u[200], p[200], d[200];
  enc(u, sizeof(u), user);
  enc(p, sizeof(p), password ? password : "");
  enc(d, sizeof(d), db ? db : "postgres");
  snprintf(buf, len, "postgres://%s%s%s@127.0.0.1:%d/%s", u, password ? ":" : "",
           password ? p : "", pg->port, d);
  return buf;
}

const char *pgfx_super_uri(const struct pgfx *pg, char *buf, size_t len, const char *db)
{
  return pgfx_uri(pg, buf, len, "postgres", pg->password, db);
}
