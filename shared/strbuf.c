#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb, size_t max)
{
  sb->buf = NULL;
  sb->len = 0;
  sb->alloc = 0;
  sb->max = max;
  sb->err = GW_OK;
}

void strbuf_release(struct strbuf *sb)
{
  free(sb->buf);
  sb->buf = NULL;
  sb->len = 0;
  sb->alloc = 0;
}

void strbuf_reset(struct strbuf *sb)
{
  sb->len = 0;
  if(sb->buf)
    sb->buf[0] = '\0';
}

static gw_rc fail(struct strbuf *sb, gw_rc rc)
{
  strbuf_release(sb);
  sb->err = rc;
  return rc;
}

static gw_rc grow(struct strbuf *sb, size_t extra)
{
  if(sb->err)
    return sb->err;
  if(extra > sb->max - sb->len)
    return fail(sb, GW_ETOOBIG);
  size_t need = sb->len + extra + 1;
  if(need <= sb->alloc)
    return GW_OK;
  size_t n = sb->alloc ? sb->alloc : 64;
  while(n < need)
    n *= 2;
  if(n > sb->max + 1)
    n = sb->max + 1;
  char *p = realloc(sb->buf, n);
  if(!p)
    return fail(sb, GW_ENOMEM);
  sb->buf = p;
  sb->alloc = n;
  return GW_OK;
}

gw_rc strbuf_reserve(struct strbuf *sb, size_t extra)
{
  return grow(sb, extra);
}

gw_rc strbuf_add_slow(struct strbuf *sb, const void *data, size_t len)
{
  gw_rc rc = grow(sb, len);
  if(rc)
    return rc;
  if(len)
    memcpy(sb->buf + sb->len, data, len);
  sb->len += len;
  sb->buf[sb->len] = '\0';
  return GW_OK;
}

gw_rc strbuf_adds(struct strbuf *sb, const char *s)
{
  return strbuf_add(sb, s, strlen(s));
}

gw_rc strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  if(n < 0)
    return fail(sb, GW_EINVAL);
  gw_rc rc = grow(sb, (size_t)n);
  if(rc)
    return rc;
  vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
  return GW_OK;
}

gw_rc strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gw_rc rc = strbuf_vaddf(sb, fmt, ap);
  va_end(ap);
  return rc;
}

gw_rc strbuf_add_json_escaped(struct strbuf *sb, const char *s)
{
  gw_rc rc = GW_OK;
  for(const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
    switch(*p) {
    case '"': rc = strbuf_add(sb, "\\\"", 2); break;
    case '\\': rc = strbuf_add(sb, "\\\\", 2); break;
    case '\n': rc = strbuf_add(sb, "\\n", 2); break;
    case '\r': rc = strbuf_add(sb, "\\r", 2); break;
    case '\t': rc = strbuf_add(sb, "\\t", 2); break;
    default:
      if(*p < 0x20)
        rc = strbuf_addf(sb, "\\u%04x", *p);
      else
        rc = strbuf_addc(sb, (char)*p);
    }
  }
  return rc;
}

const char *strbuf_str(const struct strbuf *sb)
{
  return sb->buf ? sb->buf : "";
}

char *strbuf_take(struct strbuf *sb, size_t *len_out)
{
  char *s = sb->buf;
  size_t len = sb->len;
  if(!s) {
    s = malloc(1);
    if(s)
      s[0] = '\0';
    len = 0;
  }
  sb->buf = NULL;
  sb->len = 0;
  sb->alloc = 0;
  if(len_out)
    *len_out = len;
  return s;
}
