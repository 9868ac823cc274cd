/*
 * layers.h: what the CRD schema, admission and conversion layers (schema*.c, admission*.c,
 * conversion.c, webhook_call.c) share among themselves. The core never includes it: its seam is
 * hooks.h.
 *
 * Field errors follow k8s.io/apimachinery's field.Error: a type (the cause reason,
 * "FieldValueInvalid", ...), a field path and a body worded exactly as ErrorBody() words it
 * ("Invalid value: 3: must be ..."). ferr_* append one cause {reason, message, field} to a cJSON
 * array; the value printers reproduce Go's %q, %v and %#v so the messages match kube-apiserver's
 * byte for byte.
 *
 * The CRD registry never frees an entry while the process runs: a replaced or deleted CRD is
 * retired, not released, so pointers handed out (schemas, printer columns) stay valid for requests
 * in flight. CRDs change rarely; the memory is bounded by the number of CRD writes.
 */
#ifndef LS_LAYERS_H
#define LS_LAYERS_H

#include <cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "hooks.h"
#include "strbuf.h"

/* ---- Go formatting (schema_gofmt.c) ---- */

/* Appends Go's %q of s (strconv.Quote). */
gw_rc go_quote(struct strbuf *sb, const char *s) GW_MUST_CHECK;
/* Appends Go's %v of a float64 (strconv 'g', shortest, exponent when exp < -4 || exp >= 21). */
gw_rc go_float(struct strbuf *sb, double d) GW_MUST_CHECK;
/* Appends a JSON number as kube prints the decoded value: int64 when integral, else float64. */
gw_rc go_number(struct strbuf *sb, const cJSON *n) GW_MUST_CHECK;
/* Appends field.Error's rendering of a bad value: strings %q, numbers and booleans %v, null
 * "null" (quoted), objects and arrays %#v (map[string]interface {}{...}). */
gw_rc go_badvalue(struct strbuf *sb, const cJSON *v) GW_MUST_CHECK;
/* Appends Go's %#v of a decoded JSON value. */
gw_rc go_sharp_v(struct strbuf *sb, const cJSON *v) GW_MUST_CHECK;

/* ---- field errors (schema_gofmt.c) ---- */

/* The value of an error whose BadValue is omitted (Required, Forbidden, TooLong). */
#define FERR_NOVALUE ((const char *)0)

/* Appends {reason, message, field}. value is the already rendered bad value, or FERR_NOVALUE;
 * detail may be NULL or "". */
void ferr_add(cJSON *causes, const char *reason, const char *field, const char *value,
              const char *detail);
void ferr_required(cJSON *causes, const char *field, const char *detail);
void ferr_forbidden(cJSON *causes, const char *field, const char *detail);
void ferr_invalid(cJSON *causes, const char *field, const cJSON *value, const char *detail);
/* Invalid with a string bad value (rendered with %q). */
void ferr_invalid_str(cJSON *causes, const char *field, const char *value, const char *detail);
void ferr_not_supported(cJSON *causes, const char *field, const cJSON *value,
                        const char *const *valid, size_t nvalid);
void ferr_duplicate(cJSON *causes, const char *field, const cJSON *value);
/* Sorts causes by their Error() text ("<field>: <message>"), as ValidateStructural does. */
void ferr_sort(cJSON *causes);

/* ---- regular expressions (schema_regex.c) ---- */

/* Go RE2 syntax as CRD patterns use it, matched on runes (UTF-8), unanchored like
 * regexp.MatchString, in time linear in the input (a Thompson NFA, no backtracking). See the
 * .c file for what is supported; anything else fails to compile with a reason. */
struct rx;
struct rx *rx_compile(const char *pattern, char *err, size_t errlen);
bool rx_match(const struct rx *r, const char *s);
void rx_free(struct rx *r);

/* ---- the CRD registry (schema.c) ---- */

struct crd_version_ent {
  char name[32];
  bool served, storage;
  const cJSON *schema;  /* openAPIV3Schema, inside crd_entry.crd; NULL when absent */
  const cJSON *columns; /* additionalPrinterColumns or the default Age column */
};

struct crd_pattern {
  const char *src; /* points into the CRD copy */
  struct rx *rx;
};

struct crd_entry {
  struct ls_crd_info info;
  cJSON *crd; /* a private copy of the registered object */
  struct crd_version_ent v[8];
  size_t nv;
  cJSON *default_columns;
  struct crd_pattern *patterns;
  size_t npatterns;
  bool conversion_webhook;
  const cJSON *conversion_client; /* spec.conversion.webhook.clientConfig */
  bool retired;
  struct crd_entry *next;
};

/* The live entry for group/plural, or NULL. The entry is never freed (see above). */
const struct crd_entry *crd_lookup(const char *group, const char *plural);
const struct crd_version_ent *crd_entry_version(const struct crd_entry *e, const char *version);
const struct rx *crd_entry_pattern(const struct crd_entry *e, const char *src);
/* Structural defaulting alone (what kube's object defaulter does to a webhook's patched CR). */
void crd_default(const char *group, const char *plural, const char *version, cJSON *obj);

/* ---- schema internals (schema_validate.c, schema_default.c, schema_crd.c) ---- */

/* Validates data against schema as kube-openapi does (apiextensions' ValidateCustomResource);
 * errors appended to causes. prefix is kube's fldPath ("" for a custom resource, whose root
 * errors then carry the field "<nil>" as kube's do; "....default" for a CRD's default). */
void schema_validate_value(const struct crd_entry *e, const cJSON *schema, const cJSON *data,
                           const char *prefix, cJSON *causes);
/* x-kubernetes-list-type set/map uniqueness (listtype.ValidateListSetsAndMaps). */
void schema_validate_lists(const cJSON *schema, const cJSON *obj, cJSON *causes);
/* Whether s is valid for a string format kube-openapi knows ("date-time", "uuid", ...); true
 * for formats it does not check. */
bool schema_format_ok(const char *format, const char *s);
bool schema_format_known(const char *format);
/* Pruning (root: apiVersion/kind/metadata kept, metadata reduced to ObjectMeta's fields), then
 * non-nullable nulls without defaults dropped, then defaults. */
void schema_prune(cJSON *obj, const cJSON *schema, bool root);
void schema_drop_nulls(cJSON *obj, const cJSON *schema);
void schema_default(cJSON *obj, const cJSON *schema);
/* Checks the CRD object as ValidateCustomResourceDefinition does; appends causes. The patterns
 * found are compiled into e (which must be zeroed) on success. */
void crd_check(const cJSON *crd, struct crd_entry *e, cJSON *causes);
/* One version's openAPIV3Schema at path (schema_structural.c): structural invariants and the
 * OpenAPI rules, patterns compiled into e; then, once every version's patterns are in, its
 * defaults. */
void crd_check_schema(struct crd_entry *e, const cJSON *schema, const char *path, cJSON *causes);
void crd_check_defaults(struct crd_entry *e, const cJSON *schema, const char *path, cJSON *causes);
/* The schema of a property / additionalProperties / items, or NULL. */
const cJSON *schema_prop(const cJSON *schema, const char *name);
const cJSON *schema_addl(const cJSON *schema);
const cJSON *schema_items(const cJSON *schema);
bool schema_flag(const cJSON *schema, const char *name);

/* ---- webhook calls (webhook_call.c) ---- */

/* Where and how to reach a webhook: from a clientConfig ({url} or {service{namespace, name,
 * path, port}}, caBundle). A service is reached through --service-map, the TLS name checked
 * being NAME.NS.svc as kube-apiserver checks it. */
struct whc_target {
  char url[600];        /* without the query: https://NAME.NS.svc:443/path */
  char connect_to[400]; /* "NAME.NS.svc:443:HOST:PORT" for CURLOPT_CONNECT_TO, or "" */
  char dial[300];       /* HOST:PORT as Go's dial error names it */
  char *ca;             /* decoded caBundle (PEM), or NULL for the system roots */
  size_t ca_len;
  char missing[300];    /* a service absent from the map: the error kube would give */
};
gw_rc whc_target_init(struct whc_target *t, const cJSON *client_config, char *err,
                      size_t errlen) GW_MUST_CHECK;
void whc_target_release(struct whc_target *t);

struct whc_reply {
  long status;
  char *body; /* malloc'd, NUL-terminated */
  size_t len;
};
/* POSTs a JSON body to url+query. On a transport failure returns nonzero and err holds the
 * text Go's client would give after `Post "<url>": ` (e.g. "context deadline exceeded"). */
gw_rc whc_post(const struct whc_target *t, const char *query, const char *body, long timeout_ms,
               struct whc_reply *r, char *err, size_t errlen) GW_MUST_CHECK;
void whc_reply_release(struct whc_reply *r);
/* What client-go's rest client says for a non-2xx answer (the Status message in the body, or
 * its generic text for the code). */
void whc_status_error(const struct whc_reply *r, char *err, size_t errlen);
/* A random RFC 4122 version 4 UUID (37 bytes with the NUL). */
void whc_uuid(char out[37]);

/* The core's operations given to ls_hooks_init (get_namespace may be NULL). */
extern struct ls_core_ops layers_core;

/* ---- label selectors (admission_match.c) ---- */

/* metav1.LabelSelector semantics: NULL or {} matches everything. labels may be NULL. On a
 * malformed selector returns false and sets *bad. */
bool selector_matches(const cJSON *sel, const cJSON *labels, bool *bad);

#endif
