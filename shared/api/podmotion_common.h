/* Names shared by the migration.podmotion.io kinds. */
#ifndef GW_PODMOTION_COMMON_H
#define GW_PODMOTION_COMMON_H

#include <cJSON.h>

#include "api/api.h"

#define PODMOTION_GROUP "migration.podmotion.io"

/*
 * PodMigration is split in two files: podmigration.c holds the hub (v1beta1) schema, the rules,
 * defaulting and warnings; podmigration_convert.c holds v1alpha1 and its conversion. These are
 * what each needs from the other.
 */
extern const char *const podmigration_strategy_types[];   /* PreCopy, StopAndCopy */
extern const char *const podmigration_verification_modes[]; /* ReadinessProbe, HTTPGet, ... */
extern const struct sch_field podmigration_status_fields[]; /* the same in both versions */

extern const struct sch_field podmigration_v1alpha1_spec[];
extern const struct conv_move podmigration_v1alpha1_moves[];
extern const struct conv_move podmigration_v1alpha1_aliases[];

#endif
