#include "jsonpatch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

gw_rc jsonpointer_append(struct strbuf *sb, const char *token)
{
  gw_rc rc = strbuf_addc(sb, '/');
  while(!rc && *token) {
    size_t run = strcspn(token, "~/"); /* copied whole up to a byte to escape */
    rc = strbuf_add(sb, token, run);
    token += run;
    if(!rc && *token) {
      rc = strbuf_add(sb, *token == '~' ? "~0" : "~1", 2);
      token++;
    }
  }
  return rc;
}

static gw_rc add_op(cJSON *ops, const char *op, const char *path, const cJSON *value)
{
  cJSON *o = cJSON_CreateObject();
  if(!o || !cJSON_AddStringToObject(o, "op", op) || !cJSON_AddStringToObject(o, "path", path)) {
    cJSON_Delete(o);
    return GW_ENOMEM;
  }
  if(value) {
    cJSON *dup = cJSON_Duplicate(value, 1);
    if(!dup || !cJSON_AddItemToObject(o, "value", dup)) {
      cJSON_Delete(dup);
      cJSON_Delete(o);
      return GW_ENOMEM;
    }
  }
  cJSON_AddItemToArray(ops, o);
  return GW_OK;
}

/* Finds the member of obj named like m: first at the cursor (members usually come in the
 * same order on both sides, defaulting appends), else through an index built on first need,
 * so a wide object costs n log n, not n^2. Advances the cursor past what it found. */
struct finder {
  const cJSON *obj, *cur;
  struct json_index ix;
  bool indexed;
};

static const cJSON *find(struct finder *f, const cJSON *m)
{
  const cJSON *c = f->cur;
  if(!(c && c->string && m->string && !strcmp(c->string, m->string))) {
    if(!f->indexed) {
      (void)json_index_init(&f->ix, f->obj); /* without memory, lookups are linear */
      f->indexed = true;
    }
    c = json_index_get(&f->ix, m->string);
  }
  if(c)
    f->cur = c->next;
  return c;
}

static void finder_release(struct finder *f)
{
  if(f->indexed)
    json_index_release(&f->ix);
}

static gw_rc diff(cJSON *ops, struct strbuf *path, const cJSON *a, const cJSON *b)
{
  /* two objects are walked member by member (equal ones yield no operation): comparing them
   * whole first would compare every level again at each level below it */
  if(!cJSON_IsObject(a) || !cJSON_IsObject(b))
    return json_equal(a, b) ? GW_OK : add_op(ops, "replace", strbuf_str(path), b);
  gw_rc rc = GW_OK;
  size_t base = path->len;
  struct finder in_b = { b, b->child, { 0 }, false }, in_a = { a, a->child, { 0 }, false };
  for(const cJSON *x = a->child; x && !rc; x = x->next) {
    const cJSON *y = find(&in_b, x);
    /* the member's path is written only when an operation or a level below may need it */
    if(y && !(cJSON_IsObject(x) && cJSON_IsObject(y)) && json_equal(x, y))
      continue;
    rc = jsonpointer_append(path, x->string);
    if(!rc)
      rc = y ? diff(ops, path, x, y) : add_op(ops, "remove", strbuf_str(path), NULL);
    path->len = base;
    if(path->buf)
      path->buf[base] = '\0';
  }
  for(const cJSON *y = b->child; y && !rc; y = y->next) {
    if(find(&in_a, y))
      continue;
    rc = jsonpointer_append(path, y->string);
    if(!rc)
      rc = add_op(ops, "add", strbuf_str(path), y);
    path->len = base;
    if(path->buf)
      path->buf[base] = '\0';
  }
  finder_release(&in_a);
  finder_release(&in_b);
  return rc;
}

cJSON *jsonpatch_diff(const cJSON *from, const cJSON *to)
{
  cJSON *ops = cJSON_CreateArray();
  struct strbuf path;
  strbuf_init(&path, 1u << 20);
  if(ops && diff(ops, &path, from, to)) {
    cJSON_Delete(ops);
    ops = NULL;
  }
  strbuf_release(&path);
  return ops;
}

/* Decodes the next reference token of pointer *p into tok; advances *p. */
static gw_rc next_token(const char **p, char *tok, size_t toklen)
{
  const char *s = *p;
  if(*s != '/')
    return GW_EPARSE;
  s++;
  size_t n = 0;
  while(*s && *s != '/') {
    char c = *s++;
    if(c == '~') {
      if(*s == '0')
        c = '~';
      else if(*s == '1')
        c = '/';
      else
        return GW_EPARSE;
      s++;
    }
    if(n + 1 >= toklen)
      return GW_ETOOBIG;
    tok[n++] = c;
  }
  tok[n] = '\0';
  *p = s;
  return GW_OK;
}

/* Array index: "-" (end, only for add) or a decimal without leading zeros. */
static int array_index(const char *tok, int size, bool allow_end)
{
  if(allow_end && strcmp(tok, "-") == 0)
    return size;
  if(!*tok || (tok[0] == '0' && tok[1]) || strspn(tok, "0123456789") != strlen(tok))
    return -1;
  errno = 0;
  long v = strtol(tok, NULL, 10);
  if(errno || v > size)
    return -1;
  return (int)v;
}

static gw_rc apply_one(cJSON **doc, const cJSON *op, char *err, size_t errlen)
{
  const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "op"));
  const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path"));
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value");
  if(!kind || !path) {
    snprintf(err, errlen, "patch operation without \"op\" or \"path\"");
    return GW_EPARSE;
  }
  bool is_add = !strcmp(kind, "add"), is_rm = !strcmp(kind, "remove");
  bool is_rep = !strcmp(kind, "replace"), is_test = !strcmp(kind, "test");
  if(!is_add && !is_rm && !is_rep && !is_test) {
    snprintf(err, errlen, "unsupported patch operation \"%s\"", kind);
    return GW_EUNSUPPORTED;
  }
  if(!is_rm && !value) {
    snprintf(err, errlen, "patch operation \"%s\" on \"%s\" without a value", kind, path);
    return GW_EPARSE;
  }
  if(!*path) { /* the whole document */
    if(is_test)
      return json_equal(*doc, value) ? GW_OK : GW_ECONFLICT;
    if(is_rm) {
      snprintf(err, errlen, "cannot remove the whole document");
      return GW_EINVAL;
    }
    cJSON *dup = cJSON_Duplicate(value, 1);
    if(!dup)
      return GW_ENOMEM;
    cJSON_Delete(*doc);
    *doc = dup;
    return GW_OK;
  }
  cJSON *parent = *doc;
  const char *p = path;
  char tok[1024];
  for(;;) {
    gw_rc rc = next_token(&p, tok, sizeof(tok));
    if(rc) {
      snprintf(err, errlen, "malformed JSON pointer \"%s\"", path);
      return rc;
    }
    if(!*p)
      break;
    cJSON *next = NULL;
    if(cJSON_IsObject(parent))
      next = cJSON_GetObjectItemCaseSensitive(parent, tok);
    else if(cJSON_IsArray(parent)) {
      int i = array_index(tok, cJSON_GetArraySize(parent), false);
      next = i >= 0 ? cJSON_GetArrayItem(parent, i) : NULL;
    }
    if(!next) {
      snprintf(err, errlen, "path \"%s\" does not exist", path);
      return GW_ENOTFOUND;
    }
    parent = next;
  }
  cJSON *dup = NULL;
  if(!is_rm && !is_test && !(dup = cJSON_Duplicate(value, 1)))
    return GW_ENOMEM;
  if(cJSON_IsObject(parent)) {
    cJSON *cur = cJSON_GetObjectItemCaseSensitive(parent, tok);
    if(is_test) {
      if(cur && json_equal(cur, value))
        return GW_OK;
      snprintf(err, errlen, "test failed at \"%s\"", path);
      return GW_ECONFLICT;
    }
    if((is_rm || is_rep) && !cur) {
      cJSON_Delete(dup);
      snprintf(err, errlen, "path \"%s\" does not exist", path);
      return GW_ENOTFOUND;
    }
    if(is_rm)
      cJSON_DeleteItemFromObjectCaseSensitive(parent, tok);
    else if(cur)
      cJSON_ReplaceItemInObjectCaseSensitive(parent, tok, dup);
    else
      cJSON_AddItemToObject(parent, tok, dup);
    return GW_OK;
  }
  if(cJSON_IsArray(parent)) {
    int size = cJSON_GetArraySize(parent);
    int i = array_index(tok, size, is_add);
    if(i < 0 || (!is_add && i >= size)) {
      cJSON_Delete(dup);
      snprintf(err, errlen, "array index out of range at \"%s\"", path);
      return GW_ENOTFOUND;
    }
    if(is_test) {
      if(json_equal(cJSON_GetArrayItem(parent, i), value))
        return GW_OK;
      snprintf(err, errlen, "test failed at \"%s\"", path);
      return GW_ECONFLICT;
    }
    if(is_rm)
      cJSON_DeleteItemFromArray(parent, i);
    else if(is_rep)
      cJSON_ReplaceItemInArray(parent, i, dup);
    else if(i == size)
      cJSON_AddItemToArray(parent, dup);
    else
      cJSON_InsertItemInArray(parent, i, dup);
    return GW_OK;
  }
  cJSON_Delete(dup);
  snprintf(err, errlen, "path \"%s\" goes through a scalar", path);
  return GW_ENOTFOUND;
}

gw_rc jsonpatch_apply(cJSON **doc, const cJSON *patch, char *errbuf, size_t errlen)
{
  if(!cJSON_IsArray(patch)) {
    snprintf(errbuf, errlen, "a JSON patch must be an array of operations");
    return GW_EPARSE;
  }
  cJSON *work = cJSON_Duplicate(*doc, 1);
  if(!work)
    return GW_ENOMEM;
  const cJSON *op;
  cJSON_ArrayForEach(op, patch)
  {
    gw_rc rc = apply_one(&work, op, errbuf, errlen);
    if(rc) {
      cJSON_Delete(work);
      return rc;
    }
  }
  cJSON_Delete(*doc);
  *doc = work;
  return GW_OK;
}
