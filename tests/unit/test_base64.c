/* shared/base64.c: the decoding of Secret values. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

static void decodes(const char *in, const char *want, size_t want_len)
{
  size_t n = 99;
  unsigned char *v = b64_decode(in, &n);
  cr_assert_not_null(v, "\"%s\" refused", in);
  cr_assert_eq(n, want_len, "\"%s\": %zu bytes", in, n);
  cr_assert_eq(memcmp(v, want, want_len), 0, "\"%s\"", in);
  cr_assert_eq(v[n], 0, "NUL-terminated");
  free(v);
}

Test(base64, rfc4648_vectors_with_and_without_padding)
{
  decodes("", "", 0);
  decodes("Zg==", "f", 1);
  decodes("Zm8=", "fo", 2);
  decodes("Zm9v", "foo", 3);
  decodes("Zm9vYg==", "foob", 4);
  decodes("Zm9vYmE=", "fooba", 5);
  decodes("Zm9vYmFy", "foobar", 6);
  decodes("Zg", "f", 1);
  decodes("Zm8", "fo", 2);
}

Test(base64, a_uri_wrapped_by_an_editor)
{
  decodes("cG9zdGdyZXM6Ly91OnBA\naDo1NDMyL2Ri\r\n", "postgres://u:p@h:5432/db", 24);
}

Test(base64, binary_bytes_and_the_nul_after_them)
{
  decodes("AP8A", "\0\377\0", 3);
}

Test(base64, what_is_not_base64_is_refused)
{
  const char *bad[] = { "Zm9v!", "Zg==Zg==", "Z", "Zm9vY", "Zg===", "Zm8==", "Zm 9v", "-_-_",
                        NULL };
  for(const char *const *b = bad; *b; b++)
    cr_assert_null(b64_decode(*b, NULL), "\"%s\" accepted", *b);
}
