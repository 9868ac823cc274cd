/* Leader election with two godwit-controller processes on one API server: exactly one
 * reconciles; after kill -9 the other takes over once the lease expires (15 s, not before);
 * after SIGTERM the leader drains, releases the Lease and the other takes over at once; never
 * do both reconcile at the same time (the logs' "became leader" and "reconciled" timestamps
 * against the process's death). Also /healthz, /readyz and /metrics of both. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "ktime.h"
#include "mgrtest.h"
#include "migration/migration.h"
#include "strbuf.h"

#define NS "leader-test"
#define LEASE_NS "godwit-system"

static struct cl C;
static struct kube_client *K;

struct proc {
  const char *id;
  pid_t pid;
  char log[400], portfile[512];
  int port;
  int64_t killed_ms; /* wall clock ms of the kill */
};

static void start(void)
{
  cl_start(&C, CL_FAULTS);
  K = cl_client(&C, "admin");
  mt_ensure_namespace(K, NS);
  mt_ensure_namespace(K, LEASE_NS);
}

static void stop(void)
{
  cl_stop(&C);
}

TestSuite(ctrl_leader, .init = start, .fini = stop, .timeout = 240);

static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void spawn(struct proc *p, const char *id)
{
  memset(p, 0, sizeof(*p));
  p->id = id;
  snprintf(p->log, sizeof(p->log), "%.300s.log", cl_path(&C, id));
  snprintf(p->portfile, sizeof(p->portfile), "%.300s.port", cl_path(&C, id));
  const char *build = getenv("GODWIT_BUILD") ? getenv("GODWIT_BUILD") : "build";
  char bin[512];
  snprintf(bin, sizeof(bin), "%s/godwit-controller", build);
  unlink(p->portfile);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if(!pid) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    FILE *f = freopen(p->log, "w", stderr);
    (void)f;
    dup2(2, 1);
    setenv("POD_NAME", id, 1);
    setenv("POD_NAMESPACE", LEASE_NS, 1);
    /* as installed: its ServiceAccount, the Lease rights of rbac-controller.yaml's Role */
    execl(bin, bin, "--kubeconfig", C.kubeconfig, "--context", "godwit-controller",
          "--leader-elect", "--metrics-port", "0", "--bind", "127.0.0.1", "--port-file", p->portfile,
          "--log-level", "debug", (char *)NULL);
    _exit(127);
  }
  p->pid = pid;
  for(int i = 0; i < 200 && !p->port; i++) {
    FILE *f = fopen(p->portfile, "r");
    if(f) {
      if(fscanf(f, "%d", &p->port) != 1)
        p->port = 0;
      fclose(f);
    }
    if(!p->port)
      kt_sleep_ms(50, NULL);
  }
  cr_assert(p->port > 0, "%s did not start; see %s", id, p->log);
}

static void finish(struct proc *p)
{
  if(p->pid > 0) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    p->pid = 0;
  }
}

static size_t sink(char *data, size_t size, size_t n, void *arg)
{
  return strbuf_add(arg, data, size * n) ? 0 : size * n;
}

/* GET http://127.0.0.1:port/path; returns the status code, the body in *body (free it). */
static long http_get(int port, const char *path, char **body)
{
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  struct strbuf sb;
  strbuf_init(&sb, 8u << 20);
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  long code = 0;
  if(curl_easy_perform(h) == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  if(body)
    *body = strbuf_take(&sb, NULL);
  else
    strbuf_release(&sb);
  return code;
}

static double proc_metric(const struct proc *p, const char *series)
{
  char *body = NULL;
  cr_assert_eq(http_get(p->port, "/metrics", &body), 200);
  double v = mt_metric(body, series);
  free(body);
  return v;
}

#define RECONCILES(result) "godwit_controller_reconcile_total{controller=\"migration\"," \
                           "kind=\"Migration\",result=\"" result "\"}"
#define IS_LEADER "godwit_leader_is_leader{lease=\"godwit-controller\"}"

/* Reconciles that ended well (done, or requeued: a Migration that moves on asks to be looked
 * at again). */
static double reconciled(const struct proc *p)
{
  double ok = proc_metric(p, RECONCILES("success")), again = proc_metric(p, RECONCILES("requeue"));
  return (ok > 0 ? ok : 0) + (again > 0 ? again : 0);
}

static const char *holder_buf(void)
{
  static char h[128];
  cJSON *l = mt_get(K, &KUBE_LEASES, LEASE_NS, "godwit-controller");
  const char *s = json_get_str(l, "spec.holderIdentity");
  snprintf(h, sizeof(h), "%s", l ? s ? s : "" : "(no lease)");
  cJSON_Delete(l);
  return h;
}

static bool holder_is(void *arg)
{
  return !strcmp(holder_buf(), arg);
}

static bool ready(void *arg)
{
  return http_get(((struct proc *)arg)->port, "/readyz", NULL) == 200;
}

struct pending_all {
  const char *prefix;
  int n;
};

/* Every Migration observed: a phase (Pending on the first observation, then the Migration
 * controller moves it on to Validating). */
static bool all_pending(void *arg)
{
  struct pending_all *a = arg;
  for(int i = 0; i < a->n; i++) {
    char name[64];
    snprintf(name, sizeof(name), "%s%d", a->prefix, i);
    const char *ph = mt_phase(K, NS, name);
    if(strcmp(ph, "Pending") && strcmp(ph, "Validating"))
      return false;
  }
  return true;
}

static void create_many(const char *prefix, int n)
{
  for(int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof(name), "%s%d", prefix, i);
    mt_create_migration(K, NS, name);
  }
}

/* ---- the logs' timeline ---- */

struct timeline {
  char became[8][32]; /* "became leader" timestamps */
  int nbecame;
  char first_rec[32], last_rec[32]; /* "reconciled" */
  int nrec;
  char drained[32], released[32], lost[32];
};

static void read_timeline(const char *path, struct timeline *t)
{
  memset(t, 0, sizeof(*t));
  FILE *f = fopen(path, "r");
  cr_assert(f, "%s", path);
  char line[8192];
  while(fgets(line, sizeof(line), f)) {
    cJSON *j = cJSON_Parse(line);
    const char *msg = json_get_str(j, "msg"), *ts = json_get_str(j, "ts");
    if(msg && ts) {
      if(!strcmp(msg, "became leader") && t->nbecame < 8)
        snprintf(t->became[t->nbecame++], 32, "%s", ts);
      else if(!strcmp(msg, "reconciled")) {
        if(!t->nrec++)
          snprintf(t->first_rec, 32, "%s", ts);
        snprintf(t->last_rec, 32, "%s", ts);
      } else if(!strcmp(msg, "workers drained"))
        snprintf(t->drained, 32, "%s", ts);
      else if(!strcmp(msg, "lease released"))
        snprintf(t->released, 32, "%s", ts);
      else if(!strncmp(msg, "leadership lost", 15))
        snprintf(t->lost, 32, "%s", ts);
    }
    cJSON_Delete(j);
  }
  fclose(f);
}

/* The log's timestamp format, for a wall clock ms. */
static void fmt_ts(int64_t ms, char *buf, size_t len)
{
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  char b[24];
  strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03dZ", b, (int)(ms % 1000));
}

static void check_endpoints(const struct proc *leader, const struct proc *standby)
{
  char *body = NULL;
  cr_assert_eq(http_get(leader->port, "/healthz", &body), 200);
  cr_assert_str_eq(body, "ok\n");
  free(body);
  cr_assert_eq(http_get(standby->port, "/readyz", NULL), 200, "a warm standby is ready");
  cr_assert_eq(http_get(leader->port, "/nope", NULL), 404);
  cr_assert_eq(http_get(leader->port, "/metrics", &body), 200);
  cr_assert(strstr(body, "godwit_workqueue_depth{name=\"migration\"}"));
  cr_assert(strstr(body, "godwit_informer_synced{resource=\"migrations\"} 1"));
  cr_assert(strstr(body, "godwit_kube_requests_total"), "the client's own metrics follow");
  cr_assert(strstr(body, "# TYPE godwit_controller_reconcile_duration_seconds histogram"));
  free(body);
  cr_assert_eq(proc_metric(leader, IS_LEADER), 1);
  cr_assert_eq(proc_metric(standby, IS_LEADER), 0);
}

Test(ctrl_leader, one_reconciles_and_kill9_hands_over_after_the_lease)
{
  struct proc a, b;
  spawn(&a, "ctrl-a");
  cr_assert(mt_wait(20000, holder_is, (void *)"ctrl-a"), "A leads (holder %s)", holder_buf());
  spawn(&b, "ctrl-b");
  cr_assert(mt_wait(20000, ready, &b), "B is a ready standby");

  create_many("m", 5);
  struct pending_all p1 = { "m", 5 };
  cr_assert(mt_wait(30000, all_pending, &p1));
  kt_sleep_ms(2500, NULL); /* B had time to misbehave */
  cr_assert_geq(reconciled(&a), 5, "the leader reconciled every Migration");
  cr_assert_eq(reconciled(&b), 0, "the standby reconciled nothing");
  check_endpoints(&a, &b);
  cr_assert_str_eq(holder_buf(), "ctrl-a");

  /* kill -9: no release; B must wait for the lease to expire */
  a.killed_ms = wall_ms();
  int64_t t0 = kt_mono_ms();
  kill(a.pid, SIGKILL);
  waitpid(a.pid, NULL, 0);
  a.pid = 0;
  create_many("n", 3);
  cr_assert(mt_wait(30000, holder_is, (void *)"ctrl-b"), "B takes over (holder %s)",
            holder_buf());
  int64_t took = kt_mono_ms() - t0;
  cr_assert(took <= 15000 + 2 * 2400 + 2000, "B took over in %lld ms, lease 15 s",
            (long long)took);
  cr_assert(took >= 15000 - 2400 - 500, "B waited for the lease to expire (%lld ms)",
            (long long)took);
  struct pending_all p2 = { "n", 3 };
  cr_assert(mt_wait(20000, all_pending, &p2));
  cr_assert_geq(reconciled(&b), 3);
  cr_assert_eq(proc_metric(&b, IS_LEADER), 1);

  cJSON *lease = mt_get(K, &KUBE_LEASES, LEASE_NS, "godwit-controller");
  cr_assert_eq(json_get(lease, "spec.leaseDurationSeconds")->valuedouble, 15);
  cr_assert_geq(json_get(lease, "spec.leaseTransitions")->valuedouble, 1);
  const char *renew = json_get_str(lease, "spec.renewTime");
  cr_assert(renew && strlen(renew) == 27 && renew[19] == '.' && renew[26] == 'Z',
            "RFC 3339 micro: %s", renew ? renew : "(none)");
  cJSON_Delete(lease);

  /* the timeline: A reconciled only before it died, B only after it became leader */
  struct timeline ta, tb;
  read_timeline(a.log, &ta);
  read_timeline(b.log, &tb);
  char killed[32];
  fmt_ts(a.killed_ms, killed, sizeof(killed));
  cr_assert_eq(ta.nbecame, 1);
  cr_assert_eq(tb.nbecame, 1);
  cr_assert_geq(ta.nrec, 5);
  cr_assert_geq(tb.nrec, 3);
  cr_assert(strcmp(ta.became[0], ta.first_rec) <= 0, "A reconciled only as leader");
  cr_assert(strcmp(ta.last_rec, killed) <= 0, "A's last reconcile %s, killed %s", ta.last_rec,
            killed);
  cr_assert(strcmp(killed, tb.became[0]) < 0, "B became leader (%s) after A died (%s)",
            tb.became[0], killed);
  cr_assert(strcmp(tb.became[0], tb.first_rec) <= 0, "B reconciled only as leader (%s < %s)",
            tb.became[0], tb.first_rec);
  finish(&b);
}

Test(ctrl_leader, sigterm_drains_and_releases_the_lease_at_once)
{
  struct proc a, b;
  spawn(&a, "ctrl-a");
  cr_assert(mt_wait(20000, holder_is, (void *)"ctrl-a"), "A leads (holder %s)", holder_buf());
  spawn(&b, "ctrl-b");
  cr_assert(mt_wait(20000, ready, &b));
  create_many("s", 3);
  struct pending_all p1 = { "s", 3 };
  cr_assert(mt_wait(30000, all_pending, &p1));

  a.killed_ms = wall_ms();
  int64_t t0 = kt_mono_ms();
  kill(a.pid, SIGTERM);
  int status = 0;
  cr_assert_eq(waitpid(a.pid, &status, 0), a.pid);
  a.pid = 0;
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a clean exit on SIGTERM");
  cr_assert(mt_wait(10000, holder_is, (void *)"ctrl-b"), "B takes over (holder %s)",
            holder_buf());
  int64_t took = kt_mono_ms() - t0;
  cr_assert(took < 2 * 2400 + 1000, "released: B took over in %lld ms, not after 15 s",
            (long long)took);
  create_many("t", 2);
  struct pending_all p2 = { "t", 2 };
  cr_assert(mt_wait(20000, all_pending, &p2));

  struct timeline ta, tb;
  read_timeline(a.log, &ta);
  read_timeline(b.log, &tb);
  cr_assert(ta.drained[0] && ta.released[0], "A drained its workers and released the lease");
  cr_assert(strcmp(ta.drained, ta.released) <= 0, "drained (%s) before released (%s)",
            ta.drained, ta.released);
  cr_assert(strcmp(ta.last_rec, tb.became[0]) < 0, "A's last reconcile %s, B leads from %s",
            ta.last_rec, tb.became[0]);
  cr_assert(strcmp(tb.became[0], tb.first_rec) <= 0);
  cJSON *lease = mt_get(K, &KUBE_LEASES, LEASE_NS, "godwit-controller");
  cr_assert_eq(json_get(lease, "spec.leaseDurationSeconds")->valuedouble, 15,
               "B wrote its own duration over the released lease's 1 s");
  cJSON_Delete(lease);
  finish(&b);
}

Test(ctrl_leader, a_leader_that_cannot_renew_steps_down_before_anyone_takes_over)
{
  struct proc a, b;
  spawn(&a, "ctrl-a");
  cr_assert(mt_wait(20000, holder_is, (void *)"ctrl-a"), "A leads (holder %s)", holder_buf());
  spawn(&b, "ctrl-b");
  cr_assert(mt_wait(20000, ready, &b));
  create_many("u", 2);
  struct pending_all p1 = { "u", 2 };
  cr_assert(mt_wait(30000, all_pending, &p1));
  /* A's renewals fail (the API refuses the Lease writes) for longer than its renew deadline */
  cl_fault(&C, "{\"verb\":\"update\",\"pathRegex\":\"/leases/godwit-controller$\","
               "\"code\":500,\"count\":12}");
  int status = 0;
  int64_t t0 = kt_mono_ms();
  while(waitpid(a.pid, &status, WNOHANG) == 0 && kt_mono_ms() - t0 < 30000)
    kt_sleep_ms(100, NULL);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
            "A exits 1 once it cannot renew within the renew deadline");
  a.pid = 0;
  cr_assert(mt_wait(30000, holder_is, (void *)"ctrl-b"), "B takes over (holder %s)",
            holder_buf());
  create_many("v", 2);
  struct pending_all p2 = { "v", 2 };
  cr_assert(mt_wait(20000, all_pending, &p2));
  struct timeline ta, tb;
  read_timeline(a.log, &ta);
  read_timeline(b.log, &tb);
  cr_assert(ta.lost[0], "A logged that it lost leadership");
  cr_assert(strcmp(ta.last_rec, ta.lost) <= 0, "A reconciled nothing after it stepped down");
  cr_assert(strcmp(ta.lost, tb.became[0]) < 0, "A stepped down (%s) before B led (%s)", ta.lost,
            tb.became[0]);
  cr_assert(strcmp(tb.became[0], tb.first_rec) <= 0);
  finish(&b);
}
