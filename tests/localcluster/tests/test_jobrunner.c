/* The job runner as the Job controller: Pods made from a Job (names, labels, owner), completion,
 * retries up to backoffLimit, activeDeadlineSeconds, OnFailure restarts, Indexed Jobs,
 * suspension, deletion of a Job killing its processes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "test_jobrunner.h"

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

TestSuite(jobrunner_jobs, .init = start, .fini = stop, .timeout = 120);

static bool pod_succeeded(const cJSON *pod)
{
  const char *ph = json_get_str(pod, "status.phase");
  return ph && !strcmp(ph, "Succeeded");
}

static const char *label(const cJSON *obj, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(obj, "metadata.labels"), key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

Test(jobrunner_jobs, hello_completes_with_log_and_labels)
{
  jt_create(K, &KUBE_JOBS, jt_job("hello", "echo first; echo hello; exit 0"));
  cJSON *job = jt_wait_job_condition(K, "hello", "Complete", 30000);
  cr_assert(job, "the Job never completed");
  cr_assert_eq(jt_num(job, "status.succeeded"), 1);
  cr_assert_eq(jt_num(job, "status.failed"), 0);
  cr_assert_eq(jt_num(job, "status.active"), 0);
  cr_assert(json_get_str(job, "status.startTime"));
  cr_assert(json_get_str(job, "status.completionTime"));
  const cJSON *cond = jt_condition(job, "Complete");
  cr_assert_str_eq(json_get_str(cond, "reason"), "CompletionsReached");

  cJSON *pods = jt_job_pods(K, "hello");
  cr_assert_eq(cJSON_GetArraySize(pods), 1);
  const cJSON *pod = cJSON_GetArrayItem(pods, 0);
  const char *name = json_get_str(pod, "metadata.name");
  /* <job>-<5 random>, the Job controller's labels, a controller ownerReference */
  cr_assert_eq(strlen(name), strlen("hello-") + 5, "pod name %s", name);
  cr_assert(!strncmp(name, "hello-", 6));
  const char *uid = json_get_str(job, "metadata.uid");
  cr_assert_str_eq(label(pod, "job-name"), "hello");
  cr_assert_str_eq(label(pod, "batch.kubernetes.io/job-name"), "hello");
  cr_assert_str_eq(label(pod, "controller-uid"), uid);
  cr_assert_str_eq(label(pod, "batch.kubernetes.io/controller-uid"), uid);
  const cJSON *ref = cJSON_GetArrayItem(json_get(pod, "metadata.ownerReferences"), 0);
  cr_assert_str_eq(json_get_str(ref, "kind"), "Job");
  cr_assert_str_eq(json_get_str(ref, "uid"), uid);
  cr_assert(json_get_bool(ref, "controller", false));
  cr_assert(json_get_bool(ref, "blockOwnerDeletion", false));

  cr_assert_str_eq(json_get_str(pod, "status.phase"), "Succeeded");
  const cJSON *t = jt_state(pod, "terminated");
  cr_assert(t, "no terminated state");
  cr_assert_eq(jt_num(t, "exitCode"), 0);
  cr_assert_str_eq(json_get_str(t, "reason"), "Completed");
  cr_assert_str_eq(json_get_str(jt_pod_condition(pod, "Ready"), "reason"), "PodCompleted");

  char *log = jt_log(K, name, 0);
  cr_assert_str_eq(log, "first\nhello\n");
  free(log);
  log = jt_log(K, name, 1);
  cr_assert_str_eq(log, "hello\n");
  free(log);

  cJSON *ev = jt_wait_event(K, "hello", "SuccessfulCreate", 5000);
  cr_assert(ev);
  char want[128];
  snprintf(want, sizeof(want), "Created pod: %s", name);
  cr_assert_str_eq(json_get_str(ev, "message"), want);
  cJSON_Delete(ev);
  ev = jt_wait_event(K, "hello", "Completed", 5000);
  cr_assert(ev);
  cJSON_Delete(ev);
  cJSON_Delete(pods);
  cJSON_Delete(job);
}

Test(jobrunner_jobs, failing_job_retries_up_to_backoff_limit)
{
  cJSON *job = jt_job("fails", "echo trying; exit 3");
  cr_assert_eq(json_set(job, "spec.backoffLimit", cJSON_CreateNumber(2)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  job = jt_wait_job_condition(K, "fails", "Failed", 60000);
  cr_assert(job, "the Job never failed");
  const cJSON *cond = jt_condition(job, "Failed");
  cr_assert_str_eq(json_get_str(cond, "reason"), "BackoffLimitExceeded");
  cr_assert_str_eq(json_get_str(cond, "message"), "Job has reached the specified backoff limit");
  cr_assert(jt_condition_true(job, "FailureTarget"));
  cr_assert_eq(jt_num(job, "status.failed"), 3);
  cr_assert_eq(jt_num(job, "status.succeeded"), 0);
  cr_assert(!json_get(job, "status.completionTime"));
  cJSON *pods = jt_job_pods(K, "fails");
  cr_assert_eq(cJSON_GetArraySize(pods), 3, "one Pod per attempt (restartPolicy Never)");
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    cr_assert_str_eq(json_get_str(p, "status.phase"), "Failed");
    const cJSON *t = jt_state(p, "terminated");
    cr_assert_eq(jt_num(t, "exitCode"), 3);
    cr_assert_str_eq(json_get_str(t, "reason"), "Error");
  }
  cJSON *ev = jt_wait_event(K, "fails", "BackoffLimitExceeded", 5000);
  cr_assert(ev);
  cr_assert_str_eq(json_get_str(ev, "type"), "Warning");
  cJSON_Delete(ev);
  cJSON_Delete(pods);
  cJSON_Delete(job);
}

Test(jobrunner_jobs, active_deadline_kills_the_process)
{
  char pidfile[512];
  snprintf(pidfile, sizeof(pidfile), "%s", cl_path(&C, "deadline.pid"));
  char script[700];
  snprintf(script, sizeof(script), "echo $$$$ > %s; exec sleep 1000", pidfile);
  cJSON *job = jt_job("deadline", script);
  cr_assert_eq(json_set(job, "spec.activeDeadlineSeconds", cJSON_CreateNumber(2)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  long pid = jt_wait_pidfile(pidfile, 20000);
  cr_assert(pid > 0, "the container never started");
  job = jt_wait_job_condition(K, "deadline", "Failed", 30000);
  cr_assert(job, "the Job never failed");
  const cJSON *cond = jt_condition(job, "Failed");
  cr_assert_str_eq(json_get_str(cond, "reason"), "DeadlineExceeded");
  cr_assert_str_eq(json_get_str(cond, "message"), "Job was active longer than specified deadline");
  cr_assert(jt_wait_gone(pid, 10000), "process %ld still there", pid);
  cJSON_Delete(job);
}

Test(jobrunner_jobs, on_failure_restarts_in_place_then_fails)
{
  cJSON *job = jt_job("crashloop", "echo run; exit 1");
  cr_assert_eq(json_set_str(job, "spec.template.spec.restartPolicy", "OnFailure"), GW_OK);
  cr_assert_eq(json_set(job, "spec.backoffLimit", cJSON_CreateNumber(2)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  job = jt_wait_job_condition(K, "crashloop", "Failed", 60000);
  cr_assert(job, "the Job never failed");
  cJSON *pods = jt_job_pods(K, "crashloop");
  /* One Pod, restarted in place; deleted (or terminal) once the Job failed. */
  cr_assert_leq(cJSON_GetArraySize(pods), 1);
  cJSON_Delete(pods);
  cJSON_Delete(job);
}

Test(jobrunner_jobs, indexed_job_runs_every_index)
{
  char dir[512];
  snprintf(dir, sizeof(dir), "%s", cl_path(&C, "idx"));
  char script[1200];
  snprintf(script, sizeof(script), "mkdir -p %s && echo $HOSTNAME > %s/$JOB_COMPLETION_INDEX", dir,
           dir);
  cJSON *job = jt_job("indexed", script);
  cr_assert_eq(json_set_str(job, "spec.completionMode", "Indexed"), GW_OK);
  cr_assert_eq(json_set(job, "spec.completions", cJSON_CreateNumber(3)), GW_OK);
  cr_assert_eq(json_set(job, "spec.parallelism", cJSON_CreateNumber(2)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  job = jt_wait_job_condition(K, "indexed", "Complete", 30000);
  cr_assert(job);
  cr_assert_str_eq(json_get_str(job, "status.completedIndexes"), "0-2");
  cr_assert_eq(jt_num(job, "status.succeeded"), 3);
  for(int i = 0; i < 3; i++) {
    char p[600], want[64];
    snprintf(p, sizeof(p), "%s/%d", dir, i);
    snprintf(want, sizeof(want), "indexed-%d\n", i);
    FILE *f = fopen(p, "r");
    cr_assert(f, "index %d never ran", i);
    char got[64] = "";
    cr_assert(fgets(got, sizeof(got), f));
    fclose(f);
    cr_assert_str_eq(got, want);
  }
  cJSON_Delete(job);
}

Test(jobrunner_jobs, suspended_job_starts_on_resume)
{
  cJSON *job = jt_job("later", "echo resumed");
  cr_assert_eq(json_set(job, "spec.suspend", cJSON_CreateTrue()), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  job = jt_wait_job_condition(K, "later", "Suspended", 20000);
  cr_assert(job, "no Suspended condition");
  cJSON_Delete(job);
  cJSON *pods = jt_job_pods(K, "later");
  cr_assert_eq(cJSON_GetArraySize(pods), 0);
  cJSON_Delete(pods);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_patch(K, &KUBE_JOBS, JT_NS, "later", KUBE_PATCH_MERGE,
                          "{\"spec\":{\"suspend\":false}}", NULL, NULL, &st),
               GW_OK, "%s", st.message);
  kube_status_release(&st);
  job = jt_wait_job_condition(K, "later", "Complete", 30000);
  cr_assert(job);
  const cJSON *c = jt_condition(job, "Suspended");
  cr_assert_str_eq(json_get_str(c, "status"), "False");
  cr_assert_str_eq(json_get_str(c, "reason"), "JobResumed");
  cJSON_Delete(job);
}

Test(jobrunner_jobs, deleting_a_job_kills_its_process_group)
{
  char pidfile[512];
  snprintf(pidfile, sizeof(pidfile), "%s", cl_path(&C, "child.pid"));
  char script[700];
  /* a child in the background: the whole process group must go */
  snprintf(script, sizeof(script), "sleep 1000 & echo $! > %s; wait", pidfile);
  jt_create(K, &KUBE_JOBS, jt_job("forever", script));
  long pid = jt_wait_pidfile(pidfile, 20000);
  cr_assert(pid > 0, "the container never started");
  cJSON *pod = jt_wait_pod(K, "forever", NULL, jt_pod_running, 10000);
  cr_assert(pod, "the Pod never ran");
  cJSON_Delete(pod);
  struct kube_status st;
  kube_status_init(&st);
  struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_BACKGROUND, .grace_period_s = -1 };
  cr_assert_eq(kube_delete(K, &KUBE_JOBS, JT_NS, "forever", &o, NULL, &st), GW_OK, "%s",
               st.message);
  kube_status_release(&st);
  cr_assert(jt_wait_gone(pid, 20000), "sleep %ld survived its Job", pid);
  for(int i = 0; i < 100; i++) {
    cJSON *pods = jt_job_pods(K, "forever");
    int n = cJSON_GetArraySize(pods);
    cJSON_Delete(pods);
    if(!n)
      return;
    usleep(100000);
  }
  cr_assert_fail("the Pod was never removed");
}

Test(jobrunner_jobs, parallel_completions)
{
  cJSON *job = jt_job("many", "echo one");
  cr_assert_eq(json_set(job, "spec.completions", cJSON_CreateNumber(3)), GW_OK);
  cr_assert_eq(json_set(job, "spec.parallelism", cJSON_CreateNumber(2)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  job = jt_wait_job_condition(K, "many", "Complete", 30000);
  cr_assert(job);
  cr_assert_eq(jt_num(job, "status.succeeded"), 3);
  cJSON *pods = jt_job_pods(K, "many");
  cr_assert_eq(cJSON_GetArraySize(pods), 3);
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
    cr_assert(pod_succeeded(p));
  cJSON_Delete(pods);
  cJSON_Delete(job);
}

static bool running_with_pid(const cJSON *pod)
{
  return jt_pod_running(pod);
}

Test(jobrunner_jobs, deleted_pod_counts_as_failed_and_is_replaced)
{
  cJSON *job = jt_job("replace", "exec sleep 1000");
  cr_assert_eq(json_set(job, "spec.backoffLimit", cJSON_CreateNumber(1)), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  cJSON *pod = jt_wait_pod(K, "replace", NULL, running_with_pid, 20000);
  cr_assert(pod);
  char first[128];
  snprintf(first, sizeof(first), "%s", json_get_str(pod, "metadata.name"));
  cJSON_Delete(pod);
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_delete(K, &KUBE_PODS, JT_NS, first, NULL, NULL, &st), GW_OK, "%s",
               st.message);
  kube_status_release(&st);
  cJSON *done = NULL;
  for(int i = 0; i < 200 && !done; i++) {
    cJSON *j = jt_get(K, &KUBE_JOBS, "replace");
    if(jt_num(j, "status.failed") == 1 && jt_num(j, "status.active") == 1)
      done = j;
    else
      cJSON_Delete(j);
    usleep(100000);
  }
  cr_assert(done, "the deleted Pod was not counted and replaced");
  cJSON_Delete(done);
  pod = jt_wait_pod(K, "replace", NULL, running_with_pid, 20000);
  cr_assert(pod);
  cr_assert_str_neq(json_get_str(pod, "metadata.name"), first);
  cJSON_Delete(pod);
}
