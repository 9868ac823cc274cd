/* env.c: a container's environment, as the kubelet builds it (pkg/kubelet/kubelet_pods.go,
 * makeEnvironmentVariables): the runtime's base variables, the service variables of the
 * `kubernetes` Service, envFrom (in order, later sources win), then env (value with $(VAR)
 * expansion, or valueFrom: secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef).
 * A missing Secret, ConfigMap or key that is not optional is the kubelet's
 * CreateContainerConfigError, with its message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "kubelet.h"


/* ---- a small ordered map of variables ---- */
struct envmap {
  char **v; /* "K=V" */
  size_t n, cap;
  bool oom;
};

static size_t name_len(const char *kv)
{
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : strlen(kv);
}

static void env_set(struct envmap *m, const char *k, const char *v)
{
  size_t kl = strlen(k);
  char *kv = malloc(kl + strlen(v) + 2);
  if(!kv) {
    m->oom = true;
    return;
  }
  sprintf(kv, "%s=%s", k, v);
  for(size_t i = 0; i < m->n; i++)
    if(name_len(m->v[i]) == kl && !strncmp(m->v[i], k, kl)) {
      free(m->v[i]);
      m->v[i] = kv;
      return;
    }
  if(m->n + 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 32;
    char **nv = realloc(m->v, cap * sizeof(*nv));
    if(!nv) {
      free(kv);
      m->oom = true;
      return;
    }
    m->v = nv;
    m->cap = cap;
  }
  m->v[m->n++] = kv;
  m->v[m->n] = NULL;
}

const char *env_get(char *const *env, const char *name)
{
  size_t kl = strlen(name);
  for(size_t i = 0; env && env[i]; i++)
    if(name_len(env[i]) == kl && !strncmp(env[i], name, kl))
      return env[i] + kl + 1;
  return NULL;
}

void env_free(char **env)
{
  for(size_t i = 0; env && env[i]; i++)
    free(env[i]);
  free(env);
}

char *env_expand(const char *s, char *const *env)
{
  size_t cap = strlen(s) + 1, n = 0;
  char *out = malloc(cap);
  if(!out)
    return NULL;
  for(const char *p = s; *p;) {
    const char *add = p;
    size_t alen = 1;
    const char *close = p[0] == '$' && p[1] == '(' ? strchr(p + 2, ')') : NULL;
    if(p[0] == '$' && p[1] == '$') { /* $$ is an escaped $ */
      alen = 1;
      p += 2;
    } else if(close) {
      char name[256];
      size_t nl = (size_t)(close - p - 2);
      const char *val = NULL;
      if(nl < sizeof(name)) {
        memcpy(name, p + 2, nl);
        name[nl] = 0;
        val = env_get(env, name);
      }
      if(val) {
        add = val;
        alen = strlen(val);
      } else { /* an undefined reference stays as written */
        alen = (size_t)(close - p + 1);
      }
      p = close + 1;
    } else {
      p++;
    }
    if(n + alen + 1 > cap) {
      cap = (n + alen + 1) * 2;
      char *no = realloc(out, cap);
      if(!no) {
        free(out);
        return NULL;
      }
      out = no;
    }
    memcpy(out + n, add, alen);
    n += alen;
  }
  out[n] = 0;
  return out;
}

/* metadata.labels['key'] -> key into buf; NULL when path has another form. */
static const char *bracket_key(const char *path, const char *prefix, char *buf, size_t len)
{
  size_t pl = strlen(prefix);
  if(strncmp(path, prefix, pl) || path[pl] != '[' || (path[pl + 1] != '\'' && path[pl + 1] != '"'))
    return NULL;
  const char *k = path + pl + 2;
  const char *end = strchr(k, path[pl + 1]);
  if(!end || (size_t)(end - k) >= len)
    return NULL;
  memcpy(buf, k, (size_t)(end - k));
  buf[end - k] = 0;
  return buf;
}

char *env_field(const cJSON *pod, const char *path, char *err, size_t errlen)
{
  static const struct { const char *field, *json; } plain[] = {
    { "metadata.name", "metadata.name" },
    { "metadata.namespace", "metadata.namespace" },
    { "metadata.uid", "metadata.uid" },
    { "spec.nodeName", "spec.nodeName" },
    { "spec.serviceAccountName", "spec.serviceAccountName" },
  };
  for(size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
    if(!strcmp(path, plain[i].field)) {
      const char *v = json_get_str(pod, plain[i].json);
      return strdup(v ? v : "");
    }
  if(!strcmp(path, "status.podIP") || !strcmp(path, "status.podIPs")) {
    const char *ip = json_get_str(pod, "status.podIP"); /* a sandboxed Pod's own (pods.c) */
    return strdup(ip && *ip ? ip : "127.0.0.1");
  }
  if(!strcmp(path, "status.hostIP") || !strcmp(path, "status.hostIPs"))
    return strdup("127.0.0.1");
  char key[320];
  const char *k;
  if((k = bracket_key(path, "metadata.labels", key, sizeof(key))) ||
     (k = bracket_key(path, "metadata.annotations", key, sizeof(key)))) {
    const cJSON *m = json_get(pod, path[9] == 'l' ? "metadata.labels" : "metadata.annotations");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k);
    return strdup(cJSON_IsString(v) ? v->valuestring : "");
  }
  if(!strcmp(path, "metadata.labels") || !strcmp(path, "metadata.annotations")) {
    /* key="value" lines, sorted, as the downward API formats them */
    const cJSON *m = json_get(pod, path);
    size_t cap = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
      cap += strlen(e->string) + (cJSON_IsString(e) ? strlen(e->valuestring) : 0) + 8;
    }
    char *out = calloc(1, cap);
    if(!out)
      return NULL;
    cJSON *copy = cJSON_Duplicate(m, 1);
    char *canon = copy ? json_print_canonical(copy) : NULL; /* sorted keys */
    cJSON *sorted = NULL;
    if(canon)
      sorted = cJSON_Parse(canon);
    cJSON_ArrayForEach(e, sorted)
    {
      if(!cJSON_IsString(e))
        continue;
      size_t o = strlen(out);
      jr_fmt(out + o, cap - o, "%s%s=\"%s\"", o ? "\n" : "", e->string, e->valuestring);
    }
    cJSON_Delete(sorted);
    cJSON_free(canon);
    cJSON_Delete(copy);
    return out;
  }
  jr_fmt(err, errlen, "unsupported fieldPath: %s", path);
  return NULL;
}

/* requests.cpu / limits.memory of the container, in the divisor's unit (default 1: cores
 * rounded up, bytes); without a value, the node's capacity, as the kubelet reports it. */
static double quantity(const char *q)
{
  char *end;
  double v = strtod(q, &end);
  static const struct { const char *suf; double mul; } s[] = {
    { "m", 1e-3 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 },
    { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 }, { "Ti", 1099511627776.0 },
  };
  for(size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
    if(!strcmp(end, s[i].suf))
      return v * s[i].mul;
  return v;
}

static char *resource_field(const cJSON *ctr, const cJSON *ref)
{
  const char *res = json_get_str(ref, "resource");
  const char *div = json_get_str(ref, "divisor");
  if(!res)
    return strdup("");
  const cJSON *resources = json_get(ctr, "resources");
  const char *dot = strchr(res, '.');
  const cJSON *grp = cJSON_GetObjectItem(resources, dot && !strncmp(res, "requests", 8)
                                                      ? "requests" : "limits");
  const cJSON *v = dot ? cJSON_GetObjectItemCaseSensitive(grp, dot + 1) : NULL;
  double val;
  bool cpu = dot && !strcmp(dot + 1, "cpu");
  if(cJSON_IsString(v))
    val = quantity(v->valuestring);
  else if(cpu)
    val = (double)sysconf(_SC_NPROCESSORS_ONLN);
  else
    val = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  double d = div ? quantity(div) : 1.0;
  if(d <= 0)
    d = 1.0;
  double q = val / d;
  long long r = (long long)q;
  if((double)r < q)
    r++; /* the kubelet rounds up */
  char buf[32];
  jr_fmt(buf, sizeof(buf), "%lld", r);
  return strdup(buf);
}

/* The value of one valueFrom; NULL with *skip for an optional miss, else NULL with err. */
static char *value_from(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *ctr,
                        const cJSON *vf, bool *skip, char *err, size_t errlen)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const cJSON *ref;
  bool secret = (ref = json_get(vf, "secretKeyRef")) != NULL;
  if(secret || (ref = json_get(vf, "configMapKeyRef"))) {
    const char *name = json_get_str(ref, "name");
    const char *key = json_get_str(ref, "key");
    bool optional = json_get_bool(ref, "optional", false);
    gw_rc rc;
    const cJSON *obj = kcache_get(jr, kc, secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, ns,
                                  name ? name : "", &rc);
    if(!obj) {
      if(rc == GW_ENOTFOUND && optional) {
        *skip = true;
        return NULL;
      }
      if(rc == GW_ENOTFOUND)
        jr_fmt(err, errlen, "%s \"%s\" not found", secret ? "secret" : "configmap",
                 name ? name : "");
      else
        jr_fmt(err, errlen, "couldn't get %s %s/%s: %s", secret ? "secret" : "configMap", ns,
                 name ? name : "", gw_strerror(rc));
      return NULL;
    }
    size_t len;
    char *v = kcache_value(obj, secret, key ? key : "", &len);
    if(!v && optional) {
      *skip = true;
      return NULL;
    }
    if(!v)
      jr_fmt(err, errlen, "couldn't find key %s in %s %s/%s", key ? key : "",
               secret ? "Secret" : "ConfigMap", ns, name ? name : "");
    return v;
  }
  if((ref = json_get(vf, "fieldRef")))
    return env_field(pod, json_get_str(ref, "fieldPath") ? json_get_str(ref, "fieldPath") : "",
                     err, errlen);
  if((ref = json_get(vf, "resourceFieldRef")))
    return resource_field(ctr, ref);
  jr_fmt(err, errlen, "unsupported valueFrom source");
  return NULL;
}

/* envFrom: every key of a ConfigMap or Secret, with the prefix. */
static bool env_from(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *src,
                     struct envmap *m, char *err, size_t errlen)
{
  const char *ns = json_get_str(pod, "metadata.namespace");
  const cJSON *ref;
  bool secret = (ref = json_get(src, "secretRef")) != NULL;
  if(!secret && !(ref = json_get(src, "configMapRef")))
    return true;
  const char *name = json_get_str(ref, "name");
  const char *prefix = json_get_str(src, "prefix");
  gw_rc rc;
  const cJSON *obj = kcache_get(jr, kc, secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, ns,
                                name ? name : "", &rc);
  if(!obj) {
    if(rc == GW_ENOTFOUND && json_get_bool(ref, "optional", false))
      return true;
    if(rc == GW_ENOTFOUND)
      jr_fmt(err, errlen, "%s \"%s\" not found", secret ? "secret" : "configmap",
               name ? name : "");
    else
      jr_fmt(err, errlen, "couldn't get %s %s/%s: %s", secret ? "secret" : "configMap", ns,
               name ? name : "", gw_strerror(rc));
    return false;
  }
  for(int pass = 0; pass < 2; pass++) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(obj, pass ? "binaryData" : "data"))
    {
      if(secret && pass)
        break;
      if(strchr(e->string, '='))
        continue; /* not a valid variable name: the kubelet skips it */
      size_t len;
      char *v = kcache_value(obj, secret, e->string, &len);
      if(!v)
        continue;
      char k[512];
      jr_fmt(k, sizeof(k), "%s%s", prefix ? prefix : "", e->string);
      env_set(m, k, v);
      free(v);
    }
  }
  return true;
}

static void base_env(struct jr *jr, const cJSON *pod, struct envmap *m)
{
  /* What an image would set: the runner's own PATH and locale, and the variables named by
   * --pass-env. Never KUBECONFIG: the in-cluster loader must win. */
  static const char *const base[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR",
                                      "LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                                      "LSAN_OPTIONS", NULL };
  for(size_t i = 0; base[i]; i++) {
    const char *v = getenv(base[i]);
    if(v)
      env_set(m, base[i], v);
  }
  if(!getenv("PATH"))
    env_set(m, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  for(size_t i = 0; jr->cfg->pass_env[i]; i++) {
    const char *v = getenv(jr->cfg->pass_env[i]);
    if(v)
      env_set(m, jr->cfg->pass_env[i], v);
  }
  const char *host = json_get_str(pod, "spec.hostname");
  env_set(m, "HOSTNAME", host ? host : json_get_str(pod, "metadata.name"));
  /* The `kubernetes` Service, as every Pod sees it (enableServiceLinks or not). */
  char url[320];
  env_set(m, "KUBERNETES_SERVICE_HOST", jr->api_host);
  env_set(m, "KUBERNETES_SERVICE_PORT", jr->api_port);
  env_set(m, "KUBERNETES_SERVICE_PORT_HTTPS", jr->api_port);
  jr_fmt(url, sizeof(url), "tcp://%s:%s", jr->api_host, jr->api_port);
  env_set(m, "KUBERNETES_PORT", url);
  char k[128];
  jr_fmt(k, sizeof(k), "KUBERNETES_PORT_%s_TCP", jr->api_port);
  env_set(m, k, url);
  jr_fmt(k, sizeof(k), "KUBERNETES_PORT_%s_TCP_PROTO", jr->api_port);
  env_set(m, k, "tcp");
  jr_fmt(k, sizeof(k), "KUBERNETES_PORT_%s_TCP_PORT", jr->api_port);
  env_set(m, k, jr->api_port);
  jr_fmt(k, sizeof(k), "KUBERNETES_PORT_%s_TCP_ADDR", jr->api_port);
  env_set(m, k, jr->api_host);
}

/* What an image brings: --image-path IMAGE=DIR puts DIR first on the PATH of that image's
 * containers (a pgcopydb of another version, say), as its own filesystem would. */
static void image_path(struct jr *jr, const cJSON *ctr, struct envmap *m)
{
  const char *image = json_get_str(ctr, "image");
  for(size_t i = 0; image && jr->cfg->image_paths[i]; i++) {
    const char *ip = jr->cfg->image_paths[i], *eq = strrchr(ip, '=');
    if(!eq || strlen(image) != (size_t)(eq - ip) || strncmp(image, ip, (size_t)(eq - ip)))
      continue;
    const char *path = getenv("PATH");
    char v[8192];
    jr_fmt(v, sizeof(v), "%s:%s", eq + 1, path ? path : "/usr/bin:/bin");
    env_set(m, "PATH", v);
  }
}

char **env_build(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *ctr,
                 const char *sa_dir, char *err, size_t errlen)
{
  struct envmap m = { 0 };
  base_env(jr, pod, &m);
  image_path(jr, ctr, &m);
  if(sa_dir && *sa_dir)
    env_set(&m, "GODWIT_SA_DIR", sa_dir);
  bool ok = true;
  const cJSON *src;
  cJSON_ArrayForEach(src, json_get(ctr, "envFrom"))
  {
    if(ok)
      ok = env_from(jr, kc, pod, src, &m, err, errlen);
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, json_get(ctr, "env"))
  {
    const char *name = json_get_str(e, "name");
    if(!ok || !name)
      continue;
    const cJSON *vf = json_get(e, "valueFrom");
    char *v;
    if(vf) {
      bool skip = false;
      v = value_from(jr, kc, pod, ctr, vf, &skip, err, errlen);
      if(skip)
        continue;
      if(!v) {
        ok = false;
        continue;
      }
    } else {
      const char *raw = json_get_str(e, "value");
      v = env_expand(raw ? raw : "", m.v);
    }
    if(v)
      env_set(&m, name, v);
    free(v);
  }
  if(!ok || m.oom) {
    if(ok)
      jr_fmt(err, errlen, "out of memory");
    env_free(m.v);
    return NULL;
  }
  if(!m.v) { /* never: base_env sets PATH */
    m.v = calloc(1, sizeof(char *));
  }
  return m.v;
}
