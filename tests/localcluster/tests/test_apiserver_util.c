#include "test_apiserver_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "hooks.h"
#include "json.h"
#include "yamldoc.h"

static const char *build_dir(void)
{
  const char *b = getenv("GODWIT_BUILD");
  return b && *b ? b : "build";
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

void lw_leak_check(void)
{
  if(__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check())
    cr_assert_fail("memory leaked: see the LeakSanitizer report above");
}

cJSON *tj(const char *json)
{
  cJSON *v = NULL;
  char err[200];
  cr_assert_eq(json_parse_strict(json, strlen(json), &v, err, sizeof(err)), GW_OK, "%s: %.300s", err, json);
  return v;
}

/* Issues the certificates into dir and returns the caBundle godwit-certs prints. */
static void issue(const char *dir, char *bundle, size_t n)
{
  char cmd[1024];
  snprintf(cmd, sizeof(cmd),
           "%s/godwit-certs --out %s --service godwit-webhook --namespace godwit-system --dns localhost "
           "--ip 127.0.0.1 2>/dev/null",
           build_dir(), dir);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t len = fread(bundle, 1, n - 1, p);
  bundle[len] = '\0';
  while(len && (bundle[len - 1] == '\n' || bundle[len - 1] == ' '))
    bundle[--len] = '\0';
  cr_assert_eq(pclose(p), 0, "godwit-certs failed (build it: make %s/godwit-certs)", build_dir());
  cr_assert_gt(len, 100);
}

static size_t discard(char *d, size_t s, size_t n, void *u)
{
  (void)d;
  (void)u;
  return s * n;
}

static long get_status(int port, const char *path, const char *ca)
{
  char url[256];
  snprintf(url, sizeof(url), "https://localhost:%d%s", port, path);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 2L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  long st = 0;
  if(curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
  curl_easy_cleanup(c);
  return st;
}

void lw_start(struct lw *w)
{
  memset(w, 0, sizeof(*w));
  snprintf(w->dir, sizeof(w->dir), "/tmp/godwit-layers-XXXXXX");
  cr_assert_not_null(mkdtemp(w->dir));
  issue(w->dir, w->ca_bundle, sizeof(w->ca_bundle));
  char cert[300], key[300], portfile[300], bin[300], ca[300];
  snprintf(cert, sizeof(cert), "%s/tls.crt", w->dir);
  snprintf(key, sizeof(key), "%s/tls.key", w->dir);
  snprintf(ca, sizeof(ca), "%s/ca.crt", w->dir);
  snprintf(portfile, sizeof(portfile), "%s/port", w->dir);
  snprintf(w->log, sizeof(w->log), "%s/webhook.log", w->dir);
  snprintf(bin, sizeof(bin), "%s/godwit-webhook", build_dir());
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if(!freopen(w->log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--tls-cert", cert, "--tls-key", key, "--port", "0", "--bind", "127.0.0.1", "--port-file",
          portfile, "--log-level", "debug", (char *)NULL);
    _exit(127);
  }
  w->pid = pid;
  for(int i = 0; i < 300 && !w->port; i++) {
    FILE *f = fopen(portfile, "r");
    if(f) {
      if(fscanf(f, "%d", &w->port) != 1)
        w->port = 0;
      fclose(f);
    }
    if(!w->port)
      sleep_ms(10);
  }
  cr_assert_gt(w->port, 0, "the webhook did not start; see %s", w->log);
  for(int i = 0; i < 300; i++) {
    if(get_status(w->port, "/readyz", ca) == 200)
      return;
    sleep_ms(10);
  }
  cr_assert_fail("the webhook never became ready; see %s", w->log);
}

void lw_stop(struct lw *w)
{
  if(w->pid > 0) {
    kill(w->pid, SIGTERM);
    int st;
    waitpid(w->pid, &st, 0);
    w->pid = 0;
  }
  if(*w->dir && !getenv("GODWIT_KEEP")) {
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", w->dir);
    if(system(cmd) != 0)
      cr_log_warn("could not remove %s", w->dir);
  }
  w->dir[0] = '\0';
}

void lw_layers(const char *addr)
{
  static char map[300];
  snprintf(map, sizeof(map), "godwit-system/godwit-webhook=%s", addr);
  const char *const m[] = { map, NULL };
  struct ls_core_ops ops = { 0 };
  ls_hooks_init(&ops, m);
}

cJSON *lw_manifest(const char *path, const char *ca_bundle)
{
  cJSON *docs;
  char err[256];
  cr_assert_eq(yamldoc_parse_file(path, &docs, err, sizeof(err)), GW_OK, "%s: %s", path, err);
  cJSON *doc = cJSON_DetachItemFromArray(docs, 0);
  cJSON_Delete(docs);
  cJSON *w;
  cJSON_ArrayForEach(w, json_get(doc, "webhooks"))
    cr_assert_eq(json_set_str(w, "clientConfig.caBundle", ca_bundle), GW_OK);
  cJSON *cw = json_get_mut(doc, "spec.conversion.webhook.clientConfig");
  if(cw)
    cr_assert_eq(json_set_str(cw, "caBundle", ca_bundle), GW_OK);
  return doc;
}

int lw_closed_port(void)
{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
  socklen_t l = sizeof(a);
  getsockname(s, (struct sockaddr *)&a, &l);
  close(s); /* nothing listens there now */
  return ntohs(a.sin_port);
}

/* ---- the fake webhook ---- */

struct fw_req {
  char *body;
  size_t len;
};

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

static enum MHD_Result fw_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
  (void)method;
  (void)version;
  struct fw *f = cls;
  struct fw_req *r = *con_cls;
  if(!r) {
    *con_cls = calloc(1, sizeof(struct fw_req));
    return MHD_YES;
  }
  if(*upload_size) {
    r->body = realloc(r->body, r->len + *upload_size + 1);
    memcpy(r->body + r->len, upload, *upload_size);
    r->len += *upload_size;
    r->body[r->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }
  char path[512];
  const char *timeout = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeout");
  snprintf(path, sizeof(path), "%s%s%s", url, timeout ? "?timeout=" : "", timeout ? timeout : "");
  cJSON *body = r->body ? cJSON_Parse(r->body) : NULL;
  pthread_mutex_lock(&f->lock);
  if(f->n < 64) {
    f->paths[f->n] = strdup(path);
    f->bodies[f->n] = cJSON_Duplicate(body, 1);
    f->n++;
  }
  pthread_mutex_unlock(&f->lock);
  if(f->delay_ms)
    sleep_ms(f->delay_ms);
  int status = 200;
  char *out = f->respond(path, body, &status, f->ud);
  cJSON_Delete(body);
  struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(resp, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static void fw_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)c;
  (void)toe;
  struct fw_req *r = *con_cls;
  if(r) {
    free(r->body);
    free(r);
  }
  *con_cls = NULL;
}

void fw_start(struct fw *f, fw_responder respond, void *ud)
{
  memset(f, 0, sizeof(*f));
  pthread_mutex_init(&f->lock, NULL);
  f->respond = respond;
  f->ud = ud;
  snprintf(f->dir, sizeof(f->dir), "/tmp/godwit-fakewh-XXXXXX");
  cr_assert_not_null(mkdtemp(f->dir));
  issue(f->dir, f->ca_bundle, sizeof(f->ca_bundle));
  char p[300];
  snprintf(p, sizeof(p), "%s/tls.crt", f->dir);
  char *cert = slurp(p);
  snprintf(p, sizeof(p), "%s/tls.key", f->dir);
  char *key = slurp(p);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  f->daemon = MHD_start_daemon(MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                               NULL, fw_handler, f, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
                               MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_COMPLETED, fw_done, NULL, MHD_OPTION_END);
  free(cert);
  free(key);
  cr_assert_not_null(f->daemon, "the fake webhook did not start");
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(f->daemon, MHD_DAEMON_INFO_BIND_PORT);
  f->port = i->port;
}

void fw_stop(struct fw *f)
{
  if(f->daemon)
    MHD_stop_daemon(f->daemon);
  f->daemon = NULL;
  for(int i = 0; i < f->n; i++) {
    free(f->paths[i]);
    cJSON_Delete(f->bodies[i]);
  }
  f->n = 0;
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
  if(system(cmd) != 0)
    cr_log_warn("could not remove %s", f->dir);
  pthread_mutex_destroy(&f->lock);
}

const cJSON *fw_body(struct fw *f, int i)
{
  pthread_mutex_lock(&f->lock);
  const cJSON *b = i < f->n ? f->bodies[i] : NULL;
  pthread_mutex_unlock(&f->lock);
  return b;
}

const char *fw_path(struct fw *f, int i)
{
  pthread_mutex_lock(&f->lock);
  const char *p = i < f->n ? f->paths[i] : NULL;
  pthread_mutex_unlock(&f->lock);
  return p;
}

int fw_count(struct fw *f)
{
  pthread_mutex_lock(&f->lock);
  int n = f->n;
  pthread_mutex_unlock(&f->lock);
  return n;
}

char *fw_admission_answer(const cJSON *req, const char *extra)
{
  const char *uid = json_get_str(req, "request.uid");
  char *s = NULL;
  if(asprintf(&s, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"%s\"%s%s}}",
              uid ? uid : "", *extra ? "," : "", extra) < 0)
    s = NULL;
  return s;
}

char *fw_b64(const char *s)
{
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(s);
  char *o = malloc(n / 3 * 4 + 8), *p = o;
  for(size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned char)s[i + 1] << 8 : 0) | (i + 2 < n ? (unsigned char)s[i + 2] : 0);
    *p++ = t[v >> 18 & 63];
    *p++ = t[v >> 12 & 63];
    *p++ = i + 1 < n ? t[v >> 6 & 63] : '=';
    *p++ = i + 2 < n ? t[v & 63] : '=';
  }
  *p = '\0';
  return o;
}

const char *lw_cl_file(struct cl *c, const char *name, const char *text)
{
  static char path[600];
  snprintf(path, sizeof(path), "%s/%s", c->dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
  return path;
}

void lw_cl_kill(struct cl *c, const char *process)
{
  char path[600], name[64];
  snprintf(path, sizeof(path), "%s/pids", c->dir);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  long pid = 0, p;
  while(fscanf(f, "%63s %ld", name, &p) == 2)
    if(!strcmp(name, process))
      pid = p;
  fclose(f);
  cr_assert_gt(pid, 0, "no %s in %s", process, path);
  kill((pid_t)pid, SIGKILL);
  for(int i = 0; i < 100 && kill((pid_t)pid, 0) == 0; i++)
    sleep_ms(20);
}
