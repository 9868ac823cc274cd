/*
 * The arena of shared/arena.h for the fuzz targets: the same interface and the same cJSON hooks,
 * but one malloc per block, so AddressSanitizer puts a redzone around every cJSON node and
 * string (an overflow from one node into the next is caught, which a chunked arena hides) and
 * quarantines them at arena_release (a pointer kept past the end of a request is caught).
 * The Makefile links it into the fuzz targets instead of shared/arena.c; the behaviour callers
 * see is the same, limit included.
 */
#include <cJSON.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

struct arena_chunk { /* here: one block */
  struct arena_chunk *next;
  size_t size;
  max_align_t data[];
};

void arena_init(struct arena *a, size_t chunk_size, size_t limit)
{
  a->head = NULL;
  a->chunk_size = chunk_size ? chunk_size : 16384;
  a->total = 0;
  a->limit = limit;
}

void *arena_alloc(struct arena *a, size_t n)
{
  if(!n)
    n = 1;
  if(a->limit && (n > a->limit || a->total > a->limit - n))
    return NULL;
  struct arena_chunk *c = malloc(sizeof(*c) + n);
  if(!c)
    return NULL;
  c->size = n;
  c->next = a->head;
  a->head = c;
  a->total += n;
  return c->data;
}

char *arena_strdup(struct arena *a, const char *s)
{
  size_t n = strlen(s) + 1;
  char *p = arena_alloc(a, n);
  if(p)
    memcpy(p, s, n);
  return p;
}

void arena_release(struct arena *a)
{
  struct arena_chunk *c = a->head;
  while(c) {
    struct arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
  a->total = 0;
}

static _Thread_local struct arena *active;

struct arena *arena_activate(struct arena *a)
{
  struct arena *prev = active;
  active = a;
  return prev;
}

enum { TAG_HEAP = 0x68656170, TAG_ARENA = 0x6172656e };
union block_hdr {
  uint32_t tag;
  max_align_t align;
};

static void *json_malloc(size_t n)
{
  union block_hdr *h = active ? arena_alloc(active, sizeof(*h) + n) : malloc(sizeof(*h) + n);
  if(!h)
    return NULL;
  h->tag = active ? TAG_ARENA : TAG_HEAP;
  return h + 1;
}

static void json_free(void *p)
{
  if(!p)
    return;
  union block_hdr *h = (union block_hdr *)p - 1;
  if(h->tag == TAG_HEAP) {
    h->tag = 0;
    free(h);
  } else if(h->tag != TAG_ARENA)
    abort(); /* not a block of ours: a double free or a foreign pointer */
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void install(void)
{
  cJSON_Hooks hooks = { json_malloc, json_free };
  cJSON_InitHooks(&hooks);
}

void arena_install_json_hooks(void)
{
  pthread_once(&hooks_once, install);
}

__attribute__((constructor)) static void arena_ctor(void)
{
  arena_install_json_hooks();
}
