#include "arena.h"

#include <cJSON.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
  struct arena_chunk *next;
  size_t size;
  size_t used;
  max_align_t data[];
};

#define ALIGN (sizeof(max_align_t))

static size_t round_up(size_t n)
{
  return (n + ALIGN - 1) & ~(ALIGN - 1);
}

void arena_init(struct arena *a, size_t chunk_size, size_t limit)
{
  a->head = NULL;
  a->chunk_size = chunk_size ? chunk_size : 16384;
  a->total = 0;
  a->limit = limit;
}

/* A new chunk for a block of n bytes (rounded); NULL past the limit or when out of memory. */
static void *alloc_chunk(struct arena *a, size_t n)
{
  size_t size = n > a->chunk_size ? n : a->chunk_size;
  if(a->limit && a->total + size > a->limit)
    return NULL;
  struct arena_chunk *c = malloc(sizeof(*c) + size);
  if(!c)
    return NULL;
  c->size = size;
  c->used = n;
  c->next = a->head;
  a->head = c;
  a->total += size;
  return c->data;
}

/* arena_alloc, inlined into the cJSON hook too: a review makes hundreds of blocks. */
static inline void *alloc_in(struct arena *a, size_t n)
{
  n = round_up(n ? n : 1);
  struct arena_chunk *c = a->head;
  if(!c || c->size - c->used < n)
    return alloc_chunk(a, n);
  void *p = (char *)c->data + c->used;
  c->used += n;
  return p;
}

void *arena_alloc(struct arena *a, size_t n)
{
  return alloc_in(a, n);
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

/* Every block handed to cJSON starts with this header, so free can tell heap from arena. */
enum { TAG_HEAP = 0x68656170, TAG_ARENA = 0x6172656e };
union block_hdr {
  uint32_t tag;
  max_align_t align;
};

static void *json_malloc(size_t n)
{
  union block_hdr *h;
  if(active) {
    h = alloc_in(active, sizeof(*h) + n);
    if(!h)
      return NULL;
    h->tag = TAG_ARENA;
  } else {
    h = malloc(sizeof(*h) + n);
    if(!h)
      return NULL;
    h->tag = TAG_HEAP;
  }
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
  }
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

/* Installed before main() so no cJSON block can exist without a header. */
__attribute__((constructor)) static void arena_ctor(void)
{
  arena_install_json_hooks();
}
