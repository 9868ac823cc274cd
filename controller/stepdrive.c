/* stepdrive.c: a runner step driven to a verdict (stepdrive.h). */
#include "stepdrive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json.h"
#include "redact.h"

#define STEP_MESSAGE_MAX 1000   /* bytes of status.steps.<step>.message */
#define STEP_DELETING_POLL_MS 1000 /* a Job being deleted goes within its Pods' grace period */

int step_attempt(const cJSON *obj, const char *step)
{
  char p[96];
  snprintf(p, sizeof(p), "status.steps.%s.attempt", step);
  const cJSON *v = json_get(obj, p);
  return cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
}

const char *step_result(const cJSON *obj, const char *step)
{
  char p[96];
  snprintf(p, sizeof(p), "status.steps.%s.result", step);
  const char *r = json_get_str(obj, p);
  return r ? r : "";
}

void step_record(struct status_edit *ed, const char *step, int attempt, const char *result,
                 const char *message)
{
  char p[64];
  snprintf(p, sizeof(p), "steps.%s.attempt", step);
  edit_set_int(ed, p, attempt);
  snprintf(p, sizeof(p), "steps.%s.result", step);
  edit_set_str(ed, p, result);
  snprintf(p, sizeof(p), "steps.%s.message", step);
  if(message) {
    char *clean = redact_cut(message, STEP_MESSAGE_MAX, NULL, 0, NULL);
    if(clean)
      edit_set_str(ed, p, clean);
    else
      ed->oom = true;
    free(clean);
  } else {
    edit_unset(ed, p);
  }
}

void step_run_release(struct step_run *r)
{
  job_view_release(&r->v);
}

static void name_of(const struct step_host *h, const char *step, int attempt, char *buf,
                    size_t len)
{
  if(h->job_name)
    h->job_name(h->kind, step, attempt, buf, len);
  else
    rj_name(h->owner, step, attempt, buf, len);
}

static enum step_outcome error(const struct step_host *h, struct step_run *r, const char *what,
                               gw_rc rc)
{
  snprintf(r->message, sizeof(r->message), "cannot %s Job %s: %s", what, r->v.name,
           gw_strerror(rc));
  edit_requeue(h->ed, STEP_ERROR_RETRY_MS);
  return STEP_ERROR;
}

/* The Job of the current attempt, not ended yet. recorded: the attempt is recorded in this
 * pass (its Job may exist from a pass whose status write was lost). */
static enum step_outcome waiting(const struct step_host *h, struct step_run *r, bool recorded)
{
  switch(r->v.state) {
  case JOB_ABSENT: {
    gw_rc rc = r->create(h->kind, r->ctx, r->attempt, &r->created);
    if(rc)
      return error(h, r, "create", rc);
    snprintf(r->message, sizeof(r->message), "Job %s created", r->v.name);
    break;
  }
  case JOB_DELETING:
    snprintf(r->message, sizeof(r->message), "Job %s is being deleted", r->v.name);
    edit_requeue(h->ed, STEP_DELETING_POLL_MS);
    return STEP_WAIT;
  default:
    /* a Job without a Pod: why it has none, as its FailedCreate Event says */
    if(rj_refusal_due(&r->v)) {
      char refused[768] = "";
      if(!rj_job_refusal(h->owner->kube, h->owner->refusals, h->owner->ns, r->v.name, refused, sizeof(refused)) &&
         *refused)
        snprintf(r->v.waiting, sizeof(r->v.waiting), "FailedCreate: %s", refused);
    }
    if(*r->v.waiting)
      snprintf(r->message, sizeof(r->message), "Job %s: pod cannot start: %.900s", r->v.name,
               r->v.waiting);
    else
      snprintf(r->message, sizeof(r->message), "Job %s is running", r->v.name);
    break;
  }
  /* the started Event goes with the write that records the attempt: a pass that created the
   * Job and lost its write (a 500, a restart) tells it on the pass that records it */
  if(r->started_reason && recorded)
    edit_event_if_written(h->ed, EV_NORMAL, r->started_reason, r->started_fmt, r->attempt);
  else if(r->started_reason && r->created)
    edit_event(h->ed, EV_NORMAL, r->started_reason, r->started_fmt, r->attempt);
  edit_requeue(h->ed, h->poll_ms);
  return STEP_WAIT;
}

enum step_outcome step_drive(const struct step_host *h, struct step_run *r)
{
  r->attempt = step_attempt(h->obj, r->step);
  r->created = false;
  r->retried = false;
  r->message[0] = '\0';
  memset(&r->v, 0, sizeof(r->v));
  bool recorded = r->attempt <= 0;
  if(recorded) {
    /* recorded and created in one pass: the Job's name is deterministic, so if the write is
     * lost (a conflict, a restart) a later pass records it again and finds the Job
     * (AlreadyExists), never a second one */
    step_record(h->ed, r->step, 1, "Running", NULL);
    r->attempt = 1;
  }
  char name[96];
  name_of(h, r->step, r->attempt, name, sizeof(name));
  gw_rc rc = rj_get(h->owner, name, &r->v);
  if(rc)
    return error(h, r, "read", rc);
  if(r->v.state != JOB_SUCCEEDED && r->v.state != JOB_FAILED)
    return waiting(h, r, recorded);
  const char *result = job_report_result(&r->v);
  job_report_message(&r->v, r->message, sizeof(r->message));
  if(r->v.state == JOB_SUCCEEDED && (!result || !strcmp(result, "Passed")))
    return STEP_PASSED;
  if(result && !strcmp(result, "Failed"))
    return STEP_FAILED;
  /* transient, or no verdict at all: another attempt, within the budget */
  if(r->attempt >= r->max_attempts) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%d attempts without a verdict; last: %.900s", r->attempt,
             r->message);
    snprintf(r->message, sizeof(r->message), "%.1000s", tmp);
    return STEP_FAILED;
  }
  step_record(h->ed, r->step, r->attempt + 1, "Running", NULL);
  long backoff = 1000L << (r->attempt < 5 ? r->attempt : 5);
  edit_requeue(h->ed, backoff < STEP_BACKOFF_MAX_MS ? backoff : STEP_BACKOFF_MAX_MS);
  r->retried = true;
  return STEP_WAIT;
}
