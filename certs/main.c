/*
 * godwit-certs: issues the webhook's CA and serving certificate and prints the caBundle.
 *
 *   godwit-certs --out DIR --dns NAME [--dns NAME ...] [--ip ADDR ...] [--reuse-ca] ...
 *
 * stdout carries exactly one line, the base64 caBundle, so that CA=$(godwit-certs ...) works;
 * everything meant for people goes to stderr. Exit status: 0 done, 1 failed (nothing written),
 * 2 usage error. The work is in shared/certgen.c, where it is tested.
 */
#include <stddef.h>
#include <stdio.h>

#include "version.h"
#include "certgen.h"
#include "config.h"

struct certs_config {
  const char *out;
  const char *dns[CFG_MAX_LIST];
  const char *ip[CFG_MAX_LIST];
  const char *service;
  const char *ns;
  long days;
  long ca_days;
  int reuse_ca;
};

#define OFF(f) offsetof(struct certs_config, f)
static const struct cfg_opt options[] = {
  { "out", NULL, CFG_STR, NULL, 0, 0, OFF(out),
    "directory for ca.crt, ca.key, tls.crt, tls.key (created if missing)" },
  { "dns", NULL, CFG_STRLIST, NULL, 0, 0, OFF(dns), "DNS name to certify; repeatable" },
  { "ip", NULL, CFG_STRLIST, NULL, 0, 0, OFF(ip), "IPv4 or IPv6 address to certify; repeatable" },
  { "service", NULL, CFG_STR, NULL, 0, 0, OFF(service),
    "with --namespace: certify NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local" },
  { "namespace", NULL, CFG_STR, NULL, 0, 0, OFF(ns), "namespace of --service" },
  { "days", NULL, CFG_INT, "365", 1, CERTGEN_MAX_DAYS, OFF(days),
    "serving certificate validity in days" },
  { "ca-days", NULL, CFG_INT, "3650", 1, CERTGEN_MAX_DAYS, OFF(ca_days),
    "validity of a new CA in days" },
  { "reuse-ca", NULL, CFG_BOOL, NULL, 0, 0, OFF(reuse_ca),
    "sign with the CA already in DIR so the caBundle stays the same (a new CA only if DIR has "
    "none)" },
  { NULL },
};

static const char summary[] =
  "       godwit-certs --out DIR --dns NAME [--dns NAME ...] [--ip ADDR ...]\n\n"
  "Issues a CA and a serving certificate for the godwit webhook into DIR and prints the base64\n"
  "caBundle (of ca.crt) on stdout. At least one --dns, --ip or --service is required.";

static gw_rc to_opts(const struct certs_config *c, struct certgen_opts *o, char *err,
                     size_t errlen)
{
  if(!c->out || !*c->out) {
    snprintf(err, errlen, "--out DIR is required; see --help");
    return GW_EINVAL;
  }
  if(!c->service != !c->ns) {
    snprintf(err, errlen, "--service and --namespace go together");
    return GW_EINVAL;
  }
  if(!c->dns[0] && !c->ip[0] && !c->service) {
    snprintf(err, errlen, "no name to certify: give at least one --dns, --ip or --service");
    return GW_EINVAL;
  }
  gw_rc rc = certgen_opts_set_out(o, c->out);
  for(size_t i = 0; !rc && c->dns[i]; i++)
    rc = certgen_opts_add_dns(o, c->dns[i]);
  for(size_t i = 0; !rc && c->ip[i]; i++)
    rc = certgen_opts_add_ip(o, c->ip[i]);
  if(!rc && c->service)
    rc = certgen_opts_add_service(o, c->service, c->ns);
  if(rc) {
    snprintf(err, errlen, "%s", gw_strerror(rc));
    return rc;
  }
  o->days = (int)c->days;
  o->ca_days = (int)c->ca_days;
  o->reuse_ca = c->reuse_ca;
  return GW_OK;
}

int main(int argc, char **argv)
{
  if(gw_version_asked(argc, argv, "godwit-certs"))
    return 0;
  struct certs_config cfg = { 0 };
  struct certgen_opts o;
  struct certgen_result res = { 0 };
  char err[1024] = "";
  certgen_opts_init(&o);
  gw_rc rc = cfg_parse(options, &cfg, argc, argv, err, sizeof(err));
  if(rc == GW_ENOTFOUND) {
    cfg_usage(stdout, "godwit-certs", summary, options);
    return 0;
  }
  if(!rc)
    rc = to_opts(&cfg, &o, err, sizeof(err));
  if(rc) {
    fprintf(stderr, "godwit-certs: %s\n", err);
    certgen_opts_release(&o);
    return 2;
  }
  rc = certgen_issue(&o, &res, err, sizeof(err));
  if(!rc) {
    printf("%s\n", res.ca_bundle);
    if(fflush(stdout) || ferror(stdout))
      snprintf(err, sizeof(err), "cannot write the caBundle to stdout");
    rc = *err ? GW_EIO : GW_OK;
  }
  if(rc)
    fprintf(stderr, "godwit-certs: %s\n", err);
  else
    fprintf(stderr, "godwit-certs: wrote tls.crt and tls.key (%d days) into \"%s\", %s\n", o.days,
            o.out_dir,
            res.ca_created ? "signed by a new CA (ca.crt, ca.key): update every caBundle"
                           : "signed by the CA already there (caBundle unchanged)");
  certgen_result_release(&res);
  certgen_opts_release(&o);
  return rc ? 1 : 0;
}
