/* protobuf.c: request bodies in Kubernetes' protobuf encoding, which kubectl 1.32's typed
 * clients send for `kubectl create configmap|secret|namespace|serviceaccount|job|deployment`
 * and `kubectl run`: the "k8s\0" envelope (runtime.Unknown: typeMeta, raw) and the fields of
 * those kinds (k8s.io/api generated.proto), decoded to the JSON the rest of the server reads.
 * Fields this table does not name are skipped. Answers are always JSON, which those clients
 * accept. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum pk { P_STR, P_BYTES, P_BOOL, P_INT, P_MSG, P_INLINE, P_MAP_SS, P_MAP_SB, P_MAP_SQ, P_TIME,
          P_QTY, P_IOS };

struct pdesc;
struct pf {
  int num;
  const char *name;
  enum pk kind;
  bool repeated;
  const struct pdesc *msg;
};
struct pdesc {
  const struct pf *f;
  size_t n;
};
#define DESC(name, ...)                                                                        \
  static const struct pf name##_f[] = { __VA_ARGS__ };                                         \
  static const struct pdesc name = { name##_f, sizeof(name##_f) / sizeof(name##_f[0]) }

DESC(owner_ref, { 5, "apiVersion", P_STR, 0, 0 }, { 1, "kind", P_STR, 0, 0 },
     { 3, "name", P_STR, 0, 0 }, { 4, "uid", P_STR, 0, 0 }, { 6, "controller", P_BOOL, 0, 0 },
     { 7, "blockOwnerDeletion", P_BOOL, 0, 0 });
DESC(object_meta, { 1, "name", P_STR, 0, 0 }, { 2, "generateName", P_STR, 0, 0 },
     { 3, "namespace", P_STR, 0, 0 }, { 5, "uid", P_STR, 0, 0 },
     { 6, "resourceVersion", P_STR, 0, 0 }, { 7, "generation", P_INT, 0, 0 },
     { 11, "labels", P_MAP_SS, 0, 0 }, { 12, "annotations", P_MAP_SS, 0, 0 },
     { 13, "ownerReferences", P_MSG, 1, &owner_ref }, { 14, "finalizers", P_STR, 1, 0 });
DESC(local_ref, { 1, "name", P_STR, 0, 0 });
DESC(object_ref, { 1, "kind", P_STR, 0, 0 }, { 2, "namespace", P_STR, 0, 0 },
     { 3, "name", P_STR, 0, 0 }, { 4, "uid", P_STR, 0, 0 }, { 5, "apiVersion", P_STR, 0, 0 });
DESC(key_sel, { 1, "", P_INLINE, 0, &local_ref }, { 2, "key", P_STR, 0, 0 },
     { 3, "optional", P_BOOL, 0, 0 });
DESC(field_sel, { 1, "apiVersion", P_STR, 0, 0 }, { 2, "fieldPath", P_STR, 0, 0 });
DESC(env_source, { 1, "fieldRef", P_MSG, 0, &field_sel },
     { 3, "configMapKeyRef", P_MSG, 0, &key_sel }, { 4, "secretKeyRef", P_MSG, 0, &key_sel });
DESC(env_var, { 1, "name", P_STR, 0, 0 }, { 2, "value", P_STR, 0, 0 },
     { 3, "valueFrom", P_MSG, 0, &env_source });
DESC(env_from_ref, { 1, "", P_INLINE, 0, &local_ref }, { 2, "optional", P_BOOL, 0, 0 });
DESC(env_from, { 1, "prefix", P_STR, 0, 0 }, { 2, "configMapRef", P_MSG, 0, &env_from_ref },
     { 3, "secretRef", P_MSG, 0, &env_from_ref });
DESC(port, { 1, "name", P_STR, 0, 0 }, { 2, "hostPort", P_INT, 0, 0 },
     { 3, "containerPort", P_INT, 0, 0 }, { 4, "protocol", P_STR, 0, 0 });
DESC(resources, { 1, "limits", P_MAP_SQ, 0, 0 }, { 2, "requests", P_MAP_SQ, 0, 0 });
DESC(mount, { 1, "name", P_STR, 0, 0 }, { 2, "readOnly", P_BOOL, 0, 0 },
     { 3, "mountPath", P_STR, 0, 0 }, { 4, "subPath", P_STR, 0, 0 });
DESC(container, { 1, "name", P_STR, 0, 0 }, { 2, "image", P_STR, 0, 0 },
     { 3, "command", P_STR, 1, 0 }, { 4, "args", P_STR, 1, 0 }, { 5, "workingDir", P_STR, 0, 0 },
     { 6, "ports", P_MSG, 1, &port }, { 7, "env", P_MSG, 1, &env_var },
     { 8, "resources", P_MSG, 0, &resources }, { 9, "volumeMounts", P_MSG, 1, &mount },
     { 13, "terminationMessagePath", P_STR, 0, 0 }, { 14, "imagePullPolicy", P_STR, 0, 0 },
     { 16, "stdin", P_BOOL, 0, 0 }, { 17, "stdinOnce", P_BOOL, 0, 0 }, { 18, "tty", P_BOOL, 0, 0 },
     { 19, "envFrom", P_MSG, 1, &env_from }, { 20, "terminationMessagePolicy", P_STR, 0, 0 });
DESC(empty_dir, { 1, "medium", P_STR, 0, 0 }, { 2, "sizeLimit", P_QTY, 0, 0 });
DESC(secret_vol, { 1, "secretName", P_STR, 0, 0 }, { 3, "defaultMode", P_INT, 0, 0 });
DESC(cm_vol, { 1, "", P_INLINE, 0, &local_ref }, { 3, "defaultMode", P_INT, 0, 0 });
DESC(pvc_vol, { 1, "claimName", P_STR, 0, 0 }, { 2, "readOnly", P_BOOL, 0, 0 });
DESC(vol_source, { 2, "emptyDir", P_MSG, 0, &empty_dir }, { 6, "secret", P_MSG, 0, &secret_vol },
     { 10, "persistentVolumeClaim", P_MSG, 0, &pvc_vol }, { 19, "configMap", P_MSG, 0, &cm_vol });
DESC(volume, { 1, "name", P_STR, 0, 0 }, { 2, "", P_INLINE, 0, &vol_source });
DESC(pod_spec, { 1, "volumes", P_MSG, 1, &volume }, { 2, "containers", P_MSG, 1, &container },
     { 3, "restartPolicy", P_STR, 0, 0 }, { 4, "terminationGracePeriodSeconds", P_INT, 0, 0 },
     { 5, "activeDeadlineSeconds", P_INT, 0, 0 }, { 6, "dnsPolicy", P_STR, 0, 0 },
     { 7, "nodeSelector", P_MAP_SS, 0, 0 }, { 8, "serviceAccountName", P_STR, 0, 0 },
     { 9, "serviceAccount", P_STR, 0, 0 }, { 10, "nodeName", P_STR, 0, 0 },
     { 11, "hostNetwork", P_BOOL, 0, 0 }, { 15, "imagePullSecrets", P_MSG, 1, &local_ref },
     { 20, "initContainers", P_MSG, 1, &container },
     { 21, "automountServiceAccountToken", P_BOOL, 0, 0 });
DESC(pod_template, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &pod_spec });
DESC(label_req, { 1, "key", P_STR, 0, 0 }, { 2, "operator", P_STR, 0, 0 },
     { 3, "values", P_STR, 1, 0 });
DESC(label_sel, { 1, "matchLabels", P_MAP_SS, 0, 0 },
     { 2, "matchExpressions", P_MSG, 1, &label_req });
DESC(job_spec, { 1, "parallelism", P_INT, 0, 0 }, { 2, "completions", P_INT, 0, 0 },
     { 3, "activeDeadlineSeconds", P_INT, 0, 0 }, { 4, "selector", P_MSG, 0, &label_sel },
     { 5, "manualSelector", P_BOOL, 0, 0 }, { 6, "template", P_MSG, 0, &pod_template },
     { 7, "backoffLimit", P_INT, 0, 0 }, { 8, "ttlSecondsAfterFinished", P_INT, 0, 0 },
     { 9, "completionMode", P_STR, 0, 0 }, { 10, "suspend", P_BOOL, 0, 0 });
DESC(deploy_spec, { 1, "replicas", P_INT, 0, 0 }, { 2, "selector", P_MSG, 0, &label_sel },
     { 3, "template", P_MSG, 0, &pod_template });
DESC(ns_spec, { 1, "finalizers", P_STR, 1, 0 });

DESC(configmap, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "data", P_MAP_SS, 0, 0 },
     { 3, "binaryData", P_MAP_SB, 0, 0 }, { 4, "immutable", P_BOOL, 0, 0 });
DESC(secret, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "data", P_MAP_SB, 0, 0 },
     { 3, "type", P_STR, 0, 0 }, { 4, "stringData", P_MAP_SS, 0, 0 },
     { 5, "immutable", P_BOOL, 0, 0 });
DESC(namespace_, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &ns_spec });
DESC(service_account, { 1, "metadata", P_MSG, 0, &object_meta },
     { 2, "secrets", P_MSG, 1, &object_ref }, { 3, "automountServiceAccountToken", P_BOOL, 0, 0 },
     { 4, "imagePullSecrets", P_MSG, 1, &local_ref });
DESC(pod, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &pod_spec });
DESC(job, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &job_spec });
DESC(deployment, { 1, "metadata", P_MSG, 0, &object_meta },
     { 2, "spec", P_MSG, 0, &deploy_spec });

DESC(bound_ref, { 1, "kind", P_STR, 0, 0 }, { 2, "apiVersion", P_STR, 0, 0 },
     { 3, "name", P_STR, 0, 0 }, { 4, "uid", P_STR, 0, 0 });
DESC(token_spec, { 1, "audiences", P_STR, 1, 0 }, { 3, "boundObjectRef", P_MSG, 0, &bound_ref },
     { 4, "expirationSeconds", P_INT, 0, 0 });
DESC(token_request, { 1, "metadata", P_MSG, 0, &object_meta },
     { 2, "spec", P_MSG, 0, &token_spec });
DESC(binding, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "target", P_MSG, 0, &object_ref });
DESC(meta_only, { 1, "metadata", P_MSG, 0, &object_meta });
DESC(resource_attrs, { 1, "namespace", P_STR, 0, 0 }, { 2, "verb", P_STR, 0, 0 },
     { 3, "group", P_STR, 0, 0 }, { 4, "version", P_STR, 0, 0 }, { 5, "resource", P_STR, 0, 0 },
     { 6, "subresource", P_STR, 0, 0 }, { 7, "name", P_STR, 0, 0 });
DESC(nonresource_attrs, { 1, "path", P_STR, 0, 0 }, { 2, "verb", P_STR, 0, 0 });
DESC(ssar_spec, { 1, "resourceAttributes", P_MSG, 0, &resource_attrs },
     { 2, "nonResourceAttributes", P_MSG, 0, &nonresource_attrs });
DESC(ssar, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &ssar_spec });
DESC(ssrr_spec, { 1, "namespace", P_STR, 0, 0 });
DESC(ssrr, { 1, "metadata", P_MSG, 0, &object_meta }, { 2, "spec", P_MSG, 0, &ssrr_spec });

static const struct {
  const char *kind;
  const struct pdesc *d;
} kinds[] = {
  { "ConfigMap", &configmap }, { "Secret", &secret },     { "Namespace", &namespace_ },
  { "ServiceAccount", &service_account }, { "Pod", &pod }, { "Job", &job },
  { "Deployment", &deployment }, { "SelfSubjectReview", &meta_only },
  { "SelfSubjectAccessReview", &ssar }, { "SelfSubjectRulesReview", &ssrr },
  { "TokenRequest", &token_request }, { "Binding", &binding },
};

struct buf {
  const uint8_t *p, *end;
};

static bool varint(struct buf *b, uint64_t *v)
{
  *v = 0;
  for(int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
    uint8_t c = *b->p++;
    *v |= (uint64_t)(c & 0x7f) << shift;
    if(!(c & 0x80))
      return true;
  }
  return false;
}

/* The next field: number, wire type, and for type 2 its bytes. */
static bool next(struct buf *b, int *num, int *wt, uint64_t *v, struct buf *sub)
{
  uint64_t key;
  if(!varint(b, &key))
    return false;
  *num = (int)(key >> 3);
  *wt = (int)(key & 7);
  switch(*wt) {
  case 0:
    return varint(b, v);
  case 1:
    if(b->end - b->p < 8)
      return false;
    b->p += 8;
    return true;
  case 5:
    if(b->end - b->p < 4)
      return false;
    b->p += 4;
    return true;
  case 2:
    if(!varint(b, v) || (uint64_t)(b->end - b->p) < *v)
      return false;
    sub->p = b->p;
    sub->end = b->p + *v;
    b->p += *v;
    return true;
  default:
    return false;
  }
}

static cJSON *str(const struct buf *s)
{
  char *t = strndup((const char *)s->p, (size_t)(s->end - s->p));
  cJSON *j = cJSON_CreateString(t ? t : "");
  free(t);
  return j;
}

static bool decode(struct buf b, const struct pdesc *d, cJSON *out);

/* A map entry {1: key, 2: value} into obj. */
static bool map_entry(struct buf b, enum pk kind, cJSON *obj)
{
  cJSON *key = NULL, *val = NULL;
  int num, wt;
  uint64_t v;
  struct buf s;
  while(b.p < b.end) {
    if(!next(&b, &num, &wt, &v, &s))
      return false;
    if(wt != 2)
      continue;
    if(num == 1) {
      cJSON_Delete(key);
      key = str(&s);
    } else if(num == 2) {
      cJSON_Delete(val);
      if(kind == P_MAP_SB) {
        char *b64 = ls_base64(s.p, (size_t)(s.end - s.p), false);
        val = cJSON_CreateString(b64);
        free(b64);
      } else if(kind == P_MAP_SQ) { /* Quantity {1: string} */
        val = cJSON_CreateString("");
        int n2, w2;
        uint64_t v2;
        struct buf s2;
        while(s.p < s.end && next(&s, &n2, &w2, &v2, &s2))
          if(n2 == 1 && w2 == 2) {
            cJSON_Delete(val);
            val = str(&s2);
          }
      } else
        val = str(&s);
    }
  }
  if(key)
    ls_set_item(obj, key->valuestring, val ? val : cJSON_CreateString(""));
  else
    cJSON_Delete(val);
  cJSON_Delete(key);
  return true;
}

static cJSON *time_of(struct buf s)
{
  int64_t secs = 0;
  int num, wt;
  uint64_t v;
  struct buf sub;
  while(s.p < s.end && next(&s, &num, &wt, &v, &sub))
    if(num == 1 && wt == 0)
      secs = (int64_t)v;
  char ts[32];
  ls_time_format((time_t)secs, ts);
  return cJSON_CreateString(ts);
}

static cJSON *value(const struct pf *f, int wt, uint64_t v, struct buf s)
{
  switch(f->kind) {
  case P_STR:
    return wt == 2 ? str(&s) : NULL;
  case P_BYTES: {
    char *b64 = ls_base64(s.p, (size_t)(s.end - s.p), false);
    cJSON *j = cJSON_CreateString(b64);
    free(b64);
    return j;
  }
  case P_BOOL:
    return wt == 0 ? cJSON_CreateBool(v != 0) : NULL;
  case P_INT:
    return wt == 0 ? cJSON_CreateNumber((double)(int64_t)v) : NULL;
  case P_TIME:
    return wt == 2 ? time_of(s) : NULL;
  case P_QTY: {
    cJSON *q = NULL;
    int n2, w2;
    uint64_t v2;
    struct buf s2;
    while(s.p < s.end && next(&s, &n2, &w2, &v2, &s2))
      if(n2 == 1 && w2 == 2) {
        cJSON_Delete(q);
        q = str(&s2);
      }
    return q ? q : cJSON_CreateString("0");
  }
  case P_MSG: {
    cJSON *o = cJSON_CreateObject();
    if(wt != 2 || !decode(s, f->msg, o)) {
      cJSON_Delete(o);
      return NULL;
    }
    return o;
  }
  default:
    return NULL;
  }
}

/* Value fields are always on the wire, set or not; pointer fields only when set. */
static bool zero(const struct pf *f, const cJSON *v)
{
  static const char *const pointers[] = { "backoffLimit", "parallelism", "completions",
                                          "replicas", "terminationGracePeriodSeconds",
                                          "activeDeadlineSeconds", "ttlSecondsAfterFinished",
                                          "automountServiceAccountToken", "immutable",
                                          "suspend", "manualSelector", "optional", "defaultMode",
                                          "expirationSeconds" };
  for(size_t i = 0; i < sizeof(pointers) / sizeof(pointers[0]); i++)
    if(!strcmp(f->name, pointers[i]))
      return false;
  if(cJSON_IsString(v))
    return !*v->valuestring;
  if(cJSON_IsBool(v))
    return cJSON_IsFalse(v);
  if(cJSON_IsNumber(v))
    return v->valuedouble == 0;
  return false;
}

static bool decode(struct buf b, const struct pdesc *d, cJSON *out)
{
  int num, wt;
  uint64_t v;
  struct buf s = { NULL, NULL };
  while(b.p < b.end) {
    if(!next(&b, &num, &wt, &v, &s))
      return false;
    const struct pf *f = NULL;
    for(size_t i = 0; i < d->n; i++)
      if(d->f[i].num == num)
        f = &d->f[i];
    if(!f)
      continue;
    if(f->kind == P_INLINE) {
      if(wt != 2 || !decode(s, f->msg, out))
        return false;
      continue;
    }
    if(f->kind == P_MAP_SS || f->kind == P_MAP_SB || f->kind == P_MAP_SQ) {
      cJSON *m = cJSON_GetObjectItemCaseSensitive(out, f->name);
      if(!m)
        m = cJSON_AddObjectToObject(out, f->name);
      if(wt != 2 || !map_entry(s, f->kind, m))
        return false;
      continue;
    }
    cJSON *val = value(f, wt, v, s);
    if(!val)
      return false;
    if(!f->repeated && zero(f, val)) { /* Go's omitempty: the JSON form would not have it */
      cJSON_Delete(val);
      continue;
    }
    if(f->repeated) {
      cJSON *a = cJSON_GetObjectItemCaseSensitive(out, f->name);
      if(!a)
        a = cJSON_AddArrayToObject(out, f->name);
      cJSON_AddItemToArray(a, val);
    } else
      ls_set_item(out, f->name, val);
  }
  return true;
}

char *ls_protobuf_to_json(const char *body, size_t len, char *err, size_t errlen)
{
  if(len < 4 || memcmp(body, "k8s\0", 4)) {
    snprintf(err, errlen, "the protobuf body does not start with the k8s envelope");
    return NULL;
  }
  struct buf b = { (const uint8_t *)body + 4, (const uint8_t *)body + len };
  char api_version[256] = "", kind[128] = "";
  struct buf raw = { NULL, NULL };
  int num, wt;
  uint64_t v;
  struct buf s;
  while(b.p < b.end) {
    if(!next(&b, &num, &wt, &v, &s)) {
      snprintf(err, errlen, "malformed protobuf envelope");
      return NULL;
    }
    if(num == 1 && wt == 2) { /* TypeMeta */
      int n2, w2;
      uint64_t v2;
      struct buf s2;
      while(s.p < s.end && next(&s, &n2, &w2, &v2, &s2)) {
        if(w2 != 2)
          continue;
        char *t = strndup((const char *)s2.p, (size_t)(s2.end - s2.p));
        snprintf(n2 == 1 ? api_version : kind, n2 == 1 ? sizeof(api_version) : sizeof(kind),
                 "%s", t ? t : "");
        free(t);
      }
    } else if(num == 2 && wt == 2)
      raw = s;
  }
  const struct pdesc *d = NULL;
  for(size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if(!strcmp(kinds[i].kind, kind))
      d = kinds[i].d;
  if(!d) {
    snprintf(err, errlen, "the local API server does not decode %s from protobuf; send JSON",
             kind[0] ? kind : "this kind");
    return NULL;
  }
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddStringToObject(obj, "apiVersion", api_version);
  cJSON_AddStringToObject(obj, "kind", kind);
  if(raw.p && !decode(raw, d, obj)) {
    cJSON_Delete(obj);
    snprintf(err, errlen, "malformed protobuf %s", kind);
    return NULL;
  }
  char *json = ls_print(obj);
  cJSON_Delete(obj);
  return json;
}
