/*
 * test_schema_default.c: the schema's read-only walks agree with the walks they stand for
 * (shared/api/schema.c, used by shared/api/admit.c). sch_default_changes() says whether
 * sch_default() would change an object, so validation reads an already-defaulted spec without
 * copying it; sch_types_ok() says whether sch_validate() would report a FERR_TYPE, so /mutate
 * checks a spec's shape without building messages. Properties on generated specs of every kind
 * and version, damaged at random (members removed, set to null, or given another type).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"

/* Removes a member or sets it to null, at a random depth of objects. */
static void damage(struct gen *g, cJSON *obj)
{
  int n = cJSON_GetArraySize(obj);
  if(!cJSON_IsObject(obj) || n == 0)
    return;
  cJSON *m = cJSON_GetArrayItem(obj, (int)gen_below(g, (unsigned)n));
  switch(gen_below(g, 5)) {
  case 4: { /* another type */
    static const char *const other[] = { "7", "\"x\"", "true", "[]", "{}", "[1]", "1.5" };
    cJSON_ReplaceItemInObjectCaseSensitive(obj, m->string,
                                           cJSON_Parse(other[gen_below(g, 7)]));
    break;
  }
  case 0:
    cJSON_DeleteItemFromObjectCaseSensitive(obj, m->string);
    break;
  case 1:
    cJSON_ReplaceItemInObjectCaseSensitive(obj, m->string, cJSON_CreateNull());
    break;
  default:
    if(cJSON_IsObject(m))
      damage(g, m);
    else if(cJSON_IsArray(m) && cJSON_GetArraySize(m) > 0)
      damage(g, cJSON_GetArrayItem(m, 0));
  }
}

Test(schema_default, changes_exactly_when_defaulting_changes_the_object, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 23);
  long changed = 0, unchanged = 0;
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++)
    for(size_t vi = 0; vi < (*kp)->nversions; vi++) {
      const struct api_version *v = &(*kp)->versions[vi];
      for(int i = 0; i < 60; i++) {
        cJSON *o = gen_object(&g, *kp, v);
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
        cr_assert(cJSON_IsObject(spec));
        cr_assert_not(sch_default_changes(v->spec, spec), "%s %s #%d: generated specs are defaulted",
                      (*kp)->kind, v->name, i);
        for(unsigned d = gen_below(&g, 4); d; d--)
          damage(&g, spec);
        bool says = sch_default_changes(v->spec, spec);
        cJSON *copy = cJSON_Duplicate(spec, 1);
        cr_assert(sch_default(v->spec, copy));
        bool differs = !json_equal(spec, copy);
        cr_assert_eq(says, differs, "%s %s #%d: sch_default_changes says %d, defaulting %s it",
                     (*kp)->kind, v->name, i, says, differs ? "changed" : "did not change");
        cr_assert_not(sch_default_changes(v->spec, copy), "%s %s #%d: defaulted twice",
                      (*kp)->kind, v->name, i);
        if(says)
          changed++;
        else
          unchanged++;
        cJSON_Delete(copy);
        cJSON_Delete(o);
      }
    }
  cr_assert_gt(changed, 100, "changed %ld", changed);
  cr_assert_gt(unchanged, 100, "unchanged %ld", unchanged);
}

Test(schema_default, types_ok_exactly_when_validation_finds_no_type_error, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 29);
  long ok = 0, bad = 0;
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++)
    for(size_t vi = 0; vi < (*kp)->nversions; vi++) {
      const struct api_version *v = &(*kp)->versions[vi];
      for(int i = 0; i < 60; i++) {
        cJSON *o = gen_object(&g, *kp, v);
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
        for(unsigned d = gen_below(&g, 4); d; d--)
          damage(&g, spec);
        struct ferrs e;
        ferrs_init(&e);
        sch_validate(v->spec, spec, "spec", &e, NULL);
        bool typed = true;
        for(size_t j = 0; j < e.n; j++)
          typed = typed && e.v[j].type != FERR_TYPE;
        cr_assert_eq(e.dropped, 0);
        bool says = sch_types_ok(v->spec, spec);
        cr_assert_eq(says, typed, "%s %s #%d: sch_types_ok says %d, sch_validate %s", (*kp)->kind,
                     v->name, i, says, typed ? "finds no type error" : "finds one");
        if(says)
          ok++;
        else
          bad++;
        ferrs_release(&e);
        cJSON_Delete(o);
      }
    }
  cr_assert_gt(ok, 100, "ok %ld", ok);
  cr_assert_gt(bad, 100, "bad %ld", bad);
}
