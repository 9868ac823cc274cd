/* counter.c: the CRIU counter Pod and its client (counter.h). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "counter.h"
#include "json.h"


static const char *counter_path(void)
{
  static char path[512];
  const char *b = getenv("GODWIT_BUILD");
  snprintf(path, sizeof(path), "%s/tests/criu-counter", b && *b ? b : "build");
  char *abs = realpath(path, NULL);
  cr_assert(abs, "%s is not built", path);
  snprintf(path, sizeof(path), "%s", abs);
  free(abs);
  return path;
}

cJSON *jt_counter_pod(const char *name, const char *node)
{
  cJSON *pod = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                           "{\"namespace\":\"jr\"},\"spec\":{\"restartPolicy\":\"Never\","
                           "\"containers\":[{\"name\":\"main\",\"image\":\"godwit/criu-counter\"}]}}");
  cr_assert(pod);
  cr_assert_eq(json_set_str(pod, "metadata.name", name), GW_OK);
  cJSON *ctr = cJSON_GetArrayItem(json_get_mut(pod, "spec.containers"), 0);
  cJSON_DeleteItemFromObject(ctr, "command");
  cJSON_DeleteItemFromObject(ctr, "args");
  cJSON *cmd = cJSON_AddArrayToObject(ctr, "command");
  cJSON_AddItemToArray(cmd, cJSON_CreateString(counter_path()));
  cJSON_AddItemToArray(cmd, cJSON_CreateString("0.0.0.0"));
  cJSON_AddItemToArray(cmd, cJSON_CreateString("7000"));
  if(node)
    cr_assert_eq(json_set_str(pod, "spec.nodeName", node), GW_OK);
  cr_assert_eq(json_set(pod, "spec.automountServiceAccountToken", cJSON_CreateFalse()), GW_OK);
  cr_assert_eq(json_set(pod, "spec.terminationGracePeriodSeconds", cJSON_CreateNumber(1)), GW_OK);
  return pod;
}

long jt_container_pid(const cJSON *pod)
{
  const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
  const char *id = json_get_str(cs, "containerID");
  cr_assert(id && !strncmp(id, "godwit://", 9), "containerID %s", id ? id : "(none)");
  const char *dash = strrchr(id, '-');
  cr_assert(dash);
  return strtol(dash + 1, NULL, 10);
}

int jt_counter_connect(const char *ip)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7000) };
  cr_assert_eq(inet_pton(AF_INET, ip, &sa.sin_addr), 1, "address %s", ip);
  for(int i = 0; i < 50; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    if(!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
      return fd;
    close(fd);
    usleep(100000);
  }
  cr_assert_fail("cannot connect to %s:7000 from this machine", ip);
  return -1;
}

const char *jt_counter_req(int fd, const char *what)
{
  static char out[128];
  char line[32];
  snprintf(line, sizeof(line), "%s\n", what);
  cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line), "write: %s",
               strerror(errno));
  struct pollfd pf = { .fd = fd, .events = POLLIN };
  cr_assert_eq(poll(&pf, 1, 5000), 1, "no answer to %s", what);
  ssize_t n = read(fd, out, sizeof(out) - 1);
  cr_assert(n > 0, "read after %s: %s", what, n < 0 ? strerror(errno) : "closed");
  out[n] = 0;
  out[strcspn(out, "\n")] = 0;
  return out;
}
