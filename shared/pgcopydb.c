/* pgcopydb.c: the output plugin a live migration decodes with (pgcopydb.h). */
#include "pgcopydb.h"

#include <string.h>

static bool at_least(const struct pgcopydb_version *v, int major, int minor)
{
  return v->known && (v->major > major || (v->major == major && v->minor >= minor));
}

size_t pgcopydb_plugins(const struct pgcopydb_version *v, const char *out[PGCOPYDB_MAX_PLUGINS])
{
  if(!at_least(v, 0, 12)) {
    out[0] = "wal2json";
    return 1;
  }
  out[0] = "test_decoding";
  out[1] = "wal2json";
  return 2;
}

bool pgcopydb_plugin_flag(const struct pgcopydb_version *v)
{
  return !v->known || at_least(v, 0, 12);
}

bool pgcopydb_plugin_supported(const struct pgcopydb_version *v, const char *plugin)
{
  const char *p[PGCOPYDB_MAX_PLUGINS];
  size_t n = pgcopydb_plugins(v, p);
  for(size_t i = 0; i < n; i++)
    if(plugin && !strcmp(p[i], plugin))
      return true;
  return false;
}

/* The next element of a list setting: [*s, *end) trimmed of blanks and double quotes; moves s
 * past its comma. false at the end. */
static bool next_elem(const char **s, const char **start, size_t *len)
{
  const char *p = *s;
  if(!*p)
    return false;
  const char *comma = strchr(p, ',');
  const char *e = comma ? comma : p + strlen(p);
  *s = comma ? comma + 1 : e;
  while(p < e && (*p == ' ' || *p == '\t' || *p == '"'))
    p++;
  while(e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '"'))
    e--;
  *start = p;
  *len = (size_t)(e - p);
  return true;
}

bool pg_plugin_allowed(const char *setting, const char *plugin)
{
  if(!setting)
    return true;
  const char *s = setting, *el;
  size_t n;
  while(next_elem(&s, &el, &n))
    if(n == strlen(plugin) && !strncmp(el, plugin, n))
      return true;
  return false;
}

/* Appends 'text' (n bytes, single quotes doubled) and a separator; -1 when it does not fit. */
static int add_literal(char *out, size_t len, size_t *at, const char *text, size_t n)
{
  if(*at && *at + 2 < len) {
    memcpy(out + *at, ", ", 2);
    *at += 2;
  } else if(*at) {
    return -1;
  }
  if(*at + 1 >= len)
    return -1;
  out[(*at)++] = '\'';
  for(size_t i = 0; i < n; i++) {
    size_t need = text[i] == '\'' ? 2 : 1;
    if(*at + need + 1 >= len)
      return -1;
    out[(*at)++] = text[i];
    if(need == 2)
      out[(*at)++] = '\'';
  }
  if(*at + 1 >= len)
    return -1;
  out[(*at)++] = '\'';
  out[*at] = '\0';
  return 0;
}

int pg_plugin_list_add(const char *setting, const char *plugin, char *out, size_t len)
{
  size_t at = 0;
  if(!len)
    return -1;
  out[0] = '\0';
  const char *s = setting ? setting : "", *el;
  size_t n;
  while(next_elem(&s, &el, &n))
    if(n && add_literal(out, len, &at, el, n))
      return -1;
  if(!pg_plugin_allowed(setting ? setting : "", plugin) &&
     add_literal(out, len, &at, plugin, strlen(plugin)))
    return -1;
  return 0;
}
