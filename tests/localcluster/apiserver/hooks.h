/*
 * hooks.h: the seam between the API server's core (http, store, rest, ...) and its CRD schema,
 * admission and conversion layers (schema.c, admission.c, conversion.c). The core owns storage
 * and the verbs; these layers own what kube-apiserver's apiextensions and admission plugins do.
 * Neither side reaches into the other's files. Everything is thread-safe: requests run on many
 * threads.
 *
 * Errors travel as Kubernetes Status objects (cJSON, caller frees) built with ls_status().
 */
#ifndef LS_HOOKS_H
#define LS_HOOKS_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

/* ---- provided by status.c (shared by both sides) ---- */

/* {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":...,
 *  "reason":...,"code":...}; details may be NULL (ownership taken). */
cJSON *ls_status(int code, const char *reason, cJSON *details, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* A 422 Invalid for kind/name with causes [{reason, message, field}] (ownership taken), message
 * in kube-apiserver's form: `<Kind>.<group> "<name>" is invalid: [<field>: <msg>, ...]`. */
cJSON *ls_status_invalid(const char *group, const char *kind, const char *name, cJSON *causes);

struct ls_warnings {
  char *v[32];
  size_t n;
};
void ls_warnings_add(struct ls_warnings *w, const char *msg);
void ls_warnings_release(struct ls_warnings *w);

/* The authenticated user of a request (after impersonation). */
struct ls_user {
  const char *name;
  const char *uid;
  const char *const *groups;
  size_t ngroups;
  const cJSON *extra; /* map of string lists, or NULL */
};

/* ---- provided by the core to the layers ---- */

struct ls_core_ops {
  /* The Namespace object named ns (a copy the caller frees), or NULL: for namespaceSelector. */
  cJSON *(*get_namespace)(const char *ns);
};
void ls_hooks_init(const struct ls_core_ops *ops, const char *const *service_map);

/* ---- provided by schema.c: CustomResourceDefinitions ---- */

struct ls_crd_version {
  char name[32];
  bool served, storage, status_subresource;
};

struct ls_crd_info {
  char name[256]; /* plural.group */
  char group[128], kind[128], list_kind[136], plural[128], singular[128];
  char short_names[8][32];
  size_t nshort;
  char categories[8][32];
  size_t ncategories;
  bool namespaced;
  struct ls_crd_version versions[8];
  size_t nversions;
};

/* Validates a CRD object as kube-apiserver does (structural schema, names, one storage version)
 * and registers it; on failure returns a 422 Status. On success fills *info. */
cJSON *crd_register(const cJSON *crd, struct ls_crd_info *info);
void crd_unregister(const char *name);
/* Prunes unknown fields and applies defaults of version's schema, in place (request decoding
 * and reads from storage, as kube-apiserver does). */
void crd_prune_and_default(const char *group, const char *plural, const char *version, cJSON *obj);
/* NULL when obj passes version's schema (and, on an UPDATE, old given, its transition rules),
 * else a 422 Status listing every cause. */
cJSON *crd_validate(const char *group, const char *plural, const char *version, const cJSON *obj,
                    const cJSON *old);
/* additionalPrinterColumns of version (a cJSON array owned by the registry), or NULL. */
const cJSON *crd_printer_columns(const char *group, const char *plural, const char *version);
/* The version's structural schema (openAPIV3Schema), or NULL; valid while the process runs. */
const cJSON *crd_version_schema(const char *group, const char *plural, const char *version);

/* ---- provided by conversion.c ---- */

/* Converts objs (each any served version of the CRD) to version in place, through the CRD's
 * conversion webhook (strategy Webhook) or by rewriting apiVersion (None). NULL or a Status. */
cJSON *crd_convert(const char *group, const char *plural, cJSON *const *objs, size_t n,
                   const char *version);

/* ---- provided by admission.c ---- */

struct ls_adm_attrs {
  const char *operation;                 /* CREATE, UPDATE, DELETE, CONNECT */
  const char *group, *version, *kind;    /* of the object as requested */
  const char *resource, *subresource;    /* plural; "" when none */
  const char *name, *namespace;
  const struct ls_user *user;
  bool dry_run;
  const cJSON *options;                  /* CreateOptions, UpdateOptions, DeleteOptions */
};

/* The webhook configurations in force; the core calls this when a Mutating- or
 * ValidatingWebhookConfiguration is created, updated (obj) or deleted (obj NULL). */
void admission_config_set(const char *kind, const char *name, const cJSON *obj);
/* Runs the matching mutating webhooks; may replace *obj. NULL or a Status (denied, failed). */
cJSON *admission_mutate(const struct ls_adm_attrs *a, cJSON **obj, const cJSON *old,
                        struct ls_warnings *w);
/* Runs the matching validating webhooks. NULL or a Status. */
cJSON *admission_validate(const struct ls_adm_attrs *a, const cJSON *obj, const cJSON *old,
                          struct ls_warnings *w);

#endif
