/*
 * runnerpod.h: the guard on runner Pods. A Pod labelled godwit.dev/runner must carry the
 * godwit.dev/template-digest annotation its Job's template was rendered with, and its content
 * must still hash to it (shared/podtemplate.h says what the digest covers). Refusals are policy
 * refusals (403): the Job controller reports them as FailedCreate and the godwit controller as
 * PodAdmissionRefused.
 */
#ifndef GW_RUNNERPOD_H
#define GW_RUNNERPOD_H

#include <cJSON.h>

#include "api/fielderr.h"

void runnerpod_check(const cJSON *pod, struct ferrs *e);

#endif
