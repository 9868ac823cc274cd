/* The wording and shape of denials: what kubectl prints. */
#include <criterion/criterion.h>
#include <string.h>

#include "json.h"
#include "response.h"

static const struct adm_subject S = { "uid-1", "pgcopydb.io", "Migration", "shop" };

Test(response, one_cause_reads_as_one_line)
{
  struct ferrs e;
  ferrs_init(&e);
  ferrs_add(&e, FERR_INVALID, "spec.clone.tableJobs", "must be between 1 and 64, got 0");
  cJSON *r = response_denied(&S, &e, NULL);
  cr_assert_str_eq(json_get_str(r, "response.status.message"),
                   "Migration \"shop\" is invalid: spec.clone.tableJobs: must be between 1 and 64, got 0");
  cr_assert_eq(json_get(r, "response.status.code")->valueint, 422);
  cr_assert_str_eq(json_get_str(r, "response.uid"), "uid-1");
  cJSON_Delete(r);
  ferrs_release(&e);
}

Test(response, several_causes_are_listed_in_order)
{
  struct ferrs e;
  ferrs_init(&e);
  ferrs_add(&e, FERR_REQUIRED, "spec.source", "is required");
  ferrs_add_policy(&e, "spec.worker.image", "registry not allowed");
  cJSON *r = response_denied(&S, &e, NULL);
  cr_assert_str_eq(json_get_str(r, "response.status.message"),
                   "Migration \"shop\" is invalid:\n- spec.source: is required\n"
                   "- spec.worker.image: registry not allowed");
  cr_assert_eq(json_get(r, "response.status.code")->valueint, 422, "mixed: Invalid wins");
  const cJSON *causes = json_get(r, "response.status.details.causes");
  cr_assert_str_eq(json_get_str(cJSON_GetArrayItem(causes, 1), "reason"), "FieldValueForbidden");
  cJSON_Delete(r);
  ferrs_release(&e);
}

Test(response, policy_only_is_forbidden)
{
  struct ferrs e;
  ferrs_init(&e);
  ferrs_add_policy(&e, "spec.worker.image", "registry not allowed");
  cJSON *r = response_denied(&S, &e, NULL);
  cr_assert_eq(json_get(r, "response.status.code")->valueint, 403);
  cr_assert_str_eq(json_get_str(r, "response.status.reason"), "Forbidden");
  cr_assert(strstr(json_get_str(r, "response.status.message"), "is forbidden by the admission policy"));
  cJSON_Delete(r);
  ferrs_release(&e);
}
