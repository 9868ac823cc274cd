/* The step "compare" (phase Verifying): spec.verify.compare as the compare Job
 * <name>-compare-<n> (VerificationStarted, Verified=Unknown VerificationRunning), then Verified
 * ComparePassed, SchemaMismatch or DataMismatch with the Events Verified / VerificationMismatch,
 * or Unknown VerificationInconclusive when it gave no verdict. A mismatch does not fail the
 * Migration: Complete follows either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "mig.h"

static bool wants(const struct mig *m, const char *check)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, json_get(m->obj, "spec.verify.compare"))
    if(cJSON_IsString(it) && !strcmp(it->valuestring, check))
      return true;
  return false;
}

static void render(struct mig *m, int attempt, struct job_spec *s, void *ctx)
{
  (void)ctx;
  cJSON *a = mig_runner_spec(m, s, "compare", attempt);
  if(wants(m, "schema"))
    mig_arg(a, "--schema");
  if(wants(m, "data"))
    mig_arg(a, "--data");
  /* what the copy covered (the work dir's lists): tables the filters left out are no
   * difference */
  mig_arg(a, "--dir");
  mig_arg(a, MIG_WORK_DIR);
  s->source = s->target = s->workdir = true;
}

/* The tables of a data compare that differ, "a.b, c.d". */
static void differing(const cJSON *report, char *buf, size_t len)
{
  buf[0] = '\0';
  size_t used = 0;
  int n = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, json_get(report, "data.tables"))
  {
    const cJSON *sr = json_get(t, "sourceRows"), *tr = json_get(t, "targetRows");
    const char *sc = json_get_str(t, "sourceChecksum"), *tc = json_get_str(t, "targetChecksum");
    bool same = json_equal(sr, tr) && ((!sc && !tc) || (sc && tc && !strcmp(sc, tc)));
    const cJSON *eq = json_get(t, "equal");
    if(cJSON_IsBool(eq))
      same = cJSON_IsTrue(eq);
    if(same)
      continue;
    const char *name = json_get_str(t, "table");
    if(n++ < MIG_LIST_DIFFERING && name && used + strlen(name) + 3 < len)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
  }
}

/* The first schema differences of the report, "a; b; c" (and how many more), into buf. */
static void schema_differences(const cJSON *report, char *buf, size_t len)
{
  buf[0] = '\0';
  size_t used = 0;
  int shown = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, json_get(report, "schema.differences"))
  {
    const char *s = cJSON_GetStringValue(d);
    if(!s || shown >= MIG_LIST_SCHEMA_DIFFS || used + strlen(s) + 3 >= len)
      break;
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "; " : "", s);
    shown++;
  }
  const cJSON *total = json_get(report, "schema.differencesTotal");
  if(shown && cJSON_IsNumber(total) && total->valuedouble > shown && used + 24 < len)
    snprintf(buf + used, len - used, "; %d more", (int)total->valuedouble - shown);
}

/* The compare ended without a verdict (it could not read a side, its attempts were spent): the
 * state is unknown, and no Job runs any more, so not VerificationRunning. The reason is
 * godwit's, beyond seed 000's four (docs/api/migration.md "Verification"). */
static void inconclusive(struct mig *m, const struct step_run *r)
{
  edit_cond(&m->ed, C_VERIFIED, COND_UNKNOWN, "VerificationInconclusive",
            "the compare gave no verdict (Job %s-compare-%d): %s. The copy finished but was "
            "not checked: compare source and target by hand before relying on the target",
            m->name, r->attempt, r->message);
  edit_event_if_cond(&m->ed, C_VERIFIED, EV_WARNING, "VerificationInconclusive",
                     "the compare gave no verdict; see the logs of Job %s-compare-%d", m->name,
                     r->attempt);
}

enum step_outcome mig_step_compare(struct mig *m)
{
  struct step_run r = { .step = "compare", .max_attempts = m->o->step_attempts,
                        .started_reason = "VerificationStarted",
                        .started_fmt = "compare Job attempt %d created" };
  enum step_outcome o = mig_step_drive(m, &r, render, NULL);
  const cJSON *rep = r.v.report;
  if(o == STEP_WAIT || o == STEP_ERROR) {
    edit_cond(&m->ed, C_VERIFIED, COND_UNKNOWN, "VerificationRunning",
             "the compare Job %s-compare-%d is running", m->name, r.attempt);
  } else if(o == STEP_PASSED || rep) {
    const cJSON *schema = json_get(rep, "schema.equal"), *data = json_get(rep, "data.equal");
    bool schema_bad = cJSON_IsFalse(schema), data_bad = cJSON_IsFalse(data);
    step_record(&m->ed, "compare", r.attempt, o == STEP_PASSED ? "Passed" : "Failed", r.message);
    if(schema_bad) {
      char diffs[700];
      schema_differences(rep, diffs, sizeof(diffs));
      edit_cond(&m->ed, C_VERIFIED, COND_FALSE, "SchemaMismatch",
               "compare schema reported differences between source and target%s%s; details "
               "are in the compare Job's log (%s-compare-%d)", *diffs ? ": " : "", diffs,
               m->name, r.attempt);
      edit_event_if_cond(&m->ed, C_VERIFIED, EV_WARNING, "VerificationMismatch",
                        "compare schema reported differences; see the logs of Job "
                        "%s-compare-%d", m->name, r.attempt);
    } else if(data_bad) {
      char tables[600];
      differing(rep, tables, sizeof(tables));
      edit_cond(&m->ed, C_VERIFIED, COND_FALSE, "DataMismatch",
               "compare data reported differences%s%s%s; details are in the compare Job's log "
               "(%s-compare-%d)", *tables ? " in " : "", tables, schema ? " (the schema matched)"
               : "", m->name, r.attempt);
      edit_event_if_cond(&m->ed, C_VERIFIED, EV_WARNING, "VerificationMismatch",
                        "compare data reported differences%s%s; see the logs of Job "
                        "%s-compare-%d", *tables ? " in " : "", tables, m->name, r.attempt);
    } else if(o == STEP_PASSED) {
      edit_cond(&m->ed, C_VERIFIED, COND_TRUE, "ComparePassed",
               "every requested compare (%s%s%s) found source and target matching",
               wants(m, "schema") ? "schema" : "", wants(m, "schema") && wants(m, "data")
               ? ", " : "", wants(m, "data") ? "data" : "");
      edit_event_if_cond(&m->ed, C_VERIFIED, EV_NORMAL, "Verified",
                        "compare found source and target matching");
    } else {
      /* a failure that is not a mismatch: no verdict, which is not a match either */
      inconclusive(m, &r);
    }
    mig_complete(m, "MigrationSucceeded", "the migration finished%s",
                 schema_bad || data_bad ? "; compare reported differences (see Verified)"
                                        : "");
  } else {
    step_record(&m->ed, "compare", r.attempt, "Failed", r.message);
    inconclusive(m, &r);
    mig_complete(m, "MigrationSucceeded",
                 "the migration finished; the compare gave no verdict (see Verified)");
  }
  step_run_release(&r);
  return STEP_WAIT; /* Completed once written */
}
