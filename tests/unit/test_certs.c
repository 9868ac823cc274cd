/* What certgen.h promises, checked with the OpenSSL API (and GnuTLS, which the webhook serves
 * with): the chain verifies for every name, the extensions are the documented ones, the files
 * and the caBundle agree, --reuse-ca keeps the CA, and a failure writes nothing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <gnutls/gnutls.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "certgen.h"

static char dir[64];     /* this test's scratch directory */
static char out[128];    /* dir/out: where the tool writes */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

static void setup(void)
{
  strcpy(dir, "/tmp/godwit-certs-test-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(out, sizeof(out), "%s/out", dir);
}

static void teardown(void)
{
  nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(certs, .init = setup, .fini = teardown);

/* Issues into `where` with the given names; NULL-terminated lists. */
static gw_rc issue(const char *where, const char *const *dns, const char *const *ips, int days,
                   bool reuse, struct certgen_result *res, char *err, size_t errlen)
{
  struct certgen_opts o;
  certgen_opts_init(&o);
  cr_assert_eq(certgen_opts_set_out(&o, where), GW_OK);
  for(; dns && *dns; dns++)
    cr_assert_eq(certgen_opts_add_dns(&o, *dns), GW_OK);
  for(; ips && *ips; ips++)
    cr_assert_eq(certgen_opts_add_ip(&o, *ips), GW_OK);
  if(days)
    o.days = days;
  o.reuse_ca = reuse;
  err[0] = '\0';
  gw_rc rc = certgen_issue(&o, res, err, errlen);
  certgen_opts_release(&o);
  return rc;
}

static const char *const DNS[] = { "godwit-webhook.godwit-system.svc", "localhost", NULL };
static const char *const IPS[] = { "127.0.0.1", "::1", NULL };

static void issue_ok(const char *where, bool reuse, struct certgen_result *res)
{
  char err[512];
  gw_rc rc = issue(where, DNS, IPS, 0, reuse, res, err, sizeof(err));
  cr_assert_eq(rc, GW_OK, "certgen_issue: %s (%s)", gw_strerror(rc), err);
}

static char *slurp(const char *name, size_t *len)
{
  char path[256], *data;
  size_t n;
  snprintf(path, sizeof(path), "%s/%s", out, name);
  cr_assert_eq(certgen_read_file(path, 1 << 20, &data, &n), GW_OK, "cannot read %s", path);
  if(len)
    *len = n;
  return data;
}

static X509 *load_cert(const char *name)
{
  size_t n;
  char *pem = slurp(name, &n);
  BIO *b = BIO_new_mem_buf(pem, (int)n);
  X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  BIO_free(b);
  free(pem);
  cr_assert_not_null(x, "%s is not a PEM certificate", name);
  return x;
}

static EVP_PKEY *load_key(const char *name)
{
  size_t n;
  char *pem = slurp(name, &n);
  BIO *b = BIO_new_mem_buf(pem, (int)n);
  EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
  BIO_free(b);
  free(pem);
  cr_assert_not_null(k, "%s is not a PEM private key", name);
  return k;
}

/* 0 when leaf chains to ca for a TLS server named host (or ip); else the X509_V_ERR code. */
static int verify(X509 *ca, X509 *leaf, const char *host, const char *ip)
{
  X509_STORE *st = X509_STORE_new();
  X509_STORE_CTX *ctx = X509_STORE_CTX_new();
  cr_assert(st && ctx && X509_STORE_add_cert(st, ca) && X509_STORE_CTX_init(ctx, st, leaf, NULL));
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
  if(host)
    X509_VERIFY_PARAM_set1_host(p, host, 0);
  if(ip)
    X509_VERIFY_PARAM_set1_ip_asc(p, ip);
  int rc = X509_verify_cert(ctx) == 1 ? 0 : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(st);
  return rc ? rc : 0;
}

static size_t entries(const char *path)
{
  DIR *d = opendir(path);
  size_t n = 0;
  if(!d)
    return 0;
  for(struct dirent *e; (e = readdir(d));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static bool exists(const char *path)
{
  struct stat st;
  return !stat(path, &st);
}

Test(certs, chain_verifies_for_every_name)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  X509 *ca = load_cert("ca.crt"), *leaf = load_cert("tls.crt");
  for(const char *const *d = DNS; *d; d++)
    cr_expect_eq(verify(ca, leaf, *d, NULL), 0, "verify for %s", *d);
  for(const char *const *i = IPS; *i; i++)
    cr_expect_eq(verify(ca, leaf, NULL, *i), 0, "verify for %s", *i);
  cr_expect_eq(verify(ca, leaf, "evil.example", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
  cr_expect_eq(verify(ca, leaf, NULL, "10.0.0.1"), X509_V_ERR_IP_ADDRESS_MISMATCH);
  cr_expect(res.ca_created);
  X509_free(ca);
  X509_free(leaf);
  certgen_result_release(&res);
}

Test(certs, san_holds_exactly_the_names)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  X509 *leaf = load_cert("tls.crt");
  GENERAL_NAMES *sans = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
  cr_assert_not_null(sans);
  cr_assert_eq(sk_GENERAL_NAME_num(sans), 4);
  int ndns = 0, nip = 0;
  for(int i = 0; i < sk_GENERAL_NAME_num(sans); i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
    if(g->type == GEN_DNS) {
      cr_expect_str_eq((const char *)ASN1_STRING_get0_data(g->d.dNSName), DNS[ndns]);
      ndns++;
    } else {
      cr_assert_eq(g->type, GEN_IPADD);
      unsigned char want[16];
      int len = certgen_parse_ip(IPS[nip], want);
      cr_expect_eq(ASN1_STRING_length(g->d.iPAddress), len);
      cr_expect_eq(memcmp(ASN1_STRING_get0_data(g->d.iPAddress), want, (size_t)len), 0);
      nip++;
    }
  }
  cr_expect_eq(ndns, 2);
  cr_expect_eq(nip, 2);
  GENERAL_NAMES_free(sans);
  X509_free(leaf);
  certgen_result_release(&res);
}

static bool critical(X509 *x, int nid)
{
  int i = X509_get_ext_by_NID(x, nid, -1);
  cr_assert_geq(i, 0, "extension %s missing", OBJ_nid2sn(nid));
  return X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

Test(certs, extensions_are_the_documented_ones)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  X509 *ca = load_cert("ca.crt"), *leaf = load_cert("tls.crt");
  cr_expect_eq(X509_check_ca(ca), 1);
  cr_expect(critical(ca, NID_basic_constraints));
  cr_expect_eq(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
  cr_expect_not_null(X509_get0_subject_key_id(ca));
  cr_expect_eq(X509_check_ca(leaf), 0);
  cr_expect(critical(leaf, NID_basic_constraints));
  cr_expect(X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE);
  cr_expect_eq(X509_get_key_usage(leaf) & (KU_KEY_CERT_SIGN | KU_CRL_SIGN), 0);
  cr_expect_eq(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
  const ASN1_OCTET_STRING *akid = X509_get0_authority_key_id(leaf);
  cr_assert_not_null(akid);
  cr_expect_eq(ASN1_OCTET_STRING_cmp(akid, X509_get0_subject_key_id(ca)), 0);
  cr_expect_eq(X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(ca)), 0);
  X509_free(ca);
  X509_free(leaf);
  certgen_result_release(&res);
}

static void expect_p256_serial_and_sig(X509 *x)
{
  BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
  cr_expect(!BN_is_negative(bn) && !BN_is_zero(bn));
  cr_expect_eq(BN_num_bits(bn), 159, "serial has %d bits", BN_num_bits(bn));
  BN_free(bn);
  EVP_PKEY *pub = X509_get0_pubkey(x);
  char group[32] = "";
  EVP_PKEY_get_group_name(pub, group, sizeof(group), NULL);
  cr_expect_str_eq(group, "prime256v1");
  cr_expect_eq(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
}

Test(certs, keys_match_and_are_private)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  X509 *ca = load_cert("ca.crt"), *leaf = load_cert("tls.crt");
  EVP_PKEY *cak = load_key("ca.key"), *k = load_key("tls.key");
  cr_expect_eq(X509_check_private_key(leaf, k), 1);
  cr_expect_eq(X509_check_private_key(ca, cak), 1);
  cr_expect_eq(X509_check_private_key(leaf, cak), 0);
  expect_p256_serial_and_sig(ca);
  expect_p256_serial_and_sig(leaf);
  cr_expect_neq(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca), X509_get0_serialNumber(leaf)), 0);
  const struct { const char *name; unsigned mode; } want[] = {
    { "ca.crt", 0644 }, { "ca.key", 0600 }, { "tls.crt", 0644 }, { "tls.key", 0600 },
  };
  for(size_t i = 0; i < 4; i++) {
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", out, want[i].name);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, want[i].mode, "%s mode %o", want[i].name,
                 st.st_mode & 0777);
  }
  cr_expect_eq(entries(out), 4, "no temporaries left behind");
  ERR_clear_error();
  EVP_PKEY_free(cak);
  EVP_PKEY_free(k);
  X509_free(ca);
  X509_free(leaf);
  certgen_result_release(&res);
}

/* Seconds from now to t (negative in the past). */
static long from_now(const ASN1_TIME *t)
{
  int days, secs;
  cr_assert(ASN1_TIME_diff(&days, &secs, NULL, t));
  return days * 86400L + secs;
}

Test(certs, validity_starts_a_minute_ago)
{
  struct certgen_result res;
  char err[512];
  cr_assert_eq(issue(out, DNS, NULL, 30, false, &res, err, sizeof(err)), GW_OK, "%s", err);
  X509 *ca = load_cert("ca.crt"), *leaf = load_cert("tls.crt");
  long nb = from_now(X509_get0_notBefore(leaf)), na = from_now(X509_get0_notAfter(leaf));
  cr_expect(nb <= -55 && nb >= -65, "notBefore %ld s from now", nb);
  cr_expect(labs(na - 30 * 86400L) <= 5, "notAfter %ld s from now", na);
  na = from_now(X509_get0_notAfter(ca));
  cr_expect(labs(na - CERTGEN_DEFAULT_CA_DAYS * 86400L) <= 5, "CA notAfter %ld s", na);
  X509_free(ca);
  X509_free(leaf);
  certgen_result_release(&res);
}

Test(certs, ca_bundle_is_base64_of_ca_crt)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  size_t n, blen = strlen(res.ca_bundle);
  char *pem = slurp("ca.crt", &n);
  cr_assert_eq(strcspn(res.ca_bundle, "\r\n"), blen, "one line");
  unsigned char *dec = malloc(blen);
  int dlen = EVP_DecodeBlock(dec, (const unsigned char *)res.ca_bundle, (int)blen);
  cr_assert_gt(dlen, 0);
  for(const char *p = res.ca_bundle + blen; p > res.ca_bundle && p[-1] == '='; p--)
    dlen--; /* EVP_DecodeBlock counts the padding as zero bytes */
  cr_assert_eq((size_t)dlen, n);
  cr_expect_eq(memcmp(dec, pem, n), 0);
  cr_expect(!strncmp(pem, "-----BEGIN CERTIFICATE-----\n", 28));
  free(dec);
  free(pem);
  certgen_result_release(&res);
}

Test(certs, reuse_ca_keeps_the_ca_and_renews_the_pair)
{
  struct certgen_result r1, r2;
  issue_ok(out, false, &r1);
  size_t n1, n2;
  char *ca1 = slurp("ca.crt", &n1), *crt1 = slurp("tls.crt", NULL), *key1 = slurp("tls.key", NULL);
  issue_ok(out, true, &r2);
  char *ca2 = slurp("ca.crt", &n2), *crt2 = slurp("tls.crt", NULL), *key2 = slurp("tls.key", NULL);
  cr_expect(!r2.ca_created);
  cr_expect_str_eq(r1.ca_bundle, r2.ca_bundle);
  cr_expect(n1 == n2 && !memcmp(ca1, ca2, n1), "ca.crt unchanged");
  cr_expect_str_neq(crt1, crt2);
  cr_expect_str_neq(key1, key2);
  X509 *ca = load_cert("ca.crt"), *leaf = load_cert("tls.crt");
  cr_expect_eq(verify(ca, leaf, "localhost", NULL), 0);
  X509_free(ca);
  X509_free(leaf);
  free(ca1), free(crt1), free(key1), free(ca2), free(crt2), free(key2);
  certgen_result_release(&r1);
  certgen_result_release(&r2);
}

Test(certs, without_reuse_a_new_ca_replaces_the_old)
{
  struct certgen_result r1, r2;
  issue_ok(out, false, &r1);
  issue_ok(out, false, &r2);
  cr_expect(r2.ca_created);
  cr_expect_str_neq(r1.ca_bundle, r2.ca_bundle);
  certgen_result_release(&r1);
  certgen_result_release(&r2);
}

Test(certs, reuse_ca_in_an_empty_dir_creates_one)
{
  struct certgen_result res;
  issue_ok(out, true, &res);
  cr_expect(res.ca_created);
  cr_expect_eq(entries(out), 4);
  certgen_result_release(&res);
}

/* Runs a failing issue over an existing set and checks that nothing changed. */
static void expect_refused_keeping(const char *const *dns, const char *const *ips, int days,
                                   bool reuse, const char *want_in_err)
{
  char *before = slurp("tls.crt", NULL);
  size_t n = entries(out);
  struct certgen_result res;
  char err[512];
  cr_assert_neq(issue(out, dns, ips, days, reuse, &res, err, sizeof(err)), GW_OK);
  cr_expect_null(res.ca_bundle);
  cr_expect(strstr(err, want_in_err), "error \"%s\" should mention \"%s\"", err, want_in_err);
  cr_expect((err[0] >= 'a' && err[0] <= 'z') || err[0] == '-', "lower case: %s", err);
  cr_expect_neq(err[strlen(err) - 1], '.', "no final period: %s", err);
  char *after = slurp("tls.crt", NULL);
  cr_expect_str_eq(before, after, "tls.crt untouched");
  cr_expect_eq(entries(out), n, "no file added or removed");
  free(before);
  free(after);
}

Test(certs, reuse_ca_with_half_a_ca_fails)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  char path[256];
  snprintf(path, sizeof(path), "%s/ca.key", out);
  cr_assert_eq(unlink(path), 0);
  expect_refused_keeping(DNS, NULL, 0, true, "ca.key");
  certgen_result_release(&res);
}

Test(certs, reuse_ca_with_a_foreign_key_fails)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  char from[256], to[256];
  snprintf(from, sizeof(from), "%s/tls.key", out);
  snprintf(to, sizeof(to), "%s/ca.key", out);
  size_t n;
  char *k = slurp("tls.key", &n);
  FILE *f = fopen(to, "w");
  cr_assert(f && fwrite(k, 1, n, f) == n && !fclose(f));
  free(k);
  expect_refused_keeping(DNS, NULL, 0, true, "does not match");
  expect_refused_keeping(DNS, NULL, 0, true, "drop --reuse-ca");
  certgen_result_release(&res);
}

Test(certs, reuse_ca_refuses_to_outlive_the_ca)
{
  struct certgen_opts o;
  struct certgen_result res;
  char err[512];
  certgen_opts_init(&o);
  cr_assert_eq(certgen_opts_set_out(&o, out), GW_OK);
  cr_assert_eq(certgen_opts_add_dns(&o, "localhost"), GW_OK);
  o.days = 5;
  o.ca_days = 10;
  cr_assert_eq(certgen_issue(&o, &res, err, sizeof(err)), GW_OK, "%s", err);
  certgen_result_release(&res);
  certgen_opts_release(&o);
  expect_refused_keeping(DNS, NULL, 20, true, "--days 20");
}

Test(certs, bad_names_fail_before_touching_the_disk)
{
  static const struct {
    const char *dns, *ip, *msg;
  } cases[] = {
    { NULL, NULL, "at least one --dns" },
    { NULL, "300.1.1.1", "--ip \"300.1.1.1\": not an IPv4 or IPv6 address" },
    { NULL, "1.2.3", "--ip \"1.2.3\"" },
    { NULL, "fe80::1%eth0", "--ip" },
    { "under_score.svc", NULL, "--dns \"under_score.svc\": not a valid DNS name" },
    { "-lead.svc", NULL, "--dns" },
    { "a..b", NULL, "--dns" },
    { "trailing.", NULL, "--dns" },
    { "", NULL, "--dns" },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *dns[] = { cases[i].dns, NULL }, *ips[] = { cases[i].ip, NULL };
    struct certgen_result res;
    char err[512];
    gw_rc rc = issue(out, dns, ips, 0, false, &res, err, sizeof(err));
    cr_expect_eq(rc, GW_EINVAL, "case %zu", i);
    cr_expect(strstr(err, cases[i].msg), "case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].msg);
    cr_expect(!exists(out), "case %zu created the directory", i);
  }
}

Test(certs, days_beyond_the_ca_are_refused)
{
  struct certgen_opts o;
  struct certgen_result res;
  char err[512];
  certgen_opts_init(&o);
  cr_assert_eq(certgen_opts_set_out(&o, out), GW_OK);
  cr_assert_eq(certgen_opts_add_dns(&o, "localhost"), GW_OK);
  o.days = 400;
  o.ca_days = 100;
  cr_expect_eq(certgen_issue(&o, &res, err, sizeof(err)), GW_EINVAL);
  cr_expect(strstr(err, "--days 400 outlives --ca-days 100"), "%s", err);
  cr_expect(!exists(out));
  certgen_opts_release(&o);
}

Test(certs, unwritable_destinations_fail_and_write_nothing)
{
  /* A regular file where a directory should be; and /proc, where even root cannot create. */
  char file[128], below[160];
  snprintf(file, sizeof(file), "%s/plain", dir);
  snprintf(below, sizeof(below), "%s/sub", file);
  FILE *f = fopen(file, "w");
  cr_assert(f && !fclose(f));
  const char *where[] = { file, below, "/proc" };
  for(size_t i = 0; i < 3; i++) {
    struct certgen_result res;
    char err[512];
    gw_rc rc = issue(where[i], DNS, NULL, 0, false, &res, err, sizeof(err));
    cr_expect_eq(rc, GW_EIO, "%s: %s", where[i], gw_strerror(rc));
    cr_expect(strstr(err, "--out"), "%s", err);
  }
  cr_expect_eq(entries(dir), 1, "only the plain file");
  cr_expect(!exists("/proc/ca.crt") && !exists("/proc/.ca.key.XXXXXX"));
}

Test(certs, write_files_is_all_or_nothing)
{
  cr_assert_eq(mkdir(out, 0755), 0);
  const struct certgen_file files[] = {
    { "one", "1", 1, 0644 },
    { "missing-dir/two", "2", 1, 0644 }, /* cannot be created */
  };
  char err[512];
  cr_expect_eq(certgen_write_files(out, files, 2, err, sizeof(err)), GW_EIO);
  cr_expect(strstr(err, "missing-dir/two"), "%s", err);
  cr_expect_eq(entries(out), 0, "neither the first file nor a temporary remains");
}

Test(certs, mkdirs_makes_every_missing_level)
{
  char deep[160], err[256];
  snprintf(deep, sizeof(deep), "%s/a/b/c/", dir);
  cr_expect_eq(certgen_mkdirs(deep, err, sizeof(err)), GW_OK, "%s", err);
  cr_expect_eq(certgen_mkdirs(deep, err, sizeof(err)), GW_OK, "idempotent");
  cr_expect(exists(deep));
}

Test(certs, dns_syntax)
{
  cr_expect(certgen_valid_dns("localhost"));
  cr_expect(certgen_valid_dns("godwit-webhook.godwit-system.svc.cluster.local"));
  cr_expect(certgen_valid_dns("*.example.com"));
  cr_expect(certgen_valid_dns("a1.B2"));
  char label[80];
  memset(label, 'a', 63);
  label[63] = '\0';
  cr_expect(certgen_valid_dns(label));
  strcat(label, "a");
  cr_expect(!certgen_valid_dns(label), "64-character label");
  cr_expect(!certgen_valid_dns("*"));
  cr_expect(!certgen_valid_dns("a.*.b"));
  cr_expect(!certgen_valid_dns("end-.svc"));
  cr_expect(!certgen_valid_dns("sp ace"));
  cr_expect(!certgen_valid_dns(".lead"));
}

Test(certs, service_names_expand_and_deduplicate)
{
  struct certgen_opts o;
  certgen_opts_init(&o);
  cr_assert_eq(certgen_opts_add_dns(&o, "godwit-webhook.godwit-system.svc"), GW_OK);
  cr_assert_eq(certgen_opts_add_service(&o, "godwit-webhook", "godwit-system"), GW_OK);
  cr_assert_eq(certgen_opts_add_ip(&o, "127.0.0.1"), GW_OK);
  cr_assert_eq(certgen_opts_add_ip(&o, "127.0.0.1"), GW_OK);
  const char *want[] = { "godwit-webhook.godwit-system.svc", "godwit-webhook",
                         "godwit-webhook.godwit-system",
                         "godwit-webhook.godwit-system.svc.cluster.local" };
  cr_assert_eq(o.ndns, 4);
  for(size_t i = 0; i < 4; i++)
    cr_expect_str_eq(o.dns[i], want[i]);
  cr_expect_null(o.dns[4]);
  cr_expect_eq(o.nips, 1);
  cr_expect_eq(o.days, CERTGEN_DEFAULT_DAYS);
  certgen_opts_release(&o);
}

Test(certs, gnutls_loads_the_serving_pair)
{
  struct certgen_result res;
  issue_ok(out, false, &res);
  char crt[160], key[160], ca[160];
  snprintf(crt, sizeof(crt), "%s/tls.crt", out);
  snprintf(key, sizeof(key), "%s/tls.key", out);
  snprintf(ca, sizeof(ca), "%s/ca.crt", out);
  gnutls_certificate_credentials_t cred;
  cr_assert_eq(gnutls_certificate_allocate_credentials(&cred), GNUTLS_E_SUCCESS);
  int rc = gnutls_certificate_set_x509_key_file2(cred, crt, key, GNUTLS_X509_FMT_PEM, NULL, 0);
  cr_expect_geq(rc, 0, "gnutls: %s", gnutls_strerror(rc));
  cr_expect_eq(gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM), 1);
  gnutls_certificate_free_credentials(cred);
  certgen_result_release(&res);
}
