/*
 * leader.h: leader election through a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it.
 *
 * The Lease's spec is the record: holderIdentity, leaseDurationSeconds, acquireTime and
 * renewTime (RFC 3339 with microseconds), leaseTransitions. Every retry period (2 s, jittered by
 * up to 20 % while waiting) a candidate reads the Lease:
 *  - no Lease: it creates one holding it;
 *  - held by another: it waits until the record has not changed for leaseDurationSeconds of ITS
 *    OWN monotonic clock (the holder's timestamps are never compared with local time, so clock
 *    skew cannot end a lease early); an empty holderIdentity is free at once;
 *  - free or expired: it writes itself in (acquireTime now, leaseTransitions + 1) with the
 *    Lease's resourceVersion, so of two candidates exactly one wins (the other gets 409).
 * The leader renews every retry period. If no renewal succeeded for the renew deadline (10 s,
 * shorter than the 15 s lease, so the leader gives up before anyone else may take over), it
 * stops leading: on_stopped runs and the elector ends (the process should exit, as controller-
 * runtime does). leader_is_leader() answers false as soon as the last successful renewal (timed
 * from the start of its request) is older than the renew deadline, even before the elector
 * notices, so workers can check it before each reconcile.
 *
 * leader_release() stops the elector; a leader then gives the Lease up (holderIdentity "",
 * leaseDurationSeconds 1), so a standby takes over at its next retry instead of waiting for the
 * lease to expire. Call it after the workers have drained.
 *
 * Callbacks run on the elector's thread. Use a client with a short request timeout and few
 * retries (main.c makes one), so a hung request cannot outlive the renew deadline unnoticed.
 */
#ifndef GW_CTRL_LEADER_H
#define GW_CTRL_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"
#include "rc.h"

struct recorder;

struct leader_opts {
  const char *namespace; /* of the Lease */
  const char *name;      /* the Lease */
  const char *identity;  /* holderIdentity: POD_NAME, or hostname_pid */
  int lease_duration_s;  /* default 15 */
  int renew_deadline_ms; /* default 10000 */
  int retry_period_ms;   /* default 2000 */
  void (*on_started)(void *ctx);
  void (*on_stopped)(void *ctx);
  void (*on_new_leader)(void *ctx, const char *identity); /* the holder changed (may be "") */
  void *ctx;
  struct recorder *events; /* optional: "<identity> became leader" Events on the Lease */
};

struct leader;

gw_rc leader_new(struct leader **out, struct kube_client *k, const struct leader_opts *o)
  GW_MUST_CHECK;
gw_rc leader_start(struct leader *l) GW_MUST_CHECK;
/* Leading, and renewed within the renew deadline. */
bool leader_is_leader(struct leader *l);
/* The elector ended because leadership was lost. */
bool leader_lost(struct leader *l);
/* The holder last observed ("" when none). */
void leader_holder(struct leader *l, char *buf, size_t len);
const char *leader_identity(const struct leader *l);
/* Stops the elector and, when leading, gives the Lease up. */
gw_rc leader_release(struct leader *l);
void leader_free(struct leader *l);

struct leader_stats {
  bool leading;
  uint64_t acquired;        /* times this process became leader */
  uint64_t renew_failures;  /* failed renewals while leading */
  int64_t transitions;      /* leaseTransitions last observed */
};
void leader_stats(struct leader *l, struct leader_stats *out);

#endif
