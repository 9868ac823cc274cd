/*
 * ptah_common.h: what the five ptah.run kinds share: the group, the database and execution
 * tables, the status table of a running operation, the identity checks behind stamping
 * (approver, acknowledgedBy, spec author), and two conversion helpers.
 *
 * Rule checks here read the row they run for: a row's `field` is both the hub path they look
 * at and the path they report, its `type` the cause they add, its `msg` the end of the message.
 * Checks that need the authenticated user do nothing when the context has none (the controller
 * re-validates stored objects without a request): identity is the webhook's to check at the
 * moment of the request, and the controller re-checks what it consumes against its own record.
 */
#ifndef GW_PTAH_COMMON_H
#define GW_PTAH_COMMON_H

#include <cJSON.h>
#include <stdbool.h>

#include "api/api.h"

#define PTAH_GROUP "ptah.run"

/* Who wrote the current spec of a PtahSchema: stamped by the mutating webhook. */
#define PTAH_SPEC_AUTHOR_ANNOTATION "ptah.run/spec-author"
#define PTAH_SPEC_AUTHOR_FIELD "metadata.annotations[" PTAH_SPEC_AUTHOR_ANNOTATION "]"

/* Where a v1alpha1 object keeps what it cannot hold: error paths on hub-only fields point here. */
#define PTAH_V1_FIELDS "metadata.annotations[godwit.dev/v1-fields]"

/* spec.database: {connectionSecretRef{name, key}}. */
extern const struct sch_field ptah_database_fields[];
/* spec.execution: {runnerImage, podMetadata{labels, annotations}, serviceAccountName}. */
extern const struct sch_field ptah_execution_fields[];
/* status.operation: the operation in flight {id, type, jobName, attempt, startedAt}. */
extern const struct sch_field ptah_operation_fields[];
/* Plan, Apply, Observe. */
extern const char *const ptah_operation_types[];

/* The authenticated user name, or NULL when the context has no request user. */
const char *ptah_user(const struct api_ctx *c);
/* CREATE, or an UPDATE whose (defaulted, hub) spec differs from the stored one. */
bool ptah_spec_changed(const struct api_ctx *c);
/* Rules that depend on the admin policy judge only what changes (api_unchanged), so a policy
 * tightened later never blocks a metadata-only update (a finalizer removed, a label added) of
 * an object it admitted. */

/* Stamping for .mutate: on CREATE an empty string at path becomes value (nothing when value is
 * NULL); on UPDATE an empty one gets the stored object's value back (a `kubectl replace`
 * without it is not a change). A value the user wrote is never overwritten: validation judges
 * it. ptah_stamp_user stamps the authenticated user. */
gw_rc ptah_stamp(const struct api_ctx *c, cJSON *obj, const char *path, const char *value)
  GW_MUST_CHECK;
gw_rc ptah_stamp_user(const struct api_ctx *c, cJSON *obj, const char *path) GW_MUST_CHECK;

/* Rule checks. The runner image and podMetadata checks skip values an update leaves as they
 * were (api_unchanged). */
void ptah_check_runner_image(const struct api_ctx *c, const struct rule *r, struct ferrs *e);
void ptah_check_pod_metadata(const struct api_ctx *c, const struct rule *r, struct ferrs *e);
/* CREATE: a value is present at r->field (the mutating webhook ran). */
void ptah_check_stamped(const struct api_ctx *c, const struct rule *r, struct ferrs *e);
/* CREATE: the value at r->field, when present, is the authenticated user. */
void ptah_check_not_forged(const struct api_ctx *c, const struct rule *r, struct ferrs *e);
/* CREATE: the authenticated user is an approver under the admin policy. */
void ptah_check_approver(const struct api_ctx *c, const struct rule *r, struct ferrs *e);

/* Warns about a runner image whose tag can move under a plan (none, or ":latest"), when the
 * request sets it (CREATE, or an UPDATE that changes it). */
void ptah_warn_runner_image(const struct api_ctx *c, struct strlist *w);

/* Conversion of a v1alpha1 boolean to a v1 two-valued enum and back. A value the other side
 * cannot say (a third enum value, a non-boolean) is left where it is, so it travels in the
 * fields annotation. Parents left empty are removed. */
gw_rc ptah_bool_to_enum(cJSON *obj, const char *bool_path, const char *enum_path,
                        const char *if_true, const char *if_false) GW_MUST_CHECK;
gw_rc ptah_enum_to_bool(cJSON *obj, const char *enum_path, const char *bool_path,
                        const char *if_true, const char *if_false) GW_MUST_CHECK;

#endif
