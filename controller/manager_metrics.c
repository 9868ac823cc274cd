/* /metrics of the controller: reconciles, status writes, queues, informers, leader, Events,
 * then the Kubernetes client's requests. Each metric's HELP and TYPE come once, followed by its
 * series for every controller, as the exposition format requires. */
#include <stdio.h>

#include "version.h"
#include "leader.h"
#include "manager_int.h"

typedef gw_rc (*series_fn)(struct strbuf *sb, const char *metric, struct ctrl *c,
                           const struct wq_stats *q);

static gw_rc per_ctrl(struct mgr *m, struct strbuf *sb, const char *metric, const char *type,
                      const char *help, series_fn fn)
{
  gw_rc rc = metric_header(sb, metric, type, help);
  for(int i = 0; i < m->nctrls && !rc; i++) {
    struct wq_stats q;
    wq_stats(m->ctrls[i]->q, &q);
    pthread_mutex_lock(&m->ctrls[i]->mu);
    rc = fn(sb, metric, m->ctrls[i], &q);
    pthread_mutex_unlock(&m->ctrls[i]->mu);
  }
  return rc;
}

static gw_rc s_reconciles(struct strbuf *sb, const char *metric, struct ctrl *c,
                          const struct wq_stats *q)
{
  (void)q;
  gw_rc rc = GW_OK;
  for(int o = 0; o < REC_NOUTCOMES && !rc; o++)
    rc = strbuf_addf(sb, "%s{controller=\"%s\",kind=\"%s\",result=\"%s\"} %llu\n", metric,
                     c->name, c->kind, rec_outcome_names[o], c->count[o]);
  return rc;
}

static gw_rc s_durations(struct strbuf *sb, const char *metric, struct ctrl *c,
                         const struct wq_stats *q)
{
  (void)q;
  gw_rc rc = GW_OK;
  for(int o = 0; o < REC_NOUTCOMES && !rc; o++) {
    char labels[256];
    snprintf(labels, sizeof(labels), "controller=\"%s\",kind=\"%s\",result=\"%s\"", c->name,
             c->kind, rec_outcome_names[o]);
    rc = hist_render(sb, metric, labels, &c->dur[o]);
  }
  return rc;
}

static gw_rc s_status(struct strbuf *sb, const char *metric, struct ctrl *c,
                      const struct wq_stats *q)
{
  (void)q;
  const char *fmt = "%s{controller=\"%s\",kind=\"%s\",result=\"%s\"} %llu\n";
  gw_rc rc = strbuf_addf(sb, fmt, metric, c->name, c->kind, "written", c->st_written);
  if(!rc)
    rc = strbuf_addf(sb, fmt, metric, c->name, c->kind, "unchanged", c->st_unchanged);
  if(!rc)
    rc = strbuf_addf(sb, fmt, metric, c->name, c->kind, "error", c->st_failed);
  return rc;
}

static gw_rc s_conflicts(struct strbuf *sb, const char *metric, struct ctrl *c,
                         const struct wq_stats *q)
{
  (void)q;
  return strbuf_addf(sb, "%s{controller=\"%s\",kind=\"%s\"} %llu\n", metric, c->name, c->kind,
                     c->st_conflicts);
}

static gw_rc s_own_writes(struct strbuf *sb, const char *metric, struct ctrl *c,
                          const struct wq_stats *q)
{
  (void)q;
  return strbuf_addf(sb, "%s{controller=\"%s\",kind=\"%s\"} %llu\n", metric, c->name, c->kind,
                     c->own_write_waits);
}

#define QUEUE_SERIES(fn, fmt, expr)                                                         \
  static gw_rc fn(struct strbuf *sb, const char *metric, struct ctrl *c,                    \
                  const struct wq_stats *q)                                                 \
  {                                                                                         \
    return strbuf_addf(sb, "%s{name=\"%s\"} " fmt "\n", metric, c->name, expr);             \
  }
QUEUE_SERIES(s_depth, "%zu", q->depth)
QUEUE_SERIES(s_delayed, "%zu", q->delayed)
QUEUE_SERIES(s_processing, "%zu", q->processing)
QUEUE_SERIES(s_adds, "%llu", (unsigned long long)q->adds)
QUEUE_SERIES(s_retries, "%llu", (unsigned long long)q->retries)
QUEUE_SERIES(s_longest, "%.3f", q->longest_running_s)

static gw_rc s_latency(struct strbuf *sb, const char *metric, struct ctrl *c,
                       const struct wq_stats *q)
{
  char labels[160];
  snprintf(labels, sizeof(labels), "name=\"%s\"", c->name);
  return hist_render(sb, metric, labels, &q->queue_latency);
}

static gw_rc s_work(struct strbuf *sb, const char *metric, struct ctrl *c,
                    const struct wq_stats *q)
{
  char labels[160];
  snprintf(labels, sizeof(labels), "name=\"%s\"", c->name);
  return hist_render(sb, metric, labels, &q->work_duration);
}

static gw_rc informers(struct mgr *m, struct strbuf *sb)
{
  gw_rc rc = metric_header(sb, "godwit_informer_synced", "gauge",
                           "Whether the informer's first list is in its cache.");
  for(int i = 0; i < m->ninfs && !rc; i++)
    rc = strbuf_addf(sb, "godwit_informer_synced{resource=\"%s\"} %d\n",
                     informer_gvr(m->infs[i])->resource, informer_synced(m->infs[i]) ? 1 : 0);
  if(!rc)
    rc = metric_header(sb, "godwit_informer_objects", "gauge", "Objects in the informer's cache.");
  for(int i = 0; i < m->ninfs && !rc; i++)
    rc = strbuf_addf(sb, "godwit_informer_objects{resource=\"%s\"} %zu\n",
                     informer_gvr(m->infs[i])->resource, informer_len(m->infs[i]));
  return rc;
}

static gw_rc leader_and_events(struct mgr *m, struct strbuf *sb)
{
  struct leader_stats ls = { 0 };
  if(m->leader)
    leader_stats(m->leader, &ls);
  bool leading = m->leader ? ls.leading : mgr_leading(m);
  gw_rc rc = metric_header(sb, "godwit_leader_is_leader", "gauge",
                           "1 while this replica leads (always 1 without leader election).");
  if(!rc)
    rc = strbuf_addf(sb, "godwit_leader_is_leader{lease=\"%s\"} %d\n",
                     m->leader ? m->o.leader.name : "", leading ? 1 : 0);
  if(!rc)
    rc = metric_header(sb, "godwit_leader_acquired_total", "counter",
                       "Times this replica became leader.");
  if(!rc)
    rc = strbuf_addf(sb, "godwit_leader_acquired_total %llu\n", (unsigned long long)ls.acquired);
  if(!rc)
    rc = metric_header(sb, "godwit_leader_renew_failures_total", "counter",
                       "Lease renewals that failed while leading.");
  if(!rc)
    rc = strbuf_addf(sb, "godwit_leader_renew_failures_total %llu\n",
                     (unsigned long long)ls.renew_failures);
  struct recorder_stats es;
  recorder_stats(m->rec, &es);
  if(!rc)
    rc = metric_header(sb, "godwit_events_total", "counter",
                       "Events recorded: created, counted (a repeat), failed.");
  if(!rc)
    rc = strbuf_addf(sb,
                     "godwit_events_total{result=\"created\"} %llu\n"
                     "godwit_events_total{result=\"counted\"} %llu\n"
                     "godwit_events_total{result=\"failed\"} %llu\n",
                     (unsigned long long)es.created, (unsigned long long)es.counted,
                     (unsigned long long)es.failed);
  if(!rc)
    rc = metric_header(sb, "godwit_controller_ready", "gauge",
                       "1 once the caches are synced.");
  if(!rc)
    rc = strbuf_addf(sb, "godwit_controller_ready %d\n", mgr_synced(m) ? 1 : 0);
  return rc;
}

gw_rc mgr_render_metrics(struct mgr *m, struct strbuf *sb)
{
  static const struct {
    const char *name, *type, *help;
    series_fn fn;
  } rows[] = {
    { "godwit_controller_reconcile_total", "counter", "Reconciles by controller, kind and result.",
      s_reconciles },
    { "godwit_controller_reconcile_duration_seconds", "histogram",
      "Time of one reconcile by controller, kind and result.", s_durations },
    { "godwit_controller_status_updates_total", "counter",
      "Status writes through /status: written, unchanged (nothing to write), error.", s_status },
    { "godwit_controller_status_conflicts_total", "counter",
      "409 Conflicts met writing status (each retried on a fresh copy).", s_conflicts },
    { "godwit_controller_own_write_waits_total", "counter",
      "Reconciles put off until the cache showed the controller's own last status write.",
      s_own_writes },
    { "godwit_workqueue_depth", "gauge", "Keys ready to be processed.", s_depth },
    { "godwit_workqueue_delayed", "gauge", "Keys waiting for a delay or a backoff.", s_delayed },
    { "godwit_workqueue_processing", "gauge", "Keys being processed now.", s_processing },
    { "godwit_workqueue_adds_total", "counter", "Keys added (merged duplicates included).",
      s_adds },
    { "godwit_workqueue_retries_total", "counter", "Keys requeued with backoff after an error.",
      s_retries },
    { "godwit_workqueue_queue_duration_seconds", "histogram",
      "Time a key waited in the queue before a worker took it.", s_latency },
    { "godwit_workqueue_work_duration_seconds", "histogram", "Time a worker held a key.",
      s_work },
    { "godwit_workqueue_longest_running_processor_seconds", "gauge",
      "How long the oldest key being processed has been held.", s_longest },
  };
  gw_rc rc = gw_version_metric(sb);
  for(size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && !rc; i++)
    rc = per_ctrl(m, sb, rows[i].name, rows[i].type, rows[i].help, rows[i].fn);
  if(!rc)
    rc = informers(m, sb);
  if(!rc)
    rc = leader_and_events(m, sb);
  for(int i = 0; i < m->nmetrics && !rc; i++)
    rc = m->metrics_fn[i](m->metrics_ctx[i], sb);
  if(!rc)
    rc = kube_client_metrics(m->o.kube, sb);
  return rc;
}

gw_rc mgr_add_metrics(struct mgr *m, mgr_metrics_fn fn, void *ctx)
{
  if(m->started || m->nmetrics == MGR_MAX_METRICS || !fn)
    return GW_EINVAL;
  m->metrics_fn[m->nmetrics] = fn;
  m->metrics_ctx[m->nmetrics++] = ctx;
  return GW_OK;
}
