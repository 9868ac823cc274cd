#include "yamlemit.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A string YAML would read back as the same string when written plain. */
static bool plain_ok(const char *s)
{
  static const char *const special[] = { "true", "false", "yes", "no", "on", "off", "y", "n",
                                         "null", "~", "True", "False", "Yes", "No", "On", "Off",
                                         "Y", "N", "Null", "NULL", "TRUE", "FALSE", NULL };
  if(!*s || isspace((unsigned char)s[0]) || isspace((unsigned char)s[strlen(s) - 1]))
    return false;
  if(strchr("-?:,[]{}#&*!|>'\"%@`.+0123456789", s[0]))
    return false;
  for(const char *const *p = special; *p; p++)
    if(!strcmp(s, *p))
      return false;
  for(const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if(c < 0x20 || c == '#' || c == '\\' || c == '"' || c >= 0x7f)
      return false;
    if(c == ':' && (p[1] == ' ' || !p[1]))
      return false;
  }
  return true;
}

static gw_rc scalar_str(struct strbuf *sb, const char *s)
{
  if(plain_ok(s))
    return strbuf_adds(sb, s);
  gw_rc rc = strbuf_addc(sb, '"');
  if(!rc)
    rc = strbuf_add_json_escaped(sb, s);
  if(!rc)
    rc = strbuf_addc(sb, '"');
  return rc;
}

static gw_rc scalar(struct strbuf *sb, const cJSON *v)
{
  if(cJSON_IsString(v))
    return scalar_str(sb, v->valuestring);
  if(cJSON_IsBool(v))
    return strbuf_adds(sb, cJSON_IsTrue(v) ? "true" : "false");
  if(cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if(d == floor(d) && fabs(d) < 1e15)
      return strbuf_addf(sb, "%lld", (long long)d);
    return strbuf_addf(sb, "%.17g", d);
  }
  if(cJSON_IsObject(v))
    return strbuf_adds(sb, "{}");
  if(cJSON_IsArray(v))
    return strbuf_adds(sb, "[]");
  return strbuf_adds(sb, "null");
}

static bool is_block(const cJSON *v)
{
  return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child;
}

static gw_rc indent(struct strbuf *sb, int n)
{
  gw_rc rc = GW_OK;
  for(int i = 0; i < n && !rc; i++)
    rc = strbuf_addc(sb, ' ');
  return rc;
}

static gw_rc emit(struct strbuf *sb, const cJSON *v, int ind, bool first_inline);

static gw_rc emit_object(struct strbuf *sb, const cJSON *v, int ind, bool first_inline)
{
  gw_rc rc = GW_OK;
  for(const cJSON *c = v->child; c && !rc; c = c->next) {
    if(!(first_inline && c == v->child))
      rc = indent(sb, ind);
    if(!rc)
      rc = scalar_str(sb, c->string);
    if(!rc)
      rc = strbuf_addc(sb, ':');
    if(!rc && is_block(c)) {
      rc = strbuf_addc(sb, '\n');
      if(!rc)
        rc = emit(sb, c, cJSON_IsArray(c) ? ind : ind + 2, false);
    } else if(!rc) {
      rc = strbuf_addc(sb, ' ');
      if(!rc)
        rc = scalar(sb, c);
      if(!rc)
        rc = strbuf_addc(sb, '\n');
    }
  }
  return rc;
}

static gw_rc emit(struct strbuf *sb, const cJSON *v, int ind, bool first_inline)
{
  if(cJSON_IsObject(v))
    return emit_object(sb, v, ind, first_inline);
  gw_rc rc = GW_OK;
  for(const cJSON *c = v->child; c && !rc; c = c->next) {
    if(!(first_inline && c == v->child))
      rc = indent(sb, ind);
    if(!rc)
      rc = strbuf_adds(sb, "- ");
    if(!rc && is_block(c))
      rc = emit(sb, c, ind + 2, true);
    else if(!rc) {
      rc = scalar(sb, c);
      if(!rc)
        rc = strbuf_addc(sb, '\n');
    }
  }
  return rc;
}

gw_rc yamlemit(struct strbuf *sb, const cJSON *v)
{
  if(!is_block(v)) {
    gw_rc rc = scalar(sb, v);
    return rc ? rc : strbuf_addc(sb, '\n');
  }
  return emit(sb, v, 0, false);
}
