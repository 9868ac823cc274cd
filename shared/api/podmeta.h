/*
 * podmeta.h: what a user may ask godwit to put on the Pods it runs (spec.execution.podMetadata
 * of the Ptah kinds, and any other kind that lets users label its runner Pods).
 *
 * podmeta_check() adds one error per offending entry, never stops at the first, and names the
 * entry in the path ("spec.execution.podMetadata.labels[team]"). In order, for each key:
 *  1. syntax: keys are qualified names (an optional DNS-subdomain prefix and '/', then a name of
 *     at most 63 characters); label values are label values; every value is a string
 *     (FieldValueInvalid / FieldValueTypeInvalid). A key with bad syntax gets no further check;
 *  2. reserved prefixes: ptah.run/, operator.ptah.run/, kubernetes.io/, k8s.io/, godwit.dev/ and
 *     every subdomain of them (foo.kubernetes.io/), because godwit, Ptah and Kubernetes itself
 *     write those keys on runner Pods (FieldValueForbidden, not a policy refusal);
 *  3. the admin policy's podMetadata allow/deny rules (policy refusals: a denial made only of
 *     them is a 403).
 * Then the annotations as a whole: keys and values together at most PODMETA_MAX_ANNOTATION_BYTES,
 * the limit kube-apiserver enforces on every object (FieldValueTooLong).
 *
 * A podMetadata that is not an object, or a labels/annotations member that is not an object, is
 * left to schema validation: nothing is added for it here. Nothing allocates beyond the errors.
 */
#ifndef GW_PODMETA_H
#define GW_PODMETA_H

#include <cJSON.h>
#include <stdbool.h>

#include "api/fielderr.h"
#include "api/schema.h"
#include "policy.h"

/* The schema of a podMetadata object {labels, annotations} (every kind that has one). */
extern const struct sch_field podmeta_fields[];

/* Kubernetes' TotalAnnotationSizeLimitB: 256 KiB of keys and values. */
#define PODMETA_MAX_ANNOTATION_BYTES (256 * 1024)

/* Checks podMetadata {labels, annotations} found at path ("spec.execution.podMetadata"). */
void podmeta_check(const cJSON *podMetadata, const char *path, const struct policy *p,
                   struct ferrs *e);

/* The reserved prefix a qualified key falls under ("kubernetes.io" for "app.kubernetes.io/x"),
 * or NULL when the key is the user's to set. */
const char *podmeta_reserved_prefix(const char *key);

/* Refuses (as a policy refusal at path) an image whose registry the admin policy does not list.
 * A NULL image passes: the controller's built-in image is the admin's own choice. */
void podmeta_check_image(const char *image, const char *path, const struct policy *p,
                         struct ferrs *e);

#endif
