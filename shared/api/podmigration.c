/*
 * PodMigration (migration.podmotion.io): move one running pod to another node with a CRIU
 * checkpoint and restore. v1beta1 is the hub; v1alpha1 (flat) is in podmigration_convert.c.
 *
 * The safety promise of seed 004: the source pod is never deleted before the condition
 * TrafficVerified is True. The rules here keep a spec from weakening it by accident (a probe
 * that the chosen mode would never run) and keep a running migration's plan from changing under
 * the controller (source always; destination, strategy and policy once started; verification
 * once it has begun; anything once finished, except asking to delete a retained checkpoint).
 */
#include <stdio.h>
#include <string.h>

#include "api/podmotion_common.h"
#include "json.h"

const char *const podmigration_strategy_types[] = { "PreCopy", "StopAndCopy", NULL };
const char *const podmigration_verification_modes[] = { "ReadinessProbe", "HTTPGet", "TCPSocket",
                                                        "None", NULL };
static const char *const http_schemes[] = { "HTTP", "HTTPS", NULL };
static const char *const retentions[] = { "Delete", "Retain", "RetainOnFailure", NULL };
/* TrafficVerified is a condition, never a phase (seed 004). */
static const char *const phases[] = { "Pending",     "Validating", "PreCopying", "Checkpointing",
                                      "Transferring", "Restoring", "Verifying",  "RollingBack",
                                      "Completed",   "Failed",     "Cancelled",  NULL };

/* Below this many seconds a verification timeout earns a warning. */
#define SHORT_VERIFICATION_SECONDS 15

static const struct sch_field source_fields[] = {
  { .name = "podName", .type = SCH_STRING, .flags = SCH_REQUIRED,
    .format = &fmt_dns1123_subdomain,
    .desc = "Name of the pod to move, in the PodMigration's namespace. The pod keeps running "
            "on its node until the restored copy has passed verification." },
  { 0 }
};

static const struct sch_field destination_fields[] = {
  { .name = "nodeName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the node to move the pod to. Set exactly one of nodeName and "
            "nodeSelector." },
  { .name = "nodeSelector", .type = SCH_MAP, .item = SCH_STRING,
    .key_format = &fmt_qualified_name, .format = &fmt_label_value, .max_items = 32,
    .desc = "Labels the destination node must carry; the controller picks one such node other "
            "than the source's. Must list at least one label." },
  { 0 }
};

static const struct sch_field precopy_fields[] = {
  { .name = "maxRounds", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 1,
    .max = 30, .dflt = "5",
    .desc = "Most memory copy rounds made while the pod keeps running, before the final "
            "frozen round; fewer rounds stop earlier when the dirty set stops shrinking. "
            "Capped by the admission policy's limits.maxPreCopyRounds (10 by default)." },
  { 0 }
};

static const struct sch_field strategy_fields[] = {
  { .name = "type", .type = SCH_STRING, .enums = podmigration_strategy_types,
    .dflt = "\"PreCopy\"",
    .desc = "PreCopy copies memory in rounds while the pod runs and freezes it only for the "
            "last dirty pages; StopAndCopy freezes the pod for the whole copy (simpler, longer "
            "freeze)." },
  { .name = "preCopy", .type = SCH_OBJECT, .fields = precopy_fields,
    .desc = "Pre-copy tuning; only with type PreCopy. Filled in on creation when type is "
            "PreCopy." },
  { 0 }
};

static const struct sch_field http_get_fields[] = {
  { .name = "path", .type = SCH_STRING, .max_len = 2048, .dflt = "\"/\"",
    .desc = "Absolute path to request on the restored pod, such as /healthz." },
  { .name = "port", .type = SCH_INT, .flags = SCH_REQUIRED | SCH_HAS_MIN | SCH_HAS_MAX,
    .min = 1, .max = 65535, .desc = "Container port to request." },
  { .name = "scheme", .type = SCH_STRING, .enums = http_schemes, .dflt = "\"HTTP\"",
    .desc = "HTTP or HTTPS (certificate not verified, as with kubelet probes)." },
  { 0 }
};

static const struct sch_field tcp_socket_fields[] = {
  { .name = "port", .type = SCH_INT, .flags = SCH_REQUIRED | SCH_HAS_MIN | SCH_HAS_MAX,
    .min = 1, .max = 65535, .desc = "Container port that must accept a TCP connection." },
  { 0 }
};

static const struct sch_field verification_fields[] = {
  { .name = "mode", .type = SCH_STRING, .enums = podmigration_verification_modes,
    .dflt = "\"ReadinessProbe\"",
    .desc = "The application probe that, with TCP flow ownership moved, sets TrafficVerified: "
            "ReadinessProbe (the pod's own readiness probes pass), HTTPGet, TCPSocket, or None "
            "(no application probe; flows alone)." },
  { .name = "timeoutSeconds", .type = SCH_INT, .flags = SCH_HAS_MIN | SCH_HAS_MAX, .min = 5,
    .max = 86400, .dflt = "60",
    .desc = "How long the restored pod has to pass verification before the migration rolls "
            "back to the source pod. Capped by the admission policy's "
            "limits.maxVerificationTimeoutSeconds (3600 by default)." },
  { .name = "httpGet", .type = SCH_OBJECT, .fields = http_get_fields,
    .desc = "The request whose 2xx or 3xx answer proves the application serves; required "
            "with mode HTTPGet, forbidden otherwise." },
  { .name = "tcpSocket", .type = SCH_OBJECT, .fields = tcp_socket_fields,
    .desc = "The port to connect to with mode TCPSocket; without it, every TCP port the "
            "pod's containers declare. Forbidden with other modes." },
  { 0 }
};

static const struct sch_field checkpoint_fields[] = {
  { .name = "retention", .type = SCH_STRING, .enums = retentions, .dflt = "\"Delete\"",
    .desc = "What happens to the checkpoint (a copy of the pod's memory, on the nodes' tmpfs) "
            "when the migration ends: Delete, Retain, or RetainOnFailure (kept only after a "
            "failed or cancelled migration). May change to Delete after the end." },
  { 0 }
};

static const struct sch_field v1beta1_spec[] = {
  { .name = "source", .type = SCH_OBJECT, .flags = SCH_REQUIRED, .fields = source_fields,
    .desc = "The pod to move. Immutable: to move another pod, create a new PodMigration." },
  { .name = "destination", .type = SCH_OBJECT, .fields = destination_fields,
    .desc = "Where to move the pod: exactly one of nodeName and nodeSelector. Required; "
            "cannot change once the migration has started." },
  { .name = "strategy", .type = SCH_OBJECT, .fields = strategy_fields, .dflt = "{}",
    .desc = "How memory is copied, which decides how long the pod stays frozen. Cannot change "
            "once the migration has started." },
  { .name = "verification", .type = SCH_OBJECT, .fields = verification_fields, .dflt = "{}",
    .desc = "How the restored pod is proven to serve before the source pod may be deleted. "
            "Cannot change once verification has begun." },
  { .name = "policyRef", .type = SCH_OBJECT, .fields = sch_local_ref_fields,
    .desc = "The MigrationPolicy to check the migration against. Without it, every "
            "MigrationPolicy of the namespace whose podSelector matches the pod applies." },
  { .name = "cancel", .type = SCH_BOOL,
    .desc = "Set to true to stop the migration: a started one rolls back and the source pod "
            "resumes. Cannot be set back to false." },
  { .name = "checkpoint", .type = SCH_OBJECT, .fields = checkpoint_fields, .dflt = "{}",
    .desc = "What to do with the checkpoint files when the migration ends." },
  { 0 }
};

static const struct sch_field checkpoint_status_fields[] = {
  { .name = "path", .type = SCH_STRING, .max_len = 4096,
    .desc = "Directory of the checkpoint on the nodes, under /run/podmotion/checkpoints/." },
  { .name = "sizeBytes", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Size of the checkpoint image." },
  { .name = "removed", .type = SCH_BOOL,
    .desc = "True once the controller has removed the checkpoint from both nodes." },
  { 0 }
};

const struct sch_field podmigration_status_fields[] = {
  { .name = "phase", .type = SCH_STRING, .enums = phases,
    .desc = "One word for what the migration is doing now; automation should wait on "
            "conditions instead. Completed, Failed and Cancelled are final." },
  { .name = "conditions", .type = SCH_ARRAY, .item = SCH_OBJECT, .flags = SCH_CONDITIONS,
    .fields = sch_condition_fields,
    .desc = "The 14 condition types of the migration (Scheduled ... TrafficVerified, "
            "RollingBack, Complete), as metav1.Condition." },
  { .name = "observedGeneration", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "The metadata.generation the controller last acted on." },
  { .name = "sourceNode", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The node the pod ran on when the migration started." },
  { .name = "destinationNode", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The node chosen for the restored pod." },
  { .name = "destinationPodName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "Name of the restored pod; it differs from the source's, which exists until "
            "TrafficVerified is True." },
  { .name = "policyName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The MigrationPolicy the migration was checked against." },
  { .name = "preCopyRounds", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Pre-copy rounds completed." },
  { .name = "freezeDuration", .type = SCH_STRING, .format = &fmt_duration,
    .desc = "How long the source pod was frozen for the final checkpoint, such as 312ms." },
  { .name = "checkpoint", .type = SCH_OBJECT, .fields = checkpoint_status_fields,
    .desc = "Where the checkpoint is and whether it was removed." },
  { .name = "strategy", .type = SCH_STRING, .enums = podmigration_strategy_types,
    .desc = "The strategy the migration runs with: spec.strategy.type, or StopAndCopy when the "
            "source node cannot track dirty pages and every applicable MigrationPolicy allows "
            "StopAndCopy (PreCopyStarted=False, DirtyTrackingUnavailable)." },
  { .name = "freezeBudget", .type = SCH_STRING, .format = &fmt_duration,
    .desc = "The longest freeze the applicable MigrationPolicies allow (the smallest "
            "freezeBudget)." },
  { .name = "startTime", .type = SCH_TIME,
    .desc = "When the controller started the migration." },
  { .name = "completionTime", .type = SCH_TIME,
    .desc = "When the migration reached Completed, Failed or Cancelled." },
  { 0 }
};

/* Where the stored object is in its life, from its status.phase. */
enum stage { ST_NEW, ST_STARTED, ST_VERIFYING, ST_FINISHED };

static enum stage stage_of(const cJSON *obj, const char **phase)
{
  const char *p = json_get_str(obj, "status.phase");
  *phase = p ? p : "";
  if(!p || !*p || !strcmp(p, "Pending"))
    return ST_NEW;
  if(!strcmp(p, "Completed") || !strcmp(p, "Failed") || !strcmp(p, "Cancelled"))
    return ST_FINISHED;
  if(!strcmp(p, "Verifying") || !strcmp(p, "RollingBack"))
    return ST_VERIFYING;
  return ST_STARTED;
}


static bool is_str(const cJSON *o, const char *path, const char *want)
{
  const char *s = json_get_str(o, path);
  return s && !strcmp(s, want);
}

/* Fails with the row's message, its placeholder (such as "{phase}") replaced by value: the
 * table keeps the exact text the docs show. */
static void fail_with(struct ferrs *e, const struct rule *r, const char *placeholder,
                      const char *value)
{
  const char *at = strstr(r->msg, placeholder);
  if(!at)
    rule_fail(e, r);
  else
    rule_failf(e, r, NULL, "%.*s%s%s", (int)(at - r->msg), r->msg, value,
               at + strlen(placeholder));
}

/* ---- CREATE and UPDATE ---- */

static void check_destination_set(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!json_get(c->obj, "spec.destination.nodeName") &&
     !json_get(c->obj, "spec.destination.nodeSelector"))
    rule_fail(e, r);
}

static void check_destination_one(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(json_get(c->obj, "spec.destination.nodeName") &&
     json_get(c->obj, "spec.destination.nodeSelector"))
    rule_fail(e, r);
}

static void check_selector_labels(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const cJSON *s = json_get(c->obj, "spec.destination.nodeSelector");
  if(cJSON_IsObject(s) && !s->child)
    rule_fail(e, r);
}

static void check_precopy(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(is_str(c->obj, "spec.strategy.type", "StopAndCopy") &&
     json_get(c->obj, "spec.strategy.preCopy"))
    rule_fail(e, r);
}

/* A policy limit on an integer; on UPDATE an unchanged value passes, so an admin lowering a
 * limit never blocks cancelling a migration admitted under the old one. */
static void check_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e,
                        int max, const char *name)
{
  const cJSON *v = json_get(c->obj, r->field);
  if(!max || !json_is_integer(v) || v->valuedouble <= max)
    return;
  if(api_unchanged(c, r->field))
    return;
  rule_failf(e, r, NULL, "is %d, above the admission policy's limit of %d (limits.%s); lower "
             "it or ask the cluster admin", v->valueint, max, name);
}

/* Without a policy (the controller re-validating a stored object) no limit is judged. */
static void check_rounds_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->policy)
    check_limit(c, r, e, c->policy->limits.max_pre_copy_rounds, "maxPreCopyRounds");
}

static void check_timeout_limit(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->policy)
    check_limit(c, r, e, c->policy->limits.max_verification_timeout_seconds,
                "maxVerificationTimeoutSeconds");
}

static void check_http_needed(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(is_str(c->obj, "spec.verification.mode", "HTTPGet") &&
     !json_get(c->obj, "spec.verification.httpGet"))
    rule_fail(e, r);
}

/* A probe the mode does not run would look like a guard on the source pod's deletion. */
static void probe_unused(const struct api_ctx *c, const struct rule *r, struct ferrs *e,
                         const char *mode)
{
  const char *m = json_get_str(c->obj, "spec.verification.mode");
  if(m && strcmp(m, mode) && json_get(c->obj, r->field))
    fail_with(e, r, "{mode}", m);
}

static void check_http_unused(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  probe_unused(c, r, e, "HTTPGet");
}

static void check_tcp_unused(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  probe_unused(c, r, e, "TCPSocket");
}

static void check_http_path(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *p = json_get_str(c->obj, r->field);
  if(p && (p[0] != '/' || strpbrk(p, " \t\r\n")))
    rule_failf(e, r, NULL, "must be an absolute path starting with '/' and without spaces, "
               "such as /healthz, got \"%.80s\"", p);
}

static const struct rule rules[] = {
  { "spec.destination", FERR_REQUIRED, check_destination_set,
    "is required: name the node to move the pod to, or select nodes by their labels with "
    "nodeSelector" },
  { "spec.destination", FERR_INVALID, check_destination_one,
    "must set only one of nodeName and nodeSelector: nodeName names the node, nodeSelector "
    "lets the controller pick one; remove the other" },
  { "spec.destination.nodeSelector", FERR_INVALID, check_selector_labels,
    "must list at least one label: an empty selector matches every node; add labels or use "
    "nodeName" },
  { "spec.strategy.preCopy", FERR_FORBIDDEN, check_precopy,
    "must not be set with the StopAndCopy strategy, which copies memory once with the pod "
    "frozen; remove the pre-copy settings or use PreCopy" },
  { "spec.strategy.preCopy.maxRounds", FERR_FORBIDDEN, check_rounds_limit,
    "must not exceed the admission policy's limits.maxPreCopyRounds", .policy = true },
  { "spec.verification.httpGet", FERR_REQUIRED, check_http_needed,
    "is required when verification.mode is HTTPGet: give the port (and path) of an endpoint "
    "that answers only when the application serves" },
  { "spec.verification.httpGet", FERR_FORBIDDEN, check_http_unused,
    "must not be set when verification.mode is {mode}: that mode does not run it, so it would "
    "not guard the source pod's deletion; set mode: HTTPGet or remove httpGet" },
  { "spec.verification.tcpSocket", FERR_FORBIDDEN, check_tcp_unused,
    "must not be set when verification.mode is {mode}: that mode does not run it, so it would "
    "not guard the source pod's deletion; set mode: TCPSocket or remove tcpSocket" },
  { "spec.verification.httpGet.path", FERR_INVALID, check_http_path,
    "must be an absolute path starting with '/' and without spaces, such as /healthz" },
  { "spec.verification.timeoutSeconds", FERR_FORBIDDEN, check_timeout_limit,
    "must not exceed the admission policy's limits.maxVerificationTimeoutSeconds",
    .policy = true },
  { 0 }
};

/* ---- UPDATE only ---- */

static void check_cancel(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(json_get_bool(c->old, "spec.cancel", false) && !json_get_bool(c->obj, "spec.cancel", false))
    rule_fail(e, r);
}

/* spec as the controller reads it, under {"spec": ...} so rule paths apply: a PreCopy strategy
 * without preCopy means the default pre-copy settings. Comparing these, a stored object and an
 * update that differ only by that default (created with the webhook off, or replaced with the
 * original manifest) do not count as a change. NULL on allocation failure. */
static cJSON *effective(const cJSON *obj)
{
  cJSON *o = cJSON_CreateObject(), *spec = cJSON_Duplicate(json_get(obj, "spec"), 1);
  if(!o || !spec || !cJSON_AddItemToObject(o, "spec", spec)) {
    cJSON_Delete(o);
    cJSON_Delete(spec);
    return NULL;
  }
  cJSON *strategy = json_get_mut(o, "spec.strategy");
  if(is_str(o, "spec.strategy.type", "PreCopy") &&
     !cJSON_GetObjectItemCaseSensitive(strategy, "preCopy") &&
     (!cJSON_AddObjectToObject(strategy, "preCopy") || !sch_default(strategy_fields, strategy))) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* Whether path differs between the stored and the new object as the controller reads them. */
static bool changed(const struct api_ctx *c, const char *path, struct ferrs *e)
{
  cJSON *a = effective(c->old), *b = effective(c->obj);
  bool differ = a && b && !json_equal_opt(json_get(a, path), json_get(b, path));
  if(!a || !b)
    e->oom = true;
  cJSON_Delete(a);
  cJSON_Delete(b);
  return differ;
}

/* The row's field may not change from stage `from` until the migration has finished (the
 * finished rule covers the rest). */
static void frozen_from(const struct api_ctx *c, const struct rule *r, struct ferrs *e,
                        enum stage from)
{
  const char *phase;
  enum stage s = stage_of(c->old, &phase);
  if(s >= from && s != ST_FINISHED && changed(c, r->field, e))
    fail_with(e, r, "{phase}", phase);
}

static void check_started(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  frozen_from(c, r, e, ST_STARTED);
}

/* A new strategy type brings other pre-copy settings; the type's row alone reports it. */
static void check_started_precopy(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(api_unchanged(c, "spec.strategy.type"))
    frozen_from(c, r, e, ST_STARTED);
}

static void check_verifying(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  frozen_from(c, r, e, ST_VERIFYING);
}

static void check_finished(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *phase;
  if(stage_of(c->old, &phase) != ST_FINISHED)
    return;
  cJSON *a = effective(c->old), *b = effective(c->obj);
  if(!a || !b)
    e->oom = true;
  else {
    json_remove(a, "spec.checkpoint");
    json_remove(b, "spec.checkpoint");
    if(!json_equal(a, b))
      fail_with(e, r, "{phase}", phase);
  }
  cJSON_Delete(a);
  cJSON_Delete(b);
}

static void check_retention(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *phase;
  if(stage_of(c->old, &phase) == ST_FINISHED && !api_unchanged(c, "spec.checkpoint") &&
     !is_str(c->obj, r->field, "Delete"))
    fail_with(e, r, "{phase}", phase);
}

static const struct rule update_rules[] = {
  { "spec.source", FERR_FORBIDDEN, api_check_immutable,
    "is immutable: a PodMigration moves the pod it was created for; to move another pod, "
    "create a new PodMigration" },
  { "spec.cancel", FERR_FORBIDDEN, check_cancel,
    "cannot go back to false: a cancelled migration rolls back and never resumes; create a "
    "new PodMigration to try again" },
  { "spec.destination", FERR_FORBIDDEN, check_started,
    "cannot change once the migration has started (phase {phase}): set spec.cancel to true "
    "and create a new PodMigration for the other destination" },
  { "spec.strategy.type", FERR_FORBIDDEN, check_started,
    "cannot change once the migration has started (phase {phase}): set spec.cancel to true "
    "and create a new PodMigration with the other strategy" },
  { "spec.strategy.preCopy", FERR_FORBIDDEN, check_started_precopy,
    "cannot change once the migration has started (phase {phase}): set spec.cancel to true "
    "and create a new PodMigration with other pre-copy settings" },
  { "spec.policyRef", FERR_FORBIDDEN, check_started,
    "cannot change once the migration has started (phase {phase}): the policy was already "
    "checked; set spec.cancel to true and create a new PodMigration" },
  { "spec.verification", FERR_FORBIDDEN, check_verifying,
    "cannot change once verification has begun (phase {phase}): the controller is already "
    "probing the restored pod with these settings" },
  { "spec", FERR_FORBIDDEN, check_finished,
    "cannot change once the migration has finished (phase {phase}); create a new "
    "PodMigration" },
  { "spec.checkpoint.retention", FERR_FORBIDDEN, check_retention,
    "can only change to Delete once the migration has finished (phase {phase}): Delete "
    "removes a retained checkpoint, and one already removed cannot be kept" },
  { 0 }
};

/* ---- defaulting and warnings ---- */

/* A PreCopy migration shows its effective pre-copy settings. */
static gw_rc mutate(const struct api_ctx *c, cJSON *obj)
{
  (void)c;
  if(!is_str(obj, "spec.strategy.type", "PreCopy"))
    return GW_OK;
  cJSON *strategy = json_get_mut(obj, "spec.strategy");
  if(!cJSON_IsObject(strategy) || cJSON_GetObjectItemCaseSensitive(strategy, "preCopy"))
    return GW_OK;
  if(!cJSON_AddObjectToObject(strategy, "preCopy") || !sch_default(strategy_fields, strategy))
    return GW_ENOMEM;
  return GW_OK;
}

static void warn(const struct api_ctx *c, struct strlist *w)
{
  const cJSON *o = c->obj;
  if(is_str(o, "spec.strategy.type", "StopAndCopy"))
    strlist_addf(w, "strategy StopAndCopy keeps the pod frozen while all of its memory is "
                 "copied, usually far longer than the final round of PreCopy (p99 487ms "
                 "measured on one container with one TCP flow); check the MigrationPolicy "
                 "freezeBudget");
  if(is_str(o, "spec.verification.mode", "None"))
    strlist_addf(w, "verification mode None runs no application probe: the source pod is "
                 "deleted once TCP flows have moved, even if the restored application does not "
                 "answer; prefer ReadinessProbe, HTTPGet or TCPSocket");
  const cJSON *t = json_get(o, "spec.verification.timeoutSeconds");
  if(json_is_integer(t) && t->valueint < SHORT_VERIFICATION_SECONDS)
    strlist_addf(w, "verification timeoutSeconds %d is short: an application that needs "
                 "longer to answer after the restore makes the migration roll back; %d or "
                 "more is safer", t->valueint, SHORT_VERIFICATION_SECONDS);
  const char *keep = json_get_str(o, "spec.checkpoint.retention");
  if(keep && strcmp(keep, "Delete"))
    strlist_addf(w, "checkpoint retention %s keeps a copy of the pod's memory, secrets "
                 "included, on the nodes' tmpfs under /run/podmotion/checkpoints/, using node "
                 "memory until it is removed; set retention to Delete when done", keep);
  bool cancel = json_get_bool(o, "spec.cancel", false);
  const char *phase;
  enum stage s = c->old ? stage_of(c->old, &phase) : ST_NEW;
  if(cancel && c->op == API_CREATE)
    strlist_addf(w, "spec.cancel is true: this PodMigration will not start");
  else if(cancel && c->old && !json_get_bool(c->old, "spec.cancel", false) && s != ST_NEW &&
          s != ST_FINISHED)
    strlist_addf(w, "cancelling a migration in phase %s rolls it back: the source pod resumes "
                 "and the restored copy is deleted", phase);
}

static const struct api_version versions[] = {
  { .name = "v1alpha1", .spec = podmigration_v1alpha1_spec, .status = podmigration_status_fields,
    .moves = podmigration_v1alpha1_moves,
    .path_aliases = podmigration_v1alpha1_aliases },
  { .name = "v1beta1", .spec = v1beta1_spec, .status = podmigration_status_fields },
};

static const struct printer_column columns[] = {
  { "Pod", "string", ".spec.source.podName", "The pod being moved", 0 },
  { "Phase", "string", ".status.phase", "What the migration is doing now", 0 },
  { "Source", "string", ".status.sourceNode", "Node the pod ran on", 0 },
  { "Destination", "string", ".status.destinationNode", "Node the pod moves to", 0 },
  { "Freeze", "string", ".status.freezeDuration", "How long the pod was frozen", 0 },
  { "Strategy", "string", ".spec.strategy.type", "PreCopy or StopAndCopy", 1 },
  { "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
  { 0 }
};

static const char *const short_names[] = { "pmig", NULL };
static const char *const categories[] = { "podmotion", NULL };

const struct api_kind api_podmigration = {
  .group = PODMOTION_GROUP,
  .kind = "PodMigration",
  .plural = "podmigrations",
  .singular = "podmigration",
  .short_names = short_names,
  .categories = categories,
  .namespaced = true,
  .desc = "PodMigration moves one running pod to another node: it checkpoints the pod with "
          "CRIU, restores it on the destination, and deletes the source pod only once "
          "TrafficVerified is True.",
  .versions = versions,
  .nversions = 2,
  .columns = columns,
  .rules = rules,
  .update_rules = update_rules,
  .mutate = mutate,
  .warn = warn,
};
