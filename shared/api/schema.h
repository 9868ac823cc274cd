/*
 * schema.h: the structural schema of every kind and version, as static tables.
 *
 * One table per object: a row per field with its type, flags, range, enum, format, default and
 * description. The same tables drive
 *  - type, required, range, enum, format, length and uniqueness checks (sch_validate), with
 *    Kubernetes field paths and cause types;
 *  - defaulting (sch_default), with the apiserver's semantics: a default fills a missing (or
 *    null) field whose parent object exists, top-down, so an object default "{}" gets its own
 *    members defaulted;
 *  - the CRD openAPIV3Schema and the API reference in docs/ (manifests/gen);
 *  - the conversion engine's notion of what a version can hold (sch_find);
 *  - the round-trip property tests' object generator.
 * A table ends with a row whose name is NULL.
 */
#ifndef GW_SCHEMA_H
#define GW_SCHEMA_H

#include <cJSON.h>
#include <stdbool.h>

#include "api/fielderr.h"
#include "api/format.h"

enum sch_type {
  SCH_STRING,
  SCH_INT,
  SCH_BOOL,
  SCH_OBJECT,   /* members in .fields */
  SCH_ARRAY,    /* items of type .item; objects use .fields */
  SCH_MAP,      /* string keys (.key_format), values of type .item; objects use .fields */
  SCH_QUANTITY, /* int-or-string resource.Quantity */
  SCH_TIME,     /* RFC 3339 date-time string */
  SCH_RAW,      /* any JSON object, kept as is (x-kubernetes-preserve-unknown-fields) */
};

enum {
  SCH_REQUIRED = 1 << 0,
  SCH_PRESENCE = 1 << 1, /* presence of this object is meaningful; conversion never invents it */
  SCH_HAS_MIN = 1 << 2,
  SCH_HAS_MAX = 1 << 3,
  SCH_UNIQUE = 1 << 4,   /* array items are unique (x-kubernetes-list-type: set) */
  SCH_CONDITIONS = 1 << 5, /* array of metav1.Condition, a map list keyed by type */
};

struct sch_field {
  const char *name;
  enum sch_type type;
  unsigned flags;
  const char *desc;
  const struct sch_field *fields; /* OBJECT members; ARRAY/MAP item members when item is OBJECT */
  enum sch_type item;
  const char *const *enums;       /* NULL-terminated allowed values of a string */
  const struct sch_format *format;     /* strings, or string items of an ARRAY/MAP */
  const struct sch_format *key_format; /* MAP keys */
  long long min, max;             /* INT range (with SCH_HAS_MIN/MAX) */
  int max_len;                    /* STRING max length, 0 = none */
  int max_items;                  /* ARRAY/MAP max items, 0 = none */
  const char *dflt;               /* JSON text of the default, or NULL */
};

/* The conditions array every status carries (metav1.Condition). */
extern const struct sch_field sch_condition_fields[];
/* LocalObjectReference {name}; SecretKeySelector {name, key}. */
extern const struct sch_field sch_local_ref_fields[];
extern const struct sch_field sch_secret_key_ref_fields[];
/* ResourceRequirements {requests, limits} of quantities. */
extern const struct sch_field sch_resources_fields[];

struct strlist {
  char **v;
  size_t n, cap;
};
void strlist_init(struct strlist *l);
void strlist_release(struct strlist *l);
void strlist_addf(struct strlist *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Validates obj (an object) against fields; path is its path ("spec"). Unknown members become
 * warnings when warns is not NULL. */
void sch_validate(const struct sch_field *fields, const cJSON *obj, const char *path,
                  struct ferrs *errs, struct strlist *warns);
/* Whether every value of obj has its row's type, as far down as sch_validate looks (the items
 * of a list longer than its max_items are not looked at): sch_validate would report no
 * FERR_TYPE. The shape check before defaulting, without formats, messages or paths. */
bool sch_types_ok(const struct sch_field *fields, const cJSON *obj);
/* Fills defaults into obj (an object) in place. Returns false on allocation failure. */
bool sch_default(const struct sch_field *fields, cJSON *obj);
/* Whether sch_default would change obj (a null to drop, a default to fill, at any depth): when
 * not, a reader may use obj as the defaulted object without copying it. */
bool sch_default_changes(const struct sch_field *fields, const cJSON *obj);
/* The row named name, or NULL. */
const struct sch_field *sch_find(const struct sch_field *fields, const char *name);
/* Detaches every member of obj that fields cannot hold (recursively: an unknown name, or a known
 * name with a value of another type) into *leftover, building the same nesting there. Returns false on allocation failure. */
bool sch_split_unknown(const struct sch_field *fields, cJSON *obj, cJSON *leftover);
/* The type name for docs and messages ("integer", "string", "map[string]string", ...). */
const char *sch_type_name(const struct sch_field *f);

#endif
