/*
 * godwit-fuzz-seeds DIR: writes the generated part of the fuzz seed corpus into
 * DIR/admission, DIR/conversion and DIR/jsonpatch (tests/fuzz/run.sh adds the hand-written seeds
 * of tests/fuzz/corpus and the repository's YAML files).
 *
 * Objects come from tests/unit/gen.c, which draws them from each kind's schema, so every kind
 * of the registry (shared/api/registry.c) and every version it serves is covered, and new kinds
 * and fields are covered as soon as they exist. Reviews are shaped as kube-apiserver sends
 * them: CREATE, UPDATE with the stored object, DELETE with a null object, dry runs, a
 * service-account user with the bound pod's name and uid in extra, a runner Pod; and a
 * ConversionReview from every served version to every other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"
#include "jsonpatch.h"
#include "podtemplate.h"

static const char *outdir;
static unsigned written;

static void write_seed(const char *sub, const char *name, const cJSON *v)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", outdir, sub);
  if(mkdir(path, 0755) && errno != EEXIST) {
    perror(path);
    exit(1);
  }
  snprintf(path, sizeof(path), "%s/%s/%s.json", outdir, sub, name);
  char *text = cJSON_PrintUnformatted(v);
  FILE *f = fopen(path, "w");
  if(!text || !f) {
    perror(path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
  cJSON_free(text);
  written++;
}

struct user {
  const char *name;
  const char *groups[3];
  const char *pod_name, *pod_uid;
};

static const struct user alice = { "alice", { "db-approvers", "system:authenticated", NULL },
                                   NULL, NULL };
static const struct user runner = {
  "system:serviceaccount:shop:godwit-runner",
  { "system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated" },
  "orders-apply-1-x7k2p", "3f0c2a9e-5b7d-4e1f-8a6c-9d0e1f2a3b4c"
};

static cJSON *strings(const char *const *v, size_t n)
{
  cJSON *a = cJSON_CreateArray();
  for(size_t i = 0; i < n && v[i]; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
  return a;
}

static cJSON *gvk(const char *group, const char *version, const char *key, const char *value)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "group", group);
  cJSON_AddStringToObject(o, "version", version);
  cJSON_AddStringToObject(o, key, value);
  return o;
}

/* An AdmissionReview as kube-apiserver sends it. obj and old are taken (may be NULL: null). */
static cJSON *review(const char *group, const char *version, const char *kind,
                     const char *plural, const char *op, const char *name, const char *ns,
                     const struct user *u, cJSON *obj, cJSON *old, bool dry_run)
{
  static unsigned n;
  char uid[40];
  snprintf(uid, sizeof(uid), "5d3c1b2a-0f9e-4d8c-b7a6-%012u", ++n);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "kind", "AdmissionReview");
  cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
  cJSON *q = cJSON_AddObjectToObject(r, "request");
  cJSON_AddStringToObject(q, "uid", uid);
  cJSON_AddItemToObject(q, "kind", gvk(group, version, "kind", kind));
  cJSON_AddItemToObject(q, "resource", gvk(group, version, "resource", plural));
  cJSON_AddItemToObject(q, "requestKind", gvk(group, version, "kind", kind));
  cJSON_AddItemToObject(q, "requestResource", gvk(group, version, "resource", plural));
  cJSON_AddStringToObject(q, "name", name);
  if(ns)
    cJSON_AddStringToObject(q, "namespace", ns);
  cJSON_AddStringToObject(q, "operation", op);
  cJSON *ui = cJSON_AddObjectToObject(q, "userInfo");
  cJSON_AddStringToObject(ui, "username", u->name);
  cJSON_AddStringToObject(ui, "uid", "0d6b5f6e-1c1d-4bb7-9c0e-6d0f1c2b3a4d");
  cJSON_AddItemToObject(ui, "groups", strings(u->groups, 3));
  cJSON *extra = cJSON_AddObjectToObject(ui, "extra");
  if(u->pod_name) {
    cJSON_AddItemToObject(extra, "authentication.kubernetes.io/pod-name", strings(&u->pod_name, 1));
    cJSON_AddItemToObject(extra, "authentication.kubernetes.io/pod-uid", strings(&u->pod_uid, 1));
  } else {
    const char *jti = "JTI=6f1e2d3c-4b5a-4978-8a9b-0c1d2e3f4a5b";
    cJSON_AddItemToObject(extra, "authentication.kubernetes.io/credential-id", strings(&jti, 1));
  }
  cJSON_AddItemToObject(q, "object", obj ? obj : cJSON_CreateNull());
  cJSON_AddItemToObject(q, "oldObject", old ? old : cJSON_CreateNull());
  cJSON_AddBoolToObject(q, "dryRun", dry_run);
  cJSON *o = cJSON_AddObjectToObject(q, "options");
  cJSON_AddStringToObject(o, "kind", !strcmp(op, "CREATE")   ? "CreateOptions"
                                     : !strcmp(op, "UPDATE") ? "UpdateOptions"
                                                             : "DeleteOptions");
  cJSON_AddStringToObject(o, "apiVersion", "meta.k8s.io/v1");
  if(strcmp(op, "DELETE"))
    cJSON_AddStringToObject(o, "fieldManager", "kubectl-client-side-apply");
  else
    cJSON_AddStringToObject(o, "propagationPolicy", "Background");
  return r;
}

static const char *name_of(const cJSON *o)
{
  const char *n = json_get_str(o, "metadata.name");
  return n ? n : "";
}

/* Stored objects carry what the apiserver adds. */
static void stored(cJSON *o, const char *name)
{
  if(json_set_str(o, "metadata.name", name) || json_set_str(o, "metadata.namespace", "shop") ||
     json_set_str(o, "metadata.uid", "7c1f2b9e-3d4a-4f5b-9c6d-1e2f3a4b5c6d") ||
     json_set_str(o, "metadata.resourceVersion", "48213") ||
     json_set_str(o, "metadata.creationTimestamp", "2025-03-14T09:26:53Z"))
    exit(1);
}

static void admission_seeds(struct gen *g, const struct api_kind *k)
{
  const struct user *u = !strcmp(k->kind, "PtahResultRecord") ? &runner : &alice;
  const char *ns = k->namespaced ? "shop" : NULL;
  for(size_t vi = 0; vi < k->nversions; vi++) {
    const struct api_version *v = &k->versions[vi];
    char base[160];
    for(int i = 0; i < 3; i++) {
      snprintf(base, sizeof(base), "%s-%s-%d", k->kind, v->name, i);
      cJSON *obj = gen_object(g, k, v);
      cJSON *old = gen_object(g, k, v);
      if(ns && json_set_str(obj, "metadata.namespace", ns))
        exit(1);
      stored(old, name_of(obj));
      cJSON *r = review(k->group, v->name, k->kind, k->plural, "CREATE", name_of(obj), ns, u,
                        cJSON_Duplicate(obj, 1), NULL, i == 2);
      char name[200];
      snprintf(name, sizeof(name), "%s-create", base);
      write_seed("admission", name, r);
      cJSON_Delete(r);
      /* UPDATE: a new spec over a stored object, and a no-op update (status only) */
      r = review(k->group, v->name, k->kind, k->plural, "UPDATE", name_of(obj), ns, u,
                 cJSON_Duplicate(obj, 1), cJSON_Duplicate(old, 1), false);
      snprintf(name, sizeof(name), "%s-update", base);
      write_seed("admission", name, r);
      cJSON_Delete(r);
      r = review(k->group, v->name, k->kind, k->plural, "UPDATE", name_of(obj), ns, u,
                 cJSON_Duplicate(old, 1), cJSON_Duplicate(old, 1), false);
      snprintf(name, sizeof(name), "%s-update-same", base);
      write_seed("admission", name, r);
      cJSON_Delete(r);
      /* DELETE: kube-apiserver sends a null object and the stored one as oldObject */
      r = review(k->group, v->name, k->kind, k->plural, "DELETE", name_of(obj), ns, u, NULL,
                 cJSON_Duplicate(old, 1), i == 1);
      snprintf(name, sizeof(name), "%s-delete", base);
      write_seed("admission", name, r);
      cJSON_Delete(r);
      /* jsonpatch: from, to, and the patch between them */
      cJSON *triple = cJSON_CreateArray();
      cJSON_AddItemToArray(triple, cJSON_Duplicate(old, 1));
      cJSON_AddItemToArray(triple, cJSON_Duplicate(obj, 1));
      cJSON *ops = jsonpatch_diff(old, obj);
      cJSON_AddItemToArray(triple, ops ? ops : cJSON_CreateArray());
      write_seed("jsonpatch", base, triple);
      cJSON_Delete(triple);
      cJSON_Delete(obj);
      cJSON_Delete(old);
    }
  }
}

static void conversion_seeds(struct gen *g, const struct api_kind *k)
{
  for(size_t from = 0; from < k->nversions; from++)
    for(size_t to = 0; to < k->nversions; to++) {
      cJSON *r = cJSON_CreateObject();
      cJSON_AddStringToObject(r, "kind", "ConversionReview");
      cJSON_AddStringToObject(r, "apiVersion", "apiextensions.k8s.io/v1");
      cJSON *q = cJSON_AddObjectToObject(r, "request");
      cJSON_AddStringToObject(q, "uid", "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f");
      char desired[128];
      snprintf(desired, sizeof(desired), "%s/%s", k->group, k->versions[to].name);
      cJSON_AddStringToObject(q, "desiredAPIVersion", desired);
      cJSON *objs = cJSON_AddArrayToObject(q, "objects");
      for(int i = 0; i < 3; i++) {
        cJSON *o = gen_object(g, k, &k->versions[from]);
        char name[64];
        snprintf(name, sizeof(name), "%s-%d", k->singular, i);
        stored(o, name);
        cJSON_AddItemToArray(objs, o);
      }
      char name[200];
      snprintf(name, sizeof(name), "%s-%s-to-%s", k->kind, k->versions[from].name,
               k->versions[to].name);
      write_seed("conversion", name, r);
      cJSON_Delete(r);
    }
}

/* A runner Pod as the Job controller creates it, with the digest of its template. */
static void runner_pod_seed(void)
{
  const char *tmpl =
    "{\"metadata\":{\"labels\":{\"godwit.dev/runner\":\"ptah\",\"team\":\"payments\"},"
    "\"annotations\":{\"example.com/owner\":\"db\"}},"
    "\"spec\":{\"serviceAccountName\":\"godwit-runner\",\"restartPolicy\":\"Never\","
    "\"containers\":[{\"name\":\"runner\",\"image\":\"ghcr.io/godwit-dev/godwit:1.0\","
    "\"command\":[\"godwit-runner\"],\"args\":[\"plan\"],"
    "\"env\":[{\"name\":\"PGURI\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db\",\"key\":\"uri\"}}}],"
    "\"securityContext\":{\"runAsNonRoot\":true,\"readOnlyRootFilesystem\":true}}]}}";
  cJSON *pod = cJSON_Parse(tmpl);
  char digest[80];
  if(!pod || podtemplate_digest(pod, digest, sizeof(digest)))
    exit(1);
  cJSON_AddStringToObject(json_get_mut(pod, "metadata.annotations"),
                          PODTEMPLATE_DIGEST_ANNOTATION, digest);
  cJSON_AddStringToObject(json_get_mut(pod, "metadata.labels"), "job-name", "orders-plan-1");
  cJSON_AddStringToObject(pod, "apiVersion", "v1");
  cJSON_AddStringToObject(pod, "kind", "Pod");
  cJSON_AddStringToObject(json_get_mut(pod, "metadata"), "generateName", "orders-plan-1-");
  cJSON_AddStringToObject(json_get_mut(pod, "metadata"), "namespace", "shop");
  cJSON *r = review("", "v1", "Pod", "pods", "CREATE", "", "shop", &alice, pod, NULL, false);
  write_seed("admission", "Pod-runner-create", r);
  cJSON_Delete(r);
}

/* A libFuzzer dictionary: the review envelopes' keys and values, and every field name and enum
 * value of every kind's schema, as JSON strings. */
static FILE *dict;

static void dict_word(const char *w)
{
  if(strpbrk(w, "\"\\\n"))
    return; /* none of ours: names and enum values are plain */
  fprintf(dict, "\"\\\"%s\\\"\"\n", w);
}

static void dict_fields(const struct sch_field *f, int depth)
{
  for(; f && f->name && depth < 16; f++) {
    dict_word(f->name);
    for(const char *const *e = f->enums; e && *e; e++)
      dict_word(*e);
    dict_fields(f->fields, depth + 1);
  }
}

static void write_dict(void)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/json.dict", outdir);
  dict = fopen(path, "w");
  if(!dict) {
    perror(path);
    exit(1);
  }
  static const char *const syntax[] = { "{", "}", "[", "]", ":", ",", "true", "false", "null",
                                        "-1", "1e308", "0.5", "\\u0000", "\\\"", NULL };
  for(const char *const *w = syntax; *w; w++) {
    fputc('"', dict);
    for(const char *p = *w; *p; p++) {
      if(*p == '"' || *p == '\\')
        fputc('\\', dict);
      fputc(*p, dict);
    }
    fputs("\"\n", dict);
  }
  static const char *const words[] = {
    "apiVersion", "kind", "metadata", "name", "namespace", "generateName", "annotations", "labels",
    "spec", "status", "request", "response", "uid", "operation", "CREATE", "UPDATE", "DELETE",
    "CONNECT", "object", "oldObject", "dryRun", "options", "userInfo", "username", "groups",
    "extra", "requestKind", "resource", "subResource", "group", "version", "AdmissionReview",
    "admission.k8s.io/v1", "ConversionReview", "apiextensions.k8s.io/v1", "desiredAPIVersion",
    "objects", "op", "path", "value", "add", "remove", "replace", "test", "godwit.dev/runner",
    PODTEMPLATE_DIGEST_ANNOTATION, "authentication.kubernetes.io/pod-name",
    "authentication.kubernetes.io/pod-uid", "Pod", "containers", "image", NULL
  };
  for(const char *const *w = words; *w; w++)
    dict_word(*w);
  for(const struct api_kind *const *k = api_kinds(); *k; k++) {
    dict_word((*k)->kind);
    dict_word((*k)->group);
    dict_word((*k)->plural);
    for(size_t v = 0; v < (*k)->nversions; v++) {
      char av[128];
      snprintf(av, sizeof(av), "%s/%s", (*k)->group, (*k)->versions[v].name);
      dict_word(av);
      dict_word((*k)->versions[v].name);
      dict_fields((*k)->versions[v].spec, 0);
      dict_fields((*k)->versions[v].status, 0);
    }
  }
  fclose(dict);
}

int main(int argc, char **argv)
{
  if(argc != 2) {
    fprintf(stderr, "usage: godwit-fuzz-seeds DIR\n");
    return 2;
  }
  outdir = argv[1];
  if(mkdir(outdir, 0755) && errno != EEXIST) {
    perror(outdir);
    return 1;
  }
  struct gen g;
  gen_seed(&g, 20250314);
  for(const struct api_kind *const *k = api_kinds(); *k; k++) {
    admission_seeds(&g, *k);
    conversion_seeds(&g, *k);
  }
  runner_pod_seed();
  write_dict();
  printf("godwit-fuzz-seeds: %u seeds in %s\n", written, outdir);
  return 0;
}
