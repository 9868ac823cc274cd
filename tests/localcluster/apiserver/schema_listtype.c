/*
 * schema_listtype.c: x-kubernetes-list-type set and map, as apiextensions' listtype
 * ValidateListSetsAndMaps checks them after the schema: the second occurrence of a value (set) or
 * of a key tuple (map) is a Duplicate value, reported once per value, with kube's field paths
 * (a[1], m[key] under additionalProperties) and Go's %#v of the value
 * (map[string]interface {}{"type":"Ready"}).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if(vasprintf(&s, f, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

static void lists(const cJSON *s, const cJSON *d, const char *field, cJSON *causes);

static void list_set(const cJSON *d, const char *field, cJSON *causes)
{
  int n = cJSON_GetArraySize(d);
  const cJSON **seen = n ? calloc((size_t)n, sizeof(*seen)) : NULL;
  int *times = n ? calloc((size_t)n, sizeof(*times)) : NULL;
  int ns = 0, i = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, d)
  {
    int j;
    for(j = 0; j < ns && !json_equal(seen[j], x); j++)
      ;
    if(j == ns) {
      if(seen)
        seen[ns] = x, times[ns++] = 1;
    } else if(times[j]++ == 1) {
      char *f = fmt("%s[%d]", field, i);
      ferr_duplicate(causes, f, x);
      free(f);
    }
    i++;
  }
  free(seen);
  free(times);
}

static void list_map(const cJSON *s, const cJSON *d, const char *field, cJSON *causes)
{
  int i = 0;
  const cJSON *x, *keys = cJSON_GetObjectItem(s, "x-kubernetes-list-map-keys");
  cJSON_ArrayForEach(x, d)
  {
    if(!cJSON_IsNull(x) && !cJSON_IsObject(x)) {
      char *f = fmt("%s[%d]", field, i);
      ferr_invalid(causes, f, x, "must be an object for an array of list-type map");
      free(f);
      return;
    }
    i++;
  }
  int n = cJSON_GetArraySize(d);
  if(n <= 1)
    return;
  /* Each item's key tuple; an absent key is distinct from every value, including null. */
  cJSON **tuples = calloc((size_t)n, sizeof(*tuples));
  int *times = calloc((size_t)n, sizeof(*times));
  if(!tuples || !times) {
    free(tuples);
    free(times);
    return;
  }
  i = 0;
  cJSON_ArrayForEach(x, d)
  {
    cJSON *t = cJSON_CreateObject();
    const cJSON *k;
    cJSON_ArrayForEach(k, keys)
    {
      const cJSON *v = cJSON_IsString(k) ? cJSON_GetObjectItemCaseSensitive(x, k->valuestring) : NULL;
      if(v)
        cJSON_AddItemToObject(t, k->valuestring, cJSON_Duplicate(v, true));
    }
    tuples[i] = t;
    int j;
    for(j = 0; j < i && !(times[j] && json_equal(tuples[j], t)); j++)
      ;
    if(j == i)
      times[i] = 1;
    else if(times[j]++ == 1) {
      char *f = fmt("%s[%d]", field, i);
      ferr_duplicate(causes, f, t);
      free(f);
    }
    i++;
  }
  for(i = 0; i < n; i++)
    cJSON_Delete(tuples[i]);
  free(tuples);
  free(times);
}

static void lists_array(const cJSON *s, const cJSON *d, const char *field, cJSON *causes)
{
  const char *lt = cJSON_GetStringValue(cJSON_GetObjectItem(s, "x-kubernetes-list-type"));
  if(lt && !strcmp(lt, "set"))
    list_set(d, field, causes);
  else if(lt && !strcmp(lt, "map"))
    list_map(s, d, field, causes);
  const cJSON *items = schema_items(s), *x;
  int i = 0;
  if(items)
    cJSON_ArrayForEach(x, d)
    {
      char *f = fmt("%s[%d]", field, i++);
      lists(items, x, f, causes);
      free(f);
    }
}

static void lists_object(const cJSON *s, const cJSON *d, const char *field, cJSON *causes)
{
  const cJSON *addl = schema_addl(s), *props = cJSON_GetObjectItem(s, "properties"), *k;
  if(cJSON_IsObject(addl))
    cJSON_ArrayForEach(k, d)
    {
      char *f = fmt("%s[%s]", field, k->string);
      lists(addl, k, f, causes);
      free(f);
    }
  cJSON_ArrayForEach(k, d)
  {
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(props, k->string);
    if(!sub)
      continue;
    char *f = *field ? fmt("%s.%s", field, k->string) : strdup(k->string);
    lists(sub, k, f, causes);
    free(f);
  }
}

static void lists(const cJSON *s, const cJSON *d, const char *field, cJSON *causes)
{
  if(!cJSON_IsObject(s))
    return;
  if(cJSON_IsArray(d))
    lists_array(s, d, field, causes);
  else if(cJSON_IsObject(d))
    lists_object(s, d, field, causes);
}

void schema_validate_lists(const cJSON *schema, const cJSON *obj, cJSON *causes)
{
  if(cJSON_IsObject(obj))
    lists_object(schema, obj, "", causes);
}
