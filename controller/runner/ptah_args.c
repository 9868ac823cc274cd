/* ptah_args.c: the flags every Ptah runner step checks alike (ptah-migrate, ptah-plan): the
 * protocol is given, and the operation, owner, namespace and Job are Kubernetes names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/format.h"
#include "ptah.h"
#include "termination.h"
#include "strbuf.h"

int ptah_vbad_arg(struct st_ctx *st, const char *step, const char *fmt, va_list ap)
{
  char why[512];
  vsnprintf(why, sizeof(why), fmt, ap);
  st_fail(st, false, "config", "%s (see godwit-runner %s --help)", why, step);
  st_summary(st, "bad arguments: %s", why);
  return -1;
}

static int bad(struct st_ctx *st, const char *step, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static int bad(struct st_ctx *st, const char *step, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = ptah_vbad_arg(st, step, fmt, ap);
  va_end(ap);
  return r;
}

static int name(struct st_ctx *st, const char *step, const char *flag, const char *v,
                const char *(*check)(const char *))
{
  if(!v || !*v)
    return bad(st, step, "--%s is required", flag);
  const char *why = check(v);
  return why ? bad(st, step, "--%s: %s, got \"%.80s\"", flag, why, v) : 0;
}

int ptah_check_identity(struct st_ctx *st, const char *step, const struct ptah_identity *id)
{
  if(!id->protocol)
    return bad(st, step, "--protocol is required: the protocol the Job expects (this runner "
                         "speaks " PTAH_RUNNER_PROTOCOL ")");
  int r = name(st, step, "operation", id->operation, fmt_check_dns1123_label);
  if(!r)
    r = name(st, step, "owner-name", id->owner_name, fmt_check_dns1123_subdomain);
  if(!r)
    r = name(st, step, "namespace", id->namespace, fmt_check_dns1123_label);
  if(!r)
    r = name(st, step, "job-name", id->job_name, fmt_check_dns1123_subdomain);
  return r;
}

void ptah_vmessage(char **msg, bool reset, const char *fmt, va_list ap)
{
  struct strbuf sb;
  strbuf_init(&sb, 4 * PTAH_RECORD_MESSAGE_MAX); /* redacted and cut when written */
  gw_rc rc = GW_OK;
  if(!reset && *msg && **msg)
    rc = strbuf_addf(&sb, "%s ", *msg);
  if(!rc)
    rc = strbuf_vaddf(&sb, fmt, ap);
  char *s = rc ? NULL : strbuf_take(&sb, NULL);
  strbuf_release(&sb);
  if(s || reset) { /* out of memory or too long: keep what was there, unless replacing */
    free(*msg);
    *msg = s;
  }
}

int ptah_exit_code(const struct ptah_end *e, const char **result)
{
  int code = e->passed ? RUNNER_EXIT_PASSED : RUNNER_EXIT_FAILED;
  if(e->transient || (e->durable && !e->delivered))
    code = RUNNER_EXIT_TRANSIENT;
  if(e->credential_failed)
    code = RUNNER_EXIT_CREDENTIAL;
  *result = code == RUNNER_EXIT_PASSED       ? "Passed"
            : code == RUNNER_EXIT_FAILED     ? "Failed"
            : code == RUNNER_EXIT_CREDENTIAL ? "CredentialFailed"
                                             : "Transient";
  return code;
}
