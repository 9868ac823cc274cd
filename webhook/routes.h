/* routes.h: what each path of the webhook answers (the HTTPS port serves all of them; the
 * optional plain metrics port serves /metrics, /healthz and /readyz). */
#ifndef GW_ROUTES_H
#define GW_ROUTES_H

#include "server.h"

extern const struct http_route routes_https[];
extern const struct http_route routes_metrics[];

/* Ready once a certificate and a policy are loaded. */
bool routes_ready(void);

#endif
