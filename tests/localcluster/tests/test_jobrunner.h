/*
 * test_jobrunner.h: helpers of the job runner's tests (test_jobrunner*.c): Jobs and Pods built
 * with cJSON, created and read through the client, and waits on their state. Every helper
 * asserts (Criterion) on an unexpected API answer, so tests read as the scenario they check.
 */
#ifndef GW_TEST_JOBRUNNER_H
#define GW_TEST_JOBRUNNER_H

#include <cJSON.h>
#include <stdbool.h>

#include "harness.h"
#include "kube/kube.h"

#define JT_NS "jr"

/* Starts a cluster with the job runner (and extra), creates namespace JT_NS. */
void jt_start(struct cl *c, unsigned extra);
struct kube_client *jt_admin(struct cl *c);

/* A batch/v1 Job in JT_NS running `sh -c script` with restartPolicy Never and backoffLimit 0;
 * tests change what they need with json_set. */
cJSON *jt_job(const char *name, const char *script);
/* The Job's only container (to add env, volumeMounts). */
cJSON *jt_container(cJSON *job);
/* A bare Pod in JT_NS (restartPolicy Never). */
cJSON *jt_pod(const char *name, const char *script);

/* Creates obj (taking it); asserts success. */
void jt_create(struct kube_client *k, const struct kube_gvr *r, cJSON *obj);
void jt_secret(struct kube_client *k, const char *name, const char *key, const char *value);
void jt_configmap(struct kube_client *k, const char *name, const char *key, const char *value);
void jt_pvc(struct kube_client *k, const char *name);

/* The object, or NULL when absent. */
cJSON *jt_get(struct kube_client *k, const struct kube_gvr *r, const char *name);
/* Pods labelled job-name=job, as a List's items (a new array). */
cJSON *jt_job_pods(struct kube_client *k, const char *job);

/* Waits (up to ms) for the Job's condition type to be True; returns the Job or NULL. */
cJSON *jt_wait_job_condition(struct kube_client *k, const char *job, const char *type, int ms);
/* Waits for a Pod of the Job (or the Pod named pod when job is NULL) for which pred is true;
 * returns a copy of it, or NULL. */
cJSON *jt_wait_pod(struct kube_client *k, const char *job, const char *pod,
                   bool (*pred)(const cJSON *pod), int ms);
bool jt_pod_terminal(const cJSON *pod);
bool jt_pod_running(const cJSON *pod);
/* The first container status's state.<which> (waiting, running, terminated) or NULL. */
const cJSON *jt_state(const cJSON *pod, const char *which);
/* A number in obj (-1 when missing). */
long jt_num(const cJSON *obj, const char *path);
/* The condition of that type in obj's status.conditions, or NULL; whether it is True. */
const cJSON *jt_condition(const cJSON *obj, const char *type);
bool jt_condition_true(const cJSON *obj, const char *type);
/* The Pod condition of that type, or NULL. */
const cJSON *jt_pod_condition(const cJSON *pod, const char *type);

/* Events about the object named name with that reason (a new array). */
cJSON *jt_events(struct kube_client *k, const char *name, const char *reason);
/* Waits for such an Event; returns a copy of the first, or NULL. */
cJSON *jt_wait_event(struct kube_client *k, const char *name, const char *reason, int ms);

/* The log through the API (malloc'd), tail 0 for all, or NULL. */
char *jt_log(struct kube_client *k, const char *pod, long tail);
/* Waits until path holds a decimal pid; returns it, or 0. */
long jt_wait_pidfile(const char *path, int ms);
/* Waits until no process has that pid (not even a zombie). */
bool jt_wait_gone(long pid, int ms);

#include "counter.h"

#endif
