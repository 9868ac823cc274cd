/*
 * kube.h: the Kubernetes REST client (libcurl), for the controller, the runner and the local
 * cluster's tools.
 *
 * Configuration
 *   kube_config_load() follows client-go's rules: an explicit kubeconfig path, else $KUBECONFIG,
 *   else in-cluster (KUBERNETES_SERVICE_HOST/_PORT and the service-account directory:
 *   /var/run/secrets/kubernetes.io/serviceaccount, or $GODWIT_SA_DIR, holding token, ca.crt and
 *   namespace), else ~/.kube/config. From a kubeconfig: the current context (or the one named),
 *   its cluster's server and certificate-authority(-data), its user's client-certificate(-data),
 *   client-key(-data), token or tokenFile, and the context's namespace. A token file is re-read
 *   when it changes (bound service-account tokens rotate).
 *
 * Calls
 *   Every call takes a resource type (struct kube_gvr) and returns a gw_rc. On a non-2xx answer
 *   the caller gets the API server's Status in *st (code, reason, message, details), and the rc
 *   says what kind of failure it was, so 404, 409 and 410 are handled in code:
 *     GW_ENOTFOUND (404), GW_ECONFLICT (409: Conflict or AlreadyExists, see st->reason),
 *     GW_EGONE (410: Expired / too old resource version), GW_ESTATUS (any other refusal),
 *     GW_ECONNECT / GW_ETIMEOUT (no answer), GW_EPARSE (an answer that is not JSON).
 *   429 (honouring Retry-After), 5xx and connection errors are retried with exponential backoff
 *   and jitter (kube_config.max_retries, default 5) before they are returned. Client-side
 *   rate limiting is a token bucket (qps, burst; defaults 20 and 30, as client-go's 5/10 are too
 *   slow for tests). A client is safe to use from many threads; connections are kept alive.
 *   Returned objects are cJSON trees the caller owns (cJSON_Delete).
 *
 * Watch
 *   kube_watch() streams events to a callback until the server ends the stream, the callback
 *   returns nonzero, *stop becomes true or an error occurs; lines split across chunks are
 *   reassembled. A watch ERROR event with a 410 Status returns GW_EGONE.
 *   kube_reflector_run() is the list+watch loop informers stand on: list (paged), report the
 *   full set, watch from the list's resourceVersion with bookmarks, relist on GW_EGONE,
 *   reconnect with jittered backoff on any other failure, until *stop.
 *
 * Never logs a token, a Secret's data or a request body.
 */
#ifndef GW_KUBE_H
#define GW_KUBE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "rc.h"

struct kube_config {
  char *server;                /* "https://127.0.0.1:6443" */
  char *ca_file;               /* certificate-authority */
  char *ca_data;               /* certificate-authority-data, PEM (decoded) */
  char *cert_file, *key_file;  /* client-certificate, client-key */
  char *cert_data, *key_data;  /* PEM (decoded) */
  char *token;                 /* a static bearer token */
  char *token_file;            /* re-read when it changes */
  char *namespace;             /* the default namespace ("default" when none is set) */
  char *impersonate_user;      /* Impersonate-User */
  char *impersonate_groups[8]; /* Impersonate-Group, NULL-terminated */
  bool insecure_skip_verify;
  double qps;
  int burst;
  int max_retries;
  int timeout_ms; /* per request, not for watches; default 30000 */
};

/* path: NULL for the default search. context: NULL for the current one. */
gw_rc kube_config_load(struct kube_config *c, const char *path, const char *context, char *err,
                       size_t errlen) GW_MUST_CHECK;
gw_rc kube_config_in_cluster(struct kube_config *c, char *err, size_t errlen) GW_MUST_CHECK;
void kube_config_release(struct kube_config *c);

struct kube_client;
gw_rc kube_client_new(struct kube_client **out, const struct kube_config *c, char *err,
                      size_t errlen) GW_MUST_CHECK;
void kube_client_free(struct kube_client *k);
/* The configuration the client was built from (its namespace, server). */
const struct kube_config *kube_client_config(const struct kube_client *k);

/* A resource type. group "" is the core group (/api/v1). */
struct kube_gvr {
  const char *group;
  const char *version;
  const char *resource; /* plural, lower case: "pods", "migrations" */
  bool namespaced;
};

extern const struct kube_gvr KUBE_PODS, KUBE_JOBS, KUBE_SECRETS, KUBE_CONFIGMAPS, KUBE_EVENTS,
  KUBE_LEASES, KUBE_PVCS, KUBE_NAMESPACES, KUBE_SERVICEACCOUNTS, KUBE_NODES;
/* ptah.run/v1: PtahMigration, PtahResultRecord, PtahMigrationRunAcknowledgment. */
extern const struct kube_gvr KUBE_PTAH_MIGRATIONS, KUBE_PTAH_RESULT_RECORDS, KUBE_PTAH_RUN_ACKS,
  KUBE_PTAH_SCHEMAS, KUBE_PTAH_APPROVALS, KUBE_POD_MIGRATIONS, KUBE_MIGRATION_POLICIES;

/* The API server's Status of a failed call. Initialize it once (kube_status_init, or zero it);
 * every call resets it (releasing details), so one can serve many calls; release it at the end.
 * st may be NULL when the caller needs only the rc. On success st->code is the HTTP code. */
struct kube_status {
  int code;           /* HTTP status; 0 when there was no answer */
  char reason[64];    /* "NotFound", "Conflict", "AlreadyExists", "Expired", "Invalid", ... */
  char message[1024];
  cJSON *details;     /* status.details, or NULL; released by kube_status_release */
  int retry_after_s;  /* from Retry-After on 429/503, else 0 */
};
void kube_status_init(struct kube_status *st);
void kube_status_release(struct kube_status *st);
/* The message of the last request on this thread that the API server's authorizer refused
 * (403, kube's `... is forbidden: User "..." cannot VERB resource ...`), "" when none since
 * kube_forbidden_clear. Other 403s (admission denials, a terminating namespace) do not count.
 * The controller manager asks it after a failed reconcile, whatever call failed. */
void kube_forbidden_clear(void);
const char *kube_forbidden_last(void);

struct kube_list_opts {
  const char *label_selector;
  const char *field_selector;
  long limit;                   /* 0: no paging */
  const char *continue_token;
  const char *resource_version; /* "0": any cached; NULL: most recent */
};

enum kube_propagation { KUBE_PROPAGATE_DEFAULT, KUBE_PROPAGATE_BACKGROUND,
                        KUBE_PROPAGATE_FOREGROUND, KUBE_PROPAGATE_ORPHAN };

struct kube_delete_opts {
  enum kube_propagation propagation;
  const char *precondition_uid;
  const char *precondition_rv;
  long grace_period_s; /* -1: the server's default */
  bool dry_run;
};

enum kube_patch_type { KUBE_PATCH_MERGE, KUBE_PATCH_JSON, KUBE_PATCH_STRATEGIC };

/* ns: NULL for cluster-scoped resources (and for all namespaces in list/watch).
 * subresource: NULL, "status", "log", ... */
gw_rc kube_get(struct kube_client *k, const struct kube_gvr *r, const char *ns,
               const char *name, cJSON **out, struct kube_status *st) GW_MUST_CHECK;
/* Returns the whole List object (items, metadata.resourceVersion, metadata.continue). */
gw_rc kube_list(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                const struct kube_list_opts *o, cJSON **out, struct kube_status *st) GW_MUST_CHECK;
/* Every page (o->limit per page, default 500) merged into one List: its items and the
 * snapshot's metadata.resourceVersion. An expired continue token (410) falls back to one
 * unpaged list, as client-go's pager does. */
gw_rc kube_list_all(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                    const struct kube_list_opts *o, cJSON **out, struct kube_status *st)
  GW_MUST_CHECK;
gw_rc kube_create(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const cJSON *obj, bool dry_run, cJSON **out, struct kube_status *st)
  GW_MUST_CHECK;
/* PUT; obj carries metadata.resourceVersion for optimistic concurrency. */
gw_rc kube_update(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const cJSON *obj, const char *subresource, cJSON **out,
                  struct kube_status *st) GW_MUST_CHECK;
gw_rc kube_patch(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                 const char *name, enum kube_patch_type type, const char *patch,
                 const char *subresource, cJSON **out, struct kube_status *st) GW_MUST_CHECK;
gw_rc kube_delete(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                  const char *name, const struct kube_delete_opts *o, cJSON **out,
                  struct kube_status *st) GW_MUST_CHECK;
/* pods/<name>/log; tail_lines 0 = all; container NULL = the only one. *out is malloc'd. */
gw_rc kube_pod_log(struct kube_client *k, const char *ns, const char *pod,
                   const char *container, long tail_lines, char **out, size_t *len,
                   struct kube_status *st) GW_MUST_CHECK;
/* Any other call (TokenRequest, discovery): method, absolute path with query, optional JSON. */
gw_rc kube_request(struct kube_client *k, const char *method, const char *path,
                   const char *content_type, const char *body, cJSON **out,
                   struct kube_status *st) GW_MUST_CHECK;

/* Watch. The callback returns 0 to go on. type: ADDED, MODIFIED, DELETED, BOOKMARK, ERROR. */
typedef int (*kube_watch_fn)(void *ctx, const char *type, const cJSON *object);

struct kube_watch_opts {
  const char *resource_version;
  const char *label_selector;
  const char *field_selector;
  bool bookmarks;
  long timeout_s; /* server-side timeoutSeconds; 0: the server's default */
};

gw_rc kube_watch(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                 const struct kube_watch_opts *o, kube_watch_fn fn, void *ctx,
                 volatile int *stop, struct kube_status *st) GW_MUST_CHECK;

/* The reflector: list+watch forever. */
struct kube_reflector_ops {
  /* The full current set after each (re)list: items is the List's items array. */
  void (*replace)(void *ctx, const cJSON *items, const char *resource_version);
  /* One watch event (not BOOKMARK nor ERROR). */
  void (*event)(void *ctx, const char *type, const cJSON *object);
  /* Optional: the latest resourceVersion seen (bookmarks included). */
  void (*progress)(void *ctx, const char *resource_version);
};

struct kube_reflector_opts {
  const char *label_selector;
  const char *field_selector;
  long page_size;      /* list paging; default 500 */
  int backoff_min_ms;  /* default 200 */
  int backoff_max_ms;  /* default 30000 */
};

/* Runs until *stop; returns GW_ESTOPPED then. */
gw_rc kube_reflector_run(struct kube_client *k, const struct kube_gvr *r, const char *ns,
                         const struct kube_reflector_opts *o, const struct kube_reflector_ops *ops,
                         void *ctx, volatile int *stop);

/* Client metrics for /metrics: requests by verb and code, latency. */
struct strbuf;
gw_rc kube_client_metrics(const struct kube_client *k, struct strbuf *sb) GW_MUST_CHECK;
/* Counts k's requests in into's metrics from now on (NULL: its own again), so that a process
 * with two clients (the controller's Events have their own, with their own rate limiter, as
 * controller-runtime's recorder does) shows its traffic as one. into must outlive k's use. */
void kube_client_count_in(struct kube_client *k, struct kube_client *into);

#endif
