/*
 * json.h: cJSON helpers shared by every process.
 *
 * Parsing is strict: the whole buffer must be one JSON value (cJSON alone accepts trailing
 * garbage), nesting deeper than JSON_MAX_DEPTH is refused before cJSON recurses, and the error
 * says where the input went wrong. Dotted paths ("spec.clone.tableJobs") address object members;
 * they never cross arrays. Strings returned by cJSON_Print* must be released with cJSON_free().
 */
#ifndef GW_JSON_H
#define GW_JSON_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

#define JSON_MAX_DEPTH 100

/* Parses buf[0..len). On failure *out is NULL and errbuf holds a one-line reason. */
gw_rc json_parse_strict(const char *buf, size_t len, cJSON **out, char *errbuf, size_t errlen)
  GW_MUST_CHECK;

/*
 * Members kept as their text. json_parse_strict_raw checks the values of members named in names
 * (NULL-terminated) whose value sits at depth (the root value is at 1, its members' values at 2,
 * and so on) exactly as it checks the rest, and keeps each as a cJSON_Raw node holding the value's
 * text as it was sent: nothing is built for it, and json_print_sb prints it back byte for byte.
 * A reader that needs such a value calls json_materialize, which parses it in place (the node
 * keeps its address and its place among its siblings). The dotted-path helpers below do that for
 * every node they walk into or return, so code that reaches a member through them never sees a
 * Raw node; code that reads members with cJSON's own calls must materialize first.
 */
struct json_raw {
  int depth;
  const char *const *names;
};
gw_rc json_parse_strict_raw(const char *buf, size_t len, const struct json_raw *raw, cJSON **out,
                            char *errbuf, size_t errlen) GW_MUST_CHECK;
/* Parses a cJSON_Raw node in place; GW_OK and nothing done for any other node. Only memory can
 * fail for a node json_parse_strict_raw made (its text was checked). */
gw_rc json_materialize(cJSON *n);
/* False when n is a Raw node whose text cannot hold key as a member name (no escape, and key does
 * not occur in it); true otherwise, so a reader looking for key knows whether to materialize. */
bool json_raw_may_hold(const cJSON *n, const char *key);

const cJSON *json_get(const cJSON *root, const char *path);
cJSON *json_get_mut(cJSON *root, const char *path);
/* NULL when missing or not a string. */
const char *json_get_str(const cJSON *root, const char *path);
bool json_get_bool(const cJSON *root, const char *path, bool dflt);
/* The parent of the last path element, created as empty objects where missing. NULL when a
 * component exists and is not an object. *last receives the final element name. */
cJSON *json_ensure_parent(cJSON *root, const char *path, const char **last);
/* Sets path to item (taking ownership), replacing what was there. */
gw_rc json_set(cJSON *root, const char *path, cJSON *item) GW_MUST_CHECK;
gw_rc json_set_str(cJSON *root, const char *path, const char *s) GW_MUST_CHECK;
/* Removes path if present. */
void json_remove(cJSON *root, const char *path);
/* Detaches path and returns it (caller owns), or NULL. */
cJSON *json_detach(cJSON *root, const char *path);
/* A copy of v's nodes that shares v's strings (names and values, flagged so cJSON_Delete leaves
 * them): for a tree that lives no longer than v, as a review's copies in its arena. */
cJSON *json_dup_shared(const cJSON *v);
/* json_detach, then removes every parent object (never root) that the removal left empty. */
cJSON *json_detach_prune(cJSON *root, const char *path);

/* Deep equality: same type; numbers equal within a relative DBL_EPSILON (as cJSON_Compare);
 * arrays element by element; objects with the same number of members, each member of one
 * equal to the member of the other with its key (the first one, if a key repeats; members in
 * the same order compare by position, so an object always equals its copy). Time is linear in
 * the size of the values, n log n in the width of objects whose members differ in order.
 * Never call cJSON_Compare on data from a request: cJSON 1.7.15 compares every object member
 * twice, which doubles the work at each nesting level (an equal pair of 30-level objects costs
 * 2^30 comparisons), and looks members up linearly (quadratic in the width). */
bool json_equal(const cJSON *a, const cJSON *b);
/* The same for two optional values: absent (NULL) and JSON null are one, and equal each other. */
bool json_equal_opt(const cJSON *a, const cJSON *b);

/* The metav1.Condition (or Job condition) of type in obj's status.conditions, or NULL; and
 * whether it has status "True". The controller's conditions.h writes them. */
const cJSON *json_condition(const cJSON *obj, const char *type);
bool json_condition_true(const cJSON *obj, const char *type);

/* The members of an object sorted by key, for lookups in log n (json_index_get: the first
 * member with the key, as cJSON_GetObjectItemCaseSensitive, or NULL). If the index cannot be
 * allocated, init returns GW_ENOMEM and lookups search linearly: callers may ignore it. The
 * object must not change while indexed. */
struct json_index {
  const cJSON *obj;
  void *v;
  size_t n;
};
gw_rc json_index_init(struct json_index *ix, const cJSON *obj);
const cJSON *json_index_get(const struct json_index *ix, const char *key);
void json_index_release(struct json_index *ix);

/* The JSON type name used in messages: "string", "integer", "number", "boolean", "object",
 * "array", "null". */
const char *json_type_name(const cJSON *v);
bool json_is_integer(const cJSON *v);
/* Prints v compactly into a malloc'd string (free()), or NULL. Short values only; used for
 * messages, truncated at max bytes with "...". */
char *json_preview(const cJSON *v, size_t max);

/* Object members sorted by key, recursively, printed without spaces: the canonical form used
 * for digests. The result must be released with cJSON_free(). */
char *json_print_canonical(const cJSON *v);

struct strbuf;
/* Appends v printed as cJSON_PrintUnformatted() prints it, byte for byte (the same escapes, the
 * same numbers), in one growing buffer: no intermediate copies, no format parsing for integers
 * and plain strings. For answers that may be large (a ConversionReview of many objects).
 * GW_EINVAL for an item cJSON would not print (an invalid type, a Raw without text). */
gw_rc json_print_sb(struct strbuf *sb, const cJSON *v) GW_MUST_CHECK;

#endif
