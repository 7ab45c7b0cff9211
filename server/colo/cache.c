/*
 * cache.c - the colo segment: making and checking the mapping, the lock-free
 * read path, the stamp-guarded writes and the counters.  The layout is in
 * cache_int.h, the slab allocator and index in cache_table.c, the locks in
 * cache_lock.c, the hot-key sketch in cache_sketch.c.
 *
 * The layout is a pure function of (bytes, max_value, hot_sample): the
 * master computes it once, and cache_attach recomputes it from the header's
 * own inputs and compares field by field (segment.h: the header, its
 * checksum and the counter rows are the segment module's), so a child never
 * trusts an offset it could not have computed itself.
 *
 * Memory ordering of a read (Boehm, "Can seqlocks get along with programming
 * language memory models?", MSPC'12).  A writer, holding the stripe mutex,
 * stores seq odd (relaxed), issues a release fence, writes the entry with
 * plain stores, then stores seq even with release.  A reader loads seq with
 * acquire, copies the entry (plain memcpy: the bytes may be racing, they are
 * never trusted before the check), issues an acquire fence, and loads seq
 * again.  If any byte it copied came from a write after the writer's release
 * fence, the fences synchronise and the second load sees the odd (or a
 * later) seq, so a copy that passes "seq unchanged and even" contains no
 * byte of a later write; a copy that started after the write completed saw
 * the even seq through the acquire load, which orders every byte of that
 * write before the copy.  The page word is a second seqlock of the same
 * shape around giving a page to another slot class, checked in the same
 * two places.  The fences are also compiler barriers, so the copy cannot be
 * hoisted above the first load or sunk below the second.  Lengths are
 * bounded by the slot's class before anything is copied, and the checksum
 * is computed over the private copy afterwards: a scribbled entry is a miss.
 *
 * A put writes the new version into another slot and publishes it with one
 * release store of the key's index word, then frees the old slot (its seq
 * moves, so a reader still copying it retries from the index).  Readers of
 * a hot key that is being updated therefore see the old or the new version
 * whole and almost never meet an odd seq; an odd seq that does not clear
 * within READ_TRIES is a writer that died mid-write: a miss, counted as
 * corrupt, until the next writer of the stripe repairs it.
 */
#include "server/colo/cache.h"

#include <errno.h>
#include <stdlib.h>

#include "server/colo/cache_int.h"

_Static_assert(CACHE_CTR_COUNT <= SEG_ROW_U64, "a counter row holds every counter");
_Static_assert(sizeof(struct slot) == 40, "entry header layout");
_Static_assert(sizeof(struct slot_meta) == 32, "entry meta: no padding (all of it is summed)");
_Static_assert(PAGE_MAX - 1 <= VLEN_MASK, "a value that fits a page fits vlen");
_Static_assert(sizeof(struct cache_hdr) <= SEG_HDR_MAX, "the segment takes the header");

#define ALIGN_UP(x, a) seg_align((x), (a))

static uint64_t pow2_floor(uint64_t x)
{
    uint64_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}

static uint64_t clamp_u64(uint64_t x, uint64_t lo, uint64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* The segment's layout (struct seg_kind): fills every size and offset of
 * hdr from in's bytes/max_value/hot_sample.  HKV_OK or HKV_EINVAL (too small
 * for at least 4 pages per stripe, or hot_sample not a power of 2). */
static int layout(void *hdr, const void *in)
{
    const struct cache_hdr *from = in;
    uint64_t bytes = from->seg.bytes, max_value = from->max_value;
    uint32_t hot_sample = from->hot_sample;
    struct cache_hdr *h = hdr;
    if (bytes < (1u << 20) || hot_sample == 0 || (hot_sample & (hot_sample - 1)))
        return HKV_EINVAL;
    h->seg.bytes = bytes;
    h->max_value = max_value;
    h->hot_sample = hot_sample;
    h->nstripes = (uint32_t)clamp_u64(pow2_floor(bytes / (32u << 20)), 8, 64);
    h->stripe_size = (uint32_t)ALIGN_UP(sizeof(struct stripe), 64);
    h->nlocks = (uint32_t)clamp_u64(pow2_floor(bytes / 4096), 512, 65536);

    uint64_t off = seg_first(sizeof(*h));
    h->off_stripes = off;
    off += (uint64_t)h->nstripes * h->stripe_size;
    h->off_locks = off;
    off = ALIGN_UP(off + (uint64_t)h->nlocks * sizeof(struct rlock), 64);
    h->off_sketch = off;
    off = ALIGN_UP(off + sizeof(struct sketch), 64);
    h->off_floors = off;
    off = ALIGN_UP(off + FLUSH_WRITERS * sizeof(uint64_t), 64);
    h->off_health = off;
    off = ALIGN_UP(off + CACHE_HEALTH_OWNERS * sizeof(struct hslot), 64);
    uint64_t fixed = off + 3 * 4096; /* alignment slack of the later regions */
    if (fixed >= bytes)
        return HKV_EINVAL;

    uint64_t raw = (bytes - fixed) / h->nstripes;
    uint64_t want = h->max_value > PAGE_MAX ? PAGE_MAX : h->max_value + SLOT_HDR + 256;
    uint64_t cap = PAGE_MIN; /* the largest slot max_value needs, with room for a key */
    while (cap < want && cap < PAGE_MAX)
        cap *= 2;
    uint64_t page = clamp_u64(pow2_floor(raw / 16), PAGE_MIN, cap);
    uint64_t per_page_idx = (page / SLOT_MIN) * 3 / 2;
    uint64_t per_page = page + 8 + 4 + page / SLOT_MIN + per_page_idx * 8;
    uint64_t pps = raw > 64 ? (raw - 64) / per_page : 0;
    if (pps > 65535)
        pps = 65535;
    for (;; pps--) {
        if (pps < 4)
            return HKV_EINVAL;
        h->pps = (uint32_t)pps;
        h->page_size = (uint32_t)page;
        h->nidx = (uint32_t)(pps * per_page_idx + 8);
        uint64_t o = off;
        h->off_pagewords = o;
        o = ALIGN_UP(o + (uint64_t)h->nstripes * pps * 8, 64);
        h->off_pagelive = o;
        o = ALIGN_UP(o + (uint64_t)h->nstripes * pps * 4, 64);
        h->off_refs = o;
        o = ALIGN_UP(o + (uint64_t)h->nstripes * pps * (page / SLOT_MIN), 64);
        h->off_index = o;
        o = ALIGN_UP(o + (uint64_t)h->nstripes * h->nidx * 8, 4096);
        h->off_pages = o;
        o += (uint64_t)h->nstripes * pps * page;
        if (o <= bytes) {
            h->end = o;
            break;
        }
    }
    h->nclasses = 0;
    while (((uint64_t)SLOT_MIN << h->nclasses) <= page && h->nclasses < NCLASS_MAX)
        h->nclasses++;
    return HKV_OK;
}

static const struct seg_kind cache_kind = {
    .name = "hotkvd-colo",
    .magic = CACHE_MAGIC,
    .version = CACHE_LAYOUT_VERSION,
    .hdr_size = sizeof(struct cache_hdr),
    .layout = layout,
};

/* Builds this process's pointers from a checked header. */
static void bind(struct cache *c)
{
    char *base = c->seg.base;
    struct cache_hdr *h = (struct cache_hdr *)base;
    c->hdr = h;
    c->stripes = base + h->off_stripes;
    c->pagewords = (_Atomic uint64_t *)(base + h->off_pagewords);
    c->pagelive = (uint32_t *)(base + h->off_pagelive);
    c->refs = (uint8_t *)(base + h->off_refs);
    c->index = (uint64_t *)(base + h->off_index);
    c->locks = (struct rlock *)(base + h->off_locks);
    c->sk = (struct sketch *)(base + h->off_sketch);
    c->floors = (_Atomic uint64_t *)(base + h->off_floors);
    c->health = (struct hslot *)(base + h->off_health);
    c->pages = base + h->off_pages;
    c->nstripes = h->nstripes;
    c->pps = h->pps;
    c->page_size = h->page_size;
    c->nclasses = h->nclasses;
    c->nidx = h->nidx;
    c->nlocks = h->nlocks;
    c->hot_sample = h->hot_sample;
    c->max_value = h->max_value;
    c->alive_w = 0;
    c->alive_at = 0;
}

int cache_create(const struct cache_opts *o, struct cache **out)
{
    struct cache_hdr h;
    *out = NULL;
    if (o == NULL) {
        errno = EINVAL;
        return HKV_EINVAL;
    }
    memset(&h, 0, sizeof(h));
    h.seg.bytes = o->bytes;
    h.max_value = o->max_value;
    h.hot_sample = o->hot_sample;
    struct cache *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return HKV_ENOMEM;
    int rc = seg_create(&c->seg, &cache_kind, &h);
    if (rc != HKV_OK) {
        free(c);
        return rc;
    }
    bind(c);
    for (uint32_t s = 0; s < c->nstripes; s++) {
        if (seg_lock_init(&stripe_at(c, s)->mu) != HKV_OK)
            goto nomem;
        cache_table_init_stripe(c, s);
    }
    if (seg_lock_init(&c->sk->mu) != HKV_OK)
        goto nomem;
    *out = c;
    return HKV_OK;
nomem:
    seg_destroy(&c->seg);
    free(c);
    if (errno == 0)
        errno = ENOMEM;
    return HKV_ENOMEM;
}

int cache_attach(struct cache *c)
{
    if (c == NULL || seg_attach(&c->seg, &cache_kind) != HKV_OK)
        return HKV_ECORRUPT;
    bind(c);
    return HKV_OK;
}

void cache_destroy(struct cache **cp)
{
    if (cp == NULL || *cp == NULL)
        return;
    struct cache *c = *cp;
    seg_destroy(&c->seg);
    free(c);
    *cp = NULL;
}

/* ---- reads ---- */

enum rd { RD_HIT, RD_OTHER, RD_GONE, RD_RETRY, RD_CORRUPT, RD_NOMEM };

/* One seqlocked read of the entry index word w points at.  RD_HIT: *m,
 * *expire_at and value hold a consistent, checksummed copy of key's entry. */
static enum rd read_slot(const struct cache *c, uint32_t s, uint64_t w, const char *key,
                         size_t klen, uint32_t tag, struct hkv_buf *value, struct slot_meta *m,
                         int64_t *expire_at, uint32_t *cls_out)
{
    uint32_t p = iw_page(w), j = iw_slot(w);
    if (p >= c->pps)
        return RD_OTHER;
    _Atomic uint64_t *pwp = pageword(c, s, p);
    uint64_t pw1 = atomic_load_explicit(pwp, memory_order_acquire);
    uint32_t cls = pw_cls(pw1);
    if (pw_busy(pw1))
        return RD_RETRY;
    if (cls >= c->nclasses || j >= cls_slots(c, cls))
        return RD_OTHER;
    struct slot *sl = slot_at(c, s, p, cls, j);
    uint32_t room = cls_size(cls) - SLOT_HDR;
    uint32_t s1 = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
        return RD_RETRY;
    memcpy(m, &sl->m, sizeof(*m));
    uint32_t sum = __atomic_load_n(&sl->sum, __ATOMIC_RELAXED);
    uint32_t fl = m_flags(m), x = m_extra(m);
    char exp[8] = {0};
    int mine = (fl & SF_LIVE) && m_tag(m) == tag && m_klen(m) == klen && m_fits(m, room) &&
               (klen == 0 || memcmp(sl->data + x, key, klen) == 0);
    if (mine && !(fl & SF_GONE)) {
        if (x > 0)
            memcpy(exp, sl->data, 8);
        if (m_vlen(m) > 0) {
            if (buf_reserve(value, m_vlen(m), 0) != HKV_OK)
                return RD_NOMEM;
            memcpy(value->data, sl->data + x + klen, m_vlen(m));
        }
    }
    atomic_thread_fence(memory_order_acquire);
    if (__atomic_load_n(&sl->seq, __ATOMIC_RELAXED) != s1 ||
        atomic_load_explicit(pwp, memory_order_relaxed) != pw1)
        return RD_RETRY;
    if (!mine)
        return RD_OTHER;
    if (fl & SF_GONE)
        return RD_GONE;
    value->len = m_vlen(m);
    if (entry_sum(m, exp, key, value->data) != sum) {
        value->len = 0;
        return RD_CORRUPT;
    }
    *expire_at = m_expire_at(m, exp);
    *cls_out = cls;
    return RD_HIT;
}

int cache_get(struct cache *c, const char *key, size_t klen, uint64_t khash, int64_t now,
              struct hkv_buf *value, struct cache_hit *hit)
{
    buf_reset(value);
    if (c == NULL || (key == NULL && klen > 0))
        return HKV_ENOENT;
    uint64_t mh = cache_mix(khash);
    uint32_t s = mix_stripe(c, mh), tag = mix_tag(mh), home = tag_home(c, tag);
    const uint64_t *idx = index_of(c, s);
    struct slot_meta m;
    uint64_t hw = 0;
    int64_t expire_at = 0;
    uint32_t hcls = 0;
    int tries = READ_TRIES;
restart:
    for (uint32_t pos = home, n = 0; n < c->nidx; n++) {
        uint64_t w = __atomic_load_n(&idx[pos], __ATOMIC_ACQUIRE);
        if (w == 0)
            return HKV_ENOENT;
        if ((w & IW_VALID) && iw_tag(w) == tag) {
            switch (read_slot(c, s, w, key, klen, tag, value, &m, &expire_at, &hcls)) {
            case RD_HIT:
                hw = w;
                goto hit;
            case RD_GONE:
                return HKV_ENOENT;
            case RD_NOMEM:
                value->len = 0;
                return HKV_ENOMEM;
            case RD_CORRUPT:
                seg_count(&c->seg, CACHE_CTR_cache_corrupt_entries, 1);
                return HKV_ENOENT;
            case RD_OTHER:
                if (__atomic_load_n(&idx[pos], __ATOMIC_ACQUIRE) == w)
                    break;
                /* the word was swapped (a put) while its old entry was read
                 * and freed: read the word again, not the next one */
                __attribute__((fallthrough));
            case RD_RETRY:
                value->len = 0;
                if (--tries <= 0) { /* a writer died inside, or never lets go */
                    seg_count(&c->seg, CACHE_CTR_cache_corrupt_entries, 1);
                    return HKV_ENOENT;
                }
                seg_relax();
                goto restart;
            }
        }
        if (++pos == c->nidx)
            pos = 0;
    }
    return HKV_ENOENT;
hit:
    if (now >= m_keep_until(&m) || cache_forgotten(c, m.stamp)) {
        value->len = 0;
        return HKV_ENOENT;
    }
    entry_touch(c, s, iw_page(hw), iw_slot(hw), hcls);
    if (hit != NULL) {
        hit->negative = (m_flags(&m) & SF_NEG) != 0;
        hit->stamp = m.stamp;
        hit->fresh_until = m_fresh_until(&m);
        hit->keep_until = m_keep_until(&m);
        hit->stored_at = m.stored_at;
        hit->expire_at = expire_at;
    }
    return HKV_OK;
}

/* ---- writes ---- */

static uint32_t class_for(uint64_t need)
{
    uint32_t cls = 0;
    while (((uint64_t)SLOT_MIN << cls) < need)
        cls++;
    return cls;
}

/* Does the entry sl, found under the stripe lock, refuse a write stamped
 * `stamp` at now?  A newer stamp does, but a tombstone past its horizon
 * guards nothing: no fill that started before its delete can arrive now. */
static int guards(const struct slot *sl, hkv_stamp stamp, int64_t now)
{
    if ((m_flags(&sl->m) & SF_GONE) && now >= m_keep_until(&sl->m))
        return 0;
    return sl->m.stamp > stamp;
}

/* Stores the entry m (key, then val) unless the key's entry guards against
 * it (HKV_ESTALE).  Copy-on-write: the new version goes to another slot and
 * one store of the index word publishes it, so readers of a hot key being
 * updated keep reading the old version instead of spinning on an odd seq. */
static int store(struct cache *c, const char *key, size_t klen, uint64_t khash, const void *val,
                 size_t vlen, const struct slot_meta *m, int64_t expire_at, int64_t now)
{
    uint32_t cls = class_for(SLOT_HDR + m_extra(m) + klen + vlen);
    uint64_t mh = cache_mix(khash);
    uint32_t s = mix_stripe(c, mh), pos, ocls, page, j;
    int rc = cache_stripe_lock(c, s);
    if (rc != HKV_OK)
        return rc;
    struct slot *old = cache_table_find(c, s, mh, key, klen, &pos, &ocls);
    if (old != NULL && guards(old, m->stamp, now)) {
        cache_stripe_unlock(c, s);
        return HKV_ESTALE;
    }
    uint64_t *idx = index_of(c, s);
    uint64_t word = old != NULL ? __atomic_load_n(&idx[pos], __ATOMIC_RELAXED) : 0;
    struct slot *sl = cache_table_alloc(c, s, cls, &page, &j);
    cache_table_write(sl, m, expire_at, key, klen, val, vlen);
    if (old != NULL && old != sl && __atomic_load_n(&idx[pos], __ATOMIC_RELAXED) != word)
        old = cache_table_find(c, s, mh, key, klen, &pos, &ocls); /* the index shifted */
    if (old != NULL && old != sl)
        cache_table_swap(c, s, pos, mh, page, j, old, ocls);
    else
        cache_table_link(c, s, mh, page, j);
    cache_stripe_unlock(c, s);
    return HKV_OK;
}

int cache_put(struct cache *c, const struct cache_entry *in, int64_t now)
{
    if (c == NULL || in == NULL)
        return HKV_EINVAL;
    const char *key = in->key;
    size_t klen = in->klen, vlen = in->vlen;
    hkv_stamp stamp = in->stamp;
    if ((key == NULL && klen > 0) || (in->val == NULL && vlen > 0) || (in->negative && vlen > 0))
        return HKV_EINVAL;
    if (vlen > c->max_value || klen > KLEN_MAX || vlen > c->page_size ||
        SLOT_HDR + 8 + klen + vlen > c->page_size)
        return HKV_ETOOBIG;
    if (cache_forgotten(c, stamp))
        return HKV_ESTALE; /* from before a FLUSHALL */
    uint64_t mh = cache_mix(in->khash);
    uint32_t fl = SF_LIVE | (in->negative ? SF_NEG : 0) | (in->expire_at != 0 ? SF_EXP : 0);
    struct slot_meta m = {.stamp = stamp,
                          .stored_at = now,
                          .fresh_d = delta_of(in->fresh_until, now, 0),
                          .keep_d = delta_of(in->keep_until, now, 0),
                          .tf = mix_tag(mh) << 4 | fl,
                          .kv = (uint32_t)klen << VLEN_BITS | (uint32_t)vlen};
    return store(c, key, klen, in->khash, in->val, vlen, &m, in->expire_at, now);
}

int cache_invalidate(struct cache *c, const char *key, size_t klen, uint64_t khash,
                     hkv_stamp stamp, int64_t guard_until, int64_t now)
{
    if (c == NULL || (key == NULL && klen > 0))
        return HKV_EINVAL;
    if (klen > KLEN_MAX || SLOT_HDR + 8 + klen > c->page_size)
        return HKV_ETOOBIG;
    /* A tombstone: never served (SF_GONE), its stamp guards until
     * guard_until (kept in keep_until, which no reader looks at for it). */
    struct slot_meta m = {.stamp = stamp,
                          .stored_at = now,
                          .keep_d = delta_of(guard_until, now, 1),
                          .tf = mix_tag(cache_mix(khash)) << 4 | SF_LIVE | SF_GONE,
                          .kv = (uint32_t)klen << VLEN_BITS};
    int rc = store(c, key, klen, khash, NULL, 0, &m, 0, now);
    return rc == HKV_ESTALE ? HKV_OK : rc; /* a newer entry is left as it is */
}

/* ---- FLUSHALL ---- */

void cache_forget_below(struct cache *c, hkv_stamp floor)
{
    if (c == NULL || floor == 0)
        return;
    _Atomic uint64_t *f = &c->floors[stamp_writer(floor)];
    uint64_t cur = atomic_load_explicit(f, memory_order_relaxed);
    while (cur < floor &&
           !atomic_compare_exchange_weak_explicit(f, &cur, floor, memory_order_release,
                                                  memory_order_relaxed))
        ;
}

int cache_forgotten(const struct cache *c, hkv_stamp stamp)
{
    if (c == NULL || stamp == 0)
        return 0;
    return stamp < atomic_load_explicit(&c->floors[stamp_writer(stamp)], memory_order_acquire);
}

/* ---- counters ---- */

void cache_count(struct cache *c, enum cache_counter which, uint64_t n)
{
    if (c == NULL || (unsigned)which >= CACHE_CTR_COUNT)
        return;
    seg_count(&c->seg, which, n);
}

void cache_stats(struct cache *c, struct cache_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (c == NULL)
        return;
    seg_counters(&c->seg, out->counters, CACHE_CTR_COUNT);
    for (uint32_t s = 0; s < c->nstripes; s++) {
        struct stripe *st = stripe_at(c, s);
        out->entries += atomic_load_explicit(&st->entries, memory_order_relaxed);
        out->used_memory += atomic_load_explicit(&st->used, memory_order_relaxed);
    }
    out->capacity = (uint64_t)c->nstripes * c->pps * c->page_size;
}

void cache_reset_counters(struct cache *c)
{
    if (c != NULL)
        seg_reset_counters(&c->seg);
}
