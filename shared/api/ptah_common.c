/* What the ptah.run kinds share (see ptah_common.h). */
#include "api/ptah_common.h"

#include <stdio.h>
#include <string.h>

#include "api/podmeta.h"
#include "json.h"

const struct sch_field ptah_database_fields[] = {
  { .name = "connectionSecretRef", .type = SCH_OBJECT, .flags = SCH_REQUIRED,
    .fields = sch_secret_key_ref_fields,
    .desc = "The Secret, in this namespace, whose key holds the PostgreSQL connection URI of the "
            "database. The role in the URI needs the privileges the changes need; the URI never "
            "appears in logs, Events or status." },
  { 0 }
};


const struct sch_field ptah_execution_fields[] = {
  { .name = "runnerImage", .type = SCH_STRING, .format = &fmt_image,
    .desc = "The Ptah runner image that executes this resource's operations. Empty: the runner "
            "of the installed godwit release. Pin a tag or digest: changing the runner retires "
            "the evidence it produced (ExecutionBindingChanged)." },
  { .name = "podMetadata", .type = SCH_OBJECT, .fields = podmeta_fields,
    .desc = "Labels and annotations runner Pods must carry, declared here because a Pod another "
            "mutating webhook alters is refused (PodAdmissionRefused)." },
  { .name = "serviceAccountName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The service account runner Pods run as; bind it to the ClusterRole godwit-runner "
            "in this namespace so the runner can deliver its results. Empty: godwit-runner, "
            "which the controller creates and binds itself." },
  { 0 }
};

const char *const ptah_operation_types[] = { "Plan", "Apply", "Observe", NULL };

static const char *const ptah_result_transports[] = { "Durable", "Legacy", NULL };

const struct sch_field ptah_operation_fields[] = {
  { .name = "id", .type = SCH_STRING, .format = &fmt_dns1123_label,
    .desc = "The operation id; its Job, result record and Events carry it." },
  { .name = "type", .type = SCH_STRING, .enums = ptah_operation_types,
    .desc = "Plan (read-only: computes the plan), Apply (changes the database) or Observe "
            "(read-only: establishes what the database holds)." },
  { .name = "jobName", .type = SCH_STRING, .format = &fmt_dns1123_subdomain,
    .desc = "The runner Job executing the operation." },
  { .name = "attempt", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 1,
    .desc = "Which attempt of the operation this is, from 1." },
  { .name = "startedAt", .type = SCH_TIME,
    .desc = "When the Job was created: from then on the operation is dispatched, and a "
            "missing result is never made up for by running it again unseen." },
  { .name = "templateDigest", .type = SCH_STRING, .max_len = 80,
    .desc = "The admission snapshot: the digest of the Pod template the claim dispatches "
            "(godwit.dev/template-digest on the Pod)." },
  { .name = "resultTransport", .type = SCH_STRING, .enums = ptah_result_transports,
    .desc = "How the operation's result travels, as recorded on its Job: Durable (a "
            "PtahResultRecord) or Legacy (a framed result in the Pod's log, its termination "
            "message as a checked fallback)." },
  { .name = "jobDigest", .type = SCH_STRING, .max_len = 80,
    .desc = "The digest of the whole Pod template of the dispatched Job (service account and "
            "volumes included): a Job that never started a Pod and no longer matches the spec "
            "is cleaned up." },
  { .name = "snapshotRefreshed", .type = SCH_BOOL,
    .desc = "The snapshot was resolved again once (AdmissionSnapshotRefreshed); a template "
            "that changes again retires the claim." },
  { .name = "binding", .type = SCH_STRING, .max_len = 640,
    .desc = "The execution binding the operation's evidence is produced under: the runner "
            "image, the runner protocol and the controller-state version. A claim whose binding "
            "changes before dispatch is retired (ExecutionBindingChanged)." },
  { .name = "inputs", .type = SCH_STRING, .max_len = 80,
    .desc = "The digest of what the operation was given (a PtahMigration: the ConfigMap's "
            "migrations, the target and the history table; a PtahSchema: the desired SQL, the "
            "execution binding, the protected tables and the generation its plan comes from)." },
  { .name = "desiredChecksum", .type = SCH_STRING, .format = &fmt_sha256_digest,
    .desc = "PtahSchema: the sha256 of the desired SQL the operation's Job mounts (the "
            "immutable ConfigMap <name>-desired-<12 hex digits>)." },
  { .name = "fromVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "PtahMigration: the version the database was known at when the run was claimed." },
  { .name = "toVersion", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "PtahMigration: the version the run takes the database to." },
  { .name = "refusedAttempts", .type = SCH_INT, .flags = SCH_HAS_MIN, .min = 0,
    .desc = "Attempts whose runner refused the Job before running anything (another protocol, "
            "no credential to deliver its result): not counted against backoffLimit." },
  { .name = "notBefore", .type = SCH_TIME,
    .desc = "A retried attempt's Job is created no sooner than this (backoff)." },
  { 0 }
};

const char *ptah_user(const struct api_ctx *c)
{
  if(!c->user || !c->user->username || !*c->user->username)
    return NULL;
  return c->user->username;
}

bool ptah_spec_changed(const struct api_ctx *c)
{
  if(c->op != API_UPDATE || !c->old)
    return true;
  return !json_equal_opt(json_get(c->old, "spec"), json_get(c->obj, "spec"));
}

/* Empty: absent, null or "". */
static bool is_empty(const cJSON *v)
{
  return !v || cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring);
}

gw_rc ptah_stamp(const struct api_ctx *c, cJSON *obj, const char *path, const char *value)
{
  if(!is_empty(json_get(obj, path)))
    return GW_OK;
  const char *v = NULL;
  if(c->op == API_CREATE)
    v = value;
  else if(c->op == API_UPDATE)
    v = json_get_str(c->old, path);
  if(!v || !*v)
    return GW_OK;
  return json_set_str(obj, path, v);
}

gw_rc ptah_stamp_user(const struct api_ctx *c, cJSON *obj, const char *path)
{
  return ptah_stamp(c, obj, path, ptah_user(c));
}

void ptah_check_runner_image(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!api_unchanged(c, r->field))
    podmeta_check_image(json_get_str(c->obj, r->field), r->field, c->policy, e);
}

void ptah_check_pod_metadata(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(!api_unchanged(c, r->field))
    podmeta_check(json_get(c->obj, r->field), r->field, c->policy, e);
}

void ptah_check_stamped(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->op == API_CREATE && is_empty(json_get(c->obj, r->field)))
    rule_fail(e, r);
}

void ptah_check_not_forged(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *user = ptah_user(c);
  const char *v = json_get_str(c->obj, r->field);
  if(c->op == API_CREATE && user && v && *v && strcmp(v, user))
    rule_failf(e, r, NULL, "must be the authenticated user \"%s\", got \"%.200s\": %s", user, v,
               r->msg);
}

void ptah_check_approver(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  const char *user = ptah_user(c);
  if(c->op != API_CREATE || !user || !c->policy)
    return;
  if(!policy_is_approver(c->policy, user, c->user->groups, c->user->ngroups))
    rule_failf(e, r, NULL, "user \"%s\" %s", user, r->msg);
}

void ptah_warn_runner_image(const struct api_ctx *c, struct strlist *w)
{
  const char *image = json_get_str(c->obj, "spec.execution.runnerImage");
  if(!image || strchr(image, '@') || api_unchanged(c, "spec.execution.runnerImage"))
    return;
  const char *slash = strrchr(image, '/');
  const char *colon = strrchr(slash ? slash : image, ':');
  if(colon && strcmp(colon + 1, "latest"))
    return;
  strlist_addf(w, "runnerImage \"%.80s\" %s: the runner may change between a plan and its "
               "apply; pin a tag or digest (a new runner retires its evidence: "
               "ExecutionBindingChanged)",
               image, colon ? "uses the tag \"latest\"" : "has no tag");
}

/* Detaches path and removes the parents the removal left empty, but never a top-level member. */
static cJSON *detach_prune(cJSON *obj, const char *path)
{
  cJSON *v = json_detach(obj, path);
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  for(char *dot = strrchr(buf, '.'); v && dot; dot = strrchr(buf, '.')) {
    *dot = '\0';
    const cJSON *parent = json_get(obj, buf);
    if(!strchr(buf, '.') || !cJSON_IsObject(parent) || parent->child)
      break;
    json_remove(obj, buf);
  }
  return v;
}

gw_rc ptah_bool_to_enum(cJSON *obj, const char *bool_path, const char *enum_path,
                        const char *if_true, const char *if_false)
{
  if(!cJSON_IsBool(json_get(obj, bool_path)))
    return GW_OK;
  cJSON *b = detach_prune(obj, bool_path);
  bool t = cJSON_IsTrue(b);
  cJSON_Delete(b);
  return json_set_str(obj, enum_path, t ? if_true : if_false);
}

gw_rc ptah_enum_to_bool(cJSON *obj, const char *enum_path, const char *bool_path,
                        const char *if_true, const char *if_false)
{
  const char *s = json_get_str(obj, enum_path);
  if(!s || (strcmp(s, if_true) && strcmp(s, if_false)))
    return GW_OK;
  bool t = !strcmp(s, if_true);
  cJSON_Delete(detach_prune(obj, enum_path));
  return json_set(obj, bool_path, cJSON_CreateBool(t));
}
