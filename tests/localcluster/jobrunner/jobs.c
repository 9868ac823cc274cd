/* jobs.c: the Job controller (pkg/controller/job, as in Kubernetes 1.33).
 *
 * Each pass, for each Job: count its Pods (owned through a controller ownerReference), decide
 * whether it is finished, create or delete Pods, and write the status when it changed.
 *   - succeeded/failed only grow: a Pod is counted once, when it is seen terminal or when it
 *     vanishes before reaching a terminal phase (then as failed, as job-tracking finalizers
 *     make real clusters count it), except Pods this controller removed for suspension.
 *   - failed > backoffLimit (restartPolicy Never), or the sum of restartCounts of active Pods
 *     reaching backoffLimit (OnFailure): FailureTarget, then Failed, reason
 *     BackoffLimitExceeded; activeDeadlineSeconds past status.startTime: the same with
 *     DeadlineExceeded. Active Pods are deleted first; Failed is added once none is left.
 *   - enough successes: SuccessCriteriaMet, then Complete (reason CompletionsReached) and
 *     completionTime once no Pod is terminating.
 *   - a new Pod after failures waits base * 2^(failures-1) (--backoff-base-ms, capped at
 *     --backoff-max-ms), as the controller's 10 s doubling to 6 min; a refused Pod creation
 *     leaves a FailedCreate Event and is retried with the same backoff.
 *   - suspend deletes active Pods (not counted) with Suspended=True; resume resets startTime.
 *   - ttlSecondsAfterFinished deletes a finished Job (foreground), as the TTL controller.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "json.h"
#include "log.h"

struct strset {
  char **v;
  size_t n;
};

static bool set_has(const struct strset *s, const char *x)
{
  for(size_t i = 0; i < s->n; i++)
    if(!strcmp(s->v[i], x))
      return true;
  return false;
}

static void set_add(struct strset *s, const char *x)
{
  if(set_has(s, x))
    return;
  char **v = realloc(s->v, (s->n + 1) * sizeof(*v));
  if(!v)
    return;
  s->v = v;
  if((s->v[s->n] = strdup(x)))
    s->n++;
}

static void set_del(struct strset *s, const char *x)
{
  for(size_t i = 0; i < s->n; i++)
    if(!strcmp(s->v[i], x)) {
      free(s->v[i]);
      s->v[i] = s->v[--s->n];
      return;
    }
}

static void set_release(struct strset *s)
{
  for(size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
  s->v = NULL;
  s->n = 0;
}

struct job_rt {
  char uid[64];
  long succeeded, failed;
  struct strset counted;  /* terminal Pods already in the counters */
  struct strset active;   /* Pods seen active, to notice one vanishing */
  struct strset deleted;  /* Pods this controller deleted */
  struct strset nocount;  /* ... for suspension: never counted */
  int failures;           /* failed Pods since the last success */
  int64_t last_failure_ms;
  int create_failures;
  int64_t next_create_ms;
  bool seen;
  struct job_rt *next;
};

struct jr_jobctl {
  struct job_rt *jobs;
};

gw_rc jobctl_init(struct jr *jr)
{
  jr->jobctl = calloc(1, sizeof(*jr->jobctl));
  return jr->jobctl ? GW_OK : GW_ENOMEM;
}

static void rt_free(struct job_rt *r)
{
  set_release(&r->counted);
  set_release(&r->active);
  set_release(&r->deleted);
  set_release(&r->nocount);
  free(r);
}

void jobctl_free(struct jr *jr)
{
  if(!jr->jobctl)
    return;
  while(jr->jobctl->jobs) {
    struct job_rt *r = jr->jobctl->jobs;
    jr->jobctl->jobs = r->next;
    rt_free(r);
  }
  free(jr->jobctl);
  jr->jobctl = NULL;
}

void job_event(struct jr *jr, const cJSON *job, const char *type, const char *reason,
               const char *fmt, const char *arg)
{
  jr_event(jr, job, "Job", "batch/v1", type, "job-controller", reason, fmt, arg);
}

static bool is_true(const cJSON *conds, const char *type)
{
  const char *s = json_get_str(jr_condition(conds, type), "status");
  return s && !strcmp(s, "True");
}

static struct job_rt *rt_get(struct jr_jobctl *jc, const cJSON *job, const cJSON *pods)
{
  const char *uid = json_get_str(job, "metadata.uid");
  for(struct job_rt *r = jc->jobs; r; r = r->next)
    if(!strcmp(r->uid, uid))
      return r;
  struct job_rt *r = calloc(1, sizeof(*r));
  if(!r)
    return NULL;
  jr_fmt(r->uid, sizeof(r->uid), "%s", uid);
  /* First sight (also after a restart): the status already counts the terminal Pods. */
  r->succeeded = jr_json_long(job, "status.succeeded", 0);
  r->failed = jr_json_long(job, "status.failed", 0);
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    const char *phase = json_get_str(p, "status.phase");
    if(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
      set_add(&r->counted, json_get_str(p, "metadata.uid"));
  }
  r->next = jc->jobs;
  jc->jobs = r;
  return r;
}

/* The Job's Pods: a new array of references into pods. */
static cJSON *owned_pods(const cJSON *pods, const char *uid)
{
  cJSON *a = cJSON_CreateArray();
  const cJSON *p;
  cJSON_ArrayForEach(p, pods)
  {
    if(jr_owned_by(p, uid))
      cJSON_AddItemReferenceToArray(a, (cJSON *)p);
  }
  return a;
}

static bool pod_ready(const cJSON *pod)
{
  return is_true(json_get(pod, "status.conditions"), "Ready");
}

/* Counts and classifies the Job's Pods into ctx. */
static void count_pods(struct job_ctx *x)
{
  struct job_rt *r = x->rt;
  const cJSON *p;
  struct strset present = { 0 };
  cJSON_ArrayForEach(p, x->pods)
  {
    const char *uid = json_get_str(p, "metadata.uid");
    const char *phase = json_get_str(p, "status.phase");
    if(!uid)
      continue;
    set_add(&present, uid);
    bool succeeded = phase && !strcmp(phase, "Succeeded");
    bool failed = phase && !strcmp(phase, "Failed");
    if(succeeded || failed) {
      set_del(&r->active, uid);
      if(set_has(&r->counted, uid))
        continue;
      set_add(&r->counted, uid);
      if(set_has(&r->nocount, uid))
        continue;
      if(succeeded) {
        r->succeeded++;
        x->new_succeeded++;
      } else {
        r->failed++;
        x->new_failed++;
      }
      continue;
    }
    set_add(&r->active, uid);
    if(jr_json_has(p, "metadata.deletionTimestamp") || set_has(&r->deleted, uid)) {
      x->terminating++;
      continue;
    }
    cJSON_AddItemReferenceToArray(x->active, (cJSON *)p);
    x->ready += pod_ready(p);
    const cJSON *cs;
    cJSON_ArrayForEach(cs, json_get(p, "status.containerStatuses"))
      x->restarts += jr_json_long(cs, "restartCount", 0);
    cJSON_ArrayForEach(cs, json_get(p, "status.initContainerStatuses"))
      x->restarts += jr_json_long(cs, "restartCount", 0);
  }
  /* Pods gone before reaching a terminal phase count as failed. */
  for(size_t i = 0; i < r->active.n;) {
    const char *uid = r->active.v[i];
    if(set_has(&present, uid)) {
      i++;
      continue;
    }
    if(!set_has(&r->counted, uid) && !set_has(&r->nocount, uid)) {
      set_add(&r->counted, uid);
      r->failed++;
      x->new_failed++;
    }
    set_del(&r->deleted, uid);
    set_del(&r->active, uid); /* moves the last entry to i */
  }
  set_release(&present);
  if(x->new_failed) {
    r->failures += (int)x->new_failed;
    r->last_failure_ms = jr_mono_ms();
  } else if(x->new_succeeded) {
    r->failures = 0;
  }
}

static void delete_pods(struct jr *jr, struct job_ctx *x, const cJSON *list, long n,
                        bool count)
{
  const cJSON *p;
  cJSON_ArrayForEach(p, list)
  {
    if(n-- <= 0)
      break;
    const char *uid = json_get_str(p, "metadata.uid");
    const char *name = json_get_str(p, "metadata.name");
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_delete(jr->k, &KUBE_PODS, json_get_str(p, "metadata.namespace"), name, NULL,
                           NULL, &st);
    if(!rc || rc == GW_ENOTFOUND) {
      set_add(&x->rt->deleted, uid);
      if(!count)
        set_add(&x->rt->nocount, uid);
      x->terminating++;
      x->deleted_now++;
      if(!rc)
        job_event(jr, x->job, "Normal", "SuccessfulDelete", "Deleted pod: %s", name);
    } else {
      job_event(jr, x->job, "Warning", "FailedDelete", "Error deleting: %s",
                st.message[0] ? st.message : gw_strerror(rc));
    }
    kube_status_release(&st);
  }
}

static void finished(struct jr *jr, const cJSON *job)
{
  long ttl = jr_json_long(job, "spec.ttlSecondsAfterFinished", -1);
  if(ttl < 0 || jr_json_has(job, "metadata.deletionTimestamp"))
    return;
  const cJSON *conds = json_get(job, "status.conditions");
  const cJSON *c = is_true(conds, "Complete") ? jr_condition(conds, "Complete")
                                              : jr_condition(conds, "Failed");
  time_t at = jr_parse_time(json_get_str(c, "lastTransitionTime"));
  if(at < 0)
    return;
  time_t due = at + ttl, now = time(NULL);
  if(now < due) {
    jr_wake_at(jr, jr_mono_ms() + (int64_t)(due - now) * 1000);
    return;
  }
  struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_FOREGROUND, .grace_period_s = -1,
                                .precondition_uid = json_get_str(job, "metadata.uid") };
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_delete(jr->k, &KUBE_JOBS, json_get_str(job, "metadata.namespace"),
                         json_get_str(job, "metadata.name"), &o, NULL, &st);
  if(rc && rc != GW_ENOTFOUND && rc != GW_ECONFLICT)
    log_kv(LOG_WARN, "finished job not deleted", "job", json_get_str(job, "metadata.name"),
           "error", st.message[0] ? st.message : gw_strerror(rc), LOG_END);
  kube_status_release(&st);
}

static void sync_job(struct jr *jr, const cJSON *job, const cJSON *pods)
{
  const cJSON *conds = json_get(job, "status.conditions");
  if(is_true(conds, "Complete") || is_true(conds, "Failed")) {
    finished(jr, job);
    return;
  }
  struct job_ctx x = { .job = job };
  x.pods = owned_pods(pods, json_get_str(job, "metadata.uid"));
  x.rt = rt_get(jr->jobctl, job, x.pods);
  if(!x.rt) {
    cJSON_Delete(x.pods);
    return;
  }
  x.rt->seen = true;
  x.active = cJSON_CreateArray();
  count_pods(&x);
  job_decide(jr, &x);
  if(x.finish_failed) {
    delete_pods(jr, &x, x.active, cJSON_GetArraySize(x.active), true);
  } else if(!x.success && !jr_json_has(job, "metadata.deletionTimestamp")) {
    if(x.suspended)
      delete_pods(jr, &x, x.active, cJSON_GetArraySize(x.active), false);
    else
      job_manage(jr, &x);
  }
  job_write_status(jr, &x);
  cJSON_Delete(x.active);
  cJSON_Delete(x.pods);
}

void jobctl_sync(struct jr *jr, const cJSON *jobs, const cJSON *pods)
{
  for(struct job_rt *r = jr->jobctl->jobs; r; r = r->next)
    r->seen = false;
  const cJSON *job;
  cJSON_ArrayForEach(job, jobs)
  {
    if(json_get_str(job, "metadata.uid"))
      sync_job(jr, job, pods);
  }
  /* Forget Jobs that are gone, and finished ones (their counters are in their status). */
  for(struct job_rt **pp = &jr->jobctl->jobs; *pp;) {
    struct job_rt *r = *pp;
    if(!r->seen) {
      *pp = r->next;
      rt_free(r);
      continue;
    }
    pp = &r->next;
  }
}

void job_track_created(struct job_ctx *x, const cJSON *pod)
{
  const char *uid = json_get_str(pod, "metadata.uid");
  if(uid)
    set_add(&x->rt->active, uid);
}

int64_t job_backoff_until(const struct job_ctx *x, const struct jr *jr)
{
  int64_t until = 0;
  if(x->rt->failures > 0)
    until = x->rt->last_failure_ms + jr_backoff_ms(jr, x->rt->failures, jr->cfg->backoff_max_ms);
  if(x->rt->next_create_ms > until)
    until = x->rt->next_create_ms;
  return until;
}

void job_create_failed(struct job_ctx *x, const struct jr *jr)
{
  x->rt->create_failures++;
  x->rt->next_create_ms =
    jr_mono_ms() + jr_backoff_ms(jr, x->rt->create_failures, jr->cfg->backoff_max_ms);
}

void job_create_succeeded(struct job_ctx *x)
{
  x->rt->create_failures = 0;
  x->rt->next_create_ms = 0;
}

long job_counted(const struct job_ctx *x, bool succeeded)
{
  return succeeded ? x->rt->succeeded : x->rt->failed;
}
