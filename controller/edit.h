/*
 * edit.h: what one reconcile decides about its object, queued and then written once through
 * the /status subresource: the phase (checked against the kind's phase table), conditions,
 * status fields, and the Events that go with them. Any kind's reconciler uses it.
 *
 *   struct status_edit ed;
 *   edit_init(&ed, &widget_phases);
 *   edit_cond(&ed, "Ready", COND_TRUE, "Done", "all %d steps passed", n);
 *   edit_set_int(&ed, "attempts", 2);                  // status.attempts
 *   edit_event_if_cond(&ed, "Ready", EV_NORMAL, "Done", "...");
 *   edit_requeue(&ed, 5000);
 *   gw_rc rc = edit_commit(&ed, rc_ctx, &obj);          // one write; obj becomes the stored one
 *
 * The write (edit_commit) re-applies the queue to the freshest object on a 409 (rec_update_status)
 * but refuses to apply it to an object that moved meanwhile (another phase, or another
 * resourceVersion than the one decided from: GW_ECONFLICT, decide again). A phase change the
 * table forbids is refused (GW_EINVAL, logged: a bug). Nothing is written when nothing changes.
 * Conditions follow conditions.h (lastTransitionTime moves only with status); every write stamps
 * observedGeneration; status.<start_field> is set on the first write.
 *
 * Events are emitted after the write, on the stored object: always, only if the write changed
 * something, only if the phase changed, or only if a given condition's status or reason changed
 * (so a reconcile that repeats a decision repeats no Event).
 *
 * Limits: EDIT_MAX_* rows per reconcile. Running out is a bug of the reconciler, reported as
 * such (GW_ETOOBIG and a log line naming the table), not as "out of memory".
 */
#ifndef GW_CTRL_EDIT_H
#define GW_CTRL_EDIT_H

#include <cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "manager.h"
#include "phase.h"
#include "rc.h"

struct rec_ctx;

#define EDIT_MAX_CONDS 16
#define EDIT_MAX_FIELDS 32
#define EDIT_MAX_EVENTS 16

enum edit_ev_dep { EVD_ALWAYS, EVD_WRITTEN, EVD_PHASE, EVD_COND };

struct edit_cond {
  char type[32], status[8], reason[48];
  char *message;
  bool remove;
  bool changed; /* status or reason moved on the last application */
};

struct edit_field {
  char path[64]; /* under status. */
  cJSON *value;  /* NULL: remove */
};

struct edit_event {
  const char *type;
  char reason[48];
  char *message;
  enum edit_ev_dep dep;
  char dep_type[32];
};

struct status_edit {
  const struct phase_table *phases;
  int expect;            /* the phase decided from; a fresh object elsewhere is a conflict */
  char expect_rv[64];    /* the resourceVersion decided from ("": any) */
  int phase;             /* PHASE_NONE: unchanged */
  bool phase_changed;
  struct edit_cond conds[EDIT_MAX_CONDS];
  size_t nconds;
  struct edit_field fields[EDIT_MAX_FIELDS];
  size_t nfields;
  struct edit_event events[EDIT_MAX_EVENTS];
  size_t nevents;
  bool oom;              /* an allocation failed: GW_ENOMEM */
  const char *full;      /* the table that ran out of rows ("conditions", ...), or NULL */
  long requeue_ms;       /* the soonest look asked for (0: none); edit_commit keeps it */
  bool written;          /* the last edit_commit wrote the object */
};

/* The next look after a write: the write comes back through the watch and reconciles the object
 * at once, from a cache that has it; a sooner requeue would decide again from the cache before
 * it has caught up (a 409 and a second write). The requeue stays as the fallback for a watch
 * that is down. */
#define EDIT_SETTLE_MS 250
/* The delay to ask of the queue after this reconcile: requeue_ms, at least EDIT_SETTLE_MS after
 * a write; 0: none. */
long edit_next_look(const struct status_edit *ed);

void edit_init(struct status_edit *ed, const struct phase_table *phases);
/* Frees the queued rows (not requeue_ms). */
void edit_release(struct status_edit *ed);

void edit_phase(struct status_edit *ed, int phase);
void edit_cond(struct status_edit *ed, const char *type, const char *status, const char *reason,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* edit_cond with a va_list, for a kind's own printf-like wrappers (its Ready condition). */
void edit_vcond(struct status_edit *ed, const char *type, const char *status, const char *reason,
                const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
void edit_cond_remove(struct status_edit *ed, const char *type);
/* status.<path> (path without the prefix); takes v (NULL removes). */
void edit_set(struct status_edit *ed, const char *path, cJSON *v);
void edit_set_int(struct status_edit *ed, const char *path, long long v);
void edit_set_str(struct status_edit *ed, const char *path, const char *v);
void edit_set_bool(struct status_edit *ed, const char *path, bool v);
void edit_set_now(struct status_edit *ed, const char *path);
void edit_unset(struct status_edit *ed, const char *path);
/* The condition queued for type in this reconcile, or NULL (none, or a removal). */
const struct edit_cond *edit_queued_cond(const struct status_edit *ed, const char *type);
/* The value queued for status.<path> in this reconcile, or NULL (none, or a removal). */
const cJSON *edit_queued(const struct status_edit *ed, const char *path);

void edit_event(struct status_edit *ed, const char *type, const char *reason, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));
void edit_event_if_written(struct status_edit *ed, const char *type, const char *reason,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void edit_event_if_phase(struct status_edit *ed, const char *type, const char *reason,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void edit_event_if_cond(struct status_edit *ed, const char *cond_type, const char *type,
                        const char *reason, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));

/* Asks for another look in ms (the soonest of all asks wins). */
void edit_requeue(struct status_edit *ed, long ms);

/* The reconcile's result after edit_commit: rc (the step's, else the commit's) GW_ECONFLICT
 * decides again from a fresh copy after 500 ms, GW_ENOTFOUND is done (the object is gone), any
 * other error is retried with backoff, success looks again as the edit asked (edit_next_look). */
struct rec_result edit_result(const struct status_edit *ed, gw_rc rc);

/* Applies the queue to obj (the mutation edit_commit makes; exposed for tests). */
gw_rc edit_apply(struct status_edit *ed, cJSON *obj, const char *key, bool *changed)
  GW_MUST_CHECK;
/* Writes the queue (when it changes anything) through /status, decided from *obj, then emits
 * the Events; on success *obj is replaced by the stored object. Releases the queue. */
gw_rc edit_commit(struct status_edit *ed, struct rec_ctx *rc, cJSON **obj) GW_MUST_CHECK;

#endif
