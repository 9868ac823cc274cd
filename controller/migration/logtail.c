/* Log-tail classification of a failed worker attempt (pgcopydb's exit codes do not tell a
 * source failure from a target one, nor a permission error from a network one): the
 * permission errors retries cannot fix (PermissionDenied), the post-data failure a resume cannot
 * get past (the next attempt starts over), what a person must fix outside the Migration (a full
 * work volume or server disk, a server that stopped answering), the supervisor's fatal exit
 * (WorkerZombie) and the base copy marker of --follow. Best effort: a miss keeps the normal retries. Pure functions
 * over an already scrubbed tail (tests/controller/test_migration_unit.c). */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mig.h"

/* ERROR or FATAL, as pgcopydb prints its level after the time and the pid (0.10:
 * "12:47:08 22892 ERROR ..."; 0.18: "2024-01-01 12:47:08.123 22892 ERROR file.c:12 ..."). */
static bool level_is(const char *line, size_t len, const char *level)
{
  size_t n = strlen(level);
  for(size_t i = 0; i + n + 1 < len && i < 48; i++)
    if(line[i] == ' ' && !strncmp(line + i + 1, level, n) &&
       (i + 1 + n == len || line[i + 1 + n] == ' '))
      return true;
  return false;
}

static bool contains_ci(const char *line, size_t len, const char *needle)
{
  size_t n = strlen(needle);
  for(size_t i = 0; i + n <= len; i++)
    if(!strncasecmp(line + i, needle, n))
      return true;
  return false;
}

static bool is_error(const char *line, size_t len)
{
  return level_is(line, len, "ERROR") || level_is(line, len, "FATAL");
}

/* Lines that only say "something failed above". */
static bool generic(const char *line, size_t len)
{
  static const char *const g[] = { "see above for details", "Terminating all processes",
                                   "has terminated", "Sub-processes", "exit code",
                                   "line ignored", "Failed to prepare the summary", NULL };
  for(int i = 0; g[i]; i++)
    if(contains_ci(line, len, g[i]))
      return true;
  return false;
}

/* What retries cannot fix: a missing privilege or role membership. An authentication failure
 * (wrong password) is not one of them: it is the Secret, which the preflight checks. The
 * server's HINT and DETAIL lines only explain the error line above them. */
static bool permission(const char *line, size_t len)
{
  if(contains_ci(line, len, "HINT:") || contains_ci(line, len, "DETAIL:"))
    return false;
  static const char *const p[] = { "permission denied", "must be superuser",
                                   "must be member of role", "must be owner of",
                                   "insufficient privilege", NULL };
  for(int i = 0; p[i]; i++)
    if(contains_ci(line, len, p[i]))
      return true;
  return false;
}

/* What a person must act on outside the Migration, from one error line: a full work volume
 * (pgcopydb's own files are under the work mount), a database server's full disk, a server that
 * stopped answering (down, restarting, unreachable). */
static enum tail_cause cause_of(const char *line, size_t len)
{
  if(contains_ci(line, len, "No space left on device") ||
     contains_ci(line, len, "could not extend file") || contains_ci(line, len, "53100"))
    return contains_ci(line, len, MIG_WORK_MOUNT) ? CAUSE_WORKDIR_FULL : CAUSE_SERVER_DISK_FULL;
  static const char *const gone[] = {
    "could not connect to server", "connection to server at", "Connection refused",
    "server closed the connection unexpectedly", "terminating connection due to administrator",
    "the database system is shutting down", "the database system is starting up",
    "the database system is in recovery mode", "Connection timed out", "No route to host",
    "could not translate host name", "SSL SYSCALL error", "no connection to the server",
    NULL };
  for(int i = 0; gone[i]; i++)
    if(contains_ci(line, len, gone[i]))
      return CAUSE_UNREACHABLE;
  return CAUSE_NONE;
}

static void copy_line(char *dst, size_t dlen, const char *line, size_t len)
{
  while(len && (line[len - 1] == '\r' || line[len - 1] == ' '))
    len--;
  if(len >= dlen) {
    size_t n = dlen > 4 ? dlen - 4 : 0;
    while(n > 0 && ((unsigned char)line[n] & 0xC0) == 0x80)
      n--;
    snprintf(dst, dlen, "%.*s...", (int)n, line);
  } else {
    snprintf(dst, dlen, "%.*s", (int)len, line);
  }
}

void mig_classify_tail(const char *tail, struct tail_verdict *out)
{
  memset(out, 0, sizeof(*out));
  if(!tail)
    return;
  bool post_data = false;
  const char *perm = NULL, *restart = NULL, *last = NULL, *last_any = NULL;
  size_t perm_len = 0, restart_len = 0, last_len = 0, last_any_len = 0;
  for(const char *p = tail; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if(contains_ci(p, len, "post-data"))
      post_data = true;
    if(is_error(p, len)) {
      last_any = p;
      last_any_len = len;
      if(!generic(p, len)) {
        last = p;
        last_len = len;
      }
      if(permission(p, len)) {
        perm = p;
        perm_len = len;
      }
      if(contains_ci(p, len, "Failed to copy data to target") ||
         contains_ci(p, len, "COPY from stdin failed"))
        out->copy_failed = true;
      enum tail_cause c = cause_of(p, len);
      if(c != CAUSE_NONE && out->cause == CAUSE_NONE) { /* the first: what went wrong first */
        out->cause = c;
        copy_line(out->cause_line, sizeof(out->cause_line), p, len);
      }
      if(post_data && contains_ci(p, len, "already exists") &&
         !contains_ci(p, len, "replication slot")) {
        restart = p;
        restart_len = len;
      }
    }
    p = nl ? nl + 1 : p + len;
  }
  if(last)
    copy_line(out->last_error, sizeof(out->last_error), last, last_len);
  else if(last_any)
    copy_line(out->last_error, sizeof(out->last_error), last_any, last_any_len);
  if(perm) {
    out->cls = TAIL_PERMISSION;
    copy_line(out->line, sizeof(out->line), perm, perm_len);
  } else if(restart) {
    out->cls = TAIL_RESTART;
    copy_line(out->line, sizeof(out->line), restart, restart_len);
  } else {
    snprintf(out->line, sizeof(out->line), "%s", out->last_error);
  }
}

bool mig_tail_fatal_exit(const char *tail)
{
  if(!tail)
    return false;
  bool fatal = false;
  for(const char *p = tail; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    /* the last line with a level decides */
    if(level_is(p, len, "FATAL"))
      fatal = true;
    else if(level_is(p, len, "INFO") || level_is(p, len, "ERROR") ||
            level_is(p, len, "WARN") || level_is(p, len, "NOTICE") || level_is(p, len, "DEBUG"))
      fatal = false;
    p = nl ? nl + 1 : p + len;
  }
  return fatal;
}

bool mig_tail_base_copy_done(const char *tail)
{
  return tail && (strstr(tail, "sentinel to enable applying changes") ||
                  strstr(tail, "has enabled applying changes"));
}

const char *mig_crash_signal(int exit_code)
{
  switch(exit_code - 128) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  default:
    return NULL;
  }
}
