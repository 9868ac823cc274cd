/*
 * gen.h: random objects generated from a kind's schema, for the property tests.
 *
 * Every field is present with some probability (required ones always); values respect types,
 * enums, ranges, formats (taken from the format's examples) and uniqueness; defaults are
 * applied afterwards, as the apiserver applies them before anything converts an object.
 */
#ifndef GW_GEN_H
#define GW_GEN_H

#include <cJSON.h>

#include "api/api.h"

/* A deterministic generator: same seed, same objects. */
struct gen {
  unsigned long long state;
};

void gen_seed(struct gen *g, unsigned long long seed);
unsigned gen_below(struct gen *g, unsigned n);
/* A whole object of kind k in version v: apiVersion, kind, metadata, spec, status. */
cJSON *gen_object(struct gen *g, const struct api_kind *k, const struct api_version *v);

#endif
