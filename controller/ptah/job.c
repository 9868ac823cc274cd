/* The PtahMigration's operation Job: `godwit-runner ptah-migrate`, the ConfigMap mounted, the
 * database URI from its Secret as an environment variable, the Pod shaped by spec.execution, a
 * deadline and a TTL of its own. */
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "json.h"
#include "podtemplate.h"
#include "pm.h"

const char *pm_service_account(const struct pm *p)
{
  return op_service_account(p->obj);
}

void pm_binding(const struct pm *p, char *buf, size_t len)
{
  op_binding(p->obj, p->o, buf, len);
}

static cJSON *args(const struct pm *p, const struct ptah_op *op)
{
  char attempt[16], to[32], wait[16];
  snprintf(attempt, sizeof(attempt), "%d", op->attempt);
  snprintf(to, sizeof(to), "%lld", op->to);
  snprintf(wait, sizeof(wait), "%ld", p->o->lock_wait_s);
  const char *hist = json_get_str(p->obj, "spec.migrations.historyTable");
  const char *const a[] = {
    "ptah-migrate", "--operation", op->id, "--type", op->type, "--attempt", attempt,
    "--owner-name", p->name, "--namespace", p->ns, "--job-name", op->job,
    "--migrations-dir", PM_MIGRATIONS_MOUNT, "--history-table",
    hist ? hist : "public.ptah_migrations", "--target", to, "--lock-wait-s", wait,
    "--protocol", p->o->protocol ? p->o->protocol : PTAH_PROTOCOL,
    "--result", op->legacy ? "log" : "durable", NULL
  };
  cJSON *arr = cJSON_CreateArray();
  for(size_t i = 0; arr && a[i]; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(a[i]));
  const char *owed = json_get_str(p->obj, "status.lockReleaseOwed.session");
  if(arr && owed && *owed) {
    cJSON_AddItemToArray(arr, cJSON_CreateString("--release-owed"));
    cJSON_AddItemToArray(arr, cJSON_CreateString(owed));
  }
  return arr;
}

static void spec_of(struct pm *p, const struct ptah_op *op, struct rj_spec *s)
{
  static const char *const cmd[] = { "godwit-runner", NULL };
  memset(s, 0, sizeof(*s));
  s->name = op->job;
  s->step = "apply";
  s->attempt = op->attempt;
  s->image = op_image(p->obj, p->o);
  s->command = cmd;
  s->args = args(p, op);
  s->secrets[0] = (struct rj_secret_env){
    "GODWIT_DATABASE_URI", json_get_str(p->obj, "spec.database.connectionSecretRef.name"),
    json_get_str(p->obj, "spec.database.connectionSecretRef.key") };
  s->config_map = json_get_str(p->obj, "spec.migrations.configMapRef.name");
  s->config_mount = PM_MIGRATIONS_MOUNT;
  s->service_account = pm_service_account(p);
  s->pod_labels = json_get(p->obj, "spec.execution.podMetadata.labels");
  s->pod_annotations = json_get(p->obj, "spec.execution.podMetadata.annotations");
  s->labels[0][0] = OP_LABEL;
  s->labels[0][1] = op->id;
  s->labels[1][0] = "ptah.run/result-transport"; /* the transport, recorded on the Job */
  s->labels[1][1] = op->legacy ? "legacy" : "durable";
  s->deadline_s = p->o->job_deadline_s;
  s->ttl_s = p->o->job_ttl_s;
}

gw_rc pm_job_digest(struct pm *p, const struct ptah_op *op, char *out, size_t len)
{
  struct rj_spec s;
  spec_of(p, op, &s);
  cJSON *job = rj_render(&p->owner, &s);
  cJSON_Delete(s.args); /* NULL when rj_render took it */
  if(!job)
    return GW_ENOMEM;
  const cJSON *ann = json_get(job, "spec.template.metadata.annotations");
  const char *dg =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, PODTEMPLATE_DIGEST_ANNOTATION));
  snprintf(out, len, "%s", dg ? dg : "");
  cJSON_Delete(job);
  return GW_OK;
}

gw_rc pm_job_full_digest(struct pm *p, const struct ptah_op *op, char *out, size_t len)
{
  struct rj_spec s;
  spec_of(p, op, &s);
  cJSON *job = rj_render(&p->owner, &s);
  cJSON_Delete(s.args);
  char *text = job ? cJSON_PrintUnformatted(json_get(job, "spec.template")) : NULL;
  cJSON_Delete(job);
  char d[DIGEST_SHA256_LEN];
  gw_rc rc = text ? digest_sha256(text, strlen(text), d) : GW_ENOMEM;
  cJSON_free(text);
  if(!rc)
    snprintf(out, len, "%s", d);
  return rc;
}

gw_rc pm_job_create(struct pm *p, const struct ptah_op *op, bool *created)
{
  *created = false;
  gw_rc rc = op_runner_identity(p->ctx, p->obj);
  if(rc)
    return rc;
  struct rj_spec s;
  spec_of(p, op, &s);
  rc = rj_create(&p->owner, &s, created);
  cJSON_Delete(s.args);
  return rc;
}
