/*
 * rawapi.h: plain HTTPS calls to the local API server for the core conformance tests
 * (test_apiserver_core_*.c): no client library between the test and the wire, so what is
 * asserted is exactly what kube-apiserver would have sent.
 *
 *   struct ra a;
 *   ra_init(&a, &C, "admin");
 *   struct ra_resp r;
 *   ra_call(&a, "POST", "/api/v1/namespaces/default/configmaps", NULL, "{...}", &r);
 *   cr_assert_eq(r.code, 201);
 *   ra_resp_free(&r);
 */
#ifndef GW_RAWAPI_H
#define GW_RAWAPI_H

#include <cJSON.h>

#include "harness.h"

struct ra {
  char base[64];
  char ca[600];
  char token[2048];
  char extra_headers[8][256]; /* "Name: value", e.g. impersonation */
  int nextra;
  char accept[256];
};

struct ra_resp {
  long code;
  char *body;
  cJSON *json; /* NULL when the body is not JSON */
  char ctype[128];
  char warning[2048]; /* every Warning header, joined with '\n' */
  char retry_after[16];
};

/* user: "admin", "alice", "bob" (tokens.csv), or "" for no token. */
void ra_init(struct ra *a, struct cl *c, const char *user);
void ra_token(struct ra *a, const char *token);
void ra_header(struct ra *a, const char *header);
/* ctype NULL: application/json when body is set. Returns r->code (0: no answer). */
long ra_call(struct ra *a, const char *method, const char *path, const char *ctype,
         const char *body, struct ra_resp *r);
void ra_resp_free(struct ra_resp *r);
/* A call that must answer code; returns the JSON body (caller frees). */
cJSON *ra_ok(struct ra *a, const char *method, const char *path, const char *body, long code);
/* A watch: the events of path (with its query) until n events or timeout_ms; a JSON array. */
cJSON *ra_watch(struct ra *a, const char *path, int n, int timeout_ms);
/* Fixtures: the CRD widgets.example.com (v1 storage with /status and printer columns Size,
 * Phase, Age; v1beta1 served), a Widget, a ConfigMap (labels: a JSON object or NULL). */
void ra_widget_crd(struct ra *a);
cJSON *ra_widget(struct ra *a, const char *ns, const char *name, int size);
cJSON *ra_configmap(struct ra *a, const char *ns, const char *name, const char *labels_json);
/* JSON string helpers on a body */
const char *ra_str(const cJSON *o, const char *dotted);
long long ra_num(const cJSON *o, const char *dotted);

#endif
