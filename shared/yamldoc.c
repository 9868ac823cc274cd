#include "yamldoc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_ANCHORS 256
#define MAX_DEPTH 100
/* Nodes that anchors and aliases may copy in one stream: expanding aliases of aliases grows
 * exponentially (a "billion laughs" document of a few hundred bytes), so copies are budgeted. */
#define MAX_ALIAS_NODES 1000000

/* An anchored node is kept as a private copy: the node itself may be freed before an alias
 * names it (a later duplicate key replaces it, a null document is dropped). */
struct anchor {
  char *name;
  cJSON *node;
  size_t nodes;  /* size of node, charged to the budget at each alias */
  int height;    /* nesting levels of node, added to the depth of each alias */
};

struct ctx {
  yaml_parser_t p;
  struct anchor anchors[MAX_ANCHORS];
  size_t nanchors;
  size_t alias_nodes; /* nodes copied so far for anchors and aliases */
  char *err;
  size_t errlen;
};

static bool in_list(const char *s, const char *const *list)
{
  for(; *list; list++)
    if(!strcmp(s, *list))
      return true;
  return false;
}

static bool is_int(const char *s, double *out)
{
  const char *p = s;
  char *end;
  if(*p == '+' || *p == '-')
    p++;
  if(!strncmp(p, "0x", 2) && isxdigit((unsigned char)p[2])) { /* no second sign */
    long long v = strtoll(p + 2, &end, 16);
    if(*end)
      return false;
    *out = (double)(s[0] == '-' ? -v : v);
    return true;
  }
  if(!strncmp(p, "0o", 2) && isdigit((unsigned char)p[2])) {
    long long v = strtoll(p + 2, &end, 8);
    if(*end)
      return false;
    *out = (double)(s[0] == '-' ? -v : v);
    return true;
  }
  if(!*p)
    return false;
  for(const char *q = p; *q; q++)
    if(!isdigit((unsigned char)*q))
      return false;
  *out = strtod(s, NULL);
  return true;
}

static bool is_float(const char *s, double *out)
{
  const char *p = s;
  if(*p == '+' || *p == '-')
    p++;
  bool digits = false;
  while(isdigit((unsigned char)*p)) {
    p++;
    digits = true;
  }
  if(*p == '.') {
    p++;
    while(isdigit((unsigned char)*p)) {
      p++;
      digits = true;
    }
  }
  if(!digits)
    return false;
  if(*p == 'e' || *p == 'E') {
    p++;
    if(*p == '+' || *p == '-')
      p++;
    if(!isdigit((unsigned char)*p))
      return false;
    while(isdigit((unsigned char)*p))
      p++;
  }
  if(*p)
    return false;
  *out = strtod(s, NULL);
  return true;
}

static cJSON *scalar(const yaml_event_t *ev)
{
  const char *s = (const char *)ev->data.scalar.value;
  const char *tag = (const char *)ev->data.scalar.tag;
  bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if(tag && !strcmp(tag, YAML_STR_TAG))
    return cJSON_CreateString(s);
  if(!plain && !tag)
    return cJSON_CreateString(s);
  static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
  static const char *const trues[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On",
                                       "ON", "y", "Y", NULL };
  static const char *const falses[] = { "false", "False", "FALSE", "no", "No", "NO", "off",
                                        "Off", "OFF", "n", "N", NULL };
  double d;
  if(in_list(s, nulls))
    return cJSON_CreateNull();
  if(in_list(s, trues))
    return cJSON_CreateTrue();
  if(in_list(s, falses))
    return cJSON_CreateFalse();
  if(is_int(s, &d) || is_float(s, &d))
    return cJSON_CreateNumber(d);
  return cJSON_CreateString(s);
}

static gw_rc fail_at(struct ctx *c, const yaml_event_t *ev, const char *what)
{
  snprintf(c->err, c->errlen, "%s at line %zu, column %zu", what, ev->start_mark.line + 1,
           ev->start_mark.column + 1);
  return GW_EPARSE;
}

static gw_rc next(struct ctx *c, yaml_event_t *ev)
{
  if(!yaml_parser_parse(&c->p, ev)) {
    snprintf(c->err, c->errlen, "YAML: %s at line %zu, column %zu",
             c->p.problem ? c->p.problem : "syntax error", c->p.problem_mark.line + 1,
             c->p.problem_mark.column + 1);
    return GW_EPARSE;
  }
  return GW_OK;
}

static size_t measure(const cJSON *v, int *height)
{
  size_t n = 1;
  int h = 0;
  for(const cJSON *ch = v->child; ch; ch = ch->next) {
    int hc;
    n += measure(ch, &hc);
    if(hc > h)
      h = hc;
  }
  *height = h + 1;
  return n;
}

static gw_rc remember(struct ctx *c, const yaml_event_t *ev, const yaml_char_t *anchor,
                      const cJSON *node)
{
  if(!anchor || !node)
    return GW_OK;
  if(c->nanchors >= MAX_ANCHORS)
    return fail_at(c, ev, "more than 256 anchors");
  struct anchor *a = &c->anchors[c->nanchors];
  a->nodes = measure(node, &a->height);
  if(a->nodes > MAX_ALIAS_NODES - c->alias_nodes)
    return fail_at(c, ev, "anchors and aliases copy too many nodes");
  c->alias_nodes += a->nodes;
  a->name = strdup((const char *)anchor);
  a->node = cJSON_Duplicate(node, 1);
  if(!a->name || !a->node) {
    free(a->name);
    cJSON_Delete(a->node);
    return GW_ENOMEM;
  }
  c->nanchors++;
  return GW_OK;
}

static gw_rc node(struct ctx *c, yaml_event_t *ev, cJSON **out, int depth);

static gw_rc collection(struct ctx *c, bool mapping, cJSON *coll, int depth)
{
  for(;;) {
    yaml_event_t ev;
    gw_rc rc = next(c, &ev);
    if(rc)
      return rc;
    if(ev.type == (mapping ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
      yaml_event_delete(&ev);
      return GW_OK;
    }
    if(!mapping) {
      cJSON *item;
      rc = node(c, &ev, &item, depth + 1);
      if(rc)
        return rc;
      cJSON_AddItemToArray(coll, item);
      continue;
    }
    if(ev.type != YAML_SCALAR_EVENT) {
      rc = fail_at(c, &ev, "mapping keys must be scalars");
      yaml_event_delete(&ev);
      return rc;
    }
    char *key = strdup((const char *)ev.data.scalar.value);
    yaml_event_delete(&ev);
    if(!key)
      return GW_ENOMEM;
    yaml_event_t vev;
    rc = next(c, &vev);
    cJSON *val = NULL;
    if(!rc)
      rc = node(c, &vev, &val, depth + 1);
    if(rc) {
      free(key);
      return rc;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(coll, key); /* the last duplicate wins, as in Go */
    cJSON_AddItemToObject(coll, key, val);
    free(key);
  }
}

/* Builds the node that starts with ev (consumed). */
static gw_rc node(struct ctx *c, yaml_event_t *ev, cJSON **out, int depth)
{
  gw_rc rc = GW_OK;
  *out = NULL;
  if(depth > MAX_DEPTH) {
    rc = fail_at(c, ev, "YAML nested too deeply");
    yaml_event_delete(ev);
    return rc;
  }
  switch(ev->type) {
  case YAML_SCALAR_EVENT:
    *out = scalar(ev);
    rc = remember(c, ev, ev->data.scalar.anchor, *out);
    break;
  case YAML_ALIAS_EVENT: {
    const char *name = (const char *)ev->data.alias.anchor;
    const struct anchor *a = NULL;
    for(size_t i = c->nanchors; i-- > 0 && !a;)
      if(!strcmp(c->anchors[i].name, name))
        a = &c->anchors[i];
    if(!a)
      rc = fail_at(c, ev, "unknown alias");
    else if(depth + a->height > MAX_DEPTH)
      rc = fail_at(c, ev, "YAML nested too deeply (through an alias)");
    else if(a->nodes > MAX_ALIAS_NODES - c->alias_nodes)
      rc = fail_at(c, ev, "anchors and aliases copy too many nodes");
    else {
      c->alias_nodes += a->nodes;
      *out = cJSON_Duplicate(a->node, 1);
    }
    break;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    bool mapping = ev->type == YAML_MAPPING_START_EVENT;
    *out = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
    const yaml_char_t *anchor = mapping ? ev->data.mapping_start.anchor
                                        : ev->data.sequence_start.anchor;
    char *a = anchor ? strdup((const char *)anchor) : NULL;
    yaml_mark_t start = ev->start_mark;
    yaml_event_delete(ev);
    rc = collection(c, mapping, *out, depth);
    if(!rc) {
      yaml_event_t at = { .start_mark = start };
      rc = remember(c, &at, (const yaml_char_t *)a, *out);
    }
    free(a);
    if(rc) {
      cJSON_Delete(*out);
      *out = NULL;
    }
    return rc;
  }
  default:
    rc = fail_at(c, ev, "unexpected YAML event");
  }
  yaml_event_delete(ev);
  if(!rc && !*out)
    rc = GW_ENOMEM;
  return rc;
}

gw_rc yamldoc_parse(const char *text, size_t len, cJSON **docs, char *err, size_t errlen)
{
  struct ctx c;
  memset(&c, 0, sizeof(c));
  c.err = err;
  c.errlen = errlen;
  *docs = NULL;
  if(!yaml_parser_initialize(&c.p))
    return GW_ENOMEM;
  yaml_parser_set_input_string(&c.p, (const unsigned char *)text, len);
  cJSON *arr = cJSON_CreateArray();
  gw_rc rc = arr ? GW_OK : GW_ENOMEM;
  bool done = false;
  while(!rc && !done) {
    yaml_event_t ev;
    rc = next(&c, &ev);
    if(rc)
      break;
    if(ev.type == YAML_STREAM_END_EVENT)
      done = true;
    else if(ev.type == YAML_DOCUMENT_START_EVENT || ev.type == YAML_STREAM_START_EVENT ||
            ev.type == YAML_DOCUMENT_END_EVENT) {
      /* structure only */
    } else {
      cJSON *doc;
      rc = node(&c, &ev, &doc, 0);
      if(!rc && !cJSON_IsNull(doc))
        cJSON_AddItemToArray(arr, doc);
      else
        cJSON_Delete(doc);
      continue;
    }
    yaml_event_delete(&ev);
  }
  for(size_t i = 0; i < c.nanchors; i++) {
    free(c.anchors[i].name);
    cJSON_Delete(c.anchors[i].node);
  }
  yaml_parser_delete(&c.p);
  if(rc) {
    cJSON_Delete(arr);
    return rc;
  }
  *docs = arr;
  return GW_OK;
}

gw_rc yamldoc_parse_file(const char *path, cJSON **docs, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if(!f) {
    snprintf(err, errlen, "cannot open \"%s\"", path);
    return GW_ENOTFOUND;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for(;;) {
    if(len + 65536 > cap) {
      cap = cap ? cap * 2 : 131072;
      if(cap > (64u << 20)) {
        free(buf);
        fclose(f);
        snprintf(err, errlen, "\"%s\" is larger than 64 MiB", path);
        return GW_ETOOBIG;
      }
      char *nb = realloc(buf, cap);
      if(!nb) {
        free(buf);
        fclose(f);
        return GW_ENOMEM;
      }
      buf = nb;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if(n == 0)
      break;
  }
  fclose(f);
  char perr[200];
  gw_rc rc = yamldoc_parse(buf ? buf : "", len, docs, perr, sizeof(perr));
  if(rc)
    snprintf(err, errlen, "%s: %s", path, perr);
  free(buf);
  return rc;
}
