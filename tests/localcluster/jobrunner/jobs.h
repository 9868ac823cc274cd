/*
 * jobs.h: the Job controller's internals, shared by jobs.c (counting, the pass over Jobs) and
 * jobmanage.c (the decision, Pod creation, the status).
 */
#ifndef GW_JR_JOBS_H
#define GW_JR_JOBS_H

#include "jr.h"

struct job_rt;

/* One pass over one Job. */
struct job_ctx {
  const cJSON *job;
  struct job_rt *rt;
  cJSON *pods;   /* the Job's Pods (references) */
  cJSON *active; /* active Pods not being deleted (references) */
  long new_succeeded, new_failed;
  long terminating, ready, restarts;
  long deleted_now, created_now;
  /* job_decide */
  bool suspended;
  bool success;       /* SuccessCriteriaMet */
  bool finish_failed; /* FailureTarget */
  char reason[48];
  char message[160];
  char start_time[32];
  cJSON *conds;       /* the conditions to write (owned) */
  long completed_indexes_n;
  char completed_indexes[1024];
};

void job_event(struct jr *jr, const cJSON *job, const char *type, const char *reason,
               const char *fmt, const char *arg);
/* jobs.c: counters and backoff kept across passes */
long job_counted(const struct job_ctx *x, bool succeeded);
void job_track_created(struct job_ctx *x, const cJSON *pod);
/* The monotonic instant before which no Pod may be created (0: now). */
int64_t job_backoff_until(const struct job_ctx *x, const struct jr *jr);
void job_create_failed(struct job_ctx *x, const struct jr *jr);
void job_create_succeeded(struct job_ctx *x);

/* jobmanage.c */
void job_decide(struct jr *jr, struct job_ctx *x);
void job_manage(struct jr *jr, struct job_ctx *x);
void job_write_status(struct jr *jr, struct job_ctx *x);

#endif
