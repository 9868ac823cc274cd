/*
 * godwit-runner: the steps that run inside runner Jobs. `godwit-runner STEP [flags]`; each step
 * documents its flags with `godwit-runner STEP --help` and its exit codes in its header.
 */
#include <stdio.h>
#include <string.h>

#include "preflight.h"
#include "ptah.h"
#include "schema.h"
#include "step.h"
#include "version.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} steps[] = {
  { "preflight", preflight_main,
    "check connectivity, the clone tier and the follow tier; grant what is missing" },
  { "catalog", catalog_main, "count the tables pgcopydb finished, from its work dir" },
  { "cutover", cutover_main, "set pgcopydb's end position and nudge the source" },
  { "verify", verify_main, "prove the drain (origin progress or data compare); sync sequences" },
  { "compare", compare_main, "compare schema and/or data of source and target" },
  { "cleanup", cleanup_main, "drop the replication slot, publication, origin and sentinel" },
  { "reown", reown_main, "hand the migration role's objects over to the owner after restore" },
  { "ptah-migrate", ptah_migrate_main, "apply a PtahMigration's versions, or read its version" },
  { "ptah-plan", ptah_plan_main, "compute the DDL taking a database to a PtahSchema (read-only)" },
};

static void usage(FILE *out)
{
  fprintf(out, "usage: godwit-runner STEP [flags]\n\nsteps:\n");
  for(size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
    fprintf(out, "  %-12s %s\n", steps[i].name, steps[i].summary);
  fprintf(out, "\n`godwit-runner STEP --help` lists a step's flags.\n");
}

int main(int argc, char **argv)
{
  if(argc == 2 && gw_version_asked(argc, argv, "godwit-runner"))
    return 0;
  if(argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  for(size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
    if(!strcmp(argv[1], steps[i].name))
      return steps[i].run(argc - 1, argv + 1);
  fprintf(stderr, "godwit-runner: unknown step \"%s\"\n", argv[1]);
  usage(stderr);
  return 1;
}
