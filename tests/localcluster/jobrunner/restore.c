/* restore.c: the local runtime's restore: a container of a Pod annotated with
 * RESTORE_FROM_ANNOTATION starts by `criu restore` of its checkpoint, in the Pod's sandbox, its
 * output going to its own log (controller/nodeagent/restore.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "json.h"
#include "log.h"
#include "nodeagent/criu.h"
#include "nodeagent/restore.h"

#define RESTORE_TIMEOUT_MS 60000L

const char *ctr_restore_dir(const struct pod_rt *p)
{
  const cJSON *a = json_get(p->pod, "metadata.annotations");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, RESTORE_FROM_ANNOTATION);
  return cJSON_IsString(v) && v->valuestring[0] == '/' ? v->valuestring : NULL;
}

static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

gw_rc ctr_restore(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, const char *log,
                  pid_t *pid, char *err, size_t errlen)
{
  (void)jr;
  char dir[PATH_MAX], path[PATH_MAX + 32], pidfile[PATH_MAX + 32];
  jr_fmt(dir, sizeof(dir), "%s/%s", ctr_restore_dir(p), c->name);
  jr_fmt(path, sizeof(path), "%s/" RESTORE_STDIO, dir);
  char *stdio = jr_read_file(path, PATH_MAX, NULL);
  if(!stdio) {
    jr_fmt(err, errlen, "cannot restore container %s: no checkpoint in %s (%s)", c->name, dir,
           strerror(errno));
    return GW_ENOTFOUND;
  }
  stdio[strcspn(stdio, "\n")] = 0;
  const char *key = stdio;
  while(*key == '/')
    key++; /* criu names a file by its path without the leading slash */
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if(fd < 0) {
    jr_fmt(err, errlen, "cannot open the container log \"%s\": %s", log, strerror(errno));
    free(stdio);
    return GW_EIO;
  }
  jr_fmt(pidfile, sizeof(pidfile), "%s/containers/%s/restored.pid", p->pod_dir, c->name);
  unlink(pidfile);
  struct criu_opts o = { .images_dir = dir, .log_file = "restore.log", .verbosity = 4,
                         .netns = p->sb.n ? p->sb.netns_path : NULL, .pidfile = pidfile,
                         .tcp_established = true, .inherit_fd = *key ? fd : -1,
                         .inherit_key = key, .timeout_ms = RESTORE_TIMEOUT_MS };
  struct criu_result r;
  gw_rc rc = criu_restore(&o, &r);
  close(fd);
  free(stdio);
  if(rc) {
    jr_fmt(err, errlen, "criu restore of %s failed: %s (%s/restore.log)", c->name,
           r.errors[0] ? r.errors : gw_strerror(rc), dir);
    criu_result_release(&r);
    return rc;
  }
  char *pids = jr_read_file(pidfile, 64, NULL);
  long v = pids ? strtol(pids, NULL, 10) : 0;
  free(pids);
  if(v <= 1) {
    jr_fmt(err, errlen, "criu restore of %s left no pid in %s", c->name, pidfile);
    criu_result_release(&r);
    return GW_EIO;
  }
  *pid = (pid_t)v;
  char done[128];
  int n = jr_fmt(done, sizeof(done), "{\"pid\":%ld,\"restoredAtMs\":%lld,\"durationMs\":%ld}\n",
                 v, (long long)wall_ms(), r.elapsed_ms);
  jr_fmt(path, sizeof(path), "%s/" RESTORE_DONE, dir);
  if(jr_write_file(path, done, (size_t)n, 0600))
    log_kv(LOG_WARN, "restore marker not written", "path", path, LOG_END);
  char pv[24], ms[24];
  jr_fmt(pv, sizeof(pv), "%ld", v);
  jr_fmt(ms, sizeof(ms), "%ld", r.elapsed_ms);
  log_kv(LOG_INFO, "container restored", "pod", p->name, "namespace", p->ns, "container",
         c->name, "pid", pv, "criuMs", ms, LOG_END);
  criu_result_release(&r);
  return GW_OK;
}
