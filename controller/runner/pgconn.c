#include "pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strbuf.h"

/* The parsed option, or NULL when absent or empty. */
static const char *opt(const PQconninfoOption *o, const char *key)
{
  for(; o && o->keyword; o++)
    if(!strcmp(o->keyword, key))
      return o->val && *o->val ? o->val : NULL;
  return NULL;
}

static void describe(struct pgc_endpoint *ep, const PQconninfoOption *o)
{
  PQconninfoOption *d = PQconndefaults();
  const char *host = opt(o, "host") ? opt(o, "host") : opt(o, "hostaddr");
  if(!host)
    host = opt(d, "host") ? opt(d, "host") : "localhost";
  const char *port = opt(o, "port") ? opt(o, "port") : (opt(d, "port") ? opt(d, "port") : "5432");
  const char *user = opt(o, "user") ? opt(o, "user") : (opt(d, "user") ? opt(d, "user") : "?");
  const char *db = opt(o, "dbname") ? opt(o, "dbname") : user;
  snprintf(ep->user, sizeof(ep->user), "%s", user);
  snprintf(ep->db, sizeof(ep->db), "%s", db);
  snprintf(ep->desc, sizeof(ep->desc), "%s (%s:%s/%s, user %s)", ep->label, host, port, db, user);
  PQconninfoFree(d);
}

static gw_rc add_kv(struct pgc_endpoint *ep, size_t *n, const char *k, const char *v)
{
  ep->kw[*n] = strdup(k);
  ep->val[*n] = strdup(v);
  if(!ep->kw[*n] || !ep->val[*n])
    return GW_ENOMEM;
  if(!strcmp(k, "password"))
    ep->password = ep->val[*n];
  (*n)++;
  return GW_OK;
}

/* Copies o's set options into ep, skipping the keys in skip (NULL-terminated). */
static gw_rc copy_opts(struct pgc_endpoint *ep, const PQconninfoOption *o, const char *const *skip,
                       size_t extra)
{
  size_t cap = extra + 1;
  for(const PQconninfoOption *p = o; p->keyword; p++)
    cap++;
  ep->kw = calloc(cap, sizeof(char *));
  ep->val = calloc(cap, sizeof(char *));
  if(!ep->kw || !ep->val)
    return GW_ENOMEM;
  size_t n = 0;
  gw_rc rc = GW_OK;
  for(const PQconninfoOption *p = o; p->keyword && !rc; p++) {
    bool skipped = false;
    for(const char *const *s = skip; s && *s; s++)
      skipped |= !strcmp(*s, p->keyword);
    if(!skipped && p->val && *p->val)
      rc = add_kv(ep, &n, p->keyword, p->val);
  }
  return rc;
}

static size_t count(char **a)
{
  size_t n = 0;
  while(a && a[n])
    n++;
  return n;
}

gw_rc pgc_endpoint_parse(struct pgc_endpoint *ep, const char *label, const char *uri, char *err,
                         size_t errlen)
{
  memset(ep, 0, sizeof(*ep));
  snprintf(ep->label, sizeof(ep->label), "%s", label);
  if(!uri || !*uri) {
    snprintf(err, errlen, "%s: the connection URI is empty", label);
    return GW_EINVAL;
  }
  char *perr = NULL;
  PQconninfoOption *o = PQconninfoParse(uri, &perr);
  if(!o) {
    /* libpq's message may quote the string, password included: never pass it on. */
    PQfreemem(perr);
    snprintf(err, errlen,
             "%s: the connection string is not a valid PostgreSQL URI "
             "(expected postgres://user:password@host:port/dbname)",
             label);
    return GW_EINVAL;
  }
  gw_rc rc = copy_opts(ep, o, NULL, 0);
  if(!rc)
    describe(ep, o);
  PQconninfoFree(o);
  if(rc)
    snprintf(err, errlen, "%s: %s", label, gw_strerror(rc));
  return rc;
}

gw_rc pgc_endpoint_with_user(struct pgc_endpoint *ep, const char *label,
                             const struct pgc_endpoint *base, const struct pgc_endpoint *cred)
{
  memset(ep, 0, sizeof(*ep));
  snprintf(ep->label, sizeof(ep->label), "%s", label);
  size_t nb = count(base->kw);
  PQconninfoOption *o = calloc(nb + 1, sizeof(*o));
  if(!o)
    return GW_ENOMEM;
  for(size_t i = 0; i < nb; i++) {
    o[i].keyword = base->kw[i];
    o[i].val = base->val[i];
  }
  static const char *const skip[] = { "user", "password", "passfile", NULL };
  gw_rc rc = copy_opts(ep, o, skip, 2);
  size_t n = count(ep->kw);
  for(size_t i = 0; cred->kw[i] && !rc; i++)
    if(!strcmp(cred->kw[i], "user") || !strcmp(cred->kw[i], "password"))
      rc = add_kv(ep, &n, cred->kw[i], cred->val[i]);
  if(!rc) {
    PQconninfoOption *full = calloc(n + 1, sizeof(*full));
    rc = full ? GW_OK : GW_ENOMEM;
    for(size_t i = 0; i < n && !rc; i++) {
      full[i].keyword = ep->kw[i];
      full[i].val = ep->val[i];
    }
    if(!rc)
      describe(ep, full);
    free(full);
  }
  free(o);
  return rc;
}

void pgc_endpoint_release(struct pgc_endpoint *ep)
{
  for(size_t i = 0; ep->kw && ep->kw[i]; i++) {
    free(ep->kw[i]);
    free(ep->val[i]);
  }
  free(ep->kw);
  free(ep->val);
  ep->kw = ep->val = NULL;
  ep->password = NULL;
}

/* The first non-empty line of a libpq message, trimmed. */
static void first_line(char *out, size_t len, const char *msg)
{
  while(*msg == '\n' || *msg == ' ' || *msg == '\t')
    msg++;
  size_t n = strcspn(msg, "\n");
  while(n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\r'))
    n--;
  snprintf(out, len, "%.*s", (int)n, msg);
}

enum pgc_class pgc_classify(const char *msg)
{
  static const char *const permanent[] = {
    "authentication failed", "no password supplied", "does not exist", "no pg_hba.conf entry",
    "pg_hba.conf rejects", "permission denied", "is not permitted to log in", "must be superuser",
    "does not support SSL", "SSL is not enabled", "certificate", "invalid ", "requires a valid client certificate",
    "unsupported frontend protocol", NULL
  };
  for(const char *const *p = permanent; *p; p++)
    if(strstr(msg, *p))
      return PGC_PERMANENT;
  return PGC_TRANSIENT;
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

static PGconn *connect_once(const struct pgc_endpoint *ep, int timeout)
{
  size_t n = count(ep->kw);
  const char **kw = calloc(n + 3, sizeof(char *));
  const char **val = calloc(n + 3, sizeof(char *));
  PGconn *c = NULL;
  if(kw && val) {
    char to[16];
    snprintf(to, sizeof(to), "%d", timeout);
    size_t k = 0;
    for(size_t i = 0; i < n; i++)
      if(strcmp(ep->kw[i], "connect_timeout")) {
        kw[k] = ep->kw[i];
        val[k++] = ep->val[i];
      }
    kw[k] = "connect_timeout";
    val[k++] = to;
    kw[k] = "fallback_application_name";
    val[k++] = "godwit-runner";
    c = PQconnectdbParams(kw, val, 0);
  }
  free(kw);
  free(val);
  return c;
}

enum pgc_class pgc_connect(const struct pgc_endpoint *ep, const struct pgc_retry *r, PGconn **out,
                           char *why, size_t whylen)
{
  *out = NULL;
  char prev[512] = "";
  bool seen_permanent = false;
  int delay = r->delay_ms;
  enum pgc_class cls = PGC_TRANSIENT;
  for(int attempt = 1; attempt <= (r->attempts > 0 ? r->attempts : 1); attempt++) {
    PGconn *c = connect_once(ep, r->connect_timeout);
    if(c && PQstatus(c) == CONNECTION_OK) {
      *out = c;
      return PGC_OK;
    }
    char line[512];
    first_line(line, sizeof(line), c ? PQerrorMessage(c) : "out of memory");
    PQfinish(c);
    snprintf(why, whylen, "%s", line);
    cls = pgc_classify(line);
    if(cls == PGC_PERMANENT) {
      if(seen_permanent && !strcmp(prev, line))
        return PGC_PERMANENT; /* the same refusal twice: retrying cannot help */
      seen_permanent = true;
      snprintf(prev, sizeof(prev), "%s", line);
    }
    if(attempt < r->attempts) {
      sleep_ms(delay);
      delay = delay * 2 > 10000 ? 10000 : delay * 2;
    }
  }
  return cls;
}

static void fill_err(PGconn *c, const PGresult *res, struct pgc_err *e)
{
  memset(e, 0, sizeof(*e));
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  snprintf(e->sqlstate, sizeof(e->sqlstate), "%s", st ? st : "");
  const char *h = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
  snprintf(e->hint, sizeof(e->hint), "%s", h ? h : "");
  if(m)
    snprintf(e->msg, sizeof(e->msg), "%s", m);
  else
    first_line(e->msg, sizeof(e->msg), PQerrorMessage(c));
  e->transient = PQstatus(c) != CONNECTION_OK || !strncmp(e->sqlstate, "08", 2) ||
                 !strncmp(e->sqlstate, "57P", 3) || !strncmp(e->sqlstate, "53", 2) ||
                 !strncmp(e->sqlstate, "40", 2);
}

PGresult *pgc_query(PGconn *c, struct pgc_err *e, const char *sql, int nparams,
                    const char *const *params)
{
  PGresult *res = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(res);
  if(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
    return res;
  fill_err(c, res, e);
  PQclear(res);
  return NULL;
}

int pgc_exec(PGconn *c, struct pgc_err *e, const char *sql)
{
  PGresult *res = pgc_query(c, e, sql, 0, NULL);
  PQclear(res);
  return res ? 0 : -1;
}

int pgc_value(PGconn *c, struct pgc_err *e, char *out, size_t outlen, const char *sql,
              int nparams, const char *const *params)
{
  PGresult *res = pgc_query(c, e, sql, nparams, params);
  if(!res)
    return -1;
  const char *v = PQntuples(res) > 0 && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : "";
  snprintf(out, outlen, "%s", v);
  PQclear(res);
  return 0;
}

char *pgc_ident(PGconn *c, const char *name)
{
  char *q = PQescapeIdentifier(c, name, strlen(name));
  char *out = q ? strdup(q) : NULL;
  PQfreemem(q);
  return out;
}

char *pgc_text_array(const char *const *names, size_t n)
{
  struct strbuf sb;
  strbuf_init(&sb, 1 << 20);
  gw_rc rc = strbuf_addc(&sb, '{');
  for(size_t i = 0; i < n && !rc; i++) {
    rc = strbuf_adds(&sb, i ? ",\"" : "\"");
    for(const char *p = names[i]; *p && !rc; p++) {
      if(*p == '"' || *p == '\\')
        rc = strbuf_addc(&sb, '\\');
      if(!rc)
        rc = strbuf_addc(&sb, *p);
    }
    if(!rc)
      rc = strbuf_addc(&sb, '"');
  }
  if(!rc)
    rc = strbuf_addc(&sb, '}');
  return rc ? NULL : strbuf_take(&sb, NULL);
}
