/* The podMetadata checker: syntax, reserved prefixes, admin policy (see podmeta.h). */
#include "api/podmeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/format.h"
#include "api/schema.h"
#include "json.h"

/* Most specific first, so the message names the prefix the key really used. */
static const struct {
  const char *domain;
  const char *why;
} reserved[] = {
  { "operator.ptah.run", "Ptah's operator keeps its own records under it" },
  { "ptah.run", "Ptah labels its operations under it" },
  { "kubernetes.io", "Kubernetes reserves it for its own components" },
  { "k8s.io", "Kubernetes reserves it for its own components" },
  { "godwit.dev", "godwit labels and stamps its runner Pods under it" },
};

/* prefix (of length n) is domain or a subdomain of it. */
static bool under(const char *prefix, size_t n, const char *domain)
{
  size_t d = strlen(domain);
  if(n == d)
    return !memcmp(prefix, domain, n);
  return n > d && prefix[n - d - 1] == '.' && !memcmp(prefix + n - d, domain, d);
}

static int reserved_index(const char *key)
{
  const char *slash = strchr(key, '/');
  if(!slash)
    return -1;
  size_t n = (size_t)(slash - key);
  for(size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
    if(under(key, n, reserved[i].domain))
      return (int)i;
  return -1;
}

const char *podmeta_reserved_prefix(const char *key)
{
  int i = reserved_index(key);
  return i < 0 ? NULL : reserved[i].domain;
}

/* The name part of a key ("team" of "example.com/team"), for the suggestion. */
static const char *name_part(const char *key)
{
  const char *slash = strchr(key, '/');
  return slash ? slash + 1 : key;
}

static void check_entry(const cJSON *kv, bool label, const char *field,
                        const struct policy_meta_rules *rules, struct ferrs *e)
{
  const char *key = kv->string;
  const char *why = fmt_check_qualified_name(key);
  if(why) {
    ferrs_add(e, FERR_INVALID, field, "key %s", why);
    return;
  }
  if(!cJSON_IsString(kv)) {
    ferrs_add(e, FERR_TYPE, field, "must be a string, got %s", json_type_name(kv));
    return;
  }
  const char *value = kv->valuestring;
  if(label && (why = fmt_check_label_value(value))) {
    char *got = json_preview(kv, 80);
    ferrs_add(e, FERR_INVALID, field, "%s, got %s", why, got ? got : "?");
    free(got);
  }
  int r = reserved_index(key);
  if(r >= 0) {
    ferrs_add(e, FERR_FORBIDDEN, field,
              "key \"%s\" uses the reserved prefix \"%s/\" (%s); use a key under your own "
              "domain, such as \"example.com/%s\"",
              key, reserved[r].domain, reserved[r].why, name_part(key));
    return;
  }
  char buf[512];
  if(rules && (why = policy_meta_check(rules, key, value, buf, sizeof(buf)))) {
    if(!strncmp(why, "denied", 6))
      ferrs_add_policy(e, field, "%s %s=\"%.80s\" is %s; remove it, or ask the cluster admin "
                       "to change the policy", label ? "label" : "annotation", key, value, why);
    else
      ferrs_add_policy(e, field, "%s %s=\"%.80s\" is %s", label ? "label" : "annotation", key,
                       value, why);
  }
}

static void check_map(const cJSON *m, bool label, const char *path,
                      const struct policy_meta_rules *rules, struct ferrs *e)
{
  if(!cJSON_IsObject(m))
    return;
  char base[512], field[1024];
  path_join(base, sizeof(base), path, label ? "labels" : "annotations");
  size_t total = 0;
  for(const cJSON *kv = m->child; kv; kv = kv->next) {
    snprintf(field, sizeof(field), "%s[%s]", base, kv->string);
    check_entry(kv, label, field, rules, e);
    total += strlen(kv->string) + (cJSON_IsString(kv) ? strlen(kv->valuestring) : 0);
  }
  if(!label && total > PODMETA_MAX_ANNOTATION_BYTES)
    ferrs_add(e, FERR_TOO_LONG, base,
              "may hold at most %d bytes of keys and values in total (256 KiB, as Kubernetes "
              "enforces), got %zu; put large data in a ConfigMap instead",
              PODMETA_MAX_ANNOTATION_BYTES, total);
}

void podmeta_check(const cJSON *podMetadata, const char *path, const struct policy *p,
                   struct ferrs *e)
{
  if(!cJSON_IsObject(podMetadata))
    return;
  check_map(cJSON_GetObjectItemCaseSensitive(podMetadata, "labels"), true, path,
            p ? &p->labels : NULL, e);
  check_map(cJSON_GetObjectItemCaseSensitive(podMetadata, "annotations"), false, path,
            p ? &p->annotations : NULL, e);
}

void podmeta_check_image(const char *image, const char *path, const struct policy *p,
                         struct ferrs *e)
{
  if(!image || !p || policy_image_allowed(p, image))
    return;
  char list[512] = "";
  size_t off = 0;
  for(size_t i = 0; i < p->nregistries && off < sizeof(list); i++)
    off += (size_t)snprintf(list + off, sizeof(list) - off, "%s\"%s\"", i ? ", " : "",
                            p->registries[i]);
  ferrs_add_policy(e, path,
                   "image \"%.200s\" is not from a registry the admission policy allows; use an "
                   "image under %s, or ask the cluster admin to allow its registry",
                   image, list);
}

const struct sch_field podmeta_fields[] = {
  { .name = "labels", .type = SCH_MAP, .item = SCH_STRING, .key_format = &fmt_qualified_name,
    .format = &fmt_label_value, .max_items = 64,
    .desc = "Labels added to runner Pods, for example what a namespace policy or a service mesh "
            "requires. Keys under ptah.run/, operator.ptah.run/, kubernetes.io/, k8s.io/ and "
            "godwit.dev/ (and their subdomains) are reserved; the admission policy may restrict "
            "the rest." },
  { .name = "annotations", .type = SCH_MAP, .item = SCH_STRING,
    .key_format = &fmt_qualified_name, .max_items = 64,
    .desc = "Annotations added to runner Pods, at most 256 KiB of keys and values. The same "
            "reserved prefixes and admission policy apply as for labels." },
  { 0 }
};
