/* godwit-controller: reconciles Migration, PtahMigration, PtahSchema and PodMigration (up to
 * Validating: the node agent is not there yet); one replica leads through a Lease. See
 * controller/manager.h and docs/operations. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "kube/kube.h"
#include "log.h"
#include "manager.h"
#include "migration/migration.h"
#include "pgpool.h"
#include "podmotion/pmig.h"
#include "ptah/ptah.h"
#include "version.h"

#define CONTROLLER_PG_SESSIONS 64   /* idle sessions kept at most (least recently used go) */
#define CONTROLLER_PG_IDLE_MS 60000 /* an idle session closes after a minute */

struct controller_config {
  const char *kubeconfig;
  const char *context;
  int leader_elect;
  long metrics_port;
  const char *bind;
  const char *port_file;
  long workers;
  const char *namespace;
  const char *le_namespace;
  const char *le_id;
  const char *identity;
  long lease_duration;
  long renew_deadline;
  long retry_period;
  long resync;
  const char *log_level;
  /* the Migration controller */
  const char *runner_image;
  long step_deadline, long_step_deadline, attempt_backoff;
  long probe_interval, lag_interval, wal_sender_timeout, poll_interval, zombie_grace, step_attempts,
    cleanup_attempts, db_timeout;
  long qps, burst, api_timeout;
  /* the PtahMigration controller */
  long ptah_deadline, ptah_ttl, ptah_lock_wait, ptah_failure_interval, ptah_log_window;
  const char *ptah_protocol, *ptah_transport, *policy;
  /* the PodMigration controller */
  const char *nodeagent_ca, *nodeagent_token_file, *pm_audit;
  long pm_janitor, pm_orphan_age;
};

#define O(f) offsetof(struct controller_config, f)
static const struct cfg_opt options[] = {
  { "kubeconfig", NULL, CFG_STR, NULL, 0, 0, O(kubeconfig),
    "kubeconfig file (default: $KUBECONFIG, then in-cluster, then ~/.kube/config)" },
  { "context", NULL, CFG_STR, NULL, 0, 0, O(context), "kubeconfig context (default: current)" },
  { "leader-elect", "GODWIT_LEADER_ELECT", CFG_BOOL, "false", 0, 0, O(leader_elect),
    "reconcile only while holding the Lease (run two replicas, one leads)" },
  { "metrics-port", "GODWIT_METRICS_PORT", CFG_INT, "9090", 0, 65535, O(metrics_port),
    "plain HTTP port for /healthz, /readyz and /metrics (0: any free port, see --port-file)" },
  { "bind", "GODWIT_BIND", CFG_STR, "0.0.0.0", 0, 0, O(bind), "address of the metrics port" },
  { "port-file", NULL, CFG_STR, NULL, 0, 0, O(port_file),
    "write the bound metrics port to this file once serving" },
  { "workers", "GODWIT_WORKERS", CFG_INT, "2", 1, 64, O(workers),
    "concurrent reconciles per controller" },
  { "namespace", "GODWIT_WATCH_NAMESPACE", CFG_STR, NULL, 0, 0, O(namespace),
    "watch only this namespace (default: all)" },
  { "leader-election-namespace", "POD_NAMESPACE", CFG_STR, "godwit-system", 0, 0,
    O(le_namespace), "namespace of the Lease" },
  { "leader-election-id", NULL, CFG_STR, "godwit-controller", 0, 0, O(le_id),
    "name of the Lease" },
  { "identity", "POD_NAME", CFG_STR, NULL, 0, 0, O(identity),
    "holder identity in the Lease (default: hostname_pid)" },
  { "lease-duration", NULL, CFG_INT, "15", 2, 3600, O(lease_duration),
    "seconds a standby waits after the last renewal before it takes the Lease" },
  { "renew-deadline", NULL, CFG_INT, "10", 1, 3600, O(renew_deadline),
    "seconds the leader keeps trying to renew before it stops leading (< lease-duration)" },
  { "retry-period", NULL, CFG_INT, "2", 1, 600, O(retry_period),
    "seconds between Lease attempts" },
  { "resync-period", NULL, CFG_INT, "600", 0, 86400, O(resync),
    "seconds between full resyncs of every cached object (0: never)" },
  { "log-level", "GODWIT_LOG_LEVEL", CFG_STR, "info", 0, 0, O(log_level),
    "debug (one line per reconcile), info, warn or error" },
  { "kube-api-qps", "GODWIT_KUBE_API_QPS", CFG_INT, "50", 1, 10000, O(qps),
    "requests per second to the API server, sustained (a client-side token bucket; Events have "
    "one of their own at the same rate)" },
  { "kube-api-burst", "GODWIT_KUBE_API_BURST", CFG_INT, "100", 1, 10000, O(burst),
    "requests to the API server allowed at once above the sustained rate" },
  { "kube-api-timeout-ms", "GODWIT_KUBE_API_TIMEOUT_MS", CFG_INT, "30000", 500, 600000,
    O(api_timeout), "milliseconds a request to the API server may take (watches excepted)" },
  { "runner-image", "GODWIT_RUNNER_IMAGE", CFG_STR, "ghcr.io/godwit-dev/godwit:latest", 0, 0,
    O(runner_image), "image of the runner Jobs, and of the pgcopydb worker by default" },
  { "probe-interval-ms", "GODWIT_PROBE_INTERVAL_MS", CFG_INT, "5000", 100, 600000,
    O(probe_interval), "at most one pg_stat_activity sample of a copying target per interval" },
  { "lag-interval-ms", "GODWIT_LAG_INTERVAL_MS", CFG_INT, "10000", 100, 600000,
    O(lag_interval), "replication lag samples of a live migration, one per interval" },
  { "wal-sender-timeout-ms", "GODWIT_WAL_SENDER_TIMEOUT_MS", CFG_INT, "2000", 0, 600000,
    O(wal_sender_timeout), "wal_sender_timeout of a live worker's source connections (pgcopydb "
    "0.15 and later, a source on PostgreSQL 12 or later): the source asks for feedback every "
    "half of it, and each feedback reads the cutover's end position; 0: the server's own "
    "(pgcopydb's 10 s feedback)" },
  { "poll-interval-ms", "GODWIT_POLL_INTERVAL_MS", CFG_INT, "5000", 100, 600000,
    O(poll_interval), "look at a running Job again after this long (Job and Pod changes "
    "reconcile at once)" },
  { "zombie-grace-ms", "GODWIT_ZOMBIE_GRACE_MS", CFG_INT, "60000", 1000, 3600000,
    O(zombie_grace), "a worker Pod alive this long after pgcopydb's fatal exit is removed "
    "(WorkerZombie)" },
  { "step-attempts", "GODWIT_STEP_ATTEMPTS", CFG_INT, "5", 1, 50, O(step_attempts),
    "attempts of a runner step (preflight, catalog, verify, reown, compare) without a verdict" },
  { "cleanup-attempts", "GODWIT_CLEANUP_ATTEMPTS", CFG_INT, "3", 1, 50, O(cleanup_attempts),
    "attempts of the cleanup Job before CleanupFailed" },
  { "attempt-backoff", "GODWIT_ATTEMPT_BACKOFF", CFG_INT, "10", 1, 360, O(attempt_backoff),
    "seconds before a failed worker attempt's successor starts, doubling with each failure, "
    "six minutes at most (the Job controller's back-off)" },
  { "step-deadline", "GODWIT_STEP_DEADLINE", CFG_INT, "900", 1, 604800, O(step_deadline),
    "seconds a Migration's version probe, preflight, catalog, cutover or cleanup Job may run "
    "(activeDeadlineSeconds; past it the attempt failed without a verdict)" },
  { "long-step-deadline", "GODWIT_LONG_STEP_DEADLINE", CFG_INT, "86400", 1, 2592000,
    O(long_step_deadline), "seconds a Migration's verify, compare or reown Job may run (they "
    "read or change every table); the worker has no deadline" },
  { "db-timeout", "GODWIT_DB_TIMEOUT", CFG_INT, "5", 1, 300, O(db_timeout),
    "seconds: connect and statement timeout of the controller's own database samples" },
  { "ptah-job-deadline", "GODWIT_PTAH_JOB_DEADLINE", CFG_INT, "3600", 10, 604800,
    O(ptah_deadline), "seconds a Ptah operation Job may run (activeDeadlineSeconds)" },
  { "ptah-job-ttl", "GODWIT_PTAH_JOB_TTL", CFG_INT, "86400", 60, 2592000, O(ptah_ttl),
    "seconds a finished Ptah operation Job is kept (ttlSecondsAfterFinished)" },
  { "ptah-lock-wait", "GODWIT_PTAH_LOCK_WAIT", CFG_INT, "30", 1, 3600, O(ptah_lock_wait),
    "seconds a Ptah runner waits for the database lock before its run fails" },
  { "ptah-failure-interval-ms", "GODWIT_PTAH_FAILURE_INTERVAL_MS", CFG_INT, "30000", 100,
    3600000, O(ptah_failure_interval),
    "a Ptah operation refused by its runner (protocol) is tried again after this" },
  { "ptah-result-transport", "GODWIT_PTAH_RESULT_TRANSPORT", CFG_STR, "durable", 0, 0,
    O(ptah_transport), "how new Ptah operations deliver results: durable (PtahResultRecords) or "
    "legacy (a framed result in the runner's log; for runners that cannot reach the API)" },
  { "ptah-log-read-window-ms", "GODWIT_PTAH_LOG_READ_WINDOW_MS", CFG_INT, "120000", 1000,
    3600000, O(ptah_log_window), "legacy results: how long after its Job ended a log is read "
    "again before the termination summary is considered" },
  { "ptah-runner-protocol", "GODWIT_PTAH_RUNNER_PROTOCOL", CFG_STR, PTAH_PROTOCOL, 0, 0, O(ptah_protocol),
    "the runner protocol Ptah Jobs ask for (change only to test a mismatch)" },
  { "admission-policy", "GODWIT_POLICY", CFG_STR, NULL, 0, 0, O(policy),
    "the admission policy JSON file the webhook enforces; read when a PtahSchemaApproval is "
    "judged, for approvals.allowSelfApproval (default: the built-in policy, which forbids "
    "self-approval)" },
  { "nodeagent-ca", "GODWIT_NODEAGENT_CA", CFG_STR, NULL, 0, 0, O(nodeagent_ca),
    "CA of the PodMotion node agents' certificates (default: the system's)" },
  { "nodeagent-token-file", "GODWIT_NODEAGENT_TOKEN_FILE", CFG_STR, NULL, 0, 0,
    O(nodeagent_token_file), "the bearer token of the node agents' API; without it "
    "PodMigrations wait in Validating (NodeAgentUnavailable)" },
  { "podmotion-janitor-interval-s", "GODWIT_PODMOTION_JANITOR_INTERVAL_S", CFG_INT, "600", 0,
    86400, O(pm_janitor), "how often the node agents' checkpoints that no PodMigration owns "
    "are looked for and removed (0: never)" },
  { "podmotion-orphan-age-s", "GODWIT_PODMOTION_ORPHAN_AGE_S", CFG_INT, "600", 1, 604800,
    O(pm_orphan_age), "a checkpoint directory younger than this is never taken for an orphan" },
  { "podmotion-audit-log", "GODWIT_PODMOTION_AUDIT_LOG", CFG_STR, NULL, 0, 0, O(pm_audit),
    "append PodMotion's audit records (JSON lines: every action on a pod or a node) to this "
    "file (default: the controller's log, message \"audit\")" },
  { NULL, NULL, 0, NULL, 0, 0, 0, NULL },
};

static volatile int stopping;

/* The first line of a token file (malloc'd), or NULL. */
static char *read_token(const char *path)
{
  FILE *f = fopen(path, "r");
  char buf[512] = "";
  char *tok = NULL;
  if(f && fgets(buf, sizeof(buf), f)) {
    buf[strcspn(buf, "\r\n")] = 0;
    if(*buf)
      tok = strdup(buf);
  }
  if(f)
    fclose(f);
  return tok;
}

static void on_signal(int sig)
{
  (void)sig;
  stopping = 1;
}

static int make_client(const struct controller_config *c, int timeout_ms, int max_retries,
                       struct kube_config *kc, struct kube_client **out)
{
  char err[512];
  if(kube_config_load(kc, c->kubeconfig, c->context, err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot load the Kubernetes configuration", "reason", err, LOG_END);
    return 1;
  }
  if(timeout_ms)
    kc->timeout_ms = timeout_ms;
  if(max_retries >= 0)
    kc->max_retries = max_retries;
  kc->qps = (double)c->qps;
  kc->burst = (int)c->burst;
  if(kube_client_new(out, kc, err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot create the Kubernetes client", "reason", err, LOG_END);
    return 1;
  }
  return 0;
}

static void write_port(const char *path, int port)
{
  FILE *f = path ? fopen(path, "w") : NULL;
  if(f) {
    fprintf(f, "%d\n", port);
    fclose(f);
  }
}

static int run(const struct controller_config *c, const char *identity)
{
  struct kube_config kc, lkc, ekc;
  struct kube_client *kube = NULL, *lkube = NULL, *ekube = NULL;
  memset(&kc, 0, sizeof(kc));
  memset(&lkc, 0, sizeof(lkc));
  memset(&ekc, 0, sizeof(ekc));
  int code = make_client(c, (int)c->api_timeout, -1, &kc, &kube);
  /* Events' own client: its own --kube-api-qps and burst, counted in the same metrics */
  if(!code)
    code = make_client(c, (int)c->api_timeout, -1, &ekc, &ekube);
  if(!code)
    kube_client_count_in(ekube, kube);
  /* The elector's own client: a request must end well within the renew deadline. */
  if(!code && c->leader_elect)
    code = make_client(c, (int)(c->renew_deadline * 1000 / 3), 1, &lkc, &lkube);
  struct mgr *m = NULL;
  struct mgr_opts mo = { 0 };
  mo.kube = kube;
  mo.leader_kube = lkube;
  mo.events_kube = ekube;
  mo.namespace = c->namespace;
  mo.workers = (int)c->workers;
  mo.resync_ms = c->resync ? c->resync * 1000 : -1;
  mo.leader_elect = c->leader_elect;
  mo.leader.namespace = c->le_namespace;
  mo.leader.name = c->le_id;
  mo.leader.identity = identity;
  mo.leader.lease_duration_s = (int)c->lease_duration;
  mo.leader.renew_deadline_ms = (int)c->renew_deadline * 1000;
  mo.leader.retry_period_ms = (int)c->retry_period * 1000;
  mo.identity = identity;
  mo.metrics_port = (int)c->metrics_port;
  mo.bind = c->bind;
  struct migration_opts mig = {
    .runner_image = c->runner_image,
    .probe_interval_ms = c->probe_interval,
    .lag_interval_ms = c->lag_interval,
    .wal_sender_timeout_ms = c->wal_sender_timeout,
    .poll_interval_ms = c->poll_interval,
    .zombie_grace_ms = c->zombie_grace,
    .step_attempts = (int)c->step_attempts,
    .cleanup_attempts = (int)c->cleanup_attempts,
    .connect_timeout_s = c->db_timeout,
    .step_deadline_s = c->step_deadline,
    .attempt_backoff_s = c->attempt_backoff,
    .long_step_deadline_s = c->long_step_deadline,
  };
  /* the controller's database sessions, kept between samples: one idle per Migration and side,
   * closed after a minute unused */
  if(!code && pg_pool_new(&mig.pool, CONTROLLER_PG_SESSIONS, CONTROLLER_PG_IDLE_MS)) {
    log_kv(LOG_ERROR, "cannot set up the database session pool", LOG_END);
    code = 1;
  }
  char err[256] = "";
  struct ptah_opts ptah = {
    .runner_image = c->runner_image,
    .protocol = c->ptah_protocol,
    .poll_interval_ms = c->poll_interval,
    .failure_interval_ms = c->ptah_failure_interval,
    .job_deadline_s = c->ptah_deadline,
    .job_ttl_s = c->ptah_ttl,
    .lock_wait_s = c->ptah_lock_wait,
    .retry_base_ms = 2000,
    .legacy_results = c->ptah_transport && !strcmp(c->ptah_transport, "legacy"),
    .log_window_ms = c->ptah_log_window,
    .policy_file = c->policy,
  };
  char *agent_token = NULL;
  struct pmig_opts pmo = { .ca_file = c->nodeagent_ca, .audit_file = c->pm_audit,
                           .janitor_interval_ms = c->pm_janitor * 1000,
                           .janitor_min_age_ms = c->pm_orphan_age * 1000 };
  if(c->nodeagent_token_file) {
    agent_token = read_token(c->nodeagent_token_file);
    if(!agent_token) /* the Secret is optional: PodMigrations wait, saying so */
      log_kv(LOG_WARN, "no node agent token: PodMigrations wait in Validating",
             "file", c->nodeagent_token_file, LOG_END);
    pmo.token = agent_token;
  }
  if(!code && (mgr_new(&m, &mo) || migration_register_opts(m, &mig, NULL) ||
               ptah_register(m, &ptah) || ptah_schema_register(m, &ptah) ||
               podmotion_register(m, &pmo))) {
    log_kv(LOG_ERROR, "cannot set up the controllers", LOG_END);
    code = 1;
  }
  if(!code && mgr_start(m, err, sizeof(err))) {
    log_kv(LOG_ERROR, "cannot start", "reason", err, LOG_END);
    code = 1;
  }
  if(!code) {
    char port[16];
    snprintf(port, sizeof(port), "%d", mgr_metrics_port(m));
    write_port(c->port_file, mgr_metrics_port(m));
    log_kv(LOG_INFO, "serving", "metricsPort", port, "identity", identity, "leaderElection",
           c->leader_elect ? "true" : "false", "version", gw_version(), "commit", gw_commit(),
           "buildDate", gw_build_date(), LOG_END);
    gw_rc rc = mgr_run(m, &stopping);
    if(rc == GW_EDENIED)
      code = 1; /* leadership lost: exit so a fresh process starts as a standby */
    else if(rc)
      code = 1;
  }
  mgr_free(m);
  free(agent_token);
  pg_pool_free(mig.pool);
  kube_client_free(lkube);
  kube_client_free(ekube);
  kube_client_free(kube);
  kube_config_release(&ekc);
  kube_config_release(&lkc);
  kube_config_release(&kc);
  log_kv(LOG_INFO, "stopped", LOG_END);
  return code;
}

int main(int argc, char **argv)
{
  struct controller_config c;
  memset(&c, 0, sizeof(c));
  int code = cfg_main(options, &c, argc, argv, "godwit-controller",
                      "Reconciles Migration (pgcopydb.io), PtahMigration and PtahSchema with "
                      "its approvals (ptah.run): writes status, conditions and Events, runs the "
                      "runner Jobs; leader-elected through a Lease. PodMigration "
                      "(migration.podmotion.io) is reconciled through the node agents' API "
                      "(--nodeagent-token-file): checkpoint, transfer, restore, verification, "
                      "handover, rollback.");
  if(code >= 0)
    return code;
  if(strcmp(c.ptah_transport, "durable") && strcmp(c.ptah_transport, "legacy")) {
    fprintf(stderr, "godwit-controller: --ptah-result-transport must be durable or legacy, "
            "got \"%s\"\n", c.ptah_transport);
    return 2;
  }
  if(c.leader_elect && c.renew_deadline >= c.lease_duration) {
    fprintf(stderr, "godwit-controller: --renew-deadline must be shorter than --lease-duration\n");
    return 2;
  }
  char identity[300];
  if(c.identity && *c.identity) {
    snprintf(identity, sizeof(identity), "%s", c.identity);
  } else {
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    snprintf(identity, sizeof(identity), "%s_%ld", host, (long)getpid());
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return run(&c, identity);
}
