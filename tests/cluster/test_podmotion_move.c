/*
 * test_podmotion_move.c: PodMigrations end to end on the local cluster's worker nodes, with the
 * real controller, the real node agents (started by up, one per worker node), real CRIU and
 * real kubectl. The pod is the CRIU counter (tests/criu/counter.c) on node-a; this test process
 * is its client, connected from the machine for the whole migration.
 *
 *  - a migration to node-b completes: the counter goes on from where it was on the same
 *    connection, which never saw a reset; the source pod's deletion comes after
 *    TrafficVerified=True (both watched: the API server's single resourceVersion orders them);
 *    13 of the 14 condition types are set on this path, CheckpointWritten is an Event,
 *    freezeDuration is measured, the checkpoint is removed from both nodes (retention Delete);
 *  - a restored copy that never passes its probe rolls back (VerificationTimeout): RollingBack,
 *    Failed, the restored copy deleted, the source serving the same client, the checkpoint kept
 *    (RetainOnFailure) until the PodMigration is deleted;
 *  - spec.cancel while the copy is being verified rolls back to Cancelled.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "json.h"
#include "kube/kube.h"
#include "counter.h"
#include "pmig_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(podmotion_move, .fini = stop, .timeout = 240);

static void start(void)
{
  pm_start(&E);
}

static int counter_named(const char *name, const char *probe_port)
{
  return pm_counter(&E, name, probe_port);
}

static void policy(const char *extra)
{
  pm_policy(&E, extra);
}

static int counter(const char *probe_port)
{
  policy(NULL);
  return counter_named("counter", probe_port);
}

static long counter_value(int fd, const char *req)
{
  return pm_value(fd, req);
}

static void move_pod(const char *name, const char *pod, const char *extra)
{
  pm_move(&E, name, pod, extra);
}

static void move(const char *name, const char *extra)
{
  move_pod(name, "counter", extra);
}

/* ---- ordering: the resourceVersions of TrafficVerified=True and of the source's deletion ---- */
struct order {
  struct kube_client *k;
  volatile int stop;
  pthread_t pods, migs;
  pthread_mutex_t mu;
  long long tv_rv, del_rv;
};
static struct order O;

static long long rv_of(const cJSON *obj)
{
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  return rv ? atoll(rv) : 0;
}

static void on_pod(void *ctx, const char *type, const cJSON *obj)
{
  struct order *o = ctx;
  const char *name = json_get_str(obj, "metadata.name");
  if(!name || strcmp(name, "counter"))
    return;
  if(!strcmp(type, "DELETED") || json_get(obj, "metadata.deletionTimestamp")) {
    pthread_mutex_lock(&o->mu);
    if(!o->del_rv)
      o->del_rv = rv_of(obj);
    pthread_mutex_unlock(&o->mu);
  }
}

static void on_mig(void *ctx, const char *type, const cJSON *obj)
{
  (void)type;
  struct order *o = ctx;
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(obj, "status.conditions"))
  {
    const char *t = json_get_str(c, "type"), *s = json_get_str(c, "status");
    if(t && s && !strcmp(t, "TrafficVerified") && !strcmp(s, "True")) {
      pthread_mutex_lock(&o->mu);
      if(!o->tv_rv)
        o->tv_rv = rv_of(obj);
      pthread_mutex_unlock(&o->mu);
    }
  }
}

static void on_replace(void *ctx, const cJSON *items, const char *rv)
{
  (void)ctx;
  (void)items;
  (void)rv;
}

static void *watch_pods(void *arg)
{
  struct order *o = arg;
  struct kube_reflector_ops ops = { .replace = on_replace, .event = on_pod };
  struct kube_reflector_opts ro = { .backoff_min_ms = 50, .backoff_max_ms = 500 };
  gw_rc rc = kube_reflector_run(o->k, &KUBE_PODS, "default", &ro, &ops, o, &o->stop);
  (void)rc;
  return NULL;
}

static void *watch_migs(void *arg)
{
  struct order *o = arg;
  struct kube_reflector_ops ops = { .replace = on_replace, .event = on_mig };
  struct kube_reflector_opts ro = { .backoff_min_ms = 50, .backoff_max_ms = 500 };
  gw_rc rc = kube_reflector_run(o->k, &KUBE_POD_MIGRATIONS, "default", &ro, &ops, o, &o->stop);
  (void)rc;
  return NULL;
}

static void order_start(void)
{
  memset(&O, 0, sizeof(O));
  O.k = E.k;
  pthread_mutex_init(&O.mu, NULL);
  pthread_create(&O.pods, NULL, watch_pods, &O);
  pthread_create(&O.migs, NULL, watch_migs, &O);
  e2e_sleep_ms(300); /* both watches established */
}

static void order_stop(void)
{
  O.stop = 1;
  pthread_join(O.pods, NULL);
  pthread_join(O.migs, NULL);
}

/* The actions of the audit log, in order, "action:result" joined by spaces (malloc'd). */
static char *audit_actions(void)
{
  FILE *f = fopen(cl_path(&E.c, "podmotion-audit.log"), "r");
  cr_assert(f, "no audit log");
  char *out = calloc(1, 8192), line[4096];
  while(fgets(line, sizeof(line), f)) {
    cJSON *o = cJSON_Parse(line);
    cr_assert(o, "an audit line is not JSON: %s", line);
    cr_expect_str_eq(json_get_str(o, "migration"), "move");
    size_t n = strlen(out);
    snprintf(out + n, 8192 - n, "%s%s:%s", n ? " " : "", json_get_str(o, "action"),
             json_get_str(o, "result"));
    cJSON_Delete(o);
  }
  fclose(f);
  return out;
}

static bool dir_empty(const char *path)
{
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' 2>/dev/null)\"", path);
  return system(cmd) == 0;
}

Test(podmotion_move, a_live_counter_moves_and_keeps_its_connection)
{
  start();
  int fd = counter("\"counter\"");
  cr_assert_eq(counter_value(fd, "inc"), 1);
  cr_assert_eq(counter_value(fd, "inc"), 2);
  char before[64];
  snprintf(before, sizeof(before), "%s", jt_counter_req(fd, "net"));
  order_start();
  move("move", NULL);
  bool done = e2e_wait_cond(&E, "move", "Complete", "True", NULL, 60000);
  order_stop();
  cr_assert(done, "the migration did not complete: %s (%s)", e2e_phase(&E, "move"),
            e2e_describe(&E, "move"));
  /* the same connection: the next number, from another network namespace, no reset */
  cr_expect_eq(counter_value(fd, "inc"), 3, "the counter did not go on from where it was");
  cr_expect_str_neq(jt_counter_req(fd, "net"), before, "node-a still answers");
  int soerr = -1;
  socklen_t l = sizeof(soerr);
  cr_expect_eq(getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l), 0);
  cr_expect_eq(soerr, 0, "the client's connection saw %s", strerror(soerr));
  close(fd);
  /* TrafficVerified=True was written before the source pod's deletion began */
  cr_expect_gt(O.tv_rv, 0, "TrafficVerified=True never seen");
  cr_expect_gt(O.del_rv, 0, "the source pod's deletion never seen");
  cr_expect_lt(O.tv_rv, O.del_rv, "the source pod was deleted (rv %lld) before "
               "TrafficVerified=True (rv %lld)", O.del_rv, O.tv_rv);
  /* the conditions of this path, the Events, the status */
  static const char *const set[] = { "Scheduled", "NodeSelected", "PolicyChecked", "Validating",
                                     "PreCopyStarted", "Checkpointing", "CheckpointComplete",
                                     "Transferring", "TransferComplete", "Restoring",
                                     "RestoreComplete", "TrafficVerified", "Complete" };
  for(size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
    cr_expect(e2e_cond_reason(&E, "move", set[i])[0], "condition %s was never set", set[i]);
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "TrafficVerified"), "FlowsTransferred");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "CheckpointComplete"), "CheckpointWritten");
  cr_expect_str_eq(e2e_phase(&E, "move"), "Completed");
  /* Ready for readers that know no PodMigration (kstatus, Flux, Argo CD, kubectl wait) */
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Ready"), "Completed");
  cr_expect_eq(e2e_kubectl(&E, NULL, "wait --for=condition=Ready podmigration/move "
                           "--timeout=5s"), 0);
  cr_expect_geq(e2e_event_count(&E, "move", "CheckpointWritten"), 1);
  cr_expect_geq(e2e_wait_event_count(&E, "move", "PhaseTransition", 7, 10000), 7);
  cJSON *m = e2e_get(&E, "move");
  const char *freeze = json_get_str(m, "status.freezeDuration");
  cr_expect(freeze && strstr(freeze, "ms"), "freezeDuration %s", freeze ? freeze : "(none)");
  cr_expect(json_get_bool(m, "status.checkpoint.removed", false), "the checkpoint was kept");
  const char *dest = json_get_str(m, "status.destinationPodName");
  cr_assert(dest);
  char *out = NULL;
  e2e_kubectl(&E, &out, "get pod %s -o jsonpath='{.spec.nodeName} {.status.phase}'", dest);
  cr_expect_str_eq(out, "node-b Running");
  free(out);
  out = NULL;
  cr_expect_neq(e2e_kubectl(&E, &out, "get pod counter"), 0, "the source pod still exists");
  free(out);
  cJSON_Delete(m);
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-a/checkpoints")), "node-a kept a checkpoint");
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-b/checkpoints")), "node-b kept a checkpoint");
  /* the audit log: every action on a pod or a node, in order */
  char *audit = audit_actions();
  cr_expect_str_eq(audit, "create-restored-pod:success checkpoint:success transfer:success "
                          "restore:success probe:success detach:success attach:success "
                          "delete-source-pod:success remove-checkpoint:success "
                          "remove-checkpoint:success");
  free(audit);
  /* the controller's metrics */
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_podmigration_completed_total"), 1, "%s", metrics);
  cr_expect_eq(e2e_metric(metrics, "godwit_podmigration_freeze_seconds_count"), 1);
  cr_expect_gt(e2e_metric(metrics, "godwit_podmigration_transfer_bytes_total"), 10000);
  free(metrics);
  /* kubectl shows it */
  out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "get pmig move --no-headers"), 0);
  cr_expect(out && strstr(out, "Completed") && strstr(out, "node-b"), "%s", out ? out : "");
  free(out);
}

Test(podmotion_move, a_copy_that_never_passes_its_probe_rolls_back)
{
  start();
  int fd = counter("7001"); /* nothing listens there: the restored copy never passes */
  cr_assert_eq(counter_value(fd, "inc"), 1);
  move("move", "  verification: {timeoutSeconds: 5}\n  checkpoint: {retention: RetainOnFailure}\n");
  cr_assert(e2e_wait_phase(&E, "move", "Failed", 60000), "did not fail: %s (%s)",
            e2e_phase(&E, "move"), e2e_describe(&E, "move"));
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "TrafficVerified"), "VerificationTimeout");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "RollingBack"), "RolledBack");
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Complete"), "VerificationTimeout");
  /* the source serves the same client again; the restored copy is gone */
  cr_expect_eq(counter_value(fd, "inc"), 2, "the source did not go on serving");
  close(fd);
  cJSON *m = e2e_get(&E, "move");
  const char *dest = json_get_str(m, "status.destinationPodName");
  cr_assert(dest, "no restored pod was made");
  char *out = NULL;
  bool gone = false;
  for(int i = 0; i < 50 && !gone; i++) {
    free(out);
    out = NULL;
    gone = e2e_kubectl(&E, &out, "get pod %s", dest) != 0;
    if(!gone)
      e2e_sleep_ms(100);
  }
  free(out);
  cr_expect(gone, "the restored copy %s was not deleted", dest);
  cr_expect(!json_get_bool(m, "status.checkpoint.removed", false));
  cr_expect(!dir_empty(cl_path(&E.c, "nodes/node-a/checkpoints")), "RetainOnFailure lost it");
  char *audit = audit_actions();
  cr_expect_str_eq(audit, "create-restored-pod:success checkpoint:success transfer:success "
                          "restore:success probe:failure delete-restored-pod:success "
                          "release:success");
  free(audit);
  char *metrics = e2e_controller_metrics(&E);
  cr_expect_eq(e2e_metric(metrics, "godwit_podmigration_rollbacks_total{reason="
                                   "\"VerificationTimeout\"}"), 1, "%s", metrics);
  free(metrics);
  cJSON_Delete(m);
  /* the PodMigration deleted: its checkpoints go with it */
  out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "delete pmig move --wait=true --timeout=30s"), 0, "%s",
               out ? out : "");
  free(out);
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-a/checkpoints")), "node-a kept a checkpoint");
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-b/checkpoints")), "node-b kept a checkpoint");
}

Test(podmotion_move, cancel_while_verifying_rolls_back)
{
  start();
  int fd = counter("7001");
  cr_assert_eq(counter_value(fd, "inc"), 1);
  move("move", "  verification: {timeoutSeconds: 120}\n");
  cr_assert(e2e_wait_phase(&E, "move", "Verifying", 60000), "never verifying: %s",
            e2e_phase(&E, "move"));
  char *out = NULL;
  cr_assert_eq(e2e_kubectl(&E, &out, "patch pmig move --type merge -p "
                                     "'{\"spec\":{\"cancel\":true}}'"), 0, "%s", out ? out : "");
  free(out);
  cr_assert(e2e_wait_phase(&E, "move", "Cancelled", 30000), "not cancelled: %s",
            e2e_phase(&E, "move"));
  cr_expect_str_eq(e2e_cond_reason(&E, "move", "Complete"), "Cancelled");
  cr_expect_eq(counter_value(fd, "inc"), 2, "the source did not go on serving");
  close(fd);
}

/* maxConcurrent 1: a second migration waits (ConcurrencyLimit) while the first is verifying,
 * and goes on once the first ended. */
Test(podmotion_move, a_policys_max_concurrent_holds_a_migration_until_one_ends)
{
  start();
  policy("  maxConcurrent: 1\n");
  int first = counter_named("counter", "7001"); /* its copy never passes: it stays verifying */
  int second = counter_named("other", "\"counter\"");
  move_pod("first", "counter", "  verification: {timeoutSeconds: 120}\n");
  cr_assert(e2e_wait_phase(&E, "first", "Verifying", 60000), "first never verifying: %s",
            e2e_phase(&E, "first"));
  move_pod("second", "other", NULL);
  cr_assert(e2e_wait_cond(&E, "second", "PolicyChecked", "False", "ConcurrencyLimit", 30000),
            "second did not wait: %s", e2e_describe(&E, "second"));
  cr_expect_str_eq(e2e_phase(&E, "second"), "Validating");
  cr_assert_eq(e2e_kubectl(&E, NULL, "patch pmig first --type merge -p "
                                     "'{\"spec\":{\"cancel\":true}}'"), 0);
  cr_assert(e2e_wait_phase(&E, "first", "Cancelled", 30000));
  cr_assert(e2e_wait_cond(&E, "second", "Complete", "True", NULL, 60000),
            "second did not complete once first ended: %s", e2e_describe(&E, "second"));
  cr_expect_eq(counter_value(first, "inc"), 1, "the first counter does not serve");
  cr_expect_eq(counter_value(second, "inc"), 1, "the second counter does not serve");
  close(first);
  close(second);
}

/* A restored pod moves again (its annotations replaced, its working directory still there, a
 * probe's connection left in its accept queue), and a restored copy that cold-started instead
 * would never pass for one: the client counts on through both moves. */
Test(podmotion_move, a_restored_pod_moves_again)
{
  start();
  int fd = counter("\"counter\"");
  cr_assert_eq(counter_value(fd, "inc"), 1);
  move("to-b", NULL);
  cr_assert(e2e_wait_cond(&E, "to-b", "Complete", "True", NULL, 60000), "%s",
            e2e_describe(&E, "to-b"));
  cr_assert_eq(counter_value(fd, "inc"), 2);
  cJSON *m = e2e_get(&E, "to-b");
  char b[254];
  snprintf(b, sizeof(b), "%s", json_get_str(m, "status.destinationPodName"));
  cJSON_Delete(m);
  e2e_apply(&E, "apiVersion: migration.podmotion.io/v1beta1\nkind: PodMigration\n"
                "metadata: {name: to-c}\nspec:\n  source: {podName: %s}\n"
                "  destination: {nodeName: node-c}\n", b);
  cr_assert(e2e_wait_cond(&E, "to-c", "Complete", "True", NULL, 60000), "%s",
            e2e_describe(&E, "to-c"));
  cr_expect_eq(counter_value(fd, "inc"), 3, "the twice-moved counter lost its count");
  m = e2e_get(&E, "to-c");
  const char *c = json_get_str(m, "status.destinationPodName");
  char *out = NULL;
  e2e_kubectl(&E, &out, "get pod %s -o jsonpath='{.spec.nodeName} {.status.containerStatuses[0]"
                        ".restartCount}'", c ? c : "");
  cr_expect_str_eq(out, "node-c 0", "the copy on node-c was not the restored process");
  free(out);
  cJSON_Delete(m);
  close(fd);
}

/* Retain keeps both nodes' copies after a success, and the janitor leaves them (their
 * PodMigration exists) while it removes a directory nobody owns; deleting the PodMigration
 * removes its own. */
Test(podmotion_move, retain_keeps_the_checkpoint_and_the_janitor_takes_orphans)
{
  start();
  int fd = counter("\"counter\"");
  cr_assert_eq(counter_value(fd, "inc"), 1);
  char orphan[600];
  snprintf(orphan, sizeof(orphan), "%s", cl_path(&E.c, "nodes/node-c/checkpoints"));
  strncat(orphan, "/default_ghost_deadbeef", sizeof(orphan) - strlen(orphan) - 1);
  char cmd[1400];
  snprintf(cmd, sizeof(cmd), "mkdir -p -m 0700 '%s/main' && echo x > '%s/main/pages-1.img'",
           orphan, orphan);
  cr_assert_eq(system(cmd), 0);
  move("move", "  checkpoint: {retention: Retain}\n");
  cr_assert(e2e_wait_cond(&E, "move", "Complete", "True", NULL, 60000), "%s",
            e2e_describe(&E, "move"));
  cr_expect_eq(counter_value(fd, "inc"), 2);
  close(fd);
  /* the orphan goes (within a few janitor passes), the retained checkpoint stays */
  bool gone = false;
  for(int i = 0; i < 100 && !gone; i++) {
    gone = access(orphan, F_OK) != 0;
    if(!gone)
      e2e_sleep_ms(100);
  }
  cr_expect(gone, "the janitor left %s", orphan);
  e2e_sleep_ms(3000); /* older than the orphan age now, and still kept */
  cr_expect(!dir_empty(cl_path(&E.c, "nodes/node-a/checkpoints")), "Retain lost node-a's copy");
  cr_expect(!dir_empty(cl_path(&E.c, "nodes/node-b/checkpoints")), "Retain lost node-b's copy");
  cJSON *m = e2e_get(&E, "move");
  cr_expect(!json_get_bool(m, "status.checkpoint.removed", false));
  cJSON_Delete(m);
  char *out = NULL;
  cr_expect_eq(e2e_kubectl(&E, &out, "delete pmig move --wait=true --timeout=30s"), 0, "%s",
               out ? out : "");
  free(out);
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-a/checkpoints")), "node-a kept a checkpoint");
  cr_expect(dir_empty(cl_path(&E.c, "nodes/node-b/checkpoints")), "node-b kept a checkpoint");
}
