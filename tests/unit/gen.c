#include "gen.h"

#include <stdio.h>
#include <string.h>

void gen_seed(struct gen *g, unsigned long long seed)
{
  g->state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
}

unsigned gen_below(struct gen *g, unsigned n)
{
  g->state ^= g->state << 13;
  g->state ^= g->state >> 7;
  g->state ^= g->state << 17;
  return n ? (unsigned)(g->state % n) : 0;
}

static bool chance(struct gen *g, unsigned pct)
{
  return gen_below(g, 100) < pct;
}

static cJSON *gen_fields(struct gen *g, const struct sch_field *fields, int depth);

static const char *pick(struct gen *g, const char *const *list)
{
  unsigned n = 0;
  while(list[n])
    n++;
  return list[gen_below(g, n)];
}

static cJSON *gen_string(struct gen *g, const struct sch_field *f)
{
  if(f->enums)
    return cJSON_CreateString(pick(g, f->enums));
  if(f->format && f->format->examples)
    return cJSON_CreateString(pick(g, f->format->examples));
  char buf[32];
  snprintf(buf, sizeof(buf), "s%u", gen_below(g, 100000));
  return cJSON_CreateString(buf);
}

static cJSON *gen_value(struct gen *g, const struct sch_field *f, enum sch_type t, int depth)
{
  switch(t) {
  case SCH_STRING:
    return gen_string(g, f);
  case SCH_TIME: {
    char buf[32];
    snprintf(buf, sizeof(buf), "2026-%02u-%02uT%02u:04:05Z", 1 + gen_below(g, 12),
             1 + gen_below(g, 28), gen_below(g, 24));
    return cJSON_CreateString(buf);
  }
  case SCH_INT: {
    long long lo = (f->flags & SCH_HAS_MIN) && t == f->type ? f->min : 0;
    long long hi = (f->flags & SCH_HAS_MAX) && t == f->type ? f->max : lo + 100;
    return cJSON_CreateNumber((double)(lo + (long long)gen_below(g, (unsigned)(hi - lo + 1))));
  }
  case SCH_BOOL:
    return cJSON_CreateBool(chance(g, 50));
  case SCH_QUANTITY:
    if(chance(g, 30))
      return cJSON_CreateNumber(gen_below(g, 1000));
    return cJSON_CreateString(pick(g, fmt_quantity.examples));
  case SCH_OBJECT:
    return gen_fields(g, f->fields, depth + 1);
  case SCH_RAW: {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "x", gen_below(g, 10));
    return o;
  }
  case SCH_ARRAY: {
    cJSON *a = cJSON_CreateArray();
    unsigned n = gen_below(g, 4);
    if(f->max_items && n > (unsigned)f->max_items)
      n = (unsigned)f->max_items;
    for(unsigned i = 0; i < n; i++) {
      cJSON *item = f->item == SCH_OBJECT ? gen_fields(g, f->fields, depth + 1)
                                          : gen_value(g, f, f->item, depth + 1);
      bool dup = false;
      if(f->flags & SCH_UNIQUE)
        for(cJSON *c = a->child; c && !dup; c = c->next)
          dup = cJSON_Compare(c, item, 1);
      if(dup)
        cJSON_Delete(item);
      else
        cJSON_AddItemToArray(a, item);
    }
    return a;
  }
  case SCH_MAP: {
    cJSON *m = cJSON_CreateObject();
    unsigned n = gen_below(g, 4);
    for(unsigned i = 0; i < n; i++) {
      char key[96];
      if(f->key_format && f->key_format->examples)
        snprintf(key, sizeof(key), "%s", pick(g, f->key_format->examples));
      else
        snprintf(key, sizeof(key), "k%u", gen_below(g, 50));
      if(cJSON_GetObjectItemCaseSensitive(m, key))
        continue;
      cJSON *item = f->item == SCH_OBJECT ? gen_fields(g, f->fields, depth + 1)
                                          : gen_value(g, f, f->item, depth + 1);
      cJSON_AddItemToObject(m, key, item);
    }
    return m;
  }
  }
  return cJSON_CreateNull();
}

static cJSON *gen_fields(struct gen *g, const struct sch_field *fields, int depth)
{
  cJSON *o = cJSON_CreateObject();
  for(const struct sch_field *f = fields; f && f->name; f++) {
    if(!(f->flags & SCH_REQUIRED) && (depth > 6 || !chance(g, 60)))
      continue;
    cJSON_AddItemToObject(o, f->name, gen_value(g, f, f->type, depth));
  }
  return o;
}

cJSON *gen_object(struct gen *g, const struct api_kind *k, const struct api_version *v)
{
  cJSON *o = cJSON_CreateObject();
  char av[128], name[32];
  snprintf(av, sizeof(av), "%s/%s", k->group, v->name);
  cJSON_AddStringToObject(o, "apiVersion", av);
  cJSON_AddStringToObject(o, "kind", k->kind);
  cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
  snprintf(name, sizeof(name), "obj-%u", gen_below(g, 1000000));
  cJSON_AddStringToObject(meta, "name", name);
  if(k->namespaced)
    cJSON_AddStringToObject(meta, "namespace", "default");
  cJSON_AddNumberToObject(meta, "generation", 1 + gen_below(g, 9));
  if(chance(g, 30)) {
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_AddStringToObject(ann, "example.com/note", "kept as is");
  }
  if(chance(g, 30)) {
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON_AddStringToObject(labels, "team", "payments");
  }
  cJSON *spec = gen_fields(g, v->spec, 0);
  sch_default(v->spec, spec);
  cJSON_AddItemToObject(o, "spec", spec);
  if(v->status && chance(g, 60))
    cJSON_AddItemToObject(o, "status", gen_fields(g, v->status, 0));
  return o;
}
