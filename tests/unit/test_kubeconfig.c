/* kube_config_load and kube_config_in_cluster: kubeconfig variants, context selection, merged
 * KUBECONFIG lists, -data fields, the in-cluster service account, and bad files refused with a
 * message that names the field. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kube.h"
#include "strbuf.h"

static char dir[64];

static void mkdir_tmp(void)
{
  snprintf(dir, sizeof(dir), "/tmp/gw-kubeconfig-XXXXXX");
  cr_assert(mkdtemp(dir));
  /* Nothing from the machine running the tests may leak in. */
  unsetenv("KUBECONFIG");
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  unsetenv("GODWIT_SA_DIR");
  unsetenv("POD_NAMESPACE");
  setenv("HOME", dir, 1);
}

static void rm_tmp(void)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(kubeconfig, .init = mkdir_tmp, .fini = rm_tmp);

/* Writes dir/name and returns its path (static buffer per call site: copy if kept). */
static const char *write_file(const char *name, const char *text)
{
  static char path[4][256];
  static int turn;
  char *p = path[turn++ % 4];
  snprintf(p, 256, "%s/%s", dir, name);
  char *slash = strrchr(p, '/');
  *slash = '\0';
  mkdir(p, 0700);
  *slash = '/';
  FILE *f = fopen(p, "w");
  cr_assert(f, "cannot write %s", p);
  fputs(text, f);
  fclose(f);
  return p;
}

#define PEM_CA "-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n"
/* base64 of PEM_CA */
#define PEM_CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlQ0EKLS0tLS1FTkQgQ0VS" \
                   "VElGSUNBVEUtLS0tLQo="

static const char *const basic =
  "apiVersion: v1\n"
  "kind: Config\n"
  "current-context: admin\n"
  "clusters:\n"
  "- name: local\n"
  "  cluster:\n"
  "    server: https://127.0.0.1:6443/\n"
  "    certificate-authority: certs/ca.crt\n"
  "- name: other\n"
  "  cluster:\n"
  "    server: https://10.0.0.1:443\n"
  "    insecure-skip-tls-verify: true\n"
  "contexts:\n"
  "- name: admin\n"
  "  context:\n"
  "    cluster: local\n"
  "    user: admin\n"
  "    namespace: team-a\n"
  "- name: alice\n"
  "  context: {cluster: other, user: alice}\n"
  "users:\n"
  "- name: admin\n"
  "  user:\n"
  "    token: s3cret-admin\n"
  "- name: alice\n"
  "  user:\n"
  "    tokenFile: alice.token\n"
  "    as: bob\n"
  "    as-groups: [db-approvers, ops]\n";

static void load_ok(struct kube_config *c, const char *path, const char *context)
{
  char err[512];
  gw_rc rc = kube_config_load(c, path, context, err, sizeof(err));
  cr_assert_eq(rc, GW_OK, "%s: %s", gw_strerror(rc), err);
}

Test(kubeconfig, current_context_with_token_and_relative_ca)
{
  write_file("certs/ca.crt", PEM_CA);
  write_file("alice.token", "t\n");
  const char *p = write_file("config", basic);
  struct kube_config c;
  load_ok(&c, p, NULL);
  cr_assert_str_eq(c.server, "https://127.0.0.1:6443/");
  char want[256];
  snprintf(want, sizeof(want), "%s/certs/ca.crt", dir);
  cr_assert_str_eq(c.ca_file, want, "relative to the kubeconfig's directory");
  cr_assert_null(c.ca_data);
  cr_assert_str_eq(c.token, "s3cret-admin");
  cr_assert_null(c.token_file);
  cr_assert_str_eq(c.namespace, "team-a");
  cr_assert_not(c.insecure_skip_verify);
  cr_assert_null(c.impersonate_user);
  cr_assert_eq(c.qps, 20);
  cr_assert_eq(c.burst, 30);
  cr_assert_eq(c.max_retries, 5);
  cr_assert_eq(c.timeout_ms, 30000);
  kube_config_release(&c);
}

Test(kubeconfig, named_context_token_file_and_impersonation)
{
  write_file("certs/ca.crt", PEM_CA);
  write_file("alice.token", "t\n");
  const char *p = write_file("config", basic);
  struct kube_config c;
  load_ok(&c, p, "alice");
  cr_assert_str_eq(c.server, "https://10.0.0.1:443");
  cr_assert(c.insecure_skip_verify);
  cr_assert_null(c.token);
  char want[256];
  snprintf(want, sizeof(want), "%s/alice.token", dir);
  cr_assert_str_eq(c.token_file, want);
  cr_assert_str_eq(c.namespace, "default", "no namespace in the context: default");
  cr_assert_str_eq(c.impersonate_user, "bob");
  cr_assert_str_eq(c.impersonate_groups[0], "db-approvers");
  cr_assert_str_eq(c.impersonate_groups[1], "ops");
  cr_assert_null(c.impersonate_groups[2]);
  kube_config_release(&c);
}

Test(kubeconfig, data_fields_are_decoded)
{
  const char *p = write_file("config",
                             "current-context: c\n"
                             "clusters:\n"
                             "- name: k\n"
                             "  cluster:\n"
                             "    server: https://k.example:6443\n"
                             "    certificate-authority-data: " PEM_CA_B64 "\n"
                             "contexts:\n"
                             "- name: c\n"
                             "  context: {cluster: k, user: u, namespace: ns1}\n"
                             "users:\n"
                             "- name: u\n"
                             "  user:\n"
                             "    client-certificate-data: " PEM_CA_B64 "\n"
                             "    client-key-data: |\n"
                             "      LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlQ0EKLS0tLS1F\n"
                             "      TkQgQ0VSVElGSUNBVEUtLS0tLQo=\n");
  struct kube_config c;
  load_ok(&c, p, NULL);
  cr_assert_str_eq(c.ca_data, PEM_CA);
  cr_assert_str_eq(c.cert_data, PEM_CA);
  cr_assert_str_eq(c.key_data, PEM_CA, "line breaks inside base64 are ignored");
  cr_assert_null(c.ca_file);
  cr_assert_null(c.cert_file);
  cr_assert_null(c.key_file);
  cr_assert_null(c.token);
  cr_assert_str_eq(c.namespace, "ns1");
  kube_config_release(&c);
}

Test(kubeconfig, client_certificate_files)
{
  write_file("pki/tls.crt", PEM_CA);
  write_file("pki/tls.key", PEM_CA);
  char text[1024];
  snprintf(text, sizeof(text),
           "current-context: c\n"
           "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:8080'}}]\n"
           "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
           "users: [{name: u, user: {client-certificate: pki/tls.crt, client-key: %s/pki/tls.key}}]\n",
           dir);
  const char *p = write_file("config", text);
  struct kube_config c;
  load_ok(&c, p, NULL);
  char want[256];
  snprintf(want, sizeof(want), "%s/pki/tls.crt", dir);
  cr_assert_str_eq(c.cert_file, want);
  snprintf(want, sizeof(want), "%s/pki/tls.key", dir);
  cr_assert_str_eq(c.key_file, want, "absolute paths stay as they are");
  kube_config_release(&c);
}

Test(kubeconfig, kubeconfig_env_merges_files_first_wins)
{
  write_file("a.yaml", "current-context: one\n"
                       "contexts: [{name: one, context: {cluster: shared, user: u1}}]\n"
                       "users: [{name: u1, user: {token: from-a}}]\n"
                       "clusters: [{name: shared, cluster: {server: 'https://a:1'}}]\n");
  write_file("b.yaml", "current-context: two\n"
                       "contexts: [{name: two, context: {cluster: shared, user: u1, namespace: b}}]\n"
                       "users: [{name: u1, user: {token: from-b}}]\n"
                       "clusters: [{name: shared, cluster: {server: 'https://b:1'}}]\n");
  char env[512];
  snprintf(env, sizeof(env), "%s/missing.yaml:%s/a.yaml:%s/b.yaml", dir, dir, dir);
  setenv("KUBECONFIG", env, 1);
  struct kube_config c;
  load_ok(&c, NULL, NULL);
  cr_assert_str_eq(c.server, "https://a:1", "the first file that names a cluster wins");
  cr_assert_str_eq(c.token, "from-a");
  cr_assert_str_eq(c.namespace, "default");
  kube_config_release(&c);
  load_ok(&c, NULL, "two");
  cr_assert_str_eq(c.namespace, "b", "a context only the second file has");
  cr_assert_str_eq(c.server, "https://a:1");
  kube_config_release(&c);
}

Test(kubeconfig, explicit_path_beats_the_environment)
{
  setenv("KUBECONFIG", "/nonexistent/kubeconfig", 1);
  const char *p = write_file("x", "current-context: c\n"
                                  "contexts: [{name: c, context: {cluster: k}}]\n"
                                  "clusters: [{name: k, cluster: {server: 'https://x:1'}}]\n");
  struct kube_config c;
  load_ok(&c, p, NULL);
  cr_assert_str_eq(c.server, "https://x:1");
  cr_assert_null(c.token, "a context without a user is anonymous");
  kube_config_release(&c);
}

Test(kubeconfig, home_kube_config_is_the_last_resort)
{
  write_file(".kube/config", "current-context: c\n"
                             "contexts: [{name: c, context: {cluster: k}}]\n"
                             "clusters: [{name: k, cluster: {server: 'https://home:1'}}]\n");
  struct kube_config c;
  load_ok(&c, NULL, NULL);
  cr_assert_str_eq(c.server, "https://home:1");
  kube_config_release(&c);
}

Test(kubeconfig, nothing_configured_says_what_to_do)
{
  struct kube_config c;
  char err[512];
  cr_assert_eq(kube_config_load(&c, NULL, NULL, err, sizeof(err)), GW_ENOTFOUND);
  cr_assert(strstr(err, "KUBECONFIG") && strstr(err, "--kubeconfig"), "%s", err);
}

/* ---- refused kubeconfigs: the message names the field ---- */

struct bad {
  const char *text;
  const char *context;
  const char *needle1, *needle2;
};

static const char *const okcluster =
  "clusters: [{name: k, cluster: {server: 'https://k:1'}}]\n";

static struct bad bad_cases[] = {
  { "contexts: [{name: c, context: {cluster: k}}]\n", NULL, "current-context", "not set" },
  { "current-context: nope\ncontexts: [{name: c, context: {cluster: k}}]\n", NULL, "contexts",
    "\"nope\"" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n", "zz", "contexts",
    "\"zz\"" },
  { "current-context: c\ncontexts: [{name: c, context: {user: u}}]\n", NULL,
    "contexts[name=c].context.cluster", "missing" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: gone}}]\n", NULL, "clusters",
    "\"gone\"" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n", NULL,
    "clusters[name=k].cluster.server", "missing" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {server: 'k:6443'}}]\n", NULL,
    "clusters[name=k].cluster.server", "not an http(s) URL" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority-data: '!!notb64'}}]\n",
    NULL, "clusters[name=k].cluster.certificate-authority-data", "base64" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority: /nonexistent/ca.crt}}]\n",
    NULL, "clusters[name=k].cluster.certificate-authority", "/nonexistent/ca.crt" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://k', insecure-skip-tls-verify: true, "
    "certificate-authority-data: " PEM_CA_B64 "}}]\n",
    NULL, "insecure-skip-tls-verify", "certificate-authority" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://k', insecure-skip-tls-verify: maybe}}]\n",
    NULL, "insecure-skip-tls-verify", "true or false" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n", NULL,
    "users", "\"u\"" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "users: [{name: u, user: {client-certificate-data: " PEM_CA_B64 "}}]\n", NULL,
    "users[name=u].user.client-key", "missing" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "users: [{name: u, user: {token: [a, b]}}]\n", NULL, "users[name=u].user.token",
    "must be a string" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "users: [{name: u, user: {exec: {command: aws}}}]\n", NULL, "users[name=u].user.exec",
    "not supported" },
  { "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "users: [{name: u, user: {tokenFile: /nonexistent/token}}]\n", NULL,
    "users[name=u].user.tokenFile", "/nonexistent/token" },
  { "current-context: c\ncontexts: {c: {cluster: k}}\n", NULL, "contexts", "must be a list" },
};

#define NBAD (sizeof(bad_cases) / sizeof(bad_cases[0]))

ParameterizedTestParameters(kubeconfig, refused)
{
  static size_t idx[NBAD];
  for(size_t i = 0; i < NBAD; i++)
    idx[i] = i;
  return cr_make_param_array(size_t, idx, NBAD);
}

ParameterizedTest(size_t *i, kubeconfig, refused)
{
  const struct bad *b = &bad_cases[*i];
  char text[2048];
  /* The cluster list goes first unless the case brings its own. */
  snprintf(text, sizeof(text), "%s%s", strstr(b->text, "clusters:") ? "" : okcluster, b->text);
  const char *p = write_file("config", text);
  struct kube_config c;
  char err[512] = "";
  gw_rc rc = kube_config_load(&c, p, b->context, err, sizeof(err));
  cr_assert_neq(rc, GW_OK, "accepted:\n%s", text);
  cr_assert(strstr(err, b->needle1), "message %s lacks %s", err, b->needle1);
  cr_assert(strstr(err, b->needle2), "message %s lacks %s", err, b->needle2);
  cr_assert(strstr(err, p), "message %s names the file", err);
  cr_assert_null(c.server, "a refused config holds nothing");
}

Test(kubeconfig, not_yaml_is_refused_with_the_place)
{
  const char *p = write_file("config", "clusters: [\n  - {name: k\n");
  struct kube_config c;
  char err[512];
  cr_assert_neq(kube_config_load(&c, p, NULL, err, sizeof(err)), GW_OK);
  cr_assert(strstr(err, p), "%s", err);
  cr_assert(strstr(err, "line"), "%s", err);
}

Test(kubeconfig, missing_explicit_file)
{
  struct kube_config c;
  char err[512];
  cr_assert_eq(kube_config_load(&c, "/nonexistent/kubeconfig", NULL, err, sizeof(err)),
               GW_ENOTFOUND);
  cr_assert(strstr(err, "/nonexistent/kubeconfig"), "%s", err);
}

Test(kubeconfig, no_existing_file_in_kubeconfig_env)
{
  setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
  struct kube_config c;
  char err[512];
  cr_assert_eq(kube_config_load(&c, NULL, NULL, err, sizeof(err)), GW_ENOTFOUND);
  cr_assert(strstr(err, "KUBECONFIG"), "%s", err);
}

/* ---- in-cluster ---- */

static void sa_dir(const char *ns)
{
  write_file("sa/token", "eyJhbGciOi.fake.token\n");
  write_file("sa/ca.crt", PEM_CA);
  if(ns)
    write_file("sa/namespace", ns);
  char d[128];
  snprintf(d, sizeof(d), "%s/sa", dir);
  setenv("GODWIT_SA_DIR", d, 1);
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
}

Test(kubeconfig, in_cluster_from_the_service_account_dir)
{
  sa_dir("godwit-system\n");
  struct kube_config c;
  char err[512];
  cr_assert_eq(kube_config_in_cluster(&c, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_str_eq(c.server, "https://10.96.0.1:443");
  char want[256];
  snprintf(want, sizeof(want), "%s/sa/token", dir);
  cr_assert_str_eq(c.token_file, want, "the token is a file, read again when it rotates");
  cr_assert_null(c.token);
  snprintf(want, sizeof(want), "%s/sa/ca.crt", dir);
  cr_assert_str_eq(c.ca_file, want);
  cr_assert_str_eq(c.namespace, "godwit-system");
  kube_config_release(&c);
}

Test(kubeconfig, in_cluster_is_chosen_without_kubeconfig)
{
  sa_dir(NULL);
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  struct kube_config c;
  load_ok(&c, NULL, NULL);
  cr_assert_str_eq(c.server, "https://[fd00::1]:6443", "IPv6 hosts are bracketed");
  cr_assert_str_eq(c.namespace, "default");
  kube_config_release(&c);
}

Test(kubeconfig, kubeconfig_env_beats_in_cluster)
{
  sa_dir("x");
  const char *p = write_file("kc", "current-context: c\n"
                                   "contexts: [{name: c, context: {cluster: k}}]\n"
                                   "clusters: [{name: k, cluster: {server: 'https://env:1'}}]\n");
  setenv("KUBECONFIG", p, 1);
  struct kube_config c;
  load_ok(&c, NULL, NULL);
  cr_assert_str_eq(c.server, "https://env:1");
  kube_config_release(&c);
}

Test(kubeconfig, in_cluster_needs_the_token)
{
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  char d[128];
  snprintf(d, sizeof(d), "%s/empty", dir);
  mkdir(d, 0700);
  setenv("GODWIT_SA_DIR", d, 1);
  struct kube_config c;
  char err[512];
  cr_assert_neq(kube_config_in_cluster(&c, err, sizeof(err)), GW_OK);
  cr_assert(strstr(err, "token") && strstr(err, d), "%s", err);
  unsetenv("KUBERNETES_SERVICE_HOST");
  cr_assert_eq(kube_config_in_cluster(&c, err, sizeof(err)), GW_ENOTFOUND);
  cr_assert(strstr(err, "KUBERNETES_SERVICE_HOST"), "%s", err);
}

/* ---- the client from a config (no server needed) ---- */

Test(kubeconfig, client_keeps_its_own_copy)
{
  write_file("certs/ca.crt", PEM_CA);
  write_file("alice.token", "t\n");
  const char *p = write_file("config", basic);
  struct kube_config c;
  load_ok(&c, p, NULL);
  struct kube_client *k;
  char err[256];
  cr_assert_eq(kube_client_new(&k, &c, err, sizeof(err)), GW_OK, "%s", err);
  kube_config_release(&c);
  cr_assert_str_eq(kube_client_config(k)->namespace, "team-a");
  cr_assert_str_eq(kube_client_config(k)->server, "https://127.0.0.1:6443/");
  struct strbuf sb;
  strbuf_init(&sb, 65536);
  cr_assert_eq(kube_client_metrics(k, &sb), GW_OK);
  cr_assert(strstr(strbuf_str(&sb), "# TYPE godwit_kube_requests_total counter"));
  strbuf_release(&sb);
  kube_client_free(k);
}

Test(kubeconfig, client_needs_a_server)
{
  struct kube_config c = { 0 };
  struct kube_client *k = (struct kube_client *)&c;
  char err[256];
  cr_assert_eq(kube_client_new(&k, &c, err, sizeof(err)), GW_EINVAL);
  cr_assert_null(k);
  cr_assert(strstr(err, "server"), "%s", err);
}
