/* The local runtime's restore (controller/nodeagent/restore.h) on the worker nodes, with real
 * CRIU and the node agent's own network hands (netns.h): the test plays the agents. A counter
 * Pod on node-a serves a client connected from this machine; its network is shielded and it is
 * dumped with --leave-running; a Pod annotated to restore that checkpoint on node-b comes up
 * with the same address and MAC, shielded, answers a probe over its loopback, and takes the
 * connection over when node-a's link goes down and node-b's shield falls: the client's next
 * request gets the next number from node-b, on the same connection, with no reset. A rollback
 * instead (the restored Pod deleted, node-a's shield lowered) leaves the source serving the same
 * client. Checkpoint failures are the runtime's StartError. As root, with make deps' CRIU. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "nodeagent/criu.h"
#include "nodeagent/netns.h"
#include "nodeagent/restore.h"
#include "test_jobrunner.h"

static struct cl C;
static struct kube_client *K;
static char images[300]; /* the checkpoint directory, 0700 */

static void start(void)
{
  jt_start(&C, CL_NODES);
  K = jt_admin(&C);
  snprintf(images, sizeof(images), "%s/checkpoint", C.dir);
  cr_assert_eq(mkdir(images, 0700), 0, "%s: %s", images, strerror(errno));
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(jobrunner_restore, .init = start, .fini = stop, .timeout = 120);

static int client = -1;

static const char *req(const char *what)
{
  return jt_counter_req(client, what);
}

static cJSON *counter_pod(const char *name, const char *node)
{
  return jt_counter_pod(name, node);
}

static long container_pid(const cJSON *pod)
{
  return jt_container_pid(pod);
}

struct source {
  cJSON *pod;
  char netns[64];
  char ip[32], mac[32];
};

/* Plays the source agent: shield, dump --leave-running, the stdio record. */
static void checkpoint(struct source *s)
{
  long pid = container_pid(s->pod);
  snprintf(s->netns, sizeof(s->netns), "/proc/%ld/ns/net", pid);
  char err[512] = "";
  cr_assert_eq(na_link_addr(s->netns, "eth0", s->mac, sizeof(s->mac), s->ip, sizeof(s->ip), err,
                            sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(s->ip, json_get_str(s->pod, "status.podIP"));
  cr_assert_eq(na_shield_raise(s->netns, false, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(na_shield_up(s->netns));
  char dir[320], fd1[64], target[512];
  snprintf(dir, sizeof(dir), "%s/main", images);
  cr_assert_eq(mkdir(dir, 0700), 0);
  struct criu_opts o = { .pid = (pid_t)pid, .images_dir = dir, .verbosity = 4,
                         .netns = s->netns, .network_lock = "nftables", .tcp_established = true,
                         .leave_running = true };
  struct criu_result r;
  gw_rc rc = criu_dump(&o, &r);
  cr_assert_eq(rc, GW_OK, "criu dump: %s", r.errors);
  criu_result_release(&r);
  snprintf(fd1, sizeof(fd1), "/proc/%ld/fd/1", pid);
  ssize_t n = readlink(fd1, target, sizeof(target) - 1);
  cr_assert(n > 0);
  target[n] = 0;
  char path[340];
  snprintf(path, sizeof(path), "%s/" RESTORE_STDIO, dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fprintf(f, "%s\n", target);
  fclose(f);
}

static cJSON *restored_pod(const struct source *s)
{
  cJSON *pod = counter_pod("counter-b", "node-b");
  cJSON *ann = cJSON_CreateObject();
  cJSON_AddStringToObject(ann, RESTORE_FROM_ANNOTATION, images);
  cJSON_AddStringToObject(ann, RESTORE_IP_ANNOTATION, s->ip);
  cJSON_AddStringToObject(ann, RESTORE_MAC_ANNOTATION, s->mac);
  cr_assert_eq(json_set(pod, "metadata.annotations", ann), GW_OK);
  return pod;
}

static void start_source(struct source *s)
{
  memset(s, 0, sizeof(*s));
  jt_create(K, &KUBE_PODS, counter_pod("counter", "node-a"));
  s->pod = jt_wait_pod(K, NULL, "counter", jt_pod_running, 20000);
  cr_assert(s->pod, "the counter never ran");
  client = jt_counter_connect(json_get_str(s->pod, "status.podIP"));
  cr_assert_str_eq(req("inc"), "1");
  cr_assert_str_eq(req("inc"), "2");
}

static char *netns_of(const cJSON *pod, char *buf, size_t len)
{
  snprintf(buf, len, "/proc/%ld/ns/net", container_pid(pod));
  return buf;
}

Test(jobrunner_restore, restored_pod_takes_the_connection_over)
{
  struct source s;
  start_source(&s);
  char src_net[64];
  snprintf(src_net, sizeof(src_net), "%s", req("net"));
  checkpoint(&s);

  jt_create(K, &KUBE_PODS, restored_pod(&s));
  cJSON *b = jt_wait_pod(K, NULL, "counter-b", jt_pod_running, 20000);
  cr_assert(b, "the restored Pod never ran");
  cr_expect_str_eq(json_get_str(b, "status.podIP"), s.ip, "the address did not move");
  cr_expect_str_eq(json_get_str(b, "spec.nodeName"), "node-b");
  char bnet[64], err[512] = "", mac[32], ip[32];
  netns_of(b, bnet, sizeof(bnet));
  cr_expect(na_shield_up(bnet), "the restored Pod is not shielded");
  cr_assert_eq(na_link_addr(bnet, "eth0", mac, sizeof(mac), ip, sizeof(ip), err, sizeof(err)),
               GW_OK, "%s", err);
  cr_expect_str_eq(mac, s.mac, "the MAC address did not move");

  /* the runtime's record of the restore */
  char path[400];
  snprintf(path, sizeof(path), "%s/main/" RESTORE_DONE, images);
  FILE *f = fopen(path, "r");
  cr_assert(f, "no %s", path);
  char rec[256] = "";
  cr_assert(fgets(rec, sizeof(rec), f));
  fclose(f);
  cJSON *done = cJSON_Parse(rec);
  cr_assert(done, "%s", rec);
  cr_expect_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(done, "pid")), container_pid(b));
  cr_expect_gt(cJSON_GetNumberValue(cJSON_GetObjectItem(done, "restoredAtMs")), 1.7e12);
  cJSON_Delete(done);

  /* the probe reaches it over its loopback while the shield holds everything else */
  struct na_probe pr = { .address = s.ip, .port = 7000, .timeout_ms = 2000 };
  cr_expect_eq(na_probe_run(bnet, &pr, err, sizeof(err)), GW_OK, "probe: %s", err);
  struct na_probe closed = { .address = s.ip, .port = 7001, .timeout_ms = 2000 };
  cr_expect_eq(na_probe_run(bnet, &closed, err, sizeof(err)), GW_ECONNECT);
  cr_expect(strstr(err, "Connection refused"), "%s", err);

  /* the handover: node-a's link down, node-b's shield down */
  cr_assert_eq(na_link_set(s.netns, "eth0", false, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_eq(na_shield_lower(bnet, err, sizeof(err)), GW_OK, "%s", err);
  cr_expect(!na_shield_up(bnet));
  cr_expect_str_eq(req("inc"), "3", "the counter did not go on from where it was");
  const char *net = req("net");
  cr_expect_str_neq(net, src_net, "node-a still answers");

  /* the restored container's output is its own log, not the source's */
  char *log = jt_log(K, "counter-b", 0);
  cr_expect(log != NULL);
  free(log);
  int soerr = -1;
  socklen_t l = sizeof(soerr);
  cr_expect_eq(getsockopt(client, SOL_SOCKET, SO_ERROR, &soerr, &l), 0);
  cr_expect_eq(soerr, 0, "the client saw %s", strerror(soerr));

  /* the source goes; the restored Pod keeps serving */
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, "counter", NULL, NULL, &st), GW_OK);
  kube_status_release(&st);
  cJSON *gone = NULL;
  for(int i = 0; i < 100; i++) {
    cJSON_Delete(gone);
    gone = jt_get(K, &KUBE_PODS, "counter");
    if(!gone)
      break;
    usleep(100000);
  }
  cr_expect(!gone, "the source Pod was not deleted");
  cJSON_Delete(gone);
  cr_expect_str_eq(req("inc"), "4");
  cJSON_Delete(b);
  cJSON_Delete(s.pod);
}

Test(jobrunner_restore, rollback_leaves_the_source_serving)
{
  struct source s;
  start_source(&s);
  checkpoint(&s);
  jt_create(K, &KUBE_PODS, restored_pod(&s));
  cJSON *b = jt_wait_pod(K, NULL, "counter-b", jt_pod_running, 20000);
  cr_assert(b);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, "counter-b", NULL, NULL, &st), GW_OK);
  kube_status_release(&st);
  char err[512] = "";
  cr_assert_eq(na_shield_lower(s.netns, err, sizeof(err)), GW_OK, "%s", err);
  cr_expect_str_eq(req("inc"), "3", "the source did not go on serving the same client");
  cr_expect_str_eq(req("inc"), "4");
  cJSON_Delete(b);
  cJSON_Delete(s.pod);
}

static bool start_error(const cJSON *pod)
{
  const char *r = json_get_str(jt_state(pod, "terminated"), "reason");
  return r && !strcmp(r, "StartError");
}

Test(jobrunner_restore, a_missing_checkpoint_is_a_start_error)
{
  cJSON *pod = counter_pod("nothing", "node-b");
  cJSON *ann = cJSON_CreateObject();
  cJSON_AddStringToObject(ann, RESTORE_FROM_ANNOTATION, images); /* empty */
  cr_assert_eq(json_set(pod, "metadata.annotations", ann), GW_OK);
  cr_assert_eq(json_set_str(pod, "spec.restartPolicy", "Never"), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "nothing", start_error, 20000);
  cr_assert(pod, "no StartError for a Pod with no checkpoint");
  const char *msg = json_get_str(jt_state(pod, "terminated"), "message");
  cr_expect(msg && strstr(msg, "no checkpoint in"), "%s", msg ? msg : "(none)");
  cJSON_Delete(pod);
}
