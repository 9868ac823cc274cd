/*
 * health.h: the controller's plain-HTTP endpoint (--metrics-port): /healthz, /readyz and
 * /metrics, as the Deployment's probes and Prometheus expect them.
 *
 *   /healthz  200 "ok" while the process works; 500 with the reason otherwise
 *   /readyz   200 "ok" once the caches are synced and the replica is leading or a healthy
 *             standby; 503 with the reason otherwise
 *   /metrics  text/plain; version=0.0.4
 * Anything else is 404; methods other than GET and HEAD are 405. Bodies are never read.
 */
#ifndef GW_CTRL_HEALTH_H
#define GW_CTRL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "rc.h"
#include "strbuf.h"

struct health_ops {
  /* Fill why (a short reason) when answering false. */
  bool (*healthy)(void *ctx, char *why, size_t len);
  bool (*ready)(void *ctx, char *why, size_t len);
  gw_rc (*metrics)(void *ctx, struct strbuf *sb);
  void *ctx;
};

struct health;

/* port 0: any free port (see health_port). */
gw_rc health_start(struct health **out, const char *bind, int port, const struct health_ops *ops,
                   char *err, size_t errlen) GW_MUST_CHECK;
int health_port(const struct health *h);
void health_stop(struct health *h);

#endif
