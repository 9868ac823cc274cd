/*
 * Conversion round trips, for every kind and every older version, over generated objects:
 *   older -> hub -> older is the identity, and hub -> older -> hub is the identity,
 *   also when the older version's defaults are applied in between (as the apiserver does).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gen.h"
#include "json.h"

#define OBJECTS_PER_VERSION 1000

static void convert_or_fail(const struct api_kind *k, cJSON *o, const struct api_version *to,
                            const cJSON *orig)
{
  char want[128], err[256];
  snprintf(want, sizeof(want), "%s/%s", k->group, to->name);
  gw_rc rc = api_convert(k, o, want, err, sizeof(err));
  if(rc) {
    char *s = cJSON_PrintUnformatted(orig);
    cr_assert_fail("%s: converting to %s failed: %s\nobject: %s", k->kind, want, err, s);
  }
}

static void assert_same(const struct api_kind *k, const char *dir, const cJSON *a, const cJSON *b)
{
  if(cJSON_Compare(a, b, 1))
    return;
  char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
  cr_assert_fail("%s %s round trip changed the object\nbefore: %s\nafter:  %s", k->kind, dir, x,
                 y);
}

Test(roundtrip, every_kind_registered)
{
  size_t n = 0;
  for(const struct api_kind *const *k = api_kinds(); *k; k++) {
    n++;
    cr_assert_geq((*k)->nversions, 2, "%s serves an older version and the hub", (*k)->kind);
  }
  cr_assert_geq(n, 1);
}

Test(roundtrip, older_to_hub_to_older, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 42);
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++) {
    const struct api_kind *k = *kp;
    for(size_t vi = 0; vi + 1 < k->nversions; vi++) {
      const struct api_version *v = &k->versions[vi];
      for(int i = 0; i < OBJECTS_PER_VERSION; i++) {
        cJSON *o = gen_object(&g, k, v);
        cJSON *c = cJSON_Duplicate(o, 1);
        convert_or_fail(k, c, api_hub(k), o);
        convert_or_fail(k, c, v, o);
        assert_same(k, "older->hub->older", o, c);
        cJSON_Delete(o);
        cJSON_Delete(c);
      }
    }
  }
}

Test(roundtrip, hub_to_older_to_hub, .timeout = 120)
{
  struct gen g;
  gen_seed(&g, 7);
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++) {
    const struct api_kind *k = *kp;
    const struct api_version *hub = api_hub(k);
    for(size_t vi = 0; vi + 1 < k->nversions; vi++) {
      const struct api_version *v = &k->versions[vi];
      for(int i = 0; i < OBJECTS_PER_VERSION; i++) {
        cJSON *o = gen_object(&g, k, hub);
        cJSON *c = cJSON_Duplicate(o, 1);
        convert_or_fail(k, c, v, o);
        /* The apiserver defaults an object in the version it serves it in. */
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(c, "spec");
        if(i % 2)
          cr_assert(sch_default(v->spec, spec));
        convert_or_fail(k, c, hub, o);
        assert_same(k, "hub->older->hub", o, c);
        cJSON_Delete(o);
        cJSON_Delete(c);
      }
    }
  }
}

Test(roundtrip, older_objects_validate_like_their_hub)
{
  /* A generated older object that passes the older schema also passes the hub schema after
   * conversion: conversion never produces a shape the hub refuses. */
  struct gen g;
  gen_seed(&g, 99);
  for(const struct api_kind *const *kp = api_kinds(); *kp; kp++) {
    const struct api_kind *k = *kp;
    for(size_t vi = 0; vi + 1 < k->nversions; vi++) {
      const struct api_version *v = &k->versions[vi];
      for(int i = 0; i < 200; i++) {
        cJSON *o = gen_object(&g, k, v);
        struct ferrs e;
        ferrs_init(&e);
        sch_validate(v->spec, cJSON_GetObjectItem(o, "spec"), "spec", &e, NULL);
        bool ok = e.n == 0;
        ferrs_release(&e);
        if(ok) {
          convert_or_fail(k, o, api_hub(k), o);
          ferrs_init(&e);
          sch_validate(api_hub(k)->spec, cJSON_GetObjectItem(o, "spec"), "spec", &e, NULL);
          char *s = e.n ? cJSON_PrintUnformatted(o) : NULL;
          cr_assert_eq(e.n, 0, "%s: converted object fails the hub schema at %s: %s\n%s",
                       k->kind, e.v[0].field, e.v[0].msg, s);
          ferrs_release(&e);
        }
        cJSON_Delete(o);
      }
    }
  }
}
