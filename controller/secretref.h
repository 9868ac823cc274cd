/*
 * secretref.h: reading a key of a Secret the controller needs for its own use (a connection URI
 * for a probe), for any kind. Secrets are read by name when needed, never listed nor cached (the
 * controller has no right to list them); values are wiped when freed and never logged. A
 * reference is the API's {name, key} object; key defaults to "uri".
 */
#ifndef GW_CTRL_SECRETREF_H
#define GW_CTRL_SECRETREF_H

#include <cJSON.h>
#include <stddef.h>

#include "kube/kube.h"
#include "rc.h"

#define SECRET_DEFAULT_KEY "uri"

/* The value of key in Secret name of namespace ns (malloc'd; secret_free it), or an error with
 * err a sentence for a condition (it names the Secret and the key, never a value):
 * GW_ENOTFOUND (no Secret, or no key), GW_EPARSE (not base64), another code from the API. */
gw_rc secret_get(struct kube_client *k, const char *ns, const char *name, const char *key,
                 char **out, char *err, size_t errlen) GW_MUST_CHECK;
/* The same through a reference at path in obj ("spec.source.connectionSecretRef"):
 * GW_EINVAL when the reference has no name. */
gw_rc secret_ref_get(struct kube_client *k, const char *ns, const cJSON *obj, const char *path,
                     char **out, char *err, size_t errlen) GW_MUST_CHECK;
/* Wipes and frees a value. NULL is fine. */
void secret_free(char *s);

#endif
