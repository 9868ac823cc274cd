/* Kubeconfig files: one, or a $KUBECONFIG list merged as client-go merges it (the first file
 * that names a cluster, user or context wins), resolved through a context to one
 * kube_config. Every refusal names the file and the field. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "kube_int.h"
#include "yamldoc.h"

#define KUBECONFIG_MAX_FILES 16

static gw_rc dup_into(char **dst, const char *src)
{
  *dst = NULL;
  if(!src)
    return GW_OK;
  *dst = strdup(src);
  return *dst ? GW_OK : GW_ENOMEM;
}

/* ---- base64 (standard alphabet; whitespace ignored, as Go's decoder of kubeconfig data) ---- */

static int b64val(unsigned char ch)
{
  if(ch >= 'A' && ch <= 'Z')
    return ch - 'A';
  if(ch >= 'a' && ch <= 'z')
    return ch - 'a' + 26;
  if(ch >= '0' && ch <= '9')
    return ch - '0' + 52;
  if(ch == '+')
    return 62;
  if(ch == '/')
    return 63;
  return -1;
}

/* A NUL-terminated malloc'd decoding, or NULL with *bad set when s is not base64. */
static char *b64decode(const char *s, bool *bad)
{
  size_t n = strlen(s);
  char *out = malloc(n / 4 * 3 + 4);
  *bad = false;
  if(!out)
    return NULL;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0, pad = 0, seen = 0;
  for(const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if(*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
      continue;
    if(*p == '=') {
      pad++;
      continue;
    }
    int v = b64val(*p);
    if(v < 0 || pad) {
      *bad = true;
      break;
    }
    seen++;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if(bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  if(!*bad && (pad > 2 || (seen + pad) % 4 == 1 || (pad && (seen + pad) % 4 != 0)))
    *bad = true;
  if(*bad || o == 0) {
    *bad = true;
    free(out);
    return NULL;
  }
  out[o] = '\0';
  return out;
}

/* ---- kubeconfig ---- */

struct kcfile {
  char path[1024];
  char dir[1024];
  cJSON *docs; /* yamldoc array; the config is its first item */
  const cJSON *root;
};

struct kcload {
  struct kcfile files[KUBECONFIG_MAX_FILES];
  int n;
  char *err;
  size_t errlen;
};

static gw_rc kc_add_file(struct kcload *L, const char *path, bool must_exist)
{
  if(L->n == KUBECONFIG_MAX_FILES) {
    snprintf(L->err, L->errlen, "KUBECONFIG: more than %d files", KUBECONFIG_MAX_FILES);
    return GW_EINVAL;
  }
  if(!must_exist && access(path, F_OK) != 0)
    return GW_OK; /* client-go skips missing files of $KUBECONFIG */
  struct kcfile *f = &L->files[L->n];
  memset(f, 0, sizeof(*f));
  snprintf(f->path, sizeof(f->path), "%s", path);
  snprintf(f->dir, sizeof(f->dir), "%s", path);
  char *slash = strrchr(f->dir, '/');
  if(slash)
    slash[slash == f->dir ? 1 : 0] = '\0';
  else
    snprintf(f->dir, sizeof(f->dir), ".");
  char perr[256];
  gw_rc rc = yamldoc_parse_file(path, &f->docs, perr, sizeof(perr));
  if(rc) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s", path, perr);
    return rc;
  }
  f->root = cJSON_GetArrayItem(f->docs, 0);
  if(f->root && !cJSON_IsObject(f->root)) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": not a mapping of clusters, users and contexts",
             path);
    cJSON_Delete(f->docs);
    return GW_EPARSE;
  }
  L->n++;
  return GW_OK;
}

static void kc_release(struct kcload *L)
{
  for(int i = 0; i < L->n; i++)
    cJSON_Delete(L->files[i].docs);
  L->n = 0;
}

/* The entry named name of list (clusters, users, contexts): the first file that has it wins. */
static gw_rc kc_find(struct kcload *L, const char *list, const char *name, const char *inner,
                     const cJSON **out, const struct kcfile **from)
{
  *out = NULL;
  for(int i = 0; i < L->n; i++) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(L->files[i].root, list);
    if(!arr || cJSON_IsNull(arr))
      continue;
    if(!cJSON_IsArray(arr)) {
      snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s: must be a list", L->files[i].path, list);
      return GW_EPARSE;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
      const char *n = json_get_str(e, "name");
      if(!n || strcmp(n, name))
        continue;
      const cJSON *in = cJSON_GetObjectItemCaseSensitive(e, inner);
      if(in && !cJSON_IsObject(in)) {
        snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s[name=%s].%s: must be a mapping",
                 L->files[i].path, list, name, inner);
        return GW_EPARSE;
      }
      *out = in ? in : e;
      *from = &L->files[i];
      return GW_OK;
    }
  }
  return GW_ENOTFOUND;
}

/* Reads a string field; missing or null is NULL, anything else but a string is an error. */
static gw_rc kc_str(struct kcload *L, const struct kcfile *f, const char *where, const cJSON *o,
                    const char *key, const char **out)
{
  *out = NULL;
  const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
  if(!v || cJSON_IsNull(v))
    return GW_OK;
  if(!cJSON_IsString(v)) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.%s: must be a string, got %s", f->path,
             where, key, json_type_name(v));
    return GW_EPARSE;
  }
  *out = v->valuestring[0] ? v->valuestring : NULL;
  return GW_OK;
}

/* A file path field: relative paths are relative to the kubeconfig that holds them, and the
 * file must be readable now so that a typo is reported at start, not at the first request. */
static gw_rc kc_path(struct kcload *L, const struct kcfile *f, const char *where, const cJSON *o,
                     const char *key, char **out)
{
  const char *v;
  gw_rc rc = kc_str(L, f, where, o, key, &v);
  if(rc || !v)
    return rc;
  char buf[2048];
  if(v[0] == '/')
    snprintf(buf, sizeof(buf), "%s", v);
  else
    snprintf(buf, sizeof(buf), "%s/%s", f->dir, v);
  if(access(buf, R_OK) != 0) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.%s: cannot read \"%s\": %s", f->path, where,
             key, buf, strerror(errno));
    return GW_EINVAL;
  }
  free(*out);
  *out = strdup(buf);
  return *out ? GW_OK : GW_ENOMEM;
}

/* A -data field: base64 of PEM. */
static gw_rc kc_data(struct kcload *L, const struct kcfile *f, const char *where, const cJSON *o,
                     const char *key, char **out)
{
  const char *v;
  gw_rc rc = kc_str(L, f, where, o, key, &v);
  if(rc || !v)
    return rc;
  bool bad;
  char *d = b64decode(v, &bad);
  if(bad) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.%s: not valid base64", f->path, where, key);
    return GW_EPARSE;
  }
  if(!d)
    return GW_ENOMEM;
  free(*out);
  *out = d;
  return GW_OK;
}

static gw_rc kc_cluster(struct kcload *L, struct kube_config *c, const char *name)
{
  const cJSON *cl;
  const struct kcfile *f;
  gw_rc rc = kc_find(L, "clusters", name, "cluster", &cl, &f);
  if(rc == GW_ENOTFOUND)
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": clusters: no cluster named \"%s\"",
             L->files[0].path, name);
  if(rc)
    return rc;
  char where[300];
  snprintf(where, sizeof(where), "clusters[name=%s].cluster", name);
  const char *server = NULL;
  rc = kc_str(L, f, where, cl, "server", &server);
  if(!rc && !server) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.server: missing", f->path, where);
    rc = GW_EINVAL;
  }
  if(!rc && strncmp(server, "https://", 8) && strncmp(server, "http://", 7)) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.server: \"%s\" is not an http(s) URL",
             f->path, where, server);
    rc = GW_EINVAL;
  }
  if(!rc)
    rc = dup_into(&c->server, server);
  if(!rc)
    rc = kc_path(L, f, where, cl, "certificate-authority", &c->ca_file);
  if(!rc)
    rc = kc_data(L, f, where, cl, "certificate-authority-data", &c->ca_data);
  if(!rc && c->ca_data) { /* client-go: the -data wins */
    free(c->ca_file);
    c->ca_file = NULL;
  }
  const cJSON *insecure = cJSON_GetObjectItemCaseSensitive(cl, "insecure-skip-tls-verify");
  if(!rc && insecure && !cJSON_IsNull(insecure)) {
    if(!cJSON_IsBool(insecure)) {
      snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.insecure-skip-tls-verify: must be true "
               "or false", f->path, where);
      rc = GW_EPARSE;
    } else {
      c->insecure_skip_verify = cJSON_IsTrue(insecure);
    }
  }
  if(!rc && c->insecure_skip_verify && (c->ca_file || c->ca_data)) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.insecure-skip-tls-verify: not allowed "
             "together with a certificate-authority; remove one of them", f->path, where);
    rc = GW_EINVAL;
  }
  return rc;
}

static gw_rc kc_groups(struct kcload *L, const struct kcfile *f, const char *where,
                       const cJSON *u, struct kube_config *c)
{
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(u, "as-groups");
  if(!g || cJSON_IsNull(g))
    return GW_OK;
  if(!cJSON_IsArray(g) || cJSON_GetArraySize(g) > 7) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.as-groups: must be a list of at most 7 "
             "group names", f->path, where);
    return GW_EPARSE;
  }
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, g) {
    if(!cJSON_IsString(e)) {
      snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.as-groups[%d]: must be a string",
               f->path, where, i);
      return GW_EPARSE;
    }
    if(dup_into(&c->impersonate_groups[i++], e->valuestring))
      return GW_ENOMEM;
  }
  return GW_OK;
}

static gw_rc kc_user(struct kcload *L, struct kube_config *c, const char *name)
{
  const cJSON *u;
  const struct kcfile *f;
  gw_rc rc = kc_find(L, "users", name, "user", &u, &f);
  if(rc == GW_ENOTFOUND)
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": users: no user named \"%s\"",
             L->files[0].path, name);
  if(rc)
    return rc;
  char where[300];
  snprintf(where, sizeof(where), "users[name=%s].user", name);
  const char *tok = NULL, *as = NULL;
  if(!rc)
    rc = kc_str(L, f, where, u, "token", &tok);
  if(!rc)
    rc = dup_into(&c->token, tok);
  if(!rc)
    rc = kc_path(L, f, where, u, "tokenFile", &c->token_file);
  if(!rc)
    rc = kc_path(L, f, where, u, "client-certificate", &c->cert_file);
  if(!rc)
    rc = kc_data(L, f, where, u, "client-certificate-data", &c->cert_data);
  if(!rc)
    rc = kc_path(L, f, where, u, "client-key", &c->key_file);
  if(!rc)
    rc = kc_data(L, f, where, u, "client-key-data", &c->key_data);
  if(!rc)
    rc = kc_str(L, f, where, u, "as", &as);
  if(!rc)
    rc = dup_into(&c->impersonate_user, as);
  if(!rc)
    rc = kc_groups(L, f, where, u, c);
  if(rc)
    return rc;
  if(c->cert_data) {
    free(c->cert_file);
    c->cert_file = NULL;
  }
  if(c->key_data) {
    free(c->key_file);
    c->key_file = NULL;
  }
  bool cert = c->cert_file || c->cert_data, key = c->key_file || c->key_data;
  if(cert != key) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.%s: missing: a client certificate needs "
             "both client-certificate(-data) and client-key(-data)", f->path, where,
             cert ? "client-key" : "client-certificate");
    return GW_EINVAL;
  }
  bool has_cred = cert || c->token || c->token_file;
  static const char *const unsupported[] = { "exec", "auth-provider", "username" };
  for(size_t i = 0; i < 3; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(u, unsupported[i]);
    if(x && !cJSON_IsNull(x) && !has_cred) {
      snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.%s: not supported by godwit; use a "
               "token, tokenFile or client certificate", f->path, where, unsupported[i]);
      return GW_EUNSUPPORTED;
    }
  }
  return GW_OK;
}

static gw_rc kc_resolve(struct kcload *L, struct kube_config *c, const char *context)
{
  const char *ctxname = context;
  for(int i = 0; i < L->n && !ctxname; i++) {
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(L->files[i].root, "current-context");
    if(cur && !cJSON_IsNull(cur) && !cJSON_IsString(cur)) {
      snprintf(L->err, L->errlen, "kubeconfig \"%s\": current-context: must be a string",
               L->files[i].path);
      return GW_EPARSE;
    }
    if(cur && cJSON_IsString(cur) && cur->valuestring[0])
      ctxname = cur->valuestring;
  }
  if(!ctxname) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": current-context: not set and no context "
             "was named; set one with kubectl config use-context", L->files[0].path);
    return GW_EINVAL;
  }
  const cJSON *cx;
  const struct kcfile *f;
  gw_rc rc = kc_find(L, "contexts", ctxname, "context", &cx, &f);
  if(rc == GW_ENOTFOUND)
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": contexts: no context named \"%s\"",
             L->files[0].path, ctxname);
  if(rc)
    return rc;
  char where[300];
  snprintf(where, sizeof(where), "contexts[name=%s].context", ctxname);
  const char *cluster = NULL, *user = NULL, *ns = NULL;
  rc = kc_str(L, f, where, cx, "cluster", &cluster);
  if(!rc)
    rc = kc_str(L, f, where, cx, "user", &user);
  if(!rc)
    rc = kc_str(L, f, where, cx, "namespace", &ns);
  if(!rc && !cluster) {
    snprintf(L->err, L->errlen, "kubeconfig \"%s\": %s.cluster: missing", f->path, where);
    rc = GW_EINVAL;
  }
  if(!rc)
    rc = dup_into(&c->namespace, ns ? ns : "default");
  if(!rc)
    rc = kc_cluster(L, c, cluster);
  if(!rc && user)
    rc = kc_user(L, c, user);
  return rc;
}

gw_rc kube_kubeconfig_load(struct kube_config *c, const char *path, const char *env,
                           const char *context, char *err, size_t errlen)
{
  struct kcload L = { .err = err, .errlen = errlen };
  gw_rc rc = GW_OK;
  if(path) {
    rc = kc_add_file(&L, path, true);
  } else {
    char *list = strdup(env);
    if(!list)
      return GW_ENOMEM;
    char *save = NULL;
    for(char *p = strtok_r(list, ":", &save); p && !rc; p = strtok_r(NULL, ":", &save))
      rc = kc_add_file(&L, p, false);
    free(list);
    if(!rc && L.n == 0) {
      snprintf(err, errlen, "KUBECONFIG=\"%s\": none of its files exists", env);
      rc = GW_ENOTFOUND;
    }
  }
  if(!rc)
    rc = kc_resolve(&L, c, context);
  kc_release(&L);
  return rc;
}
