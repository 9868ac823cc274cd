/*
 * strbuf.h: a bounded, growable, always NUL-terminated string buffer.
 *
 * Invariants (checked by tests/unit/test_strbuf.c):
 *  - after strbuf_init(sb, max) the buffer is empty, sb->len == 0 and strbuf_str(sb) is "".
 *  - sb->len never exceeds the max given at init; the byte at buf[len] is always NUL.
 *  - an append that would pass the max, or that cannot allocate, releases the buffer and returns
 *    GW_ETOOBIG or GW_ENOMEM; every later append fails the same way until strbuf_init again.
 *    Callers therefore check only the final return code of a chain of appends.
 *  - strbuf_take() hands the heap string to the caller (free() it) and leaves sb empty.
 */
#ifndef GW_STRBUF_H
#define GW_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "rc.h"

struct strbuf {
  char *buf;
  size_t len;
  size_t alloc;
  size_t max;
  gw_rc err; /* sticky error of a failed append */
};

void strbuf_init(struct strbuf *sb, size_t max);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
/* Makes room for extra more bytes now (a printer that knows about how much it will write). */
gw_rc strbuf_reserve(struct strbuf *sb, size_t extra) GW_MUST_CHECK;
static inline gw_rc strbuf_add(struct strbuf *sb, const void *data, size_t len) GW_MUST_CHECK;
gw_rc strbuf_adds(struct strbuf *sb, const char *s) GW_MUST_CHECK;
static inline gw_rc strbuf_addc(struct strbuf *sb, char c) GW_MUST_CHECK;
gw_rc strbuf_addf(struct strbuf *sb, const char *fmt, ...)
  __attribute__((format(printf, 2, 3))) GW_MUST_CHECK;
gw_rc strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap) GW_MUST_CHECK;
/* Appends s as the inside of a JSON string (no surrounding quotes). */
gw_rc strbuf_add_json_escaped(struct strbuf *sb, const char *s) GW_MUST_CHECK;
/* The contents; never NULL ("" when empty or failed). */
const char *strbuf_str(const struct strbuf *sb);
/* Hands the buffer over: a malloc'd NUL-terminated string (never NULL unless out of memory). */
char *strbuf_take(struct strbuf *sb, size_t *len_out);

/* The appends, inline where there is room already (a printer's common case: JSON answers add a
 * byte or a short run at a time); strbuf_add_slow() grows the buffer or fails. */
gw_rc strbuf_add_slow(struct strbuf *sb, const void *data, size_t len) GW_MUST_CHECK;

static inline gw_rc strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
  if(len >= sb->alloc - sb->len || sb->err) /* alloc >= len + 1 once allocated: no wrap */
    return strbuf_add_slow(sb, data, len);
  if(len)
    memcpy(sb->buf + sb->len, data, len);
  sb->len += len;
  sb->buf[sb->len] = '\0';
  return GW_OK;
}

static inline gw_rc strbuf_addc(struct strbuf *sb, char c)
{
  if(1 >= sb->alloc - sb->len || sb->err)
    return strbuf_add_slow(sb, &c, 1);
  sb->buf[sb->len++] = c;
  sb->buf[sb->len] = '\0';
  return GW_OK;
}

#endif
