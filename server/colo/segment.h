/*
 * segment.h - what every per-colo shared segment is built from: the colo
 * cache (cache.h) and the rate limiter (ratelimit.h) are each one segment.
 * A segment is a shared mapping the master makes before it forks
 * (core/shm.h: a memfd, never named) and every process of the colo reads
 * and writes.  Any of those processes may die at any instruction, so
 * nothing read from a segment is trusted; this module holds the parts of
 * that rule that do not depend on what the segment stores.
 *
 * Layout.  A segment opens with its owner's header, whose first member is a
 * struct seg_hdr (magic, layout version, header size, generation, mapping
 * size, checksum); then, 64-byte aligned, the counter rows; then, from
 * seg_first(), the owner's own regions.  The header holds offsets and
 * sizes, never pointers.  The owner's layout is a pure function of a few
 * inputs kept in its header (struct seg_kind.layout): the master computes
 * it once (seg_create), and a child recomputes it from the header's inputs
 * and compares field by field (seg_attach), so a child never trusts an
 * offset it could not have computed itself.
 *
 * Checksums.  One function (seg_sum_*: four multiply-xorshift lanes over
 * 8-byte words, about 1 cycle a byte) checks the header and whatever the
 * owner wants checked (the cache's entries).  Each step is a bijection of
 * its lane for a fixed input word, so any change confined to one word
 * always changes the result.  A check against torn and scribbled memory,
 * not against an adversary.
 *
 * Counter rows.  SEG_CTR_ROWS rows of SEG_ROW_U64 relaxed u64 counters, a
 * row per 128 bytes.  A process adds to the row its pid picks, so the
 * processes of a colo do not bounce one cache line per request; readers sum
 * the rows.  The owner decides what counter i means (at most SEG_ROW_U64).
 *
 * Stripe locks.  Writers serialise on robust process-shared mutexes kept in
 * the segment (typically one per stripe, a shard of the owner's data).  A
 * holder killed inside leaves EOWNERDEAD to the next locker: seg_lock and
 * seg_trylock then run the owner's repair (which puts the stripe back in a
 * consistent state, and counts it) before marking the mutex consistent, so
 * a locker that dies mid-repair leaves the repair to the next one.
 *
 * All functions may be called from any process attached to the segment,
 * concurrently, except seg_create (master, before fork) and seg_attach
 * (each child, once, before any other use).
 */
#ifndef HKV_SEGMENT_H
#define HKV_SEGMENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SEG_CTR_ROWS 16
#define SEG_ROW_U64 16       /* 128 bytes a row: two cache lines */
#define SEG_HDR_MAX 512      /* largest owner header (seg_create refuses more) */

/* The first member of every owner's header. */
struct seg_hdr {
    uint64_t magic;          /* the owner's (struct seg_kind) */
    uint32_t version;        /* the owner's layout version */
    uint32_t hdr_size;       /* sizeof the owner's whole header */
    uint64_t generation;     /* CLOCK_REALTIME ns at seg_create */
    uint64_t bytes;          /* the whole mapping (the owner's layout sets it) */
    uint64_t sum;            /* of the owner's whole header, this field excluded */
};

/* What kind of segment: the owner's constants and its layout.  layout fills
 * every field of hdr (the owner's header, zeroed but for its seg_hdr) from
 * the inputs it reads in `in`: the same header at seg_create, the header
 * read from the segment at seg_attach (read every input before writing
 * hdr: the two may be one).  It sets hdr->bytes (struct seg_hdr comes
 * first) and never touches magic, version, hdr_size, generation or sum.
 * HKV_OK, or HKV_EINVAL when the inputs cannot make a segment. */
struct seg_kind {
    const char *name;        /* of the memfd: shows in /proc/PID/maps */
    uint64_t magic;
    uint32_t version;
    uint32_t hdr_size;       /* <= SEG_HDR_MAX */
    int (*layout)(void *hdr, const void *in);
};

/* This process's view of a segment, embedded in the owner's view. */
struct seg {
    char *base;              /* the mapping (the owner's header) */
    size_t bytes;
    _Atomic uint64_t *ctr;   /* SEG_CTR_ROWS rows */
    uint32_t row;            /* the counter row this process adds to */
};

/* ---- the segment ---- */

/* Master, before fork: lays out the segment whose inputs are in hdr (the
 * owner's header, zeroed but for its inputs), stamps and seals hdr (magic,
 * version, size, generation, checksum), maps hdr->bytes of zeroes, copies
 * hdr in and fills s.  On success the owner's regions are zero: the owner
 * initialises its mutexes (seg_lock_init) and anything else that must not
 * start as zero.  HKV_OK, HKV_EINVAL (layout refused, or hdr_size out of
 * range; errno EINVAL), HKV_ENOMEM (errno says why; s is left empty). */
int seg_create(struct seg *s, const struct seg_kind *k, void *hdr);

/* A child, once after fork, on the view it inherited: checks the header
 * (seg_hdr_check), that it describes this mapping's size, and that the
 * owner's layout recomputed from the header's inputs gives the header
 * field by field; then picks this process's counter row.  HKV_OK or
 * HKV_ECORRUPT (s unchanged). */
int seg_attach(struct seg *s, const struct seg_kind *k);

/* Unmaps this process's view; s is left empty.  Safe on an empty s. */
void seg_destroy(struct seg *s);

/* Is hdr (avail readable bytes) a sound header of kind k: avail covers
 * hdr_size, and magic, version, hdr_size and checksum are right?  HKV_OK
 * or HKV_ECORRUPT.  Says nothing of the layout (seg_attach does). */
int seg_hdr_check(const void *hdr, size_t avail, const struct seg_kind *k);

/* Recomputes hdr's checksum over its hdr_size bytes (after a change). */
void seg_hdr_seal(void *hdr);

static inline uint64_t seg_align(uint64_t x, uint64_t a)
{
    return (x + a - 1) & ~(a - 1);
}

/* Where the owner's first region may start in a segment whose header is
 * hdr_size bytes: after the header and the counter rows, 64-byte aligned. */
static inline uint64_t seg_first(size_t hdr_size)
{
    return seg_align(hdr_size, 64) + (uint64_t)SEG_CTR_ROWS * SEG_ROW_U64 * 8;
}

/* ---- counter rows ---- */

/* Adds n to counter i (< SEG_ROW_U64) of this process's row: one relaxed
 * atomic add, no check (the owner's enum bounds i). */
static inline void seg_count(const struct seg *s, unsigned i, uint64_t n)
{
    atomic_fetch_add_explicit(&s->ctr[s->row * SEG_ROW_U64 + i], n, memory_order_relaxed);
}

/* Adds each counter i < n (<= SEG_ROW_U64), summed over the rows, to out[i]. */
void seg_counters(const struct seg *s, uint64_t *out, unsigned n);

/* Zeroes every counter of every row (CONFIG RESETSTAT).  Adds racing with
 * it may survive it: each is a relaxed store, not a snapshot. */
void seg_reset_counters(const struct seg *s);

/* ---- stripe locks ---- */

/* Called with the lock held when its previous holder died holding it:
 * puts what the lock guards back in a consistent state (and counts it). */
typedef void seg_repair_fn(void *arg);

/* Initialises a robust process-shared mutex in the segment (seg_create's
 * caller, before fork).  HKV_OK or HKV_ENOMEM. */
int seg_lock_init(pthread_mutex_t *mu);

/* Takes mu, waiting for a live holder.  HKV_OK: held; if its holder had
 * died, repair(arg) ran first (repair may be NULL: nothing to repair).
 * HKV_ECORRUPT: the mutex is unrecoverable or not a mutex (only if the
 * segment was scribbled on); not held. */
int seg_lock(pthread_mutex_t *mu, seg_repair_fn *repair, void *arg);

/* seg_lock without waiting: up to `tries` trylocks with a pause between.
 * HKV_OK (held, as seg_lock), HKV_EAGAIN (a live process held it each
 * time), HKV_ECORRUPT. */
int seg_trylock(pthread_mutex_t *mu, int tries, seg_repair_fn *repair, void *arg);

void seg_unlock(pthread_mutex_t *mu);

/* A spin-wait pause (x86 pause, arm yield). */
static inline void seg_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- checksums ---- */

/* A 64-bit finaliser (murmur3's): every input bit affects every output bit. */
static inline uint64_t seg_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* A running checksum: start from a seed (seg_sum_init), feed any number of
 * byte ranges (seg_sum_feed), finish once (seg_sum_final).  Feeding A then
 * B is not feeding AB: each range is padded to whole words with its length. */
struct seg_sum {
    uint64_t a, b, c, d;
};
#define SEG_SUM_K0 0xbf58476d1ce4e5b9ULL
#define SEG_SUM_K1 0x94d049bb133111ebULL
#define SEG_SUM_K2 0x9e3779b97f4a7c15ULL
#define SEG_SUM_K3 0xc2b2ae3d27d4eb4fULL

static inline void seg_sum_init(struct seg_sum *st, uint64_t seed)
{
    *st = (struct seg_sum){seed, seed + 1, seed + 2, seed + 3};
}
static inline uint64_t seg_sum_step(uint64_t lane, uint64_t w, uint64_t k)
{
    lane = (lane ^ w) * k;
    return lane ^ (lane >> 29);
}
static inline uint64_t seg_sum_word(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    memcpy(&w, p, n < 8 ? n : 8);
    return w ^ ((uint64_t)(n < 8 ? n : 8) << 56);
}
static inline void seg_sum_feed(struct seg_sum *st, const void *p, size_t n)
{
    const unsigned char *q = p;
    uint64_t a = st->a, b = st->b, c = st->c, d = st->d;
    for (; n >= 32; q += 32, n -= 32) {
        uint64_t w0, w1, w2, w3;
        memcpy(&w0, q, 8);
        memcpy(&w1, q + 8, 8);
        memcpy(&w2, q + 16, 8);
        memcpy(&w3, q + 24, 8);
        a = seg_sum_step(a, w0, SEG_SUM_K0);
        b = seg_sum_step(b, w1, SEG_SUM_K1);
        c = seg_sum_step(c, w2, SEG_SUM_K2);
        d = seg_sum_step(d, w3, SEG_SUM_K3);
    }
    if (n > 0)
        a = seg_sum_step(a, seg_sum_word(q, n), SEG_SUM_K0);
    if (n > 8)
        b = seg_sum_step(b, seg_sum_word(q + 8, n - 8), SEG_SUM_K1);
    if (n > 16)
        c = seg_sum_step(c, seg_sum_word(q + 16, n - 16), SEG_SUM_K2);
    if (n > 24)
        d = seg_sum_step(d, seg_sum_word(q + 24, n - 24), SEG_SUM_K3);
    st->a = a;
    st->b = b;
    st->c = c;
    st->d = d;
}
static inline uint64_t seg_sum_final(const struct seg_sum *st)
{
    uint64_t h = st->a ^ (st->b << 17 | st->b >> 47) ^ (st->c << 31 | st->c >> 33) ^
                 (st->d << 47 | st->d >> 17);
    return seg_mix(h);
}
/* The checksum of one byte range. */
static inline uint64_t seg_sum_bytes(uint64_t seed, const void *p, size_t n)
{
    struct seg_sum st;
    seg_sum_init(&st, seed);
    seg_sum_feed(&st, p, n);
    return seg_sum_final(&st);
}

#endif
