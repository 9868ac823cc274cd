/*
 * ptah_record.c: the durable result of a run (--result durable): a PtahResultRecord
 * (ptah.run/v1) named after the Job, created through the Kubernetes API with the Pod's own
 * service-account token (in-cluster configuration; $GODWIT_SA_DIR in the local cluster). The
 * webhook stamps spec.writer from that token, so the runner leaves it out.
 *
 * Both Ptah steps deliver theirs here (struct ptah_record, ptah.h): ptah-migrate through the
 * pm_record_* wrappers at the end of this file, ptah-plan through schema_record.c.
 *
 * Delivery is retried for about PM_RECORD_DEADLINE_MS while the failure may pass (no answer,
 * 429, 5xx). A 409 AlreadyExists means a record of this Job exists: a previous Pod of the Job
 * delivered it (its spec.operation.id is ours), which counts as delivered; a record of another
 * operation under this name does not. Any other refusal is final. A record not delivered makes
 * the run exit 2: the controller then treats an Apply as uncertain, the safe reading.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "json.h"
#include "kube/kube.h"
#include "ptah.h"
#include "redact.h"

#define PM_RECORD_DEADLINE_MS 30000
#define PM_RECORD_DELAY_MS 500     /* before the second attempt; doubles */
#define PM_RECORD_DELAY_MAX_MS 5000
#define PM_CREDENTIAL_WAIT_MS 20000

/* ----- any step's record ---------------------------------------------------------------------- */

cJSON *ptah_record_build(const struct ptah_record *r)
{
  char *message = redact_cut(r->message ? r->message : "", PTAH_RECORD_MESSAGE_MAX, r->secrets,
                             r->nsecrets, NULL);
  cJSON *o = cJSON_CreateObject();
  gw_rc rc = o && message ? GW_OK : GW_ENOMEM;
  struct {
    const char *path, *value;
    bool optional; /* left out when NULL or "" */
  } strs[] = {
    { "apiVersion", "ptah.run/v1", false },
    { "kind", "PtahResultRecord", false },
    { "metadata.name", r->job_name, false },
    { "metadata.namespace", r->namespace, false },
    { "spec.ownerRef.kind", r->owner_kind, false },
    { "spec.ownerRef.name", r->owner_name, false },
    { "spec.operation.id", r->operation, false },
    { "spec.operation.type", r->type, false },
    { "spec.jobName", r->job_name, false },
    { "spec.result.outcome", r->outcome, false },
    { "spec.result.message", message, false },
    { "spec.result.startedAt", r->started_at, true },
    { "spec.result.finishedAt", r->finished_at, true },
  };
  for(size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && !rc; i++)
    if(!strs[i].optional || (strs[i].value && *strs[i].value))
      rc = json_set_str(o, strs[i].path, strs[i].value ? strs[i].value : "");
  if(!rc)
    rc = json_set(o, "spec.operation.attempt", cJSON_CreateNumber((double)r->attempt));
  const cJSON *x;
  cJSON_ArrayForEach(x, r->result_extra)
  {
    char path[160];
    snprintf(path, sizeof(path), "spec.result.%s", x->string);
    if(!rc)
      rc = json_set(o, path, cJSON_Duplicate(x, true));
  }
  free(message);
  if(rc) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

static bool transient(gw_rc rc, const struct kube_status *st)
{
  return rc == GW_ECONNECT || rc == GW_ETIMEOUT || st->code == 429 || st->code >= 500;
}

/* After a 409 AlreadyExists: 1 the record is ours (delivered before), 0 it is another
 * operation's, -1 it could not be read (transient when st says so). */
static int existing_is_ours(const struct ptah_record *r, struct kube_client *k,
                            struct kube_status *st, gw_rc *rc, char *why, size_t len)
{
  cJSON *got = NULL;
  *rc = kube_get(k, &KUBE_PTAH_RESULT_RECORDS, r->namespace, r->job_name, &got, st);
  if(*rc) {
    snprintf(why, len, "it exists but cannot be read: %s %s", st->reason, st->message);
    return -1;
  }
  const char *id = json_get_str(got, "spec.operation.id");
  int ours = id && !strcmp(id, r->operation);
  if(!ours)
    snprintf(why, len, "a record of operation \"%.63s\" already has this name; this Job's "
             "operation is \"%s\"", id ? id : "", r->operation);
  cJSON_Delete(got);
  return ours;
}

static bool deliver(struct st_ctx *stc, const struct ptah_record *r, struct kube_client *k,
                    const cJSON *obj)
{
  char where[320], why[1400] = "";
  snprintf(where, sizeof(where), "PtahResultRecord %s/%s", r->namespace, r->job_name);
  struct kube_status st;
  kube_status_init(&st);
  long long deadline = pm_now_ms() + PM_RECORD_DEADLINE_MS;
  long delay = PM_RECORD_DELAY_MS;
  bool delivered = false;
  for(int attempt = 1;; attempt++) {
    gw_rc rc = kube_create(k, &KUBE_PTAH_RESULT_RECORDS, r->namespace, obj, false, NULL, &st);
    int ours = -1;
    if(!rc) {
      st_pass(stc, "record", "created %s (outcome %s)%s", where, r->outcome,
              attempt > 1 ? ", after transient failures" : "");
      delivered = true;
      break;
    }
    if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists"))
      ours = existing_is_ours(r, k, &st, &rc, why, sizeof(why));
    else
      snprintf(why, sizeof(why), "%d %s: %s", st.code, st.reason[0] ? st.reason : gw_strerror(rc),
               st.message);
    if(ours == 1) {
      st_pass(stc, "record", "%s was already delivered by an earlier Pod of this Job", where);
      delivered = true;
      break;
    }
    if(ours == 0 || !transient(rc, &st) || pm_now_ms() + delay > deadline) {
      st_fail(stc, false, "record", "could not create %s after %d attempt%s: %s", where,
              attempt, attempt > 1 ? "s" : "", why);
      break;
    }
    st_sleep_ms((int)delay);
    delay = delay * 2 > PM_RECORD_DELAY_MAX_MS ? PM_RECORD_DELAY_MAX_MS : delay * 2;
  }
  kube_status_release(&st);
  return delivered;
}

static struct kube_client *client(struct st_ctx *st, const char *id)
{
  struct kube_config cfg;
  struct kube_client *k = NULL;
  char err[512];
  gw_rc rc = kube_config_load(&cfg, NULL, NULL, err, sizeof(err));
  if(rc) {
    st_fail(st, false, id, "cannot deliver the result record: %s (a runner Pod uses its "
            "service account: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and the mounted "
            "token)", err);
    return NULL;
  }
  cfg.max_retries = 2; /* the callers retry for longer, and handle a repeated create */
  cfg.timeout_ms = 10000;
  rc = kube_client_new(&k, &cfg, err, sizeof(err));
  kube_config_release(&cfg);
  if(rc) {
    st_fail(st, false, id, "cannot make a Kubernetes client: %s", err[0] ? err : gw_strerror(rc));
    return NULL;
  }
  return k;
}

bool ptah_record_deliver(struct st_ctx *st, const struct ptah_record *r)
{
  struct kube_client *k = client(st, "record");
  if(!k)
    return false;
  cJSON *obj = ptah_record_build(r);
  bool delivered = false;
  if(obj)
    delivered = deliver(st, r, k, obj);
  else
    st_fail(st, false, "record", "out of memory");
  cJSON_Delete(obj);
  kube_client_free(k);
  return delivered;
}

int ptah_record_credential(struct st_ctx *stc, const struct ptah_record *r, char *why,
                           size_t len)
{
  cJSON *obj = ptah_record_build(r);
  long long deadline = pm_now_ms() + PM_CREDENTIAL_WAIT_MS;
  long delay = PM_RECORD_DELAY_MS;
  bool ok = false;
  why[0] = '\0';
  while(obj) {
    struct kube_client *k = client(stc, "credential"); /* the token file may appear late */
    gw_rc rc = k ? GW_OK : GW_ECONNECT;
    struct kube_status st;
    kube_status_init(&st);
    if(k)
      rc = kube_create(k, &KUBE_PTAH_RESULT_RECORDS, r->namespace, obj, true, NULL, &st);
    int ours = -1;
    if(rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists")) /* delivered before? */
      ours = existing_is_ours(r, k, &st, &rc, why, len);
    kube_client_free(k);
    ok = ours >= 0 ? ours == 1 : !rc;
    if(ours == 0) {
      kube_status_release(&st);
      break; /* another operation's record holds the name: this run could never deliver */
    }
    if(!ok && ours < 0 && k)
      snprintf(why, len, "%d %s: %s", st.code, st.reason[0] ? st.reason : gw_strerror(rc),
               st.message);
    else if(!ok)
      snprintf(why, len, "no Kubernetes client (see above)");
    /* no client: the token may not be written yet, unless this is no Pod at all */
    bool waiting = !k && getenv("KUBERNETES_SERVICE_HOST");
    bool again = !ok && (waiting || (k && (transient(rc, &st) || st.code == 401))) &&
                 pm_now_ms() + delay <= deadline;
    kube_status_release(&st);
    if(ok || !again)
      break;
    st_sleep_ms((int)delay);
    delay = delay * 2 > PM_RECORD_DELAY_MAX_MS ? PM_RECORD_DELAY_MAX_MS : delay * 2;
  }
  cJSON_Delete(obj);
  if(ok) {
    st_pass(stc, "credential", "this Pod may create PtahResultRecord %s/%s (dry run)",
            r->namespace, r->job_name);
    return 0;
  }
  if(!why[0])
    snprintf(why, len, "out of memory");
  st_fail(stc, false, "credential", "this Pod cannot deliver its result record, so nothing is "
          "run: %s", why);
  return -1;
}

/* ----- ptah-migrate's record -------------------------------------------------------------- */

/* c's record; extra (owned by the caller, cJSON_Delete it) holds the versions and the lock. */
static void pm_record(const struct pm_ctx *c, struct ptah_record *r, cJSON **extra,
                      const char *const *secrets)
{
  cJSON *x = cJSON_CreateObject();
  if(x && c->history_read) {
    cJSON_AddNumberToObject(x, "fromVersion", (double)c->from);
    cJSON_AddNumberToObject(x, "toVersion", (double)c->to);
  }
  if(x)
    cJSON_AddBoolToObject(x, "lockContinuous", c->lock_continuous);
  *extra = x;
  *r = (struct ptah_record){
    .owner_kind = "PtahMigration", .owner_name = c->o.owner_name, .namespace = c->o.namespace,
    .job_name = c->o.job_name, .operation = c->o.operation, .type = c->o.type,
    .attempt = c->o.attempt, .outcome = pm_outcome_name(c->outcome), .message = c->message,
    .secrets = secrets, .nsecrets = 2, .started_at = c->started_at,
    .finished_at = c->finished_at, .result_extra = x,
  };
}

static cJSON *build(const struct pm_ctx *c)
{
  const char *secrets[] = { c->st.secrets[0], c->st.src.password };
  struct ptah_record r;
  cJSON *extra;
  pm_record(c, &r, &extra, secrets);
  cJSON *obj = extra ? ptah_record_build(&r) : NULL;
  cJSON_Delete(extra);
  return obj;
}

void pm_record_frame(struct pm_ctx *c)
{
  cJSON *obj = build(c);
  char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
  cJSON_Delete(obj);
  char d[DIGEST_SHA256_LEN];
  if(!text || digest_sha256(text, strlen(text), d)) {
    st_fail(&c->st, false, "record", "cannot frame the result: out of memory");
    cJSON_free(text);
    return;
  }
  fflush(stdout);
  printf("%s operation=%s attempt=%ld job=%s\n%s\n%s %s\n", PTAH_FRAME_BEGIN, c->o.operation,
         c->o.attempt, c->o.job_name, text, PTAH_FRAME_END, d);
  fflush(stdout);
  cJSON_free(text);
}

void pm_record_deliver(struct pm_ctx *c)
{
  const char *secrets[] = { c->st.secrets[0], c->st.src.password };
  struct ptah_record r;
  cJSON *extra;
  pm_record(c, &r, &extra, secrets);
  if(extra)
    c->record_delivered = ptah_record_deliver(&c->st, &r);
  else
    st_fail(&c->st, false, "record", "out of memory");
  cJSON_Delete(extra);
}

int pm_record_credential(struct pm_ctx *c)
{
  /* the record as it would be written if the run ended now: an Apply that cannot tell */
  enum pm_outcome saved = c->outcome;
  c->outcome = c->type == PM_APPLY ? PM_UNKNOWN : PM_FAILED;
  pm_now_rfc3339(c->finished_at, sizeof(c->finished_at));
  const char *secrets[] = { c->st.secrets[0], c->st.src.password };
  struct ptah_record r;
  cJSON *extra;
  pm_record(c, &r, &extra, secrets);
  c->outcome = saved;
  char why[1400] = "out of memory";
  int rc = extra ? ptah_record_credential(&c->st, &r, why, sizeof(why)) : -1;
  cJSON_Delete(extra);
  c->finished_at[0] = '\0';
  if(!rc)
    return 0;
  c->credential_failed = true;
  if(!extra)
    st_fail(&c->st, false, "credential", "this Pod cannot deliver its result record, so nothing "
            "is run: %s", why);
  pm_set(c, PM_FAILED, "the result could not be delivered with this Pod's credential, so "
         "nothing was read or changed: %s", why);
  return -1;
}
