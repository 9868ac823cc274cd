/*
 * godwit-bench-handler ENDPOINT FILE [SECONDS|print]: the decoders and handlers alone, in process: calls
 * review_admission() (ENDPOINT validate or mutate) or review_conversion() (convert) on the body in
 * FILE for SECONDS (default 2) on one thread, and prints the CPU time per request. No TLS, no
 * HTTP, no load generator: what the webhook adds to the HTTP layer, which is what separates
 * godwit-webhook from the baseline in bench/webhook/run.sh. Fails unless the answer is HTTP 200.
 * With "print" instead of SECONDS it answers once and prints the answer (to make the fixtures:
 * bench/webhook/fixtures/make.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "policystore.h"
#include "review.h"
#include "strbuf.h"

static double cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if(!f)
    return NULL;
  struct strbuf sb;
  strbuf_init(&sb, 64u << 20);
  char buf[65536];
  size_t n;
  gw_rc rc = GW_OK;
  while(!rc && (n = fread(buf, 1, sizeof(buf), f)) > 0)
    rc = strbuf_add(&sb, buf, n);
  fclose(f);
  char *s = rc ? NULL : strbuf_take(&sb, len);
  strbuf_release(&sb);
  return s;
}

int main(int argc, char **argv)
{
  if(argc < 3) {
    fprintf(stderr, "usage: godwit-bench-handler validate|mutate|convert FILE [SECONDS]\n");
    return 2;
  }
  const char *ep = argv[1];
  bool convert = !strcmp(ep, "convert");
  if(!convert && strcmp(ep, "validate") && strcmp(ep, "mutate")) {
    fprintf(stderr, "godwit-bench-handler: unknown endpoint \"%s\"\n", ep);
    return 2;
  }
  bool print = argc > 3 && !strcmp(argv[3], "print");
  double secs = argc > 3 && !print ? atof(argv[3]) : 2.0;
  review_tune_malloc(); /* as godwit-webhook's main does */
  size_t len;
  char *body = slurp(argv[2], &len);
  if(!body) {
    fprintf(stderr, "godwit-bench-handler: cannot read \"%s\"\n", argv[2]);
    return 1;
  }
  log_set_level(LOG_WARN);
  policy_store_init(NULL);
  struct http_request req = { "POST", ep, "application/json", body, len };
  long n = 0;
  double t0 = cpu_s(), t;
  do {
    for(int i = 0; i < 50; i++, n++) {
      struct http_response r = { 0 };
      if(convert)
        review_conversion(&req, &r);
      else
        review_admission(!strcmp(ep, "mutate") ? EP_MUTATE : EP_VALIDATE, &req, &r);
      if(r.status != 200) {
        fprintf(stderr, "godwit-bench-handler: /%s answered %d: %.300s\n", ep, r.status,
                r.body ? r.body : "");
        return 1;
      }
      if(print) {
        printf("%.*s\n", (int)r.len, r.body);
        free(r.body);
        free(body);
        return 0;
      }
      free(r.body);
    }
    t = cpu_s() - t0;
  } while(t < secs);
  printf("%.1f\n", t / (double)n * 1e6);
  policy_store_shutdown();
  free(body);
  return 0;
}
