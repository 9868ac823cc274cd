/* watch.c: watch streams. JSON lines {"type":...,"object":...} from a resourceVersion, read from
 * the store's event ring; synthetic ADDED events for the current state when resourceVersion is
 * "" or "0" (or sendInitialEvents); BOOKMARKs when allowed; an ERROR event with a 410 Expired
 * Status once the resourceVersion is older than the history; end at timeoutSeconds, on
 * shutdown, or when fault injection drops watches. Objects are converted to the requested
 * version outside the store lock. */
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rest.h"
#include "strbuf.h"

struct ls_watch {
  struct ls_rtype rt;
  char ns[254];
  bool all_ns;
  struct ls_selector *sel;
  uint64_t cursor;
  bool bookmarks;
  time_t deadline, next_bookmark;
  int epoch;
  struct answer fmt;
  char include[32];
  struct ls_obj **initial;
  size_t ninitial, next_initial;
  bool initial_end_bookmark; /* sendInitialEvents: a bookmark after the initial ADDED events */
  bool ended;
  int fd; /* the client's socket: a watch ends when the client is gone */
  char *out;
  size_t out_len, out_off;
};

static void watch_free(void *ctx)
{
  struct ls_watch *w = ctx;
  if(!w)
    return;
  for(size_t i = w->next_initial; i < w->ninitial; i++)
    ls_obj_unref(w->initial[i]);
  free(w->initial);
  sel_free(w->sel);
  free(w->out);
  free(w);
}

static void emit(struct ls_watch *w, const char *type, cJSON *obj)
{
  cJSON *ev = cJSON_CreateObject();
  cJSON_AddStringToObject(ev, "type", type);
  if(w->fmt.fmt == FMT_TABLE && strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
    cJSON *tab = table_build(&w->rt, &obj, 1, w->include[0] ? w->include : NULL,
                             w->fmt.version);
    cJSON_Delete(obj);
    obj = tab;
  } else if(w->fmt.fmt == FMT_PARTIAL && strcmp(type, "ERROR")) {
    cJSON *p = partial(obj, w->fmt.version);
    cJSON_Delete(obj);
    obj = p;
  }
  cJSON_AddItemToObject(ev, "object", obj);
  char *s = ls_print(ev);
  cJSON_Delete(ev);
  size_t n = strlen(s);
  char *nb = realloc(w->out, w->out_len + n + 2);
  if(!nb)
    abort();
  w->out = nb;
  memcpy(w->out + w->out_len, s, n);
  w->out[w->out_len + n] = '\n';
  w->out_len += n + 1;
  free(s);
}

static void emit_bookmark(struct ls_watch *w, uint64_t rv, bool initial_end)
{
  cJSON *o = cJSON_CreateObject();
  char av[200], rvs[32];
  ls_api_version(w->rt.group, w->rt.version, av, sizeof(av));
  snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
  cJSON_AddStringToObject(o, "kind", w->rt.kind);
  cJSON_AddStringToObject(o, "apiVersion", av);
  cJSON *m = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(m, "resourceVersion", rvs);
  cJSON_AddNullToObject(m, "creationTimestamp");
  if(initial_end) {
    cJSON *a = cJSON_AddObjectToObject(m, "annotations");
    cJSON_AddStringToObject(a, "k8s.io/initial-events-end", "true");
  }
  emit(w, "BOOKMARK", o);
  w->next_bookmark = time(NULL) + ls_cfg.bookmark_interval_s;
}

static void emit_error(struct ls_watch *w, cJSON *status)
{
  emit(w, "ERROR", status);
  w->ended = true;
}

/* Converts n stored objects (copies, owned) and emits them with their types. */
static void emit_batch(struct ls_watch *w, cJSON **objs, const char **types, size_t n)
{
  if(!n)
    return;
  cJSON *st = rest_to_served(&w->rt, objs, n);
  if(st) {
    for(size_t i = 0; i < n; i++)
      cJSON_Delete(objs[i]);
    emit_error(w, st);
    return;
  }
  for(size_t i = 0; i < n; i++)
    emit(w, types[i], objs[i]);
}

static void emit_initial(struct ls_watch *w)
{
  size_t n = w->ninitial - w->next_initial;
  if(n > 64)
    n = 64;
  cJSON *objs[64];
  const char *types[64];
  for(size_t i = 0; i < n; i++) {
    struct ls_obj *o = w->initial[w->next_initial++];
    objs[i] = cJSON_Duplicate(o->json, 1);
    types[i] = "ADDED";
    ls_obj_unref(o);
  }
  emit_batch(w, objs, types, n);
}

static bool in_scope(const struct ls_watch *w, const struct ls_event *e)
{
  return !strcmp(e->group, w->rt.store_group) && !strcmp(e->resource, w->rt.store_resource) &&
         (w->all_ns || !strcmp(e->ns, w->ns));
}

static void emit_events(struct ls_watch *w, struct ls_event *ev, size_t n)
{
  cJSON **objs = malloc(n * sizeof(*objs));
  const char **types = malloc(n * sizeof(*types));
  if(!objs || !types)
    abort();
  size_t k = 0;
  for(size_t i = 0; i < n; i++) {
    const struct ls_event *e = &ev[i];
    w->cursor = e->rv;
    if(!in_scope(w, e))
      continue;
    bool now = sel_match(w->sel, e->obj->json);
    bool before = e->prev ? sel_match(w->sel, e->prev->json) : false;
    const struct ls_obj *send = e->obj;
    const char *type = NULL;
    if(e->type == LS_ADDED && now)
      type = "ADDED";
    else if(e->type == LS_DELETED && now)
      type = "DELETED";
    else if(e->type == LS_MODIFIED) {
      if(now && before)
        type = "MODIFIED";
      else if(now)
        type = "ADDED";
      else if(before) {
        type = "DELETED";
        send = e->prev;
      }
    }
    if(!type)
      continue;
    objs[k] = cJSON_Duplicate(send->json, 1);
    if(send == e->prev) {
      char rv[32];
      snprintf(rv, sizeof(rv), "%llu", (unsigned long long)e->rv);
      ls_set_str(ls_meta_obj(objs[k]), "resourceVersion", rv);
    }
    types[k++] = type;
  }
  emit_batch(w, objs, types, k);
  free(objs);
  free(types);
}

bool ls_client_gone(int fd)
{
  /* a watch may stay idle for an hour: notice the client leaving */
  if(fd < 0)
    return false;
  struct pollfd p = { fd, POLLRDHUP, 0 };
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Produces more output, blocking until there is some or the stream ends. */
static void produce(struct ls_watch *w)
{
  while(!w->out_len && !w->ended) {
    if(w->next_initial < w->ninitial) {
      emit_initial(w);
      continue;
    }
    if(w->initial_end_bookmark) {
      w->initial_end_bookmark = false;
      emit_bookmark(w, w->cursor, true);
      continue;
    }
    time_t now = time(NULL);
    if(ls_stopping || w->epoch != ls_watch_epoch || ls_client_gone(w->fd)) {
      w->ended = true;
      break;
    }
    if(now >= w->deadline) {
      if(w->bookmarks)
        emit_bookmark(w, w->cursor, false);
      w->ended = true;
      break;
    }
    struct ls_event *ev = NULL;
    size_t n = 0;
    uint64_t oldest = 0;
    store_lock();
    int rc = store_events_after(w->cursor, &ev, &n, 256, &oldest);
    if(rc == 0 && n == 0) {
      time_t until = w->deadline;
      if(w->bookmarks && w->next_bookmark < until)
        until = w->next_bookmark;
      int ms = until > now ? (int)(until - now) * 1000 : 0;
      store_wait(ms > 1000 ? 1000 : (ms > 0 ? ms : 10));
      store_unlock();
      /* every event up to the cursor has been seen: a bookmark may say so */
      if(w->bookmarks && time(NULL) >= w->next_bookmark)
        emit_bookmark(w, w->cursor, false);
      continue;
    }
    store_unlock();
    if(rc < 0) {
      emit_error(w, ls_status(410, "Expired", NULL, "too old resource version: %llu (%llu)",
                              (unsigned long long)w->cursor, (unsigned long long)oldest));
      break;
    }
    emit_events(w, ev, n);
    store_events_free(ev, n);
  }
}

static ssize_t watch_read(void *ctx, char *buf, size_t max)
{
  struct ls_watch *w = ctx;
  produce(w);
  if(w->out_len == 0)
    return MHD_CONTENT_READER_END_OF_STREAM;
  size_t n = w->out_len - w->out_off;
  if(n > max)
    n = max;
  memcpy(buf, w->out + w->out_off, n);
  w->out_off += n;
  if(w->out_off == w->out_len) {
    w->out_off = w->out_len = 0;
  }
  return (ssize_t)n;
}

struct init_collect {
  struct ls_watch *w;
  size_t cap;
};

static int take_initial(void *ctx, const struct ls_entry *e)
{
  struct init_collect *c = ctx;
  struct ls_watch *w = c->w;
  if(!sel_match(w->sel, e->obj->json))
    return 0;
  if(w->ninitial == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    w->initial = realloc(w->initial, c->cap * sizeof(*w->initial));
    if(!w->initial)
      abort();
  }
  w->initial[w->ninitial++] = ls_obj_ref(e->obj);
  return 0;
}

void rest_watch(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct ls_watch *w = calloc(1, sizeof(*w));
  if(!w)
    abort();
  w->rt = *rt;
  w->fmt = negotiate(r);
  if(w->fmt.fmt == FMT_NONE)
    w->fmt.fmt = FMT_JSON;
  snprintf(w->ns, sizeof(w->ns), "%s", t->ns);
  w->all_ns = !t->has_ns;
  const char *labels = req_param(r, "labelSelector");
  const char *fields = req_param(r, "fieldSelector");
  char byname[300];
  if(t->name[0]) { /* the legacy /watch/.../NAME form */
    snprintf(byname, sizeof(byname), "metadata.name=%s", t->name);
    fields = byname;
  }
  cJSON *st = sel_parse(rt, labels, fields, &w->sel);
  if(st) {
    watch_free(w);
    req_reply_status(r, st);
    return;
  }
  const char *inc = req_param(r, "includeObject");
  snprintf(w->include, sizeof(w->include), "%s", inc ? inc : "");
  w->bookmarks = req_param_true(r, "allowWatchBookmarks");
  const char *ts = req_param(r, "timeoutSeconds");
  long timeout = ts ? atol(ts) : 1800 + (long)(rand() % 1800);
  w->deadline = time(NULL) + (timeout > 0 ? timeout : 1800);
  w->next_bookmark = time(NULL) + ls_cfg.bookmark_interval_s;
  w->epoch = ls_watch_epoch;
  const char *rv = req_param(r, "resourceVersion");
  const char *sie = req_param(r, "sendInitialEvents");
  bool send_initial = sie ? !strcmp(sie, "true") : (!rv || !*rv || !strcmp(rv, "0"));
  store_lock();
  uint64_t cur = store_rv();
  if(send_initial) {
    struct init_collect c = { w, 0 };
    store_each(rt->store_group, rt->store_resource, w->all_ns ? NULL : w->ns, NULL, take_initial,
               &c);
    w->cursor = cur;
    w->initial_end_bookmark = sie && w->bookmarks;
  } else
    w->cursor = strtoull(rv, NULL, 10);
  store_unlock();
  w->fd = req_fd(r);
  r->stream = (struct ls_stream){ watch_read, watch_free, w };
  r->status = 200;
  snprintf(r->ctype, sizeof(r->ctype), "application/json");
}
