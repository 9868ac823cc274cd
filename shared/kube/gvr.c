/* The built-in resource types godwit talks to. */
#include "kube.h"

const struct kube_gvr KUBE_PODS = { "", "v1", "pods", true };
const struct kube_gvr KUBE_JOBS = { "batch", "v1", "jobs", true };
const struct kube_gvr KUBE_SECRETS = { "", "v1", "secrets", true };
const struct kube_gvr KUBE_CONFIGMAPS = { "", "v1", "configmaps", true };
/* core/v1 Events: what kubectl describe shows under "Events:". */
const struct kube_gvr KUBE_EVENTS = { "", "v1", "events", true };
const struct kube_gvr KUBE_LEASES = { "coordination.k8s.io", "v1", "leases", true };
const struct kube_gvr KUBE_PVCS = { "", "v1", "persistentvolumeclaims", true };
const struct kube_gvr KUBE_NAMESPACES = { "", "v1", "namespaces", false };
const struct kube_gvr KUBE_SERVICEACCOUNTS = { "", "v1", "serviceaccounts", true };
const struct kube_gvr KUBE_NODES = { "", "v1", "nodes", false };

/* godwit's own Ptah kinds (ptah.run/v1, the storage version), which both the controller and the
 * runner (its result records) talk to. */
const struct kube_gvr KUBE_PTAH_MIGRATIONS = { "ptah.run", "v1", "ptahmigrations", true };
const struct kube_gvr KUBE_POD_MIGRATIONS = { "migration.podmotion.io", "v1beta1", "podmigrations",
                                              true };
const struct kube_gvr KUBE_MIGRATION_POLICIES = { "migration.podmotion.io", "v1beta1",
                                                  "migrationpolicies", true };
const struct kube_gvr KUBE_PTAH_SCHEMAS = { "ptah.run", "v1", "ptahschemas", true };
const struct kube_gvr KUBE_PTAH_APPROVALS = { "ptah.run", "v1", "ptahschemaapprovals", true };
const struct kube_gvr KUBE_PTAH_RESULT_RECORDS = { "ptah.run", "v1", "ptahresultrecords", true };
const struct kube_gvr KUBE_PTAH_RUN_ACKS = { "ptah.run", "v1", "ptahmigrationrunacknowledgments",
                                             true };
