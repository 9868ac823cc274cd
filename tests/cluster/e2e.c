/* e2e.c: the Migration end-to-end fixture (e2e.h). */
#include "e2e.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "json.h"
#include "strbuf.h"

void e2e_sleep_ms(long ms)
{
  struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
  while(nanosleep(&d, &d) < 0 && errno == EINTR)
    ;
}

static long long now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static char *b64(const char *s)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(s);
  char *out = malloc(4 * ((n + 2) / 3) + 1);
  size_t o = 0;
  for(size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned char)s[i] << 16;
    if(i + 1 < n)
      v |= (unsigned char)s[i + 1] << 8;
    if(i + 2 < n)
      v |= (unsigned char)s[i + 2];
    out[o++] = tbl[(v >> 18) & 63];
    out[o++] = tbl[(v >> 12) & 63];
    out[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? tbl[v & 63] : '=';
  }
  out[o] = '\0';
  return out;
}

/* ---- setup ---- */

static void roles(struct e2e *e, const struct e2e_opts *o)
{
  if(!o->target_only) {
    pgfx_create_role(&e->src, "src_app", E2E_SRC_PW,
                     o->logical ? "LOGIN REPLICATION" : "LOGIN");
    pgfx_create_db(&e->src, "shop", NULL);
  }
  if(o->logical && !o->target_only)
    pgfx_exec(&e->src, "shop", "GRANT CREATE ON DATABASE shop TO src_app");
  pgfx_create_role(&e->dst, "dst_app", E2E_DST_PW, "LOGIN");
  if(o->no_target_create) {
    pgfx_create_db(&e->dst, "shop", NULL);
    pgfx_exec(&e->dst, "shop", "REVOKE CREATE ON SCHEMA public FROM PUBLIC");
  } else {
    pgfx_create_db(&e->dst, "shop", "dst_app");
  }
  if(o->logical) {
    pgfx_exec(&e->dst, "shop",
              "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT p.oid::regprocedure FROM "
              "pg_proc p WHERE p.proname LIKE 'pg\\_replication\\_origin\\_%%' LOOP EXECUTE "
              "format('GRANT EXECUTE ON FUNCTION %%s TO dst_app', f); END LOOP; END $$");
    pgfx_exec(&e->dst, "shop", "GRANT SET ON PARAMETER session_replication_role TO dst_app");
  }
  char uri[256];
  if(!o->target_only)
    e2e_secret(e, "src", pgfx_uri(&e->src, uri, sizeof(uri), "src_app", E2E_SRC_PW, "shop"));
  e2e_secret(e, "dst", pgfx_uri(&e->dst, uri, sizeof(uri), "dst_app", E2E_DST_PW, "shop"));
  e2e_secret(e, "super", pgfx_super_uri(&e->dst, uri, sizeof(uri), "shop"));
}

void e2e_start(struct e2e *e, const struct e2e_opts *o)
{
  static const struct e2e_opts none;
  if(!o)
    o = &none;
  memset(e, 0, sizeof(*e));
  /* the controller (started by up) reads its flags from the environment */
  setenv("GODWIT_PROBE_INTERVAL_MS", "300", 1);
  setenv("GODWIT_LAG_INTERVAL_MS", "700", 1);
  setenv("GODWIT_POLL_INTERVAL_MS", "1000", 1);
  setenv("GODWIT_RUNNER_IMAGE", "ghcr.io/godwit-dev/godwit:test", 1);
  setenv("GODWIT_STEP_ATTEMPTS", "3", 1);
  setenv("GODWIT_ATTEMPT_BACKOFF", "1", 0); /* a test may set its own first */
  cl_start(&e->c, CL_WEBHOOK | CL_JOBRUNNER | (o->no_controller ? 0 : CL_CONTROLLER) |
                    (o->faults ? CL_FAULTS : 0) | (o->nodes ? CL_NODES : 0));
  e->k = cl_client(&e->c, "admin");
  if(!o->target_only) {
    pgfx_start(&e->src, &(struct pgfx_opts){
                          .logical = o->logical,
                          .allow_plugins = o->plugins_default ? NULL : "wal2json",
                          .bin = o->src_bin });
    e->src_started = true;
  }
  if(o->no_database)
    return;
  pgfx_start(&e->dst, &(struct pgfx_opts){ 0 });
  e->pg_started = true;
  roles(e, o);
}

static void rec_stop(struct e2e_rec *p);

void e2e_stop(struct e2e *e)
{
  for(size_t i = 0; i < sizeof(e->recs) / sizeof(e->recs[0]); i++)
    rec_stop(&e->recs[i]);
  cl_stop(&e->c);
  if(e->pg_started) {
    if(e->src_started)
      pgfx_stop(&e->src);
    pgfx_stop(&e->dst);
    e->pg_started = false;
  }
}

void e2e_secret(struct e2e *e, const char *name, const char *uri)
{
  char *v = b64(uri);
  char buf[1024];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"%s\"},\"data\":{\"uri\":\"%s\"}}", name, E2E_NS, v);
  free(v);
  cJSON *o = cJSON_Parse(buf);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_create(e->k, &KUBE_SECRETS, E2E_NS, o, false, NULL, &st);
  cr_assert(!rc, "secret %s: %s %s", name, gw_strerror(rc), st.message);
  kube_status_release(&st);
  cJSON_Delete(o);
}

void e2e_secret_replace(struct e2e *e, const char *name, const char *uri)
{
  char *v = b64(uri);
  char patch[1024];
  snprintf(patch, sizeof(patch), "{\"data\":{\"uri\":\"%s\"}}", v);
  free(v);
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_patch(e->k, &KUBE_SECRETS, E2E_NS, name, KUBE_PATCH_MERGE, patch, NULL, NULL,
                        &st);
  cr_assert(!rc, "secret %s: %s %s", name, gw_strerror(rc), st.message);
  kube_status_release(&st);
}

void e2e_target_on_create(struct e2e *e, const char *table, const char *row_body,
                          const char *ddl)
{
  char def[400];
  if(!ddl) {
    snprintf(def, sizeof(def), "CREATE TRIGGER row_fn BEFORE INSERT ON %s FOR EACH ROW EXECUTE "
             "FUNCTION godwit_t.row_fn()", table);
    ddl = def;
  }
  pgfx_exec(&e->dst, "shop", "CREATE SCHEMA godwit_t; GRANT USAGE ON SCHEMA godwit_t TO dst_app");
  if(row_body)
    pgfx_exec(&e->dst, "shop", "CREATE FUNCTION godwit_t.row_fn() RETURNS trigger LANGUAGE "
              "plpgsql AS $$ BEGIN %s END $$", row_body);
  pgfx_exec(&e->dst, "shop",
            "CREATE FUNCTION godwit_t.on_create() RETURNS event_trigger LANGUAGE plpgsql AS $$"
            "  DECLARE r record; BEGIN"
            "    FOR r IN SELECT * FROM pg_event_trigger_ddl_commands()"
            "             WHERE command_tag = 'CREATE TABLE' AND object_identity = '%s'"
            "    LOOP EXECUTE '%s'; END LOOP; END $$;"
            "CREATE EVENT TRIGGER godwit_on_create ON ddl_command_end"
            "  EXECUTE FUNCTION godwit_t.on_create()",
            table, ddl);
}

void e2e_load(struct e2e *e, long orders)
{
  pgfx_exec(&e->src, "shop",
            "CREATE SCHEMA sales; CREATE SCHEMA audit;"
            "CREATE TABLE public.customers(id int PRIMARY KEY, email text UNIQUE NOT NULL,"
            "  name text);"
            "INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'customer ' || g"
            "  FROM generate_series(1, 1000) g;"
            "CREATE SEQUENCE sales.invoice_seq; SELECT setval('sales.invoice_seq', 4242);"
            "CREATE TABLE sales.orders(id bigint PRIMARY KEY,"
            "  customer_id int NOT NULL REFERENCES public.customers(id), amount numeric(10,2),"
            "  note text);"
            "INSERT INTO sales.orders SELECT g, 1 + g %% 1000, (g %% 9973) / 100.0, 'n' || g"
            "  FROM generate_series(1, %ld) g;"
            "CREATE INDEX orders_customer_idx ON sales.orders(customer_id);"
            "CREATE TABLE audit.log(id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT"
            "  '2024-01-01', msg text);"
            "INSERT INTO audit.log(msg) SELECT 'event ' || g FROM generate_series(1, 100) g;"
            "GRANT USAGE ON SCHEMA sales, audit TO src_app;"
            "GRANT SELECT ON ALL TABLES IN SCHEMA public, sales, audit TO src_app;"
            "GRANT SELECT ON ALL SEQUENCES IN SCHEMA public, sales, audit TO src_app;"
            "ANALYZE",
            orders);
  char *oid = pgfx_query1(&e->src, "shop", "SELECT lo_from_bytea(0, 'godwit large object')");
  pgfx_exec(&e->src, "shop", "GRANT SELECT ON LARGE OBJECT %s TO src_app", oid);
  free(oid);
}

/* ---- kubectl ---- */

int e2e_kubectl(struct e2e *e, char **out, const char *fmt, ...)
{
  char args[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof(args), fmt, ap);
  va_end(ap);
  return cl_kubectl(&e->c, "admin", out, "%s", args);
}

void e2e_apply(struct e2e *e, const char *fmt, ...)
{
  char *yaml = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert(vasprintf(&yaml, fmt, ap) >= 0);
  va_end(ap);
  static int n;
  char path[400];
  snprintf(path, sizeof(path), "%s/apply-%d-%d.yaml", e->c.dir, (int)getpid(), n++);
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  fputs(yaml, f);
  fclose(f);
  char *out = NULL;
  int rc = e2e_kubectl(e, &out, "apply -f '%s'", path);
  cr_assert_eq(rc, 0, "kubectl apply failed:\n%s\n---\n%s", out, yaml);
  free(out);
  free(yaml);
}

/* ---- reading ---- */

cJSON *e2e_get(struct e2e *e, const char *name)
{
  cJSON *o = NULL;
  struct kube_status st;
  kube_status_init(&st);
  static const struct kube_gvr mig = { "pgcopydb.io", "v1", "migrations", true };
  gw_rc rc = kube_get(e->k, e->gvr ? e->gvr : &mig, E2E_NS, name, &o, &st);
  kube_status_release(&st);
  if(rc) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

const char *e2e_phase(struct e2e *e, const char *name)
{
  static __thread char buf[64];
  cJSON *o = e2e_get(e, name);
  const char *p = json_get_str(o, "status.phase");
  snprintf(buf, sizeof(buf), "%s", p ? p : "");
  cJSON_Delete(o);
  return buf;
}

static const cJSON *find_cond(const cJSON *o, const char *type)
{
  const cJSON *c;
  cJSON_ArrayForEach(c, json_get(o, "status.conditions"))
  {
    const char *t = json_get_str(c, "type");
    if(t && !strcmp(t, type))
      return c;
  }
  return NULL;
}

bool e2e_wait_cond(struct e2e *e, const char *name, const char *type, const char *status,
                   const char *reason, int timeout_ms)
{
  long long end = now_ms() + timeout_ms;
  do {
    cJSON *o = e2e_get(e, name);
    const cJSON *c = find_cond(o, type);
    const char *s = json_get_str(c, "status"), *r = json_get_str(c, "reason");
    bool ok = s && !strcmp(s, status) && (!reason || (r && !strcmp(r, reason)));
    cJSON_Delete(o);
    if(ok)
      return true;
    e2e_sleep_ms(200);
  } while(now_ms() < end);
  return false;
}

bool e2e_wait_phase(struct e2e *e, const char *name, const char *phase, int timeout_ms)
{
  long long end = now_ms() + timeout_ms;
  do {
    if(!strcmp(e2e_phase(e, name), phase))
      return true;
    e2e_sleep_ms(200);
  } while(now_ms() < end);
  return false;
}

const char *e2e_cond_message(struct e2e *e, const char *name, const char *type)
{
  static __thread char buf[8192];
  cJSON *o = e2e_get(e, name);
  const char *m = json_get_str(find_cond(o, type), "message");
  snprintf(buf, sizeof(buf), "%s", m ? m : "");
  cJSON_Delete(o);
  return buf;
}

const char *e2e_cond_reason(struct e2e *e, const char *name, const char *type)
{
  static __thread char buf[128];
  cJSON *o = e2e_get(e, name);
  const char *m = json_get_str(find_cond(o, type), "reason");
  snprintf(buf, sizeof(buf), "%s", m ? m : "");
  cJSON_Delete(o);
  return buf;
}

const char *e2e_cond_status(struct e2e *e, const char *name, const char *type)
{
  static __thread char buf[16];
  cJSON *o = e2e_get(e, name);
  const char *m = json_get_str(find_cond(o, type), "status");
  snprintf(buf, sizeof(buf), "%s", m ? m : "");
  cJSON_Delete(o);
  return buf;
}

static cJSON *events_of(struct e2e *e, const char *name)
{
  char sel[200];
  snprintf(sel, sizeof(sel), "involvedObject.name=%s", name);
  struct kube_list_opts lo = { .field_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(e->k, &KUBE_EVENTS, E2E_NS, &lo, &list, &st);
  kube_status_release(&st);
  cr_assert(!rc, "listing Events: %s", gw_strerror(rc));
  return list;
}

char *e2e_events(struct e2e *e, const char *name)
{
  cJSON *list = events_of(e, name);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 22);
  const cJSON *ev;
  gw_rc rc = GW_OK;
  cJSON_ArrayForEach(ev, json_get(list, "items"))
  {
    const char *kind = json_get_str(ev, "involvedObject.kind");
    if(!kind || strcmp(kind, e->kind ? e->kind : "Migration"))
      continue;
    const cJSON *count = json_get(ev, "count");
    if(!rc)
      rc = strbuf_addf(&sb, "%s %s (x%d): %s\n", json_get_str(ev, "type"),
                       json_get_str(ev, "reason"),
                       cJSON_IsNumber(count) ? (int)count->valuedouble : 1,
                       json_get_str(ev, "message") ? json_get_str(ev, "message") : "");
  }
  cJSON_Delete(list);
  char *s = strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

int e2e_event_count(struct e2e *e, const char *name, const char *reason)
{
  cJSON *list = events_of(e, name);
  int n = 0;
  const cJSON *ev;
  cJSON_ArrayForEach(ev, json_get(list, "items"))
  {
    const char *r = json_get_str(ev, "reason"), *kind = json_get_str(ev, "involvedObject.kind");
    const cJSON *count = json_get(ev, "count");
    if(r && !strcmp(r, reason) && kind && !strcmp(kind, e->kind ? e->kind : "Migration"))
      n += cJSON_IsNumber(count) ? (int)count->valuedouble : 1;
  }
  cJSON_Delete(list);
  return n;
}

const char *e2e_event_message(struct e2e *e, const char *name, const char *reason)
{
  static __thread char buf[2048];
  buf[0] = '\0';
  e2e_wait_event(e, name, reason, 10000);
  cJSON *list = events_of(e, name);
  const cJSON *ev;
  cJSON_ArrayForEach(ev, json_get(list, "items"))
  {
    const char *r = json_get_str(ev, "reason"), *kind = json_get_str(ev, "involvedObject.kind");
    if(r && !strcmp(r, reason) && kind && !strcmp(kind, e->kind ? e->kind : "Migration"))
      snprintf(buf, sizeof(buf), "%s", json_get_str(ev, "message"));
  }
  cJSON_Delete(list);
  return buf;
}

bool e2e_wait_event(struct e2e *e, const char *name, const char *reason, int timeout_ms)
{
  return e2e_wait_event_count(e, name, reason, 1, timeout_ms) > 0;
}

int e2e_wait_event_count(struct e2e *e, const char *name, const char *reason, int min,
                         int timeout_ms)
{
  long long end = now_ms() + timeout_ms;
  for(;;) {
    int n = e2e_event_count(e, name, reason);
    if(n >= min || now_ms() >= end)
      return n;
    e2e_sleep_ms(200);
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *e2e_jobs(struct e2e *e, const char *name)
{
  char sel[200];
  snprintf(sel, sizeof(sel), "godwit.dev/migration=%s", name);
  struct kube_list_opts lo = { .label_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(e->k, &KUBE_JOBS, E2E_NS, &lo, &list, &st);
  kube_status_release(&st);
  cr_assert(!rc);
  char *names[256];
  int n = 0;
  const cJSON *j;
  cJSON_ArrayForEach(j, json_get(list, "items"))
    if(n < 256)
      names[n++] = strdup(json_get_str(j, "metadata.name"));
  qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc arc = GW_OK;
  for(int i = 0; i < n; i++) {
    if(!arc)
      arc = strbuf_addf(&sb, "%s\n", names[i]);
    free(names[i]);
  }
  cJSON_Delete(list);
  char *s = strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  return s;
}

char *e2e_describe(struct e2e *e, const char *name)
{
  cJSON *o = e2e_get(e, name);
  char *status = o ? cJSON_Print(json_get(o, "status")) : NULL;
  char *events = e2e_events(e, name);
  char *jobs = e2e_jobs(e, name);
  char *out = NULL;
  if(asprintf(&out, "status: %s\nevents:\n%sjobs:\n%s(cluster dir %s)", status ? status : "none",
              events, jobs, e->c.dir) < 0)
    out = NULL;
  if(status)
    cJSON_free(status);
  free(events);
  free(jobs);
  cJSON_Delete(o);
  return out;
}

/* ---- data ---- */

long long e2e_count(struct pgfx *pg, const char *db, const char *table)
{
  char *v = pgfx_query1(pg, db, "SELECT count(*) FROM %s", table);
  long long n = v ? atoll(v) : -1;
  free(v);
  return n;
}

long long e2e_checksum(struct pgfx *pg, const char *db, const char *table)
{
  char *v = pgfx_query1(pg, db, "SELECT coalesce(sum(hashtext(t::text)::bigint), 0) FROM %s t",
                        table);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

void e2e_assert_same(struct e2e *e)
{
  static const char *const tables[] = { "public.customers", "sales.orders", "audit.log", NULL };
  for(int i = 0; tables[i]; i++) {
    long long a = e2e_count(&e->src, "shop", tables[i]), b = e2e_count(&e->dst, "shop", tables[i]);
    cr_assert_eq(a, b, "%s: %lld rows on the source, %lld on the target", tables[i], a, b);
    cr_assert_gt(b, 0, "%s is empty on the target", tables[i]);
    cr_assert_eq(e2e_checksum(&e->src, "shop", tables[i]),
                 e2e_checksum(&e->dst, "shop", tables[i]), "%s: checksums differ", tables[i]);
  }
}

/* ---- the phase recorder ---- */

static int on_event(void *ctx, const char *type, const cJSON *obj)
{
  struct e2e_rec *p = ctx;
  (void)type;
  const char *ph = json_get_str(obj, "status.phase");
  if(ph) {
    const char *clone = "-", *msg = "";
    const cJSON *c;
    pthread_mutex_lock(&p->mu);
    cJSON_ArrayForEach(c, json_get(obj, "status.conditions"))
    {
      const char *t = json_get_str(c, "type"), *r = json_get_str(c, "reason");
      if(t && r && !strcmp(t, "CloneCompleted")) {
        clone = r;
        msg = json_get_str(c, "message") ? json_get_str(c, "message") : "";
      }
      if(!t || !r)
        continue;
      char tr[80];
      snprintf(tr, sizeof(tr), "%s/%s", t, r);
      bool known = false;
      for(int i = 0; i < p->nr && !known; i++)
        known = !strcmp(p->reasons[i], tr);
      if(!known && p->nr < 64)
        snprintf(p->reasons[p->nr++], sizeof(p->reasons[0]), "%s", tr);
    }
    pthread_mutex_unlock(&p->mu);
    char state[64];
    snprintf(state, sizeof(state), "%s/%s", ph, clone);
    pthread_mutex_lock(&p->mu);
    if(p->n < 64 && (!p->n || strcmp(p->seen[p->n - 1], ph)))
      snprintf(p->seen[p->n++], sizeof(p->seen[0]), "%s", ph);
    if(p->ns < 96 && (!p->ns || strcmp(p->states[p->ns - 1], state))) {
      snprintf(p->messages[p->ns], sizeof(p->messages[0]), "%s", msg);
      snprintf(p->states[p->ns++], sizeof(p->states[0]), "%s", state);
    }
    pthread_mutex_unlock(&p->mu);
  }
  return p->stop;
}

static void *recorder(void *arg)
{
  struct e2e_rec *p = arg;
  static const struct kube_gvr mig = { "pgcopydb.io", "v1", "migrations", true };
  char sel[128];
  snprintf(sel, sizeof(sel), "metadata.name=%s", p->name);
  while(!p->stop) {
    struct kube_watch_opts wo = { .field_selector = sel, .timeout_s = 5 };
    struct kube_status st;
    kube_status_init(&st);
    gw_rc rc = kube_watch(p->e->k, &mig, E2E_NS, &wo, on_event, p, &p->stop, &st);
    kube_status_release(&st);
    (void)rc; /* from the start again: the list of ADDED events repeats the current phase */
  }
  return NULL;
}

void e2e_phases_start(struct e2e_phases *ph, struct e2e *e, const char *name)
{
  struct e2e_rec *p = NULL;
  for(size_t i = 0; i < sizeof(e->recs) / sizeof(e->recs[0]) && !p; i++)
    if(!e->recs[i].used)
      p = &e->recs[i];
  cr_assert_not_null(p, "more than %zu phase recorders", sizeof(e->recs) / sizeof(e->recs[0]));
  memset(p, 0, sizeof(*p));
  p->e = e;
  p->used = true;
  snprintf(p->name, sizeof(p->name), "%s", name);
  pthread_mutex_init(&p->mu, NULL);
  cr_assert(!pthread_create(&p->t, NULL, recorder, p));
  p->running = true;
  ph->r = p;
}

static void rec_stop(struct e2e_rec *p)
{
  if(!p->running)
    return;
  p->stop = 1;
  pthread_join(p->t, NULL);
  p->running = false;
}

void e2e_phases_stop(struct e2e_phases *ph)
{
  rec_stop(ph->r);
}

/* "a b c": n rows of rows (each stride bytes), under p->mu, cut to fit buf. */
static const char *rec_join(struct e2e_rec *p, const char *rows, size_t stride, const int *n,
                            char *buf, size_t len)
{
  buf[0] = '\0';
  pthread_mutex_lock(&p->mu);
  size_t used = 0;
  for(int i = 0; i < *n && used + stride + 2 < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", rows + i * stride);
  pthread_mutex_unlock(&p->mu);
  return buf;
}

/* Whether one of the n rows (each stride bytes) is want, under p->mu; its index in *at. */
static bool rec_has(struct e2e_rec *p, const char *rows, size_t stride, const int *n,
                    const char *want, int *at)
{
  pthread_mutex_lock(&p->mu);
  bool saw = false;
  for(int i = 0; i < *n && !saw; i++)
    if(!strcmp(rows + i * stride, want)) {
      saw = true;
      if(at)
        *at = i;
    }
  pthread_mutex_unlock(&p->mu);
  return saw;
}

bool e2e_phases_saw(struct e2e_phases *ph, const char *phase)
{
  struct e2e_rec *p = ph->r;
  return rec_has(p, p->seen[0], sizeof(p->seen[0]), &p->n, phase, NULL);
}

bool e2e_phases_wait(struct e2e_phases *ph, const char *phase, int timeout_ms)
{
  long long end = now_ms() + timeout_ms;
  while(!e2e_phases_saw(ph, phase)) {
    if(now_ms() >= end)
      return false;
    e2e_sleep_ms(20);
  }
  return true;
}

const char *e2e_phases_list(struct e2e_phases *ph)
{
  struct e2e_rec *p = ph->r;
  static __thread char buf[2048];
  return rec_join(p, p->seen[0], sizeof(p->seen[0]), &p->n, buf, sizeof(buf));
}

bool e2e_phases_saw_clone(struct e2e_phases *ph, const char *phase, const char *reason, char *msg,
                          size_t len)
{
  struct e2e_rec *p = ph->r;
  char state[64];
  snprintf(state, sizeof(state), "%s/%s", phase, reason);
  int at = -1;
  bool saw = rec_has(p, p->states[0], sizeof(p->states[0]), &p->ns, state, &at);
  if(saw && msg && len) /* rows are written once, before ns counts them */
    snprintf(msg, len, "%s", p->messages[at]);
  return saw;
}

bool e2e_phases_saw_reason(struct e2e_phases *ph, const char *type, const char *reason)
{
  struct e2e_rec *p = ph->r;
  char tr[80];
  snprintf(tr, sizeof(tr), "%s/%s", type, reason);
  return rec_has(p, p->reasons[0], sizeof(p->reasons[0]), &p->nr, tr, NULL);
}

const char *e2e_phases_reasons(struct e2e_phases *ph)
{
  struct e2e_rec *p = ph->r;
  static __thread char buf[4096];
  return rec_join(p, p->reasons[0], sizeof(p->reasons[0]), &p->nr, buf, sizeof(buf));
}

const char *e2e_phases_clone_list(struct e2e_phases *ph)
{
  struct e2e_rec *p = ph->r;
  static __thread char buf[4096];
  return rec_join(p, p->states[0], sizeof(p->states[0]), &p->ns, buf, sizeof(buf));
}

/* ---- the controller process ---- */

pid_t e2e_process_pid(struct e2e *e, const char *process)
{
  FILE *f = fopen(cl_path(&e->c, "pids"), "r");
  if(!f)
    return 0;
  char name[64];
  long pid, last = 0;
  while(fscanf(f, "%63s %ld", name, &pid) == 2)
    if(!strcmp(name, process))
      last = pid;
  fclose(f);
  return (pid_t)last;
}

pid_t e2e_controller_pid(struct e2e *e)
{
  return e2e_process_pid(e, "controller");
}

/* Sends sig and waits until the process is gone (up started it: it is not our child). */
static void kill_and_wait(pid_t pid, int sig)
{
  if(kill(pid, sig) != 0)
    return;
  for(int i = 0; i < 250 && kill(pid, 0) == 0; i++) {
    char st[64], path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    bool zombie = false;
    if(f) {
      zombie = fscanf(f, "%*d %*s %63s", st) == 1 && st[0] == 'Z';
      fclose(f);
    }
    if(zombie)
      break;
    waitpid(pid, NULL, WNOHANG);
    e2e_sleep_ms(20);
  }
}

void e2e_controller_kill(struct e2e *e)
{
  pid_t pid = e2e_controller_pid(e);
  cr_assert_gt(pid, 0, "no controller pid in %s", cl_path(&e->c, "pids"));
  kill_and_wait(pid, SIGKILL);
}

void e2e_hold_job_create(struct e2e *e)
{
  cl_fault(&e->c, "{\"verb\":\"create\",\"pathRegex\":\"/jobs$\",\"code\":500,"
                  "\"count\":1,\"delayMs\":20000}");
}

void e2e_controller_kill_holding(struct e2e *e)
{
  long long end = e2e_mono_ms() + 30000;
  while(cl_fault_count(&e->c, 0) != 0 && e2e_mono_ms() < end)
    e2e_sleep_ms(20);
  cr_assert_eq(cl_fault_count(&e->c, 0), 0, "the controller created no Job within 30 s");
  e2e_controller_kill(e);
}

/* Starts argv as a process of the cluster: a session of its own, its output appended to log,
 * killed with the test, recorded in DIR/pids as name (so down stops it). Its pid. */
static pid_t spawn_recorded(struct e2e *e, const char *name, const char *log, char *const argv[])
{
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if(!pid) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setsid();
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if(fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  FILE *f = fopen(cl_path(&e->c, "pids"), "a");
  if(f) {
    fprintf(f, "%s %ld\n", name, (long)pid);
    fclose(f);
  }
  return pid;
}

void e2e_injector_start(struct e2e *e)
{
  const char *build = getenv("GODWIT_BUILD") ? getenv("GODWIT_BUILD") : "build";
  char bin[512], port[400], log[400], cert[400], key[400];
  snprintf(bin, sizeof(bin), "%s/godwit-injector", build);
  snprintf(port, sizeof(port), "%s", cl_path(&e->c, "injector.port"));
  snprintf(log, sizeof(log), "%s", cl_path(&e->c, "injector.log"));
  snprintf(cert, sizeof(cert), "%s", cl_path(&e->c, "pki/webhook/tls.crt"));
  snprintf(key, sizeof(key), "%s", cl_path(&e->c, "pki/webhook/tls.key"));
  unlink(port);
  char *argv[] = { bin, "--cert", cert, "--key", key, "--port-file", port, NULL };
  spawn_recorded(e, "webhook-injector", log, argv);
  char *p = NULL;
  for(int i = 0; i < 200 && !(p = cl_slurp(port)); i++)
    e2e_sleep_ms(50);
  cr_assert(p, "the injector did not start; see %s", log);
  int n = atoi(p);
  free(p);
  char *bundle = cl_slurp(cl_path(&e->c, "pki/webhook/cabundle"));
  cr_assert(bundle, "no webhook CA bundle");
  bundle[strcspn(bundle, "\n")] = '\0';
  e2e_apply(e, "apiVersion: admissionregistration.k8s.io/v1\n"
               "kind: MutatingWebhookConfiguration\n"
               "metadata: {name: test-sidecar-injector}\n"
               "webhooks:\n"
               "- name: inject.sidecar.test\n"
               "  clientConfig: {url: \"https://127.0.0.1:%d/mutate\", caBundle: %s}\n"
               "  rules:\n"
               "  - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], "
               "resources: [pods]}\n"
               "  failurePolicy: Fail\n"
               "  sideEffects: None\n"
               "  admissionReviewVersions: [v1]\n",
            n, bundle);
  free(bundle);
}

/* The node agent's published endpoint ("" when none). */
static void agent_endpoint(struct e2e *e, const char *node, char *buf, size_t len)
{
  buf[0] = 0;
  cJSON *n = NULL;
  struct kube_status st;
  kube_status_init(&st);
  if(!kube_get(e->k, &KUBE_NODES, NULL, node, &n, &st)) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
      json_get(n, "metadata.annotations"), "migration.podmotion.io/node-agent"));
    cJSON *caps = v ? cJSON_Parse(v) : NULL;
    const char *ep = json_get_str(caps, "endpoint");
    snprintf(buf, len, "%s", ep ? ep : "");
    cJSON_Delete(caps);
  }
  kube_status_release(&st);
  cJSON_Delete(n);
}

/* The agent's command line (NUL-separated) from /proc, kept in DIR/nodeagent-NODE.cmdline for
 * when it is gone; its length. */
static size_t agent_cmdline(struct e2e *e, const char *node, pid_t pid, char *buf, size_t len)
{
  char path[64], keep[400];
  snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
  snprintf(keep, sizeof(keep), "%s", cl_path(&e->c, "nodeagent-"));
  strncat(keep, node, sizeof(keep) - strlen(keep) - 1);
  strncat(keep, ".cmdline", sizeof(keep) - strlen(keep) - 1);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  if(f)
    fclose(f);
  if(n) {
    f = fopen(keep, "w");
    if(f) {
      fwrite(buf, 1, n, f);
      fclose(f);
    }
  } else {
    f = fopen(keep, "r");
    n = f ? fread(buf, 1, len - 1, f) : 0;
    if(f)
      fclose(f);
  }
  buf[n] = 0;
  return n;
}

void e2e_agent_stop(struct e2e *e, const char *node, int sig)
{
  char name[80], cmd[8192];
  snprintf(name, sizeof(name), "nodeagent-%s", node);
  pid_t pid = e2e_process_pid(e, name);
  cr_assert_gt(pid, 0, "no %s in %s", name, cl_path(&e->c, "pids"));
  agent_cmdline(e, node, pid, cmd, sizeof(cmd));
  kill_and_wait(pid, sig);
}

void e2e_agent_restart(struct e2e *e, const char *node, const char *fault)
{
  char name[80], before[160];
  snprintf(name, sizeof(name), "nodeagent-%s", node);
  pid_t pid = e2e_process_pid(e, name);
  cr_assert_gt(pid, 0, "no %s in %s", name, cl_path(&e->c, "pids"));
  /* the same command line as up gave it, without an earlier --fault */
  static char cmd[8192];
  size_t n = agent_cmdline(e, node, pid, cmd, sizeof(cmd));
  char *argv[64];
  size_t a = 0;
  for(size_t i = 0; i < n && a < 58; i += strlen(cmd + i) + 1) {
    if(!strcmp(cmd + i, "--fault")) {
      i += strlen(cmd + i) + 1;
      continue;
    }
    argv[a++] = cmd + i;
  }
  cr_assert_gt(a, 1, "cannot read the command line of %s", name);
  if(fault) {
    argv[a++] = "--fault";
    argv[a++] = (char *)fault;
  }
  argv[a] = NULL;
  agent_endpoint(e, node, before, sizeof(before));
  kill_and_wait(pid, SIGTERM);
  char log[400];
  snprintf(log, sizeof(log), "%s", cl_path(&e->c, name));
  strncat(log, ".log", sizeof(log) - strlen(log) - 1);
  spawn_recorded(e, name, log, argv);
  /* serving once its new endpoint is published */
  char now[160] = "";
  for(int i = 0; i < 200; i++) {
    agent_endpoint(e, node, now, sizeof(now));
    if(now[0] && strcmp(now, before))
      return;
    e2e_sleep_ms(50);
  }
  cr_assert_fail("the node agent of %s did not come back (endpoint %s)", node, now);
}

void e2e_controller_start(struct e2e *e)
{
  const char *build = getenv("GODWIT_BUILD") ? getenv("GODWIT_BUILD") : "build";
  char bin[512], port[400], log[400];
  snprintf(bin, sizeof(bin), "%s/godwit-controller", build);
  snprintf(port, sizeof(port), "%s", cl_path(&e->c, "controller.port"));
  snprintf(log, sizeof(log), "%s", cl_path(&e->c, "controller.log"));
  unlink(port);
  /* the node agents' CA and token, as up gives them, when the cluster has worker nodes (the
   * controller reads its flags from the environment) */
  char ca[400], tok[400];
  snprintf(ca, sizeof(ca), "%s", cl_path(&e->c, "pki/nodeagent/ca.crt"));
  snprintf(tok, sizeof(tok), "%s", cl_path(&e->c, "nodeagent.token"));
  if(!access(tok, R_OK)) {
    setenv("GODWIT_NODEAGENT_CA", ca, 1);
    setenv("GODWIT_NODEAGENT_TOKEN_FILE", tok, 1);
    setenv("GODWIT_PODMOTION_AUDIT_LOG", cl_path(&e->c, "podmotion-audit.log"), 1);
  }
  /* as up starts it: as its ServiceAccount, under manifests/rbac-controller.yaml */
  char *argv[] = { bin, "--kubeconfig", e->c.kubeconfig, "--context", "godwit-controller",
                   "--metrics-port", "0", "--port-file",
                   port, "--bind", "127.0.0.1", "--log-level", "info", NULL };
  spawn_recorded(e, "controller", log, argv);
  for(int i = 0; i < 200; i++) {
    if(access(port, R_OK) == 0)
      return;
    e2e_sleep_ms(50);
  }
  cr_assert_fail("the controller did not start; see %s", log);
}

pid_t e2e_worker_pid(struct e2e *e, const char *name)
{
  char sel[200];
  snprintf(sel, sizeof(sel), "godwit.dev/migration=%s,godwit.dev/step=worker", name);
  return e2e_pod_pid(e, sel);
}

pid_t e2e_pod_pid(struct e2e *e, const char *sel)
{
  struct kube_list_opts lo = { .label_selector = sel };
  cJSON *list = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_list(e->k, &KUBE_PODS, E2E_NS, &lo, &list, &st);
  kube_status_release(&st);
  pid_t pid = 0;
  const cJSON *p;
  const cJSON *items = rc ? NULL : json_get(list, "items");
  cJSON_ArrayForEach(p, items)
  {
    const cJSON *c;
    cJSON_ArrayForEach(c, json_get(p, "status.containerStatuses"))
    {
      const char *id = json_get_str(c, "containerID");
      if(id && json_get(c, "state.running")) {
        const char *dash = strrchr(id, '-');
        if(dash)
          pid = (pid_t)atol(dash + 1);
      }
    }
  }
  cJSON_Delete(list);
  return pid;
}

/* ---- helpers the Migration suites share ---- */

long long e2e_mono_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

bool e2e_job_exists(struct e2e *e, const char *name, const char *job)
{
  char *jobs = e2e_jobs(e, name);
  char line[128];
  snprintf(line, sizeof(line), "%s\n", job);
  bool found = strstr(jobs, line) != NULL;
  free(jobs);
  return found;
}

bool e2e_wait_complete(struct e2e *e, const char *name, int timeout_ms)
{
  long long end = e2e_mono_ms() + timeout_ms;
  do {
    if(e2e_wait_cond(e, name, "Complete", "True", "MigrationSucceeded", 0))
      return true;
    if(e2e_wait_cond(e, name, "Failed", "True", NULL, 0))
      return false;
    e2e_sleep_ms(200);
  } while(e2e_mono_ms() < end);
  return false;
}

/* ---- the controller's metrics ---- */

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
  return strbuf_add(ud, p, size * n) ? 0 : size * n;
}

char *e2e_controller_metrics(struct e2e *e)
{
  FILE *f = fopen(cl_path(&e->c, "controller.port"), "r");
  cr_assert_not_null(f, "the controller wrote no port file");
  int port = 0;
  cr_assert_eq(fscanf(f, "%d", &port), 1);
  fclose(f);
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
  struct strbuf sb;
  strbuf_init(&sb, 16u << 20);
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  long code = 0;
  cr_assert_eq(curl_easy_perform(h), CURLE_OK);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  cr_assert_eq(code, 200);
  return strbuf_take(&sb, NULL);
}

double e2e_metric(const char *text, const char *series)
{
  size_t n = strlen(series);
  for(const char *p = strstr(text, series); p; p = strstr(p + 1, series))
    if((p == text || p[-1] == '\n') && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1;
}

double e2e_metric_sum(const char *text, const char *prefix)
{
  double sum = 0;
  size_t n = strlen(prefix);
  for(const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if(strncmp(p, prefix, n))
      continue;
    const char *eol = strchr(p, '\n'), *sp = p;
    for(const char *q = p; *q && q != eol; q++)
      if(*q == ' ')
        sp = q;
    sum += strtod(sp + 1, NULL);
  }
  return sum;
}

int e2e_plugin(struct e2e *e, const char *user, char **out, const char *fmt, ...)
{
  char args[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof(args), fmt, ap);
  va_end(ap);
  char dir[PATH_MAX];
  cr_assert_not_null(realpath("plugin", dir), "run the suite from the repository's root");
  char cmd[8192];
  /* kubectl refuses flags before a plugin's name: they go after it */
  snprintf(cmd, sizeof(cmd), "PATH='%s':\"$PATH\" kubectl godwit --kubeconfig '%s' --context '%s' "
           "--cache-dir '%s' %s >'%s' 2>&1", dir, e->c.kubeconfig, user,
           cl_path(&e->c, "kubecache"), args, cl_path(&e->c, "plugin.out"));
  int st = system(cmd);
  if(out) {
    FILE *f = fopen(cl_path(&e->c, "plugin.out"), "r");
    char buf[8192] = "";
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    buf[n] = '\0';
    if(f)
      fclose(f);
    *out = strdup(buf);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
