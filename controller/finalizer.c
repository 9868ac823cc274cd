/* finalizer.c: adding and removing a controller's finalizer (finalizer.h). */
#include "finalizer.h"

#include <string.h>

#include "json.h"
#include "log.h"

bool obj_has_finalizer(const cJSON *obj, const char *name)
{
  const cJSON *f;
  cJSON_ArrayForEach(f, json_get(obj, "metadata.finalizers"))
    if(cJSON_IsString(f) && !strcmp(f->valuestring, name))
      return true;
  return false;
}

gw_rc obj_finalizer(struct rec_ctx *c, const struct kube_gvr *gvr, cJSON *obj, const char *name,
                    bool want)
{
  if(obj_has_finalizer(obj, name) == want)
    return GW_OK;
  cJSON *o = cJSON_Duplicate(obj, 1);
  cJSON *md = o ? cJSON_GetObjectItemCaseSensitive(o, "metadata") : NULL;
  if(!md) {
    cJSON_Delete(o);
    return GW_ENOMEM;
  }
  cJSON *list = cJSON_GetObjectItemCaseSensitive(md, "finalizers");
  if(!cJSON_IsArray(list)) {
    cJSON_DeleteItemFromObjectCaseSensitive(md, "finalizers");
    list = cJSON_AddArrayToObject(md, "finalizers");
  }
  if(want) {
    cJSON_AddItemToArray(list, cJSON_CreateString(name));
  } else {
    for(int i = cJSON_GetArraySize(list) - 1; i >= 0; i--) {
      const char *v = cJSON_GetStringValue(cJSON_GetArrayItem(list, i));
      if(v && !strcmp(v, name))
        cJSON_DeleteItemFromArray(list, i);
    }
  }
  cJSON_DeleteItemFromObjectCaseSensitive(o, "status"); /* the main resource ignores it */
  cJSON *stored = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_update(c->kube, gvr, c->ns && *c->ns ? c->ns : NULL, o, NULL, &stored, &st);
  if(rc && rc != GW_ECONFLICT && rc != GW_ENOTFOUND)
    log_kv(LOG_WARN, "cannot update the finalizers", "key", c->key, "finalizer", name, "error",
           gw_strerror(rc), "reason", st.reason, LOG_END);
  kube_status_release(&st);
  cJSON_Delete(o);
  if(!rc && stored) {
    cJSON *meta = cJSON_DetachItemFromObjectCaseSensitive(stored, "metadata");
    if(meta && !cJSON_ReplaceItemInObjectCaseSensitive(obj, "metadata", meta))
      cJSON_Delete(meta);
  }
  cJSON_Delete(stored);
  return rc;
}
