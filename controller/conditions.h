/*
 * conditions.h: metav1.Condition in status.conditions, as the API conventions define it.
 *
 * A condition is {type, status: True|False|Unknown, observedGeneration, lastTransitionTime,
 * reason, message}; the list holds one entry per type (x-kubernetes-list-map-keys: type).
 * cond_set() is the only writer:
 *  - lastTransitionTime moves only when status changes (or when the type is new);
 *  - reason, message and observedGeneration are always brought up to date;
 *  - it reports whether anything changed, so a reconcile that changes nothing writes nothing.
 * Messages are scrubbed as Event messages are (events.h: a URI's password, password=...) and,
 * when longer than COND_MESSAGE_MAX bytes, cut on a UTF-8 boundary ending in "...". Scrubbing is
 * a safety net: never put a secret value, a password or a connection URI in a message.
 */
#ifndef GW_CTRL_CONDITIONS_H
#define GW_CTRL_CONDITIONS_H

#include <cJSON.h>
#include <stdbool.h>
#include <time.h>

#include "rc.h"

#define COND_MESSAGE_MAX 32768

#define COND_TRUE "True"
#define COND_FALSE "False"
#define COND_UNKNOWN "Unknown"

struct cond {
  const char *type;    /* "Validated" */
  const char *status;  /* COND_TRUE, COND_FALSE, COND_UNKNOWN */
  const char *reason;  /* "SpecValid": CamelCase, stable */
  const char *message; /* for people; may be NULL ("") */
};

/* Sets c in the array conds (status.conditions), with generation and now (seconds since the
 * epoch). *changed (may be NULL) tells whether the array changed. */
gw_rc cond_set_at(cJSON *conds, const struct cond *c, long long generation, time_t now,
                  bool *changed) GW_MUST_CHECK;
/* Sets c on obj's status.conditions (created when missing), with obj's metadata.generation and
 * the current time. */
gw_rc cond_set(cJSON *obj, const struct cond *c, bool *changed) GW_MUST_CHECK;

/* The condition of type in obj's status.conditions, or NULL. */
const cJSON *cond_find(const cJSON *obj, const char *type);
/* Whether the condition exists with that status. */
bool cond_has_status(const cJSON *obj, const char *type, const char *status);
bool cond_is_true(const cJSON *obj, const char *type);
bool cond_is_false(const cJSON *obj, const char *type);
/* The condition's reason, or NULL. */
const char *cond_reason(const cJSON *obj, const char *type);
/* Removes the condition of type; *changed says whether it was there. */
void cond_remove(cJSON *obj, const char *type, bool *changed);
/* Whether the condition describes the object's current generation. */
bool cond_is_current(const cJSON *obj, const char *type);

/* metadata.generation, or 0. */
long long obj_generation(const cJSON *obj);

#endif
