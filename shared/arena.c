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

/* arena_alloc's blocks suit any type (malloc's promise); cJSON's need only 8 bytes (pointers,
 * doubles, and text): rounding its 64-byte nodes and short strings up to 32 (sizeof
 * max_align_t) and adding a 32-byte header made a 123 KB ConversionReview's tree take 2.1 MB,
 * and a request's time went to writing cache lines. */
#define ALIGN (_Alignof(max_align_t))
#define JSON_ALIGN 8

void arena_init(struct arena *a, size_t chunk_size, size_t limit)
{
  a->head = NULL;
  a->chunk_size = chunk_size ? chunk_size : 16384;
  a->total = 0;
  a->limit = limit;
}

/* A new chunk for a block of n bytes; NULL past the limit or when out of memory. */
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

/* n bytes at a multiple of align (a power of two at most ALIGN) in the current chunk, or in a
 * new one. Inlined into the cJSON hook too: a review makes thousands of blocks. */
static inline void *alloc_in(struct arena *a, size_t n, size_t align)
{
  struct arena_chunk *c = a->head;
  if(c) {
    size_t at = (c->used + align - 1) & ~(align - 1);
    if(at <= c->size && c->size - at >= n) {
      c->used = at + n;
      return (char *)c->data + at;
    }
  }
  return alloc_chunk(a, n ? n : 1);
}

void *arena_alloc(struct arena *a, size_t n)
{
  return alloc_in(a, n, ALIGN);
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

/* Every block handed to cJSON starts with this header, so free can tell heap from arena; 8
 * bytes, so the block after it is aligned as cJSON needs (JSON_ALIGN). */
enum { TAG_HEAP = 0x68656170, TAG_ARENA = 0x6172656e };
union block_hdr {
  uint32_t tag;
  uint64_t align;
};
_Static_assert(sizeof(union block_hdr) == JSON_ALIGN, "the header keeps blocks aligned");

static void *json_malloc(size_t n)
{
  union block_hdr *h;
  if(active) {
    h = alloc_in(active, sizeof(*h) + n, JSON_ALIGN);
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
