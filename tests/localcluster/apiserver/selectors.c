/* selectors.c: label selectors (=, ==, !=, in, notin, exists, !key, gt, lt) and field selectors
 * (=, ==, != on the field labels kube-apiserver supports per type). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum op { OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT };

struct req {
  enum op op;
  char *key;
  char **vals;
  size_t nvals;
};

struct ls_selector {
  struct req *labels;
  size_t nlabels;
  struct req *fields;
  size_t nfields;
  struct ls_rtype rt;
};

static void req_free(struct req *q)
{
  free(q->key);
  for(size_t i = 0; i < q->nvals; i++)
    free(q->vals[i]);
  free(q->vals);
}

void sel_free(struct ls_selector *s)
{
  if(!s)
    return;
  for(size_t i = 0; i < s->nlabels; i++)
    req_free(&s->labels[i]);
  for(size_t i = 0; i < s->nfields; i++)
    req_free(&s->fields[i]);
  free(s->labels);
  free(s->fields);
  free(s);
}

static char *dupn(const char *s, size_t n)
{
  while(n && isspace((unsigned char)*s)) {
    s++;
    n--;
  }
  while(n && isspace((unsigned char)s[n - 1]))
    n--;
  char *d = malloc(n + 1);
  if(!d)
    abort();
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static void push_val(struct req *q, char *v)
{
  q->vals = realloc(q->vals, (q->nvals + 1) * sizeof(*q->vals));
  if(!q->vals)
    abort();
  q->vals[q->nvals++] = v;
}

static struct req *push_req(struct req **v, size_t *n)
{
  *v = realloc(*v, (*n + 1) * sizeof(**v));
  if(!*v)
    abort();
  memset(&(*v)[*n], 0, sizeof(**v));
  return &(*v)[(*n)++];
}

static bool valid_key(const char *k)
{
  if(!*k)
    return false;
  for(const char *p = k; *p; p++)
    if(!(isalnum((unsigned char)*p) || strchr("-_./", *p)))
      return false;
  return true;
}

/* One requirement of a label selector, s[0..n). */
static int parse_label_req(const char *s, size_t n, struct req *q)
{
  char *t = dupn(s, n);
  char *p = t;
  int rc = 0;
  if(*p == '!') {
    q->op = OP_NOTEXISTS;
    q->key = dupn(p + 1, strlen(p + 1));
    rc = valid_key(q->key) ? 0 : -1;
    free(t);
    return rc;
  }
  size_t klen = strcspn(p, "=!<> \t(");
  q->key = dupn(p, klen);
  char *rest = p + klen;
  while(isspace((unsigned char)*rest))
    rest++;
  if(!*rest) {
    q->op = OP_EXISTS;
  } else if(!strncmp(rest, "==", 2) || !strncmp(rest, "!=", 2) || *rest == '=' || *rest == '>' ||
            *rest == '<') {
    q->op = rest[0] == '!' ? OP_NE : rest[0] == '>' ? OP_GT : rest[0] == '<' ? OP_LT : OP_EQ;
    rest += (rest[1] == '=') ? 2 : 1;
    push_val(q, dupn(rest, strlen(rest)));
  } else if(!strncmp(rest, "in", 2) || !strncmp(rest, "notin", 5)) {
    q->op = rest[0] == 'i' ? OP_IN : OP_NOTIN;
    rest += q->op == OP_IN ? 2 : 5;
    while(isspace((unsigned char)*rest))
      rest++;
    size_t len = strlen(rest);
    if(*rest != '(' || len < 2 || rest[len - 1] != ')')
      rc = -1;
    else {
      rest[len - 1] = '\0';
      char *save = NULL;
      for(char *v = strtok_r(rest + 1, ",", &save); v; v = strtok_r(NULL, ",", &save))
        push_val(q, dupn(v, strlen(v)));
    }
  } else
    rc = -1;
  if(!valid_key(q->key))
    rc = -1;
  free(t);
  return rc;
}

static cJSON *bad(const char *what, const char *sel)
{
  return ls_status(400, "BadRequest", NULL, "unable to parse requirement: %s: \"%s\"", what, sel);
}

static cJSON *parse_labels(const char *s, struct ls_selector *out)
{
  size_t i = 0, start = 0;
  int depth = 0;
  size_t len = strlen(s);
  for(; i <= len; i++) {
    if(s[i] == '(')
      depth++;
    else if(s[i] == ')')
      depth--;
    if((s[i] == ',' && depth == 0) || s[i] == '\0') {
      bool blank = true;
      for(size_t k = start; k < i; k++)
        if(!isspace((unsigned char)s[k]))
          blank = false;
      if(!blank) {
        struct req *q = push_req(&out->labels, &out->nlabels);
        if(parse_label_req(s + start, i - start, q))
          return bad("invalid label selector", s);
      }
      start = i + 1;
    }
  }
  return NULL;
}

/* Field selector terms: k=v, k==v, k!=v; backslash escapes. */
static cJSON *parse_fields(const char *s, struct ls_selector *out, const struct ls_rtype *rt)
{
  const char *p = s;
  while(*p) {
    char term[1024];
    size_t j = 0;
    while(*p && *p != ',' && j + 2 < sizeof(term)) {
      if(*p == '\\' && p[1]) {
        term[j++] = *p++;
      }
      term[j++] = *p++;
    }
    term[j] = '\0';
    if(*p == ',')
      p++;
    if(!j)
      continue;
    struct req *q = push_req(&out->fields, &out->nfields);
    char *ne = strstr(term, "!=");
    char *eq = strchr(term, '=');
    char *op = ne && (!eq || ne < eq) ? ne : eq;
    if(!op)
      return ls_status(400, "BadRequest", NULL, "invalid selector: '%s'; can't understand '%s'",
                       s, term);
    q->op = op == ne ? OP_NE : OP_EQ;
    q->key = dupn(term, (size_t)(op - term));
    const char *v = op + (op == ne || op[1] == '=' ? 2 : 1);
    char val[1024];
    size_t k = 0;
    for(; *v && k + 1 < sizeof(val); v++) {
      if(*v == '\\' && v[1])
        v++;
      val[k++] = *v;
    }
    val[k] = '\0';
    push_val(q, dupn(val, k));
    char buf[64];
    struct ls_rtype probe = *rt;
    cJSON *empty = cJSON_CreateObject();
    const char *known = sel_field_value(&probe, empty, q->key, buf, sizeof(buf));
    cJSON_Delete(empty);
    if(!known) {
      if(rt->crd)
        return ls_status(400, "BadRequest", NULL,
                         "\"%s\" is not a known field selector: only \"metadata.name\", "
                         "\"metadata.namespace\"", q->key);
      return ls_status(400, "BadRequest", NULL, "field label not supported: %s", q->key);
    }
  }
  return NULL;
}

cJSON *sel_parse(const struct ls_rtype *rt, const char *labels, const char *fields,
                 struct ls_selector **out)
{
  struct ls_selector *s = calloc(1, sizeof(*s));
  if(!s)
    abort();
  s->rt = *rt;
  cJSON *st = NULL;
  if(labels && *labels)
    st = parse_labels(labels, s);
  if(!st && fields && *fields)
    st = parse_fields(fields, s, rt);
  if(st) {
    sel_free(s);
    *out = NULL;
    return st;
  }
  *out = s;
  return NULL;
}

static bool match_req(const struct req *q, const char *val)
{
  switch(q->op) {
  case OP_EXISTS:
    return val != NULL;
  case OP_NOTEXISTS:
    return val == NULL;
  case OP_EQ:
    return val && !strcmp(val, q->vals[0]);
  case OP_NE:
    return !val || strcmp(val, q->vals[0]);
  case OP_IN:
    for(size_t i = 0; val && i < q->nvals; i++)
      if(!strcmp(val, q->vals[i]))
        return true;
    return false;
  case OP_NOTIN:
    for(size_t i = 0; val && i < q->nvals; i++)
      if(!strcmp(val, q->vals[i]))
        return false;
    return true;
  case OP_GT:
  case OP_LT: {
    if(!val)
      return false;
    char *e1, *e2;
    long long a = strtoll(val, &e1, 10), b = strtoll(q->vals[0], &e2, 10);
    if(*e1 || *e2)
      return false;
    return q->op == OP_GT ? a > b : a < b;
  }
  }
  return false;
}

bool sel_match(const struct ls_selector *s, const cJSON *obj)
{
  if(!s)
    return true;
  const cJSON *labels =
    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
  for(size_t i = 0; i < s->nlabels; i++) {
    const char *v =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, s->labels[i].key));
    if(!match_req(&s->labels[i], v))
      return false;
  }
  for(size_t i = 0; i < s->nfields; i++) {
    char buf[512];
    const char *v = sel_field_value(&s->rt, obj, s->fields[i].key, buf, sizeof(buf));
    if(!match_req(&s->fields[i], v ? v : ""))
      return false;
  }
  return true;
}

static const char *path_str(const cJSON *obj, const char *a, const char *b, char *buf,
                            size_t len)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);
  if(b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  if(cJSON_IsString(v))
    return v->valuestring;
  if(cJSON_IsNumber(v)) {
    snprintf(buf, len, "%lld", (long long)v->valuedouble);
    return buf;
  }
  if(cJSON_IsBool(v))
    return cJSON_IsTrue(v) ? "true" : "false";
  return "";
}

struct field_map {
  const char *group, *resource, *label, *a, *b;
};

/* Field labels beyond metadata.name and metadata.namespace, on the stored form. */
static const struct field_map fields[] = {
  { "", "pods", "spec.nodeName", "spec", "nodeName" },
  { "", "pods", "spec.restartPolicy", "spec", "restartPolicy" },
  { "", "pods", "spec.schedulerName", "spec", "schedulerName" },
  { "", "pods", "spec.serviceAccountName", "spec", "serviceAccountName" },
  { "", "pods", "spec.hostNetwork", "spec", "hostNetwork" },
  { "", "pods", "status.phase", "status", "phase" },
  { "", "pods", "status.podIP", "status", "podIP" },
  { "", "pods", "status.nominatedNodeName", "status", "nominatedNodeName" },
  { "", "events", "involvedObject.kind", "involvedObject", "kind" },
  { "", "events", "involvedObject.namespace", "involvedObject", "namespace" },
  { "", "events", "involvedObject.name", "involvedObject", "name" },
  { "", "events", "involvedObject.uid", "involvedObject", "uid" },
  { "", "events", "involvedObject.apiVersion", "involvedObject", "apiVersion" },
  { "", "events", "involvedObject.resourceVersion", "involvedObject", "resourceVersion" },
  { "", "events", "involvedObject.fieldPath", "involvedObject", "fieldPath" },
  { "", "events", "regarding.kind", "involvedObject", "kind" },
  { "", "events", "regarding.namespace", "involvedObject", "namespace" },
  { "", "events", "regarding.name", "involvedObject", "name" },
  { "", "events", "regarding.uid", "involvedObject", "uid" },
  { "", "events", "regarding.apiVersion", "involvedObject", "apiVersion" },
  { "", "events", "regarding.resourceVersion", "involvedObject", "resourceVersion" },
  { "", "events", "regarding.fieldPath", "involvedObject", "fieldPath" },
  { "", "events", "reason", "reason", NULL },
  { "", "events", "reportingComponent", "reportingComponent", NULL },
  { "", "events", "reportingController", "reportingComponent", NULL },
  { "", "events", "source", "source", "component" },
  { "", "events", "type", "type", NULL },
  { "", "secrets", "type", "type", NULL },
  { "", "namespaces", "status.phase", "status", "phase" },
  { "", "nodes", "spec.unschedulable", "spec", "unschedulable" },
  { "batch", "jobs", "status.successful", "status", "successful" },
  { "", "persistentvolumeclaims", "spec.volumeName", "spec", "volumeName" },
};

const char *sel_field_value(const struct ls_rtype *rt, const cJSON *obj, const char *label,
                            char *buf, size_t len)
{
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  if(!strcmp(label, "metadata.name"))
    return path_str(meta, "name", NULL, buf, len);
  if(!strcmp(label, "metadata.namespace"))
    return path_str(meta, "namespace", NULL, buf, len);
  for(size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    const struct field_map *f = &fields[i];
    if(!strcmp(f->group, rt->store_group) && !strcmp(f->resource, rt->store_resource) &&
       !strcmp(f->label, label)) {
      const char *v = path_str(obj, f->a, f->b, buf, len);
      if(!strcmp(label, "spec.unschedulable") && !*v)
        return "false";
      return v;
    }
  }
  return NULL;
}

bool sel_match_label_selector(const cJSON *selector, const cJSON *labels)
{
  if(!selector)
    return true;
  const cJSON *kv;
  cJSON_ArrayForEach(kv, cJSON_GetObjectItemCaseSensitive(selector, "matchLabels"))
  {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, kv->string));
    if(!v || !cJSON_IsString(kv) || strcmp(v, kv->valuestring))
      return false;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(selector, "matchExpressions"))
  {
    const char *key = ls_str(e, "key");
    const char *op = ls_str(e, "operator");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, key));
    bool in = false;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "values"))
    {
      if(v && cJSON_IsString(x) && !strcmp(x->valuestring, v))
        in = true;
    }
    if((!strcmp(op, "In") && !in) || (!strcmp(op, "NotIn") && in) ||
       (!strcmp(op, "Exists") && !v) || (!strcmp(op, "DoesNotExist") && v))
      return false;
  }
  return true;
}
