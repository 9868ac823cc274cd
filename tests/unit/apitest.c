#include "apitest.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "jsonpatch.h"

const struct t_user T_ALICE = { "alice", { "db-approvers", "system:authenticated" } };
const struct t_user T_BOB = { "bob", { "system:authenticated" } };

cJSON *t_json(const char *s)
{
  cJSON *v = NULL;
  char err[160];
  if(!s)
    return NULL;
  cr_assert_eq(json_parse_strict(s, strlen(s), &v, err, sizeof(err)), GW_OK, "bad test JSON: %s: %s",
               err, s);
  return v;
}

const struct api_kind *t_kind(const char *group, const char *kind)
{
  const struct api_kind *k = api_find_kind(group, kind);
  cr_assert_not_null(k, "kind %s/%s is not registered", group, kind);
  return k;
}

struct t_req {
  struct api_request req;
  struct api_user user;
  cJSON *extra;
  cJSON *obj, *old;
  struct policy *own_policy;
};

static void build(struct t_req *t, enum api_op op, const char *group, const char *kind,
                  const char *obj, const char *old, const struct t_user *u, const struct policy *p)
{
  memset(t, 0, sizeof(*t));
  t->obj = t_json(obj);
  t->old = t_json(old);
  if(!u)
    u = &T_ALICE;
  size_t ng = 0;
  while(ng < 4 && u->groups[ng])
    ng++;
  t->extra = cJSON_CreateObject();
  if(u->extra_pod_name) {
    cJSON *a = cJSON_AddArrayToObject(t->extra, "authentication.kubernetes.io/pod-name");
    cJSON_AddItemToArray(a, cJSON_CreateString(u->extra_pod_name));
  }
  if(u->extra_pod_uid) {
    cJSON *a = cJSON_AddArrayToObject(t->extra, "authentication.kubernetes.io/pod-uid");
    cJSON_AddItemToArray(a, cJSON_CreateString(u->extra_pod_uid));
  }
  t->user = (struct api_user){ .username = u->name, .uid = "uid-of-user", .groups = u->groups,
                               .ngroups = ng, .extra = t->extra };
  if(!p)
    p = t->own_policy = policy_default();
  t->req = (struct api_request){ .kind = t_kind(group, kind), .obj = t->obj, .old = t->old,
                                 .op = op, .user = &t->user, .policy = p };
}

static void release(struct t_req *t)
{
  cJSON_Delete(t->obj);
  cJSON_Delete(t->old);
  cJSON_Delete(t->extra);
  policy_free(t->own_policy);
}

void t_admit(struct api_result *r, enum api_op op, const char *group, const char *kind,
             const char *obj, const char *old, const struct t_user *u, const struct policy *p)
{
  struct t_req t;
  build(&t, op, group, kind, obj, old, u, p);
  api_result_init(r);
  cr_assert_eq(api_validate(&t.req, r), GW_OK);
  release(&t);
}

cJSON *t_default(enum api_op op, const char *group, const char *kind, const char *obj,
                 const char *old, const struct t_user *u, const struct policy *p)
{
  struct t_req t;
  build(&t, op, group, kind, obj, old, u, p);
  struct api_result r;
  api_result_init(&r);
  cr_assert_eq(api_mutate(&t.req, &r), GW_OK);
  cJSON *out = cJSON_Duplicate(t.obj, 1);
  char err[160];
  if(r.patch)
    cr_assert_eq(jsonpatch_apply(&out, r.patch, err, sizeof(err)), GW_OK, "patch: %s", err);
  api_result_release(&r);
  /* Reinvocation: defaulting its own output changes nothing. */
  t.req.obj = out;
  api_result_init(&r);
  cr_assert_eq(api_mutate(&t.req, &r), GW_OK);
  char *again = r.patch ? cJSON_PrintUnformatted(r.patch) : NULL;
  cr_assert_null(r.patch, "defaulting is not idempotent; second patch: %s", again);
  api_result_release(&r);
  release(&t);
  return out;
}

const char *t_causes(const struct api_result *r)
{
  static char buf[8192];
  size_t off = 0;
  buf[0] = '\0';
  for(size_t i = 0; i < r->errs.n && off < sizeof(buf); i++)
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s (%s): %s; ", r->errs.v[i].field,
                            ferr_reason(r->errs.v[i].type), r->errs.v[i].msg);
  return buf;
}

void t_expect_allowed(const struct api_result *r)
{
  cr_assert_eq(r->errs.n, 0, "expected allowed, got: %s", t_causes(r));
}

void t_expect_cause(const struct api_result *r, const char *field, const char *reason)
{
  for(size_t i = 0; i < r->errs.n; i++)
    if(!strcmp(r->errs.v[i].field, field) && !strcmp(ferr_reason(r->errs.v[i].type), reason))
      return;
  cr_assert_fail("expected cause %s (%s), got: %s", field, reason, t_causes(r));
}

void t_expect_cause_count(const struct api_result *r, size_t n)
{
  cr_assert_eq(r->errs.n, n, "expected %zu causes, got %zu: %s", n, r->errs.n, t_causes(r));
}

size_t t_expect_also(const struct api_result *r, const char *also)
{
  size_t n = 0;
  for(const char *p = also; p && *p;) {
    char field[200], reason[64];
    int used = 0;
    if(sscanf(p, " %199s %63[A-Za-z]%n", field, reason, &used) != 2)
      cr_assert_fail("a malformed expected cause list: %s", also);
    t_expect_cause(r, field, reason);
    n++;
    p += used;
    while(*p == ';' || *p == ' ')
      p++;
  }
  return n;
}

void t_expect_message(const struct api_result *r, const char *field, const char *text)
{
  for(size_t i = 0; i < r->errs.n; i++)
    if(!strcmp(r->errs.v[i].field, field) && strstr(r->errs.v[i].msg, text))
      return;
  cr_assert_fail("expected a cause on %s saying \"%s\", got: %s", field, text, t_causes(r));
}

void t_expect_warning(const struct api_result *r, const char *text)
{
  for(size_t i = 0; i < r->warns.n; i++)
    if(strstr(r->warns.v[i], text))
      return;
  cr_assert_fail("expected a warning containing \"%s\" (%zu warnings)", text, r->warns.n);
}

struct policy *t_policy(const char *json)
{
  struct policy *p = NULL;
  char err[256];
  cr_assert_eq(policy_parse(json, strlen(json), &p, err, sizeof(err)), GW_OK, "policy: %s", err);
  return p;
}
