/* kcache.c: the Secrets and ConfigMaps read while one Pod is set up or one container started,
 * each read once per sync (the kubelet's secret and configmap managers, without the watch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "kubelet.h"

void kcache_release(struct kcache *c)
{
  for(size_t i = 0; i < c->n; i++)
    cJSON_Delete(c->v[i].obj);
  c->n = 0;
}

const cJSON *kcache_get(struct jr *jr, struct kcache *c, const struct kube_gvr *gvr,
                        const char *ns, const char *name, gw_rc *rc)
{
  for(size_t i = 0; i < c->n; i++)
    if(c->v[i].gvr == gvr && !strcmp(c->v[i].name, name)) {
      *rc = c->v[i].rc;
      return c->v[i].obj;
    }
  cJSON *obj = NULL;
  struct kube_status st;
  kube_status_init(&st);
  *rc = kube_get(jr->k, gvr, ns, name, &obj, &st);
  kube_status_release(&st);
  if(c->n < sizeof(c->v) / sizeof(c->v[0])) {
    struct kcache_ent *e = &c->v[c->n++];
    e->gvr = gvr;
    jr_fmt(e->name, sizeof(e->name), "%s", name);
    e->obj = obj;
    e->rc = *rc;
    return obj;
  }
  cJSON_Delete(obj); /* more than 32 objects in one Pod: not cached */
  if(!*rc)
    *rc = GW_ETOOBIG;
  return NULL;
}

char *kcache_value(const cJSON *obj, bool secret, const char *key, size_t *len)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(obj, "data"), key);
  if(secret) {
    if(!cJSON_IsString(v))
      return NULL;
    return (char *)b64_decode(v->valuestring, len);
  }
  if(cJSON_IsString(v)) {
    *len = strlen(v->valuestring);
    return strdup(v->valuestring);
  }
  v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(obj, "binaryData"), key);
  return cJSON_IsString(v) ? (char *)b64_decode(v->valuestring, len) : NULL;
}
