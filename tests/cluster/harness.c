/* harness.c: a local cluster per test (harness.h), started with tests/localcluster/up in a fresh
 * directory under /tmp and stopped with down. up gets --parent-pid: its watchdog and the API
 * server end everything when the test process is gone, even after a crash. The directory is
 * removed by cl_stop unless GODWIT_KEEP_CLUSTER is set (its logs help after a failure). */
#include "harness.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "strbuf.h"

static const char *root_dir(void)
{
  const char *r = getenv("GODWIT_ROOT");
  return r && *r ? r : ".";
}

/* Runs argv with stdout and stderr appended to log; returns the exit status (-1: no exit). */
static int run(char *const argv[], const char *log)
{
  pid_t pid = fork();
  if(pid < 0)
    return -1;
  if(pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if(fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int nul = open("/dev/null", O_RDONLY);
    if(nul >= 0)
      dup2(nul, 0);
    execv(argv[0], argv);
    _exit(127);
  }
  int status;
  while(waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *cl_slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  char buf[4096];
  size_t n;
  gw_rc rc = GW_OK;
  while(!rc && (n = fread(buf, 1, sizeof(buf), f)) > 0)
    rc = strbuf_add(&sb, buf, n);
  fclose(f);
  char *s = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

const char *cl_path(struct cl *c, const char *name)
{
  static __thread char bufs[8][512];
  static __thread unsigned next;
  char *b = bufs[next++ % 8];
  snprintf(b, 512, "%s/%s", c->dir, name);
  return b;
}

static int read_port(struct cl *c, const char *name)
{
  char *ports = cl_slurp(cl_path(c, "ports"));
  int port = 0;
  char key[64];
  snprintf(key, sizeof(key), "%s=", name);
  char *save = NULL;
  for(char *line = ports ? strtok_r(ports, "\n", &save) : NULL; line;
      line = strtok_r(NULL, "\n", &save))
    if(!strncmp(line, key, strlen(key)))
      port = atoi(line + strlen(key));
  free(ports);
  return port;
}

void cl_start(struct cl *c, unsigned what)
{
  memset(c, 0, sizeof(*c));
  c->what = what;
  snprintf(c->dir, sizeof(c->dir), "/tmp/godwit-cl-XXXXXX");
  cr_assert(mkdtemp(c->dir), "mkdtemp: %s", strerror(errno));
  char up[512], parent[32];
  snprintf(up, sizeof(up), "%s/tests/localcluster/up", root_dir());
  snprintf(parent, sizeof(parent), "%ld", (long)getpid());
  char *argv[16];
  size_t n = 0;
  argv[n++] = "/bin/sh";
  argv[n++] = up;
  argv[n++] = "--dir";
  argv[n++] = c->dir;
  argv[n++] = "--parent-pid";
  argv[n++] = parent;
  if(!(what & CL_WEBHOOK))
    argv[n++] = "--without-webhook";
  if(!(what & CL_JOBRUNNER))
    argv[n++] = "--without-jobrunner";
  if(what & CL_CONTROLLER)
    argv[n++] = "--with-controller";
  if(what & CL_FAULTS)
    argv[n++] = "--faults";
  if(what & CL_NO_CRDS)
    argv[n++] = "--without-crds";
  if(what & CL_NODES) {
    argv[n++] = "--worker-nodes";
    argv[n++] = "node-a,node-b,node-c";
  }
  argv[n] = NULL;
  int rc = run(argv, cl_path(c, "up.log"));
  if(rc) {
    char *log = cl_slurp(cl_path(c, "up.log"));
    cr_assert_fail("tests/localcluster/up failed (%d) in %s:\n%s", rc, c->dir, log ? log : "");
  }
  snprintf(c->kubeconfig, sizeof(c->kubeconfig), "%s/kubeconfig", c->dir);
  c->api_port = read_port(c, "apiserver");
  cr_assert(c->api_port > 0, "no API server port in %s/ports", c->dir);
}

static void remove_tree(const char *dir)
{
  char *argv[] = { "/bin/rm", "-rf", (char *)dir, NULL };
  run(argv, "/dev/null");
}

/* A sanitizer report in any log of the cluster (its processes and its Pods, once down stopped
 * them and they wrote their exit reports): the first one, with the file's name (malloc'd), or
 * NULL. Only builds with sanitizers write these. */
static char *sanitizer_report(const struct cl *c)
{
  char cmd[600];
  snprintf(cmd, sizeof(cmd),
           "grep -rl --include='*.log' -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' "
           "-e 'runtime error: ' '%s' 2>/dev/null | head -1",
           c->dir);
  FILE *f = popen(cmd, "r");
  if(!f)
    return NULL;
  char file[512] = "";
  if(!fgets(file, sizeof(file), f))
    file[0] = '\0';
  pclose(f);
  file[strcspn(file, "\n")] = '\0';
  if(!file[0])
    return NULL;
  char *text = cl_slurp(file);
  char *at = text ? strstr(text, "Sanitizer") : NULL;
  if(!at && text)
    at = strstr(text, "runtime error: ");
  char *out = NULL;
  if(asprintf(&out, "%s:\n%.3000s", file, at ? at : "") < 0)
    out = NULL;
  free(text);
  return out;
}

void cl_stop(struct cl *c)
{
  for(size_t i = 0; i < sizeof(c->clients) / sizeof(c->clients[0]); i++) {
    kube_client_free(c->clients[i]);
    c->clients[i] = NULL;
  }
  if(!c->dir[0])
    return;
  char down[512];
  snprintf(down, sizeof(down), "%s/tests/localcluster/down", root_dir());
  char *argv[] = { "/bin/sh", down, "--dir", c->dir, NULL };
  run(argv, cl_path(c, "down.log"));
  char *report = sanitizer_report(c);
  char dir[sizeof(c->dir)];
  snprintf(dir, sizeof(dir), "%s", c->dir);
  const char *keep = getenv("GODWIT_KEEP_CLUSTER");
  if(!keep || !*keep)
    remove_tree(c->dir);
  c->dir[0] = '\0';
  if(report) {
    cr_log_error("a process of the local cluster %s reported: %s", dir, report);
    free(report);
    cr_assert_fail("a sanitizer report in the local cluster's logs (see above)");
  }
}

struct kube_client *cl_client(struct cl *c, const char *user)
{
  size_t i = !strcmp(user, "admin") ? 0 : !strcmp(user, "alice") ? 1 : !strcmp(user, "bob") ? 2
                                                                                             : 3;
  if(i < 3 && c->clients[i])
    return c->clients[i];
  struct kube_config cfg;
  char err[256];
  memset(&cfg, 0, sizeof(cfg));
  gw_rc rc = kube_config_load(&cfg, c->kubeconfig, user, err, sizeof(err));
  cr_assert(!rc, "kubeconfig %s, context %s: %s", c->kubeconfig, user, err);
  struct kube_client *k = NULL;
  rc = kube_client_new(&k, &cfg, err, sizeof(err));
  kube_config_release(&cfg);
  cr_assert(!rc, "kube client for %s: %s", user, err);
  kube_client_free(c->clients[i]);
  c->clients[i] = k;
  return k;
}

int cl_kubectl(struct cl *c, const char *user, char **out, const char *fmt, ...)
{
  char args[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof(args), fmt, ap);
  va_end(ap);
  const char *kubectl = getenv("KUBECTL");
  char cmd[9000];
  snprintf(cmd, sizeof(cmd), "%s --kubeconfig '%s' --context '%s' --cache-dir '%s/kubecache' %s",
           kubectl && *kubectl ? kubectl : "kubectl", c->kubeconfig, user, c->dir, args);
  char outpath[600];
  snprintf(outpath, sizeof(outpath), "%s", cl_path(c, "kubectl.out"));
  char *argv[] = { "/bin/sh", "-c", cmd, NULL };
  unlink(outpath);
  int rc = run(argv, outpath);
  char *s = cl_slurp(outpath);
  if(out)
    *out = s ? s : strdup("");
  else
    free(s);
  FILE *log = fopen(cl_path(c, "kubectl.log"), "a");
  if(log) {
    fprintf(log, "$ kubectl --context %s %s\n[exit %d]\n", user, args, rc);
    fclose(log);
  }
  return rc;
}

static char *admin_token(struct cl *c)
{
  char *csv = cl_slurp(cl_path(c, "tokens.csv"));
  char *tok = NULL;
  char *save = NULL;
  for(char *line = csv ? strtok_r(csv, "\n", &save) : NULL; line && !tok;
      line = strtok_r(NULL, "\n", &save)) {
    char *comma = strchr(line, ',');
    if(comma && !strncmp(comma + 1, "admin,", 6)) {
      *comma = '\0';
      tok = strdup(line);
    }
  }
  free(csv);
  return tok;
}

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
  struct strbuf *sb = ud;
  return strbuf_add(sb, p, size * n) ? 0 : size * n;
}

/* POST (rule_json) or GET /__faults; the answer (the rules and their counts left). */
static cJSON *faults_call(struct cl *c, const char *rule_json)
{
  cr_assert(c->what & CL_FAULTS, "fault injection needs CL_FAULTS");
  char *tok = admin_token(c);
  cr_assert(tok, "no admin token in %s/tokens.csv", c->dir);
  char url[128], auth[256], ca[600];
  snprintf(url, sizeof(url), "https://127.0.0.1:%d/__faults", c->api_port);
  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
  snprintf(ca, sizeof(ca), "%s", cl_path(c, "pki/apiserver/ca.crt"));
  free(tok);
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = curl_slist_append(NULL, auth);
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  if(rule_json)
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, rule_json);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
  CURLcode cc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  cr_assert(cc == CURLE_OK && code == 200, "%s /__faults %s: %s (%ld) %s",
            rule_json ? "POST" : "GET", rule_json ? rule_json : "", curl_easy_strerror(cc), code,
            strbuf_str(&sb));
  cJSON *o = cJSON_Parse(strbuf_str(&sb));
  strbuf_release(&sb);
  cr_assert(o, "/__faults answered no JSON");
  return o;
}

void cl_fault(struct cl *c, const char *rule_json)
{
  cJSON_Delete(faults_call(c, rule_json));
}

int cl_fault_count(struct cl *c, int i)
{
  cJSON *o = faults_call(c, NULL);
  const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "rules"), i);
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "count");
  int left = cJSON_IsNumber(n) ? n->valueint : INT_MIN;
  cJSON_Delete(o);
  return left;
}

int cl_eventually(int timeout_ms, int (*fn)(void *), void *arg)
{
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for(;;) {
    int r = fn(arg);
    if(r)
      return r;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if(ms >= timeout_ms)
      return 0;
    struct timespec d = { 0, 50 * 1000000L };
    nanosleep(&d, NULL);
  }
}

/* In-process components (the manager, the client) log at error level in tests unless
 * GODWIT_TEST_LOG_LEVEL says otherwise: the suite's output stays readable, failures keep their
 * own messages. */
__attribute__((constructor)) static void harness_quiet_logs(void)
{
  const char *l = getenv("GODWIT_TEST_LOG_LEVEL");
  int lvl = l ? log_level_parse(l) : -1;
  log_set_level(lvl >= 0 ? (enum log_level)lvl : LOG_ERROR);
}

void cl_runner_identity(struct cl *c, const char *ns)
{
  static const struct kube_gvr rolebindings = { "rbac.authorization.k8s.io", "v1",
                                                "rolebindings", true };
  char sa[300], rb[1024];
  snprintf(sa, sizeof(sa), "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{"
           "\"name\":\"godwit-runner\",\"namespace\":\"%s\"}}", ns);
  snprintf(rb, sizeof(rb), "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
           "\"RoleBinding\",\"metadata\":{\"name\":\"godwit-runner\",\"namespace\":\"%s\"},"
           "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
           "\"name\":\"godwit-runner\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":"
           "\"godwit-runner\",\"namespace\":\"%s\"}]}", ns, ns);
  const char *docs[] = { sa, rb };
  const struct kube_gvr *gvrs[] = { &KUBE_SERVICEACCOUNTS, &rolebindings };
  struct kube_client *k = cl_client(c, "admin");
  for(size_t i = 0; i < 2; i++) {
    cJSON *obj = cJSON_Parse(docs[i]);
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_create(k, gvrs[i], ns, obj, false, NULL, &st);
    cr_assert(rc == GW_OK || rc == GW_ECONFLICT, "%s: %d %s", docs[i], st.code, st.message);
    kube_status_release(&st);
    cJSON_Delete(obj);
  }
}

const char *cl_root(void)
{
  return root_dir();
}
