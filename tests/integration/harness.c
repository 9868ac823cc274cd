#include "harness.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

const char *wh_build(void)
{
  const char *b = getenv("GODWIT_BUILD");
  return b && *b ? b : "build";
}

char *wh_sh(const char *fmt, ...)
{
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  size_t n;
  while((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if(cap - len < 2)
      out = realloc(out, cap *= 2);
  }
  out[len] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "command failed (%d): %s\n%s", st, cmd, out);
  return out;
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

void wh_spawn(struct wh *w, const char *const *extra)
{
  memset(w, 0, sizeof(*w));
  snprintf(w->dir, sizeof(w->dir), "/tmp/godwit-it-XXXXXX");
  cr_assert_not_null(mkdtemp(w->dir));
  free(wh_sh("%s/godwit-certs --out %s --dns localhost --ip 127.0.0.1 >/dev/null 2>&1", wh_build(),
             w->dir));
  snprintf(w->ca, sizeof(w->ca), "%s/ca.crt", w->dir);
  snprintf(w->cert, sizeof(w->cert), "%s/tls.crt", w->dir);
  snprintf(w->key, sizeof(w->key), "%s/tls.key", w->dir);
  snprintf(w->log, sizeof(w->log), "%s/webhook.log", w->dir);
  char portfile[300], bin[300];
  snprintf(portfile, sizeof(portfile), "%s/port", w->dir);
  snprintf(bin, sizeof(bin), "%s/godwit-webhook", wh_build());
  const char *argv[48] = { bin, "--tls-cert", w->cert, "--tls-key", w->key, "--port", "0",
                           "--bind", "127.0.0.1", "--port-file", portfile,
                           "--reload-interval-ms", "100", "--log-level", "debug" };
  int argc = 15;
  for(const char *const *e = extra; e && *e && argc < 46; e++)
    argv[argc++] = *e;
  argv[argc] = NULL;
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if(pid == 0) {
    /* The webhook dies with the test process, even when a failed assertion skips wh_stop. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    FILE *log = freopen(w->log, "w", stderr);
    (void)log;
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  w->pid = pid;
  for(int i = 0; i < 200 && !w->port; i++) {
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
}

void wh_start(struct wh *w, const char *const *extra)
{
  wh_spawn(w, extra);
  for(int i = 0; i < 200; i++) {
    struct wh_reply r;
    wh_get(w, "/readyz", &r);
    long st = r.status;
    wh_reply_free(&r);
    if(st == 200)
      return;
    sleep_ms(10);
  }
  cr_assert_fail("the webhook never became ready; see %s", w->log);
}

void wh_stop(struct wh *w)
{
  if(w->pid > 0) {
    kill(w->pid, SIGTERM);
    int st;
    for(int i = 0; i < 300; i++) {
      if(waitpid(w->pid, &st, WNOHANG) == w->pid) {
        w->pid = 0;
        /* A clean exit: under the sanitizers a leak or an error makes it fail. */
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "the webhook did not exit cleanly (status 0x%x); see %s", st, w->log);
        break;
      }
      sleep_ms(10);
    }
    if(w->pid > 0) {
      kill(w->pid, SIGKILL);
      waitpid(w->pid, &st, 0);
      cr_assert_fail("the webhook did not stop on SIGTERM");
    }
  }
  if(*w->dir && !getenv("GODWIT_KEEP"))
    free(wh_sh("rm -rf %s", w->dir));
  w->dir[0] = '\0';
}

static size_t collect(char *data, size_t size, size_t n, void *userp)
{
  struct wh_reply *r = userp;
  size_t add = size * n;
  char *b = realloc(r->body, r->len + add + 1);
  if(!b)
    return 0;
  memcpy(b + r->len, data, add);
  r->body = b;
  r->len += add;
  b[r->len] = '\0';
  return add;
}

static void request(const struct wh *w, const char *path, const char *ct, const char *body,
                    size_t len, struct wh_reply *r)
{
  memset(r, 0, sizeof(*r));
  char url[512];
  snprintf(url, sizeof(url), "https://localhost:%d%s", w->port, path);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, w->ca);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if(body) {
    char hdr[256];
    snprintf(hdr, sizeof(hdr), "Content-Type: %s", ct);
    h = curl_slist_append(h, hdr);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  CURLcode cc = curl_easy_perform(c);
  if(cc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  else
    r->status = -(long)cc;
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if(!r->body)
    r->body = strdup("");
}

void wh_post(const struct wh *w, const char *path, const char *ct, const char *body, size_t len,
             struct wh_reply *r)
{
  request(w, path, ct, body, len, r);
}

void wh_get(const struct wh *w, const char *path, struct wh_reply *r)
{
  request(w, path, NULL, NULL, 0, r);
}

void wh_reply_free(struct wh_reply *r)
{
  free(r->body);
  r->body = NULL;
}

cJSON *wh_review(const struct wh *w, const char *path, const char *body)
{
  struct wh_reply r;
  wh_post(w, path, "application/json", body, strlen(body), &r);
  cr_assert_eq(r.status, 200, "POST %s: HTTP %ld: %s", path, r.status, r.body);
  cJSON *v = NULL;
  char err[160];
  cr_assert_eq(json_parse_strict(r.body, r.len, &v, err, sizeof(err)), GW_OK, "%s: %s", err, r.body);
  wh_reply_free(&r);
  return v;
}

char *wh_admission_review(const char *uid, const char *group, const char *version,
                          const char *kind, const char *resource, const char *op,
                          const char *name, const char *ns, const char *user,
                          const char *groups_json, const char *object, const char *old,
                          int dry_run)
{
  char *s = NULL;
  const char *opts = !strcmp(op, "CREATE")   ? "{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"CreateOptions\",\"fieldManager\":\"kubectl-client-side-apply\",\"fieldValidation\":\"Strict\"}"
                     : !strcmp(op, "UPDATE") ? "{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"UpdateOptions\",\"fieldManager\":\"kubectl-client-side-apply\",\"fieldValidation\":\"Strict\"}"
                                             : "{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"DeleteOptions\",\"propagationPolicy\":\"Background\"}";
  int n = asprintf(
    &s,
    "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    "\"uid\":\"%s\",\"kind\":{\"group\":\"%s\",\"version\":\"%s\",\"kind\":\"%s\"},"
    "\"resource\":{\"group\":\"%s\",\"version\":\"%s\",\"resource\":\"%s\"},"
    "\"requestKind\":{\"group\":\"%s\",\"version\":\"%s\",\"kind\":\"%s\"},"
    "\"requestResource\":{\"group\":\"%s\",\"version\":\"%s\",\"resource\":\"%s\"},"
    "\"name\":\"%s\",\"namespace\":\"%s\",\"operation\":\"%s\","
    "\"userInfo\":{\"username\":\"%s\",\"uid\":\"0d6b5f6e-1c1d-4bb7-9c0e-6d0f1c2b3a4d\","
    "\"groups\":%s,\"extra\":{\"authentication.kubernetes.io/credential-id\":[\"JTI=abc\"]}},"
    "\"object\":%s,\"oldObject\":%s,\"dryRun\":%s,\"options\":%s}}",
    uid, group, version, kind, group, version, resource, group, version, kind, group, version,
    resource, name, ns, op, user, groups_json, object ? object : "null", old ? old : "null",
    dry_run ? "true" : "false", opts);
  cr_assert_gt(n, 0);
  return s;
}
