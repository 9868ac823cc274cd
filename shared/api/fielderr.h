/*
 * fielderr.h: a list of field errors, like Kubernetes' field.ErrorList.
 *
 * Every failing rule adds one error; nothing stops at the first. Each error has a field path in
 * the version the user wrote ("spec.clone.tableJobs", "metadata.labels[team]"), a Kubernetes
 * cause type, and a message saying what is wrong and what to do, lower case, no final stop.
 * Errors from the admin policy are marked `policy`: a denial made only of them is a 403
 * Forbidden, anything else a 422 Invalid.
 *
 * A failed allocation inside ferrs_add() sets `oom`; callers check it once at the end.
 */
#ifndef GW_FIELDERR_H
#define GW_FIELDERR_H

#include <stdbool.h>
#include <stddef.h>

#define FERR_TYPE_MAP(X)                                 \
  X(FERR_REQUIRED, "FieldValueRequired")                   \
  X(FERR_INVALID, "FieldValueInvalid")                     \
  X(FERR_NOT_SUPPORTED, "FieldValueNotSupported")          \
  X(FERR_FORBIDDEN, "FieldValueForbidden")                 \
  X(FERR_DUPLICATE, "FieldValueDuplicate")                 \
  X(FERR_TOO_LONG, "FieldValueTooLong")                    \
  X(FERR_TOO_MANY, "FieldValueTooMany")                    \
  X(FERR_TYPE, "FieldValueTypeInvalid")

enum ferr_type {
#define FERR_ENUM(name, reason) name,
  FERR_TYPE_MAP(FERR_ENUM)
#undef FERR_ENUM
  FERR_COUNT
};

struct ferr {
  enum ferr_type type;
  bool policy;
  char *field;
  char *msg;
};

/* At most this many errors are kept; the rest are only counted (a body with thousands of bad
 * fields must not produce a denial of megabytes). */
#define FERRS_MAX 100

struct ferrs {
  struct ferr *v;
  size_t n, cap;
  size_t dropped; /* errors beyond FERRS_MAX */
  bool oom;
};

void ferrs_init(struct ferrs *e);
void ferrs_release(struct ferrs *e);
void ferrs_add(struct ferrs *e, enum ferr_type type, const char *field, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void ferrs_add_policy(struct ferrs *e, const char *field, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The Kubernetes cause reason of a type ("FieldValueInvalid"). */
const char *ferr_reason(enum ferr_type t);
/* True when every error is a policy refusal (and there is at least one). */
bool ferrs_all_policy(const struct ferrs *e);
/* Rewrites each field through fn (for version path translation); fn returns a malloc'd path or
 * NULL to keep it. */
void ferrs_map_fields(struct ferrs *e, char *(*fn)(const char *field, const void *arg),
                      const void *arg);
/* Joins "a.b.c" style paths: path_join(buf, n, "spec", "clone") -> "spec.clone"; an empty base
 * yields the name alone. Returns buf. */
char *path_join(char *buf, size_t n, const char *base, const char *name);

#endif
