/*
 * test_apiserver_util.h: fixtures for the tests of the API server's admission and conversion
 * layers (test_apiserver_admission.c, test_apiserver_conversion.c), which call those layers
 * directly, as the API server's core does.
 *
 * lw_start() issues a certificate for the Service godwit-webhook.godwit-system (plus localhost
 * and 127.0.0.1) with the real godwit-certs, starts the real build/godwit-webhook on a free
 * loopback port and waits for /readyz. lw_layers() points the layers at it: --service-map
 * godwit-system/godwit-webhook=127.0.0.1:PORT, as the API server's flag does.
 *
 * fw_start() starts a fake HTTPS webhook (libmicrohttpd) with the same kind of certificate,
 * which records every request (path with query, body) and answers what the test's responder
 * returns; it lets tests see exactly what the layers send and feed them malformed answers.
 */
#ifndef GW_TEST_APISERVER_UTIL_H
#define GW_TEST_APISERVER_UTIL_H

#include <cJSON.h>
#include <pthread.h>
#include <sys/types.h>

struct lw {
  pid_t pid;
  int port;
  char dir[256];
  char ca_bundle[8192]; /* base64 of ca.crt, as godwit-certs prints it */
  char log[300];
};

void lw_start(struct lw *w);
void lw_stop(struct lw *w);
/* ls_hooks_init with the service mapped to addr ("127.0.0.1:PORT"). */
void lw_layers(const char *addr);
/* The first document of a manifest with caBundle set in every clientConfig (webhooks[] or the
 * CRD's spec.conversion.webhook). */
cJSON *lw_manifest(const char *path, const char *ca_bundle);
/* A port nothing listens on. */
int lw_closed_port(void);

/* Answers one request: *status and a malloc'd body. */
typedef char *(*fw_responder)(const char *path, const cJSON *body, int *status, void *ud);

struct fw {
  void *daemon;
  int port;
  char dir[256];
  char ca_bundle[8192];
  fw_responder respond;
  void *ud;
  int delay_ms; /* sleep before answering (timeouts) */
  pthread_mutex_t lock;
  char *paths[64];
  cJSON *bodies[64];
  int n;
};

void fw_start(struct fw *f, fw_responder respond, void *ud);
void fw_stop(struct fw *f);
/* The i-th recorded request body (owned by f) and path. */
const cJSON *fw_body(struct fw *f, int i);
const char *fw_path(struct fw *f, int i);
int fw_count(struct fw *f);

/* An AdmissionReview answer echoing the request's uid. extra: more response members as JSON
 * text without braces ("" for none). */
char *fw_admission_answer(const cJSON *req, const char *extra);
/* base64 of s */
char *fw_b64(const char *s);

cJSON *tj(const char *json); /* parses, asserting */

/* For the end-to-end suites on tests/cluster/harness.h: writes text to a file in the cluster's
 * directory and returns its path (static storage); stops one of its processes ("webhook") the
 * way a crash would. */
struct cl;
const char *lw_cl_file(struct cl *c, const char *name, const char *text);
void lw_cl_kill(struct cl *c, const char *process);
/* Under LeakSanitizer, fails the test when memory leaked so far in its process (Criterion runs
 * each test in a child that exits without LSan's own check); a no-op in other builds. */
void lw_leak_check(void);
/* A Criterion test whose body is followed by lw_leak_check() (an assertion in a suite's .fini
 * would not fail the test). */
#define LTest(suite, name)                                                                         \
  static void suite##_##name##_body(void);                                                         \
  Test(suite, name)                                                                                \
  {                                                                                                \
    suite##_##name##_body();                                                                       \
    lw_leak_check();                                                                               \
  }                                                                                                \
  static void suite##_##name##_body(void)

#endif
