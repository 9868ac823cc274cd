/*
 * builtins.h: what the built-in types' files (builtins*.c) share: their admission hooks, named in
 * the table of builtins.c, and the pod-template rules every workload kind applies to
 * spec.template (builtins_pods.c).
 *
 * A prepare hook runs kube-apiserver's defaulting and built-in admission plugins before the
 * webhooks; a validate hook its validation after them. Both get old NULL on a create, and return
 * NULL or a Status (validation: 422 Invalid with one cause per failed rule).
 */
#ifndef LS_BUILTINS_H
#define LS_BUILTINS_H

#include "rest.h"

/* builtins_pods.c: Pods, Jobs */
cJSON *bi_pod_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *bi_pod_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
cJSON *bi_job_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *bi_job_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
/* builtins_daemonsets.c */
cJSON *bi_ds_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *bi_ds_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
/* builtins_ext.c: CRDs, webhook configurations */
cJSON *bi_crd_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *bi_crd_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
cJSON *bi_webhook_prepare(struct ls_wctx *w, cJSON *obj, const cJSON *old);
cJSON *bi_webhook_validate(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
void bi_crd_after(const cJSON *obj, const cJSON *old);
void bi_webhook_after(const struct ls_rtype *rt, const cJSON *obj, const cJSON *old);

/* ---- pod templates (builtins_pods.c) ---- */
/* parent[key] as an object, replacing whatever else is there. */
cJSON *bi_obj_at(cJSON *parent, const char *key);
/* Adds o[key] = v unless key is present; takes v either way. */
void bi_dflt(cJSON *o, const char *key, cJSON *v);
/* SetDefaults_PodSpec: what a Pod (is_template false) or a pod template gets. */
void bi_podspec_defaults(cJSON *spec, bool is_template);
/* Containers present, each named (DNS label) and with an image; causes under prefix. */
void bi_container_checks(cJSON *causes, const cJSON *spec, const char *prefix);
/* A FieldValueInvalid "field is immutable" cause unless a and b are equal. */
void bi_immutable(cJSON *causes, const cJSON *a, const cJSON *b, const char *field);
/* NULL when causes is empty (and frees it), else the 422 Status of w's kind with them. */
cJSON *bi_finish(struct ls_wctx *w, const cJSON *obj, cJSON *causes);

#endif
