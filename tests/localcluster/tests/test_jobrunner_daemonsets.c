/* The job runner's DaemonSet controller (tests/localcluster/jobrunner/daemonsets.c) and the API
 * server's apps/v1 DaemonSets, on a cluster with worker nodes (CL_NODES: node-a, node-b, node-c
 * beside `local`; as root): one Running Pod per Node, bound there and owned by the DaemonSet;
 * nodeSelector and node affinity, followed as Node labels change; a deleted or failed Pod
 * replaced; the status counts; a rolling update that never has more than one Node without an
 * available Pod; Pods leaving a Node that goes and coming to a new one; the Pods going with the
 * DaemonSet (garbage collection); kubectl apply, get, rollout and delete; the node agent's
 * manifest; the API's defaults, validation and generations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "test_jobrunner.h"

static struct cl C;
static struct kube_client *K;

static const struct kube_gvr DS = { "apps", "v1", "daemonsets", true };
static const char *const ALL_NODES[] = { "local", "node-a", "node-b", "node-c", NULL };

static void start(void)
{
  jt_start(&C, CL_NODES);
  K = jt_admin(&C);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(jobrunner_daemonsets, .init = start, .fini = stop, .timeout = 120);

static cJSON *parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

/* A DaemonSet in JT_NS selecting app=name, whose Pods wait until SIGTERM. */
static cJSON *daemonset(const char *name)
{
  cJSON *ds = parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":"
                    "{\"namespace\":\"" JT_NS "\"},\"spec\":{\"selector\":{\"matchLabels\":{}},"
                    "\"template\":{\"metadata\":{\"labels\":{}},\"spec\":"
                    "{\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"main\","
                    "\"image\":\"debian:12\",\"command\":[\"sh\",\"-c\","
                    "\"trap 'exit 0' TERM; sleep 3600 & wait\"]}]}}}}");
  cr_assert_eq(json_set_str(ds, "metadata.name", name), GW_OK);
  cJSON_AddStringToObject(json_get_mut(ds, "spec.selector.matchLabels"), "app", name);
  cJSON_AddStringToObject(json_get_mut(ds, "spec.template.metadata.labels"), "app", name);
  return ds;
}

static void patch(const struct kube_gvr *r, const char *ns, const char *name, const char *body)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_patch(K, r, ns, name, KUBE_PATCH_MERGE, body, NULL, NULL, &st);
  cr_assert_eq(rc, GW_OK, "patch %s/%s: %s %s", r->resource, name, gw_strerror(rc), st.message);
  kube_status_release(&st);
}

static void label_node(const char *node, const char *labels_json)
{
  char body[256];
  snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":%s}}", labels_json);
  patch(&KUBE_NODES, NULL, node, body);
}

/* The Pods of namespace ns matching the label selector (a new array). */
static cJSON *pods_of(const char *ns, const char *selector)
{
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  struct kube_list_opts o = { .label_selector = selector };
  gw_rc rc = kube_list(K, &KUBE_PODS, ns, &o, &out, &st);
  cr_assert_eq(rc, GW_OK, "list pods: %s %s", gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON *items = cJSON_DetachItemFromObject(out, "items");
  cJSON_Delete(out);
  return items ? items : cJSON_CreateArray();
}

static const cJSON *pod_on(const cJSON *pods, const char *node)
{
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    const char *n = json_get_str(p, "spec.nodeName");
    if(n && !strcmp(n, node))
      return p;
  }
  return NULL;
}

static const char *label(const cJSON *obj, const char *key)
{
  return cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(json_get(obj, "metadata.labels"), key));
}

/* ---- waits ---- */

/* Exactly one Pod per Node of nodes (NULL-terminated), each Running (and, with gen, of that
 * pod-template-generation), and no other Pod, not even one being deleted. */
struct placement {
  const char *ns, *selector;
  const char *const *nodes;
  const char *gen;
};

static int placed(void *arg)
{
  const struct placement *w = arg;
  cJSON *pods = pods_of(w->ns, w->selector);
  size_t n = 0;
  bool ok = true;
  for(; w->nodes[n]; n++) {
    const cJSON *p = pod_on(pods, w->nodes[n]);
    ok = ok && p && jt_pod_running(p) && !json_get(p, "metadata.deletionTimestamp") &&
         (!w->gen || (label(p, "pod-template-generation") &&
                      !strcmp(label(p, "pod-template-generation"), w->gen)));
  }
  ok = ok && (size_t)cJSON_GetArraySize(pods) == n;
  cJSON_Delete(pods);
  return ok;
}

static cJSON *wait_placed(const char *ns, const char *selector, const char *const *nodes)
{
  struct placement w = { ns, selector, nodes, NULL };
  int ok = cl_eventually(30000, placed, &w);
  cJSON *pods = pods_of(ns, selector);
  char *s = cJSON_Print(pods);
  cr_assert(ok, "the Pods of %s are not one Running per expected Node:\n%s", selector, s);
  cJSON_free(s);
  return pods;
}

/* The DaemonSet's status: desired, current, ready, available, up-to-date, misscheduled (kube
 * leaves zero counts of the omitempty fields out), observed at its generation. */
struct counts {
  const char *ns, *name;
  long desired, current, ready, available, updated, misscheduled;
};

static long count(const cJSON *ds, const char *field)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(ds, "status"), field);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

static cJSON *get_ds(const char *ns, const char *name)
{
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(K, &DS, ns, name, &out, &st);
  cr_assert(rc == GW_OK || rc == GW_ENOTFOUND, "get daemonset %s: %s %s", name, gw_strerror(rc),
            st.message);
  kube_status_release(&st);
  return out;
}

static int counted(void *arg)
{
  const struct counts *w = arg;
  cJSON *ds = get_ds(w->ns, w->name);
  bool ok = ds && count(ds, "desiredNumberScheduled") == w->desired &&
            count(ds, "currentNumberScheduled") == w->current &&
            count(ds, "numberReady") == w->ready && count(ds, "numberAvailable") == w->available &&
            count(ds, "updatedNumberScheduled") == w->updated &&
            count(ds, "numberMisscheduled") == w->misscheduled &&
            count(ds, "numberUnavailable") == w->desired - w->available &&
            jt_num(ds, "status.observedGeneration") == jt_num(ds, "metadata.generation");
  cJSON_Delete(ds);
  return ok;
}

static void wait_counts(struct counts w)
{
  int ok = cl_eventually(30000, counted, &w);
  cJSON *ds = get_ds(w.ns, w.name);
  char *s = cJSON_Print(json_get(ds, "status"));
  cr_assert(ok, "daemonset %s: want desired %ld current %ld ready %ld available %ld updated %ld "
                "misscheduled %ld, status:\n%s", w.name, w.desired, w.current, w.ready,
            w.available, w.updated, w.misscheduled, s);
  cJSON_free(s);
  cJSON_Delete(ds);
}

struct gone {
  const char *ns, *selector;
};

static int none_left(void *arg)
{
  const struct gone *w = arg;
  cJSON *pods = pods_of(w->ns, w->selector);
  int n = cJSON_GetArraySize(pods);
  cJSON_Delete(pods);
  return n == 0;
}

/* ---- kubectl ---- */

static char *kubectl_ok(const char *args)
{
  char *out = NULL;
  int rc = cl_kubectl(&C, "admin", &out, "%s", args);
  cr_assert_eq(rc, 0, "kubectl %s: exit %d:\n%s", args, rc, out);
  return out;
}

/* Runs of blanks squeezed to one space, so columns compare whatever their widths. */
static char *squeeze(char *s)
{
  char *w = s;
  for(char *r = s; *r; r++)
    if(*r != ' ' || (w > s && w[-1] != ' '))
      *w++ = *r;
  *w = '\0';
  return s;
}

static const char *write_file(const char *name, const char *content)
{
  const char *p = cl_path(&C, name);
  FILE *f = fopen(p, "w");
  cr_assert(f, "cannot write %s", p);
  fputs(content, f);
  fclose(f);
  return p;
}

/* ---- tests ---- */

Test(jobrunner_daemonsets, one_running_pod_per_node_owned_and_counted)
{
  jt_create(K, &DS, daemonset("agent"));
  cJSON *ds = get_ds(JT_NS, "agent");
  cr_assert(ds);
  const char *uid = json_get_str(ds, "metadata.uid");
  cJSON *pods = wait_placed(JT_NS, "app=agent", ALL_NODES);
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    const char *name = json_get_str(p, "metadata.name");
    cr_expect(strlen(name) == 11 && !strncmp(name, "agent-", 6) &&
                strspn(name + 6, "abcdefghijklmnopqrstuvwxyz0123456789") == 5,
              "Pod name %s is not agent-<5 random>", name);
    const cJSON *ref = cJSON_GetArrayItem(json_get(p, "metadata.ownerReferences"), 0);
    cr_expect_str_eq(json_get_str(ref, "apiVersion"), "apps/v1");
    cr_expect_str_eq(json_get_str(ref, "kind"), "DaemonSet");
    cr_expect_str_eq(json_get_str(ref, "name"), "agent");
    cr_expect_str_eq(json_get_str(ref, "uid"), uid);
    cr_expect(json_get_bool(ref, "controller", false) &&
              json_get_bool(ref, "blockOwnerDeletion", false));
    cr_expect_str_eq(label(p, "app"), "agent");
    cr_expect_str_eq(label(p, "pod-template-generation"), "1");
    cr_expect(label(p, "controller-revision-hash") && *label(p, "controller-revision-hash"));
    cr_expect_str_eq(label(p, "controller-revision-hash"),
                     label(cJSON_GetArrayItem(pods, 0), "controller-revision-hash"),
                     "one template, one hash");
    /* the tolerations of every daemon Pod; network-unavailable only with hostNetwork */
    static const char *const tols[] = { "not-ready:NoExecute", "unreachable:NoExecute",
                                        "disk-pressure:NoSchedule", "memory-pressure:NoSchedule",
                                        "pid-pressure:NoSchedule", "unschedulable:NoSchedule" };
    char have[1024] = "";
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(p, "spec.tolerations"))
    {
      const char *key = json_get_str(t, "key"), *e = json_get_str(t, "effect");
      size_t l = strlen(have);
      snprintf(have + l, sizeof(have) - l, "%s:%s/%s,",
               key && !strncmp(key, "node.kubernetes.io/", 19) ? key + 19 : key ? key : "",
               e ? e : "", json_get_str(t, "operator"));
      cr_expect(!json_get(t, "tolerationSeconds"), "daemon Pods tolerate for ever: %s", key);
    }
    for(size_t i = 0; i < sizeof(tols) / sizeof(tols[0]); i++) {
      char want[64];
      snprintf(want, sizeof(want), "%s/Exists,", tols[i]);
      cr_expect(strstr(have, want), "toleration %s missing from %s", tols[i], have);
    }
    cr_expect(!strstr(have, "network-unavailable"), "not a hostNetwork Pod: %s", have);
  }
  cJSON_Delete(pods);
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 4, 4, 4, 0 });

  /* kube-apiserver's defaults and the template generation */
  cr_expect_str_eq(json_get_str(ds, "spec.updateStrategy.type"), "RollingUpdate");
  cr_expect_eq(jt_num(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable"), 1);
  cr_expect_eq(jt_num(ds, "spec.revisionHistoryLimit"), 10);
  cr_expect_str_eq(json_get_str(ds, "spec.template.spec.restartPolicy"), "Always");
  cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     json_get(ds, "metadata.annotations"),
                     "deprecated.daemonset.template.generation")),
                   "1");
  cJSON *ev = jt_wait_event(K, "agent", "SuccessfulCreate", 5000);
  cr_assert(ev, "no SuccessfulCreate Event on the DaemonSet");
  cr_expect(!strncmp(json_get_str(ev, "message"), "Created pod: agent-", 19), "%s",
            json_get_str(ev, "message"));
  cr_expect_str_eq(json_get_str(ev, "involvedObject.kind"), "DaemonSet");
  cr_expect_str_eq(json_get_str(ev, "source.component"), "daemonset-controller");
  cJSON_Delete(ev);
  cJSON_Delete(ds);
}

Test(jobrunner_daemonsets, node_selector_and_affinity_follow_the_node_labels)
{
  label_node("node-b", "{\"role\":\"agent\"}");
  label_node("node-c", "{\"role\":\"agent\"}");
  cJSON *ds = daemonset("picky");
  cr_assert_eq(json_set(ds, "spec.template.spec.nodeSelector", parse("{\"role\":\"agent\"}")),
               GW_OK);
  cr_assert_eq(json_set(ds, "spec.template.spec.hostNetwork", cJSON_CreateTrue()), GW_OK);
  jt_create(K, &DS, ds);
  static const char *const bc[] = { "node-b", "node-c", NULL };
  cJSON *pods = wait_placed(JT_NS, "app=picky", bc);
  const cJSON *t;
  bool netun = false;
  cJSON_ArrayForEach(t, json_get(cJSON_GetArrayItem(pods, 0), "spec.tolerations"))
  {
    const char *key = json_get_str(t, "key");
    netun = netun || (key && !strcmp(key, "node.kubernetes.io/network-unavailable"));
  }
  cr_expect(netun, "a hostNetwork daemon Pod tolerates node.kubernetes.io/network-unavailable");
  cJSON_Delete(pods);
  wait_counts((struct counts){ JT_NS, "picky", 2, 2, 2, 2, 2, 0 });

  /* node-c no longer fits: its Pod goes; node-a comes to fit: it gets one */
  label_node("node-c", "{\"role\":null}");
  static const char *const b[] = { "node-b", NULL };
  cJSON_Delete(wait_placed(JT_NS, "app=picky", b));
  wait_counts((struct counts){ JT_NS, "picky", 1, 1, 1, 1, 1, 0 });
  label_node("node-a", "{\"role\":\"agent\"}");
  static const char *const ab[] = { "node-a", "node-b", NULL };
  cJSON_Delete(wait_placed(JT_NS, "app=picky", ab));
  wait_counts((struct counts){ JT_NS, "picky", 2, 2, 2, 2, 2, 0 });

  /* required node affinity, by label and by field (metadata.name) */
  ds = daemonset("workers");
  cr_assert_eq(json_set(ds, "spec.template.spec.affinity",
                        parse("{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
                              "Execution\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
                              "\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"local\"]}],"
                              "\"matchExpressions\":[{\"key\":\"kubernetes.io/os\",\"operator\":"
                              "\"In\",\"values\":[\"linux\"]}]}]}}}")),
               GW_OK);
  jt_create(K, &DS, ds);
  static const char *const abc[] = { "node-a", "node-b", "node-c", NULL };
  cJSON_Delete(wait_placed(JT_NS, "app=workers", abc));
  wait_counts((struct counts){ JT_NS, "workers", 3, 3, 3, 3, 3, 0 });
}

Test(jobrunner_daemonsets, a_deleted_or_failed_pod_is_replaced)
{
  jt_create(K, &DS, daemonset("agent"));
  cJSON *pods = wait_placed(JT_NS, "app=agent", ALL_NODES);
  char gone_a[64], gone_b[64];
  snprintf(gone_a, sizeof(gone_a), "%s", json_get_str(pod_on(pods, "node-a"), "metadata.uid"));
  snprintf(gone_b, sizeof(gone_b), "%s", json_get_str(pod_on(pods, "node-b"), "metadata.uid"));
  const char *failed = json_get_str(pod_on(pods, "node-b"), "metadata.name");

  /* deleted by someone: a new Pod on that node once the old one is gone */
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, json_get_str(pod_on(pods, "node-a"),
                                                                "metadata.name"),
                           NULL, NULL, &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
  cJSON *now = wait_placed(JT_NS, "app=agent", ALL_NODES);
  cr_expect_str_neq(json_get_str(pod_on(now, "node-a"), "metadata.uid"), gone_a,
                    "the deleted Pod was not replaced");
  cJSON_Delete(now);

  /* Failed (as a kubelet reports a Pod it rejected or evicted): deleted, with an Event, and
   * replaced */
  char body[128];
  snprintf(body, sizeof(body), "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"}}");
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &KUBE_PODS, JT_NS, failed, KUBE_PATCH_MERGE, body, "status", NULL,
                          &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
  cJSON *ev = jt_wait_event(K, "agent", "FailedDaemonPod", 20000);
  cr_assert(ev, "no FailedDaemonPod Event");
  char want[256];
  snprintf(want, sizeof(want),
           "Found failed daemon pod " JT_NS "/%s on node node-b, will try to kill it", failed);
  cr_expect_str_eq(json_get_str(ev, "message"), want);
  cr_expect_str_eq(json_get_str(ev, "type"), "Warning");
  cJSON_Delete(ev);
  now = wait_placed(JT_NS, "app=agent", ALL_NODES);
  cr_expect_str_neq(json_get_str(pod_on(now, "node-b"), "metadata.uid"), gone_b,
                    "the failed Pod was not replaced");
  cJSON_Delete(now);
  cJSON_Delete(pods);
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 4, 4, 4, 0 });
}

static int pending_on_node_d(void *arg)
{
  (void)arg;
  cJSON *pods = pods_of(JT_NS, "app=agent");
  const cJSON *p = pod_on(pods, "node-d");
  const char *phase = json_get_str(p, "status.phase");
  int ok = p && phase && !strcmp(phase, "Pending") && cJSON_GetArraySize(pods) == 4;
  cJSON_Delete(pods);
  return ok;
}

Test(jobrunner_daemonsets, pods_follow_nodes_that_go_and_come)
{
  jt_create(K, &DS, daemonset("agent"));
  cJSON_Delete(wait_placed(JT_NS, "app=agent", ALL_NODES));
  /* node-c's Node object goes (its kubelet stays): so does its Pod */
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_NODES, NULL, "node-c", NULL, NULL, &st), GW_OK, "%s",
               st.message);
  kube_status_release(&st);
  static const char *const three[] = { "local", "node-a", "node-b", NULL };
  cJSON_Delete(wait_placed(JT_NS, "app=agent", three));
  wait_counts((struct counts){ JT_NS, "agent", 3, 3, 3, 3, 3, 0 });
  /* a new Node gets its Pod at once, bound there; no kubelet runs it: scheduled, not ready */
  jt_create(K, &KUBE_NODES, parse("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":"
                                   "{\"name\":\"node-d\",\"labels\":{\"kubernetes.io/hostname\":"
                                   "\"node-d\"}}}"));
  cr_assert(cl_eventually(30000, pending_on_node_d, NULL), "no Pod bound to the new Node");
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 3, 3, 4, 0 });
}

/* Nodes without a Ready Pod that is not being deleted, in one consistent list. */
static int unavailable_nodes(const char *selector)
{
  cJSON *pods = pods_of(JT_NS, selector);
  int n = 0;
  for(size_t i = 0; ALL_NODES[i]; i++) {
    bool ok = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, pods)
    {
      const char *node = json_get_str(p, "spec.nodeName");
      const char *ready = json_get_str(jt_pod_condition(p, "Ready"), "status");
      ok = ok || (node && !strcmp(node, ALL_NODES[i]) && ready && !strcmp(ready, "True") &&
                  !json_get(p, "metadata.deletionTimestamp"));
    }
    n += !ok;
  }
  cJSON_Delete(pods);
  return n;
}

Test(jobrunner_daemonsets, rolling_update_replaces_one_pod_at_a_time)
{
  jt_create(K, &DS, daemonset("agent"));
  cJSON *before = wait_placed(JT_NS, "app=agent", ALL_NODES);
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 4, 4, 4, 0 });
  patch(&DS, JT_NS, "agent", "{\"spec\":{\"template\":{\"metadata\":{\"labels\":"
                             "{\"version\":\"2\"}}}}}");
  cJSON *ds = get_ds(JT_NS, "agent");
  cr_expect_eq(jt_num(ds, "metadata.generation"), 2);
  cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     json_get(ds, "metadata.annotations"),
                     "deprecated.daemonset.template.generation")),
                   "2");
  cJSON_Delete(ds);
  /* maxUnavailable 1: at no moment do two Nodes lack an available Pod */
  struct placement w = { JT_NS, "app=agent", ALL_NODES, "2" };
  int worst = 0, done = 0;
  for(int i = 0; i < 600 && !done; i++) {
    int u = unavailable_nodes("app=agent");
    worst = u > worst ? u : worst;
    done = placed(&w);
    if(!done)
      usleep(50000);
  }
  cr_assert(done, "the rolling update did not finish");
  cr_expect_leq(worst, 1, "%d Nodes were without an available Pod at once", worst);
  cJSON *after = pods_of(JT_NS, "app=agent");
  const char *h1 = label(cJSON_GetArrayItem(before, 0), "controller-revision-hash");
  const cJSON *p;
  cJSON_ArrayForEach(p, after)
  {
    cr_expect_str_eq(label(p, "version"), "2");
    cr_expect_str_neq(label(p, "controller-revision-hash"), h1, "the hash did not change");
  }
  cJSON_Delete(after);
  cJSON_Delete(before);
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 4, 4, 4, 0 });
}

static const char *AGENT_YAML =
  "apiVersion: apps/v1\n"
  "kind: DaemonSet\n"
  "metadata:\n"
  "  name: agent\n"
  "  namespace: " JT_NS "\n"
  "spec:\n"
  "  selector:\n"
  "    matchLabels: {app: agent}\n"
  "  template:\n"
  "    metadata:\n"
  "      labels: {app: agent}\n"
  "    spec:\n"
  "      terminationGracePeriodSeconds: 1\n"
  "      containers:\n"
  "        - name: main\n"
  "          image: debian:12\n"
  "          command: [sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]\n";

Test(jobrunner_daemonsets, kubectl_applies_gets_and_deletes_a_daemonset)
{
  char args[1024];
  snprintf(args, sizeof(args), "apply -f %s", write_file("agent.yaml", AGENT_YAML));
  char *out = kubectl_ok(args);
  cr_expect(strstr(out, "daemonset.apps/agent created"), "%s", out);
  free(out);
  cJSON_Delete(wait_placed(JT_NS, "app=agent", ALL_NODES));
  wait_counts((struct counts){ JT_NS, "agent", 4, 4, 4, 4, 4, 0 });
  out = squeeze(kubectl_ok("get ds -n " JT_NS));
  cr_expect(strstr(out, "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE\n"),
            "%s", out);
  cr_expect(strstr(out, "\nagent 4 4 4 4 4 <none> "), "%s", out);
  free(out);
  out = squeeze(kubectl_ok("get daemonset agent -n " JT_NS " -o wide"));
  cr_expect(strstr(out, " CONTAINERS IMAGES SELECTOR\n"), "%s", out);
  cr_expect(strstr(out, " main debian:12 app=agent\n"), "%s", out);
  free(out);
  out = kubectl_ok(args);
  cr_expect(strstr(out, "daemonset.apps/agent unchanged"), "%s", out);
  free(out);
  /* kubectl's rollout reads the status the controller writes */
  out = kubectl_ok("rollout restart daemonset/agent -n " JT_NS);
  cr_expect(strstr(out, "daemonset.apps/agent restarted"), "%s", out);
  free(out);
  out = kubectl_ok("rollout status daemonset/agent -n " JT_NS " --timeout=60s");
  cr_expect(strstr(out, "daemon set \"agent\" successfully rolled out"), "%s", out);
  free(out);
  cJSON *pods = pods_of(JT_NS, "app=agent");
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    if(!json_get(p, "metadata.deletionTimestamp")) /* a replaced Pod may linger, terminated */
      cr_expect_str_eq(label(p, "pod-template-generation"), "2", "a Pod the restart left");
  }
  cJSON_Delete(pods);

  out = kubectl_ok("delete daemonset agent -n " JT_NS);
  cr_expect(strstr(out, "daemonset.apps \"agent\" deleted"), "%s", out);
  free(out);
  struct gone g = { JT_NS, "app=agent" };
  cr_expect(cl_eventually(30000, none_left, &g), "the DaemonSet's Pods outlived it");
  cJSON *ds = get_ds(JT_NS, "agent");
  cr_expect_null(ds);
  cJSON_Delete(ds);
}

Test(jobrunner_daemonsets, the_node_agent_manifest_runs_on_every_node)
{
  /* its checkpoint directory (hostPath and mount) moved into the cluster's directory */
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "sed 's#/run/podmotion/checkpoints#%s#' manifests/nodeagent.yaml "
                             "> '%s'",
           cl_path(&C, "checkpoints"), cl_path(&C, "nodeagent.yaml"));
  cr_assert_eq(system(cmd), 0);
  char args[1024];
  snprintf(args, sizeof(args), "apply -f %s", cl_path(&C, "nodeagent.yaml"));
  char *out = kubectl_ok(args);
  cr_expect(strstr(out, "daemonset.apps/godwit-nodeagent created"), "%s", out);
  free(out);
  /* one Pod per Node (its program is not installed here: the containers crash, as they may) */
  const char *sel = "app.kubernetes.io/name=godwit-nodeagent";
  struct counts w = { "godwit-system", "godwit-nodeagent", 4, 4, 0, 0, 4, 0 };
  wait_counts(w);
  cJSON *pods = pods_of("godwit-system", sel);
  cr_expect_eq(cJSON_GetArraySize(pods), 4);
  for(size_t i = 0; ALL_NODES[i]; i++) {
    const cJSON *p = pod_on(pods, ALL_NODES[i]);
    cr_expect(p, "no node agent Pod on %s", ALL_NODES[i]);
    cr_expect(json_get_bool(p, "spec.hostPID", false));
    cr_expect_str_eq(json_get_str(p, "spec.serviceAccountName"), "godwit-nodeagent");
  }
  cJSON_Delete(pods);
  snprintf(args, sizeof(args), "delete -f %s", cl_path(&C, "nodeagent.yaml"));
  free(kubectl_ok(args));
  struct gone g = { "godwit-system", sel };
  cr_expect(cl_eventually(30000, none_left, &g), "the node agent's Pods outlived it");
}

/* What the API server answers for a write: the rc, and the Status message into msg. */
static gw_rc try_write(bool create, cJSON *obj, char *msg, size_t len)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = create ? kube_create(K, &DS, JT_NS, obj, false, NULL, &st)
                    : kube_update(K, &DS, JT_NS, obj, NULL, NULL, &st);
  snprintf(msg, len, "%s", st.message);
  kube_status_release(&st);
  cJSON_Delete(obj);
  return rc;
}

Test(jobrunner_daemonsets, the_api_validates_and_counts_generations)
{
  char msg[1024];
  cJSON *bad = daemonset("bad");
  cr_assert_eq(json_set_str(bad, "spec.template.spec.restartPolicy", "Never"), GW_OK);
  cr_assert_eq(json_set(bad, "spec.selector", parse("{\"matchLabels\":{\"app\":\"other\"}}")),
               GW_OK);
  cr_expect_eq(try_write(true, bad, msg, sizeof(msg)), GW_ESTATUS);
  cr_expect(strstr(msg, "spec.template.spec.restartPolicy: Unsupported value: \"Never\": "
                        "supported values: \"Always\""), "%s", msg);
  cr_expect(strstr(msg, "spec.template.metadata.labels: Invalid value: "
                        "map[string]string{\"app\":\"bad\"}: `selector` does not match "
                        "template `labels`"), "%s", msg);

  jt_create(K, &DS, daemonset("gens"));
  cJSON *ds = get_ds(JT_NS, "gens");
  cr_assert(ds);
  /* metadata: no new generation; spec: a new one; the template: a new template generation */
  patch(&DS, JT_NS, "gens", "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}");
  patch(&DS, JT_NS, "gens", "{\"spec\":{\"minReadySeconds\":1}}");
  cJSON_Delete(ds);
  ds = get_ds(JT_NS, "gens");
  const char *ann = "deprecated.daemonset.template.generation";
  cr_expect_eq(jt_num(ds, "metadata.generation"), 2);
  cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     json_get(ds, "metadata.annotations"), ann)), "1");
  patch(&DS, JT_NS, "gens", "{\"spec\":{\"template\":{\"spec\":"
                            "{\"terminationGracePeriodSeconds\":2}}}}");
  cJSON_Delete(ds);
  ds = get_ds(JT_NS, "gens");
  cr_expect_eq(jt_num(ds, "metadata.generation"), 3);
  cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     json_get(ds, "metadata.annotations"), ann)), "2");
  /* the selector is immutable */
  cr_assert_eq(json_set(ds, "spec.selector", parse("{\"matchLabels\":{\"app\":\"gens\","
                                                   "\"tier\":\"x\"}}")),
               GW_OK);
  cr_assert_eq(json_set(ds, "spec.template.metadata.labels",
                        parse("{\"app\":\"gens\",\"tier\":\"x\"}")),
               GW_OK);
  cr_expect_eq(try_write(false, ds, msg, sizeof(msg)), GW_ESTATUS);
  cr_expect(strstr(msg, "spec.selector: Invalid value: ") && strstr(msg, "field is immutable"),
            "%s", msg);
}
