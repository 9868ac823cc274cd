/*
 * strmap.h: a hash map from NUL-terminated strings to pointers, for the controller's caches and
 * queues (keys are "namespace/name").
 *
 * The map copies keys and owns the copies; values are the caller's (strmap_release can free
 * them). Not thread-safe: the owner holds its own lock. Iteration order is unspecified, and the
 * map must not change during strmap_foreach except through the callback's return value.
 */
#ifndef GW_CTRL_STRMAP_H
#define GW_CTRL_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "rc.h"

struct strmap_node;

struct strmap {
  struct strmap_node **buckets;
  size_t nbuckets;
  size_t len;
};

void strmap_init(struct strmap *m);
/* Frees every key and node; free_val (may be NULL) is called on each value. */
void strmap_release(struct strmap *m, void (*free_val)(void *));
void *strmap_get(const struct strmap *m, const char *key);
/* Inserts or replaces; the old value (or NULL) goes to *old when old is not NULL. */
gw_rc strmap_put(struct strmap *m, const char *key, void *val, void **old) GW_MUST_CHECK;
/* Removes key; returns its value, or NULL when it was absent. */
void *strmap_del(struct strmap *m, const char *key);
static inline size_t strmap_len(const struct strmap *m)
{
  return m->len;
}
/* Calls fn for each entry; fn returns 1 to delete the entry (after which it must not use key),
 * 0 to keep it. */
void strmap_foreach(struct strmap *m, int (*fn)(void *ctx, const char *key, void *val), void *ctx);

#endif
