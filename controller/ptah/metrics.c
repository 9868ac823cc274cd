/* Per-PtahMigration series on the controller's /metrics, from the informer's cache:
 *   godwit_ptahmigration_phase{namespace,name,phase}          1 for the current phase, else 0
 *   godwit_ptahmigration_current_version{namespace,name}      status.currentVersion
 *   godwit_ptahmigration_latest_version{namespace,name}       status.latestVersion
 *   godwit_ptahmigration_lock_release_owed{namespace,name}    1 while status.lockReleaseOwed
 * The alerts of manifests/monitoring/prometheusrule.yaml read them (PtahMigrationRunUncertain:
 * a person must settle the run). Labels are names and a closed set of phases, nothing else. */
#include <stdio.h>
#include <string.h>

#include "../informer.h"
#include "../metrics.h"
#include "json.h"
#include "pm.h"
#include "ps.h"
#include "strbuf.h"

struct render {
  struct strbuf *sb;
  int which;
  gw_rc rc;
};

static void one(void *ctx, const char *key, const cJSON *obj)
{
  (void)key;
  struct render *r = ctx;
  const char *ns = json_get_str(obj, "metadata.namespace");
  const char *name = json_get_str(obj, "metadata.name");
  if(r->rc || !ns || !name)
    return;
  const cJSON *cur = json_get(obj, "status.currentVersion");
  const cJSON *latest = json_get(obj, "status.latestVersion");
  switch(r->which) {
  case 1:
    if(cJSON_IsNumber(cur))
      r->rc = strbuf_addf(r->sb, "godwit_ptahmigration_current_version{namespace=\"%s\","
                          "name=\"%s\"} %.0f\n", ns, name, cur->valuedouble);
    break;
  case 2:
    if(cJSON_IsNumber(latest))
      r->rc = strbuf_addf(r->sb, "godwit_ptahmigration_latest_version{namespace=\"%s\","
                          "name=\"%s\"} %.0f\n", ns, name, latest->valuedouble);
    break;
  default:
    r->rc = strbuf_addf(r->sb, "godwit_ptahmigration_lock_release_owed{namespace=\"%s\","
                        "name=\"%s\"} %d\n", ns, name,
                        cJSON_IsObject(json_get(obj, "status.lockReleaseOwed")));
  }
}

gw_rc pm_metrics(void *ctx, struct strbuf *sb)
{
  struct informer *inf = ctx;
  static const struct {
    const char *name, *help;
  } rows[] = {
    { NULL, NULL }, /* the phase: metric_phase_gauge */
    { "godwit_ptahmigration_current_version",
      "The highest version the history table records (status.currentVersion)." },
    { "godwit_ptahmigration_latest_version", "The highest version in the ConfigMap." },
    { "godwit_ptahmigration_lock_release_owed",
      "1 while a dead run's session may still hold the database lock (TargetLockReleaseOwed)." },
  };
  gw_rc rc = metric_phase_gauge(sb, inf, "godwit_ptahmigration_phase",
                                "The PtahMigration's phase: 1 for the current one.", &pm_phases);
  for(int i = 1; i < 4 && !rc; i++) {
    rc = metric_header(sb, rows[i].name, "gauge", rows[i].help);
    struct render r = { sb, i, GW_OK };
    if(!rc)
      informer_each(inf, NULL, one, &r);
    if(!rc)
      rc = r.rc;
  }
  return rc;
}

/* Per-PtahSchema: godwit_ptahschema_phase{namespace,name,phase}, 1 for the current phase. */
gw_rc ps_metrics(void *ctx, struct strbuf *sb)
{
  return metric_phase_gauge(sb, ctx, "godwit_ptahschema_phase",
                            "The PtahSchema's phase: 1 for the current one.", &ps_phases);
}
