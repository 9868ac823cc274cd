/*
 * apitest.h: helpers for the kind tests (tests/unit/test_<kind>.c).
 *
 *   struct api_result r;
 *   t_admit(&r, API_CREATE, "pgcopydb.io", "Migration", obj_json, NULL, &T_ALICE, NULL);
 *   t_expect_cause(&r, "spec.clone.tableJobs", "FieldValueInvalid");
 *   api_result_release(&r);
 *
 * t_admit runs validation only; t_default runs mutation, applies its patch, asserts that a second
 * mutation of the result yields no patch (reinvocation idempotence), and returns the result.
 * A NULL policy means policy_default().
 */
#ifndef GW_APITEST_H
#define GW_APITEST_H

#include <cJSON.h>

#include "api/api.h"

struct t_user {
  const char *name;
  const char *groups[4];
  const char *extra_pod_name; /* userInfo.extra["authentication.kubernetes.io/pod-name"] */
  const char *extra_pod_uid;
};

extern const struct t_user T_ALICE; /* alice, groups db-approvers, system:authenticated */
extern const struct t_user T_BOB;   /* bob, system:authenticated */

cJSON *t_json(const char *s);
const struct api_kind *t_kind(const char *group, const char *kind);
void t_admit(struct api_result *r, enum api_op op, const char *group, const char *kind,
             const char *obj, const char *old, const struct t_user *u, const struct policy *p);
/* Mutates, applies the patch, checks idempotence; returns the mutated object (caller frees). */
cJSON *t_default(enum api_op op, const char *group, const char *kind, const char *obj,
                 const char *old, const struct t_user *u, const struct policy *p);
void t_expect_allowed(const struct api_result *r);
void t_expect_cause(const struct api_result *r, const char *field, const char *reason);
/* Asserts the refusal has exactly n causes (t_expect_cause each of them). */
void t_expect_cause_count(const struct api_result *r, size_t n);
/* Asserts each cause of also ("field Reason; field Reason", NULL: none); how many it lists. */
size_t t_expect_also(const struct api_result *r, const char *also);
/* Asserts a cause on field whose message contains text. */
void t_expect_message(const struct api_result *r, const char *field, const char *text);
void t_expect_warning(const struct api_result *r, const char *text);
/* "field (reason): message; ..." for assertion messages; static buffer. */
const char *t_causes(const struct api_result *r);
struct policy *t_policy(const char *json);

#endif
