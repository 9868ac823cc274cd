/* The invariants strbuf.h promises. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static void assert_invariants(const struct strbuf *sb)
{
  cr_assert_leq(sb->len, sb->max);
  cr_assert_eq(strbuf_str(sb)[sb->len], '\0');
  cr_assert_eq(strlen(strbuf_str(sb)), sb->len);
}

Test(strbuf, starts_empty)
{
  struct strbuf sb;
  strbuf_init(&sb, 16);
  cr_assert_str_eq(strbuf_str(&sb), "");
  assert_invariants(&sb);
  strbuf_release(&sb);
}

Test(strbuf, appends_and_formats)
{
  struct strbuf sb;
  strbuf_init(&sb, 1024);
  cr_assert_eq(strbuf_adds(&sb, "spec"), GW_OK);
  cr_assert_eq(strbuf_addc(&sb, '.'), GW_OK);
  cr_assert_eq(strbuf_addf(&sb, "clone[%d]", 3), GW_OK);
  cr_assert_str_eq(strbuf_str(&sb), "spec.clone[3]");
  assert_invariants(&sb);
  strbuf_release(&sb);
}

Test(strbuf, refuses_past_max_and_stays_failed)
{
  struct strbuf sb;
  strbuf_init(&sb, 8);
  cr_assert_eq(strbuf_adds(&sb, "12345678"), GW_OK);
  cr_assert_eq(strbuf_addc(&sb, '9'), GW_ETOOBIG);
  cr_assert_eq(sb.len, 0);
  cr_assert_eq(strbuf_adds(&sb, "x"), GW_ETOOBIG, "errors are sticky");
  assert_invariants(&sb);
  strbuf_release(&sb);
}

Test(strbuf, take_hands_over)
{
  struct strbuf sb;
  strbuf_init(&sb, 64);
  cr_assert_eq(strbuf_adds(&sb, "abc"), GW_OK);
  size_t n;
  char *s = strbuf_take(&sb, &n);
  cr_assert_str_eq(s, "abc");
  cr_assert_eq(n, 3);
  cr_assert_eq(sb.len, 0);
  cr_assert_str_eq(strbuf_str(&sb), "");
  free(s);
  strbuf_release(&sb);
}

Test(strbuf, json_escape)
{
  struct strbuf sb;
  strbuf_init(&sb, 64);
  cr_assert_eq(strbuf_add_json_escaped(&sb, "a\"b\\c\n\x01"), GW_OK);
  cr_assert_str_eq(strbuf_str(&sb), "a\\\"b\\\\c\\n\\u0001");
  strbuf_release(&sb);
}
