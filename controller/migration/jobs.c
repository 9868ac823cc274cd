/* The Migration's runner Jobs and work-dir PVC on the core's (controller/runjob.h): their
 * names, credentials and volume; and the step driver. See mig.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../events.h"
#include "json.h"
#include "log.h"
#include "mig.h"

void job_name(const struct mig *m, const char *step, int attempt, char *buf, size_t len)
{
  /* The handover is "the <name>-reown Job" (seed 000); its rare retries are numbered. */
  if(!strcmp(step, "reown") && attempt <= 1)
    snprintf(buf, len, "%s-%s", m->name, step);
  else
    rj_name(&m->owner, step, attempt, buf, len);
}

/* ---- the Migration's Jobs on the core's runner Jobs (controller/runjob.h) ---- */

void mig_owner_init(struct mig *m)
{
  m->owner = (struct rj_owner){ .kube = m->ctx->kube, .key = m->ctx->key,
                                .api_version = MIGRATION_GROUP "/v1", .kind = "Migration",
                                .ns = m->ns, .name = m->name, .uid = m->uid,
                                .label = MIG_LABEL, .runner = "migration",
                                .jobs = mgr_cache(m->ctx->mgr, &KUBE_JOBS),
                                .pods = mgr_cache(m->ctx->mgr, &KUBE_PODS),
                                .refusals = mgr_cache(m->ctx->mgr, &KUBE_EVENTS) };
}

/* activeDeadlineSeconds of a step's Job: every runner Job is bounded, so a step that hangs (a
 * lock never granted, a server that stops answering mid-query) fails its attempt instead of
 * holding the Migration; the worker is not, as a live one follows until the cutover. */
static long deadline_of(const struct mig *m, const char *step)
{
  if(!strcmp(step, "worker"))
    return 0;
  if(!strcmp(step, "verify") || !strcmp(step, "compare") || !strcmp(step, "reown"))
    return m->o->long_step_deadline_s;
  return m->o->step_deadline_s;
}

/* The step containers' resources (preflight, catalog, cutover, verify, reown, compare, cleanup):
 * light libpq clients, but declared, so a namespace whose ResourceQuota requires requests and
 * limits admits them; the worker's are spec.worker.resources. */
static const cJSON *step_resources(void)
{
  static cJSON *r;
  if(!r)
    r = cJSON_Parse("{\"requests\":{\"cpu\":\"" MIG_STEP_CPU_REQUEST "\",\"memory\":\""
                    MIG_STEP_MEMORY_REQUEST "\"},\"limits\":{\"memory\":\""
                    MIG_STEP_MEMORY_LIMIT "\"}}");
  return r;
}

/* Takes s->args. */
static void to_rj(const struct mig *m, struct job_spec *s, char *name, size_t namelen,
                  char *claim, size_t claimlen, struct rj_spec *out)
{
  job_name(m, s->step, s->attempt, name, namelen);
  snprintf(claim, claimlen, "%s-workdir", m->name);
  memset(out, 0, sizeof(*out));
  *out = (struct rj_spec){ .name = name, .step = s->step, .attempt = s->attempt,
                           .image = s->image, .container = s->container, .command = s->command,
                           .args = s->args,
                           .resources = s->worker ? s->resources : step_resources(),
                           .deadline_s = deadline_of(m, s->step) };
  /* every runner Pod of the Migration, the worker's and each step's (spec.worker) */
  const cJSON *w = json_get(m->obj, "spec.worker");
  out->service_account = json_get_str(w, "serviceAccountName");
  out->pod_labels = json_get(w, "podMetadata.labels");
  out->pod_annotations = json_get(w, "podMetadata.annotations");
  out->node_selector = json_get(w, "nodeSelector");
  out->tolerations = json_get(w, "tolerations");
  out->image_pull_secrets = json_get(w, "imagePullSecrets");
  s->args = NULL;
  const cJSON *spec = json_get(m->obj, "spec");
  size_t k = 0;
  struct rj_secret_env *sec = out->secrets;
  if(s->source)
    sec[k++] = (struct rj_secret_env){ s->worker ? "PGCOPYDB_SOURCE_PGURI" : "GODWIT_SOURCE_URI",
                                       json_get_str(spec, "source.connectionSecretRef.name"),
                                       json_get_str(spec, "source.connectionSecretRef.key") };
  if(s->target)
    sec[k++] = (struct rj_secret_env){ s->worker ? "PGCOPYDB_TARGET_PGURI" : "GODWIT_TARGET_URI",
                                       json_get_str(spec, "target.connectionSecretRef.name"),
                                       json_get_str(spec, "target.connectionSecretRef.key") };
  if(s->superuser)
    sec[k++] = (struct rj_secret_env){ "GODWIT_SUPERUSER_URI",
                                       json_get_str(spec, "superuserSecretRef.name"),
                                       json_get_str(spec, "superuserSecretRef.key") };
  size_t e = 0;
  if(s->worker) {
    out->env[e][0] = "PGAPPNAME";
    out->env[e++][1] = m->appname;
  }
  for(size_t i = 0; i < sizeof(s->env) / sizeof(s->env[0]) && s->env[i][0] && e < RJ_MAX_ENV;
      i++, e++) {
    out->env[e][0] = s->env[i][0];
    out->env[e][1] = s->env[i][1];
  }
  if(s->workdir) {
    out->claim = claim;
    out->mount = MIG_WORK_MOUNT;
  }
}

cJSON *mig_job_render(const struct mig *m, struct job_spec *s)
{
  char name[96], claim[96];
  struct rj_spec r;
  to_rj(m, s, name, sizeof(name), claim, sizeof(claim), &r);
  return rj_render(&m->owner, &r);
}

gw_rc mig_job_create(struct mig *m, struct job_spec *s, bool *created)
{
  char name[96], claim[96];
  struct rj_spec r;
  to_rj(m, s, name, sizeof(name), claim, sizeof(claim), &r);
  return rj_create(&m->owner, &r, created);
}

gw_rc mig_pvc_ensure(struct mig *m)
{
  char claim[96];
  snprintf(claim, sizeof(claim), "%s-workdir", m->name);
  return rj_pvc_ensure(&m->owner, claim, json_get(m->obj, "spec.worker.workDir.size"),
                       MIGRATION_DEFAULT_WORK_DIR,
                       json_get_str(m->obj, "spec.worker.workDir.storageClassName"));
}

gw_rc mig_job_get(struct mig *m, const char *step, int attempt, struct job_view *v)
{
  char name[96];
  job_name(m, step, attempt, name, sizeof(name));
  return rj_get(&m->owner, name, v);
}

gw_rc mig_job_delete(struct mig *m, const char *step, int attempt)
{
  char name[96];
  job_name(m, step, attempt, name, sizeof(name));
  return rj_delete(&m->owner, name);
}

/* ---- a runner step driven to a verdict (controller/stepdrive.h) ---- */

struct render_pair {
  step_render_fn render;
  void *ctx;
};

static gw_rc create_job(void *kind, void *ctx, int attempt, bool *created)
{
  struct mig *m = kind;
  const struct render_pair *p = ctx;
  struct job_spec s;
  memset(&s, 0, sizeof(s));
  p->render(m, attempt, &s, p->ctx);
  return mig_job_create(m, &s, created);
}

static void name_job(void *kind, const char *step, int attempt, char *buf, size_t len)
{
  job_name(kind, step, attempt, buf, len);
}

enum step_outcome mig_step_drive(struct mig *m, struct step_run *r, step_render_fn render,
                                 void *ctx)
{
  struct render_pair p = { render, ctx };
  const struct step_host h = { .obj = m->obj, .ed = &m->ed, .owner = &m->owner,
                               .poll_ms = m->o->poll_interval_ms, .kind = m,
                               .job_name = name_job };
  r->create = create_job;
  r->ctx = &p;
  enum step_outcome o = step_drive(&h, r);
  r->create = NULL;
  r->ctx = NULL;
  return o;
}

cJSON *mig_runner_spec(const struct mig *m, struct job_spec *s, const char *step, int attempt)
{
  static const char *const runner_command[] = { "godwit-runner", NULL };
  s->step = step;
  s->attempt = attempt;
  s->image = m->o->runner_image;
  s->container = "runner";
  s->command = runner_command;
  s->args = cJSON_CreateArray();
  mig_arg(s->args, step);
  return s->args;
}

void mig_arg(cJSON *args, const char *value)
{
  cJSON_AddItemToArray(args, cJSON_CreateString(value ? value : ""));
}
