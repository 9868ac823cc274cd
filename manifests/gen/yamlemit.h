/* yamlemit.h: cJSON printed as block-style YAML (for generated manifests people read). */
#ifndef GW_YAMLEMIT_H
#define GW_YAMLEMIT_H

#include <cJSON.h>

#include "strbuf.h"

gw_rc yamlemit(struct strbuf *sb, const cJSON *v) GW_MUST_CHECK;

#endif
