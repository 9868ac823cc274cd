/* patch.c: JSON merge patch (RFC 7386), JSON patch (RFC 6902, shared/jsonpatch) and strategic
 * merge patch for built-in types: list merge keys by field name as the Kubernetes types declare
 * them, and the directives kubectl apply sends ($patch, $setElementOrder, $retainKeys,
 * $deleteFromPrimitiveList). An apply patch is only decoded here (no doc: the applied object);
 * ssa.c merges it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonpatch.h"
#include "rest.h"
#include "yamldoc.h"

cJSON *patch_merge(cJSON *target, const cJSON *patch)
{
  if(!cJSON_IsObject(patch)) {
    cJSON_Delete(target);
    return cJSON_Duplicate(patch, 1);
  }
  if(!cJSON_IsObject(target)) {
    cJSON_Delete(target);
    target = cJSON_CreateObject();
  }
  const cJSON *p;
  cJSON_ArrayForEach(p, patch)
  {
    if(cJSON_IsNull(p)) {
      cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
      continue;
    }
    cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(target, p->string);
    cJSON_AddItemToObject(target, p->string, patch_merge(cur, p));
  }
  return target;
}

/* Merge keys of list fields (patchStrategy "merge"); "" for a primitive list merged as a set. */
static const char *const merge_keys[][2] = {
  { "containers", "name" },      { "initContainers", "name" }, { "ephemeralContainers", "name" },
  { "env", "name" },             { "volumes", "name" },        { "volumeMounts", "mountPath" },
  { "volumeDevices", "devicePath" }, { "imagePullSecrets", "name" },
  { "ownerReferences", "uid" },  { "conditions", "type" },     { "hostAliases", "ip" },
  { "topologySpreadConstraints", "topologyKey" },              { "resourceClaims", "name" },
  { "addresses", "type" },       { "secrets", "name" },        { "webhooks", "name" },
  { "finalizers", "" },
};

static const char *merge_key(const char *field, const cJSON *list)
{
  if(!strcmp(field, "ports")) { /* container ports by containerPort, service ports by port */
    const cJSON *e = cJSON_GetArrayItem(list, 0);
    return cJSON_GetObjectItem(e, "containerPort") ? "containerPort" : "port";
  }
  for(size_t i = 0; i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++)
    if(!strcmp(field, merge_keys[i][0]))
      return merge_keys[i][1];
  return NULL;
}

static bool same_key(const cJSON *a, const cJSON *b, const char *key)
{
  const cJSON *x = cJSON_GetObjectItem(a, key), *y = cJSON_GetObjectItem(b, key);
  return x && y && json_equal(x, y);
}

static cJSON *smp(cJSON *target, const cJSON *patch, const char *field, char *err, size_t len);

static cJSON *merge_list(cJSON *target, const cJSON *patch, const char *field, char *err,
                         size_t len)
{
  const char *key = merge_key(field, cJSON_GetArraySize(patch) ? patch : target);
  if(!key || !cJSON_IsArray(target)) {
    cJSON_Delete(target);
    cJSON *out = cJSON_CreateArray();
    const cJSON *p;
    cJSON_ArrayForEach(p, patch)
    {
      if(!cJSON_IsObject(p) || !cJSON_GetObjectItem(p, "$patch"))
        cJSON_AddItemToArray(out, cJSON_Duplicate(p, 1));
    }
    return out;
  }
  const cJSON *p;
  cJSON_ArrayForEach(p, patch)
  {
    if(cJSON_IsObject(p) && !strcmp(ls_str(p, "$patch"), "replace")) {
      /* {"$patch":"replace"} in a list: the rest of the patch list is the result */
      cJSON_Delete(target);
      cJSON *out = cJSON_CreateArray();
      const cJSON *q;
      cJSON_ArrayForEach(q, patch)
      {
        if(!(cJSON_IsObject(q) && cJSON_GetObjectItem(q, "$patch")))
          cJSON_AddItemToArray(out, cJSON_Duplicate(q, 1));
      }
      return out;
    }
  }
  cJSON_ArrayForEach(p, patch)
  {
    if(!*key) { /* primitive set */
      bool have = false;
      const cJSON *t;
      cJSON_ArrayForEach(t, target)
      {
        if(json_equal(t, p))
          have = true;
      }
      if(!have)
        cJSON_AddItemToArray(target, cJSON_Duplicate(p, 1));
      continue;
    }
    int idx = -1, i = 0;
    cJSON *t;
    cJSON_ArrayForEach(t, target)
    {
      if(same_key(t, p, key)) {
        idx = i;
        break;
      }
      i++;
    }
    if(cJSON_IsObject(p) && !strcmp(ls_str(p, "$patch"), "delete")) {
      if(idx >= 0)
        cJSON_DeleteItemFromArray(target, idx);
      continue;
    }
    if(idx < 0) {
      cJSON *n = smp(NULL, p, "", err, len);
      if(!n)
        return NULL;
      cJSON_AddItemToArray(target, n);
    } else {
      cJSON *cur = cJSON_DetachItemFromArray(target, idx);
      cJSON *n = smp(cur, p, "", err, len);
      if(!n)
        return NULL;
      cJSON_InsertItemInArray(target, idx, n);
    }
  }
  return target;
}

/* Orders list by the keys (or values) of order; elements not named keep their place after. */
static void set_order(cJSON *list, const cJSON *order, const char *field)
{
  const char *key = merge_key(field, list);
  if(!cJSON_IsArray(list) || !key)
    return;
  cJSON *sorted = cJSON_CreateArray();
  const cJSON *o;
  cJSON_ArrayForEach(o, order)
  {
    int i = 0;
    cJSON *t;
    cJSON_ArrayForEach(t, list)
    {
      bool match = *key ? same_key(t, o, key) : json_equal(t, o);
      if(match) {
        cJSON_AddItemToArray(sorted, cJSON_DetachItemFromArray(list, i));
        break;
      }
      i++;
    }
  }
  while(cJSON_GetArraySize(list))
    cJSON_AddItemToArray(sorted, cJSON_DetachItemFromArray(list, 0));
  while(cJSON_GetArraySize(sorted))
    cJSON_AddItemToArray(list, cJSON_DetachItemFromArray(sorted, 0));
  cJSON_Delete(sorted);
}

static cJSON *smp(cJSON *target, const cJSON *patch, const char *field, char *err, size_t len)
{
  if(cJSON_IsArray(patch))
    return merge_list(target, patch, field, err, len);
  if(!cJSON_IsObject(patch)) {
    cJSON_Delete(target);
    return cJSON_Duplicate(patch, 1);
  }
  const char *directive = ls_str(patch, "$patch");
  if(!strcmp(directive, "replace")) {
    cJSON_Delete(target);
    cJSON *out = cJSON_Duplicate(patch, 1);
    cJSON_DeleteItemFromObject(out, "$patch");
    return out;
  }
  if(*directive && strcmp(directive, "merge") && strcmp(directive, "delete")) {
    snprintf(err, len, "unknown patch type: %s in map: %s", directive, field);
    cJSON_Delete(target);
    return NULL;
  }
  if(!cJSON_IsObject(target)) {
    cJSON_Delete(target);
    target = cJSON_CreateObject();
  }
  const cJSON *p;
  cJSON_ArrayForEach(p, patch)
  {
    const char *k = p->string;
    if(!strcmp(k, "$patch") || !strncmp(k, "$setElementOrder/", 17) || !strcmp(k, "$retainKeys"))
      continue;
    if(!strncmp(k, "$deleteFromPrimitiveList/", 25)) {
      cJSON *list = cJSON_GetObjectItem(target, k + 25);
      const cJSON *d;
      cJSON_ArrayForEach(d, p)
      {
        for(int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
          if(json_equal(cJSON_GetArrayItem(list, i), d))
            cJSON_DeleteItemFromArray(list, i);
      }
      continue;
    }
    if(cJSON_IsNull(p) || (cJSON_IsObject(p) && !strcmp(ls_str(p, "$patch"), "delete"))) {
      cJSON_DeleteItemFromObjectCaseSensitive(target, k);
      continue;
    }
    cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(target, k);
    cJSON *n = smp(cur, p, k, err, len);
    if(!n) {
      cJSON_Delete(target);
      return NULL;
    }
    cJSON_AddItemToObject(target, k, n);
  }
  cJSON_ArrayForEach(p, patch)
  {
    if(!strncmp(p->string, "$setElementOrder/", 17))
      set_order(cJSON_GetObjectItem(target, p->string + 17), p, p->string + 17);
  }
  const cJSON *retain = cJSON_GetObjectItem(patch, "$retainKeys");
  if(cJSON_IsArray(retain)) {
    cJSON *t = target->child;
    while(t) {
      cJSON *next = t->next;
      bool keep = false;
      const cJSON *r;
      cJSON_ArrayForEach(r, retain)
      {
        if(cJSON_IsString(r) && !strcmp(r->valuestring, t->string))
          keep = true;
      }
      if(!keep)
        cJSON_Delete(cJSON_DetachItemViaPointer(target, t));
      t = next;
    }
  }
  return target;
}

cJSON *patch_strategic(cJSON *target, const cJSON *patch, const char *field, char *err,
                       size_t errlen)
{
  return smp(target, patch, field, err, errlen);
}

static cJSON *unsupported(const struct ls_rtype *rt, const char *ctype)
{
  return ls_status(415, "UnsupportedMediaType", NULL,
                   "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml%s (got \"%s\")",
                   rt->crd ? "" : ", application/strategic-merge-patch+json", ctype);
}

static cJSON *parse(const char *body, size_t len, bool yaml_ok, cJSON **out)
{
  char err[256];
  if(!json_parse_strict(body, len, out, err, sizeof(err)))
    return NULL;
  if(yaml_ok) {
    cJSON *docs = NULL;
    if(!yamldoc_parse(body, len, &docs, err, sizeof(err)) && cJSON_GetArraySize(docs) == 1) {
      *out = cJSON_DetachItemFromArray(docs, 0);
      cJSON_Delete(docs);
      return NULL;
    }
    cJSON_Delete(docs);
  }
  *out = NULL;
  return ls_status(400, "BadRequest", NULL, "error decoding patch: %s", err);
}

cJSON *patch_apply(const struct ls_rtype *rt, const char *ctype, const char *body, size_t len,
                   const cJSON *doc, cJSON **out)
{
  *out = NULL;
  bool merge = !strcmp(ctype, "application/merge-patch+json");
  bool json = !strcmp(ctype, "application/json-patch+json");
  bool strategic = !strcmp(ctype, "application/strategic-merge-patch+json");
  bool apply = !strcmp(ctype, "application/apply-patch+yaml");
  if(!(merge || json || apply || (strategic && !rt->crd)))
    return unsupported(rt, ctype);
  cJSON *p = NULL;
  cJSON *st = parse(body, len, apply, &p);
  if(st)
    return st;
  cJSON *res = NULL;
  if(json) {
    char err[512];
    res = cJSON_Duplicate(doc, 1);
    if(!cJSON_IsArray(p))
      st = ls_status(400, "BadRequest", NULL, "json: cannot unmarshal object into Go value of "
                                              "type jsonpatch.Patch");
    else if(jsonpatch_apply(&res, p, err, sizeof(err))) {
      cJSON *d = cJSON_CreateObject();
      cJSON *causes = cJSON_AddArrayToObject(d, "causes");
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "reason", "UnexpectedServerResponse");
      cJSON_AddStringToObject(c, "message", err);
      cJSON_AddItemToArray(causes, c);
      st = ls_status(422, "Invalid", d,
                     "the server rejected our request due to an error in our request");
    }
  } else if(strategic) {
    char err[512] = "";
    res = patch_strategic(cJSON_Duplicate(doc, 1), p, "", err, sizeof(err));
    if(!res)
      st = ls_status(400, "BadRequest", NULL, "%s", err);
  } else if(apply) {
    res = cJSON_Duplicate(p, 1);
  } else
    res = patch_merge(cJSON_Duplicate(doc, 1), p);
  cJSON_Delete(p);
  if(!st && !cJSON_IsObject(res))
    st = ls_status(400, "BadRequest", NULL, "the patch did not produce an object");
  if(st) {
    cJSON_Delete(res);
    return st;
  }
  *out = res;
  return NULL;
}
