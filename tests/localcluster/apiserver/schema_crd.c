/*
 * schema_crd.c: a CustomResourceDefinition (apiextensions.k8s.io/v1) checked as
 * ValidateCustomResourceDefinition does, with its messages and field paths (the paths of the
 * internal type, as kube reports them: spec.conversion.webhookClientConfig), and the entry
 * filled with the v1 defaults (singular = lower-case kind, listKind = kind + "List", strategy
 * None, service port 443).
 *
 * Covered: metadata.name = plural.group; group; names (DNS-1035 labels, kind/listKind); scope;
 * versions (names, unique, exactly one storage, a schema each, checked by schema_structural.c);
 * printer columns; conversion. Not covered: CEL rules (x-kubernetes-validations), the structural
 * "completeness" of value validations, and the validation ratcheting of updates.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layers.h"

static char *pf(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *pf(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if(vasprintf(&s, f, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

static const char *str(const cJSON *o, const char *k)
{
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

/* ---- name syntax (k8s.io/apimachinery/pkg/util/validation) ---- */

static bool dns_label(const char *s, bool first_alpha)
{
  size_t n = strlen(s);
  if(!n || n > 63)
    return false;
  if(first_alpha ? !islower((unsigned char)s[0]) : !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
    return false;
  for(size_t i = 0; i < n; i++)
    if(!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
      return false;
  return s[n - 1] != '-';
}

static const char DNS1035_MSG[] =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
  "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
  "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
static const char DNS1123_SUB_MSG[] =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
  "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/* IsDNS1035Label's errors joined by "," into buf; false when valid. */
static bool dns1035_errs(const char *s, char *buf, size_t n)
{
  buf[0] = '\0';
  size_t len = strlen(s);
  if(len > 63)
    snprintf(buf, n, "must be no more than 63 characters");
  char tmp[64];
  snprintf(tmp, sizeof(tmp), "%.*s", (int)(len > 63 ? 63 : len), s);
  bool ok = len <= 63 ? dns_label(s, true) : dns_label(tmp, true);
  if(!ok || len > 63) {
    size_t used = strlen(buf);
    if(!ok)
      snprintf(buf + used, n - used, "%s%s", used ? "," : "", DNS1035_MSG);
    return true;
  }
  return false;
}

static bool dns1123_subdomain(const char *s)
{
  size_t n = strlen(s);
  if(!n || n > 253)
    return false;
  char *copy = strdup(s), *save = NULL;
  bool ok = copy != NULL && s[0] != '.' && s[n - 1] != '.' && !strstr(s, "..");
  for(char *p = ok ? strtok_r(copy, ".", &save) : NULL; p && ok; p = strtok_r(NULL, ".", &save))
    ok = dns_label(p, false);
  free(copy);
  return ok;
}

static void lower(char *dst, size_t n, const char *src)
{
  size_t i = 0;
  for(; src[i] && i + 1 < n; i++)
    dst[i] = (char)tolower((unsigned char)src[i]);
  dst[i] = '\0';
}

static void name_check(cJSON *causes, const char *field, const char *v, bool mixed)
{
  char low[300], errs[700];
  lower(low, sizeof(low), v);
  if(!*v || !dns1035_errs(mixed ? low : v, errs, sizeof(errs)))
    return;
  char *detail = mixed ? pf("may have mixed case, but should otherwise match: %s", errs) : strdup(errs);
  ferr_invalid_str(causes, field, v, detail);
  free(detail);
}

static void copy_name(char *dst, size_t n, const char *src)
{
  snprintf(dst, n, "%s", src);
}

static void check_names(const cJSON *names, struct crd_entry *e, cJSON *causes)
{
  struct ls_crd_info *in = &e->info;
  copy_name(in->plural, sizeof(in->plural), str(names, "plural"));
  copy_name(in->kind, sizeof(in->kind), str(names, "kind"));
  copy_name(in->singular, sizeof(in->singular), str(names, "singular"));
  if(!*in->singular)
    lower(in->singular, sizeof(in->singular), in->kind);
  copy_name(in->list_kind, sizeof(in->list_kind), str(names, "listKind"));
  if(!*in->list_kind && *in->kind)
    snprintf(in->list_kind, sizeof(in->list_kind), "%sList", in->kind);
  if(!*in->plural)
    ferr_required(causes, "spec.names.plural", NULL);
  if(!*in->kind)
    ferr_required(causes, "spec.names.kind", NULL);
  if(!*in->list_kind)
    ferr_required(causes, "spec.names.listKind", NULL);
  name_check(causes, "spec.names.plural", in->plural, false);
  name_check(causes, "spec.names.singular", in->singular, false);
  name_check(causes, "spec.names.kind", in->kind, true);
  name_check(causes, "spec.names.listKind", in->list_kind, true);
  const cJSON *k;
  int i = 0;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(names, "shortNames"))
  {
    char f[64];
    snprintf(f, sizeof(f), "spec.names.shortNames[%d]", i++);
    const char *s = cJSON_GetStringValue(k) ? k->valuestring : "";
    char errs[700];
    if(dns1035_errs(s, errs, sizeof(errs)))
      ferr_invalid_str(causes, f, s, errs);
    if(in->nshort < 8)
      copy_name(in->short_names[in->nshort++], sizeof(in->short_names[0]), s);
  }
  if(*in->kind && !strcmp(in->kind, in->list_kind))
    ferr_invalid_str(causes, "spec.names.listKind", in->list_kind, "kind and listKind may not be the same");
  i = 0;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(names, "categories"))
  {
    char f[64];
    snprintf(f, sizeof(f), "spec.names.categories[%d]", i++);
    const char *s = cJSON_GetStringValue(k) ? k->valuestring : "";
    char errs[700];
    if(dns1035_errs(s, errs, sizeof(errs)))
      ferr_invalid_str(causes, f, s, errs);
    if(in->ncategories < 8)
      copy_name(in->categories[in->ncategories++], sizeof(in->categories[0]), s);
  }
}

/* ---- versions, columns, conversion ---- */

static void check_columns(const cJSON *cols, const char *path, cJSON *causes)
{
  static const char *const types[] = { "boolean", "date", "integer", "number", "string" };
  static const char *const formats[] = { "byte", "date", "date-time", "double", "float", "int32", "int64", "password" };
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cols)
  {
    char f[400];
    if(!*str(c, "name")) {
      snprintf(f, sizeof(f), "%.300s[%d].name", path, i);
      ferr_required(causes, f, NULL);
    }
    const char *ty = str(c, "type");
    snprintf(f, sizeof(f), "%.300s[%d].type", path, i);
    bool ok = false;
    for(size_t k = 0; k < 5; k++)
      ok = ok || !strcmp(ty, types[k]);
    if(!*ty)
      ferr_required(causes, f, "must be one of boolean,date,integer,number,string");
    else if(!ok)
      ferr_not_supported(causes, f, cJSON_GetObjectItemCaseSensitive(c, "type"), types, 5);
    const char *fm = str(c, "format");
    ok = !*fm;
    for(size_t k = 0; k < 8; k++)
      ok = ok || !strcmp(fm, formats[k]);
    if(!ok) {
      snprintf(f, sizeof(f), "%.300s[%d].format", path, i);
      ferr_not_supported(causes, f, cJSON_GetObjectItemCaseSensitive(c, "format"), formats, 8);
    }
    if(!*str(c, "jsonPath")) {
      snprintf(f, sizeof(f), "%.300s[%d].jsonPath", path, i);
      ferr_required(causes, f, NULL);
    }
    i++;
  }
}

static void check_versions(const cJSON *spec, struct crd_entry *e, cJSON *causes)
{
  const cJSON *versions = cJSON_GetObjectItemCaseSensitive(spec, "versions"), *v;
  int nstorage = 0, i = 0;
  bool unique = true;
  cJSON_ArrayForEach(v, versions)
  {
    const char *name = str(v, "name");
    char f[200], errs[700];
    for(size_t k = 0; k < e->nv; k++)
      if(!strcmp(e->v[k].name, name))
        unique = false;
    snprintf(f, sizeof(f), "spec.versions[%d].name", i);
    if(dns1035_errs(name, errs, sizeof(errs)))
      ferr_invalid_str(causes, f, name, errs);
    bool storage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "storage"));
    nstorage += storage;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "schema"), "openAPIV3Schema");
    snprintf(f, sizeof(f), "spec.versions[%d].schema.openAPIV3Schema", i);
    if(!cJSON_IsObject(schema))
      ferr_required(causes, f, "schemas are required");
    else
      crd_check_schema(e, schema, f, causes);
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(v, "additionalPrinterColumns");
    char cf[200];
    snprintf(cf, sizeof(cf), "spec.versions[%d].additionalPrinterColumns", i);
    check_columns(cols, cf, causes);
    if(e->nv < sizeof(e->v) / sizeof(e->v[0])) {
      struct crd_version_ent *ve = &e->v[e->nv];
      struct ls_crd_version *iv = &e->info.versions[e->nv];
      copy_name(ve->name, sizeof(ve->name), name);
      copy_name(iv->name, sizeof(iv->name), name);
      ve->served = iv->served = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "served"));
      ve->storage = iv->storage = storage;
      iv->status_subresource = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "subresources"), "status") != NULL;
      ve->schema = cJSON_IsObject(schema) ? schema : NULL;
      ve->columns = cJSON_GetArraySize(cols) > 0 ? cols : e->default_columns;
      e->nv++;
      e->info.nversions = e->nv;
    }
    i++;
  }
  /* defaults are checked once every pattern is compiled */
  for(size_t k = 0; k < e->nv; k++) {
    char f[200];
    snprintf(f, sizeof(f), "spec.versions[%zu].schema.openAPIV3Schema", k);
    if(e->v[k].schema)
      crd_check_defaults(e, e->v[k].schema, f, causes);
  }
  if(!unique)
    ferr_invalid(causes, "spec.versions", versions, "must contain unique version names");
  if(nstorage != 1)
    ferr_invalid(causes, "spec.versions", versions, "must have exactly one version marked as storage version");
}

static void check_conversion(const cJSON *spec, struct crd_entry *e, cJSON *causes)
{
  const cJSON *conv = cJSON_GetObjectItemCaseSensitive(spec, "conversion");
  const char *strategy = *str(conv, "strategy") ? str(conv, "strategy") : "None";
  if(strcmp(strategy, "None") && strcmp(strategy, "Webhook")) {
    static const char *const ok[] = { "None", "Webhook" };
    ferr_not_supported(causes, "spec.conversion.strategy", cJSON_GetObjectItemCaseSensitive(conv, "strategy"), ok, 2);
    return;
  }
  if(!strcmp(strategy, "None")) {
    if(cJSON_GetObjectItemCaseSensitive(conv, "webhook"))
      ferr_forbidden(causes, "spec.conversion.webhookClientConfig", "should not be set when strategy is not set to Webhook");
    return;
  }
  e->conversion_webhook = true;
  const cJSON *wh = cJSON_GetObjectItemCaseSensitive(conv, "webhook");
  const cJSON *cc = cJSON_GetObjectItemCaseSensitive(wh, "clientConfig");
  bool v1 = false;
  const cJSON *k;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(wh, "conversionReviewVersions"))
    v1 = v1 || (cJSON_IsString(k) && (!strcmp(k->valuestring, "v1") || !strcmp(k->valuestring, "v1beta1")));
  if(!cJSON_IsObject(cc)) {
    ferr_required(causes, "spec.conversion.webhookClientConfig", "required when strategy is set to Webhook");
    return;
  }
  if(!v1)
    ferr_required(causes, "spec.conversion.conversionReviewVersions", "must include at least one of v1, v1beta1");
  const cJSON *svc = cJSON_GetObjectItemCaseSensitive(cc, "service");
  const char *url = str(cc, "url");
  if((*url != 0) == (svc != NULL))
    ferr_required(causes, "spec.conversion.webhookClientConfig", "exactly one of url or service is required");
  if(svc) {
    if(!*str(svc, "namespace"))
      ferr_required(causes, "spec.conversion.webhookClientConfig.service.namespace", "service namespace is required");
    if(!*str(svc, "name"))
      ferr_required(causes, "spec.conversion.webhookClientConfig.service.name", "service name is required");
    const char *path = str(svc, "path");
    if(*path && *path != '/')
      ferr_invalid_str(causes, "spec.conversion.webhookClientConfig.service.path", path, "must start with a '/'");
  }
  if(*url && strncmp(url, "https://", 8))
    ferr_invalid_str(causes, "spec.conversion.webhookClientConfig.url", url, "'https' is the only allowed URL scheme");
  e->conversion_client = cc;
}

void crd_check(const cJSON *crd, struct crd_entry *e, cJSON *causes)
{
  struct ls_crd_info *in = &e->info;
  const char *name = str(cJSON_GetObjectItemCaseSensitive(crd, "metadata"), "name");
  copy_name(in->name, sizeof(in->name), name);
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
  const char *group = str(spec, "group");
  copy_name(in->group, sizeof(in->group), group);
  check_names(cJSON_GetObjectItemCaseSensitive(spec, "names"), e, causes);
  char want[400];
  snprintf(want, sizeof(want), "%s.%s", in->plural, group);
  if(!*name)
    ferr_required(causes, "metadata.name", "name or generateName is required");
  else if(strcmp(name, want))
    ferr_invalid_str(causes, "metadata.name", name, "must be spec.names.plural+\".\"+spec.group");
  if(!*group)
    ferr_required(causes, "spec.group", NULL);
  else if(!dns1123_subdomain(group))
    ferr_invalid_str(causes, "spec.group", group, DNS1123_SUB_MSG);
  else if(!strchr(group, '.'))
    ferr_invalid_str(causes, "spec.group", group, "should be a domain with at least one dot");
  const char *scope = str(spec, "scope");
  static const char *const scopes[] = { "Cluster", "Namespaced" };
  if(!*scope)
    ferr_required(causes, "spec.scope", NULL);
  else if(strcmp(scope, "Cluster") && strcmp(scope, "Namespaced"))
    ferr_not_supported(causes, "spec.scope", cJSON_GetObjectItemCaseSensitive(spec, "scope"), scopes, 2);
  in->namespaced = !strcmp(scope, "Namespaced");
  e->default_columns = cJSON_Parse("[{\"name\":\"Age\",\"type\":\"date\",\"description\":\"CreationTimestamp is a "
                                   "timestamp representing the server time when this object was created.\","
                                   "\"jsonPath\":\".metadata.creationTimestamp\"}]");
  if(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "versions")) == 0)
    ferr_required(causes, "spec.versions", "must have exactly one version marked as storage version");
  else
    check_versions(spec, e, causes);
  check_conversion(spec, e, causes);
}
