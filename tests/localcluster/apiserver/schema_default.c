/*
 * schema_default.c: what kube-apiserver does to a custom resource while decoding it (from a
 * request, and again when reading it from storage), in its order:
 *   1. pruning (apiextensions structural/pruning): members the schema does not specify are
 *      dropped, except under x-kubernetes-preserve-unknown-fields; at the root and in
 *      x-kubernetes-embedded-resource objects apiVersion, kind and metadata are kept;
 *   2. metadata coercion: the root's metadata keeps only ObjectMeta's fields;
 *   3. PruneNonNullableNullsWithoutDefaults: a null where the schema says neither nullable nor
 *      default is dropped;
 *   4. defaulting (structural/defaulting.Default): a default is set where a member is missing or
 *      is a non-nullable null, and only where its parent object exists; defaults apply top-down,
 *      so a defaulted object gets its own members' defaults too.
 */
#include <string.h>

#include "layers.h"

const cJSON *schema_prop(const cJSON *schema, const char *name)
{
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(schema, "properties"), name);
  return cJSON_IsObject(p) ? p : NULL;
}

/* The additionalProperties item: an object schema, `true`, or NULL when absent or false. */
const cJSON *schema_addl(const cJSON *schema)
{
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
  return cJSON_IsObject(a) || cJSON_IsTrue(a) ? a : NULL;
}

const cJSON *schema_items(const cJSON *schema)
{
  const cJSON *i = cJSON_GetObjectItemCaseSensitive(schema, "items");
  return cJSON_IsObject(i) ? i : NULL;
}

bool schema_flag(const cJSON *schema, const char *name)
{
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(schema, name));
}

static const char *const object_meta[] = {
  "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
  "ownerReferences", "finalizers", "managedFields",
};

static void coerce_meta(cJSON *meta)
{
  if(!cJSON_IsObject(meta))
    return;
  for(cJSON *k = meta->child, *next; k; k = next) {
    next = k->next;
    bool known = false;
    for(size_t i = 0; i < sizeof(object_meta) / sizeof(object_meta[0]) && !known; i++)
      known = !strcmp(k->string, object_meta[i]);
    if(!known)
      cJSON_Delete(cJSON_DetachItemViaPointer(meta, k));
  }
}

static void prune(cJSON *x, const cJSON *s, bool embedded);

/* x-kubernetes-preserve-unknown-fields: unknown members stay; known ones are pruned below. */
static void skip_prune(cJSON *x, const cJSON *s)
{
  if(!s)
    return;
  if(cJSON_IsObject(x)) {
    const cJSON *addl = schema_addl(s);
    bool emb = schema_flag(s, "x-kubernetes-embedded-resource");
    for(cJSON *k = x->child; k; k = k->next) {
      if(emb && (!strcmp(k->string, "apiVersion") || !strcmp(k->string, "kind")))
        continue;
      if(emb && !strcmp(k->string, "metadata")) {
        coerce_meta(k);
        continue;
      }
      const cJSON *p = schema_prop(s, k->string);
      if(p)
        prune(k, p, false);
      else if(addl)
        prune(k, cJSON_IsObject(addl) ? addl : NULL, false);
    }
  } else if(cJSON_IsArray(x)) {
    for(cJSON *k = x->child; k; k = k->next)
      skip_prune(k, schema_items(s));
  }
}

static void prune(cJSON *x, const cJSON *s, bool embedded)
{
  if(s && schema_flag(s, "x-kubernetes-preserve-unknown-fields")) {
    skip_prune(x, s);
    return;
  }
  embedded = embedded || (s && schema_flag(s, "x-kubernetes-embedded-resource"));
  if(cJSON_IsObject(x)) {
    const cJSON *addl = s ? schema_addl(s) : NULL;
    for(cJSON *k = x->child, *next; k; k = next) {
      next = k->next;
      if(embedded && (!strcmp(k->string, "apiVersion") || !strcmp(k->string, "kind")))
        continue;
      if(embedded && !strcmp(k->string, "metadata")) {
        coerce_meta(k);
        continue;
      }
      const cJSON *p = s ? schema_prop(s, k->string) : NULL;
      if(p)
        prune(k, p, false);
      else if(addl)
        prune(k, cJSON_IsObject(addl) ? addl : NULL, false);
      else
        cJSON_Delete(cJSON_DetachItemViaPointer(x, k));
    }
  } else if(cJSON_IsArray(x)) {
    for(cJSON *k = x->child; k; k = k->next)
      prune(k, s ? schema_items(s) : NULL, false);
  }
}

void schema_prune(cJSON *obj, const cJSON *schema, bool root)
{
  prune(obj, schema, root);
}

static bool has_default(const cJSON *s)
{
  return s && cJSON_GetObjectItemCaseSensitive(s, "default") != NULL;
}

void schema_drop_nulls(cJSON *x, const cJSON *s)
{
  if(!s)
    return;
  if(cJSON_IsObject(x)) {
    const cJSON *addl = schema_addl(s);
    for(cJSON *k = x->child, *next; k; k = next) {
      next = k->next;
      const cJSON *p = schema_prop(s, k->string);
      if(!p && cJSON_IsObject(addl))
        p = addl;
      if(!p)
        continue;
      if(cJSON_IsNull(k) && !has_default(p) && !schema_flag(p, "nullable"))
        cJSON_Delete(cJSON_DetachItemViaPointer(x, k));
      else
        schema_drop_nulls(k, p);
    }
  } else if(cJSON_IsArray(x)) {
    for(cJSON *k = x->child; k; k = k->next)
      schema_drop_nulls(k, schema_items(s));
  }
}

static bool nonnullable_null(const cJSON *x, const cJSON *s)
{
  return cJSON_IsNull(x) && s && !schema_flag(s, "nullable");
}

/* Replaces the member/element x of parent by a copy of s's default. */
static cJSON *set_default(cJSON *parent, cJSON *x, const cJSON *s)
{
  cJSON *d = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(s, "default"), true);
  if(!d)
    return x;
  if(x->string)
    cJSON_ReplaceItemInObjectCaseSensitive(parent, x->string, d); /* keeps the member's name */
  else
    cJSON_ReplaceItemViaPointer(parent, x, d);
  return d;
}

void schema_default(cJSON *x, const cJSON *s)
{
  if(!s)
    return;
  if(cJSON_IsObject(x)) {
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(s, "properties"))
    {
      if(!has_default(p))
        continue;
      cJSON *v = cJSON_GetObjectItemCaseSensitive(x, p->string);
      if(!v)
        cJSON_AddItemToObject(x, p->string, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "default"), true));
      else if(nonnullable_null(v, p))
        set_default(x, v, p);
    }
    const cJSON *addl = schema_addl(s);
    for(cJSON *k = x->child; k; k = k->next) {
      p = schema_prop(s, k->string);
      if(p)
        schema_default(k, p);
      else if(cJSON_IsObject(addl)) {
        if(nonnullable_null(k, addl) && has_default(addl))
          k = set_default(x, k, addl);
        schema_default(k, addl);
      }
    }
  } else if(cJSON_IsArray(x)) {
    const cJSON *items = schema_items(s);
    for(cJSON *k = x->child; k; k = k->next) {
      if(nonnullable_null(k, items) && has_default(items))
        k = set_default(x, k, items);
      schema_default(k, items);
    }
  }
}
