/*
 * api.h: the kinds godwit serves, and the three things done with them: defaulting, validation
 * and conversion. Nothing here knows about HTTP or AdmissionReview; the webhook and the
 * controller both call these functions, so a spec that slipped past a disabled webhook is
 * refused the same way by the controller.
 *
 * A kind has two or more versions; the last one is the storage version, the hub. Every rule runs
 * on the hub: an object of an older version is converted first, and the field paths of the errors
 * are translated back to the version the user wrote, so messages name the fields they typed.
 *
 * Conversion (api_convert) goes older -> hub -> other older, never N x N. Each older version
 * lists its renames (struct conv_move) and may add a transform for what renames cannot say. What
 * an older version cannot hold travels in the annotation godwit.dev/<hub>-fields and comes back
 * when converted to the hub, so every round trip is lossless.
 *
 * Rules for a kind's author, checked by tests/unit/test_roundtrip.c over generated objects:
 *  - every older object that passes its schema converts into one that passes the hub schema, so
 *    a field the hub requires must be required (or always produced) in the older version too;
 *    a hub field that may travel in the annotation is required by a rule, not by the schema;
 *  - an ambiguous older field (a boolean standing for the presence of a hub object) has a
 *    schema default, so the older form is canonical and the round trip an identity;
 *  - a hub object whose mere presence means something is flagged SCH_PRESENCE, so the
 *    annotation never recreates it.
 */
#ifndef GW_API_H
#define GW_API_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/fielderr.h"
#include "api/schema.h"
#include "policy.h"
#include "rc.h"

enum api_op { API_CREATE, API_UPDATE, API_DELETE, API_CONNECT };

struct api_user {
  const char *username;
  const char *uid;
  const char *const *groups;
  size_t ngroups;
  const cJSON *extra; /* userInfo.extra: map of string lists, or NULL */
};

/* What a rule sees: hub objects, never an older version. */
struct api_ctx {
  const cJSON *obj;          /* the object (hub version) */
  const cJSON *old;          /* the stored object on UPDATE (hub version), else NULL */
  enum api_op op;
  const struct api_user *user;
  const struct policy *policy;
  bool dry_run;
};

struct rule;
typedef void (*rule_fn)(const struct api_ctx *c, const struct rule *r, struct ferrs *e);

/*
 * A row of a kind's rule table. check() adds zero or more errors; rule_fail() adds the row's own
 * (field, type, message). msg documents the rule in docs/ even when check() words it itself.
 */
struct rule {
  const char *field;
  enum ferr_type type;
  rule_fn check;
  const char *msg;
  bool policy; /* a refusal by the admin policy: 403 Forbidden when alone */
};

void rule_fail(struct ferrs *e, const struct rule *r);
/* An UPDATE that leaves path as it was (absent and null are one). */
bool api_unchanged(const struct api_ctx *c, const char *path);
/* Rule check: on UPDATE, r->field may not change (rule_fail with the row's message). */
void api_check_immutable(const struct api_ctx *c, const struct rule *r, struct ferrs *e);
void rule_failf(struct ferrs *e, const struct rule *r, const char *field, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* A rename between an older version and the hub; full dotted paths ("spec.tableJobs"). */
struct conv_move {
  const char *old;
  const char *hub;
};

struct api_version {
  const char *name; /* "v1alpha1" */
  const struct sch_field *spec;
  const struct sch_field *status;
  /* Older versions only: renames (NULL-terminated by a row with old == NULL), then transforms
   * run after the renames on to_hub and before them on from_hub. */
  const struct conv_move *moves;
  gw_rc (*to_hub)(cJSON *obj);
  gw_rc (*from_hub)(cJSON *obj);
  /* Extra path pairs for translating error paths that transforms produce. */
  const struct conv_move *path_aliases;
};

struct printer_column {
  const char *name, *type, *json_path, *desc;
  int priority;
};

struct api_kind {
  const char *group;
  const char *kind;
  const char *plural;
  const char *singular;
  const char *const *short_names; /* NULL-terminated */
  const char *const *categories;  /* NULL-terminated */
  bool namespaced;
  const char *desc;
  const struct api_version *versions; /* storage (hub) last */
  size_t nversions;
  const struct printer_column *columns; /* terminated by a row with name == NULL */
  const struct rule *rules;        /* CREATE and UPDATE; terminated by check == NULL */
  const struct rule *update_rules; /* UPDATE only (immutability, transitions) */
  /* Defaulting beyond the schema and stamping (who approved, who wrote the spec). Runs on the
   * hub object in place. Must be idempotent. */
  gw_rc (*mutate)(const struct api_ctx *c, cJSON *obj);
  /* Warnings for risky but legal settings. */
  void (*warn)(const struct api_ctx *c, struct strlist *w);
};

/* The registry. */
const struct api_kind *const *api_kinds(void);
const struct api_kind *api_find_kind(const char *group, const char *kind);
const struct api_kind *api_find_plural(const char *group, const char *plural);
const struct api_version *api_find_version(const struct api_kind *k, const char *version);
const struct api_version *api_hub(const struct api_kind *k);
bool api_is_hub(const struct api_kind *k, const struct api_version *v);

/* Converts obj (any served version) to desired ("group/version") in place; err names the
 * object's problem. */
gw_rc api_convert(const struct api_kind *k, cJSON *obj, const char *desired, char *err,
                  size_t errlen) GW_MUST_CHECK;
/* Translates a hub field path to version v's path (malloc'd), or NULL when unchanged. */
char *api_path_from_hub(const struct api_version *v, const char *hub_path);

/* What an admission call is about. obj and old are in their sent version. */
struct api_request {
  const struct api_kind *kind;
  const cJSON *obj; /* NULL on DELETE */
  const cJSON *old; /* UPDATE and DELETE */
  enum api_op op;
  const struct api_user *user;
  const struct policy *policy;
  bool dry_run;
  const char *request_version; /* requestKind.version, for the deprecation warning */
  /* The caller runs this in an arena it releases afterwards (webhook/review.c): the trees the
   * call builds are left to it, not walked by cJSON_Delete to free nothing. */
  bool in_arena;
};

struct api_result {
  cJSON *patch;          /* JSON Patch against the sent object, or NULL when nothing changes */
  struct ferrs errs;     /* non-empty: deny */
  struct strlist warns;
};

void api_result_init(struct api_result *r);
void api_result_release(struct api_result *r);
/* Defaulting and stamping. Never denies for shape: schema validation comes after. */
gw_rc api_mutate(const struct api_request *req, struct api_result *out) GW_MUST_CHECK;
/* Every rule; errors in the sent version's paths; warnings (deprecation, risky settings). */
gw_rc api_validate(const struct api_request *req, struct api_result *out) GW_MUST_CHECK;

/* The rules the webhook runs, run again on a stored object of group/kind (a controller's check of
 * a spec that slipped past a disabled webhook): an UPDATE onto itself, so every rule of the spec
 * runs and the transition rules have nothing to refuse. true when it passes; otherwise msg holds
 * "<field>: <message>; ..." (cut to len). */
bool api_revalidate(const char *group, const char *kind, const cJSON *obj, char *msg,
                    size_t len);

/* The annotation that carries what an older version cannot hold: PREFIX <hub version> SUFFIX. */
#define API_FIELDS_ANNOTATION_PREFIX "godwit.dev/"
#define API_FIELDS_ANNOTATION_SUFFIX "-fields"
#define API_FIELDS_ANNOTATION_FMT API_FIELDS_ANNOTATION_PREFIX "%s" API_FIELDS_ANNOTATION_SUFFIX

#endif
