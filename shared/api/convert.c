/* The conversion engine: older version <-> hub through renames, transforms and the fields
 * annotation (see api.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "json.h"

/*
 * Applies the renames. Towards an older version a rename may land on a path where the hub still
 * has an object (v1alpha1 "spec.verification" is a string, the hub's "spec.verification" an
 * object whose "mode" it receives): what remains of that object goes to the leftover at the same
 * path, so it travels in the annotation instead of being overwritten.
 */
static gw_rc move_all(cJSON *obj, const struct conv_move *moves, bool to_hub, cJSON *leftover)
{
  for(const struct conv_move *m = moves; m && m->old; m++) {
    const char *from = to_hub ? m->old : m->hub, *to = to_hub ? m->hub : m->old;
    cJSON *v = json_detach_prune(obj, from);
    if(!v)
      continue;
    gw_rc rc = GW_OK;
    if(leftover && json_get(obj, to))
      rc = json_set(leftover, to, json_detach_prune(obj, to));
    if(!rc)
      rc = json_set(obj, to, v);
    else
      cJSON_Delete(v);
    if(rc)
      return rc;
  }
  return GW_OK;
}

/* API_FIELDS_ANNOTATION_FMT's name for k, joined by hand: once per converted object, where
 * snprintf cost as much as two of the moves. */
static void annotation_name(const struct api_kind *k, char *buf, size_t n)
{
  static const char pre[] = API_FIELDS_ANNOTATION_PREFIX, suf[] = API_FIELDS_ANNOTATION_SUFFIX;
  const char *v = api_hub(k)->name;
  size_t lv = strlen(v);
  if(sizeof(pre) - 1 + lv + sizeof(suf) > n) { /* no version name is that long */
    *buf = '\0';
    return;
  }
  memcpy(buf, pre, sizeof(pre) - 1);
  memcpy(buf + sizeof(pre) - 1, v, lv);
  memcpy(buf + sizeof(pre) - 1 + lv, suf, sizeof(suf)); /* with its NUL */
}

/* Adds members of src that dst lacks; never recreates an object whose presence means something. */
static void merge_missing(cJSON *dst, const cJSON *src, const struct sch_field *fields)
{
  for(const cJSON *s = src->child; s; s = s->next) {
    const struct sch_field *f = sch_find(fields, s->string);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, s->string);
    if(!d) {
      if(f && (f->flags & SCH_PRESENCE))
        continue;
      cJSON_AddItemToObject(dst, s->string, cJSON_Duplicate(s, 1));
    } else if(cJSON_IsObject(d) && cJSON_IsObject(s) && f && f->type == SCH_OBJECT)
      merge_missing(d, s, f->fields);
  }
}

static cJSON *ensure_obj(cJSON *parent, const char *name)
{
  cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, name);
  if(json_materialize(o))
    return NULL;
  if(cJSON_IsObject(o))
    return o;
  if(o)
    return NULL;
  return cJSON_AddObjectToObject(parent, name);
}

static gw_rc to_hub(const struct api_kind *k, const struct api_version *v, cJSON *obj,
                    char *err, size_t errlen)
{
  char ann[96];
  annotation_name(k, ann, sizeof(ann));
  /* metadata may still be the text it was sent as (a ConversionReview's objects: review.c):
   * parsed only when it may hold the annotation */
  cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  if(json_raw_may_hold(meta, ann) && json_materialize(meta)) {
    snprintf(err, errlen, "cannot convert to %s/%s: %s", k->group, api_hub(k)->name,
             gw_strerror(GW_ENOMEM));
    return GW_ENOMEM;
  }
  cJSON *annotations = cJSON_IsRaw(meta) ? NULL : json_get_mut(obj, "metadata.annotations");
  cJSON *saved = NULL;
  if(cJSON_IsObject(annotations)) {
    cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(annotations, ann);
    if(a && cJSON_IsString(a)) {
      char perr[128];
      if(json_parse_strict(a->valuestring, strlen(a->valuestring), &saved, perr, sizeof(perr)) ||
         !cJSON_IsObject(saved)) {
        snprintf(err, errlen, "metadata.annotations[%s]: %s", ann,
                 saved ? "must be a JSON object" : perr);
        cJSON_Delete(saved);
        cJSON_Delete(a);
        return GW_EPARSE;
      }
    }
    cJSON_Delete(a);
    if(!annotations->child)
      json_remove(obj, "metadata.annotations");
  }
  gw_rc rc = move_all(obj, v->moves, true, NULL);
  if(!rc && v->to_hub)
    rc = v->to_hub(obj);
  if(!rc && saved) {
    const struct api_version *hub = api_hub(k);
    const cJSON *s;
    if((s = cJSON_GetObjectItemCaseSensitive(saved, "spec")) && cJSON_IsObject(s)) {
      cJSON *d = ensure_obj(obj, "spec");
      if(d)
        merge_missing(d, s, hub->spec);
    }
    if((s = cJSON_GetObjectItemCaseSensitive(saved, "status")) && cJSON_IsObject(s)) {
      cJSON *d = ensure_obj(obj, "status");
      if(d)
        merge_missing(d, s, hub->status);
    }
  }
  cJSON_Delete(saved);
  if(rc)
    snprintf(err, errlen, "cannot convert to %s/%s: %s", k->group, api_hub(k)->name,
             gw_strerror(rc));
  return rc;
}

static gw_rc split_part(cJSON *obj, const char *part, const struct sch_field *fields,
                        cJSON *leftover)
{
  cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, part);
  if(json_materialize(o)) /* it was kept as text */
    return GW_ENOMEM;
  if(!cJSON_IsObject(o))
    return GW_OK;
  cJSON *l = cJSON_GetObjectItemCaseSensitive(leftover, part);
  bool fresh = !l;
  if(fresh && !(l = cJSON_CreateObject()))
    return GW_ENOMEM;
  if(!sch_split_unknown(fields, o, l)) {
    if(fresh)
      cJSON_Delete(l);
    return GW_ENOMEM;
  }
  if(fresh && l->child)
    cJSON_AddItemToObject(leftover, part, l);
  else if(fresh)
    cJSON_Delete(l);
  return GW_OK;
}

static gw_rc from_hub(const struct api_kind *k, const struct api_version *v, cJSON *obj,
                      char *err, size_t errlen)
{
  cJSON *leftover = cJSON_CreateObject();
  gw_rc rc = leftover ? GW_OK : GW_ENOMEM;
  if(!rc && v->from_hub)
    rc = v->from_hub(obj);
  if(!rc)
    rc = move_all(obj, v->moves, false, leftover);
  if(!rc)
    rc = split_part(obj, "spec", v->spec, leftover);
  if(!rc)
    rc = split_part(obj, "status", v->status, leftover);
  if(!rc && leftover->child) {
    char ann[96];
    annotation_name(k, ann, sizeof(ann));
    char *text = json_print_canonical(leftover);
    cJSON *meta = text ? ensure_obj(obj, "metadata") : NULL;
    cJSON *annotations = meta ? ensure_obj(meta, "annotations") : NULL;
    if(!annotations)
      rc = text ? GW_EINVAL : GW_ENOMEM;
    else {
      cJSON_DeleteItemFromObjectCaseSensitive(annotations, ann);
      if(!cJSON_AddStringToObject(annotations, ann, text))
        rc = GW_ENOMEM;
    }
    if(text)
      cJSON_free(text);
  }
  cJSON_Delete(leftover);
  if(rc)
    snprintf(err, errlen, "cannot convert to %s/%s: %s", k->group, v->name, gw_strerror(rc));
  return rc;
}

gw_rc api_convert(const struct api_kind *k, cJSON *obj, const char *desired, char *err,
                  size_t errlen)
{
  const char *av = json_get_str(obj, "apiVersion");
  size_t glen = strlen(k->group);
  if(!av || strncmp(av, k->group, glen) || av[glen] != '/') {
    snprintf(err, errlen, "apiVersion: must be %s/<version>, got \"%s\"", k->group,
             av ? av : "");
    return GW_EINVAL;
  }
  const struct api_version *src = api_find_version(k, av + glen + 1);
  if(!src) {
    snprintf(err, errlen, "apiVersion: %s is not a served version of %s", av, k->kind);
    return GW_EINVAL;
  }
  if(strncmp(desired, k->group, glen) || desired[glen] != '/') {
    snprintf(err, errlen, "desiredAPIVersion: %s is not in group %s", desired, k->group);
    return GW_EINVAL;
  }
  const struct api_version *dst = api_find_version(k, desired + glen + 1);
  if(!dst) {
    snprintf(err, errlen, "desiredAPIVersion: %s is not a served version of %s", desired,
             k->kind);
    return GW_EINVAL;
  }
  if(src == dst)
    return GW_OK;
  gw_rc rc = GW_OK;
  if(!api_is_hub(k, src))
    rc = to_hub(k, src, obj, err, errlen);
  if(!rc && !api_is_hub(k, dst))
    rc = from_hub(k, dst, obj, err, errlen);
  if(!rc)
    rc = json_set_str(obj, "apiVersion", desired);
  return rc;
}

/* hub_path starts with prefix at a component boundary. */
static bool has_prefix(const char *path, const char *prefix, size_t n)
{
  return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '.' || path[n] == '[');
}

static const struct conv_move *best(const struct conv_move *moves, const char *path,
                                    const struct conv_move *cur, size_t *curlen)
{
  for(const struct conv_move *m = moves; m && m->old; m++) {
    size_t n = strlen(m->hub);
    if(n > *curlen && has_prefix(path, m->hub, n)) {
      cur = m;
      *curlen = n;
    }
  }
  return cur;
}

char *api_path_from_hub(const struct api_version *v, const char *hub_path)
{
  size_t n = 0;
  const struct conv_move *m = best(v->moves, hub_path, NULL, &n);
  m = best(v->path_aliases, hub_path, m, &n);
  if(!m)
    return NULL;
  char *out = NULL;
  if(asprintf(&out, "%s%s", m->old, hub_path + n) < 0)
    return NULL;
  return out;
}
