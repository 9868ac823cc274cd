/* Validating: the pgcopydb version of a worker image that is not the runner's (Job
 * <name>-probe-<n>), then the preflight Job <name>-preflight-<n> and its report: Validated,
 * PreflightStarted, PreflightPassed, PreflightRemediated / PreflightWouldRemediate per tier,
 * PreflightFailed, and a dry run's DryRunSucceeded. See docs/api/migration-preflight.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "log.h"
#include "mig.h"
#include "strbuf.h"

static void add_list(cJSON *a, const char *flag, const cJSON *list)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    if(cJSON_IsString(it)) {
      mig_arg(a, flag);
      mig_arg(a, it->valuestring);
    }
  }
}

static const char *const version_command[] = { "pgcopydb", "version", "--json", NULL };

static void render_preflight(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  const cJSON *spec = json_get(m->obj, "spec");
  cJSON *a = mig_runner_spec(m, s, "preflight", attempt);
  if(m->live)
    mig_arg(a, "--follow");
  add_list(a, "--extension", json_get(spec, "clone.extensions"));
  const char *owner = json_get_str(spec, "clone.ownerAfterRestore");
  if(owner && *owner) {
    mig_arg(a, "--owner-after-restore");
    mig_arg(a, owner);
  }
  add_list(a, "--include-schema", json_get(spec, "clone.filters.includeOnlySchemas"));
  add_list(a, "--exclude-schema", json_get(spec, "clone.filters.excludeSchemas"));
  add_list(a, "--include-table", json_get(spec, "clone.filters.includeOnlyTables"));
  add_list(a, "--exclude-table", json_get(spec, "clone.filters.excludeTables"));
  if(m->dry_run)
    mig_arg(a, "--dry-run");
  if(m->live && *m->slot) {
    mig_arg(a, "--slot-name");
    mig_arg(a, m->slot);
  }
  if(m->version.known) {
    mig_arg(a, "--pgcopydb-version");
    mig_arg(a, m->version.text);
  }
  s->source = s->target = true;
  s->superuser = json_get_str(spec, "superuserSecretRef.name") != NULL;
}

static void render_version(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  s->step = "probe";
  s->attempt = attempt;
  s->image = mig_image(m);
  s->container = "probe";
  s->command = version_command;
  s->args = cJSON_CreateArray();
}

/* The worker image's pgcopydb version, when it is not the runner's image (which the preflight
 * asks itself). true: known, or not needed. */
static bool version_known(struct mig *m)
{
  const char *img = json_get_str(m->obj, "spec.worker.image");
  if(!img || !*img || !strcmp(img, m->o->runner_image) || m->version.known ||
     !strcmp(step_result(m->obj, "probe"), "Passed") ||
     !strcmp(step_result(m->obj, "probe"), "Failed"))
    return true;
  struct step_run r = { .step = "probe", .max_attempts = m->o->step_attempts };
  enum step_outcome o = mig_step_drive(m, &r, render_version, NULL);
  if(o == STEP_PASSED) {
    char *log = NULL;
    if(!rj_log_tail(&m->owner, r.v.pod, 50, &log)) {
      const char *brace = strchr(log, '{');
      cJSON *j = brace ? cJSON_Parse(brace) : NULL;
      const char *v = json_get_str(j, "pgcopydb");
      if(v && *v)
        edit_set_str(&m->ed, "pgcopydbVersion", v);
      cJSON_Delete(j);
    }
    free(log);
    step_record(&m->ed, "probe", r.attempt, "Passed", NULL);
  } else if(o == STEP_FAILED) {
    /* unknown: render the flags every version knows, and say so */
    step_record(&m->ed, "probe", r.attempt, "Failed", r.message);
    log_kv(LOG_WARN, "the worker image's pgcopydb version is unknown", "key", m->ctx->key,
           LOG_END);
  }
  step_run_release(&r);
  return false;
}

/* One Event per non-empty tier of report.<list>, listing its statements. */
static void tier_events(struct mig *m, const cJSON *report, const char *list, const char *reason,
                        const char *verb)
{
  static const char *const tiers[] = { "clone", "follow" };
  for(int t = 0; t < 2; t++) {
    char path[64];
    snprintf(path, sizeof(path), "%s.%s", list, tiers[t]);
    const cJSON *stmts = json_get(report, path);
    if(cJSON_GetArraySize(stmts) == 0)
      continue;
    struct strbuf sb;
    strbuf_init(&sb, 4096);
    gw_rc rc = strbuf_addf(&sb, "%s the %s tier through spec.superuserSecretRef:", verb,
                           tiers[t]);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, stmts)
    {
      const char *sql = json_get_str(it, "sql");
      const char *on = json_get_str(it, "on");
      if(sql && !rc)
        rc = strbuf_addf(&sb, "%s %s (%s)", i++ ? ";" : "", sql, on ? on : "target");
    }
    edit_event_if_cond(&m->ed, C_VALIDATED, EV_NORMAL, reason, "%s", strbuf_str(&sb));
    strbuf_release(&sb);
  }
}

static int list_len(const cJSON *report, const char *path)
{
  int n = 0;
  const char *tiers[] = { "clone", "follow" };
  for(int t = 0; t < 2; t++) {
    char p[64];
    snprintf(p, sizeof(p), "%s.%s", path, tiers[t]);
    n += cJSON_GetArraySize(json_get(report, p));
  }
  return n;
}

void mig_spec_valid(struct mig *m, const char *summary, const char *plugin)
{
  edit_cond(&m->ed, C_VALIDATED, COND_TRUE, "SpecValid",
           "the spec renders into worker Jobs and the preflight passed: %s%s%s",
           summary ? summary : "every check passed",
           plugin && *plugin ? "; changes are decoded with " : "", plugin ? plugin : "");
}

static void passed(struct mig *m, const struct step_run *r)
{
  const cJSON *rep = r->v.report;
  const char *summary = json_get_str(rep, "summary");
  const char *ver = json_get_str(rep, "pgcopydb.version");
  if(ver && *ver && !json_get_str(m->obj, "spec.worker.image"))
    edit_set_str(&m->ed, "pgcopydbVersion", ver);
  const cJSON *checks = json_get(rep, "checks.passed");
  edit_set_int(&m->ed, "preflight.checks", cJSON_IsNumber(checks) ? (long long)checks->valuedouble : 0);
  edit_set_int(&m->ed, "preflight.remediated",
              list_len(rep, m->dry_run ? "wouldRemediate" : "remediated"));
  step_record(&m->ed, "preflight", r->attempt, "Passed", summary ? summary : "passed");
  /* the plugin the preflight tried for real; the worker decodes with it */
  const char *plugin = m->live ? json_get_str(rep, "outputPlugin") : NULL;
  if(plugin && *plugin)
    edit_set_str(&m->ed, "outputPlugin", plugin);
  mig_spec_valid(m, summary, plugin);
  if(m->dry_run)
    tier_events(m, rep, "wouldRemediate", "PreflightWouldRemediate", "would grant");
  else
    tier_events(m, rep, "remediated", "PreflightRemediated", "granted");
  edit_event_if_cond(&m->ed, C_VALIDATED, EV_NORMAL, "PreflightPassed", "%s",
                    summary ? summary : "every preflight check passed");
  if(m->dry_run) {
    edit_event_if_cond(&m->ed, C_VALIDATED, EV_NORMAL, "DryRunSucceeded",
                      "the dry run's preflight passed; no worker Job was created and no data "
                      "moved");
    mig_complete(m, "DryRunSucceeded",
                 "dry run: the preflight passed (%s); no worker Job was created and no data "
                 "moved", summary ? summary : "every check passed");
    return;
  }
  edit_phase(&m->ed, MP_CLONING);
  edit_set_int(&m->ed, "attempts", 1);
  edit_set_bool(&m->ed, "copyingDataSeen", false);
  if(m->live)
    edit_set_str(&m->ed, "slotName", m->slot);
  edit_cond(&m->ed, C_CLONE, COND_FALSE, "CloneRunning", "attempt 1 of %d is starting",
           m->backoff_limit + 1);
  edit_requeue(&m->ed, 1);
}

gw_rc mig_step_validating(struct mig *m)
{
  if(!version_known(m))
    return GW_OK;
  struct step_run r = { .step = "preflight", .max_attempts = m->o->step_attempts,
                        .started_reason = "PreflightStarted",
                        .started_fmt = "preflight Job attempt %d created" };
  enum step_outcome o = mig_step_drive(m, &r, render_preflight, NULL);
  if(m->phase == MP_PENDING && (o == STEP_PASSED || o == STEP_FAILED)) {
    /* The pass that writes Validating found the Job already finished: a write of the pass that
     * created it was lost (a 500, a conflict, a restart). Validating is stored first and the
     * verdict read on the next pass, so every Migration shows the phase to a watcher. */
    edit_event_if_written(&m->ed, EV_NORMAL, r.started_reason, r.started_fmt, r.attempt);
    edit_cond(&m->ed, C_VALIDATED, COND_UNKNOWN, "PreflightRunning",
              "the preflight Job %s has finished; its verdict is read next", r.v.name);
    edit_requeue(&m->ed, 1);
    step_run_release(&r);
    return GW_OK;
  }
  switch(o) {
  case STEP_WAIT:
  case STEP_ERROR:
    /* PreflightRunning; a Pod that cannot start says why, kubelet-style */
    if(*r.v.waiting)
      edit_cond(&m->ed, C_VALIDATED, COND_UNKNOWN, "PreflightRunning",
               "preflight Job %s: its Pod cannot start: %s", r.v.name, r.v.waiting);
    else
      edit_cond(&m->ed, C_VALIDATED, COND_UNKNOWN, "PreflightRunning",
               "the preflight Job %s-preflight-%d is running", m->name, r.attempt);
    break;
  case STEP_PASSED:
    passed(m, &r);
    break;
  case STEP_FAILED:
    step_record(&m->ed, "preflight", r.attempt, "Failed", r.message);
    edit_cond(&m->ed, C_VALIDATED, COND_FALSE, "PreflightFailed", "%s", r.message);
    mig_fail(m, "PreflightFailed", "the preflight failed before any data moved: %s", r.message);
    break;
  }
  step_run_release(&r);
  return GW_OK;
}
