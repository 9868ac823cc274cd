/*
 * client.h: calls to a node agent's API (api.h) over HTTPS with libcurl: the controller's, and
 * the source agent's when it sends a checkpoint to the destination agent.
 *
 * The agent's certificate names the service (NA_SERVER_NAME, one certificate for every node),
 * while its endpoint is its node's address: the connection goes to the endpoint and the
 * certificate is checked against the name (curl's CONNECT_TO), against the CA given.
 *
 *   struct na_target t = {.endpoint = "https://10.0.0.7:9650", .ca_file = ca, .token = tok};
 *   cJSON *out = NULL;
 *   int code = 0;
 *   if(na_post(&t, NA_PATH_STATE, body, &out, &code, err, sizeof(err))) ...
 */
#ifndef GW_AGENT_CLIENT_H
#define GW_AGENT_CLIENT_H

#include <cJSON.h>
#include <stddef.h>

#include "api.h"
#include "rc.h"

#define NA_SERVER_NAME "godwit-nodeagent"

struct na_target {
  const char *endpoint;    /* https://ADDRESS:PORT (the Node annotation's) */
  const char *server_name; /* NULL: NA_SERVER_NAME */
  const char *ca_file;     /* NULL: the system's */
  const char *token;       /* bearer token */
  long timeout_ms;         /* 0: 30 s */
};

/* POST path with a JSON body (NULL: {}). On a 2xx answer GW_OK and *out the parsed body (may be
 * NULL when out is). Otherwise an rc (GW_ESTATUS for an HTTP error, GW_ECONNECT, GW_ETIMEOUT,
 * GW_ETLS) with err saying what the agent or the network said; *code is the HTTP status (0 when
 * none came). */
gw_rc na_post(const struct na_target *t, const char *path, const cJSON *body, cJSON **out,
              int *code, char *err, size_t errlen) GW_MUST_CHECK;

/* The checkpoint directory's name of a migration: NAMESPACE_NAME_UID8 (api.h). GW_EINVAL when a
 * part holds anything but lower-case letters, digits, '.' and '-' (names are DNS subdomains). */
gw_rc na_dirname(const char *ns, const char *name, const char *uid,
                 char out[NA_DIRNAME_MAX]) GW_MUST_CHECK;
/* The same from a request's "migration": {"namespace", "name", "uid"}. */
gw_rc na_dirname_json(const cJSON *migration, char out[NA_DIRNAME_MAX]) GW_MUST_CHECK;

/* PUT NA_PATH_FILES: one file of a migration's checkpoint, with its sha256 ("sha256:<hex>"). */
gw_rc na_put_file(const struct na_target *t, const char *migration, const char *file,
                  const void *data, size_t len, const char *sha256, int *code, char *err,
                  size_t errlen) GW_MUST_CHECK;

#endif
