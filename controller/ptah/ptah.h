/*
 * ptah.h: the Ptah controllers (ptah.run, seed 001): PtahMigration, versioned SQL from a
 * ConfigMap applied by runner Jobs (`godwit-runner ptah-migrate`), and PtahSchema, a desired
 * schema planned, approved and applied by runner Jobs (`godwit-runner ptah-plan`); results are
 * delivered as PtahResultRecords.
 * docs/dev/ptah-controller.md designs it; docs/api/ptah.md is the API.
 */
#ifndef GW_CTRL_PTAH_H
#define GW_CTRL_PTAH_H

#include "../manager.h"

/* The runner protocol this controller speaks: a Job asks its runner for it, and a runner that
 * speaks another refuses the Job before it touches the database (RunnerProtocolMismatch). */
#define PTAH_PROTOCOL "1"
/* The controller-state version: the layout of status.operation a claim relies on. A release that
 * changes it retires the claims made under the old one (ExecutionBindingChanged). */
#define PTAH_STATE_VERSION "1"

struct ptah_opts {
  const char *runner_image;  /* runner Jobs' image when spec.execution.runnerImage is empty */
  const char *protocol;      /* NULL: PTAH_PROTOCOL (another value only to test a mismatch) */
  long poll_interval_ms;     /* look again while a Job runs (default 5000) */
  long failure_interval_ms;  /* a failed read-only operation or a refused protocol is tried
                              * again after this (default 30000) */
  long job_deadline_s;       /* activeDeadlineSeconds of every operation Job (default 3600) */
  long job_ttl_s;            /* ttlSecondsAfterFinished (default 86400) */
  long lock_wait_s;          /* how long a runner waits for the database lock (default 30) */
  long retry_base_ms;        /* backoff before attempt 2, doubling (default 2000) */
  bool legacy_results;       /* new operations deliver their result in the log (Legacy) */
  const char *policy_file;   /* the webhook's admission policy (approvals.allowSelfApproval);
                              * NULL: the built-in policy */
  long log_window_ms;        /* a legacy log is read this long after its Job ended before the
                              * termination summary is considered (default 120000) */
};

/* Registers the PtahMigration controller ("ptahmigration"); o is copied (its strings must
 * outlive the manager); NULL: defaults. */
gw_rc ptah_register(struct mgr *m, const struct ptah_opts *o) GW_MUST_CHECK;
/* Registers the PtahSchema controller ("ptahschema"); as ptah_register. */
gw_rc ptah_schema_register(struct mgr *m, const struct ptah_opts *o) GW_MUST_CHECK;

#endif
