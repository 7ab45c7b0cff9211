/*
 * edge_cache_policy.h - the edge's cache policy as pure functions: how long
 * an entry lives (its fresh and keep times from the key's class), when an
 * absence is cached, which owner answers may be stored at all, and how a read
 * treats an entry it found (fresh, stale but served, or late: refreshed
 * before it is served).  No clock, no config, no segment: the callers
 * (edge_cache.c for the fills, edge_read.c and edge_flight.c for the reads)
 * read those and hand the numbers in, so every rule is a unit test
 * (tests/unit/check_cache_policy.c).  edge_cache.c's opening comment and
 * edge_read.c's staleness bound say why the rules are what they are.
 *
 * Static inline: the read rule runs on every GET that hits the segment.
 * All times are milliseconds; "mono" ones are clock_mono_ms, "unix" ones
 * clock_unix_ms.
 */
#ifndef HKV_EDGE_CACHE_POLICY_H
#define HKV_EDGE_CACHE_POLICY_H

#include <stdint.h>

#define EDGE_FILL_HORIZON_MS 10000 /* how long a tombstone guards (edge_cache.c) */

/* The two times of a value stored at now (mono) that the owner read or
 * applied at base or later (base <= now), of a class with fresh_ms and
 * keep_ms, the key expiring at expire_at (unix, 0 none; unix_now is read
 * only then).  hot: the key is measured hot (it matters only when fresh_ms
 * is 0: such a class caches nothing, except a hot key, stored already stale
 * so readers share one refresh).  Both times are capped by the key's own
 * expiry.  1 and *fresh_until, *keep_until (mono) to store it; 0 not cached
 * (no keep, a cold key of a fresh-0 class, or already expired). */
static inline int edge_cache_lifetimes(int64_t fresh_ms, int64_t keep_ms, int hot, int64_t base,
                                       int64_t now, int64_t expire_at, int64_t unix_now,
                                       int64_t *fresh_until, int64_t *keep_until)
{
    if (fresh_ms == 0 && !hot)
        return 0;
    if (keep_ms <= 0)
        return 0;
    *fresh_until = base + fresh_ms;
    *keep_until = now + keep_ms;
    if (expire_at > 0) {
        int64_t left = expire_at - unix_now;
        if (left <= 0)
            return 0;
        if (*keep_until > now + left)
            *keep_until = now + left;
        if (*fresh_until > *keep_until)
            *fresh_until = *keep_until;
    }
    return 1;
}

/* An owner's answer to a fetch sent at sent (mono) may be stored at now only
 * within the fill horizon: a tombstone made since it was sent guards only
 * that long. */
static inline int edge_cache_fill_in_horizon(int64_t sent, int64_t now)
{
    return now - sent < EDGE_FILL_HORIZON_MS;
}

/* A "not found" fetched at sent (mono) is cached until sent + negative_ttl
 * (fresh and kept alike): 1 and *until if that is still ahead of now, 0 not
 * cached (negative-ttl 0 turns negative caching off). */
static inline int edge_cache_negative_until(int64_t negative_ttl_ms, int64_t sent, int64_t now,
                                            int64_t *until)
{
    if (negative_ttl_ms <= 0 || sent + negative_ttl_ms <= now)
        return 0;
    *until = sent + negative_ttl_ms;
    return 1;
}

/* How a read at now treats an entry fresh until fresh_until, the refresh
 * allowance A being allowance (the miss-wait).  A negative entry is read the
 * same way: it answers "no such key". */
enum edge_cache_age {
    EDGE_CACHE_FRESH, /* served, nobody asked */
    EDGE_CACHE_STALE, /* stale by less than A: served now, one refresh started */
    EDGE_CACHE_LATE,  /* stale by A or more: waited for like a miss (but see below) */
};

static inline int edge_cache_servable(int64_t fresh_until, int64_t now, int64_t allowance)
{
    return now < fresh_until + allowance;
}

static inline enum edge_cache_age edge_cache_age(int64_t fresh_until, int64_t now,
                                                 int64_t allowance)
{
    if (now < fresh_until)
        return EDGE_CACHE_FRESH;
    return edge_cache_servable(fresh_until, now, allowance) ? EDGE_CACHE_STALE : EDGE_CACHE_LATE;
}

/* A late entry is served at once, stale, all the same when the owner is
 * known not to answer: marked silent in the colo, or this edge's fetch of the
 * key has been out for A already (flight_age: how long, < 0 when there is no
 * fetch).  Else the reader waits for the owner. */
static inline int edge_cache_late_serves(int silent, int64_t flight_age, int64_t allowance)
{
    return silent || (flight_age >= 0 && flight_age >= allowance);
}

#endif
