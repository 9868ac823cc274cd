/*
 * admission_match.c: the webhook configurations in force and which webhook a request reaches,
 * as kube-apiserver's generic webhook plugin decides it (ShouldCallHook):
 *   - configurations sorted by name, webhooks in their order; v1 defaults applied
 *     (failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10, reinvocationPolicy
 *     Never, namespaceSelector and objectSelector {});
 *   - namespaceSelector against the request namespace's labels (the object's own for a
 *     Namespace; cluster-scoped requests always match; a missing namespace is a 404 when a rule
 *     matches);
 *   - objectSelector against the object's labels or the old object's;
 *   - rules: operations, apiGroups, apiVersions, resources (a plural, "*", "pods/status", a
 *     star before or after the slash for any resource or subresource), scope;
 *     with matchPolicy Equivalent, a request that no rule matches is matched against the other
 *     served versions of the same custom resource, and the webhook is called in that version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_int.h"
#include "json.h"
#include "log.h"

struct config {
  char kind[64];
  char name[256];
  cJSON *obj;
};

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct config *configs;
static size_t nconfigs;
static struct adm_set *current[2]; /* [0] validating, [1] mutating */

static void set_free(struct adm_set *s)
{
  for(size_t i = 0; s && i < s->n; i++)
    cJSON_Delete(s->hooks[i].def);
  if(s)
    free(s->hooks);
  free(s);
}

struct adm_set *adm_set_get(bool mutating)
{
  pthread_mutex_lock(&cfg_lock);
  struct adm_set *s = current[mutating];
  if(s)
    s->refs++;
  pthread_mutex_unlock(&cfg_lock);
  return s;
}

void adm_set_put(struct adm_set *s)
{
  if(!s)
    return;
  pthread_mutex_lock(&cfg_lock);
  bool last = --s->refs == 0;
  pthread_mutex_unlock(&cfg_lock);
  if(last)
    set_free(s);
}

static int by_name(const void *a, const void *b)
{
  return strcmp(((const struct config *)a)->name, ((const struct config *)b)->name);
}

static void parse_hook(struct adm_hook *h, const struct config *c, const cJSON *w, int index, bool mutating)
{
  h->def = cJSON_Duplicate(w, true);
  h->mutating = mutating;
  snprintf(h->name, sizeof(h->name), "%s", json_get_str(h->def, "name") ? json_get_str(h->def, "name") : "");
  snprintf(h->config, sizeof(h->config), "%s", c->name);
  snprintf(h->uid, sizeof(h->uid), "%s/%s/%d", c->name, h->name, index);
  h->rules = json_get(h->def, "rules");
  h->ns_selector = json_get(h->def, "namespaceSelector");
  h->obj_selector = json_get(h->def, "objectSelector");
  h->client = json_get(h->def, "clientConfig");
  const char *fp = json_get_str(h->def, "failurePolicy"), *mp = json_get_str(h->def, "matchPolicy");
  const char *rp = json_get_str(h->def, "reinvocationPolicy"), *se = json_get_str(h->def, "sideEffects");
  h->fail_open = fp && !strcmp(fp, "Ignore");
  h->equivalent = !mp || strcmp(mp, "Exact");
  h->reinvoke = mutating && rp && !strcmp(rp, "IfNeeded");
  h->side_effects_set = se != NULL;
  h->side_effects_safe = se && (!strcmp(se, "None") || !strcmp(se, "NoneOnDryRun"));
  const cJSON *ts = json_get(h->def, "timeoutSeconds"), *v;
  h->timeout_s = cJSON_IsNumber(ts) && ts->valueint > 0 ? ts->valueint : 10;
  cJSON_ArrayForEach(v, json_get(h->def, "admissionReviewVersions"))
    h->review_v1 = h->review_v1 || (cJSON_IsString(v) && !strcmp(v->valuestring, "v1"));
}

static struct adm_set *build(bool mutating)
{
  const char *kind = mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration";
  struct adm_set *s = calloc(1, sizeof(*s));
  if(!s)
    return NULL;
  s->refs = 1;
  size_t total = 0;
  for(size_t i = 0; i < nconfigs; i++)
    if(!strcmp(configs[i].kind, kind))
      total += (size_t)cJSON_GetArraySize(json_get(configs[i].obj, "webhooks"));
  s->hooks = total ? calloc(total, sizeof(*s->hooks)) : NULL;
  for(size_t i = 0; i < nconfigs && (s->hooks || !total); i++) {
    if(strcmp(configs[i].kind, kind))
      continue;
    int idx = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, json_get(configs[i].obj, "webhooks"))
      parse_hook(&s->hooks[s->n++], &configs[i], w, idx++, mutating);
  }
  return s;
}

void admission_config_set(const char *kind, const char *name, const cJSON *obj)
{
  if(!kind || !name)
    return;
  bool mutating = !strcmp(kind, "MutatingWebhookConfiguration");
  if(!mutating && strcmp(kind, "ValidatingWebhookConfiguration"))
    return;
  pthread_mutex_lock(&cfg_lock);
  size_t i;
  for(i = 0; i < nconfigs && !(!strcmp(configs[i].kind, kind) && !strcmp(configs[i].name, name)); i++)
    ;
  if(i < nconfigs) {
    cJSON_Delete(configs[i].obj);
    configs[i] = configs[--nconfigs];
  }
  if(obj) {
    struct config *v = realloc(configs, (nconfigs + 1) * sizeof(*v));
    if(v) {
      configs = v;
      snprintf(configs[nconfigs].kind, sizeof(configs[0].kind), "%s", kind);
      snprintf(configs[nconfigs].name, sizeof(configs[0].name), "%s", name);
      configs[nconfigs].obj = cJSON_Duplicate(obj, true);
      nconfigs++;
    }
  }
  if(nconfigs)
    qsort(configs, nconfigs, sizeof(*configs), by_name);
  struct adm_set *old = current[mutating];
  current[mutating] = build(mutating);
  bool last = old && --old->refs == 0;
  pthread_mutex_unlock(&cfg_lock);
  if(last)
    set_free(old);
}

/* ---- label selectors ---- */

static bool in_values(const cJSON *values, const char *v)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, values)
    if(cJSON_IsString(x) && !strcmp(x->valuestring, v))
      return true;
  return false;
}

bool selector_matches(const cJSON *sel, const cJSON *labels, bool *bad)
{
  *bad = false;
  if(!sel || cJSON_IsNull(sel))
    return true;
  const cJSON *x;
  cJSON_ArrayForEach(x, json_get(sel, "matchLabels"))
  {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, x->string));
    if(!cJSON_IsString(x) || !v || strcmp(v, x->valuestring))
      return false;
  }
  cJSON_ArrayForEach(x, json_get(sel, "matchExpressions"))
  {
    const char *key = json_get_str(x, "key"), *op = json_get_str(x, "operator");
    const cJSON *values = json_get(x, "values");
    if(!key || !op) {
      *bad = true;
      return false;
    }
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, key));
    bool ok;
    if(!strcmp(op, "In"))
      ok = v && in_values(values, v);
    else if(!strcmp(op, "NotIn"))
      ok = !v || !in_values(values, v);
    else if(!strcmp(op, "Exists"))
      ok = v != NULL;
    else if(!strcmp(op, "DoesNotExist"))
      ok = v == NULL;
    else {
      *bad = true;
      return false;
    }
    if(!ok)
      return false;
  }
  return true;
}

static bool selector_empty(const cJSON *sel)
{
  return !sel || cJSON_IsNull(sel) ||
         (cJSON_GetArraySize(json_get(sel, "matchLabels")) == 0 && cJSON_GetArraySize(json_get(sel, "matchExpressions")) == 0);
}

static const cJSON *labels_of(const cJSON *o)
{
  return json_get(o, "metadata.labels");
}

/* MatchNamespaceSelector: *st gets a Status when the namespace cannot be read. */
static bool ns_match(const struct adm_hook *h, const struct ls_adm_attrs *a, const cJSON *obj, const cJSON *old,
                     cJSON **st)
{
  bool is_ns = !*a->group && !strcmp(a->resource, "namespaces");
  if((!a->namespace || !*a->namespace) && !is_ns)
    return true;
  if(selector_empty(h->ns_selector))
    return true;
  bool bad;
  if(is_ns)
    return selector_matches(h->ns_selector, labels_of(obj ? obj : old), &bad);
  cJSON *ns = layers_core.get_namespace ? layers_core.get_namespace(a->namespace) : NULL;
  if(!ns) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "name", a->namespace);
    cJSON_AddStringToObject(d, "kind", "namespaces");
    *st = ls_status(404, "NotFound", d, "namespaces \"%s\" not found", a->namespace);
    return false;
  }
  bool m = selector_matches(h->ns_selector, labels_of(ns), &bad);
  cJSON_Delete(ns);
  if(bad)
    *st = adm_internal_error("invalid namespaceSelector");
  return m;
}

static bool exact_or_wildcard(const cJSON *items, const char *want)
{
  const cJSON *x;
  cJSON_ArrayForEach(x, items)
    if(cJSON_IsString(x) && (!strcmp(x->valuestring, "*") || !strcmp(x->valuestring, want)))
      return true;
  return false;
}

static bool rule_matches(const cJSON *r, const struct ls_adm_attrs *a, const char *version)
{
  const char *scope = json_get_str(r, "scope");
  bool is_ns = !*a->group && !strcmp(a->resource, "namespaces");
  bool cluster = is_ns || !a->namespace || !*a->namespace;
  if(scope && !strcmp(scope, "Namespaced") && cluster)
    return false;
  if(scope && !strcmp(scope, "Cluster") && !cluster)
    return false;
  if(!exact_or_wildcard(json_get(r, "operations"), a->operation) || !exact_or_wildcard(json_get(r, "apiGroups"), a->group) ||
     !exact_or_wildcard(json_get(r, "apiVersions"), version))
    return false;
  const char *sub = a->subresource ? a->subresource : "";
  const cJSON *x;
  cJSON_ArrayForEach(x, json_get(r, "resources"))
  {
    if(!cJSON_IsString(x))
      continue;
    const char *slash = strchr(x->valuestring, '/');
    size_t rl = slash ? (size_t)(slash - x->valuestring) : strlen(x->valuestring);
    const char *rs = slash ? slash + 1 : "";
    bool res = (rl == 1 && x->valuestring[0] == '*') || (strlen(a->resource) == rl && !strncmp(a->resource, x->valuestring, rl));
    bool subm = !strcmp(rs, "*") || !strcmp(rs, sub);
    if(res && subm)
      return true;
  }
  return false;
}

/* matchObject: a missing object never matches */
static bool obj_matches(const cJSON *sel, const cJSON *o, bool *bad)
{
  *bad = false;
  if(!o || cJSON_IsNull(o))
    return false;
  return selector_matches(sel, labels_of(o), bad);
}

cJSON *adm_should_call(const struct adm_hook *h, const struct ls_adm_attrs *a, const cJSON *obj,
                       const cJSON *old, struct adm_invocation *inv, bool *call)
{
  *call = false;
  cJSON *ns_err = NULL;
  if(!ns_match(h, a, obj, old, &ns_err) && !ns_err)
    return NULL;
  bool bad = false, bad2 = false;
  if(!selector_empty(h->obj_selector) &&
     !(obj_matches(h->obj_selector, obj, &bad) || obj_matches(h->obj_selector, old, &bad2))) {
    if(!bad && !bad2) {
      cJSON_Delete(ns_err);
      return NULL;
    }
  }
  memset(inv, 0, sizeof(*inv));
  inv->h = h;
  const cJSON *r;
  bool found = false;
  cJSON_ArrayForEach(r, h->rules)
    if((found = rule_matches(r, a, a->version)))
      break;
  if(found) {
    snprintf(inv->version, sizeof(inv->version), "%s", a->version);
    snprintf(inv->kind, sizeof(inv->kind), "%s", a->kind);
  } else if(h->equivalent) {
    const struct crd_entry *e = crd_lookup(a->group, a->resource);
    cJSON_ArrayForEach(r, h->rules)
    {
      for(size_t i = 0; e && !found && i < e->nv; i++) {
        if(!e->v[i].served || !strcmp(e->v[i].name, a->version))
          continue;
        if((found = rule_matches(r, a, e->v[i].name))) {
          snprintf(inv->version, sizeof(inv->version), "%s", e->v[i].name);
          snprintf(inv->kind, sizeof(inv->kind), "%s", e->info.kind);
        }
      }
      if(found)
        break;
    }
  }
  if(!found) {
    cJSON_Delete(ns_err);
    return NULL;
  }
  snprintf(inv->group, sizeof(inv->group), "%s", a->group);
  snprintf(inv->resource, sizeof(inv->resource), "%s", a->resource);
  if(ns_err)
    return ns_err;
  if(bad || bad2)
    return adm_internal_error("invalid objectSelector");
  *call = true;
  return NULL;
}
