/* certgen_opts.c: building a struct certgen_opts: defaults, de-duplicated name lists, the names of
 * a Service. The options own copies of every string. */
#include "certgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void certgen_opts_init(struct certgen_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->days = CERTGEN_DEFAULT_DAYS;
  o->ca_days = CERTGEN_DEFAULT_CA_DAYS;
}

static void free_strv(char **v, size_t n)
{
  for(size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void certgen_opts_release(struct certgen_opts *o)
{
  free(o->out_dir);
  free_strv(o->dns, o->ndns);
  free_strv(o->ips, o->nips);
  certgen_opts_init(o);
}

gw_rc certgen_opts_set_out(struct certgen_opts *o, const char *dir)
{
  char *copy = strdup(dir);
  if(!copy)
    return GW_ENOMEM;
  free(o->out_dir);
  o->out_dir = copy;
  return GW_OK;
}

/* Appends a copy of s unless it is already there; the array stays NULL-terminated. */
static gw_rc add_unique(char ***v, size_t *n, const char *s)
{
  for(size_t i = 0; i < *n; i++)
    if(!strcmp((*v)[i], s))
      return GW_OK;
  char **nv = realloc(*v, (*n + 2) * sizeof(**v));
  if(!nv)
    return GW_ENOMEM;
  *v = nv;
  if(!(nv[*n] = strdup(s)))
    return GW_ENOMEM;
  nv[++*n] = NULL;
  return GW_OK;
}

gw_rc certgen_opts_add_dns(struct certgen_opts *o, const char *name)
{
  return add_unique(&o->dns, &o->ndns, name);
}

gw_rc certgen_opts_add_ip(struct certgen_opts *o, const char *addr)
{
  return add_unique(&o->ips, &o->nips, addr);
}

gw_rc certgen_opts_add_service(struct certgen_opts *o, const char *service, const char *ns)
{
  static const char *const suffix[] = { "", ".svc", ".svc.cluster.local" };
  gw_rc rc = certgen_opts_add_dns(o, service);
  for(size_t i = 0; i < 3 && !rc; i++) {
    size_t len = strlen(service) + 1 + strlen(ns) + strlen(suffix[i]) + 1;
    char *name = malloc(len);
    if(!name)
      return GW_ENOMEM;
    snprintf(name, len, "%s.%s%s", service, ns, suffix[i]);
    rc = certgen_opts_add_dns(o, name);
    free(name);
  }
  return rc;
}
