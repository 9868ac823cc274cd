#include "runnerpod.h"

#include <string.h>

#include "json.h"
#include "podtemplate.h"

void runnerpod_check(const cJSON *pod, struct ferrs *e)
{
  const cJSON *labels = json_get(pod, "metadata.labels");
  if(!cJSON_GetObjectItemCaseSensitive(labels, PODTEMPLATE_RUNNER_LABEL))
    return;
  const cJSON *ann = json_get(pod, "metadata.annotations");
  const char *recorded =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, PODTEMPLATE_DIGEST_ANNOTATION));
  const char *field = "metadata.annotations[" PODTEMPLATE_DIGEST_ANNOTATION "]";
  if(!recorded || !*recorded) {
    ferrs_add_policy(e, field,
                     "is required on Pods labelled " PODTEMPLATE_RUNNER_LABEL ": runner Pods "
                     "come only from the godwit controller's Jobs, which record their template "
                     "digest there");
    return;
  }
  char computed[80];
  if(podtemplate_digest(pod, computed, sizeof(computed))) {
    ferrs_add_policy(e, "spec", "cannot be digested: the Pod is not well formed");
    return;
  }
  /* where its owner declares what its Pods carry: a Migration's spec.worker, a Ptah kind's
   * spec.execution */
  const char *runner =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, PODTEMPLATE_RUNNER_LABEL));
  const char *where = runner && !strcmp(runner, "migration") ? "spec.worker.podMetadata"
                                                              : "spec.execution.podMetadata";
  if(strcmp(computed, recorded))
    ferrs_add_policy(e, "metadata",
                     "the runner Pod differs from the template the controller recorded "
                     "(recorded %.80s, now %s): another admission webhook or policy changed its "
                     "containers, labels or annotations. Declare what the Pod must carry in "
                     "%s (a mesh's opt-out label, say), or exempt Pods labelled "
                     PODTEMPLATE_RUNNER_LABEL " from that mutation", recorded, computed, where);
}
