/*
 * gcra.c - see gcra.h.  Written from redis-cell's documented behaviour
 * (its README's worked example is tests/unit/check_gcra.c's first case):
 * the delay tolerance is (max_burst + 1) intervals, and what remains is the
 * tolerance left after this request, in whole intervals.  Products are
 * taken in 128 bits and a tat is kept below GCRA_TAT_MAX (about 146 years
 * of ns), so no bound the command allows can overflow; the common case
 * (nothing near those bounds) runs in 64 bits.
 */
#include "server/colo/gcra.h"

#define GCRA_TAT_MAX (INT64_MAX / 2)

int64_t gcra_interval(const struct gcra_limit *l)
{
    int64_t t = l->period_ns / l->count;
    return t > 0 ? t : 1;
}

static int64_t secs(__int128 ns)
{
    __int128 s = ns / 1000000000;
    return s > INT64_MAX ? INT64_MAX : (int64_t)s;
}

static void apply_wide(const struct gcra_limit *l, int64_t tat, int64_t now, struct gcra_result *r)
{
    __int128 t = gcra_interval(l);
    __int128 tolerance = t * (l->max_burst + 1);
    __int128 increment = t * l->quantity;
    if (tat < now)
        tat = now; /* a full bucket */
    __int128 new_tat = (__int128)tat + increment;
    __int128 diff = (__int128)now - (new_tat - tolerance);
    __int128 ttl;
    r->limit = l->max_burst + 1;
    r->retry_after_s = -1;
    if (diff < 0) {
        r->limited = 1;
        if (increment <= tolerance) /* it can pass once enough has drained */
            r->retry_after_s = secs(-diff);
        ttl = (__int128)tat - now;
        r->tat = tat;
    } else {
        r->limited = 0;
        ttl = new_tat - now;
        r->tat = new_tat > GCRA_TAT_MAX ? GCRA_TAT_MAX : (int64_t)new_tat;
    }
    __int128 next = tolerance - ttl;
    __int128 rem = next > -t ? next / t : 0;
    r->remaining = rem < 0 ? 0 : rem > INT64_MAX ? INT64_MAX : (int64_t)rem;
    r->reset_after_s = secs(ttl);
}

/* The same in 64 bits, when no product or sum can overflow (every limit a
 * client is likely to ask for): the 128-bit divisions cost a library call
 * each, a third of a check's CPU. */
void gcra_apply(const struct gcra_limit *l, int64_t tat, int64_t now, struct gcra_result *r)
{
    int64_t t = gcra_interval(l), tolerance, increment, new_tat;
    if (tat < now)
        tat = now;
    if (__builtin_mul_overflow(t, l->max_burst + 1, &tolerance) ||
        __builtin_mul_overflow(t, l->quantity, &increment) ||
        __builtin_add_overflow(tat, increment, &new_tat) || new_tat > GCRA_TAT_MAX ||
        now < 0 || tolerance > GCRA_TAT_MAX) {
        apply_wide(l, tat, now, r);
        return;
    }
    int64_t diff = now - (new_tat - tolerance), ttl;
    r->limit = l->max_burst + 1;
    r->retry_after_s = -1;
    if (diff < 0) {
        r->limited = 1;
        if (increment <= tolerance)
            r->retry_after_s = -diff / 1000000000;
        ttl = tat - now;
        r->tat = tat;
    } else {
        r->limited = 0;
        ttl = new_tat - now;
        r->tat = new_tat;
    }
    int64_t next = tolerance - ttl;
    r->remaining = next > -t ? next / t : 0;
    if (r->remaining < 0)
        r->remaining = 0;
    r->reset_after_s = ttl / 1000000000;
}
