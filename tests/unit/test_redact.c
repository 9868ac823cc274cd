/* shared/redact.c: every form a credential takes in text, and the known secrets. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

/* arrays, not pointers: Criterion runs each test in a new process (BoxFort), where a pointer
 * into this one's data means nothing */
struct rcase {
  char in[96], want[96];
};

static const struct rcase shapes[] = {
  /* URI userinfo: the password goes, the user stays */
  { "postgres://app:s3cret@db:5432/shop", "postgres://app:***@db:5432/shop" },
  { "postgresql://app:s3cret@db/shop?sslmode=require", "postgresql://app:***@db/shop?sslmode=require" },
  { "connect postgres://a:p%40ss@h/db failed", "connect postgres://a:***@h/db failed" },
  { "uri=\"postgres://a:p@ss@h/db\"", "uri=\"postgres://a:***@h/db\"" },
  { "postgres://a:x@h1 and postgres://b:y@h2", "postgres://a:***@h1 and postgres://b:***@h2" },
  { "postgres://app@db/shop", "postgres://app@db/shop" },
  { "postgres://db:5432/shop", "postgres://db:5432/shop" },
  { "https://example.com/a:b@c", "https://example.com/a:b@c" },
  /* password= in any case, quoted or not, with blanks */
  { "host=db password=s3cret dbname=shop", "host=db password=*** dbname=shop" },
  { "host=db PASSWORD=s3cret", "host=db PASSWORD=***" },
  { "Password = 's3 cret' user=x", "Password = '***' user=x" },
  { "password=\"a'b\";next", "password=\"***\";next" },
  { "password='it''s' x", "password='***' x" },
  { "password=ab", "password=***" },
  { "?user=a&password=s3cret&sslmode=disable", "?user=a&password=***&sslmode=disable" },
  /* the environment */
  { "PGPASSWORD=s3cret pgcopydb clone", "PGPASSWORD=***" " pgcopydb clone" },
  { "env PGPASSWORD='x y z'", "env PGPASSWORD='***'" },
  /* SQL */
  { "CREATE ROLE app LOGIN PASSWORD 's3cret';", "CREATE ROLE app LOGIN PASSWORD '***';" },
  { "alter role app password 'o''brien'", "alter role app password '***'" },
  /* JSON */
  { "{\"user\":\"a\",\"password\": \"s3cret\"}", "{\"user\":\"a\",\"password\": \"***\"}" },
  { "{\"password\":\"a\\\"b\"}", "{\"password\":\"***\"}" },
  /* not credentials */
  { "password authentication failed for user \"app\"", "password authentication failed for user \"app\"" },
  { "the passwords differ", "the passwords differ" },
  { "password=*** already", "password=*** already" },
  { "", "" },
  { "unterminated password='abc", "unterminated password='***" },
};

ParameterizedTestParameters(redact, shapes)
{
  return cr_make_param_array(struct rcase, shapes, sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(const struct rcase *c, redact, shapes)
{
  char *out = redact(c->in, NULL, 0);
  cr_assert_not_null(out);
  cr_assert_str_eq(out, c->want, "in: %s", c->in);
  char *again = redact(out, NULL, 0);
  cr_assert_str_eq(again, out, "redaction is idempotent");
  free(again);
  free(out);
}

Test(redact, known_secrets_go_wherever_they_appear)
{
  const char *uri = "postgres://app:Tr1cky-pw@db:5432/shop";
  const char *secrets[] = { "Tr1cky-pw", NULL, uri, "abc" };
  char *out = redact("dial postgres://app:Tr1cky-pw@db:5432/shop: no route; echo Tr1cky-pw; "
                     "tr1cky-pw; abc; ab",
                     secrets, 4);
  cr_assert_str_eq(out, "dial ***: no route; echo ***; tr1cky-pw; abc; ab");
  free(out);
  /* a secret shorter than REDACT_MIN_SECRET is not looked for (it would take words with it) */
  const char *shortone[] = { "ab" };
  out = redact("about ab", shortone, 1);
  cr_assert_str_eq(out, "about ab");
  free(out);
  /* a secret the shapes do not know of */
  const char *tok[] = { "eyJhbGciOi.token" };
  out = redact("Authorization: Bearer eyJhbGciOi.token", tok, 1);
  cr_assert_str_eq(out, "Authorization: Bearer ***");
  free(out);
}

Test(redact, in_place_cuts_to_capacity_and_never_leaks)
{
  char buf[32];
  strcpy(buf, "password=verysecretvalue tail");
  redact_buf(buf, sizeof(buf), NULL, 0);
  cr_assert_str_eq(buf, "password=*** tail");
  /* longer than the input: cut at the capacity */
  char small[12];
  strcpy(small, "password=ab");
  redact_buf(small, sizeof(small), NULL, 0);
  cr_assert_str_eq(small, "password=**");
  /* never inside a UTF-8 sequence */
  char u[8];
  strcpy(u, "ééé");
  redact_buf(u, 6, NULL, 0);
  cr_assert_str_eq(u, "éé");
  redact_buf(u, 4, NULL, 0);
  cr_assert_str_eq(u, "é");
}

Test(redact, cut_after_redaction_never_leaves_half_a_secret)
{
  const char *secrets[] = { "LongSecretValue-123" };
  bool cut = false;
  /* cut before redaction would keep "LongSecret" at the end */
  char *out = redact_cut("x=LongSecretValue-123 and more text", 14, secrets, 1, &cut);
  cr_assert_str_eq(out, "x=*** and m...");
  cr_assert(cut);
  free(out);
  cut = false;
  out = redact_cut("short", 14, secrets, 1, &cut);
  cr_assert_str_eq(out, "short");
  cr_assert_not(cut);
  free(out);
  out = redact_cut("ééééé", 8, NULL, 0, NULL);
  cr_assert_str_eq(out, "éé...", "cut on a character boundary");
  free(out);
}
