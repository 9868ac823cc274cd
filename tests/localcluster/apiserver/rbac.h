/*
 * rbac.h: the local API server's authorizer (rbac.c), kube-apiserver's RBAC over the stored
 * rbac.authorization.k8s.io/v1 objects, behind kube's privileged-group authorizer (users in
 * system:masters may do everything, whatever the roles say).
 *
 * Attributes are kube's authorizer.Attributes: a resource request names verb, API group,
 * resource, subresource ("" for none), namespace ("" for cluster scope) and name ("" for none);
 * a non-resource request a verb (the HTTP method, lower case) and a path. Strings are borrowed.
 *
 * Every function here takes the store lock itself: call none of them with it held.
 */
#ifndef LS_RBAC_H
#define LS_RBAC_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

struct strbuf;
struct ls_wctx;

struct rbac_attrs {
  const char *verb;
  bool resource_request;
  const char *group, *resource, *sub, *ns, *name;
  const char *path; /* non-resource requests */
};

/* Whether the user may; reason gets kube's "RBAC: allowed by ..." or, denied, the evaluation
 * errors ("RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found") or "". */
bool rbac_authorize(const struct ls_identity *id, const struct rbac_attrs *a, char *reason,
                    size_t len);
/* NULL when allowed (system:masters always are), else kube's 403 Forbidden Status. */
cJSON *rbac_check(const struct ls_identity *id, const struct rbac_attrs *a);
/* kube's forbiddenMessage: `User "bob" cannot list resource "pods" in API group "" in the
 * namespace "default"`. */
void rbac_forbidden_message(const struct ls_identity *id, const struct rbac_attrs *a, char *out,
                            size_t len);
cJSON *rbac_forbidden(const struct ls_identity *id, const struct rbac_attrs *a,
                      const char *reason);
/* Whether one PolicyRule allows the request. */
bool rbac_rule_allows(const cJSON *rule, const struct rbac_attrs *a);

/* Calls fn with every rule bound to the user (cluster-wide, then in ns unless ns is NULL or ""),
 * and source, kube's description of the binding; fn returns false to stop. Missing roles are
 * appended to errs (may be NULL). Needs the store lock. */
typedef bool (*rbac_rule_fn)(void *ctx, const char *source, const cJSON *rule);
void rbac_visit(const struct ls_identity *id, const char *ns, rbac_rule_fn fn, void *ctx,
                struct strbuf *errs);
/* Copies of every rule bound to the user in ns (a cJSON array, caller frees). */
cJSON *rbac_user_rules(const struct ls_identity *id, const char *ns, struct strbuf *errs);
/* kube's ConfirmNoEscalation: true when the user's own rules in ns cover rules; otherwise msg
 * gets `user "bob" (groups=[...]) is attempting to grant RBAC permissions not currently held:`
 * and the missing rules, one per line. */
bool rbac_confirm_no_escalation(const struct ls_identity *id, const char *ns, const cJSON *rules,
                                char *msg, size_t len);

/* Built-in admission of roles (escalate, or rules the writer holds) and bindings (bind, or the
 * role's rules the writer holds), and kube's validation of bindings. Writes the server makes
 * itself and writes by system:masters are not checked. */
cJSON *rbac_role_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *rbac_binding_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *rbac_binding_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
/* After a ClusterRole is written or removed: every aggregated ClusterRole's rules become the
 * union of the rules of the ClusterRoles its selectors match (kube's aggregation controller). */
void rbac_after_commit(const struct ls_rtype *rt);

/* SubjectAccessReview, LocalSubjectAccessReview (in ns), SelfSubjectAccessReview and
 * SelfSubjectRulesReview: sets body's status, or answers a 422 Status. */
cJSON *rbac_review(const struct ls_identity *caller, const struct ls_rtype *rt, const char *ns,
                   cJSON *body);

/* kube's bootstrap policy (cluster-admin, admin, edit, view and their aggregated parts,
 * system:basic-user, system:discovery, system:public-info-viewer, and their bindings). */
void rbac_bootstrap(void);

#endif
