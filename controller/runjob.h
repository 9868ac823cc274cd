/*
 * runjob.h: runner Jobs for any kind. A kind's reconciler describes its object once (struct
 * rj_owner) and each Job it needs (struct rj_spec); this module renders the Job the same way for
 * every kind, creates it idempotently, reads its state and its Pod's, deletes it, and reads a
 * Pod's log tail, redacted.
 *
 * Every Job, and its Pod template, carries:
 *  - metadata.ownerReferences: the owner (controller: true, blockOwnerDeletion: true), so
 *    deleting the object deletes its Jobs, and the manager's ctrl_watch_owned() maps a Job's
 *    changes back to it;
 *  - labels app.kubernetes.io/managed-by=godwit, <owner->label>=<name>, godwit.dev/step,
 *    godwit.dev/attempt; the Pod template also godwit.dev/runner=<owner->runner>, which makes
 *    the webhook check the Pod against the template digest annotation
 *    (godwit.dev/template-digest, shared/podtemplate.h) the controller records here;
 *  - the restricted Pod Security Standard: non-root (RJ_RUN_AS), no privilege escalation, no
 *    capabilities, RuntimeDefault seccomp; restartPolicy Never and backoffLimit 0 (the step
 *    driver decides about attempts, each one a Job of its own).
 * Credentials only travel as secretKeyRef env vars: never a value in the Job.
 *
 * Names: "<name>-<step>-<attempt>" (rj_name); deterministic, so a restart finds what it created.
 * Creating a Job that exists is success (*created false).
 */
#ifndef GW_CTRL_RUNJOB_H
#define GW_CTRL_RUNJOB_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "informer.h"
#include "kube/kube.h"
#include "rc.h"

struct mgr;

#define RJ_RUN_AS 65532 /* the image's non-root user and group (the Dockerfile creates it) */
#define RJ_STEP_LABEL "godwit.dev/step"
#define RJ_ATTEMPT_LABEL "godwit.dev/attempt"
#define RJ_MAX_SECRETS 4
#define RJ_MAX_ENV 8
#define RJ_MAX_LABELS 4

struct rj_owner {
  struct kube_client *kube;
  const char *key;         /* "ns/name", for logs */
  const char *api_version; /* of the owner: "pgcopydb.io/v1" */
  const char *kind;        /* "Migration" */
  const char *ns, *name, *uid;
  const char *label;       /* the owner's name under this label: "godwit.dev/migration" */
  const char *runner;      /* godwit.dev/runner on the Pods: "migration" */
  struct informer *jobs;   /* the manager's caches of Jobs and Pods (mgr_cache), or NULL: */
  struct informer *pods;   /*   read from the API */
  struct informer *refusals; /* the manager's cache of FailedCreate Events (rj_watch_refusals),
                              * or NULL: a LIST when needed */
};

/* An environment variable from a Secret's key. */
struct rj_secret_env {
  const char *var;    /* NULL ends the list */
  const char *secret; /* the Secret's name */
  const char *key;    /* NULL or "": "uri" */
};

struct rj_spec {
  const char *name; /* the Job's name: rj_name(), or the kind's own rule */
  const char *step;
  int attempt;
  const char *image;
  const char *container; /* NULL: "runner" */
  const char *const *command;
  cJSON *args; /* array of strings; taken by rj_render */
  struct rj_secret_env secrets[RJ_MAX_SECRETS];
  const char *env[RJ_MAX_ENV][2]; /* plain values; a NULL name ends */
  const char *claim, *mount;      /* a PVC mounted at mount (both NULL: none) */
  const cJSON *resources;         /* the container's resources, copied */
  /* optional, for kinds whose users shape their runner Pods (Ptah's spec.execution) */
  const char *config_map, *config_mount; /* a ConfigMap mounted read-only (both NULL: none) */
  const char *service_account;    /* the Pod's (NULL: the namespace's default) */
  const cJSON *pod_labels;        /* extra labels and annotations of the Pod (objects of */
  const cJSON *pod_annotations;   /*   strings, copied; godwit's own keys win) */
  const cJSON *node_selector;      /* the Pod's nodeSelector, tolerations and */
  const cJSON *tolerations;        /*   imagePullSecrets, copied (NULL: none) */
  const cJSON *image_pull_secrets;
  const char *labels[RJ_MAX_LABELS][2]; /* extra labels of the Job and its Pod (NULL ends) */
  long deadline_s;                /* activeDeadlineSeconds (0: none) */
  long ttl_s;                     /* ttlSecondsAfterFinished (0: none) */
};

void rj_name(const struct rj_owner *o, const char *step, int attempt, char *buf, size_t len);
/* The Job object (NULL when out of memory); takes s->args. */
cJSON *rj_render(const struct rj_owner *o, struct rj_spec *s);
/* The newest FailedCreate Event of Job job in ns ("" when none): why its Pod is refused (an
 * admission webhook, a quota, the runner-Pod guard). Read from refusals, the manager's cache of
 * such Events (rj_watch_refusals), when there is one; else one LIST of the Job's Events. */
gw_rc rj_job_refusal(struct kube_client *k, struct informer *refusals, const char *ns,
                     const char *job, char *buf, size_t len);
/* The Events that say a Job's Pod was refused, as a cache of the manager (one for every kind):
 * a LIST of a Job's Events on every poll of a Job without a Pod cost the API server a scan of
 * the namespace's Events each time (3 LISTs per dry-run Migration at 500 at once). The
 * controller needs `list` and `watch` on events for it. Before mgr_start. */
#define RJ_REFUSAL_SELECTOR "involvedObject.kind=Job,reason=FailedCreate"
gw_rc rj_watch_refusals(struct mgr *m) GW_MUST_CHECK;
/* Renders and creates it; *created false when it already existed. Takes s->args. */
gw_rc rj_create(const struct rj_owner *o, struct rj_spec *s, bool *created) GW_MUST_CHECK;

enum job_state { JOB_ABSENT, JOB_DELETING, JOB_PENDING, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED };

struct job_view {
  enum job_state state;
  char name[96];
  char pod[160];         /* the newest Pod, "" when none */
  char waiting[1024];    /* "Reason: message" of a Pod that cannot start, "" otherwise */
  int exit_code;         /* of the terminated container, -1 when unknown */
  char failure[512];     /* the Job's Failed condition, "Reason: message" */
  cJSON *report;         /* the parsed termination message, or NULL */
  long long pod_started; /* epoch seconds the container started, 0 when unknown */
  int pods_ended;        /* the Job's status.failed + status.succeeded: Pods that ran and
                          * ended, counted by the Job controller even once deleted */
  bool suspended;        /* spec.suspend: the Job controller creates no Pod */
  long long finished;    /* epoch seconds the Job completed or failed, 0 when it has not */
};

/* Whether to look for why a Job has no Pod (rj_job_refusal): it runs, is not suspended, and no
 * Pod of it is seen. */
bool rj_refusal_due(const struct job_view *v);

/* The Job name and its newest Pod (by the Job's uid: a Job created again under the same name
 * never sees the old one's Pods). Absent is JOB_ABSENT, not an error. Both come from the
 * caches when the owner has them; the Pods of a finished Job whose cached Pod has not ended yet
 * come from the API, because the verdict is the Pod's report and the Pod cache may not have its
 * last update yet (the two caches are not ordered with each other). A Job created a moment ago may still be absent from the cache:
 * creating it again is harmless (AlreadyExists). */
gw_rc rj_get(const struct rj_owner *o, const char *name, struct job_view *v) GW_MUST_CHECK;
void job_view_release(struct job_view *v);
/* The report's "result" ("Passed", "Failed", "Transient") or NULL. */
const char *job_report_result(const struct job_view *v);
/* "<failed.id>: <message>; <recovery>", the summary, or the Job's failure (exit code). */
void job_report_message(const struct job_view *v, char *buf, size_t len);

/* Suspends the Job (spec.suspend: no new Pod, active ones deleted); absent is fine. */
gw_rc rj_suspend(const struct rj_owner *o, const char *name) GW_MUST_CHECK;
/* Deletes the Job and, in the background, its Pods; absent is fine. */
gw_rc rj_delete(const struct rj_owner *o, const char *name) GW_MUST_CHECK;
gw_rc rj_pod_delete(const struct rj_owner *o, const char *pod) GW_MUST_CHECK;
/* Pods of the owner's step (any attempt) that have not ended (running, starting, stopping),
 * read from the API (a decision that must not see a stale state). */
gw_rc rj_pods_running(const struct rj_owner *o, const char *step, int *running) GW_MUST_CHECK;
/* The last lines of a Pod's log, redacted (malloc'd). */
gw_rc rj_log_tail(const struct rj_owner *o, const char *pod, long lines, char **out)
  GW_MUST_CHECK;
/* A PVC named claim, owned and labelled like the Jobs, created when missing: size (a string or
 * number quantity, or NULL for dflt), storage_class (NULL or "": the cluster's default). */
gw_rc rj_pvc_ensure(const struct rj_owner *o, const char *claim, const cJSON *size,
                    const char *dflt, const char *storage_class) GW_MUST_CHECK;

#endif
