/*
 * tlsstore.h: the serving certificate, reloaded from disk without a restart.
 *
 * GnuTLS asks for the certificate at each handshake through a retrieve callback
 * (tls_store_callback, given to libmicrohttpd as MHD_OPTION_HTTPS_CERT_CALLBACK); the callback
 * takes no user pointer, so the store is one per process. A reload loads both files, checks that
 * the key belongs to the certificate and only then publishes the new pair with one atomic store;
 * a half-written pair (certificate replaced, key not yet) is refused and retried on the next
 * check, and the old pair keeps serving. Earlier pairs stay allocated for a few more generations
 * so a handshake that picked one up just before a swap finishes with it; rotations are minutes
 * apart, handshakes milliseconds.
 */
#ifndef GW_TLSSTORE_H
#define GW_TLSSTORE_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stdint.h>

#include "rc.h"

/* Remembers the paths; loads nothing yet. */
void tls_store_init(const char *cert_path, const char *key_path);
/* Loads the pair when the files changed since the last successful load (or nothing is loaded).
 * *changed tells whether a new pair is now served. err is set on failure. */
gw_rc tls_store_reload(bool *changed, char *err, size_t errlen) GW_MUST_CHECK;
bool tls_store_loaded(void);
/* notAfter of the served certificate, unix seconds; 0 when none. */
int64_t tls_store_not_after(void);
void tls_store_shutdown(void);

int tls_store_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                       gnutls_pcert_st **pcert, unsigned int *pcert_length,
                       gnutls_privkey_t *pkey);

#endif
