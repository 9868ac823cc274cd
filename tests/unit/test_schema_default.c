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

/* Runs check on 60 damaged generated specs of every kind and version (v, the spec, a name for
 * messages); check answers what the walk under test says. Both answers must come often, or the
 * property proves nothing. */
static void each_damaged_spec(unsigned long long seed,
                              bool (*check)(const struct api_version *v, cJSON *spec,
                                            const char *what))
{
  struct gen g;
  gen_seed(&g, seed);
  long yes = 0, no = 0;
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++)
    for(size_t vi = 0; vi < (*kp)->nversions; vi++) {
      const struct api_version *v = &(*kp)->versions[vi];
      for(int i = 0; i < 60; i++) {
        char what[96];
        snprintf(what, sizeof(what), "%s %s #%d", (*kp)->kind, v->name, i);
        cJSON *o = gen_object(&g, *kp, v);
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
        cr_assert(cJSON_IsObject(spec), "%s", what);
        cr_assert_not(sch_default_changes(v->spec, spec), "%s: generated specs are defaulted", what);
        for(unsigned d = gen_below(&g, 4); d; d--)
          damage(&g, spec);
        if(check(v, spec, what))
          yes++;
        else
          no++;
        cJSON_Delete(o);
      }
    }
  cr_assert_gt(yes, 100, "true %ld times", yes);
  cr_assert_gt(no, 100, "false %ld times", no);
}

static bool default_changes_as_defaulting_does(const struct api_version *v, cJSON *spec,
                                               const char *what)
{
  bool says = sch_default_changes(v->spec, spec);
  cJSON *copy = cJSON_Duplicate(spec, 1);
  cr_assert(sch_default(v->spec, copy));
  bool differs = !json_equal(spec, copy);
  cr_assert_eq(says, differs, "%s: sch_default_changes says %d, defaulting %s it", what, says,
               differs ? "changed" : "did not change");
  cr_assert_not(sch_default_changes(v->spec, copy), "%s: defaulted twice", what);
  cJSON_Delete(copy);
  return says;
}

Test(schema_default, changes_exactly_when_defaulting_changes_the_object, .timeout = 120)
{
  each_damaged_spec(23, default_changes_as_defaulting_does);
}

static bool types_ok_as_validation_finds(const struct api_version *v, cJSON *spec,
                                         const char *what)
{
  struct ferrs e;
  ferrs_init(&e);
  sch_validate(v->spec, spec, "spec", &e, NULL);
  bool typed = true;
  for(size_t j = 0; j < e.n; j++)
    typed = typed && e.v[j].type != FERR_TYPE;
  cr_assert_eq(e.dropped, 0);
  ferrs_release(&e);
  bool says = sch_types_ok(v->spec, spec);
  cr_assert_eq(says, typed, "%s: sch_types_ok says %d, sch_validate %s", what, says,
               typed ? "finds no type error" : "finds one");
  return says;
}

Test(schema_default, types_ok_exactly_when_validation_finds_no_type_error, .timeout = 120)
{
  each_damaged_spec(29, types_ok_as_validation_finds);
}
