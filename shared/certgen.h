/*
 * certgen.h: issues the webhook's CA and serving certificate (the core of godwit-certs).
 *
 * What certgen_issue() writes into opts->out_dir, and nothing else:
 *   ca.crt  0644  self-signed CA: basicConstraints critical CA:TRUE, keyUsage keyCertSign and
 *                 cRLSign, subjectKeyIdentifier; subject "O=godwit, CN=godwit-ca@<unix time>"
 *   ca.key  0600  the CA's key, kept so that --reuse-ca can sign the next serving certificate
 *   tls.crt 0644  serving certificate: CA:FALSE, digitalSignature + keyEncipherment, EKU
 *                 serverAuth, subjectAltName = every DNS name and IP address of the options,
 *                 authorityKeyIdentifier of the CA
 *   tls.key 0600  the serving key
 * Keys are ECDSA P-256 (PKCS#8 PEM), signatures SHA-256, serials random and 159 bits long,
 * notBefore one minute in the past (clock skew between the issuing machine and the apiserver).
 *
 * Invariants:
 *  - Nothing touches the disk before every input is checked and every certificate is built: a bad
 *    name, address or validity leaves out_dir as it was (not even created).
 *  - All or nothing: the files are written under hidden temporary names in out_dir, flushed to
 *    disk, and renamed over the old ones only once all of them are complete. A failure before the
 *    renames removes the temporaries and leaves the old files untouched.
 *  - With reuse_ca, a CA found in out_dir (both ca.crt and ca.key, matching, still valid, outliving
 *    the new serving certificate) is kept byte for byte and only the serving pair changes; with
 *    neither file present a new CA is made (result.ca_created tells); one without the other is an
 *    error. Without reuse_ca a new CA replaces the old one.
 *  - Errors come back as a gw_rc plus one lower-case line in err that names the input at fault and
 *    says what to do.
 *
 * Ownership: certgen_opts owns every string in it (certgen_opts_release frees them);
 * certgen_result owns ca_bundle (certgen_result_release).
 */
#ifndef GW_CERTGEN_H
#define GW_CERTGEN_H

#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

#define CERTGEN_MAX_NAMES 100          /* DNS names plus IP addresses */
#define CERTGEN_DEFAULT_DAYS 365       /* serving certificate */
#define CERTGEN_DEFAULT_CA_DAYS 3650   /* CA */
#define CERTGEN_MAX_DAYS 36500

struct certgen_opts {
  char *out_dir;
  char **dns; /* DNS names, NULL-terminated */
  size_t ndns;
  char **ips; /* IPv4 or IPv6 literals, NULL-terminated */
  size_t nips;
  int days;    /* serving certificate validity */
  int ca_days; /* validity of a new CA */
  bool reuse_ca;
};

struct certgen_result {
  char *ca_bundle; /* base64 of ca.crt's PEM on one line: what a caBundle field holds */
  bool ca_created; /* a new CA was made (always, unless reuse_ca found one) */
};

/* Defaults: no directory, no names, CERTGEN_DEFAULT_DAYS, CERTGEN_DEFAULT_CA_DAYS. */
void certgen_opts_init(struct certgen_opts *o);
void certgen_opts_release(struct certgen_opts *o);
gw_rc certgen_opts_set_out(struct certgen_opts *o, const char *dir) GW_MUST_CHECK;
/* Append a copy of a name or address, skipping duplicates; checked only by certgen_issue. */
gw_rc certgen_opts_add_dns(struct certgen_opts *o, const char *name) GW_MUST_CHECK;
gw_rc certgen_opts_add_ip(struct certgen_opts *o, const char *addr) GW_MUST_CHECK;
/* The names a Service answers to in the cluster: NAME, NAME.NS, NAME.NS.svc and
 * NAME.NS.svc.cluster.local. */
gw_rc certgen_opts_add_service(struct certgen_opts *o, const char *service, const char *ns)
  GW_MUST_CHECK;

gw_rc certgen_issue(const struct certgen_opts *o, struct certgen_result *res, char *err,
                    size_t errlen) GW_MUST_CHECK;
void certgen_result_release(struct certgen_result *r);

/* Checks used before issuing; exposed for tests. */
bool certgen_valid_dns(const char *name);
/* Parses an IPv4 or IPv6 literal into out (4 or 16 bytes); returns the length, 0 if invalid. */
int certgen_parse_ip(const char *addr, unsigned char out[16]);

/* File helpers (certgen_io.c). */
struct certgen_file {
  const char *name; /* base name inside the directory */
  const char *data;
  size_t len;
  unsigned mode;    /* e.g. 0600 */
};
/* mkdir -p with mode 0755 for the missing components. */
gw_rc certgen_mkdirs(const char *dir, char *err, size_t errlen) GW_MUST_CHECK;
/* Writes every file or none (see the invariants above). dir must exist. */
gw_rc certgen_write_files(const char *dir, const struct certgen_file *files, size_t n, char *err,
                          size_t errlen) GW_MUST_CHECK;
/* Reads a whole file of at most max bytes into a malloc'd NUL-terminated buffer. GW_ENOTFOUND
 * when it does not exist. */
gw_rc certgen_read_file(const char *path, size_t max, char **data, size_t *len) GW_MUST_CHECK;

#endif
