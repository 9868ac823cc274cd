/* agent_ops.c: what the node agent does on its node (agent.h, api.h): checkpoints, their copy
 * to the destination agent, the shield and the link around the handover, the probe. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"
#include "client.h"
#include "criu.h"
#include "digest.h"
#include "json.h"
#include "log.h"
#include "netns.h"
#include "restore.h"

#define DUMP_TIMEOUT_MS 120000L
#define DIR_MAX 1024 /* a migration's directory: --checkpoint-dir is at most AGENT_ROOT_MAX */
#define PATH_LEN (DIR_MAX + 512)
#define CTR_MAX 16

static void fail(struct na_fail *f, int code, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void fail(struct na_fail *f, int code, const char *reason, const char *fmt, ...)
{
  f->code = code;
  snprintf(f->reason, sizeof(f->reason), "%s", reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->message, sizeof(f->message), fmt, ap);
  va_end(ap);
}

static long long wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

bool agent_fault(const struct agent *a, const char *name)
{
  return a->fault && !strcmp(a->fault, name);
}

/* ---- files ---- */
static char *read_all(const char *path, size_t max, size_t *len)
{
  FILE *fp = fopen(path, "rb");
  if(!fp)
    return NULL;
  char *buf = NULL;
  size_t n = 0;
  struct stat st;
  if(!fstat(fileno(fp), &st) && (size_t)st.st_size <= max) {
    buf = malloc((size_t)st.st_size + 1);
    n = buf ? fread(buf, 1, (size_t)st.st_size, fp) : 0;
    if(buf)
      buf[n] = 0;
  }
  fclose(fp);
  if(len)
    *len = n;
  return buf;
}

static int write_all(const char *path, const void *data, size_t len)
{
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof(tmp), "%s.part", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if(fd < 0)
    return -1;
  const char *p = data;
  size_t left = len;
  while(left) {
    ssize_t w = write(fd, p, left);
    if(w < 0 && errno == EINTR)
      continue;
    if(w <= 0) {
      close(fd);
      unlink(tmp);
      return -1;
    }
    p += w;
    left -= (size_t)w;
  }
  if(close(fd) || rename(tmp, path)) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static int write_json(const char *path, const cJSON *v)
{
  char *text = cJSON_PrintUnformatted(v);
  int r = text ? write_all(path, text, strlen(text)) : -1;
  cJSON_free(text);
  return r;
}

static cJSON *read_json(const char *path)
{
  char *text = read_all(path, 16u << 20, NULL);
  cJSON *v = text ? cJSON_Parse(text) : NULL;
  free(text);
  return v;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static void rmtree(const char *path)
{
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The migration's directory: root/NAME, its name from the request's "migration". */
static bool mig_dir(const struct agent *a, const cJSON *req, char *dir, size_t len, char *name,
                    struct na_fail *f)
{
  char n[NA_DIRNAME_MAX];
  if(na_dirname_json(json_get(req, "migration"), n)) {
    fail(f, 400, "BadRequest", "\"migration\" needs namespace, name and uid (DNS names)");
    return false;
  }
  if(name)
    snprintf(name, NA_DIRNAME_MAX, "%s", n);
  snprintf(dir, len, "%s/%s", a->root, n);
  return true;
}

/* Takes the migration's lock (created with its directory, 0700, when create; else a missing
 * directory is 404 CheckpointNotFound); -1 with *f on failure. */
static int lock_dir(const struct agent *a, const char *dir, bool create, struct na_fail *f)
{
  struct stat st;
  if(!create && stat(dir, &st)) {
    fail(f, 404, "CheckpointNotFound", "node %s holds no checkpoint in %s", a->node, dir);
    return -1;
  }
  if(create && mkdir(dir, 0700) && errno != EEXIST) {
    fail(f, 500, "InternalError", "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  char path[DIR_MAX + 8];
  snprintf(path, sizeof(path), "%s/.lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if(fd < 0 || flock(fd, LOCK_EX)) {
    fail(f, 500, "InternalError", "cannot lock %s: %s", dir, strerror(errno));
    if(fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

static void unlock_dir(int fd)
{
  if(fd >= 0)
    close(fd); /* releases the flock */
}

/* A failed checkpoint: its directory goes (lock file included), then the lock. */
static void rmdir_lock(const char *dir, int fd)
{
  rmtree(dir);
  unlock_dir(fd);
}

/* A file name part: letters, digits, '.', '_' and '-', not "." or "..". */
static bool safe_part(const char *s, size_t n)
{
  if(!n || n > 120 || (n <= 2 && s[0] == '.' && (n == 1 || s[1] == '.')))
    return false;
  for(size_t i = 0; i < n; i++)
    if(!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
         (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
      return false;
  return true;
}

/* ---- containers: the local runtime's container IDs name their process ---- */
struct ctr {
  char name[64];
  long pid;
  char netns[48];
};

/* Whether two namespace files name the same namespace. */
static bool same_ns(const char *x, const char *y)
{
  struct stat a, b;
  return !stat(x, &a) && !stat(y, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The containers of the request ([{name, containerID}]); false with *f. */
static bool resolve(const struct agent *a, const cJSON *req, struct ctr *c, size_t *n,
                    struct na_fail *f)
{
  *n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, json_get(req, "containers"))
  {
    const char *name = json_get_str(it, "name"), *id = json_get_str(it, "containerID");
    if(!name || !safe_part(name, strlen(name)) || !id || *n >= CTR_MAX) {
      fail(f, 400, "BadRequest", "each container needs a name and a containerID (at most %d)",
           CTR_MAX);
      return false;
    }
    if(strncmp(id, "godwit://", 9)) {
      fail(f, 501, "RuntimeNotSupported",
           "container %s runs in \"%.*s\": this agent reaches containers of the local "
           "cluster's runtime (godwit://) only; a CRI runtime's needs the kubelet checkpoint "
           "API (docs/dev/podmotion-runtime.md)", name, (int)strcspn(id, ":"), id);
      return false;
    }
    const char *dash = strrchr(id, '-');
    long pid = dash ? strtol(dash + 1, NULL, 10) : 0;
    struct ctr *x = &c[(*n)++];
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->pid = pid;
    snprintf(x->netns, sizeof(x->netns), "/proc/%ld/ns/net", pid);
    if(pid <= 1 || access(x->netns, F_OK)) {
      fail(f, 404, "ContainerNotFound", "container %s (process %ld) does not run on node %s",
           name, pid, a->node);
      return false;
    }
    /* never the node's own network: the shield would cut the node off */
    if(same_ns(x->netns, "/proc/self/ns/net") || same_ns(x->netns, "/proc/1/ns/net")) {
      fail(f, 422, "NoPodNetwork", "container %s runs in node %s's own network namespace "
           "(hostNetwork): it has no address of its own to move", name, a->node);
      return false;
    }
  }
  if(!*n) {
    fail(f, 400, "BadRequest", "\"containers\" is empty");
    return false;
  }
  return true;
}

/* ---- the manifest: every file of the checkpoint with its size and digest ---- */
static gw_rc file_digest(const char *path, size_t max, char out[DIGEST_SHA256_LEN], size_t *size)
{
  size_t len = 0;
  char *data = read_all(path, max, &len);
  if(!data)
    return GW_ENOTFOUND;
  gw_rc rc = digest_sha256(data, len, out);
  free(data);
  *size = len;
  return rc;
}

/* [{path: CTR/FILE, size, sha256}] of every regular file in dir's container directories. With
 * f, a file that cannot be read whole (above --max-file-mib) fails it (NULL): a checkpoint is
 * never sent without one of its files. */
static cJSON *manifest(const struct agent *a, const char *dir, struct na_fail *f)
{
  cJSON *m = cJSON_CreateArray();
  DIR *d = opendir(dir);
  struct dirent *e;
  while(d && (e = readdir(d))) {
    char sub[DIR_MAX + 260];
    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
    struct stat st;
    if(e->d_name[0] == '.' || lstat(sub, &st) || !S_ISDIR(st.st_mode))
      continue;
    DIR *cd = opendir(sub);
    struct dirent *fe;
    while(cd && (fe = readdir(cd))) {
      char path[DIR_MAX + 520];
      snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
      size_t n = strlen(fe->d_name);
      /* criu's logs stay where they were written: the restore needs none of them */
      if(lstat(path, &st) || !S_ISREG(st.st_mode) ||
         (n > 5 && !strcmp(fe->d_name + n - 5, ".part")) ||
         (n > 4 && !strcmp(fe->d_name + n - 4, ".log")))
        continue;
      char dg[DIGEST_SHA256_LEN];
      size_t size = 0;
      if(file_digest(path, a->max_file_bytes, dg, &size)) {
        if(!f)
          continue;
        fail(f, 413, "CheckpointTooLarge", "%s is %lld bytes, above this agent's limit of %zu "
             "(--max-file-mib)", path, (long long)st.st_size, a->max_file_bytes);
        if(cd)
          closedir(cd);
        closedir(d);
        cJSON_Delete(m);
        return NULL;
      }
      cJSON *o = cJSON_CreateObject();
      char rel[520];
      snprintf(rel, sizeof(rel), "%s/%s", e->d_name, fe->d_name);
      cJSON_AddStringToObject(o, "path", rel);
      cJSON_AddNumberToObject(o, "size", (double)size);
      cJSON_AddStringToObject(o, "sha256", dg);
      cJSON_AddItemToArray(m, o);
    }
    if(cd)
      closedir(cd);
  }
  if(d)
    closedir(d);
  return m;
}

static double manifest_bytes(const cJSON *m)
{
  double sum = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, m)
    sum += cJSON_GetNumberValue(cJSON_GetObjectItem(it, "size"));
  return sum;
}

/* ---- checkpoint ---- */
cJSON *agent_checkpoint(struct agent *a, const cJSON *req, struct na_fail *f)
{
  char dir[DIR_MAX], path[PATH_LEN];
  struct ctr c[CTR_MAX];
  size_t n = 0;
  if(!mig_dir(a, req, dir, sizeof(dir), NULL, f))
    return NULL;
  /* what can be refused is refused before anything is made */
  if(!resolve(a, req, c, &n, f))
    return NULL;
  char ip[32] = "", mac[32] = "", err[1024] = "";
  if(na_link_addr(c[0].netns, "eth0", mac, sizeof(mac), ip, sizeof(ip), err, sizeof(err))) {
    fail(f, 422, "NoPodNetwork", "the pod has no eth0 to move: %s", err);
    return NULL;
  }
  int lk = lock_dir(a, dir, true, f);
  if(lk < 0)
    return NULL;
  snprintf(path, sizeof(path), "%s/" NA_CHECKPOINT_JSON, dir);
  cJSON *done = read_json(path);
  if(done) { /* already taken: the same answer */
    unlock_dir(lk);
    return done;
  }
  if(agent_fault(a, "slow-checkpoint"))
    sleep(3); /* tests: a cancel arrives while the controller waits for this call */
  long long started = wall_ms();
  long t0 = mono_ms();
  /* From here nothing reaches the source's sockets: the checkpoint stays the truth */
  if(na_shield_raise(c[0].netns, false, err, sizeof(err))) {
    fail(f, 500, "ShieldFailed", "cannot shield the pod before its checkpoint: %s", err);
    rmdir_lock(dir, lk);
    return NULL;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON *ctrs = cJSON_CreateArray();
  for(size_t i = 0; i < n; i++) {
    char cdir[DIR_MAX + 80];
    snprintf(cdir, sizeof(cdir), "%s/%.63s", dir, c[i].name);
    rmtree(cdir); /* a dump cut short by a restart of the agent */
    if(mkdir(cdir, 0700)) {
      fail(f, 500, "InternalError", "cannot create %s: %s", cdir, strerror(errno));
      break;
    }
    struct criu_opts o = { .criu = a->criu, .pid = (pid_t)c[i].pid, .images_dir = cdir,
                           .verbosity = 4, .netns = c[i].netns, .network_lock = "nftables",
                           .tcp_established = true, .leave_running = true,
                           .skip_in_flight = true, .timeout_ms = DUMP_TIMEOUT_MS };
    struct criu_result r;
    gw_rc rc = agent_fault(a, "checkpoint") ? GW_EIO : criu_dump(&o, &r);
    if(rc && agent_fault(a, "checkpoint")) {
      memset(&r, 0, sizeof(r));
      snprintf(r.errors, sizeof(r.errors), "fault injected (--fault checkpoint)");
    }
    long dump_ms = r.elapsed_ms;
    if(rc) {
      fail(f, 500, "CheckpointFailed", "criu dump of container %s failed: %s", c[i].name,
           r.errors[0] ? r.errors : gw_strerror(rc));
      criu_result_release(&r);
      break;
    }
    criu_result_release(&r);
    char fd1[64], target[PATH_MAX];
    snprintf(fd1, sizeof(fd1), "/proc/%ld/fd/1", c[i].pid);
    ssize_t tl = readlink(fd1, target, sizeof(target) - 1);
    target[tl > 0 ? tl : 0] = 0;
    snprintf(path, sizeof(path), "%s/" RESTORE_STDIO, cdir);
    char line[PATH_MAX + 2];
    int ll = snprintf(line, sizeof(line), "%s\n", target);
    if(write_all(path, line, (size_t)ll)) {
      fail(f, 500, "InternalError", "cannot write %s", path);
      break;
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", c[i].name);
    cJSON_AddNumberToObject(x, "pid", (double)c[i].pid);
    cJSON_AddNumberToObject(x, "dumpMs", (double)dump_ms);
    cJSON_AddItemToArray(ctrs, x);
  }
  if(f->code) { /* the source serves again, nothing half-made is kept */
    char e2[512];
    if(na_shield_lower(c[0].netns, e2, sizeof(e2)))
      log_kv(LOG_ERROR, "the shield of a pod whose checkpoint failed stays up", "netns",
             c[0].netns, "error", e2, LOG_END);
    for(size_t i = 0; i < n; i++) {
      char cdir[DIR_MAX + 80];
      snprintf(cdir, sizeof(cdir), "%s/%.63s", dir, c[i].name);
      rmtree(cdir);
    }
    cJSON_Delete(out);
    cJSON_Delete(ctrs);
    rmdir_lock(dir, lk);
    atomic_fetch_add(&a->checkpoints_failed, 1);
    return NULL;
  }
  long elapsed = mono_ms() - t0;
  cJSON *m = manifest(a, dir, f);
  if(!m) { /* a file too large to send: the source serves again, nothing is kept */
    char e2[512];
    if(na_shield_lower(c[0].netns, e2, sizeof(e2)))
      log_kv(LOG_ERROR, "the shield of a pod whose checkpoint failed stays up", "netns",
             c[0].netns, "error", e2, LOG_END);
    for(size_t i = 0; i < n; i++) {
      char cdir[DIR_MAX + 80];
      snprintf(cdir, sizeof(cdir), "%s/%.63s", dir, c[i].name);
      rmtree(cdir);
    }
    rmdir_lock(dir, lk);
    cJSON_Delete(out);
    atomic_fetch_add(&a->checkpoints_failed, 1);
    return NULL;
  }
  snprintf(path, sizeof(path), "%s/" NA_MANIFEST_JSON, dir);
  cJSON_AddNumberToObject(out, "startedAtMs", (double)started);
  cJSON_AddNumberToObject(out, "durationMs", (double)elapsed);
  cJSON_AddNumberToObject(out, "sizeBytes", manifest_bytes(m));
  cJSON_AddStringToObject(out, "ip", ip);
  cJSON_AddStringToObject(out, "mac", mac);
  cJSON_AddStringToObject(out, "node", a->node);
  cJSON_AddStringToObject(out, "dir", dir);
  cJSON_AddItemToObject(out, "containers", ctrs);
  char cpath[PATH_LEN];
  snprintf(cpath, sizeof(cpath), "%s/" NA_CHECKPOINT_JSON, dir);
  if(write_json(path, m) || write_json(cpath, out)) {
    fail(f, 500, "InternalError", "cannot record the checkpoint in %s", dir);
    cJSON_Delete(out);
    out = NULL;
  } else {
    atomic_fetch_add(&a->checkpoints_ok, 1);
    atomic_fetch_add(&a->checkpoint_ms_sum, elapsed);
    char ms[24];
    snprintf(ms, sizeof(ms), "%ld", elapsed);
    log_kv(LOG_INFO, "checkpoint written", "dir", dir, "ms", ms, LOG_END);
  }
  cJSON_Delete(m);
  unlock_dir(lk);
  return out;
}

/* ---- send: the source copies the checkpoint to the destination agent ---- */
static const cJSON *find_path(const cJSON *files, const char *p)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, files)
  {
    const char *q = json_get_str(it, "path");
    if(q && !strcmp(q, p))
      return it;
  }
  return NULL;
}

cJSON *agent_send(struct agent *a, const cJSON *req, struct na_fail *f)
{
  char dir[DIR_MAX], name[NA_DIRNAME_MAX], path[PATH_LEN];
  if(!mig_dir(a, req, dir, sizeof(dir), name, f))
    return NULL;
  const char *to = json_get_str(req, "to.endpoint");
  if(!to) {
    fail(f, 400, "BadRequest", "\"to.endpoint\" is required");
    return NULL;
  }
  int lk = lock_dir(a, dir, false, f);
  if(lk < 0)
    return NULL;
  snprintf(path, sizeof(path), "%s/" NA_MANIFEST_JSON, dir);
  cJSON *m = read_json(path);
  if(!m) {
    fail(f, 404, "CheckpointNotFound", "no checkpoint of %s on node %s", name, a->node);
    unlock_dir(lk);
    return NULL;
  }
  if(agent_fault(a, "slow-send"))
    sleep(3); /* tests: a cancel arrives while the controller waits for this call */
  struct na_target t = { .endpoint = to, .ca_file = a->peer_ca, .token = a->token,
                         .timeout_ms = 120000 };
  cJSON *body = cJSON_CreateObject();
  cJSON_AddItemToObject(body, "migration", cJSON_Duplicate(json_get(req, "migration"), 1));
  cJSON *peer = NULL;
  char err[1024];
  long t0 = mono_ms();
  double sent = 0;
  int files = 0, skipped = 0, code = 0;
  if(na_post(&t, NA_PATH_STATE, body, &peer, &code, err, sizeof(err))) {
    fail(f, 502, "PeerUnavailable", "%s", err);
    goto out;
  }
  const cJSON *have = json_get(peer, "received.files");
  const cJSON *it;
  cJSON_ArrayForEach(it, m)
  {
    const char *p = json_get_str(it, "path"), *sha = json_get_str(it, "sha256");
    const cJSON *h = find_path(have, p);
    if(h && sha && json_get_str(h, "sha256") && !strcmp(json_get_str(h, "sha256"), sha)) {
      skipped++; /* resumed: the peer has it already */
      continue;
    }
    char fp[PATH_LEN];
    snprintf(fp, sizeof(fp), "%s/%s", dir, p);
    size_t len = 0;
    char *data = read_all(fp, a->max_file_bytes, &len);
    if(!data) {
      fail(f, 500, "CheckpointUnreadable", "cannot read %s (or it is above %zu bytes)", fp,
           a->max_file_bytes);
      goto out;
    }
    gw_rc rc = files && agent_fault(a, "send")
                 ? GW_EIO
                 : na_put_file(&t, name, p, data, len, sha, &code, err, sizeof(err));
    if(rc && agent_fault(a, "send"))
      snprintf(err, sizeof(err), "fault injected (--fault send) after %d file(s)", files);
    free(data);
    if(rc) {
      fail(f, 502, "TransferFailed", "%s", err);
      goto out;
    }
    sent += (double)len;
    files++;
  }
  cJSON_AddItemToObject(body, "manifest", cJSON_Duplicate(m, 1));
  cJSON *rec = NULL;
  if(na_post(&t, NA_PATH_RECEIVED, body, &rec, &code, err, sizeof(err))) {
    fail(f, 502, "TransferFailed", "%s", err);
    goto out;
  }
  cJSON_Delete(rec);
out:;
  cJSON *res = NULL;
  if(!f->code) {
    res = cJSON_CreateObject();
    cJSON_AddNumberToObject(res, "bytes", sent);
    cJSON_AddNumberToObject(res, "files", files);
    cJSON_AddNumberToObject(res, "skipped", skipped);
    cJSON_AddNumberToObject(res, "durationMs", (double)(mono_ms() - t0));
    atomic_fetch_add(&a->bytes_sent, (long long)sent);
  }
  cJSON_Delete(peer);
  cJSON_Delete(body);
  cJSON_Delete(m);
  unlock_dir(lk);
  return res;
}

/* ---- the destination: files, then the manifest that completes them ---- */
cJSON *agent_put_file(struct agent *a, const char *name, const char *file, const char *sha256,
                      const void *data, size_t len, struct na_fail *f)
{
  const char *slash = file ? strchr(file, '/') : NULL;
  if(!name || strlen(name) >= NA_DIRNAME_MAX || !safe_part(name, strlen(name)) || !slash ||
     !safe_part(file, (size_t)(slash - file)) || !safe_part(slash + 1, strlen(slash + 1)) ||
     !sha256) {
    fail(f, 400, "BadRequest", "PUT " NA_PATH_FILES " needs " NA_HDR_MIGRATION ", "
         NA_HDR_FILE " (CONTAINER/FILE) and " NA_HDR_SHA256 " headers with plain names");
    atomic_fetch_add(&a->files_refused, 1);
    return NULL;
  }
  char dg[DIGEST_SHA256_LEN];
  if(digest_sha256(data, len, dg) || strcmp(dg, sha256)) {
    fail(f, 400, "ChecksumMismatch", "%s of %s arrived with %s, not %s", file, name, dg,
         sha256);
    atomic_fetch_add(&a->files_refused, 1);
    return NULL;
  }
  char dir[DIR_MAX], path[PATH_LEN];
  snprintf(dir, sizeof(dir), "%s/%s", a->root, name);
  int lk = lock_dir(a, dir, true, f);
  if(lk < 0)
    return NULL;
  snprintf(path, sizeof(path), "%s/" NA_RECEIVED_JSON, dir);
  if(!access(path, F_OK)) {
    fail(f, 409, "CheckpointComplete", "the checkpoint %s is complete on node %s: no more data "
         "is taken", name, a->node);
    unlock_dir(lk);
    atomic_fetch_add(&a->files_refused, 1);
    return NULL;
  }
  snprintf(path, sizeof(path), "%s/%.*s", dir, (int)(slash - file), file);
  if(mkdir(path, 0700) && errno != EEXIST) {
    fail(f, 500, "InternalError", "cannot create %s: %s", path, strerror(errno));
    unlock_dir(lk);
    return NULL;
  }
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  if(write_all(path, data, len)) {
    fail(f, 507, "InsufficientStorage", "cannot write %s: %s", path, strerror(errno));
    unlock_dir(lk);
    return NULL;
  }
  unlock_dir(lk);
  atomic_fetch_add(&a->files_received, 1);
  atomic_fetch_add(&a->bytes_received, (long long)len);
  cJSON *out = cJSON_CreateObject();
  cJSON_AddNumberToObject(out, "size", (double)len);
  return out;
}

cJSON *agent_received(struct agent *a, const cJSON *req, struct na_fail *f)
{
  char dir[DIR_MAX], name[NA_DIRNAME_MAX], path[PATH_LEN];
  if(!mig_dir(a, req, dir, sizeof(dir), name, f))
    return NULL;
  const cJSON *m = json_get(req, "manifest");
  if(!cJSON_IsArray(m) || !cJSON_GetArraySize(m)) {
    fail(f, 400, "BadRequest", "\"manifest\" must list the checkpoint's files");
    return NULL;
  }
  int lk = lock_dir(a, dir, true, f);
  if(lk < 0)
    return NULL;
  cJSON *missing = cJSON_CreateArray();
  const cJSON *it;
  cJSON_ArrayForEach(it, m)
  {
    const char *p = json_get_str(it, "path"), *sha = json_get_str(it, "sha256");
    const char *slash = p ? strchr(p, '/') : NULL;
    bool ok = slash && sha && safe_part(p, (size_t)(slash - p)) &&
              safe_part(slash + 1, strlen(slash + 1));
    char dg[DIGEST_SHA256_LEN];
    size_t size = 0;
    if(ok) {
      snprintf(path, sizeof(path), "%s/%s", dir, p);
      ok = !file_digest(path, a->max_file_bytes, dg, &size) && !strcmp(dg, sha);
    }
    if(!ok)
      cJSON_AddItemToArray(missing, cJSON_CreateString(p ? p : "?"));
  }
  cJSON *out = NULL;
  if(cJSON_GetArraySize(missing)) {
    char *list = cJSON_PrintUnformatted(missing);
    fail(f, 409, "CheckpointIncomplete", "node %s lacks or holds different %s of %s", a->node,
         list ? list : "files", name);
    cJSON_free(list);
  } else {
    out = cJSON_CreateObject();
    cJSON_AddItemToObject(out, "manifest", cJSON_Duplicate(m, 1));
    cJSON_AddNumberToObject(out, "completedAtMs", (double)wall_ms());
    cJSON_AddNumberToObject(out, "sizeBytes", manifest_bytes(m));
    cJSON_AddStringToObject(out, "dir", dir);
    if(agent_fault(a, "corrupt-restore")) /* the restore will find the memory images short */
      cJSON_ArrayForEach(it, m)
      {
        const char *p = json_get_str(it, "path");
        if(p && strstr(p, "/pages-")) {
          snprintf(path, sizeof(path), "%s/%s", dir, p);
          if(truncate(path, 1))
            log_kv(LOG_WARN, "fault not injected", "path", path, LOG_END);
        }
      }
    snprintf(path, sizeof(path), "%s/" NA_RECEIVED_JSON, dir);
    if(write_json(path, out)) {
      fail(f, 500, "InternalError", "cannot record %s", path);
      cJSON_Delete(out);
      out = NULL;
    }
  }
  cJSON_Delete(missing);
  unlock_dir(lk);
  return out;
}

cJSON *agent_state(struct agent *a, const cJSON *req, struct na_fail *f)
{
  char dir[DIR_MAX], path[PATH_LEN];
  if(!mig_dir(a, req, dir, sizeof(dir), NULL, f))
    return NULL;
  if(agent_fault(a, "slow-state"))
    sleep(3); /* tests: a cancel arrives while the controller waits for this call */
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "dir", dir);
  cJSON_AddStringToObject(out, "node", a->node);
  snprintf(path, sizeof(path), "%s/" NA_CHECKPOINT_JSON, dir);
  cJSON *cp = read_json(path);
  cJSON_AddItemToObject(out, "checkpoint", cp ? cp : cJSON_CreateNull());
  cJSON *rc = cJSON_AddObjectToObject(out, "received");
  snprintf(path, sizeof(path), "%s/" NA_RECEIVED_JSON, dir);
  cJSON *done = read_json(path);
  cJSON_AddBoolToObject(rc, "complete", done != NULL);
  cJSON_Delete(done);
  struct stat st;
  cJSON *files = !stat(dir, &st) ? manifest(a, dir, NULL) : cJSON_CreateArray();
  if(!files)
    files = cJSON_CreateArray();
  cJSON *restored = cJSON_AddObjectToObject(out, "restored");
  const cJSON *it;
  cJSON_ArrayForEach(it, files)
  {
    const char *p = json_get_str(it, "path");
    const char *slash = p ? strchr(p, '/') : NULL;
    if(!slash || strcmp(slash + 1, RESTORE_DONE))
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, p);
    cJSON *r = read_json(path);
    char ctr[128];
    snprintf(ctr, sizeof(ctr), "%.*s", (int)(slash - p), p);
    if(r)
      cJSON_AddItemToObject(restored, ctr, r);
  }
  cJSON_AddItemToObject(rc, "files", files);
  return out;
}

/* ---- the network around the handover ---- */
static cJSON *net_op(struct agent *a, const cJSON *req, struct na_fail *f, int what)
{
  struct ctr c[CTR_MAX];
  size_t n = 0;
  if(!resolve(a, req, c, &n, f))
    return NULL;
  char err[1024] = "";
  gw_rc rc = GW_OK;
  if(what == 0) { /* release: the source serves again */
    rc = na_link_set(c[0].netns, "eth0", true, err, sizeof(err));
    if(!rc)
      rc = na_shield_lower(c[0].netns, err, sizeof(err));
    atomic_fetch_add(&a->releases, 1);
  } else if(what == 1) { /* detach: the source lets the address go */
    rc = na_link_set(c[0].netns, "eth0", false, err, sizeof(err));
    atomic_fetch_add(&a->detaches, 1);
  } else if(agent_fault(a, "attach")) {
    snprintf(err, sizeof(err), "fault injected (--fault attach)");
    rc = GW_EIO;
  } else { /* attach: the restored copy owns the flows */
    rc = na_shield_lower(c[0].netns, err, sizeof(err));
    atomic_fetch_add(&a->attaches, 1);
  }
  if(rc) {
    fail(f, 500, "NetworkChangeFailed", "%s", err);
    return NULL;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddBoolToObject(out, "shielded", na_shield_up(c[0].netns));
  return out;
}

cJSON *agent_release(struct agent *a, const cJSON *req, struct na_fail *f)
{
  return net_op(a, req, f, 0);
}

cJSON *agent_detach(struct agent *a, const cJSON *req, struct na_fail *f)
{
  return net_op(a, req, f, 1);
}

cJSON *agent_attach(struct agent *a, const cJSON *req, struct na_fail *f)
{
  return net_op(a, req, f, 2);
}

cJSON *agent_probe(struct agent *a, const cJSON *req, struct na_fail *f)
{
  struct ctr c[CTR_MAX];
  size_t n = 0;
  if(!resolve(a, req, c, &n, f))
    return NULL;
  const char *scheme = json_get_str(req, "scheme");
  const cJSON *port = json_get(req, "port"), *tmo = json_get(req, "timeoutMs");
  struct na_probe p = { .address = json_get_str(req, "address"),
                        .port = cJSON_IsNumber(port) ? port->valueint : 0,
                        .http_path = json_get_str(req, "path"),
                        .https = scheme && !strcmp(scheme, "HTTPS"),
                        .timeout_ms = cJSON_IsNumber(tmo) ? (long)tmo->valuedouble : 1000 };
  char err[1024] = "";
  gw_rc rc = na_probe_run(c[0].netns, &p, err, sizeof(err));
  if(rc == GW_EINVAL || rc == GW_EUNSUPPORTED) {
    fail(f, 400, "BadRequest", "%s", err);
    return NULL;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddBoolToObject(out, "ok", rc == GW_OK);
  cJSON_AddStringToObject(out, "message", rc ? err : "passed");
  atomic_fetch_add(rc ? &a->probes_failed : &a->probes_ok, 1);
  return out;
}

cJSON *agent_address(struct agent *a, const cJSON *req, struct na_fail *f)
{
  struct ctr c[CTR_MAX];
  size_t n = 0;
  if(!resolve(a, req, c, &n, f))
    return NULL;
  char ip[32] = "", mac[32] = "", err[1024] = "";
  if(na_link_addr(c[0].netns, "eth0", mac, sizeof(mac), ip, sizeof(ip), err, sizeof(err))) {
    fail(f, 422, "NoPodNetwork", "the pod has no eth0 to move: %s", err);
    return NULL;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddStringToObject(out, "ip", ip);
  cJSON_AddStringToObject(out, "mac", mac);
  return out;
}

cJSON *agent_remove(struct agent *a, const cJSON *req, struct na_fail *f)
{
  char dir[DIR_MAX];
  if(!mig_dir(a, req, dir, sizeof(dir), NULL, f))
    return NULL;
  struct stat st;
  bool had = !stat(dir, &st);
  if(had)
    rmtree(dir);
  if(!stat(dir, &st)) {
    fail(f, 500, "InternalError", "cannot remove %s", dir);
    return NULL;
  }
  if(had)
    atomic_fetch_add(&a->removals, 1);
  cJSON *out = cJSON_CreateObject();
  cJSON_AddBoolToObject(out, "removed", had);
  return out;
}

cJSON *agent_list(struct agent *a, const cJSON *req, struct na_fail *f)
{
  (void)req;
  (void)f;
  cJSON *out = cJSON_CreateObject();
  cJSON *l = cJSON_AddArrayToObject(out, "checkpoints");
  DIR *d = opendir(a->root);
  struct dirent *e;
  while(d && (e = readdir(d))) {
    if(e->d_name[0] == '.')
      continue;
    char dir[DIR_MAX + 256];
    snprintf(dir, sizeof(dir), "%s/%s", a->root, e->d_name);
    struct stat st;
    if(lstat(dir, &st) || !S_ISDIR(st.st_mode))
      continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", e->d_name);
    cJSON_AddNumberToObject(o, "modifiedAtMs", (double)st.st_mtime * 1000);
    cJSON_AddItemToArray(l, o);
  }
  if(d)
    closedir(d);
  return out;
}
