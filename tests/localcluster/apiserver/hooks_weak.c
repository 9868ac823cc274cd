/* hooks_weak.c: weak stand-ins for the schema, admission and conversion layers (hooks.h), so
 * the core links and serves CRDs on its own: names and versions read from the CRD, no schema,
 * conversion by rewriting apiVersion, every request admitted. The real layers (schema*.c,
 * admission*.c, conversion.c) define the same symbols strongly and replace these at link time. */
#include <stdio.h>
#include <string.h>

#include "core.h"

#define WEAK __attribute__((weak))

WEAK void ls_hooks_init(const struct ls_core_ops *ops, const char *const *service_map)
{
  (void)ops;
  (void)service_map;
}

static void copy_list(const cJSON *a, char (*out)[32], size_t max, size_t *n)
{
  *n = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, a)
  {
    if(cJSON_IsString(x) && *n < max)
      snprintf(out[(*n)++], 32, "%s", x->valuestring);
  }
}

WEAK cJSON *crd_register(const cJSON *crd, struct ls_crd_info *info)
{
  memset(info, 0, sizeof(*info));
  const cJSON *spec = cJSON_GetObjectItem(crd, "spec");
  const cJSON *names = cJSON_GetObjectItem(spec, "names");
  const char *name = ls_meta(crd, "name");
  snprintf(info->name, sizeof(info->name), "%s", name);
  snprintf(info->group, sizeof(info->group), "%s", ls_str(spec, "group"));
  snprintf(info->kind, sizeof(info->kind), "%s", ls_str(names, "kind"));
  snprintf(info->list_kind, sizeof(info->list_kind), "%s", ls_str(names, "listKind"));
  snprintf(info->plural, sizeof(info->plural), "%s", ls_str(names, "plural"));
  snprintf(info->singular, sizeof(info->singular), "%s", ls_str(names, "singular"));
  copy_list(cJSON_GetObjectItem(names, "shortNames"), info->short_names, 8, &info->nshort);
  copy_list(cJSON_GetObjectItem(names, "categories"), info->categories, 8, &info->ncategories);
  info->namespaced = !strcmp(ls_str(spec, "scope"), "Namespaced");
  size_t storage = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(spec, "versions"))
  {
    if(info->nversions == 8)
      break;
    struct ls_crd_version *cv = &info->versions[info->nversions++];
    snprintf(cv->name, sizeof(cv->name), "%s", ls_str(v, "name"));
    cv->served = cJSON_IsTrue(cJSON_GetObjectItem(v, "served"));
    cv->storage = cJSON_IsTrue(cJSON_GetObjectItem(v, "storage"));
    cv->status_subresource =
      cJSON_GetObjectItem(cJSON_GetObjectItem(v, "subresources"), "status") != NULL;
    storage += cv->storage;
  }
  char want[300];
  snprintf(want, sizeof(want), "%s.%s", info->plural, info->group);
  cJSON *causes = cJSON_CreateArray();
  if(strcmp(want, name)) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
    cJSON_AddStringToObject(c, "message", "Invalid value: \"\": must be spec.names.plural+\".\"+"
                                          "spec.group");
    cJSON_AddStringToObject(c, "field", "metadata.name");
    cJSON_AddItemToArray(causes, c);
  }
  if(storage != 1 || !info->kind[0] || !info->plural[0]) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
    cJSON_AddStringToObject(c, "message", storage != 1 ? "must have exactly one version marked "
                                                         "as storage version"
                                                       : "Required value");
    cJSON_AddStringToObject(c, "field", storage != 1 ? "spec.versions" : "spec.names");
    cJSON_AddItemToArray(causes, c);
  }
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, causes);
}

WEAK void crd_unregister(const char *name)
{
  (void)name;
}

WEAK void crd_prune_and_default(const char *group, const char *plural, const char *version,
                                cJSON *obj)
{
  (void)group;
  (void)plural;
  (void)version;
  (void)obj;
}

WEAK cJSON *crd_validate(const char *group, const char *plural, const char *version,
                         const cJSON *obj, const cJSON *old)
{
  (void)old;
  (void)group;
  (void)plural;
  (void)version;
  (void)obj;
  return NULL;
}

WEAK const cJSON *crd_printer_columns(const char *group, const char *plural, const char *version)
{
  (void)group;
  (void)plural;
  (void)version;
  return NULL;
}

WEAK const cJSON *crd_version_schema(const char *group, const char *plural, const char *version)
{
  (void)group;
  (void)plural;
  (void)version;
  return NULL;
}

WEAK cJSON *crd_convert(const char *group, const char *plural, cJSON *const *objs, size_t n,
                        const char *version)
{
  (void)plural;
  char av[200];
  snprintf(av, sizeof(av), "%s/%s", group, version);
  for(size_t i = 0; i < n; i++)
    ls_set_str(objs[i], "apiVersion", av);
  return NULL;
}

WEAK void admission_config_set(const char *kind, const char *name, const cJSON *obj)
{
  (void)kind;
  (void)name;
  (void)obj;
}

WEAK cJSON *admission_mutate(const struct ls_adm_attrs *a, cJSON **obj, const cJSON *old,
                             struct ls_warnings *w)
{
  (void)a;
  (void)obj;
  (void)old;
  (void)w;
  return NULL;
}

WEAK cJSON *admission_validate(const struct ls_adm_attrs *a, const cJSON *obj,
                               const cJSON *old, struct ls_warnings *w)
{
  (void)a;
  (void)obj;
  (void)old;
  (void)w;
  return NULL;
}
