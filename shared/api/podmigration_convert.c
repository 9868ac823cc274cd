/*
 * PodMigration v1alpha1 and its conversion to and from the hub (v1beta1).
 *
 * v1alpha1 is flat: spec.podName, spec.targetNode, spec.mode, spec.maxPreCopyRounds and
 * spec.verification, a string holding the verification mode alone. Everything else of the hub
 * (destination.nodeSelector, verification.timeoutSeconds/httpGet/tcpSocket, policyRef, cancel,
 * checkpoint) travels in the godwit.dev/v1beta1-fields annotation. The status is the same in
 * both versions.
 */
#include <stdio.h>
#include <string.h>

#include "api/podmotion_common.h"
#include "json.h"

const struct sch_field podmigration_v1alpha1_spec[] = {
  { .name = "podName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "Name of the pod to move, in the PodMigration's namespace. Immutable "
            "(v1beta1: spec.source.podName)." },
  { .name = "targetNode", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the node to move the pod to; required unless the v1beta1 "
            "destination.nodeSelector was set (v1beta1: spec.destination.nodeName)." },
  { .name = "mode", .type = SCH_STRING, .enums = podmigration_strategy_types,
    .dflt = "\"PreCopy\"",
    .desc = "PreCopy copies memory in rounds while the pod runs, then freezes it for the last "
            "dirty pages; StopAndCopy freezes it for the whole copy (v1beta1: "
            "spec.strategy.type)." },
  { .name = "maxPreCopyRounds", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 30,
    .desc = "Most pre-copy rounds before the final frozen copy; PreCopy only (v1beta1: "
            "spec.strategy.preCopy.maxRounds)." },
  { .name = "verification", .type = SCH_STRING, .enums = podmigration_verification_modes,
    .dflt = "\"ReadinessProbe\"",
    .desc = "How the restored pod is proven to serve before the source pod is deleted "
            "(v1beta1: spec.verification.mode)." },
  { 0 }
};

const struct conv_move podmigration_v1alpha1_moves[] = {
  { "spec.podName", "spec.source.podName" },
  { "spec.targetNode", "spec.destination.nodeName" },
  { "spec.mode", "spec.strategy.type" },
  { "spec.maxPreCopyRounds", "spec.strategy.preCopy.maxRounds" },
  { "spec.verification", "spec.verification.mode" },
  { NULL, NULL }
};

/* Error paths of hub objects v1alpha1 has no member for, reported where the user wrote them. */
const struct conv_move podmigration_v1alpha1_aliases[] = {
  { "spec.podName", "spec.source" },
  { "spec.targetNode", "spec.destination" },
  /* Keeps the alias above from turning it into "spec.targetNode.nodeSelector". */
  { "spec.destination.nodeSelector", "spec.destination.nodeSelector" },
  { "spec.maxPreCopyRounds", "spec.strategy.preCopy" },
  { NULL, NULL }
};
