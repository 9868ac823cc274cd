/*
 * metrics.h: Prometheus text exposition (format 0.0.4) helpers for the controller.
 *
 * Every metric lives in the structure that owns what it measures (a work queue, a controller,
 * the leader elector) under that structure's lock; nothing here is global. The manager renders
 * them all for /metrics (manager.c), followed by the Kubernetes client's own counters.
 * Label values come from closed sets (controller names, kinds, results), never from objects.
 */
#ifndef GW_CTRL_METRICS_H
#define GW_CTRL_METRICS_H

#include <stdint.h>

#include "rc.h"
#include "strbuf.h"

#define HIST_NBUCKETS 13

/* Upper bounds in seconds, shared by every histogram: 1 ms .. 60 s, then +Inf. */
extern const double hist_bounds[HIST_NBUCKETS];

struct hist {
  uint64_t buckets[HIST_NBUCKETS]; /* not cumulative; rendered cumulative */
  uint64_t count;
  double sum;
};

void hist_observe(struct hist *h, double seconds);
/* name_bucket/_sum/_count lines; labels is `a="x",b="y"` or "" (no braces). */
gw_rc hist_render(struct strbuf *sb, const char *name, const char *labels, const struct hist *h)
  GW_MUST_CHECK;
/* "# HELP name help\n# TYPE name type\n" */
gw_rc metric_header(struct strbuf *sb, const char *name, const char *type, const char *help)
  GW_MUST_CHECK;

/* Per object of a reconciled kind (the exception to the closed label sets above: an alert must
 * name the object a person acts on): name{namespace,name,phase} 1 for the object's
 * status.phase and 0 for every other phase of t, for each object inf holds; with its header. */
struct informer;
struct phase_table;
gw_rc metric_phase_gauge(struct strbuf *sb, struct informer *inf, const char *name,
                         const char *help, const struct phase_table *t) GW_MUST_CHECK;

#endif
