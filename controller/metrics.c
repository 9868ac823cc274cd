#include "metrics.h"

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
