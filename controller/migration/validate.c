/* Validation before anything runs: the shared rule set (the one the webhook runs, so a spec that
 * slipped past a disabled webhook is refused the same way) and the rendering of the worker Job.
 * A failure is InvalidSpec, terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/migration.h"
#include "json.h"
#include "mig.h"

static void append(char *msg, size_t len, const char *field, const char *what)
{
  size_t used = strlen(msg);
  if(used + 8 >= len)
    return;
  snprintf(msg + used, len - used, "%s%s: %s", used ? "; " : "", field, what);
}

bool mig_validate(struct mig *m, char *msg, size_t len)
{
  if(!api_revalidate("pgcopydb.io", "Migration", m->obj, msg, len))
    return false;
  if((int)strlen(m->name) > MIGRATION_NAME_MAX) {
    char what[160];
    snprintf(what, sizeof(what), "must be at most %d characters, got %zu: runner Job names "
             "would not fit a label value", MIGRATION_NAME_MAX, strlen(m->name));
    append(msg, len, "metadata.name", what);
    return false;
  }
  /* the worker Job renders */
  struct job_spec s;
  memset(&s, 0, sizeof(s));
  static const char *const cmd[] = { "pgcopydb", NULL };
  s.step = "worker";
  s.attempt = 1;
  s.image = mig_image(m);
  s.command = cmd;
  s.args = mig_worker_args(json_get(m->obj, "spec"), &m->version, 1, false, m->slot,
                           json_get_str(m->obj, "status.outputPlugin"));
  s.source = s.target = s.worker = s.workdir = true;
  cJSON *job = s.args ? mig_job_render(m, &s) : NULL;
  if(!job) { /* the rendering took the arguments */
    append(msg, len, "spec", "cannot be rendered into a worker Job");
    return false;
  }
  cJSON_Delete(job);
  if(!s.image || !*s.image) {
    append(msg, len, "spec.worker.image", "is empty and the controller has no runner image");
    return false;
  }
  return true;
}
