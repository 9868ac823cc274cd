/* Defaulting and validation of any kind, on the hub, with errors in the user's version. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "json.h"
#include "jsonpatch.h"

void rule_fail(struct ferrs *e, const struct rule *r)
{
  if(r->policy)
    ferrs_add_policy(e, r->field, "%s", r->msg);
  else
    ferrs_add(e, r->type, r->field, "%s", r->msg);
}

bool api_unchanged(const struct api_ctx *c, const char *path)
{
  return c->op == API_UPDATE && c->old &&
         json_equal_opt(json_get(c->old, path), json_get(c->obj, path));
}

void api_check_immutable(const struct api_ctx *c, const struct rule *r, struct ferrs *e)
{
  if(c->op == API_UPDATE && c->old && !api_unchanged(c, r->field))
    rule_fail(e, r);
}

void rule_failf(struct ferrs *e, const struct rule *r, const char *field, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  if(vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if(!msg) {
    e->oom = true;
    return;
  }
  if(r->policy)
    ferrs_add_policy(e, field ? field : r->field, "%s", msg);
  else
    ferrs_add(e, r->type, field ? field : r->field, "%s", msg);
  free(msg);
}

void api_result_init(struct api_result *r)
{
  r->patch = NULL;
  ferrs_init(&r->errs);
  strlist_init(&r->warns);
}

void api_result_release(struct api_result *r)
{
  cJSON_Delete(r->patch);
  r->patch = NULL;
  ferrs_release(&r->errs);
  strlist_release(&r->warns);
}

/* The version obj was sent in, or NULL. */
static const struct api_version *version_of(const struct api_kind *k, const cJSON *obj)
{
  const char *av = json_get_str(obj, "apiVersion");
  size_t glen = strlen(k->group);
  if(!av || strncmp(av, k->group, glen) || av[glen] != '/')
    return NULL;
  return api_find_version(k, av + glen + 1);
}

static char *hub_api_version(const struct api_kind *k)
{
  char *s = NULL;
  if(asprintf(&s, "%s/%s", k->group, api_hub(k)->name) < 0)
    return NULL;
  return s;
}

/* A reference to mf (managed fields parsed, or kept as text: webhook/review.c): no copy, and
 * json_equal sees it equal to mf at once. */
static cJSON *managed_fields_reference(const cJSON *mf)
{
  if(cJSON_IsArray(mf))
    return cJSON_CreateArrayReference(mf->child);
  cJSON *v = cJSON_CreateNull();
  if(v) {
    v->type = cJSON_Raw | cJSON_IsReference; /* cJSON_Delete leaves the text to mf */
    v->valuestring = mf->valuestring;
  }
  return v;
}

/* A copy of obj whose metadata.managedFields is a reference to obj's: no rule, default,
 * conversion or mutation writes it, and it is often half the object (a field set per manager
 * mirroring the spec). json_equal sees a reference equal to what it refers to at once, so the
 * patch diff does not walk it either. */
static cJSON *copy_sharing_managed_fields(const cJSON *obj)
{
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  const cJSON *mf = cJSON_GetObjectItemCaseSensitive(md, "managedFields");
  if(!cJSON_IsObject(obj) || !(cJSON_IsArray(mf) || (cJSON_IsRaw(mf) && mf->valuestring)))
    return cJSON_Duplicate(obj, 1);
  cJSON *c = cJSON_CreateObject();
  for(const cJSON *m = obj->child; c && m; m = m->next) {
    cJSON *item;
    if(m != md)
      item = cJSON_Duplicate(m, 1);
    else {
      item = cJSON_CreateObject();
      for(const cJSON *f = md->child; item && f; f = f->next) {
        cJSON *v = f == mf ? managed_fields_reference(mf) : cJSON_Duplicate(f, 1);
        if(!v || !cJSON_AddItemToObject(item, f->string, v)) {
          cJSON_Delete(v);
          cJSON_Delete(item);
          item = NULL;
        }
      }
    }
    if(!item || !cJSON_AddItemToObject(c, m->string, item)) {
      cJSON_Delete(item);
      cJSON_Delete(c);
      c = NULL;
    }
  }
  return c;
}

/* A defaulted hub copy of obj, or NULL when obj cannot be converted. The copy of an object in
 * an older version holds only what that version's schema holds: an unknown member is dropped
 * before the conversion, as kube-apiserver prunes it before admission and as the round trip
 * back drops it anyway; left in, one named like a hub field (v1alpha1 "strategy" against
 * v1beta1's spec.strategy) would stop the moves and defaults that a second pass, without it,
 * then makes: the mutation would not be idempotent. */
static cJSON *hub_copy(const struct api_kind *k, const cJSON *obj, bool in_arena)
{
  if(!obj)
    return NULL;
  /* in the review's arena, a copy that shares obj's strings: they die together */
  cJSON *c = in_arena ? json_dup_shared(obj) : copy_sharing_managed_fields(obj);
  const struct api_version *v = version_of(k, obj);
  cJSON *spec = json_get_mut(c, "spec");
  if(c && v && !api_is_hub(k, v) && cJSON_IsObject(spec)) {
    cJSON *dropped = cJSON_CreateObject();
    bool ok = dropped && sch_split_unknown(v->spec, spec, dropped);
    cJSON_Delete(dropped);
    if(!ok) {
      cJSON_Delete(c);
      return NULL;
    }
  }
  char *hub = hub_api_version(k);
  char err[256];
  if(!c || !hub || api_convert(k, c, hub, err, sizeof(err))) {
    cJSON_Delete(c);
    c = NULL;
  }
  free(hub);
  if(c && !sch_default(api_hub(k)->spec, json_get_mut(c, "spec"))) {
    cJSON_Delete(c);
    c = NULL;
  }
  return c;
}

/* What the rules read (const: they never write it): the object as hub_copy() makes it. For an
 * object already at the hub version only the spec is copied, and only when defaulting changes
 * it (an object that went through /mutate, as every validated object has, is already
 * defaulted); the rest (the metadata with its managed fields, the status) is referenced, not
 * duplicated. */
static cJSON *hub_view(const struct api_kind *k, const cJSON *obj, bool in_arena)
{
  if(!obj)
    return NULL;
  const struct api_version *v = version_of(k, obj);
  if(!v || !api_is_hub(k, v))
    return hub_copy(k, obj, in_arena);
  cJSON *view = cJSON_CreateObject();
  if(!view)
    return NULL;
  for(const cJSON *c = obj->child; c; c = c->next) {
    bool spec = !strcmp(c->string, "spec") && sch_default_changes(api_hub(k)->spec, c);
    cJSON *item = spec ? cJSON_Duplicate(c, 1) : NULL;
    bool ok = spec ? item && cJSON_AddItemToObject(view, c->string, item)
                   : cJSON_AddItemReferenceToObject(view, c->string, (cJSON *)c);
    if(!ok || (spec && !sch_default(api_hub(k)->spec, item))) {
      if(spec && !ok)
        cJSON_Delete(item);
      cJSON_Delete(view);
      return NULL;
    }
  }
  return view;
}

gw_rc api_mutate(const struct api_request *req, struct api_result *out)
{
  const struct api_kind *k = req->kind;
  if(req->op != API_CREATE && req->op != API_UPDATE)
    return GW_OK;
  const struct api_version *v = version_of(k, req->obj);
  if(!v || !cJSON_IsObject(json_get(req->obj, "spec")))
    return GW_OK; /* nothing to default; validation explains */
  /* A spec with values of the wrong type is not defaulted: converting it would move them out
   * of the user's sight (into the fields annotation) and the patch would then drop them.
   * Validation refuses it with the field named. Other errors (an empty string to be stamped,
   * a value out of range) do not stop defaulting. */
  if(!sch_types_ok(v->spec, json_get(req->obj, "spec")))
    return GW_OK;
  cJSON *work = hub_copy(k, req->obj, req->in_arena);
  cJSON *old = hub_copy(k, req->old, req->in_arena);
  if(!work) {
    cJSON_Delete(old);
    return GW_OK;
  }
  struct api_ctx ctx = { .obj = work, .old = old, .op = req->op, .user = req->user,
                         .policy = req->policy, .dry_run = req->dry_run };
  gw_rc rc = k->mutate ? k->mutate(&ctx, work) : GW_OK;
  if(!rc && !api_is_hub(k, v)) {
    char want[128], err[256];
    snprintf(want, sizeof(want), "%s/%s", k->group, v->name);
    rc = api_convert(k, work, want, err, sizeof(err));
    /* Hub-only defaults are not the older version's to carry: keep its annotation as sent. */
    char ann[96];
    snprintf(ann, sizeof(ann), API_FIELDS_ANNOTATION_FMT, api_hub(k)->name);
    /* Not json_get: the annotation's name has dots, which json_get reads as a path. */
    const cJSON *sent =
      cJSON_GetObjectItemCaseSensitive(json_get(req->obj, "metadata.annotations"), ann);
    cJSON *annotations = json_get_mut(work, "metadata.annotations");
    if(!rc && !sent && cJSON_IsObject(annotations)) {
      cJSON_DeleteItemFromObjectCaseSensitive(annotations, ann);
      if(!annotations->child && !json_get(req->obj, "metadata.annotations"))
        json_remove(work, "metadata.annotations");
    } else if(!rc && sent && cJSON_IsObject(annotations)) {
      cJSON_DeleteItemFromObjectCaseSensitive(annotations, ann);
      cJSON_AddItemToObject(annotations, ann, cJSON_Duplicate(sent, 1));
    }
  }
  if(!rc) {
    cJSON *patch = jsonpatch_diff(req->obj, work);
    if(!patch)
      rc = GW_ENOMEM;
    else if(cJSON_GetArraySize(patch) == 0)
      cJSON_Delete(patch);
    else
      out->patch = patch;
  }
  if(!req->in_arena) {
    cJSON_Delete(work);
    cJSON_Delete(old);
  }
  return rc;
}

static char *translate(const char *field, const void *arg)
{
  return api_path_from_hub(arg, field);
}

/*
 * An older object that passed its own schema can still carry, in the fields annotation, hub
 * fields of the wrong shape. Check the converted object against the hub schema: an error on a
 * field the sent version has stays on that field (translated later); one on a field only the
 * annotation holds is reported on the annotation, naming the hub field.
 */
static void check_hub_shape(const struct api_kind *k, const struct api_version *v,
                            const cJSON *sent, const cJSON *hub_obj, struct ferrs *errs)
{
  struct ferrs e;
  ferrs_init(&e);
  sch_validate(api_hub(k)->spec, json_get(hub_obj, "spec"), "spec", &e, NULL);
  char ann[128];
  snprintf(ann, sizeof(ann), "metadata.annotations[" API_FIELDS_ANNOTATION_FMT "]",
           api_hub(k)->name);
  for(size_t i = 0; i < e.n; i++) {
    char *t = api_path_from_hub(v, e.v[i].field);
    char dotted[512];
    snprintf(dotted, sizeof(dotted), "%.*s", (int)strcspn(e.v[i].field, "["), e.v[i].field);
    if(t || json_get(sent, dotted))
      ferrs_add(errs, e.v[i].type, e.v[i].field, "%s", e.v[i].msg);
    else
      ferrs_add(errs, e.v[i].type, ann, "%s (%s/%s field %s)", e.v[i].msg, k->group,
                api_hub(k)->name, e.v[i].field);
    free(t);
  }
  if(e.oom)
    errs->oom = true;
  ferrs_release(&e);
}

static void run_rules(const struct rule *rules, const struct api_ctx *ctx, struct ferrs *e)
{
  for(const struct rule *r = rules; r && r->check; r++)
    r->check(ctx, r, e);
}

gw_rc api_validate(const struct api_request *req, struct api_result *out)
{
  const struct api_kind *k = req->kind;
  const char *rv = req->request_version;
  const struct api_version *v = req->obj ? version_of(k, req->obj) : NULL;
  const struct api_version *warn_v = rv ? api_find_version(k, rv) : v;
  if(warn_v && !api_is_hub(k, warn_v))
    strlist_addf(&out->warns, "%s/%s %s is deprecated; use %s/%s %s", k->group, warn_v->name,
                 k->kind, k->group, api_hub(k)->name, k->kind);
  if(req->op != API_CREATE && req->op != API_UPDATE)
    return GW_OK;
  if(!v) {
    const char *av = json_get_str(req->obj, "apiVersion");
    ferrs_add(&out->errs, FERR_NOT_SUPPORTED, "apiVersion", "%s is not a served version of %s",
              av ? av : "(missing)", k->kind);
    return GW_OK;
  }
  const cJSON *spec = json_get(req->obj, "spec");
  if(!spec || cJSON_IsNull(spec)) {
    ferrs_add(&out->errs, FERR_REQUIRED, "spec", "is required");
    return GW_OK;
  }
  if(!cJSON_IsObject(spec)) {
    ferrs_add(&out->errs, FERR_TYPE, "spec", "must be an object, got %s", json_type_name(spec));
    return GW_OK;
  }
  sch_validate(v->spec, spec, "spec", &out->errs, &out->warns);
  if(out->errs.n)
    return out->errs.oom ? GW_ENOMEM : GW_OK;
  cJSON *obj = hub_view(k, req->obj, req->in_arena);
  cJSON *old = hub_view(k, req->old, req->in_arena);
  if(!obj) {
    cJSON_Delete(old);
    ferrs_add(&out->errs, FERR_INVALID, "metadata.annotations",
              "cannot be converted to %s/%s: check the godwit.dev/%s-fields annotation",
              k->group, api_hub(k)->name, api_hub(k)->name);
    return GW_OK;
  }
  if(!api_is_hub(k, v))
    check_hub_shape(k, v, req->obj, obj, &out->errs);
  struct api_ctx ctx = { .obj = obj, .old = old, .op = req->op, .user = req->user,
                         .policy = req->policy, .dry_run = req->dry_run };
  run_rules(k->rules, &ctx, &out->errs);
  if(req->op == API_UPDATE && old)
    run_rules(k->update_rules, &ctx, &out->errs);
  if(k->warn)
    k->warn(&ctx, &out->warns);
  if(!api_is_hub(k, v))
    ferrs_map_fields(&out->errs, translate, v);
  if(!req->in_arena) {
    cJSON_Delete(obj);
    cJSON_Delete(old);
  }
  return out->errs.oom ? GW_ENOMEM : GW_OK;
}

bool api_revalidate(const char *group, const char *kind, const cJSON *obj, char *msg, size_t len)
{
  msg[0] = '\0';
  const struct api_kind *k = api_find_kind(group, kind);
  if(!k) {
    snprintf(msg, len, "the %s kind is not registered", kind);
    return false;
  }
  struct api_request req = { .kind = k, .obj = obj, .old = obj, .op = API_UPDATE };
  struct api_result res;
  api_result_init(&res);
  gw_rc rc = api_validate(&req, &res);
  if(rc)
    snprintf(msg, len, "the rules could not run: %s", gw_strerror(rc));
  for(size_t i = 0; !rc && i < res.errs.n; i++) {
    size_t used = strlen(msg);
    if(used + 8 < len)
      snprintf(msg + used, len - used, "%s%s: %s", used ? "; " : "", res.errs.v[i].field,
               res.errs.v[i].msg);
  }
  api_result_release(&res);
  return !*msg;
}
