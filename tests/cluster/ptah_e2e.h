/*
 * ptah_e2e.h: the Ptah end-to-end tests' helpers (tests/cluster/test_ptah_*.c), on the e2e
 * fixture (e2e.h) started with only the target server: the database "shop" owned by dst_app,
 * its URI in the Secret "dst". Every helper asserts on failure.
 */
#ifndef GW_TESTS_PTAH_E2E_H
#define GW_TESTS_PTAH_E2E_H

#include <stdbool.h>
#include <stddef.h>

#include "e2e.h"

/* A PtahMigration "shop" of the database in Secret "dst", migrations in ConfigMap
 * "shop-migrations"; append spec fields two spaces in. */
#define PTAH_HEAD                                                                              \
  "apiVersion: ptah.run/v1\n"                                                                 \
  "kind: PtahMigration\n"                                                                     \
  "metadata: {name: shop}\n"                                                                  \
  "spec:\n"                                                                                   \
  "  database: {connectionSecretRef: {name: dst}}\n"                                          \
  "  migrations: {configMapRef: {name: shop-migrations}}\n"

/* e2e_start with the target only; the waits and Event helpers read PtahMigrations. */
void ptah_start(struct e2e *e, const struct e2e_opts *o);
/* kubectl apply of a ConfigMap with keys and values (NULL-terminated pairs). */
void ptah_configmap(struct e2e *e, const char *name, const char *const *kv);
/* status (or any) field of PtahMigration name: -1 / "" when absent (thread-local buffer). */
long long ptah_int(struct e2e *e, const char *name, const char *path);
const char *ptah_str(struct e2e *e, const char *name, const char *path);
/* Waits until status.currentVersion is v and no operation is in flight. */
bool ptah_wait_version(struct e2e *e, const char *name, long long v, int timeout_ms);
/* The PtahResultRecord's status.phase ("" when absent). */
const char *ptah_record_phase(struct e2e *e, const char *record);
/* An Event of that type and reason on the object name (of e->kind); Events are recorded after
 * the status writes tests wait for, so this waits up to 10 s for one. */
bool ptah_has_event(struct e2e *e, const char *name, const char *type, const char *reason);
/* user creates a PtahMigrationRunAcknowledgment of "shop" with kubectl. */
void ptah_acknowledge(struct e2e *e, const char *user, const char *ack, const char *operation,
                      const char *outcome);
/* Waits until a session of the shop database runs a query containing needle, then SIGKILLs the
 * process group of the running runner container of PtahMigration name. */
void ptah_kill_runner_during(struct e2e *e, const char *name, const char *needle);
/* The annotation operator.ptah.run/unresolved-run of name ("" when absent). */
const char *ptah_unresolved_annotation(struct e2e *e, const char *name);

/* ---- PtahSchema "orders" of the database in Secret "dst" ---- */

#define ORDERS_V1 "CREATE TABLE public.orders (id bigint PRIMARY KEY, placed_at timestamptz NOT NULL);"
#define ORDERS_V2                                                                               \
  "CREATE TABLE public.orders (id bigint PRIMARY KEY, placed_at timestamptz NOT NULL,"          \
  " note text);"

/* ptah_start (faults: the API server's fault injection; no_controller: started later), the
 * waits and Event helpers reading PtahSchemas; dst_app gets CREATEDB (the plan engine's scratch
 * database). */
void psch_start(struct e2e *e, bool faults);
void psch_start_opts(struct e2e *e, const struct e2e_opts *o);
/* kubectl apply -f of yaml as user; the exit code, output in *out (may be NULL). */
int psch_apply_as(struct e2e *e, const char *user, char **out, const char *yaml);
/* user applies PtahSchema "orders" with spec.schema.sql (a YAML double-quoted string) and more
 * spec lines (two spaces in, or NULL); asserts success. */
void psch_schema(struct e2e *e, const char *user, const char *sql, const char *more);
/* user creates PtahSchemaApproval name of "orders" for digest (planAuthor when not NULL); the
 * kubectl exit code, output in *out. */
int psch_approve(struct e2e *e, const char *user, const char *name, const char *digest,
                 const char *plan_author, char **out);
/* The approval's status.phase ("" when absent), thread-local buffer; wait for one. */
const char *psch_approval_phase(struct e2e *e, const char *name);
bool psch_wait_approval(struct e2e *e, const char *name, const char *phase, int timeout_ms);
/* Events of that reason on the approval, once there are min or after timeout_ms. */
int psch_approval_events(struct e2e *e, const char *name, const char *reason, int min,
                         int timeout_ms);
/* Waits for the phase of "orders"; asserts with its state on timeout. */
void psch_want_phase(struct e2e *e, const char *phase, int timeout_ms);
/* Waits until "orders" waits for an approval of a plan other than not_digest (NULL: any); the
 * digest into out. */
void psch_want_new_plan(struct e2e *e, const char *not_digest, char *out, size_t len);
/* Whether public.<table> of database shop has the column. */
bool psch_has_column(struct e2e *e, const char *table, const char *column);

#endif
