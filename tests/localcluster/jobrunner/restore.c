/* restore.c: the local runtime's restore: a container of a Pod annotated with
 * RESTORE_FROM_ANNOTATION starts by `criu restore` of its checkpoint, in the Pod's sandbox, its
 * output going to its own log (controller/nodeagent/restore.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "digest.h"
#include "json.h"
#include "log.h"
#include "nodeagent/criu.h"
#include "nodeagent/restore.h"

#define RESTORE_TIMEOUT_MS 30000L

/* When the node agent recorded the checkpoint it received (received.json: every file's size and
 * sha256), the container's files must still be those: a runtime restores only images whose
 * digests it checked, as it would pull an image (and CRIU does not check: a short memory image
 * makes its restorer spin). 0, or -1 with err naming the file. */
static int check_images(const char *from, const char *ctr, char *err, size_t errlen)
{
  char path[PATH_MAX + 32];
  jr_fmt(path, sizeof(path), "%s/received.json", from);
  char *text = jr_read_file(path, 16u << 20, NULL);
  cJSON *rec = text ? cJSON_Parse(text) : NULL;
  free(text);
  if(!rec)
    return 0; /* not from an agent: nothing recorded to check against */
  size_t clen = strlen(ctr);
  int bad = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, json_get(rec, "manifest"))
  {
    const char *p = json_get_str(it, "path"), *sha = json_get_str(it, "sha256");
    if(!p || !sha || strncmp(p, ctr, clen) || p[clen] != '/')
      continue;
    jr_fmt(path, sizeof(path), "%s/%s", from, p);
    size_t len = 0;
    struct stat st;
    /* read what is there (jr_read_file allocates its maximum) */
    char *data = stat(path, &st) ? NULL : jr_read_file(path, (size_t)st.st_size, &len);
    char dg[DIGEST_SHA256_LEN] = "";
    if(!data || digest_sha256(data, len, dg) || strcmp(dg, sha)) {
      jr_fmt(err, errlen, "checkpoint image %s does not match its digest %s (%s): refused "
             "before criu reads it", p, sha, data ? dg : strerror(errno));
      bad = -1;
    }
    free(data);
    if(bad)
      break;
  }
  cJSON_Delete(rec);
  return bad;
}

const char *ctr_restore_dir(const struct pod_rt *p)
{
  const cJSON *a = json_get(p->pod, "metadata.annotations");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, RESTORE_FROM_ANNOTATION);
  return cJSON_IsString(v) && v->valuestring[0] == '/' ? v->valuestring : NULL;
}

bool ctr_restore_pending(const struct pod_rt *p)
{
  const cJSON *a = json_get(p->pod, "metadata.annotations");
  return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, RESTORE_IP_ANNOTATION)) &&
         !ctr_restore_dir(p);
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
  if(check_images(ctr_restore_dir(p), c->name, err, errlen)) {
    free(stdio);
    return GW_EPARSE;
  }
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
