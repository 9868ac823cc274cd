/*
 * counter.c: the stateful TCP server the CRIU tests checkpoint and restore (a stand-in for a Pod's
 * process). It serves one client at a time, one request per line:
 *   "inc" -> the counter plus one, then its value ("7\n")
 *   "get" -> the value without changing it
 *   "net" -> the network namespace it runs in, as /proc/self/ns/net reads ("net:[4026532...]\n")
 * The counter lives only in the process's memory: a restored copy that answers with the next
 * value proves its memory came along.
 *
 *   godwit-criu-counter ADDRESS PORT [READY_FD]
 * READY_FD, when given, gets "ready\n" once the socket listens and is closed at once, so a test
 * waits on an event rather than a delay, and nothing of the test stays open in the checkpoint.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned long counter;

static int listen_on(const char *addr, int port)
{
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if(inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    fprintf(stderr, "counter: '%s' is not an IPv4 address\n", addr);
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  if(fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
     bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
    fprintf(stderr, "counter: cannot listen on %s:%d: %s\n", addr, port, strerror(errno));
    return -1;
  }
  return fd;
}

static int reply(int fd, const char *line)
{
  char out[128];
  int n;
  if(!strcmp(line, "inc"))
    n = snprintf(out, sizeof(out), "%lu\n", ++counter);
  else if(!strcmp(line, "get"))
    n = snprintf(out, sizeof(out), "%lu\n", counter);
  else if(!strcmp(line, "net")) {
    char ns[64];
    ssize_t len = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
    ns[len > 0 ? len : 0] = '\0';
    n = snprintf(out, sizeof(out), "%s\n", ns);
  } else
    n = snprintf(out, sizeof(out), "error: unknown request\n");
  return write(fd, out, (size_t)n) == n ? 0 : -1;
}

/* Serves one connection until the client closes it. */
static void serve(int fd)
{
  char line[64];
  size_t len = 0;
  for(;;) {
    char c;
    ssize_t r = read(fd, &c, 1);
    if(r < 0 && errno == EINTR)
      continue;
    if(r <= 0)
      return;
    if(c != '\n') {
      if(len < sizeof(line) - 1)
        line[len++] = c;
      continue;
    }
    line[len] = '\0';
    len = 0;
    if(reply(fd, line) < 0)
      return;
  }
}

int main(int argc, char **argv)
{
  if(argc < 3) {
    fprintf(stderr, "usage: godwit-criu-counter ADDRESS PORT [READY_FD]\n");
    return 2;
  }
  int lfd = listen_on(argv[1], atoi(argv[2]));
  if(lfd < 0)
    return 1;
  if(argc > 3) {
    int ready = atoi(argv[3]);
    if(write(ready, "ready\n", 6) != 6)
      return 1;
    close(ready);
  }
  for(;;) {
    int fd = accept(lfd, NULL, NULL);
    if(fd < 0) {
      if(errno == EINTR || errno == ECONNABORTED)
        continue;
      return 1;
    }
    serve(fd);
    close(fd);
  }
}
