/* ptah_e2e.c: see ptah_e2e.h. */
#include "ptah_e2e.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void ptah_start(struct e2e *e, const struct e2e_opts *o)
{
  struct e2e_opts opts = o ? *o : (struct e2e_opts){ 0 };
  opts.target_only = true;
  e2e_start(e, &opts);
  e->gvr = &KUBE_PTAH_MIGRATIONS;
  e->kind = "PtahMigration";
}

void ptah_configmap(struct e2e *e, const char *name, const char *const *kv)
{
  cJSON *cm = cJSON_CreateObject();
  cJSON_AddStringToObject(cm, "apiVersion", "v1");
  cJSON_AddStringToObject(cm, "kind", "ConfigMap");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "metadata"), "name", name);
  cJSON *data = cJSON_AddObjectToObject(cm, "data");
  for(size_t i = 0; kv[i]; i += 2)
    cJSON_AddStringToObject(data, kv[i], kv[i + 1]);
  char *text = cJSON_PrintUnformatted(cm);
  e2e_apply(e, "%s", text);
  cJSON_free(text);
  cJSON_Delete(cm);
}

long long ptah_int(struct e2e *e, const char *name, const char *path)
{
  cJSON *o = e2e_get(e, name);
  const cJSON *v = json_get(o, path);
  long long n = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
  cJSON_Delete(o);
  return n;
}

const char *ptah_str(struct e2e *e, const char *name, const char *path)
{
  static __thread char buf[4096];
  cJSON *o = e2e_get(e, name);
  const char *s = json_get_str(o, path);
  snprintf(buf, sizeof(buf), "%s", s ? s : "");
  cJSON_Delete(o);
  return buf;
}

bool ptah_wait_version(struct e2e *e, const char *name, long long v, int timeout_ms)
{
  long long end = e2e_mono_ms() + timeout_ms;
  while(e2e_mono_ms() < end) {
    if(ptah_int(e, name, "status.currentVersion") == v &&
       !*ptah_str(e, name, "status.operation.id"))
      return true;
    e2e_sleep_ms(200);
  }
  return false;
}

const char *ptah_record_phase(struct e2e *e, const char *record)
{
  static __thread char buf[64];
  cJSON *o = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(e->k, &KUBE_PTAH_RESULT_RECORDS, E2E_NS, record, &o, &st);
  kube_status_release(&st);
  const char *p = rc ? NULL : json_get_str(o, "status.phase");
  snprintf(buf, sizeof(buf), "%s", p ? p : "");
  cJSON_Delete(o);
  return buf;
}

bool ptah_has_event(struct e2e *e, const char *name, const char *type, const char *reason)
{
  char line[128];
  snprintf(line, sizeof(line), "%s %s (x", type, reason); /* e2e_events' format */
  char *ev = e2e_events(e, name);
  bool found = strstr(ev, line) != NULL;
  free(ev);
  return found;
}

void ptah_acknowledge(struct e2e *e, const char *user, const char *ack, const char *operation,
                      const char *outcome)
{
  char path[96];
  snprintf(path, sizeof(path), "ack-%s.yaml", ack);
  FILE *f = fopen(cl_path(&e->c, path), "w");
  cr_assert(f);
  fprintf(f, "apiVersion: ptah.run/v1\nkind: PtahMigrationRunAcknowledgment\n"
             "metadata: {name: %s}\nspec:\n  migrationRef: {name: shop}\n"
             "  operation: %s\n  outcome: %s\n  comment: read the history table\n",
          ack, operation, outcome);
  fclose(f);
  char *out = NULL;
  int rc = cl_kubectl(&e->c, user, &out, "create -f %s", cl_path(&e->c, path));
  cr_assert_eq(rc, 0, "%s's acknowledgment %s: %s", user, ack, out);
  free(out);
}

struct needle {
  struct e2e *e;
  const char *text;
};

static int running(void *arg)
{
  struct needle *n = arg;
  char *c = pgfx_query1(&n->e->dst, "shop", "SELECT count(*) FROM pg_stat_activity WHERE "
                        "strpos(query, '%s') > 0 AND pid <> pg_backend_pid()", n->text);
  int found = atoi(c) > 0;
  free(c);
  return found;
}

void ptah_kill_runner_during(struct e2e *e, const char *name, const char *needle)
{
  struct needle n = { e, needle };
  cr_assert(cl_eventually(60000, running, &n), "no session ran \"%s\"", needle);
  char sel[128];
  snprintf(sel, sizeof(sel), "ptah.run/migration=%s", name);
  pid_t pid = e2e_pod_pid(e, sel);
  cr_assert_gt(pid, 0, "no running runner Pod");
  cr_assert_eq(kill(-pid, SIGKILL), 0, "kill the runner's process group %d", (int)pid);
}

const char *ptah_unresolved_annotation(struct e2e *e, const char *name)
{
  static __thread char buf[1024];
  cJSON *o = e2e_get(e, name);
  const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
    json_get(o, "metadata.annotations"), "operator.ptah.run/unresolved-run"));
  snprintf(buf, sizeof(buf), "%s", a ? a : "");
  cJSON_Delete(o);
  return buf;
}

