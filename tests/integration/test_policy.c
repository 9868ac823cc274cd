/* The admission policy file: enforced, reloaded on change, an invalid file keeps the last good. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"

#define G "migration.podmotion.io"
#define OBJ "{\"apiVersion\":\"" G "/v1beta1\",\"kind\":\"MigrationPolicy\",\"metadata\":{\"name\":\"p\"}," \
            "\"spec\":{\"podSelector\":{},\"freezeBudget\":\"3s\"}}"

static void write_policy(const char *path, const char *text)
{
  char tmp[400];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  cr_assert_eq(rename(tmp, path), 0, "atomic replace, as kubelet does for a ConfigMap");
}

static long code_for(const struct wh *w)
{
  char *body = wh_admission_review("p-1", G, "v1beta1", "MigrationPolicy", "migrationpolicies",
                                   "CREATE", "p", "default", "alice", "[]", OBJ, NULL, 0);
  cJSON *r = wh_review(w, "/validate", body);
  free(body);
  long code = cJSON_IsTrue(json_get(r, "response.allowed")) ? 200
                                                             : json_get(r, "response.status.code")->valueint;
  cJSON_Delete(r);
  return code;
}

static long wait_code(const struct wh *w, long want)
{
  long c = 0;
  for(int i = 0; i < 40 && (c = code_for(w)) != want; i++)
    usleep(50000);
  return c;
}

static unsigned long long metric(const struct wh *w, const char *name)
{
  struct wh_reply r;
  wh_get(w, "/metrics", &r);
  char line[160];
  snprintf(line, sizeof(line), "\n%s", name); /* the sample, not the HELP line */
  const char *p = strstr(r.body, line);
  if(p)
    p++;
  unsigned long long v = p ? strtoull(p + strlen(name), NULL, 10) : 0;
  wh_reply_free(&r);
  return v;
}

Test(policy, enforced_reloaded_and_last_good_kept, .timeout = 30)
{
  char path[] = "/tmp/godwit-policy-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  write_policy(path, "{\"limits\":{\"maxFreezeBudgetMilliseconds\":2000}}");
  struct wh w;
  const char *const extra[] = { "--policy", path, NULL };
  wh_start(&w, extra);
  cr_assert_eq(code_for(&w), 403, "a 3s freeze budget is above the 2s limit: a policy refusal");

  write_policy(path, "{\"limits\":{\"maxFreezeBudgetMilliseconds\":5000}}");
  cr_assert_eq(wait_code(&w, 200), 200, "the raised limit was not picked up");

  unsigned long long errors = metric(&w, "godwit_webhook_policy_reload_errors_total ");
  write_policy(path, "{\"limits\":{\"maxFreezeBudgetMilliseconds\":\"lots\"}}");
  for(int i = 0; i < 40 && metric(&w, "godwit_webhook_policy_reload_errors_total ") == errors; i++)
    usleep(50000);
  cr_assert_eq(metric(&w, "godwit_webhook_policy_reload_errors_total "), errors + 1,
               "the refused file is counted");
  cr_assert_eq(code_for(&w), 200, "the last good policy stays in force");
  struct wh_reply r;
  wh_get(&w, "/readyz", &r);
  cr_assert_eq(r.status, 200, "an invalid new file does not make the webhook unready");
  wh_reply_free(&r);
  char *log = wh_sh("cat %s", w.log);
  cr_assert(strstr(log, "keeping the last good policy") && strstr(log, "maxFreezeBudgetMilliseconds"),
            "the log names the refused field");
  free(log);
  wh_stop(&w);
  unlink(path);
}

Test(policy, not_ready_until_the_policy_file_exists, .timeout = 30)
{
  char path[] = "/tmp/godwit-policy-late-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  unlink(path);
  struct wh w;
  const char *const extra[] = { "--policy", path, NULL };
  wh_spawn(&w, extra);
  struct wh_reply r;
  wh_get(&w, "/readyz", &r);
  cr_assert_eq(r.status, 503);
  cr_assert(strstr(r.body, "policy"), "%s", r.body);
  wh_reply_free(&r);
  char *body = wh_admission_review("p-2", G, "v1beta1", "MigrationPolicy", "migrationpolicies",
                                   "CREATE", "p", "default", "alice", "[]", OBJ, NULL, 0);
  cJSON *resp = wh_review(&w, "/validate", body);
  cr_assert(cJSON_IsFalse(json_get(resp, "response.allowed")), "no policy: refuse, never guess");
  cr_assert_eq(json_get(resp, "response.status.code")->valueint, 503);
  cJSON_Delete(resp);
  free(body);
  write_policy(path, "{}");
  long st = 0;
  for(int i = 0; i < 40 && st != 200; i++) {
    usleep(50000);
    wh_get(&w, "/readyz", &r);
    st = r.status;
    wh_reply_free(&r);
  }
  cr_assert_eq(st, 200);
  wh_stop(&w);
  unlink(path);
}

/* Every group of the reviewed user counts: an approver whose approving group comes after 64
 * others (a member of many teams) is still an approver. */
Test(policy, approver_group_found_past_the_64th_group, .timeout = 30)
{
  char path[] = "/tmp/godwit-policy-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  write_policy(path, "{\"approvals\":{\"approvers\":{\"groups\":[\"release-managers\"]}}}");
  struct wh w;
  const char *const extra[] = { "--policy", path, NULL };
  wh_start(&w, extra);
  char groups[4096] = "[";
  for(int i = 0; i < 80; i++)
    snprintf(groups + strlen(groups), sizeof(groups) - strlen(groups), "\"team-%02d\",", i);
  strcat(groups, "\"release-managers\"]");
  const char *obj = "{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahSchemaApproval\","
                    "\"metadata\":{\"name\":\"a\",\"namespace\":\"shop\"},\"spec\":{\"schemaRef\":"
                    "{\"name\":\"orders\"},\"planDigest\":\"sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0"
                    "b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d\",\"planAuthor\":\"bob\",\"approver\":"
                    "\"carol\"}}";
  char *body = wh_admission_review("a-1", "ptah.run", "v1", "PtahSchemaApproval",
                                   "ptahschemaapprovals", "CREATE", "a", "shop", "carol", groups,
                                   obj, NULL, 0);
  cJSON *r = wh_review(&w, "/validate", body);
  free(body);
  cr_assert(cJSON_IsTrue(json_get(r, "response.allowed")), "refused: %s",
            json_get_str(r, "response.status.message"));
  cJSON_Delete(r);
  /* the same user without that group is refused: the check did run */
  groups[strlen(groups) - strlen(",\"release-managers\"]")] = '\0';
  strcat(groups, "]");
  body = wh_admission_review("a-2", "ptah.run", "v1", "PtahSchemaApproval",
                             "ptahschemaapprovals", "CREATE", "a", "shop", "carol", groups, obj,
                             NULL, 0);
  r = wh_review(&w, "/validate", body);
  free(body);
  cr_assert(cJSON_IsFalse(json_get(r, "response.allowed")));
  cr_assert_not_null(strstr(json_get_str(r, "response.status.message"), "\"carol\""));
  cJSON_Delete(r);
  wh_stop(&w);
  unlink(path);
}
