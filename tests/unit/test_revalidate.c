/* test_revalidate.c: api_revalidate, the webhook's rules run again by a controller on a stored
 * object (shared/api/api.h). */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <string.h>

#include "api/api.h"

static bool check(const char *kind, const char *group, const char *json, char *msg, size_t len)
{
  cJSON *o = cJSON_Parse(json);
  cr_assert_not_null(o, "%s", json);
  bool ok = api_revalidate(group, kind, o, msg, len);
  cJSON_Delete(o);
  return ok;
}

Test(revalidate, a_valid_object_passes_and_a_broken_one_names_each_field)
{
  char msg[1024];
  cr_expect(check("PtahMigration", "ptah.run",
                  "{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahMigration\",\"metadata\":"
                  "{\"name\":\"shop\",\"namespace\":\"default\"},\"spec\":{\"database\":"
                  "{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"uri\"}},\"migrations\":"
                  "{\"configMapRef\":{\"name\":\"m\"},\"historyTable\":\"public.h\"},"
                  "\"backoffLimit\":3}}", msg, sizeof(msg)), "%s", msg);
  cr_expect_str_eq(msg, "");
  cr_expect_not(check("PtahMigration", "ptah.run",
                      "{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahMigration\",\"metadata\":"
                      "{\"name\":\"shop\",\"namespace\":\"default\"},\"spec\":{\"database\":"
                      "{\"connectionSecretRef\":{\"name\":\"db\",\"key\":\"uri\"}},\"migrations\":"
                      "{\"configMapRef\":{\"name\":\"m\"},\"historyTable\":\"nodot\"}}}",
                      msg, sizeof(msg)));
  cr_expect(strstr(msg, "spec.migrations.historyTable: ") != NULL, "%s", msg);
  cr_expect_not(check("Nothing", "ptah.run", "{}", msg, sizeof(msg)));
  cr_expect_str_eq(msg, "the Nothing kind is not registered");
}

Test(revalidate, the_message_is_cut_to_its_buffer)
{
  char msg[24];
  cr_expect_not(check("PtahMigration", "ptah.run",
                      "{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahMigration\",\"metadata\":"
                      "{\"name\":\"shop\",\"namespace\":\"default\"},\"spec\":{}}",
                      msg, sizeof(msg)));
  cr_expect_lt(strlen(msg), sizeof(msg));
  cr_expect_gt(strlen(msg), 0);
}

/* Every registered kind runs its rules without a policy (the controller has none): a rule that
 * judged a limit crashed on PodMigration and MigrationPolicy before. */
Test(revalidate, every_kind_revalidates_without_a_policy)
{
  char msg[1024];
  cr_expect(check("PodMigration", "migration.podmotion.io",
                  "{\"apiVersion\":\"migration.podmotion.io/v1beta1\",\"kind\":\"PodMigration\","
                  "\"metadata\":{\"name\":\"m\",\"namespace\":\"default\"},\"spec\":{\"source\":"
                  "{\"podName\":\"web-0\"},\"destination\":{\"nodeName\":\"node-b\"},\"strategy\":"
                  "{\"type\":\"PreCopy\",\"preCopy\":{\"maxRounds\":5}},\"verification\":"
                  "{\"mode\":\"ReadinessProbe\",\"timeoutSeconds\":60}}}", msg, sizeof(msg)),
            "%s", msg);
  cr_expect(check("MigrationPolicy", "migration.podmotion.io",
                  "{\"apiVersion\":\"migration.podmotion.io/v1beta1\",\"kind\":\"MigrationPolicy\","
                  "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":"
                  "{},\"allowedModes\":[\"PreCopy\"],\"freezeBudget\":\"500ms\"}}", msg,
                  sizeof(msg)), "%s", msg);
  cr_expect(check("PtahSchema", "ptah.run",
                  "{\"apiVersion\":\"ptah.run/v1\",\"kind\":\"PtahSchema\",\"metadata\":{\"name\":"
                  "\"s\",\"namespace\":\"default\"},\"spec\":{\"database\":{\"connectionSecretRef\":"
                  "{\"name\":\"db\",\"key\":\"uri\"}},\"schema\":{\"sql\":\"CREATE TABLE t ();\"}}}",
                  msg, sizeof(msg)), "%s", msg);
}
