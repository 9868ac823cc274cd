/* util.c: time, identifiers, names and small JSON helpers of the API server core. */
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core.h"

void ls_time_format(time_t t, char out[32])
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void ls_now(char out[32])
{
  ls_time_format(time(NULL), out);
}

time_t ls_time_parse(const char *s)
{
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  if(!s)
    return -1;
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if(!end)
    return -1;
  if(*end == '.') /* fractional seconds (MicroTime) */
    for(end++; isdigit((unsigned char)*end); end++)
      ;
  long off = 0;
  if(*end == '+' || *end == '-') {
    int hh = 0, mm = 0;
    if(sscanf(end + 1, "%2d:%2d", &hh, &mm) != 2)
      return -1;
    off = (hh * 3600L + mm * 60L) * (*end == '-' ? -1 : 1);
  } else if(*end != 'Z')
    return -1;
  return timegm(&tm) - off;
}

static void random_bytes(unsigned char *b, size_t n)
{
  size_t got = 0;
  while(got < n) {
    ssize_t r = getrandom(b + got, n - got, 0);
    if(r <= 0)
      break;
    got += (size_t)r;
  }
  for(; got < n; got++) /* getrandom cannot fail on Linux >= 3.17; keep going anyway */
    b[got] = (unsigned char)rand();
}

void ls_uuid(char out[37])
{
  unsigned char b[16];
  random_bytes(b, sizeof(b));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
           b[13], b[14], b[15]);
}

void ls_random_suffix(char *out, size_t n)
{
  /* k8s.io/apimachinery/pkg/util/rand: no vowels, no confusable characters */
  static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  unsigned char b[64];
  if(n > sizeof(b))
    n = sizeof(b);
  random_bytes(b, n);
  for(size_t i = 0; i < n; i++)
    out[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
  out[n] = '\0';
}

static bool label_ok(const char *s, size_t n)
{
  if(n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
    return false;
  for(size_t i = 0; i < n; i++)
    if(!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
      return false;
  return true;
}

bool ls_dns_label(const char *s)
{
  return label_ok(s, strlen(s));
}

bool ls_dns_subdomain(const char *s)
{
  size_t n = strlen(s);
  if(n == 0 || n > 253)
    return false;
  const char *p = s;
  while(*p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if(!label_ok(p, len))
      return false;
    p += len;
    if(*p == '.')
      p++;
    else
      break;
  }
  return s[n - 1] != '.';
}

const char *ls_str(const cJSON *o, const char *key)
{
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
  return s ? s : "";
}

const char *ls_meta(const cJSON *obj, const char *key)
{
  return ls_str(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), key);
}

cJSON *ls_meta_obj(cJSON *obj)
{
  cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  if(!cJSON_IsObject(m)) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
    m = cJSON_AddObjectToObject(obj, "metadata");
  }
  return m;
}

void ls_set_item(cJSON *o, const char *key, cJSON *item)
{
  if(cJSON_GetObjectItemCaseSensitive(o, key))
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, item);
  else
    cJSON_AddItemToObject(o, key, item);
}

void ls_set_str(cJSON *o, const char *key, const char *val)
{
  ls_set_item(o, key, cJSON_CreateString(val));
}

long long ls_meta_generation(const cJSON *obj)
{
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(
    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "generation");
  return cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
}

bool ls_has_finalizer(const cJSON *obj, const char *f)
{
  const cJSON *fs = cJSON_GetObjectItemCaseSensitive(
    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "finalizers");
  const cJSON *x;
  cJSON_ArrayForEach(x, fs)
  {
    if(cJSON_IsString(x) && !strcmp(x->valuestring, f))
      return true;
  }
  return false;
}

void ls_add_finalizer(cJSON *obj, const char *f)
{
  if(ls_has_finalizer(obj, f))
    return;
  cJSON *m = ls_meta_obj(obj);
  cJSON *fs = cJSON_GetObjectItemCaseSensitive(m, "finalizers");
  if(!cJSON_IsArray(fs)) {
    cJSON_DeleteItemFromObjectCaseSensitive(m, "finalizers");
    fs = cJSON_AddArrayToObject(m, "finalizers");
  }
  cJSON_AddItemToArray(fs, cJSON_CreateString(f));
}

void ls_remove_finalizer(cJSON *obj, const char *f)
{
  cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  cJSON *fs = cJSON_GetObjectItemCaseSensitive(m, "finalizers");
  for(int i = cJSON_GetArraySize(fs) - 1; i >= 0; i--) {
    const cJSON *x = cJSON_GetArrayItem(fs, i);
    if(cJSON_IsString(x) && !strcmp(x->valuestring, f))
      cJSON_DeleteItemFromArray(fs, i);
  }
  if(fs && cJSON_GetArraySize(fs) == 0)
    cJSON_DeleteItemFromObjectCaseSensitive(m, "finalizers");
}

char *ls_print(const cJSON *o)
{
  /* cJSON's allocator is shared/arena's (headers before each block): hand out plain malloc */
  char *s = cJSON_PrintUnformatted(o);
  char *d = strdup(s ? s : "null");
  cJSON_free(s);
  if(!d)
    abort();
  return d;
}

void ls_api_version(const char *group, const char *version, char *out, size_t len)
{
  if(*group)
    snprintf(out, len, "%s/%s", group, version);
  else
    snprintf(out, len, "%s", version);
}

void ls_split_api_version(const char *av, char *group, size_t glen, char *version, size_t vlen)
{
  const char *slash = strrchr(av, '/');
  if(!slash) {
    snprintf(group, glen, "%s", "");
    snprintf(version, vlen, "%s", av);
    return;
  }
  snprintf(group, glen, "%.*s", (int)(slash - av), av);
  snprintf(version, vlen, "%s", slash + 1);
}

/* v<major>[(alpha|beta)<minor>]: kind 3 GA, 2 beta, 1 alpha, 0 not a kube version. */
static int version_parse(const char *v, long *major, long *minor)
{
  if(v[0] != 'v' || !isdigit((unsigned char)v[1]) || v[1] == '0')
    return 0;
  char *end;
  *major = strtol(v + 1, &end, 10);
  *minor = 0;
  if(!*end)
    return 3;
  int kind = !strncmp(end, "alpha", 5) ? 1 : !strncmp(end, "beta", 4) ? 2 : 0;
  if(!kind)
    return 0;
  end += kind == 1 ? 5 : 4;
  if(!isdigit((unsigned char)*end) || *end == '0')
    return 0;
  *minor = strtol(end, &end, 10);
  return *end ? 0 : kind;
}

int ls_version_cmp(const char *a, const char *b)
{
  long amaj, amin, bmaj, bmin;
  int ak = version_parse(a, &amaj, &amin), bk = version_parse(b, &bmaj, &bmin);
  if(!ak || !bk) {
    if(ak != bk)
      return ak ? -1 : 1;
    return strcmp(a, b);
  }
  if(ak != bk)
    return bk - ak;
  if(amaj != bmaj)
    return amaj > bmaj ? -1 : 1;
  if(amin != bmin)
    return amin > bmin ? -1 : 1;
  return 0;
}

void ls_human_duration(time_t d, char *out, size_t len)
{
  /* k8s.io/apimachinery/pkg/util/duration.HumanDuration */
  if(d < 0)
    d = 0;
  long long s = (long long)d;
  if(s < 120)
    snprintf(out, len, "%llds", s);
  else if(s < 600)
    s % 60 ? snprintf(out, len, "%lldm%llds", s / 60, s % 60)
           : snprintf(out, len, "%lldm", s / 60);
  else if(s < 3 * 3600)
    snprintf(out, len, "%lldm", s / 60);
  else if(s < 8 * 3600)
    (s % 3600) / 60 ? snprintf(out, len, "%lldh%lldm", s / 3600, (s % 3600) / 60)
                    : snprintf(out, len, "%lldh", s / 3600);
  else if(s < 48 * 3600)
    snprintf(out, len, "%lldh", s / 3600);
  else if(s < 8 * 86400)
    (s % 86400) / 3600 ? snprintf(out, len, "%lldd%lldh", s / 86400, (s % 86400) / 3600)
                       : snprintf(out, len, "%lldd", s / 86400);
  else if(s < 2 * 365 * 86400)
    snprintf(out, len, "%lldd", s / 86400);
  else if(s < 8 * 365 * 86400)
    (s % (365 * 86400)) / 86400
      ? snprintf(out, len, "%lldy%lldd", s / (365 * 86400), (s % (365 * 86400)) / 86400)
      : snprintf(out, len, "%lldy", s / (365 * 86400));
  else
    snprintf(out, len, "%lldy", s / (365 * 86400));
}

struct ls_obj *ls_obj_new(cJSON *json)
{
  struct ls_obj *o = malloc(sizeof(*o));
  if(!o)
    abort();
  o->refs = 1;
  o->json = json;
  return o;
}

struct ls_obj *ls_obj_ref(struct ls_obj *o)
{
  if(o)
    __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
  return o;
}

void ls_obj_unref(struct ls_obj *o)
{
  if(o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    cJSON_Delete(o->json);
    free(o);
  }
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *ls_base64(const void *data, size_t n, bool url)
{
  const unsigned char *d = data;
  const char *al = url ? b64url : b64std;
  char *out = malloc(n / 3 * 4 + 8);
  if(!out)
    abort();
  size_t j = 0, i = 0;
  for(; i + 2 < n; i += 3) {
    unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
    out[j++] = al[v >> 18 & 63];
    out[j++] = al[v >> 12 & 63];
    out[j++] = al[v >> 6 & 63];
    out[j++] = al[v & 63];
  }
  if(i < n) {
    unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0);
    out[j++] = al[v >> 18 & 63];
    out[j++] = al[v >> 12 & 63];
    if(i + 1 < n)
      out[j++] = al[v >> 6 & 63];
    else if(!url)
      out[j++] = '=';
    if(!url)
      out[j++] = '=';
  }
  out[j] = '\0';
  return out;
}

static int b64val(int c)
{
  if(c >= 'A' && c <= 'Z')
    return c - 'A';
  if(c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if(c >= '0' && c <= '9')
    return c - '0' + 52;
  if(c == '+' || c == '-')
    return 62;
  if(c == '/' || c == '_')
    return 63;
  return -1;
}

bool ls_base64_valid(const char *s)
{
  size_t n = strlen(s), pad = 0;
  if(n % 4)
    return false;
  for(size_t i = 0; i < n; i++) {
    if(s[i] == '=') {
      pad++;
      if(i < n - 2)
        return false;
    } else if(pad || b64val((unsigned char)s[i]) < 0 || s[i] == '-' || s[i] == '_')
      return false;
  }
  return pad <= 2;
}

unsigned char *ls_base64_decode(const char *s, size_t *len)
{
  size_t n = strlen(s);
  unsigned char *out = malloc(n / 4 * 3 + 4);
  if(!out)
    abort();
  unsigned v = 0;
  int bits = 0;
  size_t j = 0;
  for(size_t i = 0; i < n; i++) {
    int c = b64val((unsigned char)s[i]);
    if(c < 0)
      continue;
    v = v << 6 | (unsigned)c;
    bits += 6;
    if(bits >= 8) {
      bits -= 8;
      out[j++] = (unsigned char)(v >> bits & 0xff);
    }
  }
  out[j] = 0;
  *len = j;
  return out;
}

void ls_meta_normalize(cJSON *obj)
{
  /* ObjectMeta's omitempty: an empty list or map is not stored */
  static const char *const keys[] = { "labels", "annotations", "finalizers", "ownerReferences",
                                      "managedFields" };
  cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
  for(size_t i = 0; m && i < sizeof(keys) / sizeof(keys[0]); i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keys[i]);
    if(v && ((cJSON_IsArray(v) || cJSON_IsObject(v)) ? !v->child : cJSON_IsNull(v)))
      cJSON_DeleteItemFromObjectCaseSensitive(m, keys[i]);
  }
}
