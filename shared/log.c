#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "strbuf.h"

static volatile int min_level = LOG_INFO;
static const char *const names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level l)
{
  min_level = (int)l;
}

int log_level_parse(const char *s)
{
  for(int i = 0; i < 4; i++)
    if(!strcmp(s, names[i]))
      return i;
  return -1;
}

int log_enabled(enum log_level l)
{
  return (int)l >= min_level;
}

void log_kv(enum log_level l, const char *msg, ...)
{
  if(!log_enabled(l))
    return;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char ts[32];
  strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  struct strbuf sb;
  strbuf_init(&sb, 16384);
  gw_rc rc = strbuf_addf(&sb, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":\"", ts,
                         (long)(tv.tv_usec / 1000), names[l]);
  if(!rc)
    rc = strbuf_add_json_escaped(&sb, msg);
  if(!rc)
    rc = strbuf_addc(&sb, '"');
  va_list ap;
  va_start(ap, msg);
  for(const char *k = va_arg(ap, const char *); k && !rc; k = va_arg(ap, const char *)) {
    const char *v = va_arg(ap, const char *);
    rc = strbuf_addf(&sb, ",\"");
    if(!rc)
      rc = strbuf_add_json_escaped(&sb, k);
    if(!rc)
      rc = strbuf_adds(&sb, "\":\"");
    if(!rc)
      rc = strbuf_add_json_escaped(&sb, v ? v : "");
    if(!rc)
      rc = strbuf_addc(&sb, '"');
  }
  va_end(ap);
  if(!rc)
    rc = strbuf_adds(&sb, "}\n");
  if(!rc)
    fwrite(strbuf_str(&sb), 1, sb.len, stderr);
  else
    fprintf(stderr, "{\"level\":\"error\",\"msg\":\"log line too long\"}\n");
  strbuf_release(&sb);
}
