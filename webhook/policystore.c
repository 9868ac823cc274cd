#include "policystore.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define POLICY_MAX_BYTES (1u << 20)

struct holder {
  struct policy *policy;
  atomic_int refs; /* one for being current, one per reader */
};

static struct {
  const char *path;
  pthread_mutex_t lock;
  struct holder *current;
  struct stat last;
  bool tried;
} ps = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void unref(struct holder *h)
{
  if(h && atomic_fetch_sub(&h->refs, 1) == 1) {
    policy_free(h->policy);
    free(h);
  }
}

static void publish(struct policy *p)
{
  struct holder *h = calloc(1, sizeof(*h));
  if(!h) {
    policy_free(p);
    return;
  }
  h->policy = p;
  atomic_init(&h->refs, 1);
  pthread_mutex_lock(&ps.lock);
  struct holder *old = ps.current;
  ps.current = h;
  pthread_mutex_unlock(&ps.lock);
  unref(old);
}

void policy_store_init(const char *path)
{
  ps.path = path;
  ps.tried = false;
  memset(&ps.last, 0, sizeof(ps.last));
  if(!path)
    publish(policy_default());
}

static gw_rc read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if(!f) {
    snprintf(err, errlen, "cannot open policy file \"%s\"", path);
    return GW_ENOTFOUND;
  }
  char *buf = malloc(POLICY_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, POLICY_MAX_BYTES + 1, f) : 0;
  fclose(f);
  if(!buf)
    return GW_ENOMEM;
  if(n > POLICY_MAX_BYTES) {
    free(buf);
    snprintf(err, errlen, "policy file \"%s\" is larger than 1 MiB", path);
    return GW_ETOOBIG;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return GW_OK;
}

gw_rc policy_store_reload(bool *changed, char *err, size_t errlen)
{
  *changed = false;
  if(!ps.path)
    return GW_OK;
  struct stat st;
  if(stat(ps.path, &st)) {
    snprintf(err, errlen, "policy file \"%s\" is missing", ps.path);
    return GW_ENOTFOUND;
  }
  if(ps.tried && st.st_ino == ps.last.st_ino && st.st_dev == ps.last.st_dev &&
     st.st_size == ps.last.st_size && st.st_mtim.tv_sec == ps.last.st_mtim.tv_sec &&
     st.st_mtim.tv_nsec == ps.last.st_mtim.tv_nsec)
    return GW_OK;
  ps.tried = true;
  ps.last = st;
  char *text;
  size_t len;
  gw_rc rc = read_file(ps.path, &text, &len, err, errlen);
  if(rc)
    return rc;
  struct policy *p;
  char why[256];
  rc = policy_parse(text, len, &p, why, sizeof(why));
  free(text);
  if(rc) {
    snprintf(err, errlen, "policy file \"%s\" refused, keeping the last good policy: %s",
             ps.path, why);
    return rc;
  }
  publish(p);
  *changed = true;
  return GW_OK;
}

bool policy_store_loaded(void)
{
  pthread_mutex_lock(&ps.lock);
  bool loaded = ps.current != NULL;
  pthread_mutex_unlock(&ps.lock);
  return loaded;
}

struct policy_ref policy_store_acquire(void)
{
  struct policy_ref r = { NULL, NULL };
  pthread_mutex_lock(&ps.lock);
  struct holder *h = ps.current;
  if(h) {
    atomic_fetch_add(&h->refs, 1);
    r.policy = h->policy;
    r.token = h;
  }
  pthread_mutex_unlock(&ps.lock);
  return r;
}

void policy_store_release(struct policy_ref ref)
{
  unref(ref.token);
}

void policy_store_digest(char *buf, size_t len)
{
  struct policy_ref r = policy_store_acquire();
  snprintf(buf, len, "%s", r.policy ? r.policy->digest : "none");
  policy_store_release(r);
}

void policy_store_shutdown(void)
{
  pthread_mutex_lock(&ps.lock);
  struct holder *h = ps.current;
  ps.current = NULL;
  pthread_mutex_unlock(&ps.lock);
  unref(h);
}
