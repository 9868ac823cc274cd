/*
 * test_ptah_schema_verify.c: a PtahSchema's verification end to end on the local cluster with
 * real PostgreSQL: destructive plans need the spec's opt-in, a pinned desired schema must match
 * its digest, and the admission policy's ptah section (read by the controller from its
 * --admission-policy file) can forbid destructive plans or statements; a policy change that no
 * longer passes a published plan retires it (VerificationPolicyInvalidated).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "json.h"
#include "ptah_e2e.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(ptah_schema_verify, .fini = stop, .timeout = 300);

static void payments(void)
{
  pgfx_exec(&E.dst, "shop", "SET ROLE dst_app; CREATE TABLE public.payments (id bigint "
            "PRIMARY KEY)");
}

static void want_refused(const char *needle)
{
  psch_want_phase(&E, "Blocked", 120000);
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "ArtifactVerificationRefused");
  cr_expect(ptah_has_event(&E, "orders", "Warning", "ArtifactVerificationRefused"));
  const char *m = e2e_event_message(&E, "orders", "ArtifactVerificationRefused");
  cr_expect(strstr(m, needle) != NULL, "\"%s\" not in: %s", needle, m);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.digest"), "", "a plan was published");
}

/* Rewrites the controller's policy file, then makes the schema reconcile (a label: no spec
 * change, so the same inputs). */
static void policy(const char *path, const char *json, int n)
{
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(json, f);
  fclose(f);
  cr_assert_eq(e2e_kubectl(&E, NULL, "label --overwrite ptahschema orders touch=t%d", n), 0);
}

Test(ptah_schema_verify, a_destructive_plan_needs_the_specs_opt_in)
{
  psch_start(&E, false);
  payments();
  psch_schema(&E, "bob", ORDERS_V1, NULL); /* payments is not declared: the plan drops it */
  want_refused("drop table public.payments");
  cr_expect(strstr(e2e_cond_message(&E, "orders", "Ready"), "allowDestructive") != NULL);
  cr_expect(psch_has_column(&E, "payments", "id"));
  psch_schema(&E, "bob", ORDERS_V1, "  verification: {allowDestructive: true}\n");
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  cr_expect_geq(ptah_int(&E, "orders", "status.plan.destructive"), 1);
  cr_expect_str_eq(ptah_str(&E, "orders", "status.refused.reason"), "");
}

Test(ptah_schema_verify, a_pinned_schema_must_match_its_digest)
{
  psch_start(&E, false);
  psch_schema(&E, "bob", ORDERS_V1, "  verification: {sourceDigest: \"sha256:"
              "0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\"}\n");
  want_refused("pins sha256:0d5ee5fc");
  char sum[DIGEST_SHA256_LEN], more[256];
  cr_assert(!digest_sha256(ORDERS_V1, strlen(ORDERS_V1), sum));
  snprintf(more, sizeof(more), "  verification: {sourceDigest: \"%s\"}\n", sum);
  psch_schema(&E, "bob", ORDERS_V1, more);
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.desiredChecksum"), sum);
}

Test(ptah_schema_verify, the_admission_policy_retires_a_plan_it_no_longer_passes)
{
  char path[256];
  snprintf(path, sizeof(path), "/tmp/godwit-ptah-policy-%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("{\"ptah\":{\"allowDestructive\":true}}", f);
  fclose(f);
  setenv("GODWIT_POLICY", path, 1);
  psch_start(&E, false);
  payments();
  psch_schema(&E, "bob", ORDERS_V1, "  verification: {allowDestructive: true}\n");
  char digest[128];
  psch_want_new_plan(&E, NULL, digest, sizeof(digest));
  /* the admin forbids destructive plans: the published one no longer passes */
  policy(path, "{\"ptah\":{\"allowDestructive\":false}}", 1);
  bool ok = e2e_wait_event(&E, "orders", "VerificationPolicyInvalidated", 60000);
  char *d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no VerificationPolicyInvalidated:\n%s", d ? d : "");
  psch_want_phase(&E, "Blocked", 30000);
  cr_expect_str_eq(e2e_cond_reason(&E, "orders", "Ready"), "VerificationPolicyInvalidated");
  cr_expect_str_eq(ptah_str(&E, "orders", "status.plan.digest"), "");
  cr_expect(strstr(e2e_event_message(&E, "orders", "VerificationPolicyInvalidated"),
                   "ptah.allowDestructive") != NULL);
  /* destructive plans allowed again, but dropping tables denied: judged again, refused */
  policy(path, "{\"ptah\":{\"deniedStatements\":[\"drop table *\"]}}", 2);
  ok = e2e_wait_event(&E, "orders", "ArtifactVerificationRefused", 60000);
  d = ok ? NULL : e2e_describe(&E, "orders");
  cr_assert(ok, "no ArtifactVerificationRefused:\n%s", d ? d : "");
  cr_expect(strstr(e2e_event_message(&E, "orders", "ArtifactVerificationRefused"),
                   "deniedStatements") != NULL);
  /* the policy lifts it: planned again */
  policy(path, "{}", 3);
  char digest2[128];
  psch_want_new_plan(&E, NULL, digest2, sizeof(digest2));
  cr_expect(psch_has_column(&E, "payments", "id"), "nothing was applied");
  unlink(path);
}
