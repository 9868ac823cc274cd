/* certgen.c: builds the CA and serving certificate with the OpenSSL 3 API (see certgen.h). */
#include "certgen.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PEM_MAX (64 * 1024) /* a CA file larger than this is not ours */

/* Everything one run builds; released in one place whatever step failed. */
struct issue {
  GENERAL_NAMES *sans;
  X509 *ca;
  EVP_PKEY *ca_key;
  X509 *leaf;
  EVP_PKEY *leaf_key;
  char *pem[4]; /* ca.crt, ca.key, tls.crt, tls.key */
  size_t pem_len[4];
};

enum { PEM_CA_CRT, PEM_CA_KEY, PEM_TLS_CRT, PEM_TLS_KEY };

/* Reports a failed OpenSSL call with the library's reason, and clears its error queue. */
static gw_rc tls_fail(char *err, size_t errlen, const char *what)
{
  unsigned long e = ERR_peek_last_error();
  const char *why = e ? ERR_reason_error_string(e) : NULL;
  snprintf(err, errlen, "%s: %s", what, why ? why : "openssl error");
  ERR_clear_error();
  return GW_ETLS;
}

bool certgen_valid_dns(const char *name)
{
  size_t n = strlen(name);
  if(!n || n > 253)
    return false;
  if(!strncmp(name, "*.", 2) && n > 2) /* one leading wildcard label */
    name += 2;
  size_t label = 0;
  for(const char *p = name;; p++) {
    if(*p == '.' || !*p) {
      if(!label || p[-1] == '-')
        return false;
      if(!*p)
        return true;
      label = 0;
      continue;
    }
    if(!isalnum((unsigned char)*p) && !(*p == '-' && label))
      return false;
    if(++label > 63)
      return false;
  }
}

int certgen_parse_ip(const char *addr, unsigned char out[16])
{
  if(inet_pton(AF_INET, addr, out) == 1)
    return 4;
  if(inet_pton(AF_INET6, addr, out) == 1)
    return 16;
  return 0;
}

static gw_rc push_name(GENERAL_NAMES *sans, int type, const void *data, int len)
{
  GENERAL_NAME *g = GENERAL_NAME_new();
  ASN1_STRING *s = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
  if(!g || !s || !ASN1_STRING_set(s, data, len)) {
    GENERAL_NAME_free(g);
    ASN1_STRING_free(s);
    return GW_ENOMEM;
  }
  GENERAL_NAME_set0_value(g, type, s);
  if(!sk_GENERAL_NAME_push(sans, g)) {
    GENERAL_NAME_free(g);
    return GW_ENOMEM;
  }
  return GW_OK;
}

static gw_rc check_inputs(const struct certgen_opts *o, struct issue *st, char *err,
                          size_t errlen)
{
  if(!o->out_dir || !*o->out_dir) {
    snprintf(err, errlen, "--out DIR is required");
    return GW_EINVAL;
  }
  if(!o->ndns && !o->nips) {
    snprintf(err, errlen, "no name to certify: give at least one --dns, --ip or --service");
    return GW_EINVAL;
  }
  if(o->ndns + o->nips > CERTGEN_MAX_NAMES) {
    snprintf(err, errlen, "too many names: at most %d --dns and --ip together",
             CERTGEN_MAX_NAMES);
    return GW_EINVAL;
  }
  if(o->days < 1 || o->days > CERTGEN_MAX_DAYS || o->ca_days < 1 ||
     o->ca_days > CERTGEN_MAX_DAYS) {
    snprintf(err, errlen, "--days and --ca-days must be between 1 and %d", CERTGEN_MAX_DAYS);
    return GW_EINVAL;
  }
  st->sans = sk_GENERAL_NAME_new_null();
  gw_rc rc = st->sans ? GW_OK : GW_ENOMEM;
  for(size_t i = 0; i < o->ndns && !rc; i++) {
    if(!certgen_valid_dns(o->dns[i])) {
      snprintf(err, errlen, "--dns \"%s\": not a valid DNS name (labels of letters, digits and "
               "inner '-', at most 63 each, joined by '.')", o->dns[i]);
      return GW_EINVAL;
    }
    rc = push_name(st->sans, GEN_DNS, o->dns[i], (int)strlen(o->dns[i]));
  }
  for(size_t i = 0; i < o->nips && !rc; i++) {
    unsigned char ip[16];
    int len = certgen_parse_ip(o->ips[i], ip);
    if(!len) {
      snprintf(err, errlen, "--ip \"%s\": not an IPv4 or IPv6 address", o->ips[i]);
      return GW_EINVAL;
    }
    rc = push_name(st->sans, GEN_IPADD, ip, len);
  }
  if(rc)
    snprintf(err, errlen, "out of memory");
  return rc;
}

/* A v3 certificate with a fresh 159-bit serial (positive, fits RFC 5280's 20 octets), the
 * subject O=godwit, CN=cn, the given public key, valid from a minute ago for days. */
static X509 *cert_skeleton(EVP_PKEY *key, const char *cn, int days)
{
  X509 *x = X509_new();
  BIGNUM *bn = BN_new();
  ASN1_INTEGER *serial = NULL;
  bool ok = x && bn && X509_set_version(x, X509_VERSION_3) &&
            BN_rand(bn, 159, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) &&
            (serial = BN_to_ASN1_INTEGER(bn, NULL)) && X509_set_serialNumber(x, serial);
  X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
  ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                        (const unsigned char *)"godwit", -1, -1, 0) &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                  0) &&
       X509_set_pubkey(x, key) && X509_gmtime_adj(X509_getm_notBefore(x), -60) &&
       X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL);
  ASN1_INTEGER_free(serial);
  BN_free(bn);
  if(!ok) {
    X509_free(x);
    return NULL;
  }
  return x;
}

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
  X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
  bool ok = e && X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
  return ok;
}

static gw_rc make_ca(const struct certgen_opts *o, struct issue *st, char *err, size_t errlen)
{
  char cn[64];
  snprintf(cn, sizeof(cn), "godwit-ca@%lld", (long long)time(NULL));
  X509V3_CTX ctx;
  st->ca_key = EVP_EC_gen("P-256");
  st->ca = st->ca_key ? cert_skeleton(st->ca_key, cn, o->ca_days) : NULL;
  if(!st->ca)
    return tls_fail(err, errlen, "cannot create the CA");
  X509_set_issuer_name(st->ca, X509_get_subject_name(st->ca));
  X509V3_set_ctx(&ctx, st->ca, st->ca, NULL, NULL, 0);
  if(!add_ext(st->ca, &ctx, NID_basic_constraints, "critical,CA:TRUE") ||
     !add_ext(st->ca, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
     !add_ext(st->ca, &ctx, NID_subject_key_identifier, "hash") ||
     !X509_sign(st->ca, st->ca_key, EVP_sha256()))
    return tls_fail(err, errlen, "cannot create the CA");
  return GW_OK;
}

static X509 *parse_cert(const char *pem, size_t len)
{
  BIO *b = BIO_new_mem_buf(pem, (int)len);
  X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  return x;
}

static EVP_PKEY *parse_key(const char *pem, size_t len)
{
  BIO *b = BIO_new_mem_buf(pem, (int)len);
  EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  return k;
}

/* Loads DIR's CA for --reuse-ca. *found is false when neither file exists. The loaded PEM is kept
 * as read so that ca.crt is rewritten byte for byte. */
static gw_rc load_ca(const struct certgen_opts *o, struct issue *st, bool *found, char *err,
                     size_t errlen)
{
  char crt[PATH_MAX], key[PATH_MAX];
  *found = false;
  snprintf(crt, sizeof(crt), "%s/ca.crt", o->out_dir);
  snprintf(key, sizeof(key), "%s/ca.key", o->out_dir);
  gw_rc rc1 = certgen_read_file(crt, PEM_MAX, &st->pem[PEM_CA_CRT], &st->pem_len[PEM_CA_CRT]);
  gw_rc rc2 = certgen_read_file(key, PEM_MAX, &st->pem[PEM_CA_KEY], &st->pem_len[PEM_CA_KEY]);
  if(rc1 == GW_ENOTFOUND && rc2 == GW_ENOTFOUND)
    return GW_OK;
  if(rc1 || rc2) {
    snprintf(err, errlen, "--reuse-ca: cannot read \"%s\": %s; restore it, or drop --reuse-ca "
             "to issue a new CA (and update every caBundle)", rc1 ? crt : key,
             gw_strerror(rc1 ? rc1 : rc2));
    return GW_EINVAL;
  }
  *found = true;
  st->ca = parse_cert(st->pem[PEM_CA_CRT], st->pem_len[PEM_CA_CRT]);
  st->ca_key = parse_key(st->pem[PEM_CA_KEY], st->pem_len[PEM_CA_KEY]);
  const char *bad = !st->ca ? "ca.crt is not a PEM certificate"
                  : !st->ca_key ? "ca.key is not an unencrypted PEM private key"
                  : X509_check_ca(st->ca) != 1 ? "ca.crt is not a CA certificate"
                  : X509_check_private_key(st->ca, st->ca_key) != 1 ? "ca.key does not match ca.crt"
                  : X509_cmp_current_time(X509_get0_notAfter(st->ca)) <= 0 ? "the CA has expired"
                  : NULL;
  ERR_clear_error();
  if(bad) {
    snprintf(err, errlen, "--reuse-ca: %s in \"%s\"; drop --reuse-ca to issue a new CA (and "
             "update every caBundle)", bad, o->out_dir);
    return GW_EINVAL;
  }
  time_t end = time(NULL) + (time_t)o->days * 86400;
  if(X509_cmp_time(X509_get0_notAfter(st->ca), &end) < 0) {
    snprintf(err, errlen, "--reuse-ca: the CA in \"%s\" expires before a certificate of "
             "--days %d would; give a smaller --days or drop --reuse-ca", o->out_dir, o->days);
    return GW_EINVAL;
  }
  return GW_OK;
}

static gw_rc make_leaf(const struct certgen_opts *o, struct issue *st, char *err, size_t errlen)
{
  /* Clients match the subjectAltName only; the CN is for people reading the certificate. */
  const char *cn = o->ndns && strlen(o->dns[0]) < 64 ? o->dns[0]
                 : !o->ndns && o->nips ? o->ips[0]
                                       : "godwit-webhook";
  X509V3_CTX ctx;
  st->leaf_key = EVP_EC_gen("P-256");
  st->leaf = st->leaf_key ? cert_skeleton(st->leaf_key, cn, o->days) : NULL;
  if(!st->leaf || !X509_set_issuer_name(st->leaf, X509_get_subject_name(st->ca)))
    return tls_fail(err, errlen, "cannot create the serving certificate");
  X509V3_set_ctx(&ctx, st->ca, st->leaf, NULL, NULL, 0);
  if(!add_ext(st->leaf, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
     !add_ext(st->leaf, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
     !add_ext(st->leaf, &ctx, NID_ext_key_usage, "serverAuth") ||
     !add_ext(st->leaf, &ctx, NID_subject_key_identifier, "hash") ||
     !add_ext(st->leaf, &ctx, NID_authority_key_identifier, "keyid:always") ||
     !X509_add1_ext_i2d(st->leaf, NID_subject_alt_name, st->sans, 0, X509V3_ADD_DEFAULT) ||
     !X509_sign(st->leaf, st->ca_key, EVP_sha256()))
    return tls_fail(err, errlen, "cannot create the serving certificate");
  return GW_OK;
}

/* PEM text of a certificate or key into st->pem[i]. */
static gw_rc to_pem(struct issue *st, int i, X509 *cert, EVP_PKEY *key)
{
  BIO *b = BIO_new(BIO_s_mem());
  char *data = NULL;
  bool ok = b && (cert ? PEM_write_bio_X509(b, cert)
                       : PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL));
  long n = ok ? BIO_get_mem_data(b, &data) : 0;
  if(n > 0 && (st->pem[i] = malloc((size_t)n + 1))) {
    memcpy(st->pem[i], data, (size_t)n);
    st->pem[i][n] = '\0';
    st->pem_len[i] = (size_t)n;
  }
  BIO_free(b);
  return st->pem[i] ? GW_OK : GW_ETLS;
}

static gw_rc encode(struct issue *st, bool new_ca, char *err, size_t errlen)
{
  gw_rc rc = GW_OK;
  if(new_ca) {
    rc = to_pem(st, PEM_CA_CRT, st->ca, NULL);
    if(!rc)
      rc = to_pem(st, PEM_CA_KEY, NULL, st->ca_key);
  }
  if(!rc)
    rc = to_pem(st, PEM_TLS_CRT, st->leaf, NULL);
  if(!rc)
    rc = to_pem(st, PEM_TLS_KEY, NULL, st->leaf_key);
  if(rc)
    tls_fail(err, errlen, "cannot encode PEM");
  return rc;
}

static char *base64_line(const char *data, size_t len)
{
  char *out = malloc(4 * ((len + 2) / 3) + 1);
  if(out)
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
  return out;
}

static void issue_release(struct issue *st)
{
  sk_GENERAL_NAME_pop_free(st->sans, GENERAL_NAME_free);
  X509_free(st->ca);
  EVP_PKEY_free(st->ca_key);
  X509_free(st->leaf);
  EVP_PKEY_free(st->leaf_key);
  for(int i = 0; i < 4; i++) {
    if(st->pem[i])
      OPENSSL_cleanse(st->pem[i], st->pem_len[i]); /* two of them are private keys */
    free(st->pem[i]);
  }
}

gw_rc certgen_issue(const struct certgen_opts *o, struct certgen_result *res, char *err,
                    size_t errlen)
{
  struct issue st = { 0 };
  bool found = false;
  res->ca_bundle = NULL;
  res->ca_created = false;
  gw_rc rc = check_inputs(o, &st, err, errlen);
  if(!rc && o->reuse_ca)
    rc = load_ca(o, &st, &found, err, errlen);
  if(!rc && !found && o->days > o->ca_days) {
    snprintf(err, errlen, "--days %d outlives --ca-days %d; the CA must last longer", o->days,
             o->ca_days);
    rc = GW_EINVAL;
  }
  if(!rc && !found)
    rc = make_ca(o, &st, err, errlen);
  if(!rc)
    rc = make_leaf(o, &st, err, errlen);
  if(!rc)
    rc = encode(&st, !found, err, errlen);
  if(!rc)
    rc = certgen_mkdirs(o->out_dir, err, errlen);
  const struct certgen_file files[] = {
    { "ca.key", st.pem[PEM_CA_KEY], st.pem_len[PEM_CA_KEY], 0600 },
    { "ca.crt", st.pem[PEM_CA_CRT], st.pem_len[PEM_CA_CRT], 0644 },
    { "tls.key", st.pem[PEM_TLS_KEY], st.pem_len[PEM_TLS_KEY], 0600 },
    { "tls.crt", st.pem[PEM_TLS_CRT], st.pem_len[PEM_TLS_CRT], 0644 },
  };
  /* A reused CA is left in place: rewriting it would change nothing but its mtime. */
  if(!rc)
    rc = found ? certgen_write_files(o->out_dir, files + 2, 2, err, errlen)
               : certgen_write_files(o->out_dir, files, 4, err, errlen);
  if(!rc && !(res->ca_bundle = base64_line(st.pem[PEM_CA_CRT], st.pem_len[PEM_CA_CRT]))) {
    snprintf(err, errlen, "out of memory");
    rc = GW_ENOMEM;
  }
  res->ca_created = !rc && !found;
  issue_release(&st);
  return rc;
}

void certgen_result_release(struct certgen_result *r)
{
  free(r->ca_bundle);
  r->ca_bundle = NULL;
}
