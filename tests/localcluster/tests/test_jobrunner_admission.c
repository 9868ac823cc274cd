/* The job runner's Pods go through admission like any other: a runner Pod the webhook refuses
 * (labelled godwit.dev/runner without the template digest) leaves the Job a FailedCreate Event
 * carrying the refusal, and no Pod; the creation is retried with backoff. */
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
  jt_start(&C, CL_WEBHOOK);
  K = jt_admin(&C);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(jobrunner_admission, .init = start, .fini = stop, .timeout = 120);

Test(jobrunner_admission, refused_pod_is_a_failed_create_event)
{
  cJSON *job = jt_job("forged", "true");
  cJSON *labels = cJSON_CreateObject();
  cJSON_AddStringToObject(labels, "godwit.dev/runner", "preflight");
  cr_assert_eq(json_set(job, "spec.template.metadata", cJSON_CreateObject()), GW_OK);
  cr_assert_eq(json_set(job, "spec.template.metadata.labels", labels), GW_OK);
  jt_create(K, &KUBE_JOBS, job);
  cJSON *ev = jt_wait_event(K, "forged", "FailedCreate", 30000);
  cr_assert(ev, "no FailedCreate Event");
  const char *msg = json_get_str(ev, "message");
  cr_assert(!strncmp(msg, "Error creating: ", 16), "%s", msg);
  cr_assert(strstr(msg, "denied the request"), "%s", msg);
  cr_assert(strstr(msg, "godwit.dev/template-digest"), "%s", msg);
  cr_assert_str_eq(json_get_str(ev, "type"), "Warning");
  cr_assert_str_eq(json_get_str(ev, "involvedObject.kind"), "Job");
  cr_assert_str_eq(json_get_str(ev, "source.component"), "job-controller");
  cJSON_Delete(ev);
  cJSON *pods = jt_job_pods(K, "forged");
  cr_assert_eq(cJSON_GetArraySize(pods), 0);
  cJSON_Delete(pods);
  /* Retried with backoff: each attempt names its own generated Pod, so each is an Event. */
  int n = 0;
  for(int i = 0; i < 100 && n < 2; i++) {
    cJSON *all = jt_events(K, "forged", "FailedCreate");
    n = cJSON_GetArraySize(all);
    cJSON_Delete(all);
    if(n < 2)
      usleep(100000);
  }
  cr_assert_geq(n, 2, "the creation was not retried");
}
