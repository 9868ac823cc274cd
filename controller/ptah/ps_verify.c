/* Verification of a PtahSchema's desired schema and plans (ps.h): spec.verification and the
 * admission policy's "ptah" section together. The desired SQL must match a pinned digest (and
 * carry one when the policy requires it); a plan may hold destructive statements only when both
 * the spec opts in and the policy allows them, and no statement whose label a policy glob denies.
 * A refusal is ArtifactVerificationRefused; a policy that changed under a published plan and no
 * longer passes it retires the plan and its approval (VerificationPolicyInvalidated). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certgen.h"
#include "digest.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "ps.h"
#include "strbuf.h"

struct policy *ps_policy(struct ps *p)
{
  const char *path = p->o->policy_file;
  if(!path || !*path)
    return policy_default();
  char *text = NULL, err[512] = "";
  size_t len = 0;
  struct policy *pol = NULL;
  gw_rc rc = certgen_read_file(path, 4u << 20, &text, &len);
  if(!rc)
    rc = policy_parse(text, len, &pol, err, sizeof(err));
  free(text);
  if(rc) {
    /* the built-in policy is the strict side of self-approval; destructive plans are then
     * judged by the spec alone */
    log_kv(LOG_WARN, "cannot read the admission policy: the built-in policy applies", "key",
           p->ctx->key, "policy", path, "error", err[0] ? err : gw_strerror(rc), LOG_END);
    return policy_default();
  }
  return pol;
}

gw_rc ps_verify_load(struct ps *p, struct ps_verify *v)
{
  memset(v, 0, sizeof(*v));
  v->pol = ps_policy(p);
  if(!v->pol)
    return GW_ENOMEM;
  v->pin = json_get_str(p->obj, "spec.verification.sourceDigest");
  v->allow_destructive = json_get_bool(p->obj, "spec.verification.allowDestructive", false) &&
                         v->pol->ptah_allow_destructive;
  struct strbuf sb;
  strbuf_init(&sb, 1u << 20);
  gw_rc rc = strbuf_addf(&sb, "ptah-verification/1\nspecDestructive %d\npolicyDestructive %d\n"
                         "pin %s\nrequirePin %d\n",
                         json_get_bool(p->obj, "spec.verification.allowDestructive", false),
                         v->pol->ptah_allow_destructive, v->pin ? v->pin : "",
                         v->pol->ptah_require_source_digest);
  for(size_t i = 0; !rc && i < v->pol->nptah_denied_statements; i++)
    rc = strbuf_addf(&sb, "denied %s\n", v->pol->ptah_denied_statements[i]);
  if(!rc)
    rc = digest_sha256(sb.buf ? sb.buf : "", sb.len, v->digest);
  strbuf_release(&sb);
  return rc;
}

void ps_verify_release(struct ps_verify *v)
{
  policy_free(v->pol);
  v->pol = NULL;
}

bool ps_verify_source(const struct ps_verify *v, const struct ps_desired *d, char *why,
                      size_t len)
{
  if(v->pin && strcmp(v->pin, d->checksum)) {
    snprintf(why, len, "the desired schema's sha256 is %s, and spec.verification.sourceDigest "
             "pins %s: publish the schema that was pinned, or pin this one", d->checksum,
             v->pin);
    return false;
  }
  if(!v->pin && v->pol->ptah_require_source_digest) {
    snprintf(why, len, "the admission policy requires a pinned desired schema "
             "(ptah.requireSourceDigest) and spec.verification.sourceDigest is not set: pin it "
             "(%s is the current schema's)", d->checksum);
    return false;
  }
  return true;
}

bool ps_verify_plan(const struct ps_verify *v, const cJSON *stmts, bool omitted,
                    long long destructive, char *why, size_t len)
{
  why[0] = '\0';
  if(destructive > 0 && !v->allow_destructive) {
    struct strbuf sb;
    strbuf_init(&sb, 2048);
    const cJSON *s;
    int shown = 0;
    gw_rc rc = GW_OK;
    cJSON_ArrayForEach(s, stmts)
      if(json_get_bool(s, "destructive", false) && shown < 5 && !rc)
        rc = strbuf_addf(&sb, "%s%s", shown++ ? "; " : "", json_get_str(s, "label")
                         ? json_get_str(s, "label") : "?");
    snprintf(why, len, "the plan holds %lld destructive statement%s (%s%s) and %s", destructive,
             destructive == 1 ? "" : "s", strbuf_str(&sb), destructive > shown ? "; ..." : "",
             v->pol->ptah_allow_destructive
               ? "spec.verification.allowDestructive is not true: opt in to them, or change "
                 "the desired schema so nothing is lost"
               : "the admission policy forbids destructive plans (ptah.allowDestructive: "
                 "false): make the change in a PtahMigration an admin reviews, or ask the "
                 "cluster admin");
    strbuf_release(&sb);
    return false;
  }
  if(!v->pol->nptah_denied_statements)
    return true;
  if(omitted) {
    snprintf(why, len, "the plan's statements are too large for its record, so they cannot be "
             "checked against the admission policy's ptah.deniedStatements");
    return false;
  }
  const cJSON *s;
  cJSON_ArrayForEach(s, stmts)
  {
    const char *label = json_get_str(s, "label");
    for(size_t i = 0; label && i < v->pol->nptah_denied_statements; i++)
      if(policy_glob(v->pol->ptah_denied_statements[i], label)) {
        snprintf(why, len, "the plan's statement \"%.200s\" is denied by the admission "
                 "policy's ptah.deniedStatements rule \"%s\": make the change another way, or "
                 "ask the cluster admin", label, v->pol->ptah_denied_statements[i]);
        return false;
      }
  }
  return true;
}
