/*
 * cache_health.c - owners' health in the colo segment (cache_health.h).
 *
 * The choice this file is built around: a whole state is one 64-bit word
 * changed by one CAS, so there is no lock to be left held by a process
 * that dies, no torn state to repair, and a reader needs one load.  The
 * price is a narrow word: times are monotonic ms in 40 bits (34 years of
 * uptime), the episode 11 bits (it only tells episodes apart; the count
 * users read is the owner_silent_marks counter), and 12 check bits (24 in
 * the probe word).  A scribble that passes the check has two outcomes: a
 * false "answering", which costs a reader one wait as before the mark
 * existed, or a false mark, which is believed only while a probe was
 * claimed within the trust window and is cleared by the next answer of the
 * owner to any edge of the colo.
 *
 *   health word  bits 63-24 since | 23-13 episode | 12 silent | 11-0 check
 *   probe word   bits 63-24 claimed at | 23-0 check
 */
#include "server/colo/cache_health.h"

#include "server/colo/cache_int.h"
#include "server/colo/cache_test.h"

#define T_BITS 40
#define T_MASK ((1ULL << T_BITS) - 1)
#define EP_MASK 0x7ffu
#define SILENT_BIT (1ULL << 12)
#define W_CHECK 0xfffULL
#define P_CHECK 0xffffffULL
#define FUTURE_MS 1000  /* a time later than now by more than this is not believed */
#define CAS_TRIES 8     /* lock-free and bounded: a loser of this many races gives up */

_Static_assert(CACHE_HEALTH_OWNERS * sizeof(struct hslot) <= 16384, "a small region");

static uint64_t check_of(unsigned g, uint64_t hi, uint64_t salt, uint64_t mask)
{
    return seg_mix(hi ^ salt ^ ((uint64_t)(g + 1) * 0x9e3779b97f4a7c15ULL)) & mask;
}

static uint64_t word_make(unsigned g, int64_t since, uint32_t ep, int silent)
{
    uint64_t w = ((uint64_t)since & T_MASK) << 24 | (uint64_t)(ep & EP_MASK) << 13 |
                 (silent ? SILENT_BIT : 0);
    return w | check_of(g, w >> 12, 0x68656c74ULL, W_CHECK);
}

/* Decodes a health word: 1 if it is sound at now (fields filled), else 0. */
static int word_read(unsigned g, uint64_t w, int64_t now, int64_t *since, uint32_t *ep,
                     int *silent)
{
    if ((w & W_CHECK) != check_of(g, w >> 12, 0x68656c74ULL, W_CHECK))
        return 0;
    *since = (int64_t)(w >> 24);
    if (*since > now + FUTURE_MS)
        return 0;
    *ep = (uint32_t)(w >> 13) & EP_MASK;
    *silent = (w & SILENT_BIT) != 0;
    return 1;
}

static uint64_t probe_make(unsigned g, int64_t at)
{
    uint64_t w = ((uint64_t)at & T_MASK) << 24;
    return w | check_of(g, w >> 24, 0x70726f62ULL, P_CHECK);
}

/* The probe word's time, 0 if it is not sound at now. */
static int64_t probe_read(unsigned g, uint64_t w, int64_t now)
{
    if ((w & P_CHECK) != check_of(g, w >> 24, 0x70726f62ULL, P_CHECK))
        return 0;
    int64_t at = (int64_t)(w >> 24);
    return at > now + FUTURE_MS ? 0 : at;
}

static struct hslot *slot(struct cache *c, unsigned g)
{
    return c != NULL && g < CACHE_HEALTH_OWNERS ? &c->health[g] : NULL;
}

void cache_health_get(struct cache *c, unsigned g, int64_t now, struct cache_health_view *v)
{
    *v = (struct cache_health_view){0, 0, 0, 0};
    struct hslot *s = slot(c, g);
    if (s == NULL)
        return;
    int64_t since;
    uint32_t ep;
    int silent;
    if (word_read(g, atomic_load_explicit(&s->word, memory_order_acquire), now, &since, &ep,
                  &silent))
        *v = (struct cache_health_view){silent, since, ep, 0};
    v->probed = probe_read(g, atomic_load_explicit(&s->probe, memory_order_acquire), now);
}

int cache_health_silent(struct cache *c, unsigned g, int64_t now, int64_t trust_ms)
{
    struct hslot *s = slot(c, g);
    if (s == NULL)
        return 0;
    int64_t since;
    uint32_t ep;
    int silent;
    if (!word_read(g, atomic_load_explicit(&s->word, memory_order_acquire), now, &since, &ep,
                   &silent) ||
        !silent)
        return 0;
    int64_t probed = probe_read(g, atomic_load_explicit(&s->probe, memory_order_acquire), now);
    return probed != 0 && now - probed <= trust_ms;
}

int cache_health_answered(struct cache *c, unsigned g, int64_t now)
{
    struct hslot *s = slot(c, g);
    if (s == NULL)
        return 0;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    for (int i = 0; i < CAS_TRIES; i++) {
        int64_t since = 0;
        uint32_t ep = 0;
        int silent = 0;
        int ok = word_read(g, w, now, &since, &ep, &silent);
        if (ok && !silent && since + CACHE_HEALTH_COARSE_MS > now)
            return 0; /* noted recently enough */
        if (atomic_compare_exchange_weak_explicit(&s->word, &w, word_make(g, now, ep, 0),
                                                  memory_order_acq_rel, memory_order_acquire))
            return ok && silent;
    }
    return 0;
}

int cache_health_unanswered(struct cache *c, unsigned g, int64_t sent_ms, int64_t now)
{
    struct hslot *s = slot(c, g);
    if (s == NULL)
        return 0;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    for (int i = 0; i < CAS_TRIES; i++) {
        int64_t since = 0;
        uint32_t ep = 0;
        int silent = 0;
        if (word_read(g, w, now, &since, &ep, &silent)) {
            /* an answer noted at `since` may have come up to COARSE later */
            if (silent || since + CACHE_HEALTH_COARSE_MS >= sent_ms)
                return 0;
        } else {
            ep = 0;
        }
        if (atomic_compare_exchange_weak_explicit(&s->word, &w, word_make(g, now, ep + 1, 1),
                                                  memory_order_acq_rel, memory_order_acquire)) {
            atomic_store_explicit(&s->probe, probe_make(g, now), memory_order_release);
            cache_count(c, CACHE_CTR_owner_silent_marks, 1);
            return 1;
        }
    }
    return 0;
}

int cache_health_probe_claim(struct cache *c, unsigned g, int64_t now, int64_t interval_ms)
{
    struct hslot *s = slot(c, g);
    if (s == NULL)
        return 0;
    uint64_t p = atomic_load_explicit(&s->probe, memory_order_acquire);
    int64_t at = probe_read(g, p, now);
    if (at != 0 && now - at < interval_ms)
        return 0;
    return atomic_compare_exchange_strong_explicit(&s->probe, &p, probe_make(g, now),
                                                   memory_order_acq_rel, memory_order_relaxed);
}

uint64_t *cache_test_health_words(struct cache *c, unsigned g)
{
    return (uint64_t *)&c->health[g];
}
