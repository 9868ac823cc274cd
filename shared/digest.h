/* digest.h: the "sha256:<64 lower-case hex>" form godwit prints everywhere a digest names
 * content (policy sources, Pod templates, Ptah inputs and migration checksums). */
#ifndef GW_DIGEST_H
#define GW_DIGEST_H

#include <stddef.h>

#include "rc.h"

#define DIGEST_SHA256_LEN 72 /* "sha256:" + 64 hex + NUL, rounded up */

/* out gets "sha256:<hex>" of the len bytes at data; GW_ENOMEM when the library fails. */
gw_rc digest_sha256(const void *data, size_t len, char out[DIGEST_SHA256_LEN]) GW_MUST_CHECK;

#endif
