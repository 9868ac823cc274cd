/*
 * podtemplate.h: the digest of a runner Pod's declared content.
 *
 * The controller computes it over the Pod template of a runner Job it renders and records it in
 * the annotation godwit.dev/template-digest; the webhook recomputes it over each Pod labelled
 * godwit.dev/runner as the API server is about to create it, and refuses a Pod whose digest
 * differs, so a foreign mutating webhook cannot change what runs against a database.
 *
 * Covered: every container and init container (name, image, command, args, env with value or
 * valueFrom, securityContext), in order, and the labels and annotations. Not covered, because
 * Kubernetes itself adds or defaults them on every Pod: volumes and volume mounts (the projected
 * service-account token), tolerations, the Job controller's labels (controller-uid, job-name,
 * batch.kubernetes.io/...), annotations under batch.kubernetes.io/, the digest annotation
 * itself, and defaulted fields (imagePullPolicy, terminationMessagePath, resources, ports,
 * fieldRef.apiVersion "v1").
 * The input is a Pod or a Pod template: an object with "metadata" and "spec".
 */
#ifndef GW_PODTEMPLATE_H
#define GW_PODTEMPLATE_H

#include <cJSON.h>

#include "rc.h"

#define PODTEMPLATE_DIGEST_ANNOTATION "godwit.dev/template-digest"
#define PODTEMPLATE_RUNNER_LABEL "godwit.dev/runner"

/* Writes "sha256:<64 hex>" into out (at least 72 bytes). */
gw_rc podtemplate_digest(const cJSON *pod, char *out, size_t outlen) GW_MUST_CHECK;

#endif
