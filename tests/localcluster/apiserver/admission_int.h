/*
 * admission_int.h: the webhook configurations as admission.c runs them (admission_match.c builds
 * them and decides which webhook a request reaches; admission_call.c makes one call).
 *
 * A configuration set is immutable and reference counted: admission_config_set() builds a new
 * one and swaps it in; a request keeps the set it started with until it ends.
 */
#ifndef LS_ADMISSION_INT_H
#define LS_ADMISSION_INT_H

#include "layers.h"

struct adm_hook {
  char name[256];
  char config[256];
  char uid[600]; /* configuration/name/index: the identity reinvocation tracks */
  bool mutating;
  cJSON *def; /* the webhook object (owned) */
  const cJSON *rules, *ns_selector, *obj_selector, *client;
  bool fail_open;     /* failurePolicy Ignore */
  bool equivalent;    /* matchPolicy Equivalent */
  bool reinvoke;      /* reinvocationPolicy IfNeeded */
  bool side_effects_set, side_effects_safe; /* None or NoneOnDryRun */
  bool review_v1;     /* admissionReviewVersions lists v1 */
  int timeout_s;
};

struct adm_set {
  int refs;
  struct adm_hook *hooks;
  size_t n;
};

/* The current set of mutating or validating webhooks (a reference; adm_set_put releases). */
struct adm_set *adm_set_get(bool mutating);
void adm_set_put(struct adm_set *s);

/* Which version/kind a webhook is called with. */
struct adm_invocation {
  const struct adm_hook *h;
  char group[128], version[32], kind[128], resource[128];
};

/* ShouldCallHook: *call says whether h applies (selectors, rules, matchPolicy Equivalent). A
 * Status (namespace lookup failure) may be returned when it applies. */
cJSON *adm_should_call(const struct adm_hook *h, const struct ls_adm_attrs *a, const cJSON *obj,
                       const cJSON *old, struct adm_invocation *inv, bool *call);

/* The outcome of one call. */
enum adm_outcome {
  ADM_OK,
  ADM_REJECTED, /* *status: the webhook's denial, or an error kube returns as is */
  ADM_CALL_ERROR, /* why: a failure to call, subject to failurePolicy */
};

struct adm_result {
  enum adm_outcome outcome;
  cJSON *status;        /* ADM_REJECTED */
  char why[2048];       /* ADM_CALL_ERROR: "failed calling webhook ..." text */
  cJSON *patched;       /* mutating: the object after the patch, or NULL when unchanged */
  char *warnings[32];
  size_t nwarnings;
};

/* Calls one webhook with obj/old (already in inv's version; obj NULL on DELETE). */
void adm_call(const struct adm_invocation *inv, const struct ls_adm_attrs *a, const cJSON *obj,
              const cJSON *old, struct adm_result *res);
void adm_result_release(struct adm_result *res);
/* kube's apierrors.NewInternalError(err) */
cJSON *adm_internal_error(const char *msg);

#endif
