/* The streaming watch: one JSON event per line, lines reassembled across chunks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kube_int.h"

#define WATCH_LINE_MAX ((size_t)64 << 20)
#define WATCH_ERRBODY_MAX ((size_t)1 << 20)
/* A stream that carries nothing for this long past its server-side timeout is dead. */
#define WATCH_IDLE_GRACE_S 60
#define WATCH_IDLE_DEFAULT_S 600

struct wstate {
  kube_watch_fn fn;
  void *ctx;
  volatile int *stop;
  CURL *h;
  long code;
  struct strbuf line;
  struct strbuf errbody;
  struct kube_status *st;
  struct kube_metrics *m;
  int retry_after_s; /* Retry-After of a refusal, -1 when absent */
  gw_rc rc;         /* why the stream was ended from this side */
  bool fn_stopped;  /* the callback asked to stop */
};

/* An ERROR event carries a Status: it becomes *st and the watch's rc. */
static gw_rc error_event(struct wstate *w, const cJSON *obj)
{
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "code");
  long code = cJSON_IsNumber(c) && c->valueint > 0 ? c->valueint : 500;
  char *txt = cJSON_PrintUnformatted(obj);
  gw_rc rc = kube_status_from_answer(code, txt ? txt : "", txt ? strlen(txt) : 0, 0, w->st);
  cJSON_free(txt);
  return rc;
}

/* One line of the stream. Returns false to end the stream. */
static bool on_line(struct wstate *w, const char *s, size_t n)
{
  while(n && (s[n - 1] == '\r' || s[n - 1] == ' '))
    n--;
  if(!n)
    return true;
  cJSON *ev = NULL;
  char perr[128];
  if(json_parse_strict(s, n, &ev, perr, sizeof(perr))) {
    kube_status_reset(w->st);
    snprintf(w->st->reason, sizeof(w->st->reason), "BadResponse");
    snprintf(w->st->message, sizeof(w->st->message), "watch: malformed event: %s", perr);
    w->rc = GW_EPARSE;
    return false;
  }
  const char *type = json_get_str(ev, "type");
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
  bool go = true;
  if(!type || !cJSON_IsObject(obj)) {
    kube_status_reset(w->st);
    snprintf(w->st->reason, sizeof(w->st->reason), "BadResponse");
    snprintf(w->st->message, sizeof(w->st->message), "watch: an event without type or object");
    w->rc = GW_EPARSE;
    go = false;
  } else {
    kube_metrics_watch_event(w->m);
    if(w->fn && w->fn(w->ctx, type, obj)) {
      w->fn_stopped = true;
      go = false;
    }
    if(!strcmp(type, "ERROR")) {
      w->rc = error_event(w, obj);
      go = false;
    }
  }
  cJSON_Delete(ev);
  return go;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *ud)
{
  struct wstate *w = ud;
  size_t n = size * nmemb;
  if(!w->code)
    curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->code);
  if(w->code < 200 || w->code >= 300) /* a Status: keep it whole */
    return strbuf_add(&w->errbody, data, n) ? 0 : n;
  size_t off = 0;
  while(off < n) {
    if(w->stop && *w->stop)
      return 0;
    const char *nl = memchr(data + off, '\n', n - off);
    size_t seg = nl ? (size_t)(nl - (data + off)) : n - off;
    if(!nl) {
      if(strbuf_add(&w->line, data + off, seg)) {
        w->rc = GW_ETOOBIG;
        return 0;
      }
      break;
    }
    bool go;
    if(w->line.len) {
      if(strbuf_add(&w->line, data + off, seg)) {
        w->rc = GW_ETOOBIG;
        return 0;
      }
      go = on_line(w, strbuf_str(&w->line), w->line.len);
      strbuf_reset(&w->line);
    } else {
      go = on_line(w, data + off, seg);
    }
    if(!go)
      return 0;
    off += seg + 1;
  }
  return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
  (void)dt, (void)dn, (void)ut, (void)un;
  volatile int *stop = ud;
  return stop && *stop ? 1 : 0;
}

static gw_rc watch_path(struct strbuf *p, const struct kube_gvr *r, const char *ns,
                        const struct kube_watch_opts *o)
{
  gw_rc rc = kube_path(p, r, ns, NULL, NULL);
  if(!rc)
    rc = kube_query(p, "watch", "1");
  if(!o)
    return rc;
  char to[32];
  snprintf(to, sizeof(to), "%ld", o->timeout_s);
  if(!rc && o->resource_version && *o->resource_version)
    rc = kube_query(p, "resourceVersion", o->resource_version);
  if(!rc && o->bookmarks)
    rc = kube_query(p, "allowWatchBookmarks", "true");
  if(!rc && o->timeout_s > 0)
    rc = kube_query(p, "timeoutSeconds", to);
  if(!rc)
    rc = kube_query(p, "labelSelector", o->label_selector);
  if(!rc)
    rc = kube_query(p, "fieldSelector", o->field_selector);
  if(!rc && p->err)
    rc = p->err;
  return rc;
}

/* The rc of a finished stream. */
static gw_rc watch_result(struct wstate *w, CURLcode cc, const char *curl_err)
{
  if(cc == CURLE_OK) {
    if(!w->code)
      curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->code);
    if(w->code < 200 || w->code >= 300)
      return kube_status_from_answer(w->code, strbuf_str(&w->errbody), w->errbody.len,
                                     w->retry_after_s, w->st);
    if(w->line.len && !on_line(w, strbuf_str(&w->line), w->line.len)) /* no final newline */
      return w->rc;
    w->st->code = (int)w->code;
    return GW_OK;
  }
  if(w->rc)
    return w->rc;
  if(w->fn_stopped)
    return GW_OK;
  if(w->stop && *w->stop)
    return GW_ESTOPPED;
  if(w->code && (w->code < 200 || w->code >= 300) && w->errbody.len)
    return kube_status_from_answer(w->code, strbuf_str(&w->errbody), w->errbody.len,
                                   w->retry_after_s, w->st);
  return kube_status_from_curl(cc, curl_err, w->st);
}

gw_rc kube_watch(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                 const struct kube_watch_opts *o, kube_watch_fn fn, void *ctx,
                 volatile int *stop, struct kube_status *st)
{
  struct kube_status local;
  kube_status_init(&local);
  if(!st)
    st = &local;
  else
    kube_status_reset(st);
  if(stop && *stop)
    return GW_ESTOPPED;
  struct strbuf p;
  strbuf_init(&p, 8192);
  gw_rc rc = watch_path(&p, r, ns, o);
  if(rc) {
    strbuf_release(&p);
    return rc;
  }
  struct wstate w = { .fn = fn, .ctx = ctx, .stop = stop, .st = st, .m = k->mp,
                      .retry_after_s = -1 };
  strbuf_init(&w.line, WATCH_LINE_MAX);
  strbuf_init(&w.errbody, WATCH_ERRBODY_MAX);
  /* A watch holds its connection for minutes: a handle of its own, not one of the pool's. */
  w.h = curl_easy_init();
  struct curl_slist *hdrs = NULL;
  if(!w.h)
    rc = GW_ENOMEM;
  if(!rc)
    rc = kube_handle_setup(k, w.h, strbuf_str(&p), "application/json", NULL, &hdrs);
  char curl_err[CURL_ERROR_SIZE] = "";
  if(!rc) {
    long idle = (o && o->timeout_s > 0 ? o->timeout_s : WATCH_IDLE_DEFAULT_S) + WATCH_IDLE_GRACE_S;
    curl_easy_setopt(w.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(w.h, CURLOPT_LOW_SPEED_TIME, idle);
    curl_easy_setopt(w.h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(w.h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(w.h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(w.h, CURLOPT_HEADERFUNCTION, kube_retry_after_header);
    curl_easy_setopt(w.h, CURLOPT_HEADERDATA, &w.retry_after_s);
    curl_easy_setopt(w.h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(w.h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(w.h, CURLOPT_XFERINFODATA, (void *)stop);
    kube_ratelimit_wait(k);
    double t0 = kube_now_s();
    CURLcode cc = curl_easy_perform(w.h);
    double ttfb = 0;
    if(curl_easy_getinfo(w.h, CURLINFO_STARTTRANSFER_TIME, &ttfb) != CURLE_OK || ttfb <= 0)
      ttfb = kube_now_s() - t0;
    if(!w.code)
      curl_easy_getinfo(w.h, CURLINFO_RESPONSE_CODE, &w.code);
    kube_metrics_observe(k->mp, KV_WATCH, w.code, ttfb);
    rc = watch_result(&w, cc, curl_err);
  }
  if(w.h)
    curl_easy_cleanup(w.h);
  curl_slist_free_all(hdrs);
  strbuf_release(&w.line);
  strbuf_release(&w.errbody);
  strbuf_release(&p);
  kube_status_release(&local);
  return rc;
}
