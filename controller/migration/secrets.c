/* A Secret key read for the controller's own libpq connections (the probe, the presence sample,
 * the lag). Secrets are read by name when needed, never listed nor cached; values are wiped
 * after use and never logged. See mig.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "json.h"
#include "mig.h"

void mig_secret_free(char *s)
{
  if(s) {
    volatile char *p = s;
    while(*p)
      *p++ = 0;
    free(s);
  }
}

gw_rc mig_secret_get(struct mig *m, const char *name, const char *key, char **out, char *err,
                     size_t errlen)
{
  *out = NULL;
  cJSON *sec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(m->ctx->kube, &KUBE_SECRETS, m->ns, name, &sec, &st);
  kube_status_release(&st);
  if(rc == GW_ENOTFOUND) {
    snprintf(err, errlen, "secret \"%s\" not found", name);
  } else if(rc) {
    snprintf(err, errlen, "cannot read secret \"%s\": %s", name, gw_strerror(rc));
  } else {
    const cJSON *data = json_get(sec, "data");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(json_get(sec, "stringData"), key);
    if(cJSON_IsString(v)) {
      *out = (char *)b64_decode(v->valuestring, NULL);
      if(!*out) {
        rc = GW_EPARSE;
        snprintf(err, errlen, "secret \"%s\": key \"%s\" is not base64", name, key);
      }
    } else if(cJSON_IsString(sv)) {
      *out = strdup(sv->valuestring);
      if(!*out)
        rc = GW_ENOMEM;
    } else {
      rc = GW_ENOTFOUND;
      snprintf(err, errlen, "couldn't find key %s in Secret %s/%s", key, m->ns, name);
    }
  }
  if(sec) {
    /* wipe the encoded values too */
    cJSON *d;
    cJSON_ArrayForEach(d, json_get_mut(sec, "data"))
      if(cJSON_IsString(d))
        memset(d->valuestring, 0, strlen(d->valuestring));
    cJSON_Delete(sec);
  }
  return rc;
}

gw_rc mig_uri(struct mig *m, bool source, char **out, char *err, size_t errlen)
{
  const char *side = source ? "spec.source.connectionSecretRef" : "spec.target.connectionSecretRef";
  const cJSON *ref = json_get(m->obj, side);
  const char *name = json_get_str(ref, "name");
  const char *key = json_get_str(ref, "key");
  if(!name) {
    *out = NULL;
    snprintf(err, errlen, "%s.name is not set", side);
    return GW_EINVAL;
  }
  return mig_secret_get(m, name, key && *key ? key : "uri", out, err, errlen);
}

PGconn *mig_pg_connect_uri(struct mig *m, const char *uri, char *err, size_t errlen)
{
  char timeout[16], opts[64];
  snprintf(timeout, sizeof(timeout), "%ld", m->o->connect_timeout_s);
  snprintf(opts, sizeof(opts), "-c statement_timeout=%ld", m->o->connect_timeout_s * 1000);
  /* the URI first (expand_dbname), then what the controller insists on */
  const char *keys[] = { "dbname", "connect_timeout", "application_name", "options", NULL };
  const char *vals[] = { uri, timeout, "godwit-controller", opts, NULL };
  PGconn *c = PQconnectdbParams(keys, vals, 1);
  if(!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if(PQstatus(c) != CONNECTION_OK) {
    char *clean = mig_scrub(PQerrorMessage(c), errlen > 1 ? errlen - 1 : 1);
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
