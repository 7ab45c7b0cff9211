/*
 * cache_lock.c - the two kinds of lock in the colo segment.
 *
 * Stripe mutexes serialise writers.  They are segment.h's robust stripe
 * locks: a writer killed while holding one hands the next locker EOWNERDEAD,
 * and the next locker rebuilds the stripe from its pages (cache_table_repair: odd
 * entries freed, the index rebuilt) and counts cache_lock_repairs before the
 * mutex is marked consistent.  Readers never take them.
 *
 * Refresh locks make "one fetch per key per colo".  They are one word each
 * (struct rlock in cache_int.h), direct-mapped by the key's hash, changed
 * only by CAS: a 40-bit expiry (monotonic ms compared modulo 2^40, so a lock
 * that expired stays expired for 17 years; the 32-bit expiry this replaced
 * came back as "held" 24.9 days after it expired), a 12-bit tag of the key
 * and a 12-bit fingerprint of the holder's token.  One word per key means
 * two callers can never both hold the same key's lock; a slot held (and not
 * expired) by a different key makes the call fail open (1: the caller
 * fetches, as if no lock table existed), and counts nothing.  Unlock needs
 * the same token: a holder whose lock expired and was taken cannot release
 * the new holder's (but for a 1 in 4096 fingerprint clash, which costs one
 * extra fetch, never a wrong value).
 *
 * A holder that dies.  Its lock would block the key until the ttl (the write
 * timeout + 1 s: 9 s by default), longer than any reader waits.  So next to
 * the word the holder stores its whole token, which carries its pid, and a
 * caller that finds the key held asks the kernel whether that pid still
 * exists (kill(pid, 0) == ESRCH: gone, once the master has reaped it, which
 * it does at SIGCHLD); a gone holder's lock is taken over at once.  Chosen
 * over having the master clear a reaped edge's locks: it needs nothing from
 * the master (one scan of every lock per death, and a master that is slow
 * to reap delays it the same), and it lives where the lock does.  Pid reuse
 * can only make a dead holder look alive (its pid now names another
 * process), never a live one dead, so it costs at most the ttl, as before.
 * The token word is written after the CAS that took the lock and is
 * trusted only while its fingerprint matches the lock word's, so a caller
 * that reads it in between sees the previous holder's token, does not
 * trust it and waits.  A live holder is asked about once per
 * ALIVE_MEMO_MS per process, not on every stale read of a hot key.
 *
 * The test-only hooks of server/colo/cache_test.h live here too: each of them
 * plays a process that dies inside the segment.
 */
#include <errno.h>
#include <signal.h>

#include "server/colo/cache_int.h"
#include "server/colo/cache_test.h"

struct stripe_fix {
    struct cache *c;
    uint32_t s;
};

/* seg_repair_fn: the stripe's last writer died holding it. */
static void repair_stripe(void *arg)
{
    struct stripe_fix *f = arg;
    cache_table_repair(f->c, f->s);
    seg_count(&f->c->seg, CACHE_CTR_cache_lock_repairs, 1);
}

int cache_stripe_lock(struct cache *c, uint32_t s)
{
    struct stripe_fix f = {c, s};
    return seg_lock(&stripe_at(c, s)->mu, repair_stripe, &f);
}

void cache_stripe_unlock(struct cache *c, uint32_t s)
{
    seg_unlock(&stripe_at(c, s)->mu);
}

#define EXP_BITS 40
#define EXP_MASK ((1ULL << EXP_BITS) - 1)
#define ALIVE_MEMO_MS 20

static inline uint32_t lock_tag(uint64_t mh)
{
    uint32_t t = (uint32_t)(mh >> 40) & 0xfffu;
    return t ? t : 1;
}

static inline uint32_t token_fp(uint64_t token)
{
    return (uint32_t)(cache_mix(token) >> 52);
}

static inline uint32_t word_tag(uint64_t w) { return (uint32_t)(w >> 12) & 0xfffu; }
static inline uint32_t word_fp(uint64_t w) { return (uint32_t)w & 0xfffu; }

static inline uint64_t lock_word(int64_t expiry, uint32_t tag, uint32_t fp)
{
    return (((uint64_t)expiry & EXP_MASK) << 24) | ((uint64_t)tag << 12) | fp;
}

/* Has the lock word w expired at now?  The expiry is compared modulo 2^40:
 * right while it lies less than 2^39 ms (17 years) from now either way. */
static inline int lock_expired(uint64_t w, int64_t now)
{
    uint64_t ahead = ((w >> 24) - (uint64_t)now) & EXP_MASK;
    return ahead == 0 || ahead >= (1ULL << (EXP_BITS - 1));
}

/* Is the process holding l (live word w) gone?  0 when in doubt. */
static int holder_gone(struct cache *c, struct rlock *l, uint64_t w, int64_t now)
{
    uint64_t h = atomic_load_explicit(&l->holder, memory_order_acquire);
    if (token_fp(h) != word_fp(w))
        return 0; /* not (yet) this holder's token */
    pid_t pid = (pid_t)(uint32_t)(h >> 32);
    if (pid <= 0)
        return 0;
    if (c->alive_w == w && now >= c->alive_at && now - c->alive_at < ALIVE_MEMO_MS)
        return 0;
    if (kill(pid, 0) == -1 && errno == ESRCH)
        return 1;
    c->alive_w = w; /* alive (or EPERM: someone's, alive) */
    c->alive_at = now;
    return 0;
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
    struct rlock *l = &c->locks[(uint32_t)mh & (c->nlocks - 1)];
    uint64_t mine = lock_word(now + ttl_ms, tag, fp);
    uint64_t w = atomic_load_explicit(&l->w, memory_order_acquire);
    for (int tries = 0; tries < 8; tries++) {
        if (w != 0 && !lock_expired(w, now)) {
            if (word_tag(w) != tag)
                return 1; /* another key's live lock sits here: fail open */
            if (word_fp(w) == fp)
                return 1;
            if (!holder_gone(c, l, w, now))
                return 0;
            /* its holder is gone: take it over, by the same CAS */
        }
        if (atomic_compare_exchange_weak_explicit(&l->w, &w, mine, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            atomic_store_explicit(&l->holder, token, memory_order_release);
            return 1;
        }
    }
    return 1; /* could not decide: fail open */
}

void cache_unlock(struct cache *c, uint64_t khash, uint64_t token)
{
    if (c == NULL)
        return;
    uint64_t mh = cache_mix(khash);
    uint32_t tag = lock_tag(mh), fp = token_fp(token);
    struct rlock *l = &c->locks[(uint32_t)mh & (c->nlocks - 1)];
    uint64_t w = atomic_load_explicit(&l->w, memory_order_acquire);
    while (w != 0 && word_tag(w) == tag && word_fp(w) == fp) {
        if (atomic_compare_exchange_weak_explicit(&l->w, &w, 0, memory_order_release,
                                                  memory_order_acquire))
            return;
    }
}

/* ---- test hooks (server/colo/cache_test.h) ---- */

static struct slot *test_find(struct cache *c, const char *key, size_t klen, uint64_t khash,
                              uint32_t *s)
{
    uint64_t mh = cache_mix(khash);
    uint32_t pos, cls;
    *s = mix_stripe(c, mh);
    if (cache_stripe_lock(c, *s) != HKV_OK)
        return NULL;
    struct slot *sl = cache_table_find(c, *s, mh, key, klen, &pos, &cls);
    if (sl == NULL)
        cache_stripe_unlock(c, *s);
    return sl;
}

int cache_test_hold_stripe(struct cache *c, uint64_t khash)
{
    return cache_stripe_lock(c, mix_stripe(c, cache_mix(khash)));
}

int cache_test_open_write(struct cache *c, const char *key, size_t klen, uint64_t khash)
{
    uint32_t s;
    struct slot *sl = test_find(c, key, klen, khash, &s);
    if (sl == NULL)
        return HKV_ENOENT;
    seq_open(sl);
    uint32_t at = m_extra(&sl->m) + m_klen(&sl->m), vlen = m_vlen(&sl->m);
    if (vlen > 0)
        memset(sl->data + at, '#', vlen / 2 + 1); /* half a new value */
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
    if (off < m_vlen(&sl->m)) {
        sl->data[m_extra(&sl->m) + m_klen(&sl->m) + off] ^= 0x20;
        rc = HKV_OK;
    }
    cache_stripe_unlock(c, s);
    return rc;
}

int cache_test_where(struct cache *c, const char *key, size_t klen, uint64_t khash,
                     struct cache_test_where *w)
{
    uint64_t mh = cache_mix(khash);
    uint32_t s = mix_stripe(c, mh), pos, cls;
    if (cache_stripe_lock(c, s) != HKV_OK)
        return HKV_ENOENT;
    struct slot *sl = cache_table_find(c, s, mh, key, klen, &pos, &cls);
    if (sl != NULL) {
        uint64_t iw = __atomic_load_n(&index_of(c, s)[pos], __ATOMIC_RELAXED);
        w->stripe = s;
        w->page = iw_page(iw);
        w->slot = iw_slot(iw);
        w->cls = cls;
    }
    cache_stripe_unlock(c, s);
    return sl != NULL ? HKV_OK : HKV_ENOENT;
}

void cache_test_give_page(struct cache *c, uint32_t stripe, uint32_t page, uint32_t cls)
{
    if (stripe >= c->nstripes || page >= c->pps || cls >= c->nclasses)
        return;
    if (cache_stripe_lock(c, stripe) != HKV_OK)
        return;
    cache_table_give_page(c, stripe, page, cls);
    cache_stripe_unlock(c, stripe);
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
    c->hdr->seg.generation ^= 1;
}
