/*
 * cache_lock.c - the two kinds of lock in the colo segment.
 *
 * Stripe mutexes serialise writers.  They are process-shared and robust: a
 * writer killed while holding one hands the next locker EOWNERDEAD, which
 * rebuilds the stripe from its pages (table_repair: odd entries freed, the
 * index rebuilt), counts cache_lock_repairs and marks the mutex consistent.
 * Readers never take them.
 *
 * Refresh locks make "one fetch per key per colo".  They are one word each,
 * direct-mapped by the key's hash, changed only by CAS: expiry (32 bits of
 * monotonic ms, compared modulo 2^32, so no wrap problem for ttls under 24
 * days), a 16-bit tag of the key and a 16-bit fingerprint of the holder's
 * token.  One word per key means two callers can never both hold the same
 * key's lock; a slot held (and not expired) by a different key makes the
 * call fail open (1: the caller fetches, as if no lock table existed), and
 * counts nothing.  A lock that is never released frees itself at its expiry,
 * so a worker that dies holding one delays its key by at most the ttl.
 * Unlock needs the same token: a holder whose lock expired and was taken
 * cannot release the new holder's (but for a 1 in 65536 fingerprint clash,
 * which costs one extra fetch, never a wrong value).
 *
 * The test-only hooks of server/cache_test.h live here too: each of them
 * plays a process that dies inside the segment.
 */
#include <errno.h>

#include "server/cache_int.h"
#include "server/cache_test.h"

int stripe_lock(struct cache *c, uint32_t s)
{
    struct stripe *st = stripe_at(c, s);
    int rc = pthread_mutex_lock(&st->mu);
    if (rc == 0)
        return HKV_OK;
    if (rc == EOWNERDEAD) {
        table_repair(c, s);
        cache_count(c, CACHE_CTR_cache_lock_repairs, 1);
        pthread_mutex_consistent(&st->mu);
        return HKV_OK;
    }
    return HKV_ECORRUPT; /* ENOTRECOVERABLE: only if the segment was scribbled */
}

void stripe_unlock(struct cache *c, uint32_t s)
{
    pthread_mutex_unlock(&stripe_at(c, s)->mu);
}

static inline uint32_t lock_tag(uint64_t mh)
{
    uint32_t t = (uint32_t)(mh >> 40) & 0xffffu;
    return t ? t : 1;
}

static inline uint32_t token_fp(uint64_t token)
{
    return (uint32_t)(cache_mix(token) >> 48);
}

static inline uint64_t lock_word(int64_t expiry, uint32_t tag, uint32_t fp)
{
    return ((uint64_t)(uint32_t)expiry << 32) | ((uint64_t)tag << 16) | fp;
}

/* Has the lock word w expired at now (modulo 2^32 ms)? */
static inline int lock_expired(uint64_t w, int64_t now)
{
    return (int32_t)((uint32_t)(w >> 32) - (uint32_t)now) <= 0;
}

int cache_lock(struct cache *c, uint64_t khash, uint64_t token, int64_t now, int64_t ttl_ms)
{
    if (c == NULL)
        return 1;
    if (ttl_ms <= 0)
        ttl_ms = 1;
    if (ttl_ms > INT32_MAX / 2)
        ttl_ms = INT32_MAX / 2;
    uint64_t mh = cache_mix(khash);
    uint32_t tag = lock_tag(mh), fp = token_fp(token);
    rlock_word *l = &c->locks[(uint32_t)mh & (c->nlocks - 1)];
    uint64_t mine = lock_word(now + ttl_ms, tag, fp);
    uint64_t w = atomic_load_explicit(l, memory_order_acquire);
    for (int tries = 0; tries < 8; tries++) {
        if (w != 0 && !lock_expired(w, now)) {
            if (((w >> 16) & 0xffffu) != tag)
                return 1; /* another key's live lock sits here: fail open */
            return (w & 0xffffu) == fp ? 1 : 0;
        }
        if (atomic_compare_exchange_weak_explicit(l, &w, mine, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 1;
    }
    return 1; /* could not decide: fail open */
}

void cache_unlock(struct cache *c, uint64_t khash, uint64_t token)
{
    if (c == NULL)
        return;
    uint64_t mh = cache_mix(khash);
    uint32_t tag = lock_tag(mh), fp = token_fp(token);
    rlock_word *l = &c->locks[(uint32_t)mh & (c->nlocks - 1)];
    uint64_t w = atomic_load_explicit(l, memory_order_acquire);
    while (w != 0 && ((w >> 16) & 0xffffu) == tag && (w & 0xffffu) == fp) {
        if (atomic_compare_exchange_weak_explicit(l, &w, 0, memory_order_release,
                                                  memory_order_acquire))
            return;
    }
}

/* ---- test hooks (server/cache_test.h) ---- */

static struct slot *test_find(struct cache *c, const char *key, size_t klen, uint64_t khash,
                              uint32_t *s)
{
    uint64_t mh = cache_mix(khash);
    uint32_t pos, cls;
    *s = mix_stripe(c, mh);
    if (stripe_lock(c, *s) != HKV_OK)
        return NULL;
    struct slot *sl = table_find(c, *s, mh, key, klen, khash, &pos, &cls);
    if (sl == NULL)
        stripe_unlock(c, *s);
    return sl;
}

int cache_test_hold_stripe(struct cache *c, uint64_t khash)
{
    return stripe_lock(c, mix_stripe(c, cache_mix(khash)));
}

int cache_test_open_write(struct cache *c, const char *key, size_t klen, uint64_t khash)
{
    uint32_t s;
    struct slot *sl = test_find(c, key, klen, khash, &s);
    if (sl == NULL)
        return HKV_ENOENT;
    seq_open(sl);
    if (sl->m.vlen > 0)
        memset(sl->data + sl->m.klen, '#', sl->m.vlen / 2 + 1); /* half a new value */
    stripe_at(c, s)->wip = 1;
    return HKV_OK; /* the stripe stays locked: the caller is meant to die */
}

int cache_test_flip(struct cache *c, const char *key, size_t klen, uint64_t khash, size_t off)
{
    uint32_t s;
    struct slot *sl = test_find(c, key, klen, khash, &s);
    if (sl == NULL)
        return HKV_ENOENT;
    int rc = HKV_EINVAL;
    if (off < sl->m.vlen) {
        sl->data[sl->m.klen + off] ^= 0x20;
        rc = HKV_OK;
    }
    stripe_unlock(c, s);
    return rc;
}

int cache_test_where(struct cache *c, const char *key, size_t klen, uint64_t khash,
                     struct cache_test_where *w)
{
    uint64_t mh = cache_mix(khash);
    uint32_t s = mix_stripe(c, mh), pos, cls;
    if (stripe_lock(c, s) != HKV_OK)
        return HKV_ENOENT;
    struct slot *sl = table_find(c, s, mh, key, klen, khash, &pos, &cls);
    if (sl != NULL) {
        uint64_t iw = __atomic_load_n(&index_of(c, s)[pos], __ATOMIC_RELAXED);
        w->stripe = s;
        w->page = iw_page(iw);
        w->slot = iw_slot(iw);
        w->cls = cls;
    }
    stripe_unlock(c, s);
    return sl != NULL ? HKV_OK : HKV_ENOENT;
}

void cache_test_give_page(struct cache *c, uint32_t stripe, uint32_t page, uint32_t cls)
{
    if (stripe >= c->nstripes || page >= c->pps || cls >= c->nclasses)
        return;
    if (stripe_lock(c, stripe) != HKV_OK)
        return;
    table_give_page(c, stripe, page, cls);
    stripe_unlock(c, stripe);
}

void cache_test_touch(struct cache *c, const struct cache_test_where *w)
{
    entry_touch(c, w->stripe, w->page, w->slot, w->cls);
}

uint32_t cache_test_stripe(struct cache *c, uint64_t khash)
{
    return mix_stripe(c, cache_mix(khash));
}

void cache_test_geometry(struct cache *c, struct cache_test_geometry *g)
{
    g->nstripes = c->nstripes;
    g->pages_per_stripe = c->pps;
    g->page_size = c->page_size;
    g->nclasses = c->nclasses;
    g->index_per_stripe = c->nidx;
    g->refresh_locks = c->nlocks;
}

void cache_test_scribble_header(struct cache *c)
{
    c->hdr->generation ^= 1;
}
