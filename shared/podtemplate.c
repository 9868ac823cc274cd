#include "podtemplate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "json.h"

static bool kube_added_label(const char *k)
{
  return !strcmp(k, "controller-uid") || !strcmp(k, "job-name") ||
         !strncmp(k, "batch.kubernetes.io/", 20);
}

/* Annotations admission adds to record a decision, not to change what runs: the Job
 * controller's, and OpenShift's SCC admission, which names the SecurityContextConstraints that
 * admitted the Pod (docs/operations/runner-pods.md). */
static bool kube_added_annotation(const char *k)
{
  return !strcmp(k, PODTEMPLATE_DIGEST_ANNOTATION) || !strncmp(k, "batch.kubernetes.io/", 20) ||
         !strcmp(k, "openshift.io/scc");
}

static cJSON *filtered_map(const cJSON *m, bool (*drop)(const char *))
{
  cJSON *out = cJSON_CreateObject();
  const cJSON *c;
  cJSON_ArrayForEach(c, m)
  {
    if(cJSON_IsString(c) && !drop(c->string))
      cJSON_AddStringToObject(out, c->string, c->valuestring);
  }
  return out;
}

/* env entries with the apiserver's fieldRef default removed. */
static cJSON *env_of(const cJSON *env)
{
  cJSON *out = cJSON_CreateArray();
  const cJSON *e;
  cJSON_ArrayForEach(e, env)
  {
    cJSON *d = cJSON_CreateObject();
    const cJSON *v;
    if((v = cJSON_GetObjectItemCaseSensitive(e, "name")))
      cJSON_AddItemToObject(d, "name", cJSON_Duplicate(v, 1));
    if((v = cJSON_GetObjectItemCaseSensitive(e, "value")) && !(cJSON_IsString(v) && !*v->valuestring))
      cJSON_AddItemToObject(d, "value", cJSON_Duplicate(v, 1));
    if((v = cJSON_GetObjectItemCaseSensitive(e, "valueFrom"))) {
      cJSON *vf = cJSON_Duplicate(v, 1);
      cJSON *fr = cJSON_GetObjectItemCaseSensitive(vf, "fieldRef");
      const char *av = json_get_str(fr, "apiVersion");
      if(av && !strcmp(av, "v1"))
        cJSON_DeleteItemFromObjectCaseSensitive(fr, "apiVersion");
      cJSON_AddItemToObject(d, "valueFrom", vf);
    }
    cJSON_AddItemToArray(out, d);
  }
  return out;
}

static cJSON *containers_of(const cJSON *list)
{
  static const char *const keep[] = { "name", "image", "command", "args", "securityContext",
                                      NULL };
  cJSON *out = cJSON_CreateArray();
  const cJSON *c;
  cJSON_ArrayForEach(c, list)
  {
    cJSON *d = cJSON_CreateObject();
    for(const char *const *k = keep; *k; k++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, *k);
      if(v && !cJSON_IsNull(v))
        cJSON_AddItemToObject(d, *k, cJSON_Duplicate(v, 1));
    }
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
    if(cJSON_GetArraySize(env) > 0)
      cJSON_AddItemToObject(d, "env", env_of(env));
    cJSON_AddItemToArray(out, d);
  }
  return out;
}

gw_rc podtemplate_digest(const cJSON *pod, char *out, size_t outlen)
{
  if(outlen < 72 || !cJSON_IsObject(pod))
    return GW_EINVAL;
  cJSON *canon = cJSON_CreateObject();
  if(!canon)
    return GW_ENOMEM;
  cJSON_AddItemToObject(canon, "labels",
                        filtered_map(json_get(pod, "metadata.labels"), kube_added_label));
  cJSON_AddItemToObject(canon, "annotations", filtered_map(json_get(pod, "metadata.annotations"),
                                                           kube_added_annotation));
  cJSON_AddItemToObject(canon, "containers", containers_of(json_get(pod, "spec.containers")));
  cJSON_AddItemToObject(canon, "initContainers",
                        containers_of(json_get(pod, "spec.initContainers")));
  char *text = json_print_canonical(canon);
  cJSON_Delete(canon);
  if(!text)
    return GW_ENOMEM;
  char d[DIGEST_SHA256_LEN];
  gw_rc rc = digest_sha256(text, strlen(text), d);
  cJSON_free(text);
  if(!rc)
    snprintf(out, outlen, "%s", d);
  return rc;
}
