#include "strmap.h"

#include <stdlib.h>
#include <string.h>

struct strmap_node {
  struct strmap_node *next;
  uint64_t hash;
  void *val;
  char key[];
};

static uint64_t hash_str(const char *s)
{
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for(; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h;
}

void strmap_init(struct strmap *m)
{
  m->buckets = NULL;
  m->nbuckets = 0;
  m->len = 0;
}

void strmap_release(struct strmap *m, void (*free_val)(void *))
{
  for(size_t i = 0; i < m->nbuckets; i++) {
    struct strmap_node *n = m->buckets[i];
    while(n) {
      struct strmap_node *next = n->next;
      if(free_val)
        free_val(n->val);
      free(n);
      n = next;
    }
  }
  free(m->buckets);
  strmap_init(m);
}

static struct strmap_node **find(const struct strmap *m, const char *key, uint64_t h)
{
  if(!m->nbuckets)
    return NULL;
  struct strmap_node **p = &m->buckets[h & (m->nbuckets - 1)];
  for(; *p; p = &(*p)->next)
    if((*p)->hash == h && !strcmp((*p)->key, key))
      return p;
  return p;
}

void *strmap_get(const struct strmap *m, const char *key)
{
  struct strmap_node **p = find(m, key, hash_str(key));
  return p && *p ? (*p)->val : NULL;
}

static gw_rc grow(struct strmap *m)
{
  size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
  struct strmap_node **b = calloc(nb, sizeof(*b));
  if(!b)
    return GW_ENOMEM;
  for(size_t i = 0; i < m->nbuckets; i++) {
    struct strmap_node *n = m->buckets[i];
    while(n) {
      struct strmap_node *next = n->next;
      struct strmap_node **slot = &b[n->hash & (nb - 1)];
      n->next = *slot;
      *slot = n;
      n = next;
    }
  }
  free(m->buckets);
  m->buckets = b;
  m->nbuckets = nb;
  return GW_OK;
}

gw_rc strmap_put(struct strmap *m, const char *key, void *val, void **old)
{
  uint64_t h = hash_str(key);
  struct strmap_node **p = find(m, key, h);
  if(p && *p) {
    if(old)
      *old = (*p)->val;
    (*p)->val = val;
    return GW_OK;
  }
  if(old)
    *old = NULL;
  if(m->len + 1 > m->nbuckets * 3 / 4) {
    gw_rc rc = grow(m);
    if(rc)
      return rc;
    p = find(m, key, h);
  }
  size_t kl = strlen(key);
  struct strmap_node *n = malloc(sizeof(*n) + kl + 1);
  if(!n)
    return GW_ENOMEM;
  memcpy(n->key, key, kl + 1);
  n->hash = h;
  n->val = val;
  n->next = NULL;
  *p = n;
  m->len++;
  return GW_OK;
}

void *strmap_del(struct strmap *m, const char *key)
{
  struct strmap_node **p = find(m, key, hash_str(key));
  if(!p || !*p)
    return NULL;
  struct strmap_node *n = *p;
  void *v = n->val;
  *p = n->next;
  free(n);
  m->len--;
  return v;
}

void strmap_foreach(struct strmap *m, int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
  for(size_t i = 0; i < m->nbuckets; i++) {
    struct strmap_node **p = &m->buckets[i];
    while(*p) {
      struct strmap_node *n = *p;
      if(fn(ctx, n->key, n->val)) {
        *p = n->next;
        free(n);
        m->len--;
      } else {
        p = &n->next;
      }
    }
  }
}
