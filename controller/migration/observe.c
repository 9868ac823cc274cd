/* The Migration's first observation: status.phase Pending. See migration.h. */
#include <string.h>

#include "../conditions.h"
#include "json.h"
#include "migration.h"

const struct kube_gvr MIGRATION_GVR = { "pgcopydb.io", "v1", "migrations", true };

/* Level-based: decides from the object it is given, fresh on every conflict retry. */
static gw_rc set_pending(void *ctx, cJSON *obj, bool *changed)
{
  (void)ctx;
  const char *phase = json_get_str(obj, "status.phase");
  if(phase && *phase)
    return GW_OK; /* observed before (by us, or by a concurrent writer) */
  gw_rc rc = json_set_str(obj, "status.phase", MIGRATION_PHASE_PENDING);
  if(!rc)
    rc = json_set(obj, "status.observedGeneration",
                  cJSON_CreateNumber((double)obj_generation(obj)));
  if(!rc)
    *changed = true;
  return rc;
}

gw_rc migration_observe(struct rec_ctx *c, cJSON **m)
{
  const char *phase = json_get_str(*m, "status.phase");
  if(phase && *phase)
    return GW_OK;
  cJSON *stored = NULL;
  gw_rc rc = rec_update_status(c, *m, set_pending, NULL, &stored);
  if(!rc && stored) {
    cJSON_Delete(*m);
    *m = stored;
  } else {
    cJSON_Delete(stored);
  }
  return rc;
}

/* The first observation alone (migration_register). */
static struct rec_result observe_only(struct rec_ctx *c)
{
  cJSON *m = rec_get(c);
  if(!m)
    return rec_done(); /* deleted: owned objects go with it (ownerReferences) */
  gw_rc rc = migration_observe(c, &m);
  cJSON_Delete(m);
  if(rc == GW_ENOTFOUND)
    return rec_done();
  return rc ? rec_retry(rc) : rec_done();
}

gw_rc migration_register(struct mgr *m, struct ctrl **out)
{
  static const struct ctrl_def def = { "migration", "Migration", &MIGRATION_GVR, observe_only,
                                       NULL, 0, NULL };
  return mgr_add_controller(m, &def, out);
}
