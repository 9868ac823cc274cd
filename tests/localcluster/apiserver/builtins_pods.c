/* builtins_pods.c: Pods and Jobs: kube-apiserver's defaults, its built-in admission plugins
 * (ServiceAccount: the token volume and mounts; DefaultTolerationSeconds) and validation (pod
 * spec immutability, Job restart policy, selector and template immutability); and the pod
 * template rules every workload kind shares (builtins.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"

#define SA_MOUNT "/var/run/secrets/kubernetes.io/serviceaccount"

cJSON *bi_obj_at(cJSON *parent, const char *key)
{
  cJSON *o = cJSON_GetObjectItem(parent, key);
  if(!cJSON_IsObject(o)) {
    cJSON_DeleteItemFromObject(parent, key);
    o = cJSON_AddObjectToObject(parent, key);
  }
  return o;
}

void bi_dflt(cJSON *o, const char *key, cJSON *v)
{
  if(!cJSON_GetObjectItem(o, key))
    cJSON_AddItemToObject(o, key, v);
  else
    cJSON_Delete(v);
}

static const char *pull_policy(const char *image)
{
  const char *slash = strrchr(image, '/');
  const char *last = slash ? slash + 1 : image;
  if(strchr(image, '@'))
    return "IfNotPresent";
  const char *colon = strrchr(last, ':');
  if(!colon || !strcmp(colon + 1, "latest"))
    return "Always";
  return "IfNotPresent";
}

static void container_defaults(cJSON *cs)
{
  cJSON *c;
  cJSON_ArrayForEach(c, cs)
  {
    if(!cJSON_IsObject(c))
      continue;
    bi_dflt(c, "terminationMessagePath", cJSON_CreateString("/dev/termination-log"));
    bi_dflt(c, "terminationMessagePolicy", cJSON_CreateString("File"));
    bi_dflt(c, "imagePullPolicy", cJSON_CreateString(pull_policy(ls_str(c, "image"))));
    bi_dflt(c, "resources", cJSON_CreateObject());
    cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "ports"))
    {
      if(cJSON_IsObject(p))
        bi_dflt(p, "protocol", cJSON_CreateString("TCP"));
    }
  }
}

/* SetDefaults_PodSpec (the parts a Pod or a pod template gets) */
void bi_podspec_defaults(cJSON *spec, bool is_template)
{
  if(!is_template)
    bi_dflt(spec, "restartPolicy", cJSON_CreateString("Always"));
  bi_dflt(spec, "dnsPolicy", cJSON_CreateString("ClusterFirst"));
  bi_dflt(spec, "terminationGracePeriodSeconds", cJSON_CreateNumber(30));
  bi_dflt(spec, "securityContext", cJSON_CreateObject());
  bi_dflt(spec, "schedulerName", cJSON_CreateString("default-scheduler"));
  container_defaults(cJSON_GetObjectItem(spec, "containers"));
  container_defaults(cJSON_GetObjectItem(spec, "initContainers"));
}

static bool has_mount(const cJSON *c)
{
  const cJSON *m;
  cJSON_ArrayForEach(m, cJSON_GetObjectItem(c, "volumeMounts"))
  {
    if(!strcmp(ls_str(m, "mountPath"), SA_MOUNT))
      return true;
  }
  return false;
}

static void add_token_volume(cJSON *spec)
{
  char name[64], sfx[8];
  ls_random_suffix(sfx, 5);
  snprintf(name, sizeof(name), "kube-api-access-%s", sfx);
  static const char *vol =
    "{\"projected\":{\"defaultMode\":420,\"sources\":["
    "{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
    "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\","
    "\"path\":\"ca.crt\"}]}},"
    "{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.namespace\"}}]}}]}}";
  cJSON *v = cJSON_Parse(vol);
  cJSON_AddItemToObjectCS(v, "name", cJSON_CreateString(name));
  cJSON *vols = cJSON_GetObjectItem(spec, "volumes");
  if(!cJSON_IsArray(vols)) {
    cJSON_DeleteItemFromObject(spec, "volumes");
    vols = cJSON_AddArrayToObject(spec, "volumes");
  }
  cJSON_AddItemToArray(vols, v);
  static const char *const lists[] = { "initContainers", "containers" };
  for(size_t i = 0; i < 2; i++) {
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(spec, lists[i]))
    {
      if(!cJSON_IsObject(c) || has_mount(c))
        continue;
      cJSON *mounts = cJSON_GetObjectItem(c, "volumeMounts");
      if(!cJSON_IsArray(mounts)) {
        cJSON_DeleteItemFromObject(c, "volumeMounts");
        mounts = cJSON_AddArrayToObject(c, "volumeMounts");
      }
      cJSON *m = cJSON_CreateObject();
      cJSON_AddStringToObject(m, "name", name);
      cJSON_AddBoolToObject(m, "readOnly", 1);
      cJSON_AddStringToObject(m, "mountPath", SA_MOUNT);
      cJSON_AddItemToArray(mounts, m);
    }
  }
}

static void default_tolerations(cJSON *spec)
{
  static const char *const keys[] = { "node.kubernetes.io/not-ready",
                                      "node.kubernetes.io/unreachable" };
  cJSON *tol = cJSON_GetObjectItem(spec, "tolerations");
  if(!cJSON_IsArray(tol)) {
    cJSON_DeleteItemFromObject(spec, "tolerations");
    tol = cJSON_AddArrayToObject(spec, "tolerations");
  }
  for(size_t i = 0; i < 2; i++) {
    bool have = false;
    const cJSON *t;
    cJSON_ArrayForEach(t, tol)
    {
      const char *k = ls_str(t, "key"), *e = ls_str(t, "effect");
      if(!strcmp(k, keys[i]) && (!*e || !strcmp(e, "NoExecute")))
        have = true;
    }
    if(have)
      continue;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "key", keys[i]);
    cJSON_AddStringToObject(x, "operator", "Exists");
    cJSON_AddStringToObject(x, "effect", "NoExecute");
    cJSON_AddNumberToObject(x, "tolerationSeconds", 300);
    cJSON_AddItemToArray(tol, x);
  }
}

cJSON *bi_pod_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(old || strcmp(w->sub, ""))
    return NULL;
  cJSON *spec = bi_obj_at(obj, "spec");
  bi_podspec_defaults(spec, false);
  bi_dflt(spec, "enableServiceLinks", cJSON_CreateBool(1));
  bi_dflt(spec, "preemptionPolicy", cJSON_CreateString("PreemptLowerPriority"));
  bi_dflt(spec, "priority", cJSON_CreateNumber(0));
  const char *sa = ls_str(spec, "serviceAccountName");
  if(!*sa)
    sa = ls_str(spec, "serviceAccount");
  if(!*sa)
    sa = "default";
  char sabuf[254];
  snprintf(sabuf, sizeof(sabuf), "%s", sa);
  ls_set_str(spec, "serviceAccountName", sabuf);
  ls_set_str(spec, "serviceAccount", sabuf);
  /* the ServiceAccount admission plugin */
  store_lock();
  const struct ls_entry *e = store_get("", "serviceaccounts", w->ns, sabuf);
  bool automount = true;
  if(e) {
    const cJSON *a = cJSON_GetObjectItem(e->obj->json, "automountServiceAccountToken");
    if(cJSON_IsFalse(a))
      automount = false;
  }
  store_unlock();
  if(!e)
    return ls_status(403, "Forbidden", NULL,
                     "pods \"%s\" is forbidden: error looking up service account %s/%s: "
                     "serviceaccount \"%s\" not found", w->name, w->ns, sabuf, sabuf);
  const cJSON *pa = cJSON_GetObjectItem(spec, "automountServiceAccountToken");
  if(pa)
    automount = cJSON_IsTrue(pa);
  if(automount)
    add_token_volume(spec);
  default_tolerations(spec);
  cJSON *status = bi_obj_at(obj, "status");
  bi_dflt(status, "phase", cJSON_CreateString("Pending"));
  bi_dflt(status, "qosClass", cJSON_CreateString("BestEffort"));
  return NULL;
}

void bi_container_checks(cJSON *causes, const cJSON *spec, const char *prefix)
{
  const cJSON *cs = cJSON_GetObjectItem(spec, "containers");
  char f[160];
  if(!cJSON_GetArraySize(cs)) {
    snprintf(f, sizeof(f), "%s.containers", prefix);
    rest_cause(causes, "FieldValueRequired", f, "Required value");
  }
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cs)
  {
    const char *name = ls_str(c, "name");
    if(!ls_dns_label(name)) {
      snprintf(f, sizeof(f), "%s.containers[%d].name", prefix, i);
      rest_cause(causes, *name ? "FieldValueInvalid" : "FieldValueRequired", f,
                 *name ? "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of "
                         "lower case alphanumeric characters or '-'"
                       : "Required value%s", name);
    }
    if(!*ls_str(c, "image")) {
      snprintf(f, sizeof(f), "%s.containers[%d].image", prefix, i);
      rest_cause(causes, "FieldValueRequired", f, "Required value");
    }
    i++;
  }
}

cJSON *bi_finish(struct ls_wctx *w, const cJSON *obj, cJSON *causes)
{
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid(w->rt->group, w->rt->kind, ls_meta(obj, "name"), causes);
}

/* The spec minus what a pod update may change. */
static cJSON *mutable_masked(const cJSON *spec)
{
  cJSON *s = cJSON_Duplicate(spec, 1);
  static const char *const lists[] = { "containers", "initContainers" };
  for(size_t i = 0; i < 2; i++) {
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(s, lists[i]))
      cJSON_DeleteItemFromObject(c, "image");
  }
  cJSON_DeleteItemFromObject(s, "activeDeadlineSeconds");
  cJSON_DeleteItemFromObject(s, "tolerations");
  cJSON_DeleteItemFromObject(s, "terminationGracePeriodSeconds");
  return s;
}

cJSON *bi_pod_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  cJSON *causes = cJSON_CreateArray();
  const cJSON *spec = cJSON_GetObjectItem(obj, "spec");
  bi_container_checks(causes, spec, "spec");
  const char *rp = ls_str(spec, "restartPolicy");
  if(strcmp(rp, "Always") && strcmp(rp, "OnFailure") && strcmp(rp, "Never"))
    rest_cause(causes, "FieldValueNotSupported", "spec.restartPolicy",
               "Unsupported value: \"%s\": supported values: \"Always\", \"OnFailure\", "
               "\"Never\"", rp);
  if(old && !strcmp(w->sub, "")) {
    cJSON *a = mutable_masked(cJSON_GetObjectItem(old, "spec"));
    cJSON *b = mutable_masked(spec);
    if(!cJSON_Compare(a, b, 1))
      rest_cause(causes, "FieldValueForbidden", "spec",
                 "Forbidden: pod updates may not change fields other than "
                 "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                 "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
                 "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
                 "it was previously negative)");
    cJSON_Delete(a);
    cJSON_Delete(b);
  }
  return bi_finish(w, obj, causes);
}

static void add_label(cJSON *labels, const char *k, const char *v)
{
  if(!cJSON_GetObjectItem(labels, k))
    cJSON_AddStringToObject(labels, k, v);
}

cJSON *bi_job_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(old || strcmp(w->sub, ""))
    return NULL;
  cJSON *spec = bi_obj_at(obj, "spec");
  if(!cJSON_GetObjectItem(spec, "completions") && !cJSON_GetObjectItem(spec, "parallelism"))
    cJSON_AddNumberToObject(spec, "completions", 1);
  bi_dflt(spec, "parallelism", cJSON_CreateNumber(1));
  bi_dflt(spec, "backoffLimit", cJSON_CreateNumber(6));
  bi_dflt(spec, "completionMode", cJSON_CreateString("NonIndexed"));
  bi_dflt(spec, "suspend", cJSON_CreateBool(0));
  bi_dflt(spec, "podReplacementPolicy", cJSON_CreateString("TerminatingOrFailed"));
  cJSON *tmpl = bi_obj_at(spec, "template");
  cJSON *tspec = bi_obj_at(tmpl, "spec");
  bi_podspec_defaults(tspec, true);
  const char *uid = ls_meta(obj, "uid");
  const char *name = ls_meta(obj, "name");
  if(!cJSON_IsTrue(cJSON_GetObjectItem(spec, "manualSelector"))) {
    cJSON *tmeta = bi_obj_at(tmpl, "metadata");
    cJSON *labels = bi_obj_at(tmeta, "labels");
    add_label(labels, "batch.kubernetes.io/controller-uid", uid);
    add_label(labels, "batch.kubernetes.io/job-name", name);
    add_label(labels, "controller-uid", uid);
    add_label(labels, "job-name", name);
    if(!cJSON_GetObjectItem(spec, "selector")) {
      cJSON *sel = cJSON_AddObjectToObject(spec, "selector");
      cJSON *ml = cJSON_AddObjectToObject(sel, "matchLabels");
      cJSON_AddStringToObject(ml, "batch.kubernetes.io/controller-uid", uid);
    }
  }
  cJSON *m = ls_meta_obj(obj);
  const cJSON *jl = cJSON_GetObjectItem(m, "labels");
  const cJSON *tl = cJSON_GetObjectItem(cJSON_GetObjectItem(tmpl, "metadata"), "labels");
  if(!cJSON_GetArraySize(jl) && tl) {
    cJSON_DeleteItemFromObject(m, "labels");
    cJSON_AddItemToObject(m, "labels", cJSON_Duplicate(tl, 1));
  }
  return NULL;
}

void bi_immutable(cJSON *causes, const cJSON *a, const cJSON *b, const char *field)
{
  bool same = (!a && !b) || (a && b && cJSON_Compare(a, b, 1));
  if(!same) {
    char *v = ls_print(b ? b : a);
    rest_cause(causes, "FieldValueInvalid", field, "Invalid value: %.200s: field is immutable", v);
    free(v);
  }
}

cJSON *bi_job_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  cJSON *causes = cJSON_CreateArray();
  const cJSON *spec = cJSON_GetObjectItem(obj, "spec");
  const cJSON *tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "template"), "spec");
  bi_container_checks(causes, tspec, "spec.template.spec");
  const char *rp = ls_str(tspec, "restartPolicy");
  if(strcmp(rp, "OnFailure") && strcmp(rp, "Never"))
    rest_cause(causes, *rp ? "FieldValueNotSupported" : "FieldValueRequired",
               "spec.template.spec.restartPolicy",
               *rp ? "Unsupported value: \"%s\": supported values: \"OnFailure\", \"Never\""
                   : "Required value: valid values: \"OnFailure\", \"Never\"%s", rp);
  static const char *const nonneg[] = { "parallelism", "completions", "backoffLimit",
                                        "activeDeadlineSeconds" };
  for(size_t i = 0; i < 4; i++) {
    const cJSON *v = cJSON_GetObjectItem(spec, nonneg[i]);
    char f[64];
    snprintf(f, sizeof(f), "spec.%s", nonneg[i]);
    if(cJSON_IsNumber(v) && v->valuedouble < (i == 3 ? 1 : 0))
      rest_cause(causes, "FieldValueInvalid", f,
                 "Invalid value: %lld: must be greater than or equal to %d",
                 (long long)v->valuedouble, i == 3 ? 1 : 0);
  }
  if(old && !strcmp(w->sub, "")) {
    const cJSON *os = cJSON_GetObjectItem(old, "spec");
    bi_immutable(causes, cJSON_GetObjectItem(os, "selector"), cJSON_GetObjectItem(spec, "selector"),
              "spec.selector");
    bi_immutable(causes, cJSON_GetObjectItem(os, "template"), cJSON_GetObjectItem(spec, "template"),
              "spec.template");
    bi_immutable(causes, cJSON_GetObjectItem(os, "completions"),
              cJSON_GetObjectItem(spec, "completions"), "spec.completions");
  }
  return bi_finish(w, obj, causes);
}
