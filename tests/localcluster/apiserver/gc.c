/* gc.c: the controllers a bare API server needs, in one thread: ownerReference garbage
 * collection (background: dependents of a vanished owner go; foreground: the foregroundDeletion
 * finalizer waits for blockOwnerDeletion dependents; orphan: references removed, then the
 * finalizer), the namespace controller (content of a terminating namespace deleted, then the
 * namespace), the CRD finalizer (custom resources of a deleted CRD), and the end of a graceful
 * Pod deletion nobody finished. Each pass scans the store under the lock, then acts through the
 * API's own write path (admission included) without it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rest.h"

enum work_kind { W_ORPHAN, W_FOREGROUND, W_DELETE, W_DROP_REFS, W_NAMESPACE, W_CRD, W_POD };

struct work {
  enum work_kind k;
  char group[128], resource[128], ns[254], name[254], uid[40];
};

struct works {
  struct work *v;
  size_t n, cap;
};

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int kicked, stop;

void ls_gc_kick(void)
{
  pthread_mutex_lock(&mu);
  kicked = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}

static void push(struct works *w, enum work_kind k, const struct ls_entry *e)
{
  if(w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 32;
    w->v = realloc(w->v, w->cap * sizeof(*w->v));
    if(!w->v)
      abort();
  }
  struct work *x = &w->v[w->n++];
  x->k = k;
  snprintf(x->group, sizeof(x->group), "%s", e->group);
  snprintf(x->resource, sizeof(x->resource), "%s", e->resource);
  snprintf(x->ns, sizeof(x->ns), "%s", e->ns);
  snprintf(x->name, sizeof(x->name), "%s", e->name);
  snprintf(x->uid, sizeof(x->uid), "%s", e->uid);
}

static const cJSON *owner_refs(const cJSON *obj)
{
  return cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "ownerReferences");
}

static int scan_one(void *ctx, const struct ls_entry *e)
{
  struct works *w = ctx;
  const cJSON *obj = e->obj->json;
  const char *dts = ls_meta(obj, "deletionTimestamp");
  bool deleting = *dts != '\0';
  if(deleting) {
    if(ls_has_finalizer(obj, "orphan"))
      push(w, W_ORPHAN, e);
    if(ls_has_finalizer(obj, "foregroundDeletion"))
      push(w, W_FOREGROUND, e);
    if(!strcmp(e->resource, "namespaces") && !*e->group)
      push(w, W_NAMESPACE, e);
    if(!strcmp(e->resource, "customresourcedefinitions") &&
       ls_has_finalizer(obj, "customresourcecleanup.apiextensions.k8s.io"))
      push(w, W_CRD, e);
    if(!strcmp(e->resource, "pods") && !*e->group &&
       !cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"),
                                               "finalizers")) &&
       ls_time_parse(dts) <= time(NULL))
      push(w, W_POD, e);
  }
  int absent = 0, present = 0;
  const cJSON *ref;
  cJSON_ArrayForEach(ref, owner_refs(obj))
  {
    const struct ls_entry *o = store_by_uid(ls_str(ref, "uid"));
    if(o && (!*e->ns || !strcmp(o->ns, e->ns) || !*o->ns))
      present++;
    else
      absent++;
  }
  if(absent && present)
    push(w, W_DROP_REFS, e);
  else if(absent && !deleting)
    push(w, W_DELETE, e);
  return 0;
}

/* Entries that name uid among their owners. */
struct deps {
  const char *uid;
  struct works out;
  int blocking;
};

static int find_dep(void *ctx, const struct ls_entry *e)
{
  struct deps *d = ctx;
  const cJSON *ref;
  cJSON_ArrayForEach(ref, owner_refs(e->obj->json))
  {
    if(!strcmp(ls_str(ref, "uid"), d->uid)) {
      if(cJSON_IsTrue(cJSON_GetObjectItem(ref, "blockOwnerDeletion")))
        d->blocking++;
      if(!*ls_meta(e->obj->json, "deletionTimestamp"))
        push(&d->out, W_DELETE, e);
      else
        push(&d->out, W_DROP_REFS, e); /* already going: only counted */
      break;
    }
  }
  return 0;
}

static void report(const char *what, const struct work *x, cJSON *st)
{
  if(!st)
    return;
  const cJSON *code = cJSON_GetObjectItem(st, "code");
  if(!(cJSON_IsNumber(code) && code->valueint == 404))
    log_kv(LOG_DEBUG, what, "resource", x->resource, "namespace", x->ns, "name", x->name,
           "error", ls_str(st, "message"), LOG_END);
  cJSON_Delete(st);
}

static bool drop_finalizer(void *ctx, cJSON *obj)
{
  if(!ls_has_finalizer(obj, ctx))
    return false;
  ls_remove_finalizer(obj, ctx);
  return true;
}

struct drop_refs {
  const char *uid; /* NULL: every reference to an absent owner */
};

static bool drop_refs(void *ctx, cJSON *obj)
{
  struct drop_refs *d = ctx;
  cJSON *refs = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "ownerReferences");
  bool changed = false;
  for(int i = cJSON_GetArraySize(refs) - 1; i >= 0; i--) {
    const char *uid = ls_str(cJSON_GetArrayItem(refs, i), "uid");
    bool drop;
    if(d->uid)
      drop = !strcmp(uid, d->uid);
    else {
      store_lock();
      drop = store_by_uid(uid) == NULL;
      store_unlock();
    }
    if(drop) {
      cJSON_DeleteItemFromArray(refs, i);
      changed = true;
    }
  }
  if(refs && !cJSON_GetArraySize(refs))
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "ownerReferences");
  return changed;
}

static struct deps dependents(const char *uid)
{
  struct deps d = { uid, { NULL, 0, 0 }, 0 };
  store_lock();
  store_each_all(find_dep, &d);
  store_unlock();
  return d;
}

static void owner_work(const struct work *x)
{
  struct deps d = dependents(x->uid);
  for(size_t i = 0; i < d.out.n; i++) {
    const struct work *dep = &d.out.v[i];
    if(x->k == W_ORPHAN) {
      struct drop_refs dr = { x->uid };
      report("gc: orphaning", dep,
             rest_internal_modify(dep->group, dep->resource, dep->ns, dep->name, drop_refs, &dr));
    } else if(dep->k == W_DELETE) {
      struct ls_delete_opts o = { "Foreground", -1, dep->uid, NULL, false };
      report("gc: foreground delete", dep,
             rest_internal_delete(dep->group, dep->resource, dep->ns, dep->name, &o));
    }
  }
  free(d.out.v);
  if(x->k == W_FOREGROUND) {
    d = dependents(x->uid);
    free(d.out.v);
    if(d.blocking)
      return;
  }
  const char *fin = x->k == W_ORPHAN ? "orphan" : "foregroundDeletion";
  report("gc: finalizer", x,
         rest_internal_modify(x->group, x->resource, x->ns, x->name, drop_finalizer, (void *)fin));
}

struct ns_scan {
  const char *ns;
  struct works out;
  const char *group, *resource; /* for CRDs: only these */
};

static int in_ns(void *ctx, const struct ls_entry *e)
{
  struct ns_scan *s = ctx;
  if(s->ns && (!*e->ns || strcmp(e->ns, s->ns)))
    return 0;
  if(s->group && (strcmp(e->group, s->group) || strcmp(e->resource, s->resource)))
    return 0;
  push(&s->out, *ls_meta(e->obj->json, "deletionTimestamp") ? W_DROP_REFS : W_DELETE, e);
  return 0;
}

/* Deletes what s selects; returns how many objects remain. */
static size_t delete_all(struct ns_scan *s)
{
  store_lock();
  store_each_all(in_ns, s);
  store_unlock();
  for(size_t i = 0; i < s->out.n; i++) {
    const struct work *o = &s->out.v[i];
    if(o->k != W_DELETE)
      continue;
    struct ls_delete_opts opts = { "Background", -1, o->uid, NULL, false };
    report("namespace/crd cleanup", o,
           rest_internal_delete(o->group, o->resource, o->ns, o->name, &opts));
  }
  free(s->out.v);
  s->out = (struct works){ NULL, 0, 0 };
  store_lock();
  store_each_all(in_ns, s);
  store_unlock();
  size_t left = s->out.n;
  free(s->out.v);
  return left;
}

static void namespace_work(const struct work *x)
{
  struct ns_scan s = { x->name, { NULL, 0, 0 }, NULL, NULL };
  if(delete_all(&s))
    return;
  /* empty: the namespace controller's finalize, then the namespace goes if nothing else holds */
  store_lock();
  const struct ls_entry *e = store_get("", "namespaces", "", x->name);
  if(e && !strcmp(e->uid, x->uid)) {
    cJSON *n = cJSON_Duplicate(e->obj->json, 1);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(n, "spec"), "finalizers");
    const cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "metadata"), "finalizers");
    if(cJSON_GetArraySize(f)) {
      store_put("", "namespaces", "", x->name, n);
    } else {
      cJSON_Delete(n);
      store_remove("", "namespaces", "", x->name);
    }
  }
  store_unlock();
}

static void crd_work(const struct work *x)
{
  store_lock();
  const struct ls_entry *e = store_get(x->group, x->resource, "", x->name);
  char group[128] = "", plural[128] = "";
  if(e) {
    const cJSON *spec = cJSON_GetObjectItem(e->obj->json, "spec");
    snprintf(group, sizeof(group), "%s", ls_str(spec, "group"));
    snprintf(plural, sizeof(plural), "%s", ls_str(cJSON_GetObjectItem(spec, "names"), "plural"));
  }
  store_unlock();
  if(!e)
    return;
  struct ns_scan s = { NULL, { NULL, 0, 0 }, group, plural };
  if(delete_all(&s))
    return;
  report("crd finalizer", x,
         rest_internal_modify(x->group, x->resource, x->ns, x->name, drop_finalizer,
                              (void *)"customresourcecleanup.apiextensions.k8s.io"));
}

static void pass(void)
{
  struct works w = { NULL, 0, 0 };
  store_lock();
  store_each_all(scan_one, &w);
  store_unlock();
  for(size_t i = 0; i < w.n && !stop; i++) {
    const struct work *x = &w.v[i];
    switch(x->k) {
    case W_ORPHAN:
    case W_FOREGROUND:
      owner_work(x);
      break;
    case W_DELETE: {
      struct ls_delete_opts o = { "Background", -1, x->uid, NULL, false };
      report("gc: delete dependent", x,
             rest_internal_delete(x->group, x->resource, x->ns, x->name, &o));
      break;
    }
    case W_DROP_REFS: {
      struct drop_refs dr = { NULL };
      report("gc: drop dangling references", x,
             rest_internal_modify(x->group, x->resource, x->ns, x->name, drop_refs, &dr));
      break;
    }
    case W_NAMESPACE:
      namespace_work(x);
      break;
    case W_CRD:
      crd_work(x);
      break;
    case W_POD: {
      struct ls_delete_opts o = { NULL, 0, x->uid, NULL, false };
      report("pod grace period over", x,
             rest_internal_delete(x->group, x->resource, x->ns, x->name, &o));
      break;
    }
    }
  }
  free(w.v);
}

/* A pass scans every object under the store's lock, so passes are spaced by at least
 * GC_MIN_INTERVAL_MS however often writes kick them: a kick on every write made the scan run back
 * to back under load (500 Migrations at once: one CPU of two spent scanning, every request
 * waiting for the lock). Kubernetes' garbage collector is eventual too: it works from queues fed
 * by its informers, typically within a second. Without a kick a pass runs every GC_IDLE_MS (the
 * end of a Pod's grace period is found that way). */
#define GC_MIN_INTERVAL_MS 100
#define GC_IDLE_MS 500

static void deadline_after(struct timespec *ts, const struct timespec *from, long ms)
{
  *ts = *from;
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (ms % 1000) * 1000000L;
  if(ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static void *run(void *arg)
{
  (void)arg;
  struct timespec last;
  clock_gettime(CLOCK_REALTIME, &last);
  while(1) {
    pthread_mutex_lock(&mu);
    struct timespec ts;
    deadline_after(&ts, &last, GC_IDLE_MS);
    while(!kicked && !stop && pthread_cond_timedwait(&cv, &mu, &ts) == 0)
      ;
    /* kicked: not before GC_MIN_INTERVAL_MS after the last pass (stop ends the wait) */
    deadline_after(&ts, &last, GC_MIN_INTERVAL_MS);
    while(!stop && pthread_cond_timedwait(&cv, &mu, &ts) == 0)
      ;
    kicked = 0;
    int s = stop;
    pthread_mutex_unlock(&mu);
    if(s)
      break;
    pass();
    clock_gettime(CLOCK_REALTIME, &last);
  }
  return NULL;
}

void gc_start(void)
{
  pthread_create(&thread, NULL, run, NULL);
}

void gc_stop(void)
{
  pthread_mutex_lock(&mu);
  stop = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(thread, NULL);
}
