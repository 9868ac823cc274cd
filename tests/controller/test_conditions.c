/* metav1.Condition helpers (controller/conditions.h) and the Event message rules
 * (controller/events.h): pure logic, no cluster. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditions.h"
#include "events.h"
#include "json.h"

static cJSON *migration(long gen)
{
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\",\"metadata\":"
           "{\"name\":\"shop\",\"namespace\":\"db\",\"generation\":%ld},\"spec\":{}}",
           gen);
  cJSON *o = cJSON_Parse(buf);
  cr_assert(o);
  return o;
}

static const char *field(const cJSON *obj, const char *type, const char *name)
{
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cond_find(obj, type), name));
}

static double num(const cJSON *obj, const char *type, const char *name)
{
  return cJSON_GetObjectItemCaseSensitive(cond_find(obj, type), name)->valuedouble;
}

Test(ctrl_conditions, set_adds_a_condition_with_every_field)
{
  cJSON *m = migration(3);
  struct cond c = { "Validated", COND_UNKNOWN, "PreflightRunning", "the preflight Job runs" };
  bool changed = false;
  cr_assert_eq(cond_set(m, &c, &changed), GW_OK);
  cr_assert(changed);
  cr_assert_str_eq(field(m, "Validated", "status"), "Unknown");
  cr_assert_str_eq(field(m, "Validated", "reason"), "PreflightRunning");
  cr_assert_str_eq(field(m, "Validated", "message"), "the preflight Job runs");
  cr_assert_eq(num(m, "Validated", "observedGeneration"), 3);
  const char *ltt = field(m, "Validated", "lastTransitionTime");
  cr_assert(ltt && strlen(ltt) == 20 && ltt[10] == 'T' && ltt[19] == 'Z', "RFC 3339: %s", ltt);
  cJSON_Delete(m);
}

Test(ctrl_conditions, transition_time_moves_only_when_status_changes)
{
  cJSON *conds = cJSON_CreateArray();
  struct cond c = { "CaughtUp", COND_FALSE, "Lagging", "lag 900 MB" };
  bool changed;
  cr_assert_eq(cond_set_at(conds, &c, 1, 1000, &changed), GW_OK);
  cr_assert(changed);
  const cJSON *e = cJSON_GetArrayItem(conds, 0);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "lastTransitionTime")),
                   "1970-01-01T00:16:40Z");
  /* same status, new reason, message and generation: updated, time kept */
  struct cond c2 = { "CaughtUp", COND_FALSE, "ConfirmingCatchUp", "one sample below", };
  cr_assert_eq(cond_set_at(conds, &c2, 2, 2000, &changed), GW_OK);
  cr_assert(changed);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "lastTransitionTime")),
                   "1970-01-01T00:16:40Z");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "reason")), "ConfirmingCatchUp");
  cr_assert_eq(cJSON_GetObjectItem(e, "observedGeneration")->valuedouble, 2);
  /* identical: nothing changes */
  cr_assert_eq(cond_set_at(conds, &c2, 2, 3000, &changed), GW_OK);
  cr_assert(!changed, "an identical set reports no change, so nothing is written");
  /* status flips: time moves */
  struct cond c3 = { "CaughtUp", COND_TRUE, "LagBelowThreshold", "two samples below" };
  cr_assert_eq(cond_set_at(conds, &c3, 2, 4000, &changed), GW_OK);
  cr_assert(changed);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "lastTransitionTime")),
                   "1970-01-01T01:06:40Z");
  cr_assert_eq(cJSON_GetArraySize(conds), 1, "one entry per type");
  cJSON_Delete(conds);
}

Test(ctrl_conditions, observed_generation_is_always_set)
{
  cJSON *m = migration(1);
  struct cond c = { "Complete", COND_FALSE, "Running", "" };
  cr_assert_eq(cond_set(m, &c, NULL), GW_OK);
  cr_assert(cond_is_current(m, "Complete"));
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(m, "metadata"), "generation",
                            cJSON_CreateNumber(2));
  cr_assert(!cond_is_current(m, "Complete"), "a spec change makes the condition stale");
  bool changed;
  cr_assert_eq(cond_set(m, &c, &changed), GW_OK);
  cr_assert(changed, "only observedGeneration moved, and that is a change");
  cr_assert_eq(num(m, "Complete", "observedGeneration"), 2);
  cr_assert(cond_is_current(m, "Complete"));
  cJSON_Delete(m);
}

Test(ctrl_conditions, find_is_true_reason_remove)
{
  cJSON *m = migration(1);
  struct cond a = { "Validated", COND_TRUE, "SpecValid", "ok" };
  struct cond b = { "Failed", COND_FALSE, "NotFailed", "" };
  cr_assert_eq(cond_set(m, &a, NULL), GW_OK);
  cr_assert_eq(cond_set(m, &b, NULL), GW_OK);
  cr_assert(cond_is_true(m, "Validated"));
  cr_assert(!cond_is_false(m, "Validated"));
  cr_assert(cond_is_false(m, "Failed"));
  cr_assert(!cond_is_true(m, "Complete"), "a missing condition is neither");
  cr_assert(!cond_is_false(m, "Complete"));
  cr_assert_str_eq(cond_reason(m, "Validated"), "SpecValid");
  cr_assert_null(cond_reason(m, "Complete"));
  bool changed;
  cond_remove(m, "Validated", &changed);
  cr_assert(changed);
  cr_assert_null(cond_find(m, "Validated"));
  cond_remove(m, "Validated", &changed);
  cr_assert(!changed);
  cJSON_Delete(m);
}

Test(ctrl_conditions, long_messages_are_cut)
{
  cJSON *conds = cJSON_CreateArray();
  size_t n = COND_MESSAGE_MAX + 500;
  char *big = malloc(n + 1);
  memset(big, 'x', n);
  big[n] = 0;
  struct cond c = { "Failed", COND_TRUE, "CloneFailed", big };
  cr_assert_eq(cond_set_at(conds, &c, 1, 0, NULL), GW_OK);
  const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(conds, 0),
                                                           "message"));
  cr_assert_eq(strlen(m), COND_MESSAGE_MAX);
  cr_assert_str_eq(m + COND_MESSAGE_MAX - 3, "...");
  free(big);
  cJSON_Delete(conds);
}

Test(ctrl_conditions, messages_are_scrubbed)
{
  cJSON *conds = cJSON_CreateArray();
  struct cond c = { "Validated", COND_FALSE, "PreflightFailed",
                    "cannot connect to postgres://app:s3cr3t@db/shop" };
  cr_assert_eq(cond_set_at(conds, &c, 1, 0, NULL), GW_OK);
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(conds, 0),
                                                            "message")),
                   "cannot connect to postgres://app:***@db/shop");
  bool changed;
  cr_assert_eq(cond_set_at(conds, &c, 1, 0, &changed), GW_OK);
  cr_assert(!changed, "the same message scrubs the same way: no change, no write");
  cJSON_Delete(conds);
}

Test(ctrl_conditions, bad_arguments_are_refused)
{
  cJSON *conds = cJSON_CreateArray();
  struct cond c = { "Failed", NULL, "X", "" };
  cr_assert_eq(cond_set_at(conds, &c, 1, 0, NULL), GW_EINVAL);
  cJSON *notarray = cJSON_CreateObject();
  struct cond ok = { "Failed", COND_TRUE, "X", "" };
  cr_assert_eq(cond_set_at(notarray, &ok, 1, 0, NULL), GW_EINVAL);
  cJSON_Delete(conds);
  cJSON_Delete(notarray);
}

/* ---- Event messages ---- */

static size_t msg(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  size_t n = event_message(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

Test(ctrl_event_message, bounded_to_one_kib)
{
  char big[5000];
  memset(big, 'y', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  char out[EVENT_MESSAGE_MAX + 1];
  size_t n = msg(out, sizeof(out), "table %s failed", big);
  cr_assert_eq(n, EVENT_MESSAGE_MAX);
  cr_assert_eq(strlen(out), EVENT_MESSAGE_MAX);
  cr_assert_str_eq(out + EVENT_MESSAGE_MAX - 3, "...");
  cr_assert(!strncmp(out, "table yyy", 9));
}

Test(ctrl_event_message, cut_on_a_utf8_boundary)
{
  char s[2100] = "";
  for(int i = 0; i < 700; i++)
    strcat(s, "\xc3\xa9"); /* é, two bytes */
  char out[16];
  msg(out, sizeof(out), "a%s", s); /* 1 + 2k bytes: the cut falls inside a character */
  size_t n = strlen(out);
  cr_assert(n <= 15);
  cr_assert_str_eq(out + n - 3, "...");
  for(size_t i = 1; i + 3 < n; i += 2)
    cr_assert(((unsigned char)out[i] == 0xc3 && (unsigned char)out[i + 1] == 0xa9),
              "no half character at %zu", i);
}

Test(ctrl_event_message, passwords_are_masked)
{
  char out[EVENT_MESSAGE_MAX + 1];
  msg(out, sizeof(out), "cannot connect to %s", "postgres://app:s3cr3t@db.example:5432/shop");
  cr_assert_str_eq(out, "cannot connect to postgres://app:***@db.example:5432/shop");
  msg(out, sizeof(out), "dsn host=db user=app password=hunter2 dbname=shop");
  cr_assert_str_eq(out, "dsn host=db user=app password=*** dbname=shop");
  msg(out, sizeof(out), "PGPASSWORD=xyz sslpassword='abc'");
  cr_assert(!strstr(out, "xyz") && !strstr(out, "abc"), "%s", out);
  msg(out, sizeof(out), "see https://example.com/docs and postgres://app@db/shop");
  cr_assert_str_eq(out, "see https://example.com/docs and postgres://app@db/shop",
                   "no password, nothing masked");
}

Test(ctrl_event_message, masking_happens_before_the_cut)
{
  char pad[EVENT_MESSAGE_MAX];
  memset(pad, 'p', sizeof(pad));
  pad[EVENT_MESSAGE_MAX - 40] = 0;
  char out[EVENT_MESSAGE_MAX + 1];
  msg(out, sizeof(out), "%s postgres://app:averyveryverylongsecretvalue@db/x", pad);
  cr_assert(!strstr(out, "averyvery"), "a cut must not leave half a password unmasked");
}
