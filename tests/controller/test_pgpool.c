/* controller/pgpool.c: the database sessions kept between samples, against a real PostgreSQL. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktime.h"
#include "pgfixture.h"
#include "pgpool.h"

static struct pgfx pg;
static char uri[256];

static void start(void)
{
  pgfx_start(&pg, NULL);
  pgfx_super_uri(&pg, uri, sizeof(uri), "postgres");
}

static void stop(void)
{
  pgfx_stop(&pg);
}

TestSuite(pgpool, .init = start, .fini = stop, .timeout = 60);

static PGconn *session(const char *app)
{
  char err[256] = "";
  PGconn *c = pg_connect(uri, 5, app, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  return c;
}

/* Sessions of application app the server sees. */
static int sessions(const char *app)
{
  char *n = pgfx_query1(&pg, NULL, "SELECT count(*) FROM pg_stat_activity WHERE "
                                   "application_name = '%s'", app);
  int v = atoi(n);
  free(n);
  return v;
}

static bool gone(const char *app)
{
  for(int i = 0; i < 100; i++) {
    if(!sessions(app))
      return true;
    kt_sleep_ms(20, NULL);
  }
  return false;
}

Test(pgpool, a_kept_session_is_handed_out_once_and_only_for_its_uri)
{
  struct pg_pool *p;
  cr_assert_eq(pg_pool_new(&p, 4, 60000), GW_OK);
  unsigned char d[PG_DIGEST_LEN], other[PG_DIGEST_LEN];
  pg_digest(uri, d);
  pg_digest("postgres://someone:else@127.0.0.1:1/x", other);
  cr_assert_neq(memcmp(d, other, PG_DIGEST_LEN), 0);
  PGconn *c = session("pool-a");
  pg_pool_put(p, "uid-1", 0, d, c);
  cr_assert_null(pg_pool_take(p, "uid-1", 1, d), "the other side has none");
  cr_assert_null(pg_pool_take(p, "uid-2", 0, d), "another owner has none");
  cr_assert_eq(pg_pool_take(p, "uid-1", 0, d), c, "the same session, no new login");
  cr_assert_null(pg_pool_take(p, "uid-1", 0, d), "handed out: out of the pool");
  pg_pool_put(p, "uid-1", 0, d, c);
  /* the Secret changed (another URI): the kept session is closed, none handed out */
  cr_assert_null(pg_pool_take(p, "uid-1", 0, other));
  cr_assert(gone("pool-a"), "the session of the old URI was closed");
  pg_pool_free(p);
}

Test(pgpool, idle_forgotten_and_least_recently_used_sessions_close)
{
  struct pg_pool *p;
  cr_assert_eq(pg_pool_new(&p, 1, 100), GW_OK);
  unsigned char d[PG_DIGEST_LEN];
  pg_digest(uri, d);
  pg_pool_put(p, "uid-1", 0, d, session("pool-b"));
  pg_pool_put(p, "uid-2", 0, d, session("pool-c"));
  cr_assert(gone("pool-b"), "a full pool closes the least recently used");
  cr_assert_eq(sessions("pool-c"), 1);
  pg_pool_forget(p, "uid-2");
  cr_assert(gone("pool-c"), "forgotten with its owner");
  pg_pool_put(p, "uid-3", 0, d, session("pool-d"));
  kt_sleep_ms(200, NULL);
  cr_assert_null(pg_pool_take(p, "uid-3", 0, d), "idle past idle_ms: closed, not handed out");
  cr_assert(gone("pool-d"));
  pg_pool_put(p, "uid-4", 0, d, session("pool-e"));
  pg_pool_free(p);
  cr_assert(gone("pool-e"), "freed with the pool");
  /* no pool: put closes */
  pg_pool_put(NULL, "uid-5", 0, d, session("pool-f"));
  cr_assert(gone("pool-f"));
  cr_assert_null(pg_pool_take(NULL, "uid-5", 0, d));
}

Test(pgpool, a_failed_login_says_why_without_the_password)
{
  char bad[256], err[256] = "";
  snprintf(bad, sizeof(bad), "postgres://postgres:Wrong-Secret-77@127.0.0.1:%d/postgres", pg.port);
  cr_assert_null(pg_connect(bad, 5, "pool-g", err, sizeof(err)));
  cr_assert_not_null(strstr(err, "password authentication failed"), "%s", err);
  cr_assert_null(strstr(err, "Wrong-Secret-77"), "%s", err);
}
