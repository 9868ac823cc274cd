/*
 * godwit-admit: sends the objects of a YAML file to a running godwit webhook the way
 * kube-apiserver would (AdmissionReview v1 to /mutate, the patched object to /validate) and
 * prints what came back: the patch, the warnings, the verdict and the denial message.
 * Documents of other kinds (Secrets, ConfigMaps) are skipped; each godwit object is a CREATE,
 * except that two documents of the same object are the stored object and its UPDATE. Used by
 * the local demo and handy for trying a policy.
 *
 *   godwit-admit --url https://127.0.0.1:9443 --ca build/certs/ca.crt [--user alice]
 *                [--group db-approvers ...] [--extra key=value ...] --file FILE.yaml
 */
#include <curl/curl.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "api/api.h"
#include "config.h"
#include "json.h"
#include "jsonpatch.h"
#include "strbuf.h"
#include "yamldoc.h"

struct admit_config {
  const char *url;
  const char *ca;
  const char *user;
  const char *groups[CFG_MAX_LIST];
  const char *extra[CFG_MAX_LIST];
  const char *file;
  int quiet;
};

#define O(f) offsetof(struct admit_config, f)
static const struct cfg_opt options[] = {
  { "url", NULL, CFG_STR, "https://127.0.0.1:9443", 0, 0, O(url), "the webhook's base URL" },
  { "ca", NULL, CFG_STR, "build/certs/ca.crt", 0, 0, O(ca), "CA bundle to verify the webhook" },
  { "user", NULL, CFG_STR, "alice", 0, 0, O(user), "userInfo.username of the request" },
  { "group", NULL, CFG_STRLIST, NULL, 0, 0, O(groups), "userInfo.groups (repeatable)" },
  { "extra", NULL, CFG_STRLIST, NULL, 0, 0, O(extra),
    "userInfo.extra entry key=value (repeatable), e.g. a bound token's pod-name" },
  { "file", NULL, CFG_STR, NULL, 0, 0, O(file), "the YAML file to admit" },
  { "quiet", NULL, CFG_BOOL, NULL, 0, 0, O(quiet), "print only the verdict line" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static size_t collect(char *d, size_t s, size_t n, void *u)
{
  return strbuf_add(u, d, s * n) ? 0 : s * n;
}

static cJSON *post(const struct admit_config *c, const char *path, const cJSON *review)
{
  char url[512];
  snprintf(url, sizeof(url), "%s%s?timeout=10s", c->url, path);
  char *body = cJSON_PrintUnformatted(review);
  struct strbuf out;
  strbuf_init(&out, 16u << 20);
  CURL *h = curl_easy_init();
  struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  CURLcode cc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  cJSON_free(body);
  cJSON *resp = NULL;
  if(cc != CURLE_OK)
    fprintf(stderr, "godwit-admit: %s: %s\n", url, curl_easy_strerror(cc));
  else if(status != 200)
    fprintf(stderr, "godwit-admit: %s: HTTP %ld: %s\n", url, status, strbuf_str(&out));
  else
    resp = cJSON_Parse(strbuf_str(&out));
  strbuf_release(&out);
  return resp;
}

static cJSON *build_review(const struct admit_config *c, const char *op, const cJSON *obj,
                           const cJSON *old, int seq)
{
  const char *av = json_get_str(obj, "apiVersion"), *slash = av ? strchr(av, '/') : NULL;
  char group[128] = "", version[64] = "v1", plural[128];
  if(slash) {
    snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
    snprintf(version, sizeof(version), "%s", slash + 1);
  } else if(av)
    snprintf(version, sizeof(version), "%s", av);
  const char *kind = json_get_str(obj, "kind");
  snprintf(plural, sizeof(plural), "%ss", kind ? kind : "object");
  for(char *p = plural; *p; p++)
    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
  cJSON_AddStringToObject(r, "kind", "AdmissionReview");
  cJSON *q = cJSON_AddObjectToObject(r, "request");
  char uid[64];
  snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", seq);
  cJSON_AddStringToObject(q, "uid", uid);
  cJSON *k = cJSON_AddObjectToObject(q, "kind");
  cJSON_AddStringToObject(k, "group", group);
  cJSON_AddStringToObject(k, "version", version);
  cJSON_AddStringToObject(k, "kind", kind ? kind : "");
  cJSON_AddItemToObject(q, "requestKind", cJSON_Duplicate(k, 1));
  cJSON *res = cJSON_AddObjectToObject(q, "resource");
  cJSON_AddStringToObject(res, "group", group);
  cJSON_AddStringToObject(res, "version", version);
  cJSON_AddStringToObject(res, "resource", plural);
  const char *name = json_get_str(obj, "metadata.name");
  cJSON_AddStringToObject(q, "name", name ? name : "");
  const char *ns = json_get_str(obj, "metadata.namespace");
  cJSON_AddStringToObject(q, "namespace", ns ? ns : "default");
  cJSON_AddStringToObject(q, "operation", op);
  cJSON *ui = cJSON_AddObjectToObject(q, "userInfo");
  cJSON_AddStringToObject(ui, "username", c->user);
  cJSON *g = cJSON_AddArrayToObject(ui, "groups");
  for(int i = 0; c->groups[i]; i++)
    cJSON_AddItemToArray(g, cJSON_CreateString(c->groups[i]));
  cJSON_AddItemToArray(g, cJSON_CreateString("system:authenticated"));
  cJSON *extra = cJSON_AddObjectToObject(ui, "extra");
  for(int i = 0; c->extra[i]; i++) {
    const char *eq = strchr(c->extra[i], '=');
    if(!eq)
      continue;
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - c->extra[i]), c->extra[i]);
    cJSON *vals = cJSON_GetObjectItemCaseSensitive(extra, key);
    if(!vals)
      vals = cJSON_AddArrayToObject(extra, key);
    cJSON_AddItemToArray(vals, cJSON_CreateString(eq + 1));
  }
  cJSON_AddItemToObject(q, "object", cJSON_Duplicate(obj, 1));
  cJSON_AddItemToObject(q, "oldObject", old ? cJSON_Duplicate(old, 1) : cJSON_CreateNull());
  cJSON_AddFalseToObject(q, "dryRun");
  return r;
}

/* Applies the base64 patch of a /mutate response to obj. */
static int apply_patch(const cJSON *resp, cJSON **obj, int quiet)
{
  const char *b64 = json_get_str(resp, "response.patch");
  if(!b64)
    return 0;
  size_t n = strlen(b64);
  unsigned char *raw = malloc(n + 1);
  int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
  while(len > 0 && raw[len - 1] == '\0')
    len--;
  raw[len < 0 ? 0 : len] = '\0';
  cJSON *patch = cJSON_Parse((char *)raw);
  free(raw);
  char err[200];
  if(!quiet) {
    const cJSON *op;
    printf("  defaulted:\n");
    cJSON_ArrayForEach(op, patch)
    {
      char *v = cJSON_PrintUnformatted(cJSON_GetObjectItem(op, "value"));
      printf("    %s %s %s\n", json_get_str(op, "op"), json_get_str(op, "path"), v ? v : "");
      if(v)
        cJSON_free(v);
    }
  }
  int rc = jsonpatch_apply(obj, patch, err, sizeof(err)) ? -1 : 0;
  if(rc)
    fprintf(stderr, "godwit-admit: the webhook's patch does not apply: %s\n", err);
  cJSON_Delete(patch);
  return rc;
}

static void print_warnings(const cJSON *resp)
{
  const cJSON *w;
  cJSON_ArrayForEach(w, json_get(resp, "response.warnings"))
    printf("  Warning: %s\n", w->valuestring);
}

static bool is_ours(const cJSON *o)
{
  const char *av = json_get_str(o, "apiVersion"), *kind = json_get_str(o, "kind");
  const char *slash = av ? strchr(av, '/') : NULL;
  if(!slash || !kind)
    return false;
  char group[128];
  snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
  return api_find_kind(group, kind) != NULL;
}

static bool same_object(const cJSON *a, const cJSON *b)
{
  const char *ka = json_get_str(a, "kind"), *kb = json_get_str(b, "kind");
  const char *na = json_get_str(a, "metadata.name"), *nb = json_get_str(b, "metadata.name");
  return ka && kb && na && nb && !strcmp(ka, kb) && !strcmp(na, nb);
}

/* Sends one object through /mutate then /validate; 0 admitted, 3 refused, 1 error. */
static int admit_one(const struct admit_config *c, const cJSON *sent, const cJSON *old_sent)
{
  cJSON *obj = cJSON_Duplicate(sent, 1);
  const char *op = old_sent ? "UPDATE" : "CREATE";
  const char *ns = json_get_str(obj, "metadata.namespace");
  printf("%s %s %s/%s (as %s):\n", op, json_get_str(obj, "kind"), ns ? ns : "default",
         json_get_str(obj, "metadata.name"), c->user);
  int code = 1;
  cJSON *rv = build_review(c, op, obj, old_sent, 1);
  cJSON *mresp = post(c, "/mutate", rv);
  cJSON_Delete(rv);
  if(mresp && cJSON_IsTrue(json_get(mresp, "response.allowed")) && !apply_patch(mresp, &obj, c->quiet)) {
    rv = build_review(c, op, obj, old_sent, 2);
    cJSON *vresp = post(c, "/validate", rv);
    cJSON_Delete(rv);
    if(vresp) {
      print_warnings(vresp);
      if(cJSON_IsTrue(json_get(vresp, "response.allowed"))) {
        printf("  => admitted\n");
        code = 0;
      } else {
        const cJSON *st = json_get(vresp, "response.status");
        printf("  => refused (%d %s): %s\n", json_get(st, "code") ? json_get(st, "code")->valueint : 0,
               json_get_str(st, "reason"), json_get_str(st, "message"));
        code = 3;
      }
      cJSON_Delete(vresp);
    }
  } else if(mresp) {
    printf("  => refused by /mutate: %s\n", json_get_str(mresp, "response.status.message"));
    code = 3;
  }
  cJSON_Delete(mresp);
  cJSON_Delete(obj);
  return code;
}

/* The stored object as the API server holds it: the first document after /mutate (as its
 * CREATE), with the status the file gives it (status arrives through /status). */
static cJSON *stored_form(const struct admit_config *c, const cJSON *doc)
{
  cJSON *obj = cJSON_Duplicate(doc, 1);
  cJSON *rv = build_review(c, "CREATE", obj, NULL, 0);
  cJSON *resp = post(c, "/mutate", rv);
  cJSON_Delete(rv);
  int rc = resp ? apply_patch(resp, &obj, 1) : -1;
  cJSON_Delete(resp);
  if(rc) {
    cJSON_Delete(obj);
    return NULL;
  }
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status");
  if(st) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(st, 1));
  }
  return obj;
}

int main(int argc, char **argv)
{
  if(gw_version_asked(argc, argv, "godwit-admit"))
    return 0;
  struct admit_config c;
  char err[256];
  gw_rc rc = cfg_parse(options, &c, argc, argv, err, sizeof(err));
  if(rc == GW_ENOTFOUND) {
    cfg_usage(stdout, "godwit-admit", "Sends a YAML object to a godwit webhook as kube-apiserver would.", options);
    return 0;
  }
  if(rc || !c.file) {
    fprintf(stderr, "godwit-admit: %s\n", rc ? err : "--file is required");
    return 2;
  }
  cJSON *docs;
  if(yamldoc_parse_file(c.file, &docs, err, sizeof(err))) {
    fprintf(stderr, "godwit-admit: %s\n", err);
    return 2;
  }
  /* Only godwit objects; two documents of the same object are the stored one and its update. */
  const cJSON *ours[64];
  int n = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, docs)
  {
    if(is_ours(d) && n < 64)
      ours[n++] = d;
  }
  if(n == 0) {
    fprintf(stderr, "godwit-admit: %s holds no godwit object\n", c.file);
    cJSON_Delete(docs);
    return 2;
  }
  int code = 0;
  if(n == 2 && same_object(ours[0], ours[1])) {
    cJSON *stored = stored_form(&c, ours[0]);
    code = stored ? admit_one(&c, ours[1], stored) : 1;
    cJSON_Delete(stored);
  }
  else
    for(int i = 0; i < n; i++) {
      int one = admit_one(&c, ours[i], NULL);
      if(one > code)
        code = one;
    }
  cJSON_Delete(docs);
  return code;
}
