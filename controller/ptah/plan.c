/* What the ConfigMap holds, and whether a run is due: a run is claimed when the inputs (the
 * migrations, the target, the history table) differ from those of the last finished run. The
 * database itself is read by the run (the runner reads the history table under the lock before
 * it applies anything), never by the controller, which holds no database credential for Ptah. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conditions.h"
#include "digest.h"
#include "json.h"
#include "pm.h"
#include "strbuf.h"

/* "<digits>_<description>.sql": the version, or -1. */
static long long key_version(const char *key)
{
  const char *s = key;
  long long v = 0;
  int digits = 0;
  while(*s >= '0' && *s <= '9' && digits < 16) {
    v = v * 10 + (*s++ - '0');
    digits++;
  }
  size_t n = strlen(key);
  if(!digits || *s != '_' || n < 5 || strcmp(key + n - 4, ".sql") || v < 1)
    return -1;
  return v;
}

static int cmp_keys(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The digest over the sorted keys and values, the target and the history table. */
static gw_rc digest_inputs(const cJSON *data, long long target, const char *history, char *out)
{
  size_t n = (size_t)cJSON_GetArraySize(data);
  const char **keys = calloc(n ? n : 1, sizeof(*keys));
  if(!keys)
    return GW_ENOMEM;
  size_t k = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, data)
    if(x->string && cJSON_IsString(x))
      keys[k++] = x->string;
  qsort(keys, k, sizeof(*keys), cmp_keys);
  struct strbuf sb;
  strbuf_init(&sb, 8u << 20);
  gw_rc rc = GW_OK;
  char t[64];
  snprintf(t, sizeof(t), "target=%lld\nhistory=", target);
  rc = strbuf_add(&sb, t, strlen(t));
  if(!rc)
    rc = strbuf_add(&sb, history, strlen(history) + 1);
  for(size_t i = 0; !rc && i < k; i++) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, keys[i]));
    rc = strbuf_add(&sb, keys[i], strlen(keys[i]) + 1);
    if(!rc)
      rc = strbuf_add(&sb, v, strlen(v) + 1);
  }
  if(!rc)
    rc = digest_sha256(sb.buf ? sb.buf : "", sb.len, out);
  strbuf_release(&sb);
  free(keys);
  return rc;
}

gw_rc pm_inputs_read(struct pm *p, struct pm_inputs *in)
{
  memset(in, 0, sizeof(*in));
  const char *cm = json_get_str(p->obj, "spec.migrations.configMapRef.name");
  struct informer *cache = mgr_cache(p->ctx->mgr, &KUBE_CONFIGMAPS);
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", p->ns, cm ? cm : "");
  cJSON *obj = cache ? informer_get(cache, key) : NULL;
  if(!obj)
    return GW_OK;
  in->found = true;
  const cJSON *data = json_get(obj, "data");
  const cJSON *x;
  cJSON_ArrayForEach(x, data)
  {
    long long v = x->string ? key_version(x->string) : -1;
    if(v > in->latest)
      in->latest = v;
  }
  const cJSON *t = json_get(p->obj, "spec.targetVersion");
  in->target = cJSON_IsNumber(t) ? (long long)t->valuedouble : in->latest;
  const char *hist = json_get_str(p->obj, "spec.migrations.historyTable");
  gw_rc rc = digest_inputs(data, in->target, hist ? hist : "public.ptah_migrations", in->digest);
  cJSON_Delete(obj);
  return rc;
}

/* Ready and the phase from the last finished run, when nothing is due. */
static void settled(struct pm *p)
{
  const char *outcome = json_get_str(p->obj, "status.lastRun.outcome");
  long long cur = op_status_int(p->obj, "currentVersion", 0);
  if(outcome && (!strcmp(outcome, "Applied") || !strcmp(outcome, "UpToDate"))) {
    edit_phase(&p->ed, PM_UPTODATE);
    if(!cond_is_true(p->obj, C_READY))
      pm_ready(p, COND_TRUE, outcome, "the database is at version %lld", cur);
  } else if(p->phase == PHASE_NONE || p->phase == PM_PENDING) {
    edit_phase(&p->ed, PM_PENDING);
  }
}

gw_rc pm_plan(struct pm *p)
{
  struct pm_inputs in;
  gw_rc rc = pm_inputs_read(p, &in);
  if(rc)
    return rc;
  const char *cm = json_get_str(p->obj, "spec.migrations.configMapRef.name");
  if(!in.found) {
    pm_ready(p, COND_FALSE, "ConfigMapNotFound", "ConfigMap \"%s\" (spec.migrations."
             "configMapRef) does not exist in namespace \"%s\": create it, one key per version "
             "(\"0001_create_users.sql\"); nothing runs until it exists", cm ? cm : "", p->ns);
    return GW_OK; /* its creation is watched */
  }
  edit_set_int(&p->ed, "latestVersion", in.latest);
  const char *applied = json_get_str(p->obj, "status.appliedInputs");
  if(applied && !strcmp(applied, in.digest)) {
    settled(p);
    return GW_OK;
  }
  /* a run is due: claim it before its Job exists */
  long long seq = op_status_int(p->obj, "operationCount", 0) + 1;
  struct ptah_op op;
  memset(&op, 0, sizeof(op));
  op_make_id(p->name, "apply", seq, op.id, sizeof(op.id));
  snprintf(op.type, sizeof(op.type), "Apply");
  op.attempt = 1;
  op.legacy = p->o->legacy_results;
  op_job_name(op.id, op.attempt, op.job, sizeof(op.job));
  snprintf(op.inputs, sizeof(op.inputs), "%s", in.digest);
  op.from = op_status_int(p->obj, "currentVersion", 0);
  op.to = in.target;
  pm_binding(p, op.binding, sizeof(op.binding));
  rc = pm_job_digest(p, &op, op.tdigest, sizeof(op.tdigest));
  if(rc)
    return rc;
  op_write(&p->ed, p->obj, &op);
  edit_set_int(&p->ed, "operationCount", seq);
  edit_phase(&p->ed, PM_MIGRATING);
  pm_ready(p, COND_FALSE, "Migrating", "operation %s claimed: migrating from version %lld to "
           "%lld", op.id, op.from, op.to);
  edit_requeue(&p->ed, 1); /* the Job is created on the next pass, after the claim is stored */
  return GW_OK;
}
