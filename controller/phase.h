/*
 * phase.h: a kind's phases and the transitions between them, declared once as a table that the
 * status edit (edit.h) enforces on every write, as CloudNativePG declares its cluster phases
 * beside its API types.
 *
 *   enum { P_PENDING, P_RUNNING, P_DONE, P_SUSPENDED, P_COUNT };
 *   static const char *const names[P_COUNT] = { "Pending", "Running", "Done", "Suspended" };
 *   static const unsigned next[P_COUNT] = {
 *     [P_PENDING] = PHASE_BIT(P_RUNNING) | PHASE_BIT(P_SUSPENDED),
 *     [P_RUNNING] = PHASE_BIT(P_DONE) | PHASE_BIT(P_SUSPENDED),
 *   };
 *   const struct phase_table table = { "Widget", names, next, P_COUNT, P_PENDING, P_SUSPENDED,
 *                                      "suspendedFrom", "startTime" };
 *
 * Phases are indexes (at most PHASE_MAX); PHASE_NONE is "no phase yet" (status.phase absent or
 * unknown). Staying in a phase is always allowed; from PHASE_NONE only to the initial phase;
 * from the suspended phase (if the kind has one) only back to the phase recorded in
 * status.<resume_field>.
 */
#ifndef GW_CTRL_PHASE_H
#define GW_CTRL_PHASE_H

#include <stdbool.h>

#define PHASE_NONE (-1)
#define PHASE_MAX 32
#define PHASE_BIT(p) (1u << (p))

struct phase_table {
  const char *kind;               /* for logs: "Migration" */
  const char *const *names;       /* count names, as status.phase spells them */
  const unsigned *next;           /* per phase, PHASE_BIT()s of the phases it may move to */
  int count;
  int initial;                    /* the only phase a new object may enter */
  int suspended;                  /* PHASE_NONE when the kind cannot be suspended */
  const char *resume_field;       /* under status.: the phase a suspension interrupted */
  const char *start_field;        /* under status.: stamped with the time of the first write
                                   * (NULL: none) */
};

const char *phase_name(const struct phase_table *t, int p); /* "" for PHASE_NONE */
int phase_parse(const struct phase_table *t, const char *s); /* PHASE_NONE when unknown */
/* Whether from -> to is allowed; resume_to is the phase recorded at resume_field (only read
 * when from is the suspended phase). */
bool phase_allowed(const struct phase_table *t, int from, int to, int resume_to);

#endif
