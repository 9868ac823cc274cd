/* auth.c: bearer tokens from kube-apiserver's token file and from TokenRequest (bound to a Pod,
 * invalid once that Pod is gone), impersonation for system:masters, and the user the layers see. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "log.h"
#include "rbac.h"
#include "rest.h"

#define API_AUDIENCE "https://kubernetes.default.svc.cluster.local"

struct static_user {
  char *token, *name, *uid;
  char *groups[16];
  size_t ngroups;
};

struct bound_token {
  char *token;
  char ns[254], sa[254], sa_uid[64], pod[254], pod_uid[64], node[254], node_uid[64], jti[40];
  bool api_audience;
  time_t exp;
};

static struct static_user *users;
static size_t nusers;
static pthread_mutex_t bmu = PTHREAD_MUTEX_INITIALIZER;
static struct bound_token *bound;
static size_t nbound, cbound;

/* One CSV field (quotes allowed, "" inside quotes is a quote). */
static const char *csv_field(const char *p, char *out, size_t len)
{
  size_t j = 0;
  bool q = false;
  if(*p == '"') {
    q = true;
    p++;
  }
  while(*p) {
    if(q && *p == '"') {
      if(p[1] == '"') {
        p++;
      } else {
        q = false;
        p++;
        continue;
      }
    } else if(!q && *p == ',')
      break;
    if(j + 1 < len)
      out[j++] = *p;
    p++;
  }
  out[j] = '\0';
  return *p == ',' ? p + 1 : p;
}

int auth_init(const char *path)
{
  if(!path)
    return 0;
  FILE *f = fopen(path, "r");
  if(!f)
    return -1;
  char line[4096];
  while(fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if(!line[0] || line[0] == '#')
      continue;
    char tok[1024], name[256], uid[256], groups[2048];
    const char *p = csv_field(line, tok, sizeof(tok));
    p = csv_field(p, name, sizeof(name));
    p = csv_field(p, uid, sizeof(uid));
    csv_field(p, groups, sizeof(groups));
    if(!tok[0] || !name[0])
      continue;
    users = realloc(users, (nusers + 1) * sizeof(*users));
    if(!users)
      abort();
    struct static_user *u = &users[nusers++];
    memset(u, 0, sizeof(*u));
    u->token = strdup(tok);
    u->name = strdup(name);
    u->uid = strdup(uid);
    char *save = NULL;
    for(char *g = strtok_r(groups, ",", &save); g && u->ngroups < 16;
        g = strtok_r(NULL, ",", &save))
      u->groups[u->ngroups++] = strdup(g);
  }
  fclose(f);
  return 0;
}

static void add_group(struct ls_identity *id, const char *g)
{
  for(size_t i = 0; i < id->ngroups; i++)
    if(!strcmp(id->groups[i], g))
      return;
  if(id->ngroups < 32)
    id->groups[id->ngroups++] = strdup(g);
}

static void add_extra(struct ls_identity *id, const char *key, const char *val)
{
  if(!id->extra)
    id->extra = cJSON_CreateObject();
  cJSON *a = cJSON_GetObjectItemCaseSensitive(id->extra, key);
  if(!a)
    a = cJSON_AddArrayToObject(id->extra, key);
  cJSON_AddItemToArray(a, cJSON_CreateString(val));
}

static void finish(struct ls_identity *id)
{
  for(size_t i = 0; i < id->ngroups; i++)
    id->view_groups[i] = id->groups[i];
  id->user.name = id->name;
  id->user.uid = id->uid;
  id->user.groups = id->view_groups;
  id->user.ngroups = id->ngroups;
  id->user.extra = id->extra;
}

void auth_identity_release(struct ls_identity *id)
{
  for(size_t i = 0; i < id->ngroups; i++)
    free(id->groups[i]);
  cJSON_Delete(id->extra);
  memset(id, 0, sizeof(*id));
}

void auth_identity_system(struct ls_identity *id, const char *name, const char *group)
{
  memset(id, 0, sizeof(*id));
  snprintf(id->name, sizeof(id->name), "%s", name);
  if(group)
    add_group(id, group);
  add_group(id, "system:authenticated");
  finish(id);
}

static void sa_groups(struct ls_identity *id, const char *ns)
{
  char g[300];
  add_group(id, "system:serviceaccounts");
  snprintf(g, sizeof(g), "system:serviceaccounts:%s", ns);
  add_group(id, g);
  add_group(id, "system:authenticated");
}

/* A bound token's user, if the token is known, unexpired and its Pod still exists. */
static bool bound_lookup(const char *tok, struct ls_identity *id)
{
  struct bound_token b;
  bool found = false;
  pthread_mutex_lock(&bmu);
  for(size_t i = 0; i < nbound; i++)
    if(!strcmp(bound[i].token, tok)) {
      b = bound[i];
      found = true;
      break;
    }
  pthread_mutex_unlock(&bmu);
  if(!found || b.exp < time(NULL) || !b.api_audience)
    return false;
  store_lock();
  const struct ls_entry *pod = store_get("", "pods", b.ns, b.pod);
  const struct ls_entry *sa = store_get("", "serviceaccounts", b.ns, b.sa);
  bool ok = pod && !strcmp(pod->uid, b.pod_uid) && sa && !strcmp(sa->uid, b.sa_uid) &&
            !*ls_meta(pod->obj->json, "deletionTimestamp");
  store_unlock();
  if(!ok)
    return false;
  snprintf(id->name, sizeof(id->name), "system:serviceaccount:%s:%s", b.ns, b.sa);
  snprintf(id->uid, sizeof(id->uid), "%s", b.sa_uid);
  sa_groups(id, b.ns);
  char cred[64];
  snprintf(cred, sizeof(cred), "JTI=%s", b.jti);
  add_extra(id, "authentication.kubernetes.io/credential-id", cred);
  if(b.node[0]) {
    add_extra(id, "authentication.kubernetes.io/node-name", b.node);
    add_extra(id, "authentication.kubernetes.io/node-uid", b.node_uid);
  }
  add_extra(id, "authentication.kubernetes.io/pod-name", b.pod);
  add_extra(id, "authentication.kubernetes.io/pod-uid", b.pod_uid);
  return true;
}

static bool authenticate(const char *tok, struct ls_identity *id)
{
  for(size_t i = 0; i < nusers; i++)
    if(!strcmp(users[i].token, tok)) {
      snprintf(id->name, sizeof(id->name), "%s", users[i].name);
      snprintf(id->uid, sizeof(id->uid), "%s", users[i].uid);
      for(size_t g = 0; g < users[i].ngroups; g++)
        add_group(id, users[i].groups[g]);
      add_group(id, "system:authenticated");
      return true;
    }
  return bound_lookup(tok, id);
}

struct imp {
  struct ls_identity *id;
  bool any;
};

static void imp_group(void *ctx, const char *name, const char *value)
{
  struct imp *im = ctx;
  if(!strcasecmp(name, "Impersonate-Group")) {
    add_group(im->id, value);
    im->any = true;
  }
}

static void imp_extra(void *ctx, const char *name, const char *value)
{
  struct imp *im = ctx;
  char key[256];
  size_t j = 0;
  const char *k = name + strlen("Impersonate-Extra-");
  for(; *k && j + 1 < sizeof(key); k++) { /* lower case, %-unescaped */
    if(k[0] == '%' && k[1] && k[2]) {
      char hex[3] = { k[1], k[2], 0 };
      key[j++] = (char)strtol(hex, NULL, 16);
      k += 2;
    } else
      key[j++] = (char)((*k >= 'A' && *k <= 'Z') ? *k + 32 : *k);
  }
  key[j] = '\0';
  add_extra(im->id, key, value);
  im->any = true;
}

/* kube's impersonation filter: impersonate on users (or serviceaccounts for a service account's
 * user name), on each group, on uids and on userextras/KEY (each value), judged by the
 * authorizer. */
static cJSON *may_impersonate(const struct ls_identity *id, const char *user,
                              const struct ls_identity *who, const char *uid)
{
  const char *sa = "system:serviceaccount:";
  char ns[254] = "", name[254] = "";
  struct rbac_attrs a = { "impersonate", true, "", "users", "", "", user, "" };
  if(!strncmp(user, sa, strlen(sa)) && strchr(user + strlen(sa), ':')) {
    const char *p = user + strlen(sa);
    snprintf(ns, sizeof(ns), "%.*s", (int)(strchr(p, ':') - p), p);
    snprintf(name, sizeof(name), "%s", strchr(p, ':') + 1);
    a.resource = "serviceaccounts";
    a.ns = ns;
    a.name = name;
  }
  cJSON *st = rbac_check(id, &a);
  for(size_t i = 0; !st && i < who->ngroups; i++) {
    struct rbac_attrs g = { "impersonate", true, "", "groups", "", "", who->groups[i], "" };
    st = rbac_check(id, &g);
  }
  if(!st && uid) {
    struct rbac_attrs u = { "impersonate", true, "authentication.k8s.io", "uids", "", "", uid,
                            "" };
    st = rbac_check(id, &u);
  }
  const cJSON *key, *extras = st ? NULL : who->extra;
  cJSON_ArrayForEach(key, extras)
  {
    const cJSON *v;
    cJSON_ArrayForEach(v, key)
    {
      struct rbac_attrs x = { "impersonate", true, "authentication.k8s.io", "userextras",
                              key->string, "", cJSON_GetStringValue(v), "" };
      if(!st && x.name)
        st = rbac_check(id, &x);
    }
  }
  return st;
}

static cJSON *impersonate(struct ls_req *r, struct ls_identity *id)
{
  const char *user = req_header(r, "Impersonate-User");
  const char *uid = req_header(r, "Impersonate-Uid");
  struct ls_identity who;
  memset(&who, 0, sizeof(who));
  struct imp im = { &who, false };
  req_headers(r, "Impersonate-Group", imp_group, &im);
  req_headers(r, "Impersonate-Extra-", imp_extra, &im);
  if(!user && !im.any && !uid)
    return NULL;
  if(!user) {
    auth_identity_release(&who);
    return ls_status(500, "InternalError", NULL,
                     "Internal error occurred: requested [Impersonate-Group or Impersonate-Extra] "
                     "without impersonating a user");
  }
  cJSON *denied = may_impersonate(id, user, &who, uid);
  if(denied) {
    auth_identity_release(&who);
    return denied;
  }
  snprintf(who.name, sizeof(who.name), "%s", user);
  if(uid)
    snprintf(who.uid, sizeof(who.uid), "%s", uid);
  const char *sa = "system:serviceaccount:";
  if(!strncmp(user, sa, strlen(sa)) && !who.ngroups) {
    char ns[254];
    snprintf(ns, sizeof(ns), "%s", user + strlen(sa));
    char *colon = strchr(ns, ':');
    if(colon)
      *colon = '\0';
    sa_groups(&who, ns);
  } else if(strcmp(user, "system:anonymous"))
    add_group(&who, "system:authenticated");
  auth_identity_release(id);
  *id = who;
  return NULL;
}

cJSON *auth_request(struct ls_req *r, struct ls_identity *id)
{
  const char *h = req_header(r, "Authorization");
  memset(id, 0, sizeof(*id));
  if(!h || strncasecmp(h, "Bearer ", 7) || !authenticate(h + 7 + strspn(h + 7, " "), id)) {
    auth_identity_release(id);
    return ls_status(401, "Unauthorized", NULL, "Unauthorized");
  }
  cJSON *st = impersonate(r, id);
  finish(id);
  return st;
}

cJSON *auth_user_info(const struct ls_identity *id)
{
  cJSON *ui = cJSON_CreateObject();
  cJSON_AddStringToObject(ui, "username", id->name);
  if(id->uid[0])
    cJSON_AddStringToObject(ui, "uid", id->uid);
  cJSON *g = cJSON_AddArrayToObject(ui, "groups");
  for(size_t i = 0; i < id->ngroups; i++)
    cJSON_AddItemToArray(g, cJSON_CreateString(id->groups[i]));
  if(id->extra)
    cJSON_AddItemToObject(ui, "extra", cJSON_Duplicate(id->extra, 1));
  return ui;
}

static char *make_jwt(const struct bound_token *b, const cJSON *aud, time_t iat)
{
  cJSON *claims = cJSON_CreateObject();
  cJSON_AddItemToObject(claims, "aud", cJSON_Duplicate(aud, 1));
  cJSON_AddNumberToObject(claims, "exp", (double)b->exp);
  cJSON_AddNumberToObject(claims, "iat", (double)iat);
  cJSON_AddStringToObject(claims, "iss", API_AUDIENCE);
  cJSON_AddStringToObject(claims, "jti", b->jti);
  cJSON *k = cJSON_AddObjectToObject(claims, "kubernetes.io");
  cJSON_AddStringToObject(k, "namespace", b->ns);
  if(b->node[0]) {
    cJSON *n = cJSON_AddObjectToObject(k, "node");
    cJSON_AddStringToObject(n, "name", b->node);
    cJSON_AddStringToObject(n, "uid", b->node_uid);
  }
  cJSON *p = cJSON_AddObjectToObject(k, "pod");
  cJSON_AddStringToObject(p, "name", b->pod);
  cJSON_AddStringToObject(p, "uid", b->pod_uid);
  cJSON *s = cJSON_AddObjectToObject(k, "serviceaccount");
  cJSON_AddStringToObject(s, "name", b->sa);
  cJSON_AddStringToObject(s, "uid", b->sa_uid);
  cJSON_AddNumberToObject(claims, "nbf", (double)iat);
  char sub[600];
  snprintf(sub, sizeof(sub), "system:serviceaccount:%s:%s", b->ns, b->sa);
  cJSON_AddStringToObject(claims, "sub", sub);
  char *payload = ls_print(claims);
  cJSON_Delete(claims);
  const char *hdr = "{\"alg\":\"RS256\",\"kid\":\"godwit-local\"}";
  char sig[48];
  ls_uuid(sig);
  ls_random_suffix(sig + 36, 10);
  char *h64 = ls_base64(hdr, strlen(hdr), true);
  char *p64 = ls_base64(payload, strlen(payload), true);
  char *s64 = ls_base64(sig, strlen(sig), true);
  size_t len = strlen(h64) + strlen(p64) + strlen(s64) + 3;
  char *tok = malloc(len);
  if(!tok)
    abort();
  snprintf(tok, len, "%s.%s.%s", h64, p64, s64);
  free(h64);
  free(p64);
  free(s64);
  free(payload);
  return tok;
}

static cJSON *bind_pod(struct bound_token *b, const cJSON *ref)
{
  const char *kind = ls_str(ref, "kind");
  const char *name = ls_str(ref, "name");
  const char *uid = ls_str(ref, "uid");
  if(!ref)
    return NULL;
  if(strcmp(kind, "Pod"))
    return ls_status(422, "Invalid", NULL,
                     "TokenRequest.authentication.k8s.io \"%s\" is invalid: "
                     "spec.boundObjectRef.kind: Unsupported value: \"%s\": supported values: "
                     "\"Pod\"", b->sa, kind);
  store_lock();
  const struct ls_entry *pod = store_get("", "pods", b->ns, name);
  if(!pod) {
    store_unlock();
    return ls_status(404, "NotFound", NULL, "pods \"%s\" not found", name);
  }
  if(*uid && strcmp(uid, pod->uid)) {
    store_unlock();
    return ls_status(409, "Conflict", NULL,
                     "Operation cannot be fulfilled on pods \"%s\": the UID in the bound object "
                     "reference (%s) does not match the UID in record. The object might have "
                     "been deleted and then recreated", name, uid);
  }
  snprintf(b->pod, sizeof(b->pod), "%s", name);
  snprintf(b->pod_uid, sizeof(b->pod_uid), "%s", pod->uid);
  const char *node = cJSON_GetStringValue(
    cJSON_GetObjectItem(cJSON_GetObjectItem(pod->obj->json, "spec"), "nodeName"));
  if(node && *node) {
    snprintf(b->node, sizeof(b->node), "%s", node);
    const struct ls_entry *n = store_get("", "nodes", "", node);
    if(n)
      snprintf(b->node_uid, sizeof(b->node_uid), "%s", n->uid);
  }
  store_unlock();
  return NULL;
}

void auth_token_request(struct ls_req *r, const char *ns, const char *sa)
{
  cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
  if(!cJSON_IsObject(body)) {
    cJSON_Delete(body);
    req_reply_status(r, ls_status(400, "BadRequest", NULL, "the body of the request is not a "
                                                          "TokenRequest"));
    return;
  }
  cJSON *spec = cJSON_GetObjectItem(body, "spec");
  const cJSON *exp = cJSON_GetObjectItem(spec, "expirationSeconds");
  long long secs = cJSON_IsNumber(exp) ? (long long)exp->valuedouble : 3600;
  if(secs < 600) {
    cJSON_Delete(body);
    req_reply_status(r, ls_status(422, "Invalid", NULL,
                                  "TokenRequest.authentication.k8s.io \"%s\" is invalid: "
                                  "spec.expirationSeconds: Invalid value: %lld: may not specify "
                                  "a duration less than 10 minutes", sa, secs));
    return;
  }
  struct bound_token b;
  memset(&b, 0, sizeof(b));
  snprintf(b.ns, sizeof(b.ns), "%s", ns);
  snprintf(b.sa, sizeof(b.sa), "%s", sa);
  store_lock();
  const struct ls_entry *e = store_get("", "serviceaccounts", ns, sa);
  if(e)
    snprintf(b.sa_uid, sizeof(b.sa_uid), "%s", e->uid);
  store_unlock();
  if(!e) {
    cJSON_Delete(body);
    req_reply_status(r, ls_status(404, "NotFound", NULL, "serviceaccounts \"%s\" not found", sa));
    return;
  }
  cJSON *st = bind_pod(&b, cJSON_GetObjectItem(spec, "boundObjectRef"));
  if(!st && !b.pod[0])
    st = ls_status(422, "Invalid", NULL,
                   "TokenRequest.authentication.k8s.io \"%s\" is invalid: spec.boundObjectRef: "
                   "Required value: the local API server issues only Pod-bound tokens", sa);
  if(st) {
    cJSON_Delete(body);
    req_reply_status(r, st);
    return;
  }
  cJSON *aud = cJSON_GetObjectItem(spec, "audiences");
  if(!cJSON_IsArray(aud) || !cJSON_GetArraySize(aud)) {
    cJSON_DeleteItemFromObject(spec, "audiences");
    aud = cJSON_AddArrayToObject(spec, "audiences");
    cJSON_AddItemToArray(aud, cJSON_CreateString(API_AUDIENCE));
  }
  const cJSON *a;
  cJSON_ArrayForEach(a, aud)
  {
    const char *s = cJSON_GetStringValue(a);
    if(s && (!strcmp(s, API_AUDIENCE) || !strcmp(s, "https://kubernetes.default.svc")))
      b.api_audience = true;
  }
  time_t now = time(NULL);
  b.exp = now + secs;
  ls_uuid(b.jti);
  b.token = make_jwt(&b, aud, now);
  pthread_mutex_lock(&bmu);
  if(nbound == cbound) {
    cbound = cbound ? cbound * 2 : 64;
    bound = realloc(bound, cbound * sizeof(*bound));
    if(!bound)
      abort();
  }
  bound[nbound++] = b;
  pthread_mutex_unlock(&bmu);
  ls_set_item(spec, "expirationSeconds", cJSON_CreateNumber((double)secs));
  cJSON_DeleteItemFromObject(body, "status");
  cJSON *status = cJSON_AddObjectToObject(body, "status");
  cJSON_AddStringToObject(status, "token", b.token);
  char ts[32];
  ls_time_format(b.exp, ts);
  cJSON_AddStringToObject(status, "expirationTimestamp", ts);
  ls_set_str(body, "kind", "TokenRequest");
  ls_set_str(body, "apiVersion", "authentication.k8s.io/v1");
  cJSON *m = ls_meta_obj(body);
  ls_set_str(m, "name", sa);
  ls_set_str(m, "namespace", ns);
  char now_s[32];
  ls_time_format(now, now_s);
  ls_set_str(m, "creationTimestamp", now_s);
  req_reply_take(r, 201, body);
}
