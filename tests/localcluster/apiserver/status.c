#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "strbuf.h"

cJSON *ls_status(int code, const char *reason, cJSON *details, const char *fmt, ...)
{
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "kind", "Status");
  cJSON_AddStringToObject(s, "apiVersion", "v1");
  cJSON_AddItemToObject(s, "metadata", cJSON_CreateObject());
  cJSON_AddStringToObject(s, "status", "Failure");
  cJSON_AddStringToObject(s, "message", msg);
  cJSON_AddStringToObject(s, "reason", reason);
  if(details)
    cJSON_AddItemToObject(s, "details", details);
  cJSON_AddNumberToObject(s, "code", code);
  return s;
}

cJSON *ls_status_invalid(const char *group, const char *kind, const char *name, cJSON *causes)
{
  struct strbuf sb;
  strbuf_init(&sb, 16384);
  gw_rc rc = strbuf_addf(&sb, "%s%s%s \"%s\" is invalid: ", kind, *group ? "." : "", group, name);
  int n = cJSON_GetArraySize(causes);
  if(!rc && n > 1)
    rc = strbuf_addc(&sb, '[');
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, causes)
  {
    const char *f = cJSON_GetStringValue(cJSON_GetObjectItem(c, "field"));
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
    if(!rc)
      rc = strbuf_addf(&sb, "%s%s: %s", i++ ? ", " : "", f ? f : "", m ? m : "");
  }
  if(!rc && n > 1)
    rc = strbuf_addc(&sb, ']');
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "name", name);
  cJSON_AddStringToObject(d, "group", group);
  cJSON_AddStringToObject(d, "kind", kind);
  cJSON_AddItemToObject(d, "causes", causes);
  cJSON *s = ls_status(422, "Invalid", d, "%s", rc ? "invalid" : strbuf_str(&sb));
  strbuf_release(&sb);
  return s;
}

void ls_warnings_add(struct ls_warnings *w, const char *msg)
{
  for(size_t i = 0; i < w->n; i++)
    if(!strcmp(w->v[i], msg))
      return; /* kube-apiserver deduplicates identical warnings */
  if(w->n < sizeof(w->v) / sizeof(w->v[0]))
    w->v[w->n++] = strdup(msg);
}

void ls_warnings_release(struct ls_warnings *w)
{
  for(size_t i = 0; i < w->n; i++)
    free(w->v[i]);
  w->n = 0;
}
