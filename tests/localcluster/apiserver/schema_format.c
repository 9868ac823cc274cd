/*
 * schema_format.c: the string formats kube-openapi's strfmt registry checks for CRD fields
 * (format names compare lower-cased without '-' and '_', so "date-time" is "datetime").
 * Exact: date, date-time (strfmt.IsDateTime), uuid/uuid3/uuid4/uuid5, byte (base64), ipv4, ipv6,
 * cidr, mac (the 6-byte forms), bsonobjectid, password. Approximate: hostname (ASCII labels),
 * email (local@domain), uri (an absolute URI or path), duration (Go's time.ParseDuration units).
 * Other formats, and the numeric ones (int32, int64, float, double), are not checked, as kube does
 * not check formats it does not know.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

static const char *const known[] = { "date", "datetime", "uuid", "uuid3", "uuid4", "uuid5", "byte",
                                     "ipv4", "ipv6", "cidr", "mac", "bsonobjectid", "password",
                                     "hostname", "email", "uri", "duration" };

static void normalize(char *out, size_t n, const char *f)
{
  size_t j = 0;
  for(size_t i = 0; f[i] && j + 1 < n; i++)
    if(f[i] != '-' && f[i] != '_')
      out[j++] = (char)tolower((unsigned char)f[i]);
  out[j] = '\0';
}

bool schema_format_known(const char *format)
{
  char f[32];
  normalize(f, sizeof(f), format);
  for(size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if(!strcmp(f, known[i]))
      return true;
  return false;
}

static bool digits(const char *s, int n)
{
  for(int i = 0; i < n; i++)
    if(!isdigit((unsigned char)s[i]))
      return false;
  return true;
}

static bool is_date(const char *s, size_t len)
{
  if(len != 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2))
    return false;
  int y = atoi(s), m = atoi(s + 5), d = atoi(s + 8);
  static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
  if(m < 1 || m > 12 || d < 1)
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= mdays[m - 1] + (m == 2 && leap);
}

/* strfmt.IsDateTime: the date before the first 't' (case-insensitive), then
 * HH:MM:SS(.frac)?(z|[+-]HH:MM) with HH <= 23, MM <= 59, SS <= 59. */
static bool is_datetime(const char *s)
{
  size_t n = strlen(s);
  if(n < 4)
    return false;
  const char *t = NULL;
  for(const char *p = s; *p && !t; p++)
    if(*p == 't' || *p == 'T')
      t = p;
  if(!t || !is_date(s, (size_t)(t - s)))
    return false;
  const char *q = t + 1;
  const char *end = q;
  while(*end && *end != 't' && *end != 'T')
    end++;
  size_t len = (size_t)(end - q);
  if(len < 9 || !digits(q, 2) || q[2] != ':' || !digits(q + 3, 2) || q[5] != ':' || !digits(q + 6, 2))
    return false;
  if(strncmp(q, "23", 2) > 0 || strncmp(q + 3, "59", 2) > 0 || strncmp(q + 6, "59", 2) > 0)
    return false;
  const char *p = q + 8;
  if(*p == '.') {
    p++;
    const char *f = p;
    while(p < end && isdigit((unsigned char)*p))
      p++;
    if(p == f)
      return false;
  }
  if(end - p == 1 && (*p == 'z' || *p == 'Z'))
    return true;
  return end - p == 6 && (*p == '+' || *p == '-') && digits(p + 1, 2) && p[3] == ':' && digits(p + 4, 2);
}

static bool hexn(const char *s, int n)
{
  for(int i = 0; i < n; i++)
    if(!isxdigit((unsigned char)s[i]))
      return false;
  return true;
}

static bool is_uuid(const char *s, char version)
{
  if(strlen(s) != 36 || !hexn(s, 8) || s[8] != '-' || !hexn(s + 9, 4) || s[13] != '-' ||
     !hexn(s + 14, 4) || s[18] != '-' || !hexn(s + 19, 4) || s[23] != '-' || !hexn(s + 24, 12))
    return false;
  if(!version)
    return true;
  if(s[14] != version)
    return false;
  return version == '3' || strchr("89abAB", s[19]) != NULL;
}

static bool is_base64(const char *s)
{
  size_t n = strlen(s), pad = 0;
  if(n % 4)
    return false;
  for(size_t i = 0; i < n; i++) {
    char c = s[i];
    if(c == '=') {
      if(i < n - 2)
        return false;
      pad++;
    } else if(pad || !(isalnum((unsigned char)c) || c == '+' || c == '/'))
      return false;
  }
  return true;
}

static bool is_cidr(const char *s)
{
  const char *slash = strchr(s, '/');
  if(!slash || !slash[1] || strlen(slash + 1) > 3 || !digits(slash + 1, (int)strlen(slash + 1)))
    return false;
  char ip[64];
  if((size_t)(slash - s) >= sizeof(ip))
    return false;
  snprintf(ip, sizeof(ip), "%.*s", (int)(slash - s), s);
  unsigned char buf[16];
  int bits = atoi(slash + 1);
  if(inet_pton(AF_INET, ip, buf) == 1)
    return bits <= 32;
  return inet_pton(AF_INET6, ip, buf) == 1 && bits <= 128;
}

static bool is_mac(const char *s)
{
  size_t n = strlen(s);
  if(n == 17 && (s[2] == ':' || s[2] == '-')) {
    for(int i = 0; i < 6; i++)
      if(!hexn(s + 3 * i, 2) || (i < 5 && s[3 * i + 2] != s[2]))
        return false;
    return true;
  }
  return n == 14 && hexn(s, 4) && s[4] == '.' && hexn(s + 5, 4) && s[9] == '.' && hexn(s + 10, 4);
}

static bool is_hostname(const char *s)
{
  size_t n = strlen(s);
  if(!n || n > 255)
    return false;
  size_t lab = 0;
  for(size_t i = 0; i <= n; i++) {
    if(i == n || s[i] == '.') {
      if(!lab || lab > 63 || s[i - 1] == '-' || s[i - lab] == '-')
        return false;
      lab = 0;
    } else if(isalnum((unsigned char)s[i]) || s[i] == '-' || (unsigned char)s[i] >= 0x80)
      lab++;
    else
      return false;
  }
  return true;
}

static bool is_duration(const char *s)
{
  static const char *const units[] = { "ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h" };
  if(*s == '+' || *s == '-')
    s++;
  if(!strcmp(s, "0"))
    return true;
  if(!*s)
    return false;
  while(*s) {
    const char *d = s;
    while(isdigit((unsigned char)*s))
      s++;
    bool pre = s > d;
    if(*s == '.') {
      s++;
      const char *f = s;
      while(isdigit((unsigned char)*s))
        s++;
      pre = pre || s > f;
    }
    if(!pre)
      return false;
    size_t best = 0;
    for(size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
      size_t l = strlen(units[i]);
      if(!strncmp(s, units[i], l) && l > best)
        best = l;
    }
    if(!best)
      return false;
    s += best;
  }
  return true;
}

bool schema_format_ok(const char *format, const char *s)
{
  char f[32];
  unsigned char buf[16];
  normalize(f, sizeof(f), format);
  if(!strcmp(f, "date"))
    return is_date(s, strlen(s));
  if(!strcmp(f, "datetime"))
    return is_datetime(s);
  if(!strncmp(f, "uuid", 4))
    return is_uuid(s, f[4]);
  if(!strcmp(f, "byte"))
    return is_base64(s);
  if(!strcmp(f, "ipv4"))
    return strchr(s, '.') && inet_pton(AF_INET, s, buf) == 1;
  if(!strcmp(f, "ipv6"))
    return strchr(s, ':') && inet_pton(AF_INET6, s, buf) == 1;
  if(!strcmp(f, "cidr"))
    return is_cidr(s);
  if(!strcmp(f, "mac"))
    return is_mac(s);
  if(!strcmp(f, "bsonobjectid"))
    return strlen(s) == 24 && hexn(s, 24);
  if(!strcmp(f, "hostname"))
    return is_hostname(s);
  if(!strcmp(f, "email")) {
    const char *at = strrchr(s, '@');
    return at && at != s && at[1] && !strchr(at + 1, ' ');
  }
  if(!strcmp(f, "uri")) {
    if(*s == '/')
      return true;
    const char *p = s;
    if(!isalpha((unsigned char)*p))
      return false;
    while(isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
      p++;
    return *p == ':';
  }
  if(!strcmp(f, "duration"))
    return is_duration(s);
  return true;
}
