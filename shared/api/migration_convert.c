/*
 * Migration v1alpha1 <-> v1 (the hub).
 *
 * v1alpha1 is flat. Renames carry the Secret names, tableJobs and the image; the transforms
 * carry what a rename cannot say:
 *   spec.live: true          <-> spec.follow present (false: absent); the hub's absent follow
 *                                always reads back as live: false, v1alpha1's default
 *   spec.maxCatchupLag       <-> spec.follow.maxCatchupLag
 *   spec.manualCutover bool  <-> spec.cutover.mode Manual / Automatic
 * Everything else v1 holds (keys, clone options, approvals, ...) travels in the engine's
 * godwit.dev/v1-fields annotation. One v1alpha1 state has no v1 shape: a maxCatchupLag on a
 * migration that is not live (invalid, refused by validation, but conversion must not lose
 * it). It travels the other way, in godwit.dev/v1alpha1-fields on the v1 object.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/migration.h"
#include "json.h"

const struct sch_field migration_v1alpha1_spec[] = {
  { .name = "sourceSecret", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "Name of the Secret holding the source's connection URI under the key \"uri\" "
            "(v1: spec.source.connectionSecretRef). Immutable." },
  { .name = "targetSecret", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "Name of the Secret holding the target's connection URI under the key \"uri\" "
            "(v1: spec.target.connectionSecretRef). Immutable." },
  { .name = "tableJobs", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 128,
    .desc = "How many tables pgcopydb copies at once (v1: spec.clone.tableJobs); 4 by "
            "default." },
  { .name = "live", .type = SCH_BOOL, .dflt = "false",
    .desc = "Stream changes after the clone until the cutover (v1: spec.follow present)." },
  { .name = "maxCatchupLag", .type = SCH_QUANTITY,
    .desc = "The lag in bytes at or below which a live migration counts as caught up "
            "(v1: spec.follow.maxCatchupLag, default 16Mi). Only with live: true." },
  { .name = "manualCutover", .type = SCH_BOOL,
    .desc = "true: wait for an approval before the cutover; false: cut over once caught up "
            "(v1: spec.cutover.mode Manual or Automatic). Approve through v1 "
            "(spec.cutover.approved)." },
  { .name = "backoffLimit", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 0,
    .max = MIGRATION_BACKOFF_LIMIT_MAX,
    .desc = "How many times a failed worker attempt is retried; 6 by default." },
  { .name = "dryRun", .type = SCH_BOOL, .dflt = "false",
    .desc = "Run only the preflight checks. Immutable." },
  { .name = "suspend", .type = SCH_BOOL, .dflt = "false",
    .desc = "Stop the worker and hold until set back to false." },
  { .name = "image", .type = SCH_STRING, .format = &fmt_image,
    .desc = "The pgcopydb image of the runner Jobs (v1: spec.worker.image)." },
  { 0 }
};

const struct sch_field migration_v1alpha1_status[] = {
  { .name = "phase", .type = SCH_STRING, .enums = migration_phases,
    .desc = "One word for what the migration is doing now." },
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields, .desc = "Standard conditions (metav1.Condition)." },
  { .name = "attempts", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "How many worker attempts have started." },
  { .name = "lagBytes", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The replication lag in bytes at the last sample." },
  { 0 }
};

const struct conv_move migration_v1alpha1_moves[] = {
  { "spec.sourceSecret", "spec.source.connectionSecretRef.name" },
  { "spec.targetSecret", "spec.target.connectionSecretRef.name" },
  { "spec.tableJobs", "spec.clone.tableJobs" },
  { "spec.image", "spec.worker.image" },
  { NULL, NULL }
};

/* Error paths of v1 fields the transforms fill, and of objects v1alpha1 names by one field.
 * Fields only the annotation can carry keep their v1 path. */
const struct conv_move migration_v1alpha1_aliases[] = {
  { "spec.sourceSecret", "spec.source" },
  { "spec.sourceSecret", "spec.source.connectionSecretRef" },
  { "spec.source.connectionSecretRef.key", "spec.source.connectionSecretRef.key" },
  { "spec.targetSecret", "spec.target" },
  { "spec.targetSecret", "spec.target.connectionSecretRef" },
  { "spec.target.connectionSecretRef.key", "spec.target.connectionSecretRef.key" },
  { "spec.live", "spec.follow" },
  { "spec.maxCatchupLag", "spec.follow.maxCatchupLag" },
  { "spec.manualCutover", "spec.cutover" },
  { "spec.manualCutover", "spec.cutover.mode" },
  { "spec.cutover.approved", "spec.cutover.approved" },
  { "spec.cutover.approvedBy", "spec.cutover.approvedBy" },
  { NULL, NULL }
};

/* ---- the v1alpha1-only stash on v1 objects ---- */

static cJSON *stash_read(const cJSON *obj)
{
  const cJSON *ann = json_get(obj, "metadata.annotations");
  const char *text = cJSON_GetStringValue(
    cJSON_GetObjectItemCaseSensitive(ann, MIGRATION_V1ALPHA1_FIELDS_ANNOTATION));
  cJSON *v = NULL;
  char err[128];
  if(!text || json_parse_strict(text, strlen(text), &v, err, sizeof(err)))
    return NULL;
  return v;
}

cJSON *migration_stashed_lag(const cJSON *obj)
{
  cJSON *stash = stash_read(obj);
  cJSON *lag = json_detach(stash, "spec.maxCatchupLag");
  cJSON_Delete(stash);
  return lag;
}

static gw_rc stash_write(cJSON *obj, cJSON *lag)
{
  cJSON *stash = cJSON_CreateObject();
  gw_rc rc = stash ? json_set(stash, "spec.maxCatchupLag", lag) : GW_ENOMEM;
  if(!stash)
    cJSON_Delete(lag);
  char *text = rc ? NULL : json_print_canonical(stash);
  cJSON_Delete(stash);
  if(!rc && !text)
    rc = GW_ENOMEM;
  const char *last;
  cJSON *ann = rc ? NULL : json_ensure_parent(obj, "metadata.annotations.x", &last);
  if(!rc && !ann)
    rc = GW_EINVAL;
  if(!rc) {
    cJSON_DeleteItemFromObjectCaseSensitive(ann, MIGRATION_V1ALPHA1_FIELDS_ANNOTATION);
    if(!cJSON_AddStringToObject(ann, MIGRATION_V1ALPHA1_FIELDS_ANNOTATION, text))
      rc = GW_ENOMEM;
  }
  if(text)
    cJSON_free(text);
  return rc;
}

/* Takes the stash back into spec (absent fields only) and drops the annotation. */
static gw_rc stash_restore(cJSON *obj, cJSON *spec)
{
  cJSON *stash = stash_read(obj);
  if(!stash)
    return GW_OK;
  cJSON *lag = json_detach(stash, "spec.maxCatchupLag");
  cJSON_Delete(stash);
  gw_rc rc = GW_OK;
  if(lag && !cJSON_GetObjectItemCaseSensitive(spec, "maxCatchupLag"))
    rc = cJSON_AddItemToObject(spec, "maxCatchupLag", lag) ? GW_OK : GW_ENOMEM;
  else
    cJSON_Delete(lag);
  cJSON *ann = json_get_mut(obj, "metadata.annotations");
  cJSON_DeleteItemFromObjectCaseSensitive(ann, MIGRATION_V1ALPHA1_FIELDS_ANNOTATION);
  if(cJSON_IsObject(ann) && !ann->child)
    json_remove(obj, "metadata.annotations");
  return rc;
}

/* ---- transforms ---- */

gw_rc migration_v1alpha1_to_hub(cJSON *obj)
{
  cJSON *spec = json_get_mut(obj, "spec");
  if(!cJSON_IsObject(spec))
    return GW_OK;
  cJSON *live = json_detach(spec, "live");
  cJSON *lag = json_detach(spec, "maxCatchupLag");
  cJSON *manual = json_detach(spec, "manualCutover");
  gw_rc rc = GW_OK;
  if(cJSON_IsTrue(live)) {
    cJSON *follow = cJSON_CreateObject();
    if(follow && lag) {
      cJSON_AddItemToObject(follow, "maxCatchupLag", lag);
      lag = NULL;
    }
    rc = json_set(spec, "follow", follow);
  } else if(lag) {
    rc = stash_write(obj, lag);
    lag = NULL;
  }
  if(!rc && cJSON_IsBool(manual))
    rc = json_set_str(spec, "cutover.mode", cJSON_IsTrue(manual) ? "Manual" : "Automatic");
  cJSON_Delete(live);
  cJSON_Delete(lag);
  cJSON_Delete(manual);
  return rc;
}

static gw_rc follow_from_hub(cJSON *obj, cJSON *spec)
{
  cJSON *follow = json_detach(spec, "follow");
  gw_rc rc = GW_OK;
  if(cJSON_IsObject(follow)) {
    cJSON *lag = json_detach(follow, "maxCatchupLag");
    if(lag && !cJSON_AddItemToObject(spec, "maxCatchupLag", lag))
      rc = GW_ENOMEM;
    if(!rc && !cJSON_AddBoolToObject(spec, "live", 1))
      rc = GW_ENOMEM;
    if(follow->child) { /* members v1alpha1 cannot hold: the annotation carries them */
      cJSON_AddItemToObject(spec, "follow", follow);
      follow = NULL;
    }
  } else {
    if(!cJSON_AddBoolToObject(spec, "live", 0))
      rc = GW_ENOMEM;
    if(!rc)
      rc = stash_restore(obj, spec);
  }
  cJSON_Delete(follow);
  return rc;
}

static gw_rc cutover_from_hub(cJSON *spec)
{
  const char *mode = json_get_str(spec, "cutover.mode");
  if(!mode || (strcmp(mode, "Manual") && strcmp(mode, "Automatic")))
    return GW_OK; /* an unknown mode travels in the annotation as it is */
  bool manual = !strcmp(mode, "Manual");
  json_remove(spec, "cutover.mode");
  const cJSON *cutover = json_get(spec, "cutover");
  if(cJSON_IsObject(cutover) && !cutover->child)
    json_remove(spec, "cutover");
  return cJSON_AddBoolToObject(spec, "manualCutover", manual) ? GW_OK : GW_ENOMEM;
}

gw_rc migration_v1alpha1_from_hub(cJSON *obj)
{
  cJSON *spec = json_get_mut(obj, "spec");
  if(!cJSON_IsObject(spec))
    return GW_OK;
  gw_rc rc = follow_from_hub(obj, spec);
  if(!rc)
    rc = cutover_from_hub(spec);
  return rc;
}
