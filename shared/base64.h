/*
 * base64.h: RFC 4648 base64 decoding, for the data of Kubernetes Secrets (the controller's
 * connection URIs, the local Job runner's env and volumes, the benchmark's probe).
 *
 *   size_t n;
 *   unsigned char *v = b64_decode(secret_value, &n);   // NUL-terminated; free() it
 *
 * Padding is optional; line breaks are skipped (a value wrapped by an editor). Anything else
 * outside the alphabet, data after padding, or a length that cannot come from whole bytes gives
 * NULL.
 */
#ifndef GW_BASE64_H
#define GW_BASE64_H

#include <stddef.h>

/* The decoded bytes with a NUL after them (malloc'd), *len their count (may be NULL); NULL when
 * in is not base64 or out of memory. */
unsigned char *b64_decode(const char *in, size_t *len);

#endif
