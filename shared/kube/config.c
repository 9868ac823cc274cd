/* Where the client finds its server and credentials, in client-go's order (kubeconfig.c reads
 * the files), and the in-cluster service account. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube_int.h"

#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void kube_config_defaults(struct kube_config *c)
{
  memset(c, 0, sizeof(*c));
  c->qps = 20;
  c->burst = 30;
  c->max_retries = 5;
  c->timeout_ms = 30000;
}

void kube_config_release(struct kube_config *c)
{
  if(!c)
    return;
  free(c->server);
  free(c->ca_file);
  free(c->ca_data);
  free(c->cert_file);
  free(c->key_file);
  free(c->cert_data);
  free(c->key_data);
  if(c->token) /* wipe: the token is a credential */
    memset(c->token, 0, strlen(c->token));
  free(c->token);
  free(c->token_file);
  free(c->namespace);
  free(c->impersonate_user);
  for(int i = 0; i < 8 && c->impersonate_groups[i]; i++)
    free(c->impersonate_groups[i]);
  kube_config_defaults(c);
}

static gw_rc dup_into(char **dst, const char *src)
{
  *dst = NULL;
  if(!src)
    return GW_OK;
  *dst = strdup(src);
  return *dst ? GW_OK : GW_ENOMEM;
}

gw_rc kube_config_copy(struct kube_config *d, const struct kube_config *s)
{
  *d = *s;
  char *const *from[] = { &s->server, &s->ca_file, &s->ca_data, &s->cert_file, &s->key_file,
                          &s->cert_data, &s->key_data, &s->token, &s->token_file,
                          &s->namespace, &s->impersonate_user };
  char **to[] = { &d->server, &d->ca_file, &d->ca_data, &d->cert_file, &d->key_file,
                  &d->cert_data, &d->key_data, &d->token, &d->token_file, &d->namespace,
                  &d->impersonate_user };
  gw_rc rc = GW_OK;
  for(size_t i = 0; i < sizeof(to) / sizeof(to[0]); i++)
    if(dup_into(to[i], rc ? NULL : *from[i]))
      rc = GW_ENOMEM;
  memset(d->impersonate_groups, 0, sizeof(d->impersonate_groups));
  for(int i = 0; i < 7 && s->impersonate_groups[i] && !rc; i++)
    rc = dup_into(&d->impersonate_groups[i], s->impersonate_groups[i]);
  if(rc)
    kube_config_release(d);
  return rc;
}

gw_rc kube_config_load(struct kube_config *c, const char *path, const char *context, char *err,
                       size_t errlen)
{
  kube_config_defaults(c);
  if(errlen)
    err[0] = '\0';
  const char *env = getenv("KUBECONFIG");
  gw_rc rc;
  if(path && *path) {
    rc = kube_kubeconfig_load(c, path, NULL, context, err, errlen);
  } else if(env && *env) {
    rc = kube_kubeconfig_load(c, NULL, env, context, err, errlen);
  } else if(getenv("KUBERNETES_SERVICE_HOST") && getenv("KUBERNETES_SERVICE_PORT")) {
    rc = kube_config_in_cluster(c, err, errlen);
  } else {
    const char *home = getenv("HOME");
    char p[1024];
    snprintf(p, sizeof(p), "%s/.kube/config", home ? home : "");
    if(!home || access(p, F_OK) != 0) {
      snprintf(err, errlen, "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run "
               "in a cluster, or write ~/.kube/config");
      return GW_ENOTFOUND;
    }
    rc = kube_kubeconfig_load(c, p, NULL, context, err, errlen);
  }
  if(rc)
    kube_config_release(c);
  return rc;
}

/* ---- in-cluster ---- */

static char *read_small_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  return strdup(buf);
}

gw_rc kube_config_in_cluster(struct kube_config *c, char *err, size_t errlen)
{
  kube_config_defaults(c);
  if(errlen)
    err[0] = '\0';
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  if(!host || !*host || !port || !*port) {
    snprintf(err, errlen, "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
             "must be set");
    return GW_ENOTFOUND;
  }
  const char *dir = getenv("GODWIT_SA_DIR");
  if(!dir || !*dir)
    dir = DEFAULT_SA_DIR;
  char p[1024];
  snprintf(p, sizeof(p), "%s/token", dir);
  if(access(p, R_OK) != 0) {
    snprintf(err, errlen, "in-cluster: cannot read the service-account token \"%s\": %s", p,
             strerror(errno));
    return GW_ENOTFOUND;
  }
  gw_rc rc = dup_into(&c->token_file, p);
  char server[600];
  snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
           port);
  if(!rc)
    rc = dup_into(&c->server, server);
  snprintf(p, sizeof(p), "%s/ca.crt", dir);
  if(!rc && access(p, R_OK) == 0)
    rc = dup_into(&c->ca_file, p);
  snprintf(p, sizeof(p), "%s/namespace", dir);
  char *ns = read_small_file(p);
  if(!rc && (!ns || !*ns)) {
    const char *env = getenv("POD_NAMESPACE");
    rc = dup_into(&c->namespace, env && *env ? env : "default");
  } else if(!rc) {
    c->namespace = ns;
    ns = NULL;
  }
  free(ns);
  if(rc)
    kube_config_release(c);
  return rc;
}
