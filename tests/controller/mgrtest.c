#include "mgrtest.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "ktime.h"
#include "migration/migration.h"
#include "strbuf.h"

cJSON *mt_parse(const char *s)
{
  cJSON *v = cJSON_Parse(s);
  cr_assert(v, "bad test JSON: %s", s);
  return v;
}

void mt_ensure_namespace(struct kube_client *k, const char *ns)
{
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
  cJSON *o = mt_parse(buf);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, &KUBE_NAMESPACES, NULL, o, false, NULL, &st);
  cr_assert(rc == GW_OK || (rc == GW_ECONFLICT && !strcmp(st.reason, "AlreadyExists")),
            "namespace %s: %s %s", ns, gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

static void create(struct kube_client *k, const struct kube_gvr *r, const char *ns, cJSON *o)
{
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(k, r, ns, o, false, NULL, &st);
  cr_assert_eq(rc, GW_OK, "create %s: %s %s", json_get_str(o, "metadata.name"), gw_strerror(rc),
               st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

void mt_create_migration(struct kube_client *k, const char *ns, const char *name)
{
  char buf[1024];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"pgcopydb.io/v1\",\"kind\":\"Migration\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
           "\"spec\":{\"source\":{\"connectionSecretRef\":{\"name\":\"src\",\"key\":\"uri\"}},"
           "\"target\":{\"connectionSecretRef\":{\"name\":\"dst\",\"key\":\"uri\"}}}}",
           name, ns);
  create(k, &MIGRATION_GVR, ns, mt_parse(buf));
}

void mt_create_configmap(struct kube_client *k, const char *ns, const char *name,
                         const char *value)
{
  char buf[512];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"%s\",\"labels\":{\"godwit-test\":\"1\"}},\"data\":{\"v\":\"%s\"}}",
           name, ns, value);
  create(k, &KUBE_CONFIGMAPS, ns, mt_parse(buf));
}

cJSON *mt_get(struct kube_client *k, const struct kube_gvr *r, const char *ns, const char *name)
{
  struct kube_status st;
  kube_status_init(&st);
  cJSON *o = NULL;
  gw_rc rc = kube_get(k, r, ns, name, &o, &st);
  kube_status_release(&st);
  if(rc)
    cJSON_Delete(o);
  return rc ? NULL : o;
}

const char *mt_phase(struct kube_client *k, const char *ns, const char *name)
{
  static __thread char phase[64];
  cJSON *o = mt_get(k, &MIGRATION_GVR, ns, name);
  const char *p = json_get_str(o, "status.phase");
  snprintf(phase, sizeof(phase), "%s", p ? p : "");
  cJSON_Delete(o);
  return phase;
}

bool mt_wait(int timeout_ms, bool (*cond)(void *), void *arg)
{
  int64_t end = kt_mono_ms() + timeout_ms;
  for(;;) {
    if(cond(arg))
      return true;
    if(kt_mono_ms() >= end)
      return false;
    kt_sleep_ms(50, NULL);
  }
}

void mt_mgr_init(struct mt_mgr *r, struct kube_client *k, const struct mgr_opts *opts)
{
  memset(r, 0, sizeof(*r));
  struct mgr_opts o = { 0 };
  if(opts)
    o = *opts;
  else {
    o.workers = 2;
    o.metrics_port = -1;
  }
  o.kube = k;
  cr_assert_eq(mgr_new(&r->m, &o), GW_OK);
}

static void *run(void *arg)
{
  struct mt_mgr *r = arg;
  r->rc = mgr_run(r->m, &r->stop);
  return NULL;
}

static bool running(void *m)
{
  return mgr_leading(m);
}

void mt_mgr_run(struct mt_mgr *r)
{
  char err[256] = "";
  cr_assert_eq(mgr_start(r->m, err, sizeof(err)), GW_OK, "%s", err);
  cr_assert_eq(pthread_create(&r->t, NULL, run, r), 0);
  r->running = true;
  /* caches synced and workers running: what the test creates next arrives as a watch event */
  cr_assert(mt_wait(30000, running, r->m), "the manager did not start");
}

void mt_mgr_stop(struct mt_mgr *r)
{
  if(r->running) {
    r->stop = 1;
    pthread_join(r->t, NULL);
    r->running = false;
  }
  mgr_free(r->m);
  r->m = NULL;
}

double mt_metric(const char *text, const char *series)
{
  size_t n = strlen(series);
  for(const char *p = strstr(text, series); p; p = strstr(p + 1, series))
    if((p == text || p[-1] == '\n') && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1;
}

double mt_mgr_metric(struct mgr *m, const char *series)
{
  struct strbuf sb;
  strbuf_init(&sb, 8u << 20);
  cr_assert_eq(mgr_render_metrics(m, &sb), GW_OK);
  double v = mt_metric(strbuf_str(&sb), series);
  strbuf_release(&sb);
  return v;
}
