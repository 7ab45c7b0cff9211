/*
 * gcra.h - CL.THROTTLE's arithmetic: redis-cell's GCRA (the generic cell
 * rate algorithm), as one pure function over a bucket's theoretical
 * arrival time (tat).
 *
 * A limit is max_burst, count per period: one request "costs" the emission
 * interval T = period / count; the bucket tolerates (max_burst + 1) * T of
 * debt, so max_burst + 1 requests pass at once and then one per T.  A
 * request of `quantity` costs quantity * T: it passes when
 * max(tat, now) + quantity * T - (max_burst + 1) * T <= now, and tat moves
 * there; otherwise it is limited and tat stays.  The reply's fields are
 * redis-cell's: limited, limit (max_burst + 1), remaining, retry-after and
 * reset-after (whole seconds, truncated; retry-after -1 when allowed, or
 * when the quantity could never pass).
 *
 * All times are nanoseconds on one clock (CLOCK_MONOTONIC in the daemon);
 * tat <= now means a full bucket (as good as none: it may be forgotten).
 */
#ifndef HKV_GCRA_H
#define HKV_GCRA_H

#include <stdint.h>

struct gcra_limit {
    int64_t max_burst;           /* >= 0 */
    int64_t count;               /* per period, >= 1 */
    int64_t period_ns;           /* >= 1 ms */
    int64_t quantity;            /* >= 0 */
};

struct gcra_result {
    int limited;
    int64_t limit, remaining;
    int64_t retry_after_s;       /* -1: allowed, or never */
    int64_t reset_after_s;
    int64_t tat;                 /* the bucket afterwards (unchanged when limited) */
};

/* The arguments' bounds CL.THROTTLE refuses past (gcra_apply computes in
 * 128 bits within them). */
#define GCRA_MAX_BURST   (INT64_C(1) << 30)
#define GCRA_MAX_COUNT   (INT64_C(1) << 30)
#define GCRA_MAX_PERIOD_S (INT64_C(1) << 22)  /* about 48 days */
#define GCRA_MAX_QUANTITY (INT64_C(1) << 30)

/* The emission interval of l (ns per request), >= 1. */
int64_t gcra_interval(const struct gcra_limit *l);

/* One request against the bucket whose tat is tat (0: none) at now. */
void gcra_apply(const struct gcra_limit *l, int64_t tat, int64_t now, struct gcra_result *r);

#endif
