/*
 * jsonpatch.h: RFC 6902 JSON Patch, the subset admission needs, and a diff that produces it.
 *
 * jsonpatch_diff(from, to) returns the operations that turn `from` into `to`: members are added,
 * replaced or removed one by one, recursively into objects; an array that differs is replaced
 * whole (admission patches stay readable and never depend on element positions that a
 * concurrent writer may shift). Paths are RFC 6901 pointers ("~" as "~0", "/" as "~1").
 *
 * jsonpatch_apply() applies add, remove, replace and test (what kube-apiserver accepts from a
 * webhook, minus move and copy, which godwit never emits) and fails without a partial result:
 * the document is changed only when every operation applied.
 */
#ifndef GW_JSONPATCH_H
#define GW_JSONPATCH_H

#include <cJSON.h>

#include "rc.h"
#include "strbuf.h"

/* A new array of operations (empty when equal); NULL when out of memory. */
cJSON *jsonpatch_diff(const cJSON *from, const cJSON *to);
/* Applies patch to *doc; on success *doc may be a new root (an op on ""). errbuf says why not. */
gw_rc jsonpatch_apply(cJSON **doc, const cJSON *patch, char *errbuf, size_t errlen) GW_MUST_CHECK;
/* Appends the RFC 6901 escape of one reference token. */
gw_rc jsonpointer_append(struct strbuf *sb, const char *token) GW_MUST_CHECK;

#endif
