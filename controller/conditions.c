#include "conditions.h"

#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json.h"
#include "ktime.h"
#include "redact.h"

long long obj_generation(const cJSON *obj)
{
  const cJSON *g = json_get(obj, "metadata.generation");
  return cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
}

static cJSON *find_in(const cJSON *conds, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, conds)
  {
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
    if(t && !strcmp(t, type))
      return (cJSON *)c;
  }
  return NULL;
}

/* Replaces (or adds) the string member name of o; *changed is set when the value differs. */
static gw_rc put_str(cJSON *o, const char *name, const char *v, bool *changed)
{
  cJSON *cur = cJSON_GetObjectItemCaseSensitive(o, name);
  const char *s = cJSON_GetStringValue(cur);
  if(s && !strcmp(s, v))
    return GW_OK;
  cJSON *n = cJSON_CreateString(v);
  if(!n)
    return GW_ENOMEM;
  if(cur)
    cJSON_ReplaceItemInObjectCaseSensitive(o, name, n);
  else
    cJSON_AddItemToObject(o, name, n);
  *changed = true;
  return GW_OK;
}

static gw_rc put_num(cJSON *o, const char *name, long long v, bool *changed)
{
  cJSON *cur = cJSON_GetObjectItemCaseSensitive(o, name);
  if(cJSON_IsNumber(cur) && (long long)cur->valuedouble == v)
    return GW_OK;
  cJSON *n = cJSON_CreateNumber((double)v);
  if(!n)
    return GW_ENOMEM;
  if(cur)
    cJSON_ReplaceItemInObjectCaseSensitive(o, name, n);
  else
    cJSON_AddItemToObject(o, name, n);
  *changed = true;
  return GW_OK;
}

/* The first max bytes of s without cutting a UTF-8 sequence, plus "...". */
static char *bounded_message(const char *s, size_t max)
{
  size_t n = strlen(s);
  if(n <= max)
    return NULL;
  size_t cut = max - 3;
  while(cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
    cut--;
  char *m = cJSON_malloc(cut + 4);
  if(m) {
    memcpy(m, s, cut);
    memcpy(m + cut, "...", 4);
  }
  return m;
}

gw_rc cond_set_at(cJSON *conds, const struct cond *c, long long generation, time_t now,
                  bool *changed)
{
  bool dummy = false;
  if(!changed)
    changed = &dummy;
  *changed = false;
  if(!cJSON_IsArray(conds) || !c->type || !c->status || !c->reason)
    return GW_EINVAL;
  char *clean = redact(c->message, NULL, 0);
  if(!clean)
    return GW_ENOMEM;
  char *cut = bounded_message(clean, COND_MESSAGE_MAX);
  const char *msg = cut ? cut : clean;
  char ts[32];
  kt_rfc3339(ts, sizeof(ts), now);
  gw_rc rc = GW_OK;
  cJSON *e = find_in(conds, c->type);
  if(!e) {
    e = cJSON_CreateObject();
    if(!e) {
      cJSON_free(cut);
      free(clean);
      return GW_ENOMEM;
    }
    cJSON_AddItemToArray(conds, e);
    *changed = true;
    rc = put_str(e, "type", c->type, changed);
    if(!rc)
      rc = put_str(e, "lastTransitionTime", ts, changed);
  }
  const char *old = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "status"));
  if(!rc && (!old || strcmp(old, c->status))) {
    rc = put_str(e, "status", c->status, changed);
    if(!rc)
      rc = put_str(e, "lastTransitionTime", ts, changed);
  }
  if(!rc)
    rc = put_num(e, "observedGeneration", generation, changed);
  if(!rc)
    rc = put_str(e, "reason", c->reason, changed);
  if(!rc)
    rc = put_str(e, "message", msg, changed);
  cJSON_free(cut);
  free(clean);
  return rc;
}

gw_rc cond_set(cJSON *obj, const struct cond *c, bool *changed)
{
  cJSON *conds = json_get_mut(obj, "status.conditions");
  if(!cJSON_IsArray(conds)) {
    conds = cJSON_CreateArray();
    if(!conds)
      return GW_ENOMEM;
    gw_rc rc = json_set(obj, "status.conditions", conds);
    if(rc)
      return rc;
  }
  return cond_set_at(conds, c, obj_generation(obj), time(NULL), changed);
}

const cJSON *cond_find(const cJSON *obj, const char *type)
{
  return json_condition(obj, type);
}

bool cond_has_status(const cJSON *obj, const char *type, const char *status)
{
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cond_find(obj, type),
                                                                        "status"));
  return s && !strcmp(s, status);
}

bool cond_is_true(const cJSON *obj, const char *type)
{
  return cond_has_status(obj, type, COND_TRUE);
}

bool cond_is_false(const cJSON *obj, const char *type)
{
  return cond_has_status(obj, type, COND_FALSE);
}

const char *cond_reason(const cJSON *obj, const char *type)
{
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cond_find(obj, type), "reason"));
}

void cond_remove(cJSON *obj, const char *type, bool *changed)
{
  cJSON *conds = json_get_mut(obj, "status.conditions");
  cJSON *e = find_in(conds, type);
  if(changed)
    *changed = e != NULL;
  if(e)
    cJSON_Delete(cJSON_DetachItemViaPointer(conds, e));
}

bool cond_is_current(const cJSON *obj, const char *type)
{
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(cond_find(obj, type), "observedGeneration");
  return cJSON_IsNumber(g) && (long long)g->valuedouble == obj_generation(obj);
}
