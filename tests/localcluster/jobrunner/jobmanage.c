/* jobmanage.c: what the Job controller decides for one Job in one pass (finished or not), the
 * Pods it creates (from the template, named <job>-<5 random> by generateName, labelled and owned
 * as kube-controller-manager does), and the status it writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "json.h"
#include "log.h"

#define INDEX_KEY "batch.kubernetes.io/job-completion-index"
#define MAX_INDEXES 10000

static const char *str_or(const char *s, const char *dflt)
{
  return s ? s : dflt;
}

static bool cond_true(const cJSON *conds, const char *type)
{
  const char *s = json_get_str(jr_condition(conds, type), "status");
  return s && !strcmp(s, "True");
}

/* Sets (or adds) a condition in x->conds; the transition time moves only with the status. */
static bool cond_set(struct job_ctx *x, const char *type, const char *status, const char *reason,
                     const char *message)
{
  const cJSON *old = jr_condition(x->conds, type);
  const char *os = json_get_str(old, "status");
  if(old && os && !strcmp(os, status) && !strcmp(str_or(json_get_str(old, "reason"), ""), reason) &&
     !strcmp(str_or(json_get_str(old, "message"), ""), message))
    return false;
  cJSON *tmp = cJSON_CreateArray();
  jr_set_condition(tmp, x->conds, type, status, reason, message, true);
  cJSON *c = cJSON_DetachItemFromArray(tmp, 0);
  cJSON_Delete(tmp);
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, x->conds)
  {
    if(it == old) {
      cJSON_ReplaceItemInArray(x->conds, i, c);
      return true;
    }
    i++;
  }
  cJSON_AddItemToArray(x->conds, c);
  return true;
}

static long spec_parallelism(const cJSON *job)
{
  return jr_json_long(job, "spec.parallelism", 1);
}

/* spec.completions, -1 for a work queue (parallelism set, completions not), as defaulting
 * leaves it. */
static long spec_completions(const cJSON *job)
{
  if(jr_json_has(job, "spec.completions"))
    return jr_json_long(job, "spec.completions", 1);
  return jr_json_has(job, "spec.parallelism") ? -1 : 1;
}

static bool indexed(const cJSON *job)
{
  const char *m = json_get_str(job, "spec.completionMode");
  return m && !strcmp(m, "Indexed");
}

static long pod_index(const cJSON *pod)
{
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(json_get(pod, "metadata.annotations"),
                                                    INDEX_KEY);
  if(!cJSON_IsString(a))
    a = cJSON_GetObjectItemCaseSensitive(json_get(pod, "metadata.labels"), INDEX_KEY);
  if(!cJSON_IsString(a) || !*a->valuestring)
    return -1;
  char *end;
  long v = strtol(a->valuestring, &end, 10);
  return *end || v < 0 ? -1 : v;
}

/* "1,3-5,7" into set[0..n). */
static void parse_indexes(const char *s, bool *set, long n)
{
  while(s && *s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if(*end == '-')
      b = strtol(end + 1, &end, 10);
    for(long i = a; i <= b && i < n; i++)
      if(i >= 0)
        set[i] = true;
    s = *end == ',' ? end + 1 : NULL;
  }
}

static void format_indexes(const bool *set, long n, char *buf, size_t len, long *count)
{
  size_t o = 0;
  *count = 0;
  buf[0] = 0;
  for(long i = 0; i < n; i++) {
    if(!set[i])
      continue;
    long j = i;
    while(j + 1 < n && set[j + 1])
      j++;
    *count += j - i + 1;
    int w = j - i >= 2 ? jr_fmt(buf + o, len - o, "%s%ld-%ld", o ? "," : "", i, j)
            : j > i    ? jr_fmt(buf + o, len - o, "%s%ld,%ld", o ? "," : "", i, j)
                       : jr_fmt(buf + o, len - o, "%s%ld", o ? "," : "", i);
    if(w < 0 || (size_t)w >= len - o)
      break;
    o += (size_t)w;
    i = j;
  }
}

static long succeeded(const struct job_ctx *x)
{
  return indexed(x->job) ? x->completed_indexes_n : job_counted(x, true);
}

/* Indexed: the completed indexes, from the status and the succeeded Pods. */
static void completed_indexes(struct job_ctx *x)
{
  long n = spec_completions(x->job);
  if(!indexed(x->job) || n <= 0 || n > MAX_INDEXES)
    return;
  bool *set = calloc((size_t)n, 1);
  if(!set)
    return;
  parse_indexes(json_get_str(x->job, "status.completedIndexes"), set, n);
  const cJSON *p;
  cJSON_ArrayForEach(p, x->pods)
  {
    const char *phase = json_get_str(p, "status.phase");
    long i = pod_index(p);
    if(phase && !strcmp(phase, "Succeeded") && i >= 0 && i < n)
      set[i] = true;
  }
  format_indexes(set, n, x->completed_indexes, sizeof(x->completed_indexes),
                 &x->completed_indexes_n);
  free(set);
}

void job_decide(struct jr *jr, struct job_ctx *x)
{
  const cJSON *job = x->job;
  x->conds = cJSON_Duplicate(json_get(job, "status.conditions"), 1);
  if(!cJSON_IsArray(x->conds)) {
    cJSON_Delete(x->conds);
    x->conds = cJSON_CreateArray();
  }
  x->suspended = json_get_bool(job, "spec.suspend", false);
  const char *st = json_get_str(job, "status.startTime");
  if(st)
    jr_fmt(x->start_time, sizeof(x->start_time), "%s", st);
  else if(!x->suspended)
    jr_rfc3339(x->start_time, sizeof(x->start_time), time(NULL));
  completed_indexes(x);

  const cJSON *ft = jr_condition(x->conds, "FailureTarget");
  if(cond_true(x->conds, "FailureTarget")) {
    x->finish_failed = true;
    jr_fmt(x->reason, sizeof(x->reason), "%s", str_or(json_get_str(ft, "reason"), ""));
    jr_fmt(x->message, sizeof(x->message), "%s", str_or(json_get_str(ft, "message"), ""));
    return;
  }
  if(cond_true(x->conds, "SuccessCriteriaMet")) {
    x->success = true;
    return;
  }
  long backoff_limit = jr_json_long(job, "spec.backoffLimit", 6);
  const char *rp = json_get_str(job, "spec.template.spec.restartPolicy");
  bool on_failure = rp && !strcmp(rp, "OnFailure");
  bool past_on_failure = on_failure && (backoff_limit == 0 ? x->restarts > 0
                                                           : x->restarts >= backoff_limit);
  long ads = jr_json_long(job, "spec.activeDeadlineSeconds", -1);
  time_t start = jr_parse_time(x->start_time);
  if(job_counted(x, false) > backoff_limit || past_on_failure) {
    x->finish_failed = true;
    jr_fmt(x->reason, sizeof(x->reason), "BackoffLimitExceeded");
    jr_fmt(x->message, sizeof(x->message), "Job has reached the specified backoff limit");
  } else if(ads >= 0 && !x->suspended && start > 0 && time(NULL) - start >= ads) {
    x->finish_failed = true;
    jr_fmt(x->reason, sizeof(x->reason), "DeadlineExceeded");
    jr_fmt(x->message, sizeof(x->message), "Job was active longer than specified deadline");
  } else if(ads >= 0 && !x->suspended && start > 0) {
    jr_wake_at(jr, jr_mono_ms() + (int64_t)(start + ads - time(NULL)) * 1000 + 50);
  }
  if(x->finish_failed) {
    cond_set(x, "FailureTarget", "True", x->reason, x->message);
    return;
  }
  long active = cJSON_GetArraySize(x->active);
  long completions = spec_completions(job);
  bool done = completions < 0 ? succeeded(x) > 0 && active == 0
                              : succeeded(x) >= completions && active == 0;
  if(done) {
    x->success = true;
    cond_set(x, "SuccessCriteriaMet", "True", "CompletionsReached",
             "Reached expected number of succeeded pods");
  }
}

static cJSON *new_pod(const struct jr *jr, const cJSON *job, long index)
{
  (void)jr;
  const char *name = json_get_str(job, "metadata.name");
  const char *uid = json_get_str(job, "metadata.uid");
  const cJSON *tmpl = json_get(job, "spec.template");
  cJSON *pod = cJSON_CreateObject();
  cJSON_AddStringToObject(pod, "apiVersion", "v1");
  cJSON_AddStringToObject(pod, "kind", "Pod");
  cJSON *md = cJSON_AddObjectToObject(pod, "metadata");
  char gen[300];
  if(index >= 0)
    jr_fmt(gen, sizeof(gen), "%s-%ld-", name, index);
  else
    jr_fmt(gen, sizeof(gen), "%s-", name);
  cJSON_AddStringToObject(md, "generateName", gen);
  cJSON_AddStringToObject(md, "namespace", json_get_str(job, "metadata.namespace"));
  cJSON *labels = cJSON_Duplicate(json_get(tmpl, "metadata.labels"), 1);
  if(!cJSON_IsObject(labels)) {
    cJSON_Delete(labels);
    labels = cJSON_CreateObject();
  }
  static const char *const uid_keys[] = { "controller-uid", "batch.kubernetes.io/controller-uid" };
  static const char *const name_keys[] = { "job-name", "batch.kubernetes.io/job-name" };
  for(int i = 0; i < 2; i++) {
    if(!cJSON_GetObjectItemCaseSensitive(labels, uid_keys[i]))
      cJSON_AddStringToObject(labels, uid_keys[i], uid);
    if(!cJSON_GetObjectItemCaseSensitive(labels, name_keys[i]))
      cJSON_AddStringToObject(labels, name_keys[i], name);
  }
  cJSON *ann = cJSON_Duplicate(json_get(tmpl, "metadata.annotations"), 1);
  if(!cJSON_IsObject(ann)) {
    cJSON_Delete(ann);
    ann = NULL;
  }
  cJSON *spec = cJSON_Duplicate(json_get(tmpl, "spec"), 1);
  if(!spec)
    spec = cJSON_CreateObject();
  if(index >= 0) {
    char ix[32];
    jr_fmt(ix, sizeof(ix), "%ld", index);
    if(!ann)
      ann = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(ann, INDEX_KEY);
    cJSON_AddStringToObject(ann, INDEX_KEY, ix);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, INDEX_KEY);
    cJSON_AddStringToObject(labels, INDEX_KEY, ix);
    char host[300];
    jr_fmt(host, sizeof(host), "%s-%ld", name, index);
    if(!json_get(spec, "hostname"))
      cJSON_AddStringToObject(spec, "hostname", host);
    /* JOB_COMPLETION_INDEX in every container, from the annotation */
    static const char *const lists[] = { "containers", "initContainers" };
    for(int l = 0; l < 2; l++) {
      cJSON *c;
      cJSON_ArrayForEach(c, cJSON_GetObjectItem(spec, lists[l]))
      {
        cJSON *env = cJSON_GetObjectItem(c, "env");
        if(!env)
          env = cJSON_AddArrayToObject(c, "env");
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", "JOB_COMPLETION_INDEX");
        cJSON *fr = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "fieldRef");
        cJSON_AddStringToObject(fr, "fieldPath",
                                "metadata.annotations['" INDEX_KEY "']");
        cJSON_AddItemToArray(env, e);
      }
    }
  }
  cJSON_AddItemToObject(md, "labels", labels);
  if(ann)
    cJSON_AddItemToObject(md, "annotations", ann);
  cJSON *refs = cJSON_AddArrayToObject(md, "ownerReferences");
  cJSON *ref = cJSON_CreateObject();
  cJSON_AddStringToObject(ref, "apiVersion", "batch/v1");
  cJSON_AddStringToObject(ref, "kind", "Job");
  cJSON_AddStringToObject(ref, "name", name);
  cJSON_AddStringToObject(ref, "uid", uid);
  cJSON_AddBoolToObject(ref, "controller", true);
  cJSON_AddBoolToObject(ref, "blockOwnerDeletion", true);
  cJSON_AddItemToArray(refs, ref);
  cJSON_AddItemToObject(pod, "spec", spec);
  return pod;
}

/* Creates one Pod; false after a refusal (FailedCreate, backoff). */
static bool create_pod(struct jr *jr, struct job_ctx *x, long index)
{
  cJSON *pod = new_pod(jr, x->job, index);
  cJSON *out = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(jr->k, &KUBE_PODS, json_get_str(x->job, "metadata.namespace"), pod,
                         false, &out, &st);
  cJSON_Delete(pod);
  bool ok = !rc && out;
  if(ok) {
    jr_cache_put_if_absent(&jr->pods, out); /* the next pass must see it */
    job_track_created(x, out);
    x->created_now++;
    job_create_succeeded(x);
    job_event(jr, x->job, "Normal", "SuccessfulCreate", "Created pod: %s",
              json_get_str(out, "metadata.name"));
  } else {
    job_create_failed(x, jr);
    job_event(jr, x->job, "Warning", "FailedCreate", "Error creating: %s",
              st.message[0] ? st.message : gw_strerror(rc));
  }
  kube_status_release(&st);
  cJSON_Delete(out);
  return ok;
}

void job_manage(struct jr *jr, struct job_ctx *x)
{
  const cJSON *job = x->job;
  long active = cJSON_GetArraySize(x->active);
  long parallelism = spec_parallelism(job);
  long completions = spec_completions(job);
  long want;
  if(completions < 0)
    want = succeeded(x) > 0 ? active : parallelism;
  else
    want = completions - succeeded(x) < parallelism ? completions - succeeded(x) : parallelism;
  if(want < 0)
    want = 0;
  if(active > want) {
    /* Too many (parallelism lowered): the newest go first, as Pending before Running. */
    long extra = active - want;
    cJSON *rev = cJSON_CreateArray();
    for(int i = cJSON_GetArraySize(x->active) - 1; i >= 0; i--)
      cJSON_AddItemReferenceToArray(rev, cJSON_GetArrayItem(x->active, i));
    const cJSON *p;
    long n = 0;
    cJSON_ArrayForEach(p, rev)
    {
      if(n++ >= extra)
        break;
      struct kube_status st;
      kube_status_init(&st);
      const char *pn = json_get_str(p, "metadata.name");
      if(!kube_delete(jr->k, &KUBE_PODS, json_get_str(p, "metadata.namespace"), pn, NULL, NULL,
                      &st))
        job_event(jr, job, "Normal", "SuccessfulDelete", "Deleted pod: %s", pn);
      kube_status_release(&st);
    }
    cJSON_Delete(rev);
    return;
  }
  if(active == want)
    return;
  int64_t until = job_backoff_until(x, jr);
  if(until > jr_mono_ms()) {
    jr_wake_at(jr, until);
    return;
  }
  if(!indexed(job)) {
    for(long i = active; i < want; i++)
      if(!create_pod(jr, x, -1))
        break;
    return;
  }
  long n = completions;
  if(n <= 0 || n > MAX_INDEXES)
    return;
  bool *busy = calloc((size_t)n, 1);
  if(!busy)
    return;
  parse_indexes(x->completed_indexes, busy, n);
  const cJSON *p;
  cJSON_ArrayForEach(p, x->active)
  {
    long i = pod_index(p);
    if(i >= 0 && i < n)
      busy[i] = true;
  }
  for(long i = 0, made = 0; i < n && active + made < want; i++) {
    if(busy[i])
      continue;
    if(!create_pod(jr, x, i))
      break;
    made++;
  }
  free(busy);
}

void job_write_status(struct jr *jr, struct job_ctx *x)
{
  const cJSON *job = x->job;
  const cJSON *cur = json_get(job, "status");
  bool finished_now = false;
  char now[32];
  jr_rfc3339(now, sizeof(now), time(NULL));
  long active = cJSON_GetArraySize(x->active) + x->created_now -
                (x->finish_failed || x->suspended ? x->deleted_now : 0);
  if(active < 0)
    active = 0;
  if(x->finish_failed && x->terminating == 0) {
    cond_set(x, "Failed", "True", x->reason, x->message);
    finished_now = true;
  } else if(x->success && x->terminating == 0 && active == 0) {
    cond_set(x, "Complete", "True", "CompletionsReached",
             "Reached expected number of succeeded pods");
    finished_now = true;
  } else if(!x->finish_failed && !x->success) {
    bool was = cond_true(x->conds, "Suspended");
    if(x->suspended && !was) {
      cond_set(x, "Suspended", "True", "JobSuspended", "Job suspended");
      job_event(jr, job, "Normal", "Suspended", "%s", "Job suspended");
    } else if(!x->suspended && was) {
      cond_set(x, "Suspended", "False", "JobResumed", "Job resumed");
      job_event(jr, job, "Normal", "Resumed", "%s", "Job resumed");
      /* activeDeadlineSeconds counts from the resume */
      jr_fmt(x->start_time, sizeof(x->start_time), "%s", now);
    }
  }
  cJSON *s = cJSON_CreateObject();
  cJSON_AddNumberToObject(s, "active", (double)active);
  cJSON_AddNumberToObject(s, "ready", (double)x->ready);
  cJSON_AddNumberToObject(s, "terminating", (double)x->terminating);
  cJSON_AddNumberToObject(s, "succeeded", (double)succeeded(x));
  cJSON_AddNumberToObject(s, "failed", (double)job_counted(x, false));
  if(x->start_time[0])
    cJSON_AddStringToObject(s, "startTime", x->start_time);
  if(indexed(job))
    cJSON_AddStringToObject(s, "completedIndexes", x->completed_indexes);
  cJSON_AddItemToObject(s, "uncountedTerminatedPods", cJSON_CreateObject());
  if(cJSON_GetArraySize(x->conds))
    cJSON_AddItemReferenceToObject(s, "conditions", x->conds);
  const cJSON *complete = jr_condition(x->conds, "Complete");
  if(cond_true(x->conds, "Complete"))
    cJSON_AddStringToObject(s, "completionTime",
                            str_or(json_get_str(complete, "lastTransitionTime"), now));
  bool same = true;
  const cJSON *m;
  cJSON_ArrayForEach(m, s)
  {
    same = same && json_equal(m, cJSON_GetObjectItemCaseSensitive(cur, m->string));
  }
  if(!same) {
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(patch, "status", s);
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    struct kube_status st;
    kube_status_init(&st);
    cJSON *out = NULL;
    gw_rc rc = body ? kube_patch(jr->k, &KUBE_JOBS, json_get_str(job, "metadata.namespace"),
                                 json_get_str(job, "metadata.name"), KUBE_PATCH_MERGE, body,
                                 "status", &out, &st)
                    : GW_ENOMEM;
    cJSON_free(body);
    if(out)
      jr_cache_write_through(&jr->jobs, out); /* the next pass builds on this write */
    cJSON_Delete(out);
    if(rc && rc != GW_ENOTFOUND) {
      log_kv(LOG_WARN, "job status not written", "job", json_get_str(job, "metadata.name"),
             "error", st.message[0] ? st.message : gw_strerror(rc), LOG_END);
      jr_wake_at(jr, jr_mono_ms() + 500);
      finished_now = false;
    }
    kube_status_release(&st);
  } else {
    finished_now = false; /* already written */
  }
  if(finished_now) {
    if(x->finish_failed)
      job_event(jr, job, "Warning", x->reason, "%s", x->message);
    else
      job_event(jr, job, "Normal", "Completed", "%s", "Job completed");
  }
  cJSON_Delete(s);
  cJSON_Delete(x->conds);
  x->conds = NULL;
}
