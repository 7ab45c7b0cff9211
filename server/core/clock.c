/*
 * clock.c - monotonic and real-time clocks in the units the daemon uses
 * (see clock.h for which clock serves what).
 */
#include <time.h>

#include "server/core/clock.h"

static int64_t ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t clock_mono_ns(void) { return ns_of(CLOCK_MONOTONIC); }
int64_t clock_mono_us(void) { return ns_of(CLOCK_MONOTONIC) / 1000; }
int64_t clock_mono_ms(void) { return ns_of(CLOCK_MONOTONIC) / 1000000; }
int64_t clock_unix_ns(void) { return ns_of(CLOCK_REALTIME); }
int64_t clock_unix_us(void) { return ns_of(CLOCK_REALTIME) / 1000; }
int64_t clock_unix_ms(void) { return ns_of(CLOCK_REALTIME) / 1000000; }
