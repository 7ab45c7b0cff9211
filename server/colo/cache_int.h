/*
 * cache_int.h - private to server/colo/cache*.c: the layout of the colo
 * segment and the helpers its files share.  Nothing outside the cache module
 * includes this (tests reach internals only through server/colo/cache_test.h).
 *
 * Layout (every region 64-byte aligned, the pages 4096-aligned; the header
 * holds each region's offset, never a pointer).  The header and the counter
 * rows are the segment module's (segment.h); the rest is the cache's:
 *
 *   header      struct seg_hdr (magic, layout version, generation, the
 *               mapping's size, checksum), then sizes and region offsets
 *   counters    segment.h's counter rows, CACHE_CTR_COUNT of each row used
 *   stripes     nstripes x struct stripe: the robust writer mutex and the
 *               allocator state of the stripe (its own cache lines)
 *   pagewords   nstripes x pps u64: a page's class and version (a seqlock
 *               around re-assigning the page to another class)
 *   pagelive    nstripes x pps u32: live entries per page (writers only)
 *   refs        nstripes x pps x (page_size / SLOT_MIN) bytes: the CLOCK
 *               referenced bits, one byte per 128-byte unit of a page (a
 *               slot's is the byte of the unit it starts at), outside the
 *               entries so that a reader never writes into an entry
 *   index       nstripes x nidx u64: open addressing, linear probing,
 *               backward-shift deletion (no tombstones), one partition per
 *               stripe
 *   locks       nlocks x struct rlock (16 bytes): refresh locks,
 *               direct-mapped by key hash
 *   sketch      decay clock, top-K mutex and table, count-min counters
 *   floors      FLUSH_WRITERS u64: per writer (an owner: the low bits of a
 *               stamp), the version of its last FLUSHALL; an entry or a put
 *               stamped below its writer's floor is from before that flush
 *   health      CACHE_HEALTH_OWNERS x struct hslot: each owner's health
 *               word and probe word (cache_health.c)
 *   pages       nstripes x pps pages of page_size bytes: the slabs
 *
 * A stripe is a shard: a key's stripe (from its hash) owns the key's index
 * partition and a fixed run of pages, and every write to either happens
 * under the stripe's mutex.  So a writer never needs a second lock,
 * eviction never crosses stripes, and repairing a stripe after a writer
 * died is local to it.
 */
#ifndef HKV_CACHE_INT_H
#define HKV_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/colo/cache.h"
#include "server/colo/cache_health.h"
#include "server/colo/segment.h"

#define CACHE_MAGIC 0x6f6c6f63766b6824ULL /* "$hkvcolo" */
#define CACHE_LAYOUT_VERSION 6

#define SLOT_MIN 128          /* smallest slot class; classes double */
#define NCLASS_MAX 16
#define PAGE_MIN 4096
#define PAGE_MAX (1u << 20)
#define CLS_NONE 0xffu        /* page not given to any class yet */

#define READ_TRIES 64         /* a reader's bounded retries, then a miss */

#define FLUSH_WRITERS (STAMP_WRITER_MAX + 1) /* one flush floor per stamp writer */

#define CMS_DEPTH 4
#define CMS_WIDTH 4096        /* power of 2 */
#define TOPK 32
#define TOPK_KEY 128
#define SKETCH_DECAY_MS 1000

/* ---- entries ----
 *
 * An entry is a 40-byte header, then (only when the key has an expiry) the
 * expiry as 8 bytes, then the key, then the value.  The header used to be
 * 80 bytes (64-bit times, hash, lengths and checksum); at 80 a 64-byte value
 * with a 16-byte key needed a 256-byte slot, at 40 it fits a 128-byte one.
 * What was made narrower, and why it is enough:
 * - seq and sum are 32 bits: seq only has to differ between the two loads of
 *   one read (a wrap needs 2^31 writes of one slot during one memcpy), and a
 *   32-bit checksum misses a scribble with probability 2^-32 (torn reads are
 *   the seqlock's, not the checksum's, to catch);
 * - fresh_until and keep_until are signed 32-bit ms offsets from stored_at
 *   (+-24.8 days).  A value's offset past that is clamped down (the entry
 *   goes stale or missing sooner: a refetch, never a too-old value); a
 *   tombstone's becomes DELTA_NEVER (it guards forever: only newer stamps,
 *   which always may, replace it), so clamping never ends a guard early;
 * - the key's hash is kept as its 28-bit index tag (what the index word
 *   holds and what finds the key's home): the key's bytes prove identity;
 * - klen is 12 bits (keys up to KLEN_MAX bytes are cached; a longer key is
 *   HKV_ETOOBIG, never cached, for puts and tombstones alike) and vlen 20
 *   bits (a value never exceeds a page, at most 1 MB);
 * - the expiry (unix ms) is stored only when there is one (SF_EXP). */

/* Flags of an entry. */
#define SF_LIVE 1u       /* holds a key (else the slot is free) */
#define SF_NEG 2u        /* an authoritative "no such key" */
#define SF_GONE 4u       /* a tombstone: never served, its stamp guards puts
                          * until its keep_until (cache_invalidate) */
#define SF_EXP 8u        /* an 8-byte expiry precedes the key */
#define SF_MASK 0xfu

#define TAG_BITS 28
#define KLEN_MAX 4095u
#define VLEN_BITS 20
#define VLEN_MASK ((1u << VLEN_BITS) - 1)
#define DELTA_NEVER INT32_MAX /* a tombstone's guard with no end */

/* The checksummed header of an entry (32 bytes, all of it summed).  Readers
 * never write into an entry: its CLOCK bit is in the refs region. */
struct slot_meta {
    uint64_t stamp;
    int64_t stored_at;       /* monotonic ms */
    int32_t fresh_d, keep_d; /* fresh_until, keep_until - stored_at */
    uint32_t tf;             /* index tag << 4 | flags */
    uint32_t kv;             /* klen << VLEN_BITS | vlen */
};

/* An entry: seq (odd while written), checksum, meta, then [expiry] key value. */
struct slot {
    uint32_t seq;        /* only through __atomic builtins */
    uint32_t sum;
    struct slot_meta m;
    char data[];
};
#define SLOT_HDR ((uint32_t)sizeof(struct slot)) /* 40 */

static inline uint32_t m_flags(const struct slot_meta *m) { return m->tf & SF_MASK; }
static inline uint32_t m_tag(const struct slot_meta *m) { return m->tf >> 4; }
static inline uint32_t m_klen(const struct slot_meta *m) { return m->kv >> VLEN_BITS; }
static inline uint32_t m_vlen(const struct slot_meta *m) { return m->kv & VLEN_MASK; }
/* Bytes before the key: the expiry, when there is one. */
static inline uint32_t m_extra(const struct slot_meta *m)
{
    return (m->tf & SF_EXP) ? 8u : 0u;
}
/* Do the expiry, key and value fit `room` bytes after the header? */
static inline int m_fits(const struct slot_meta *m, uint32_t room)
{
    return m_extra(m) + m_klen(m) + m_vlen(m) <= room;
}
static inline int32_t delta_of(int64_t t, int64_t base, int never_ok)
{
    int64_t d;
    if (__builtin_sub_overflow(t, base, &d))
        d = t < base ? INT64_MIN : INT64_MAX;
    if (d < INT32_MIN)
        return INT32_MIN;
    if (d >= DELTA_NEVER)
        return never_ok ? DELTA_NEVER : DELTA_NEVER - 1;
    return (int32_t)d;
}
static inline int64_t delta_at(const struct slot_meta *m, int32_t d)
{
    return d == DELTA_NEVER ? INT64_MAX : m->stored_at + d;
}
static inline int64_t m_fresh_until(const struct slot_meta *m) { return delta_at(m, m->fresh_d); }
static inline int64_t m_keep_until(const struct slot_meta *m) { return delta_at(m, m->keep_d); }
static inline int64_t m_expire_at(const struct slot_meta *m, const char *data)
{
    int64_t x = 0;
    if (m->tf & SF_EXP)
        memcpy(&x, data, 8);
    return x;
}

/* ---- index words ----
 * bit 63 valid | bits 59-32 tag (TAG_BITS of the mixed hash, which also give
 * the home position; the entry keeps the same tag) | bits 31-16 page within
 * the stripe | 15-0 slot. */
#define IW_VALID (1ULL << 63)
static inline uint64_t iw_make(uint32_t tag, uint32_t page, uint32_t slot)
{
    return IW_VALID | ((uint64_t)tag << 32) | ((uint64_t)page << 16) | slot;
}
static inline uint32_t iw_tag(uint64_t w) { return (uint32_t)(w >> 32) & ((1u << TAG_BITS) - 1); }
static inline uint32_t iw_page(uint64_t w) { return (uint32_t)(w >> 16) & 0xffffu; }
static inline uint32_t iw_slot(uint64_t w) { return (uint32_t)w & 0xffffu; }

/* ---- page words ----  (version << 8) | class; version odd while the page
 * is being re-assigned (readers treat it like an odd entry seq). */
static inline uint32_t pw_cls(uint64_t pw) { return (uint32_t)pw & 0xffu; }
static inline int pw_busy(uint64_t pw) { return (int)((pw >> 8) & 1); }

/* ---- the regions ---- */

/* The inputs of the layout are seg.bytes (cache-memory), max_value and
 * hot_sample; everything else is computed from them (cache.c, layout). */
struct cache_hdr {
    struct seg_hdr seg;
    uint64_t max_value;
    uint32_t hot_sample, nstripes;
    uint32_t pps, page_size;         /* pages per stripe, bytes per page */
    uint32_t nclasses, nidx;         /* slot classes, index words per stripe */
    uint32_t nlocks, stripe_size;
    uint64_t off_stripes, off_pagewords, off_pagelive, off_refs, off_index, off_locks, off_sketch,
        off_floors, off_health, off_pages, end;
};

struct stripe {
    pthread_mutex_t mu;
    uint32_t npages[NCLASS_MAX];     /* pages given to each class */
    uint32_t nfree[NCLASS_MAX];      /* free slots of each class */
    uint32_t hand[NCLASS_MAX];       /* CLOCK hand: page << 16 | slot */
    uint32_t hint[NCLASS_MAX];       /* where to look for a free slot */
    uint32_t ev[NCLASS_MAX];         /* evictions of each class in this window */
    uint32_t evwin;                  /* evictions of all classes in this window */
    uint32_t unassigned;             /* pages no class has yet */
    uint32_t wip;                    /* test hook: a write left open */
    _Atomic uint64_t entries, used;  /* read by cache_stats without the lock */
} __attribute__((aligned(64)));

/* A refresh lock.  Who holds it and until when is one word, so every change
 * of the lock is one CAS on w: bits 63-24 expiry (monotonic ms, low 40 bits,
 * compared modulo 2^40: wrap-safe for 2^39 ms, 17 years), bits 23-12 key tag
 * (never 0), bits 11-0 token fingerprint; 0 = free.  `holder` is the whole
 * token of the holder (pid << 32 | sequence), stored after the CAS that took
 * the lock: only a hint, trusted only while its fingerprint matches w's. */
struct rlock {
    _Atomic uint64_t w;
    _Atomic uint64_t holder;
};

/* One owner's health in the colo (cache_health.c): two self-checking words,
 * each changed by one CAS. */
struct hslot {
    _Atomic uint64_t word;           /* answering / silent, since when, episode */
    _Atomic uint64_t probe;          /* when a probe of it was last claimed */
};

struct topk_ent {
    uint64_t khash;                  /* 0 = empty; atomic loads on the read path */
    uint32_t klen;
    char key[TOPK_KEY];
};

struct sketch {
    _Atomic int64_t epoch;           /* monotonic ms of the last halving */
    _Atomic uint64_t min_hint;       /* smallest tracked count, 0 if room */
    pthread_mutex_t mu;              /* the top-K table; trylock only */
    struct topk_ent top[TOPK];
    _Atomic uint32_t cms[CMS_DEPTH][CMS_WIDTH] __attribute__((aligned(64)));
};

/* This process's view: pointers made from the header's offsets. */
struct cache {
    struct seg seg;                  /* the mapping and this process's counter row */
    struct cache_hdr *hdr;
    char *stripes;                   /* hdr->stripe_size apart */
    _Atomic uint64_t *pagewords;
    uint32_t *pagelive;
    uint8_t *refs;                   /* only through __atomic builtins */
    uint64_t *index;                 /* only through __atomic builtins */
    struct rlock *locks;
    struct sketch *sk;
    _Atomic uint64_t *floors;        /* FLUSH_WRITERS flush floors (cache_forget_below) */
    struct hslot *health;            /* CACHE_HEALTH_OWNERS owners' health (cache_health.c) */
    char *pages;
    uint32_t nstripes, pps, page_size, nclasses, nidx, nlocks, hot_sample;
    uint64_t max_value;
    uint64_t alive_w;                /* a lock word whose holder was seen alive ... */
    int64_t alive_at;                /* ... at this time (kill(2) once per ALIVE_MEMO_MS) */
};

/* ---- small shared helpers ---- */

/* A second mix of the caller's hash, so the cache does not depend on which
 * bits of router_hash are good. */
static inline uint64_t cache_mix(uint64_t h)
{
    return seg_mix(h);
}
static inline uint32_t mix_stripe(const struct cache *c, uint64_t m)
{
    return (uint32_t)m & (c->nstripes - 1);
}
static inline uint32_t mix_tag(uint64_t m) { return (uint32_t)(m >> (64 - TAG_BITS)); }
static inline uint32_t tag_home(const struct cache *c, uint32_t tag)
{
    return (uint32_t)(((uint64_t)tag * c->nidx) >> TAG_BITS);
}

static inline struct stripe *stripe_at(const struct cache *c, uint32_t s)
{
    return (struct stripe *)(c->stripes + (size_t)s * c->hdr->stripe_size);
}
static inline _Atomic uint64_t *pageword(const struct cache *c, uint32_t s, uint32_t p)
{
    return &c->pagewords[(size_t)s * c->pps + p];
}
static inline uint64_t *index_of(const struct cache *c, uint32_t s)
{
    return &c->index[(size_t)s * c->nidx];
}
static inline uint32_t cls_size(uint32_t cls) { return SLOT_MIN << cls; }
static inline uint32_t cls_slots(const struct cache *c, uint32_t cls)
{
    return c->page_size / cls_size(cls);
}
static inline struct slot *slot_at(const struct cache *c, uint32_t s, uint32_t p, uint32_t cls,
                                   uint32_t j)
{
    return (struct slot *)(c->pages + ((size_t)s * c->pps + p) * c->page_size +
                           (size_t)j * cls_size(cls));
}

/* The entry checksum (segment.h's, folded to 32 bits), fed the meta, the
 * expiry when there is one (exp: 8 bytes), the key and the value in turn. */
static inline uint32_t entry_sum(const struct slot_meta *m, const void *exp, const void *key,
                                 const void *val)
{
    struct seg_sum st = {0x686b7664ULL, 1, 2, 3};
    seg_sum_feed(&st, m, sizeof(*m));
    if (m->tf & SF_EXP)
        seg_sum_feed(&st, exp, 8);
    seg_sum_feed(&st, key, m_klen(m));
    seg_sum_feed(&st, val, m_vlen(m));
    uint64_t h = seg_sum_final(&st);
    return (uint32_t)(h ^ (h >> 32));
}

/* ---- the writer's side of an entry's seqlock (under the stripe mutex) ---- */

static inline uint32_t seq_load(const struct slot *sl)
{
    return __atomic_load_n(&sl->seq, __ATOMIC_RELAXED);
}

/* Opens a slot for writing: seq odd, then a release fence so no store of
 * the body can become visible before the odd seq. */
static inline uint32_t seq_open(struct slot *sl)
{
    uint32_t odd = (seq_load(sl) + 1) | 1;
    __atomic_store_n(&sl->seq, odd, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_release);
    return odd;
}

static inline void seq_close(struct slot *sl, uint32_t odd)
{
    __atomic_store_n(&sl->seq, odd + 1, __ATOMIC_RELEASE);
}

/* ---- CLOCK referenced bits ---- */

/* The referenced byte of slot j of class cls in page p: the byte of the
 * 128-byte unit the slot starts at.  Any (p < pps, j, cls) a reader could
 * have validated names a byte of page p's row, whatever the page holds now. */
static inline uint8_t *ref_at(const struct cache *c, uint32_t s, uint32_t p, uint32_t j,
                              uint32_t cls)
{
    uint32_t units = c->page_size / SLOT_MIN;
    return &c->refs[((size_t)s * c->pps + p) * units + ((j << cls) & (units - 1))];
}

/* What a reader does after a hit on the entry its validated page and index
 * words named (page p, slot j of class cls): mark it referenced.  The mark
 * is made after the seqlock check, so the page may have changed hands in
 * between; that is why the bit lives outside the entries.  A late mark
 * lands on a referenced byte of the same page, which is only ever a hint:
 * at worst another entry of the page gets one more turn of the CLOCK hand
 * (or a byte no slot of the page's current class starts at is set, and
 * cleared when the page next changes class).  It never touches an entry,
 * a checksum or any memory outside the refs region. */
static inline void entry_touch(const struct cache *c, uint32_t s, uint32_t p, uint32_t j,
                               uint32_t cls)
{
    uint8_t *r = ref_at(c, s, p, j, cls);
    if (__atomic_load_n(r, __ATOMIC_RELAXED) == 0) /* write only when it changes */
        __atomic_store_n(r, 1, __ATOMIC_RELAXED);
}

/* ---- across the cache files ---- */

/* cache_lock.c: the stripe's robust mutex (segment.h's seg_lock).  HKV_OK
 * (held; a dead holder's damage repaired by cache_table_repair and counted in
 * cache_lock_repairs) or HKV_ECORRUPT (unrecoverable). */
int cache_stripe_lock(struct cache *c, uint32_t s);
void cache_stripe_unlock(struct cache *c, uint32_t s);

/* cache_table.c: under the stripe lock. */
struct slot *cache_table_find(struct cache *c, uint32_t s, uint64_t m, const char *key, size_t klen,
                              uint32_t *pos, uint32_t *cls);
/* klen and vlen are m's (passed as the caller's size_t, not m's narrow
 * fields: a copy whose length the compiler sees bounded is inlined as
 * rep movs, which costs more than memcpy for short keys and values). */
void cache_table_write(struct slot *sl, const struct slot_meta *m, int64_t expire_at,
                       const void *key, size_t klen, const void *val, size_t vlen);
void cache_table_drop(struct cache *c, uint32_t s, uint32_t pos, struct slot *sl, uint32_t cls);
struct slot *cache_table_alloc(struct cache *c, uint32_t s, uint32_t cls, uint32_t *page,
                               uint32_t *idx);
void cache_table_link(struct cache *c, uint32_t s, uint64_t m, uint32_t page, uint32_t idx);
void cache_table_swap(struct cache *c, uint32_t s, uint32_t pos, uint64_t m, uint32_t page,
                      uint32_t idx, struct slot *old, uint32_t ocls);
void cache_table_repair(struct cache *c, uint32_t s);
void cache_table_init_stripe(struct cache *c, uint32_t s);
/* Gives page p of stripe s to class cls now (its entries evicted). */
void cache_table_give_page(struct cache *c, uint32_t s, uint32_t p, uint32_t cls);

#endif
