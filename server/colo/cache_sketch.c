/*
 * cache_sketch.c - which keys are hot: a count-min sketch of reads that
 * halves every second, plus a top-K table naming the heaviest keys.
 *
 * Cost on the read path: one read in hot_sample is counted (a per-thread
 * counter decides, no shared write otherwise); a counted read is CMS_DEPTH
 * relaxed atomic adds and, only when its estimate beats the smallest count
 * the table holds, a look through the table's hashes.  The table itself is
 * changed under a mutex taken with trylock, so a read never waits for it.
 *
 * Rates.  Halving every second turns a count into a decaying sum: a key read
 * r times a second holds r just after a halving and 2r just before the
 * next, so at a fraction f of the second its count is about r(1 + f), and
 * reads/s = count / (1 + f) x hot_sample.  Halving is lazy: the first
 * counted read of a new second wins a CAS on the epoch and halves every
 * counter (a few increments racing with it are lost: the sketch estimates).
 * A key the table names but nobody reads decays on paper (rates divide by
 * 2^seconds since the epoch) even when no read comes to halve the counters.
 */
#include <stdlib.h>

#include "server/colo/cache_int.h"

static _Thread_local uint32_t sample_tick;

static const uint64_t ROW_MUL[CMS_DEPTH] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL,
                                            0x165667b19e3779f9ULL, 0xd6e8feb86659fd93ULL};

static inline uint32_t cms_col(uint64_t mh, int r)
{
    return (uint32_t)((mh * ROW_MUL[r]) >> 52) & (CMS_WIDTH - 1);
}

static uint32_t cms_estimate(struct sketch *sk, uint64_t mh)
{
    uint32_t est = UINT32_MAX;
    for (int r = 0; r < CMS_DEPTH; r++) {
        uint32_t v = atomic_load_explicit(&sk->cms[r][cms_col(mh, r)], memory_order_relaxed);
        if (v < est)
            est = v;
    }
    return est;
}

static void decay(struct sketch *sk, int64_t now)
{
    int64_t e = atomic_load_explicit(&sk->epoch, memory_order_relaxed);
    if (now - e < SKETCH_DECAY_MS)
        return;
    if (!atomic_compare_exchange_strong_explicit(&sk->epoch, &e, now, memory_order_relaxed,
                                                 memory_order_relaxed))
        return; /* another reader is halving */
    int64_t k = (now - e) / SKETCH_DECAY_MS;
    unsigned shift = k >= 32 ? 32 : (unsigned)k;
    for (int r = 0; r < CMS_DEPTH; r++)
        for (int i = 0; i < CMS_WIDTH; i++) {
            _Atomic uint32_t *x = &sk->cms[r][i];
            uint32_t v = atomic_load_explicit(x, memory_order_relaxed);
            if (v != 0)
                atomic_store_explicit(x, shift >= 32 ? 0 : v >> shift, memory_order_relaxed);
        }
    uint64_t m = atomic_load_explicit(&sk->min_hint, memory_order_relaxed);
    atomic_store_explicit(&sk->min_hint, shift >= 32 ? 0 : m >> shift, memory_order_relaxed);
}

/* reads/s from a count, at now. */
static uint64_t to_rate(const struct cache *c, uint64_t count, int64_t now)
{
    int64_t since = now - atomic_load_explicit(&c->sk->epoch, memory_order_relaxed);
    if (since < 0)
        since = 0;
    int64_t k = since / SKETCH_DECAY_MS;
    if (k >= 32)
        return 0;
    count >>= k;
    int64_t f = since - k * SKETCH_DECAY_MS;
    return count * c->hot_sample * SKETCH_DECAY_MS / (uint64_t)(SKETCH_DECAY_MS + f);
}

static int topk_member(struct sketch *sk, uint64_t kh)
{
    for (int i = 0; i < TOPK; i++)
        if (__atomic_load_n(&sk->top[i].khash, __ATOMIC_RELAXED) == kh)
            return 1;
    return 0;
}

/* The table is only hints, each entry checked on use: a holder that died
 * leaves nothing to repair. */
static int topk_trylock(struct sketch *sk)
{
    return seg_trylock(&sk->mu, 1, NULL, NULL);
}

static int topk_lock(struct sketch *sk)
{
    return seg_lock(&sk->mu, NULL, NULL);
}

/* Puts key into the table if its count beats the smallest there. */
static void topk_offer(struct cache *c, const char *key, size_t klen, uint64_t kh, uint32_t est)
{
    struct sketch *sk = c->sk;
    if (est <= atomic_load_explicit(&sk->min_hint, memory_order_relaxed) || topk_member(sk, kh))
        return;
    if (topk_trylock(sk) != 0)
        return;
    int victim = -1;
    uint32_t least = UINT32_MAX;
    if (!topk_member(sk, kh)) {
        for (int i = 0; i < TOPK && least > 0; i++) {
            uint64_t h = sk->top[i].khash;
            uint32_t v = h == 0 ? 0 : cms_estimate(sk, cache_mix(h));
            if (v < least) {
                least = v;
                victim = i;
            }
        }
    }
    if (victim >= 0 && est > least) {
        struct topk_ent *t = &sk->top[victim];
        __atomic_store_n(&t->khash, 0, __ATOMIC_RELAXED);
        t->klen = (uint32_t)(klen > UINT32_MAX ? UINT32_MAX : klen);
        if (klen > 0) /* the empty key may come as NULL */
            memcpy(t->key, key, klen < TOPK_KEY ? klen : TOPK_KEY);
        __atomic_store_n(&t->khash, kh, __ATOMIC_RELEASE);
    }
    uint32_t floor = UINT32_MAX;
    for (int i = 0; i < TOPK; i++) {
        uint64_t h = sk->top[i].khash;
        uint32_t v = h == 0 ? 0 : cms_estimate(sk, cache_mix(h));
        if (v < floor)
            floor = v;
    }
    atomic_store_explicit(&sk->min_hint, floor, memory_order_relaxed);
    seg_unlock(&sk->mu);
}

uint64_t cache_sketch_read(struct cache *c, const char *key, size_t klen, uint64_t khash,
                           int64_t now)
{
    if (c == NULL || (key == NULL && klen > 0))
        return 0;
    if (c->hot_sample > 1 && (++sample_tick & (c->hot_sample - 1)) != 0)
        return 0;
    struct sketch *sk = c->sk;
    decay(sk, now);
    uint64_t kh = khash ? khash : 1, mh = cache_mix(kh);
    uint32_t est = UINT32_MAX;
    for (int r = 0; r < CMS_DEPTH; r++) {
        uint32_t v = atomic_fetch_add_explicit(&sk->cms[r][cms_col(mh, r)], 1,
                                               memory_order_relaxed) + 1;
        if (v < est)
            est = v;
    }
    topk_offer(c, key, klen, kh, est);
    return to_rate(c, est, now);
}

uint64_t cache_sketch_rate(struct cache *c, uint64_t khash, int64_t now)
{
    if (c == NULL)
        return 0;
    uint64_t kh = khash ? khash : 1;
    if (!topk_member(c->sk, kh))
        return 0;
    return to_rate(c, cms_estimate(c->sk, cache_mix(kh)), now);
}

static int by_rate(const void *a, const void *b)
{
    const struct cache_hotkey *x = a, *y = b;
    return x->reads_per_sec < y->reads_per_sec ? 1 : x->reads_per_sec > y->reads_per_sec ? -1 : 0;
}

int cache_hotkeys(struct cache *c, struct cache_hotkey *out, int max, int64_t now)
{
    if (c == NULL || out == NULL || max <= 0)
        return 0;
    struct sketch *sk = c->sk;
    struct cache_hotkey all[TOPK];
    int n = 0;
    if (topk_lock(sk) != 0)
        return 0;
    for (int i = 0; i < TOPK; i++) {
        struct topk_ent *t = &sk->top[i];
        if (t->khash == 0)
            continue;
        uint64_t rate = to_rate(c, cms_estimate(sk, cache_mix(t->khash)), now);
        if (rate == 0)
            continue;
        size_t copy = t->klen < TOPK_KEY ? t->klen : TOPK_KEY;
        memset(all[n].key, 0, sizeof(all[n].key));
        memcpy(all[n].key, t->key, copy);
        all[n].klen = t->klen;
        all[n].reads_per_sec = rate;
        n++;
    }
    seg_unlock(&sk->mu);
    qsort(all, (size_t)n, sizeof(all[0]), by_rate);
    if (n > max)
        n = max;
    memcpy(out, all, (size_t)n * sizeof(all[0]));
    return n;
}
