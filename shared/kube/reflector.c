/* The reflector: list (paged), replace, watch from the list's resourceVersion with bookmarks,
 * relist on 410 Gone, reconnect with jittered exponential backoff, until *stop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kube_int.h"
#include "log.h"

/* client-go's reflector asks for server-side timeouts between 5 and 10 minutes, spread so
 * that many watches do not reconnect at once. */
#define WATCH_TIMEOUT_MIN_S 300
#define WATCH_TIMEOUT_SPREAD_S 300

struct rstate {
  const struct kube_reflector_ops *ops;
  void *ctx;
  char *rv;
  unsigned long events;
};

static void set_rv(struct rstate *s, const char *rv)
{
  if(!rv || !*rv || (s->rv && !strcmp(s->rv, rv)))
    return;
  char *d = strdup(rv);
  if(!d)
    return; /* keep the older one: a relist at worst */
  free(s->rv);
  s->rv = d;
  if(s->ops->progress)
    s->ops->progress(s->ctx, s->rv);
}

static int on_event(void *ud, const char *type, const cJSON *obj)
{
  struct rstate *s = ud;
  const char *rv = json_get_str(obj, "metadata.resourceVersion");
  if(!strcmp(type, "BOOKMARK")) {
    set_rv(s, rv);
    return 0;
  }
  if(strcmp(type, "ADDED") && strcmp(type, "MODIFIED") && strcmp(type, "DELETED"))
    return 0; /* ERROR ends the watch with its Status; anything else is ignored */
  s->events++;
  if(s->ops->event)
    s->ops->event(s->ctx, type, obj);
  set_rv(s, rv);
  return 0;
}

static void log_failure(const char *what, const struct kube_gvr *r, gw_rc rc,
                        const struct kube_status *st, long delay_ms)
{
  char code[16], delay[24];
  snprintf(code, sizeof(code), "%d", st->code);
  snprintf(delay, sizeof(delay), "%ld", delay_ms);
  log_kv(LOG_WARN, what, "resource", r->resource, "group", r->group, "error", gw_strerror(rc),
         "code", code, "reason", st->reason, "message", st->message, "retry_ms", delay, LOG_END);
}

/* Lists every page and hands the set over. */
static gw_rc relist(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                    const struct kube_reflector_opts *o, struct rstate *s,
                    struct kube_status *st)
{
  struct kube_list_opts lo = { .label_selector = o->label_selector,
                               .field_selector = o->field_selector, .limit = o->page_size };
  cJSON *list = NULL;
  gw_rc rc = kube_list_all(k, r, ns, &lo, &list, st);
  if(rc)
    return rc;
  kube_metrics_relist(k->mp);
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
  const char *rv = json_get_str(list, "metadata.resourceVersion");
  free(s->rv);
  s->rv = NULL;
  if(s->ops->replace)
    s->ops->replace(s->ctx, items, rv ? rv : "");
  set_rv(s, rv);
  cJSON_Delete(list);
  return GW_OK;
}

gw_rc kube_reflector_run(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                         const struct kube_reflector_opts *opts,
                         const struct kube_reflector_ops *ops, void *ctx, volatile int *stop)
{
  static volatile int never;
  if(!stop)
    stop = &never;
  struct kube_reflector_opts o = { 0 };
  if(opts)
    o = *opts;
  if(o.page_size <= 0)
    o.page_size = 500;
  if(o.backoff_min_ms <= 0)
    o.backoff_min_ms = 200;
  if(o.backoff_max_ms < o.backoff_min_ms)
    o.backoff_max_ms = o.backoff_min_ms > 30000 ? o.backoff_min_ms : 30000;
  struct rstate s = { .ops = ops, .ctx = ctx };
  struct kube_status st;
  kube_status_init(&st);
  bool need_list = true;
  int fails = 0;
  while(!*stop) {
    gw_rc rc;
    if(need_list) {
      rc = relist(k, r, ns, &o, &s, &st);
      if(rc) {
        long d = kube_backoff_ms(k, fails++, o.backoff_min_ms, o.backoff_max_ms);
        if(st.retry_after_s > 0) /* 429 or 503 with Retry-After */
          d = st.retry_after_s * 1000L;
        if(!*stop)
          log_failure("kube list failed", r, rc, &st, d);
        kube_sleep_ms(d, stop);
        continue;
      }
      need_list = false;
    }
    struct kube_watch_opts wo = {
      .resource_version = s.rv, .label_selector = o.label_selector,
      .field_selector = o.field_selector, .bookmarks = true,
      .timeout_s = WATCH_TIMEOUT_MIN_S + (long)(kube_rand(k) * WATCH_TIMEOUT_SPREAD_S)
    };
    s.events = 0;
    double t0 = kube_now_s();
    rc = kube_watch(k, r, ns, &wo, on_event, &s, stop, &st);
    if(*stop || rc == GW_ESTOPPED)
      break;
    /* A stream that delivered, or stayed up a while, worked: the next failure starts the
     * backoff over. */
    bool ran = s.events || (kube_now_s() - t0 >= 1.0 && rc != GW_ETIMEOUT);
    if(ran)
      fails = 0;
    if(rc == GW_EGONE) {
      /* The history the watch needed is gone: what changed meanwhile is only in a list. */
      log_kv(LOG_INFO, "kube watch expired, relisting", "resource", r->resource, "reason",
             st.reason, LOG_END);
      need_list = true;
      continue;
    }
    if(rc == GW_OK && ran)
      continue; /* the server ended the stream (timeoutSeconds): watch on from s.rv */
    long d = kube_backoff_ms(k, fails++, o.backoff_min_ms, o.backoff_max_ms);
    if(st.retry_after_s > 0) /* 429 or 503 with Retry-After */
      d = st.retry_after_s * 1000L;
    if(rc != GW_OK && ran) /* a stream that worked, then broke: routine */
      log_kv(LOG_INFO, "kube watch interrupted, reconnecting", "resource", r->resource,
             "error", gw_strerror(rc), "message", st.message, LOG_END);
    else if(rc != GW_OK)
      log_failure("kube watch failed", r, rc, &st, d);
    kube_sleep_ms(d, stop);
  }
  free(s.rv);
  kube_status_release(&st);
  return GW_ESTOPPED;
}
