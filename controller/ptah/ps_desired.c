/* The desired SQL of a PtahSchema (ps.h): read from the spec (inline, or the user's ConfigMap
 * from the cache), hashed, and copied into an immutable ConfigMap named after its checksum that
 * the operation Jobs mount, so a Plan and the Apply of its plan read the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "json.h"
#include "log.h"
#include "ps.h"
#include "strbuf.h"

void ps_desired_release(struct ps_desired *d)
{
  free(d->sql);
  d->sql = NULL;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Everything a plan depends on besides the catalog: another value computes a new plan. */
static gw_rc inputs(struct ps *p, struct ps_desired *d)
{
  char binding[640];
  op_binding(p->obj, p->o, binding, sizeof(binding));
  const cJSON *pt = json_get(p->obj, "spec.policy.protectedTables");
  size_t n = (size_t)cJSON_GetArraySize(pt), k = 0;
  const char **names = calloc(n ? n : 1, sizeof(*names));
  if(!names)
    return GW_ENOMEM;
  const cJSON *x;
  cJSON_ArrayForEach(x, pt)
    if(cJSON_IsString(x))
      names[k++] = x->valuestring;
  qsort(names, k, sizeof(*names), cmp_str);
  struct strbuf sb;
  strbuf_init(&sb, 1u << 20);
  const cJSON *gen = json_get(p->obj, "metadata.generation");
  gw_rc rc = strbuf_addf(&sb, "ptah-schema-inputs/1\ndesired %s\nbinding %s\ngeneration %lld\n",
                         d->checksum, binding,
                         cJSON_IsNumber(gen) ? (long long)gen->valuedouble : 0);
  for(size_t i = 0; !rc && i < k; i++)
    rc = strbuf_addf(&sb, "protected %s\n", names[i]);
  if(!rc)
    rc = digest_sha256(sb.buf ? sb.buf : "", sb.len, d->inputs);
  strbuf_release(&sb);
  free(names);
  return rc;
}

void ps_copy_name(const char *name, const char *checksum, char *buf, size_t len)
{
  const char *hex = strncmp(checksum, "sha256:", 7) ? checksum : checksum + 7;
  snprintf(buf, len, "%.232s-desired-%.12s", name, hex);
}

gw_rc ps_desired_read(struct ps *p, struct ps_desired *d)
{
  memset(d, 0, sizeof(*d));
  const char *sql = json_get_str(p->obj, "spec.schema.sql");
  cJSON *cm = NULL;
  if(!sql) {
    const char *name = json_get_str(p->obj, "spec.schema.configMapRef.name");
    const char *key = json_get_str(p->obj, "spec.schema.configMapRef.key");
    if(!key)
      key = PS_DESIRED_KEY;
    struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_CONFIGMAPS);
    char k[512];
    snprintf(k, sizeof(k), "%s/%s", p->ns, name ? name : "");
    cm = cache && name ? informer_get(cache, k) : NULL;
    sql = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json_get(cm, "data"), key));
    if(!cm)
      snprintf(d->why, sizeof(d->why), "ConfigMap \"%s\" (spec.schema.configMapRef) does not "
               "exist in namespace \"%s\": create it with the desired schema under key \"%s\"; "
               "nothing is planned until it exists", name ? name : "", p->ns, key);
    else if(!sql)
      snprintf(d->why, sizeof(d->why), "ConfigMap \"%s\" (spec.schema.configMapRef) has no key "
               "\"%s\" in data: put the desired schema there, or name the key that holds it",
               name ? name : "", key);
  }
  gw_rc rc = GW_OK;
  if(sql) {
    d->sql = strdup(sql);
    rc = d->sql ? digest_sha256(sql, strlen(sql), d->checksum) : GW_ENOMEM;
    if(!rc)
      rc = inputs(p, d);
    if(!rc) {
      ps_copy_name(p->name, d->checksum, d->copy, sizeof(d->copy));
      d->found = true;
    }
  }
  cJSON_Delete(cm);
  return rc;
}

gw_rc ps_desired_copy(struct ps *p, const struct ps_desired *d, char *why, size_t len)
{
  why[0] = '\0';
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_CONFIGMAPS);
  char k[512];
  snprintf(k, sizeof(k), "%s/%s", p->ns, d->copy);
  cJSON *have = cache ? informer_get(cache, k) : NULL;
  const char *text =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json_get(have, "data"), PS_DESIRED_KEY));
  bool same = text && !strcmp(text, d->sql);
  cJSON_Delete(have);
  if(same)
    return GW_OK;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "v1");
  cJSON_AddStringToObject(o, "kind", "ConfigMap");
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", d->copy);
  cJSON_AddStringToObject(md, "namespace", p->ns);
  cJSON *labels = cJSON_AddObjectToObject(md, "labels");
  cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", "godwit");
  cJSON_AddStringToObject(labels, PS_LABEL, p->name);
  cJSON *ref = cJSON_CreateObject();
  cJSON_AddStringToObject(ref, "apiVersion", "ptah.run/v1");
  cJSON_AddStringToObject(ref, "kind", "PtahSchema");
  cJSON_AddStringToObject(ref, "name", p->name);
  cJSON_AddStringToObject(ref, "uid", p->uid);
  cJSON_AddTrueToObject(ref, "controller");
  cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(md, "ownerReferences"), ref);
  cJSON_AddTrueToObject(o, "immutable");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "data"), PS_DESIRED_KEY, d->sql);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(p->ctx->kube, &KUBE_CONFIGMAPS, p->ns, o, false, NULL, &st);
  cJSON_Delete(o);
  if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists")) {
    /* made a moment ago (the cache lags), or squatted: read it to tell */
    cJSON *got = NULL;
    struct kube_status g;
    kube_status_init(&g);
    rc = kube_get(p->ctx->kube, &KUBE_CONFIGMAPS, p->ns, d->copy, &got, &g);
    kube_status_release(&g);
    text = cJSON_GetStringValue(
      cJSON_GetObjectItemCaseSensitive(json_get(got, "data"), PS_DESIRED_KEY));
    if(!rc && !(text && !strcmp(text, d->sql))) {
      snprintf(why, len, "ConfigMap \"%s\" exists and does not hold this desired schema: godwit "
               "names the copy it makes for the operation Jobs after the schema's checksum; "
               "delete that ConfigMap", d->copy);
      rc = GW_ECONFLICT;
    }
    cJSON_Delete(got);
  } else if(rc) {
    snprintf(why, len, "cannot create ConfigMap \"%s\" (the desired schema the operation Jobs "
             "mount): %d %s %s", d->copy, st.code, st.reason, st.message);
  }
  kube_status_release(&st);
  return rc;
}

struct prune {
  struct ps *p;
  const char *keep[3];
  char names[32][254];
  size_t n;
};

static void each_copy(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct prune *pr = ctx;
  const cJSON *l = json_get(obj, "metadata.labels");
  const char *owner = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, PS_LABEL));
  const char *name = json_get_str(obj, "metadata.name");
  if(!owner || strcmp(owner, pr->p->name) || !name || pr->n >= 32)
    return;
  for(size_t i = 0; i < 3; i++)
    if(pr->keep[i] && !strcmp(pr->keep[i], name))
      return;
  snprintf(pr->names[pr->n++], sizeof(pr->names[0]), "%s", name);
}

void ps_desired_prune(struct ps *p, const char *keep)
{
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_CONFIGMAPS);
  if(!cache)
    return;
  char plan[254] = "";
  const char *sum = json_get_str(p->obj, "status.plan.desiredChecksum");
  if(sum)
    ps_copy_name(p->name, sum, plan, sizeof(plan));
  struct prune pr = { p, { keep, *plan ? plan : NULL, NULL }, { { 0 } }, 0 };
  informer_each(cache, p->ns, each_copy, &pr);
  for(size_t i = 0; i < pr.n; i++) {
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_delete(p->ctx->kube, &KUBE_CONFIGMAPS, p->ns, pr.names[i], NULL, NULL, &st);
    if(rc && rc != GW_ENOTFOUND)
      log_kv(LOG_WARN, "cannot delete an old desired-schema ConfigMap", "key", p->ctx->key,
             "configmap", pr.names[i], "error", gw_strerror(rc), LOG_END);
    kube_status_release(&st);
  }
}
