/* rbac.c: kube-apiserver's RBAC authorizer over the stored Roles, ClusterRoles and their
 * bindings: request authorization, the escalation and bind checks on writes of roles and
 * bindings, ClusterRole aggregation, and the access reviews (SubjectAccessReview,
 * LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview).
 *
 * Semantics followed (kube's plugin/pkg/auth/authorizer/rbac and pkg/registry/rbac): a request is
 * allowed when one rule of one role bound to the user allows it; the user is a subject of a
 * binding by User name, by Group, or as ServiceAccount system:serviceaccount:NS:NAME (a
 * subject's namespace defaults to its RoleBinding's). ClusterRoleBindings apply everywhere,
 * RoleBindings in their namespace (to their Role or to a ClusterRole). A missing role is an
 * evaluation error, named in the answer's reason. Nothing is cached: every decision reads the
 * store, under its lock. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "log.h"
#include "rbac.h"
#include "rest.h"
#include "strbuf.h"
#include "yamldoc.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* Appends to a buffer whose error is sticky (strbuf.h): callers check sb->err once at the end. */
__attribute__((format(printf, 2, 3))) static void put(struct strbuf *sb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gw_rc rc = strbuf_vaddf(sb, fmt, ap);
  va_end(ap);
  (void)rc;
}

/* ---- rules ---- */

static bool list_has(const cJSON *arr, const char *s)
{
  const cJSON *v;
  cJSON_ArrayForEach(v, arr)
  {
    if(cJSON_IsString(v) && !strcmp(v->valuestring, s))
      return true;
  }
  return false;
}

static bool list_has_or_all(const cJSON *arr, const char *s)
{
  return list_has(arr, "*") || list_has(arr, s);
}

static bool resource_matches(const cJSON *rule, const struct rbac_attrs *a)
{
  const cJSON *res = cJSON_GetObjectItem(rule, "resources");
  if(list_has(res, "*"))
    return true;
  if(!*a->sub)
    return list_has(res, a->resource);
  char combined[300], any[64];
  snprintf(combined, sizeof(combined), "%s/%s", a->resource, a->sub);
  snprintf(any, sizeof(any), "*/%s", a->sub);
  return list_has(res, combined) || list_has(res, any);
}

static bool path_matches(const cJSON *rule, const char *path)
{
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(rule, "nonResourceURLs"))
  {
    if(!cJSON_IsString(v))
      continue;
    const char *u = v->valuestring;
    size_t n = strlen(u);
    if(!strcmp(u, "*") || !strcmp(u, path) ||
       (n && u[n - 1] == '*' && !strncmp(u, path, n - 1)))
      return true;
  }
  return false;
}

bool rbac_rule_allows(const cJSON *rule, const struct rbac_attrs *a)
{
  if(!list_has_or_all(cJSON_GetObjectItem(rule, "verbs"), a->verb))
    return false;
  if(!a->resource_request)
    return path_matches(rule, a->path);
  if(!list_has_or_all(cJSON_GetObjectItem(rule, "apiGroups"), a->group) ||
     !resource_matches(rule, a))
    return false;
  const cJSON *names = cJSON_GetObjectItem(rule, "resourceNames");
  return cJSON_GetArraySize(names) == 0 || (*a->name && list_has(names, a->name));
}

/* ---- subjects and bindings ---- */

static bool in_group(const struct ls_identity *id, const char *g)
{
  for(size_t i = 0; i < id->ngroups; i++)
    if(!strcmp(id->groups[i], g))
      return true;
  return false;
}

/* kube's privileged-group authorizer, before RBAC */
static bool is_privileged(const struct ls_identity *id)
{
  return in_group(id, "system:masters");
}

/* The first subject of the binding that is the user, or NULL. */
static const cJSON *subject_of(const cJSON *binding, const struct ls_identity *id,
                               const char *binding_ns)
{
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(binding, "subjects"))
  {
    const char *kind = ls_str(s, "kind"), *name = ls_str(s, "name");
    if(!strcmp(kind, "User") && !strcmp(name, id->name))
      return s;
    if(!strcmp(kind, "Group") && in_group(id, name))
      return s;
    if(!strcmp(kind, "ServiceAccount")) {
      const char *ns = *ls_str(s, "namespace") ? ls_str(s, "namespace") : binding_ns;
      char user[600];
      snprintf(user, sizeof(user), "system:serviceaccount:%s:%s", ns, name);
      if(*ns && !strcmp(user, id->name))
        return s;
    }
  }
  return NULL;
}

struct visit {
  const struct ls_identity *id;
  const char *ns;
  rbac_rule_fn fn;
  void *ctx;
  struct strbuf *errs;
  bool stopped;
};

/* kube aggregates resolution errors, each distinct message once */
static void visit_error(struct visit *v, bool cluster, const char *name)
{
  if(!v->errs)
    return;
  char msg[400];
  snprintf(msg, sizeof(msg), "%s.rbac.authorization.k8s.io \"%s\" not found",
           cluster ? "clusterrole" : "role", name);
  if(v->errs->len && strstr(strbuf_str(v->errs), msg))
    return;
  put(v->errs, "%s%s", v->errs->len ? ", " : "", msg);
}

static void describe(char *out, size_t len, const cJSON *binding, const char *ns,
                     const cJSON *subject)
{
  const cJSON *ref = cJSON_GetObjectItem(binding, "roleRef");
  char bname[600];
  if(*ns) /* kube's describers: name/namespace */
    snprintf(bname, sizeof(bname), "%s/%s", ls_meta(binding, "name"), ns);
  else
    snprintf(bname, sizeof(bname), "%s", ls_meta(binding, "name"));
  char who[600];
  const char *kind = ls_str(subject, "kind");
  if(!strcmp(kind, "ServiceAccount"))
    snprintf(who, sizeof(who), "%s \"%s/%s\"", kind, ls_str(subject, "name"),
             *ls_str(subject, "namespace") ? ls_str(subject, "namespace") : ns);
  else
    snprintf(who, sizeof(who), "%s \"%s\"", kind, ls_str(subject, "name"));
  snprintf(out, len, "%s \"%s\" of %s \"%s\" to %s", *ns ? "RoleBinding" : "ClusterRoleBinding",
           bname, ls_str(ref, "kind"), ls_str(ref, "name"), who);
}

static void visit_binding(struct visit *v, const cJSON *binding, const char *ns)
{
  const cJSON *subject = subject_of(binding, v->id, ns);
  if(!subject)
    return;
  const cJSON *ref = cJSON_GetObjectItem(binding, "roleRef");
  const char *kind = ls_str(ref, "kind"), *name = ls_str(ref, "name");
  const struct ls_entry *role = NULL;
  if(!strcmp(kind, "ClusterRole"))
    role = store_get(RBAC_GROUP, "clusterroles", "", name);
  else if(!strcmp(kind, "Role") && *ns)
    role = store_get(RBAC_GROUP, "roles", ns, name);
  if(!role) {
    visit_error(v, strcmp(kind, "Role") != 0, name);
    return;
  }
  char source[1600];
  describe(source, sizeof(source), binding, ns, subject);
  const cJSON *rule;
  cJSON_ArrayForEach(rule, cJSON_GetObjectItem(role->obj->json, "rules"))
  {
    if(!v->fn(v->ctx, source, rule)) {
      v->stopped = true;
      return;
    }
  }
}

static int each_binding(void *ctx, const struct ls_entry *e)
{
  struct visit *v = ctx;
  visit_binding(v, e->obj->json, e->ns);
  return v->stopped;
}

void rbac_visit(const struct ls_identity *id, const char *ns, rbac_rule_fn fn, void *ctx,
                struct strbuf *errs)
{
  struct visit v = { id, ns, fn, ctx, errs, false };
  store_each(RBAC_GROUP, "clusterrolebindings", "", NULL, each_binding, &v);
  if(!v.stopped && ns && *ns)
    store_each(RBAC_GROUP, "rolebindings", ns, NULL, each_binding, &v);
}

/* ---- decisions ---- */

struct decide {
  const struct rbac_attrs *a;
  char *reason;
  size_t len;
  bool allowed;
};

static bool decide_rule(void *ctx, const char *source, const cJSON *rule)
{
  struct decide *d = ctx;
  if(!rbac_rule_allows(rule, d->a))
    return true;
  d->allowed = true;
  snprintf(d->reason, d->len, "RBAC: allowed by %s", source);
  return false;
}

bool rbac_authorize(const struct ls_identity *id, const struct rbac_attrs *a, char *reason,
                    size_t len)
{
  reason[0] = '\0';
  if(is_privileged(id))
    return true;
  struct decide d = { a, reason, len, false };
  struct strbuf errs;
  strbuf_init(&errs, 4096);
  store_lock();
  rbac_visit(id, a->resource_request ? a->ns : "", decide_rule, &d, &errs);
  store_unlock();
  if(!d.allowed && errs.len)
    snprintf(reason, len, strstr(strbuf_str(&errs), ", ") ? "RBAC: [%s]" : "RBAC: %s",
             strbuf_str(&errs));
  strbuf_release(&errs);
  return d.allowed;
}

void rbac_forbidden_message(const struct ls_identity *id, const struct rbac_attrs *a, char *out,
                            size_t len)
{
  if(!a->resource_request) {
    snprintf(out, len, "User \"%s\" cannot %s path \"%s\"", id->name, a->verb, a->path);
    return;
  }
  char res[300];
  if(*a->sub)
    snprintf(res, sizeof(res), "%s/%s", a->resource, a->sub);
  else
    snprintf(res, sizeof(res), "%s", a->resource);
  if(*a->ns)
    snprintf(out, len, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in the "
             "namespace \"%s\"", id->name, a->verb, res, a->group, a->ns);
  else
    snprintf(out, len, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at the cluster "
             "scope", id->name, a->verb, res, a->group);
}

cJSON *rbac_forbidden(const struct ls_identity *id, const struct rbac_attrs *a, const char *reason)
{
  char msg[2048];
  rbac_forbidden_message(id, a, msg, sizeof(msg));
  const char *sep = *reason ? ": " : "";
  if(!a->resource_request)
    return ls_status(403, "Forbidden", cJSON_CreateObject(), "forbidden: %s%s%s", msg, sep,
                     reason);
  char q[300];
  if(*a->group)
    snprintf(q, sizeof(q), "%s.%s", a->resource, a->group);
  else
    snprintf(q, sizeof(q), "%s", a->resource);
  cJSON *d = cJSON_CreateObject();
  if(*a->name)
    cJSON_AddStringToObject(d, "name", a->name);
  if(*a->group)
    cJSON_AddStringToObject(d, "group", a->group);
  cJSON_AddStringToObject(d, "kind", a->resource);
  if(*a->name)
    return ls_status(403, "Forbidden", d, "%s \"%s\" is forbidden: %s%s%s", q, a->name, msg, sep,
                     reason);
  return ls_status(403, "Forbidden", d, "%s is forbidden: %s%s%s", q, msg, sep, reason);
}

cJSON *rbac_check(const struct ls_identity *id, const struct rbac_attrs *a)
{
  char reason[2048];
  if(rbac_authorize(id, a, reason, sizeof(reason)))
    return NULL;
  cJSON *st = rbac_forbidden(id, a, reason);
  log_kv(LOG_INFO, "forbidden", "message", cJSON_GetStringValue(cJSON_GetObjectItem(st, "message")),
         LOG_END);
  return st;
}

/* ---- the user's rules (escalation checks, SelfSubjectRulesReview) ---- */

static bool collect_rule(void *ctx, const char *source, const cJSON *rule)
{
  (void)source;
  cJSON_AddItemToArray((cJSON *)ctx, cJSON_Duplicate(rule, 1));
  return true;
}

cJSON *rbac_user_rules(const struct ls_identity *id, const char *ns, struct strbuf *errs)
{
  cJSON *rules = cJSON_CreateArray();
  store_lock();
  rbac_visit(id, ns, collect_rule, rules, errs);
  store_unlock();
  return rules;
}

/* ---- escalation: kube's Covers(owner rules, servant rules), one atomic rule at a time ---- */

struct atom {
  const char *verb, *group, *resource, *name, *url; /* NULL: not part of the atom */
};

static bool resource_covers(const cJSON *owner, const char *res)
{
  if(list_has(owner, "*") || list_has(owner, res))
    return true;
  const char *slash = strchr(res, '/');
  if(!slash)
    return false;
  char any_sub[300], all_subs[300];
  snprintf(any_sub, sizeof(any_sub), "*%s", slash);
  snprintf(all_subs, sizeof(all_subs), "%.*s/*", (int)(slash - res), res);
  return list_has(owner, any_sub) || list_has(owner, all_subs);
}

static bool url_covers(const cJSON *owner, const char *url)
{
  const cJSON *v;
  cJSON_ArrayForEach(v, owner)
  {
    if(!cJSON_IsString(v))
      continue;
    size_t n = strlen(v->valuestring);
    if(!strcmp(v->valuestring, url) ||
       (n && v->valuestring[n - 1] == '*' && !strncmp(v->valuestring, url, n - 1)))
      return true;
  }
  return false;
}

static bool rule_covers(const cJSON *o, const struct atom *s)
{
  if(!list_has_or_all(cJSON_GetObjectItem(o, "verbs"), s->verb))
    return false;
  if(s->url)
    return url_covers(cJSON_GetObjectItem(o, "nonResourceURLs"), s->url);
  if(!list_has_or_all(cJSON_GetObjectItem(o, "apiGroups"), s->group) ||
     !resource_covers(cJSON_GetObjectItem(o, "resources"), s->resource))
    return false;
  const cJSON *names = cJSON_GetObjectItem(o, "resourceNames");
  if(cJSON_GetArraySize(names) == 0)
    return true;
  return s->name && list_has(names, s->name);
}

static bool covered(const cJSON *owner, const struct atom *s)
{
  const cJSON *o;
  cJSON_ArrayForEach(o, owner)
  {
    if(rule_covers(o, s))
      return true;
  }
  return false;
}

/* Go's %q of a []string: ["a" "b"] */
static void add_quoted_list(struct strbuf *sb, const char *label, const char *const *v, size_t n)
{
  put(sb, "%s:[", label);
  for(size_t i = 0; i < n; i++)
    put(sb, "%s\"%s\"", i ? " " : "", v[i]);
  put(sb, "]");
}

/* One missing atom, as kube's CompactString prints it; verbs of atoms that differ only in the
 * verb are merged (kube's CompactRules). */
struct missing {
  struct atom a;
  const char *verbs[32];
  size_t nverbs;
};

static void describe_missing(const struct missing *m, char *out, size_t len)
{
  struct strbuf sb;
  strbuf_init(&sb, len);
  put(&sb, "{");
  if(m->a.url) {
    add_quoted_list(&sb, "NonResourceURLs", &m->a.url, 1);
  } else {
    add_quoted_list(&sb, "APIGroups", &m->a.group, 1);
    put(&sb, "%s", ", ");
    add_quoted_list(&sb, "Resources", &m->a.resource, 1);
    if(m->a.name) {
      put(&sb, "%s", ", ");
      add_quoted_list(&sb, "ResourceNames", &m->a.name, 1);
    }
  }
  put(&sb, "%s", ", ");
  add_quoted_list(&sb, "Verbs", m->verbs, m->nverbs);
  put(&sb, "}");
  snprintf(out, len, "%s", sb.err ? "{...}" : strbuf_str(&sb));
  strbuf_release(&sb);
}

static bool same_target(const struct atom *a, const struct atom *b)
{
#define EQ(f) ((!a->f && !b->f) || (a->f && b->f && !strcmp(a->f, b->f)))
  return EQ(group) && EQ(resource) && EQ(name) && EQ(url);
#undef EQ
}

struct missing_set {
  struct missing *v;
  size_t n, cap;
};

static void note_missing(struct missing_set *ms, const struct atom *a)
{
  for(size_t i = 0; i < ms->n; i++)
    if(same_target(&ms->v[i].a, a)) {
      if(ms->v[i].nverbs < 32)
        ms->v[i].verbs[ms->v[i].nverbs++] = a->verb;
      return;
    }
  if(ms->n == ms->cap) {
    ms->cap = ms->cap ? ms->cap * 2 : 8;
    ms->v = realloc(ms->v, ms->cap * sizeof(*ms->v));
    if(!ms->v)
      abort();
  }
  struct missing *m = &ms->v[ms->n++];
  m->a = *a;
  m->verbs[0] = a->verb;
  m->nverbs = 1;
}

static const char *str_or_null(const cJSON *v)
{
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Every atom of every servant rule not covered by the owner's rules. */
static void find_missing(const cJSON *owner, const cJSON *servant, struct missing_set *ms)
{
  const cJSON *r;
  cJSON_ArrayForEach(r, servant)
  {
    const cJSON *verb, *g, *res, *n, *u;
    cJSON_ArrayForEach(verb, cJSON_GetObjectItem(r, "verbs"))
    {
      struct atom a = { str_or_null(verb), NULL, NULL, NULL, NULL };
      if(!a.verb)
        continue;
      cJSON_ArrayForEach(u, cJSON_GetObjectItem(r, "nonResourceURLs"))
      {
        a.url = str_or_null(u);
        if(a.url && !covered(owner, &a))
          note_missing(ms, &a);
      }
      a.url = NULL;
      cJSON_ArrayForEach(g, cJSON_GetObjectItem(r, "apiGroups"))
      {
        cJSON_ArrayForEach(res, cJSON_GetObjectItem(r, "resources"))
        {
          a.group = str_or_null(g);
          a.resource = str_or_null(res);
          if(!a.group || !a.resource)
            continue;
          const cJSON *names = cJSON_GetObjectItem(r, "resourceNames");
          if(cJSON_GetArraySize(names) == 0) {
            a.name = NULL;
            if(!covered(owner, &a))
              note_missing(ms, &a);
            continue;
          }
          cJSON_ArrayForEach(n, names)
          {
            a.name = str_or_null(n);
            if(a.name && !covered(owner, &a))
              note_missing(ms, &a);
          }
        }
      }
    }
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void groups_quoted(const struct ls_identity *id, struct strbuf *sb)
{
  put(sb, "[");
  for(size_t i = 0; i < id->ngroups; i++)
    put(sb, "%s\"%s\"", i ? " " : "", id->groups[i]);
  put(sb, "]");
}

bool rbac_confirm_no_escalation(const struct ls_identity *id, const char *ns,
                                const cJSON *rules, char *msg, size_t len)
{
  struct strbuf errs;
  strbuf_init(&errs, 4096);
  cJSON *owner = rbac_user_rules(id, ns, &errs);
  struct missing_set ms = { NULL, 0, 0 };
  find_missing(owner, rules, &ms);
  bool ok = ms.n == 0;
  if(!ok) {
    char **lines = calloc(ms.n, sizeof(*lines));
    if(!lines)
      abort();
    for(size_t i = 0; i < ms.n; i++) {
      char line[2048];
      describe_missing(&ms.v[i], line, sizeof(line));
      lines[i] = strdup(line);
    }
    qsort(lines, ms.n, sizeof(*lines), cmp_str);
    struct strbuf sb;
    strbuf_init(&sb, 1 << 16);
    put(&sb, "user \"%s\" (groups=", id->name);
    groups_quoted(id, &sb);
    put(&sb, "%s", ") is attempting to grant RBAC permissions not currently held:");
    for(size_t i = 0; i < ms.n; i++) /* sorted: each line once */
      if(i == 0 || strcmp(lines[i], lines[i - 1]))
        put(&sb, "\n%s", lines[i]);
    for(size_t i = 0; i < ms.n; i++)
      free(lines[i]);
    free(lines);
    if(errs.len)
      put(&sb, "; resolution errors: [%s]", strbuf_str(&errs));
    snprintf(msg, len, "%s", sb.err ? "is attempting to grant RBAC permissions not currently held"
                                    : strbuf_str(&sb));
    strbuf_release(&sb);
  }
  free(ms.v);
  cJSON_Delete(owner);
  strbuf_release(&errs);
  return ok;
}

/* ---- writes of roles and bindings: kube's escalation and bind checks ---- */

static cJSON *forbidden_write(const struct ls_wctx *w, const char *name, const char *why)
{
  char q[300];
  rest_qualified(w->rt, q, sizeof(q));
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "name", name);
  cJSON_AddStringToObject(d, "group", w->rt->group);
  cJSON_AddStringToObject(d, "kind", w->rt->resource);
  return ls_status(403, "Forbidden", d, "%s \"%s\" is forbidden: %s", q, name, why);
}

static bool same_member(const cJSON *a, const cJSON *b, const char *key)
{
  const cJSON *x = cJSON_GetObjectItem(a, key), *y = cJSON_GetObjectItem(b, key);
  return (!x && !y) || (x && y && cJSON_Compare(x, y, 1));
}

/* An update that leaves what grants rights alone is not checked (kube skips updates of the
 * garbage collector's fields only; labels and annotations are let through here too). */
static bool unchanged(const cJSON *obj, const cJSON *old, const char *a, const char *b)
{
  return old && same_member(obj, old, a) && same_member(obj, old, b);
}

cJSON *rbac_role_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(!w->r || is_privileged(w->id) || unchanged(obj, old, "rules", "aggregationRule"))
    return NULL;
  const char *name = ls_meta(obj, "name");
  struct rbac_attrs esc = { "escalate", true, RBAC_GROUP, w->rt->resource, "", w->ns, name, NULL };
  char reason[1024];
  if(rbac_authorize(w->id, &esc, reason, sizeof(reason)))
    return NULL;
  char msg[1 << 14];
  if(!rbac_confirm_no_escalation(w->id, w->ns, cJSON_GetObjectItem(obj, "rules"), msg,
                                 sizeof(msg)))
    return forbidden_write(w, name, msg);
  if(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "aggregationRule"),
                                            "clusterRoleSelectors")) ||
     (old && cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(old, "aggregationRule"),
                                                    "clusterRoleSelectors")))) {
    cJSON *full = cJSON_Parse("[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]},"
                              "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]");
    bool ok = rbac_confirm_no_escalation(w->id, w->ns, full, msg, sizeof(msg));
    cJSON_Delete(full);
    if(!ok)
      return forbidden_write(w, name, "must have cluster-admin privileges to use the "
                                      "aggregationRule");
  }
  return NULL;
}

/* The rules of the role a binding refers to (a copy), or NULL with *st the registry's 404 (kube
 * answers it as it is, not as a 403). */
static cJSON *referenced_rules(const cJSON *ref, const char *ns, cJSON **st)
{
  const char *name = ls_str(ref, "name");
  bool cluster = !strcmp(ls_str(ref, "kind"), "ClusterRole");
  const char *res = cluster ? "clusterroles" : "roles";
  store_lock();
  const struct ls_entry *e = store_get(RBAC_GROUP, res, cluster ? "" : ns, name);
  cJSON *rules = e ? cJSON_Duplicate(cJSON_GetObjectItem(e->obj->json, "rules"), 1) : NULL;
  store_unlock();
  if(e && !rules)
    rules = cJSON_CreateArray();
  if(!rules) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "name", name);
    cJSON_AddStringToObject(d, "group", RBAC_GROUP);
    cJSON_AddStringToObject(d, "kind", res);
    *st = ls_status(404, "NotFound", d, "%s.%s \"%s\" not found", res, RBAC_GROUP, name);
  }
  return rules;
}

cJSON *rbac_binding_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old)
{
  if(!w->r || is_privileged(w->id) || unchanged(obj, old, "roleRef", "subjects"))
    return NULL;
  const char *name = ls_meta(obj, "name");
  const cJSON *ref = cJSON_GetObjectItem(obj, "roleRef");
  bool cluster = !strcmp(ls_str(ref, "kind"), "ClusterRole");
  struct rbac_attrs bind = { "bind", true, ls_str(ref, "apiGroup"),
                             cluster ? "clusterroles" : "roles", "", w->ns, ls_str(ref, "name"),
                             NULL };
  char reason[1024];
  if(rbac_authorize(w->id, &bind, reason, sizeof(reason)))
    return NULL;
  char msg[1 << 14];
  cJSON *missing = NULL;
  cJSON *rules = referenced_rules(ref, w->ns, &missing);
  if(!rules)
    return missing;
  bool ok = rbac_confirm_no_escalation(w->id, w->ns, rules, msg, sizeof(msg));
  cJSON_Delete(rules);
  return ok ? NULL : forbidden_write(w, name, msg);
}

/* kube's validation of bindings: a roleRef that names a role of a supported kind and never
 * changes, subjects of the three kinds (a ServiceAccount with a namespace in a
 * ClusterRoleBinding). */
cJSON *rbac_binding_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old)
{
  cJSON *causes = cJSON_CreateArray();
  const cJSON *ref = cJSON_GetObjectItem(obj, "roleRef");
  const char *kind = ls_str(ref, "kind");
  bool namespaced = w->rt->namespaced;
  if(!*kind)
    rest_cause(causes, "FieldValueRequired", "roleRef.kind", "Required value");
  else if(strcmp(kind, "ClusterRole") && (!namespaced || strcmp(kind, "Role")))
    rest_cause(causes, "FieldValueNotSupported", "roleRef.kind",
               "Unsupported value: \"%s\": supported values: %s", kind,
               namespaced ? "\"Role\", \"ClusterRole\"" : "\"ClusterRole\"");
  if(!*ls_str(ref, "name"))
    rest_cause(causes, "FieldValueRequired", "roleRef.name", "Required value");
  if(strcmp(ls_str(ref, "apiGroup"), RBAC_GROUP))
    rest_cause(causes, "FieldValueNotSupported", "roleRef.apiGroup",
               "Unsupported value: \"%s\": supported values: \"%s\"", ls_str(ref, "apiGroup"),
               RBAC_GROUP);
  int i = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(obj, "subjects"))
  {
    char f[64];
    const char *sk = ls_str(s, "kind");
    if(strcmp(sk, "ServiceAccount") && strcmp(sk, "User") && strcmp(sk, "Group")) {
      snprintf(f, sizeof(f), "subjects[%d].kind", i);
      rest_cause(causes, "FieldValueNotSupported", f, "Unsupported value: \"%s\": supported "
                 "values: \"ServiceAccount\", \"User\", \"Group\"", sk);
    }
    if(!*ls_str(s, "name")) {
      snprintf(f, sizeof(f), "subjects[%d].name", i);
      rest_cause(causes, "FieldValueRequired", f, "Required value");
    }
    if(!strcmp(sk, "ServiceAccount") && !namespaced && !*ls_str(s, "namespace")) {
      snprintf(f, sizeof(f), "subjects[%d].namespace", i);
      rest_cause(causes, "FieldValueRequired", f, "Required value");
    }
    i++;
  }
  const cJSON *oref = old ? cJSON_GetObjectItem(old, "roleRef") : NULL;
  if(oref && !cJSON_Compare(ref, oref, 1))
    rest_cause(causes, "FieldValueInvalid", "roleRef",
               "Invalid value: rbac.RoleRef{APIGroup:\"%s\", Kind:\"%s\", Name:\"%s\"}: cannot "
               "change roleRef", ls_str(ref, "apiGroup"), kind, ls_str(ref, "name"));
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid(w->rt->group, w->rt->kind, ls_meta(obj, "name"), causes);
}

/* ---- ClusterRole aggregation (kube's clusterrole-aggregation controller, at once) ---- */

struct names {
  char **v;
  size_t n;
};

static int each_aggregated(void *ctx, const struct ls_entry *e)
{
  struct names *ns = ctx;
  if(!cJSON_GetObjectItem(e->obj->json, "aggregationRule"))
    return 0;
  char **v = realloc(ns->v, (ns->n + 1) * sizeof(*v));
  if(!v)
    abort();
  ns->v = v;
  ns->v[ns->n++] = strdup(e->name);
  return 0;
}

struct gather {
  const char *self;
  const cJSON *selector;
  cJSON *rules;
};

static int each_selected(void *ctx, const struct ls_entry *e)
{
  struct gather *g = ctx;
  const cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(e->obj->json, "metadata"),
                                            "labels");
  if(!strcmp(e->name, g->self) || !sel_match_label_selector(g->selector, labels))
    return 0;
  const cJSON *rule;
  cJSON_ArrayForEach(rule, cJSON_GetObjectItem(e->obj->json, "rules"))
  {
    bool seen = false;
    const cJSON *have;
    cJSON_ArrayForEach(have, g->rules)
    {
      seen = seen || cJSON_Compare(have, rule, 1);
    }
    if(!seen)
      cJSON_AddItemToArray(g->rules, cJSON_Duplicate(rule, 1));
  }
  return 0;
}

static bool aggregate(void *ctx, cJSON *obj)
{
  (void)ctx;
  struct gather g = { ls_meta(obj, "name"), NULL, cJSON_CreateArray() };
  store_lock();
  const cJSON *sel;
  cJSON_ArrayForEach(sel, cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "aggregationRule"),
                                              "clusterRoleSelectors"))
  {
    g.selector = sel;
    store_each(RBAC_GROUP, "clusterroles", "", NULL, each_selected, &g);
  }
  store_unlock();
  const cJSON *cur = cJSON_GetObjectItem(obj, "rules");
  if((cur && cJSON_Compare(cur, g.rules, 1)) || (!cur && !cJSON_GetArraySize(g.rules))) {
    cJSON_Delete(g.rules);
    return false;
  }
  ls_set_item(obj, "rules", g.rules);
  return true;
}

void rbac_after_commit(const struct ls_rtype *rt)
{
  if(strcmp(rt->store_resource, "clusterroles"))
    return;
  struct names agg = { NULL, 0 };
  store_lock();
  store_each(RBAC_GROUP, "clusterroles", "", NULL, each_aggregated, &agg);
  store_unlock();
  for(size_t i = 0; i < agg.n; i++) {
    cJSON *st = rest_internal_modify(RBAC_GROUP, "clusterroles", "", agg.v[i], aggregate, NULL);
    if(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "code")) != 404)
      log_kv(LOG_ERROR, "cannot aggregate a ClusterRole", "name", agg.v[i], "error",
             ls_str(st, "message"), LOG_END);
    cJSON_Delete(st);
    free(agg.v[i]);
  }
  free(agg.v);
}

/* ---- access reviews ---- */

static void attrs_from_spec(const cJSON *spec, struct rbac_attrs *a)
{
  const cJSON *ra = cJSON_GetObjectItem(spec, "resourceAttributes");
  const cJSON *na = cJSON_GetObjectItem(spec, "nonResourceAttributes");
  memset(a, 0, sizeof(*a));
  if(ra) {
    a->resource_request = true;
    a->verb = ls_str(ra, "verb");
    a->group = ls_str(ra, "group");
    a->resource = ls_str(ra, "resource");
    a->sub = ls_str(ra, "subresource");
    a->ns = ls_str(ra, "namespace");
    a->name = ls_str(ra, "name");
    a->path = "";
  } else {
    a->verb = ls_str(na, "verb");
    a->path = ls_str(na, "path");
    a->group = a->resource = a->sub = a->ns = a->name = "";
  }
}

static cJSON *invalid(const char *kind, cJSON *causes)
{
  return ls_status_invalid("authorization.k8s.io", kind, "", causes);
}

/* The subject of a SubjectAccessReview as an identity (groups and extra copied). */
static void identity_from_spec(const cJSON *spec, struct ls_identity *id)
{
  memset(id, 0, sizeof(*id));
  snprintf(id->name, sizeof(id->name), "%s", ls_str(spec, "user"));
  snprintf(id->uid, sizeof(id->uid), "%s", ls_str(spec, "uid"));
  const cJSON *g;
  cJSON_ArrayForEach(g, cJSON_GetObjectItem(spec, "groups"))
  {
    if(cJSON_IsString(g) && id->ngroups < 32)
      id->groups[id->ngroups++] = strdup(g->valuestring);
  }
  const cJSON *extra = cJSON_GetObjectItem(spec, "extra");
  if(extra)
    id->extra = cJSON_Duplicate(extra, 1);
}

static cJSON *access_review(const struct ls_identity *caller, const char *resource,
                            const char *ns, cJSON *body, const char *kind)
{
  cJSON *spec = cJSON_GetObjectItem(body, "spec");
  const cJSON *ra = cJSON_GetObjectItem(spec, "resourceAttributes");
  const cJSON *na = cJSON_GetObjectItem(spec, "nonResourceAttributes");
  bool self = !strcmp(resource, "selfsubjectaccessreviews");
  bool local = !strcmp(resource, "localsubjectaccessreviews");
  cJSON *causes = cJSON_CreateArray();
  if(ra && na)
    rest_cause(causes, "FieldValueInvalid", "spec.nonResourceAttributes", "Invalid value: "
               "&authorization.NonResourceAttributes{Path:\"%s\", Verb:\"%s\"}: cannot be "
               "specified in combination with resourceAttributes", ls_str(na, "path"),
               ls_str(na, "verb"));
  if(!ra && !na)
    rest_cause(causes, "FieldValueInvalid", "spec.resourceAttributes", "Invalid value: \"null\": "
               "exactly one of nonResourceAttributes or resourceAttributes must be specified");
  if(!self && !*ls_str(spec, "user") && !cJSON_GetArraySize(cJSON_GetObjectItem(spec, "groups")))
    rest_cause(causes, "FieldValueInvalid", "spec.user", "Invalid value: \"\": at least one of "
               "user or group must be specified");
  if(local && na)
    rest_cause(causes, "FieldValueInvalid", "spec.nonResourceAttributes", "Invalid value: "
               "\"object\": disallowed on this kind of request");
  if(local && ra && strcmp(ls_str(ra, "namespace"), ns))
    rest_cause(causes, "FieldValueInvalid", "spec.resourceAttributes.namespace", "Invalid "
               "value: \"%s\": must match metadata.namespace", ls_str(ra, "namespace"));
  if(cJSON_GetArraySize(causes))
    return invalid(kind, causes);
  cJSON_Delete(causes);
  struct rbac_attrs a;
  attrs_from_spec(spec, &a);
  struct ls_identity subject;
  const struct ls_identity *who = caller;
  if(!self) {
    identity_from_spec(spec, &subject);
    who = &subject;
  }
  char reason[2048];
  bool allowed = rbac_authorize(who, &a, reason, sizeof(reason));
  if(!self)
    auth_identity_release(&subject);
  cJSON *status = cJSON_CreateObject();
  cJSON_AddBoolToObject(status, "allowed", allowed);
  if(*reason)
    cJSON_AddStringToObject(status, "reason", reason);
  ls_set_item(body, "status", status);
  return NULL;
}

/* kube's SelfSubjectRulesReview: every rule that applies in the namespace, resource rules and
 * non-resource rules apart; errors make it incomplete. */
static cJSON *rules_review(const struct ls_identity *caller, cJSON *body)
{
  const char *ns = ls_str(cJSON_GetObjectItem(body, "spec"), "namespace");
  if(!*ns)
    return ls_status(400, "BadRequest", NULL, "no namespace on request");
  struct strbuf errs;
  strbuf_init(&errs, 4096);
  cJSON *rules = is_privileged(caller)
                   ? cJSON_Parse("[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]},"
                                 "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]")
                   : rbac_user_rules(caller, ns, &errs);
  cJSON *status = cJSON_CreateObject();
  cJSON *rr = cJSON_AddArrayToObject(status, "resourceRules");
  cJSON *nr = cJSON_AddArrayToObject(status, "nonResourceRules");
  cJSON *rule;
  cJSON_ArrayForEach(rule, rules)
  {
    static const char *const rkeys[] = { "verbs", "apiGroups", "resources", "resourceNames" };
    static const char *const nkeys[] = { "verbs", "nonResourceURLs" };
    bool non = cJSON_GetArraySize(cJSON_GetObjectItem(rule, "nonResourceURLs")) > 0;
    const char *const *keys = non ? nkeys : rkeys;
    size_t nk = non ? 2 : 4;
    cJSON *out = cJSON_CreateObject();
    for(size_t k = 0; k < nk; k++) {
      const cJSON *v = cJSON_GetObjectItem(rule, keys[k]);
      if(cJSON_GetArraySize(v) || k == 0)
        cJSON_AddItemToObject(out, keys[k], v ? cJSON_Duplicate(v, 1) : cJSON_CreateArray());
    }
    cJSON_AddItemToArray(non ? nr : rr, out);
  }
  cJSON_Delete(rules);
  cJSON_AddBoolToObject(status, "incomplete", errs.len > 0);
  if(errs.len)
    cJSON_AddStringToObject(status, "evaluationError", strbuf_str(&errs));
  strbuf_release(&errs);
  ls_set_item(body, "status", status);
  return NULL;
}

cJSON *rbac_review(const struct ls_identity *caller, const struct ls_rtype *rt, const char *ns,
                   cJSON *body)
{
  if(!strcmp(rt->resource, "selfsubjectrulesreviews"))
    return rules_review(caller, body);
  return access_review(caller, rt->resource, ns, body, rt->kind);
}
