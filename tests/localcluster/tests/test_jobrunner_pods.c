/* The job runner as the kubelet and the scheduler: environment from Secrets and ConfigMaps,
 * CreateContainerConfigError, volumes (a claim's directory outliving its Pods, Secret volumes),
 * Unschedulable Pods, the service-account token and the in-cluster variables, termination
 * messages, init containers, deleting a Pod. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "test_jobrunner.h"

/* Where Pods mount their volumes: mount points missing on the host are created there. */
#define MNT "/tmp/godwit-jr"

static struct cl C;
static struct kube_client *K;

static void start(void)
{
  jt_start(&C, 0);
  K = jt_admin(&C);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(jobrunner_pods, .init = start, .fini = stop, .timeout = 120);

static cJSON *parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

static void add_to(cJSON *obj, const char *key, const char *json)
{
  cJSON *arr = cJSON_GetObjectItem(obj, key);
  if(!arr)
    arr = cJSON_AddArrayToObject(obj, key);
  cJSON_AddItemToArray(arr, parse(json));
}

static cJSON *pod_spec(cJSON *job)
{
  cJSON *s = json_get_mut(job, "spec.template.spec");
  return s ? s : json_get_mut(job, "spec");
}

static bool config_error(const cJSON *pod)
{
  const cJSON *w = jt_state(pod, "waiting");
  const char *r = json_get_str(w, "reason");
  return r && !strcmp(r, "CreateContainerConfigError");
}

static bool unschedulable(const cJSON *pod)
{
  const char *r = json_get_str(jt_pod_condition(pod, "PodScheduled"), "reason");
  return r && !strcmp(r, "Unschedulable");
}

Test(jobrunner_pods, env_from_secret_and_configmap_keys)
{
  jt_secret(K, "db", "password", "s3cret");
  jt_configmap(K, "settings", "mode", "fast");
  jt_configmap(K, "bulk", "LEVEL", "3");
  cJSON *job = jt_job("env", "echo \"$PASSWORD $MODE $X_LEVEL $POD $GREETING\"");
  cJSON *c = jt_container(job);
  add_to(c, "env", "{\"name\":\"PASSWORD\",\"valueFrom\":{\"secretKeyRef\":"
                   "{\"name\":\"db\",\"key\":\"password\"}}}");
  add_to(c, "env", "{\"name\":\"MODE\",\"valueFrom\":{\"configMapKeyRef\":"
                   "{\"name\":\"settings\",\"key\":\"mode\"}}}");
  add_to(c, "env", "{\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":"
                   "{\"fieldPath\":\"metadata.namespace\"}}}");
  add_to(c, "env", "{\"name\":\"GREETING\",\"value\":\"hi-$(MODE)\"}");
  add_to(c, "envFrom", "{\"prefix\":\"X_\",\"configMapRef\":{\"name\":\"bulk\"}}");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *done = jt_wait_job_condition(K, "env", "Complete", 30000);
  cr_assert(done, "the Job never completed");
  cJSON_Delete(done);
  cJSON *pods = jt_job_pods(K, "env");
  char *log = jt_log(K, json_get_str(cJSON_GetArrayItem(pods, 0), "metadata.name"), 0);
  cr_assert_str_eq(log, "s3cret fast 3 " JT_NS " hi-fast\n");
  free(log);
  cJSON_Delete(pods);
}

Test(jobrunner_pods, missing_secret_is_create_container_config_error)
{
  cJSON *job = jt_job("nosecret", "echo \"$TOKEN\"");
  add_to(jt_container(job), "env", "{\"name\":\"TOKEN\",\"valueFrom\":{\"secretKeyRef\":"
                                   "{\"name\":\"later\",\"key\":\"token\"}}}");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *pod = jt_wait_pod(K, "nosecret", NULL, config_error, 20000);
  cr_assert(pod, "no CreateContainerConfigError");
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Pending");
  cr_assert_str_eq(json_get_str(jt_state(pod, "waiting"), "message"), "secret \"later\" not found");
  cJSON *ev = jt_wait_event(K, json_get_str(pod, "metadata.name"), "Failed", 5000);
  cr_assert(ev);
  cr_assert_str_eq(json_get_str(ev, "message"), "Error: secret \"later\" not found");
  cJSON_Delete(ev);
  cJSON_Delete(pod);
  /* The kubelet retries: once the Secret exists, the Pod runs. */
  jt_secret(K, "later", "token", "t0k");
  cJSON *done = jt_wait_job_condition(K, "nosecret", "Complete", 30000);
  cr_assert(done, "the Pod never ran after the Secret appeared");
  cJSON_Delete(done);
}

Test(jobrunner_pods, missing_key_names_the_secret)
{
  jt_secret(K, "partial", "user", "u");
  cJSON *job = jt_job("nokey", "true");
  add_to(jt_container(job), "env", "{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":"
                                   "{\"name\":\"partial\",\"key\":\"password\"}}}");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *pod = jt_wait_pod(K, "nokey", NULL, config_error, 20000);
  cr_assert(pod);
  cr_assert_str_eq(json_get_str(jt_state(pod, "waiting"), "message"),
                   "couldn't find key password in Secret " JT_NS "/partial");
  cJSON_Delete(pod);
}

/* The directory of claim name's volume: DIR/volumes/pvc-UID. */
static void claim_dir(const char *name, char *buf, size_t len)
{
  cJSON *pvc = jt_get(K, &KUBE_PVCS, name);
  cr_assert(pvc, "no claim %s", name);
  snprintf(buf, len, "%s/volumes/pvc-%s", C.dir, json_get_str(pvc, "metadata.uid"));
  cJSON_Delete(pvc);
}

Test(jobrunner_pods, claim_directory_outlives_a_pod)
{
  jt_pvc(K, "work");
  /* The first attempt leaves a file and fails; the retry finds it and succeeds. */
  cJSON *job = jt_job("resume", "if [ -f " MNT "/work/marker ]; then echo resumed; exit 0; fi; "
                                "echo first > " MNT "/work/marker; exit 1");
  cr_assert_eq(json_set(job, "spec.backoffLimit", cJSON_CreateNumber(1)), GW_OK);
  add_to(pod_spec(job), "volumes", "{\"name\":\"w\",\"persistentVolumeClaim\":{\"claimName\":"
                                   "\"work\"}}");
  add_to(jt_container(job), "volumeMounts", "{\"name\":\"w\",\"mountPath\":\"" MNT "/work\"}");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *done = jt_wait_job_condition(K, "resume", "Complete", 30000);
  cr_assert(done, "the retry did not see the first attempt's file");
  cr_assert_eq(jt_num(done, "status.failed"), 1);
  cr_assert_eq(jt_num(done, "status.succeeded"), 1);
  cJSON_Delete(done);
  char path[600];
  claim_dir("work", path, sizeof(path));
  strncat(path, "/marker", sizeof(path) - strlen(path) - 1);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "the claim's directory is not %s", path);
}

/* The claim's data belongs to the claim: deleted with it (reclaim policy Delete), and a new claim
 * of the same name starts empty (issue 17: a re-created Migration got an earlier run's work
 * directory). */
Test(jobrunner_pods, a_deleted_claim_takes_its_data_and_a_new_one_starts_empty)
{
  jt_pvc(K, "again");
  cJSON *job = jt_job("first", "echo old > " MNT "/work/left");
  add_to(pod_spec(job), "volumes", "{\"name\":\"w\",\"persistentVolumeClaim\":{\"claimName\":"
                                   "\"again\"}}");
  add_to(jt_container(job), "volumeMounts", "{\"name\":\"w\",\"mountPath\":\"" MNT "/work\"}");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *done = jt_wait_job_condition(K, "first", "Complete", 30000);
  cr_assert(done, "the first Job did not complete");
  cJSON_Delete(done);
  char old_dir[600], path[700];
  claim_dir("again", old_dir, sizeof(old_dir));
  snprintf(path, sizeof(path), "%s/left", old_dir);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s", path);
  /* the claim goes: its directory goes within the reclaim period */
  struct kube_status ks;
  kube_status_init(&ks);
  cr_assert_eq(kube_delete(K, &KUBE_PVCS, JT_NS, "again", NULL, NULL, &ks), GW_OK);
  kube_status_release(&ks);
  bool gone = false;
  for(int i = 0; i < 100 && !gone; i++) {
    gone = stat(old_dir, &st) != 0;
    if(!gone)
      usleep(100000);
  }
  cr_assert(gone, "%s outlived its claim", old_dir);
  /* a new claim of the same name: another volume, empty */
  jt_pvc(K, "again");
  job = jt_job("second", "if [ -e " MNT "/work/left ]; then exit 1; fi; exit 0");
  add_to(pod_spec(job), "volumes", "{\"name\":\"w\",\"persistentVolumeClaim\":{\"claimName\":"
                                   "\"again\"}}");
  add_to(jt_container(job), "volumeMounts", "{\"name\":\"w\",\"mountPath\":\"" MNT "/work\"}");
  cr_assert_eq(json_set(job, "spec.backoffLimit", cJSON_CreateNumber(0)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  done = jt_wait_job_condition(K, "second", "Complete", 30000);
  cr_assert(done, "the new claim saw the old claim's file");
  cJSON_Delete(done);
  char new_dir[600];
  claim_dir("again", new_dir, sizeof(new_dir));
  cr_assert_str_neq(new_dir, old_dir);
}

Test(jobrunner_pods, missing_claim_is_unschedulable)
{
  cJSON *pod = jt_pod("orphan", "true");
  add_to(json_get_mut(pod, "spec"), "volumes", "{\"name\":\"w\",\"persistentVolumeClaim\":"
                                               "{\"claimName\":\"ghost\"}}");
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "orphan", unschedulable, 20000);
  cr_assert(pod, "the Pod was not refused by the scheduler");
  const cJSON *c = jt_pod_condition(pod, "PodScheduled");
  cr_assert_str_eq(json_get_str(c, "status"), "False");
  cr_assert(strstr(json_get_str(c, "message"), "persistentvolumeclaim \"ghost\" not found"),
            "%s", json_get_str(c, "message"));
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Pending");
  cJSON_Delete(pod);
  cJSON *ev = jt_wait_event(K, "orphan", "FailedScheduling", 5000);
  cr_assert(ev);
  cJSON_Delete(ev);
  /* The claim appears: the Pod is scheduled and runs. */
  jt_pvc(K, "ghost");
  pod = jt_wait_pod(K, NULL, "orphan", jt_pod_terminal, 20000);
  cr_assert(pod, "the Pod never ran once its claim existed");
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Succeeded");
  cJSON_Delete(pod);
}

Test(jobrunner_pods, unmatched_node_selector_is_unschedulable)
{
  cJSON *pod = jt_pod("picky", "true");
  cr_assert_eq(json_set(pod, "spec.nodeSelector", parse("{\"disk\":\"ssd\"}")), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "picky", unschedulable, 20000);
  cr_assert(pod);
  cr_assert(strstr(json_get_str(jt_pod_condition(pod, "PodScheduled"), "message"),
                   "didn't match Pod's node affinity/selector"));
  cJSON_Delete(pod);
}

Test(jobrunner_pods, token_authenticates_as_the_pod)
{
  /* The Pod asks the API server who it is, with its own token, CA and service variables. */
  cJSON *job = jt_job(
    "whoami",
    "test -n \"$KUBERNETES_SERVICE_HOST\" && test -n \"$KUBERNETES_SERVICE_PORT\" || exit 2; "
    "test \"$(cat $GODWIT_SA_DIR/namespace)\" = " JT_NS " || exit 3; "
    "cmp -s $GODWIT_SA_DIR/ca.crt /var/run/secrets/kubernetes.io/serviceaccount/ca.crt || exit 4; "
    "curl -sS --fail-with-body --cacert $GODWIT_SA_DIR/ca.crt "
    "-H \"Authorization: Bearer $(cat $GODWIT_SA_DIR/token)\" "
    "-H 'Content-Type: application/json' -X POST "
    "-d '{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}' "
    "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
    "/apis/authentication.k8s.io/v1/selfsubjectreviews");
  jt_create(K, &KUBE_JOBS, job);
  cJSON *done = jt_wait_job_condition(K, "whoami", "Complete", 30000);
  cJSON *pods = jt_job_pods(K, "whoami");
  const cJSON *pod = cJSON_GetArrayItem(pods, 0);
  const char *name = json_get_str(pod, "metadata.name");
  char *log = jt_log(K, name, 0);
  cr_assert(done, "the Pod's request failed: %s", log);
  cJSON *review = cJSON_Parse(log);
  cr_assert(review, "not JSON: %s", log);
  cr_assert_str_eq(json_get_str(review, "status.userInfo.username"),
                   "system:serviceaccount:" JT_NS ":default");
  const cJSON *extra = json_get(review, "status.userInfo.extra");
  const cJSON *pn = cJSON_GetObjectItem(extra, "authentication.kubernetes.io/pod-name");
  const cJSON *pu = cJSON_GetObjectItem(extra, "authentication.kubernetes.io/pod-uid");
  cr_assert_str_eq(cJSON_GetArrayItem(pn, 0)->valuestring, name);
  cr_assert_str_eq(cJSON_GetArrayItem(pu, 0)->valuestring, json_get_str(pod, "metadata.uid"));
  cJSON_Delete(review);
  free(log);
  cJSON_Delete(pods);
  cJSON_Delete(done);
}

Test(jobrunner_pods, termination_message_and_fallback_to_logs)
{
  cJSON *pod = jt_pod("says-bye", "echo noise; printf bye > /dev/termination-log; exit 7");
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "says-bye", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Failed");
  const cJSON *t = jt_state(pod, "terminated");
  cr_assert_eq(jt_num(t, "exitCode"), 7);
  cr_assert_str_eq(json_get_str(t, "reason"), "Error");
  cr_assert_str_eq(json_get_str(t, "message"), "bye");
  cJSON_Delete(pod);

  pod = jt_pod("from-logs", "echo one; echo last words; exit 1");
  cr_assert_eq(json_set_str(jt_container(pod), "terminationMessagePolicy",
                            "FallbackToLogsOnError"), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "from-logs", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_assert_str_eq(json_get_str(jt_state(pod, "terminated"), "message"), "one\nlast words\n");
  cJSON_Delete(pod);
}

Test(jobrunner_pods, init_container_runs_first)
{
  cJSON *pod = jt_pod("ordered", "cat " MNT "/shared/greeting");
  cJSON *spec = json_get_mut(pod, "spec");
  add_to(spec, "volumes", "{\"name\":\"s\",\"emptyDir\":{}}");
  add_to(jt_container(pod), "volumeMounts", "{\"name\":\"s\",\"mountPath\":\"" MNT "/shared\"}");
  add_to(spec, "initContainers", "{\"name\":\"prep\",\"image\":\"debian:12\",\"command\":"
                                 "[\"sh\",\"-c\",\"echo from-init > " MNT "/shared/greeting\"],"
                                 "\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":"
                                 "\"" MNT "/shared\"}]}");
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "ordered", jt_pod_terminal, 20000);
  cr_assert(pod);
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Succeeded");
  const cJSON *ics = cJSON_GetArrayItem(json_get(pod, "status.initContainerStatuses"), 0);
  cr_assert_eq(jt_num(ics, "state.terminated.exitCode"), 0);
  cJSON_Delete(pod);
  char *log = jt_log(K, "ordered", 0);
  cr_assert_str_eq(log, "from-init\n");
  free(log);
}

Test(jobrunner_pods, secret_volume_files)
{
  jt_secret(K, "files", "conf", "a=1");
  cJSON *pod = jt_pod("reads", "cat " MNT "/app/conf; test ! -w " MNT "/app/conf || echo writable");
  add_to(json_get_mut(pod, "spec"), "volumes", "{\"name\":\"f\",\"secret\":{\"secretName\":"
                                               "\"files\"}}");
  add_to(jt_container(pod), "volumeMounts", "{\"name\":\"f\",\"mountPath\":\"" MNT "/app\"}");
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "reads", jt_pod_terminal, 20000);
  cr_assert(pod);
  cJSON_Delete(pod);
  char *log = jt_log(K, "reads", 0);
  cr_assert_str_eq(log, "a=1");
  free(log);
}

Test(jobrunner_pods, deleting_a_pod_stops_it)
{
  char pidfile[512], script[700];
  snprintf(pidfile, sizeof(pidfile), "%s", cl_path(&C, "pod.pid"));
  snprintf(script, sizeof(script), "echo $$$$ > %s; trap 'echo term; exit 0' TERM; "
           "while :; do sleep 0.1; done", pidfile);
  jt_create(K, &KUBE_PODS, jt_pod("victim", script));
  long pid = jt_wait_pidfile(pidfile, 20000);
  cr_assert(pid > 0);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, "victim", NULL, NULL, &st), GW_OK, "%s",
               st.message);
  kube_status_release(&st);
  cr_assert(jt_wait_gone(pid, 15000), "process %ld survived its Pod", pid);
  for(int i = 0; i < 100; i++) {
    cJSON *p = jt_get(K, &KUBE_PODS, "victim");
    cJSON_Delete(p);
    if(!p)
      return;
    usleep(100000);
  }
  cr_assert_fail("the Pod was never removed");
}

Test(jobrunner_pods, start_error_for_a_missing_program)
{
  cJSON *pod = jt_pod("nothere", "true");
  cJSON *c = jt_container(pod);
  cJSON_DeleteItemFromObject(c, "args");
  cr_assert_eq(json_set(c, "command", parse("[\"no-such-program-godwit\"]")), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "nothere", jt_pod_terminal, 20000);
  cr_assert(pod);
  const cJSON *t = jt_state(pod, "terminated");
  cr_assert_str_eq(json_get_str(t, "reason"), "StartError");
  cr_assert_eq(jt_num(t, "exitCode"), 128);
  cr_assert(strstr(json_get_str(t, "message"), "executable file not found in $PATH"));
  cJSON_Delete(pod);
}

Test(jobrunner_pods, missing_secret_volume_is_failed_mount)
{
  cJSON *pod = jt_pod("nomount", "true");
  add_to(json_get_mut(pod, "spec"), "volumes", "{\"name\":\"f\",\"secret\":{\"secretName\":"
                                               "\"absent\"}}");
  add_to(jt_container(pod), "volumeMounts", "{\"name\":\"f\",\"mountPath\":\"" MNT "/absent\"}");
  jt_create(K, &KUBE_PODS, pod);
  cJSON *ev = jt_wait_event(K, "nomount", "FailedMount", 20000);
  cr_assert(ev, "no FailedMount Event");
  cr_assert_str_eq(json_get_str(ev, "message"),
                   "MountVolume.SetUp failed for volume \"f\" : secret \"absent\" not found");
  cJSON_Delete(ev);
  pod = jt_get(K, &KUBE_PODS, "nomount");
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Pending");
  cr_assert_str_eq(json_get_str(jt_state(pod, "waiting"), "reason"), "ContainerCreating");
  cJSON_Delete(pod);
}

static bool deadline_exceeded(const cJSON *pod)
{
  const char *r = json_get_str(pod, "status.reason");
  return jt_pod_terminal(pod) && r && !strcmp(r, "DeadlineExceeded");
}

Test(jobrunner_pods, pod_active_deadline)
{
  cJSON *pod = jt_pod("hurry", "exec sleep 1000");
  cr_assert_eq(json_set(json_get_mut(pod, "spec"), "activeDeadlineSeconds",
                        cJSON_CreateNumber(1)), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "hurry", deadline_exceeded, 20000);
  cr_assert(pod, "the Pod outlived its activeDeadlineSeconds");
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Failed");
  cr_assert_str_eq(json_get_str(pod, "status.message"),
                   "Pod was active on the node longer than the specified deadline");
  cr_assert_eq(jt_num(jt_state(pod, "terminated"), "exitCode"), 143, "killed by SIGTERM");
  cJSON_Delete(pod);
}

static bool restarted_twice(const cJSON *pod)
{
  const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
  return jt_num(cs, "restartCount") >= 2;
}

Test(jobrunner_pods, on_failure_restarts_with_crash_loop_backoff)
{
  cJSON *pod = jt_pod("crashes", "echo attempt; exit 2");
  cr_assert_eq(json_set_str(json_get_mut(pod, "spec"), "restartPolicy", "OnFailure"), GW_OK);
  jt_create(K, &KUBE_PODS, pod);
  pod = jt_wait_pod(K, NULL, "crashes", restarted_twice, 20000);
  cr_assert(pod, "the container was not restarted");
  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Running");
  const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), 0);
  cr_assert_eq(jt_num(cs, "lastState.terminated.exitCode"), 2);
  const char *w = json_get_str(cs, "state.waiting.reason");
  const char *r = json_get_str(cs, "state.terminated.reason");
  cr_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(cs, "state"), "running") ||
              (w && !strcmp(w, "CrashLoopBackOff")) || (r && !strcmp(r, "Error")),
            "state %s", cJSON_PrintUnformatted(cJSON_GetObjectItem(cs, "state")));
  cJSON_Delete(pod);
  char path[600];
  snprintf(path, sizeof(path), "%s/logs/" JT_NS "/crashes/main.previous.log", C.dir);
  FILE *f = fopen(path, "r");
  cr_assert(f, "no previous log at %s", path);
  char line[64] = "";
  cr_assert(fgets(line, sizeof(line), f));
  fclose(f);
  cr_assert_str_eq(line, "attempt\n");
  cJSON *ev = jt_wait_event(K, "crashes", "BackOff", 10000);
  cr_assert(ev, "no BackOff Event");
  cJSON_Delete(ev);
}
