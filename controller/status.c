#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ktime.h"

static void backoff(int attempt)
{
  long ms = 10L << (attempt < 5 ? attempt : 5); /* 10 ms .. 320 ms */
  ms += rand() % (ms / 10 + 1);
  kt_sleep_ms(ms, NULL);
}

gw_rc status_update(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                    const char *name, const cJSON *cached, status_mutate_fn fn, void *ctx,
                    cJSON **out, struct status_result *res, struct kube_status *st)
{
  struct status_result dummy;
  struct kube_status local;
  kube_status_init(&local);
  if(!res)
    res = &dummy;
  if(!st)
    st = &local;
  res->written = false;
  res->conflicts = 0;
  if(out)
    *out = NULL;
  cJSON *obj = cached ? cJSON_Duplicate(cached, 1) : NULL;
  if(cached && !obj)
    return GW_ENOMEM;
  gw_rc rc = GW_ECONFLICT;
  for(int attempt = 0; attempt < STATUS_MAX_ATTEMPTS; attempt++) {
    if(!obj) {
      kube_status_release(st);
      kube_status_init(st);
      rc = kube_get(k, r, ns, name, &obj, st);
      if(!rc && (!json_get_str(obj, "metadata.name") ||
                 strcmp(json_get_str(obj, "metadata.name"), name))) {
        rc = GW_EPARSE; /* not the object asked for: never write it back */
        snprintf(st->reason, sizeof(st->reason), "BadResponse");
      }
      if(rc)
        break;
    }
    bool changed = false;
    rc = fn(ctx, obj, &changed);
    if(rc)
      break;
    if(!changed) {
      if(out) {
        *out = obj;
        obj = NULL;
      }
      break;
    }
    cJSON *stored = NULL;
    kube_status_release(st);
    kube_status_init(st);
    rc = kube_update(k, r, ns, obj, "status", &stored, st);
    if(!rc) {
      res->written = true;
      if(out)
        *out = stored;
      else
        cJSON_Delete(stored);
      break;
    }
    cJSON_Delete(stored);
    if(rc != GW_ECONFLICT || !strcmp(st->reason, "AlreadyExists"))
      break;
    res->conflicts++;
    cJSON_Delete(obj);
    obj = NULL;
    if(attempt + 1 < STATUS_MAX_ATTEMPTS)
      backoff(attempt);
  }
  cJSON_Delete(obj);
  kube_status_release(&local);
  return rc;
}
