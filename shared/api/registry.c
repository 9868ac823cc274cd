/* The kinds godwit serves. Referencing them here is what links them into any program that uses
 * the registry (the shared objects are an archive: unreferenced modules stay out). */
#include <string.h>

#include "api/api.h"

extern const struct api_kind api_migration;
extern const struct api_kind api_ptahschema;
extern const struct api_kind api_ptahmigration;
extern const struct api_kind api_ptahschemaapproval;
extern const struct api_kind api_ptahmigrationrunacknowledgment;
extern const struct api_kind api_ptahresultrecord;
extern const struct api_kind api_podmigration;
extern const struct api_kind api_migrationpolicy;

static const struct api_kind *const registry[] = {
  &api_migration,
  &api_ptahschema,
  &api_ptahmigration,
  &api_ptahschemaapproval,
  &api_ptahmigrationrunacknowledgment,
  &api_ptahresultrecord,
  &api_podmigration,
  &api_migrationpolicy,
  NULL,
};

const struct api_kind *const *api_kinds(void)
{
  return registry;
}

const struct api_kind *api_find_kind(const char *group, const char *kind)
{
  for(const struct api_kind *const *k = registry; *k; k++)
    if(!strcmp((*k)->group, group) && !strcmp((*k)->kind, kind))
      return *k;
  return NULL;
}

const struct api_kind *api_find_plural(const char *group, const char *plural)
{
  for(const struct api_kind *const *k = registry; *k; k++)
    if(!strcmp((*k)->group, group) && !strcmp((*k)->plural, plural))
      return *k;
  return NULL;
}

const struct api_version *api_find_version(const struct api_kind *k, const char *version)
{
  for(size_t i = 0; i < k->nversions; i++)
    if(!strcmp(k->versions[i].name, version))
      return &k->versions[i];
  return NULL;
}

const struct api_version *api_hub(const struct api_kind *k)
{
  return &k->versions[k->nversions - 1];
}

bool api_is_hub(const struct api_kind *k, const struct api_version *v)
{
  return v == api_hub(k);
}
