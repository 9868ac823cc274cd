/* faults.c: fault injection for client tests (only with --faults).
 *
 *   POST /__faults {"verb":"get","pathRegex":"/configmaps/x","code":500,"count":2}
 *        {"verb":"list","pathRegex":"...","code":429,"count":1,"retryAfter":1}
 *        {"verb":"get","pathRegex":"...","code":504,"delayMs":3000}  answers after 3 s, as a
 *                               server too slow for the client's timeout
 *        {"verb":"create",...,"dryRun":false}  only requests without dryRun (true: only with)
 *        {"verb":"update",...,"skip":1,"count":-1}  the first matching request is served, every
 *                               later one fails (a fault that starts at the Nth request)
 *        {"dropWatches":true}   closes every open watch stream now
 *        {"compact":true}       forgets the watch history: older resourceVersions get 410
 *        {"clear":true}         removes every rule (also DELETE /__faults)
 *   GET  /__faults              the rules and what is left of their counts
 *
 * verb is a Kubernetes verb (get, list, watch, create, update, patch, delete,
 * deletecollection), an HTTP method, or "*" / absent for any; pathRegex (POSIX extended)
 * matches when it matches the path, or the URI with its query (so "/migrations$" and
 * "watch=true" both work); count -1 means every time. A matching rule
 * answers instead of the real handler with kube's Status for the code. */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core.h"
#include "log.h"

struct rule {
  char verb[32];
  char pattern[512];
  regex_t re;
  int code, count, retry_after;
  int skip; /* matching requests still served before the rule answers */
  long delay_ms;
  int dry_run; /* -1 any request, 0 only those without dryRun, 1 only those with it */
  char message[512];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rule *rules;
static size_t nrules;

static void clear_locked(void)
{
  for(size_t i = 0; i < nrules; i++)
    regfree(&rules[i].re);
  free(rules);
  rules = NULL;
  nrules = 0;
}

static cJSON *add_rule(const cJSON *j)
{
  struct rule r;
  memset(&r, 0, sizeof(r));
  snprintf(r.verb, sizeof(r.verb), "%s", ls_str(j, "verb"));
  snprintf(r.pattern, sizeof(r.pattern), "%s", ls_str(j, "pathRegex"));
  snprintf(r.message, sizeof(r.message), "%s", ls_str(j, "message"));
  const cJSON *code = cJSON_GetObjectItem(j, "code");
  const cJSON *count = cJSON_GetObjectItem(j, "count");
  const cJSON *ra = cJSON_GetObjectItem(j, "retryAfter");
  const cJSON *delay = cJSON_GetObjectItem(j, "delayMs");
  const cJSON *dry = cJSON_GetObjectItem(j, "dryRun");
  const cJSON *skip = cJSON_GetObjectItem(j, "skip");
  if(skip && (!cJSON_IsNumber(skip) || skip->valuedouble < 0 || skip->valuedouble > 1000000))
    return ls_status(400, "BadRequest", NULL, "skip must be a number from 0 to 1000000");
  r.skip = skip ? skip->valueint : 0;
  r.dry_run = cJSON_IsBool(dry) ? cJSON_IsTrue(dry) : -1;
  r.delay_ms = cJSON_IsNumber(delay) && delay->valuedouble > 0 && delay->valuedouble <= 600000
                 ? (long)delay->valuedouble : 0;
  r.code = cJSON_IsNumber(code) ? code->valueint : 500;
  r.count = cJSON_IsNumber(count) ? count->valueint : 1;
  r.retry_after = cJSON_IsNumber(ra) ? ra->valueint : (r.code == 429 ? 1 : 0);
  if(r.code < 400 || r.code > 599)
    return ls_status(400, "BadRequest", NULL, "code must be between 400 and 599");
  if(regcomp(&r.re, r.pattern[0] ? r.pattern : ".*", REG_EXTENDED | REG_NOSUB))
    return ls_status(400, "BadRequest", NULL, "pathRegex \"%s\" is not a POSIX extended regular "
                                              "expression", r.pattern);
  pthread_mutex_lock(&mu);
  struct rule *nr = realloc(rules, (nrules + 1) * sizeof(*rules));
  if(!nr)
    abort();
  rules = nr;
  rules[nrules++] = r;
  pthread_mutex_unlock(&mu);
  log_kv(LOG_INFO, "fault rule added", "verb", r.verb, "pathRegex", r.pattern, LOG_END);
  return NULL;
}

static cJSON *list_rules(void)
{
  cJSON *a = cJSON_CreateArray();
  pthread_mutex_lock(&mu);
  for(size_t i = 0; i < nrules; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "verb", rules[i].verb);
    cJSON_AddStringToObject(o, "pathRegex", rules[i].pattern);
    cJSON_AddNumberToObject(o, "code", rules[i].code);
    cJSON_AddNumberToObject(o, "count", rules[i].count);
    cJSON_AddNumberToObject(o, "skip", rules[i].skip);
    cJSON_AddNumberToObject(o, "retryAfter", rules[i].retry_after);
    cJSON_AddItemToArray(a, o);
  }
  pthread_mutex_unlock(&mu);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "rules", a);
  return o;
}

static cJSON *apply_one(const cJSON *j)
{
  if(!cJSON_IsObject(j))
    return ls_status(400, "BadRequest", NULL, "a fault rule is a JSON object");
  if(cJSON_IsTrue(cJSON_GetObjectItem(j, "clear"))) {
    pthread_mutex_lock(&mu);
    clear_locked();
    pthread_mutex_unlock(&mu);
    return NULL;
  }
  if(cJSON_IsTrue(cJSON_GetObjectItem(j, "dropWatches"))) {
    __atomic_add_fetch(&ls_watch_epoch, 1, __ATOMIC_SEQ_CST);
    store_lock();
    store_broadcast();
    store_unlock();
    log_kv(LOG_INFO, "fault: watches dropped", LOG_END);
    return NULL;
  }
  if(cJSON_IsTrue(cJSON_GetObjectItem(j, "compact"))) {
    store_lock();
    store_compact();
    store_unlock();
    log_kv(LOG_INFO, "fault: watch history compacted", LOG_END);
    return NULL;
  }
  return add_rule(j);
}

void faults_handle(struct ls_req *r)
{
  if(!ls_cfg.faults) {
    req_reply_status(r, ls_status(404, "NotFound", NULL, "fault injection is off (--faults)"));
    return;
  }
  if(!strcmp(r->method, "DELETE")) {
    pthread_mutex_lock(&mu);
    clear_locked();
    pthread_mutex_unlock(&mu);
    req_reply_take(r, 200, list_rules());
    return;
  }
  if(!strcmp(r->method, "GET")) {
    req_reply_take(r, 200, list_rules());
    return;
  }
  if(strcmp(r->method, "POST")) {
    req_reply_status(r, ls_status(405, "MethodNotAllowed", NULL, "GET, POST or DELETE"));
    return;
  }
  cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
  cJSON *st = NULL;
  if(cJSON_IsArray(body)) {
    const cJSON *j;
    cJSON_ArrayForEach(j, body)
    {
      if(!st)
        st = apply_one(j);
    }
  } else
    st = apply_one(body);
  cJSON_Delete(body);
  if(st)
    req_reply_status(r, st);
  else
    req_reply_take(r, 200, list_rules());
}

static cJSON *answer(const struct rule *ru)
{
  const char *m = ru->message[0] ? ru->message : NULL;
  switch(ru->code) {
  case 409:
    return ls_status(409, "Conflict", NULL, "%s",
                     m ? m : "Operation cannot be fulfilled: the object has been modified; "
                             "please apply your changes to the latest version and try again");
  case 429: {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "retryAfterSeconds", ru->retry_after);
    return ls_status(429, "TooManyRequests", d, "%s",
                     m ? m : "Too many requests, please try again later.");
  }
  case 410:
    return ls_status(410, "Expired", NULL, "%s", m ? m : "too old resource version");
  case 503:
    return ls_status(503, "ServiceUnavailable", NULL, "%s",
                     m ? m : "the server is currently unable to handle the request");
  case 504:
    return ls_status(504, "Timeout", NULL, "%s", m ? m : "the server was unable to return a "
                                                         "response in the time allotted");
  case 404:
    return ls_status(404, "NotFound", NULL, "%s", m ? m : "injected: not found");
  case 403:
    return ls_status(403, "Forbidden", NULL, "%s", m ? m : "injected: forbidden");
  default:
    if(ru->code >= 500)
      return ls_status(ru->code, "InternalError", NULL, "Internal error occurred: %s",
                       m ? m : "injected fault");
    return ls_status(ru->code, "BadRequest", NULL, "%s", m ? m : "injected fault");
  }
}

bool faults_apply(struct ls_req *r, const char *verb)
{
  if(!ls_cfg.faults)
    return false;
  struct rule hit;
  bool found = false;
  pthread_mutex_lock(&mu);
  for(size_t i = 0; i < nrules && !found; i++) {
    struct rule *ru = &rules[i];
    if(!ru->count)
      continue;
    bool vok = !ru->verb[0] || !strcmp(ru->verb, "*") || !strcmp(ru->verb, verb) ||
               !strcasecmp(ru->verb, r->method);
    bool pok = !regexec(&ru->re, r->path, 0, NULL, 0) ||
               !regexec(&ru->re, r->raw_uri, 0, NULL, 0);
    bool dry = strstr(r->raw_uri, "dryRun=") != NULL;
    if(!vok || !pok || (ru->dry_run >= 0 && ru->dry_run != dry))
      continue;
    if(ru->skip > 0) {
      ru->skip--;
      break; /* served by the real handler, as if no later rule matched either */
    }
    if(ru->count > 0)
      ru->count--;
    hit = *ru;
    found = true;
  }
  pthread_mutex_unlock(&mu);
  if(!found)
    return false;
  log_kv(LOG_INFO, "fault injected", "uri", r->raw_uri, "verb", verb, LOG_END);
  if(hit.delay_ms > 0) /* this connection's own thread (one per connection) */
    nanosleep(&(struct timespec){ hit.delay_ms / 1000, (hit.delay_ms % 1000) * 1000000L }, NULL);
  cJSON *st = answer(&hit);
  if(hit.retry_after > 0)
    r->retry_after = hit.retry_after;
  req_reply_status(r, st);
  return true;
}
