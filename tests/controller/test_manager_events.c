/* The Event recorder against the local API server: Events on the involved object, repeats
 * counted not duplicated, a new Event when the old one is gone, bounded messages, and no
 * message or object data in the logs. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "json.h"
#include "log.h"
#include "mgrtest.h"
#include "migration/migration.h"

#define NS "events-test"

static struct cl C;
static struct kube_client *K;

static void start(void)
{
  cl_start(&C, CL_FAULTS);
  K = cl_client(&C, "admin");
  mt_ensure_namespace(K, NS);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(ctrl_events, .init = start, .fini = stop, .timeout = 120);

/* The Events about object name, as a List's items (cJSON_Delete the returned list). */
static cJSON *events_of(const char *name, const cJSON **items)
{
  char sel[256];
  snprintf(sel, sizeof(sel), "involvedObject.name=%s", name);
  struct kube_list_opts lo = { NULL, sel, 0, NULL, NULL };
  struct kube_status st;
  kube_status_init(&st);
  cJSON *list = NULL;
  cr_assert_eq(kube_list(K, &KUBE_EVENTS, NS, &lo, &list, &st), GW_OK, "%s", st.message);
  kube_status_release(&st);
  *items = cJSON_GetObjectItem(list, "items");
  return list;
}

static struct recorder *new_recorder_on(struct kube_client *k)
{
  struct recorder *r;
  struct recorder_opts o = { NULL, "godwit-controller-test-0" };
  cr_assert_eq(recorder_new(&r, k, &o), GW_OK);
  return r;
}

static struct recorder *new_recorder(void)
{
  return new_recorder_on(K);
}

/* A client that does not retry, so one injected fault fails one call. */
static struct kube_client *client_without_retries(void)
{
  struct kube_config kc;
  char err[512];
  cr_assert_eq(kube_config_load(&kc, C.kubeconfig, "admin", err, sizeof(err)), GW_OK, "%s", err);
  kc.max_retries = 0;
  struct kube_client *k;
  cr_assert_eq(kube_client_new(&k, &kc, err, sizeof(err)), GW_OK, "%s", err);
  kube_config_release(&kc);
  return k;
}

Test(ctrl_events, repeats_are_counted_not_duplicated)
{
  mt_create_migration(K, NS, "shop");
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "shop");
  struct recorder *r = new_recorder();
  for(int i = 0; i < 3; i++)
    cr_assert_eq(recorder_event(r, m, EV_NORMAL, "AttemptStarted", "attempt %d started", 1),
                 GW_OK);
  const cJSON *items;
  cJSON *list = events_of("shop", &items);
  cr_assert_eq(cJSON_GetArraySize(items), 1, "three identical Events make one");
  const cJSON *e = cJSON_GetArrayItem(items, 0);
  cr_assert_eq(json_get(e, "count")->valuedouble, 3);
  cr_assert_str_eq(json_get_str(e, "reason"), "AttemptStarted");
  cr_assert_str_eq(json_get_str(e, "type"), "Normal");
  cr_assert_str_eq(json_get_str(e, "message"), "attempt 1 started");
  cr_assert_str_eq(json_get_str(e, "source.component"), "godwit-controller");
  cr_assert_str_eq(json_get_str(e, "reportingComponent"), "godwit-controller");
  cr_assert_str_eq(json_get_str(e, "reportingInstance"), "godwit-controller-test-0");
  cr_assert_str_eq(json_get_str(e, "involvedObject.kind"), "Migration");
  cr_assert_str_eq(json_get_str(e, "involvedObject.apiVersion"), "pgcopydb.io/v1");
  cr_assert_str_eq(json_get_str(e, "involvedObject.namespace"), NS);
  cr_assert_str_eq(json_get_str(e, "involvedObject.uid"), json_get_str(m, "metadata.uid"));
  cr_assert(json_get_str(e, "firstTimestamp") && json_get_str(e, "lastTimestamp"));
  const char *name = json_get_str(e, "metadata.name");
  cr_assert(!strncmp(name, "shop.", 5) && strspn(name + 5, "0123456789abcdef") == strlen(name + 5),
            "named <object>.<hex>: %s", name);
  char first_name[300];
  snprintf(first_name, sizeof(first_name), "%s", name);
  cJSON_Delete(list);

  /* another message or type or reason: another Event */
  cr_assert_eq(recorder_event(r, m, EV_NORMAL, "AttemptStarted", "attempt %d started", 2), GW_OK);
  cr_assert_eq(recorder_event(r, m, EV_WARNING, "AttemptFailed", "attempt %d failed", 1), GW_OK);
  list = events_of("shop", &items);
  cr_assert_eq(cJSON_GetArraySize(items), 3);
  cJSON_Delete(list);

  /* the counted Event is deleted (expired): the next repeat starts a new one */
  struct kube_status st;
  kube_status_init(&st);
  struct kube_delete_opts dopt = { KUBE_PROPAGATE_DEFAULT, NULL, NULL, -1, false };
  cr_assert_eq(kube_delete(K, &KUBE_EVENTS, NS, first_name, &dopt, NULL, &st), GW_OK);
  kube_status_release(&st);
  cr_assert_eq(recorder_event(r, m, EV_NORMAL, "AttemptStarted", "attempt %d started", 1), GW_OK);
  list = events_of("shop", &items);
  cr_assert_eq(cJSON_GetArraySize(items), 3);
  const cJSON *it;
  int found = 0;
  cJSON_ArrayForEach(it, items)
  if(!strcmp(json_get_str(it, "message"), "attempt 1 started")) {
    found++;
    cr_assert_eq(json_get(it, "count")->valuedouble, 1);
    cr_assert_str_neq(json_get_str(it, "metadata.name"), first_name);
  }
  cr_assert_eq(found, 1);
  cJSON_Delete(list);
  struct recorder_stats rs;
  recorder_stats(r, &rs);
  cr_assert_eq(rs.created, 4);
  cr_assert_eq(rs.counted, 2);
  recorder_free(r);
  cJSON_Delete(m);
}

Test(ctrl_events, messages_are_bounded_and_scrubbed)
{
  mt_create_migration(K, NS, "big");
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "big");
  struct recorder *r = new_recorder();
  char *huge = malloc(5001);
  memset(huge, 'z', 5000);
  huge[5000] = 0;
  cr_assert_eq(recorder_event(r, m, EV_WARNING, "AttemptFailed",
                              "worker said: postgres://u:hunter2@db/x %s", huge),
               GW_OK);
  const cJSON *items;
  cJSON *list = events_of("big", &items);
  const char *msg = json_get_str(cJSON_GetArrayItem(items, 0), "message");
  cr_assert_eq(strlen(msg), EVENT_MESSAGE_MAX);
  cr_assert(!strstr(msg, "hunter2"));
  cr_assert(strstr(msg, "postgres://u:***@db/x"));
  cJSON_Delete(list);
  free(huge);
  recorder_free(r);
  cJSON_Delete(m);
}

/* Runs fn with stderr (the log) captured into a file; returns the captured text (free it). */
static char *capture_log(void (*fn)(void *), void *arg)
{
  char path[] = "/tmp/godwit-events-log-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  off_t n = lseek(fd, 0, SEEK_END);
  char *text = calloc(1, (size_t)n + 1);
  cr_assert_eq(pread(fd, text, (size_t)n, 0), n);
  close(fd);
  unlink(path);
  return text;
}

struct logged {
  struct recorder *r;
  cJSON *obj;
  gw_rc rc;
};

static void record_secretish(void *arg)
{
  struct logged *l = arg;
  l->rc = recorder_event(l->r, l->obj, EV_WARNING, "PreflightFailed",
                         "connect as app with token TOKEN-VALUE-42 failed");
}

Test(ctrl_events, a_failed_write_logs_names_never_the_message)
{
  mt_create_migration(K, NS, "quiet");
  cJSON *m = mt_get(K, &MIGRATION_GVR, NS, "quiet");
  cJSON_AddItemToObject(cJSON_GetObjectItem(m, "spec"), "note",
                        cJSON_CreateString("OBJECT-DATA-7"));
  struct kube_client *k = client_without_retries();
  struct recorder *r = new_recorder_on(k);
  log_set_level(LOG_DEBUG);
  cl_fault(&C, "{\"verb\":\"create\",\"pathRegex\":\"/events$\",\"code\":500,\"count\":1}");
  struct logged l = { r, m, GW_OK };
  char *text = capture_log(record_secretish, &l);
  cr_assert_neq(l.rc, GW_OK);
  cr_assert(strstr(text, "event not recorded"), "the failure is logged: %s", text);
  cr_assert(strstr(text, "PreflightFailed") && strstr(text, "quiet"));
  cr_assert_null(strstr(text, "TOKEN-VALUE-42"), "the message never reaches the log");
  cr_assert_null(strstr(text, "OBJECT-DATA-7"), "object data never reaches the log");
  free(text);
  struct recorder_stats rs;
  recorder_stats(r, &rs);
  cr_assert_eq(rs.failed, 1);
  /* once the API answers again, the same Event goes through */
  text = capture_log(record_secretish, &l);
  cr_assert_eq(l.rc, GW_OK);
  cr_assert_null(strstr(text, "TOKEN-VALUE-42"));
  cr_assert_null(strstr(text, "OBJECT-DATA-7"));
  free(text);
  log_set_level(LOG_INFO);
  recorder_free(r);
  kube_client_free(k);
  cJSON_Delete(m);
}
