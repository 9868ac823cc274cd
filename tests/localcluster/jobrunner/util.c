/* util.c: clocks, files and JSON helpers of the job runner. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jr.h"
#include "json.h"

int jr_fmt(char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, len, fmt, ap);
  va_end(ap);
  return n;
}

int64_t jr_mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void jr_rfc3339(char *buf, size_t len, time_t t)
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

time_t jr_parse_time(const char *s)
{
  struct tm tm = { 0 };
  if(!s)
    return -1;
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if(!end)
    return -1;
  if(*end == '.')
    while(*++end >= '0' && *end <= '9')
      ;
  if(*end != 'Z' && *end != 'z')
    return -1; /* the API server writes UTC */
  return timegm(&tm);
}

void jr_wake_at(struct jr *jr, int64_t at)
{
  if(!jr->next_wake_ms || at < jr->next_wake_ms)
    jr->next_wake_ms = at;
}

void jr_wake(struct jr *jr)
{
  char c = 1;
  ssize_t n = write(jr->wake_fd[1], &c, 1); /* a full pipe already means "wake up" */
  (void)n;
}

int jr_mkdirs(const char *path, mode_t mode)
{
  char buf[PATH_MAX];
  if(snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for(char *p = buf + 1; *p; p++) {
    if(*p != '/')
      continue;
    *p = 0;
    if(mkdir(buf, mode) && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if(mkdir(buf, mode) && errno != EEXIST)
    return -1;
  return 0;
}

void jr_rmtree(const char *path)
{
  struct stat st;
  if(lstat(path, &st))
    return;
  if(S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if(d) {
      struct dirent *e;
      while((e = readdir(d))) {
        if(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
          continue;
        char sub[PATH_MAX];
        if(snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) < (int)sizeof(sub))
          jr_rmtree(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

int jr_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
  char tmp[PATH_MAX];
  if(snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof(tmp))
    return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if(fd < 0)
    return -1;
  const char *p = data;
  while(len) {
    ssize_t n = write(fd, p, len);
    if(n < 0 && errno == EINTR)
      continue;
    if(n <= 0) {
      close(fd);
      unlink(tmp);
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  fchmod(fd, mode); /* not narrowed by the umask */
  if(close(fd) || rename(tmp, path)) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

char *jr_read_file(const char *path, size_t max, size_t *len)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return NULL;
  char *buf = malloc(max + 1);
  size_t got = 0;
  while(buf && got < max) {
    ssize_t n = read(fd, buf + got, max - got);
    if(n < 0 && errno == EINTR)
      continue;
    if(n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  if(buf)
    buf[got] = 0;
  if(len)
    *len = got;
  return buf;
}

long jr_json_long(const cJSON *o, const char *path, long dflt)
{
  const cJSON *v = json_get(o, path);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

bool jr_json_has(const cJSON *o, const char *path)
{
  const cJSON *v = json_get(o, path);
  return v && !cJSON_IsNull(v);
}

const cJSON *jr_condition(const cJSON *conditions, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, conditions)
  {
    const char *t = json_get_str(c, "type");
    if(t && !strcmp(t, type))
      return c;
  }
  return NULL;
}

void jr_set_condition(cJSON *conds, const cJSON *old_conds, const char *type, const char *status,
                      const char *reason, const char *message, bool probe_time)
{
  char now[32];
  jr_rfc3339(now, sizeof(now), time(NULL));
  const cJSON *old = jr_condition(old_conds, type);
  const char *old_status = json_get_str(old, "status");
  const char *ltt = json_get_str(old, "lastTransitionTime");
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "type", type);
  cJSON_AddStringToObject(c, "status", status);
  if(probe_time) {
    const char *lpt = json_get_str(old, "lastProbeTime");
    bool same = old_status && !strcmp(old_status, status);
    cJSON_AddStringToObject(c, "lastProbeTime", same && lpt ? lpt : now);
  } else {
    cJSON_AddNullToObject(c, "lastProbeTime");
  }
  cJSON_AddStringToObject(c, "lastTransitionTime",
                          old_status && !strcmp(old_status, status) && ltt ? ltt : now);
  if(reason && *reason)
    cJSON_AddStringToObject(c, "reason", reason);
  if(message && *message)
    cJSON_AddStringToObject(c, "message", message);
  cJSON_AddItemToArray(conds, c);
}

const char *jr_key(const cJSON *obj, char *buf, size_t len)
{
  const char *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  snprintf(buf, len, "%s/%s", ns ? ns : "", name ? name : "");
  return buf;
}

bool jr_owned_by(const cJSON *obj, const char *uid)
{
  const cJSON *r;
  cJSON_ArrayForEach(r, json_get(obj, "metadata.ownerReferences"))
  {
    const char *u = json_get_str(r, "uid");
    if(u && !strcmp(u, uid) && json_get_bool(r, "controller", false))
      return true;
  }
  return false;
}

int64_t jr_backoff_ms(const struct jr *jr, int n, long cap_ms)
{
  if(n <= 0)
    return 0;
  int64_t d = jr->cfg->backoff_base_ms;
  for(int i = 1; i < n && d < cap_ms; i++)
    d *= 2;
  return d < cap_ms ? d : cap_ms;
}
