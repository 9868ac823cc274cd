/* The controller's own libpq sessions for a Migration (the probe, the lag and presence samples),
 * kept between samples in the core's pool (controller/pgpool.h: migration_opts.pool; NULL keeps
 * none), one idle session per Migration and side, keyed by the URI read from the Secret at each
 * use (controller/secretref.h), never cached. */
#include <string.h>

#include "../secretref.h"
#include "mig.h"

/* The side's URI, read from its Secret now (secret_free it). */
static bool side_uri(struct mig *m, bool source, char **uri, char *err, size_t errlen)
{
  return !secret_ref_get(m->ctx->kube, m->ns, m->obj,
                         source ? "spec.source.connectionSecretRef"
                                : "spec.target.connectionSecretRef",
                         uri, err, errlen);
}

/* A new session on uri, which it frees; NULL with err. */
static PGconn *fresh_session(struct mig *m, char *uri, char *err, size_t errlen)
{
  PGconn *c = pg_connect(uri, m->o->connect_timeout_s, "godwit-controller", err, errlen);
  secret_free(uri);
  return c;
}

bool mig_pg_open(struct mig *m, bool source, struct mig_pg *s, char *err, size_t errlen)
{
  memset(s, 0, sizeof(*s));
  s->source = source;
  char *uri = NULL;
  if(!side_uri(m, source, &uri, err, errlen))
    return false;
  pg_digest(uri, s->digest);
  s->c = pg_pool_take(m->o->pool, m->uid, source, s->digest);
  if(s->c) {
    secret_free(uri);
    s->reused = true;
    return true;
  }
  s->c = fresh_session(m, uri, err, errlen);
  return s->c != NULL;
}

void mig_pg_close(struct mig *m, struct mig_pg *s, bool ok)
{
  PGconn *c = s->c;
  s->c = NULL;
  if(!ok)
    PQfinish(c);
  else
    pg_pool_put(m->o->pool, m->uid, s->source, s->digest, c);
}

int mig_pg_answers(struct mig *m, bool source, char *err, size_t errlen)
{
  char *uri = NULL;
  if(!side_uri(m, source, &uri, err, errlen))
    return -1;
  PGconn *c = fresh_session(m, uri, err, errlen);
  int ok = 0;
  if(c) {
    PGresult *r = PQexec(c, "SELECT 1");
    ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if(!ok)
      snprintf(err, errlen, "SELECT 1 failed: %s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
  }
  for(char *p = err; !ok && *p; p++) /* libpq's messages run over lines */
    if(*p == '\n' || *p == '\t')
      *p = ' ';
  return ok;
}
