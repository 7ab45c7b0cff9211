/*
 * cache_table.c - a stripe's index partition and slab pages: finding,
 * writing, allocating (with CLOCK eviction), moving pages between slot
 * classes, and rebuilding a stripe after a writer died inside it.
 * Everything here runs under the stripe's mutex; readers race with all of
 * it and rely only on the seqlocks (see cache.c).
 *
 * Slabs.  A stripe owns pps pages of page_size bytes.  A page belongs to
 * one slot class (128 << cls bytes, so the largest class is one page) and
 * is cut into equal slots.  Pages go to classes on demand; once all are
 * given out, a class that needs room evicts one of its own entries with
 * CLOCK (the hand clears the referenced bit a hit set and evicts the first
 * entry whose bit is clear, or the one under the hand after two full turns).
 * So a put never fails for want of room.  Memory does not stay where the
 * first writes put it (memcached's calcification): a class with no page
 * takes one from the class holding the most, and once per window of
 * evictions (as many as a page holds of the smallest class) the class that
 * evicted the most bytes in it takes a page from a class that evicted
 * nothing (memcached's automove, counted in evictions instead of seconds).
 * A moved page is emptied (its entries count as evictions) under its page
 * word's seqlock.
 *
 * Index.  Linear probing over the stripe's partition, at most 2/3 full
 * (nidx >= 1.5 x the slots the stripe could ever hold), deletion by
 * backward shift so there are no tombstones; a word carries 31 bits of the
 * hash, enough to recompute its home without touching the entry.  A reader
 * racing with a shift can miss an entry for an instant, never get a wrong
 * one: every word is only a hint, checked against the entry it names.
 */
#include <stdlib.h>

#include "server/colo/cache_int.h"

static inline uint32_t slot_page(const struct cache *c, uint32_t s, const struct slot *sl)
{
    return (uint32_t)(((const char *)sl - c->pages) / c->page_size - (size_t)s * c->pps);
}

static inline uint32_t slot_index(const struct cache *c, const struct slot *sl, uint32_t cls)
{
    return (uint32_t)((((const char *)sl - c->pages) % c->page_size) / cls_size(cls));
}

static inline uint32_t *live_of(const struct cache *c, uint32_t s, uint32_t p)
{
    return &c->pagelive[(size_t)s * c->pps + p];
}

void cache_table_write(struct slot *sl, const struct slot_meta *m, int64_t expire_at,
                       const void *key, size_t klen, const void *val, size_t vlen)
{
    uint32_t odd = seq_open(sl), x = m_extra(m);
    memcpy(&sl->m, m, sizeof(*m));
    if (x > 0)
        memcpy(sl->data, &expire_at, 8);
    if (klen > 0)
        memcpy(sl->data + x, key, klen);
    if (vlen > 0)
        memcpy(sl->data + x + klen, val, vlen);
    sl->sum = entry_sum(m, &expire_at, key, val);
    seq_close(sl, odd);
}

/* The key and the value of an entry (after its expiry, if any). */
static inline const char *slot_key(const struct slot *sl)
{
    return sl->data + m_extra(&sl->m);
}

/* Is this a whole entry whose lengths fit its class and whose sum holds? */
static int slot_sound(const struct slot *sl, uint32_t cls)
{
    if (!m_fits(&sl->m, cls_size(cls) - SLOT_HDR))
        return 0;
    const char *k = slot_key(sl);
    return entry_sum(&sl->m, sl->data, k, k + m_klen(&sl->m)) == sl->sum;
}

/* ---- index ---- */

static void index_remove(struct cache *c, uint32_t s, uint32_t i)
{
    uint64_t *idx = index_of(c, s);
    uint32_t j = i, n = c->nidx;
    for (uint32_t step = 0; step < n; step++) {
        if (++j == n)
            j = 0;
        uint64_t w = __atomic_load_n(&idx[j], __ATOMIC_RELAXED);
        if (w == 0)
            break;
        uint32_t k = tag_home(c, iw_tag(w));
        if (i < j ? (i < k && k <= j) : (i < k || k <= j))
            continue; /* its home lies between the hole and it: stays */
        __atomic_store_n(&idx[i], w, __ATOMIC_RELEASE);
        i = j;
    }
    __atomic_store_n(&idx[i], 0, __ATOMIC_RELEASE);
}

void cache_table_link(struct cache *c, uint32_t s, uint64_t mh, uint32_t page, uint32_t idx_in_page)
{
    uint64_t *idx = index_of(c, s);
    uint32_t tag = mix_tag(mh), pos = tag_home(c, tag);
    for (uint32_t n = 0; n < c->nidx; n++) {
        if (__atomic_load_n(&idx[pos], __ATOMIC_RELAXED) == 0) {
            __atomic_store_n(&idx[pos], iw_make(tag, page, idx_in_page), __ATOMIC_RELEASE);
            return;
        }
        if (++pos == c->nidx)
            pos = 0;
    }
    /* Cannot happen (the partition outnumbers the slots); unreachable entry
     * is then just evicted in its turn. */
}

/* Removes the index word naming (page, j), found from the entry's hash or,
 * if the entry's hash was scribbled, by a scan. */
static void unlink_slot(struct cache *c, uint32_t s, const struct slot *sl, uint32_t page,
                        uint32_t j)
{
    uint64_t *idx = index_of(c, s);
    uint32_t pos = tag_home(c, m_tag(&sl->m));
    for (uint32_t n = 0; n < c->nidx; n++) {
        uint64_t w = __atomic_load_n(&idx[pos], __ATOMIC_RELAXED);
        if (w == 0)
            break;
        if (iw_page(w) == page && iw_slot(w) == j) {
            index_remove(c, s, pos);
            return;
        }
        if (++pos == c->nidx)
            pos = 0;
    }
    for (pos = 0; pos < c->nidx; pos++) {
        uint64_t w = __atomic_load_n(&idx[pos], __ATOMIC_RELAXED);
        if ((w & IW_VALID) && iw_page(w) == page && iw_slot(w) == j) {
            index_remove(c, s, pos);
            return;
        }
    }
}

static void slot_free(struct cache *c, uint32_t s, struct slot *sl, uint32_t cls)
{
    struct stripe *st = stripe_at(c, s);
    uint32_t p = slot_page(c, s, sl);
    uint32_t odd = seq_open(sl);
    sl->m.tf = 0;
    seq_close(sl, odd);
    st->nfree[cls]++;
    st->hint[cls] = p << 16 | slot_index(c, sl, cls);
    uint32_t *live = live_of(c, s, p);
    if (*live > 0)
        (*live)--;
    atomic_fetch_sub_explicit(&st->entries, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&st->used, cls_size(cls), memory_order_relaxed);
}

/* Points the index word at pos (old's) to (page, j), then frees old: a
 * reader holds either the old word (and the old entry, whole, until the
 * free bumps its seq and sends the reader back to the index) or the new. */
void cache_table_swap(struct cache *c, uint32_t s, uint32_t pos, uint64_t mh, uint32_t page,
                      uint32_t j, struct slot *old, uint32_t ocls)
{
    __atomic_store_n(&index_of(c, s)[pos], iw_make(mix_tag(mh), page, j), __ATOMIC_RELEASE);
    slot_free(c, s, old, ocls);
}

struct slot *cache_table_find(struct cache *c, uint32_t s, uint64_t mh, const char *key,
                              size_t klen, uint32_t *pos_out, uint32_t *cls_out)
{
    uint64_t *idx = index_of(c, s);
    uint32_t tag = mix_tag(mh), pos = tag_home(c, tag);
    for (uint32_t n = 0; n < c->nidx; n++) {
        uint64_t w = __atomic_load_n(&idx[pos], __ATOMIC_RELAXED);
        if (w == 0)
            return NULL;
        if ((w & IW_VALID) && iw_tag(w) == tag && iw_page(w) < c->pps) {
            uint64_t pw = atomic_load_explicit(pageword(c, s, iw_page(w)), memory_order_relaxed);
            uint32_t cls = pw_cls(pw);
            if (cls < c->nclasses && iw_slot(w) < cls_slots(c, cls)) {
                struct slot *sl = slot_at(c, s, iw_page(w), cls, iw_slot(w));
                if ((m_flags(&sl->m) & SF_LIVE) && m_tag(&sl->m) == tag && m_klen(&sl->m) == klen &&
                    m_fits(&sl->m, cls_size(cls) - SLOT_HDR) &&
                    (klen == 0 || memcmp(slot_key(sl), key, klen) == 0)) { /* "" may come as NULL */
                    if (!slot_sound(sl, cls)) { /* scribbled: forget it, as if absent */
                        seg_count(&c->seg, CACHE_CTR_cache_corrupt_entries, 1);
                        cache_table_drop(c, s, pos, sl, cls);
                        return NULL;
                    }
                    *pos_out = pos;
                    *cls_out = cls;
                    return sl;
                }
            }
        }
        if (++pos == c->nidx)
            pos = 0;
    }
    return NULL;
}

void cache_table_drop(struct cache *c, uint32_t s, uint32_t pos, struct slot *sl, uint32_t cls)
{
    index_remove(c, s, pos);
    slot_free(c, s, sl, cls);
}

/* ---- pages ---- */

/* The next page of class cls at or after p (cyclically); pps if none. */
static uint32_t next_page(struct cache *c, uint32_t s, uint32_t p, uint32_t cls)
{
    for (uint32_t n = 0; n < c->pps; n++, p++) {
        if (p >= c->pps)
            p = 0;
        if (pw_cls(atomic_load_explicit(pageword(c, s, p), memory_order_relaxed)) == cls)
            return p;
    }
    return c->pps;
}

/* Gives page p to class cls.  Its current entries are evicted; readers that
 * race see the page word move (odd meanwhile) and retry or miss. */
static void page_move(struct cache *c, uint32_t s, uint32_t p, uint32_t cls)
{
    struct stripe *st = stripe_at(c, s);
    _Atomic uint64_t *pwp = pageword(c, s, p);
    uint64_t pw = atomic_load_explicit(pwp, memory_order_relaxed);
    uint64_t ver = pw >> 8;
    uint32_t old = pw_cls(pw);
    atomic_store_explicit(pwp, ((ver | 1) << 8) | cls, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (old < c->nclasses) {
        uint32_t n = cls_slots(c, old), evicted = 0;
        for (uint32_t j = 0; j < n; j++) {
            struct slot *sl = slot_at(c, s, p, old, j);
            if (m_flags(&sl->m) & SF_LIVE) {
                unlink_slot(c, s, sl, p, j);
                evicted++;
            } else if (st->nfree[old] > 0) {
                st->nfree[old]--;
            }
        }
        if (st->npages[old] > 0)
            st->npages[old]--;
        atomic_fetch_sub_explicit(&st->entries, evicted, memory_order_relaxed);
        atomic_fetch_sub_explicit(&st->used, (uint64_t)evicted * cls_size(old),
                                  memory_order_relaxed);
        seg_count(&c->seg, CACHE_CTR_cache_evictions, evicted);
    } else if (st->unassigned > 0) {
        st->unassigned--;
    }
    uint32_t n = cls_slots(c, cls);
    for (uint32_t j = 0; j < n; j++) {
        struct slot *sl = slot_at(c, s, p, cls, j);
        __atomic_store_n(&sl->seq, (uint32_t)(((ver | 1) + 1) << 1), __ATOMIC_RELAXED);
        sl->m.tf = 0;
    }
    for (uint32_t u = 0; u < c->page_size / SLOT_MIN; u++) /* every byte: stray marks too */
        __atomic_store_n(ref_at(c, s, p, u, 0), 0, __ATOMIC_RELAXED);
    *live_of(c, s, p) = 0;
    st->npages[cls]++;
    st->nfree[cls] += n;
    st->hint[cls] = p << 16;
    atomic_store_explicit(pwp, (((ver | 1) + 1) << 8) | cls, memory_order_release);
}

void cache_table_give_page(struct cache *c, uint32_t s, uint32_t p, uint32_t cls)
{
    page_move(c, s, p, cls);
}

/* The page of class d (!= cls) with the fewest live entries, d chosen by
 * the caller's rule; pps if none. */
static uint32_t emptiest_page(struct cache *c, uint32_t s, uint32_t d)
{
    uint32_t best = c->pps, least = UINT32_MAX;
    for (uint32_t p = 0; p < c->pps; p++) {
        uint32_t pc = pw_cls(atomic_load_explicit(pageword(c, s, p), memory_order_relaxed));
        if (pc == d && *live_of(c, s, p) < least) {
            least = *live_of(c, s, p);
            best = p;
        }
    }
    return best;
}

/* Decides whether class cls should take a page from another class now, and
 * does it.  1 if it did. */
static int rebalance(struct cache *c, uint32_t s, uint32_t cls)
{
    struct stripe *st = stripe_at(c, s);
    uint32_t donor = CLS_NONE, most = 0;
    if (st->npages[cls] == 0) {
        for (uint32_t d = 0; d < c->nclasses; d++)
            if (d != cls && st->npages[d] > most) {
                most = st->npages[d];
                donor = d;
            }
    } else if (st->evwin >= c->page_size / SLOT_MIN) {
        /* a window of evictions has passed: if the class evicting the most
         * bytes is this one, an idle class (no eviction) gives it a page */
        uint32_t hot = 0;
        for (uint32_t d = 1; d < c->nclasses; d++)
            if ((uint64_t)st->ev[d] * cls_size(d) > (uint64_t)st->ev[hot] * cls_size(hot))
                hot = d;
        if (hot == cls)
            for (uint32_t d = 0; d < c->nclasses; d++)
                if (d != cls && st->ev[d] == 0 && st->npages[d] >= 2 && st->npages[d] > most) {
                    most = st->npages[d];
                    donor = d;
                }
        memset(st->ev, 0, sizeof(st->ev));
        st->evwin = 0;
    }
    if (donor == CLS_NONE)
        return 0;
    uint32_t p = emptiest_page(c, s, donor);
    if (p >= c->pps)
        return 0;
    page_move(c, s, p, cls);
    return 1;
}

/* A free slot of cls from the hint on, or NULL. */
static struct slot *find_free(struct cache *c, uint32_t s, uint32_t cls, uint32_t *pg,
                              uint32_t *ix)
{
    struct stripe *st = stripe_at(c, s);
    uint32_t n = cls_slots(c, cls), p = st->hint[cls] >> 16, j = st->hint[cls] & 0xffff;
    for (uint32_t pages = 0; pages <= st->npages[cls]; pages++) {
        uint32_t q = next_page(c, s, p, cls);
        if (q >= c->pps)
            return NULL;
        if (q != p)
            j = 0;
        p = q;
        for (; j < n; j++) {
            struct slot *sl = slot_at(c, s, p, cls, j);
            if (!(m_flags(&sl->m) & SF_LIVE)) {
                st->hint[cls] = p << 16 | (j + 1);
                *pg = p;
                *ix = j;
                return sl;
            }
        }
        j = 0;
        p++;
    }
    return NULL;
}

/* CLOCK over the slots of cls: the slot to reuse (its entry evicted). */
static struct slot *clock_evict(struct cache *c, uint32_t s, uint32_t cls, uint32_t *pg,
                                uint32_t *ix)
{
    struct stripe *st = stripe_at(c, s);
    uint32_t n = cls_slots(c, cls), p = st->hand[cls] >> 16, j = st->hand[cls] & 0xffff;
    uint64_t chances = 2ULL * st->npages[cls] * n + 2;
    if (j >= n)
        j = 0;
    p = next_page(c, s, p, cls);
    if (p >= c->pps) { /* the counts said cls had a page; they were wrong */
        page_move(c, s, 0, cls);
        p = j = 0;
    }
    for (;;) {
        struct slot *sl = slot_at(c, s, p, cls, j);
        uint32_t cp = p, cj = j;
        if (++j >= n) {
            j = 0;
            p = next_page(c, s, p + 1, cls);
        }
        st->hand[cls] = p << 16 | j;
        if (!(m_flags(&sl->m) & SF_LIVE)) {
            if (st->nfree[cls] > 0)
                st->nfree[cls]--;
        } else if (__atomic_load_n(ref_at(c, s, cp, cj, cls), __ATOMIC_RELAXED) &&
                   chances-- > 0) {
            __atomic_store_n(ref_at(c, s, cp, cj, cls), 0, __ATOMIC_RELAXED);
            continue;
        } else {
            unlink_slot(c, s, sl, cp, cj);
            seg_count(&c->seg, CACHE_CTR_cache_evictions, 1);
            st->ev[cls]++;
            st->evwin++;
            if (*live_of(c, s, cp) > 0)
                (*live_of(c, s, cp))--;
            atomic_fetch_sub_explicit(&st->entries, 1, memory_order_relaxed);
            atomic_fetch_sub_explicit(&st->used, cls_size(cls), memory_order_relaxed);
        }
        *pg = cp;
        *ix = cj;
        return sl;
    }
}

struct slot *cache_table_alloc(struct cache *c, uint32_t s, uint32_t cls, uint32_t *pg,
                               uint32_t *ix)
{
    struct stripe *st = stripe_at(c, s);
    struct slot *sl = NULL;
    for (int round = 0; sl == NULL; round++) {
        if (st->nfree[cls] > 0) {
            sl = find_free(c, s, cls, pg, ix);
            if (sl != NULL) {
                st->nfree[cls]--;
                break;
            }
            st->nfree[cls] = 0; /* the count was wrong; the pages say none */
        }
        if (st->unassigned > 0) {
            uint32_t p = next_page(c, s, 0, CLS_NONE);
            if (p < c->pps) {
                page_move(c, s, p, cls);
                continue;
            }
            st->unassigned = 0;
        }
        if (round < 2 && rebalance(c, s, cls))
            continue;
        if (st->npages[cls] == 0) /* cannot happen: a stripe has >= 4 pages */
            page_move(c, s, 0, cls);
        sl = clock_evict(c, s, cls, pg, ix);
    }
    __atomic_store_n(ref_at(c, s, *pg, *ix, cls), 0, __ATOMIC_RELAXED);
    (*live_of(c, s, *pg))++;
    atomic_fetch_add_explicit(&st->entries, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->used, cls_size(cls), memory_order_relaxed);
    return sl;
}

void cache_table_init_stripe(struct cache *c, uint32_t s)
{
    struct stripe *st = stripe_at(c, s);
    st->unassigned = c->pps;
    for (uint32_t p = 0; p < c->pps; p++)
        atomic_store_explicit(pageword(c, s, p), CLS_NONE, memory_order_relaxed);
}

/* ---- repair ---- */

/* After a writer died holding the stripe: pages caught mid-move are emptied,
 * entries caught mid-write (odd seq) or failing their checksum are freed,
 * the counts and the index are rebuilt from what the pages hold. */
void cache_table_repair(struct cache *c, uint32_t s)
{
    struct stripe *st = stripe_at(c, s);
    memset(st->npages, 0, sizeof(st->npages));
    memset(st->nfree, 0, sizeof(st->nfree));
    memset(st->hand, 0, sizeof(st->hand));
    memset(st->hint, 0, sizeof(st->hint));
    memset(st->ev, 0, sizeof(st->ev));
    st->evwin = 0;
    st->unassigned = 0;
    st->wip = 0;
    atomic_store_explicit(&st->entries, 0, memory_order_relaxed);
    atomic_store_explicit(&st->used, 0, memory_order_relaxed);
    uint64_t *idx = index_of(c, s);
    for (uint32_t i = 0; i < c->nidx; i++)
        __atomic_store_n(&idx[i], 0, __ATOMIC_RELEASE);

    for (uint32_t p = 0; p < c->pps; p++) {
        uint64_t pw = atomic_load_explicit(pageword(c, s, p), memory_order_relaxed);
        uint32_t cls = pw_cls(pw);
        if (cls == CLS_NONE && !pw_busy(pw)) {
            st->unassigned++;
            continue;
        }
        if (pw_busy(pw) || cls >= c->nclasses) {
            /* caught mid-move (or scribbled): finish the move, empty */
            if (cls >= c->nclasses)
                cls = 0;
            atomic_store_explicit(pageword(c, s, p), CLS_NONE, memory_order_relaxed);
            st->unassigned++;
            page_move(c, s, p, cls);
            continue;
        }
        st->npages[cls]++;
        uint32_t n = cls_slots(c, cls), live = 0;
        for (uint32_t j = 0; j < n; j++) {
            struct slot *sl = slot_at(c, s, p, cls, j);
            if ((seq_load(sl) & 1) || ((m_flags(&sl->m) & SF_LIVE) && !slot_sound(sl, cls))) {
                uint32_t odd = seq_load(sl) | 1;
                __atomic_store_n(&sl->seq, odd, __ATOMIC_RELAXED);
                atomic_thread_fence(memory_order_release);
                sl->m.tf = 0;
                seq_close(sl, odd);
            }
            if (!(m_flags(&sl->m) & SF_LIVE)) {
                st->nfree[cls]++;
                continue;
            }
            /* one entry per key: a duplicate keeps the newer stamp.  The
             * index is rebuilt from the entries' tags (the same bits the
             * index words held), so a lookup by tag finds the duplicate. */
            uint32_t pos, ocls;
            uint64_t mh = (uint64_t)m_tag(&sl->m) << (64 - TAG_BITS);
            struct slot *dup =
                cache_table_find(c, s, mh, slot_key(sl), m_klen(&sl->m), &pos, &ocls);
            if (dup != NULL && dup->m.stamp >= sl->m.stamp) {
                uint32_t odd = seq_open(sl);
                sl->m.tf = 0;
                seq_close(sl, odd);
                st->nfree[cls]++;
                continue;
            }
            if (dup != NULL)
                cache_table_drop(c, s, pos, dup, ocls);
            cache_table_link(c, s, mh, p, j);
            live++;
            atomic_fetch_add_explicit(&st->entries, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&st->used, cls_size(cls), memory_order_relaxed);
        }
        *live_of(c, s, p) = live;
    }
}
