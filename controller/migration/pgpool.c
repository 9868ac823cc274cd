/* The controller's own libpq sessions (the probe, the lag and presence samples), kept between
 * samples: a fresh login costs 15-50 ms against a busy server (scram-sha-256 over TCP), the
 * probe's query under 1 ms (bench/migration). One idle session per Migration and side, keyed by
 * the uid and the SHA-256 of the URI read from the Secret at each use, so a rotated password or
 * a moved server gets a new session; closed after MIG_PG_IDLE_MS unused, when the Migration
 * finishes, and at shutdown. A session in use is out of the pool: a reconcile of one key runs
 * on one worker at a time, and a second borrower would simply open its own. */
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "mig.h"

#define MIG_PG_SLOTS 64
#define MIG_PG_IDLE_MS 60000

struct pooled {
  char uid[64];
  bool source;
  unsigned char digest[32];
  PGconn *c; /* NULL: a free slot */
  long long used_ms;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct pooled pool[MIG_PG_SLOTS];

static long long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void digest_of(const char *uri, unsigned char out[32])
{
  unsigned int n = 0;
  if(!EVP_Digest(uri, strlen(uri), out, &n, EVP_sha256(), NULL) || n != 32)
    memset(out, 0, 32); /* never matches a real digest: a new session each time */
}

/* Takes the slots to close out of the pool (under mu); closes them after. */
static size_t take_idle(PGconn **out, long long now, const char *uid)
{
  size_t n = 0;
  for(size_t i = 0; i < MIG_PG_SLOTS; i++)
    if(pool[i].c &&
       (now - pool[i].used_ms > MIG_PG_IDLE_MS || (uid && !strcmp(pool[i].uid, uid)))) {
      out[n++] = pool[i].c;
      pool[i].c = NULL;
    }
  return n;
}

static void close_all_of(PGconn **cs, size_t n)
{
  for(size_t i = 0; i < n; i++)
    PQfinish(cs[i]);
}

bool mig_pg_open(struct mig *m, bool source, struct mig_pg *s, char *err, size_t errlen)
{
  memset(s, 0, sizeof(*s));
  s->source = source;
  char *uri = NULL;
  if(mig_uri(m, source, &uri, err, errlen))
    return false;
  digest_of(uri, s->digest);
  PGconn *idle[MIG_PG_SLOTS], *found = NULL;
  pthread_mutex_lock(&mu);
  size_t n = take_idle(idle, now_ms(), NULL);
  for(size_t i = 0; i < MIG_PG_SLOTS && !found; i++)
    if(pool[i].c && pool[i].source == source && !strcmp(pool[i].uid, m->uid)) {
      if(!memcmp(pool[i].digest, s->digest, sizeof(s->digest)))
        found = pool[i].c;
      else
        idle[n++] = pool[i].c; /* the Secret changed: that session goes */
      pool[i].c = NULL;
    }
  pthread_mutex_unlock(&mu);
  close_all_of(idle, n);
  if(found && PQstatus(found) == CONNECTION_OK) {
    mig_secret_free(uri);
    s->c = found;
    s->reused = true;
    return true;
  }
  if(found)
    PQfinish(found);
  s->c = mig_pg_connect_uri(m, uri, err, errlen);
  mig_secret_free(uri);
  return s->c != NULL;
}

void mig_pg_close(struct mig *m, struct mig_pg *s, bool ok)
{
  PGconn *c = s->c;
  s->c = NULL;
  if(!c)
    return;
  if(!ok || PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
    PQfinish(c);
    return;
  }
  PGconn *evict = NULL;
  pthread_mutex_lock(&mu);
  size_t slot = MIG_PG_SLOTS;
  for(size_t i = 0; i < MIG_PG_SLOTS; i++) {
    if(!pool[i].c) {
      slot = i;
      break;
    }
    if(slot == MIG_PG_SLOTS || pool[i].used_ms < pool[slot].used_ms)
      slot = i; /* the least recently used, if none is free */
  }
  evict = pool[slot].c;
  snprintf(pool[slot].uid, sizeof(pool[slot].uid), "%s", m->uid);
  pool[slot].source = s->source;
  memcpy(pool[slot].digest, s->digest, sizeof(s->digest));
  pool[slot].c = c;
  pool[slot].used_ms = now_ms();
  pthread_mutex_unlock(&mu);
  if(evict)
    PQfinish(evict);
}

void mig_pg_forget(const char *uid)
{
  PGconn *idle[MIG_PG_SLOTS];
  pthread_mutex_lock(&mu);
  size_t n = take_idle(idle, now_ms(), uid ? uid : "");
  pthread_mutex_unlock(&mu);
  close_all_of(idle, n);
}

void migration_shutdown(void)
{
  PGconn *all[MIG_PG_SLOTS];
  size_t n = 0;
  pthread_mutex_lock(&mu);
  for(size_t i = 0; i < MIG_PG_SLOTS; i++)
    if(pool[i].c) {
      all[n++] = pool[i].c;
      pool[i].c = NULL;
    }
  pthread_mutex_unlock(&mu);
  close_all_of(all, n);
}
