/*
 * policy.h: the cluster admin's admission policy, one JSON file (docs/operations/policy.md).
 *
 * policy_parse() validates the whole document and either returns a complete policy or an error
 * naming the first bad field; a policy is immutable once built and shared read-only between
 * threads (the webhook swaps a pointer on reload and frees the old one after a grace period).
 * policy_default() is what applies with no file: no registry or metadata restriction, any
 * authenticated user may approve, self-approval forbidden, the built-in limits.
 */
#ifndef GW_POLICY_H
#define GW_POLICY_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc.h"

struct policy_meta_rule {
  char *key;      /* a glob on the key: "team", "example.com/ *" (no space), "*" */
  char **values;  /* NULL-terminated; NULL = any value */
};

struct policy_meta_rules {
  struct policy_meta_rule *allow; /* empty = every key allowed */
  size_t nallow;
  struct policy_meta_rule *deny;
  size_t ndeny;
};

struct policy_limits {
  int max_table_jobs;
  int max_index_jobs;
  int max_backoff_limit;
  int max_pre_copy_rounds;
  int max_verification_timeout_seconds;
  int64_t max_work_dir_bytes;
  int max_freeze_budget_ms;
};

struct policy {
  char **registries; /* NULL-terminated image prefixes; empty = any */
  size_t nregistries;
  struct policy_meta_rules labels, annotations;
  char **approver_users;
  size_t napprover_users;
  char **approver_groups;
  size_t napprover_groups;
  bool allow_self_approval;
  /* "ptah": what PtahSchema plans are verified against (docs/operations/policy.md) */
  bool ptah_allow_destructive;     /* false: no destructive plan, whatever a spec opts in to */
  bool ptah_require_source_digest; /* every PtahSchema pins spec.verification.sourceDigest */
  char **ptah_denied_statements;   /* globs on plan statement labels ("drop table *") */
  size_t nptah_denied_statements;
  struct policy_limits limits;
  char digest[72]; /* sha256:<hex> of the source text, for logs and metrics */
};

/* Builds a policy from JSON text. On error *out is NULL and err names the field. */
gw_rc policy_parse(const char *text, size_t len, struct policy **out, char *err, size_t errlen)
  GW_MUST_CHECK;
struct policy *policy_default(void);
void policy_free(struct policy *p);

/* Whether a container image may be used (prefix match on allowed registries). */
bool policy_image_allowed(const struct policy *p, const char *image);
/* NULL when the key/value pair passes the rules, else the reason ("denied by the deny rule for ..."). */
const char *policy_meta_check(const struct policy_meta_rules *r, const char *key,
                              const char *value, char *buf, size_t buflen);
/* Whether user (or one of its groups) is an allowed approver. */
bool policy_is_approver(const struct policy *p, const char *user, const char *const *groups,
                        size_t ngroups);
/* Glob with '*' (any run) and '?' (one character). */
bool policy_glob(const char *pattern, const char *s);

#endif
