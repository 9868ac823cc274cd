#include "format.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
  return isalnum((unsigned char)c) != 0;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? of length n. */
static bool is_label(const char *s, size_t n)
{
  if(n == 0 || n > 63 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
    return false;
  for(size_t i = 0; i < n; i++)
    if(!lower_alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

const char *fmt_check_dns1123_label(const char *s)
{
  if(!is_label(s, strlen(s)))
    return "must be a DNS label: lower-case letters, digits and '-', starting and ending with a "
           "letter or digit, at most 63 characters";
  return NULL;
}

static bool is_subdomain(const char *s, size_t n)
{
  if(n == 0 || n > 253)
    return false;
  const char *end = s + n;
  while(s < end) {
    const char *dot = memchr(s, '.', (size_t)(end - s));
    size_t len = dot ? (size_t)(dot - s) : (size_t)(end - s);
    if(!is_label(s, len))
      return false;
    s += len + (dot ? 1 : 0);
    if(dot && s == end)
      return false;
  }
  return true;
}

const char *fmt_check_dns1123_subdomain(const char *s)
{
  if(!is_subdomain(s, strlen(s)))
    return "must be a DNS subdomain name: lower-case letters, digits, '-' and '.', starting and "
           "ending with a letter or digit, at most 253 characters";
  return NULL;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] of length n <= 63. */
static bool is_name_part(const char *s, size_t n)
{
  if(n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
    return false;
  for(size_t i = 0; i < n; i++)
    if(!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
      return false;
  return true;
}

const char *fmt_check_qualified_name(const char *s)
{
  const char *slash = strchr(s, '/');
  if(slash) {
    if(strchr(slash + 1, '/'))
      return "must be a qualified name: an optional DNS subdomain prefix and '/', then a name; "
             "only one '/' is allowed";
    if(!is_subdomain(s, (size_t)(slash - s)))
      return "must have a prefix that is a DNS subdomain (lower-case letters, digits, '-' and '.', "
             "at most 253 characters) before the '/'";
    s = slash + 1;
  }
  if(!is_name_part(s, strlen(s)))
    return "must be a qualified name: letters, digits, '-', '_' and '.', starting and ending with "
           "a letter or digit, at most 63 characters after an optional 'prefix/'";
  return NULL;
}

const char *fmt_check_label_value(const char *s)
{
  size_t n = strlen(s);
  if(n == 0)
    return NULL;
  if(!is_name_part(s, n))
    return "must be empty or letters, digits, '-', '_' and '.', starting and ending with a "
           "letter or digit, at most 63 characters";
  return NULL;
}

static const char *check_secret_key(const char *s)
{
  size_t n = strlen(s);
  if(n == 0 || n > 253 || !strcmp(s, ".") || !strcmp(s, ".."))
    goto bad;
  for(size_t i = 0; i < n; i++)
    if(!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
      goto bad;
  return NULL;
bad:
  return "must be a valid Secret key: letters, digits, '-', '_' and '.', at most 253 characters";
}

static bool is_hex(const char *s, size_t n)
{
  for(size_t i = 0; i < n; i++)
    if(!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

static const char *check_digest(const char *s)
{
  if(strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64 || !is_hex(s + 7, 64))
    return "must be \"sha256:\" followed by 64 lower-case hex digits, as printed in the plan's "
           "status";
  return NULL;
}

/*
 * An image reference as the container runtime accepts it:
 *   [registry[:port]/]path[/path...][:tag][@sha256:<64 hex>]
 * path components are lower-case alphanumerics with single '.', '_', '__' or '-' separators;
 * the tag is [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
 */
static const char *check_image(const char *s)
{
  static const char *const bad = "must be a container image reference such as "
                                 "\"registry.example.com/team/pgcopydb:0.17\" (lower-case path, "
                                 "optional :tag and @sha256:digest, no spaces)";
  size_t n = strlen(s);
  if(n == 0 || n > 512)
    return bad;
  const char *at = strchr(s, '@');
  size_t name_end = at ? (size_t)(at - s) : n;
  if(at && check_digest(at + 1))
    return bad;
  /* The tag is after the last ':' that follows the last '/'. */
  const char *last_slash = NULL;
  for(size_t i = 0; i < name_end; i++)
    if(s[i] == '/')
      last_slash = s + i;
  const char *colon = NULL;
  for(const char *p = last_slash ? last_slash : s; p < s + name_end; p++)
    if(*p == ':')
      colon = p;
  size_t repo_end = colon ? (size_t)(colon - s) : name_end;
  if(colon) {
    size_t tlen = name_end - repo_end - 1;
    const char *t = colon + 1;
    if(tlen == 0 || tlen > 128 || !(alnum(t[0]) || t[0] == '_'))
      return bad;
    for(size_t i = 0; i < tlen; i++)
      if(!alnum(t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
        return bad;
  }
  if(repo_end == 0)
    return bad;
  /* First component may be a registry host (has '.' or ':' or is localhost). */
  const char *p = s, *end = s + repo_end;
  const char *slash = memchr(p, '/', (size_t)(end - p));
  if(slash) {
    size_t hl = (size_t)(slash - p);
    bool host = memchr(p, '.', hl) || memchr(p, ':', hl) || (hl == 9 && !memcmp(p, "localhost", 9));
    if(host) {
      for(size_t i = 0; i < hl; i++)
        if(!alnum(p[i]) && p[i] != '.' && p[i] != '-' && p[i] != ':')
          return bad;
      p = slash + 1;
    }
  }
  /* Remaining path components. */
  while(p < end) {
    const char *q = memchr(p, '/', (size_t)(end - p));
    size_t cl = q ? (size_t)(q - p) : (size_t)(end - p);
    if(cl == 0 || !lower_alnum(p[0]) || !lower_alnum(p[cl - 1]))
      return bad;
    for(size_t i = 0; i < cl; i++)
      if(!lower_alnum(p[i]) && p[i] != '.' && p[i] != '_' && p[i] != '-')
        return bad;
    p += cl + (q ? 1 : 0);
    if(q && p == end)
      return bad;
  }
  return NULL;
}

bool quantity_parse(const char *s, int64_t *out)
{
  const char *p = s;
  bool neg = false;
  if(*p == '+' || *p == '-')
    neg = *p++ == '-';
  const char *num = p;
  while(isdigit((unsigned char)*p))
    p++;
  if(*p == '.') {
    p++;
    while(isdigit((unsigned char)*p))
      p++;
  }
  if(p == num || (p == num + 1 && *num == '.'))
    return false;
  /* The mantissa alone: strtod would also take an exponent, which is parsed below. */
  char digits[64];
  size_t dl = (size_t)(p - num);
  if(dl >= sizeof(digits))
    return false;
  memcpy(digits, num, dl);
  digits[dl] = '\0';
  double v = strtod(digits, NULL);
  double mul = 1;
  static const struct {
    const char *sfx;
    double mul;
  } suffixes[] = {
    { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 }, { "Ti", 1099511627776.0 },
    { "Pi", 1125899906842624.0 }, { "Ei", 1152921504606846976.0 }, { "n", 1e-9 }, { "u", 1e-6 },
    { "m", 1e-3 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "P", 1e15 },
    { "E", 1e18 },
  };
  if((*p == 'e' || *p == 'E') && p[1]) { /* a decimal exponent; "E" alone is exa */
    char *e;
    long x = strtol(p + 1, &e, 10);
    if(e == p + 1 || *e || (p[1] != '+' && p[1] != '-' && !isdigit((unsigned char)p[1])) ||
       x > 30 || x < -30)
      return false;
    mul = pow(10, (double)x);
    p = e;
  } else if(*p) {
    size_t i;
    for(i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
      if(!strcmp(p, suffixes[i].sfx))
        break;
    if(i == sizeof(suffixes) / sizeof(suffixes[0]))
      return false;
    mul = suffixes[i].mul;
    p += strlen(suffixes[i].sfx);
  }
  if(*p)
    return false;
  double total = ceil(v * mul);
  if(total > 9.2e18)
    return false;
  *out = neg ? -(int64_t)total : (int64_t)total;
  return true;
}

static const char *check_quantity(const char *s)
{
  int64_t v;
  if(!quantity_parse(s, &v))
    return "must be a quantity such as \"10Gi\", \"512Mi\", \"500m\" or \"2\"";
  if(v < 0)
    return "must not be negative";
  return NULL;
}

bool duration_parse_ms(const char *s, int64_t *out_ms)
{
  static const struct {
    const char *unit;
    double ms;
  } units[] = { { "ns", 1e-6 }, { "us", 1e-3 }, { "\xc2\xb5s", 1e-3 }, { "ms", 1 },
                { "s", 1000 }, { "m", 60000 }, { "h", 3600000 } };
  const char *p = s;
  double total = 0;
  if(!*p)
    return false;
  if(!strcmp(p, "0")) {
    *out_ms = 0;
    return true;
  }
  while(*p) {
    if(!isdigit((unsigned char)*p) && *p != '.')
      return false;
    char *e;
    double v = strtod(p, &e);
    if(e == p)
      return false;
    p = e;
    size_t best = 0, i, found = sizeof(units) / sizeof(units[0]);
    for(i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
      size_t l = strlen(units[i].unit);
      if(!strncmp(p, units[i].unit, l) && l > best) {
        best = l;
        found = i;
      }
    }
    if(found == sizeof(units) / sizeof(units[0]))
      return false;
    total += v * units[found].ms;
    p += best;
  }
  if(total > 9.2e15)
    return false;
  *out_ms = (int64_t)ceil(total);
  return true;
}

static const char *check_duration(const char *s)
{
  int64_t ms;
  if(!duration_parse_ms(s, &ms))
    return "must be a duration such as \"90s\", \"15m\" or \"1h30m\"";
  return NULL;
}

static const char *check_pg_identifier(const char *s)
{
  size_t n = strlen(s);
  if(n == 0 || n > 63)
    return "must be a PostgreSQL name of 1 to 63 bytes";
  for(size_t i = 0; i < n; i++)
    if((unsigned char)s[i] < 0x20 || s[i] == '"')
      return "must not contain control characters or '\"'";
  return NULL;
}

static const char *check_pg_qualified(const char *s)
{
  const char *dot = strchr(s, '.');
  if(!dot)
    return check_pg_identifier(s);
  if(strchr(dot + 1, '.'))
    return "must be \"table\" or \"schema.table\"";
  size_t n = (size_t)(dot - s);
  char schema[64];
  if(n == 0 || n > 63)
    return "must be \"table\" or \"schema.table\" with names of 1 to 63 bytes";
  memcpy(schema, s, n);
  schema[n] = '\0';
  const char *why = check_pg_identifier(schema);
  return why ? why : check_pg_identifier(dot + 1);
}

static const char *check_username(const char *s)
{
  size_t n = strlen(s);
  if(n == 0 || n > 512)
    return "must be a user name of 1 to 512 characters";
  for(size_t i = 0; i < n; i++)
    if((unsigned char)s[i] < 0x20)
      return "must not contain control characters";
  return NULL;
}

static const char *const ex_label[] = { "shop", NULL };
static const char *const ex_subdomain[] = { "shop-db", "orders.v2", NULL };
static const char *const ex_key[] = { "uri", "DATABASE_URL", "pg.uri", NULL };
static const char *const ex_qname[] = { "team", "example.com/owner", "app.kubernetes.io/name",
                                        NULL };
static const char *const ex_lvalue[] = { "payments", "", "v1.2", NULL };
static const char *const ex_image[] = { "ghcr.io/dimitri/pgcopydb:v0.17",
                                        "registry.example.com/db/pgcopydb:0.18", NULL };
static const char *const ex_quantity[] = { "10Gi", "512Mi", "1G", "100", NULL };
static const char *const ex_duration[] = { "30s", "15m", "1h30m", NULL };
static const char *const ex_digest[] = {
  "sha256:0d5ee5fc8eb6a1e8c77b1b1dd1b2cbb0b3d2f8b6bd7a3c5c0a7a4b9a1f0e6c3d", NULL
};
static const char *const ex_ident[] = { "pg_trgm", "public", "orders", NULL };
static const char *const ex_qualified[] = { "public.orders", "billing.invoices", "users", NULL };
static const char *const ex_user[] = { "alice", "system:serviceaccount:db:deployer", NULL };

const struct sch_format fmt_dns1123_label = {
  "DNS-1123 label", fmt_check_dns1123_label, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", 63, ex_label
};
const struct sch_format fmt_dns1123_subdomain = {
  "DNS-1123 subdomain", fmt_check_dns1123_subdomain,
  "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", 253, ex_subdomain
};
const struct sch_format fmt_secret_key = { "Secret key", check_secret_key, "^[-._a-zA-Z0-9]+$",
                                           253, ex_key };
const struct sch_format fmt_qualified_name = { "qualified name", fmt_check_qualified_name, NULL,
                                               317, ex_qname };
const struct sch_format fmt_label_value = { "label value", fmt_check_label_value, NULL, 63,
                                            ex_lvalue };
const struct sch_format fmt_image = { "image reference", check_image, NULL, 512, ex_image };
const struct sch_format fmt_quantity = {
  "quantity", check_quantity,
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
  0, ex_quantity
};
const struct sch_format fmt_duration = { "duration", check_duration,
                                         "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$", 64,
                                         ex_duration };
const struct sch_format fmt_sha256_digest = { "sha256 digest", check_digest, "^sha256:[a-f0-9]{64}$",
                                              71, ex_digest };
const struct sch_format fmt_pg_identifier = { "PostgreSQL name", check_pg_identifier, NULL, 63,
                                              ex_ident };
const struct sch_format fmt_pg_qualified = { "PostgreSQL table name", check_pg_qualified, NULL,
                                             127, ex_qualified };
const struct sch_format fmt_username = { "user name", check_username, NULL, 512, ex_user };
