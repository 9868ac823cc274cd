/* volumes.c: what the kubelet mounts into a Pod, as directories on this machine.
 *
 *   persistentVolumeClaim   DIR/volumes/pvc-UID, UID the claim's (outlives the Pod; the claim
 *                           must exist, which the scheduler checked); removed once the claim is
 *                           gone (reclaim policy Delete, as dynamic provisioning sets it:
 *                           volumes_reclaim)
 *   emptyDir                DIR/pods/UID/volumes/NAME (removed with the Pod)
 *   secret, configMap,      files written once at Pod start under DIR/pods/UID/volumes/NAME,
 *   downwardAPI, projected  with items, modes and optional as the kubelet handles them
 *   hostPath                the path itself
 *
 * The service-account directory (DIR/pods/UID/serviceaccount: token, ca.crt, namespace) is
 * what GODWIT_SA_DIR names; its token comes from TokenRequest bound to the Pod, and is renewed
 * at 80% of its lifetime as the kubelet does. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "kubelet.h"
#include "log.h"
#include "strbuf.h"

void volumes_reclaim(struct jr *jr)
{
  char dir[PATH_MAX + 16];
  jr_fmt(dir, sizeof(dir), "%s/volumes", jr->dir);
  /* the directories first, then the claims: a directory is made only for a claim that exists,
   * so one seen here whose claim is missing from the later list lost its claim */
  DIR *d = opendir(dir);
  if(!d)
    return;
  char (*names)[64] = NULL;
  size_t n = 0, cap = 0;
  const struct dirent *de;
  while((de = readdir(d)) != NULL) {
    if(strncmp(de->d_name, "pvc-", 4) || strlen(de->d_name) >= 64)
      continue;
    if(n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      char (*nn)[64] = realloc(names, nc * sizeof(*names));
      if(!nn)
        break;
      names = nn;
      cap = nc;
    }
    jr_fmt(names[n++], sizeof(names[0]), "%s", de->d_name);
  }
  closedir(d);
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = n ? kube_list(jr->k, &KUBE_PVCS, NULL, NULL, &list, &st) : GW_OK;
  kube_status_release(&st);
  for(size_t i = 0; !rc && i < n; i++) {
    bool held = false;
    const cJSON *pvc;
    cJSON_ArrayForEach(pvc, json_get(list, "items"))
    {
      const char *uid = json_get_str(pvc, "metadata.uid");
      if(uid && !strcmp(uid, names[i] + 4))
        held = true;
    }
    if(!held) {
      char path[PATH_MAX + 96];
      jr_fmt(path, sizeof(path), "%s/%s", dir, names[i]);
      log_kv(LOG_INFO, "volume reclaimed: its claim is gone", "path", path, LOG_END);
      jr_rmtree(path);
    }
  }
  cJSON_Delete(list);
  free(names);
}

void volumes_release(struct pod_volumes *pv)
{
  free(pv->v);
  free(pv->tok);
  memset(pv, 0, sizeof(*pv));
}

const struct vol *volumes_find(const struct pod_volumes *pv, const char *name)
{
  for(size_t i = 0; i < pv->n; i++)
    if(!strcmp(pv->v[i].name, name))
      return &pv->v[i];
  return NULL;
}

static const char *sa_name(const cJSON *pod)
{
  const char *sa = json_get_str(pod, "spec.serviceAccountName");
  if(!sa || !*sa)
    sa = json_get_str(pod, "spec.serviceAccount");
  return sa && *sa ? sa : "default";
}

/* The ServiceAccount controller's job in a real cluster: every namespace has "default". */
static void ensure_default_sa(struct jr *jr, const char *ns)
{
  cJSON *sa = cJSON_CreateObject();
  cJSON_AddStringToObject(sa, "apiVersion", "v1");
  cJSON_AddStringToObject(sa, "kind", "ServiceAccount");
  cJSON *md = cJSON_AddObjectToObject(sa, "metadata");
  cJSON_AddStringToObject(md, "name", "default");
  cJSON_AddStringToObject(md, "namespace", ns);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jr->k, &KUBE_SERVICEACCOUNTS, ns, sa, false, NULL, &st);
  kube_status_release(&st);
  cJSON_Delete(sa);
  (void)rc;
}

static gw_rc token_request(struct jr *jr, const cJSON *pod, const char *audience, long exp_s,
                           char **token, time_t *expires, char *err, size_t errlen)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const char *sa = sa_name(pod);
  cJSON *tr = cJSON_CreateObject();
  cJSON_AddStringToObject(tr, "apiVersion", "authentication.k8s.io/v1");
  cJSON_AddStringToObject(tr, "kind", "TokenRequest");
  cJSON *spec = cJSON_AddObjectToObject(tr, "spec");
  if(audience && *audience) {
    cJSON *a = cJSON_AddArrayToObject(spec, "audiences");
    cJSON_AddItemToArray(a, cJSON_CreateString(audience));
  }
  cJSON_AddNumberToObject(spec, "expirationSeconds", (double)exp_s);
  cJSON *ref = cJSON_AddObjectToObject(spec, "boundObjectRef");
  cJSON_AddStringToObject(ref, "kind", "Pod");
  cJSON_AddStringToObject(ref, "apiVersion", "v1");
  cJSON_AddStringToObject(ref, "name", json_get_str(pod, "metadata.name"));
  cJSON_AddStringToObject(ref, "uid", json_get_str(pod, "metadata.uid"));
  char *body = cJSON_PrintUnformatted(tr);
  cJSON_Delete(tr);
  char path[1024];
  jr_fmt(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
  gw_rc rc = GW_ENOMEM;
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  for(int attempt = 0; body && attempt < 2; attempt++) {
    rc = kube_request(jr->k, "POST", path, "application/json", body, &out, &st);
    if(rc == GW_ENOTFOUND && !attempt && !strcmp(sa, "default") &&
       strstr(st.message, "serviceaccount")) {
      ensure_default_sa(jr, ns);
      continue;
    }
    break;
  }
  cJSON_free(body);
  const char *tok = json_get_str(out, "status.token");
  if(!rc && !tok)
    rc = GW_EPARSE;
  if(rc) {
    jr_fmt(err, errlen, "failed to fetch token: %s",
             st.message[0] ? st.message : gw_strerror(rc));
  } else {
    *token = strdup(tok);
    time_t e = jr_parse_time(json_get_str(out, "status.expirationTimestamp"));
    *expires = e > 0 ? e : time(NULL) + exp_s;
    if(!*token)
      rc = GW_ENOMEM;
  }
  kube_status_release(&st);
  cJSON_Delete(out);
  return rc;
}

/* Requests each token and writes it; schedules the next renewal. */
static gw_rc write_tokens(struct jr *jr, const cJSON *pod, struct pod_volumes *pv, char *err,
                          size_t errlen)
{
  time_t now = time(NULL), soonest = 0;
  for(size_t i = 0; i < pv->ntok; i++) {
    char *tok = NULL;
    time_t exp;
    gw_rc rc = token_request(jr, pod, pv->tok[i].audience, pv->tok[i].expiration_s, &tok, &exp,
                             err, errlen);
    if(rc)
      return rc;
    int w = jr_write_file(pv->tok[i].path, tok, strlen(tok), 0644);
    free(tok);
    if(w) {
      jr_fmt(err, errlen, "cannot write token to %s: %s", pv->tok[i].path, strerror(errno));
      return GW_EIO;
    }
    time_t due = now + (exp - now) * 8 / 10;
    if(!soonest || due < soonest)
      soonest = due;
  }
  long in_s = soonest > now + 10 ? (long)(soonest - now) : 10;
  pv->refresh_ms = jr_mono_ms() + (int64_t)in_s * 1000;
  return GW_OK;
}

void volumes_refresh(struct jr *jr, const cJSON *pod, struct pod_volumes *pv)
{
  if(!pv->ntok)
    return;
  if(jr_mono_ms() < pv->refresh_ms) {
    jr_wake_at(jr, pv->refresh_ms);
    return;
  }
  char err[1024];
  if(write_tokens(jr, pod, pv, err, sizeof(err))) {
    log_kv(LOG_WARN, "token not renewed", "pod", json_get_str(pod, "metadata.name"), "error",
           err, LOG_END);
    pv->refresh_ms = jr_mono_ms() + 5000;
  }
  jr_wake_at(jr, pv->refresh_ms);
}

static gw_rc add_token(struct pod_volumes *pv, const char *path, const char *audience,
                       long exp_s)
{
  struct token_file *t = realloc(pv->tok, (pv->ntok + 1) * sizeof(*t));
  if(!t)
    return GW_ENOMEM;
  pv->tok = t;
  t = &pv->tok[pv->ntok++];
  memset(t, 0, sizeof(*t));
  jr_fmt(t->path, sizeof(t->path), "%s", path);
  jr_fmt(t->audience, sizeof(t->audience), "%s", audience ? audience : "");
  t->expiration_s = exp_s > 0 ? exp_s : 3600;
  return GW_OK;
}

/* Writes dir/rel (rel relative, no ".."), creating its directories. */
static gw_rc write_item(const char *dir, const char *rel, const void *data, size_t len,
                        long mode, char *err, size_t errlen)
{
  if(!rel || !*rel || rel[0] == '/' || strstr(rel, "..")) {
    jr_fmt(err, errlen, "invalid item path \"%s\"", rel ? rel : "");
    return GW_EINVAL;
  }
  char path[PATH_MAX];
  jr_fmt(path, sizeof(path), "%s/%s", dir, rel);
  char *slash = strrchr(path, '/');
  *slash = 0;
  int r = jr_mkdirs(path, 0755);
  *slash = '/';
  if(r || jr_write_file(path, data, len, (mode_t)(mode & 07777))) {
    jr_fmt(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return GW_EIO;
  }
  return GW_OK;
}

/* A Secret or ConfigMap source (volume or projection) into dir. */
static gw_rc write_keys(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *src,
                        bool secret, const char *dir, long mode, char *err, size_t errlen)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const char *name = json_get_str(src, secret ? "secretName" : "name");
  if(secret && !name)
    name = json_get_str(src, "name"); /* a projected secret source names it "name" */
  bool optional = json_get_bool(src, "optional", false);
  gw_rc rc;
  const cJSON *obj = kcache_get(jr, kc, secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, ns,
                                name ? name : "", &rc);
  if(!obj && rc == GW_ENOTFOUND && !secret && name && !strcmp(name, "kube-root-ca.crt")) {
    /* No root-CA publisher here: kube-root-ca.crt is the API server's CA. */
    const char *ca = jr->ca_pem ? jr->ca_pem : "";
    return write_item(dir, "ca.crt", ca, strlen(ca), mode, err, errlen);
  }
  if(!obj) {
    if(rc == GW_ENOTFOUND && optional)
      return GW_OK;
    if(rc == GW_ENOTFOUND)
      jr_fmt(err, errlen, "%s \"%s\" not found", secret ? "secret" : "configmap",
               name ? name : "");
    else
      jr_fmt(err, errlen, "couldn't get %s %s/%s: %s", secret ? "secret" : "configmap", ns,
               name ? name : "", gw_strerror(rc));
    return rc;
  }
  const cJSON *items = json_get(src, "items");
  if(cJSON_GetArraySize(items)) {
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
      const char *key = json_get_str(it, "key");
      size_t len;
      char *v = kcache_value(obj, secret, key ? key : "", &len);
      if(!v) {
        if(optional)
          continue;
        jr_fmt(err, errlen, "%s references non-existent %s key: %s",
                 secret ? "secret" : "configmap", secret ? "secret" : "config", key ? key : "");
        return GW_ENOTFOUND;
      }
      rc = write_item(dir, json_get_str(it, "path"), v, len, jr_json_long(it, "mode", mode), err,
                      errlen);
      free(v);
      if(rc)
        return rc;
    }
    return GW_OK;
  }
  for(int pass = 0; pass < 2; pass++) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(obj, pass ? "binaryData" : "data"))
    {
      if(secret && pass)
        break;
      size_t len;
      char *v = kcache_value(obj, secret, e->string, &len);
      if(!v)
        continue;
      rc = write_item(dir, e->string, v, len, mode, err, errlen);
      free(v);
      if(rc)
        return rc;
    }
  }
  return GW_OK;
}

static gw_rc write_downward(const cJSON *pod, const cJSON *items, const char *dir, long mode,
                            char *err, size_t errlen)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, items)
  {
    const char *fp = json_get_str(it, "fieldRef.fieldPath");
    char *v = fp ? env_field(pod, fp, err, errlen) : strdup("");
    if(!v)
      return GW_EINVAL;
    gw_rc rc = write_item(dir, json_get_str(it, "path"), v, strlen(v),
                          jr_json_long(it, "mode", mode), err, errlen);
    free(v);
    if(rc)
      return rc;
  }
  return GW_OK;
}

static gw_rc projected(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *proj,
                       const char *dir, struct pod_volumes *pv, char *err, size_t errlen)
{
  long mode = jr_json_long(proj, "defaultMode", 0644);
  const cJSON *s;
  cJSON_ArrayForEach(s, json_get(proj, "sources"))
  {
    gw_rc rc = GW_OK;
    const cJSON *x;
    if((x = json_get(s, "serviceAccountToken"))) {
      char path[PATH_MAX];
      const char *rel = json_get_str(x, "path");
      if(!rel || !*rel || rel[0] == '/' || strstr(rel, "..")) {
        jr_fmt(err, errlen, "invalid serviceAccountToken path");
        return GW_EINVAL;
      }
      jr_fmt(path, sizeof(path), "%s/%s", dir, rel);
      rc = add_token(pv, path, json_get_str(x, "audience"),
                     jr_json_long(x, "expirationSeconds", 3600));
    } else if((x = json_get(s, "secret"))) {
      rc = write_keys(jr, kc, pod, x, true, dir, mode, err, errlen);
    } else if((x = json_get(s, "configMap"))) {
      rc = write_keys(jr, kc, pod, x, false, dir, mode, err, errlen);
    } else if((x = json_get(s, "downwardAPI"))) {
      rc = write_downward(pod, json_get(x, "items"), dir, mode, err, errlen);
    }
    if(rc)
      return rc;
  }
  return GW_OK;
}

/* One volume: its directory and content. */
static gw_rc one_volume(struct jr *jr, struct kcache *kc, const cJSON *pod, const char *pod_dir,
                        const cJSON *v, struct vol *out, struct pod_volumes *pv, char *err,
                        size_t errlen)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const char *name = json_get_str(v, "name");
  jr_fmt(out->name, sizeof(out->name), "%s", name ? name : "");
  jr_fmt(out->path, sizeof(out->path), "%s/volumes/%s", pod_dir, out->name);
  const cJSON *x;
  if((x = json_get(v, "persistentVolumeClaim"))) {
    /* the claim's volume, as dynamic provisioning names it: its data belongs to this claim
     * (its uid), not to a later claim of the same name */
    const char *claim = json_get_str(x, "claimName");
    cJSON *pvc = NULL;
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_get(jr->k, &KUBE_PVCS, ns, claim ? claim : "", &pvc, &st);
    kube_status_release(&st);
    const char *uid = rc ? NULL : json_get_str(pvc, "metadata.uid");
    if(!uid || !*uid || strchr(uid, '/')) {
      jr_fmt(err, errlen, "persistentvolumeclaim \"%s\": %s", claim ? claim : "",
             rc ? gw_strerror(rc) : "no uid");
      cJSON_Delete(pvc);
      return rc ? rc : GW_EIO;
    }
    jr_fmt(out->path, sizeof(out->path), "%s/volumes/pvc-%s", jr->dir, uid);
    cJSON_Delete(pvc);
    out->ro = json_get_bool(x, "readOnly", false);
    if(jr_mkdirs(out->path, 0777)) {
      jr_fmt(err, errlen, "cannot create %s: %s", out->path, strerror(errno));
      return GW_EIO;
    }
    return GW_OK;
  }
  if((x = json_get(v, "hostPath"))) {
    const char *p = json_get_str(x, "path");
    const char *type = json_get_str(x, "type");
    jr_fmt(out->path, sizeof(out->path), "%s", p ? p : "");
    struct stat st;
    if(type && !strcmp(type, "DirectoryOrCreate") && jr_mkdirs(out->path, 0755)) {
      jr_fmt(err, errlen, "cannot create %s: %s", out->path, strerror(errno));
      return GW_EIO;
    }
    if(type && !strcmp(type, "Directory") && (stat(out->path, &st) || !S_ISDIR(st.st_mode))) {
      jr_fmt(err, errlen, "hostPath type check failed: %s is not a directory", out->path);
      return GW_EINVAL;
    }
    return GW_OK;
  }
  /* Everything else lives in a fresh per-Pod directory. */
  jr_rmtree(out->path);
  if(jr_mkdirs(out->path, 0777) || chmod(out->path, 0777)) {
    jr_fmt(err, errlen, "cannot create %s: %s", out->path, strerror(errno));
    return GW_EIO;
  }
  if(json_get(v, "emptyDir"))
    return GW_OK;
  out->ro = true; /* the kubelet mounts these read-only */
  if((x = json_get(v, "secret")))
    return write_keys(jr, kc, pod, x, true, out->path, jr_json_long(x, "defaultMode", 0644), err,
                      errlen);
  if((x = json_get(v, "configMap")))
    return write_keys(jr, kc, pod, x, false, out->path, jr_json_long(x, "defaultMode", 0644),
                      err, errlen);
  if((x = json_get(v, "downwardAPI")))
    return write_downward(pod, json_get(x, "items"), out->path,
                          jr_json_long(x, "defaultMode", 0644), err, errlen);
  if((x = json_get(v, "projected")))
    return projected(jr, kc, pod, x, out->path, pv, err, errlen);
  const cJSON *m;
  cJSON_ArrayForEach(m, v)
  {
    if(strcmp(m->string, "name")) {
      jr_fmt(err, errlen, "volume type %s is not supported by the local cluster", m->string);
      return GW_EUNSUPPORTED;
    }
  }
  jr_fmt(err, errlen, "no volume source");
  return GW_EINVAL;
}

static gw_rc sa_dir(struct jr *jr, const cJSON *pod, const char *pod_dir, struct pod_volumes *pv,
                    char *err, size_t errlen)
{
  const cJSON *am = json_get(pod, "spec.automountServiceAccountToken");
  if(cJSON_IsFalse(am))
    return GW_OK;
  jr_fmt(pv->sa_dir, sizeof(pv->sa_dir), "%s/serviceaccount", pod_dir);
  if(jr_mkdirs(pv->sa_dir, 0755)) {
    jr_fmt(err, errlen, "cannot create %s: %s", pv->sa_dir, strerror(errno));
    return GW_EIO;
  }
  const char *ns = json_get_str(pod, "metadata.namespace");
  const char *ca = jr->ca_pem ? jr->ca_pem : "";
  char p[PATH_MAX];
  jr_fmt(p, sizeof(p), "%s/ca.crt", pv->sa_dir);
  gw_rc rc = jr_write_file(p, ca, strlen(ca), 0644) ? GW_EIO : GW_OK;
  jr_fmt(p, sizeof(p), "%s/namespace", pv->sa_dir);
  if(!rc)
    rc = jr_write_file(p, ns, strlen(ns), 0644) ? GW_EIO : GW_OK;
  jr_fmt(p, sizeof(p), "%s/token", pv->sa_dir);
  if(!rc)
    rc = add_token(pv, p, NULL, jr->cfg->token_expiration_s);
  if(rc)
    jr_fmt(err, errlen, "cannot write the service-account directory %s", pv->sa_dir);
  return rc;
}

gw_rc volumes_setup(struct jr *jr, struct kcache *kc, const cJSON *pod, const char *pod_dir,
                    struct pod_volumes *pv, char *err, size_t errlen)
{
  volumes_release(pv);
  char volname[300] = "kube-api-access";
  char inner[768];
  gw_rc rc = sa_dir(jr, pod, pod_dir, pv, inner, sizeof(inner));
  const cJSON *vols = json_get(pod, "spec.volumes");
  int n = cJSON_GetArraySize(vols);
  if(!rc && n) {
    pv->v = calloc((size_t)n, sizeof(*pv->v));
    if(!pv->v)
      rc = GW_ENOMEM;
  }
  const cJSON *v;
  cJSON_ArrayForEach(v, vols)
  {
    if(rc)
      break;
    jr_fmt(volname, sizeof(volname), "%s",
             json_get_str(v, "name") ? json_get_str(v, "name") : "");
    rc = one_volume(jr, kc, pod, pod_dir, v, &pv->v[pv->n], pv, inner, sizeof(inner));
    if(!rc)
      pv->n++;
  }
  if(!rc) {
    jr_fmt(volname, sizeof(volname), "kube-api-access");
    rc = write_tokens(jr, pod, pv, inner, sizeof(inner));
  }
  if(rc) {
    jr_fmt(err, errlen, "MountVolume.SetUp failed for volume \"%s\" : %s", volname, inner);
    volumes_release(pv);
    return rc;
  }
  jr_wake_at(jr, pv->refresh_ms);
  return GW_OK;
}
