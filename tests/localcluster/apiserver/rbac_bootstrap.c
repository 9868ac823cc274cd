/* rbac_bootstrap.c: kube-apiserver's bootstrap RBAC policy as far as the local cluster's users
 * meet it (plugin/pkg/auth/authorizer/rbac/bootstrappolicy, its testdata/cluster-roles.yaml and
 * cluster-role-bindings.yaml, Kubernetes 1.32): cluster-admin for system:masters; admin, edit and
 * view, aggregated from the system:aggregate-to-* parts and from every ClusterRole labelled
 * for them (godwit's manifests/rbac-users.yaml); what every authenticated user may do
 * (system:basic-user, system:discovery, system:public-info-viewer). Rules on resources this
 * server does not serve are kept: they are what a real cluster grants. */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rbac.h"
#include "rest.h"
#include "yamldoc.h"

#define META(name, labels)                                                                      \
  "metadata:\n  name: " name "\n  labels:\n    kubernetes.io/bootstrapping: rbac-defaults\n"     \
  labels "  annotations:\n    rbac.authorization.kubernetes.io/autoupdate: \"true\"\n"
#define AGG(to) "    rbac.authorization.k8s.io/aggregate-to-" to ": \"true\"\n"
#define RW "[create, delete, deletecollection, patch, update]"
#define RO "[get, list, watch]"

static const char bootstrap_yaml[] =
  "kind: ClusterRole\n" META("cluster-admin", "")
  "rules:\n"
  "- {apiGroups: ['*'], resources: ['*'], verbs: ['*']}\n"
  "- {nonResourceURLs: ['*'], verbs: ['*']}\n"
  "---\n"
  "kind: ClusterRole\n" META("admin", "")
  "aggregationRule:\n  clusterRoleSelectors:\n"
  "  - matchLabels: {rbac.authorization.k8s.io/aggregate-to-admin: \"true\"}\n"
  "rules: []\n"
  "---\n"
  "kind: ClusterRole\n" META("edit", AGG("admin"))
  "aggregationRule:\n  clusterRoleSelectors:\n"
  "  - matchLabels: {rbac.authorization.k8s.io/aggregate-to-edit: \"true\"}\n"
  "rules: []\n"
  "---\n"
  "kind: ClusterRole\n" META("view", AGG("edit"))
  "aggregationRule:\n  clusterRoleSelectors:\n"
  "  - matchLabels: {rbac.authorization.k8s.io/aggregate-to-view: \"true\"}\n"
  "rules: []\n"
  "---\n"
  "kind: ClusterRole\n" META("system:aggregate-to-admin", AGG("admin"))
  "rules:\n"
  "- {apiGroups: [authorization.k8s.io], resources: [localsubjectaccessreviews], verbs: [create]}\n"
  "- {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings, roles],\n"
  "   verbs: [create, delete, deletecollection, get, list, patch, update, watch]}\n"
  "---\n"
  "kind: ClusterRole\n" META("system:aggregate-to-edit", AGG("edit"))
  "rules:\n"
  "- {apiGroups: [''], resources: [pods/attach, pods/exec, pods/portforward, pods/proxy, secrets,\n"
  "   services/proxy], verbs: " RO "}\n"
  "- {apiGroups: [''], resources: [serviceaccounts], verbs: [impersonate]}\n"
  "- {apiGroups: [''], resources: [pods, pods/attach, pods/exec, pods/portforward, pods/proxy],\n"
  "   verbs: " RW "}\n"
  "- {apiGroups: [''], resources: [pods/eviction], verbs: [create]}\n"
  "- {apiGroups: [''], resources: [configmaps, events, persistentvolumeclaims,\n"
  "   replicationcontrollers, replicationcontrollers/scale, secrets, serviceaccounts, services,\n"
  "   services/proxy], verbs: " RW "}\n"
  "- {apiGroups: [''], resources: [serviceaccounts/token], verbs: [create]}\n"
  "- {apiGroups: [apps], resources: [daemonsets, deployments, deployments/rollback,\n"
  "   deployments/scale, replicasets, replicasets/scale, statefulsets, statefulsets/scale],\n"
  "   verbs: " RW "}\n"
  "- {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: " RW "}\n"
  "- {apiGroups: [batch], resources: [cronjobs, jobs], verbs: " RW "}\n"
  "- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: " RW "}\n"
  "- {apiGroups: [networking.k8s.io], resources: [ingresses, networkpolicies], verbs: " RW "}\n"
  "- {apiGroups: [coordination.k8s.io], resources: [leases],\n"
  "   verbs: [create, delete, deletecollection, get, list, patch, update, watch]}\n"
  "---\n"
  "kind: ClusterRole\n" META("system:aggregate-to-view", AGG("view"))
  "rules:\n"
  "- {apiGroups: [''], resources: [configmaps, endpoints, persistentvolumeclaims,\n"
  "   persistentvolumeclaims/status, pods, replicationcontrollers, replicationcontrollers/scale,\n"
  "   serviceaccounts, services, services/status], verbs: " RO "}\n"
  "- {apiGroups: [''], resources: [bindings, events, limitranges, namespaces/status, pods/log,\n"
  "   pods/status, replicationcontrollers/status, resourcequotas, resourcequotas/status],\n"
  "   verbs: " RO "}\n"
  "- {apiGroups: [''], resources: [namespaces], verbs: " RO "}\n"
  "- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: " RO "}\n"
  "- {apiGroups: [apps], resources: [controllerrevisions, daemonsets, daemonsets/status,\n"
  "   deployments, deployments/scale, deployments/status, replicasets, replicasets/scale,\n"
  "   replicasets/status, statefulsets, statefulsets/scale, statefulsets/status], verbs: " RO "}\n"
  "- {apiGroups: [autoscaling], resources: [horizontalpodautoscalers,\n"
  "   horizontalpodautoscalers/status], verbs: " RO "}\n"
  "- {apiGroups: [batch], resources: [cronjobs, cronjobs/status, jobs, jobs/status],\n"
  "   verbs: " RO "}\n"
  "- {apiGroups: [policy], resources: [poddisruptionbudgets, poddisruptionbudgets/status],\n"
  "   verbs: " RO "}\n"
  "- {apiGroups: [networking.k8s.io], resources: [ingresses, ingresses/status, networkpolicies],\n"
  "   verbs: " RO "}\n"
  "---\n"
  "kind: ClusterRole\n" META("system:basic-user", "")
  "rules:\n"
  "- {apiGroups: [authorization.k8s.io], resources: [selfsubjectaccessreviews,\n"
  "   selfsubjectrulesreviews], verbs: [create]}\n"
  "- {apiGroups: [authentication.k8s.io], resources: [selfsubjectreviews], verbs: [create]}\n"
  "---\n"
  "kind: ClusterRole\n" META("system:discovery", "")
  "rules:\n"
  "- {nonResourceURLs: [/api, /api/*, /apis, /apis/*, /healthz, /livez, /openapi, /openapi/*,\n"
  "   /readyz, /version, /version/], verbs: [get]}\n"
  "---\n"
  "kind: ClusterRole\n" META("system:public-info-viewer", "")
  "rules:\n"
  "- {nonResourceURLs: [/healthz, /livez, /readyz, /version, /version/], verbs: [get]}\n"
  "---\n"
  "kind: ClusterRoleBinding\n" META("cluster-admin", "")
  "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
  "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:masters'}\n"
  "---\n"
  "kind: ClusterRoleBinding\n" META("system:basic-user", "")
  "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:basic-user'}\n"
  "subjects:\n"
  "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:authenticated'}\n"
  "---\n"
  "kind: ClusterRoleBinding\n" META("system:discovery", "")
  "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:discovery'}\n"
  "subjects:\n"
  "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:authenticated'}\n"
  "---\n"
  "kind: ClusterRoleBinding\n" META("system:public-info-viewer", "")
  "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole,\n"
  "          name: 'system:public-info-viewer'}\n"
  "subjects:\n"
  "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:authenticated'}\n"
  "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:unauthenticated'}\n";

void rbac_bootstrap(void)
{
  cJSON *docs = NULL;
  char err[256];
  if(yamldoc_parse(bootstrap_yaml, sizeof(bootstrap_yaml) - 1, &docs, err, sizeof(err))) {
    log_kv(LOG_ERROR, "the bootstrap RBAC policy does not parse", "error", err, LOG_END);
    return;
  }
  cJSON *d;
  cJSON_ArrayForEach(d, docs)
  {
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind"));
    const char *res = !strcmp(kind, "ClusterRole") ? "clusterroles" : "clusterrolebindings";
    cJSON_AddStringToObject(d, "apiVersion", "rbac.authorization.k8s.io/v1");
    cJSON *st = rest_internal_create("rbac.authorization.k8s.io", "v1", res, "",
                                     cJSON_Duplicate(d, 1));
    if(st) {
      log_kv(LOG_ERROR, "cannot create a bootstrap RBAC object", "kind", kind, "error",
             cJSON_GetStringValue(cJSON_GetObjectItem(st, "message")), LOG_END);
      cJSON_Delete(st);
    }
  }
  cJSON_Delete(docs);
}
