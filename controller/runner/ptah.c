/*
 * ptah.c: `godwit-runner ptah-migrate`: the flags, the protocol check and the order of work
 * (ptah.h). docs/dev/ptah-runner.md is the contract.
 */
#include "ptah.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/format.h"
#include "strbuf.h"
#include "termination.h"

_Static_assert(offsetof(struct pm_ctx, st) == 0, "ST_COMMON_OPTS offsets are into st");

#define PM_OFF(f) offsetof(struct pm_ctx, o.f)

static const struct cfg_opt pm_table[] = {
  { "operation", NULL, CFG_STR, NULL, 0, 0, PM_OFF(operation),
    "the operation id, a DNS-1123 label such as shop-apply-3 (required)" },
  { "type", NULL, CFG_STR, NULL, 0, 0, PM_OFF(type), "Apply or Observe (required)" },
  { "attempt", NULL, CFG_INT, "1", 1, 1000000, PM_OFF(attempt),
    "which attempt of the operation this Job is" },
  { "owner-name", NULL, CFG_STR, NULL, 0, 0, PM_OFF(owner_name),
    "the PtahMigration whose operation this is (required)" },
  { "namespace", NULL, CFG_STR, NULL, 0, 0, PM_OFF(namespace),
    "its namespace, where the record is created (required)" },
  { "job-name", NULL, CFG_STR, NULL, 0, 0, PM_OFF(job_name),
    "this Job's name, also the record's name (required)" },
  { "migrations-dir", NULL, CFG_STR, "/ptah/migrations", 0, 0, PM_OFF(migrations_dir),
    "the mounted ConfigMap: one file per version, <digits>_<description>.sql" },
  { "history-table", NULL, CFG_STR, "public.ptah_migrations", 0, 0, PM_OFF(history_table),
    "schema.table recording the applied versions" },
  { "target", NULL, CFG_INT, "0", 0, (long)PTAH_VERSION_MAX, PM_OFF(target),
    "the version to migrate to (0: the highest in the directory)" },
  { "lock-wait-s", NULL, CFG_INT, "30", 0, 3600, PM_OFF(lock_wait_s),
    "seconds to wait for the migration lock another session holds" },
  { "release-owed", NULL, CFG_STR, NULL, 0, 0, PM_OFF(release_owed),
    "the application_name of a run's session that may have been left holding the migration "
    "lock (its runner died); a session of that name holding it is terminated first" },
  { "protocol", NULL, CFG_STR, NULL, 0, 0, PM_OFF(protocol),
    "the runner protocol the Job expects; this runner speaks " PTAH_RUNNER_PROTOCOL
    " (required)" },
  { "result", NULL, CFG_STR, "durable", 0, 0, PM_OFF(result),
    "durable: create a PtahResultRecord through the Kubernetes API; log: a framed result on "
    "stdout (the legacy transport, read from the Pod's log); none: the report only" },
  ST_COMMON_OPTS,
  { NULL },
};

/* ----- the message ------------------------------------------------------------------------ */


void pm_set(struct pm_ctx *c, enum pm_outcome o, const char *fmt, ...)
{
  c->outcome = o;
  va_list ap;
  va_start(ap, fmt);
  ptah_vmessage(&c->message, true, fmt, ap);
  va_end(ap);
}

void pm_add(struct pm_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ptah_vmessage(&c->message, false, fmt, ap);
  va_end(ap);
}

/* ----- the protocol ----------------------------------------------------------------------- */

/* The value of --name in argv (--name V or --name=V; the last one wins, as in cfg_parse), NULL
 * when absent. */
static const char *raw_flag(int argc, char **argv, const char *name)
{
  size_t n = strlen(name);
  const char *v = NULL;
  for(int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if(strncmp(a, "--", 2) || strncmp(a + 2, name, n))
      continue;
    if(a[2 + n] == '=')
      v = a + 3 + n;
    else if(!a[2 + n] && i + 1 < argc)
      v = argv[++i];
  }
  return v;
}

int pm_protocol_check(int argc, char **argv)
{
  const char *want = raw_flag(argc, argv, "protocol");
  if(!want || !strcmp(want, PTAH_RUNNER_PROTOCOL))
    return -1;
  char shown[68];
  snprintf(shown, sizeof(shown), "%.64s", want);
  for(char *p = shown; *p; p++)
    if((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?'; /* one line, whatever the Job passed */
  char msg[512];
  snprintf(msg, sizeof(msg),
           "this runner speaks Ptah runner protocol %s, the Job asks for \"%s\": run a runner "
           "image that speaks protocol %s (spec.execution.runnerImage), or leave runnerImage "
           "empty for the installed release's runner; nothing was read or changed",
           PTAH_RUNNER_PROTOCOL, shown, shown);
  printf("FAIL protocol: %s\nRESULT ProtocolMismatch: %s\n", msg, msg);
  fflush(stdout);
  struct strbuf sb;
  strbuf_init(&sb, RUNNER_REPORT_MAX - 1);
  gw_rc rc = strbuf_addf(&sb, "{\"kind\":\"PtahRunnerReport\",\"result\":\"ProtocolMismatch\","
                              "\"protocol\":\"%s\",\"requested\":\"", PTAH_RUNNER_PROTOCOL);
  if(!rc)
    rc = strbuf_add_json_escaped(&sb, shown);
  if(!rc)
    rc = strbuf_adds(&sb, "\",\"message\":\"");
  if(!rc)
    rc = strbuf_add_json_escaped(&sb, msg);
  if(!rc)
    rc = strbuf_adds(&sb, "\"}");
  const char *report = raw_flag(argc, argv, "report");
  if(!report)
    report = getenv("GODWIT_REPORT");
  runner_report_write(report && *report ? report : NULL,
                      rc ? "{\"kind\":\"PtahRunnerReport\",\"result\":\"ProtocolMismatch\"}"
                         : strbuf_str(&sb));
  strbuf_release(&sb);
  return RUNNER_EXIT_PROTOCOL;
}

/* ----- the flags -------------------------------------------------------------------------- */

static int bad_arg(struct pm_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_arg(struct pm_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = ptah_vbad_arg(&c->st, "ptah-migrate", fmt, ap);
  va_end(ap);
  return r;
}

static int check_args(struct pm_ctx *c)
{
  const struct pm_opts *o = &c->o;
  const struct ptah_identity id = { o->protocol, o->operation, o->owner_name, o->namespace,
                                     o->job_name };
  if(ptah_check_identity(&c->st, "ptah-migrate", &id))
    return -1;
  if(!o->type || (strcmp(o->type, "Apply") && strcmp(o->type, "Observe")))
    return bad_arg(c, "--type must be Apply or Observe, got \"%.40s\"", o->type ? o->type : "");
  c->type = !strcmp(o->type, "Apply") ? PM_APPLY : PM_OBSERVE;
  if(strcmp(o->result, "durable") && strcmp(o->result, "log") && strcmp(o->result, "none"))
    return bad_arg(c, "--result must be durable, log or none, got \"%.40s\"", o->result);
  const char *t = o->history_table, *dot = strchr(t, '.');
  const char *why = fmt_pg_qualified.check(t);
  if(!dot || why)
    return bad_arg(c, "--history-table must be \"schema.table\"%s%s, got \"%.130s\"",
                   why ? ": " : "", why ? why : "", t);
  snprintf(c->schema, sizeof(c->schema), "%.*s", (int)(dot - t), t);
  snprintf(c->table, sizeof(c->table), "%s", dot + 1);
  snprintf(c->appname, sizeof(c->appname), "godwit-ptah-%s", o->operation);
  return 0;
}

/* ----- the run ---------------------------------------------------------------------------- */

static void run(struct pm_ctx *c)
{
  if(c->type == PM_APPLY && pm_files_load(c))
    return;
  if(!strcmp(c->o.result, "durable") && pm_record_credential(c))
    return; /* a result that cannot be delivered would leave the run uncertain */
  if(pm_connect(c) || pm_lock(c) || pm_history_read(c))
    return;
  if(c->type == PM_APPLY)
    pm_apply(c);
  else
    pm_observe(c);
}

int ptah_migrate_main(int argc, char **argv)
{
  int code = pm_protocol_check(argc, argv);
  if(code >= 0)
    return code;
  struct pm_ctx *c = calloc(1, sizeof(*c));
  if(!c) {
    fprintf(stderr, "godwit-runner ptah-migrate: out of memory\n");
    return RUNNER_EXIT_TRANSIENT;
  }
  pm_now_rfc3339(c->started_at, sizeof(c->started_at));
  int r = st_init(&c->st, "ptah-migrate", "PtahRunnerReport", pm_table,
                  "run a PtahMigration's versioned migrations (Apply) or read its version "
                  "(Observe)",
                  argc, argv);
  if(r == 1) {
    free(c);
    return 0;
  }
  c->st.secrets[0] = getenv("GODWIT_DATABASE_URI"); /* redacted from the first line on */
  if(!r)
    r = check_args(c);
  if(r) {
    pm_set(c, PM_FAILED, "%s; nothing was read or changed", c->st.summary);
  } else {
    c->args_ok = true;
    run(c);
  }
  pm_unlock(c);
  code = pm_finish(c);
  pm_db_release(c);
  pm_files_release(c);
  st_release(&c->st);
  free(c->message);
  free(c);
  return code;
}
