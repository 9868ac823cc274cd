/*
 * yamldoc.h: YAML documents as cJSON, the way kubectl reads manifests.
 *
 * yamldoc_parse() reads every document of a stream (--- separated) into a cJSON array, one item per
 * non-empty document. Plain scalars resolve as sigs.k8s.io/yaml does for Kubernetes manifests:
 * null (~, null, empty), booleans (true/false and YAML 1.1's yes/no/on/off/y/n), integers
 * (decimal, 0x, 0o), floats; quoted, literal and folded scalars are strings; !!str forces a
 * string. Anchors and aliases are expanded. Errors name the line and column.
 */
#ifndef GW_YAMLDOC_H
#define GW_YAMLDOC_H

#include <cJSON.h>
#include <stddef.h>

#include "rc.h"

gw_rc yamldoc_parse(const char *text, size_t len, cJSON **docs, char *err, size_t errlen)
  GW_MUST_CHECK;
gw_rc yamldoc_parse_file(const char *path, cJSON **docs, char *err, size_t errlen) GW_MUST_CHECK;

#endif
