/*
 * stepdrive.h: a runner step driven to a verdict, for any kind. A step is one Job per attempt
 * (runjob.h); its progress lives in the object's status, never only in memory:
 *
 *   status.steps.<step> = {attempt, result, message}   result: Running, Passed, Failed
 *
 * step_drive() looks once and says where the step stands:
 *  - no attempt recorded: records attempt 1 as Running and goes on with it in the same pass
 *    (names are deterministic: a lost write finds the Job on a later pass, never makes two);
 *  - the attempt's Job absent: creates it (idempotently), with the started Event if any;
 *  - running, pending or being deleted: waits (a Pod that cannot start says why, kubelet-style);
 *  - ended with a report "Passed" (or succeeded without one): STEP_PASSED; "Failed": STEP_FAILED;
 *  - ended without a verdict (exit 2 "Transient", no report): the next attempt, with backoff
 *    (1 s doubling, at most STEP_BACKOFF_MAX_MS), until max_attempts: then STEP_FAILED.
 * A failed read or create of a Job (the API) is STEP_ERROR, and the driver itself asks for
 * another look after STEP_ERROR_RETRY_MS: the one place where API errors become a retry.
 * The caller records the verdict it draws (step_record) and requeues what it needs.
 */
#ifndef GW_CTRL_STEPDRIVE_H
#define GW_CTRL_STEPDRIVE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "edit.h"
#include "runjob.h"

#define STEP_ERROR_RETRY_MS 2000
#define STEP_BACKOFF_MAX_MS 32000

enum step_outcome { STEP_WAIT, STEP_PASSED, STEP_FAILED, STEP_ERROR };

/* The object a step belongs to. */
struct step_host {
  const cJSON *obj;             /* as read: its status.steps */
  struct status_edit *ed;       /* where the driver records attempts, Events and requeues */
  const struct rj_owner *owner;
  long poll_ms;                 /* look again while a Job runs */
  void *kind;                   /* the kind's reconcile context, for the callbacks */
  /* the Job name of step and attempt (NULL: rj_name) */
  void (*job_name)(void *kind, const char *step, int attempt, char *buf, size_t len);
};

struct step_run {
  const char *step;
  int max_attempts;
  const char *started_reason; /* Event on creation (NULL: none) */
  const char *started_fmt;    /* its message; %d is the attempt */
  /* creates attempt's Job (*created false when it existed) */
  gw_rc (*create)(void *kind, void *ctx, int attempt, bool *created);
  void *ctx;
  /* out */
  struct job_view v;
  int attempt;
  bool created;
  bool retried;       /* the attempt failed without a verdict: the next one is decided */
  char message[1024]; /* what to say about the verdict or the wait */
};

enum step_outcome step_drive(const struct step_host *h, struct step_run *r);
void step_run_release(struct step_run *r);

/* status.steps.<step>: attempt (0: never started) and result ("" when none). */
int step_attempt(const cJSON *obj, const char *step);
const char *step_result(const cJSON *obj, const char *step);
void step_record(struct status_edit *ed, const char *step, int attempt, const char *result,
                 const char *message);

#endif
