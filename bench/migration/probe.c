/*
 * godwit-bench-probe: the cost of one sample of the Migration controller's probe
 * (controller/migration/probe.c, docs/dev/migration-controller.md "The probe"), measured the way
 * the controller takes it: read the target Secret through the Kubernetes API (the controller reads
 * it by name for every sample, never cached), hash the URI (SHA-256), and run the probe query with
 * the migration's application_name as $1 on the session kept from the previous sample
 * (controller/migration/pgpool.c, mig_pg_open/mig_pg_close). A fresh login (the same parameters
 * as the controller's mig_pg_connect: the URI, connect_timeout, application_name
 * godwit-controller, a statement timeout) only on the first sample, when the URI's digest
 * changed, or when the kept session broke. Side by side in the same process, rotating the order
 * sample by sample so that load from elsewhere hits all alike:
 *
 *   sample        one whole sample as the controller takes it now: the Secret read, the digest,
 *                 the probe query on the kept session (only with --kubeconfig)
 *   login_sample  one whole sample as the controller took it before it kept its sessions: the
 *                 Secret read plus probe (only with --kubeconfig)
 *   select1       connect with the same parameters, SELECT 1, close (the baseline)
 *   probe         connect, the probe query, close
 *   secret        the Secret read alone (only with --kubeconfig)
 *   query         the probe query alone on a connection kept open (no Secret read, no digest)
 *
 * Prints one line per kind: "PROBE kind=K n=N p50_us=.. p99_us=.. max_us=.. mean_us=..", the
 * sample line followed by "logins=L first_us=F" (the logins it made, L = 1 unless the session
 * broke; the first sample, which logged in), and a last line
 * "PROBE kind=seen copy_max=C other_max=O size_bytes=S" (the largest counts the probe saw: under
 * a running clone, copy_max > 0 shows the probe counts its COPY workers).
 *
 *   godwit-bench-probe [--samples N] [--interval-ms MS] [--appname NAME] [--timeout S]
 *                      [--kubeconfig F --namespace NS --secret NAME [--key uri]]
 *
 * The target URI comes from the Secret (with --kubeconfig), else from $GODWIT_TARGET_URI; it is
 * never printed. --samples 0 samples until SIGTERM or SIGINT (run.sh uses that to sample during
 * a clone at --interval-ms).
 */
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../controller/migration/probe_sql.h"
#include "base64.h"
#include "config.h"
#include "json.h"
#include "kube/kube.h"
#include "log.h"

struct probe_config {
  long samples;
  long interval_ms;
  const char *appname;
  long timeout;
  const char *kubeconfig;
  const char *namespace;
  const char *secret;
  const char *key;
};

#define O(f) offsetof(struct probe_config, f)
static const struct cfg_opt options[] = {
  { "samples", NULL, CFG_INT, "500", 0, 10000000, O(samples),
    "samples of each kind (0: until SIGTERM or SIGINT)" },
  { "interval-ms", NULL, CFG_INT, "0", 0, 600000, O(interval_ms),
    "pause between rounds of samples (0: back to back)" },
  { "appname", NULL, CFG_STR, "godwit-bench", 0, 0, O(appname),
    "the migration's application_name, the probe's $1" },
  { "timeout", NULL, CFG_INT, "5", 1, 300, O(timeout),
    "seconds: connect and statement timeout (the controller's --db-timeout)" },
  { "kubeconfig", NULL, CFG_STR, NULL, 0, 0, O(kubeconfig),
    "read the target URI from a Secret through this API server for every sample" },
  { "namespace", NULL, CFG_STR, "default", 0, 0, O(namespace), "namespace of the Secret" },
  { "secret", NULL, CFG_STR, "dst", 0, 0, O(secret), "name of the target Secret" },
  { "key", NULL, CFG_STR, "uri", 0, 0, O(key), "key of the URI in the Secret" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

/* The controller's probe query, the very statement controller/migration/probe.c sends. */
static const char probe_sql[] = MIG_PROBE_SQL;

enum kind { K_SELECT1, K_PROBE, K_SAMPLE, K_LOGIN_SAMPLE, K_SECRET, K_QUERY, K_COUNT };
static const char *const kind_names[K_COUNT] = { "select1", "probe",  "sample",
                                                 "login_sample", "secret", "query" };

struct series {
  double *us;
  size_t n, cap;
};

static volatile sig_atomic_t stopping;
static long long seen_copy = -1, seen_other = -1, seen_size = -1;

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

static double now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int push(struct series *s, double v)
{
  if(s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    double *p = realloc(s->us, cap * sizeof(*p));
    if(!p)
      return -1;
    s->us = p;
    s->cap = cap;
  }
  s->us[s->n++] = v;
  return 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(const struct series *s, double p)
{
  size_t i = (size_t)(p * (double)(s->n - 1) + 0.5);
  return s->us[i < s->n ? i : s->n - 1];
}

static void report(enum kind k, struct series *s, const char *extra)
{
  if(!s->n)
    return;
  double sum = 0;
  for(size_t i = 0; i < s->n; i++)
    sum += s->us[i];
  qsort(s->us, s->n, sizeof(double), cmp_double);
  printf("PROBE kind=%s n=%zu p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f%s\n", kind_names[k],
         s->n, pct(s, 0.5), pct(s, 0.99), s->us[s->n - 1], sum / (double)s->n, extra);
}

static void wipe_free(char *s)
{
  if(s) {
    volatile char *p = s;
    while(*p)
      *p++ = 0;
    free(s);
  }
}

/* The target URI from the Secret, as the controller reads it for each sample (secret_ref_get). */
static char *secret_uri(struct kube_client *k, const struct probe_config *c)
{
  cJSON *sec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(k, &KUBE_SECRETS, c->namespace, c->secret, &sec, &st);
  kube_status_release(&st);
  char *uri = NULL;
  if(!rc) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(sec, "data"), c->key);
    if(cJSON_IsString(v))
      uri = (char *)b64_decode(v->valuestring, NULL);
  }
  if(!uri)
    fprintf(stderr, "godwit-bench-probe: cannot read key %s of Secret %s/%s: %s\n", c->key,
            c->namespace, c->secret, rc ? gw_strerror(rc) : "no such key");
  cJSON_Delete(sec);
  return uri;
}

/* The URI a sample uses: from the Secret, or $GODWIT_TARGET_URI (copied) without --kubeconfig. */
static char *read_uri(struct kube_client *k, const struct probe_config *c, const char *env_uri)
{
  return k ? secret_uri(k, c) : env_uri ? strdup(env_uri) : NULL;
}

/* A connection with the parameters of the controller's mig_pg_connect. */
static PGconn *connect_target(const char *uri, long timeout_s)
{
  char timeout[16], opts[64];
  snprintf(timeout, sizeof(timeout), "%ld", timeout_s);
  snprintf(opts, sizeof(opts), "-c statement_timeout=%ld", timeout_s * 1000);
  const char *keys[] = { "dbname", "connect_timeout", "application_name", "options", NULL };
  const char *vals[] = { uri, timeout, "godwit-controller", opts, NULL };
  PGconn *conn = PQconnectdbParams(keys, vals, 1);
  if(conn && PQstatus(conn) != CONNECTION_OK) {
    fprintf(stderr, "godwit-bench-probe: cannot connect: %s", PQerrorMessage(conn));
    PQfinish(conn);
    return NULL;
  }
  return conn;
}

static int run_probe(PGconn *conn, const char *appname)
{
  const char *params[1] = { appname };
  PGresult *r = PQexecParams(conn, probe_sql, 1, NULL, params, NULL, NULL, 0);
  int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
  if(ok) {
    long long copy = atoll(PQgetvalue(r, 0, 0)), other = atoll(PQgetvalue(r, 0, 1));
    seen_copy = copy > seen_copy ? copy : seen_copy;
    seen_other = other > seen_other ? other : seen_other;
    seen_size = atoll(PQgetvalue(r, 0, 2));
  } else {
    fprintf(stderr, "godwit-bench-probe: the probe failed: %s", PQresultErrorMessage(r));
  }
  PQclear(r);
  return ok ? 0 : -1;
}

/* connect, one statement, close: returns microseconds, or -1 */
static double one(const char *uri, long timeout_s, const char *appname, bool probe)
{
  double t0 = now_us();
  PGconn *conn = connect_target(uri, timeout_s);
  if(!conn)
    return -1;
  int rc;
  if(probe) {
    rc = run_probe(conn, appname);
  } else {
    PGresult *r = PQexec(conn, "SELECT 1");
    rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if(rc)
      fprintf(stderr, "godwit-bench-probe: SELECT 1 failed: %s", PQresultErrorMessage(r));
    PQclear(r);
  }
  PQfinish(conn);
  return rc ? -1 : now_us() - t0;
}

/* The controller's session pool (controller/migration/pgpool.c) reduced to the one Migration
 * and side measured here: the kept session and the digest of the URI it logged in with. The
 * controller's slot scan and mutex (64 slots, no contention here) are left out: nanoseconds. */
struct pooled {
  PGconn *c; /* NULL: nothing kept */
  unsigned char digest[32];
  long logins;
};

static void digest_of(const char *uri, unsigned char out[32])
{
  unsigned int n = 0;
  if(!EVP_Digest(uri, strlen(uri), out, &n, EVP_sha256(), NULL) || n != 32)
    memset(out, 0, 32);
}

/* One whole sample as mig_probe takes it now: the Secret read and the digest (mig_pg_open), the
 * kept session if its digest matches and it is still up, else a login (mig_pg_connect, which
 * reads the Secret once more), the probe query, the session back to the pool if it is healthy
 * and idle (mig_pg_close); a kept session that broke gets one retry with a fresh login, as in
 * mig_probe. Returns microseconds, or -1; *uri_out gets the URI read (the caller frees it), and
 * *secret_us what the first Secret read took. */
static double pooled_sample(struct kube_client *k, const struct probe_config *c,
                            const char *env_uri, struct pooled *pool, char **uri_out,
                            double *secret_us)
{
  double t0 = now_us();
  char *uri = read_uri(k, c, env_uri);
  *secret_us = now_us() - t0;
  *uri_out = uri;
  if(!uri)
    return -1;
  unsigned char d[32];
  digest_of(uri, d);
  int rc = -1;
  for(int round = 0; round < 2 && rc; round++) {
    PGconn *s = pool->c;
    pool->c = NULL;
    if(s && memcmp(pool->digest, d, sizeof(d))) {
      PQfinish(s); /* the Secret changed: that session goes */
      s = NULL;
    }
    bool reused = s && PQstatus(s) == CONNECTION_OK;
    if(!reused) {
      if(s)
        PQfinish(s);
      char *again = read_uri(k, c, env_uri);
      s = again ? connect_target(again, c->timeout) : NULL;
      wipe_free(again);
      if(!s)
        return -1;
      pool->logins++;
    }
    rc = run_probe(s, c->appname);
    bool up = PQstatus(s) == CONNECTION_OK;
    if(rc || !up || PQtransactionStatus(s) != PQTRANS_IDLE) {
      PQfinish(s);
    } else {
      pool->c = s;
      memcpy(pool->digest, d, sizeof(d));
    }
    if(rc && (!reused || up))
      break; /* a query error on a good session: no retry */
  }
  return rc ? -1 : now_us() - t0;
}

static void pause_ms(long ms)
{
  struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
  while(!stopping && nanosleep(&d, &d) < 0)
    ;
}

enum op { OP_SAMPLE, OP_PROBE, OP_SELECT1, OP_QUERY, OP_COUNT };

int main(int argc, char **argv)
{
  struct probe_config c;
  memset(&c, 0, sizeof(c));
  int code = cfg_main(options, &c, argc, argv, "godwit-bench-probe",
                      "The cost of one sample of the Migration controller's probe (benchmark).");
  if(code >= 0)
    return code;
  log_set_level(LOG_WARN);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  struct kube_config kc;
  memset(&kc, 0, sizeof(kc));
  struct kube_client *kube = NULL;
  char err[512];
  char *env_uri = NULL;
  if(c.kubeconfig) {
    /* Without the client-side rate limiter (20 requests/s, burst 30, as the controller's):
     * the controller reads the Secret once per probe interval, so what a sample costs is the
     * request itself; back-to-back samples here would otherwise measure the limiter. */
    gw_rc rc = kube_config_load(&kc, c.kubeconfig, NULL, err, sizeof(err));
    if(!rc)
      kc.qps = -1;
    if(rc || kube_client_new(&kube, &kc, err, sizeof(err))) {
      fprintf(stderr, "godwit-bench-probe: %s\n", err);
      kube_config_release(&kc);
      return 1;
    }
  } else {
    const char *u = getenv("GODWIT_TARGET_URI");
    if(!u || !*u) {
      fprintf(stderr, "godwit-bench-probe: set $GODWIT_TARGET_URI or --kubeconfig\n");
      return 2;
    }
    env_uri = strdup(u);
  }

  struct series s[K_COUNT];
  memset(s, 0, sizeof(s));
  code = 0;
  /* the kept connection of "query", and one warm-up of the per-login kinds; the pool of
   * "sample" starts empty, so that its first sample logs in as the controller's does */
  char *uri = read_uri(kube, &c, env_uri);
  PGconn *kept = uri ? connect_target(uri, c.timeout) : NULL;
  if(!kept || one(uri, c.timeout, c.appname, true) < 0 || one(uri, c.timeout, c.appname, false) < 0)
    code = 1;
  struct pooled pool;
  memset(&pool, 0, sizeof(pool));
  double first_us = -1;

  for(long i = 0; !code && !stopping && (c.samples == 0 || i < c.samples); i++) {
    /* the four measurements in a rotating order (8 orders: rotated by i / 2, probe and SELECT 1
     * swapped on odd i); probe and SELECT 1 use the URI the latest sample read */
    enum op ops[OP_COUNT] = { OP_SAMPLE, OP_PROBE, OP_SELECT1, OP_QUERY };
    if(i % 2) {
      ops[1] = OP_SELECT1;
      ops[2] = OP_PROBE;
    }
    double t[OP_COUNT] = { 0 }, t_secret = 0;
    for(int j = 0; j < OP_COUNT && !code; j++) {
      enum op o = ops[(j + i / 2) % OP_COUNT];
      if(o == OP_SAMPLE) {
        char *u = NULL;
        t[o] = pooled_sample(kube, &c, env_uri, &pool, &u, &t_secret);
        if(u) {
          wipe_free(uri);
          uri = u;
        }
        if(first_us < 0)
          first_us = t[o];
      } else if(o == OP_QUERY) {
        double q0 = now_us();
        t[o] = run_probe(kept, c.appname) ? -1 : now_us() - q0;
      } else {
        t[o] = one(uri, c.timeout, c.appname, o == OP_PROBE);
      }
      if(t[o] < 0)
        code = 1;
    }
    if(code)
      break;
    if(push(&s[K_PROBE], t[OP_PROBE]) || push(&s[K_SELECT1], t[OP_SELECT1]) ||
       push(&s[K_QUERY], t[OP_QUERY]) ||
       (kube && (push(&s[K_SECRET], t_secret) || push(&s[K_SAMPLE], t[OP_SAMPLE]) ||
                 push(&s[K_LOGIN_SAMPLE], t_secret + t[OP_PROBE])))) {
      fprintf(stderr, "godwit-bench-probe: out of memory\n");
      code = 1;
      break;
    }
    if(c.interval_ms)
      pause_ms(c.interval_ms);
  }
  wipe_free(uri);
  if(kept)
    PQfinish(kept);
  if(pool.c)
    PQfinish(pool.c);
  char extra[96];
  snprintf(extra, sizeof(extra), " logins=%ld first_us=%.0f", pool.logins, first_us);
  for(int k = 0; k < K_COUNT; k++) {
    report((enum kind)k, &s[k], k == K_SAMPLE ? extra : "");
    free(s[k].us);
  }
  printf("PROBE kind=seen copy_max=%lld other_max=%lld size_bytes=%lld\n", seen_copy, seen_other,
         seen_size);
  wipe_free(env_uri);
  kube_client_free(kube);
  kube_config_release(&kc);
  return code;
}
