/*
 * test_podmotion_validate.c: a PodMigration's Pending and Validating phases end to end on the
 * local cluster with the real webhook, the controller and kubectl: the refusals (a missing pod
 * or node, the pod's own node, no policy, a strategy or a destination the policy forbids, a
 * verification that cannot run, PreCopy without dirty-page tracking when StopAndCopy is
 * forbidden), the wait for the node agents, the fallback to StopAndCopy, the node picked by
 * nodeSelector, and a cancel. Nodes and pods are API objects here: the test writes the source
 * pod's status as node-a's kubelet would, and the node agents' capability annotations (with no
 * API endpoint, so nothing is ever frozen). The phases after Validating, with real worker nodes
 * and agents, are test_podmotion_move.c's, and so is how many run at once.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(podmotion_validate, .fini = stop, .timeout = 300);

#define AGENT_NO_DIRTY "{\"criu\":\"4.2.1\",\"features\":{\"memDirtyTrack\":false,\"lazyPages\":true,\"tcpEstablished\":true}}"
#define AGENT_DIRTY "{\"criu\":\"4.2.1\",\"features\":{\"memDirtyTrack\":true,\"lazyPages\":true,\"tcpEstablished\":true}}"

static void start(void)
{
  e2e_start(&E, &(struct e2e_opts){ .no_database = true });
  E.gvr = &KUBE_POD_MIGRATIONS;
  E.kind = "PodMigration";
}

static void node(const char *name, const char *labels, const char *agent)
{
  char ann[512] = "";
  if(agent)
    snprintf(ann, sizeof(ann), "  annotations: {migration.podmotion.io/node-agent: '%s'}\n",
             agent);
  e2e_apply(&E, "apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: {%s}\n%s", name,
            labels ? labels : "", ann);
}

/* A pod bound to node_name, Running as its kubelet would report it. */
static void pod(const char *name, const char *node_name, const char *labels, bool readiness)
{
  e2e_apply(&E, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {%s}\nspec:\n"
            "  nodeName: %s\n  containers:\n  - name: app\n    image: counter:1\n"
            "    ports: [{containerPort: 7000}]\n%s", name, labels, node_name,
            readiness ? "    readinessProbe: {tcpSocket: {port: 7000}}\n" : "");
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "patch pod %s --subresource=status --type=merge -p "
                       "'{\"status\":{\"phase\":\"Running\"}}'", name);
  cr_assert_eq(rc, 0, "status of pod %s: %s", name, out);
  free(out);
}

static void policy(const char *name, const char *spec)
{
  e2e_apply(&E, "apiVersion: migration.podmotion.io/v1beta1\nkind: MigrationPolicy\n"
            "metadata: {name: %s}\nspec:\n%s", name, spec);
}

static void pmig(const char *name, const char *pod_name, const char *dest, const char *more)
{
  e2e_apply(&E, "apiVersion: migration.podmotion.io/v1beta1\nkind: PodMigration\n"
            "metadata: {name: %s}\nspec:\n  source: {podName: %s}\n  destination: %s\n%s", name,
            pod_name, dest, more ? more : "");
}

static void want_failed(const char *name, const char *cond, const char *reason)
{
  bool ok = e2e_wait_phase(&E, name, "Failed", 60000);
  char *d = ok ? NULL : e2e_describe(&E, name);
  cr_assert(ok, "%s did not fail:\n%s", name, d ? d : "");
  cr_expect_str_eq(e2e_cond_reason(&E, name, cond), reason, "%s: %s", name,
                   e2e_cond_message(&E, name, cond));
  cr_expect_str_eq(e2e_cond_reason(&E, name, "Complete"), reason);
  cr_expect_geq(e2e_wait_event_count(&E, name, "PhaseTransition", 3, 10000), 3, "%s: Pending, Validating, "
                "Failed", name);
}

static void want_waiting(const char *name, const char *reason)
{
  bool ok = e2e_wait_cond(&E, name, "Validating", "True", reason, 60000);
  char *d = ok ? NULL : e2e_describe(&E, name);
  cr_assert(ok, "%s does not wait for %s:\n%s", name, reason, d ? d : "");
  cr_expect_str_eq(e2e_phase(&E, name), "Validating");
}

static const char *status_str(const char *name, const char *path)
{
  static __thread char buf[256];
  cJSON *o = e2e_get(&E, name);
  const char *s = json_get_str(o, path);
  snprintf(buf, sizeof(buf), "%s", s ? s : "");
  cJSON_Delete(o);
  return buf;
}

Test(podmotion_validate, what_cannot_be_moved_is_refused_before_anything_is_frozen)
{
  start();
  node("node-a", "zone: a", NULL);
  node("node-b", "zone: b", NULL);
  policy("web", "  podSelector: {matchLabels: {app: web}}\n  allowedModes: [StopAndCopy]\n"
                "  destinationNodeSelector: {zone: b}\n");
  pod("web-0", "node-a", "app: web", true);
  pod("bare", "node-a", "app: bare", false);
  pod("unguarded", "node-a", "app: web", false);
  node("node-c", "zone: c", NULL);
  pmig("no-pod", "ghost", "{nodeName: node-b}", NULL);
  pmig("no-node", "web-0", "{nodeName: node-z}", "  strategy: {type: StopAndCopy}\n");
  pmig("same-node", "web-0", "{nodeName: node-a}", "  strategy: {type: StopAndCopy}\n");
  pmig("no-policy", "bare", "{nodeName: node-b}", "  verification: {mode: None}\n");
  pmig("precopy", "web-0", "{nodeName: node-b}", NULL);
  pmig("zone-c", "web-0", "{nodeName: node-c}", "  strategy: {type: StopAndCopy}\n");
  pmig("no-probe", "unguarded", "{nodeName: node-b}", "  strategy: {type: StopAndCopy}\n");
  want_failed("no-pod", "Validating", "SourcePodNotFound");
  want_failed("no-node", "NodeSelected", "NodeNotFound");
  want_failed("same-node", "NodeSelected", "SameNode");
  want_failed("no-policy", "PolicyChecked", "NoPolicy");
  want_failed("precopy", "PolicyChecked", "StrategyNotAllowed");
  want_failed("zone-c", "PolicyChecked", "DestinationNotAllowed");
  want_failed("no-probe", "Validating", "VerificationImpossible");
  cr_expect(strstr(e2e_cond_message(&E, "no-probe", "Validating"), "readiness probe") != NULL);
  cr_expect(strstr(e2e_event_message(&E, "no-pod", "PhaseTransition"), "Validating -> Failed")
            != NULL, "%s", e2e_event_message(&E, "no-pod", "PhaseTransition"));
  cr_expect_str_eq(e2e_cond_reason(&E, "no-pod", "Scheduled"), "Accepted");
  /* the pod was never touched */
  char *out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "get pod web-0 -o jsonpath={.status.phase}"), 0);
  cr_expect_str_eq(out, "Running");
  free(out);
}

Test(podmotion_validate, a_valid_migration_waits_for_the_node_agents_and_can_be_cancelled)
{
  start();
  node("node-a", "zone: a", NULL);
  node("node-b", "zone: b, disk: ssd", NULL);
  node("node-c", "zone: c, disk: ssd", NULL);
  policy("web", "  podSelector: {matchLabels: {app: web}}\n  freezeBudget: 500ms\n");
  pod("web-0", "node-a", "app: web", true);
  pmig("move", "web-0", "{nodeSelector: {disk: ssd}}", NULL);
  want_waiting("move", "NodeAgentUnavailable");
  cr_expect_str_eq(status_str("move", "status.destinationNode"), "node-b", "the first by name");
  cr_expect_str_eq(status_str("move", "status.sourceNode"), "node-a");
  cr_expect_str_eq(status_str("move", "status.policyName"), "web");
  cr_expect_str_eq(status_str("move", "status.freezeBudget"), "500ms");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "NodeSelected"), "Selected");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "PolicyChecked"), "Allowed");
  cr_expect(strstr(e2e_cond_message(&E, "move", "Validating"), "node agent") != NULL);
  cr_expect_eq(e2e_kubectl(&E, NULL, "wait --for=condition=NodeSelected podmigration/move "
                           "--timeout=5s"), 0);
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Ready"), "Validating", "Ready follows the phase");
  /* cancel: nothing was frozen, nothing to roll back */
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch podmigration move --type=merge -p "
                           "'{\"spec\":{\"cancel\":true}}'"), 0);
  bool ok = e2e_wait_phase(&E, "move", "Cancelled", 30000);
  char *d = ok ? NULL : e2e_describe(&E, "move");
  cr_assert(ok, "not cancelled:\n%s", d ? d : "");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Complete"), "Cancelled");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Ready"), "Cancelled", "Ready=False, ended");
  cr_expect_str_eq(e2e_cond_status(&E, "move", "Ready"), "False");
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_podmigration_phase{namespace=\"default\",name="
                          "\"move\",phase=\"Cancelled\"}"), 1, "%s", metrics);
  free(metrics);
}

Test(podmotion_validate, precopy_without_dirty_tracking_falls_back_only_where_the_policy_allows)
{
  start();
  node("node-a", "zone: a", AGENT_NO_DIRTY);
  node("node-b", "zone: b", AGENT_NO_DIRTY);
  node("node-c", "zone: c", AGENT_DIRTY);
  node("node-d", "zone: d", AGENT_DIRTY);
  policy("web", "  podSelector: {matchLabels: {app: web}}\n");
  policy("db", "  podSelector: {matchLabels: {app: db}}\n  allowedModes: [PreCopy]\n");
  pod("web-0", "node-a", "app: web", true);
  pod("db-0", "node-a", "app: db", true);
  pod("db-1", "node-c", "app: db", true);
  pmig("web", "web-0", "{nodeName: node-b}", NULL);
  pmig("db", "db-0", "{nodeName: node-b}", NULL);
  pmig("db-tracked", "db-1", "{nodeName: node-d}", NULL);
  /* (these agents are annotations written by the test: they serve no API, so a valid
   * migration waits once its strategy is decided) */
  want_waiting("web", "NodeAgentUnavailable");
  cr_expect(strstr(e2e_cond_message(&E, "web", "Validating"), "serves no API") != NULL, "%s",
            e2e_cond_message(&E, "web", "Validating"));
  cr_expect_str_eq(status_str("web", "status.strategy"), "StopAndCopy");
  cr_expect_str_eq(e2e_cond_reason(&E, "web", "PreCopyStarted"), "DirtyTrackingUnavailable");
  want_failed("db", "PreCopyStarted", "DirtyTrackingUnavailable");
  /* dirty tracking there, but this release's agents take no pre-copy rounds, and the policy
   * forbids StopAndCopy: refused, never pretended */
  want_failed("db-tracked", "PreCopyStarted", "PreCopyNotSupported");
}

/* ---- the real node agents ---- */

static pid_t agents[2];

static void stop_agents(void)
{
  for(size_t i = 0; i < 2; i++)
    if(agents[i] > 0) {
      kill(agents[i], SIGKILL);
      waitpid(agents[i], NULL, 0);
      agents[i] = 0;
    }
  e2e_stop(&E);
}

static pid_t start_agent(const char *node_name)
{
  const char *build = getenv("GODWIT_BUILD");
  char bin[512], log[600];
  snprintf(bin, sizeof(bin), "%s/godwit-nodeagent", build && *build ? build : "build");
  snprintf(log, sizeof(log), "%s/nodeagent-%s.log", E.c.dir, node_name);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if(pid == 0) {
    FILE *out = freopen(log, "w", stderr);
    (void)out;
    execl(bin, bin, "--kubeconfig", E.c.kubeconfig, "--context", "admin", "--node", node_name,
          "--publish-interval-s", "1", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static const char *agent_facts(const char *node_name)
{
  static __thread char buf[1024];
  char *out = NULL;
  e2e_kubectl(&E, &out, "get node %s -o jsonpath='{.metadata.annotations.migration\\.podmotion"
              "\\.io/node-agent}'", node_name);
  snprintf(buf, sizeof(buf), "%s", out ? out : "");
  free(out);
  return buf;
}

Test(podmotion_validate, real_node_agents_publish_their_criu_and_the_migration_uses_the_facts,
     .fini = stop_agents)
{
  start();
  node("node-a", "zone: a", NULL);
  node("node-b", "zone: b", NULL);
  policy("web", "  podSelector: {matchLabels: {app: web}}\n");
  pod("web-0", "node-a", "app: web", true);
  pmig("move", "web-0", "{nodeName: node-b}", NULL);
  want_waiting("move", "NodeAgentUnavailable");
  agents[0] = start_agent("node-a");
  agents[1] = start_agent("node-b");
  /* started without --tls-cert: their facts count (the strategy is decided), their API is not
   * there, which the migration now says it waits for */
  bool no_api = false;
  for(int i = 0; i < 200 && !no_api; i++) {
    no_api = strstr(e2e_cond_message(&E, "move", "Validating"), "serves no API") != NULL;
    if(!no_api)
      e2e_sleep_ms(100);
  }
  cr_assert(no_api, "%s", e2e_cond_message(&E, "move", "Validating"));
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Validating"), "NodeAgentUnavailable");
  /* the facts are this node's own CRIU's (tests/criu/install.sh) */
  cJSON *facts = cJSON_Parse(agent_facts("node-a"));
  cr_assert(cJSON_IsObject(facts), "node-a: %s", agent_facts("node-a"));
  cr_expect(!strncmp(json_get_str(facts, "criu") ? json_get_str(facts, "criu") : "", "4.", 2),
            "%s", agent_facts("node-a"));
  bool dirty = json_get_bool(facts, "features.memDirtyTrack", false);
  cJSON_Delete(facts);
  cr_expect_str_eq(status_str("move", "status.strategy"), dirty ? "PreCopy" : "StopAndCopy",
                   "the strategy does not follow node-a's dirty-page tracking");
  /* an agent that stops takes its facts with it: the migration waits again */
  cr_assert_eq(kill(agents[1], SIGTERM), 0);
  int st = 0;
  cr_assert_eq(waitpid(agents[1], &st, 0), agents[1]);
  agents[1] = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent did not stop cleanly");
  cr_expect_str_eq(agent_facts("node-b"), "", "the stopped agent's facts remain");
  want_waiting("move", "NodeAgentUnavailable");
  cr_expect(strstr(e2e_cond_message(&E, "move", "Validating"), "node-b") != NULL, "%s",
            e2e_cond_message(&E, "move", "Validating"));
}
