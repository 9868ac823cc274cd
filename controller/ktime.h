/*
 * ktime.h: the clocks and time formats of the controller.
 *
 * Durations and deadlines use the monotonic clock (kt_mono_ms), never the wall clock, so a clock
 * step cannot expire a lease or fire a requeue early. The wall clock is only for what goes on the
 * wire: metav1.Time (RFC 3339, seconds) and metav1.MicroTime (RFC 3339 with microseconds, as
 * Lease spec.acquireTime and renewTime and Event eventTime use).
 */
#ifndef GW_CTRL_KTIME_H
#define GW_CTRL_KTIME_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int64_t kt_mono_ms(void);
/* The seconds since the epoch of an RFC 3339 time in UTC ("2024-05-01T12:00:00Z", fractions
 * ignored); 0 when absent or malformed. */
time_t kt_parse_rfc3339(const char *s);
/* "2024-05-01T12:00:00Z" for t (seconds since the epoch); buf holds at least 21 bytes. */
void kt_rfc3339(char *buf, size_t len, time_t t);
/* "2024-05-01T12:00:00.123456Z" for now; buf holds at least 28 bytes. */
void kt_rfc3339_micro_now(char *buf, size_t len);
/* Sleeps ms milliseconds, or less when *stop becomes nonzero (checked every 50 ms). */
void kt_sleep_ms(long ms, volatile int *stop);
/* The pthread_cond deadline ms from now on the monotonic clock (for condvars made with
 * kt_cond_init). */
struct timespec kt_deadline(long ms);
int kt_cond_init(pthread_cond_t *c);

#endif
