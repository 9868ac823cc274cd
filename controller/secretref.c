/* secretref.c: a Secret's key, read for the controller's own use (secretref.h). */
#include "secretref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "json.h"

void secret_free(char *s)
{
  if(s) {
    volatile char *p = s;
    while(*p)
      *p++ = 0;
    free(s);
  }
}

/* Wipes the encoded values of a read Secret, then frees it. */
static void secret_object_free(cJSON *sec)
{
  cJSON *d;
  cJSON_ArrayForEach(d, json_get_mut(sec, "data"))
    if(cJSON_IsString(d))
      memset(d->valuestring, 0, strlen(d->valuestring));
  cJSON_Delete(sec);
}

gw_rc secret_get(struct kube_client *k, const char *ns, const char *name, const char *key,
                 char **out, char *err, size_t errlen)
{
  *out = NULL;
  if(!key || !*key)
    key = SECRET_DEFAULT_KEY;
  cJSON *sec = NULL;
  struct kube_status st;
  kube_status_init(&st);
  gw_rc rc = kube_get(k, &KUBE_SECRETS, ns, name, &sec, &st);
  kube_status_release(&st);
  if(rc == GW_ENOTFOUND) {
    snprintf(err, errlen, "secret \"%s\" not found", name);
  } else if(rc) {
    snprintf(err, errlen, "cannot read secret \"%s\": %s", name, gw_strerror(rc));
  } else {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(sec, "data"), key);
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(json_get(sec, "stringData"), key);
    if(cJSON_IsString(v)) {
      *out = (char *)b64_decode(v->valuestring, NULL);
      if(!*out) {
        rc = GW_EPARSE;
        snprintf(err, errlen, "secret \"%s\": key \"%s\" is not base64", name, key);
      }
    } else if(cJSON_IsString(sv)) {
      *out = strdup(sv->valuestring);
      if(!*out)
        rc = GW_ENOMEM;
    } else {
      rc = GW_ENOTFOUND;
      snprintf(err, errlen, "couldn't find key %s in Secret %s/%s", key, ns, name);
    }
  }
  if(sec)
    secret_object_free(sec);
  return rc;
}

gw_rc secret_ref_get(struct kube_client *k, const char *ns, const cJSON *obj, const char *path,
                     char **out, char *err, size_t errlen)
{
  const cJSON *ref = json_get(obj, path);
  const char *name = json_get_str(ref, "name");
  if(!name || !*name) {
    *out = NULL;
    snprintf(err, errlen, "%s.name is not set", path);
    return GW_EINVAL;
  }
  return secret_get(k, ns, name, json_get_str(ref, "key"), out, err, errlen);
}
