/* builtins_daemonsets.c: apps/v1 DaemonSets as kube-apiserver keeps them: the defaults
 * (SetDefaults_DaemonSet, and the template's pod spec with restartPolicy Always), the template
 * generation (annotation deprecated.daemonset.template.generation: 1 at creation, one more with
 * each change of spec.template; the controller labels its Pods pod-template-generation with it)
 * and validation (ValidateDaemonSet: selector required, non-empty, matching the template's
 * labels and immutable; restartPolicy Always; no activeDeadlineSeconds; the update strategy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "json.h"

#define TEMPLATE_GENERATION "deprecated.daemonset.template.generation"

static void strategy_defaults(cJSON *spec)
{
  cJSON *us = bi_obj_at(spec, "updateStrategy");
  bi_dflt(us, "type", cJSON_CreateString("RollingUpdate"));
  if(!strcmp(ls_str(us, "type"), "RollingUpdate")) {
    cJSON *ru = bi_obj_at(us, "rollingUpdate");
    bi_dflt(ru, "maxUnavailable", cJSON_CreateNumber(1));
    bi_dflt(ru, "maxSurge", cJSON_CreateNumber(0));
  }
  bi_dflt(spec, "revisionHistoryLimit", cJSON_CreateNumber(10));
}

/* The annotation's value; 0 when missing or not a positive integer. */
static long long template_generation(const cJSON *obj)
{
  const cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "annotations");
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, TEMPLATE_GENERATION));
  char *end;
  long long g = v ? strtoll(v, &end, 10) : 0;
  return v && *v && !*end && g > 0 ? g : 0;
}

static void set_template_generation(cJSON *obj, long long g)
{
  cJSON *ann = bi_obj_at(ls_meta_obj(obj), "annotations");
  char v[32];
  snprintf(v, sizeof(v), "%lld", g);
  ls_set_str(ann, TEMPLATE_GENERATION, v);
}

cJSON *bi_ds_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(strcmp(w->sub, ""))
    return NULL;
  cJSON *spec = bi_obj_at(obj, "spec");
  strategy_defaults(spec);
  cJSON *tmpl = bi_obj_at(spec, "template");
  cJSON *tspec = bi_obj_at(tmpl, "spec");
  bi_dflt(tspec, "restartPolicy", cJSON_CreateString("Always"));
  bi_podspec_defaults(tspec, true);
  /* The generation of the template: the client's own at creation (at least 1), then the
   * server's, moving with the template only (metadata.generation moves with the whole spec). */
  long long g = template_generation(old ? old : obj);
  if(g < 1)
    g = 1;
  if(old && !json_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(old, "spec"), "template"), tmpl))
    g++;
  set_template_generation(obj, g);
  return NULL;
}

/* Go's %#v of a map[string]string, as kube's messages quote label sets. */
static void go_map(const cJSON *labels, char *out, size_t len)
{
  if(!cJSON_IsObject(labels)) {
    snprintf(out, len, "map[string]string(nil)");
    return;
  }
  size_t n = (size_t)cJSON_GetArraySize(labels), o = 0;
  const cJSON **v = calloc(n ? n : 1, sizeof(*v));
  const cJSON *kv;
  size_t k = 0;
  cJSON_ArrayForEach(kv, labels)
  {
    if(v)
      v[k++] = kv;
  }
  for(size_t i = 1; i < k; i++) /* insertion sort by key: a handful of labels */
    for(size_t j = i; j > 0 && strcmp(v[j - 1]->string, v[j]->string) > 0; j--) {
      const cJSON *t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  o += (size_t)snprintf(out, len, "map[string]string{");
  for(size_t i = 0; i < k && o < len; i++)
    o += (size_t)snprintf(out + o, len - o, "%s\"%s\":\"%s\"", i ? ", " : "", v[i]->string,
                          cJSON_IsString(v[i]) ? v[i]->valuestring : "");
  if(o < len)
    snprintf(out + o, len - o, "}");
  free(v);
}

static void nonnegative(cJSON *causes, const cJSON *o, const char *key, const char *field)
{
  const cJSON *v = cJSON_GetObjectItem(o, key);
  if(cJSON_IsNumber(v) && v->valuedouble < 0)
    rest_cause(causes, "FieldValueInvalid", field,
               "Invalid value: %lld: must be greater than or equal to 0",
               (long long)v->valuedouble);
}

/* An int-or-string "N%" of rollingUpdate; -1 when malformed. */
static long scaled(const cJSON *v)
{
  if(cJSON_IsNumber(v))
    return (long)v->valuedouble;
  char *end;
  long p = cJSON_IsString(v) ? strtol(v->valuestring, &end, 10) : -1;
  return cJSON_IsString(v) && end != v->valuestring && !strcmp(end, "%") ? p : -1;
}

static void strategy_checks(cJSON *causes, const cJSON *spec)
{
  const cJSON *us = cJSON_GetObjectItem(spec, "updateStrategy");
  const char *type = ls_str(us, "type");
  if(!strcmp(type, "OnDelete"))
    return;
  if(strcmp(type, "RollingUpdate")) {
    rest_cause(causes, "FieldValueNotSupported", "spec.updateStrategy",
               "Unsupported value: \"%s\": supported values: \"RollingUpdate\", \"OnDelete\"",
               type);
    return;
  }
  const cJSON *ru = cJSON_GetObjectItem(us, "rollingUpdate");
  static const char *const keys[] = { "maxUnavailable", "maxSurge" };
  long v[2];
  for(int i = 0; i < 2; i++) {
    const cJSON *x = cJSON_GetObjectItem(ru, keys[i]);
    v[i] = scaled(x);
    char f[96];
    snprintf(f, sizeof(f), "spec.updateStrategy.rollingUpdate.%s", keys[i]);
    if(v[i] < 0) {
      char *s = ls_print(x);
      rest_cause(causes, "FieldValueInvalid", f,
                 "Invalid value: %.64s: must be a non-negative integer or a percentage", s);
      free(s);
    }
  }
  if(!v[0] && !v[1])
    rest_cause(causes, "FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable",
               "Invalid value: 0: may not be 0 when `maxSurge` is 0");
}

cJSON *bi_ds_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  cJSON *causes = cJSON_CreateArray();
  const cJSON *spec = cJSON_GetObjectItem(obj, "spec");
  const cJSON *sel = cJSON_GetObjectItem(spec, "selector");
  const cJSON *tmpl = cJSON_GetObjectItem(spec, "template");
  const cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(tmpl, "metadata"), "labels");
  const cJSON *tspec = cJSON_GetObjectItem(tmpl, "spec");
  if(!cJSON_IsObject(sel)) {
    rest_cause(causes, "FieldValueRequired", "spec.selector", "Required value");
  } else if(!cJSON_GetArraySize(cJSON_GetObjectItem(sel, "matchLabels")) &&
            !cJSON_GetArraySize(cJSON_GetObjectItem(sel, "matchExpressions"))) {
    rest_cause(causes, "FieldValueInvalid", "spec.selector",
               "Invalid value: {}: empty selector is invalid for daemonset");
  }
  if(!cJSON_IsObject(sel) || !sel_match_label_selector(sel, labels)) {
    char m[1024];
    go_map(labels, m, sizeof(m));
    rest_cause(causes, "FieldValueInvalid", "spec.template.metadata.labels",
               "Invalid value: %s: `selector` does not match template `labels`", m);
  }
  bi_container_checks(causes, tspec, "spec.template.spec");
  const char *rp = ls_str(tspec, "restartPolicy");
  if(strcmp(rp, "Always"))
    rest_cause(causes, "FieldValueNotSupported", "spec.template.spec.restartPolicy",
               "Unsupported value: \"%s\": supported values: \"Always\"", rp);
  if(cJSON_GetObjectItem(tspec, "activeDeadlineSeconds"))
    rest_cause(causes, "FieldValueInvalid", "spec.template.spec.activeDeadlineSeconds",
               "Invalid value: %lld: activeDeadlineSeconds in DaemonSet is not Supported",
               (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(tspec,
                                                                  "activeDeadlineSeconds")));
  nonnegative(causes, spec, "minReadySeconds", "spec.minReadySeconds");
  nonnegative(causes, spec, "revisionHistoryLimit", "spec.revisionHistoryLimit");
  strategy_checks(causes, spec);
  if(old && !strcmp(w->sub, ""))
    bi_immutable(causes, cJSON_GetObjectItem(cJSON_GetObjectItem(old, "spec"), "selector"), sel,
                 "spec.selector");
  return bi_finish(w, obj, causes);
}
