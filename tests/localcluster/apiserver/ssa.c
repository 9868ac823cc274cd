/* ssa.c: server-side apply and metadata.managedFields, as kube-apiserver 1.32 keeps them
 * (structured-merge-diff v4; docs/dev/server-side-apply.md says what is followed and where
 * this differs).
 *
 * A field set is a trie of cJSON objects keyed like FieldsV1 ("f:name", "k:{...}", "v:json").
 * Inside this file a node that is itself owned always carries ".": {} (on the wire a leaf is
 * plain {}); set_to_wire and set_from_wire convert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "rest.h"
#include "ssa.h"
#include "strbuf.h"

/* ---- tries ---- */

static cJSON *child(cJSON *node, const char *key)
{
  cJSON *c = cJSON_GetObjectItemCaseSensitive(node, key);
  if(!c)
    c = cJSON_AddObjectToObject(node, key);
  return c;
}

static void own(cJSON *node)
{
  if(!cJSON_GetObjectItemCaseSensitive(node, "."))
    cJSON_AddObjectToObject(node, ".");
}

static bool owned(const cJSON *node)
{
  return cJSON_GetObjectItemCaseSensitive(node, ".") != NULL;
}

static void set_union(cJSON *dst, const cJSON *src)
{
  const cJSON *k;
  cJSON_ArrayForEach(k, src)
  {
    if(!strcmp(k->string, "."))
      own(dst);
    else
      set_union(child(dst, k->string), k);
  }
}

/* dst minus src; nodes left with nothing are removed */
static void set_subtract(cJSON *dst, const cJSON *src)
{
  const cJSON *k;
  cJSON_ArrayForEach(k, src)
  {
    cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, k->string);
    if(!d)
      continue;
    if(!strcmp(k->string, ".")) {
      cJSON_DeleteItemFromObjectCaseSensitive(dst, ".");
      continue;
    }
    set_subtract(d, k);
    if(!d->child)
      cJSON_DeleteItemFromObjectCaseSensitive(dst, k->string);
  }
}

/* the owned paths both hold */
static cJSON *set_intersect(const cJSON *a, const cJSON *b)
{
  cJSON *out = cJSON_CreateObject();
  const cJSON *k;
  cJSON_ArrayForEach(k, a)
  {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, k->string);
    if(!o)
      continue;
    if(!strcmp(k->string, ".")) {
      own(out);
      continue;
    }
    cJSON *i = set_intersect(k, o);
    if(i->child)
      cJSON_AddItemToObject(out, k->string, i);
    else
      cJSON_Delete(i);
  }
  return out;
}

static bool set_empty(const cJSON *s)
{
  return !s || !s->child;
}

/* FieldsV1 members sort f: < k: < v: < i:, byte-wise within */
static int rank(const char *k)
{
  return k[0] == 'f' ? 0 : k[0] == 'k' ? 1 : k[0] == 'v' ? 2 : 3;
}

static int cmp_member(const void *a, const void *b)
{
  const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
  int rx = rank(x->string), ry = rank(y->string);
  return rx != ry ? rx - ry : strcmp(x->string, y->string);
}

static size_t members(const cJSON *s)
{
  size_t n = 0;
  const cJSON *k;
  cJSON_ArrayForEach(k, s)
  {
    n += strcmp(k->string, ".") != 0;
  }
  return n;
}

/* The members of a trie node but ".", in FieldsV1 order (free() the array; NULL when none). */
static const cJSON **sorted_members(const cJSON *s, size_t *n)
{
  *n = members(s);
  if(!*n)
    return NULL;
  const cJSON **v = calloc(*n, sizeof(*v));
  if(!v)
    abort();
  size_t i = 0;
  const cJSON *k;
  cJSON_ArrayForEach(k, s)
  {
    if(strcmp(k->string, "."))
      v[i++] = k;
  }
  qsort(v, *n, sizeof(*v), cmp_member);
  return v;
}

/* with_dot: the node itself is owned and has children ("." written first) */
static cJSON *set_to_wire(const cJSON *s, bool with_dot)
{
  cJSON *out = cJSON_CreateObject();
  if(with_dot)
    cJSON_AddObjectToObject(out, ".");
  size_t n;
  const cJSON **v = sorted_members(s, &n);
  for(size_t i = 0; i < n; i++)
    cJSON_AddItemToObject(out, v[i]->string, members(v[i]) ? set_to_wire(v[i], owned(v[i]))
                                                           : cJSON_CreateObject());
  free(v);
  return out;
}

static cJSON *set_from_wire(const cJSON *w)
{
  cJSON *s = cJSON_CreateObject();
  const cJSON *k;
  cJSON_ArrayForEach(k, w)
  {
    if(!strcmp(k->string, ".")) {
      own(s);
      continue;
    }
    cJSON *c = set_from_wire(k);
    if(!k->child)
      own(c);
    cJSON_AddItemToObject(s, k->string, c);
  }
  return s;
}

/* drops nodes that are neither owned nor lead to owned ones */
static void prune_empty(cJSON *node)
{
  cJSON *k = node->child;
  while(k) {
    cJSON *next = k->next;
    if(strcmp(k->string, ".")) {
      prune_empty(k);
      if(!k->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(node, k));
    }
    k = next;
  }
}

/* ---- where a value sits in its type ---- */

enum shape { SH_LEAF, SH_STRUCT, SH_MAP, SH_ATOMIC_LIST, SH_SET, SH_KEYED };

struct ty {
  const cJSON *schema; /* the CRD's structural schema here, or NULL */
  bool crd;
  const char *field; /* the member holding the value ("" at the root and in lists) */
  int depth;
  bool meta; /* the root's metadata: ObjectMeta's rules, whatever the kind */
  bool item; /* an item of a keyed list */
};

static const char *schema_str(const cJSON *s, const char *k)
{
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, k));
}

/* built-in lists keyed by fields (their +listMapKey), by the field that holds them */
static const struct {
  const char *field, *keys[2];
} builtin_keyed[] = {
  { "containers", { "name" } },      { "initContainers", { "name" } },
  { "ephemeralContainers", { "name" } }, { "volumes", { "name" } },
  { "env", { "name" } },             { "imagePullSecrets", { "name" } },
  { "volumeMounts", { "mountPath" } }, { "conditions", { "type" } },
  { "ports", { "containerPort", "protocol" } },
};

static const char *const builtin_maps[] = { "labels", "annotations", "data", "binaryData",
                                            "stringData", "nodeSelector", "limits", "requests",
                                            "matchLabels" };

static enum shape shape_of(const cJSON *v, const struct ty *t)
{
  if(cJSON_IsObject(v)) {
    if(t->depth == 0 || t->item)
      return SH_STRUCT;
    if(t->meta)
      return !strcmp(t->field, "labels") || !strcmp(t->field, "annotations") ? SH_MAP
                                                                              : SH_STRUCT;
    if(t->crd) {
      if(!t->schema)
        return SH_MAP; /* what preserve-unknown-fields keeps: granular, untyped */
      const char *mt = schema_str(t->schema, "x-kubernetes-map-type");
      if(mt && !strcmp(mt, "atomic"))
        return SH_LEAF;
      if(cJSON_GetObjectItemCaseSensitive(t->schema, "properties"))
        return SH_STRUCT;
      return SH_MAP;
    }
    if(!strcmp(t->field, "selector"))
      return SH_LEAF; /* metav1.LabelSelector is +structType=atomic */
    for(size_t i = 0; i < sizeof(builtin_maps) / sizeof(builtin_maps[0]); i++)
      if(!strcmp(t->field, builtin_maps[i]))
        return SH_MAP;
    return SH_STRUCT;
  }
  if(cJSON_IsArray(v)) {
    if(t->meta)
      return !strcmp(t->field, "finalizers")        ? SH_SET
             : !strcmp(t->field, "ownerReferences") ? SH_KEYED
                                                    : SH_ATOMIC_LIST;
    if(t->crd) {
      const char *lt = t->schema ? schema_str(t->schema, "x-kubernetes-list-type") : NULL;
      return !lt ? SH_ATOMIC_LIST
             : !strcmp(lt, "map") ? SH_KEYED
             : !strcmp(lt, "set") ? SH_SET
                                  : SH_ATOMIC_LIST;
    }
    for(size_t i = 0; i < sizeof(builtin_keyed) / sizeof(builtin_keyed[0]); i++)
      if(!strcmp(t->field, builtin_keyed[i].field))
        return SH_KEYED;
    return SH_ATOMIC_LIST;
  }
  return SH_LEAF;
}

/* The key fields of a keyed list's items (at most 4), and how many. */
static size_t list_keys(const struct ty *t, const char **keys)
{
  if(t->meta) {
    keys[0] = "uid";
    return 1;
  }
  if(t->crd) {
    size_t n = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(t->schema, "x-kubernetes-list-map-keys"))
    {
      if(cJSON_IsString(k) && n < 4)
        keys[n++] = k->valuestring;
    }
    return n;
  }
  for(size_t i = 0; i < sizeof(builtin_keyed) / sizeof(builtin_keyed[0]); i++)
    if(!strcmp(t->field, builtin_keyed[i].field)) {
      size_t n = 0;
      for(size_t j = 0; j < 2 && builtin_keyed[i].keys[j]; j++)
        keys[n++] = builtin_keyed[i].keys[j];
      return n;
    }
  return 0;
}

/* The type of member name of an object of shape sh at t; *declared: a field of a struct (not
 * a key of a granular map). */
static struct ty member_ty(const struct ty *t, enum shape sh, const char *name, bool *declared)
{
  struct ty c = { NULL, t->crd, name, t->depth + 1, t->meta, false };
  *declared = sh == SH_STRUCT;
  if(t->depth == 0 && !strcmp(name, "metadata")) {
    c.meta = true;
    return c;
  }
  if(t->crd && t->schema && !t->meta) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(t->schema, "properties");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(t->schema, "additionalProperties");
    c.schema = sh == SH_STRUCT ? cJSON_GetObjectItemCaseSensitive(props, name)
               : cJSON_IsObject(ap) ? ap
                                    : NULL;
    if(sh == SH_STRUCT && !c.schema)
      *declared = false; /* kept by preserve-unknown-fields */
  }
  return c;
}

static struct ty item_ty(const struct ty *t, bool keyed)
{
  struct ty c = { t->crd && t->schema ? cJSON_GetObjectItemCaseSensitive(t->schema, "items")
                                      : NULL,
                  t->crd, t->field, t->depth + 1, t->meta, keyed };
  return c;
}

/* "k:{...}" of a keyed list's item: its key fields, sorted by name, compact JSON */
static void item_key(const struct ty *t, const cJSON *item, char *out, size_t len)
{
  const char *keys[4];
  size_t n = list_keys(t, keys);
  for(size_t i = 1; i < n; i++) /* sort the (few) names */
    for(size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
      const char *x = keys[j];
      keys[j] = keys[j - 1];
      keys[j - 1] = x;
    }
  struct strbuf sb;
  strbuf_init(&sb, len);
  gw_rc rc = strbuf_adds(&sb, "k:{");
  bool first = true;
  for(size_t i = 0; i < n && !rc; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, keys[i]);
    if(!v)
      continue;
    char *j = cJSON_PrintUnformatted(v);
    rc = strbuf_addf(&sb, "%s\"%s\":%s", first ? "" : ",", keys[i], j ? j : "null");
    cJSON_free(j);
    first = false;
  }
  if(!rc)
    rc = strbuf_addc(&sb, '}');
  snprintf(out, len, "%s", rc ? "k:{}" : strbuf_str(&sb));
  strbuf_release(&sb);
}

static void value_key(const cJSON *item, char *out, size_t len)
{
  char *j = cJSON_PrintUnformatted(item);
  snprintf(out, len, "v:%s", j ? j : "null");
  cJSON_free(j);
}

static const cJSON *find_item(const cJSON *list, const struct ty *t, const char *key, int *index)
{
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    char k[1024];
    item_key(t, it, k, sizeof(k));
    if(!strcmp(k, key)) {
      if(index)
        *index = i;
      return it;
    }
    i++;
  }
  return NULL;
}

static const cJSON *find_value(const cJSON *list, const char *key, int *index)
{
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    char k[1024];
    value_key(it, k, sizeof(k));
    if(!strcmp(k, key)) {
      if(index)
        *index = i;
      return it;
    }
    i++;
  }
  return NULL;
}

/* ---- field sets of values ---- */

static void fkey(char *out, size_t len, const char *name)
{
  snprintf(out, len, "f:%s", name);
}

/* What an applied value owns (structured-merge-diff's ToFieldSet): leaves, atomic values,
 * empty objects, nulls, keys of granular maps, every item of a set or keyed list; a declared
 * field holding a non-empty object only leads to what it holds. */
static void apply_value(cJSON *node, const cJSON *v, const struct ty *t, bool declared)
{
  enum shape sh = shape_of(v, t);
  const cJSON *m;
  char k[1024];
  switch(sh) {
  case SH_LEAF:
  case SH_ATOMIC_LIST:
    own(node);
    return;
  case SH_STRUCT:
  case SH_MAP:
    if(!v->child || !declared)
      own(node);
    cJSON_ArrayForEach(m, v)
    {
      bool d;
      struct ty ct = member_ty(t, sh, m->string, &d);
      fkey(k, sizeof(k), m->string);
      apply_value(child(node, k), m, &ct, d);
    }
    return;
  case SH_SET:
    cJSON_ArrayForEach(m, v)
    {
      value_key(m, k, sizeof(k));
      own(child(node, k));
    }
    return;
  case SH_KEYED: {
    struct ty it = item_ty(t, true);
    cJSON_ArrayForEach(m, v)
    {
      item_key(t, m, k, sizeof(k));
      cJSON *n = child(node, k);
      own(n);
      if(cJSON_IsObject(m))
        apply_value(n, m, &it, true);
    }
    return;
  }
  }
}

/* every node of v, each owned (an added or a removed subtree) */
static void all_nodes(cJSON *node, const cJSON *v, const struct ty *t)
{
  own(node);
  enum shape sh = shape_of(v, t);
  const cJSON *m;
  char k[1024];
  if(sh == SH_STRUCT || sh == SH_MAP) {
    cJSON_ArrayForEach(m, v)
    {
      bool d;
      struct ty ct = member_ty(t, sh, m->string, &d);
      fkey(k, sizeof(k), m->string);
      all_nodes(child(node, k), m, &ct);
    }
  } else if(sh == SH_SET) {
    cJSON_ArrayForEach(m, v)
    {
      value_key(m, k, sizeof(k));
      own(child(node, k));
    }
  } else if(sh == SH_KEYED) {
    struct ty it = item_ty(t, true);
    cJSON_ArrayForEach(m, v)
    {
      item_key(t, m, k, sizeof(k));
      all_nodes(child(node, k), m, &it);
    }
  }
}

/* structured-merge-diff's Compare: what was added or changed (added subtrees with every node
 * in them, changed leaves) and what was removed, from o to n */
static void diff(cJSON *changed, cJSON *removed, const cJSON *o, const cJSON *n,
                 const struct ty *t)
{
  enum shape so = shape_of(o, t), sn = shape_of(n, t);
  const cJSON *m;
  char k[1024];
  if(so != sn || sn == SH_LEAF || sn == SH_ATOMIC_LIST || (!o->child && !n->child)) {
    if(!cJSON_Compare(o, n, 1))
      own(changed);
    return;
  }
  if(sn == SH_STRUCT || sn == SH_MAP) {
    cJSON_ArrayForEach(m, n)
    {
      bool d;
      struct ty ct = member_ty(t, sn, m->string, &d);
      fkey(k, sizeof(k), m->string);
      const cJSON *om = cJSON_GetObjectItemCaseSensitive(o, m->string);
      if(!om)
        all_nodes(child(changed, k), m, &ct);
      else
        diff(child(changed, k), child(removed, k), om, m, &ct);
    }
    cJSON_ArrayForEach(m, o)
    {
      if(cJSON_GetObjectItemCaseSensitive(n, m->string))
        continue;
      bool d;
      struct ty ct = member_ty(t, sn, m->string, &d);
      fkey(k, sizeof(k), m->string);
      all_nodes(child(removed, k), m, &ct);
    }
  } else if(sn == SH_SET) {
    cJSON_ArrayForEach(m, n)
    {
      value_key(m, k, sizeof(k));
      if(!find_value(o, k, NULL))
        own(child(changed, k));
    }
    cJSON_ArrayForEach(m, o)
    {
      value_key(m, k, sizeof(k));
      if(!find_value(n, k, NULL))
        own(child(removed, k));
    }
  } else {
    struct ty it = item_ty(t, true);
    cJSON_ArrayForEach(m, n)
    {
      item_key(t, m, k, sizeof(k));
      const cJSON *om = find_item(o, t, k, NULL);
      if(!om)
        all_nodes(child(changed, k), m, &it);
      else
        diff(child(changed, k), child(removed, k), om, m, &it);
    }
    cJSON_ArrayForEach(m, o)
    {
      item_key(t, m, k, sizeof(k));
      if(!find_item(n, t, k, NULL))
        all_nodes(child(removed, k), m, &it);
    }
  }
}

/* ---- apply: merge, then removal of what the applier stopped applying ---- */

static cJSON *merge(const cJSON *live, const cJSON *app, const struct ty *t)
{
  enum shape sa = shape_of(app, t);
  if(!live || shape_of(live, t) != sa || sa == SH_LEAF || sa == SH_ATOMIC_LIST)
    return cJSON_Duplicate(app, 1);
  cJSON *out = cJSON_Duplicate(live, 1);
  const cJSON *m;
  char k[1024];
  if(sa == SH_STRUCT || sa == SH_MAP) {
    cJSON_ArrayForEach(m, app)
    {
      bool d;
      struct ty ct = member_ty(t, sa, m->string, &d);
      cJSON *merged = merge(cJSON_GetObjectItemCaseSensitive(out, m->string), m, &ct);
      if(cJSON_GetObjectItemCaseSensitive(out, m->string))
        cJSON_ReplaceItemInObjectCaseSensitive(out, m->string, merged);
      else
        cJSON_AddItemToObject(out, m->string, merged);
    }
  } else if(sa == SH_SET) {
    cJSON_ArrayForEach(m, app)
    {
      value_key(m, k, sizeof(k));
      if(!find_value(out, k, NULL))
        cJSON_AddItemToArray(out, cJSON_Duplicate(m, 1));
    }
  } else {
    struct ty it = item_ty(t, true);
    cJSON_ArrayForEach(m, app)
    {
      item_key(t, m, k, sizeof(k));
      int i;
      const cJSON *lm = find_item(out, t, k, &i);
      if(lm)
        cJSON_ReplaceItemInArray(out, i, merge(lm, m, &it));
      else
        cJSON_AddItemToArray(out, cJSON_Duplicate(m, 1));
    }
  }
  return out;
}

/* Removes from obj every owned path of trie, but not a node under which keep (what other
 * managers own) holds anything: a struct field or an item another manager owns a part of stays
 * (structured-merge-diff's EnsureNamedFieldsAreMembers). */
static void remove_paths(cJSON *obj, const cJSON *trie, const cJSON *keep, const struct ty *t)
{
  enum shape sh = shape_of(obj, t);
  const cJSON *p;
  cJSON_ArrayForEach(p, trie)
  {
    const char *k = p->string;
    if(!strcmp(k, "."))
      continue;
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(keep, k);
    bool drop = owned(p) && set_empty(kept);
    if(k[0] == 'f' && (sh == SH_STRUCT || sh == SH_MAP)) {
      cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, k + 2);
      if(!v)
        continue;
      bool d;
      struct ty ct = member_ty(t, sh, k + 2, &d);
      if(drop)
        cJSON_DeleteItemFromObjectCaseSensitive(obj, k + 2);
      else
        remove_paths(v, p, kept, &ct);
    } else if(k[0] == 'k' && sh == SH_KEYED) {
      int i;
      cJSON *v = (cJSON *)find_item(obj, t, k, &i);
      struct ty it = item_ty(t, true);
      if(v && drop)
        cJSON_DeleteItemFromArray(obj, i);
      else if(v)
        remove_paths(v, p, kept, &it);
    } else if(k[0] == 'v' && sh == SH_SET && drop) {
      int i;
      if(find_value(obj, k, &i))
        cJSON_DeleteItemFromArray(obj, i);
    }
  }
}

/* ---- sets of whole objects ---- */

static const char *const stripped_meta[] = { "name", "namespace", "creationTimestamp", "selfLink",
                                             "uid", "clusterName", "generation", "managedFields",
                                             "resourceVersion", "deletionTimestamp",
                                             "deletionGracePeriodSeconds" };

/* kube's StripMeta and the resource's reset fields: what no manager owns (status through the
 * main resource of a kind with /status; everything but status through /status) */
static void strip(cJSON *set, const struct ls_rtype *rt, const char *sub)
{
  cJSON_DeleteItemFromObjectCaseSensitive(set, "f:apiVersion");
  cJSON_DeleteItemFromObjectCaseSensitive(set, "f:kind");
  cJSON *m = cJSON_GetObjectItemCaseSensitive(set, "f:metadata");
  cJSON_DeleteItemFromObjectCaseSensitive(m, ".");
  for(size_t i = 0; i < sizeof(stripped_meta) / sizeof(stripped_meta[0]); i++) {
    char k[64];
    fkey(k, sizeof(k), stripped_meta[i]);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, k), ".");
  }
  if(sub && !strcmp(sub, "status")) {
    cJSON *status = cJSON_DetachItemFromObjectCaseSensitive(set, "f:status");
    while(set->child)
      cJSON_Delete(cJSON_DetachItemViaPointer(set, set->child));
    if(status)
      cJSON_AddItemToObject(set, "f:status", status);
  } else if(rt->status_sub)
    cJSON_DeleteItemFromObjectCaseSensitive(set, "f:status");
  prune_empty(set);
}

static struct ty root_ty(const struct ls_rtype *rt)
{
  struct ty t = { rt->crd ? crd_version_schema(rt->group, rt->resource, rt->version) : NULL, rt->crd, "",
                  0, false, false };
  return t;
}

/* what changed (added or modified) and what was removed from o to n, each a set */
static void compare(const struct ls_rtype *rt, const char *sub, const cJSON *o, const cJSON *n,
                    cJSON **changed, cJSON **removed)
{
  *changed = cJSON_CreateObject();
  *removed = cJSON_CreateObject();
  struct ty t = root_ty(rt);
  cJSON *empty = o ? NULL : cJSON_CreateObject();
  diff(*changed, *removed, o ? o : empty, n, &t);
  cJSON_Delete(empty);
  strip(*changed, rt, sub);
  strip(*removed, rt, sub);
}

/* ---- managedFields entries ---- */

struct entry {
  char manager[256], operation[16], api_version[300], subresource[64], time[32];
  cJSON *set; /* internal form */
};

struct entries {
  struct entry *v;
  size_t n;
};

static struct entry *entry_add(struct entries *es)
{
  struct entry *v = realloc(es->v, (es->n + 1) * sizeof(*v));
  if(!v)
    abort();
  es->v = v;
  struct entry *e = &es->v[es->n++];
  memset(e, 0, sizeof(*e));
  e->set = cJSON_CreateObject();
  return e;
}

static void entries_free(struct entries *es)
{
  for(size_t i = 0; i < es->n; i++)
    cJSON_Delete(es->v[i].set);
  free(es->v);
  es->v = NULL;
  es->n = 0;
}

static void entries_load(struct entries *es, const cJSON *list)
{
  const cJSON *it;
  cJSON_ArrayForEach(it, list)
  {
    const char *m = ls_str(it, "manager");
    if(!cJSON_IsObject(it) || !*m)
      continue;
    struct entry *e = entry_add(es);
    snprintf(e->manager, sizeof(e->manager), "%s", m);
    snprintf(e->operation, sizeof(e->operation), "%s", ls_str(it, "operation"));
    snprintf(e->api_version, sizeof(e->api_version), "%s", ls_str(it, "apiVersion"));
    snprintf(e->subresource, sizeof(e->subresource), "%s", ls_str(it, "subresource"));
    snprintf(e->time, sizeof(e->time), "%s", ls_str(it, "time"));
    cJSON_Delete(e->set);
    e->set = set_from_wire(cJSON_GetObjectItemCaseSensitive(it, "fieldsV1"));
  }
}

/* an Apply entry is one per manager and subresource; an Update entry one per apiVersion too */
static struct entry *entry_find(struct entries *es, const char *manager, const char *operation,
                                const char *api_version, const char *sub)
{
  for(size_t i = 0; i < es->n; i++) {
    struct entry *e = &es->v[i];
    if(!strcmp(e->manager, manager) && !strcmp(e->operation, operation) &&
       !strcmp(e->subresource, sub) &&
       (!strcmp(operation, "Apply") || !strcmp(e->api_version, api_version)))
      return e;
  }
  return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
  const struct entry *x = a, *y = b;
  int c = strcmp(x->operation, y->operation);
  if(!c)
    c = strcmp(x->time, y->time);
  if(!c)
    c = strcmp(x->manager, y->manager);
  if(!c)
    c = strcmp(x->api_version, y->api_version);
  return c ? c : strcmp(x->subresource, y->subresource);
}

/* into obj's metadata.managedFields, kube's order; entries owning nothing are dropped */
static void entries_save(struct entries *es, cJSON *obj)
{
  if(es->n) /* qsort of NULL is undefined, even for none */
    qsort(es->v, es->n, sizeof(*es->v), cmp_entry);
  cJSON *list = cJSON_CreateArray();
  for(size_t i = 0; i < es->n; i++) {
    const struct entry *e = &es->v[i];
    if(set_empty(e->set))
      continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "manager", e->manager);
    cJSON_AddStringToObject(o, "operation", e->operation);
    cJSON_AddStringToObject(o, "apiVersion", e->api_version);
    if(*e->time)
      cJSON_AddStringToObject(o, "time", e->time);
    cJSON_AddStringToObject(o, "fieldsType", "FieldsV1");
    cJSON_AddItemToObject(o, "fieldsV1", set_to_wire(e->set, false));
    if(*e->subresource)
      cJSON_AddStringToObject(o, "subresource", e->subresource);
    cJSON_AddItemToArray(list, o);
  }
  cJSON *m = ls_meta_obj(obj);
  if(cJSON_GetArraySize(list))
    ls_set_item(m, "managedFields", list);
  else {
    cJSON_Delete(list);
    cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
  }
}

static void subtract_all(struct entries *es, const cJSON *set, const struct entry *except)
{
  for(size_t i = 0; i < es->n; i++)
    if(&es->v[i] != except)
      set_subtract(es->v[i].set, set);
}

/* ---- conflicts ---- */

/* a path element as structured-merge-diff prints it: .name, [key="v",...], [="v"] */
static void add_element(struct strbuf *sb, const char *k)
{
  gw_rc rc = 0;
  if(k[0] == 'f') {
    rc = strbuf_addf(sb, ".%s", k + 2);
  } else {
    cJSON *v = cJSON_Parse(k + 2);
    if(k[0] == 'k') {
      rc = strbuf_addc(sb, '[');
      const cJSON *m;
      cJSON_ArrayForEach(m, v)
      {
        char *j = cJSON_PrintUnformatted(m);
        if(!rc)
          rc = strbuf_addf(sb, "%s%s=%s", m == v->child ? "" : ",", m->string, j ? j : "");
        cJSON_free(j);
      }
      if(!rc)
        rc = strbuf_addc(sb, ']');
    } else {
      char *j = v ? cJSON_PrintUnformatted(v) : NULL;
      rc = strbuf_addf(sb, "[=%s]", j ? j : k + 2);
      cJSON_free(j);
    }
    cJSON_Delete(v);
  }
  (void)rc;
}

/* every owned path of set, in kube's order (a level's owned members, then its children) */
static void each_path(const cJSON *set, struct strbuf *prefix, cJSON *out)
{
  size_t n;
  const cJSON **v = sorted_members(set, &n);
  size_t len = prefix->len;
  for(int pass = 0; pass < 2; pass++)
    for(size_t i = 0; i < n; i++) {
      bool leaf = owned(v[i]);
      if(pass == 0 && leaf) {
        add_element(prefix, v[i]->string);
        cJSON_AddItemToArray(out, cJSON_CreateString(strbuf_str(prefix)));
      } else if(pass == 1 && members(v[i])) {
        add_element(prefix, v[i]->string);
        each_path(v[i], prefix, out);
      }
      if(prefix->buf) /* back to this level's prefix */
        prefix->buf[len] = '\0';
      prefix->len = len;
    }
  free(v);
}

static void print_manager(const struct entry *e, char *out, size_t len)
{
  char sub[128] = "";
  if(*e->subresource)
    snprintf(sub, sizeof(sub), " with subresource \"%s\"", e->subresource);
  if(!strcmp(e->operation, "Update"))
    snprintf(out, len, "\"%s\"%s using %s", e->manager, sub, e->api_version);
  else
    snprintf(out, len, "\"%s\"%s", e->manager, sub);
}

struct conflict {
  char who[1024];
  cJSON *paths; /* strings */
};

static int cmp_conflict(const void *a, const void *b)
{
  return strcmp(((const struct conflict *)a)->who, ((const struct conflict *)b)->who);
}

/* kube's 409 for an apply in conflict with other managers (structured-merge-diff's Conflicts
 * as apimachinery prints them) */
static cJSON *conflict_status(struct conflict *c, size_t n)
{
  qsort(c, n, sizeof(*c), cmp_conflict);
  size_t total = 0;
  for(size_t i = 0; i < n; i++)
    total += (size_t)cJSON_GetArraySize(c[i].paths);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 16);
  gw_rc rc = 0;
  cJSON *d = cJSON_CreateObject();
  cJSON *causes = cJSON_AddArrayToObject(d, "causes");
  for(size_t i = 0; i < n; i++) {
    const cJSON *p;
    if(total > 1 && !rc)
      rc = strbuf_addf(&sb, "%sconflicts with %s:", i ? "\n" : "", c[i].who);
    cJSON_ArrayForEach(p, c[i].paths)
    {
      char msg[1100];
      snprintf(msg, sizeof(msg), "conflict with %s", c[i].who);
      if(total == 1 && !rc)
        rc = strbuf_addf(&sb, "conflict with %s: %s", c[i].who, p->valuestring);
      else if(!rc)
        rc = strbuf_addf(&sb, "\n- %s", p->valuestring);
      cJSON *cause = cJSON_CreateObject();
      cJSON_AddStringToObject(cause, "reason", "FieldManagerConflict");
      cJSON_AddStringToObject(cause, "message", msg);
      cJSON_AddStringToObject(cause, "field", p->valuestring);
      cJSON_AddItemToArray(causes, cause);
    }
  }
  cJSON *st = ls_status(409, "Conflict", d, "Apply failed with %zu conflict%s: %s", total,
                        total == 1 ? "" : "s", rc ? "(too many to print)" : strbuf_str(&sb));
  strbuf_release(&sb);
  return st;
}

/* ---- the two operations ---- */

static bool reset_requested(const cJSON *mf)
{
  return cJSON_IsArray(mf) && (!cJSON_GetArraySize(mf) ||
                               (cJSON_GetArraySize(mf) == 1 && cJSON_IsObject(mf->child) &&
                                !mf->child->child));
}

void ssa_update(const struct ls_rtype *rt, const char *sub, const char *manager, const cJSON *old,
                cJSON *obj)
{
  char av[300];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  cJSON *m = ls_meta_obj(obj);
  const cJSON *sent = cJSON_GetObjectItemCaseSensitive(m, "managedFields");
  const cJSON *om = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(old,
                                                                                      "metadata"),
                                                     "managedFields");
  struct entries es = { NULL, 0 };
  bool reset = !*sub && reset_requested(sent);
  if(reset && old) { /* kube tracks no update of an existing object that has no managers */
    cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
    return;
  }
  if(!reset)
    entries_load(&es, !*sub && cJSON_GetArraySize(sent) ? sent : om);
  cJSON *changed, *removed;
  compare(rt, sub, old, obj, &changed, &removed);
  subtract_all(&es, changed, NULL);
  subtract_all(&es, removed, NULL);
  if(!set_empty(changed)) {
    struct entry *e = entry_find(&es, manager, "Update", av, sub);
    if(!e) {
      e = entry_add(&es);
      snprintf(e->manager, sizeof(e->manager), "%s", manager);
      snprintf(e->operation, sizeof(e->operation), "Update");
      snprintf(e->api_version, sizeof(e->api_version), "%s", av);
      snprintf(e->subresource, sizeof(e->subresource), "%s", sub);
    }
    set_union(e->set, changed);
    ls_now(e->time);
  }
  entries_save(&es, obj);
  entries_free(&es);
  cJSON_Delete(changed);
  cJSON_Delete(removed);
}

cJSON *ssa_apply(const struct ls_rtype *rt, const char *sub, const char *manager, bool force,
                 const cJSON *live, const cJSON *applied, cJSON **out)
{
  *out = NULL;
  char av[300];
  ls_api_version(rt->group, rt->version, av, sizeof(av));
  struct ty t = root_ty(rt);
  cJSON *base = live ? cJSON_Duplicate(live, 1) : cJSON_CreateObject();
  struct entries es = { NULL, 0 };
  entries_load(&es, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(base,
                                                                                       "metadata"),
                                                     "managedFields"));
  if(live && !es.n) { /* what was there is before-first-apply's */
    cJSON *all, *none;
    compare(rt, sub, NULL, live, &all, &none);
    cJSON_Delete(none);
    if(!set_empty(all)) {
      struct entry *e = entry_add(&es);
      snprintf(e->manager, sizeof(e->manager), "before-first-apply");
      snprintf(e->operation, sizeof(e->operation), "Update");
      snprintf(e->api_version, sizeof(e->api_version), "%s", av);
      snprintf(e->subresource, sizeof(e->subresource), "%s", sub);
      cJSON_Delete(e->set);
      e->set = all;
    } else
      cJSON_Delete(all);
  }
  struct entry *me = entry_find(&es, manager, "Apply", av, sub);
  cJSON *previous = me ? cJSON_Duplicate(me->set, 1) : cJSON_CreateObject();
  cJSON *now_applied = cJSON_CreateObject();
  apply_value(now_applied, applied, &t, true);
  strip(now_applied, rt, sub);
  cJSON *others = cJSON_CreateObject();
  for(size_t i = 0; i < es.n; i++)
    if(&es.v[i] != me)
      set_union(others, es.v[i].set);

  cJSON *merged = merge(base, applied, &t);
  set_subtract(previous, now_applied);
  remove_paths(merged, previous, others, &t);
  cJSON *changed, *removed;
  compare(rt, sub, base, merged, &changed, &removed);

  struct conflict *cs = NULL;
  size_t ncs = 0;
  for(size_t i = 0; i < es.n; i++) {
    if(&es.v[i] == me)
      continue;
    cJSON *c = set_intersect(es.v[i].set, changed);
    if(set_empty(c)) {
      cJSON_Delete(c);
      continue;
    }
    if(force) {
      set_subtract(es.v[i].set, c);
      cJSON_Delete(c);
      continue;
    }
    struct conflict *v = realloc(cs, (ncs + 1) * sizeof(*cs));
    if(!v)
      abort();
    cs = v;
    print_manager(&es.v[i], cs[ncs].who, sizeof(cs[ncs].who));
    cs[ncs].paths = cJSON_CreateArray();
    struct strbuf prefix;
    strbuf_init(&prefix, 1 << 14);
    each_path(c, &prefix, cs[ncs].paths);
    strbuf_release(&prefix);
    ncs++;
    cJSON_Delete(c);
  }
  cJSON *st = NULL;
  if(ncs) {
    st = conflict_status(cs, ncs);
    cJSON_Delete(merged);
  } else {
    subtract_all(&es, removed, NULL);
    bool moved = !set_empty(changed) || !set_empty(removed);
    if(!me) {
      me = entry_add(&es);
      snprintf(me->manager, sizeof(me->manager), "%s", manager);
      snprintf(me->operation, sizeof(me->operation), "Apply");
      snprintf(me->subresource, sizeof(me->subresource), "%s", sub);
    }
    snprintf(me->api_version, sizeof(me->api_version), "%s", av);
    cJSON_Delete(me->set);
    me->set = now_applied;
    now_applied = NULL;
    if(moved)
      ls_now(me->time);
    entries_save(&es, merged);
    *out = merged;
  }
  for(size_t i = 0; i < ncs; i++)
    cJSON_Delete(cs[i].paths);
  free(cs);
  cJSON_Delete(now_applied);
  cJSON_Delete(previous);
  cJSON_Delete(others);
  cJSON_Delete(changed);
  cJSON_Delete(removed);
  cJSON_Delete(base);
  entries_free(&es);
  return st;
}

/* ---- the request ---- */

void ssa_manager(const struct ls_req *r, char *out, size_t len)
{
  const char *fm = req_param(r, "fieldManager");
  const char *ua = req_header(r, "User-Agent");
  size_t n = 0;
  if(fm && *fm)
    n = (size_t)snprintf(out, len, "%s", fm);
  else {
    for(const char *p = ua ? ua : ""; *p && *p != '/' && n + 1 < len && n < 128; p++)
      if((unsigned char)*p >= 0x20 && *p != 0x7f)
        out[n++] = *p;
    out[n] = '\0';
  }
  if(!n)
    snprintf(out, len, "unknown");
}

cJSON *ssa_check_options(const struct ls_req *r, const char *options_kind, bool apply)
{
  cJSON *causes = cJSON_CreateArray();
  const char *fm = req_param(r, "fieldManager");
  if(apply && (!fm || !*fm))
    rest_cause(causes, "FieldValueRequired", "fieldManager",
               "Required value: is required for apply patch");
  if(fm && strlen(fm) > 128)
    rest_cause(causes, "FieldValueTooLong", "fieldManager",
               "Too long: may not be more than 128 bytes");
  for(const char *p = fm ? fm : ""; *p; p++)
    if((unsigned char)*p < 0x20 || *p == 0x7f) {
      rest_cause(causes, "FieldValueInvalid", "fieldManager", "Invalid value: \"%s\": invalid "
                 "character %#x (at position %d)", fm, (unsigned)(unsigned char)*p,
                 (int)(p - fm));
      break;
    }
  if(!apply && req_param(r, "force"))
    rest_cause(causes, "FieldValueForbidden", "force",
               "Forbidden: may not be specified for non-apply patch");
  if(!cJSON_GetArraySize(causes)) {
    cJSON_Delete(causes);
    return NULL;
  }
  return ls_status_invalid("meta.k8s.io", options_kind, "", causes);
}
