/* audit.c: the PodMotion audit log and metrics (pmig.h). Every decision that touches a pod or a
 * node is one JSON line: what was done, where, to what, and how it went. */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "pmig.h"
#include "strbuf.h"

static pthread_mutex_t audit_mu = PTHREAD_MUTEX_INITIALIZER;

void pmig_audit(struct pmig *p, const char *action, const char *node, const char *pod, bool ok,
                const char *fmt, ...)
{
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if(!pmig_opts.audit_file) {
    log_kv(LOG_INFO, "audit", "migration", p->ctx->key, "action", action, "node",
           node ? node : "", "pod", pod ? pod : "", "result", ok ? "success" : "failure",
           "message", msg, LOG_END);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char at[40];
  size_t n = strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(at + n, sizeof(at) - n, ".%03ldZ", ts.tv_nsec / 1000000);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "ts", at);
  cJSON_AddStringToObject(o, "namespace", p->ns);
  cJSON_AddStringToObject(o, "migration", p->name);
  cJSON_AddStringToObject(o, "uid", json_get_str(p->obj, "metadata.uid") ?
                                      json_get_str(p->obj, "metadata.uid") : "");
  cJSON_AddStringToObject(o, "phase", phase_name(&pmig_phases, p->phase));
  cJSON_AddStringToObject(o, "action", action);
  cJSON_AddStringToObject(o, "node", node ? node : "");
  cJSON_AddStringToObject(o, "pod", pod ? pod : "");
  cJSON_AddStringToObject(o, "result", ok ? "success" : "failure");
  cJSON_AddStringToObject(o, "message", msg);
  char *line = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if(!line)
    return;
  pthread_mutex_lock(&audit_mu);
  int fd = open(pmig_opts.audit_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  size_t len = strlen(line);
  line[len] = '\n'; /* the NUL goes: one write of the whole line */
  if(fd < 0 || write(fd, line, len + 1) != (ssize_t)(len + 1))
    log_kv(LOG_ERROR, "cannot write the audit log", "file", pmig_opts.audit_file, LOG_END);
  if(fd >= 0)
    close(fd);
  pthread_mutex_unlock(&audit_mu);
  cJSON_free(line);
}

/* ---- metrics ---- */
static const double buckets[] = { 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1, 2, 5 };
#define NB (sizeof(buckets) / sizeof(buckets[0]))
static atomic_llong freeze_count, freeze_ms_sum, freeze_le[NB];
static atomic_llong transfer_bytes, completed;
static const char *const reasons[] = { "CheckpointFailed", "TransferFailed", "RestoreFailed",
                                       "VerificationTimeout", "VerificationFailed",
                                       "HandoverFailed", "Cancelled", "SourcePodLost",
                                       "SourcePodNotRunning", "Deleted", "other" };
#define NR (sizeof(reasons) / sizeof(reasons[0]))
static atomic_llong rollbacks[NR];

void pmig_observe_freeze(long long ms)
{
  atomic_fetch_add(&freeze_count, 1);
  atomic_fetch_add(&freeze_ms_sum, ms);
  for(size_t i = 0; i < NB; i++)
    if((double)ms / 1000.0 <= buckets[i])
      atomic_fetch_add(&freeze_le[i], 1);
}

void pmig_observe_transfer(long long bytes)
{
  atomic_fetch_add(&transfer_bytes, bytes);
}

void pmig_observe_end(bool completed_ok, const char *rollback_reason)
{
  if(completed_ok) {
    atomic_fetch_add(&completed, 1);
    return;
  }
  size_t i = 0;
  while(i + 1 < NR && strcmp(reasons[i], rollback_reason ? rollback_reason : ""))
    i++;
  atomic_fetch_add(&rollbacks[i], 1);
}

gw_rc pmig_metrics(struct strbuf *sb)
{
  gw_rc rc = strbuf_addf(sb, "# HELP godwit_podmigration_freeze_seconds How long the pod was "
                         "frozen: from the dump's start to the restored copy running.\n"
                         "# TYPE godwit_podmigration_freeze_seconds histogram\n");
  for(size_t i = 0; !rc && i < NB; i++)
    rc = strbuf_addf(sb, "godwit_podmigration_freeze_seconds_bucket{le=\"%g\"} %lld\n",
                     buckets[i], (long long)atomic_load(&freeze_le[i]));
  if(!rc)
    rc = strbuf_addf(sb, "godwit_podmigration_freeze_seconds_bucket{le=\"+Inf\"} %lld\n"
                     "godwit_podmigration_freeze_seconds_sum %.3f\n"
                     "godwit_podmigration_freeze_seconds_count %lld\n"
                     "# HELP godwit_podmigration_transfer_bytes_total Checkpoint bytes copied "
                     "between nodes.\n# TYPE godwit_podmigration_transfer_bytes_total counter\n"
                     "godwit_podmigration_transfer_bytes_total %lld\n"
                     "# HELP godwit_podmigration_completed_total Migrations that moved their "
                     "pod.\n# TYPE godwit_podmigration_completed_total counter\n"
                     "godwit_podmigration_completed_total %lld\n"
                     "# HELP godwit_podmigration_rollbacks_total Migrations rolled back, by "
                     "reason.\n# TYPE godwit_podmigration_rollbacks_total counter\n",
                     (long long)atomic_load(&freeze_count),
                     (double)atomic_load(&freeze_ms_sum) / 1000.0,
                     (long long)atomic_load(&freeze_count),
                     (long long)atomic_load(&transfer_bytes), (long long)atomic_load(&completed));
  for(size_t i = 0; !rc && i < NR; i++)
    rc = strbuf_addf(sb, "godwit_podmigration_rollbacks_total{reason=\"%s\"} %lld\n", reasons[i],
                     (long long)atomic_load(&rollbacks[i]));
  return rc;
}
