/*
 * schema.c: `godwit-runner ptah-plan`: the flags, the protocol check and the order of work of
 * the plan engine (schema.h), for its three types: Plan, Observe (the same, recorded as an
 * Observe) and Apply. docs/dev/ptah-plan-engine.md is the contract.
 */
#include "schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/format.h"
#include "ptah.h"
#include "strbuf.h"
#include "termination.h"

_Static_assert(offsetof(struct sp_ctx, st) == 0, "ST_COMMON_OPTS offsets are into st");

#define SP_OFF(f) offsetof(struct sp_ctx, o.f)

static const struct cfg_opt sp_table[] = {
  { "operation", NULL, CFG_STR, NULL, 0, 0, SP_OFF(operation),
    "the operation id, a DNS-1123 label such as shop-plan-3 (required)" },
  { "type", NULL, CFG_STR, "Plan", 0, 0, SP_OFF(type),
    "Plan (compute the plan), Apply (run the approved plan) or Observe (compute it again, "
    "read-only, after an Apply)" },
  { "attempt", NULL, CFG_INT, "1", 1, 1000000, SP_OFF(attempt),
    "which attempt of the operation this Job is" },
  { "owner-name", NULL, CFG_STR, NULL, 0, 0, SP_OFF(owner_name),
    "the PtahSchema whose plan this is (required)" },
  { "namespace", NULL, CFG_STR, NULL, 0, 0, SP_OFF(namespace),
    "its namespace, where the record is created (required)" },
  { "job-name", NULL, CFG_STR, NULL, 0, 0, SP_OFF(job_name),
    "this Job's name, also the record's name (required)" },
  { "desired", NULL, CFG_STR, NULL, 0, 0, SP_OFF(desired),
    "the desired schema, a file of SQL DDL (required)" },
  { "plan-out", NULL, CFG_STR, NULL, 0, 0, SP_OFF(plan_out),
    "where the whole plan goes as JSON (statements, fingerprint, summary, digest)" },
  { "binding", NULL, CFG_STR, "", 0, 0, SP_OFF(binding),
    "the execution binding, hashed into the plan's digest" },
  { "protected-table", NULL, CFG_STRLIST, NULL, 0, 0, SP_OFF(protected_tables),
    "schema.table no statement may touch (repeatable, any number of times; a value may hold "
    "several, one a line)" },
  { "approved-digest", NULL, CFG_STR, NULL, 0, 0, SP_OFF(approved_digest),
    "Apply: the digest of the approved plan, sha256:<64 hex> (required for an Apply)" },
  { "plan-fingerprint", NULL, CFG_STR, NULL, 0, 0, SP_OFF(plan_fingerprint),
    "Apply: the catalog fingerprint the approved plan was computed against, to say why a plan "
    "went stale" },
  { "lock-wait-s", NULL, CFG_INT, "30", 0, 3600, SP_OFF(lock_wait_s),
    "Apply: seconds to wait for the PtahSchema lock another session holds" },
  { "protocol", NULL, CFG_STR, NULL, 0, 0, SP_OFF(protocol),
    "the runner protocol the Job expects; this runner speaks " PTAH_RUNNER_PROTOCOL
    " (required)" },
  { "result", NULL, CFG_STR, "none", 0, 0, SP_OFF(result),
    "durable: create a PtahResultRecord through the Kubernetes API; none: the report and the "
    "plan file only" },
  ST_COMMON_OPTS,
  { NULL },
};


void sp_set(struct sp_ctx *c, enum sp_outcome o, const char *fmt, ...)
{
  c->outcome = o;
  va_list ap;
  va_start(ap, fmt);
  ptah_vmessage(&c->message, true, fmt, ap);
  va_end(ap);
}

void sp_add_message(struct sp_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ptah_vmessage(&c->message, false, fmt, ap);
  va_end(ap);
}

const char *sp_outcome_name(enum sp_outcome o)
{
  static const char *const names[] = { "Failed", "Succeeded", "Applied", "UpToDate", "Partial",
                                        "Unknown" };
  return names[o];
}

const char *sp_type_name(enum sp_type t)
{
  return t == SP_APPLY ? "Apply" : t == SP_OBSERVE ? "Observe" : "Plan";
}

/* ----- the flags -------------------------------------------------------------------------- */

static int bad_arg(struct sp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_arg(struct sp_ctx *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = ptah_vbad_arg(&c->st, "ptah-plan", fmt, ap);
  va_end(ap);
  return r;
}

static int check_args(struct sp_ctx *c)
{
  const struct sp_opts *o = &c->o;
  const struct ptah_identity id = { o->protocol, o->operation, o->owner_name, o->namespace,
                                     o->job_name };
  if(ptah_check_identity(&c->st, "ptah-plan", &id))
    return -1;
  if(!strcmp(o->type, "Plan") || !strcmp(o->type, "Observe") || !strcmp(o->type, "Apply"))
    c->type = !strcmp(o->type, "Apply") ? SP_APPLY : !strcmp(o->type, "Observe") ? SP_OBSERVE
                                                                                  : SP_PLAN;
  else
    return bad_arg(c, "--type must be Plan, Apply or Observe, got \"%.40s\"", o->type);
  if(strcmp(o->result, "none") && strcmp(o->result, "durable"))
    return bad_arg(c, "--result must be none or durable, got \"%.40s\"", o->result);
  c->durable = !strcmp(o->result, "durable");
  if(!o->desired || !*o->desired)
    return bad_arg(c, "--desired is required: the file of the desired schema's SQL");
  const char *const digests[] = { o->approved_digest, o->plan_fingerprint };
  const char *const flags[] = { "approved-digest", "plan-fingerprint" };
  for(int i = 0; i < 2; i++) {
    const char *why = digests[i] ? fmt_sha256_digest.check(digests[i]) : NULL;
    if(digests[i] && c->type != SP_APPLY)
      return bad_arg(c, "--%s is for --type Apply only", flags[i]);
    if(why)
      return bad_arg(c, "--%s: %s, got \"%.80s\"", flags[i], why, digests[i]);
  }
  if(c->type == SP_APPLY && !o->approved_digest)
    return bad_arg(c, "--approved-digest is required for --type Apply: the digest of the plan "
                      "a person approved (sha256:<64 hex>)");
  if(sp_protected_parse(c))
    return -1;
  snprintf(c->appname, sizeof(c->appname), "godwit-ptah-%s-%s",
           c->type == SP_APPLY ? "apply" : "plan", o->operation);
  return 0;
}

/* ----- the desired file --------------------------------------------------------------------- */

static int read_desired(struct sp_ctx *c)
{
  const char *path = c->o.desired;
  struct stat sb;
  FILE *in = NULL;
  const char *why = NULL;
  if(stat(path, &sb) || !S_ISREG(sb.st_mode))
    why = "is not a readable regular file";
  else if(sb.st_size > SP_DESIRED_MAX)
    why = "is larger than 16 MiB";
  else if(!(in = fopen(path, "rb")) || !(c->desired = calloc(1, (size_t)sb.st_size + 1)))
    why = "cannot be read";
  else if(fread(c->desired, 1, (size_t)sb.st_size, in) != (size_t)sb.st_size)
    why = "cannot be read";
  else if(strlen(c->desired) != (size_t)sb.st_size)
    why = "holds a NUL byte";
  else if(!c->desired[strspn(c->desired, " \t\r\n")])
    why = "is empty: a PtahSchema declares the whole schema, an empty one would drop everything";
  if(in)
    fclose(in);
  if(!why && digest_sha256(c->desired, (size_t)sb.st_size, c->desired_sum))
    why = "cannot be hashed";
  if(why) {
    st_fail(&c->st, false, "desired", "\"%s\" %s", path, why);
    sp_set(c, SP_FAILED, "nothing was planned: the desired schema \"%s\" %s", path, why);
    return -1;
  }
  st_pass(&c->st, "desired", "read \"%s\" (%lld bytes, %s)", path, (long long)sb.st_size,
          c->desired_sum);
  return 0;
}

/* ----- the run ---------------------------------------------------------------------------- */

static int read_target(struct sp_ctx *c)
{
  struct pgc_err e;
  if(pgc_exec(c->conn, &e, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") ||
     sm_read(c->conn, &c->have, &e) || pgc_exec(c->conn, &e, "COMMIT"))
    return sp_query_failed(c, "catalog", "read the target's catalog", &e);
  c->have_read = true;
  if(sm_fingerprint(&c->have, c->plan.fingerprint)) {
    st_fail(&c->st, true, "catalog", "out of memory");
    sp_set(c, SP_FAILED, "nothing was planned: out of memory");
    return -1;
  }
  size_t n = 0;
  for(int k = 0; k < SM_NKINDS; k++)
    n += c->have.k[k].n;
  st_pass(&c->st, "catalog", "read the target's catalog: %zu objects, fingerprint %s", n,
          c->plan.fingerprint);
  return 0;
}

static void name_refused(struct strbuf *sb, const struct sm_model *m, const char *side,
                         size_t *shown)
{
  for(size_t i = 0; i < m->nrefused && *shown < SP_REFUSED_SHOWN; i++, (*shown)++)
    if(strbuf_addf(sb, "%s%s (%s)", *shown ? ", " : "", m->refused[i], side))
      return;
}

/* Objects of kinds the engine does not cover, on either side: the plan fails naming them. */
static int refuse(struct sp_ctx *c)
{
  size_t n = c->have.nrefused + c->want.nrefused, shown = 0;
  if(!n)
    return 0;
  struct strbuf sb;
  strbuf_init(&sb, 8192);
  name_refused(&sb, &c->have, "in the target", &shown);
  name_refused(&sb, &c->want, "in the desired schema", &shown);
  const char *more = n > shown ? " and more" : "";
  st_fail(&c->st, false, "refused", "%zu object%s of kinds the plan engine does not cover: %s%s",
          n, n == 1 ? "" : "s", strbuf_str(&sb), more);
  sp_set(c, SP_FAILED, "nothing was planned: %zu object%s of kinds the plan engine does not "
         "cover: %s%s. It covers schemas, extensions, enum types, sequences, tables, columns, "
         "constraints, indexes, views and comments; manage the others with a PtahMigration "
         "and leave them out of the PtahSchema's scope", n, n == 1 ? "" : "s", strbuf_str(&sb),
         more);
  strbuf_release(&sb);
  return -1;
}

/* Reads the desired schema's model, diffs and digests: the plan. 0, or -1 with the message. */
static int compute(struct sp_ctx *c)
{
  if(read_target(c) || sp_materialise(c))
    return -1;
  struct pgc_err e;
  if(sm_read(c->dev, &c->want, &e))
    return sp_query_failed(c, "desired", "read the catalog of the materialised desired schema",
                           &e);
  c->want_read = true;
  sp_dematerialise(c);
  if(refuse(c))
    return -1;
  if(sd_diff(&c->have, &c->want, &c->plan) || sp_finish_plan(&c->plan, c->o.binding)) {
    st_fail(&c->st, false, "plan", "%s", c->plan.err[0] ? c->plan.err : "out of memory");
    sp_set(c, SP_FAILED, "nothing was planned: %s",
           c->plan.err[0] ? c->plan.err : "out of memory");
    return -1;
  }
  c->planned = true;
  st_pass(&c->st, "plan", "%zu statement%s (%zu destructive), digest %s", c->plan.n,
          c->plan.n == 1 ? "" : "s", c->plan.ndestructive, c->plan.digest);
  return sp_plan_secret(c);
}

static void run(struct sp_ctx *c)
{
  if(read_desired(c))
    return;
  if(c->durable && sp_record_credential(c))
    return; /* a result that cannot be delivered would leave the run uncertain */
  if(sp_connect(c) || (c->type == SP_APPLY && sp_lock(c)) || compute(c) || sp_protect(c))
    return;
  if(c->type == SP_APPLY) {
    sp_apply(c);
    return;
  }
  sp_set(c, SP_SUCCEEDED, "%s; computed against catalog %s (the desired schema materialised "
         "in %s), digest %s", c->plan.summary, c->plan.fingerprint,
         !strcmp(c->materialised, "scratch") ? "a scratch database" : "the dev database",
         c->plan.digest);
}

/* --protected-table repeats once per protected table (up to 256, spec.policy.protectedTables),
 * more than a CFG_STRLIST holds: its values are taken out of argv (into c->protected_args)
 * before the table parses the rest. The argv returned is malloc'd; NULL when out of memory. */
static char **take_protected(struct sp_ctx *c, int argc, char **argv, int *out_argc)
{
  static const char flag[] = "--protected-table";
  const size_t n = sizeof(flag) - 1;
  char **av = calloc((size_t)argc + 1, sizeof(char *));
  c->protected_args = calloc((size_t)argc + 1, sizeof(char *));
  if(!av || !c->protected_args) {
    free(av);
    return NULL;
  }
  int ac = 0;
  for(int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if(i > 0 && !strncmp(a, flag, n) && a[n] == '=')
      c->protected_args[c->nprotected_args++] = a + n + 1;
    else if(i > 0 && !strcmp(a, flag) && i + 1 < argc)
      c->protected_args[c->nprotected_args++] = argv[++i];
    else
      av[ac++] = argv[i];
  }
  *out_argc = ac;
  return av;
}

int ptah_plan_main(int argc, char **argv)
{
  int code = pm_protocol_check(argc, argv);
  if(code >= 0)
    return code;
  struct sp_ctx *c = calloc(1, sizeof(*c));
  int ac = 0;
  char **av = c ? take_protected(c, argc, argv, &ac) : NULL;
  if(!av) {
    fprintf(stderr, "godwit-runner ptah-plan: out of memory\n");
    if(c)
      free(c->protected_args);
    free(c);
    return RUNNER_EXIT_TRANSIENT;
  }
  int r = st_init(&c->st, "ptah-plan", "PtahPlanReport", sp_table,
                  "compute the DDL that takes the database to a PtahSchema's desired schema "
                  "(Plan, Observe: read-only), or run the approved plan (Apply)",
                  ac, av);
  if(r == 1) {
    free(av);
    free(c->protected_args);
    free(c);
    return 0;
  }
  pm_now_rfc3339(c->started_at, sizeof(c->started_at));
  sp_plan_init(&c->plan);
  c->st.secrets[0] = getenv("GODWIT_DATABASE_URI"); /* redacted from the first line on */
  c->st.secrets[1] = getenv("GODWIT_DEV_DATABASE_URI");
  if(!r)
    r = check_args(c);
  if(r) {
    sp_set(c, SP_FAILED, "%s; nothing was read", c->st.summary);
  } else {
    c->args_ok = true;
    run(c);
  }
  sp_dematerialise(c);
  sp_unlock(c);
  code = sp_finish(c);
  PQfinish(c->conn);
  PQfinish(c->admin);
  if(c->have_read)
    sm_release(&c->have);
  if(c->want_read)
    sm_release(&c->want);
  sp_plan_release(&c->plan);
  sp_protected_release(c);
  st_release(&c->st);
  free(av);
  free(c->protected_args);
  free(c->desired);
  free(c->message);
  free(c);
  return code;
}
