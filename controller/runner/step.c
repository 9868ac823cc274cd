/*
 * step.c: flags, credentials, connections, output and the report of the runner steps after the
 * preflight (step.h).
 */
#include "step.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "redact.h"
#include "termination.h"

#define NSECRETS (ST_NSECRETS + 2)

/* What a step holds that must never be printed. */
static void secrets_of(const struct st_ctx *c, const char *out[NSECRETS])
{
  memcpy(out, c->secrets, sizeof(c->secrets));
  out[ST_NSECRETS] = c->src.password;
  out[ST_NSECRETS + 1] = c->dst.password;
}

void st_redact(const struct st_ctx *c, char *s, size_t len)
{
  const char *secrets[NSECRETS];
  secrets_of(c, secrets);
  redact_buf(s, len, secrets, NSECRETS);
}

static void vline(const struct st_ctx *c, const char *prefix, const char *fmt, va_list ap)
{
  char line[4096];
  size_t n = (size_t)snprintf(line, sizeof(line), "%s", prefix);
  vsnprintf(line + n, sizeof(line) - n, fmt, ap);
  for(char *p = line; *p; p++)
    if(*p == '\n' || *p == '\r')
      *p = ' '; /* one line per check, whatever a server put in a message */
  st_redact(c, line, sizeof(line));
  fprintf(stdout, "%s\n", line);
  fflush(stdout);
}

void st_print(const struct st_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vline(c, "", fmt, ap);
  va_end(ap);
}

#define ST_LINE(fn, word)                                                                        \
  void fn(const struct st_ctx *c, const char *id, const char *fmt, ...)                          \
  {                                                                                              \
    char prefix[128];                                                                            \
    snprintf(prefix, sizeof(prefix), word " %s: ", id);                                          \
    va_list ap;                                                                                  \
    va_start(ap, fmt);                                                                           \
    vline(c, prefix, fmt, ap);                                                                   \
    va_end(ap);                                                                                  \
  }
ST_LINE(st_pass, "PASS")
ST_LINE(st_warn, "WARN")

void st_fmt(char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

void st_summary(struct st_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->summary, sizeof(c->summary), fmt, ap);
  va_end(ap);
}

void st_summary_add(struct st_ctx *c, const char *fmt, ...)
{
  size_t n = strlen(c->summary);
  if(n + 1 >= sizeof(c->summary))
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->summary + n, sizeof(c->summary) - n, fmt, ap);
  va_end(ap);
}

void st_escalate(struct st_ctx *c, enum st_result r)
{
  if(r == ST_FAILED || (r == ST_TRANSIENT && c->result == ST_PASSED))
    c->result = r;
}

void st_fail(struct st_ctx *c, bool transient, const char *id, const char *fmt, ...)
{
  char prefix[128];
  snprintf(prefix, sizeof(prefix), "FAIL %s: ", id);
  va_list ap;
  va_start(ap, fmt);
  vline(c, prefix, fmt, ap);
  va_end(ap);
  st_escalate(c, transient ? ST_TRANSIENT : ST_FAILED);
}

bool st_transient_state(const struct pgc_err *e)
{
  return e->transient || !strcmp(e->sqlstate, "55P03") || !strcmp(e->sqlstate, "55006") ||
         !strcmp(e->sqlstate, "57014");
}

void st_query_failed(struct st_ctx *c, const char *id, const char *what, const struct pgc_err *e)
{
  if(e->sqlstate[0])
    st_fail(c, st_transient_state(e), id, "could not %s: %s (SQLSTATE %s)", what, e->msg,
            e->sqlstate);
  else
    st_fail(c, st_transient_state(e), id, "could not %s: %s", what, e->msg);
}

const char *st_side_name(enum st_side s)
{
  return s == ST_SOURCE ? "source" : "target";
}

const char *st_desc(const struct st_ctx *c, enum st_side s)
{
  return s == ST_SOURCE ? c->src.desc : c->dst.desc;
}

int st_init(struct st_ctx *c, const char *step, const char *kind, const struct cfg_opt *table,
            const char *summary, int argc, char **argv)
{
  memset(c, 0, sizeof(*c));
  c->step = step;
  c->kind = kind;
  char err[256] = "";
  gw_rc rc = cfg_parse(table, c, argc, argv, err, sizeof(err));
  if(rc == GW_ENOTFOUND) {
    char prog[64];
    snprintf(prog, sizeof(prog), "godwit-runner %s", step);
    cfg_usage(stdout, prog, summary, table);
    return 1;
  }
  int lvl = c->o.log_level ? log_level_parse(c->o.log_level) : LOG_INFO;
  log_set_level(lvl < 0 ? LOG_INFO : (enum log_level)lvl);
  c->retry = (struct pgc_retry){ (int)c->o.attempts, (int)c->o.retry_delay_ms,
                                 (int)c->o.connect_timeout };
  if(rc) {
    if(!c->o.report)
      c->o.report = "/dev/termination-log";
    if(strstr(err, "--help")) /* "unknown option ...; see --help" */
      st_fail(c, false, "config", "%s", err);
    else
      st_fail(c, false, "config", "%s (see godwit-runner %s --help)", err, step);
    st_summary(c, "bad arguments: %s", err);
    return -1;
  }
  return 0;
}

int st_endpoints(struct st_ctx *c, bool source, bool target)
{
  char err[256];
  const char *src = getenv("GODWIT_SOURCE_URI"), *dst = getenv("GODWIT_TARGET_URI");
  c->secrets[0] = src;
  c->secrets[1] = dst;
  if(source) {
    if(pgc_endpoint_parse(&c->src, "source", src, err, sizeof(err))) {
      pgc_endpoint_release(&c->src);
      st_fail(c, false, "config", "%s (GODWIT_SOURCE_URI, from the Secret named by "
                                  "spec.source.connectionSecretRef)", err);
      st_summary(c, "GODWIT_SOURCE_URI: %s", err);
      return -1;
    }
    c->have_src = true;
  }
  if(target) {
    if(pgc_endpoint_parse(&c->dst, "target", dst, err, sizeof(err))) {
      pgc_endpoint_release(&c->dst);
      st_fail(c, false, "config", "%s (GODWIT_TARGET_URI, from the Secret named by "
                                  "spec.target.connectionSecretRef)", err);
      st_summary(c, "GODWIT_TARGET_URI: %s", err);
      return -1;
    }
    c->have_dst = true;
  }
  return 0;
}

/* Server notices (NOTICE: drop cascades to ...) would reach stderr as stray lines. */
static void quiet(void *arg, const char *message)
{
  (void)arg, (void)message;
}

PGconn *st_connect(struct st_ctx *c, enum st_side s, const char *id)
{
  PGconn **cp = s == ST_SOURCE ? &c->src_c : &c->dst_c;
  PGconn *have = *cp;
  if(have)
    return have;
  const struct pgc_endpoint *ep = s == ST_SOURCE ? &c->src : &c->dst;
  char why[512];
  enum pgc_class cls = pgc_connect(ep, &c->retry, cp, why, sizeof(why));
  if(cls != PGC_OK) {
    st_fail(c, cls == PGC_TRANSIENT, id, "cannot connect to %s: %s", ep->desc, why);
    st_summary(c, "cannot connect to %s: %s", ep->desc, why); /* the report says why */
    return NULL;
  }
  PQsetNoticeProcessor(*cp, quiet, NULL);
  struct pgc_err e;
  char sql[128];
  if(c->o.statement_timeout > 0) {
    snprintf(sql, sizeof(sql), "SET statement_timeout = '%lds'", c->o.statement_timeout);
    if(pgc_exec(*cp, &e, sql)) {
      st_query_failed(c, id, "set statement_timeout", &e);
      PQfinish(*cp);
      *cp = NULL;
      return NULL;
    }
  }
  if(c->o.lock_timeout > 0) {
    snprintf(sql, sizeof(sql), "SET lock_timeout = '%lds'", c->o.lock_timeout);
    if(pgc_exec(*cp, &e, sql)) {
      st_query_failed(c, id, "set lock_timeout", &e);
      PQfinish(*cp);
      *cp = NULL;
      return NULL;
    }
  }
  return *cp;
}

void st_release(struct st_ctx *c)
{
  PQfinish(c->src_c);
  PQfinish(c->dst_c);
  c->src_c = c->dst_c = NULL;
  pgc_endpoint_release(&c->src);
  pgc_endpoint_release(&c->dst);
}

/* ------------------------------------------------------------------------------------------ */

gw_rc st_json_str(const struct st_ctx *c, struct strbuf *sb, const char *s, size_t max, bool *cut)
{
  const char *secrets[NSECRETS];
  secrets_of(c, secrets);
  if(max > 3000)
    max = 3000;
  char *tmp = redact_cut(s, max + 3, secrets, NSECRETS, cut);
  if(!tmp)
    return GW_ENOMEM;
  gw_rc rc = strbuf_addc(sb, '"');
  if(!rc)
    rc = strbuf_add_json_escaped(sb, tmp);
  if(!rc)
    rc = strbuf_addc(sb, '"');
  free(tmp);
  return rc;
}

gw_rc st_json_field(const struct st_ctx *c, struct strbuf *sb, const char *key, const char *s,
                    size_t max, bool *cut)
{
  gw_rc rc = strbuf_addf(sb, ",\"%s\":", key);
  if(!rc)
    rc = st_json_str(c, sb, s, max, cut);
  return rc;
}

static const char *result_name(enum st_result r)
{
  static const char *const n[] = { "Passed", "Failed", "Transient" };
  return n[r];
}

static const struct st_level levels[] = {
  { 1000, 1000 }, { 40, 400 }, { 12, 200 }, { 4, 120 }, { 1, 80 }, { 0, 60 },
};

static gw_rc render(const struct st_ctx *c, struct strbuf *sb, st_render_fn fn, void *arg,
                    const struct st_level *l, bool truncated)
{
  bool cut = false;
  gw_rc rc = strbuf_addf(sb, "{\"kind\":\"%s\",\"version\":1,\"result\":\"%s\"", c->kind,
                         result_name(c->result));
  if(!rc)
    rc = st_json_field(c, sb, "summary", c->summary, l->str < 300 ? l->str : 300, &cut);
  if(!rc && fn)
    rc = fn(c, sb, l, &cut, arg);
  if(!rc)
    rc = strbuf_addf(sb, ",\"truncated\":%s}", truncated || cut ? "true" : "false");
  return rc;
}

int st_finish(struct st_ctx *c, st_render_fn fn, void *arg)
{
  st_print(c, "RESULT %s: %s", result_name(c->result), c->summary);
  char buf[RUNNER_REPORT_MAX];
  buf[0] = '\0';
  for(size_t i = 0; i < sizeof(levels) / sizeof(levels[0]) && !buf[0]; i++) {
    struct strbuf sb;
    strbuf_init(&sb, RUNNER_REPORT_MAX - 1);
    if(!render(c, &sb, fn, arg, &levels[i], i > 0))
      memcpy(buf, strbuf_str(&sb), sb.len + 1);
    strbuf_release(&sb);
  }
  if(!buf[0])
    snprintf(buf, sizeof(buf), "{\"kind\":\"%s\",\"version\":1,\"result\":\"%s\",\"truncated\":true}",
             c->kind, result_name(c->result));
  runner_report_write(c->o.report, buf);
  return c->result == ST_PASSED ? RUNNER_EXIT_PASSED
                                : (c->result == ST_TRANSIENT ? RUNNER_EXIT_TRANSIENT : RUNNER_EXIT_FAILED);
}

/* ------------------------------------------------------------------------------------------ */

int st_lsn_parse(const char *s, uint64_t *out)
{
  if(!s || !*s)
    return -1;
  char *end;
  unsigned long long hi = strtoull(s, &end, 16);
  if(end == s || *end != '/' || hi > 0xFFFFFFFFull || !isxdigit((unsigned char)end[1]))
    return -1;
  const char *lo_s = end + 1;
  unsigned long long lo = strtoull(lo_s, &end, 16);
  if(*end || lo > 0xFFFFFFFFull)
    return -1;
  *out = (uint64_t)hi << 32 | (uint64_t)lo;
  return 0;
}

void st_lsn_format(uint64_t lsn, char *buf, size_t len)
{
  snprintf(buf, len, "%X/%X", (unsigned)(lsn >> 32), (unsigned)(lsn & 0xFFFFFFFFu));
}

void st_sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

static bool plain_ident(const char *s)
{
  if(!*s || !(islower((unsigned char)*s) || *s == '_'))
    return false;
  for(; *s; s++)
    if(!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_' || *s == '$'))
      return false;
  return true;
}

static size_t put_ident(char *buf, size_t len, const char *s)
{
  if(plain_ident(s))
    return (size_t)snprintf(buf, len, "%s", s);
  size_t o = 0;
  if(o + 1 < len)
    buf[o++] = '"';
  for(; *s && o + 2 < len; s++) {
    if(*s == '"')
      buf[o++] = '"';
    buf[o++] = *s;
  }
  if(o + 1 < len)
    buf[o++] = '"';
  buf[o < len ? o : len - 1] = '\0';
  return o;
}

void st_qualname(char *buf, size_t len, const char *schema, const char *name)
{
  size_t n = put_ident(buf, len, schema);
  if(n + 2 >= len)
    return;
  buf[n++] = '.';
  put_ident(buf + n, len - n, name);
}
