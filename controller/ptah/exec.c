/* exec.c: what both Ptah kinds share about executing an operation (op.h): the runner image,
 * service account and execution binding from spec.execution, the default runner identity, the
 * operation's Job as seen now, and the API server's refusal of its Pod. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "op.h"
#include "ptah.h"

const char *op_service_account(const cJSON *obj)
{
  const char *sa = json_get_str(obj, "spec.execution.serviceAccountName");
  return sa && *sa ? sa : OP_RUNNER_SA;
}

const char *op_image(const cJSON *obj, const struct ptah_opts *o)
{
  const char *img = json_get_str(obj, "spec.execution.runnerImage");
  return img && *img ? img : o->runner_image;
}

void op_binding(const cJSON *obj, const struct ptah_opts *o, char *buf, size_t len)
{
  snprintf(buf, len, "image=%s protocol=%s state=%s", op_image(obj, o),
           o->protocol ? o->protocol : PTAH_PROTOCOL, PTAH_STATE_VERSION);
}

/* Creates obj; AlreadyExists is fine. */
static gw_rc ensure(struct rec_ctx *c, const struct kube_gvr *gvr, cJSON *obj)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(c->kube, gvr, c->ns, obj, false, NULL, &st);
  if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists"))
    rc = GW_OK;
  if(rc)
    log_kv(LOG_WARN, "cannot create the runner identity", "key", c->key, "resource",
           gvr->resource, "name", OP_RUNNER_SA, "error", gw_strerror(rc), "reason", st.reason,
           LOG_END);
  kube_status_release(&st);
  cJSON_Delete(obj);
  return rc;
}

static cJSON *object(const char *api_version, const char *kind, const char *ns)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", api_version);
  cJSON_AddStringToObject(o, "kind", kind);
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", OP_RUNNER_SA);
  cJSON_AddStringToObject(md, "namespace", ns);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "app.kubernetes.io/managed-by",
                          "godwit");
  return o;
}

gw_rc op_runner_identity(struct rec_ctx *c, const cJSON *obj)
{
  static const struct kube_gvr rolebindings = { "rbac.authorization.k8s.io", "v1",
                                                "rolebindings", true };
  if(json_get_str(obj, "spec.execution.serviceAccountName"))
    return GW_OK;
  gw_rc rc = ensure(c, &KUBE_SERVICEACCOUNTS, object("v1", "ServiceAccount", c->ns));
  if(rc)
    return rc;
  cJSON *rb = object("rbac.authorization.k8s.io/v1", "RoleBinding", c->ns);
  cJSON *ref = cJSON_AddObjectToObject(rb, "roleRef");
  cJSON_AddStringToObject(ref, "apiGroup", "rbac.authorization.k8s.io");
  cJSON_AddStringToObject(ref, "kind", "ClusterRole");
  cJSON_AddStringToObject(ref, "name", OP_RUNNER_SA);
  cJSON *subj = cJSON_CreateObject();
  cJSON_AddStringToObject(subj, "kind", "ServiceAccount");
  cJSON_AddStringToObject(subj, "name", OP_RUNNER_SA);
  cJSON_AddStringToObject(subj, "namespace", c->ns);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(rb, "subjects"), subj);
  return ensure(c, &rolebindings, rb);
}

gw_rc op_job_view(const struct rj_owner *owner, const char *job, struct job_view *v)
{
  memset(v, 0, sizeof(*v));
  gw_rc rc = rj_get(owner, job, v);
  if(!rc && v->state == JOB_ABSENT) {
    /* the cache may not have a Job created a moment ago: absent is decided by the API */
    struct rj_owner api = *owner;
    api.jobs = api.pods = NULL;
    job_view_release(v);
    rc = rj_get(&api, job, v);
  }
  return rc;
}

void op_pod_refusal(struct rec_ctx *c, const char *job, char *buf, size_t len)
{
  rj_job_refusal(c->kube, mgr_cache(c->mgr, &KUBE_EVENTS), c->ns, job, buf, len);
}
