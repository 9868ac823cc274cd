/*
 * test_controller_rbac.c: the controller under manifests/rbac-controller.yaml, as installed (up
 * runs it as its ServiceAccount): a rule taken out of its ClusterRole is reported, not retried
 * in silence (the API server's Forbidden message in the log, a Warning Event Forbidden and
 * Stalled=True Forbidden on the object), and the Migration goes on once the rule is back.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json.h"

static struct e2e E;

static void stop(void)
{
  e2e_stop(&E);
}

TestSuite(controller_rbac, .fini = stop, .timeout = 300);

#define DRY_RUN                                                                               \
  "apiVersion: pgcopydb.io/v1\n"                                                              \
  "kind: Migration\n"                                                                         \
  "metadata:\n"                                                                               \
  "  name: m\n"                                                                               \
  "spec:\n"                                                                                   \
  "  source:\n"                                                                               \
  "    connectionSecretRef: {name: src}\n"                                                    \
  "  target:\n"                                                                               \
  "    connectionSecretRef: {name: dst}\n"                                                    \
  "  dryRun: true\n"

/* The controller's ClusterRole as stored (cJSON_Delete it). */
static cJSON *controller_role(void)
{
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "get clusterrole godwit-controller -o json");
  cr_assert_eq(rc, 0, "%s", out);
  cJSON *role = cJSON_Parse(out);
  free(out);
  cr_assert(role);
  return role;
}

/* kubectl replace, whatever was written since it was read */
static void replace_role(cJSON *role)
{
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(role, "metadata"), "resourceVersion");
  const char *path = cl_path(&E.c, "role.json");
  FILE *f = fopen(path, "w");
  cr_assert(f);
  char *text = cJSON_PrintUnformatted(role);
  fputs(text, f);
  fclose(f);
  cJSON_free(text);
  char *out = NULL;
  int rc = e2e_kubectl(&E, &out, "replace -f %s", path);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
}

/* Takes verb out of the rule on resource in group; false when no rule had it. */
static bool remove_verb(cJSON *role, const char *group, const char *resource, const char *verb)
{
  cJSON *rule;
  cJSON_ArrayForEach(rule, cJSON_GetObjectItem(role, "rules"))
  {
    const char *g = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "apiGroups"), 0));
    const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "resources"), 0));
    if(!g || !r || strcmp(g, group) || strcmp(r, resource))
      continue;
    cJSON *verbs = cJSON_GetObjectItem(rule, "verbs");
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, verbs)
    {
      if(!strcmp(v->valuestring, verb)) {
        cJSON_DeleteItemFromArray(verbs, i);
        return true;
      }
      i++;
    }
  }
  return false;
}

Test(controller_rbac, a_missing_verb_is_reported_forbidden_and_the_migration_goes_on_once_granted)
{
  e2e_start(&E, NULL);
  cJSON *installed = controller_role();
  cJSON *trimmed = cJSON_Duplicate(installed, 1);
  cr_assert(remove_verb(trimmed, "batch", "jobs", "create"),
            "rbac-controller.yaml no longer lets the controller create Jobs");
  replace_role(trimmed);
  cJSON_Delete(trimmed);

  e2e_apply(&E, DRY_RUN);
  bool told = e2e_wait_event(&E, "m", "Forbidden", 60000);
  char *d = e2e_describe(&E, "m");
  cr_assert(told, "no Forbidden Event:\n%s", d);
  const char *ev = e2e_event_message(&E, "m", "Forbidden");
  cr_expect(strstr(ev, "User \"system:serviceaccount:godwit-system:godwit-controller\" cannot "
                       "create resource \"jobs\" in API group \"batch\" in the namespace "
                       "\"default\"") != NULL, "the Event does not name what is missing: %s", ev);
  cr_expect(e2e_wait_cond(&E, "m", "Stalled", "True", "Forbidden", 30000), "%s", d);
  cr_expect(strstr(e2e_cond_message(&E, "m", "Stalled"), "cannot create resource \"jobs\"") !=
              NULL, "%s", e2e_cond_message(&E, "m", "Stalled"));
  char *log = cl_slurp(cl_path(&E.c, "controller.log"));
  cr_expect(log && strstr(log, "refused by the API server's authorization") &&
              strstr(log, "cannot create resource \\\"jobs\\\""),
            "the controller's log does not say it: %s", log ? log : "(none)");
  free(log);
  char *jobs = e2e_jobs(&E, "m");
  cr_expect(!strstr(jobs, "-preflight-"), "a Job was created without the right:\n%s", jobs);
  free(jobs);
  free(d);

  /* the rule back: the next retry creates the Job, and the dry run completes */
  replace_role(installed);
  cJSON_Delete(installed);
  bool done = e2e_wait_cond(&E, "m", "Complete", "True", "DryRunSucceeded", 120000);
  d = e2e_describe(&E, "m");
  cr_assert(done, "%s", d);
  cr_expect_str_eq(e2e_cond_status(&E, "m", "Ready"), "True", "%s", d);
  cr_expect_str_eq(e2e_cond_status(&E, "m", "Stalled"), "", "Stalled stayed:\n%s", d);
  free(d);
}
