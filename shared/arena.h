/*
 * arena.h: a per-request memory arena, freed in one call.
 *
 * A request allocates from its arena and never frees piecemeal; arena_release() frees all of it.
 * While an arena is active on a thread (arena_activate), every cJSON allocation on that thread
 * comes from it and cJSON_Delete() of such nodes is a no-op, so request handlers may build and
 * drop JSON trees freely. Memory cJSON allocated outside an arena is freed normally whatever is
 * active: each block carries a tag saying where it came from.
 *
 * An arena refuses to grow past its limit (arena_alloc returns NULL), which bounds what one
 * request can take.
 */
#ifndef GW_ARENA_H
#define GW_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
  struct arena_chunk *head;
  size_t chunk_size;
  size_t total;
  size_t limit;
};

void arena_init(struct arena *a, size_t chunk_size, size_t limit);
void *arena_alloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
void arena_release(struct arena *a);

/* Routes this thread's cJSON allocations to a (or back to the heap with NULL). Returns the
 * previously active arena so calls nest. */
struct arena *arena_activate(struct arena *a);

/* Installs the cJSON hooks; called once at start (idempotent, thread-safe). */
void arena_install_json_hooks(void);

#endif
