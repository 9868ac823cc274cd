/*
 * write.h: the write pipeline shared by create (rest_write.c), update and patch
 * (rest_update.c) and delete (rest_delete.c). Every function returns NULL or a Status; *out is
 * the served form of the written object.
 */
#ifndef LS_WRITE_H
#define LS_WRITE_H

#include "rest.h"

/* Fills w for a request (identity, dry run, options). NULL or a 400 Status. */
cJSON *write_ctx(struct ls_wctx *w, struct ls_req *r, const struct ls_rtype *rt,
                 const struct ls_target *t, const char *operation, const char *options_kind);
/* A write made by the server itself (GC, namespace controller), as a system user. */
void write_ctx_internal(struct ls_wctx *w, const struct ls_rtype *rt, const char *ns,
                        const char *name, const char *operation, struct ls_identity *id,
                        const char *user);
void write_ctx_release(struct ls_wctx *w);

/* The request body as an object of rt (apiVersion and kind checked or filled). */
cJSON *write_decode(const struct ls_rtype *rt, const char *body, size_t len, cJSON **out);

/* obj: ownership taken. */
cJSON *write_create(struct ls_wctx *w, cJSON *obj, cJSON **out);

/* Builds the new served object from the current one; *next NULL (and NULL returned) means
 * "nothing to change". */
typedef cJSON *(*write_update_fn)(void *ctx, const cJSON *current, cJSON **next);
/* is_put: a PUT (create on update, resourceVersion required for some types). *created is set
 * when the object was created instead. */
cJSON *write_update(struct ls_wctx *w, write_update_fn fn, void *ctx, bool is_put,
                    cJSON **out, bool *created);

/* Admission attributes of a write. */
void write_attrs(struct ls_adm_attrs *a, const struct ls_wctx *w);
/* Unknown fields dropped by pruning, per fieldValidation (Strict fails, Warn warns). */
cJSON *write_field_validation(struct ls_wctx *w, const cJSON *before, const cJSON *after);
/* obj without metadata.resourceVersion equals old without it. */
bool write_same(const cJSON *a, const cJSON *b);

#endif
