/*
 * format.h: the string formats of the Kubernetes and godwit APIs, each a checker plus what the
 * CRD and the docs say about it.
 *
 * A checker returns NULL when s is valid, else a short phrase saying what is wrong, written to
 * follow "<field>: " in a message ("must be a lower-case DNS label (a-z, 0-9 and '-', at most 63
 * characters)"). Checkers never allocate.
 */
#ifndef GW_FORMAT_H
#define GW_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

struct sch_format {
  const char *name;                 /* docs: "DNS-1123 label" */
  const char *(*check)(const char *s);
  const char *pattern;              /* CRD openAPI pattern, or NULL */
  int max_length;                   /* CRD maxLength, or 0 */
  const char *const *examples;      /* NULL-terminated; first is used in docs */
};

extern const struct sch_format fmt_dns1123_label;
extern const struct sch_format fmt_dns1123_subdomain;  /* object names */
extern const struct sch_format fmt_secret_key;         /* a key in a Secret or ConfigMap */
extern const struct sch_format fmt_qualified_name;     /* label and annotation keys */
extern const struct sch_format fmt_label_value;
extern const struct sch_format fmt_image;              /* container image reference */
extern const struct sch_format fmt_quantity;           /* resource.Quantity */
extern const struct sch_format fmt_duration;           /* Go duration: 90s, 1h30m */
extern const struct sch_format fmt_sha256_digest;      /* sha256:<64 hex> */
extern const struct sch_format fmt_pg_identifier;      /* a PostgreSQL name, up to 63 bytes */
extern const struct sch_format fmt_pg_qualified;       /* schema.table, or table */
extern const struct sch_format fmt_username;           /* a Kubernetes user name */

const char *fmt_check_dns1123_label(const char *s);
const char *fmt_check_dns1123_subdomain(const char *s);
const char *fmt_check_qualified_name(const char *s);
const char *fmt_check_label_value(const char *s);

/* Parses a Kubernetes quantity into its value rounded up to an integer (bytes, cores x 1, ...).
 * Fractions below one ("500m") round up to 1; false when malformed or beyond int64. */
bool quantity_parse(const char *s, int64_t *out);
/* Parses a Go duration into milliseconds; false when malformed or negative. */
bool duration_parse_ms(const char *s, int64_t *out_ms);

#endif
