#include "ktime.h"

#include <stdio.h>
#include <string.h>

int64_t kt_mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kt_rfc3339(char *buf, size_t len, time_t t)
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void kt_rfc3339_micro_now(char *buf, size_t len)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char s[24];
  strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%06ldZ", s, ts.tv_nsec / 1000);
}

void kt_sleep_ms(long ms, volatile int *stop)
{
  int64_t end = kt_mono_ms() + ms;
  for(;;) {
    if(stop && *stop)
      return;
    int64_t left = end - kt_mono_ms();
    if(left <= 0)
      return;
    if(left > 50)
      left = 50;
    struct timespec ts = { 0, left * 1000000L };
    nanosleep(&ts, NULL);
  }
}

struct timespec kt_deadline(long ms)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if(ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

int kt_cond_init(pthread_cond_t *c)
{
  pthread_condattr_t a;
  int e = pthread_condattr_init(&a);
  if(!e)
    e = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  if(!e)
    e = pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
  return e;
}

time_t kt_parse_rfc3339(const char *s)
{
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  if(!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
    return 0;
  return timegm(&tm);
}
