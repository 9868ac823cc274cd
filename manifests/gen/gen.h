/* gen.h: what godwit-gen produces from the API tables: CRDs and the field reference. */
#ifndef GW_GEN_TOOL_H
#define GW_GEN_TOOL_H

#include <cJSON.h>

#include "api/api.h"
#include "strbuf.h"

#define GEN_NAMESPACE "godwit-system"
#define GEN_SERVICE "godwit-webhook"

cJSON *gen_crd(const struct api_kind *k);
gw_rc gen_reference(struct strbuf *sb, const char *group) GW_MUST_CHECK;

#endif
