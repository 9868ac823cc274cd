/* The local cluster's worker nodes (up --worker-nodes, CL_NODES): three Nodes beside `local`,
 * each a kubelet running every Pod in a network and a pid namespace of its own with an address
 * on the cluster's pod network, reachable from this machine; the scheduler places Pods by
 * nodeName and nodeSelector across the nodes; hostNetwork Pods share the machine's network; a
 * deleted Pod's sandbox goes, and so does the pod network when the cluster stops. As root. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "test_jobrunner.h"

static struct cl C;
static struct kube_client *K;

static void start(void)
{
  jt_start(&C, CL_NODES);
  K = jt_admin(&C);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(jobrunner_nodes, .init = start, .fini = stop, .timeout = 120);

static cJSON *parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

static cJSON *counter_pod(const char *name, const char *node)
{
  return jt_counter_pod(name, node);
}

static cJSON *wait_running(const char *name)
{
  cJSON *pod = jt_wait_pod(K, NULL, name, jt_pod_running, 20000);
  cr_assert(pod, "Pod %s never ran", name);
  return pod;
}

/* One request to the counter at ip:7000 from this machine's network, on a connection of its
 * own; the answer line. */
static char *ask(const char *ip, const char *req, char *out, size_t len)
{
  int fd = jt_counter_connect(ip);
  snprintf(out, len, "%s", jt_counter_req(fd, req));
  close(fd);
  return out;
}

static char *own_netns(char *buf, size_t len)
{
  ssize_t n = readlink("/proc/self/ns/net", buf, len - 1);
  cr_assert(n > 0);
  buf[n] = 0;
  return buf;
}

Test(jobrunner_nodes, nodes_are_registered_and_ready)
{
  static const char *const names[] = { "local", "node-a", "node-b", "node-c" };
  for(size_t i = 0; i < 4; i++) {
    cJSON *n = jt_get(K, &KUBE_NODES, names[i]);
    cr_assert(n, "Node %s is not registered", names[i]);
    cr_expect(jt_condition_true(n, "Ready"), "Node %s is not Ready", names[i]);
    const cJSON *l = json_get(n, "metadata.labels");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(l, "kubernetes.io/hostname")),
                     names[i]);
    cJSON_Delete(n);
  }
}

Test(jobrunner_nodes, pod_on_a_worker_has_its_own_address_and_namespaces)
{
  jt_create(K, &KUBE_PODS, counter_pod("served", "node-b"));
  cJSON *pod = wait_running("served");
  const char *ip = json_get_str(pod, "status.podIP");
  cr_assert(ip && !strncmp(ip, "198.18.", 7), "podIP %s is not on the pod network", ip);
  cr_expect_str_eq(json_get_str(cJSON_GetArrayItem(json_get(pod, "status.podIPs"), 0), "ip"), ip);
  char a[64], b[64];
  cr_expect_str_eq(ask(ip, "inc", a, sizeof(a)), "1");
  cr_expect_str_eq(ask(ip, "inc", a, sizeof(a)), "2", "the same process answers");
  ask(ip, "net", a, sizeof(a));
  cr_expect(strncmp(a, "net:[", 5) == 0, "answer %s", a);
  cr_expect_str_neq(a, own_netns(b, sizeof(b)), "the Pod shares this machine's network");

  /* pid 1 of its own pid namespace, with eth0 and lo only, its address from the downward API */
  /* ($$$$ is $$ after Kubernetes' $(VAR) expansion; /proc/net/dev is the reader's netns) */
  cJSON *probe = jt_pod("probe", "echo \"pid=$$$$ ip=$MYIP\"; "
                                 "awk -F: 'NR>2{gsub(/ /,\"\",$1); printf \"%s \", $1}' /proc/net/dev");
  cr_assert_eq(json_set_str(probe, "spec.nodeName", "node-b"), GW_OK);
  cJSON *ctr = cJSON_GetArrayItem(json_get_mut(probe, "spec.containers"), 0);
  cJSON_AddItemToObject(ctr, "env", parse("[{\"name\":\"MYIP\",\"valueFrom\":{\"fieldRef\":"
                                          "{\"fieldPath\":\"status.podIP\"}}}]"));
  jt_create(K, &KUBE_PODS, probe);
  cJSON *done = jt_wait_pod(K, NULL, "probe", jt_pod_terminal, 20000);
  cr_assert(done);
  cr_expect_str_eq(json_get_str(done, "status.phase"), "Succeeded");
  char *log = jt_log(K, "probe", 0);
  cr_assert(log);
  char want[96];
  snprintf(want, sizeof(want), "pid=1 ip=%s\nlo eth0 ", json_get_str(done, "status.podIP"));
  cr_expect_str_eq(log, want);
  cr_expect_str_neq(json_get_str(done, "status.podIP"), ip, "two Pods, one address");
  free(log);
  cJSON_Delete(done);
  cJSON_Delete(pod);
}

Test(jobrunner_nodes, pods_on_two_nodes_reach_each_other)
{
  jt_create(K, &KUBE_PODS, counter_pod("server", "node-c"));
  cJSON *srv = wait_running("server");
  const char *ip = json_get_str(srv, "status.podIP");
  char a[64];
  ask(ip, "get", a, sizeof(a)); /* it listens */
  char script[256];
  snprintf(script, sizeof(script),
           "exec bash -c 'exec 3<>/dev/tcp/%s/7000; echo inc >&3; read -r v <&3; echo got=$v'",
           ip);
  cJSON *cli = jt_pod("client", script);
  cr_assert_eq(json_set_str(cli, "spec.nodeName", "node-a"), GW_OK);
  jt_create(K, &KUBE_PODS, cli);
  cJSON *done = jt_wait_pod(K, NULL, "client", jt_pod_terminal, 20000);
  cr_assert(done);
  char *log = jt_log(K, "client", 0);
  cr_expect_str_eq(log, "got=1\n", "a Pod on node-a could not talk to one on node-c");
  cr_expect_str_eq(json_get_str(done, "spec.nodeName"), "node-a");
  free(log);
  cJSON_Delete(done);
  cJSON_Delete(srv);
}

static bool unschedulable(const cJSON *pod)
{
  const char *r = json_get_str(jt_pod_condition(pod, "PodScheduled"), "reason");
  return r && !strcmp(r, "Unschedulable");
}

static bool bound(const cJSON *pod)
{
  const char *n = json_get_str(pod, "spec.nodeName");
  return n && *n;
}

Test(jobrunner_nodes, node_selector_places_the_pod_across_nodes)
{
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &KUBE_NODES, NULL, "node-c", KUBE_PATCH_MERGE,
                          "{\"metadata\":{\"labels\":{\"disk\":\"ssd\"}}}", NULL, NULL, &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
  cJSON *pod = jt_pod("picky", "true");
  cr_assert_eq(json_set(pod, "spec.nodeSelector", parse("{\"disk\":\"ssd\"}")), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "picky", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_expect_str_eq(json_get_str(pod, "spec.nodeName"), "node-c");
  cr_expect_str_eq(json_get_str(pod, "status.phase"), "Succeeded");
  cJSON_Delete(pod);
  cJSON *ev = jt_wait_event(K, "picky", "Scheduled", 5000);
  cr_assert(ev);
  cr_expect_str_eq(json_get_str(ev, "message"), "Successfully assigned " JT_NS "/picky to node-c");
  cJSON_Delete(ev);

  /* no pod fits: the scheduler's refusal counts every node */
  pod = jt_pod("nowhere", "true");
  cr_assert_eq(json_set(pod, "spec.nodeSelector", parse("{\"disk\":\"tape\"}")), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "nowhere", unschedulable, 20000);
  cr_assert(pod);
  cr_expect_str_eq(json_get_str(jt_pod_condition(pod, "PodScheduled"), "message"),
                   "0/4 nodes are available: 4 node(s) didn't match Pod's node "
                   "affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not "
                   "helpful for scheduling.");
  cr_expect(!bound(pod));
  cJSON_Delete(pod);

  /* a Pod without a selector stays on the primary node, where runner Pods reach loopback */
  jt_create(K, &KUBE_PODS, jt_pod("plain", "true"));
  pod = jt_wait_pod(K, NULL, "plain", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_expect_str_eq(json_get_str(pod, "spec.nodeName"), "local");
  cr_expect_str_eq(json_get_str(pod, "status.podIP"), "127.0.0.1");
  cJSON_Delete(pod);
}

Test(jobrunner_nodes, host_network_pod_shares_the_machines_network)
{
  char own[64];
  own_netns(own, sizeof(own));
  cJSON *pod = jt_pod("agent", "readlink /proc/self/ns/net; echo pid=$$");
  cr_assert_eq(json_set_str(pod, "spec.nodeName", "node-a"), GW_OK);
  cr_assert_eq(json_set(pod, "spec.hostNetwork", cJSON_CreateTrue()), GW_OK);
  cr_assert_eq(json_set(pod, "spec.hostPID", cJSON_CreateTrue()), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "agent", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_expect_str_eq(json_get_str(pod, "status.podIP"), "127.0.0.1");
  char *log = jt_log(K, "agent", 0);
  cr_assert(log);
  cr_expect(!strncmp(log, own, strlen(own)), "hostNetwork Pod in %s, this machine in %s", log,
            own);
  cr_expect(!strstr(log, "pid=1\n"), "hostPID Pod got a pid namespace: %s", log);
  free(log);
  cJSON_Delete(pod);
}

Test(jobrunner_nodes, deleting_a_pod_removes_its_sandbox)
{
  jt_create(K, &KUBE_PODS, counter_pod("brief", "node-a"));
  cJSON *pod = wait_running("brief");
  const char *ip = json_get_str(pod, "status.podIP");
  int k = -1, n = -1;
  cr_assert_eq(sscanf(ip, "198.18.%d.%d", &k, &n), 2, "podIP %s", ip);
  char ns[96], uid8[9] = "";
  const char *uid = json_get_str(pod, "metadata.uid");
  for(size_t i = 0, u = 0; uid[i] && u < 8; i++)
    if(uid[i] != '-')
      uid8[u++] = uid[i];
  snprintf(ns, sizeof(ns), "/run/netns/gw%d.node-a.%s", k, uid8);
  struct stat sb;
  cr_assert_eq(stat(ns, &sb), 0, "no network namespace %s for the Pod", ns);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, "brief", NULL, NULL, &st), GW_OK);
  kube_status_release(&st);
  bool gone = false;
  for(int i = 0; i < 100 && !gone; i++) {
    gone = stat(ns, &sb) != 0;
    if(!gone)
      usleep(100000);
  }
  cr_expect(gone, "%s outlived its Pod", ns);
  cJSON_Delete(pod);
}

/* Its own cluster: stopping it removes the bridge and the record of its network. */
Test(jobrunner_nodes, stopping_the_cluster_removes_the_pod_network)
{
  struct cl other;
  cl_start(&other, CL_JOBRUNNER | CL_NODES);
  struct kube_client *k = cl_client(&other, "admin");
  cJSON *n = NULL;
  for(int i = 0; i < 50 && !n; i++) {
    struct kube_status st;
    kube_status_init(&st);
    if(kube_get(k, &KUBE_NODES, NULL, "node-a", &n, &st))
      usleep(100000);
    kube_status_release(&st);
  }
  cr_assert(n, "node-a never registered");
  cJSON_Delete(n);
  /* the newest record in /run/godwit-podnet is this cluster's (its pid file names the runner) */
  char *log = NULL;
  {
    char path[600];
    snprintf(path, sizeof(path), "%s/jobrunner.log", other.dir);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    size_t cap = 0;
    ssize_t r;
    char *line = NULL;
    while((r = getline(&line, &cap, f)) > 0)
      if(strstr(line, "pod network created")) {
        free(log);
        log = strdup(line);
      }
    free(line);
    fclose(f);
  }
  cr_assert(log, "the job runner did not say which bridge it made");
  char *br = strstr(log, "\"bridge\":\"");
  cr_assert(br);
  br += 10;
  br[strcspn(br, "\"")] = 0;
  char path[64];
  snprintf(path, sizeof(path), "/sys/class/net/%s", br);
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0, "bridge %s missing while the cluster runs", br);
  cl_stop(&other);
  cr_expect_neq(stat(path, &sb), 0, "bridge %s outlived its cluster", br);
  char owner[64];
  snprintf(owner, sizeof(owner), "/run/godwit-podnet/%s", br + 4);
  cr_expect_neq(stat(owner, &sb), 0, "%s outlived its cluster", owner);
  free(log);
}
