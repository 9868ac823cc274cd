/* rest_read.c: get and list (selectors, limit/continue), answered as JSON, as a meta.k8s.io
 * Table or as PartialObjectMetadata, as the Accept header asks; pods/NAME/log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "rest.h"

/* The first media type of Accept the server can produce. */
struct answer negotiate(const struct ls_req *r)
{
  struct answer a = { FMT_JSON, "v1" };
  const char *acc = req_header(r, "Accept");
  if(!acc || !*acc)
    return a;
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", acc);
  char *save = NULL;
  for(char *mt = strtok_r(buf, ",", &save); mt; mt = strtok_r(NULL, ",", &save)) {
    while(*mt == ' ')
      mt++;
    bool json = !strncasecmp(mt, "application/json", 16) || !strncmp(mt, "*/*", 3) ||
                !strncmp(mt, "application/*", 13);
    if(!json)
      continue;
    char *as = strstr(mt, "as=");
    if(!as)
      return a;
    char *g = strstr(mt, "g=meta.k8s.io");
    char *v = strstr(mt, ";v=");
    if(!g || !v)
      continue;
    snprintf(a.version, sizeof(a.version), "%.*s", (int)strcspn(v + 3, "; "), v + 3);
    if(strcmp(a.version, "v1") && strcmp(a.version, "v1beta1"))
      continue;
    if(!strncmp(as + 3, "Table", 5) && (as[8] == ';' || !as[8] || as[8] == ' '))
      a.fmt = FMT_TABLE;
    else if(!strncmp(as + 3, "PartialObjectMetadata", 21))
      a.fmt = FMT_PARTIAL;
    else
      continue;
    return a;
  }
  a.fmt = FMT_NONE;
  return a;
}

static void not_acceptable(struct ls_req *r)
{
  req_reply_status(r, ls_status(406, "NotAcceptable", NULL,
                                "only the following media types are accepted: application/json, "
                                "application/json;as=Table;v=v1;g=meta.k8s.io, "
                                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"));
}

cJSON *partial(const cJSON *obj, const char *version)
{
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "kind", "PartialObjectMetadata");
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", version);
  cJSON_AddStringToObject(p, "apiVersion", av);
  const cJSON *m = cJSON_GetObjectItem(obj, "metadata");
  cJSON_AddItemToObject(p, "metadata", m ? cJSON_Duplicate(m, 1) : cJSON_CreateObject());
  return p;
}

static void set_table_ctype(struct ls_req *r, const char *version)
{
  snprintf(r->ctype, sizeof(r->ctype), "application/json;as=Table;v=%s;g=meta.k8s.io", version);
}

void rest_get(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct answer a = negotiate(r);
  if(a.fmt == FMT_NONE) {
    not_acceptable(r);
    return;
  }
  store_lock();
  const struct ls_entry *e = store_get(rt->store_group, rt->store_resource, t->ns, t->name);
  struct ls_obj *o = e ? ls_obj_ref(e->obj) : NULL;
  store_unlock();
  if(!o) {
    req_reply_status(r, rest_not_found(rt, t->name));
    return;
  }
  cJSON *obj = cJSON_Duplicate(o->json, 1);
  ls_obj_unref(o);
  cJSON *st = rest_to_served(rt, &obj, 1);
  if(st) {
    cJSON_Delete(obj);
    req_reply_status(r, st);
    return;
  }
  if(a.fmt == FMT_TABLE) {
    cJSON *tab = table_build(rt, &obj, 1, req_param(r, "includeObject"), a.version);
    cJSON_Delete(obj);
    req_reply_take(r, 200, tab);
    set_table_ctype(r, a.version);
  } else if(a.fmt == FMT_PARTIAL) {
    req_reply_take(r, 200, partial(obj, a.version));
    cJSON_Delete(obj);
  } else
    req_reply_take(r, 200, obj);
}

/* ---- list ---- */

struct collect {
  const struct ls_selector *sel;
  struct ls_obj **v;
  size_t n, cap;
  long limit;
  bool more;
  char last[600]; /* ns/name of the last item taken */
};

static int collect_one(void *ctx, const struct ls_entry *e)
{
  struct collect *c = ctx;
  if(!sel_match(c->sel, e->obj->json))
    return 0;
  if(c->limit > 0 && (long)c->n >= c->limit) {
    c->more = true;
    return 1;
  }
  if(c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    c->v = realloc(c->v, c->cap * sizeof(*c->v));
    if(!c->v)
      abort();
  }
  c->v[c->n++] = ls_obj_ref(e->obj);
  snprintf(c->last, sizeof(c->last), "%s/%s", e->ns, e->name);
  return 0;
}

static char *continue_token(unsigned long long rv, const char *start)
{
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "v", "meta.k8s.io/v1");
  cJSON_AddNumberToObject(t, "rv", (double)rv);
  cJSON_AddStringToObject(t, "start", start);
  char *s = ls_print(t);
  cJSON_Delete(t);
  char *b = ls_base64(s, strlen(s), true);
  free(s);
  return b;
}

/* Decodes a continue token: false when malformed. */
static bool parse_continue(const char *tok, unsigned long long *rv, char *start, size_t len)
{
  size_t n;
  unsigned char *raw = ls_base64_decode(tok, &n);
  cJSON *t = cJSON_ParseWithLength((const char *)raw, n);
  free(raw);
  const cJSON *r = cJSON_GetObjectItem(t, "rv");
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(t, "start"));
  bool ok = cJSON_IsNumber(r) && s && !strcmp(ls_str(t, "v"), "meta.k8s.io/v1");
  if(ok) {
    *rv = (unsigned long long)r->valuedouble;
    snprintf(start, len, "%s", s);
  }
  cJSON_Delete(t);
  return ok;
}

void rest_list(struct ls_req *r, const struct ls_rtype *rt, const struct ls_target *t)
{
  struct answer a = negotiate(r);
  if(a.fmt == FMT_NONE) {
    not_acceptable(r);
    return;
  }
  struct ls_selector *sel;
  cJSON *st = sel_parse(rt, req_param(r, "labelSelector"), req_param(r, "fieldSelector"), &sel);
  if(st) {
    req_reply_status(r, st);
    return;
  }
  const char *lim = req_param(r, "limit");
  const char *cont = req_param(r, "continue");
  struct collect c = { sel, NULL, 0, 0, lim ? atol(lim) : 0, false, "" };
  unsigned long long list_rv = 0;
  char start[600] = "";
  if(cont && *cont && !parse_continue(cont, &list_rv, start, sizeof(start))) {
    sel_free(sel);
    req_reply_status(r, ls_status(400, "BadRequest", NULL, "continue key is not valid: "
                                                          "malformed continue token"));
    return;
  }
  store_lock();
  if(!list_rv)
    list_rv = store_rv();
  store_each(rt->store_group, rt->store_resource, t->has_ns ? t->ns : NULL,
             start[0] ? start : NULL, collect_one, &c);
  store_unlock();
  sel_free(sel);
  cJSON **objs = malloc((c.n ? c.n : 1) * sizeof(*objs));
  if(!objs)
    abort();
  for(size_t i = 0; i < c.n; i++) {
    objs[i] = cJSON_Duplicate(c.v[i]->json, 1);
    ls_obj_unref(c.v[i]);
  }
  free(c.v);
  st = c.n ? rest_to_served(rt, objs, c.n) : NULL;
  char rvs[32];
  snprintf(rvs, sizeof(rvs), "%llu", list_rv);
  cJSON *out = NULL;
  if(!st && a.fmt == FMT_TABLE) {
    out = table_build(rt, objs, c.n, req_param(r, "includeObject"), a.version);
  } else if(!st) {
    out = cJSON_CreateObject();
    char av[200];
    if(a.fmt == FMT_PARTIAL) {
      cJSON_AddStringToObject(out, "kind", "PartialObjectMetadataList");
      snprintf(av, sizeof(av), "meta.k8s.io/%s", a.version);
    } else {
      cJSON_AddStringToObject(out, "kind", rt->list_kind);
      ls_api_version(rt->group, rt->version, av, sizeof(av));
    }
    cJSON_AddStringToObject(out, "apiVersion", av);
    cJSON_AddObjectToObject(out, "metadata");
    cJSON *items = cJSON_AddArrayToObject(out, "items");
    for(size_t i = 0; i < c.n; i++)
      cJSON_AddItemToArray(items, a.fmt == FMT_PARTIAL ? partial(objs[i], a.version) : objs[i]);
    if(a.fmt != FMT_PARTIAL)
      c.n = 0; /* the items now belong to the list */
  }
  for(size_t i = 0; i < c.n; i++)
    cJSON_Delete(objs[i]);
  free(objs);
  if(st) {
    req_reply_status(r, st);
    return;
  }
  cJSON *meta = cJSON_GetObjectItem(out, "metadata");
  if(!meta)
    meta = cJSON_AddObjectToObject(out, "metadata");
  ls_set_str(meta, "resourceVersion", rvs);
  if(c.more) {
    char *tok = continue_token(list_rv, c.last);
    ls_set_str(meta, "continue", tok);
    free(tok);
  }
  req_reply_take(r, 200, out);
  if(a.fmt == FMT_TABLE)
    set_table_ctype(r, a.version);
}

/* ---- pods/NAME/log: files written by the job runner (--pod-log-dir) ---- */

static char *read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
  if(!buf)
    abort();
  size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  buf[got] = '\0';
  *len = got;
  return buf;
}

static const char *tail_lines(const char *buf, size_t len, long lines)
{
  if(lines < 0)
    return buf;
  size_t end = len;
  if(end && buf[end - 1] == '\n')
    end--;
  long seen = 0;
  size_t i = end;
  while(i > 0) {
    if(buf[i - 1] == '\n' && ++seen == lines)
      return buf + i;
    i--;
  }
  return lines == 0 ? buf + len : buf;
}

/* follow=true: the file as it grows, until the container stops or the Pod goes */
struct follow {
  FILE *f;
  char ns[254], pod[254], container[256], uid[40];
  int fd;
  bool last; /* the container is done: one more read to the end */
};

static bool container_done(const struct follow *fl)
{
  store_lock();
  const struct ls_entry *e = store_get("", "pods", fl->ns, fl->pod);
  bool done = !e || strcmp(e->uid, fl->uid);
  if(!done) {
    const cJSON *st = cJSON_GetObjectItem(e->obj->json, "status");
    const char *phase = ls_str(st, "phase");
    done = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(st, "containerStatuses"))
    {
      if(!strcmp(ls_str(c, "name"), fl->container) &&
         cJSON_GetObjectItem(cJSON_GetObjectItem(c, "state"), "terminated"))
        done = true;
    }
  }
  store_unlock();
  return done;
}

static ssize_t follow_read(void *ctx, char *buf, size_t max)
{
  struct follow *fl = ctx;
  for(;;) {
    size_t n = fread(buf, 1, max, fl->f);
    if(n)
      return (ssize_t)n;
    clearerr(fl->f);
    if(fl->last || ls_stopping || ls_client_gone(fl->fd))
      return -1; /* MHD_CONTENT_READER_END_OF_STREAM */
    if(container_done(fl)) {
      fl->last = true;
      continue;
    }
    struct timespec d = { 0, 200 * 1000000L };
    nanosleep(&d, NULL);
  }
}

static void follow_free(void *ctx)
{
  struct follow *fl = ctx;
  fclose(fl->f);
  free(fl);
}

static void follow(struct ls_req *r, const struct ls_target *t, const char *container,
                   const char *uid, const char *path, long skip)
{
  struct follow *fl = calloc(1, sizeof(*fl));
  if(!fl)
    abort();
  fl->f = fopen(path, "rb");
  if(!fl->f) {
    free(fl);
    req_reply_status(r, ls_status(400, "BadRequest", NULL, "container \"%s\" in pod \"%s\" is "
                                  "waiting to start: ContainerCreating", container, t->name));
    return;
  }
  fseek(fl->f, skip, SEEK_SET);
  snprintf(fl->ns, sizeof(fl->ns), "%s", t->ns);
  snprintf(fl->pod, sizeof(fl->pod), "%s", t->name);
  snprintf(fl->container, sizeof(fl->container), "%s", container);
  snprintf(fl->uid, sizeof(fl->uid), "%s", uid);
  fl->fd = req_fd(r);
  r->stream = (struct ls_stream){ follow_read, follow_free, fl };
  r->status = 200;
  snprintf(r->ctype, sizeof(r->ctype), "text/plain");
  /* fl belongs to r->stream now; follow_free releases it when the stream ends. */
  // cppcheck-suppress memleak
}

void rest_pod_log(struct ls_req *r, const struct ls_target *t)
{
  struct ls_rtype rt;
  res_lookup("", "v1", "pods", &rt);
  store_lock();
  const struct ls_entry *e = store_get("", "pods", t->ns, t->name);
  struct ls_obj *o = e ? ls_obj_ref(e->obj) : NULL;
  store_unlock();
  if(!o) {
    req_reply_status(r, rest_not_found(&rt, t->name));
    return;
  }
  const cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(o->json, "spec"), "containers");
  const char *want = req_param(r, "container");
  char container[256] = "";
  if(want && *want)
    snprintf(container, sizeof(container), "%s", want);
  else if(cJSON_GetArraySize(cs) == 1)
    snprintf(container, sizeof(container), "%s", ls_str(cJSON_GetArrayItem(cs, 0), "name"));
  if(!container[0]) {
    char names[512] = "";
    const cJSON *c;
    cJSON_ArrayForEach(c, cs)
    {
      size_t l = strlen(names);
      snprintf(names + l, sizeof(names) - l, "%s%s", l ? " " : "", ls_str(c, "name"));
    }
    ls_obj_unref(o);
    req_reply_status(r, ls_status(400, "BadRequest", NULL,
                                  "a container name must be specified for pod %s, choose one of: "
                                  "[%s]", t->name, names));
    return;
  }
  char uid[40];
  snprintf(uid, sizeof(uid), "%s", ls_meta(o->json, "uid"));
  ls_obj_unref(o);
  char path[1024];
  bool prev = req_param_true(r, "previous");
  snprintf(path, sizeof(path), "%s/%s/%s/%s%s", ls_cfg.pod_log_dir ? ls_cfg.pod_log_dir : ".",
           t->ns, t->name, container, prev ? ".previous.log" : ".log");
  size_t len = 0;
  char *buf = ls_cfg.pod_log_dir ? read_file(path, &len) : NULL;
  if(!buf) {
    req_reply_status(r, ls_status(400, "BadRequest", NULL,
                                  prev ? "previous terminated container \"%s\" in pod \"%s\" not "
                                         "found"
                                       : "container \"%s\" in pod \"%s\" is waiting to start: "
                                         "ContainerCreating",
                                  container, t->name));
    return;
  }
  const char *tl = req_param(r, "tailLines");
  const char *from = tail_lines(buf, len, tl ? atol(tl) : -1);
  size_t n = len - (size_t)(from - buf);
  if(req_param_true(r, "follow") && !prev) {
    follow(r, t, container, uid, path, (long)(from - buf));
    free(buf);
    return;
  }
  const char *lb = req_param(r, "limitBytes");
  if(lb && atol(lb) > 0 && (size_t)atol(lb) < n)
    n = (size_t)atol(lb);
  req_reply_text(r, 200, "text/plain", from, n);
  free(buf);
}
