/*
 * events.h: the Event recorder (core/v1 Events on the object they are about).
 *
 * recorder_event(r, obj, EV_NORMAL, "AttemptStarted", "started attempt %d", n) creates an Event
 * named "<object name>.<hex>" in the object's namespace ("default" for cluster-scoped objects),
 * with involvedObject (apiVersion, kind, namespace, name, uid, resourceVersion), type, reason,
 * message, source.component and reportingComponent "godwit-controller", reportingInstance (the
 * controller's identity), firstTimestamp, lastTimestamp and count.
 *
 * Repeats are counted, not duplicated: an Event with the same object, type, reason and message as
 * one recorded before (an LRU of RECORDER_CACHE entries remembers them) is patched with count+1
 * and a new lastTimestamp. If that Event is gone (expired or deleted), a new one is created.
 *
 * Messages: formatted into at most EVENT_MESSAGE_MAX bytes (cut on a UTF-8 boundary, ending in
 * "..."), and scrubbed by redact() (shared/redact.h: URI passwords, password=, PGPASSWORD=, SQL
 * and JSON passwords become "***"). Scrubbing is a safety net, not
 * a license: never format a secret value, a Secret's data or a connection URI into a message.
 * The recorder never logs a message or any object data: a failed write logs the reason, the
 * object's kind, namespace and name, and the API status code only.
 *
 * Thread-safe. A failed Event write is logged and counted, and never fails a reconcile (Events
 * are best-effort in Kubernetes too): the return code is for tests.
 */
#ifndef GW_CTRL_EVENTS_H
#define GW_CTRL_EVENTS_H

#include <cJSON.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"
#include "rc.h"

#define EVENT_MESSAGE_MAX 1024
#define RECORDER_CACHE 4096

#define EV_NORMAL "Normal"
#define EV_WARNING "Warning"

struct recorder;

struct recorder_opts {
  const char *component; /* default "godwit-controller" */
  const char *instance;  /* reportingInstance and source.host: the controller's identity */
};

gw_rc recorder_new(struct recorder **out, struct kube_client *k, const struct recorder_opts *o)
  GW_MUST_CHECK;
void recorder_free(struct recorder *r);

gw_rc recorder_event(struct recorder *r, const cJSON *obj, const char *type, const char *reason,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
gw_rc recorder_eventv(struct recorder *r, const cJSON *obj, const char *type, const char *reason,
                      const char *fmt, va_list ap);

struct recorder_stats {
  uint64_t created; /* new Events */
  uint64_t counted; /* repeats folded into an existing Event */
  uint64_t failed;  /* writes the API server refused or never answered */
};
void recorder_stats(struct recorder *r, struct recorder_stats *out);

/* The message as it would be recorded: formatted, scrubbed, then cut to fit size bytes with its
 * NUL (size >= 4; the recorder uses EVENT_MESSAGE_MAX + 1). Returns the length. */
size_t event_message(char *buf, size_t size, const char *fmt, va_list ap);

#endif
