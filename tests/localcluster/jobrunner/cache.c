/* cache.c: what the reflectors saw of one resource, keyed by namespace/name. Small and linear:
 * a local cluster holds tens of Jobs and Pods, not thousands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jr.h"
#include "json.h"

void jr_cache_init(struct jr_cache *c)
{
  memset(c, 0, sizeof(*c));
  pthread_mutex_init(&c->mu, NULL);
}

static void clear(struct jr_cache *c)
{
  for(size_t i = 0; i < c->n; i++) {
    free(c->v[i].key);
    cJSON_Delete(c->v[i].obj);
  }
  c->n = 0;
}

void jr_cache_release(struct jr_cache *c)
{
  clear(c);
  free(c->v);
  c->v = NULL;
  c->cap = 0;
  pthread_mutex_destroy(&c->mu);
}

/* Whether resourceVersion a is older than b. Opaque strings in general; this API server's are
 * one increasing counter, which is what lets a write's answer and a late watch event be
 * ordered. Anything else is never "older". */
static bool rv_older(const cJSON *a, const cJSON *b)
{
  const char *x = json_get_str(a, "metadata.resourceVersion");
  const char *y = json_get_str(b, "metadata.resourceVersion");
  if(!x || !y)
    return false;
  char *ex, *ey;
  unsigned long long nx = strtoull(x, &ex, 10), ny = strtoull(y, &ey, 10);
  return !*ex && !*ey && *x && *y && nx < ny;
}

static bool tombstoned(const struct jr_cache *c, const cJSON *obj)
{
  const char *uid = json_get_str(obj, "metadata.uid");
  for(size_t i = 0; uid && i < JR_TOMBSTONES; i++)
    if(!strcmp(c->tomb[i], uid))
      return true;
  return false;
}

static void tombstone(struct jr_cache *c, const cJSON *obj)
{
  const char *uid = json_get_str(obj, "metadata.uid");
  if(!uid)
    return;
  snprintf(c->tomb[c->ntomb], sizeof(c->tomb[0]), "%s", uid);
  c->ntomb = (c->ntomb + 1) % JR_TOMBSTONES;
}

static ssize_t find(const struct jr_cache *c, const char *key)
{
  for(size_t i = 0; i < c->n; i++)
    if(!strcmp(c->v[i].key, key))
      return (ssize_t)i;
  return -1;
}

/* Takes obj; keeps a newer version that is already there. */
static void put(struct jr_cache *c, cJSON *obj)
{
  char key[640];
  jr_key(obj, key, sizeof(key));
  ssize_t i = find(c, key);
  if(i >= 0) {
    if(rv_older(obj, c->v[i].obj)) {
      cJSON_Delete(obj);
      return;
    }
    cJSON_Delete(c->v[i].obj);
    c->v[i].obj = obj;
    return;
  }
  if(c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    struct jr_cache_ent *v = realloc(c->v, cap * sizeof(*v));
    if(!v) {
      cJSON_Delete(obj);
      return;
    }
    c->v = v;
    c->cap = cap;
  }
  c->v[c->n].key = strdup(key);
  if(!c->v[c->n].key) {
    cJSON_Delete(obj);
    return;
  }
  c->v[c->n++].obj = obj;
}

static void del(struct jr_cache *c, const cJSON *obj)
{
  char key[640];
  ssize_t i = find(c, jr_key(obj, key, sizeof(key)));
  if(i < 0)
    return;
  free(c->v[i].key);
  cJSON_Delete(c->v[i].obj);
  c->v[i] = c->v[--c->n];
}

void jr_cache_replace(struct jr_cache *c, const cJSON *items)
{
  pthread_mutex_lock(&c->mu);
  clear(c);
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
  {
    cJSON *d = cJSON_Duplicate(it, 1);
    if(d)
      put(c, d);
  }
  c->synced = true;
  pthread_mutex_unlock(&c->mu);
}

void jr_cache_event(struct jr_cache *c, const char *type, const cJSON *obj)
{
  pthread_mutex_lock(&c->mu);
  if(!strcmp(type, "DELETED")) {
    del(c, obj);
    tombstone(c, obj);
  } else if((!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) && !tombstoned(c, obj)) {
    cJSON *d = cJSON_Duplicate(obj, 1);
    if(d)
      put(c, d);
  }
  pthread_mutex_unlock(&c->mu);
}

void jr_cache_put_if_absent(struct jr_cache *c, const cJSON *obj)
{
  char key[640];
  jr_key(obj, key, sizeof(key));
  pthread_mutex_lock(&c->mu);
  if(find(c, key) < 0 && !tombstoned(c, obj)) {
    cJSON *d = cJSON_Duplicate(obj, 1);
    if(d)
      put(c, d);
  }
  pthread_mutex_unlock(&c->mu);
}

void jr_cache_write_through(struct jr_cache *c, const cJSON *obj)
{
  char key[640];
  jr_key(obj, key, sizeof(key));
  pthread_mutex_lock(&c->mu);
  if(find(c, key) >= 0) {
    cJSON *d = cJSON_Duplicate(obj, 1);
    if(d)
      put(c, d);
  }
  pthread_mutex_unlock(&c->mu);
}

cJSON *jr_cache_snapshot(struct jr_cache *c)
{
  pthread_mutex_lock(&c->mu);
  cJSON *arr = NULL;
  if(c->synced) {
    arr = cJSON_CreateArray();
    for(size_t i = 0; arr && i < c->n; i++)
      cJSON_AddItemToArray(arr, cJSON_Duplicate(c->v[i].obj, 1));
  }
  pthread_mutex_unlock(&c->mu);
  return arr;
}
