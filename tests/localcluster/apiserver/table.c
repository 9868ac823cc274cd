/* table.c: meta.k8s.io Table answers (what `kubectl get` prints): the CRD's
 * additionalPrinterColumns through schema.c, the built-ins' usual columns (builtins_table.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

/* ---- JSONPath (the subset printer columns use) ---- */

static bool filter_match(const cJSON *el, const char *expr)
{
  /* @.key=="value" or @.key=='value' or @.key (exists) */
  if(strncmp(expr, "@.", 2))
    return false;
  expr += 2;
  const char *eq = strstr(expr, "==");
  char key[128];
  snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - expr) : (int)strlen(expr), expr);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(el, key);
  if(!eq)
    return v != NULL;
  const char *want = eq + 2;
  char wbuf[256];
  size_t n = strlen(want);
  if(n >= 2 && (want[0] == '"' || want[0] == '\'')) {
    snprintf(wbuf, sizeof(wbuf), "%.*s", (int)(n - 2), want + 1);
    return cJSON_IsString(v) && !strcmp(v->valuestring, wbuf);
  }
  if(cJSON_IsNumber(v))
    return v->valuedouble == atof(want);
  if(cJSON_IsBool(v))
    return (cJSON_IsTrue(v) && !strcmp(want, "true")) ||
           (cJSON_IsFalse(v) && !strcmp(want, "false"));
  return false;
}

/* Evaluates path on obj; the first result or NULL. */
static const cJSON *eval(const cJSON *obj, const char *p)
{
  if(!*p)
    return obj;
  if(!obj)
    return NULL;
  if(*p == '.') {
    p++;
    if(*p == '.' || !*p)
      return NULL;
    size_t n = strcspn(p, ".[");
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)n, p);
    if(!strcmp(key, "*")) {
      const cJSON *c;
      cJSON_ArrayForEach(c, obj)
      {
        const cJSON *r = eval(c, p + n);
        if(r)
          return r;
      }
      return NULL;
    }
    return eval(cJSON_GetObjectItemCaseSensitive(obj, key), p + n);
  }
  if(*p == '[') {
    const char *end = strchr(p, ']');
    if(!end)
      return NULL;
    char in[256];
    snprintf(in, sizeof(in), "%.*s", (int)(end - p - 1), p + 1);
    const char *rest = end + 1;
    if(in[0] == '\'' || in[0] == '"') {
      size_t n = strlen(in);
      in[n - 1] = '\0';
      return eval(cJSON_GetObjectItemCaseSensitive(obj, in + 1), rest);
    }
    if(!strcmp(in, "*") || in[0] == '?') {
      char expr[256] = "";
      if(in[0] == '?') {
        const char *e = in + 1;
        size_t n = strlen(e);
        if(e[0] == '(' && n >= 2 && e[n - 1] == ')')
          snprintf(expr, sizeof(expr), "%.*s", (int)(n - 2), e + 1);
      }
      const cJSON *c;
      cJSON_ArrayForEach(c, obj)
      {
        if(expr[0] && !filter_match(c, expr))
          continue;
        const cJSON *r = eval(c, rest);
        if(r)
          return r;
      }
      return NULL;
    }
    long idx = atol(in);
    int size = cJSON_GetArraySize(obj);
    if(idx < 0)
      idx += size;
    return eval(cJSON_GetArrayItem(obj, (int)idx), rest);
  }
  return NULL;
}

static const cJSON *jsonpath_find(const cJSON *obj, const char *path)
{
  char buf[512];
  size_t n = strlen(path);
  if(n >= 2 && path[0] == '{' && path[n - 1] == '}') {
    snprintf(buf, sizeof(buf), "%.*s", (int)(n - 2), path + 1);
    path = buf;
  }
  if(*path == '$')
    path++;
  return eval(obj, path);
}

char *table_jsonpath(const cJSON *obj, const char *path)
{
  const cJSON *v = jsonpath_find(obj, path);
  if(!v || cJSON_IsNull(v))
    return NULL;
  if(cJSON_IsString(v))
    return strdup(v->valuestring);
  if(cJSON_IsBool(v))
    return strdup(cJSON_IsTrue(v) ? "true" : "false");
  if(cJSON_IsNumber(v)) {
    char b[64];
    if(v->valuedouble == (double)(long long)v->valuedouble)
      snprintf(b, sizeof(b), "%lld", (long long)v->valuedouble);
    else
      snprintf(b, sizeof(b), "%g", v->valuedouble);
    return strdup(b);
  }
  return ls_print(v);
}

/* ---- cells ---- */

cJSON *tab_age(const cJSON *obj, const char *path)
{
  char *ts = table_jsonpath(obj, path);
  time_t t = ls_time_parse(ts);
  free(ts);
  if(t < 0)
    return cJSON_CreateString("<unknown>");
  char buf[32];
  ls_human_duration(time(NULL) - t, buf, sizeof(buf));
  return cJSON_CreateString(buf);
}

static cJSON *crd_cell(const cJSON *obj, const cJSON *col)
{
  const char *type = ls_str(col, "type");
  const cJSON *v = jsonpath_find(obj, ls_str(col, "jsonPath"));
  if(!v || cJSON_IsNull(v))
    return cJSON_CreateNull();
  if(!strcmp(type, "string")) {
    char *s = table_jsonpath(obj, ls_str(col, "jsonPath"));
    cJSON *c = cJSON_CreateString(s ? s : "");
    free(s);
    return c;
  }
  if(!strcmp(type, "integer"))
    return cJSON_IsNumber(v) ? cJSON_CreateNumber((double)(long long)v->valuedouble)
                             : cJSON_CreateNull();
  if(!strcmp(type, "number"))
    return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble) : cJSON_CreateNull();
  if(!strcmp(type, "boolean"))
    return cJSON_IsBool(v) ? cJSON_CreateBool(cJSON_IsTrue(v)) : cJSON_CreateNull();
  if(!strcmp(type, "date")) {
    if(!cJSON_IsString(v))
      return cJSON_CreateNull();
    time_t t = ls_time_parse(v->valuestring);
    if(t < 0)
      return cJSON_CreateString("<invalid>");
    char buf[32];
    ls_human_duration(time(NULL) - t, buf, sizeof(buf));
    return cJSON_CreateString(buf);
  }
  return cJSON_CreateNull();
}

void tab_column(cJSON *defs, const char *name, const char *type, const char *format,
                const char *desc, int priority)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "name", name);
  cJSON_AddStringToObject(c, "type", type);
  cJSON_AddStringToObject(c, "format", format ? format : "");
  cJSON_AddStringToObject(c, "description", desc ? desc : "");
  cJSON_AddNumberToObject(c, "priority", priority);
  cJSON_AddItemToArray(defs, c);
}

static void crd_columns(const cJSON *cols, cJSON *defs)
{
  tab_column(defs, "Name", "string", "name",
             "Name must be unique within a namespace. Is required when creating resources, "
             "although some resources may allow a client to request the generation of an "
             "appropriate name automatically. Name is primarily intended for creation "
             "idempotence and configuration definition. Cannot be updated. More info: "
             "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
             0);
  if(!cols) {
    tab_column(defs, "Age", "date", NULL, "", 0);
    return;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cols)
  {
    const cJSON *p = cJSON_GetObjectItem(c, "priority");
    tab_column(defs, ls_str(c, "name"), ls_str(c, "type"), ls_str(c, "format"),
               ls_str(c, "description"), cJSON_IsNumber(p) ? p->valueint : 0);
  }
}

static cJSON *crd_row(const cJSON *obj, const cJSON *cols)
{
  cJSON *cells = cJSON_CreateArray();
  cJSON_AddItemToArray(cells, cJSON_CreateString(ls_meta(obj, "name")));
  if(!cols) {
    cJSON_AddItemToArray(cells, tab_age(obj, ".metadata.creationTimestamp"));
    return cells;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cols)
    cJSON_AddItemToArray(cells, crd_cell(obj, c));
  return cells;
}

cJSON *table_build(const struct ls_rtype *rt, cJSON *const *objs, size_t n,
                   const char *include, const char *table_version)
{
  cJSON *t = cJSON_CreateObject();
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", table_version ? table_version : "v1");
  cJSON_AddStringToObject(t, "kind", "Table");
  cJSON_AddStringToObject(t, "apiVersion", av);
  cJSON_AddObjectToObject(t, "metadata");
  cJSON *defs = cJSON_AddArrayToObject(t, "columnDefinitions");
  cJSON *rows = cJSON_AddArrayToObject(t, "rows");
  const cJSON *cols = NULL;
  const struct tab_printer *pr = NULL;
  if(rt->crd) {
    cols = crd_printer_columns(rt->group, rt->resource, rt->version);
    crd_columns(cols, defs);
  } else {
    pr = tab_printer_for(rt);
    pr->columns(defs);
  }
  for(size_t i = 0; i < n; i++) {
    cJSON *row = cJSON_CreateObject();
    cJSON_AddItemToObject(row, "cells", rt->crd ? crd_row(objs[i], cols) : pr->row(objs[i]));
    if(!include || !*include || !strcmp(include, "Metadata"))
      cJSON_AddItemToObject(row, "object", partial(objs[i], table_version ? table_version : "v1"));
    else if(!strcmp(include, "Object"))
      cJSON_AddItemToObject(row, "object", cJSON_Duplicate(objs[i], 1));
    cJSON_AddItemToArray(rows, row);
  }
  return t;
}
