/*
 * kubelet.h: the kubelet's internals, shared by pods.c (lifecycle), podstatus.c (the status it
 * writes), container.c (one container), proc.c (processes), env.c (environment), kcache.c
 * (Secrets and ConfigMaps), volumes.c (volumes and the service-account token) and logs.c (log
 * files, termination messages).
 *
 * A Pod this node runs has one struct pod_rt, found by uid, alive from the first sight of the
 * Pod until its processes are reaped and the Pod is gone from the API. Each container is a
 * process group (setsid): signals go to the whole group, and when the main process exits the
 * rest of its group is killed, as a container runtime tears a container down.
 */
#ifndef GW_JR_KUBELET_H
#define GW_JR_KUBELET_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "jr.h"

/* ---- objects read while syncing one Pod (Secrets, ConfigMaps) ---- */
struct kcache_ent {
  const struct kube_gvr *gvr;
  char name[254];
  cJSON *obj; /* NULL with rc set when it could not be read */
  gw_rc rc;
};
struct kcache {
  struct kcache_ent v[32];
  size_t n;
};
void kcache_release(struct kcache *c);
/* The object (owned by the cache), or NULL with *rc. */
const cJSON *kcache_get(struct jr *jr, struct kcache *c, const struct kube_gvr *gvr,
                        const char *ns, const char *name, gw_rc *rc);
/* A value of a Secret (data, base64) or ConfigMap (data, then binaryData): malloc'd, or NULL
 * when the key is missing. */
char *kcache_value(const cJSON *obj, bool secret, const char *key, size_t *len);

/* ---- env.c ---- */
/* The container's environment ("K=V" strings, NULL-terminated, malloc'd), or NULL with err
 * holding the kubelet's CreateContainerConfigError message. */
char **env_build(struct jr *jr, struct kcache *kc, const cJSON *pod, const cJSON *ctr,
                 const char *sa_dir, char *err, size_t errlen);
void env_free(char **env);
const char *env_get(char *const *env, const char *name);
/* Kubernetes' $(VAR) expansion ($$ escapes), malloc'd. */
char *env_expand(const char *s, char *const *env);
/* A downward-API fieldPath of the Pod; malloc'd, or NULL with err. */
char *env_field(const cJSON *pod, const char *path, char *err, size_t errlen);

/* ---- volumes.c ---- */
struct vol {
  char name[254];
  char path[PATH_MAX];
  bool ro;
};
struct token_file {
  char path[PATH_MAX];
  char audience[256];
  long expiration_s;
};
struct pod_volumes {
  struct vol *v;
  size_t n;
  struct token_file *tok;
  size_t ntok;
  char sa_dir[PATH_MAX]; /* "" when automountServiceAccountToken is false */
  int64_t refresh_ms;    /* when the tokens are due again (monotonic) */
};
/* Materializes every volume and the service-account directory under pod_dir. GW_OK, or an rc
 * with err holding the FailedMount message. */
gw_rc volumes_setup(struct jr *jr, struct kcache *kc, const cJSON *pod, const char *pod_dir,
                    struct pod_volumes *pv, char *err, size_t errlen);
/* Requests fresh tokens when they are due. */
void volumes_refresh(struct jr *jr, const cJSON *pod, struct pod_volumes *pv);
void volumes_release(struct pod_volumes *pv);
/* Removes the volume directory of every claim that is gone (the primary's pass). */
void volumes_reclaim(struct jr *jr);
const struct vol *volumes_find(const struct pod_volumes *pv, const char *name);

/* ---- logs.c ---- */
/* DIR/logs/NS/POD/CONTAINER.log (previous: CONTAINER.previous.log). */
void logs_path(const struct jr *jr, const char *ns, const char *pod, const char *ctr,
               bool previous, char *buf, size_t len);
/* Before a container starts: keeps the last instance's log as previous (restart), empties the
 * current one and points DIR/logs/NS/POD.log at the first container's. */
gw_rc logs_prepare(const struct jr *jr, const char *ns, const char *pod, const char *ctr,
                   bool restart, bool first);
/* The last lines of a log, at most max_bytes (malloc'd, maybe ""). */
char *logs_tail(const char *path, int lines, size_t max_bytes);
/* Removes DIR/logs/NS/POD*. */
void logs_remove(const struct jr *jr, const char *ns, const char *pod);

/* ---- proc.c ---- */
struct proc_mount {
  char src[PATH_MAX];
  char dst[PATH_MAX];
  bool ro;
  bool optional; /* skipped when it cannot be made (the termination-message file) */
};
struct proc_spec {
  const char *netns; /* join this network namespace (an nsfs path); NULL: ours */
  bool new_pidns;    /* the container's main process is pid 1 of a pid namespace of its own */
  char *const *argv;
  char *const *envp;
  const char *workdir;
  bool workdir_first; /* enter workdir before mounting (the default one) */
  const char *log_path;
  const struct proc_mount *mounts;
  size_t nmounts;
};
/* Starts argv in a new session (pid == process group id), in a private mount namespace with
 * the bind mounts when there are any. GW_OK with *pid, or an rc with err holding the runtime's
 * StartError message. */
gw_rc proc_spawn(const struct proc_spec *s, pid_t *pid, char *err, size_t errlen);
void proc_kill_group(pid_t pgid, int sig);
/* Whether this process may create mount namespaces (root, no seccomp refusal). */
bool proc_mntns_works(void);

/* ---- the runtime state of a Pod (pods.c, podstatus.c) ---- */
enum ctr_state { CS_WAITING, CS_RUNNING, CS_TERMINATED };

struct ctr_term {
  bool set;
  int exit_code;
  int signal;
  char reason[32];
  char *message;
  time_t started, finished;
  char container_id[96];
};

struct ctr_rt {
  char name[254];
  char image[512];
  bool init;
  enum ctr_state state;
  char wait_reason[48];
  char *wait_msg;
  pid_t pid; /* main process while running; also the process group */
  time_t started;
  char container_id[96];
  struct ctr_term term; /* when terminated */
  struct ctr_term last; /* lastState */
  int restarts;
  int64_t restart_at_ms; /* CrashLoopBackOff until then */
  bool ever_started;
  bool kill_sent;        /* SIGTERM sent */
};

enum pod_stage {
  PS_SCHEDULING, /* unscheduled: sched_fits and bind */
  PS_SETUP,      /* volumes and token */
  PS_RUN,        /* init containers one by one, then the containers */
  PS_DONE,       /* terminal phase reached */
};

struct pod_rt {
  char uid[64];
  char ns[254];
  char name[254];
  cJSON *pod; /* the last version seen */
  enum pod_stage stage;
  char pod_dir[PATH_MAX];
  struct pod_volumes vols;
  bool vols_ready;
  struct ctr_rt *ctr; /* init containers first, then containers */
  size_t nctr, ninit;
  time_t start_time;
  int64_t start_ms; /* the same instant, monotonic: activeDeadlineSeconds */
  char *unschedulable; /* the scheduler's message while it refuses */
  bool scheduled;
  char phase[16];
  char reason[48]; /* status.reason (DeadlineExceeded) */
  char *message;
  /* deletion */
  bool deleting;   /* the Pod has a deletionTimestamp or is gone: stop everything */
  bool gone;       /* no longer in the API */
  bool final_sent; /* the terminal status and the final delete were sent */
  int64_t kill_at_ms;
  struct podnet_sandbox sb; /* worker nodes: its network namespace and address */
  bool elsewhere; /* bound to another node: forgotten here, nothing of it ran */
  cJSON *posted; /* the last status written */
  int64_t retry_ms;
  struct pod_rt *next;
};

/* podstatus.c: the Pod's status as the kubelet reports it (a new object), and the phase. */
cJSON *podstatus_build(struct jr *jr, struct pod_rt *p);
const char *podstatus_phase(const struct pod_rt *p);

#endif
