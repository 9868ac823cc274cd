/*
 * rest.h: what the verb handlers (rest*.c, watch.c, patch.c) and the built-in types
 * (builtins*.c) share.
 *
 * A write runs kube-apiserver's order: decode, CRD pruning and defaulting, built-in admission
 * (defaults, service accounts), mutating webhooks, server-side preparation (status, generation),
 * validation (built-in, CRD schema), validating webhooks, conversion to the storage version,
 * commit under the store lock (resourceVersion precondition), after-commit hooks.
 */
#ifndef LS_REST_H
#define LS_REST_H

#include "core.h"

struct ls_target {
  char group[128], version[32], ns[254], resource[128], name[254], sub[32];
  bool has_ns;
};

/* A write in progress. */
struct ls_wctx {
  struct ls_req *r; /* NULL for writes the server makes itself (GC, namespaces) */
  const struct ls_rtype *rt;
  const char *ns, *name, *sub; /* sub: "" or "status" */
  const char *operation;       /* CREATE, UPDATE, DELETE */
  bool dry_run;
  const struct ls_identity *id;
  const cJSON *options;
  struct ls_warnings *warn;
  bool registered; /* a CRD was registered by validation */
  bool applied;    /* server-side apply already recorded its managedFields (ssa.h) */
};

/* Answers with a Status and frees it; r may be NULL (internal writes). */
void rest_fail(struct ls_req *r, cJSON *st);

/* Stored form -> served form of rt (conversion, pruning, defaulting), in place for each of n.
 * NULL or a Status. */
cJSON *rest_to_served(const struct ls_rtype *rt, cJSON *const *objs, size_t n);
/* Served form -> stored form. NULL or a Status. */
cJSON *rest_to_storage(const struct ls_rtype *rt, cJSON *obj);

/* kube's standard errors */
cJSON *rest_not_found(const struct ls_rtype *rt, const char *name);
cJSON *rest_already_exists(const struct ls_rtype *rt, const char *name);
cJSON *rest_conflict(const struct ls_rtype *rt, const char *name, const char *why);
cJSON *rest_invalid1(const struct ls_rtype *rt, const char *name, const char *reason,
                     const char *field, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
/* "resource" or "resource.group" */
void rest_qualified(const struct ls_rtype *rt, char *out, size_t len);
/* A cause {reason, message, field} appended to causes. */
void rest_cause(cJSON *causes, const char *reason, const char *field, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* Answer formats (rest_read.c) */
enum fmt { FMT_JSON, FMT_TABLE, FMT_PARTIAL, FMT_NONE };
struct answer {
  enum fmt fmt;
  char version[16]; /* of meta.k8s.io for Table and PartialObjectMetadata */
};
struct answer negotiate(const struct ls_req *r);
cJSON *partial(const cJSON *obj, const char *version);

/* verbs */
void rest_get(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_list(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_watch(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_create(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_update(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_patch(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_delete(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t);
void rest_delete_collection(struct ls_req *r, const struct ls_rtype *rt,
                            const struct ls_target *t);
void rest_pod_log(struct ls_req *r, const struct ls_target *t);
void rest_pod_binding(struct ls_req *r, const struct ls_target *t);

/* Internal writes (GC, namespace lifecycle, start-up objects), as user system:* without an
 * HTTP request. Status or NULL. */
cJSON *rest_internal_create(const char *group, const char *version, const char *resource,
                            const char *ns, cJSON *obj);
struct ls_delete_opts {
  const char *propagation; /* NULL: the type's default */
  long grace;              /* -1: default */
  const char *uid, *rv;    /* preconditions, or NULL */
  bool dry_run;
};
cJSON *rest_internal_delete(const char *group, const char *resource, const char *ns,
                            const char *name, const struct ls_delete_opts *o);
/* Re-reads the object and applies fn to a copy of its stored form until the write commits
 * without a conflict; fn returns false to leave the object alone. Status or NULL. */
cJSON *rest_internal_modify(const char *group, const char *resource, const char *ns,
                            const char *name, bool (*fn)(void *ctx, cJSON *obj), void *ctx);

/* patch.c */
/* Applies a patch of content type ctype to a copy of doc: NULL or a Status; *out the result.
 * An apply patch (application/apply-patch+yaml) is only decoded: *out is the applied object,
 * whatever doc is (ssa.c merges it). */
cJSON *patch_apply(const struct ls_rtype *rt, const char *ctype, const char *body, size_t len,
                   const cJSON *doc, cJSON **out);
cJSON *patch_merge(cJSON *target, const cJSON *patch); /* RFC 7386; returns the new target */
/* Strategic merge patch of built-in types (merge keys by field name). */
cJSON *patch_strategic(cJSON *target, const cJSON *patch, const char *field, char *err,
                       size_t errlen);

/* The namespace's state under the store lock: 0 active, 1 terminating, -1 missing. */
int rest_namespace_state(const char *ns);

/* builtins_*.c: hooks after a commit (CRDs, webhook configurations, namespaces). obj NULL when
 * the object was removed. */
void builtin_after_commit(const struct ls_rtype *rt, const cJSON *obj, const cJSON *old);
/* A write that ran the validation hooks did not commit (dry run, conflict, failure): undoes
 * what validation registered (CRDs). old: the stored object, or NULL for a create. */
void builtin_write_aborted(struct ls_wctx *w, const cJSON *old);
/* Create-only reviews (selfsubjectreviews, selfsubjectaccessreviews...): never stored. */
bool builtin_is_review(const struct ls_rtype *rt);

#endif
