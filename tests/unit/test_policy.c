/* The admission policy file: parsing, refusal of bad files with the field named, matching. */
#include <criterion/criterion.h>
#include <string.h>

#include "apitest.h"
#include "policy.h"

static gw_rc parse(const char *s, struct policy **p, char *err)
{
  return policy_parse(s, strlen(s), p, err, 256);
}

Test(policy, full_document)
{
  struct policy *p = t_policy(
    "{\"apiVersion\":\"godwit.dev/v1\",\"kind\":\"AdmissionPolicy\","
    "\"images\":{\"allowedRegistries\":[\"ghcr.io/dimitri/\"]},"
    "\"podMetadata\":{\"labels\":{\"allow\":[{\"key\":\"team\"},{\"key\":\"app.kubernetes.io/*\"}],"
    "\"deny\":[{\"key\":\"*\",\"values\":[\"root\"]}]}},"
    "\"approvals\":{\"approvers\":{\"users\":[\"carol\"],\"groups\":[\"db-approvers\"]},\"allowSelfApproval\":true},"
    "\"limits\":{\"maxTableJobs\":8,\"maxWorkDirSize\":\"500Gi\"}}");
  cr_assert(policy_image_allowed(p, "ghcr.io/dimitri/pgcopydb:v0.17"));
  cr_assert_not(policy_image_allowed(p, "docker.io/library/postgres:15"));
  char buf[256];
  cr_assert_null(policy_meta_check(&p->labels, "team", "payments", buf, sizeof(buf)));
  cr_assert_null(policy_meta_check(&p->labels, "app.kubernetes.io/name", "x", buf, sizeof(buf)));
  cr_assert_not_null(policy_meta_check(&p->labels, "team", "root", buf, sizeof(buf)), "deny wins");
  cr_assert_not_null(policy_meta_check(&p->labels, "owner", "x", buf, sizeof(buf)), "not allowed");
  cr_assert_null(policy_meta_check(&p->annotations, "anything", "x", buf, sizeof(buf)),
                 "no rules: anything goes");
  const char *g[] = { "db-approvers" };
  cr_assert(policy_is_approver(p, "bob", g, 1));
  cr_assert(policy_is_approver(p, "carol", NULL, 0));
  cr_assert_not(policy_is_approver(p, "bob", NULL, 0));
  cr_assert(p->allow_self_approval);
  cr_assert_eq(p->limits.max_table_jobs, 8);
  cr_assert_eq(p->limits.max_work_dir_bytes, 500LL << 30);
  cr_assert_eq(strncmp(p->digest, "sha256:", 7), 0);
  policy_free(p);
}

Test(policy, bad_files_name_the_field)
{
  struct {
    const char *text, *field;
  } bad[] = {
    { "[]", "(document)" },
    { "{\"limits\":{\"maxTableJobs\":-1}}", "limits.maxTableJobs" },
    { "{\"limits\":{\"maxWorkDirSize\":\"big\"}}", "limits.maxWorkDirSize" },
    { "{\"images\":{\"allowedRegistries\":\"ghcr.io\"}}", "images.allowedRegistries" },
    { "{\"podMetadata\":{\"labels\":{\"allow\":[{\"values\":[\"x\"]}]}}}", "podMetadata.labels.allow[0]" },
    { "{\"approvals\":{\"allowSelfApproval\":\"no\"}}", "approvals.allowSelfApproval" },
    { "{\"limit\":{}}", "limit" },
    { "{\"kind\":\"Policy\"}", "kind" },
    { "{", "malformed JSON" },
  };
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct policy *p = (struct policy *)1;
    char err[256];
    cr_assert_neq(parse(bad[i].text, &p, err), GW_OK, "%s accepted", bad[i].text);
    cr_assert_null(p);
    cr_assert(strstr(err, bad[i].field), "error \"%s\" does not name %s", err, bad[i].field);
  }
}

Test(policy, default_policy_is_permissive_but_forbids_self_approval)
{
  struct policy *p = policy_default();
  cr_assert(policy_image_allowed(p, "anything:1"));
  cr_assert(policy_is_approver(p, "anyone", NULL, 0));
  cr_assert_not(p->allow_self_approval);
  policy_free(p);
}

Test(policy, glob)
{
  cr_assert(policy_glob("*", ""));
  cr_assert(policy_glob("example.com/*", "example.com/owner"));
  cr_assert_not(policy_glob("example.com/*", "example.org/owner"));
  cr_assert(policy_glob("a?c*", "abcdef"));
  cr_assert_not(policy_glob("a?c", "ac"));
}

Test(policy, ptah_section)
{
  struct policy *p = t_policy("{\"ptah\":{\"allowDestructive\":false,\"requireSourceDigest\":true,"
                              "\"deniedStatements\":[\"drop table *\",\"create extension *\"]}}");
  cr_assert_not(p->ptah_allow_destructive);
  cr_assert(p->ptah_require_source_digest);
  cr_assert_eq(p->nptah_denied_statements, 2);
  cr_assert(policy_glob(p->ptah_denied_statements[0], "drop table public.orders"));
  cr_assert_not(policy_glob(p->ptah_denied_statements[0], "drop column public.orders.note"));
  policy_free(p);
  p = policy_default();
  cr_assert(p->ptah_allow_destructive, "the built-in policy leaves destructive plans to the spec");
  cr_assert_not(p->ptah_require_source_digest);
  policy_free(p);
  struct {
    const char *text, *field;
  } bad[] = {
    { "{\"ptah\":{\"allowDestructive\":\"no\"}}", "ptah.allowDestructive" },
    { "{\"ptah\":{\"requireSourceDigest\":1}}", "ptah.requireSourceDigest" },
    { "{\"ptah\":{\"deniedStatements\":\"drop table *\"}}", "ptah.deniedStatements" },
    { "{\"ptah\":{\"allowDestruction\":true}}", "ptah.allowDestruction" },
    { "{\"ptah\":[]}", "ptah" },
  };
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct policy *q = (struct policy *)1;
    char err[256];
    cr_assert_neq(parse(bad[i].text, &q, err), GW_OK, "%s accepted", bad[i].text);
    cr_assert_null(q);
    cr_assert(strstr(err, bad[i].field), "error \"%s\" does not name %s", err, bad[i].field);
  }
}
