/* Per-Migration series on the controller's /metrics, from the informer's cache (status is the
 * record: the phase, the lag, the attempts, and the target size the probe measured):
 *   godwit_migration_phase{namespace,name,phase}          1 for the current phase, 0 otherwise
 *   godwit_migration_lag_bytes{namespace,name}            status.lagBytes (live)
 *   godwit_migration_target_size_bytes{namespace,name}    status.lastProbe.targetSizeBytes
 *   godwit_migration_attempts{namespace,name}             status.attempts
 * The alert PgcopydbMigrationCloneStalled (manifests/prometheusrule.yaml) reads the first and
 * the third. Labels are the object's namespace and name (Kubernetes names: no escaping needed)
 * and the phase (a closed set); never anything from a Secret. */
#include <stdio.h>
#include <string.h>

#include "../informer.h"
#include "../metrics.h"
#include "json.h"
#include "mig.h"
#include "strbuf.h"

struct render {
  struct strbuf *sb;
  int which;
  gw_rc rc;
};

static long long num(const cJSON *obj, const char *path, long long dflt)
{
  const cJSON *v = json_get(obj, path);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

static void one(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct render *r = ctx;
  if(r->rc)
    return;
  const char *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  if(!ns || !name)
    return;
  const char *phase = json_get_str(obj, "status.phase");
  switch(r->which) {
  case 0:
    for(int p = 0; p < MP_COUNT && !r->rc; p++)
      r->rc = strbuf_addf(r->sb, "godwit_migration_phase{namespace=\"%s\",name=\"%s\","
                          "phase=\"%s\"} %d\n", ns, name, mig_phase_name((enum mig_phase)p),
                          phase && !strcmp(phase, mig_phase_name((enum mig_phase)p)));
    break;
  case 1:
    if(cJSON_IsObject(json_get(obj, "spec.follow")))
      r->rc = strbuf_addf(r->sb, "godwit_migration_lag_bytes{namespace=\"%s\",name=\"%s\"} %lld\n",
                          ns, name, num(obj, "status.lagBytes", 0));
    break;
  case 2: {
    long long size = num(obj, "status.lastProbe.targetSizeBytes", -1);
    if(size >= 0)
      r->rc = strbuf_addf(r->sb, "godwit_migration_target_size_bytes{namespace=\"%s\","
                          "name=\"%s\"} %lld\n", ns, name, size);
    break;
  }
  default:
    r->rc = strbuf_addf(r->sb, "godwit_migration_attempts{namespace=\"%s\",name=\"%s\"} %lld\n",
                        ns, name, num(obj, "status.attempts", 0));
  }
}

gw_rc migration_metrics(void *ctx, struct strbuf *sb)
{
  struct informer *inf = ctx;
  static const struct {
    const char *name, *help;
  } rows[] = {
    { "godwit_migration_phase", "The Migration's phase: 1 for the current one." },
    { "godwit_migration_lag_bytes", "Replication lag in bytes at the last sample (live)." },
    { "godwit_migration_target_size_bytes",
      "Size of the target database at the last probe (pg_database_size)." },
    { "godwit_migration_attempts", "Worker attempts started." },
  };
  gw_rc rc = GW_OK;
  for(int i = 0; i < 4 && !rc; i++) {
    rc = metric_header(sb, rows[i].name, "gauge", rows[i].help);
    struct render r = { sb, i, GW_OK };
    if(!rc)
      informer_each(inf, NULL, one, &r);
    if(!rc)
      rc = r.rc;
  }
  return rc;
}
