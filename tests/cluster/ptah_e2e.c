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
  long long end = e2e_mono_ms() + 10000;
  for(;;) {
    char *ev = e2e_events(e, name);
    bool found = strstr(ev, line) != NULL;
    free(ev);
    if(found || e2e_mono_ms() >= end)
      return found;
    e2e_sleep_ms(200);
  }
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
  snprintf(sel, sizeof(sel), "ptah.run/%s=%s",
           e->kind && !strcmp(e->kind, "PtahSchema") ? "schema" : "migration", name);
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


/* ---- PtahSchema ---- */

void psch_start_opts(struct e2e *e, const struct e2e_opts *o)
{
  ptah_start(e, o);
  e->gvr = &KUBE_PTAH_SCHEMAS;
  e->kind = "PtahSchema";
  pgfx_exec(&e->dst, "postgres", "ALTER ROLE dst_app CREATEDB");
}

void psch_start(struct e2e *e, bool faults)
{
  struct e2e_opts o = { .faults = faults };
  psch_start_opts(e, &o);
}

int psch_apply_as(struct e2e *e, const char *user, char **out, const char *yaml)
{
  static int n;
  char path[600];
  snprintf(path, sizeof(path), "%s/as-%s-%d.yaml", e->c.dir, user, n++);
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  fputs(yaml, f);
  fclose(f);
  return cl_kubectl(&e->c, user, out, "apply -f '%s'", path);
}

void psch_schema(struct e2e *e, const char *user, const char *sql, const char *more)
{
  char yaml[4096];
  snprintf(yaml, sizeof(yaml),
           "apiVersion: ptah.run/v1\nkind: PtahSchema\nmetadata: {name: orders}\nspec:\n"
           "  database: {connectionSecretRef: {name: dst}}\n"
           "  schema:\n    sql: \"%s\"\n%s", sql, more ? more : "");
  char *out = NULL;
  int rc = psch_apply_as(e, user, &out, yaml);
  cr_assert_eq(rc, 0, "kubectl apply as %s failed: %s", user, out);
  free(out);
}

int psch_approve(struct e2e *e, const char *user, const char *name, const char *digest,
                 const char *plan_author, char **out)
{
  char yaml[2048];
  snprintf(yaml, sizeof(yaml),
           "apiVersion: ptah.run/v1\nkind: PtahSchemaApproval\nmetadata: {name: %s}\nspec:\n"
           "  schemaRef: {name: orders}\n  planDigest: \"%s\"\n%s%s%s", name, digest,
           plan_author ? "  planAuthor: " : "", plan_author ? plan_author : "",
           plan_author ? "\n" : "");
  return psch_apply_as(e, user, out, yaml);
}

const char *psch_approval_phase(struct e2e *e, const char *name)
{
  static __thread char buf[64];
  cJSON *o = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(e->k, &KUBE_PTAH_APPROVALS, E2E_NS, name, &o, &st);
  kube_status_release(&st);
  const char *p = rc ? NULL : json_get_str(o, "status.phase");
  snprintf(buf, sizeof(buf), "%s", p ? p : "");
  cJSON_Delete(o);
  return buf;
}

bool psch_wait_approval(struct e2e *e, const char *name, const char *phase, int timeout_ms)
{
  long long end = e2e_mono_ms() + timeout_ms;
  while(e2e_mono_ms() < end) {
    if(!strcmp(psch_approval_phase(e, name), phase))
      return true;
    e2e_sleep_ms(200);
  }
  return false;
}

int psch_approval_events(struct e2e *e, const char *name, const char *reason, int min,
                         int timeout_ms)
{
  const char *kind = e->kind;
  e->kind = "PtahSchemaApproval";
  int n = e2e_wait_event_count(e, name, reason, min, timeout_ms);
  e->kind = kind;
  return n;
}

void psch_want_phase(struct e2e *e, const char *phase, int timeout_ms)
{
  bool ok = e2e_wait_phase(e, "orders", phase, timeout_ms);
  char *d = ok ? NULL : e2e_describe(e, "orders");
  cr_assert(ok, "orders is not %s:\n%s", phase, d ? d : "");
}

void psch_want_new_plan(struct e2e *e, const char *not_digest, char *out, size_t len)
{
  bool ok = false;
  long long end = e2e_mono_ms() + 120000;
  while(!ok && e2e_mono_ms() < end) {
    ok = !strcmp(e2e_phase(e, "orders"), "AwaitingApproval") &&
         (!not_digest || strcmp(ptah_str(e, "orders", "status.plan.digest"), not_digest));
    if(!ok)
      e2e_sleep_ms(200);
  }
  char *d = ok ? NULL : e2e_describe(e, "orders");
  cr_assert(ok, "no new plan waits for an approval:\n%s", d ? d : "");
  snprintf(out, len, "%s", ptah_str(e, "orders", "status.plan.digest"));
}

bool psch_has_column(struct e2e *e, const char *table, const char *column)
{
  char *n = pgfx_query1(&e->dst, "shop", "SELECT count(*) FROM information_schema.columns "
                        "WHERE table_schema = 'public' AND table_name = '%s' AND "
                        "column_name = '%s'", table, column);
  bool yes = n && !strcmp(n, "1");
  free(n);
  return yes;
}
