#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/format.h"
#include "digest.h"
#include "json.h"

static const struct policy_limits default_limits = {
  .max_table_jobs = 64,
  .max_index_jobs = 64,
  .max_backoff_limit = 20,
  .max_pre_copy_rounds = 10,
  .max_verification_timeout_seconds = 3600,
  .max_work_dir_bytes = 0, /* 0 = no limit */
  .max_freeze_budget_ms = 60000,
};

static void free_strv(char **v)
{
  if(!v)
    return;
  for(char **p = v; *p; p++)
    free(*p);
  free(v);
}

static void free_rules(struct policy_meta_rule *r, size_t n)
{
  for(size_t i = 0; i < n; i++) {
    free(r[i].key);
    free_strv(r[i].values);
  }
  free(r);
}

void policy_free(struct policy *p)
{
  if(!p)
    return;
  free_strv(p->registries);
  free_rules(p->labels.allow, p->labels.nallow);
  free_rules(p->labels.deny, p->labels.ndeny);
  free_rules(p->annotations.allow, p->annotations.nallow);
  free_rules(p->annotations.deny, p->annotations.ndeny);
  free_strv(p->approver_users);
  free_strv(p->approver_groups);
  free_strv(p->ptah_denied_statements);
  free(p);
}

struct parser {
  char *err;
  size_t errlen;
};

static gw_rc bad(struct parser *ps, const char *field, const char *what)
{
  snprintf(ps->err, ps->errlen, "%s: %s", field, what);
  return GW_EINVAL;
}

/* A NULL-terminated copy of an array of non-empty strings (absent = empty list). */
static gw_rc strv(struct parser *ps, const cJSON *arr, const char *field, char ***out, size_t *n)
{
  *out = NULL;
  if(n)
    *n = 0;
  if(!arr)
    return GW_OK;
  if(!cJSON_IsArray(arr))
    return bad(ps, field, "must be a list of strings");
  size_t cnt = (size_t)cJSON_GetArraySize(arr);
  char **v = calloc(cnt + 1, sizeof(*v));
  if(!v)
    return GW_ENOMEM;
  size_t i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, arr)
  {
    if(!cJSON_IsString(c) || !*c->valuestring) {
      free_strv(v);
      return bad(ps, field, "must be a list of non-empty strings");
    }
    if(!(v[i++] = strdup(c->valuestring))) {
      free_strv(v);
      return GW_ENOMEM;
    }
  }
  *out = v;
  if(n)
    *n = cnt;
  return GW_OK;
}

static gw_rc rules(struct parser *ps, const cJSON *arr, const char *field,
                   struct policy_meta_rule **out, size_t *n)
{
  *out = NULL;
  *n = 0;
  if(!arr)
    return GW_OK;
  if(!cJSON_IsArray(arr))
    return bad(ps, field, "must be a list of {\"key\": ..., \"values\": [...]} rules");
  size_t cnt = (size_t)cJSON_GetArraySize(arr);
  struct policy_meta_rule *r = calloc(cnt ? cnt : 1, sizeof(*r));
  if(!r)
    return GW_ENOMEM;
  size_t i = 0;
  const cJSON *c;
  gw_rc rc = GW_OK;
  cJSON_ArrayForEach(c, arr)
  {
    char f[128];
    snprintf(f, sizeof(f), "%s[%zu]", field, i);
    const char *key = json_get_str(c, "key");
    if(!cJSON_IsObject(c) || !key || !*key) {
      rc = bad(ps, f, "must be an object with a non-empty \"key\"");
      break;
    }
    r[i].key = strdup(key);
    snprintf(f, sizeof(f), "%s[%zu].values", field, i);
    rc = r[i].key ? strv(ps, json_get(c, "values"), f, &r[i].values, NULL) : GW_ENOMEM;
    i++;
    if(rc)
      break;
  }
  if(rc) {
    free_rules(r, i);
    return rc;
  }
  *out = r;
  *n = cnt;
  return GW_OK;
}

static gw_rc meta(struct parser *ps, const cJSON *o, const char *field,
                  struct policy_meta_rules *m)
{
  char f[96];
  if(!o)
    return GW_OK;
  if(!cJSON_IsObject(o))
    return bad(ps, field, "must be an object with \"allow\" and \"deny\" lists");
  snprintf(f, sizeof(f), "%s.allow", field);
  gw_rc rc = rules(ps, json_get(o, "allow"), f, &m->allow, &m->nallow);
  snprintf(f, sizeof(f), "%s.deny", field);
  if(!rc)
    rc = rules(ps, json_get(o, "deny"), f, &m->deny, &m->ndeny);
  return rc;
}

static gw_rc limit_int(struct parser *ps, const cJSON *lim, const char *name, int *out)
{
  const cJSON *v = json_get(lim, name);
  if(!v)
    return GW_OK;
  char f[64];
  snprintf(f, sizeof(f), "limits.%s", name);
  if(!json_is_integer(v) || v->valuedouble < 0 || v->valuedouble > 1e9)
    return bad(ps, f, "must be a non-negative integer");
  *out = (int)v->valuedouble;
  return GW_OK;
}

static void digest_of(const char *text, size_t len, char out[72])
{
  if(digest_sha256(text, len, out))
    snprintf(out, 72, "sha256:unknown");
}

static const char *const top_keys[] = { "apiVersion", "kind", "images", "podMetadata",
                                        "approvals", "limits", "ptah", NULL };
static const char *const ptah_keys[] = { "allowDestructive", "requireSourceDigest",
                                         "deniedStatements", NULL };

/* The "ptah" section: what every PtahSchema's plan is verified against. */
static gw_rc ptah_section(struct parser *ps, const cJSON *o, struct policy *p)
{
  p->ptah_allow_destructive = true;
  if(!o)
    return GW_OK;
  if(!cJSON_IsObject(o))
    return bad(ps, "ptah", "must be an object");
  for(const cJSON *c = o->child; c; c = c->next) {
    bool known = false;
    for(const char *const *k = ptah_keys; *k; k++)
      known |= !strcmp(*k, c->string);
    if(!known) {
      char f[128];
      snprintf(f, sizeof(f), "ptah.%s", c->string);
      return bad(ps, f, "unknown field; expected allowDestructive, requireSourceDigest, "
                        "deniedStatements");
    }
  }
  const cJSON *d = json_get(o, "allowDestructive");
  if(d && !cJSON_IsBool(d))
    return bad(ps, "ptah.allowDestructive", "must be true or false");
  p->ptah_allow_destructive = !d || cJSON_IsTrue(d);
  const cJSON *r = json_get(o, "requireSourceDigest");
  if(r && !cJSON_IsBool(r))
    return bad(ps, "ptah.requireSourceDigest", "must be true or false");
  p->ptah_require_source_digest = cJSON_IsTrue(r);
  return strv(ps, json_get(o, "deniedStatements"), "ptah.deniedStatements",
              &p->ptah_denied_statements, &p->nptah_denied_statements);
}

gw_rc policy_parse(const char *text, size_t len, struct policy **out, char *err, size_t errlen)
{
  *out = NULL;
  struct parser ps = { err, errlen };
  cJSON *doc;
  gw_rc rc = json_parse_strict(text, len, &doc, err, errlen);
  if(rc)
    return rc;
  struct policy *p = calloc(1, sizeof(*p));
  if(!p) {
    cJSON_Delete(doc);
    return GW_ENOMEM;
  }
  p->limits = default_limits;
  if(!cJSON_IsObject(doc))
    rc = bad(&ps, "(document)", "must be a JSON object");
  for(const cJSON *c = cJSON_IsObject(doc) ? doc->child : NULL; c && !rc; c = c->next) {
    bool known = false;
    for(const char *const *k = top_keys; *k; k++)
      known |= !strcmp(*k, c->string);
    if(!known)
      rc = bad(&ps, c->string, "unknown field; expected images, podMetadata, approvals, limits, "
                               "ptah");
  }
  const char *kind = json_get_str(doc, "kind");
  if(!rc && kind && strcmp(kind, "AdmissionPolicy"))
    rc = bad(&ps, "kind", "must be \"AdmissionPolicy\"");
  if(!rc)
    rc = strv(&ps, json_get(doc, "images.allowedRegistries"), "images.allowedRegistries",
              &p->registries, &p->nregistries);
  if(!rc)
    rc = meta(&ps, json_get(doc, "podMetadata.labels"), "podMetadata.labels", &p->labels);
  if(!rc)
    rc = meta(&ps, json_get(doc, "podMetadata.annotations"), "podMetadata.annotations",
              &p->annotations);
  if(!rc)
    rc = strv(&ps, json_get(doc, "approvals.approvers.users"), "approvals.approvers.users",
              &p->approver_users, &p->napprover_users);
  if(!rc)
    rc = strv(&ps, json_get(doc, "approvals.approvers.groups"), "approvals.approvers.groups",
              &p->approver_groups, &p->napprover_groups);
  const cJSON *self = json_get(doc, "approvals.allowSelfApproval");
  if(!rc && self && !cJSON_IsBool(self))
    rc = bad(&ps, "approvals.allowSelfApproval", "must be true or false");
  p->allow_self_approval = cJSON_IsTrue(self);
  if(!rc)
    rc = ptah_section(&ps, json_get(doc, "ptah"), p);
  const cJSON *lim = json_get(doc, "limits");
  if(!rc && lim && !cJSON_IsObject(lim))
    rc = bad(&ps, "limits", "must be an object");
  if(!rc)
    rc = limit_int(&ps, lim, "maxTableJobs", &p->limits.max_table_jobs);
  if(!rc)
    rc = limit_int(&ps, lim, "maxIndexJobs", &p->limits.max_index_jobs);
  if(!rc)
    rc = limit_int(&ps, lim, "maxBackoffLimit", &p->limits.max_backoff_limit);
  if(!rc)
    rc = limit_int(&ps, lim, "maxPreCopyRounds", &p->limits.max_pre_copy_rounds);
  if(!rc)
    rc = limit_int(&ps, lim, "maxVerificationTimeoutSeconds",
                   &p->limits.max_verification_timeout_seconds);
  if(!rc)
    rc = limit_int(&ps, lim, "maxFreezeBudgetMilliseconds", &p->limits.max_freeze_budget_ms);
  const cJSON *wd = json_get(lim, "maxWorkDirSize");
  if(!rc && wd) {
    if(!cJSON_IsString(wd) || !quantity_parse(wd->valuestring, &p->limits.max_work_dir_bytes))
      rc = bad(&ps, "limits.maxWorkDirSize", "must be a quantity such as \"500Gi\"");
  }
  cJSON_Delete(doc);
  if(rc) {
    policy_free(p);
    return rc;
  }
  digest_of(text, len, p->digest);
  *out = p;
  return GW_OK;
}

struct policy *policy_default(void)
{
  struct policy *p = calloc(1, sizeof(*p));
  if(p) {
    p->limits = default_limits;
    p->ptah_allow_destructive = true;
    strcpy(p->digest, "builtin");
  }
  return p;
}

bool policy_image_allowed(const struct policy *p, const char *image)
{
  if(!p->nregistries)
    return true;
  for(size_t i = 0; i < p->nregistries; i++)
    if(!strncmp(image, p->registries[i], strlen(p->registries[i])))
      return true;
  return false;
}

bool policy_glob(const char *pat, const char *s)
{
  const char *star = NULL, *mark = NULL;
  while(*s) {
    if(*pat == '?' || *pat == *s) {
      pat++;
      s++;
    } else if(*pat == '*') {
      star = pat++;
      mark = s;
    } else if(star) {
      pat = star + 1;
      s = ++mark;
    } else
      return false;
  }
  while(*pat == '*')
    pat++;
  return !*pat;
}

static bool rule_matches(const struct policy_meta_rule *r, const char *key, const char *value)
{
  if(!policy_glob(r->key, key))
    return false;
  if(!r->values)
    return true;
  for(char **v = r->values; *v; v++)
    if(policy_glob(*v, value))
      return true;
  return false;
}

const char *policy_meta_check(const struct policy_meta_rules *r, const char *key,
                              const char *value, char *buf, size_t buflen)
{
  for(size_t i = 0; i < r->ndeny; i++)
    if(rule_matches(&r->deny[i], key, value)) {
      snprintf(buf, buflen, "denied by the admission policy's deny rule for key \"%s\"",
               r->deny[i].key);
      return buf;
    }
  if(!r->nallow)
    return NULL;
  for(size_t i = 0; i < r->nallow; i++)
    if(rule_matches(&r->allow[i], key, value))
      return NULL;
  snprintf(buf, buflen, "not allowed by the admission policy (no allow rule matches this key "
                        "and value); ask the cluster admin to allow it or remove it");
  return buf;
}

bool policy_is_approver(const struct policy *p, const char *user, const char *const *groups,
                        size_t ngroups)
{
  if(!p->napprover_users && !p->napprover_groups)
    return true;
  for(size_t i = 0; i < p->napprover_users; i++)
    if(!strcmp(p->approver_users[i], user))
      return true;
  for(size_t i = 0; i < p->napprover_groups; i++)
    for(size_t j = 0; j < ngroups; j++)
      if(!strcmp(p->approver_groups[i], groups[j]))
        return true;
  return false;
}
