/* A PtahSchema's operation Job (ps.h): `godwit-runner ptah-plan --type <Plan|Apply|Observe>`,
 * the desired SQL's immutable copy mounted, the database URI from its Secret as an environment
 * variable, the Pod shaped by spec.execution, a deadline and a TTL of its own. The result is
 * always durable (a PtahResultRecord): the legacy log transport is PtahMigration's only. */
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "json.h"
#include "podtemplate.h"
#include "ps.h"

#define MAX_ARGS 600 /* 256 protected tables take two each */

static cJSON *args(const struct ps *p, const struct ptah_op *op)
{
  char attempt[16], wait[16], desired[320], binding[640];
  snprintf(attempt, sizeof(attempt), "%d", op->attempt);
  snprintf(wait, sizeof(wait), "%ld", p->o->lock_wait_s);
  snprintf(desired, sizeof(desired), "%s/%s", PS_DESIRED_MOUNT, PS_DESIRED_KEY);
  /* the binding the plan's digest covers: the claim's, so Plan and Apply hash the same */
  snprintf(binding, sizeof(binding), "%s", op->binding);
  const char *a[MAX_ARGS] = {
    "ptah-plan", "--type", op->type, "--operation", op->id, "--attempt", attempt,
    "--owner-name", p->name, "--namespace", p->ns, "--job-name", op->job, "--desired", desired,
    "--binding", binding, "--protocol", p->o->protocol ? p->o->protocol : PTAH_PROTOCOL,
    "--result", "durable", "--lock-wait-s", wait, NULL
  };
  size_t n = 0;
  while(a[n])
    n++;
  if(!strcmp(op->type, "Apply")) {
    a[n++] = "--approved-digest";
    a[n++] = json_get_str(p->obj, "status.plan.digest");
    a[n++] = "--plan-fingerprint";
    a[n++] = json_get_str(p->obj, "status.plan.fingerprint");
  }
  const cJSON *x;
  cJSON_ArrayForEach(x, json_get(p->obj, "spec.policy.protectedTables"))
    if(cJSON_IsString(x) && n + 3 < MAX_ARGS) {
      a[n++] = "--protected-table";
      a[n++] = x->valuestring;
    }
  cJSON *arr = cJSON_CreateArray();
  for(size_t i = 0; arr && i < n; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(a[i] ? a[i] : ""));
  return arr;
}

static void spec_of(struct ps *p, const struct ptah_op *op, struct rj_spec *s, char *copy,
                    size_t len)
{
  static const char *const cmd[] = { "godwit-runner", NULL };
  /* the copy of the desired SQL the claim was made with */
  ps_copy_name(p->name, op->desired, copy, len);
  memset(s, 0, sizeof(*s));
  s->name = op->job;
  s->step = !strcmp(op->type, "Apply") ? "apply" : !strcmp(op->type, "Plan") ? "plan" : "observe";
  s->attempt = op->attempt;
  s->image = op_image(p->obj, p->o);
  s->command = cmd;
  s->args = args(p, op);
  s->secrets[0] = (struct rj_secret_env){
    "GODWIT_DATABASE_URI", json_get_str(p->obj, "spec.database.connectionSecretRef.name"),
    json_get_str(p->obj, "spec.database.connectionSecretRef.key") };
  s->config_map = copy;
  s->config_mount = PS_DESIRED_MOUNT;
  s->service_account = op_service_account(p->obj);
  s->pod_labels = json_get(p->obj, "spec.execution.podMetadata.labels");
  s->pod_annotations = json_get(p->obj, "spec.execution.podMetadata.annotations");
  s->labels[0][0] = OP_LABEL;
  s->labels[0][1] = op->id;
  s->labels[1][0] = "ptah.run/result-transport";
  s->labels[1][1] = "durable";
  s->deadline_s = p->o->job_deadline_s;
  s->ttl_s = p->o->job_ttl_s;
}

gw_rc ps_job_digest(struct ps *p, const struct ptah_op *op, bool full, char *out, size_t len)
{
  struct rj_spec s;
  char copy[254];
  spec_of(p, op, &s, copy, sizeof(copy));
  cJSON *job = rj_render(&p->owner, &s);
  cJSON_Delete(s.args); /* NULL when rj_render took it */
  if(!job)
    return GW_ENOMEM;
  gw_rc rc = GW_OK;
  if(full) {
    char *text = cJSON_PrintUnformatted(json_get(job, "spec.template"));
    char d[DIGEST_SHA256_LEN];
    rc = text ? digest_sha256(text, strlen(text), d) : GW_ENOMEM;
    cJSON_free(text);
    if(!rc)
      snprintf(out, len, "%s", d);
  } else {
    const cJSON *ann = json_get(job, "spec.template.metadata.annotations");
    const char *dg =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, PODTEMPLATE_DIGEST_ANNOTATION));
    snprintf(out, len, "%s", dg ? dg : "");
  }
  cJSON_Delete(job);
  return rc;
}

gw_rc ps_job_create(struct ps *p, const struct ptah_op *op, bool *created)
{
  *created = false;
  gw_rc rc = op_runner_identity(p->ctx, p->obj);
  if(rc)
    return rc;
  struct rj_spec s;
  char copy[254];
  spec_of(p, op, &s, copy, sizeof(copy));
  rc = rj_create(&p->owner, &s, created);
  cJSON_Delete(s.args);
  return rc;
}
