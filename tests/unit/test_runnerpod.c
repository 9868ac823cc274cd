/* The runner-Pod guard and the template digest it relies on. */
#include <criterion/criterion.h>
#include <string.h>

#include "apitest.h"
#include "json.h"
#include "podtemplate.h"
#include "runnerpod.h"

/* A Job's pod template as the controller renders it. */
static const char *TEMPLATE =
  "{\"metadata\":{\"labels\":{\"godwit.dev/runner\":\"ptah\",\"team\":\"payments\"},"
  "\"annotations\":{\"example.com/owner\":\"db\"}},"
  "\"spec\":{\"serviceAccountName\":\"godwit-runner\",\"restartPolicy\":\"Never\","
  "\"containers\":[{\"name\":\"runner\",\"image\":\"ghcr.io/godwit-dev/godwit:1.0\","
  "\"command\":[\"godwit-runner\"],\"args\":[\"plan\"],"
  "\"env\":[{\"name\":\"PGURI\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\",\"key\":\"uri\"}}},"
  "{\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
  "\"securityContext\":{\"runAsNonRoot\":true,\"readOnlyRootFilesystem\":true}}]}}";

/* The same Pod after kube-apiserver and the Job controller: labels, defaults, token volume. */
static char *as_created(const char *digest)
{
  cJSON *p = t_json(TEMPLATE);
  cJSON *labels = json_get_mut(p, "metadata.labels");
  cJSON_AddStringToObject(labels, "job-name", "orders-plan-1");
  cJSON_AddStringToObject(labels, "controller-uid", "3e1c");
  cJSON_AddStringToObject(labels, "batch.kubernetes.io/job-name", "orders-plan-1");
  cJSON *ann = json_get_mut(p, "metadata.annotations");
  cJSON_AddStringToObject(ann, PODTEMPLATE_DIGEST_ANNOTATION, digest);
  cJSON_AddStringToObject(ann, "batch.kubernetes.io/job-tracking", "");
  cJSON *c = cJSON_GetArrayItem(json_get_mut(p, "spec.containers"), 0);
  cJSON_AddStringToObject(c, "imagePullPolicy", "IfNotPresent");
  cJSON_AddStringToObject(c, "terminationMessagePath", "/dev/termination-log");
  cJSON_AddItemToObject(c, "volumeMounts",
                        t_json("[{\"name\":\"kube-api-access-x\",\"readOnly\":true,"
                               "\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}]"));
  cJSON *fr = json_get_mut(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "env"), 1), "valueFrom.fieldRef");
  cJSON_AddStringToObject(fr, "apiVersion", "v1");
  cJSON *spec = json_get_mut(p, "spec");
  cJSON_AddItemToObject(spec, "tolerations",
                        t_json("[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
                               "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]"));
  cJSON_AddItemToObject(spec, "volumes", t_json("[{\"name\":\"kube-api-access-x\",\"projected\":{}}]"));
  char *s = cJSON_PrintUnformatted(p);
  cJSON_Delete(p);
  return s;
}

static void digest_of_template(char *out)
{
  cJSON *t = t_json(TEMPLATE);
  cr_assert_eq(podtemplate_digest(t, out, 80), GW_OK);
  cJSON_Delete(t);
}

static size_t check(const char *pod_json, struct ferrs *e)
{
  cJSON *pod = t_json(pod_json);
  ferrs_init(e);
  runnerpod_check(pod, e);
  cJSON_Delete(pod);
  return e->n;
}

Test(runnerpod, what_kubernetes_adds_is_tolerated)
{
  char d[80];
  digest_of_template(d);
  cr_assert_eq(strncmp(d, "sha256:", 7), 0);
  cr_assert_eq(strlen(d), 71);
  char *pod = as_created(d);
  struct ferrs e;
  cr_assert_eq(check(pod, &e), 0, "%s", e.n ? e.v[0].msg : "");
  ferrs_release(&e);
  cJSON_free(pod);
}

/* OpenShift's SCC admission records the constraints that admitted the Pod in an annotation: a
 * record, not a change of what runs, so it passes (what the SCC would change in the
 * securityContext is refused like any mutation). */
Test(runnerpod, the_openshift_scc_annotation_is_tolerated)
{
  char digest[80];
  digest_of_template(digest);
  char *pod = as_created(digest);
  cJSON *p = t_json(pod);
  cJSON_free(pod);
  cJSON_AddStringToObject(json_get_mut(p, "metadata.annotations"), "openshift.io/scc",
                          "nonroot-v2");
  char *with = cJSON_PrintUnformatted(p);
  struct ferrs e;
  cr_assert_eq(check(with, &e), 0, "%s", e.n ? e.v[0].msg : "");
  ferrs_release(&e);
  /* an SCC that rewrites the container's securityContext changes what runs: refused */
  cJSON *sc = json_get_mut(cJSON_GetArrayItem(json_get_mut(p, "spec.containers"), 0),
                           "securityContext");
  cJSON_AddNumberToObject(sc, "runAsUser", 1000680000);
  char *mutated = cJSON_PrintUnformatted(p);
  cr_assert_eq(check(mutated, &e), 1);
  ferrs_release(&e);
  cJSON_free(with);
  cJSON_free(mutated);
  cJSON_Delete(p);
}

Test(runnerpod, a_foreign_mutation_is_refused_as_policy)
{
  char d[80];
  digest_of_template(d);
  const char *mutations[][2] = {
    { "spec.containers.0.image", "\"ghcr.io/evil/godwit:1.0\"" },
    { "metadata.labels.sidecar.istio.io/inject", "\"true\"" },
    { "spec.containers.0.args", "[\"apply\"]" },
    { "spec.containers.0.securityContext", "{\"privileged\":true}" },
  };
  for(size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
    char *pod = as_created(d);
    cJSON *p = t_json(pod);
    cJSON *c = cJSON_GetArrayItem(json_get_mut(p, "spec.containers"), 0);
    cJSON *labels = json_get_mut(p, "metadata.labels");
    if(i == 0)
      cJSON_ReplaceItemInObject(c, "image", t_json(mutations[i][1]));
    else if(i == 1)
      cJSON_AddStringToObject(labels, "sidecar.istio.io/inject", "true");
    else if(i == 2)
      cJSON_ReplaceItemInObject(c, "args", t_json(mutations[i][1]));
    else
      cJSON_ReplaceItemInObject(c, "securityContext", t_json(mutations[i][1]));
    char *s = cJSON_PrintUnformatted(p);
    struct ferrs e;
    cr_assert_eq(check(s, &e), 1, "mutation %s was not caught", mutations[i][0]);
    cr_assert(e.v[0].policy, "a guard refusal is a policy refusal (403)");
    cr_assert_str_eq(e.v[0].field, "metadata");
    cr_assert(strstr(e.v[0].msg, "spec.execution.podMetadata"), "%s", e.v[0].msg);
    ferrs_release(&e);
    cJSON_free(s);
    cJSON_Delete(p);
    cJSON_free(pod);
  }
}

Test(runnerpod, an_added_sidecar_is_refused)
{
  char d[80];
  digest_of_template(d);
  char *pod = as_created(d);
  cJSON *p = t_json(pod);
  cJSON_AddItemToArray(json_get_mut(p, "spec.containers"),
                       t_json("{\"name\":\"proxy\",\"image\":\"envoy:1\"}"));
  char *s = cJSON_PrintUnformatted(p);
  struct ferrs e;
  cr_assert_eq(check(s, &e), 1);
  ferrs_release(&e);
  cJSON_free(s);
  cJSON_Delete(p);
  cJSON_free(pod);
}

Test(runnerpod, missing_digest_is_refused_and_other_pods_pass)
{
  struct ferrs e;
  cr_assert_eq(check(TEMPLATE, &e), 1);
  cr_assert_str_eq(e.v[0].field, "metadata.annotations[godwit.dev/template-digest]");
  ferrs_release(&e);
  cr_assert_eq(check("{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[]}}", &e),
               0, "a Pod without the runner label is not ours to judge");
  ferrs_release(&e);
}
