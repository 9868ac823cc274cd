/* The node agent's HTTPS API (controller/nodeagent/api.h, docs/dev/podmotion-nodeagent.md)
 * called directly through its client (client.h), as the controller and the source agent call
 * it, on a local cluster whose worker nodes each run a real godwit-nodeagent that publishes its
 * endpoint on its Node. The bearer token guards every call but /healthz and /metrics; a counter
 * Pod moves from node-a to node-b call by call (checkpoint, send, the restored Pod, probe,
 * detach, attach, remove) while its client's connection goes on; a transfer checks every file's
 * sha256 and name, completes once, and resumes with what the destination holds; refusals carry
 * their documented code and reason, and change nothing; a failed dump leaves the source
 * serving. Two agents of the test's own, beside the cluster's, show what the agent does with a
 * container on the node's own network and with a file above its --max-file-mib, in network
 * namespaces the test makes (this machine's network is never touched). As root, with make
 * deps' CRIU. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "digest.h"
#include "json.h"
#include "nodeagent/api.h"
#include "nodeagent/client.h"
#include "nodeagent/netns.h"
#include "nodeagent/restore.h"
#include "test_jobrunner.h"

#define AGENT_ANNOTATION "migration.podmotion.io/node-agent"
#define UID_A "5e0a1c2d-7b3f-4e8a-9c1d-0f2e3a4b5c6d"
#define UID_B "a1b2c3d4-0000-4000-8000-000000000001"

static struct cl C;
static struct kube_client *K;
static char agent_ca[512], agent_token[256], last_err[2048];

struct agent_ref {
  const char *node;
  char endpoint[160];
};
static struct agent_ref agents[] = { { "node-a", "" }, { "node-b", "" } };

/* The endpoint a worker node's agent publishes on its Node. */
static void read_endpoint(struct agent_ref *a)
{
  cJSON *node = jt_get(K, &KUBE_NODES, a->node);
  cr_assert(node, "no Node %s", a->node);
  const cJSON *ann = json_get(node, "metadata.annotations");
  const char *text =
    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, AGENT_ANNOTATION));
  cr_assert(text, "Node %s has no %s annotation", a->node, AGENT_ANNOTATION);
  cJSON *facts = cJSON_Parse(text);
  const char *ep = json_get_str(facts, "endpoint");
  cr_assert(ep && !strncmp(ep, "https://127.0.0.1:", 18), "%s: %s", a->node, text);
  snprintf(a->endpoint, sizeof(a->endpoint), "%s", ep);
  cJSON_Delete(facts);
  cJSON_Delete(node);
}

static void start(void)
{
  cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
  jt_start(&C, CL_NODES);
  K = jt_admin(&C);
  snprintf(agent_ca, sizeof(agent_ca), "%s", cl_path(&C, "pki/nodeagent/ca.crt"));
  FILE *f = fopen(cl_path(&C, "nodeagent.token"), "r");
  cr_assert(f, "no nodeagent.token in %s", C.dir);
  cr_assert(fgets(agent_token, sizeof(agent_token), f));
  fclose(f);
  agent_token[strcspn(agent_token, "\r\n")] = 0;
  cr_assert(agent_token[0]);
  for(size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++)
    read_endpoint(&agents[i]);
}

static void stop(void)
{
  cl_stop(&C);
  curl_global_cleanup();
}

TestSuite(nodeagent_api, .init = start, .fini = stop, .timeout = 120);

/* ---- calls ---- */
static const char *endpoint(const char *node)
{
  for(size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++)
    if(!strcmp(agents[i].node, node))
      return agents[i].endpoint;
  cr_assert_fail("no agent for %s", node);
  return NULL;
}

static const char *str_or(const char *s)
{
  return s ? s : "";
}

static struct na_target target(const char *node, const char *token)
{
  struct na_target t = { .endpoint = endpoint(node), .ca_file = agent_ca, .token = token,
                         .timeout_ms = 60000 };
  return t;
}

/* POST path to node's agent with body (taken; NULL: {}) and token through the client: the HTTP
 * status; *out the answer of a 2xx (out may be NULL); last_err what the client said. */
static int post_as(const char *node, const char *token, const char *path, cJSON *body,
                   cJSON **out)
{
  struct na_target t = target(node, token);
  int code = 0;
  last_err[0] = 0;
  gw_rc rc = na_post(&t, path, body, out, &code, last_err, sizeof(last_err));
  cJSON_Delete(body);
  cr_assert(code, "%s %s: no answer: %s", node, path, last_err);
  cr_assert_eq(rc == GW_OK, code >= 200 && code <= 299, "%s %s: %s with HTTP %d", node, path,
               gw_strerror(rc), code);
  return code;
}

/* The answer (a new object) of a call that must succeed. */
static cJSON *ok(const char *node, const char *path, cJSON *body)
{
  cJSON *out = NULL;
  int code = post_as(node, agent_token, path, body, &out);
  cr_assert_eq(code, 200, "%s %s answered %d: %s", node, path, code, last_err);
  cr_assert(out);
  return out;
}

struct answer {
  char *data;
  size_t len;
};

static size_t on_answer(char *p, size_t size, size_t n, void *ctx)
{
  struct answer *a = ctx;
  char *grown = realloc(a->data, a->len + size * n + 1);
  if(!grown)
    return 0;
  memcpy(grown + a->len, p, size * n);
  a->data = grown;
  a->len += size * n;
  a->data[a->len] = 0;
  return size * n;
}

/* One request with libcurl alone, so that the test controls every header: auth is the whole
 * Authorization value (NULL: no such header). The HTTP status; *text the body (malloc'd). */
static int raw(const char *node, const char *method, const char *path, const char *auth,
               struct curl_slist *headers, const void *body, size_t len, char **text)
{
  const char *ep = endpoint(node);
  const char *port = strrchr(ep, ':') + 1;
  char url[256], conn[256], hdr[400];
  snprintf(url, sizeof(url), "https://" NA_SERVER_NAME ":%s%s", port, path);
  snprintf(conn, sizeof(conn), NA_SERVER_NAME ":%s:127.0.0.1:%s", port, port);
  struct curl_slist *to = curl_slist_append(NULL, conn);
  if(auth) {
    snprintf(hdr, sizeof(hdr), "Authorization: %s", auth);
    headers = curl_slist_append(headers, hdr);
  }
  struct answer a = { calloc(1, 1), 0 };
  CURL *c = curl_easy_init();
  cr_assert(c && a.data);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CONNECT_TO, to);
  curl_easy_setopt(c, CURLOPT_CAINFO, agent_ca);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_answer);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
  if(strcmp(method, "GET")) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  CURLcode cc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  curl_slist_free_all(headers);
  curl_slist_free_all(to);
  cr_assert_eq(cc, CURLE_OK, "%s %s %s: %s", node, method, path, curl_easy_strerror(cc));
  *text = a.data;
  return (int)code;
}

/* Checks a metav1.Status answer (taken) and returns its message (static). */
static const char *status_of(char *text, int code, const char *reason)
{
  static char msg[1024];
  cJSON *st = cJSON_Parse(text);
  cr_assert(st, "not JSON: %s", text);
  cr_expect_str_eq(str_or(json_get_str(st, "kind")), "Status", "%s", text);
  cr_expect_eq(jt_num(st, "code"), code, "%s", text);
  cr_expect_str_eq(str_or(json_get_str(st, "reason")), reason, "%s", text);
  snprintf(msg, sizeof(msg), "%s", str_or(json_get_str(st, "message")));
  cJSON_Delete(st);
  free(text);
  return msg;
}

static struct curl_slist *json_type(void)
{
  return curl_slist_append(NULL, "Content-Type: application/json");
}

/* A POST the agent must refuse with code and reason: through the client, which answers the
 * status, and with libcurl, whose body is the Status. body is taken; returns the message. */
static const char *refused(const char *node, const char *path, cJSON *body, int code,
                           const char *reason)
{
  char *text = cJSON_PrintUnformatted(body);
  cr_assert(text);
  cJSON *out = NULL;
  int got = post_as(node, agent_token, path, body, &out);
  cr_expect_eq(got, code, "%s %s %s: %d, not %d (%s)", node, path, text, got, code, last_err);
  cJSON_Delete(out);
  char auth[300], *answer = NULL;
  snprintf(auth, sizeof(auth), "Bearer %s", agent_token);
  got = raw(node, "POST", path, auth, json_type(), text, strlen(text), &answer);
  cr_expect_eq(got, code, "%s %s %s: %d: %s", node, path, text, got, answer);
  cJSON_free(text);
  return status_of(answer, code, reason);
}

/* PUT one file through the client with token: the HTTP status. */
static int put_as(const char *node, const char *token, const char *mig, const char *file,
                  const void *data, size_t len, const char *sha)
{
  struct na_target t = target(node, token);
  int code = 0;
  last_err[0] = 0;
  gw_rc rc = na_put_file(&t, mig, file, data, len, sha, &code, last_err, sizeof(last_err));
  cr_assert(code, "PUT %s to %s: no answer: %s", file, node, last_err);
  cr_assert_eq(rc == GW_OK, code == 200, "PUT %s: %s with %d", file, gw_strerror(rc), code);
  return code;
}

static int put(const char *node, const char *mig, const char *file, const void *data,
               size_t len, const char *sha)
{
  return put_as(node, agent_token, mig, file, data, len, sha);
}

/* A PUT that must be refused with code and reason (client and libcurl); the message. */
static const char *put_refused(const char *node, const char *mig, const char *file,
                               const char *data, const char *sha, int code, const char *reason)
{
  int got = put(node, mig, file, data, strlen(data), sha);
  cr_expect_eq(got, code, "PUT %s/%s: %d, not %d (%s)", mig, file, got, code, last_err);
  char auth[300], h[3][400], *answer = NULL;
  snprintf(auth, sizeof(auth), "Bearer %s", agent_token);
  snprintf(h[0], sizeof(h[0]), NA_HDR_MIGRATION ": %s", mig);
  snprintf(h[1], sizeof(h[1]), NA_HDR_FILE ": %s", file);
  snprintf(h[2], sizeof(h[2]), NA_HDR_SHA256 ": %s", sha);
  struct curl_slist *hs = curl_slist_append(NULL, "Content-Type: application/octet-stream");
  for(int i = 0; i < 3; i++)
    hs = curl_slist_append(hs, h[i]);
  got = raw(node, "PUT", NA_PATH_FILES, auth, hs, data, strlen(data), &answer);
  cr_expect_eq(got, code, "PUT %s/%s: %d: %s", mig, file, got, answer);
  return status_of(answer, code, reason);
}

static const char *sha_of(const void *data, size_t len, char out[DIGEST_SHA256_LEN])
{
  cr_assert_eq(digest_sha256(data, len, out), GW_OK);
  return out;
}

/* A series of node's /metrics: name{node="NODE"} or name{node="NODE",label}. */
static double metric(const char *node, const char *name, const char *label)
{
  char *text = NULL, key[300];
  cr_assert_eq(raw(node, "GET", "/metrics", NULL, NULL, NULL, 0, &text), 200);
  snprintf(key, sizeof(key), "\n%s{node=\"%s\"%s%s} ", name, node, label ? "," : "",
           label ? label : "");
  const char *at = strstr(text, key);
  cr_assert(at, "no%s in the metrics of %s:\n%s", key, node, text);
  double v = strtod(at + strlen(key), NULL);
  free(text);
  return v;
}

/* ---- migrations, directories, Pods ---- */
/* {"migration": {"namespace": JT_NS, "name": name, "uid": uid}} */
static cJSON *mig_req(const char *name, const char *uid)
{
  cJSON *r = cJSON_CreateObject();
  cJSON *m = cJSON_AddObjectToObject(r, "migration");
  cJSON_AddStringToObject(m, "namespace", JT_NS);
  cJSON_AddStringToObject(m, "name", name);
  cJSON_AddStringToObject(m, "uid", uid);
  return r;
}

/* The same with "containers": [{name, containerID}] (ids NULL-terminated pairs). */
static cJSON *ctr_req(const char *name, const char *uid, const char *const *pairs)
{
  cJSON *r = mig_req(name, uid);
  cJSON *a = cJSON_AddArrayToObject(r, "containers");
  for(size_t i = 0; pairs[i]; i += 2) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", pairs[i]);
    if(pairs[i + 1])
      cJSON_AddStringToObject(o, "containerID", pairs[i + 1]);
    cJSON_AddItemToArray(a, o);
  }
  return r;
}

/* The request naming every container of pod, as the controller sends it. */
static cJSON *pod_req(const char *name, const char *uid, const cJSON *pod)
{
  cJSON *r = mig_req(name, uid);
  cJSON *a = cJSON_AddArrayToObject(r, "containers");
  const cJSON *cs;
  cJSON_ArrayForEach(cs, json_get(pod, "status.containerStatuses"))
  {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", str_or(json_get_str(cs, "name")));
    cJSON_AddStringToObject(o, "containerID", str_or(json_get_str(cs, "containerID")));
    cJSON_AddItemToArray(a, o);
  }
  cr_assert(cJSON_GetArraySize(a) > 0, "the pod has no container status");
  return r;
}

/* The checkpoint directory of migration name on node (a rotating static buffer). */
static const char *mig_dir(const char *node, const char *name, const char *uid)
{
  static char bufs[4][600];
  static unsigned next;
  char n[NA_DIRNAME_MAX];
  cr_assert_eq(na_dirname(JT_NS, name, uid, n), GW_OK);
  char *b = bufs[next++ % 4];
  snprintf(b, 600, "%s/nodes/%s/checkpoints/%s", C.dir, node, n);
  return b;
}

static const char *root_dir(const char *node)
{
  static char buf[2][600];
  static unsigned next;
  char *b = buf[next++ % 2];
  snprintf(b, 600, "%s/nodes/%s/checkpoints", C.dir, node);
  return b;
}

/* The entries of a directory but . and ..; -1 when it does not exist. */
static int entries(const char *dir)
{
  DIR *d = opendir(dir);
  if(!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while((e = readdir(d)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static bool exists(const char *path)
{
  struct stat st;
  return !lstat(path, &st);
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n, "%s", path);
  buf[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static bool all_running(const cJSON *pod)
{
  const cJSON *cs;
  int n = 0;
  cJSON_ArrayForEach(cs, json_get(pod, "status.containerStatuses"))
  {
    if(!json_get(cs, "state.running") || !json_get_str(cs, "containerID"))
      return false;
    n++;
  }
  return n > 0 && json_get_str(pod, "status.podIP");
}

/* Creates pod (taken) and waits until every container runs; the Pod. */
static cJSON *run_pod(cJSON *pod)
{
  char name[128];
  snprintf(name, sizeof(name), "%s", json_get_str(pod, "metadata.name"));
  jt_create(K, &KUBE_PODS, pod);
  cJSON *p = jt_wait_pod(K, NULL, name, all_running, 30000);
  cr_assert(p, "pod %s never ran", name);
  return p;
}

static const char *container_id(const cJSON *pod, int i)
{
  const cJSON *cs = cJSON_GetArrayItem(json_get(pod, "status.containerStatuses"), i);
  return json_get_str(cs, "containerID");
}

/* ---- 1: the token ---- */
static const char *const PROTECTED[] = {
  NA_PATH_CHECKPOINT, NA_PATH_SEND,   NA_PATH_RECEIVED, NA_PATH_STATE,
  NA_PATH_RELEASE,    NA_PATH_DETACH, NA_PATH_ATTACH,   NA_PATH_PROBE,
  NA_PATH_REMOVE,     NA_PATH_LIST,
};

Test(nodeagent_api, every_call_but_health_and_metrics_needs_the_token)
{
  char wrong[300], longer[300], shorter[300];
  snprintf(wrong, sizeof(wrong), "%c%s", agent_token[0] == 'x' ? 'y' : 'x', agent_token + 1);
  snprintf(longer, sizeof(longer), "%sx", agent_token);
  snprintf(shorter, sizeof(shorter), "%.*s", (int)strlen(agent_token) - 1, agent_token);
  const char *bad[] = { "", wrong, longer, shorter };
  const char *body = "{\"migration\":{\"namespace\":\"jr\",\"name\":\"m\",\"uid\":\"" UID_A
                     "\"}}";
  for(size_t i = 0; i < sizeof(PROTECTED) / sizeof(PROTECTED[0]); i++) {
    for(size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
      cJSON *out = NULL;
      int code = post_as("node-a", bad[j], PROTECTED[i], cJSON_Parse(body), &out);
      cr_expect_eq(code, 401, "%s with token \"%s\": %d", PROTECTED[i], bad[j], code);
      cr_expect_null(out);
    }
    /* no Authorization header at all, and one of another scheme */
    char *text = NULL;
    int code = raw("node-a", "POST", PROTECTED[i], NULL, json_type(), body, strlen(body), &text);
    cr_expect_eq(code, 401, "%s without a token: %d", PROTECTED[i], code);
    status_of(text, 401, "Unauthorized");
    char basic[300];
    snprintf(basic, sizeof(basic), "Basic %s", agent_token);
    code = raw("node-a", "POST", PROTECTED[i], basic, json_type(), body, strlen(body), &text);
    cr_expect_eq(code, 401, "%s with Basic: %d", PROTECTED[i], code);
    free(text);
  }
  /* a file without a token is refused before anything is written */
  char sha[DIGEST_SHA256_LEN], h[3][300];
  sha_of("data", 4, sha);
  snprintf(h[0], sizeof(h[0]), NA_HDR_MIGRATION ": jr_m_5e0a1c2d");
  snprintf(h[1], sizeof(h[1]), NA_HDR_FILE ": main/pages-1.img");
  snprintf(h[2], sizeof(h[2]), NA_HDR_SHA256 ": %s", sha);
  struct curl_slist *hs = NULL;
  for(int i = 0; i < 3; i++)
    hs = curl_slist_append(hs, h[i]);
  char *text = NULL;
  cr_expect_eq(raw("node-b", "PUT", NA_PATH_FILES, NULL, hs, "data", 4, &text), 401);
  status_of(text, 401, "Unauthorized");
  cr_expect_eq(put_as("node-b", "", "jr_m_5e0a1c2d", "main/pages-1.img", "data", 4, sha), 401);
  cr_expect_eq(put_as("node-b", "wrong", "jr_m_5e0a1c2d", "main/pages-1.img", "data", 4, sha),
               401);
  cr_expect_eq(entries(root_dir("node-b")), 0, "a refused file left something behind");

  /* the right token passes */
  cJSON *list = ok("node-a", NA_PATH_LIST, NULL);
  cr_expect(cJSON_IsArray(json_get(list, "checkpoints")));
  cJSON_Delete(list);

  /* /healthz and /metrics need none (whatever one says) */
  cr_expect_eq(raw("node-a", "GET", "/healthz", NULL, NULL, NULL, 0, &text), 200);
  cr_expect_str_eq(text, "ok\n");
  free(text);
  cr_expect_eq(raw("node-b", "GET", "/healthz", "Bearer wrong", NULL, NULL, 0, &text), 200);
  free(text);
  cr_expect_eq(raw("node-a", "GET", "/metrics", NULL, NULL, NULL, 0, &text), 200);
  cr_expect(strstr(text, "# TYPE godwit_nodeagent_checkpoints_total counter"), "%s", text);
  free(text);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"success\""), 0);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"failure\""), 0);
  /* the refused file above was refused before its checks: not counted as one */
  cr_expect_eq(metric("node-b", "godwit_nodeagent_files_refused_total", NULL), 0);
}

/* ---- 2: a migration call by call ---- */
struct concurrent {
  const char *node;
  const cJSON *body;
  cJSON *out;
  int code;
  gw_rc rc;
  char err[512];
};

static void *post_thread(void *arg)
{
  struct concurrent *x = arg;
  struct na_target t = target(x->node, agent_token);
  x->rc = na_post(&t, NA_PATH_CHECKPOINT, x->body, &x->out, &x->code, x->err, sizeof(x->err));
  return NULL;
}

static long long num(const cJSON *o, const char *path)
{
  const cJSON *v = json_get(o, path);
  cr_assert(cJSON_IsNumber(v), "no number %s", path);
  return (long long)v->valuedouble;
}

/* Whether every entry of want (path, sha256) is in have. */
static bool same_files(const cJSON *want, const cJSON *have)
{
  const cJSON *w;
  cJSON_ArrayForEach(w, want)
  {
    bool found = false;
    const cJSON *h;
    cJSON_ArrayForEach(h, have)
      found = found || (!strcmp(str_or(json_get_str(w, "path")), str_or(json_get_str(h, "path")))
                        && !strcmp(str_or(json_get_str(w, "sha256")),
                                   str_or(json_get_str(h, "sha256"))));
    if(!found)
      return false;
  }
  return true;
}

static cJSON *restored_pod(const char *name, const char *dir, const char *ip, const char *mac)
{
  cJSON *pod = jt_counter_pod(name, "node-b");
  cJSON *ann = cJSON_CreateObject();
  cJSON_AddStringToObject(ann, RESTORE_FROM_ANNOTATION, dir);
  cJSON_AddStringToObject(ann, RESTORE_IP_ANNOTATION, ip);
  cJSON_AddStringToObject(ann, RESTORE_MAC_ANNOTATION, mac);
  cr_assert_eq(json_set(pod, "metadata.annotations", ann), GW_OK);
  return pod;
}

Test(nodeagent_api, a_pod_moves_call_by_call)
{
  cJSON *src = run_pod(jt_counter_pod("counter", "node-a"));
  const char *ip = json_get_str(src, "status.podIP");
  int client = jt_counter_connect(ip);
  cr_assert_str_eq(jt_counter_req(client, "inc"), "1");
  cr_assert_str_eq(jt_counter_req(client, "inc"), "2");
  char src_net[64];
  snprintf(src_net, sizeof(src_net), "%s", jt_counter_req(client, "net"));

  /* the checkpoint: two calls at once take it once (the lock), a third gets the same */
  cJSON *body = pod_req("move", UID_A, src);
  struct concurrent x[2] = { { .node = "node-a", .body = body },
                             { .node = "node-a", .body = body } };
  pthread_t th[2];
  for(int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, post_thread, &x[i]), 0);
  for(int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  cJSON_Delete(body);
  for(int i = 0; i < 2; i++)
    cr_assert_eq(x[i].code, 200, "checkpoint %d: %d %s", i, x[i].code, x[i].err);
  cJSON *cp = x[0].out;
  const char *dir = mig_dir("node-a", "move", UID_A);
  cr_expect_gt(num(cp, "sizeBytes"), 0);
  cr_expect_geq(num(cp, "durationMs"), 0);
  cr_expect_gt(num(cp, "startedAtMs"), 1700000000000LL);
  cr_expect_str_eq(str_or(json_get_str(cp, "ip")), ip);
  const char *mac = str_or(json_get_str(cp, "mac"));
  cr_expect_eq(strlen(mac), 17, "mac \"%s\"", mac);
  cr_expect_str_eq(str_or(json_get_str(cp, "node")), "node-a");
  cr_expect_str_eq(str_or(json_get_str(cp, "dir")), dir);
  const cJSON *c0 = cJSON_GetArrayItem(json_get(cp, "containers"), 0);
  cr_expect_str_eq(str_or(json_get_str(c0, "name")), "main");
  cr_expect_eq(num(c0, "pid"), jt_container_pid(src));
  cr_expect_geq(num(c0, "dumpMs"), 0);
  struct stat st;
  cr_assert_eq(stat(dir, &st), 0, "%s: %s", dir, strerror(errno));
  cr_expect(S_ISDIR(st.st_mode));
  cr_expect_eq(st.st_mode & 07777, 0700, "%s has mode %o", dir, st.st_mode & 07777);
  char sub[700];
  snprintf(sub, sizeof(sub), "%s/main/" RESTORE_STDIO, dir);
  cr_expect(exists(sub), "no %s", sub);
  cr_expect_eq(num(x[1].out, "startedAtMs"), num(cp, "startedAtMs"), "taken twice");
  cJSON *again = ok("node-a", NA_PATH_CHECKPOINT, pod_req("move", UID_A, src));
  cr_expect_eq(num(again, "startedAtMs"), num(cp, "startedAtMs"), "taken again");
  cr_expect_eq(num(again, "sizeBytes"), num(cp, "sizeBytes"));
  cJSON_Delete(again);
  cJSON_Delete(x[1].out);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"success\""), 1);
  cJSON *src_state = ok("node-a", NA_PATH_STATE, mig_req("move", UID_A));
  const cJSON *manifest = json_get(src_state, "received.files");
  int nfiles = cJSON_GetArraySize(manifest);
  cr_assert_gt(nfiles, 1);

  /* the copy to node-b */
  cJSON *req = mig_req("move", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", endpoint("node-b"));
  cJSON *sent = ok("node-a", NA_PATH_SEND, cJSON_Duplicate(req, 1));
  cr_expect_eq(num(sent, "files"), nfiles);
  cr_expect_eq(num(sent, "skipped"), 0);
  cr_expect_eq(num(sent, "bytes"), num(cp, "sizeBytes"));
  cJSON_Delete(sent);
  cJSON *dst = ok("node-b", NA_PATH_STATE, mig_req("move", UID_A));
  cr_expect(json_get_bool(dst, "received.complete", false), "node-b has no complete copy");
  cr_expect(cJSON_IsNull(json_get(dst, "checkpoint")));
  cr_expect_str_eq(str_or(json_get_str(dst, "node")), "node-b");
  const char *bdir = mig_dir("node-b", "move", UID_A);
  cr_expect_str_eq(str_or(json_get_str(dst, "dir")), bdir);
  cr_expect_eq(cJSON_GetArraySize(json_get(dst, "received.files")), nfiles);
  cr_expect(same_files(manifest, json_get(dst, "received.files")), "node-b's files differ");
  /* sent again: nothing to send, the copy is complete */
  sent = ok("node-a", NA_PATH_SEND, req);
  cr_expect_eq(num(sent, "files"), 0);
  cr_expect_eq(num(sent, "skipped"), nfiles);
  cJSON_Delete(sent);

  /* the restored Pod on node-b, shielded; the probe over its loopback */
  cJSON *b = run_pod(restored_pod("counter-b", str_or(json_get_str(dst, "dir")), ip, mac));
  cr_expect_str_eq(str_or(json_get_str(b, "status.podIP")), ip);
  const char *pairs[] = { "main", container_id(b, 0), NULL };
  cJSON *probe = ctr_req("move", UID_A, pairs);
  cJSON_AddStringToObject(probe, "address", ip);
  cJSON_AddNumberToObject(probe, "port", 7000);
  cJSON_AddNumberToObject(probe, "timeoutMs", 2000);
  cJSON *pr = ok("node-b", NA_PATH_PROBE, cJSON_Duplicate(probe, 1));
  cr_expect(json_get_bool(pr, "ok", false), "probe: %s", str_or(json_get_str(pr, "message")));
  cr_expect_str_eq(str_or(json_get_str(pr, "message")), "passed");
  cJSON_Delete(pr);
  cJSON_ReplaceItemInObject(probe, "port", cJSON_CreateNumber(7001));
  pr = ok("node-b", NA_PATH_PROBE, probe);
  cr_expect(!json_get_bool(pr, "ok", true), "port 7001 answered");
  cr_expect(strlen(str_or(json_get_str(pr, "message"))) > 0);
  cr_expect(strstr(str_or(json_get_str(pr, "message")), "refused"), "%s",
            str_or(json_get_str(pr, "message")));
  cJSON_Delete(pr);

  /* the handover */
  cJSON *d = ok("node-a", NA_PATH_DETACH, pod_req("move", UID_A, src));
  cr_expect(json_get_bool(d, "shielded", false), "the source is not shielded");
  cJSON_Delete(d);
  cJSON *at = ok("node-b", NA_PATH_ATTACH, ctr_req("move", UID_A, pairs));
  cr_expect(!json_get_bool(at, "shielded", true), "the restored Pod is still shielded");
  cJSON_Delete(at);
  cr_expect_str_eq(jt_counter_req(client, "inc"), "3", "the counter did not go on");
  cr_expect_str_neq(jt_counter_req(client, "net"), src_net, "node-a still answers");

  /* node-b's record of the restore */
  cJSON_Delete(dst);
  dst = ok("node-b", NA_PATH_STATE, mig_req("move", UID_A));
  const cJSON *r = json_get(dst, "restored.main");
  cr_assert(r, "no restored.main in node-b's state");
  cr_expect_eq(num(r, "pid"), jt_container_pid(b));
  cr_expect_geq(num(r, "restoredAtMs"), num(cp, "startedAtMs"));
  cr_expect_geq(num(r, "durationMs"), 0);

  /* the metrics tell the same story */
  double size = (double)num(cp, "sizeBytes");
  cr_expect_eq(metric("node-a", "godwit_nodeagent_transfer_bytes_total", "direction=\"sent\""),
               size);
  cr_expect_eq(metric("node-b", "godwit_nodeagent_transfer_bytes_total",
                      "direction=\"received\""), size);
  cr_expect_eq(metric("node-b", "godwit_nodeagent_probes_total", "result=\"success\""), 1);
  cr_expect_eq(metric("node-b", "godwit_nodeagent_probes_total", "result=\"failure\""), 1);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_network_changes_total", "change=\"detach\""),
               1);
  cr_expect_eq(metric("node-b", "godwit_nodeagent_network_changes_total", "change=\"attach\""),
               1);

  /* removed from both; removing again is no error */
  const char *nodes[] = { "node-a", "node-b" };
  for(int i = 0; i < 2; i++) {
    cJSON *rm = ok(nodes[i], NA_PATH_REMOVE, mig_req("move", UID_A));
    cr_expect(json_get_bool(rm, "removed", false), "%s removed nothing", nodes[i]);
    cJSON_Delete(rm);
    cr_expect(!exists(mig_dir(nodes[i], "move", UID_A)), "%s kept the checkpoint", nodes[i]);
    cJSON *l = ok(nodes[i], NA_PATH_LIST, NULL);
    cr_expect_eq(cJSON_GetArraySize(json_get(l, "checkpoints")), 0, "%s still lists some",
                 nodes[i]);
    cJSON_Delete(l);
    rm = ok(nodes[i], NA_PATH_REMOVE, mig_req("move", UID_A));
    cr_expect(!json_get_bool(rm, "removed", true));
    cJSON_Delete(rm);
    cr_expect_eq(metric(nodes[i], "godwit_nodeagent_checkpoints_removed_total", NULL), 1);
  }
  cr_expect_str_eq(jt_counter_req(client, "inc"), "4", "the restored Pod stopped serving");
  close(client);
  cJSON_Delete(dst);
  cJSON_Delete(src_state);
  cJSON_Delete(cp);
  cJSON_Delete(b);
  cJSON_Delete(src);
}

/* ---- 3: the transfer's checks ---- */
struct file_case {
  const char *mig, *file, *why;
};

Test(nodeagent_api, files_are_checked_and_complete_once)
{
  char name[NA_DIRNAME_MAX], sha[DIGEST_SHA256_LEN], other[DIGEST_SHA256_LEN];
  cr_assert_eq(na_dirname(JT_NS, "files", UID_B, name), GW_OK);
  const char *root = root_dir("node-b"), *dir = mig_dir("node-b", "files", UID_B);
  const char *a = "the first file", *b = "the second file", *c = "the third file";
  sha_of(a, strlen(a), sha);
  sha_of("something else", 14, other);

  /* a body that is not what its digest says */
  const char *msg = put_refused("node-b", name, "main/a.img", a, other, 400, "ChecksumMismatch");
  cr_expect(strstr(msg, "main/a.img"), "%s", msg);
  cr_expect_eq(entries(root), 0, "a refused file left something in %s", root);

  /* names that leave their directory, or are not CONTAINER/FILE */
  const struct file_case names[] = {
    { name, "../a.img", "a container named .." },
    { name, "main/../../a.img", "a file climbing out" },
    { name, "main/sub/a.img", "a '/' too many" },
    { name, "a.img", "no container" },
    { name, "main/", "no file" },
    { name, "/a.img", "an absolute name" },
    { name, "main/..", "a file named .." },
    { "..", "main/a.img", "a migration named .." },
    { "../escape", "main/a.img", "a migration climbing out" },
    { "", "main/a.img", "no migration" },
  };
  for(size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    cr_log_info("%s", names[i].why);
    put_refused("node-b", names[i].mig, names[i].file, a, sha, 400, "BadRequest");
  }
  cr_expect_eq(entries(root), 0, "a refused name left something in %s", root);
  char path[800];
  snprintf(path, sizeof(path), "%s/nodes/node-b/a.img", C.dir);
  cr_expect(!exists(path), "%s was written", path);
  snprintf(path, sizeof(path), "%s/a.img", root);
  cr_expect(!exists(path), "%s was written", path);
  cr_expect_eq(metric("node-b", "godwit_nodeagent_files_refused_total", NULL),
               2 + sizeof(names) / sizeof(names[0]) * 2); /* each by client and by curl */

  /* a.img, and c.img with other content than the manifest says; b.img missing */
  cr_expect_eq(put("node-b", name, "main/a.img", a, strlen(a), sha), 200, "%s", last_err);
  char sha_b[DIGEST_SHA256_LEN], sha_c[DIGEST_SHA256_LEN], sha_x[DIGEST_SHA256_LEN];
  const char *x = "not the third file";
  cr_expect_eq(put("node-b", name, "main/c.img", x, strlen(x), sha_of(x, strlen(x), sha_x)),
               200, "%s", last_err);
  struct stat st;
  cr_assert_eq(stat(dir, &st), 0);
  cr_expect_eq(st.st_mode & 07777, 0700, "%s has mode %o", dir, st.st_mode & 07777);
  snprintf(path, sizeof(path), "%s/main/a.img", dir);
  size_t len = 0;
  char *got = slurp(path, &len);
  cr_expect_eq(len, strlen(a));
  cr_expect(!memcmp(got, a, len));
  free(got);

  cJSON *req = mig_req("files", UID_B);
  cJSON *m = cJSON_AddArrayToObject(req, "manifest");
  const struct {
    const char *path, *data, *sha;
  } files[] = {
    { "main/a.img", a, sha },
    { "main/b.img", b, sha_of(b, strlen(b), sha_b) },
    { "main/c.img", c, sha_of(c, strlen(c), sha_c) },
  };
  for(int i = 0; i < 3; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", files[i].path);
    cJSON_AddNumberToObject(o, "size", (double)strlen(files[i].data));
    cJSON_AddStringToObject(o, "sha256", files[i].sha);
    cJSON_AddItemToArray(m, o);
  }
  msg = refused("node-b", NA_PATH_RECEIVED, cJSON_Duplicate(req, 1), 409,
                "CheckpointIncomplete");
  cr_expect(strstr(msg, "main/b.img"), "the missing file is not named: %s", msg);
  cr_expect(strstr(msg, "main/c.img"), "the different file is not named: %s", msg);
  cr_expect(!strstr(msg, "main/a.img"), "a good file is named: %s", msg);
  cJSON *s = ok("node-b", NA_PATH_STATE, mig_req("files", UID_B));
  cr_expect(!json_get_bool(s, "received.complete", true));
  cr_expect_eq(cJSON_GetArraySize(json_get(s, "received.files")), 2);
  cJSON_Delete(s);

  /* completed; then no more data is taken, not even the same again */
  cr_expect_eq(put("node-b", name, "main/b.img", b, strlen(b), sha_b), 200, "%s", last_err);
  cr_expect_eq(put("node-b", name, "main/c.img", c, strlen(c), sha_c), 200, "%s", last_err);
  cJSON *rec = ok("node-b", NA_PATH_RECEIVED, req);
  cr_expect_eq(num(rec, "sizeBytes"), (long long)(strlen(a) + strlen(b) + strlen(c)));
  cJSON_Delete(rec);
  s = ok("node-b", NA_PATH_STATE, mig_req("files", UID_B));
  cr_expect(json_get_bool(s, "received.complete", false));
  cr_expect_eq(cJSON_GetArraySize(json_get(s, "received.files")), 3);
  cJSON_Delete(s);
  msg = put_refused("node-b", name, "main/d.img", a, sha, 409, "CheckpointComplete");
  cr_expect(strstr(msg, name), "%s", msg);
  put_refused("node-b", name, "main/a.img", a, sha, 409, "CheckpointComplete");
  snprintf(path, sizeof(path), "%s/main/d.img", dir);
  cr_expect(!exists(path), "%s was written after completion", path);
  snprintf(path, sizeof(path), "%s/main", dir);
  cr_expect_eq(entries(path), 3, "%s holds other files than the three", path);
}

/* ---- 4: a transfer resumes with what the destination holds ---- */
Test(nodeagent_api, a_transfer_resumes)
{
  cJSON *src = run_pod(jt_counter_pod("counter", "node-a"));
  int client = jt_counter_connect(json_get_str(src, "status.podIP"));
  cr_assert_str_eq(jt_counter_req(client, "inc"), "1");
  cJSON *cp = ok("node-a", NA_PATH_CHECKPOINT, pod_req("resume", UID_A, src));
  const char *adir = mig_dir("node-a", "resume", UID_A), *bdir = mig_dir("node-b", "resume", UID_A);
  char path[800], name[NA_DIRNAME_MAX];
  cr_assert_eq(na_dirname(JT_NS, "resume", UID_A, name), GW_OK);
  snprintf(path, sizeof(path), "%s/" NA_MANIFEST_JSON, adir);
  size_t len = 0;
  char *text = slurp(path, &len);
  cJSON *manifest = cJSON_Parse(text);
  free(text);
  int n = cJSON_GetArraySize(manifest);
  cr_assert_gt(n, 2, "%s lists %d files", path, n);

  /* node-b holds the first file as it is, the second with other bytes */
  const cJSON *first = cJSON_GetArrayItem(manifest, 0), *second = cJSON_GetArrayItem(manifest, 1);
  const char *p1 = json_get_str(first, "path"), *p2 = json_get_str(second, "path");
  cr_assert(p1 && p2);
  snprintf(path, sizeof(path), "%s/%s", adir, p1);
  char *data = slurp(path, &len);
  long long first_size = (long long)len;
  cr_expect_eq(first_size, num(first, "size"));
  cr_assert_eq(put("node-b", name, p1, data, len, json_get_str(first, "sha256")), 200, "%s",
               last_err);
  free(data);
  char sha[DIGEST_SHA256_LEN];
  const char *junk = "bytes of an earlier, broken copy";
  cr_assert_eq(put("node-b", name, p2, junk, strlen(junk), sha_of(junk, strlen(junk), sha)),
               200, "%s", last_err);
  cJSON *s = ok("node-b", NA_PATH_STATE, mig_req("resume", UID_A));
  cr_expect(!json_get_bool(s, "received.complete", true));
  cr_expect_eq(cJSON_GetArraySize(json_get(s, "received.files")), 2);
  cJSON_Delete(s);

  /* a peer nobody serves */
  cJSON *req = mig_req("resume", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", "https://127.0.0.1:1");
  refused("node-a", NA_PATH_SEND, req, 502, "PeerUnavailable");

  req = mig_req("resume", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", endpoint("node-b"));
  cJSON *sent = ok("node-a", NA_PATH_SEND, req);
  cr_expect_eq(num(sent, "skipped"), 1);
  cr_expect_eq(num(sent, "files"), n - 1);
  cr_expect_eq(num(sent, "bytes"), num(cp, "sizeBytes") - first_size);
  cJSON_Delete(sent);
  s = ok("node-b", NA_PATH_STATE, mig_req("resume", UID_A));
  cr_expect(json_get_bool(s, "received.complete", false), "node-b's copy is not complete");
  cr_expect_eq(cJSON_GetArraySize(json_get(s, "received.files")), n);
  cr_expect(same_files(manifest, json_get(s, "received.files")), "node-b's files differ");
  cJSON_Delete(s);
  snprintf(path, sizeof(path), "%s/%s", bdir, p2);
  data = slurp(path, &len);
  cr_expect_eq((long long)len, num(second, "size"), "the broken copy of %s stayed", p2);
  cr_expect_str_eq(sha_of(data, len, sha), str_or(json_get_str(second, "sha256")));
  free(data);

  /* a rollback: the source serves the same client again */
  cJSON *rel = ok("node-a", NA_PATH_RELEASE, pod_req("resume", UID_A, src));
  cr_expect(!json_get_bool(rel, "shielded", true), "the source is still shielded");
  cJSON_Delete(rel);
  cr_expect_str_eq(jt_counter_req(client, "inc"), "2");
  close(client);
  cJSON_Delete(manifest);
  cJSON_Delete(cp);
  cJSON_Delete(src);
}

/* ---- containers and agents of the test's own ---- */
/* A process standing for a container, in a network namespace of its own with lo (and, with
 * eth0, an eth0: a veth pair, both ends inside), and an agent of the test's own: in that
 * namespace (the container is then on the node's own network, as a hostNetwork Pod's is) or in
 * this machine's. Neither touches this machine's network. */
struct own_agent {
  pid_t holder; /* the container's process */
  pid_t agent;
  bool inside;  /* the agent runs in the holder's network */
  char endpoint[80];
  char netns[64];
};

/* The holder: a session, a directory and nothing open of its own, as a container's process, so
 * that a dump does not fail for reasons of its own; mib MiB of memory written. */
static void holder_start(struct own_agent *n, bool eth0, size_t mib)
{
  char wd[400];
  snprintf(wd, sizeof(wd), "%s", cl_path(&C, "own-container"));
  cr_assert_eq(mkdir(wd, 0700), 0, "%s: %s", wd, strerror(errno));
  int p[2];
  cr_assert_eq(pipe(p), 0);
  n->holder = fork();
  cr_assert(n->holder >= 0);
  if(!n->holder) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(p[0]);
    static char *volatile mem; /* kept: its pages are the image */
    mem = mib ? malloc(mib << 20) : NULL;
    if(mem)
      memset(mem, 0x5a, mib << 20);
    bool ready = (!mib || mem) && !unshare(CLONE_NEWNET) &&
                 (!eth0 ||
                  !system("ip link set lo up && ip link add eth0 type veth peer name peer0 && "
                          "ip addr add 192.0.2.10/24 dev eth0 && ip link set peer0 up && "
                          "ip link set eth0 up")) &&
                 setsid() > 0 && !chdir(wd);
    char done = ready ? 'y' : 'n';
    if(write(p[1], &done, 1) != 1)
      _exit(1);
    for(int fd = 0; fd < 1024; fd++)
      close(fd);
    if(open("/dev/null", O_RDWR) != 0 || dup2(0, 1) != 1 || dup2(0, 2) != 2)
      _exit(1);
    for(;;)
      pause();
  }
  close(p[1]);
  char done = 0;
  cr_assert_eq(read(p[0], &done, 1), 1);
  close(p[0]);
  cr_assert_eq(done, 'y', "cannot make a network namespace for a container");
  snprintf(n->netns, sizeof(n->netns), "/proc/%ld/ns/net", (long)n->holder);
}

static void end_process(pid_t pid)
{
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* ---- 5: refusals ---- */
struct bad_request {
  const char *path, *body, *why;
};

static const struct bad_request BAD[] = {
  { NA_PATH_CHECKPOINT, "{\"containers\":[{\"name\":\"main\",\"containerID\":\"godwit://x-0-2\"}]}",
    "no migration" },
  { NA_PATH_CHECKPOINT, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"Bad_Name\",\"uid\":\""
    UID_A "\"},\"containers\":[]}", "a name that is no DNS name" },
  { NA_PATH_CHECKPOINT, "{\"migration\":{\"namespace\":\"../x\",\"name\":\"m\",\"uid\":\"" UID_A
    "\"}}", "a namespace climbing out" },
  { NA_PATH_CHECKPOINT, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"m\"}}", "no uid" },
  { NA_PATH_CHECKPOINT, "{\"migration\":\"jr/m\"}", "a migration that is no object" },
  { NA_PATH_SEND, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"m\",\"uid\":7},"
    "\"to\":{\"endpoint\":\"https://127.0.0.1:1\"}}", "a uid that is no string" },
  { NA_PATH_STATE, "{\"migration\":{}}", "an empty migration" },
  { NA_PATH_REMOVE, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"..\",\"uid\":\"" UID_A
    "\"}}", "a name .." },
  { NA_PATH_RECEIVED, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"m\",\"uid\":\"" UID_A
    "\"},\"manifest\":[]}", "an empty manifest" },
  { NA_PATH_SEND, "{\"migration\":{\"namespace\":\"jr\",\"name\":\"m\",\"uid\":\"" UID_A "\"}}",
    "no destination" },
};

Test(nodeagent_api, refusals_carry_their_reason)
{
  const char *ctr_fake[] = { "main", "containerd://abc", NULL };
  const char *msg = refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, ctr_fake), 501,
                            "RuntimeNotSupported");
  cr_expect(strstr(msg, "containerd"), "%s", msg);
  cr_assert(!exists("/proc/999999"), "process 999999 exists here");
  const char *gone[] = { "main", "godwit://x-0-999999", NULL };
  msg = refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, gone), 404,
                "ContainerNotFound");
  cr_expect(strstr(msg, "999999"), "%s", msg);
  struct own_agent lone = { 0 };
  holder_start(&lone, false, 0); /* nothing but lo */
  char id[64];
  snprintf(id, sizeof(id), "godwit://x-0-%ld", (long)lone.holder);
  const char *bare[] = { "main", id, NULL };
  msg = refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, bare), 422, "NoPodNetwork");
  cr_expect(strstr(msg, "eth0"), "%s", msg);
  end_process(lone.holder);

  /* containers the agent cannot name */
  const char *none[] = { NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, none), 400, "BadRequest");
  const char *no_id[] = { "main", NULL, NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, no_id), 400, "BadRequest");
  const char *bad_name[] = { "../main", "godwit://x-0-2", NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, bad_name), 400, "BadRequest");
  refused("node-a", NA_PATH_PROBE, ctr_req("m", UID_A, gone), 404, "ContainerNotFound");
  refused("node-a", NA_PATH_RELEASE, ctr_req("m", UID_A, ctr_fake), 501, "RuntimeNotSupported");

  /* bad migration objects, bodies that are no JSON object */
  for(size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
    cr_log_info("%s %s", BAD[i].path, BAD[i].why);
    cJSON *b = cJSON_Parse(BAD[i].body);
    cr_assert(b, "bad test JSON: %s", BAD[i].body);
    refused("node-a", BAD[i].path, b, 400, "BadRequest");
  }
  const char *not_objects[] = { "[]", "\"x\"", "{", "" };
  char auth[300];
  snprintf(auth, sizeof(auth), "Bearer %s", agent_token);
  for(size_t i = 0; i < sizeof(not_objects) / sizeof(not_objects[0]); i++) {
    char *text = NULL;
    int code = raw("node-a", "POST", NA_PATH_STATE, auth, json_type(), not_objects[i],
                   strlen(not_objects[i]), &text);
    cr_expect_eq(code, 400, "body \"%s\": %d %s", not_objects[i], code, text);
    free(text);
  }

  /* what is not there */
  cJSON *req = mig_req("m", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", endpoint("node-b"));
  refused("node-a", NA_PATH_SEND, req, 404, "CheckpointNotFound");
  cJSON *s = ok("node-a", NA_PATH_STATE, mig_req("m", UID_A));
  cr_expect(cJSON_IsNull(json_get(s, "checkpoint")));
  cr_expect(!json_get_bool(s, "received.complete", true));
  cJSON_Delete(s);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"success\""), 0);
}

/* Refused calls change nothing: the checkpoint directory a refused checkpoint or send named is
 * not made (the call "removes what it made"), so /v1/list stays empty. */
Test(nodeagent_api, refused_calls_leave_no_directory)
{
  const char *ctr_fake[] = { "main", "containerd://abc", NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("fake", UID_A, ctr_fake), 501,
          "RuntimeNotSupported");
  const char *gone[] = { "main", "godwit://x-0-999999", NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("gone", UID_A, gone), 404, "ContainerNotFound");
  cJSON *req = mig_req("unknown", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", endpoint("node-b"));
  refused("node-a", NA_PATH_SEND, req, 404, "CheckpointNotFound");
  cr_expect(!exists(mig_dir("node-a", "fake", UID_A)), "a refused checkpoint made %s",
            mig_dir("node-a", "fake", UID_A));
  cr_expect(!exists(mig_dir("node-a", "gone", UID_A)), "a refused checkpoint made %s",
            mig_dir("node-a", "gone", UID_A));
  cr_expect(!exists(mig_dir("node-a", "unknown", UID_A)), "a refused send made %s",
            mig_dir("node-a", "unknown", UID_A));
  cJSON *l = ok("node-a", NA_PATH_LIST, NULL);
  char *text = cJSON_PrintUnformatted(l);
  cr_expect_eq(cJSON_GetArraySize(json_get(l, "checkpoints")), 0,
               "node-a lists checkpoints it never took: %s", text);
  cJSON_free(text);
  cJSON_Delete(l);
}

/* The 404's message names the node the container does not run on. */
Test(nodeagent_api, container_not_found_names_the_node)
{
  const char *gone[] = { "main", "godwit://x-0-999999", NULL };
  const char *msg = refused("node-a", NA_PATH_CHECKPOINT, ctr_req("m", UID_A, gone), 404,
                            "ContainerNotFound");
  cr_expect(strstr(msg, "node-a"), "the message does not name node-a: \"%s\"", msg);
}

/* ---- 6: a failed dump leaves the source serving ---- */
/* The counter with a second container that mounts a volume: a container in a mount namespace
 * of its own, which CRIU cannot dump (docs/dev/podmotion-runtime.md). */
static cJSON *pod_with_undumpable_container(void)
{
  cJSON *pod = jt_counter_pod("counter", "node-a");
  cJSON *ctrs = json_get_mut(pod, "spec.containers");
  cJSON *side = cJSON_Duplicate(cJSON_GetArrayItem(ctrs, 0), 1);
  cJSON_ReplaceItemInObject(side, "name", cJSON_CreateString("side"));
  cJSON_ReplaceItemInArray(cJSON_GetObjectItem(side, "command"), 2, cJSON_CreateString("7001"));
  cr_assert_eq(json_set(side, "volumeMounts",
                        cJSON_Parse("[{\"name\":\"scratch\",\"mountPath\":\"/mnt\"}]")), GW_OK);
  cJSON_AddItemToArray(ctrs, side);
  cr_assert_eq(json_set(pod, "spec.volumes",
                        cJSON_Parse("[{\"name\":\"scratch\",\"emptyDir\":{}}]")), GW_OK);
  return pod;
}

Test(nodeagent_api, a_failed_dump_leaves_the_source_serving)
{
  cJSON *src = run_pod(pod_with_undumpable_container());
  int client = jt_counter_connect(json_get_str(src, "status.podIP"));
  cr_assert_str_eq(jt_counter_req(client, "inc"), "1");
  char netns[64];
  snprintf(netns, sizeof(netns), "/proc/%ld/ns/net", jt_container_pid(src));
  const char *dir = mig_dir("node-a", "fail", UID_A);

  /* refused before anything is done, then a dump that fails once the shield is up */
  const char *fake[] = { "main", container_id(src, 0), "other", "containerd://abc", NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("fail", UID_A, fake), 501,
          "RuntimeNotSupported");
  cr_expect_str_eq(jt_counter_req(client, "inc"), "2");
  const char *gone[] = { "main", container_id(src, 0), "other", "godwit://x-0-999999", NULL };
  refused("node-a", NA_PATH_CHECKPOINT, ctr_req("fail", UID_A, gone), 404, "ContainerNotFound");
  cr_expect_str_eq(jt_counter_req(client, "inc"), "3");
  const char *msg = refused("node-a", NA_PATH_CHECKPOINT, pod_req("fail", UID_A, src), 500,
                            "CheckpointFailed");
  cr_log_info("the failed dump: %s", msg);
  cr_expect(strstr(msg, "side"), "the failed container is not named: %s", msg);
  cr_expect(strstr(msg, "Error (criu/"), "criu's words are not in the message: %s", msg);
  cr_expect(!na_shield_up(netns), "the shield stayed up after the failed dump");
  cr_expect_str_eq(jt_counter_req(client, "inc"), "4", "the source stopped serving");
  /* refused() called twice (client, curl); the refusals before the dump are no failures */
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"failure\""), 2);
  cr_expect_eq(metric("node-a", "godwit_nodeagent_checkpoints_total", "result=\"success\""), 0);

  /* nothing half-made is kept: main's good dump went with side's */
  char path[800];
  snprintf(path, sizeof(path), "%s/main", dir);
  cr_expect(!exists(path), "%s was kept", path);
  snprintf(path, sizeof(path), "%s/side", dir);
  cr_expect(!exists(path), "%s was kept", path);
  snprintf(path, sizeof(path), "%s/" NA_CHECKPOINT_JSON, dir);
  cr_expect(!exists(path), "%s was written", path);
  cJSON *s = ok("node-a", NA_PATH_STATE, mig_req("fail", UID_A));
  cr_expect(cJSON_IsNull(json_get(s, "checkpoint")));
  cr_expect_eq(cJSON_GetArraySize(json_get(s, "received.files")), 0);
  cJSON_Delete(s);

  /* the failure is not recorded as the answer: the dumpable container alone is taken */
  const char *main_only[] = { "main", container_id(src, 0), NULL };
  cJSON *cp = ok("node-a", NA_PATH_CHECKPOINT, ctr_req("fail", UID_A, main_only));
  cr_expect_gt(num(cp, "sizeBytes"), 0);
  cr_expect(na_shield_up(netns), "the checkpoint left the source unshielded");
  cJSON_Delete(cp);
  cJSON *rel = ok("node-a", NA_PATH_RELEASE, ctr_req("fail", UID_A, main_only));
  cr_expect(!json_get_bool(rel, "shielded", true));
  cJSON_Delete(rel);
  cr_expect_str_eq(jt_counter_req(client, "inc"), "5");
  close(client);
  cJSON_Delete(src);
}

/* The test's agent (as up starts one, with max_file_mib), in the holder's network when
 * inside. */
static void own_agent_start(struct own_agent *n, bool inside, const char *max_file_mib)
{
  const char *build = getenv("GODWIT_BUILD");
  char bin[400], log[400], cert[400], key[400], tok[400], dir[400];
  snprintf(bin, sizeof(bin), "%s/godwit-nodeagent", build && *build ? build : "build");
  snprintf(log, sizeof(log), "%s", cl_path(&C, "nodeagent-own.log"));
  snprintf(cert, sizeof(cert), "%s", cl_path(&C, "pki/nodeagent/tls.crt"));
  snprintf(key, sizeof(key), "%s", cl_path(&C, "pki/nodeagent/tls.key"));
  snprintf(tok, sizeof(tok), "%s", cl_path(&C, "nodeagent.token"));
  snprintf(dir, sizeof(dir), "%s", cl_path(&C, "own-checkpoints"));
  n->inside = inside;
  int net = inside ? open(n->netns, O_RDONLY | O_CLOEXEC) : -1;
  cr_assert(!inside || net >= 0, "%s: %s", n->netns, strerror(errno));
  n->agent = fork();
  cr_assert(n->agent >= 0);
  if(!n->agent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if(fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || (inside && setns(net, CLONE_NEWNET)))
      _exit(126);
    execl(bin, bin, "--kubeconfig", C.kubeconfig, "--node", "own-node", "--tls-cert", cert,
          "--tls-key", key, "--ca-file", agent_ca, "--token-file", tok, "--checkpoint-dir", dir,
          "--bind", "127.0.0.1", "--port", "0", "--advertise-address", "127.0.0.1",
          "--max-file-mib", max_file_mib, (char *)NULL);
    _exit(127);
  }
  if(net >= 0)
    close(net);
  /* its endpoint, from its "serving" line */
  for(int i = 0; i < 200 && !n->endpoint[0]; i++) {
    FILE *f = fopen(log, "r");
    char line[2048];
    while(f && fgets(line, sizeof(line), f)) {
      const char *at = strstr(line, "\"msg\":\"serving\"") ? strstr(line, "\"endpoint\":\"")
                                                           : NULL;
      if(at)
        snprintf(n->endpoint, sizeof(n->endpoint), "%.*s", (int)strcspn(at + 12, "\""),
                 at + 12);
    }
    if(f)
      fclose(f);
    if(!n->endpoint[0])
      usleep(50000);
  }
  cr_assert(n->endpoint[0], "the test's agent did not serve: see %s", log);
}

static void own_agent_stop(struct own_agent *n)
{
  end_process(n->agent);
  end_process(n->holder);
}

/* POST path to the test's agent, from inside its network when it runs there (this thread
 * only, and back). The HTTP status. */
static int own_post(const struct own_agent *n, const char *path, cJSON *body, cJSON **out)
{
  struct na_target t = { .endpoint = n->endpoint, .ca_file = agent_ca, .token = agent_token,
                         .timeout_ms = 60000 };
  int home = n->inside ? open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC) : -1;
  int net = n->inside ? open(n->netns, O_RDONLY | O_CLOEXEC) : -1;
  cr_assert(!n->inside || (home >= 0 && net >= 0));
  int entered = n->inside ? setns(net, CLONE_NEWNET) : 0;
  int code = 0;
  last_err[0] = 0;
  gw_rc rc = entered ? GW_EIO : na_post(&t, path, body, out, &code, last_err, sizeof(last_err));
  int back = n->inside ? setns(home, CLONE_NEWNET) : 0;
  if(n->inside) {
    close(home);
    close(net);
  }
  cJSON_Delete(body);
  cr_assert_eq(back, 0, "cannot go back to this machine's network: %s", strerror(errno));
  cr_assert_eq(entered, 0, "setns: %s", strerror(errno));
  cr_assert(code, "%s: no answer: %s (%s)", path, last_err, gw_strerror(rc));
  return code;
}

/* ---- a container on the node's own network ---- */
/* On the local cluster the agents run in this machine's network namespace, and so does a
 * hostNetwork Pod's container (the local runtime gives it no sandbox): it has no pod network
 * to move, its eth0 is the node's own. The test's node network stands for the machine's. */
Test(nodeagent_api, a_container_on_the_nodes_own_network_is_refused)
{
  struct own_agent n = { 0 };
  holder_start(&n, true, 0);
  own_agent_start(&n, true, "256");
  char id[64];
  snprintf(id, sizeof(id), "godwit://x-0-%ld", (long)n.holder);
  const char *host[] = { "main", id, NULL };
  cJSON *out = NULL;
  int code = own_post(&n, NA_PATH_CHECKPOINT, ctr_req("host", UID_A, host), &out);
  char *text = out ? cJSON_PrintUnformatted(out) : NULL;
  cr_expect_eq(code, 422, "a checkpoint of a container on the node's own network answered %d: "
               "%s", code, text ? text : last_err);
  cr_expect(!na_shield_up(n.netns), "the agent raised its shield on the node's own network");
  cJSON_free(text);
  cJSON_Delete(out);
  own_agent_stop(&n);
}

/* ---- a file above --max-file-mib ---- */
/* Sums the regular files of dir/ctr (but *.part); their number. */
static int files_on_disk(const char *dir, const char *ctr, double *bytes)
{
  char sub[700];
  snprintf(sub, sizeof(sub), "%s/%s", dir, ctr);
  DIR *d = opendir(sub);
  cr_assert(d, "%s: %s", sub, strerror(errno));
  int n = 0;
  *bytes = 0;
  struct dirent *e;
  while((e = readdir(d))) {
    char path[1000];
    snprintf(path, sizeof(path), "%s/%s", sub, e->d_name);
    struct stat st;
    size_t l = strlen(e->d_name);
    if(lstat(path, &st) || !S_ISREG(st.st_mode) || (l > 5 && !strcmp(e->d_name + l - 5, ".part")))
      continue;
    n++;
    *bytes += (double)st.st_size;
  }
  closedir(d);
  return n;
}

/* A checkpoint whose memory image is above the agent's --max-file-mib either fails, or lists
 * that file like every other: a manifest without it lets the destination call an incomplete
 * copy complete. */
Test(nodeagent_api, a_file_above_max_file_mib_is_not_left_out)
{
  struct own_agent n = { 0 };
  holder_start(&n, true, 4); /* a memory image of 4 MiB and more */
  own_agent_start(&n, false, "1");
  char id[64];
  snprintf(id, sizeof(id), "godwit://x-0-%ld", (long)n.holder);
  const char *ctr[] = { "main", id, NULL };
  cJSON *cp = NULL;
  int code = own_post(&n, NA_PATH_CHECKPOINT, ctr_req("big", UID_A, ctr), &cp);
  if(code != 200) { /* refused: the pod must serve on */
    cr_log_info("refused: %d %s", code, last_err);
    cr_expect(code >= 400, "%d", code);
    cr_expect(!na_shield_up(n.netns), "a refused checkpoint left the shield up");
    own_agent_stop(&n);
    return;
  }
  const char *dir = json_get_str(cp, "dir");
  cr_assert(dir);
  double bytes = 0;
  int on_disk = files_on_disk(dir, "main", &bytes);
  char path[800];
  snprintf(path, sizeof(path), "%s/" NA_MANIFEST_JSON, dir);
  size_t len = 0;
  char *text = slurp(path, &len);
  cJSON *m = cJSON_Parse(text);
  free(text);
  cr_expect_eq(cJSON_GetArraySize(m), on_disk, "the manifest lists %d of the %d files",
               cJSON_GetArraySize(m), on_disk);
  cr_expect_eq(num(cp, "sizeBytes"), (long long)bytes, "sizeBytes %lld of %.0f bytes",
               num(cp, "sizeBytes"), bytes);
  /* what the destination then holds */
  cJSON *req = mig_req("big", UID_A);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "to"), "endpoint", endpoint("node-b"));
  cJSON *sent = NULL;
  code = own_post(&n, NA_PATH_SEND, req, &sent);
  if(code == 200) {
    cJSON *s = ok("node-b", NA_PATH_STATE, mig_req("big", UID_A));
    int have = cJSON_GetArraySize(json_get(s, "received.files"));
    cr_expect(!json_get_bool(s, "received.complete", false) || have == on_disk,
              "node-b calls its copy complete with %d of the %d files", have, on_disk);
    cJSON_Delete(s);
  }
  cJSON_Delete(sent);
  cJSON_Delete(m);
  cJSON_Delete(cp);
  own_agent_stop(&n);
}
