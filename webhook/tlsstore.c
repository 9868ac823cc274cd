#include "tlsstore.h"

#include <gnutls/x509.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_CHAIN 8
#define GENERATIONS 4

struct tls_gen {
  gnutls_pcert_st certs[MAX_CHAIN];
  unsigned ncerts;
  gnutls_privkey_t key;
  int64_t not_after;
};

struct file_id {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
};

static struct {
  const char *cert_path, *key_path;
  struct file_id cert_id, key_id;
  struct tls_gen *ring[GENERATIONS];
  unsigned next;
  _Atomic(struct tls_gen *) current;
} store;

static void gen_free(struct tls_gen *g)
{
  if(!g)
    return;
  for(unsigned i = 0; i < g->ncerts; i++)
    gnutls_pcert_deinit(&g->certs[i]);
  if(g->key)
    gnutls_privkey_deinit(g->key);
  free(g);
}

void tls_store_init(const char *cert_path, const char *key_path)
{
  memset(&store, 0, sizeof(store));
  store.cert_path = cert_path;
  store.key_path = key_path;
}

static bool same_id(const struct file_id *a, const struct file_id *b)
{
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static gw_rc file_id_of(const char *path, struct file_id *id)
{
  struct stat st;
  if(stat(path, &st))
    return GW_ENOTFOUND;
  *id = (struct file_id){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
  return GW_OK;
}

static bool same_public_key(gnutls_pcert_st *cert, gnutls_privkey_t key)
{
  gnutls_pubkey_t pub;
  gnutls_datum_t a = { 0 }, b = { 0 };
  bool same = false;
  if(gnutls_pubkey_init(&pub) < 0)
    return false;
  if(gnutls_pubkey_import_privkey(pub, key, 0, 0) >= 0 &&
     gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) >= 0 &&
     gnutls_pubkey_export2(cert->pubkey, GNUTLS_X509_FMT_DER, &b) >= 0)
    same = a.size == b.size && !memcmp(a.data, b.data, a.size);
  gnutls_free(a.data);
  gnutls_free(b.data);
  gnutls_pubkey_deinit(pub);
  return same;
}

static gw_rc load(struct tls_gen **out, char *err, size_t errlen)
{
  gnutls_datum_t cert = { 0 }, key = { 0 };
  struct tls_gen *g = calloc(1, sizeof(*g));
  gw_rc rc = g ? GW_OK : GW_ENOMEM;
  int r;
  if(!rc && (r = gnutls_load_file(store.cert_path, &cert)) < 0) {
    snprintf(err, errlen, "cannot read certificate \"%s\": %s", store.cert_path,
             gnutls_strerror(r));
    rc = GW_EIO;
  }
  if(!rc && (r = gnutls_load_file(store.key_path, &key)) < 0) {
    snprintf(err, errlen, "cannot read key \"%s\": %s", store.key_path, gnutls_strerror(r));
    rc = GW_EIO;
  }
  if(!rc) {
    g->ncerts = MAX_CHAIN;
    r = gnutls_pcert_list_import_x509_raw(g->certs, &g->ncerts, &cert, GNUTLS_X509_FMT_PEM, 0);
    if(r < 0 || g->ncerts == 0) {
      g->ncerts = 0;
      snprintf(err, errlen, "certificate \"%s\" is not a PEM certificate chain: %s",
               store.cert_path, gnutls_strerror(r));
      rc = GW_ETLS;
    }
  }
  if(!rc) {
    if(gnutls_privkey_init(&g->key) < 0 ||
       (r = gnutls_privkey_import_x509_raw(g->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
      snprintf(err, errlen, "key \"%s\" is not a PEM private key", store.key_path);
      rc = GW_ETLS;
    }
  }
  if(!rc && !same_public_key(&g->certs[0], g->key)) {
    snprintf(err, errlen, "key \"%s\" does not belong to certificate \"%s\" (a rotation may be "
                          "half written; retrying)", store.key_path, store.cert_path);
    rc = GW_ETLS;
  }
  if(!rc) {
    gnutls_x509_crt_t crt;
    if(gnutls_x509_crt_init(&crt) >= 0) {
      if(gnutls_x509_crt_import(crt, &g->certs[0].cert, GNUTLS_X509_FMT_DER) >= 0)
        g->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
      gnutls_x509_crt_deinit(crt);
    }
  }
  gnutls_free(cert.data);
  if(key.data) {
    gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
  }
  if(rc) {
    gen_free(g);
    return rc;
  }
  *out = g;
  return GW_OK;
}

gw_rc tls_store_reload(bool *changed, char *err, size_t errlen)
{
  *changed = false;
  struct file_id c, k;
  if(file_id_of(store.cert_path, &c) || file_id_of(store.key_path, &k)) {
    snprintf(err, errlen, "certificate \"%s\" or key \"%s\" is missing", store.cert_path,
             store.key_path);
    return GW_ENOTFOUND;
  }
  if(atomic_load(&store.current) && same_id(&c, &store.cert_id) && same_id(&k, &store.key_id))
    return GW_OK;
  struct tls_gen *g;
  gw_rc rc = load(&g, err, errlen);
  if(rc)
    return rc;
  /* Retire the oldest generation; it has been out of service for GENERATIONS-1 swaps. */
  gen_free(store.ring[store.next]);
  store.ring[store.next] = g;
  store.next = (store.next + 1) % GENERATIONS;
  atomic_store(&store.current, g);
  store.cert_id = c;
  store.key_id = k;
  *changed = true;
  return GW_OK;
}

bool tls_store_loaded(void)
{
  return atomic_load(&store.current) != NULL;
}

int64_t tls_store_not_after(void)
{
  struct tls_gen *g = atomic_load(&store.current);
  return g ? g->not_after : 0;
}

void tls_store_shutdown(void)
{
  atomic_store(&store.current, NULL);
  for(unsigned i = 0; i < GENERATIONS; i++) {
    gen_free(store.ring[i]);
    store.ring[i] = NULL;
  }
}

int tls_store_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                       gnutls_pcert_st **pcert, unsigned int *pcert_length,
                       gnutls_privkey_t *pkey)
{
  (void)session;
  (void)req_ca_rdn;
  (void)nreqs;
  (void)pk_algos;
  (void)pk_algos_length;
  struct tls_gen *g = atomic_load(&store.current);
  if(!g)
    return -1;
  *pcert = g->certs;
  *pcert_length = g->ncerts;
  *pkey = g->key;
  return 0;
}
