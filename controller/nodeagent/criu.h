/*
 * criu.h: the node agent's hands on CRIU. It runs the criu binary (tests/criu/install.sh puts
 * one that works on current kernels in /opt/godwit/criu; docs/dev/podmotion-runtime.md) and
 * says what happened; it decides nothing about a migration.
 *
 *   struct criu_opts o = {.pid = pid, .images_dir = dir, .netns = "/run/netns/pod-a",
 *                         .tcp_established = true, .network_lock = "nftables"};
 *   struct criu_result r;
 *   if(criu_dump(&o, &r)) log("dump: %s", r.errors);
 *
 * Contracts:
 *  - criu runs as a child with its own process group, stdin from /dev/null, stdout and stderr
 *    captured (at most CRIU_OUTPUT_MAX bytes are kept), inside o->netns when given (setns before
 *    exec, so criu shares the network namespace of the tree: it then neither dumps nor restores
 *    the namespace, and its TCP repair and network lock act there).
 *  - A timeout kills criu's process group. Killing a dump midway can leave the tree stopped or
 *    its connections locked, so give dumps a generous timeout and treat a timeout as a failed
 *    migration step, never as a reason to retry at once.
 *  - The images directory must exist; the caller owns it (mode 0700: images hold the memory).
 *  - Every call fills *res, even on failure: res->status is criu's exit status (-1: it did not
 *    exit on its own), res->errors the last error lines of its log, else of its output (known
 *    harmless lines left out), res->elapsed_ms the wall time.
 */
#ifndef GW_AGENT_CRIU_H
#define GW_AGENT_CRIU_H

#include <stdbool.h>
#include <sys/types.h>

#include "rc.h"

#define CRIU_DEFAULT_PATH "/opt/godwit/criu/bin/criu"
#define CRIU_OUTPUT_MAX 16384
#define CRIU_ERRORS_MAX 1024
#define CRIU_DEFAULT_TIMEOUT_MS 60000L

struct criu_result {
  int status;                   /* exit status; -1 when killed, timed out or never started */
  bool timed_out;
  long elapsed_ms;
  char errors[CRIU_ERRORS_MAX]; /* last error lines, '\n'-separated; "" when none */
  char *output;                 /* stdout and stderr (malloc'd; criu_result_release frees) */
};

struct criu_opts {
  const char *criu;         /* the binary; NULL: criu_path() */
  pid_t pid;                /* dump: the root of the tree (its own pid namespace's init here) */
  const char *images_dir;   /* -D */
  const char *log_file;     /* -o; NULL: dump.log or restore.log in images_dir */
  int verbosity;            /* -v N; 0: criu's default */
  const char *netns;        /* run criu in this network namespace (an nsfs path); NULL: ours */
  const char *pidfile;      /* restore: --pidfile, the restored root's pid as seen from here */
  const char *network_lock; /* dump: --network-lock (nftables, iptables, skip); NULL: default.
                             * A restore uses the dump's method (criu ignores the option). */
  bool tcp_established;     /* --tcp-established: checkpoint established connections */
  bool leave_running;       /* dump: --leave-running (a rollback is then a no-op) */
  bool skip_in_flight;      /* dump: --skip-in-flight: connections still in a listening
                             * socket's accept queue are left out (else the dump fails) */
  bool shell_job;           /* --shell-job: the session leader or tty is outside the tree */
  bool ext_unix_sk;         /* --ext-unix-sk: unix sockets connected outside the tree */
  int inherit_fd;           /* restore, when > 0: this descriptor of ours replaces the file */
  const char *inherit_key;  /* that the tree had open under this path (no leading '/'); a
                             * restored container writes to its new log, not the source's */
  long timeout_ms;          /* 0: CRIU_DEFAULT_TIMEOUT_MS */
};

/* What this node's CRIU can do (criu check --feature NAME exits 0 when supported). */
struct criu_features {
  char version[32];     /* "4.2.1" */
  bool mem_dirty_track; /* soft-dirty pages: pre-dump rounds copy only what changed */
  bool uffd;            /* userfaultfd: lazy (post-copy) restore */
  bool uffd_noncoop;    /* userfaultfd for fork, mremap and exit: lazy restore of real trees */
  bool tcp_half_closed; /* half-closed TCP connections can be checkpointed */
};

/* $GODWIT_CRIU when set and not empty, else CRIU_DEFAULT_PATH. */
const char *criu_path(void);

/* Runs argv (argv[0] is the binary, NULL-terminated) as described above; log_file, when not
 * NULL, is where the errors are looked for first. GW_OK when criu exited 0; GW_ETIMEOUT;
 * GW_ENOTFOUND when it could not be started (missing binary, bad netns); GW_EIO otherwise. */
gw_rc criu_run(char *const argv[], const char *netns, const char *log_file, long timeout_ms,
               struct criu_result *res) GW_MUST_CHECK;

/* criu --version, then criu check --feature for each feature. GW_ENOTFOUND when criu does not
 * run or says no version; a feature that is not supported is false, not an error. */
gw_rc criu_check_features(const char *criu, struct criu_features *out) GW_MUST_CHECK;

/* criu dump -t pid -D images_dir with the options set in o. */
gw_rc criu_dump(const struct criu_opts *o, struct criu_result *res) GW_MUST_CHECK;

/* criu restore -D images_dir -d (detached: the restored root is reparented once criu exits)
 * with the options set in o. A tree dumped as its own pid namespace comes back in a fresh one. */
gw_rc criu_restore(const struct criu_opts *o, struct criu_result *res) GW_MUST_CHECK;

void criu_result_release(struct criu_result *res);

#endif
