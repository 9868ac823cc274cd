/*
 * schema.c: the CRD registry behind hooks.h's crd_* calls. A registered CRD keeps a private copy
 * of its object, its versions, and its schemas' compiled patterns; lookups are by (group,
 * plural). Entries are retired, never freed, while the process runs (layers.h says why), so no
 * lock is held while a request prunes, defaults or validates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"
#include "log.h"

static pthread_rwlock_t registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct crd_entry *registry; /* newest first; retired entries stay in the list */

const struct crd_entry *crd_lookup(const char *group, const char *plural)
{
  if(!group || !plural)
    return NULL;
  pthread_rwlock_rdlock(&registry_lock);
  const struct crd_entry *e = registry;
  while(e && (e->retired || strcmp(e->info.group, group) || strcmp(e->info.plural, plural)))
    e = e->next;
  pthread_rwlock_unlock(&registry_lock);
  return e;
}

const struct crd_version_ent *crd_entry_version(const struct crd_entry *e, const char *version)
{
  for(size_t i = 0; e && version && i < e->nv; i++)
    if(!strcmp(e->v[i].name, version))
      return &e->v[i];
  return NULL;
}

const struct rx *crd_entry_pattern(const struct crd_entry *e, const char *src)
{
  for(size_t i = 0; e && i < e->npatterns; i++)
    if(!strcmp(e->patterns[i].src, src))
      return e->patterns[i].rx;
  return NULL;
}

static void entry_free(struct crd_entry *e)
{
  for(size_t i = 0; i < e->npatterns; i++)
    rx_free(e->patterns[i].rx);
  free(e->patterns);
  cJSON_Delete(e->default_columns);
  cJSON_Delete(e->crd);
  free(e);
}

static void retire(const char *name)
{
  for(struct crd_entry *e = registry; e; e = e->next)
    if(!e->retired && !strcmp(e->info.name, name))
      e->retired = true;
}

cJSON *crd_register(const cJSON *crd, struct ls_crd_info *info)
{
  struct crd_entry *e = calloc(1, sizeof(*e));
  if(!e)
    return ls_status(500, "InternalError", NULL, "out of memory registering a CRD");
  e->crd = cJSON_Duplicate(crd, true);
  cJSON *causes = cJSON_CreateArray();
  crd_check(e->crd, e, causes);
  if(cJSON_GetArraySize(causes) > 0) {
    cJSON *st = ls_status_invalid("apiextensions.k8s.io", "CustomResourceDefinition", e->info.name, causes);
    entry_free(e);
    return st;
  }
  cJSON_Delete(causes);
  pthread_rwlock_wrlock(&registry_lock);
  retire(e->info.name);
  e->next = registry;
  registry = e;
  pthread_rwlock_unlock(&registry_lock);
  if(info)
    *info = e->info;
  return NULL;
}

void crd_unregister(const char *name)
{
  pthread_rwlock_wrlock(&registry_lock);
  retire(name);
  pthread_rwlock_unlock(&registry_lock);
}

void crd_prune_and_default(const char *group, const char *plural, const char *version, cJSON *obj)
{
  const struct crd_version_ent *v = crd_entry_version(crd_lookup(group, plural), version);
  if(!v || !v->schema || !cJSON_IsObject(obj))
    return;
  schema_prune(obj, v->schema, true);
  schema_drop_nulls(obj, v->schema);
  schema_default(obj, v->schema);
}

void crd_default(const char *group, const char *plural, const char *version, cJSON *obj)
{
  const struct crd_version_ent *v = crd_entry_version(crd_lookup(group, plural), version);
  if(v && v->schema && cJSON_IsObject(obj))
    schema_default(obj, v->schema);
}

/* "self == oldSelf", whatever the spacing. */
static bool rule_is_self_eq_old(const char *rule)
{
  char compact[64];
  size_t n = 0;
  for(const char *p = rule; *p && n + 1 < sizeof(compact); p++)
    if(*p != ' ' && *p != '\t' && *p != '\n')
      compact[n++] = *p;
  compact[n] = '\0';
  return !strcmp(compact, "self==oldSelf") || !strcmp(compact, "oldSelf==self");
}

/* The x-kubernetes-validations of schema s on an UPDATE, over data d and its stored value od:
 * the subset of CEL this server evaluates is the transition rule self == oldSelf (immutability).
 * As kube-apiserver does, a transition rule runs only where both values exist, and a failure is
 * "Invalid value: \"<type>\": <message>". Other rules are not evaluated (logged once). */
static void transition_rules(const cJSON *s, const cJSON *d, const cJSON *od, const char *path,
                             cJSON *causes)
{
  if(!cJSON_IsObject(s) || !d || !od || cJSON_IsNull(d) || cJSON_IsNull(od))
    return;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-validations"))
  {
    const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "rule"));
    if(!rule)
      continue;
    if(!rule_is_self_eq_old(rule)) {
      static int told;
      if(!told++)
        log_kv(LOG_WARN, "a CEL rule this API server does not evaluate", "rule", rule, LOG_END);
      continue;
    }
    if(json_equal(d, od))
      continue;
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "message"));
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "type"));
    char value[64], dflt[160];
    snprintf(value, sizeof(value), "\"%s\"", type ? type : "object");
    snprintf(dflt, sizeof(dflt), "failed rule: %s", rule);
    ferr_add(causes, "FieldValueInvalid", path, value, msg && *msg ? msg : dflt);
  }
  const cJSON *prop;
  cJSON_ArrayForEach(prop, cJSON_GetObjectItemCaseSensitive(s, "properties"))
  {
    char sub[512];
    snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", prop->string);
    transition_rules(prop, cJSON_GetObjectItemCaseSensitive(d, prop->string),
                     cJSON_GetObjectItemCaseSensitive(od, prop->string), sub, causes);
  }
}

cJSON *crd_validate(const char *group, const char *plural, const char *version, const cJSON *obj,
                    const cJSON *old)
{
  const struct crd_entry *e = crd_lookup(group, plural);
  const struct crd_version_ent *v = crd_entry_version(e, version);
  if(!v || !v->schema)
    return NULL;
  cJSON *causes = cJSON_CreateArray();
  schema_validate_value(e, v->schema, obj, "", causes);
  schema_validate_lists(v->schema, obj, causes);
  if(old)
    transition_rules(v->schema, obj, old, "", causes);
  if(cJSON_GetArraySize(causes) == 0) {
    cJSON_Delete(causes);
    return NULL;
  }
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name"));
  return ls_status_invalid(e->info.group, e->info.kind, name ? name : "", causes);
}

const cJSON *crd_printer_columns(const char *group, const char *plural, const char *version)
{
  const struct crd_version_ent *v = crd_entry_version(crd_lookup(group, plural), version);
  return v ? v->columns : NULL;
}

const cJSON *crd_version_schema(const char *group, const char *plural, const char *version)
{
  const struct crd_version_ent *v = crd_entry_version(crd_lookup(group, plural), version);
  return v ? v->schema : NULL;
}
