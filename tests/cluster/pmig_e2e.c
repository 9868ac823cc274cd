/* pmig_e2e.c: the PodMotion end-to-end suites' shared steps (pmig_e2e.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "json.h"
#include "kube/kube.h"
#include "pmig_e2e.h"

void pm_start(struct e2e *e)
{
  /* the controller's janitor looks every second, for checkpoints older than two */
  setenv("GODWIT_PODMOTION_JANITOR_INTERVAL_S", "1", 1);
  setenv("GODWIT_PODMOTION_ORPHAN_AGE_S", "2", 1);
  e2e_start(e, &(struct e2e_opts){ .no_database = true, .nodes = true });
  e->gvr = &KUBE_POD_MIGRATIONS;
  e->kind = "PodMigration";
}

void pm_policy(struct e2e *e, const char *extra)
{
  e2e_apply(e, "apiVersion: migration.podmotion.io/v1beta1\nkind: MigrationPolicy\n"
                "metadata: {name: counters}\nspec:\n  podSelector: {matchLabels: {app: counter}}\n"
                "  allowedModes: [PreCopy, StopAndCopy]\n%s", extra ? extra : "");
}

int pm_counter(struct e2e *e, const char *name, const char *probe_port)
{
  cJSON *pod = jt_counter_pod(name, "node-a");
  cr_assert_eq(json_set_str(pod, "metadata.namespace", "default"), GW_OK);
  cr_assert_eq(json_set(pod, "metadata.labels", cJSON_Parse("{\"app\":\"counter\"}")), GW_OK);
  cJSON *ctr = cJSON_GetArrayItem(json_get_mut(pod, "spec.containers"), 0);
  cJSON_AddItemToObject(ctr, "ports", cJSON_Parse("[{\"name\":\"counter\",\"containerPort\":"
                                                  "7000}]"));
  char probe[128];
  snprintf(probe, sizeof(probe), "{\"tcpSocket\":{\"port\":%s},\"periodSeconds\":1}", probe_port);
  cJSON_AddItemToObject(ctr, "readinessProbe", cJSON_Parse(probe));
  char *text = cJSON_Print(pod);
  cJSON_Delete(pod);
  e2e_apply(e, "%s", text);
  cJSON_free(text);
  char *ip = NULL;
  for(int i = 0; i < 100; i++) {
    free(ip);
    ip = NULL;
    e2e_kubectl(e, &ip, "get pod %s -o jsonpath='{.status.podIP}'", name);
    if(ip && !strncmp(ip, "198.18.", 7))
      break;
    e2e_sleep_ms(100);
  }
  cr_assert(ip && !strncmp(ip, "198.18.", 7), "the counter has no pod address: %s", ip);
  int fd = jt_counter_connect(ip);
  free(ip);
  return fd;
}

long pm_value(int fd, const char *req)
{
  return strtol(jt_counter_req(fd, req), NULL, 10);
}

void pm_move(struct e2e *e, const char *name, const char *pod, const char *extra)
{
  e2e_apply(e, "apiVersion: migration.podmotion.io/v1beta1\nkind: PodMigration\n"
                "metadata: {name: %s}\nspec:\n  source: {podName: %s}\n"
                "  destination: {nodeName: node-b}\n%s", name, pod, extra ? extra : "");
}
