/*
 * openapi.h: /openapi/v2 and /openapi/v3 (openapi.c), used by discovery.c.
 */
#ifndef LS_OPENAPI_H
#define LS_OPENAPI_H

#include "rest.h"

/* Answers a path under /openapi/; always true. */
bool openapi_handle(struct ls_req *r);

#endif
