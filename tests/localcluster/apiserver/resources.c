/* resources.c: the served types: the built-ins of builtins.c and the versions of every
 * CustomResourceDefinition created through the API. Lookups return copies, so a CRD removed
 * while a request runs never pulls a type from under it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static pthread_rwlock_t lk = PTHREAD_RWLOCK_INITIALIZER;
static struct ls_rtype *types;
static size_t ntypes, ctypes;

static void split_list(const char *csv, char (*out)[32], size_t max, size_t *n)
{
  *n = 0;
  while(csv && *csv && *n < max) {
    const char *comma = strchr(csv, ',');
    size_t len = comma ? (size_t)(comma - csv) : strlen(csv);
    snprintf(out[(*n)++], 32, "%.*s", (int)len, csv);
    csv = comma ? comma + 1 : NULL;
  }
}

static void add(const struct ls_rtype *t)
{
  if(ntypes == ctypes) {
    ctypes = ctypes ? ctypes * 2 : 64;
    types = realloc(types, ctypes * sizeof(*types));
    if(!types)
      abort();
  }
  types[ntypes++] = *t;
}

void res_init(void)
{
  for(size_t i = 0; i < ls_nbuiltins; i++) {
    const struct ls_builtin *b = &ls_builtins[i];
    struct ls_rtype t;
    memset(&t, 0, sizeof(t));
    snprintf(t.group, sizeof(t.group), "%s", b->group);
    snprintf(t.version, sizeof(t.version), "%s", b->version);
    snprintf(t.resource, sizeof(t.resource), "%s", b->resource);
    snprintf(t.kind, sizeof(t.kind), "%s", b->kind);
    snprintf(t.list_kind, sizeof(t.list_kind), "%sList", b->kind);
    snprintf(t.singular, sizeof(t.singular), "%s", b->singular);
    split_list(b->short_names, t.short_names, 8, &t.nshort);
    split_list(b->categories, t.categories, 8, &t.ncat);
    t.namespaced = b->namespaced;
    t.status_sub = b->flags & LS_B_STATUS;
    snprintf(t.storage_version, sizeof(t.storage_version), "%s", b->version);
    snprintf(t.store_group, sizeof(t.store_group), "%s",
             b->store_group ? b->store_group : b->group);
    snprintf(t.store_resource, sizeof(t.store_resource), "%s",
             b->store_resource ? b->store_resource : b->resource);
    t.gen = b->gen;
    t.b = b;
    add(&t);
  }
}

bool res_lookup(const char *group, const char *version, const char *resource,
                struct ls_rtype *out)
{
  bool found = false;
  pthread_rwlock_rdlock(&lk);
  for(size_t i = 0; i < ntypes && !found; i++)
    if(!strcmp(types[i].group, group) && !strcmp(types[i].version, version) &&
       !strcmp(types[i].resource, resource)) {
      *out = types[i];
      found = true;
    }
  pthread_rwlock_unlock(&lk);
  return found;
}

bool res_lookup_kind(const char *group, const char *version, const char *kind,
                     struct ls_rtype *out)
{
  bool found = false;
  pthread_rwlock_rdlock(&lk);
  for(size_t i = 0; i < ntypes; i++) {
    const struct ls_rtype *t = &types[i];
    if(strcmp(t->group, group) || strcmp(t->kind, kind))
      continue;
    if(version && !strcmp(t->version, version)) {
      *out = *t;
      found = true;
      break;
    }
    if(!found || ls_version_cmp(t->version, out->version) < 0) {
      *out = *t;
      found = true;
    }
  }
  pthread_rwlock_unlock(&lk);
  return found;
}

bool res_lookup_stored(const char *group, const char *resource, struct ls_rtype *out)
{
  bool found = false;
  pthread_rwlock_rdlock(&lk);
  for(size_t i = 0; i < ntypes; i++) {
    const struct ls_rtype *t = &types[i];
    if(strcmp(t->group, group) || strcmp(t->resource, resource))
      continue;
    if(!found || ls_version_cmp(t->version, out->version) < 0) {
      *out = *t;
      found = true;
    }
  }
  pthread_rwlock_unlock(&lk);
  return found;
}

static void remove_crd_locked(const char *group, const char *plural)
{
  size_t j = 0;
  for(size_t i = 0; i < ntypes; i++)
    if(!(types[i].crd && !strcmp(types[i].group, group) && !strcmp(types[i].resource, plural)))
      types[j++] = types[i];
  ntypes = j;
}

static const cJSON *crd_version(const cJSON *crd, const char *name)
{
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "spec"), "versions"))
  {
    if(!strcmp(ls_str(v, "name"), name))
      return v;
  }
  return NULL;
}

void res_crd_set(const struct ls_crd_info *info, const cJSON *crd)
{
  const char *storage = "";
  for(size_t i = 0; i < info->nversions; i++)
    if(info->versions[i].storage)
      storage = info->versions[i].name;
  pthread_rwlock_wrlock(&lk);
  remove_crd_locked(info->group, info->plural);
  for(size_t i = 0; i < info->nversions; i++) {
    const struct ls_crd_version *v = &info->versions[i];
    if(!v->served)
      continue;
    struct ls_rtype t;
    memset(&t, 0, sizeof(t));
    snprintf(t.group, sizeof(t.group), "%s", info->group);
    snprintf(t.version, sizeof(t.version), "%s", v->name);
    snprintf(t.resource, sizeof(t.resource), "%s", info->plural);
    snprintf(t.kind, sizeof(t.kind), "%s", info->kind);
    snprintf(t.list_kind, sizeof(t.list_kind), "%s",
             info->list_kind[0] ? info->list_kind : info->kind);
    if(!info->list_kind[0])
      strncat(t.list_kind, "List", sizeof(t.list_kind) - strlen(t.list_kind) - 1);
    snprintf(t.singular, sizeof(t.singular), "%s", info->singular);
    for(size_t k = 0; k < info->nshort && k < 8; k++)
      snprintf(t.short_names[t.nshort++], 32, "%s", info->short_names[k]);
    for(size_t k = 0; k < info->ncategories && k < 8; k++)
      snprintf(t.categories[t.ncat++], 32, "%s", info->categories[k]);
    t.namespaced = info->namespaced;
    t.crd = true;
    t.status_sub = v->status_subresource;
    snprintf(t.storage_version, sizeof(t.storage_version), "%s", storage);
    snprintf(t.store_group, sizeof(t.store_group), "%s", info->group);
    snprintf(t.store_resource, sizeof(t.store_resource), "%s", info->plural);
    t.gen = LS_GEN_NONMETA;
    const cJSON *cv = crd_version(crd, v->name);
    if(cJSON_IsTrue(cJSON_GetObjectItem(cv, "deprecated"))) {
      t.deprecated = true;
      const char *w = ls_str(cv, "deprecationWarning");
      if(*w)
        snprintf(t.deprecation_warning, sizeof(t.deprecation_warning), "%s", w);
      else
        snprintf(t.deprecation_warning, sizeof(t.deprecation_warning),
                 "%.100s/%.30s %.100s is deprecated",
                 info->group, v->name, info->kind);
    }
    add(&t);
  }
  pthread_rwlock_unlock(&lk);
}

void res_crd_remove(const char *crd_name)
{
  const char *dot = strchr(crd_name, '.');
  if(!dot)
    return;
  char plural[128];
  snprintf(plural, sizeof(plural), "%.*s", (int)(dot - crd_name), crd_name);
  pthread_rwlock_wrlock(&lk);
  remove_crd_locked(dot + 1, plural);
  pthread_rwlock_unlock(&lk);
}

size_t res_snapshot(struct ls_rtype **out)
{
  pthread_rwlock_rdlock(&lk);
  *out = malloc((ntypes ? ntypes : 1) * sizeof(**out));
  if(!*out)
    abort();
  memcpy(*out, types, ntypes * sizeof(**out));
  size_t n = ntypes;
  pthread_rwlock_unlock(&lk);
  return n;
}

bool res_has_sub(const struct ls_rtype *rt, const char *sub)
{
  if(!strcmp(sub, "status"))
    return rt->status_sub;
  if(!rt->b || !rt->b->subresources)
    return false;
  const char *p = rt->b->subresources;
  size_t n = strlen(sub);
  while(*p) {
    if(!strncmp(p, sub, n) && (p[n] == ',' || !p[n]))
      return true;
    p = strchr(p, ',');
    if(!p)
      break;
    p++;
  }
  return false;
}
