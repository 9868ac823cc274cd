/*
 * schema_record.c: the PtahResultRecord of a ptah-plan run (--result durable), built and
 * delivered by ptah_record.c (struct ptah_record, ptah.h), exactly as ptah-migrate's: the
 * credential proven with a dryRun=All create before the database is contacted, then the create
 * at the end, retried while it may pass, a 409 read back.
 *
 * spec.ownerRef {kind: PtahSchema, name}, spec.operation {id, type: Plan|Apply|Observe,
 * attempt}, spec.jobName, and spec.result:
 *   outcome, message (redacted, at most 32768 bytes), startedAt, finishedAt,
 *   planDigest      Plan, Observe: the digest computed (absent when no plan was); Apply: the
 *                   approved digest, the plan it applied or was asked to apply (the webhook
 *                   requires one on every Apply's record)
 *   lockContinuous  Apply only
 *   refusal         ProtectedTableRefused or PlanStale, when the plan was refused
 *   plan            whenever a plan was computed (a refused one too): {fingerprint,
 *                   desiredChecksum, statementCount, destructiveCount, summary, statements:
 *                   [{sql, label, destructive, ownTransaction, table}]}
 * A record whose JSON would exceed SP_RECORD_MAX bytes leaves plan.statements out, sets
 * plan.statementsOmitted and says so first in the message: the plan file has them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptah.h"
#include "schema.h"

static cJSON *plan_object(const struct sp_ctx *c, bool statements)
{
  const struct sp_plan *p = &c->plan;
  cJSON *o = cJSON_CreateObject();
  bool ok = o && cJSON_AddStringToObject(o, "fingerprint", p->fingerprint) &&
            cJSON_AddStringToObject(o, "desiredChecksum", c->desired_sum) &&
            cJSON_AddNumberToObject(o, "statementCount", (double)p->n) &&
            cJSON_AddNumberToObject(o, "destructiveCount", (double)p->ndestructive) &&
            cJSON_AddStringToObject(o, "summary", p->summary ? p->summary : "");
  if(ok && !statements)
    ok = cJSON_AddBoolToObject(o, "statementsOmitted", true) != NULL;
  cJSON *list = ok && statements ? cJSON_AddArrayToObject(o, "statements") : NULL;
  for(size_t i = 0; list && ok && i < p->n; i++) {
    const struct sp_stmt *s = &p->v[i];
    cJSON *st = cJSON_CreateObject();
    ok = st && cJSON_AddItemToArray(list, st) && cJSON_AddStringToObject(st, "sql", s->sql) &&
         cJSON_AddStringToObject(st, "label", s->label) &&
         cJSON_AddBoolToObject(st, "destructive", s->destructive) &&
         cJSON_AddBoolToObject(st, "ownTransaction", s->own_txn) &&
         (!s->table || cJSON_AddStringToObject(st, "table", s->table));
  }
  if(!ok || (statements && !list)) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* spec.result's members after the common ones; NULL when out of memory. */
static cJSON *result_extra(const struct sp_ctx *c, bool statements)
{
  cJSON *x = cJSON_CreateObject();
  const char *digest = c->type == SP_APPLY ? c->o.approved_digest
                       : c->planned        ? c->plan.digest
                                           : NULL;
  bool ok = x && (!digest || cJSON_AddStringToObject(x, "planDigest", digest));
  if(ok && c->type == SP_APPLY)
    ok = cJSON_AddBoolToObject(x, "lockContinuous", c->lock_continuous) != NULL;
  if(ok && c->refusal)
    ok = cJSON_AddStringToObject(x, "refusal", c->refusal) != NULL;
  if(ok && c->planned) {
    cJSON *plan = plan_object(c, statements);
    ok = plan && cJSON_AddItemToObject(x, "plan", plan);
    if(!ok)
      cJSON_Delete(plan);
  }
  if(!ok) {
    cJSON_Delete(x);
    return NULL;
  }
  return x;
}

static struct ptah_record record(const struct sp_ctx *c, const cJSON *extra, const char *message,
                                 const char *const *secrets)
{
  return (struct ptah_record){
    .owner_kind = "PtahSchema", .owner_name = c->o.owner_name, .namespace = c->o.namespace,
    .job_name = c->o.job_name, .operation = c->o.operation, .type = sp_type_name(c->type),
    .attempt = c->o.attempt, .outcome = sp_outcome_name(c->outcome), .message = message,
    .secrets = secrets, .nsecrets = 4, .started_at = c->started_at,
    .finished_at = c->finished_at, .result_extra = extra,
  };
}

/* The length of r's JSON, 0 when out of memory. */
static size_t json_len(const struct ptah_record *r)
{
  cJSON *obj = ptah_record_build(r);
  char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
  size_t n = text ? strlen(text) : 0;
  cJSON_free(text);
  cJSON_Delete(obj);
  return n;
}

void sp_record_deliver(struct sp_ctx *c)
{
  const char *secrets[] = { c->st.secrets[0], c->st.secrets[1], c->st.src.password,
                            c->st.dst.password };
  cJSON *x = result_extra(c, true);
  struct ptah_record r = record(c, x, c->message, secrets);
  size_t n = x && c->planned ? json_len(&r) : 0;
  char *note = NULL;
  if(n > SP_RECORD_MAX) {
    cJSON_Delete(x);
    x = result_extra(c, false);
    if(asprintf(&note, "The record leaves out the plan's %zu statements: with them it would "
                "hold %zu bytes of JSON, above the %d a record may; the plan file has them. %s",
                c->plan.n, n, SP_RECORD_MAX, c->message ? c->message : "") < 0)
      note = NULL;
    r = record(c, x, note, secrets);
    st_warn(&c->st, "record", "the plan's %zu statements are left out of the record (%zu bytes "
            "with them)", c->plan.n, n);
  }
  if(x && (n <= SP_RECORD_MAX || note))
    c->record_delivered = ptah_record_deliver(&c->st, &r);
  else
    st_fail(&c->st, false, "record", "out of memory");
  free(note);
  cJSON_Delete(x);
}

int sp_record_credential(struct sp_ctx *c)
{
  /* the record as it would be written if the run ended now: an Apply that cannot tell */
  const char *secrets[] = { c->st.secrets[0], c->st.secrets[1], c->st.src.password,
                            c->st.dst.password };
  enum sp_outcome saved = c->outcome;
  c->outcome = c->type == SP_APPLY ? SP_UNKNOWN : SP_FAILED;
  pm_now_rfc3339(c->finished_at, sizeof(c->finished_at));
  cJSON *x = result_extra(c, false);
  struct ptah_record r = record(c, x, c->message, secrets);
  c->outcome = saved;
  char why[1400] = "out of memory";
  int rc = x ? ptah_record_credential(&c->st, &r, why, sizeof(why)) : -1;
  cJSON_Delete(x);
  c->finished_at[0] = '\0';
  if(!rc)
    return 0;
  c->credential_failed = true;
  if(!x)
    st_fail(&c->st, false, "credential", "this Pod cannot deliver its result record, so nothing "
            "is run: %s", why);
  sp_set(c, SP_FAILED, "the result could not be delivered with this Pod's credential, so "
         "nothing was read or changed: %s", why);
  return -1;
}
