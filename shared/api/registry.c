/* The kinds godwit serves. A kind whose module is not linked in is skipped (weak symbols), so
 * tools that need only some of them link only those. */
#include <string.h>

#include "api/api.h"

extern const struct api_kind api_migration __attribute__((weak));
extern const struct api_kind api_ptahschema __attribute__((weak));
extern const struct api_kind api_ptahmigration __attribute__((weak));
extern const struct api_kind api_ptahschemaapproval __attribute__((weak));
extern const struct api_kind api_ptahmigrationrunacknowledgment __attribute__((weak));
extern const struct api_kind api_ptahresultrecord __attribute__((weak));
extern const struct api_kind api_podmigration __attribute__((weak));
extern const struct api_kind api_migrationpolicy __attribute__((weak));

static const struct api_kind *registry[16];

static void build(void)
{
  const struct api_kind *all[] = {
    &api_migration,          &api_ptahschema,
    &api_ptahmigration,      &api_ptahschemaapproval,
    &api_ptahmigrationrunacknowledgment, &api_ptahresultrecord,
    &api_podmigration,       &api_migrationpolicy,
  };
  size_t n = 0;
  for(size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if(all[i])
      registry[n++] = all[i];
  registry[n] = NULL;
}

__attribute__((constructor)) static void registry_ctor(void)
{
  build();
}

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
