/*
 * metrics.h: the webhook's Prometheus metrics (text exposition format 0.0.4).
 *
 * Counters are lock-free atomics in fixed tables, so recording costs a few nanoseconds on the
 * request path. Label values come from closed sets (the served kinds plus "Pod" and "other";
 * the four admission operations plus "CONVERT"), so cardinality is bounded whatever clients send.
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

enum wh_endpoint { EP_MUTATE, EP_VALIDATE, EP_CONVERT, EP_COUNT };
enum wh_verdict { V_ALLOWED, V_PATCHED, V_DENIED, V_IGNORED, V_ERROR, V_COUNT };

struct metrics_gauges {
  int64_t cert_not_after; /* unix seconds, 0 when no certificate is loaded */
  const char *policy_digest;
  bool ready;
};

void metrics_request(enum wh_endpoint ep, const char *kind, const char *op, enum wh_verdict v,
                     double seconds);
/* A request refused before it reached a handler: 400, 404, 405, 413, 415. */
void metrics_http_refusal(int code);
void metrics_policy_reload(bool ok);
void metrics_cert_reload(bool ok);
gw_rc metrics_render(struct strbuf *sb, const struct metrics_gauges *g) GW_MUST_CHECK;

#endif
