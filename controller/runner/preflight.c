/*
 * preflight.c: the preflight step: the check table, the rounds and the decision.
 *
 * Credentials come only from the environment (the controller fills it from Secrets):
 * GODWIT_SOURCE_URI, GODWIT_TARGET_URI and, optionally, GODWIT_SUPERUSER_URI, whose user and
 * password are used with each side's host, port and database.
 */
#include "preflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Every check, in the order it runs. The ids are API: the controller and the docs quote them
 * (docs/api/migration-preflight.md). A gate stops the round when it fails. */
static const struct {
  struct pf_check c;
  bool gate;
} pf_checks[] = {
  { { "source.connect", PF_ALWAYS, pf_chk_connect_source }, true },
  { { "target.connect", PF_ALWAYS, pf_chk_connect_target }, true },
  { { "servers.version", PF_ALWAYS, pf_chk_versions }, false },
  { { "pgcopydb.version", PF_ALWAYS, pf_chk_pgcopydb }, false },
  { { "target.superuser", PF_WITH_SUPERUSER, pf_chk_su_target }, false },
  { { "source.superuser", PF_WITH_FOLLOW_SUPERUSER, pf_chk_su_source }, false },
  { { "databases.listing", PF_ALWAYS, pf_chk_listing }, false },
  { { "source.scope", PF_ALWAYS, pf_chk_scope }, false },
  { { "source.read", PF_ALWAYS, pf_chk_read }, false },
  { { "target.extensions", PF_ALWAYS, pf_chk_extensions }, false },
  { { "target.createDatabase", PF_ALWAYS, pf_chk_create_db }, false },
  { { "target.createSchemas", PF_ALWAYS, pf_chk_create_schemas }, false },
  { { "target.ownerAfterRestore", PF_ALWAYS, pf_chk_owner_after_restore }, false },
  { { "target.databaseOwner", PF_ALWAYS, pf_chk_db_owner }, false },
  { { "source.walLevel", PF_WITH_FOLLOW, pf_chk_wal_level }, false },
  { { "source.replicationSlots", PF_WITH_FOLLOW, pf_chk_slots }, false },
  { { "source.replicationRole", PF_WITH_FOLLOW, pf_chk_replication_role }, false },
  { { "source.outputPlugin", PF_WITH_FOLLOW, pf_chk_output_plugin }, false },
  { { "source.sentinel", PF_WITH_FOLLOW, pf_chk_sentinel }, false },
  { { "source.replicaIdentity", PF_WITH_FOLLOW, pf_chk_replica_identity }, false },
  { { "source.unloggedTables", PF_WITH_FOLLOW, pf_chk_unlogged }, false },
  { { "target.replicationOrigin", PF_WITH_FOLLOW, pf_chk_origin }, false },
  { { "target.sessionReplicationRole", PF_WITH_FOLLOW, pf_chk_session_role }, false },
};

static bool applies(const struct pf_ctx *c, enum pf_when w)
{
  switch(w) {
  case PF_ALWAYS:
    return true;
  case PF_WITH_FOLLOW:
    return c->o.follow;
  case PF_WITH_SUPERUSER:
    return c->have_su;
  case PF_WITH_FOLLOW_SUPERUSER:
    return c->o.follow && c->have_su;
  }
  return false;
}

static void round_reset(struct pf_ctx *c)
{
  for(size_t i = 0; i < c->nfix; i++)
    free(c->fixes[i].sql);
  c->nfix = 0;
  c->nout = 0;
}

/* A failure fixed by grants alone says which statements, where, and who can run them. */
static void explain_fixes(struct pf_ctx *c, size_t idx)
{
  struct pf_out *r = &c->out[idx];
  if(r->blocking || !r->nfix)
    return;
  r->recovery[0] = '\0';
  if(!c->have_su) /* first, so that a cut message keeps it */
    pf_appendf(r->recovery, sizeof(r->recovery),
               "set spec.superuserSecretRef so the preflight grants it, or ");
  size_t k = 0;
  for(size_t i = 0; i < c->nfix; i++)
    if(c->fixes[i].check == idx) {
      if(!k)
        pf_appendf(r->recovery, sizeof(r->recovery), "as a superuser on the %s: ",
                   st_side_name(c->fixes[i].side));
      pf_appendf(r->recovery, sizeof(r->recovery), "%s%s", k++ ? "; " : "", c->fixes[i].sql);
    }
}

static void round_run(struct pf_ctx *c)
{
  round_reset(c);
  size_t n = sizeof(pf_checks) / sizeof(pf_checks[0]);
  if(c->capout < n) {
    free(c->out);
    c->out = calloc(n, sizeof(*c->out));
    c->capout = c->out ? n : 0;
  }
  for(size_t i = 0; i < n && c->out; i++) {
    if(!applies(c, pf_checks[i].c.when))
      continue;
    struct pf_out *r = &c->out[c->nout++];
    memset(r, 0, sizeof(*r));
    r->id = pf_checks[i].c.id;
    pf_checks[i].c.run(c, r);
    if(r->status == PF_FAIL && !r->nfix)
      r->blocking = true; /* a failure without a grant to apply needs a person */
    explain_fixes(c, c->nout - 1);
    pf_print_check(c, r);
    if(pf_checks[i].gate && r->status == PF_FAIL)
      break;
  }
}

static const struct pf_out *first_failure(const struct pf_ctx *c, bool blocking_only)
{
  for(size_t i = 0; i < c->nout; i++)
    if(c->out[i].status == PF_FAIL && (!blocking_only || c->out[i].blocking))
      return &c->out[i];
  return NULL;
}

static bool any_transient(const struct pf_ctx *c)
{
  for(size_t i = 0; i < c->nout; i++)
    if(c->out[i].status == PF_FAIL && c->out[i].transient)
      return true;
  return false;
}

static void ctx_release(struct pf_ctx *c)
{
  st_release(&c->st);
  PQfinish(c->su_src_c);
  PQfinish(c->su_dst_c);
  pgc_endpoint_release(&c->su_src);
  pgc_endpoint_release(&c->su_dst);
  round_reset(c);
  free(c->fixes);
  free(c->out);
  for(size_t i = 0; i < c->napplied; i++)
    free(c->applied[i].sql);
  free(c->applied);
  pf_scope_release(c);
  pf_opts_release(&c->o);
}

/* Endpoints from the environment; on failure r says which variable is wrong. */
static int load_endpoints(struct pf_ctx *c, struct pf_out *r)
{
  char err[256];
  const char *src = getenv("GODWIT_SOURCE_URI"), *dst = getenv("GODWIT_TARGET_URI");
  const char *su = getenv("GODWIT_SUPERUSER_URI");
  c->st.secrets[0] = src;
  c->st.secrets[1] = dst;
  c->st.secrets[2] = su;
  r->id = "config";
  if(pgc_endpoint_parse(&c->st.src, "source", src, err, sizeof(err))) {
    pf_fail(r, "%s (GODWIT_SOURCE_URI)", err);
    pf_block(r, "fix the URI in the Secret named by spec.source.connectionSecretRef");
    return -1;
  }
  if(pgc_endpoint_parse(&c->st.dst, "target", dst, err, sizeof(err))) {
    pf_fail(r, "%s (GODWIT_TARGET_URI)", err);
    pf_block(r, "fix the URI in the Secret named by spec.target.connectionSecretRef");
    return -1;
  }
  if(su && *su) {
    struct pgc_endpoint cred;
    if(pgc_endpoint_parse(&cred, "superuser", su, err, sizeof(err))) {
      pf_fail(r, "%s (GODWIT_SUPERUSER_URI)", err);
      pf_block(r, "fix the URI in the Secret named by spec.superuserSecretRef");
      return -1;
    }
    gw_rc rc = pgc_endpoint_with_user(&c->su_src, "superuser on source", &c->st.src, &cred);
    if(!rc)
      rc = pgc_endpoint_with_user(&c->su_dst, "superuser on target", &c->st.dst, &cred);
    pgc_endpoint_release(&cred);
    c->st.secrets[3] = c->su_src.password;
    c->st.secrets[4] = c->su_dst.password;
    if(rc) {
      pf_fail(r, "superuser: %s", gw_strerror(rc));
      pf_block(r, "retry");
      return -1;
    }
    c->have_su = true;
  }
  return 0;
}

/* The summary of the RESULT line and the report, and the failure it names. */
static void summarize(struct pf_ctx *c, enum st_result result, const struct pf_out *failed)
{
  size_t pass = 0, warn = 0, blocked = 0, grantable = 0;
  for(size_t i = 0; i < c->nout; i++) {
    pass += c->out[i].status == PF_PASS;
    warn += c->out[i].status == PF_WARN;
    blocked += c->out[i].status == PF_FAIL && c->out[i].blocking;
    grantable += c->out[i].status == PF_FAIL && !c->out[i].blocking;
  }
  size_t clone = 0, follow = 0;
  for(size_t i = 0; i < c->napplied; i++) {
    if(c->applied[i].tier == PF_CLONE)
      clone++;
    else
      follow++;
  }
  st_escalate(&c->st, result);
  c->failed = failed;
  st_summary(&c->st, "%zu checks passed", pass + warn);
  if(warn)
    st_summary_add(&c->st, " (%zu with warnings)", warn);
  if(grantable)
    st_summary_add(&c->st, ", %zu need grants", grantable);
  if(blocked)
    st_summary_add(&c->st, ", %zu failed", blocked);
  const char *verb = c->o.dry_run ? "would be applied" : "applied";
  if(c->napplied)
    st_summary_add(&c->st, ", %zu grants %s (clone %zu, follow %zu)", c->napplied, verb, clone,
                   follow);
  else
    st_summary_add(&c->st, ", no grants %s", verb);
  if(failed)
    st_summary_add(&c->st, "; %s failed", failed->id);
}

/* Applies the grants when every failure is one, runs the checks again, and sums up. */
static void decide(struct pf_ctx *c)
{
  if(any_transient(c)) {
    summarize(c, ST_TRANSIENT, first_failure(c, true));
    return;
  }
  const struct pf_out *failed = first_failure(c, true);
  if(!failed && c->nfix) {
    if(!c->have_su) {
      failed = first_failure(c, false);
    } else {
      bool dry = c->o.dry_run;
      st_print(&c->st, "%s %zu grants through the superuser URI",
               dry ? "would apply" : "applying", c->nfix);
      if(pf_apply(c, &c->own)) {
        failed = &c->own;
      } else if(!dry) {
        st_print(&c->st, "re-running the checks after remediation");
        round_run(c);
        if(any_transient(c)) {
          summarize(c, ST_TRANSIENT, first_failure(c, false));
          return;
        }
        failed = first_failure(c, false);
      }
    }
  }
  summarize(c, failed ? ST_FAILED : ST_PASSED, failed);
}

int preflight_main(int argc, char **argv)
{
  struct pf_ctx *c = calloc(1, sizeof(*c));
  if(!c) {
    fprintf(stderr, "godwit-runner preflight: out of memory\n");
    return RUNNER_EXIT_TRANSIENT;
  }
  int parsed = pf_opts_parse(c, argc, argv);
  if(parsed == 1) {
    ctx_release(c);
    free(c);
    return RUNNER_EXIT_PASSED;
  }
  if(parsed) { /* st_init printed the FAIL config line */
    c->own.id = "config";
    pf_fail(&c->own, "%s", c->st.summary);
    pf_block(&c->own, "fix the runner's arguments (see godwit-runner preflight --help)");
    c->failed = &c->own;
  } else if(load_endpoints(c, &c->own)) {
    pf_print_check(c, &c->own);
    st_escalate(&c->st, ST_FAILED);
    st_summary(&c->st, "config failed: %s", c->own.message);
    c->failed = &c->own;
  } else {
    pf_detect_pgcopydb(&c->pgcopydb, c->o.pgcopydb_version);
    st_print(&c->st, "preflight of %s -> %s%s%s", c->st.src.desc, c->st.dst.desc,
             c->o.follow ? ", live (follow)" : ", clone only", c->o.dry_run ? ", dry run" : "");
    round_run(c);
    decide(c);
  }
  int code = st_finish(&c->st, pf_report_fields, c);
  ctx_release(c);
  free(c);
  return code;
}
