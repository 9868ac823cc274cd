/* logs.c: container logs as files the API server serves for pods/NAME/log.
 *
 * Convention (docs/dev/localcluster.md): DIR/logs/NS/POD/CONTAINER.log holds the bytes the
 * container wrote to stdout and stderr, interleaved as written, no timestamps; the instance
 * before the last restart is CONTAINER.previous.log; DIR/logs/NS/POD.log is a symlink to the
 * first container's log for readers that want one file per Pod. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubelet.h"

void logs_path(const struct jr *jr, const char *ns, const char *pod, const char *ctr,
               bool previous, char *buf, size_t len)
{
  jr_fmt(buf, len, "%s/logs/%s/%s/%s%s", jr->dir, ns, pod, ctr,
           previous ? ".previous.log" : ".log");
}

gw_rc logs_prepare(const struct jr *jr, const char *ns, const char *pod, const char *ctr,
                   bool restart, bool first)
{
  char dir[PATH_MAX], cur[PATH_MAX], prev[PATH_MAX];
  jr_fmt(dir, sizeof(dir), "%s/logs/%s/%s", jr->dir, ns, pod);
  if(jr_mkdirs(dir, 0755))
    return GW_EIO;
  logs_path(jr, ns, pod, ctr, false, cur, sizeof(cur));
  logs_path(jr, ns, pod, ctr, true, prev, sizeof(prev));
  if(restart)
    rename(cur, prev);
  else
    unlink(prev);
  int fd = open(cur, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if(fd < 0)
    return GW_EIO;
  close(fd);
  if(first) {
    char link[PATH_MAX], target[PATH_MAX];
    jr_fmt(link, sizeof(link), "%s/logs/%s/%s.log", jr->dir, ns, pod);
    jr_fmt(target, sizeof(target), "%s/%s.log", pod, ctr);
    unlink(link);
    if(symlink(target, link))
      return GW_EIO;
  }
  return GW_OK;
}

char *logs_tail(const char *path, int lines, size_t max_bytes)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return strdup("");
  struct stat st;
  off_t size = fstat(fd, &st) ? 0 : st.st_size;
  size_t want = max_bytes;
  off_t from = size > (off_t)want ? size - (off_t)want : 0;
  char *buf = malloc(want + 1);
  size_t got = 0;
  if(buf && lseek(fd, from, SEEK_SET) >= 0) {
    ssize_t n;
    while(got < want && (n = read(fd, buf + got, want - got)) > 0)
      got += (size_t)n;
  }
  close(fd);
  if(!buf)
    return NULL;
  buf[got] = 0;
  /* Keep the last `lines` lines (a final newline does not start a line). */
  size_t end = got;
  if(end && buf[end - 1] == '\n')
    end--;
  size_t start = end;
  int seen = 0;
  while(start > 0) {
    if(buf[start - 1] == '\n' && ++seen == lines)
      break;
    start--;
  }
  memmove(buf, buf + start, got - start + 1);
  return buf;
}

void logs_remove(const struct jr *jr, const char *ns, const char *pod)
{
  char p[PATH_MAX];
  jr_fmt(p, sizeof(p), "%s/logs/%s/%s", jr->dir, ns, pod);
  jr_rmtree(p);
  jr_fmt(p, sizeof(p), "%s/logs/%s/%s.log", jr->dir, ns, pod);
  unlink(p);
}
