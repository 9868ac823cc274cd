/*
 * rc.h: the one return-code enum of godwit.
 *
 * Every fallible function returns a gw_rc; 0 (GW_OK) is success. Chain steps as
 *     if(!rc) rc = step();
 * gw_strerror() gives a lower-case phrase for logs. The table below is the only place a code is
 * declared; add a row to add a code.
 */
#ifndef GW_RC_H
#define GW_RC_H

#define GW_RC_MAP(X)                                                   \
  X(GW_OK, "ok")                                                       \
  X(GW_ENOMEM, "out of memory")                                        \
  X(GW_EINVAL, "invalid argument")                                     \
  X(GW_EPARSE, "malformed input")                                      \
  X(GW_ETOOBIG, "input too large")                                     \
  X(GW_EIO, "input/output error")                                      \
  X(GW_ENOTFOUND, "not found")                                         \
  X(GW_ECONFLICT, "conflict")                                          \
  X(GW_EUNSUPPORTED, "not supported")                                  \
  X(GW_ETLS, "tls error")                                              \
  X(GW_EDENIED, "denied")                                              \
  X(GW_EGONE, "gone (resource version too old)")                       \
  X(GW_ESTATUS, "the API server refused the request")                  \
  X(GW_ETIMEOUT, "timed out")                                          \
  X(GW_ECONNECT, "cannot reach the server")                            \
  X(GW_ESTOPPED, "stopped")

typedef enum {
#define GW_RC_ENUM(name, text) name,
  GW_RC_MAP(GW_RC_ENUM)
#undef GW_RC_ENUM
  GW_RC_COUNT
} gw_rc;

#define GW_MUST_CHECK __attribute__((warn_unused_result))

const char *gw_strerror(gw_rc rc);

#endif
