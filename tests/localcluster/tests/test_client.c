/* The Kubernetes client against the local API server: CRUD with resourceVersions, the Status
 * of failed calls, /status, patches, paging, selectors, credentials, rate limits, metrics. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "kube/kube.h"
#include "strbuf.h"

#define NS "kube-client"

static struct cl C;
static struct kube_client *K;

static cJSON *parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

static void ensure_namespace(struct kube_client *k, const char *ns)
{
  char buf[256];
  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
           "{\"name\":\"%s\"}}", ns);
  cJSON *o = parse(buf);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, &KUBE_NAMESPACES, NULL, o, false, NULL, &st);
  cr_assert(rc == GW_OK || (rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists")),
            "namespace %s: %s %s", ns, gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

static void start(void)
{
  cl_start(&C, CL_NO_CRDS);
  K = cl_client(&C, "admin");
  ensure_namespace(K, NS);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(kube_client, .init = start, .fini = stop, .timeout = 180);

/* A ConfigMap named name with labels "k=v,k2=v2" (or NULL) and data a=value. */
static cJSON *configmap(const char *name, const char *labels, const char *value)
{
  cJSON *o = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{}}");
  cr_assert_eq(json_set_str(o, "metadata.name", name), GW_OK);
  cr_assert_eq(json_set_str(o, "metadata.namespace", NS), GW_OK);
  cr_assert_eq(json_set_str(o, "data.a", value), GW_OK);
  if(labels) {
    char buf[256], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", labels);
    for(char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(kv, '=');
      cr_assert(eq);
      *eq = '\0';
      const char *last;
      cJSON *l = json_ensure_parent(o, "metadata.labels.x", &last);
      cr_assert(l);
      cJSON_AddStringToObject(l, kv, eq + 1);
    }
  }
  return o;
}

static cJSON *create_cm(const char *name, const char *labels, const char *value)
{
  cJSON *o = configmap(name, labels, value), *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, &out, &st);
  cr_assert_eq(rc, GW_OK, "create %s: %s (%d %s: %s)", name, gw_strerror(rc), st.code, st.reason,
               st.message);
  cr_assert_eq(st.code, 201);
  kube_status_release(&st);
  cJSON_Delete(o);
  return out;
}

Test(kube_client, crud_round_trip)
{
  cJSON *made = create_cm("crud", NULL, "1");
  const char *rv1 = json_get_str(made, "metadata.resourceVersion");
  cr_assert(rv1 && *rv1, "a created object has a resourceVersion");
  cr_assert(json_get_str(made, "metadata.uid"));

  struct kube_status st;
  kube_status_init(&st);
  cJSON *got = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "crud", &got, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(got, "metadata.resourceVersion"), rv1);
  cr_assert_str_eq(json_get_str(got, "data.a"), "1");

  cr_assert_eq(json_set_str(got, "data.a", "2"), GW_OK);
  cJSON *upd = NULL;
  cr_assert_eq(kube_update(K, &KUBE_CONFIGMAPS, NS, got, NULL, &upd, &st), GW_OK, "%s",
               st.message);
  cr_assert_str_neq(json_get_str(upd, "metadata.resourceVersion"), rv1,
                    "an update moves the resourceVersion");
  cr_assert_str_eq(json_get_str(upd, "data.a"), "2");

  cJSON *del = NULL;
  cr_assert_eq(kube_delete(K, &KUBE_CONFIGMAPS, NS, "crud", NULL, &del, &st), GW_OK, "%s",
               st.message);
  cJSON *gone = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "crud", &gone, &st), GW_ENOTFOUND);
  cr_assert_null(gone);
  cr_assert_eq(st.code, 404);
  cr_assert_str_eq(st.reason, "NotFound");
  cr_assert(strstr(st.message, "crud"), "the Status message names the object: %s", st.message);
  cJSON_Delete(made);
  cJSON_Delete(got);
  cJSON_Delete(upd);
  cJSON_Delete(del);
  kube_status_release(&st);
}

Test(kube_client, stale_update_is_a_conflict)
{
  cJSON *v1 = create_cm("stale", NULL, "1");
  cJSON *v2 = cJSON_Duplicate(v1, 1);
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  cr_assert_eq(json_set_str(v2, "data.a", "2"), GW_OK);
  cr_assert_eq(kube_update(K, &KUBE_CONFIGMAPS, NS, v2, NULL, &out, &st), GW_OK, "%s",
               st.message);
  cJSON_Delete(out);
  cr_assert_eq(json_set_str(v1, "data.a", "3"), GW_OK);
  cr_assert_eq(kube_update(K, &KUBE_CONFIGMAPS, NS, v1, NULL, &out, &st), GW_ECONFLICT,
               "an update from a stale resourceVersion is refused");
  cr_assert_null(out);
  cr_assert_eq(st.code, 409);
  cr_assert_str_eq(st.reason, "Conflict");
  cr_assert(st.message[0]);
  cJSON *now = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "stale", &now, &st), GW_OK);
  cr_assert_str_eq(json_get_str(now, "data.a"), "2", "the stale write did not land");
  cJSON_Delete(now);
  cJSON_Delete(v1);
  cJSON_Delete(v2);
  kube_status_release(&st);
}

Test(kube_client, create_twice_is_already_exists)
{
  cJSON_Delete(create_cm("twice", NULL, "1"));
  cJSON *o = configmap("twice", NULL, "1"), *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, &out, &st), GW_ECONFLICT);
  cr_assert_eq(st.code, 409);
  cr_assert_str_eq(st.reason, "AlreadyExists");
  cr_assert(st.details, "the Status details are kept");
  cr_assert_str_eq(json_get_str(st.details, "name"), "twice");
  cJSON_Delete(o);
  kube_status_release(&st);
}

Test(kube_client, dry_run_create_persists_nothing)
{
  cJSON *o = configmap("dry", NULL, "1"), *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, NS, o, true, &out, &st), GW_OK, "%s", st.message);
  cJSON_Delete(out);
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "dry", &out, &st), GW_ENOTFOUND);
  cJSON_Delete(o);
  kube_status_release(&st);
}

static cJSON *create_pod(const char *name)
{
  char buf[512];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},\"spec\":"
           "{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"command\":[\"true\"]}]}}",
           name);
  cJSON *o = parse(buf), *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_PODS, NS, o, false, &out, &st), GW_OK, "%s", st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
  return out;
}

Test(kube_client, status_subresource)
{
  cJSON *pod = create_pod("st");
  cr_assert_eq(json_set_str(pod, "status.message", "from the status writer"), GW_OK);
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  cr_assert_eq(kube_update(K, &KUBE_PODS, NS, pod, "status", &out, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(out, "status.message"), "from the status writer");
  const char *rv = json_get_str(out, "metadata.resourceVersion");
  cr_assert_str_neq(rv, json_get_str(pod, "metadata.resourceVersion"));

  /* The main resource ignores status. */
  cJSON *main = cJSON_Duplicate(out, 1);
  cr_assert_eq(json_set_str(main, "status.message", "ignored"), GW_OK);
  cr_assert_eq(json_set_str(main, "metadata.labels.touched", "yes"), GW_OK);
  cJSON *out2 = NULL;
  cr_assert_eq(kube_update(K, &KUBE_PODS, NS, main, NULL, &out2, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(out2, "status.message"), "from the status writer");
  cr_assert_str_eq(json_get_str(out2, "metadata.labels.touched"), "yes");

  /* A merge patch of /status. */
  cJSON *out3 = NULL;
  cr_assert_eq(kube_patch(K, &KUBE_PODS, NS, "st", KUBE_PATCH_MERGE,
                          "{\"status\":{\"message\":\"patched\"}}", "status", &out3, &st),
               GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(out3, "status.message"), "patched");
  cJSON_Delete(pod);
  cJSON_Delete(out);
  cJSON_Delete(main);
  cJSON_Delete(out2);
  cJSON_Delete(out3);
  kube_status_release(&st);
}

Test(kube_client, merge_json_and_strategic_patches)
{
  cJSON_Delete(create_cm("patch", "app=p", "1"));
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  cr_assert_eq(kube_patch(K, &KUBE_CONFIGMAPS, NS, "patch", KUBE_PATCH_MERGE,
                          "{\"data\":{\"a\":null,\"b\":\"2\"}}", NULL, &out, &st), GW_OK, "%s",
               st.message);
  cr_assert_null(json_get(out, "data.a"), "null removes in a merge patch");
  cr_assert_str_eq(json_get_str(out, "data.b"), "2");
  cJSON_Delete(out);

  cr_assert_eq(kube_patch(K, &KUBE_CONFIGMAPS, NS, "patch", KUBE_PATCH_JSON,
                          "[{\"op\":\"add\",\"path\":\"/data/c\",\"value\":\"3\"},"
                          "{\"op\":\"replace\",\"path\":\"/metadata/labels/app\",\"value\":\"q\"}]",
                          NULL, &out, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(out, "data.c"), "3");
  cr_assert_str_eq(json_get_str(out, "metadata.labels.app"), "q");
  cJSON_Delete(out);

  cr_assert_eq(kube_patch(K, &KUBE_CONFIGMAPS, NS, "patch", KUBE_PATCH_STRATEGIC,
                          "{\"data\":{\"d\":\"4\"}}", NULL, &out, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(out, "data.d"), "4");
  cr_assert_str_eq(json_get_str(out, "data.c"), "3");
  cJSON_Delete(out);

  /* A failing test operation is refused with the server's Status, never retried. */
  gw_rc rc = kube_patch(K, &KUBE_CONFIGMAPS, NS, "patch", KUBE_PATCH_JSON,
                        "[{\"op\":\"test\",\"path\":\"/data/c\",\"value\":\"nope\"}]", NULL, &out,
                        &st);
  cr_assert_neq(rc, GW_OK);
  cr_assert(st.code >= 400 && st.code < 500, "code %d", st.code);
  cr_assert_null(out);

  rc = kube_patch(K, &KUBE_CONFIGMAPS, NS, "missing", KUBE_PATCH_MERGE, "{}", NULL, &out, &st);
  cr_assert_eq(rc, GW_ENOTFOUND);
  kube_status_release(&st);
}

static int item_count(const cJSON *list)
{
  return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(list, "items"));
}

Test(kube_client, list_pages_with_limit_and_continue)
{
  char name[32];
  for(int i = 0; i < 7; i++) {
    snprintf(name, sizeof(name), "page-%d", i);
    cJSON_Delete(create_cm(name, "app=page", "x"));
  }
  struct kube_status st;
  kube_status_init(&st);
  struct kube_list_opts o = { .label_selector = "app=page", .limit = 3 };
  int total = 0, pages = 0;
  char *cont = NULL;
  char seen[8] = { 0 };
  do {
    cJSON *list = NULL;
    o.continue_token = cont;
    cr_assert_eq(kube_list(K, &KUBE_CONFIGMAPS, NS, &o, &list, &st), GW_OK, "%s", st.message);
    cr_assert_leq(item_count(list), 3);
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items")) {
      const char *n = json_get_str(it, "metadata.name");
      cr_assert(n && !strncmp(n, "page-", 5));
      int idx = atoi(n + 5);
      cr_assert(!seen[idx], "%s listed twice", n);
      seen[idx] = 1;
      total++;
    }
    cr_assert(json_get_str(list, "metadata.resourceVersion"));
    free(cont);
    const char *c = json_get_str(list, "metadata.continue");
    cont = c && *c ? strdup(c) : NULL;
    pages++;
    cJSON_Delete(list);
  } while(cont);
  cr_assert_eq(total, 7);
  cr_assert_eq(pages, 3);

  cJSON *all = NULL;
  o.limit = 2;
  o.continue_token = NULL;
  cr_assert_eq(kube_list_all(K, &KUBE_CONFIGMAPS, NS, &o, &all, &st), GW_OK, "%s", st.message);
  cr_assert_eq(item_count(all), 7);
  cr_assert_null(json_get(all, "metadata.continue"));
  cr_assert(json_get_str(all, "metadata.resourceVersion"));
  cJSON_Delete(all);
  kube_status_release(&st);
}

Test(kube_client, label_and_field_selectors)
{
  cJSON_Delete(create_cm("sel-a1", "app=sel,tier=a", "x"));
  cJSON_Delete(create_cm("sel-a2", "app=sel,tier=a", "x"));
  cJSON_Delete(create_cm("sel-b1", "app=sel,tier=b", "x"));
  cJSON_Delete(create_cm("sel-none", "app=sel", "x"));
  struct kube_status st;
  kube_status_init(&st);
  struct {
    const char *label, *field;
    int n;
  } cases[] = {
    { "app=sel", NULL, 4 },
    { "app=sel,tier=a", NULL, 2 },
    { "app=sel,tier!=a", NULL, 2 },
    { "app=sel,tier in (a,b)", NULL, 3 },
    { "app=sel,!tier", NULL, 1 },
    { NULL, "metadata.name=sel-b1", 1 },
    { "app=sel", "metadata.name!=sel-b1", 3 },
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct kube_list_opts o = { .label_selector = cases[i].label,
                                .field_selector = cases[i].field };
    cJSON *list = NULL;
    cr_assert_eq(kube_list(K, &KUBE_CONFIGMAPS, NS, &o, &list, &st), GW_OK, "%s", st.message);
    cr_assert_eq(item_count(list), cases[i].n, "label %s field %s: %d items",
                 cases[i].label ? cases[i].label : "-", cases[i].field ? cases[i].field : "-",
                 item_count(list));
    cJSON_Delete(list);
  }
  kube_status_release(&st);
}

static int configmap_gone(void *name)
{
  cJSON *o = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(K, &KUBE_CONFIGMAPS, NS, name, &o, &st);
  cJSON_Delete(o);
  kube_status_release(&st);
  return rc == GW_ENOTFOUND;
}

Test(kube_client, delete_preconditions_and_dry_run)
{
  cJSON *cm = create_cm("del", NULL, "1");
  struct kube_status st;
  kube_status_init(&st);
  cJSON *out = NULL;
  struct kube_delete_opts bad = { .precondition_uid = "00000000-0000-0000-0000-000000000000",
                                  .grace_period_s = -1 };
  cr_assert_eq(kube_delete(K, &KUBE_CONFIGMAPS, NS, "del", &bad, &out, &st), GW_ECONFLICT,
               "a uid precondition that does not match is a conflict");
  cr_assert_eq(st.code, 409);
  struct kube_delete_opts dry = { .dry_run = true, .grace_period_s = -1,
                                  .propagation = KUBE_PROPAGATE_BACKGROUND };
  cr_assert_eq(kube_delete(K, &KUBE_CONFIGMAPS, NS, "del", &dry, &out, &st), GW_OK, "%s",
               st.message);
  cJSON_Delete(out);
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "del", &out, &st), GW_OK, "dry run kept it");
  cJSON_Delete(out);
  struct kube_delete_opts good = { .precondition_uid = json_get_str(cm, "metadata.uid"),
                                   .grace_period_s = 0,
                                   .propagation = KUBE_PROPAGATE_FOREGROUND };
  cr_assert_eq(kube_delete(K, &KUBE_CONFIGMAPS, NS, "del", &good, &out, &st), GW_OK, "%s",
               st.message);
  cJSON_Delete(out);
  /* A foreground delete marks the object (foregroundDeletion) and the garbage collector removes
   * it shortly after, as in kube-apiserver: wait for that, then a delete finds nothing. */
  cr_assert(cl_eventually(5000, configmap_gone, "del"), "the foreground delete never finished");
  cr_assert_eq(kube_delete(K, &KUBE_CONFIGMAPS, NS, "del", NULL, &out, &st), GW_ENOTFOUND);
  cJSON_Delete(cm);
  kube_status_release(&st);
}

Test(kube_client, raw_request_and_cluster_scope)
{
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_request(K, "GET", "/version", NULL, NULL, &v, &st), GW_OK, "%s", st.message);
  cr_assert(json_get_str(v, "gitVersion"));
  cJSON_Delete(v);
  cr_assert_eq(kube_get(K, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(json_get_str(v, "metadata.name"), NS);
  cJSON_Delete(v);
  cr_assert_eq(kube_request(K, "GET", "/api/v1/namespaces/" NS "/configmaps/nothing", NULL, NULL,
                            &v, &st), GW_ENOTFOUND);
  cr_assert_str_eq(st.reason, "NotFound");
  kube_status_release(&st);
}

Test(kube_client, default_namespace_comes_from_the_object_or_config)
{
  cJSON *o = configmap("ns-from-object", NULL, "1"), *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, NULL, o, false, &out, &st), GW_OK, "%s",
               st.message);
  cr_assert_str_eq(json_get_str(out, "metadata.namespace"), NS);
  cJSON_Delete(out);
  cr_assert_str_eq(kube_client_config(K)->namespace, "default");
  cJSON_Delete(o);
  kube_status_release(&st);
}

/* The token file is read again when it changes: a bad token first, then a good one. */
Test(kube_client, token_file_is_reread_when_it_changes)
{
  struct kube_config kc;
  char err[512];
  cr_assert_eq(kube_config_load(&kc, C.kubeconfig, "admin", err, sizeof(err)), GW_OK, "%s", err);
  cr_assert(kc.token, "the local cluster's kubeconfig carries tokens");
  char *good = strdup(kc.token);
  free(kc.token);
  kc.token = NULL;
  char path[400];
  snprintf(path, sizeof(path), "%s", cl_path(&C, "kube-client-token"));
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("not-a-token\n", f);
  fclose(f);
  kc.token_file = strdup(path);
  struct kube_client *k;
  cr_assert_eq(kube_client_new(&k, &kc, err, sizeof(err)), GW_OK, "%s", err);
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_get(k, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_ESTATUS);
  cr_assert_eq(st.code, 401);
  usleep(20000); /* a new mtime even on coarse clocks */
  f = fopen(path, "w");
  cr_assert(f);
  fprintf(f, "%s\n", good);
  fclose(f);
  cr_assert_eq(kube_get(k, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_OK, "%s", st.message);
  cJSON_Delete(v);
  kube_client_free(k);
  kube_config_release(&kc);
  free(good);
  kube_status_release(&st);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(kube_client, token_bucket_limits_the_rate)
{
  struct kube_config kc;
  char err[512];
  cr_assert_eq(kube_config_load(&kc, C.kubeconfig, "admin", err, sizeof(err)), GW_OK, "%s", err);
  kc.qps = 10;
  kc.burst = 2;
  struct kube_client *k;
  cr_assert_eq(kube_client_new(&k, &kc, err, sizeof(err)), GW_OK, "%s", err);
  struct kube_status st;
  kube_status_init(&st);
  double t0 = now_s();
  for(int i = 0; i < 12; i++) {
    cJSON *v = NULL;
    cr_assert_eq(kube_get(k, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_OK, "%s", st.message);
    cJSON_Delete(v);
  }
  double el = now_s() - t0;
  /* 2 at once, then 10 at 10/s: about one second. */
  cr_assert_geq(el, 0.9, "12 requests at qps 10, burst 2 took %.3fs", el);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  cr_assert_eq(kube_client_metrics(k, &sb), GW_OK);
  cr_assert(strstr(strbuf_str(&sb), "godwit_kube_ratelimiter_wait_seconds_total"));
  strbuf_release(&sb);
  kube_client_free(k);
  kube_config_release(&kc);
  kube_status_release(&st);
}

/* The value of the sample line that starts with prefix (not a # HELP line), or -1. */
static double metric(struct kube_client *k, const char *prefix)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  cr_assert_eq(kube_client_metrics(k, &sb), GW_OK);
  char at_line[256];
  snprintf(at_line, sizeof(at_line), "\n%s", prefix);
  const char *line = strstr(strbuf_str(&sb), at_line);
  double v = line ? strtod(line + strlen(at_line), NULL) : -1;
  strbuf_release(&sb);
  return v;
}

/* The controller's Events client: its own token bucket, its requests in the main client's
 * metrics. */
Test(kube_client, a_second_client_has_its_own_bucket_and_counts_in_the_first)
{
  struct kube_config kc;
  char err[512];
  cr_assert_eq(kube_config_load(&kc, C.kubeconfig, "admin", err, sizeof(err)), GW_OK, "%s", err);
  kc.qps = 10;
  kc.burst = 2;
  struct kube_client *a, *b;
  cr_assert_eq(kube_client_new(&a, &kc, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_eq(kube_client_new(&b, &kc, err, sizeof(err)), GW_OK, "%s", err);
  kube_client_count_in(b, a);
  struct kube_status st;
  kube_status_init(&st);
  for(int i = 0; i < 6; i++) { /* a's bucket is empty after these */
    cJSON *v = NULL;
    cr_assert_eq(kube_get(a, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_OK, "%s", st.message);
    cJSON_Delete(v);
  }
  const char *waited = "godwit_kube_ratelimiter_wait_seconds_total ";
  const char *gets = "godwit_kube_requests_total{verb=\"get\",code=\"200\"} ";
  double w_a = metric(a, waited);
  cr_assert_gt(w_a, 0, "6 requests at qps 10, burst 2 waited");
  cr_assert_eq(metric(a, gets), 6);
  for(int i = 0; i < 2; i++) { /* b's own bucket still holds its burst */
    cJSON *v = NULL;
    cr_assert_eq(kube_get(b, &KUBE_NAMESPACES, NULL, NS, &v, &st), GW_OK, "%s", st.message);
    cJSON_Delete(v);
  }
  cr_assert_eq(metric(a, gets), 8, "b's requests are counted in a's metrics");
  cr_assert_eq(metric(a, waited), w_a, "b never waited for a's bucket");
  kube_client_free(b);
  kube_client_free(a);
  kube_config_release(&kc);
  kube_status_release(&st);
}

struct worker {
  int id;
  int ok;
};

static void *hammer(void *arg)
{
  struct worker *w = arg;
  struct kube_status st;
  kube_status_init(&st);
  for(int i = 0; i < 10; i++) {
    char name[64];
    snprintf(name, sizeof(name), "thr-%d-%d", w->id, i);
    cJSON *o = configmap(name, "app=thr", "x"), *out = NULL;
    if(kube_create(K, &KUBE_CONFIGMAPS, NS, o, false, &out, &st) == GW_OK)
      w->ok++;
    cJSON_Delete(out);
    out = NULL;
    if(kube_get(K, &KUBE_CONFIGMAPS, NS, name, &out, &st) == GW_OK)
      w->ok++;
    cJSON_Delete(out);
    cJSON_Delete(o);
  }
  kube_status_release(&st);
  return NULL;
}

Test(kube_client, one_client_many_threads)
{
  pthread_t t[8];
  struct worker w[8];
  for(int i = 0; i < 8; i++) {
    w[i] = (struct worker){ .id = i };
    pthread_create(&t[i], NULL, hammer, &w[i]);
  }
  for(int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    cr_assert_eq(w[i].ok, 20, "thread %d: %d of 20 calls succeeded", i, w[i].ok);
  }
  struct kube_list_opts o = { .label_selector = "app=thr" };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_list(K, &KUBE_CONFIGMAPS, NS, &o, &list, &st), GW_OK);
  cr_assert_eq(item_count(list), 80);
  cJSON_Delete(list);
  kube_status_release(&st);
}

Test(kube_client, metrics_count_requests_by_verb_and_code)
{
  cJSON_Delete(create_cm("m", NULL, "1"));
  struct kube_status st;
  kube_status_init(&st);
  cJSON *v = NULL;
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "m", &v, &st), GW_OK);
  cJSON_Delete(v);
  cr_assert_eq(kube_get(K, &KUBE_CONFIGMAPS, NS, "absent", &v, &st), GW_ENOTFOUND);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  cr_assert_eq(kube_client_metrics(K, &sb), GW_OK);
  const char *m = strbuf_str(&sb);
  cr_assert(strstr(m, "# TYPE godwit_kube_requests_total counter"), "%s", m);
  cr_assert(strstr(m, "godwit_kube_requests_total{verb=\"get\",code=\"200\"} "), "%s", m);
  cr_assert(strstr(m, "godwit_kube_requests_total{verb=\"get\",code=\"404\"} 1\n"), "%s", m);
  cr_assert(strstr(m, "godwit_kube_requests_total{verb=\"create\",code=\"201\"} "), "%s", m);
  cr_assert(strstr(m, "# TYPE godwit_kube_request_duration_seconds histogram"), "%s", m);
  cr_assert(strstr(m, "godwit_kube_request_duration_seconds_bucket{verb=\"get\",le=\"+Inf\"} "),
            "%s", m);
  cr_assert(strstr(m, "godwit_kube_request_duration_seconds_count{verb=\"get\"} "), "%s", m);
  cr_assert_null(strstr(m, "Bearer"), "no credential in metrics");
  strbuf_release(&sb);
  kube_status_release(&st);
}

/* ---- pod logs, served from the job runner's processes ---- */

static void start_with_runner(void)
{
  cl_start(&C, CL_NO_CRDS | CL_JOBRUNNER);
  K = cl_client(&C, "admin");
  ensure_namespace(K, NS);
}

TestSuite(kube_client_pods, .init = start_with_runner, .fini = stop, .timeout = 180);

static int pod_done(void *arg)
{
  cJSON *p = NULL;
  struct kube_status st;
  kube_status_init(&st);
  int done = 0;
  if(kube_get(K, &KUBE_PODS, NS, arg, &p, &st) == GW_OK) {
    const char *phase = json_get_str(p, "status.phase");
    done = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
  }
  cJSON_Delete(p);
  kube_status_release(&st);
  return done;
}

Test(kube_client_pods, pod_log_whole_and_tail)
{
  cJSON *o = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"logs\"},"
                   "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
                   "\"image\":\"busybox\",\"command\":[\"sh\",\"-c\","
                   "\"echo one; echo two; echo three\"]}]}}");
  struct kube_status st;
  kube_status_init(&st);
  cr_assert_eq(kube_create(K, &KUBE_PODS, NS, o, false, NULL, &st), GW_OK, "%s", st.message);
  cr_assert(cl_eventually(30000, pod_done, "logs"), "the pod ran to completion");
  char *log = NULL;
  size_t len = 0;
  cr_assert_eq(kube_pod_log(K, NS, "logs", NULL, 0, &log, &len, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(log, "one\ntwo\nthree\n");
  cr_assert_eq(len, strlen(log));
  free(log);
  cr_assert_eq(kube_pod_log(K, NS, "logs", "c", 2, &log, &len, &st), GW_OK, "%s", st.message);
  cr_assert_str_eq(log, "two\nthree\n");
  free(log);
  cr_assert_eq(kube_pod_log(K, NS, "no-such-pod", NULL, 0, &log, &len, &st), GW_ENOTFOUND);
  cr_assert_null(log);
  cJSON_Delete(o);
  kube_status_release(&st);
}

/* kube_forbidden_last names the authorizer's refusals on this thread, not other 403s */
Test(kube_client, authorization_refusals_are_remembered_per_thread)
{
  struct kube_client *bob = cl_client(&C, "bob");
  struct kube_status st;
  kube_status_init(&st);
  kube_forbidden_clear();
  cJSON *out = NULL;
  gw_rc rc = kube_get(bob, &KUBE_SECRETS, "kube-system", "x", &out, &st);
  cr_assert_eq(rc, GW_ESTATUS, "%s", gw_strerror(rc));
  cr_assert_eq(st.code, 403);
  cr_assert_str_eq(kube_forbidden_last(), "secrets \"x\" is forbidden: User \"bob\" cannot get "
                                          "resource \"secrets\" in API group \"\" in the "
                                          "namespace \"kube-system\"");
  /* an allowed call leaves it; clearing forgets it */
  rc = kube_get(K, &KUBE_NAMESPACES, NULL, NS, &out, &st);
  cr_assert_eq(rc, GW_OK);
  cJSON_Delete(out);
  cr_assert_neq(kube_forbidden_last()[0], '\0');
  kube_forbidden_clear();
  cr_assert_str_eq(kube_forbidden_last(), "");
  /* a 403 that is no authorization refusal (a namespace being deleted) is not one */
  ensure_namespace(K, "doomed");
  cJSON *hold = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                      "\"hold\",\"finalizers\":[\"example.com/hold\"]}}");
  cr_assert_eq(kube_create(K, &KUBE_CONFIGMAPS, "doomed", hold, false, NULL, &st), GW_OK);
  cJSON_Delete(hold);
  cr_assert_eq(kube_delete(K, &KUBE_NAMESPACES, NULL, "doomed", NULL, NULL, &st), GW_OK, "%s",
               st.message);
  cJSON *cm = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                    "\"late\"}}");
  rc = kube_create(K, &KUBE_CONFIGMAPS, "doomed", cm, false, NULL, &st);
  cJSON_Delete(cm);
  cr_assert_eq(st.code, 403, "%s %s", gw_strerror(rc), st.message);
  cr_assert_str_eq(kube_forbidden_last(), "", "%s", st.message);
  kube_status_release(&st);
}
