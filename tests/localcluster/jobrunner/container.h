/*
 * container.h: one container's life (container.c), driven by pods.c.
 *
 *   ctr_start            env, argv, mounts, log; Running, or waiting
 *                        CreateContainerConfigError (retried each second), or terminated
 *                        StartError (exit code 128)
 *   ctr_exited           the main process ended: the rest of its group is killed; terminated
 *                        with the exit code (128+signal when killed), reason Completed/Error and
 *                        the termination message (terminationMessagePath, or the log's last 80
 *                        lines / 2048 bytes under FallbackToLogsOnError)
 *   ctr_should_restart   restartPolicy Always, or OnFailure and a nonzero exit
 *   ctr_schedule_restart lastState takes the termination; waiting CrashLoopBackOff for
 *                        base * 2^(restarts-1) (the first restart is immediate), capped at 30x
 *                        base, as the kubelet's 10 s doubling to 5 min
 *   ctr_stop             SIGTERM to the group (SIGKILL with no grace), SIGKILL at the deadline
 */
#ifndef GW_JR_CONTAINER_H
#define GW_JR_CONTAINER_H

#include "kubelet.h"

const cJSON *ctr_spec(const struct pod_rt *p, const struct ctr_rt *c);
void ctr_set_waiting(struct ctr_rt *c, const char *reason, const char *msg);
void ctr_term_release(struct ctr_term *t);
/* index: position in p->ctr (init containers first). */
void ctr_start(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, size_t index);
void ctr_exited(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, int status);
bool ctr_should_restart(const struct pod_rt *p, const struct ctr_rt *c);
void ctr_schedule_restart(struct jr *jr, struct pod_rt *p, struct ctr_rt *c);
void ctr_stop(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, long grace_s);

/* restore.c: the directory a restored Pod's containers come from, or NULL. */
const char *ctr_restore_dir(const struct pod_rt *p);
/* A restore's Pod (its address annotated) whose checkpoint is not named yet. */
bool ctr_restore_pending(const struct pod_rt *p);
/* Restores container c from its checkpoint into the Pod's sandbox, its output to log; *pid is
 * the restored tree's root, reparented to us. An rc with err (the StartError message). */
gw_rc ctr_restore(struct jr *jr, struct pod_rt *p, struct ctr_rt *c, const char *log,
                  pid_t *pid, char *err, size_t errlen);

#endif
