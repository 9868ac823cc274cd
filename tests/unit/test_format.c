/* The string formats: quantities, durations, names, images. */
#include <criterion/criterion.h>

#include "api/format.h"

Test(format, quantities_as_kubernetes_reads_them)
{
  struct {
    const char *s;
    long long v;
  } ok[] = { { "10Gi", 10LL << 30 }, { "512Mi", 512LL << 20 }, { "1G", 1000000000LL },
             { "100", 100 }, { "1e6", 1000000 }, { "1E3", 1000 }, { "1E", 1000000000000000000LL },
             { "500m", 1 }, { "0.5Ki", 512 }, { "+2k", 2000 }, { "1.5", 2 } };
  for(size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    int64_t v;
    cr_assert(quantity_parse(ok[i].s, &v), "%s refused", ok[i].s);
    cr_assert_eq(v, ok[i].v, "%s: got %lld", ok[i].s, (long long)v);
  }
  const char *bad[] = { "", "Gi", "10 Gi", "10gi", "1e", "1.2.3", "ten", "1Zi", "--1" };
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int64_t v;
    cr_assert_not(quantity_parse(bad[i], &v), "%s accepted", bad[i]);
  }
}

Test(format, durations)
{
  int64_t ms;
  cr_assert(duration_parse_ms("1h30m", &ms));
  cr_assert_eq(ms, 5400000);
  cr_assert(duration_parse_ms("250ms", &ms));
  cr_assert_eq(ms, 250);
  cr_assert(duration_parse_ms("0", &ms));
  cr_assert_eq(ms, 0);
  cr_assert_not(duration_parse_ms("5", &ms), "a unit is required");
  cr_assert_not(duration_parse_ms("-1s", &ms));
  cr_assert_not(duration_parse_ms("1d", &ms));
}

Test(format, names_and_images)
{
  cr_assert_null(fmt_check_dns1123_label("shop-db"));
  cr_assert_not_null(fmt_check_dns1123_label("Shop"));
  cr_assert_not_null(fmt_check_dns1123_label("a.b"));
  cr_assert_null(fmt_check_dns1123_subdomain("orders.v2"));
  cr_assert_not_null(fmt_check_dns1123_subdomain("orders..v2"));
  cr_assert_null(fmt_check_qualified_name("example.com/owner"));
  cr_assert_not_null(fmt_check_qualified_name("example.com/"));
  cr_assert_not_null(fmt_check_qualified_name("a/b/c"));
  cr_assert_null(fmt_check_label_value(""));
  cr_assert_not_null(fmt_check_label_value("-x"));
  cr_assert_null(fmt_image.check("ghcr.io/dimitri/pgcopydb:v0.17"));
  cr_assert_null(fmt_image.check("localhost:5000/pgcopydb"));
  cr_assert_null(fmt_image.check("pgcopydb@sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d"));
  cr_assert_not_null(fmt_image.check("Ghcr.io/Dimitri/PGCOPYDB"));
  cr_assert_not_null(fmt_image.check("pgcopydb:"));
  cr_assert_not_null(fmt_image.check("pg copydb"));
}
