/*
 * clock.h - the one set of time helpers every process uses.
 *
 * Two clocks, never mixed: the monotonic clock measures intervals (timeouts,
 * leases in the colo segment, heartbeats, rate-limit refill) and survives wall
 * clock steps; the real-time clock is only for what users and other hosts see
 * (expiry deadlines sent as Unix times, INFO's server_time_usec, log stamps,
 * segment generations).  Owners combine both into their HLC (proto/stamp.h).
 * All calls are vDSO reads: cheap enough for the hot path, no syscall.
 */
#ifndef HKV_CLOCK_H
#define HKV_CLOCK_H

#include <stdint.h>

int64_t clock_mono_ms(void);  /* CLOCK_MONOTONIC in milliseconds */
int64_t clock_mono_us(void);  /* CLOCK_MONOTONIC in microseconds */
int64_t clock_mono_ns(void);  /* CLOCK_MONOTONIC in nanoseconds */
int64_t clock_unix_ms(void);  /* CLOCK_REALTIME in milliseconds since the epoch */
int64_t clock_unix_us(void);  /* CLOCK_REALTIME in microseconds since the epoch */
int64_t clock_unix_ns(void);  /* CLOCK_REALTIME in nanoseconds since the epoch */

#endif
