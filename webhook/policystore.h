/*
 * policystore.h: the admission policy in force, swapped on reload while requests use it.
 *
 * Readers take a reference (policy_store_acquire) for the length of a request and give it back;
 * a reload publishes a new policy and the old one is freed when its last reader is done. An
 * invalid file keeps the last good policy: the reload fails with the reason, and the caller logs
 * and counts it. Without a path, the built-in default policy is in force from the start.
 */
#ifndef GW_POLICYSTORE_H
#define GW_POLICYSTORE_H

#include <stdbool.h>

#include "policy.h"
#include "rc.h"

struct policy_ref {
  const struct policy *policy; /* NULL when none is loaded yet */
  void *token;
};

void policy_store_init(const char *path);
/* Re-reads the file when it changed; *changed says whether a new policy is in force. */
gw_rc policy_store_reload(bool *changed, char *err, size_t errlen) GW_MUST_CHECK;
bool policy_store_loaded(void);
struct policy_ref policy_store_acquire(void);
void policy_store_release(struct policy_ref ref);
/* Copies the digest of the policy in force ("none" when none). */
void policy_store_digest(char *buf, size_t len);
void policy_store_shutdown(void);

#endif
