/* certgen_io.c: the file side of certgen: mkdir -p, all-or-nothing writes, whole-file reads. */
#include "certgen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gw_rc certgen_mkdirs(const char *dir, char *err, size_t errlen)
{
  char path[PATH_MAX];
  size_t n = strlen(dir);
  if(!n || n >= sizeof(path)) {
    snprintf(err, errlen, "--out \"%s\": path is empty or too long", dir);
    return GW_EINVAL;
  }
  memcpy(path, dir, n + 1);
  /* Create each prefix in turn; "a/b/c" visits "a", "a/b", "a/b/c". */
  for(size_t i = 1; i <= n; i++) {
    if(path[i] != '/' && path[i] != '\0')
      continue;
    char saved = path[i];
    path[i] = '\0';
    struct stat st;
    if(mkdir(path, 0755) && errno != EEXIST) {
      snprintf(err, errlen, "--out \"%s\": cannot create \"%s\": %s", dir, path, strerror(errno));
      return GW_EIO;
    }
    if(stat(path, &st) || !S_ISDIR(st.st_mode)) {
      snprintf(err, errlen, "--out \"%s\": \"%s\" exists and is not a directory", dir, path);
      return GW_EIO;
    }
    path[i] = saved;
  }
  return GW_OK;
}

static gw_rc write_all(int fd, const char *data, size_t len)
{
  while(len) {
    ssize_t w = write(fd, data, len);
    if(w < 0 && errno == EINTR)
      continue;
    if(w <= 0)
      return GW_EIO;
    data += w;
    len -= (size_t)w;
  }
  return GW_OK;
}

/* One temporary: created exclusively with a random suffix so two runs never collide. */
static gw_rc write_temp(const char *dir, const struct certgen_file *f, char tmp[PATH_MAX],
                        char *err, size_t errlen)
{
  if(snprintf(tmp, PATH_MAX, "%s/.%s.XXXXXX", dir, f->name) >= PATH_MAX) {
    snprintf(err, errlen, "--out \"%s\": path too long", dir);
    tmp[0] = '\0';
    return GW_EINVAL;
  }
  int fd = mkstemp(tmp);
  if(fd < 0) {
    snprintf(err, errlen, "--out \"%s\": cannot write \"%s\": %s", dir, f->name, strerror(errno));
    tmp[0] = '\0';
    return GW_EIO;
  }
  int e = 0;
  errno = EIO; /* what a short write reports */
  if(fchmod(fd, f->mode) || write_all(fd, f->data, f->len) || fsync(fd))
    e = errno;
  if(close(fd) && !e)
    e = errno;
  if(!e)
    return GW_OK;
  snprintf(err, errlen, "--out \"%s\": cannot write \"%s\": %s", dir, f->name, strerror(e));
  return GW_EIO;
}

gw_rc certgen_write_files(const char *dir, const struct certgen_file *files, size_t n, char *err,
                          size_t errlen)
{
  char(*tmp)[PATH_MAX] = calloc(n ? n : 1, sizeof(*tmp));
  if(!tmp) {
    snprintf(err, errlen, "out of memory");
    return GW_ENOMEM;
  }
  gw_rc rc = GW_OK;
  for(size_t i = 0; i < n && !rc; i++)
    rc = write_temp(dir, &files[i], tmp[i], err, errlen);
  /* Renames within one directory only fail if the directory itself changed under us. */
  for(size_t i = 0; i < n && !rc; i++) {
    char dst[PATH_MAX];
    snprintf(dst, sizeof(dst), "%s/%s", dir, files[i].name);
    if(rename(tmp[i], dst)) {
      snprintf(err, errlen, "--out \"%s\": cannot replace \"%s\": %s", dir, files[i].name,
               strerror(errno));
      rc = GW_EIO;
      break;
    }
    tmp[i][0] = '\0';
  }
  for(size_t i = 0; i < n; i++)
    if(tmp[i][0])
      unlink(tmp[i]);
  free(tmp);
  if(!rc) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if(dfd >= 0) { /* make the renames durable; best effort */
      (void)fsync(dfd);
      close(dfd);
    }
  }
  return rc;
}

gw_rc certgen_read_file(const char *path, size_t max, char **data, size_t *len)
{
  *data = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if(!f)
    return errno == ENOENT ? GW_ENOTFOUND : GW_EIO;
  char *buf = malloc(max + 1);
  size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
  gw_rc rc = !buf ? GW_ENOMEM : ferror(f) ? GW_EIO : n > max ? GW_ETOOBIG : GW_OK;
  fclose(f);
  if(rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return GW_OK;
}
