/*
 * test_runner_schema_corpus.c: the property that proves the plan engine
 * (docs/dev/ptah-plan-engine.md): for every case of tests/cluster/schema_corpus/, after the plan
 * is applied, `pg_dump --schema-only --no-owner --no-privileges` of the target equals that of a
 * fresh database into which the desired SQL was loaded (after sc_canonical), and a second plan
 * is empty. The plan is applied twice: with psql, independently of the runner, and by the
 * runner's own Apply (--type Apply, the digest planned against "target") on "applied", a copy of
 * "before": the same catalog gives the same digest, and the same result.
 *
 * A case is one file, NNN-name.sql:
 *   -- expect: <text>        the plan's statements must contain it (any number of lines)
 *   -- destructive: <n>      the plan must mark n statements destructive (optional)
 *   -- before
 *   <the target's SQL, loaded as app into the database "target">
 *   -- after
 *   <the desired SQL, planned against "target" and loaded as app into "fresh">
 * Run from the top of the tree.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_runner_schema_util.h"
#include "test_runner_steps_util.h"

#define CORPUS "tests/cluster/schema_corpus"

struct corpus_case {
  char name[128];
};

static int cmp_case(const void *a, const void *b)
{
  return strcmp(((const struct corpus_case *)a)->name, ((const struct corpus_case *)b)->name);
}

ParameterizedTestParameters(runner_schema_corpus, property)
{
  DIR *d = opendir(CORPUS);
  size_t n = 0, cap = 256;
  struct corpus_case *cases = cr_malloc(cap * sizeof(*cases));
  for(struct dirent *e = d ? readdir(d) : NULL; e && n < cap; e = readdir(d)) {
    size_t len = strlen(e->d_name);
    if(len > 4 && len < sizeof(cases[0].name) && !strcmp(e->d_name + len - 4, ".sql"))
      memcpy(cases[n++].name, e->d_name, len + 1); /* len < sizeof name: checked above */
  }
  if(d)
    closedir(d);
  qsort(cases, n, sizeof(*cases), cmp_case);
  return cr_make_param_array(struct corpus_case, cases, n);
}

struct parsed {
  char *text; /* owns before and after */
  const char *before, *after;
  const char *expect[16];
  size_t nexpect;
  long destructive; /* -1: not checked */
};

static void parse(struct parsed *p, const char *name)
{
  char path[256];
  snprintf(path, sizeof(path), CORPUS "/%s", name);
  memset(p, 0, sizeof(*p));
  p->destructive = -1;
  p->text = sr_slurp(path);
  char *b = strstr(p->text, "-- before\n"), *a = strstr(p->text, "\n-- after\n");
  cr_assert(b && a && b < a, "%s: no \"-- before\" and \"-- after\" sections", name);
  for(char *l = p->text, *end; l < b; l = end + 1) {
    end = strchr(l, '\n');
    *end = '\0';
    if(!strncmp(l, "-- expect: ", 11) && p->nexpect < 16)
      p->expect[p->nexpect++] = l + 11;
    else if(!strncmp(l, "-- destructive: ", 16))
      p->destructive = atol(l + 16);
  }
  a[1] = '\0';
  p->before = b + 10;
  p->after = a + 10;
}

ParameterizedTest(struct corpus_case *cc, runner_schema_corpus, property, .timeout = 180)
{
  struct parsed c;
  parse(&c, cc->name);
  struct scfx f;
  sc_start(&f, true);
  sc_db(&f, "target");
  sc_db(&f, "fresh");
  if(c.before[strspn(c.before, " \n")])
    sc_exec(&f, "target", c.before);
  sc_exec(&f, "fresh", c.after);
  char *target_before = sc_dump(&f, "target");

  struct splan r;
  sc_plan(&r, &f, "target", c.after, NULL, NULL);
  cr_assert_eq(r.code, 0, "%s: the plan failed:\n%s", cc->name, r.out);
  char *stmts = sc_statements(&r);
  cr_log_info("%s: the plan:\n%s", cc->name, stmts);
  char *unchanged = sc_dump(&f, "target");
  cr_assert_str_eq(unchanged, target_before, "%s: planning changed the target", cc->name);
  for(size_t i = 0; i < c.nexpect; i++)
    cr_assert_not_null(strstr(stmts, c.expect[i]), "%s: no \"%s\" in the plan:\n%s", cc->name,
                       c.expect[i], stmts);
  if(c.destructive >= 0)
    cr_assert_eq(sc_num(&r, "destructive"), c.destructive,
                 "%s: %ld destructive statements, expected %ld:\n%s\n%s", cc->name,
                 sc_num(&r, "destructive"), c.destructive, stmts, sc_str(&r, "summary"));
  cr_assert_eq(sc_num(&r, "statements") > 0, strcmp(c.before, c.after) != 0, "%s", r.report);

  char digest[80];
  snprintf(digest, sizeof(digest), "%s", sc_str(&r, "planDigest"));
  char err[4096];
  cr_assert_eq(sc_apply(&f, "target", &r, err, sizeof(err)), 0,
               "%s: the plan does not apply: %s\nthe plan:\n%s", cc->name, err, stmts);
  char *got = sc_dump(&f, "target"), *want = sc_dump(&f, "fresh");
  cr_assert_str_eq(got, want, "%s: the target after the plan differs from a fresh database "
                   "loaded with the desired SQL\nthe plan:\n%s", cc->name, stmts);
  sc_free(&r);

  sc_plan(&r, &f, "target", c.after, NULL, NULL);
  cr_assert_eq(r.code, 0, "%s: the second plan failed:\n%s", cc->name, r.out);
  char *again = sc_statements(&r);
  cr_assert_eq(sc_num(&r, "statements"), 0, "%s: a second plan is not empty:\n%s", cc->name,
               again);
  cr_assert_str_eq(sc_str(&r, "summary"), "no change: the database matches the desired schema");
  free(again);
  sc_free(&r);

  /* the runner's own Apply of that plan, on a copy of "before": the same catalog, the same
   * digest, the same result */
  sc_db(&f, "applied");
  if(c.before[strspn(c.before, " \n")])
    sc_exec(&f, "applied", c.before);
  sc_plan(&r, &f, "applied", c.after, (const char *[]){ "--type", "Apply", "--approved-digest",
                                                         digest, NULL }, NULL);
  cr_assert_eq(r.code, 0, "%s: the Apply failed:\n%s", cc->name, r.out);
  cr_assert_str_eq(sc_str(&r, "outcome"), strcmp(c.before, c.after) ? "Applied" : "UpToDate",
                   "%s: %s", cc->name, r.report);
  cr_assert_null(strstr(r.out, "WARN verify"), "%s: %s", cc->name, r.out);
  sc_free(&r);
  char *applied = sc_dump(&f, "applied");
  cr_assert_str_eq(applied, want, "%s: the database after the runner's Apply differs from a fresh "
                   "database loaded with the desired SQL", cc->name);
  free(applied);
  free(stmts);
  free(got);
  free(want);
  free(unchanged);
  free(target_before);
  free(c.text);
  sc_stop(&f);
}
