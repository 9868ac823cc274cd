#include "metrics.h"

#include <string.h>

#include "informer.h"
#include "json.h"
#include "phase.h"

const double hist_bounds[HIST_NBUCKETS] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1,     2.5,  5,     10,  60 };

void hist_observe(struct hist *h, double seconds)
{
  int i = 0;
  while(i < HIST_NBUCKETS && seconds > hist_bounds[i])
    i++;
  if(i < HIST_NBUCKETS)
    h->buckets[i]++;
  h->count++;
  h->sum += seconds;
}

gw_rc hist_render(struct strbuf *sb, const char *name, const char *labels, const struct hist *h)
{
  gw_rc rc = GW_OK;
  uint64_t cum = 0;
  const char *sep = *labels ? "," : "";
  for(int i = 0; i < HIST_NBUCKETS && !rc; i++) {
    cum += h->buckets[i];
    rc = strbuf_addf(sb, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, hist_bounds[i],
                     (unsigned long long)cum);
  }
  if(!rc)
    rc = strbuf_addf(sb, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                     (unsigned long long)h->count);
  const char *lb = *labels ? "{" : "", *rb = *labels ? "}" : "";
  if(!rc)
    rc = strbuf_addf(sb, "%s_sum%s%s%s %.6f\n%s_count%s%s%s %llu\n", name, lb, labels, rb, h->sum,
                     name, lb, labels, rb, (unsigned long long)h->count);
  return rc;
}

gw_rc metric_header(struct strbuf *sb, const char *name, const char *type, const char *help)
{
  return strbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct phase_render {
  struct strbuf *sb;
  const char *name;
  const struct phase_table *t;
  gw_rc rc;
};

static void phase_one(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct phase_render *r = ctx;
  const char *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  const char *phase = json_get_str(obj, "status.phase");
  for(int p = 0; p < r->t->count && !r->rc && ns && name; p++)
    r->rc = strbuf_addf(r->sb, "%s{namespace=\"%s\",name=\"%s\",phase=\"%s\"} %d\n", r->name,
                        ns, name, phase_name(r->t, p),
                        phase && !strcmp(phase, phase_name(r->t, p)));
}

gw_rc metric_phase_gauge(struct strbuf *sb, struct informer *inf, const char *name,
                         const char *help, const struct phase_table *t)
{
  gw_rc rc = metric_header(sb, name, "gauge", help);
  struct phase_render r = { sb, name, t, GW_OK };
  if(!rc)
    informer_each(inf, NULL, phase_one, &r);
  return rc ? rc : r.rc;
}
