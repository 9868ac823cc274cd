/*
 * migration.h: what the Migration kind (pgcopydb.io) shares between its files and with the
 * controller that names its runner Jobs.
 *
 * Runner Jobs are named "<name>-<step>-<attempt>", and the Job controller copies a Job's name
 * into a label value, which Kubernetes caps at 63 characters. The longest step name and the
 * largest attempt number therefore bound the name of a Migration: MIGRATION_NAME_MAX, which the
 * admission rules enforce on CREATE. Attempts are numbered from 1 to backoffLimit + 1, so the
 * schema's maximum backoffLimit fixes the digits an attempt takes. Adding a step with a longer
 * name, or raising MIGRATION_BACKOFF_LIMIT_MAX past 98, changes the limit: tests assert both.
 */
#ifndef GW_API_MIGRATION_H
#define GW_API_MIGRATION_H

#include <cJSON.h>

#include "api/api.h"
#include "rc.h"

#define MIGRATION_GROUP "pgcopydb.io"

/* The runner steps, NULL-terminated; a Job is "<name>-<step>-<attempt>". */
extern const char *const migration_steps[];
#define MIGRATION_LONGEST_STEP "preflight"

#define MIGRATION_BACKOFF_LIMIT_MAX 50 /* attempts 1..51: two digits */
/* The defaults the mutating webhook writes, and the controller assumes where a spec that
 * slipped past a disabled webhook lacks them. */
#define MIGRATION_DEFAULT_BACKOFF_LIMIT 6
#define MIGRATION_DEFAULT_WORK_DIR "10Gi"
#define MIGRATION_ATTEMPT_DIGITS 2
#define MIGRATION_LABEL_VALUE_MAX 63
#define MIGRATION_NAME_MAX                                                                \
  (MIGRATION_LABEL_VALUE_MAX - (int)(sizeof("-" MIGRATION_LONGEST_STEP "-") - 1) -       \
   MIGRATION_ATTEMPT_DIGITS)
/* The apiserver appends 5 random characters to metadata.generateName. */
#define MIGRATION_GENERATE_NAME_MAX (MIGRATION_NAME_MAX - 5)

/* status.phase values, in the order a migration moves through them (Suspended last: it can
 * interrupt any other). NULL-terminated. */
extern const char *const migration_phases[];

/* The v1alpha1 tables and transforms (migration_convert.c). */
extern const struct sch_field migration_v1alpha1_spec[];
extern const struct sch_field migration_v1alpha1_status[];
extern const struct conv_move migration_v1alpha1_moves[];
extern const struct conv_move migration_v1alpha1_aliases[];
gw_rc migration_v1alpha1_to_hub(cJSON *obj) GW_MUST_CHECK;
gw_rc migration_v1alpha1_from_hub(cJSON *obj) GW_MUST_CHECK;

/* A v1alpha1 spec.maxCatchupLag on a migration that is not live has no place in v1: it travels
 * in this annotation of the v1 object ({"spec":{"maxCatchupLag":...}}) and is refused by
 * validation, which reads it back with migration_stashed_lag(). */
#define MIGRATION_V1ALPHA1_FIELDS_ANNOTATION "godwit.dev/v1alpha1-fields"
/* The stashed value (a new reference the caller deletes), or NULL. */
cJSON *migration_stashed_lag(const cJSON *obj);

#endif
