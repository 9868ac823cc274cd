/* The report of a runner step, written where the controller reads it (termination.h). */
#include "termination.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

void runner_report_write(const char *path, const char *report)
{
  if(!path)
    path = "/dev/termination-log";
  if(!strcmp(path, "-")) {
    fprintf(stdout, "%s\n", report);
    fflush(stdout);
    return;
  }
  FILE *out = fopen(path, "w");
  bool ok = out != NULL;
  if(out) {
    ok = fputs(report, out) >= 0;
    ok = fclose(out) == 0 && ok;
  }
  if(!ok)
    log_kv(LOG_WARN, "cannot write the report", "path", path, LOG_END);
}
