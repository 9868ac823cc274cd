/* pgpool.c: database sessions kept between uses (pgpool.h). */
#include "pgpool.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktime.h"
#include "redact.h"

struct pooled {
  char owner[64];
  int side;
  unsigned char digest[PG_DIGEST_LEN];
  PGconn *c; /* NULL: a free slot */
  int64_t used_ms;
};

struct pg_pool {
  pthread_mutex_t mu;
  long idle_ms;
  int n;
  struct pooled slots[];
};

gw_rc pg_pool_new(struct pg_pool **out, int slots, long idle_ms)
{
  *out = NULL;
  if(slots < 1)
    return GW_EINVAL;
  struct pg_pool *p = calloc(1, sizeof(*p) + (size_t)slots * sizeof(p->slots[0]));
  if(!p)
    return GW_ENOMEM;
  pthread_mutex_init(&p->mu, NULL);
  p->idle_ms = idle_ms;
  p->n = slots;
  *out = p;
  return GW_OK;
}

void pg_pool_free(struct pg_pool *p)
{
  if(!p)
    return;
  for(int i = 0; i < p->n; i++)
    PQfinish(p->slots[i].c);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void pg_digest(const char *uri, unsigned char out[PG_DIGEST_LEN])
{
  unsigned int n = 0;
  if(!EVP_Digest(uri, strlen(uri), out, &n, EVP_sha256(), NULL) || n != PG_DIGEST_LEN)
    memset(out, 0, PG_DIGEST_LEN);
}

/* Moves the sessions to close into out (under mu): idle too long, or of owner. */
static int take_closing(struct pg_pool *p, PGconn **out, const char *owner)
{
  int n = 0;
  int64_t now = kt_mono_ms();
  for(int i = 0; i < p->n; i++)
    if(p->slots[i].c && (now - p->slots[i].used_ms > p->idle_ms ||
                         (owner && !strcmp(p->slots[i].owner, owner)))) {
      out[n++] = p->slots[i].c;
      p->slots[i].c = NULL;
    }
  return n;
}

static void finish_all(PGconn **cs, int n)
{
  for(int i = 0; i < n; i++)
    PQfinish(cs[i]);
}

PGconn *pg_pool_take(struct pg_pool *p, const char *owner, int side,
                     const unsigned char digest[PG_DIGEST_LEN])
{
  if(!p)
    return NULL;
  PGconn **closing = calloc((size_t)p->n, sizeof(*closing)), *found = NULL;
  if(!closing)
    return NULL;
  pthread_mutex_lock(&p->mu);
  int n = take_closing(p, closing, NULL);
  for(int i = 0; i < p->n && !found; i++) {
    struct pooled *s = &p->slots[i];
    if(!s->c || s->side != side || strcmp(s->owner, owner))
      continue;
    if(!memcmp(s->digest, digest, PG_DIGEST_LEN))
      found = s->c;
    else
      closing[n++] = s->c; /* the Secret changed: that session goes */
    s->c = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  finish_all(closing, n);
  free(closing);
  if(found && PQstatus(found) != CONNECTION_OK) {
    PQfinish(found);
    found = NULL;
  }
  return found;
}

void pg_pool_put(struct pg_pool *p, const char *owner, int side,
                 const unsigned char digest[PG_DIGEST_LEN], PGconn *c)
{
  if(!c)
    return;
  if(!p || PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
    PQfinish(c);
    return;
  }
  pthread_mutex_lock(&p->mu);
  int slot = 0; /* pg_pool_new made at least one */
  for(int i = 0; i < p->n; i++) {
    if(!p->slots[i].c) {
      slot = i;
      break;
    }
    if(p->slots[i].used_ms < p->slots[slot].used_ms)
      slot = i; /* the least recently used, if none is free */
  }
  PGconn *evict = p->slots[slot].c;
  struct pooled *s = &p->slots[slot];
  snprintf(s->owner, sizeof(s->owner), "%s", owner);
  s->side = side;
  memcpy(s->digest, digest, PG_DIGEST_LEN);
  s->c = c;
  s->used_ms = kt_mono_ms();
  pthread_mutex_unlock(&p->mu);
  PQfinish(evict);
}

void pg_pool_forget(struct pg_pool *p, const char *owner)
{
  if(!p)
    return;
  PGconn **closing = calloc((size_t)p->n, sizeof(*closing));
  if(!closing)
    return;
  pthread_mutex_lock(&p->mu);
  int n = take_closing(p, closing, owner ? owner : "");
  pthread_mutex_unlock(&p->mu);
  finish_all(closing, n);
  free(closing);
}

PGconn *pg_connect(const char *uri, long timeout_s, const char *appname, char *err,
                   size_t errlen)
{
  char timeout[24], opts[64];
  snprintf(timeout, sizeof(timeout), "%ld", timeout_s);
  snprintf(opts, sizeof(opts), "-c statement_timeout=%ld", timeout_s * 1000);
  /* the URI first (expand_dbname), then what the controller insists on */
  const char *keys[] = { "dbname", "connect_timeout", "application_name", "options", NULL };
  const char *vals[] = { uri, timeout, appname, opts, NULL };
  PGconn *c = PQconnectdbParams(keys, vals, 1);
  if(!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if(PQstatus(c) != CONNECTION_OK) {
    char *clean = redact_cut(PQerrorMessage(c), errlen > 1 ? errlen - 1 : 1, &uri, 1, NULL);
    snprintf(err, errlen, "%s", clean ? clean : "connection failed");
    free(clean);
    size_t n = strlen(err);
    while(n && (err[n - 1] == '\n' || err[n - 1] == ' '))
      err[--n] = '\0';
    PQfinish(c);
    return NULL;
  }
  return c;
}
