/*
 * harness.h: the real godwit-webhook, started on a loopback port for one test.
 *
 * wh_start() issues a CA and a serving certificate for localhost/127.0.0.1 with the real
 * godwit-certs into a fresh temporary directory, starts build/godwit-webhook on a free port with
 * them (plus any extra flags), and returns once /readyz answers 200. wh_stop() sends SIGTERM,
 * waits, and removes the directory. The binaries come from $GODWIT_BUILD (default "build").
 */
#ifndef GW_HARNESS_H
#define GW_HARNESS_H

#include <cJSON.h>
#include <stddef.h>
#include <sys/types.h>

struct wh {
  pid_t pid;
  int port;
  char dir[256];
  char ca[300], cert[300], key[300], log[300];
};

/* extra: NULL-terminated extra arguments for the webhook. */
void wh_start(struct wh *w, const char *const *extra);
void wh_stop(struct wh *w);
/* Starts without waiting for readiness (for tests of an unready server). */
void wh_spawn(struct wh *w, const char *const *extra);

struct wh_reply {
  long status;
  char *body; /* malloc'd, NUL-terminated */
  size_t len;
};

/* POSTs body to https://localhost:<port><path> verifying against the test CA. */
void wh_post(const struct wh *w, const char *path, const char *content_type, const char *body,
             size_t len, struct wh_reply *r);
void wh_get(const struct wh *w, const char *path, struct wh_reply *r);
void wh_reply_free(struct wh_reply *r);
/* POSTs a review and returns the parsed 200 response (asserts the status). */
cJSON *wh_review(const struct wh *w, const char *path, const char *body);
/* Runs a shell command, asserting success; returns its stdout (malloc'd). */
char *wh_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *wh_build(void);

/* An AdmissionReview as kube-apiserver sends it. object/old are JSON text or NULL. */
char *wh_admission_review(const char *uid, const char *group, const char *version,
                          const char *kind, const char *resource, const char *op,
                          const char *name, const char *ns, const char *user,
                          const char *groups_json, const char *object, const char *old,
                          int dry_run);

#endif
