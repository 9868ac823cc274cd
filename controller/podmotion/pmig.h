/*
 * pmig.h: the PodMigration reconciler (migration.podmotion.io, seed 004). docs/api/podmotion.md
 * is the API; docs/dev/podmotion-controller.md the design.
 *
 * What runs today: Pending (Scheduled), then Validating: the spec re-validated, spec.cancel
 * (Cancelled: nothing was frozen), the source pod (exists, runs on a node), the destination
 * (nodeName exists and is another node, or nodeSelector picks one: NodeSelected), the
 * MigrationPolicies (PolicyChecked: which apply, the strategy, the destination's labels, how
 * many at once, the freeze budget), the verification mode (a readiness probe for
 * ReadinessProbe), and the node agents' published capabilities (CRIU, dirty-page tracking:
 * PreCopy falls back to StopAndCopy when the policies allow it, else the migration is refused).
 * A refusal ends Failed with Complete=False and the reason; nothing was frozen. A migration that
 * passes waits in Validating for the node agents: the checkpoint, transfer and restore phases
 * come with the agent (issue "PodMotion"), so no pod is ever frozen by this release.
 */
#ifndef GW_CTRL_PODMOTION_PMIG_H
#define GW_CTRL_PODMOTION_PMIG_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../edit.h"
#include "../manager.h"

enum pmig_phase { PG_PENDING, PG_VALIDATING, PG_PRECOPYING, PG_CHECKPOINTING, PG_TRANSFERRING,
                  PG_RESTORING, PG_VERIFYING, PG_ROLLINGBACK, PG_COMPLETED, PG_FAILED,
                  PG_CANCELLED, PG_COUNT };

/* The node agent's capabilities, published on its Node (JSON, docs/dev/podmotion-controller.md). */
#define PG_AGENT_ANNOTATION "migration.podmotion.io/node-agent"
#define PG_POLICIES_MAX 32

extern const struct phase_table pmig_phases;

struct pmig {
  struct rec_ctx *ctx;
  cJSON *obj;
  const char *ns, *name;
  int phase;
  struct status_edit ed;
  bool removed_now; /* the checkpoints were removed by this reconcile */
};

/* Held from the freeze (leaving Validating) until the migration ended and let go of the
 * nodes: a PodMigration deleted midway rolls back first. */
#define PG_FINALIZER "migration.podmotion.io/rollback"
/* On the restored pod: the PodMigration that made it. */
#define PG_MIGRATION_LABEL "migration.podmotion.io/migration"

/* How the controller reaches the node agents (--nodeagent-ca, --nodeagent-token-file). */
struct pmig_opts {
  const char *ca_file;
  const char *token;      /* NULL: no agent API is called; migrations wait in Validating */
  const char *audit_file; /* --podmotion-audit-log; NULL: audit lines go to the log */
  long janitor_interval_ms; /* how often orphaned checkpoints are looked for (0: never) */
  long janitor_min_age_ms;  /* a checkpoint younger than this is never an orphan */
};

/* The janitor's work-queue key (no PodMigration has a name with '#'). */
#define PG_JANITOR_KEY "#janitor"
/* Removes, from every node agent, the checkpoint directories no PodMigration (namespace, name
 * and uid) owns and that are older than janitor_min_age_ms; how many. */
long pmig_janitor(struct rec_ctx *c);
extern struct pmig_opts pmig_opts;

struct na_target;
/* The node agent API of node (its annotation's endpoint); false with why when there is none. */
bool pmig_agent_target(struct pmig *p, const char *node, struct na_target *t, char *ep,
                       size_t eplen, char *why, size_t wlen);
/* move.c: the phases after Validating (Checkpointing ... Verifying, RollingBack). */
gw_rc pmig_move(struct pmig *p) GW_MUST_CHECK;
/* Enters RollingBack with reason (the rollback's steps run on the next reconcile). */
void pmig_rollback(struct pmig *p, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* An ended migration: checkpoint retention, and the finalizer once it is being deleted. */
gw_rc pmig_settle(struct pmig *p) GW_MUST_CHECK;

/* audit.c: one JSON line per action on a pod or a node (checkpoint, transfer,
 * create-restored-pod, probe, detach, attach, delete-source-pod, delete-restored-pod, release,
 * remove-checkpoint). */
void pmig_audit(struct pmig *p, const char *action, const char *node, const char *pod, bool ok,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void pmig_observe_freeze(long long ms);
void pmig_observe_transfer(long long bytes);
/* A migration ended: moved, or rolled back for that reason. */
void pmig_observe_end(bool completed, const char *rollback_reason);
struct strbuf;
gw_rc pmig_metrics(struct strbuf *sb) GW_MUST_CHECK;

/* A condition, with an Event when a phase changes (PhaseTransition). */
void pmig_cond(struct pmig *p, const char *type, const char *status, const char *reason,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Enters phase with a PhaseTransition Event saying why. */
void pmig_phase(struct pmig *p, int phase, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Ends the migration Failed (Complete=False) with reason, before anything was frozen. */
void pmig_refuse(struct pmig *p, const char *cond, const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* The cached copy (a new object) of an object of gvr (ns NULL: cluster-scoped), or NULL. */
cJSON *pmig_cached(struct pmig *p, const struct kube_gvr *gvr, const char *ns, const char *name);

/* validate.c: the Validating phase. */
gw_rc pmig_validate(struct pmig *p) GW_MUST_CHECK;

/* policy.c */
/* Whether a label selector (matchLabels, matchExpressions) selects labels. */
bool pmig_selects(const cJSON *selector, const cJSON *labels);
/* Whether every pair of the map want is in labels. */
bool pmig_labels_have(const cJSON *want, const cJSON *labels);

struct pmig_verdict {
  bool ok, wait;          /* ok: allowed; wait: not now (how many at once) */
  char why[1024];
  char reason[48];
  char policy[254];       /* the most restrictive policy's name (maxConcurrent) */
  int64_t freeze_budget_ms;
  bool stop_and_copy_ok;  /* every applicable policy allows StopAndCopy */
  const cJSON *dest_selectors[PG_POLICIES_MAX]; /* borrowed from the policies' copies */
  size_t ndest;
  cJSON *policies[PG_POLICIES_MAX]; /* the applicable policies (owned) */
  size_t n;
};
/* The applicable MigrationPolicies of pod, and whether the strategy is allowed and the
 * concurrency leaves room; the destination's labels are checked with pmig_policy_dest. */
gw_rc pmig_policy(struct pmig *p, const cJSON *pod, const char *strategy,
                  struct pmig_verdict *v) GW_MUST_CHECK;
bool pmig_policy_dest(const struct pmig_verdict *v, const cJSON *node_labels);
void pmig_verdict_release(struct pmig_verdict *v);

gw_rc podmotion_register(struct mgr *m, const struct pmig_opts *o) GW_MUST_CHECK;

#endif
