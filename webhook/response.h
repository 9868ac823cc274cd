/*
 * response.h: the one place that writes an AdmissionReview response: the uid, allowed, the
 * status (code, reason, message, causes), the patch and the warnings. Handlers decide; this file
 * words and encodes.
 *
 * Denial wording (what kubectl prints after "admission webhook ... denied the request: "):
 *   one cause:  Migration "shop" is invalid: spec.clone.tableJobs: must be between 1 and 64, got 0
 *   several:    Migration "shop" is invalid:
 *               - spec.source: ...
 *               - spec.target: ...
 * A denial made only of policy refusals is 403 Forbidden ("... is forbidden by the admission
 * policy: ..."); anything else is 422 Invalid. status.details.causes lists the same causes
 * ({reason, message, field}), in the same order.
 */
#ifndef GW_RESPONSE_H
#define GW_RESPONSE_H

#include <cJSON.h>

#include "api/api.h"

struct adm_subject {
  const char *uid;
  const char *group;
  const char *kind;
  const char *name; /* metadata.name, or generateName, or "" */
};

/* An AdmissionReview carrying the response. patch may be NULL; warnings may be NULL. */
cJSON *response_allowed(const struct adm_subject *s, const cJSON *patch,
                        const struct strlist *warnings);
cJSON *response_denied(const struct adm_subject *s, const struct ferrs *errs,
                       const struct strlist *warnings);
/* A denial for a reason that is not about fields (internal error, policy not loaded). */
cJSON *response_error(const struct adm_subject *s, int code, const char *reason,
                      const char *message);

#endif
