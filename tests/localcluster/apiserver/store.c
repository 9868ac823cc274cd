/* store.c: the object store. One global lock; entries sorted by (group, resource, namespace,
 * name) as etcd keys sort; one monotonic resourceVersion; a ring of the last events for watches;
 * a uid index for the garbage collector and bound tokens. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static struct ls_entry **entries;
static size_t nentries, centries;
static uint64_t cur_rv;

/* uid index: open addressing, tombstones as (void *)1 */
static struct ls_entry **uidtab;
static size_t uidcap, uidused;
#define TOMB ((struct ls_entry *)1)

static struct ls_event *ring;
static size_t ring_cap, ring_head, ring_len;
static uint64_t floor_rv; /* every event with rv > floor_rv is in the ring */

volatile int ls_watch_epoch;

void store_init(size_t history)
{
  ring_cap = history ? history : 1;
  ring = calloc(ring_cap, sizeof(*ring));
  uidcap = 1024;
  uidtab = calloc(uidcap, sizeof(*uidtab));
  if(!ring || !uidtab)
    abort();
}

static void event_release(struct ls_event *e)
{
  free(e->group);
  free(e->resource);
  free(e->ns);
  ls_obj_unref(e->obj);
  ls_obj_unref(e->prev);
  memset(e, 0, sizeof(*e));
}

static void entry_free(struct ls_entry *e)
{
  free(e->group);
  free(e->resource);
  free(e->ns);
  free(e->name);
  ls_obj_unref(e->obj);
  free(e);
}

void store_shutdown(void)
{
  for(size_t i = 0; i < nentries; i++)
    entry_free(entries[i]);
  free(entries);
  entries = NULL;
  nentries = centries = 0;
  for(size_t i = 0; i < ring_len; i++)
    event_release(&ring[(ring_head + i) % ring_cap]);
  free(ring);
  ring = NULL;
  free(uidtab);
  uidtab = NULL;
}

void store_lock(void)
{
  pthread_mutex_lock(&mu);
}

void store_unlock(void)
{
  pthread_mutex_unlock(&mu);
}

uint64_t store_rv(void)
{
  return cur_rv;
}

static int keycmp(const char *g, const char *r, const char *ns, const char *name,
                  const struct ls_entry *e)
{
  int c = strcmp(g, e->group);
  if(!c)
    c = strcmp(r, e->resource);
  if(!c)
    c = strcmp(ns, e->ns);
  if(!c)
    c = strcmp(name, e->name);
  return c;
}

/* The index of the first entry >= key. */
static size_t lower_bound(const char *g, const char *r, const char *ns, const char *name)
{
  size_t lo = 0, hi = nentries;
  while(lo < hi) {
    size_t mid = (lo + hi) / 2;
    if(keycmp(g, r, ns, name, entries[mid]) > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static uint64_t uidhash(const char *s)
{
  uint64_t h = 1469598103934665603ULL;
  for(; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void uid_insert(struct ls_entry *e);

static void uid_grow(void)
{
  struct ls_entry **old = uidtab;
  size_t oldcap = uidcap;
  uidcap *= 2;
  uidtab = calloc(uidcap, sizeof(*uidtab));
  if(!uidtab)
    abort();
  uidused = 0;
  for(size_t i = 0; i < oldcap; i++)
    if(old[i] && old[i] != TOMB)
      uid_insert(old[i]);
  free(old);
}

static void uid_insert(struct ls_entry *e)
{
  if(!e->uid[0])
    return;
  if((uidused + 1) * 2 > uidcap)
    uid_grow();
  size_t i = uidhash(e->uid) & (uidcap - 1);
  while(uidtab[i] && uidtab[i] != TOMB)
    i = (i + 1) & (uidcap - 1);
  if(!uidtab[i])
    uidused++;
  uidtab[i] = e;
}

static size_t uid_slot(const char *uid)
{
  size_t i = uidhash(uid) & (uidcap - 1);
  for(size_t n = 0; n < uidcap && uidtab[i]; n++, i = (i + 1) & (uidcap - 1))
    if(uidtab[i] != TOMB && !strcmp(uidtab[i]->uid, uid))
      return i;
  return (size_t)-1;
}

static void uid_erase(const struct ls_entry *e)
{
  if(!e->uid[0])
    return;
  size_t i = uid_slot(e->uid);
  if(i != (size_t)-1 && uidtab[i] == e)
    uidtab[i] = TOMB;
}

const struct ls_entry *store_by_uid(const char *uid)
{
  if(!uid || !*uid)
    return NULL;
  size_t i = uid_slot(uid);
  return i == (size_t)-1 ? NULL : uidtab[i];
}

const struct ls_entry *store_get(const char *group, const char *resource, const char *ns,
                                 const char *name)
{
  size_t i = lower_bound(group, resource, ns ? ns : "", name);
  if(i < nentries && !keycmp(group, resource, ns ? ns : "", name, entries[i]))
    return entries[i];
  return NULL;
}

static char *xstrdup(const char *s)
{
  char *d = strdup(s ? s : "");
  if(!d)
    abort();
  return d;
}

static void log_event(enum ls_event_type type, const struct ls_entry *e, struct ls_obj *prev)
{
  if(ring_len == ring_cap) {
    struct ls_event *old = &ring[ring_head];
    floor_rv = old->rv;
    event_release(old);
    ring_head = (ring_head + 1) % ring_cap;
    ring_len--;
  }
  struct ls_event *ev = &ring[(ring_head + ring_len) % ring_cap];
  ev->rv = cur_rv;
  ev->type = type;
  ev->group = xstrdup(e->group);
  ev->resource = xstrdup(e->resource);
  ev->ns = xstrdup(e->ns);
  ev->obj = ls_obj_ref(e->obj);
  ev->prev = prev ? ls_obj_ref(prev) : NULL;
  ring_len++;
  pthread_cond_broadcast(&changed);
}

static void stamp_rv(cJSON *obj, uint64_t rv)
{
  char buf[32];
  snprintf(buf, sizeof(buf), "%llu", (unsigned long long)rv);
  ls_set_str(ls_meta_obj(obj), "resourceVersion", buf);
}

uint64_t store_put(const char *group, const char *resource, const char *ns, const char *name,
                   cJSON *obj)
{
  ns = ns ? ns : "";
  cur_rv++;
  stamp_rv(obj, cur_rv);
  size_t i = lower_bound(group, resource, ns, name);
  struct ls_entry *e;
  struct ls_obj *prev = NULL;
  if(i < nentries && !keycmp(group, resource, ns, name, entries[i])) {
    e = entries[i];
    prev = e->obj;
    uid_erase(e);
  } else {
    if(nentries == centries) {
      centries = centries ? centries * 2 : 256;
      entries = realloc(entries, centries * sizeof(*entries));
      if(!entries)
        abort();
    }
    e = calloc(1, sizeof(*e));
    if(!e)
      abort();
    e->group = xstrdup(group);
    e->resource = xstrdup(resource);
    e->ns = xstrdup(ns);
    e->name = xstrdup(name);
    memmove(entries + i + 1, entries + i, (nentries - i) * sizeof(*entries));
    entries[i] = e;
    nentries++;
  }
  e->obj = ls_obj_new(obj);
  e->rv = cur_rv;
  snprintf(e->uid, sizeof(e->uid), "%s", ls_meta(obj, "uid"));
  uid_insert(e);
  log_event(prev ? LS_MODIFIED : LS_ADDED, e, prev);
  ls_obj_unref(prev);
  return cur_rv;
}

uint64_t store_remove(const char *group, const char *resource, const char *ns, const char *name)
{
  ns = ns ? ns : "";
  size_t i = lower_bound(group, resource, ns, name);
  if(i >= nentries || keycmp(group, resource, ns, name, entries[i]))
    return 0;
  struct ls_entry *e = entries[i];
  cur_rv++;
  cJSON *last = cJSON_Duplicate(e->obj->json, 1);
  stamp_rv(last, cur_rv);
  ls_obj_unref(e->obj);
  e->obj = ls_obj_new(last);
  log_event(LS_DELETED, e, NULL);
  uid_erase(e);
  memmove(entries + i, entries + i + 1, (nentries - i - 1) * sizeof(*entries));
  nentries--;
  entry_free(e);
  return cur_rv;
}

void store_each(const char *group, const char *resource, const char *ns, const char *after,
                store_each_fn fn, void *ctx)
{
  size_t i;
  if(after && *after) {
    char ans[256], aname[256];
    const char *slash = strchr(after, '/');
    if(slash) {
      snprintf(ans, sizeof(ans), "%.*s", (int)(slash - after), after);
      snprintf(aname, sizeof(aname), "%s", slash + 1);
    } else {
      ans[0] = '\0';
      snprintf(aname, sizeof(aname), "%s", after);
    }
    i = lower_bound(group, resource, ans, aname);
    if(i < nentries && !keycmp(group, resource, ans, aname, entries[i]))
      i++;
  } else
    i = lower_bound(group, resource, ns ? ns : "", "");
  for(; i < nentries; i++) {
    const struct ls_entry *e = entries[i];
    if(strcmp(e->group, group) || strcmp(e->resource, resource))
      break;
    if(ns && strcmp(e->ns, ns)) {
      if(strcmp(e->ns, ns) > 0)
        break;
      continue;
    }
    if(fn(ctx, e))
      break;
  }
}

void store_each_all(store_each_fn fn, void *ctx)
{
  for(size_t i = 0; i < nentries; i++)
    if(fn(ctx, entries[i]))
      break;
}

int store_events_after(uint64_t after, struct ls_event **out, size_t *n, size_t max,
                       uint64_t *oldest)
{
  *out = NULL;
  *n = 0;
  if(after < floor_rv) {
    *oldest = floor_rv + 1;
    return -1;
  }
  /* events are in rv order: find the first with rv > after */
  size_t lo = 0, hi = ring_len;
  while(lo < hi) {
    size_t mid = (lo + hi) / 2;
    if(ring[(ring_head + mid) % ring_cap].rv <= after)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t cnt = ring_len - lo;
  if(cnt > max)
    cnt = max;
  if(!cnt)
    return 0;
  struct ls_event *v = calloc(cnt, sizeof(*v));
  if(!v)
    abort();
  for(size_t k = 0; k < cnt; k++) {
    const struct ls_event *src = &ring[(ring_head + lo + k) % ring_cap];
    v[k].rv = src->rv;
    v[k].type = src->type;
    v[k].group = xstrdup(src->group);
    v[k].resource = xstrdup(src->resource);
    v[k].ns = xstrdup(src->ns);
    v[k].obj = ls_obj_ref(src->obj);
    v[k].prev = ls_obj_ref(src->prev);
  }
  *out = v;
  *n = cnt;
  return 0;
}

void store_events_free(struct ls_event *ev, size_t n)
{
  for(size_t i = 0; i < n; i++)
    event_release(&ev[i]);
  free(ev);
}

void store_wait(int timeout_ms)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if(ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&changed, &mu, &ts);
}

void store_broadcast(void)
{
  pthread_cond_broadcast(&changed);
}

void store_compact(void)
{
  for(size_t i = 0; i < ring_len; i++)
    event_release(&ring[(ring_head + i) % ring_cap]);
  ring_head = ring_len = 0;
  floor_rv = cur_rv;
  pthread_cond_broadcast(&changed);
}
