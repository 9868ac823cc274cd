/* builtins_ext.c: CustomResourceDefinitions (registration through schema.c, status, served
 * types) and admission webhook configurations (defaults, validation, admission.c's view). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"

#define CRD_FINALIZER "customresourcecleanup.apiextensions.k8s.io"

static cJSON *ensure_obj(cJSON *parent, const char *key)
{
  cJSON *o = cJSON_GetObjectItem(parent, key);
  if(!cJSON_IsObject(o)) {
    cJSON_DeleteItemFromObject(parent, key);
    o = cJSON_AddObjectToObject(parent, key);
  }
  return o;
}

static cJSON *condition(const char *type, const char *reason, const char *msg, const char *now)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "type", type);
  cJSON_AddStringToObject(c, "status", "True");
  cJSON_AddStringToObject(c, "lastTransitionTime", now);
  cJSON_AddStringToObject(c, "reason", reason);
  cJSON_AddStringToObject(c, "message", msg);
  return c;
}

cJSON *bi_crd_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  (void)w;
  cJSON *spec = ensure_obj(obj, "spec");
  cJSON *names = ensure_obj(spec, "names");
  const char *kind = ls_str(names, "kind");
  if(*kind && !cJSON_GetObjectItem(names, "singular")) {
    char lower[128];
    size_t i = 0;
    for(; kind[i] && i + 1 < sizeof(lower); i++)
      lower[i] = (char)tolower((unsigned char)kind[i]);
    lower[i] = '\0';
    cJSON_AddStringToObject(names, "singular", lower);
  }
  if(*kind && !cJSON_GetObjectItem(names, "listKind")) {
    char lk[160];
    snprintf(lk, sizeof(lk), "%sList", kind);
    cJSON_AddStringToObject(names, "listKind", lk);
  }
  if(!cJSON_GetObjectItem(spec, "conversion")) {
    cJSON *c = cJSON_AddObjectToObject(spec, "conversion");
    cJSON_AddStringToObject(c, "strategy", "None");
  }
  char now[32];
  ls_now(now);
  cJSON *status = ensure_obj(obj, "status");
  ls_set_item(status, "acceptedNames", cJSON_Duplicate(names, 1));
  if(!old) {
    ls_add_finalizer(obj, CRD_FINALIZER);
    cJSON *conds = cJSON_CreateArray();
    cJSON_AddItemToArray(conds, condition("NamesAccepted", "NoConflicts", "no conflicts found",
                                          now));
    cJSON_AddItemToArray(conds, condition("Established", "InitialNamesAccepted",
                                          "the initial names have been accepted", now));
    ls_set_item(status, "conditions", conds);
  }
  cJSON *stored = cJSON_GetObjectItem(status, "storedVersions");
  if(!cJSON_IsArray(stored)) {
    cJSON_DeleteItemFromObject(status, "storedVersions");
    stored = cJSON_AddArrayToObject(status, "storedVersions");
  }
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(spec, "versions"))
  {
    if(!cJSON_IsTrue(cJSON_GetObjectItem(v, "storage")))
      continue;
    bool have = false;
    const cJSON *s;
    cJSON_ArrayForEach(s, stored)
    {
      if(cJSON_IsString(s) && !strcmp(s->valuestring, ls_str(v, "name")))
        have = true;
    }
    if(!have)
      cJSON_AddItemToArray(stored, cJSON_CreateString(ls_str(v, "name")));
  }
  return NULL;
}

cJSON *bi_crd_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  if(old) {
    const char *a = ls_str(cJSON_GetObjectItem(old, "spec"), "group");
    const char *b = ls_str(cJSON_GetObjectItem(obj, "spec"), "group");
    const char *sa = ls_str(cJSON_GetObjectItem(old, "spec"), "scope");
    const char *sb = ls_str(cJSON_GetObjectItem(obj, "spec"), "scope");
    if(strcmp(a, b))
      return rest_invalid1(w->rt, ls_meta(obj, "name"), "FieldValueInvalid", "spec.group",
                           "Invalid value: \"%s\": field is immutable", b);
    if(strcmp(sa, sb))
      return rest_invalid1(w->rt, ls_meta(obj, "name"), "FieldValueInvalid", "spec.scope",
                           "Invalid value: \"%s\": field is immutable", sb);
  }
  struct ls_crd_info info;
  memset(&info, 0, sizeof(info));
  cJSON *st = crd_register(obj, &info);
  if(!st)
    w->registered = true;
  return st;
}

void builtin_write_aborted(struct ls_wctx *w, const cJSON *old)
{
  if(!w->registered)
    return;
  w->registered = false;
  if(old) {
    struct ls_crd_info info;
    cJSON_Delete(crd_register(old, &info));
  } else
    crd_unregister(w->name);
}

void bi_crd_after(const cJSON *obj, const cJSON *old)
{
  if(!obj) {
    const char *name = ls_meta(old, "name");
    crd_unregister(name);
    res_crd_remove(name);
    return;
  }
  struct ls_crd_info info;
  memset(&info, 0, sizeof(info));
  cJSON *st = crd_register(obj, &info);
  if(st) {
    cJSON_Delete(st);
    return;
  }
  res_crd_set(&info, obj);
}

/* ---- admissionregistration.k8s.io/v1 ---- */

static void dflt_str(cJSON *o, const char *key, const char *val)
{
  if(!cJSON_GetObjectItem(o, key))
    cJSON_AddStringToObject(o, key, val);
}

cJSON *bi_webhook_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  (void)old;
  bool mutating = !strcmp(w->rt->kind, "MutatingWebhookConfiguration");
  cJSON *wh;
  cJSON_ArrayForEach(wh, cJSON_GetObjectItem(obj, "webhooks"))
  {
    if(!cJSON_IsObject(wh))
      continue;
    dflt_str(wh, "failurePolicy", "Fail");
    dflt_str(wh, "matchPolicy", "Equivalent");
    if(!cJSON_GetObjectItem(wh, "namespaceSelector"))
      cJSON_AddObjectToObject(wh, "namespaceSelector");
    if(!cJSON_GetObjectItem(wh, "objectSelector"))
      cJSON_AddObjectToObject(wh, "objectSelector");
    if(!cJSON_GetObjectItem(wh, "timeoutSeconds"))
      cJSON_AddNumberToObject(wh, "timeoutSeconds", 10);
    if(mutating)
      dflt_str(wh, "reinvocationPolicy", "Never");
    cJSON *svc = cJSON_GetObjectItem(cJSON_GetObjectItem(wh, "clientConfig"), "service");
    if(cJSON_IsObject(svc) && !cJSON_GetObjectItem(svc, "port"))
      cJSON_AddNumberToObject(svc, "port", 443);
    cJSON *rule;
    cJSON_ArrayForEach(rule, cJSON_GetObjectItem(wh, "rules"))
    {
      if(cJSON_IsObject(rule))
        dflt_str(rule, "scope", "*");
    }
  }
  return NULL;
}

static bool qualified_webhook_name(const char *n)
{
  int dots = 0;
  for(const char *p = n; *p; p++)
    dots += *p == '.';
  return dots >= 2 && ls_dns_subdomain(n);
}

cJSON *bi_webhook_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  (void)old;
  cJSON *causes = cJSON_CreateArray();
  const cJSON *wh;
  int i = 0;
  cJSON_ArrayForEach(wh, cJSON_GetObjectItem(obj, "webhooks"))
  {
    char f[64];
    const char *name = ls_str(wh, "name");
    snprintf(f, sizeof(f), "webhooks[%d].name", i);
    if(!qualified_webhook_name(name))
      rest_cause(causes, "FieldValueInvalid", f,
                 "Invalid value: \"%s\": should be a domain with at least three segments "
                 "separated by dots", name);
    const cJSON *prev;
    int j = 0;
    cJSON_ArrayForEach(prev, cJSON_GetObjectItem(obj, "webhooks"))
    {
      if(j++ >= i)
        break;
      if(!strcmp(ls_str(prev, "name"), name))
        rest_cause(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"", name);
    }
    const char *se = ls_str(wh, "sideEffects");
    snprintf(f, sizeof(f), "webhooks[%d].sideEffects", i);
    if(!*se)
      rest_cause(causes, "FieldValueRequired", f,
                 "Required value: must specify one of None, NoneOnDryRun");
    else if(strcmp(se, "None") && strcmp(se, "NoneOnDryRun"))
      rest_cause(causes, "FieldValueNotSupported", f,
                 "Unsupported value: \"%s\": supported values: \"None\", \"NoneOnDryRun\"", se);
    const cJSON *arv = cJSON_GetObjectItem(wh, "admissionReviewVersions");
    snprintf(f, sizeof(f), "webhooks[%d].admissionReviewVersions", i);
    if(!cJSON_GetArraySize(arv))
      rest_cause(causes, "FieldValueRequired", f,
                 "Required value: must specify one of v1, v1beta1");
    const cJSON *cc = cJSON_GetObjectItem(wh, "clientConfig");
    snprintf(f, sizeof(f), "webhooks[%d].clientConfig", i);
    bool url = cJSON_GetObjectItem(cc, "url") != NULL;
    bool svc = cJSON_GetObjectItem(cc, "service") != NULL;
    if(url == svc)
      rest_cause(causes, "FieldValueRequired", f,
                 "Required value: exactly one of url or service is required");
    i++;
  }
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid(w->rt->group, w->rt->kind, ls_meta(obj, "name"), causes);
}

void bi_webhook_after(const struct ls_rtype *rt, const cJSON *obj, const cJSON *old)
{
  const char *name = ls_meta(obj ? obj : old, "name");
  admission_config_set(rt->kind, name, obj);
}
