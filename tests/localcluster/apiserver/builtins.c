/* builtins.c: the table of built-in types, and the small per-type rules (namespaces, secrets,
 * config maps, events, service accounts). Pods and Jobs are in builtins_pods.c, DaemonSets in
 * builtins_daemonsets.c; CRDs and webhook configurations in builtins_ext.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "rbac.h"

static cJSON *ns_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  (void)w;
  cJSON *spec = cJSON_GetObjectItem(obj, "spec");
  if(!cJSON_IsObject(spec)) {
    cJSON_DeleteItemFromObject(obj, "spec");
    spec = cJSON_AddObjectToObject(obj, "spec");
  }
  if(old) { /* finalizers move only through /finalize; status only through /status */
    const cJSON *of = cJSON_GetObjectItem(cJSON_GetObjectItem(old, "spec"), "finalizers");
    cJSON_DeleteItemFromObject(spec, "finalizers");
    if(of)
      cJSON_AddItemToObject(spec, "finalizers", cJSON_Duplicate(of, 1));
  } else {
    cJSON *f = cJSON_CreateArray();
    cJSON_AddItemToArray(f, cJSON_CreateString("kubernetes"));
    ls_set_item(spec, "finalizers", f);
    cJSON *status = cJSON_CreateObject();
    cJSON_AddStringToObject(status, "phase", "Active");
    ls_set_item(obj, "status", status);
  }
  cJSON *m = ls_meta_obj(obj);
  cJSON *labels = cJSON_GetObjectItem(m, "labels");
  if(!cJSON_IsObject(labels)) {
    cJSON_DeleteItemFromObject(m, "labels");
    labels = cJSON_AddObjectToObject(m, "labels");
  }
  ls_set_str(labels, "kubernetes.io/metadata.name", ls_meta(obj, "name"));
  return NULL;
}

static cJSON *ns_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  (void)old;
  const char *name = ls_meta(obj, "name");
  if(!ls_dns_label(name))
    return rest_invalid1(w->rt, name, "FieldValueInvalid", "metadata.name",
                         "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower "
                         "case alphanumeric characters or '-', and must start and end with an "
                         "alphanumeric character", name);
  return NULL;
}

static bool key_ok(const char *k)
{
  if(!*k || strlen(k) > 253)
    return false;
  for(const char *p = k; *p; p++)
    if(!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
      return false;
  return true;
}

/* Data keys and immutability shared by Secrets and ConfigMaps. */
static cJSON *data_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old,
                            const char *const *fields)
{
  const char *name = ls_meta(obj, "name");
  cJSON *causes = cJSON_CreateArray();
  for(size_t f = 0; fields[f]; f++) {
    const cJSON *kv;
    cJSON_ArrayForEach(kv, cJSON_GetObjectItem(obj, fields[f]))
    {
      if(!key_ok(kv->string))
        rest_cause(causes, "FieldValueInvalid", fields[f],
                   "Invalid value: \"%s\": a valid config key must consist of alphanumeric "
                   "characters, '-', '_' or '.'", kv->string);
    }
  }
  if(old && cJSON_IsTrue(cJSON_GetObjectItem(old, "immutable"))) {
    for(size_t f = 0; fields[f]; f++) {
      const cJSON *a = cJSON_GetObjectItem(old, fields[f]);
      const cJSON *b = cJSON_GetObjectItem(obj, fields[f]);
      bool same = (!a && !b) || (a && b && cJSON_Compare(a, b, 1));
      if(!same)
        rest_cause(causes, "FieldValueForbidden", fields[f],
                   "Forbidden: field is immutable when `immutable` is set");
    }
    if(!cJSON_IsTrue(cJSON_GetObjectItem(obj, "immutable")))
      rest_cause(causes, "FieldValueForbidden", "immutable",
                 "Forbidden: field is immutable when `immutable` is set");
  }
  if(old && !strcmp(w->rt->kind, "Secret") &&
     strcmp(ls_str(old, "type"), ls_str(obj, "type")))
    rest_cause(causes, "FieldValueInvalid", "type", "Invalid value: \"%s\": field is immutable",
               ls_str(obj, "type"));
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid(w->rt->group, w->rt->kind, name, causes);
}

static cJSON *secret_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  (void)w;
  (void)old;
  cJSON *sd = cJSON_DetachItemFromObject(obj, "stringData");
  if(cJSON_IsObject(sd) && cJSON_GetArraySize(sd)) {
    cJSON *data = cJSON_GetObjectItem(obj, "data");
    if(!cJSON_IsObject(data)) {
      cJSON_DeleteItemFromObject(obj, "data");
      data = cJSON_AddObjectToObject(obj, "data");
    }
    const cJSON *kv;
    cJSON_ArrayForEach(kv, sd)
    {
      const char *v = cJSON_IsString(kv) ? kv->valuestring : "";
      char *b = ls_base64(v, strlen(v), false);
      ls_set_str(data, kv->string, b);
      free(b);
    }
  }
  cJSON_Delete(sd);
  if(!*ls_str(obj, "type"))
    ls_set_str(obj, "type", "Opaque");
  const cJSON *kv;
  cJSON_ArrayForEach(kv, cJSON_GetObjectItem(obj, "data"))
  {
    if(!cJSON_IsString(kv) || !ls_base64_valid(kv->valuestring))
      return ls_status(400, "BadRequest", NULL,
                       "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 "
                       "data in data[\"%s\"]", kv->string);
  }
  return NULL;
}

static cJSON *secret_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  static const char *const f[] = { "data", NULL };
  return data_validate(w, obj, old, f);
}

static cJSON *cm_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  static const char *const f[] = { "data", "binaryData", NULL };
  return data_validate(w, obj, old, f);
}

/* events.k8s.io/v1 Event <-> v1 Event (one storage, as kube-apiserver keeps them) */
static const char *const event_renames[][2] = {
  { "regarding", "involvedObject" },
  { "note", "message" },
  { "reportingController", "reportingComponent" },
  { "deprecatedSource", "source" },
  { "deprecatedFirstTimestamp", "firstTimestamp" },
  { "deprecatedLastTimestamp", "lastTimestamp" },
  { "deprecatedCount", "count" },
};

static void rename_fields(cJSON *obj, int from, int to)
{
  for(size_t i = 0; i < sizeof(event_renames) / sizeof(event_renames[0]); i++) {
    cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(obj, event_renames[i][from]);
    if(v)
      ls_set_item(obj, event_renames[i][to], v);
  }
}

static void event_to_storage(cJSON *obj)
{
  rename_fields(obj, 0, 1);
  ls_set_str(obj, "apiVersion", "v1");
}

static void event_from_storage(cJSON *obj)
{
  rename_fields(obj, 1, 0);
  ls_set_str(obj, "apiVersion", "events.k8s.io/v1");
}

static cJSON *eventv1_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  (void)old;
  cJSON *causes = cJSON_CreateArray();
  if(!*ls_str(obj, "eventTime"))
    rest_cause(causes, "FieldValueRequired", "eventTime", "Required value");
  static const char *const req[] = { "reportingController", "reportingInstance", "action",
                                     "reason" };
  for(size_t i = 0; i < 4; i++)
    if(!*ls_str(obj, req[i]))
      rest_cause(causes, "FieldValueRequired", req[i], "Required value");
  const char *type = ls_str(obj, "type");
  if(strcmp(type, "Normal") && strcmp(type, "Warning"))
    rest_cause(causes, "FieldValueInvalid", "type",
               "Invalid value: \"%s\": has invalid value: %s", type, type);
  if(strlen(ls_str(obj, "note")) > 1024)
    rest_cause(causes, "FieldValueTooLong", "note", "Too long: must have at most 1024 bytes");
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid(w->rt->group, w->rt->kind, ls_meta(obj, "name"), causes);
}

static cJSON *pvc_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  (void)w;
  if(old)
    return NULL;
  cJSON *spec = cJSON_GetObjectItem(obj, "spec");
  if(cJSON_IsObject(spec) && !cJSON_GetObjectItem(spec, "volumeMode"))
    cJSON_AddStringToObject(spec, "volumeMode", "Filesystem");
  cJSON *status = cJSON_GetObjectItem(obj, "status");
  if(!cJSON_IsObject(status)) {
    cJSON_DeleteItemFromObject(obj, "status");
    status = cJSON_AddObjectToObject(obj, "status");
  }
  if(!cJSON_GetObjectItem(status, "phase"))
    cJSON_AddStringToObject(status, "phase", "Pending");
  return NULL;
}

#define CORE(res, kind, sing, shorts, cats, nsd, flags, gen, subs, prep, val)                  \
  { "", "v1", res, kind, sing, shorts, cats, nsd, flags, gen, NULL, NULL, subs, prep, val, NULL, \
    NULL }

const struct ls_builtin ls_builtins[] = {
  CORE("namespaces", "Namespace", "namespace", "ns", NULL, false, LS_B_STATUS, LS_GEN_NONE,
       NULL, ns_prepare, ns_validate),
  CORE("configmaps", "ConfigMap", "configmap", "cm", NULL, true, 0, LS_GEN_NONE, NULL, NULL,
       cm_validate),
  CORE("secrets", "Secret", "secret", NULL, NULL, true, 0, LS_GEN_NONE, NULL, secret_prepare,
       secret_validate),
  CORE("serviceaccounts", "ServiceAccount", "serviceaccount", "sa", NULL, true, 0, LS_GEN_NONE,
       "token", NULL, NULL),
  CORE("pods", "Pod", "pod", "po", "all", true, LS_B_STATUS | LS_B_RETURN_DELETED, LS_GEN_NONE,
       "status,log,binding", bi_pod_prepare, bi_pod_validate),
  CORE("persistentvolumeclaims", "PersistentVolumeClaim", "persistentvolumeclaim", "pvc", NULL,
       true, LS_B_STATUS, LS_GEN_NONE, NULL, pvc_prepare, NULL),
  CORE("nodes", "Node", "node", "no", NULL, false, LS_B_STATUS, LS_GEN_NONE, NULL, NULL, NULL),
  CORE("events", "Event", "event", "ev", NULL, true, LS_B_CREATE_ON_UPDATE, LS_GEN_NONE, NULL,
       NULL, NULL),
  CORE("services", "Service", "service", "svc", "all", true, LS_B_STATUS, LS_GEN_NONE, NULL,
       NULL, NULL),
  CORE("resourcequotas", "ResourceQuota", "resourcequota", "quota", NULL, true, LS_B_STATUS,
       LS_GEN_NONE, NULL, NULL, NULL),
  CORE("limitranges", "LimitRange", "limitrange", "limits", NULL, true, 0, LS_GEN_NONE, NULL,
       NULL, NULL),
  { "events.k8s.io", "v1", "events", "Event", "event", "ev", NULL, true, LS_B_CREATE_ON_UPDATE,
    LS_GEN_NONE, "", "events", NULL, NULL, eventv1_validate, event_to_storage,
    event_from_storage },
  { "batch", "v1", "jobs", "Job", "job", NULL, "all", true, LS_B_STATUS | LS_B_ORPHAN_DEFAULT,
    LS_GEN_SPEC, NULL, NULL, NULL, bi_job_prepare, bi_job_validate, NULL, NULL },
  { "coordination.k8s.io", "v1", "leases", "Lease", "lease", NULL, NULL, true, 0, LS_GEN_NONE,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL },
  { "apps", "v1", "deployments", "Deployment", "deployment", "deploy", "all", true, LS_B_STATUS,
    LS_GEN_SPEC, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
  { "apps", "v1", "daemonsets", "DaemonSet", "daemonset", "ds", "all", true, LS_B_STATUS,
    LS_GEN_SPEC, NULL, NULL, NULL, bi_ds_prepare, bi_ds_validate, NULL, NULL },
  { "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "poddisruptionbudget", "pdb",
    NULL, true, LS_B_STATUS, LS_GEN_SPEC, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
  { "rbac.authorization.k8s.io", "v1", "roles", "Role", "role", NULL, NULL, true, 0, LS_GEN_NONE,
    NULL, NULL, NULL, rbac_role_prepare, NULL, NULL, NULL },
  { "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", "rolebinding", NULL, NULL,
    true, 0, LS_GEN_NONE, NULL, NULL, NULL, rbac_binding_prepare, rbac_binding_validate, NULL,
    NULL },
  { "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", "clusterrole", NULL, NULL,
    false, 0, LS_GEN_NONE, NULL, NULL, NULL, rbac_role_prepare, NULL, NULL, NULL },
  { "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
    "clusterrolebinding", NULL, NULL, false, 0, LS_GEN_NONE, NULL, NULL, NULL,
    rbac_binding_prepare, rbac_binding_validate, NULL, NULL },
  { "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    "customresourcedefinition", "crd,crds", "api-extensions", false, LS_B_STATUS, LS_GEN_SPEC,
    NULL, NULL, NULL, bi_crd_prepare, bi_crd_validate, NULL, NULL },
  { "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", "mutatingwebhookconfiguration", NULL, "api-extensions",
    false, 0, LS_GEN_NONMETA, NULL, NULL, NULL, bi_webhook_prepare, bi_webhook_validate, NULL,
    NULL },
  { "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", "validatingwebhookconfiguration", NULL, "api-extensions",
    false, 0, LS_GEN_NONMETA, NULL, NULL, NULL, bi_webhook_prepare, bi_webhook_validate, NULL,
    NULL },
  /* create-only reviews answered from the request, never stored */
  { "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview",
    "selfsubjectreview", NULL, NULL, false, 0, LS_GEN_NONE, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL },
  { "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
    "selfsubjectaccessreview", NULL, NULL, false, 0, LS_GEN_NONE, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL },
  { "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
    "subjectaccessreview", NULL, NULL, false, 0, LS_GEN_NONE, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL },
  { "authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview",
    "localsubjectaccessreview", NULL, NULL, true, 0, LS_GEN_NONE, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL },
  { "authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
    "selfsubjectrulesreview", NULL, NULL, false, 0, LS_GEN_NONE, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL },
};
const size_t ls_nbuiltins = sizeof(ls_builtins) / sizeof(ls_builtins[0]);

bool builtin_is_review(const struct ls_rtype *rt)
{
  return !strcmp(rt->group, "authentication.k8s.io") || !strcmp(rt->group, "authorization.k8s.io");
}

static void create_default_sa(const char *ns)
{
  cJSON *sa = cJSON_CreateObject();
  cJSON_AddStringToObject(sa, "apiVersion", "v1");
  cJSON_AddStringToObject(sa, "kind", "ServiceAccount");
  cJSON *m = cJSON_AddObjectToObject(sa, "metadata");
  cJSON_AddStringToObject(m, "name", "default");
  cJSON_AddStringToObject(m, "namespace", ns);
  cJSON *st = rest_internal_create("", "v1", "serviceaccounts", ns, sa);
  cJSON_Delete(st); /* AlreadyExists is fine */
}

static void create_root_ca(const char *ns)
{
  if(!ls_root_ca_pem)
    return;
  cJSON *cm = cJSON_CreateObject();
  cJSON_AddStringToObject(cm, "apiVersion", "v1");
  cJSON_AddStringToObject(cm, "kind", "ConfigMap");
  cJSON *m = cJSON_AddObjectToObject(cm, "metadata");
  cJSON_AddStringToObject(m, "name", "kube-root-ca.crt");
  cJSON_AddStringToObject(m, "namespace", ns);
  cJSON *d = cJSON_AddObjectToObject(cm, "data");
  cJSON_AddStringToObject(d, "ca.crt", ls_root_ca_pem);
  cJSON_Delete(rest_internal_create("", "v1", "configmaps", ns, cm));
}

void builtin_after_commit(const struct ls_rtype *rt, const cJSON *obj, const cJSON *old)
{
  if(rt->crd)
    return;
  const char *r = rt->store_resource;
  if(!strcmp(r, "namespaces") && obj && !old) {
    create_default_sa(ls_meta(obj, "name"));
    create_root_ca(ls_meta(obj, "name"));
  }
  else if(!strcmp(r, "customresourcedefinitions"))
    bi_crd_after(obj, old);
  else if(!strcmp(r, "clusterroles"))
    rbac_after_commit(rt);
  else if(!strcmp(r, "mutatingwebhookconfigurations") ||
          !strcmp(r, "validatingwebhookconfigurations"))
    bi_webhook_after(rt, obj, old);
}
