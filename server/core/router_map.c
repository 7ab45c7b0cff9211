/*
 * router_map.c - cluster routing from a private copy of the cluster map
 * plus MOVED overrides; see router_map.h.
 *
 * Two table buffers, so a copy that fails (lost the race with the agent,
 * or does not validate) never touches the one in use: the new copy goes
 * into the spare and the two are swapped only when it is good.  Overrides
 * are a small sorted array per pool with no overlaps, so a lookup is one
 * binary search there and one in the copy (cmap_lookup); both are empty or
 * tiny in the steady state, where the copy is current.
 */
#include "server/core/router_map.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/core/log.h"

struct rmap_over {
    uint32_t start;
    uint8_t bits;
    uint16_t owner;
    int64_t epoch;
};

struct rmap {
    struct cmap_table *t;        /* the copy routing reads */
    struct cmap_table *spare;    /* the next copy is made here */
    int64_t seen;                /* the segment revision last copied (or refused) */
    struct rmap_over over[CMAP_NPOOLS][RMAP_MAX_OVERRIDES];
    unsigned nover[CMAP_NPOOLS];
    uint8_t serves[CMAP_MAX_OWNERS + 1];
};

static uint64_t span(uint8_t bits)
{
    return 1ULL << (32 - bits);
}

struct rmap *rmap_create(void)
{
    struct rmap *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->t = calloc(1, sizeof(*m->t));
    m->spare = calloc(1, sizeof(*m->spare));
    if (m->t == NULL || m->spare == NULL)
        rmap_destroy(&m);
    return m;
}

void rmap_destroy(struct rmap **mp)
{
    if (mp == NULL || *mp == NULL)
        return;
    free((*mp)->t);
    free((*mp)->spare);
    free(*mp);
    *mp = NULL;
}

int64_t rmap_revision(const struct rmap *m) { return m->t->revision; }
const struct cmap_table *rmap_table(const struct rmap *m) { return m->t; }
unsigned rmap_overrides(const struct rmap *m, enum cfg_pool pool) { return m->nover[pool]; }

int rmap_serves(const struct rmap *m, unsigned n)
{
    return n >= 1 && n <= CMAP_MAX_OWNERS && m->serves[n];
}

/* Drops the overrides the copy's revision reached; recounts who serves. */
static void after_copy(struct rmap *m)
{
    memset(m->serves, 0, sizeof(m->serves));
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        unsigned k = 0;
        for (unsigned i = 0; i < m->nover[p]; i++)
            if (m->over[p][i].epoch > m->t->revision)
                m->over[p][k++] = m->over[p][i];
        m->nover[p] = k;
        for (unsigned i = 0; i < k; i++)
            m->serves[m->over[p][i].owner] = 1;
        for (uint32_t i = 0; i < m->t->nleaves[p]; i++)
            if (m->t->leaves[p][i].owner <= CMAP_MAX_OWNERS)
                m->serves[m->t->leaves[p][i].owner] = 1;
    }
    m->serves[0] = 0;
}

/* The spare holds a new copy: swap it in if it validates. */
static int take_spare(struct rmap *m)
{
    char why[200];
    if (cmap_validate(m->spare, why, sizeof(why)) != HKV_OK)
        return HKV_EINVAL;
    struct cmap_table *t = m->t;
    m->t = m->spare;
    m->spare = t;
    after_copy(m);
    return HKV_OK;
}

int rmap_set_table(struct rmap *m, const struct cmap_table *t)
{
    memcpy(m->spare, t, sizeof(*t));
    return take_spare(m);
}

int rmap_sync(struct rmap *m, const struct cmap *seg)
{
    if (seg == NULL)
        return 0;
    int64_t rev = cmap_revision(seg);
    if (rev == m->seen || rev == 0)
        return 0;
    int64_t got = cmap_snapshot(seg, m->spare);
    if (got == 0)
        return 0; /* lost the race: tried again at the next call */
    m->seen = rev;
    if (got == m->t->revision)
        return 0;
    if (take_spare(m) != HKV_OK) {
        log_warning("cluster map revision %lld does not validate; routing stays on revision %lld",
                    (long long)got, (long long)m->t->revision);
        return 0;
    }
    return 1;
}

/* The override of pool holding h (a hash's top 32 bits), or NULL. */
static const struct rmap_over *find_over(const struct rmap *m, int pool, uint32_t h)
{
    unsigned lo = 0, hi = m->nover[pool];
    const struct rmap_over *o = m->over[pool];
    while (lo < hi) { /* the first override starting after h */
        unsigned mid = lo + (hi - lo) / 2;
        if (o[mid].start <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct rmap_over *c = &o[lo - 1];
    return (uint64_t)h - c->start < span(c->bits) ? c : NULL;
}

unsigned rmap_owner(const struct rmap *m, enum cfg_pool pool, uint64_t place,
                    struct rmap_route *out)
{
    *out = (struct rmap_route){0};
    if ((int)pool < 0 || pool >= CMAP_NPOOLS)
        return 0;
    uint32_t h = (uint32_t)(place >> 32);
    const struct rmap_over *o = find_over(m, pool, h);
    if (o != NULL) {
        *out = (struct rmap_route){o->owner, o->bits ? o->start >> (32 - o->bits) : 0, o->bits,
                                   o->epoch};
        return o->owner;
    }
    const struct cmap_leaf *l = cmap_lookup(m->t, pool, place);
    if (l == NULL)
        return 0;
    *out = (struct rmap_route){l->owner, l->bits ? l->start >> (32 - l->bits) : 0, l->bits,
                               l->epoch};
    return l->owner;
}

/* The newest epoch this process holds anywhere in [start, end). */
static int64_t held_epoch(const struct rmap *m, int pool, uint64_t start, uint64_t end)
{
    int64_t e = m->t->revision;
    const struct cmap_leaf *l = cmap_lookup(m->t, pool, start << 32);
    if (l != NULL) {
        const struct cmap_leaf *last = &m->t->leaves[pool][m->t->nleaves[pool]];
        for (; l < last && l->start < end; l++)
            if (l->epoch > e)
                e = l->epoch;
    }
    for (unsigned i = 0; i < m->nover[pool]; i++) {
        const struct rmap_over *o = &m->over[pool][i];
        if (o->start < end && o->start + span(o->bits) > start && o->epoch > e)
            e = o->epoch;
    }
    return e;
}

int rmap_moved(struct rmap *m, enum cfg_pool pool, uint32_t leaf, uint8_t bits, int64_t epoch,
               unsigned owner)
{
    if ((int)pool < 0 || pool >= CMAP_NPOOLS || bits > 32 || (bits < 32 && (leaf >> bits) != 0))
        return HKV_EINVAL;
    const struct cmap_owner *row = cmap_owner(m->t, owner);
    if (row == NULL || row->pool != pool)
        return HKV_EINVAL;
    uint64_t start = bits == 0 ? 0 : (uint64_t)leaf << (32 - bits), end = start + span(bits);
    if (epoch <= held_epoch(m, pool, start, end))
        return 0;
    /* Drop the overrides it overlaps (all older: held_epoch saw them), then
     * insert it in start order. */
    struct rmap_over *o = m->over[pool];
    unsigned k = 0, at = 0;
    for (unsigned i = 0; i < m->nover[pool]; i++)
        if (o[i].start >= end || o[i].start + span(o[i].bits) <= start)
            o[k++] = o[i];
    m->nover[pool] = k;
    if (k == RMAP_MAX_OVERRIDES)
        return 0;
    while (at < k && o[at].start < start)
        at++;
    memmove(&o[at + 1], &o[at], (k - at) * sizeof(*o));
    o[at] = (struct rmap_over){(uint32_t)start, bits, (uint16_t)owner, epoch};
    m->nover[pool] = k + 1;
    m->serves[owner] = 1;
    return 1;
}
