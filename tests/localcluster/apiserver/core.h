/*
 * core.h: the API server core's own interfaces (http, store, resources, rest, gc, selectors,
 * discovery, table, auth, faults). The schema, admission and conversion layers see only hooks.h.
 *
 * Threads: libmicrohttpd runs one thread per connection; the GC runs one more. Objects in the
 * store are immutable once stored (struct ls_obj, reference counted): a writer builds a new tree
 * and swaps it in under the store lock; a reader takes a reference under the lock and reads the
 * tree after unlocking. Nothing that may call a webhook (admission, conversion) runs with the
 * store lock held.
 *
 * Errors travel as metav1.Status cJSON trees (ls_status, status.c); a function returning
 * `cJSON *` Status returns NULL on success.
 */
#ifndef LS_CORE_H
#define LS_CORE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "hooks.h"

#define LS_MAX_BODY (3u << 20)
#define LS_KUBE_VERSION "v1.32.0"
#define LS_KUBE_MINOR "32"

/* ---- configuration (main.c) ---- */
struct ls_config {
  long port;
  const char *port_file;
  const char *bind;
  const char *tls_cert, *tls_key;
  const char *token_auth_file;
  const char *root_ca_file;
  const char *service_map[16];
  int faults;
  long watch_history;
  long bookmark_interval_s;
  long parent_pid;
  const char *pod_log_dir;
  const char *log_level;
};
extern struct ls_config ls_cfg;
extern char *ls_root_ca_pem; /* --root-ca-file, or NULL */
extern volatile int ls_stopping;

/* ---- util.c ---- */
void ls_time_format(time_t t, char out[32]); /* RFC 3339, UTC, seconds */
void ls_now(char out[32]);
time_t ls_time_parse(const char *s); /* -1 when not RFC 3339 */
void ls_uuid(char out[37]);
void ls_random_suffix(char *out, size_t n); /* n chars of kube's name alphabet, NUL added */
bool ls_dns_subdomain(const char *s);
bool ls_dns_label(const char *s);
/* Strings in a JSON object; "" when missing. */
const char *ls_str(const cJSON *o, const char *key);
const char *ls_meta(const cJSON *obj, const char *key); /* metadata.<key> or "" */
cJSON *ls_meta_obj(cJSON *obj);                          /* metadata, created when missing */
void ls_set_str(cJSON *o, const char *key, const char *val);
void ls_set_item(cJSON *o, const char *key, cJSON *item); /* replaces; takes ownership */
long long ls_meta_generation(const cJSON *obj);
bool ls_has_finalizer(const cJSON *obj, const char *f);
void ls_add_finalizer(cJSON *obj, const char *f);
void ls_remove_finalizer(cJSON *obj, const char *f);
char *ls_print(const cJSON *o);
/* Drops empty labels, annotations, finalizers, ownerReferences (kube's omitempty). */
void ls_meta_normalize(cJSON *obj); /* malloc'd compact JSON (free()), never NULL */
/* "v1" or "group/v1" */
void ls_api_version(const char *group, const char *version, char *out, size_t len);
/* Splits "group/version" (or "v1") into group and version. */
void ls_split_api_version(const char *av, char *group, size_t glen, char *version, size_t vlen);
/* kube's version priority: v1 > v1beta2 > v1beta1 > v1alpha1 > other (lexical). <0 when a
 * sorts before b. */
int ls_version_cmp(const char *a, const char *b);
/* Kubernetes' human duration ("5s", "3m2s", "4h", "2d3h", "5y"). */
void ls_human_duration(time_t seconds, char *out, size_t len);
/* Base64 (standard with padding, or URL-safe without): malloc'd. */
char *ls_base64(const void *data, size_t n, bool url);
bool ls_base64_valid(const char *s); /* standard alphabet, padded */
unsigned char *ls_base64_decode(const char *s, size_t *len); /* malloc'd, NUL added */

/* ---- refcounted immutable objects ---- */
struct ls_obj {
  int refs;
  cJSON *json;
};
struct ls_obj *ls_obj_new(cJSON *json); /* takes ownership; refs = 1 */
struct ls_obj *ls_obj_ref(struct ls_obj *o);
void ls_obj_unref(struct ls_obj *o);

/* ---- store.c ---- */
struct ls_entry {
  char *group, *resource, *ns, *name;
  struct ls_obj *obj;
  uint64_t rv;
  char uid[40];
};

enum ls_event_type { LS_ADDED, LS_MODIFIED, LS_DELETED };
struct ls_event {
  uint64_t rv;
  enum ls_event_type type;
  char *group, *resource, *ns;
  struct ls_obj *obj, *prev; /* prev: the object before a MODIFIED, else NULL */
};

void store_init(size_t history);
void store_shutdown(void);
void store_lock(void);
void store_unlock(void);
/* Everything below needs the lock. */
uint64_t store_rv(void);
const struct ls_entry *store_get(const char *group, const char *resource, const char *ns,
                                 const char *name);
const struct ls_entry *store_by_uid(const char *uid);
/* Stores obj (ownership taken) under a new resourceVersion, written into its metadata, and logs
 * the event. Returns the new resourceVersion. */
uint64_t store_put(const char *group, const char *resource, const char *ns, const char *name,
                   cJSON *obj);
/* Removes the object; the DELETED event carries its last state with a new resourceVersion. */
uint64_t store_remove(const char *group, const char *resource, const char *ns, const char *name);
typedef int (*store_each_fn)(void *ctx, const struct ls_entry *e); /* nonzero stops */
/* Objects of group/resource, in namespace ns (NULL: every namespace), in (namespace, name)
 * order, starting after the key "ns/name" when after is not NULL. */
void store_each(const char *group, const char *resource, const char *ns, const char *after,
                store_each_fn fn, void *ctx);
void store_each_all(store_each_fn fn, void *ctx);
/* Events with rv > after: copies holding references (store_events_free). Returns -1 with
 * *oldest set when events after `after` were already dropped (410 Gone). */
int store_events_after(uint64_t after, struct ls_event **out, size_t *n, size_t max,
                       uint64_t *oldest);
void store_events_free(struct ls_event *ev, size_t n);
/* Waits (lock held, released while waiting) for a write or timeout_ms. */
void store_wait(int timeout_ms);
void store_broadcast(void);
/* Forgets the event history: every watch from an older resourceVersion gets 410. */
void store_compact(void);
/* Incremented when watches must end (fault injection). */
extern volatile int ls_watch_epoch;
void ls_gc_kick(void); /* wakes the garbage collector (gc.c) */

/* ---- resources.c ---- */
enum ls_gen_mode { LS_GEN_NONE, LS_GEN_SPEC, LS_GEN_NONMETA };

struct ls_builtin;
struct ls_rtype {
  char group[128], version[32], resource[128], kind[128], list_kind[136], singular[128];
  char short_names[8][32];
  size_t nshort;
  char categories[8][32];
  size_t ncat;
  bool namespaced, crd, status_sub, deprecated;
  char storage_version[32];
  char deprecation_warning[256];
  char store_group[128], store_resource[128]; /* where its objects live */
  enum ls_gen_mode gen;
  const struct ls_builtin *b; /* NULL for custom resources */
};

/* Resource flags of built-ins. */
enum {
  LS_B_STATUS = 1 << 0,          /* has a /status subresource */
  LS_B_RETURN_DELETED = 1 << 1,  /* DELETE answers the object, not a Status */
  LS_B_ORPHAN_DEFAULT = 1 << 2,  /* default propagation is orphan (batch/v1 Jobs) */
  LS_B_NO_UNCOND = 1 << 3,       /* update needs metadata.resourceVersion */
  LS_B_CREATE_ON_UPDATE = 1 << 4,/* PUT creates a missing object */
  LS_B_NO_SMP = 1 << 5,          /* no strategic merge patch */
};

struct ls_wctx; /* rest_write.c */
struct ls_builtin {
  const char *group, *version, *resource, *kind, *singular;
  const char *short_names; /* comma separated */
  const char *categories;
  bool namespaced;
  unsigned flags;
  enum ls_gen_mode gen;
  const char *store_group, *store_resource; /* NULL: itself */
  const char *subresources; /* comma separated, e.g. "status,log" */
  /* Built-in defaulting and admission plugins (before webhooks); NULL or a Status. */
  cJSON *(*prepare)(struct ls_wctx *w, cJSON *obj, const cJSON *old);
  /* Built-in validation (after mutating webhooks); NULL or a Status. */
  cJSON *(*validate)(struct ls_wctx *w, const cJSON *obj, const cJSON *old);
  /* Between the served form and the stored form (events.k8s.io/v1 <-> v1). */
  void (*to_storage)(cJSON *obj);
  void (*from_storage)(cJSON *obj);
};

void res_init(void);
bool res_lookup(const char *group, const char *version, const char *resource,
                struct ls_rtype *out);
/* By kind (ownerReferences, involvedObject): any served version when version is NULL. */
bool res_lookup_kind(const char *group, const char *version, const char *kind,
                     struct ls_rtype *out);
/* The preferred served version of a stored group/resource. */
bool res_lookup_stored(const char *group, const char *resource, struct ls_rtype *out);
/* The served versions of a CRD (replacing earlier ones), or removes them. */
void res_crd_set(const struct ls_crd_info *info, const cJSON *crd);
void res_crd_remove(const char *crd_name);
/* A copy of every served type (free()). */
size_t res_snapshot(struct ls_rtype **out);
/* Whether a subresource exists for the type. */
bool res_has_sub(const struct ls_rtype *rt, const char *sub);

/* ---- builtins.c: the table of built-in types ---- */
extern const struct ls_builtin ls_builtins[];
extern const size_t ls_nbuiltins;

/* ---- auth.c ---- */
struct ls_identity {
  char name[600], uid[128];
  char *groups[32];
  size_t ngroups;
  cJSON *extra; /* owned; map of string lists, or NULL */
  const char *view_groups[32];
  struct ls_user user; /* the view the layers get */
};
struct ls_req;
int auth_init(const char *token_file); /* 0 or -1 */
/* Authenticates the request and applies impersonation; NULL or a Status (401, 403). */
cJSON *auth_request(struct ls_req *r, struct ls_identity *id);
void auth_identity_release(struct ls_identity *id);
void auth_identity_system(struct ls_identity *id, const char *name, const char *group);
/* POST serviceaccounts/NAME/token. */
void auth_token_request(struct ls_req *r, const char *ns, const char *sa);
/* authentication.k8s.io selfsubjectreviews: the caller's user info. */
cJSON *auth_user_info(const struct ls_identity *id);

/* ---- http.c: the request ---- */
struct ls_param {
  char *key, *val;
};
/* A streamed answer (watch, log follow): read blocks until it has bytes; it returns
 * MHD_CONTENT_READER_END_OF_STREAM (-1) at the end. free releases ctx. */
struct ls_stream {
  ssize_t (*read)(void *ctx, char *buf, size_t max);
  void (*free)(void *ctx);
  void *ctx;
};
struct ls_req {
  const char *method;
  char *path;    /* decoded */
  char *raw_uri; /* as sent, with the query */
  struct ls_param *params;
  size_t nparams;
  const char *body;
  size_t body_len;
  char *body_alloc; /* a body decoded from protobuf, owned */
  void *conn;       /* struct MHD_Connection */
  struct ls_identity id;
  /* the answer */
  int status;
  char *resp;
  size_t resp_len;
  char ctype[96];
  int retry_after;
  struct ls_warnings warn;
  struct ls_stream stream; /* set by a watch or a log follow: the answer streams */
};
const char *req_header(const struct ls_req *r, const char *name);
/* Every value of a header that may repeat; calls fn for each header whose name starts with
 * prefix (case-insensitive). */
void req_headers(const struct ls_req *r, const char *prefix,
                 void (*fn)(void *ctx, const char *name, const char *value), void *ctx);
const char *req_param(const struct ls_req *r, const char *key); /* NULL when absent */
int req_fd(const struct ls_req *r); /* the connection's socket, or -1 */
bool req_param_true(const struct ls_req *r, const char *key);
void req_reply(struct ls_req *r, int status, const cJSON *obj); /* prints obj */
void req_reply_take(struct ls_req *r, int status, cJSON *obj);  /* prints and frees */
void req_reply_status(struct ls_req *r, cJSON *st);              /* code from st; frees */
void req_reply_text(struct ls_req *r, int status, const char *ctype, const char *text,
                    size_t len);
int http_start(char *err, size_t errlen);
int http_port(void);
void http_stop(void);

/* ---- protobuf.c ---- */
/* A request body in Kubernetes' protobuf encoding as JSON (malloc'd), or NULL with err. */
char *ls_protobuf_to_json(const char *body, size_t len, char *err, size_t errlen);

/* ---- rest*.c ---- */
void rest_dispatch(struct ls_req *r);
/* Whether the path names a resource (/api/v1/..., /apis/G/V/...), not a non-resource URL. */
bool rest_resource_path(const char *path);

/* The client's end of a streamed answer is closed (poll POLLRDHUP on fd). */
bool ls_client_gone(int fd);

/* ---- discovery.c ---- */
/* Answers /version, /api, /apis, group (version) documents and /openapi; false if not one. */
bool discovery_handle(struct ls_req *r);

/* ---- faults.c ---- */
void faults_handle(struct ls_req *r); /* /__faults */
/* A matching rule answers the request (true). verb: the Kubernetes verb. */
bool faults_apply(struct ls_req *r, const char *verb);

/* ---- gc.c ---- */
void gc_start(void);
void gc_stop(void);

/* ---- selectors.c ---- */
struct ls_selector;
/* Parses labelSelector and fieldSelector; NULL or a 400 Status. */
cJSON *sel_parse(const struct ls_rtype *rt, const char *labels, const char *fields,
                 struct ls_selector **out);
/* Whether the stored object matches. */
bool sel_match(const struct ls_selector *s, const cJSON *obj);
void sel_free(struct ls_selector *s);
/* The value of a field label of obj (stored form), or NULL when the label is unknown. */
const char *sel_field_value(const struct ls_rtype *rt, const cJSON *obj, const char *label,
                            char *buf, size_t len);
/* A label selector object ({matchLabels, matchExpressions}) against labels. */
bool sel_match_label_selector(const cJSON *selector, const cJSON *labels);

/* ---- table.c ---- */
/* A meta.k8s.io Table of objs (served form); include: "None", "Metadata" or "Object". */
cJSON *table_build(const struct ls_rtype *rt, cJSON *const *objs, size_t n,
                   const char *include, const char *table_version);
/* Evaluates a printer column's JSONPath; a malloc'd string or NULL. */
char *table_jsonpath(const cJSON *obj, const char *path);

#endif
