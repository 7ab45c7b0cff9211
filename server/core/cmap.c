/*
 * cmap.c - the cluster map segment, its validation and its lookups; see
 * cmap.h.  (Saving and loading the table is cmap_file.c.)
 *
 * The segment is a seqlock over two table buffers.  The one writer (the
 * agent) makes `seq` odd, fills the buffer readers are not pointed at, flips
 * `active` to it and makes `seq` even again.  A reader loads `seq` (s1),
 * `active`, copies that buffer, and loads `seq` again (s2).  The buffer it
 * copied is written again only by the publish after the one that flipped
 * away from it, which starts at s1 + 2 or later, so the copy is whole when
 * s2 <= s1 + 1: a reader is not stopped by a publish in progress, and a
 * writer that died mid-publish (seq left odd) stops nobody.  The next writer
 * starts from an odd seq by adding 2, so readers still see it move.
 *
 * Both sides touch the buffers only with relaxed atomic word copies (the
 * payload of a seqlock, Boehm MSPC'12): a racing copy is discarded, never
 * undefined.  Only the used part of a table is copied (its leaves up to
 * nleaves, which a reader clamps before it trusts it).  A reader that keeps
 * losing the race (a writer publishing in a tight loop) gives up after
 * SNAP_TRIES and reports nothing new: its caller keeps routing from the copy
 * it has and polls again.  Health is a small single-buffer seqlock; a reader
 * that keeps losing takes a field-by-field copy, each number whole.
 */
#include "cmap.h"

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/core/shm.h"
#include "server/core/topo.h"

#define CMAP_MAGIC 0x70616d63766b6801ULL /* "\x01hkvcmap" */
#define CMAP_LAYOUT 2
#define SNAP_TRIES 200
#define HEALTH_TRIES 1000

struct cmap {
    uint64_t magic;
    uint32_t layout;
    uint32_t pad;
    _Atomic uint64_t seq;          /* odd while a publish is under way */
    _Atomic uint32_t active;       /* the buffer readers copy: 0 or 1 */
    uint32_t pad2;
    _Atomic int64_t revision;      /* the active buffer's revision */
    _Atomic uint64_t hseq;         /* health's seqlock */
    struct cmap_health health;
    struct cmap_table buf[2];
};

_Static_assert(sizeof(struct cmap_table) % 8 == 0, "tables are copied in words");
_Static_assert(sizeof(struct cmap_health) % 8 == 0, "health is copied in words");
_Static_assert(sizeof(struct cmap_leaf) % 8 == 0, "leaves are copied in words");

/* ---- relaxed word copies ------------------------------------------------------ */

static void load_words(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (size_t i = 0; i < bytes / 8; i++)
        d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static void store_words(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (size_t i = 0; i < bytes / 8; i++)
        __atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

/* The used part of a table: header, each pool's leaves up to n, owners. */
static void copy_table(struct cmap_table *dst, const struct cmap_table *src,
                       void (*copy)(void *, const void *, size_t), int clamp_from_dst)
{
    size_t head = offsetof(struct cmap_table, leaves);
    copy(dst, src, head);
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        uint32_t n = clamp_from_dst ? dst->nleaves[p] : src->nleaves[p];
        if (n > CMAP_MAX_LEAVES)
            n = CMAP_MAX_LEAVES; /* a torn read; the seq check throws it away */
        copy(dst->leaves[p], src->leaves[p], n * sizeof(struct cmap_leaf));
    }
    copy(dst->owners, src->owners, sizeof(dst->owners));
}

/* ---- the segment -------------------------------------------------------------- */

struct cmap *cmap_create(void)
{
    struct cmap *m = shm_map("hotkvd-cmap", sizeof(struct cmap));
    if (m == NULL)
        return NULL;
    m->magic = CMAP_MAGIC;
    m->layout = CMAP_LAYOUT;
    return m;
}

void cmap_destroy(struct cmap **m)
{
    if (*m != NULL)
        shm_unmap(*m, sizeof(struct cmap));
    *m = NULL;
}

static int sane(const struct cmap *m)
{
    return m != NULL && m->magic == CMAP_MAGIC && m->layout == CMAP_LAYOUT;
}

int64_t cmap_revision(const struct cmap *m)
{
    if (!sane(m))
        return 0;
    return atomic_load_explicit(&m->revision, memory_order_acquire);
}

int64_t cmap_snapshot(const struct cmap *m, struct cmap_table *out)
{
    if (!sane(m))
        return 0;
    struct cmap *w = (struct cmap *)m; /* atomics are loaded, never stored */
    for (int tries = 0; tries < SNAP_TRIES; tries++) {
        uint64_t s1 = atomic_load_explicit(&w->seq, memory_order_acquire);
        uint32_t a = atomic_load_explicit(&w->active, memory_order_acquire) & 1;
        copy_table(out, &m->buf[a], load_words, 1);
        atomic_thread_fence(memory_order_acquire);
        uint64_t s2 = atomic_load_explicit(&w->seq, memory_order_relaxed);
        if (s2 - s1 <= 1)
            return out->revision < 0 ? 0 : out->revision;
        if (tries > 2)
            sched_yield();
    }
    return 0;
}

int cmap_publish(struct cmap *m, const struct cmap_table *t)
{
    char why[128];
    if (!sane(m) || cmap_validate(t, why, sizeof(why)) != HKV_OK)
        return HKV_EINVAL;
    uint64_t s = atomic_load_explicit(&m->seq, memory_order_relaxed);
    /* odd from here on; a dead writer's odd seq moves on by 2 */
    atomic_store_explicit(&m->seq, s + ((s & 1) ? 2 : 1), memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    uint32_t next = (atomic_load_explicit(&m->active, memory_order_relaxed) & 1) ^ 1;
    copy_table(&m->buf[next], t, store_words, 0);
    atomic_store_explicit(&m->active, next, memory_order_release);
    atomic_store_explicit(&m->revision, t->revision, memory_order_release);
    atomic_store_explicit(&m->seq, s + ((s & 1) ? 3 : 2), memory_order_release);
    return HKV_OK;
}

void cmap_health_get(const struct cmap *m, struct cmap_health *out)
{
    memset(out, 0, sizeof(*out));
    if (!sane(m))
        return;
    struct cmap *w = (struct cmap *)m;
    for (int tries = 0; tries < HEALTH_TRIES; tries++) {
        uint64_t s1 = atomic_load_explicit(&w->hseq, memory_order_acquire);
        if (s1 & 1) {
            sched_yield();
            continue;
        }
        load_words(out, &m->health, sizeof(*out));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&w->hseq, memory_order_relaxed) == s1)
            return;
    }
    load_words(out, &m->health, sizeof(*out)); /* each field whole, maybe not together */
}

void cmap_health_set(struct cmap *m, const struct cmap_health *h)
{
    if (!sane(m))
        return;
    uint64_t s = atomic_load_explicit(&m->hseq, memory_order_relaxed);
    atomic_store_explicit(&m->hseq, s + ((s & 1) ? 2 : 1), memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    store_words(&m->health, h, sizeof(*h));
    atomic_store_explicit(&m->hseq, s + ((s & 1) ? 3 : 2), memory_order_release);
}

/* ---- validation --------------------------------------------------------------- */

/* Fills why with the reason and returns HKV_EINVAL. */
#define BAD(...)                                       \
    do {                                               \
        if (why != NULL && whylen > 0)                 \
            snprintf(why, whylen, __VA_ARGS__);        \
        return HKV_EINVAL;                             \
    } while (0)

static int owner_of_pool(const struct cmap_table *t, unsigned n, int pool)
{
    return n >= 1 && n <= CMAP_MAX_OWNERS && t->owners[n].number == n && t->owners[n].pool == pool;
}

int cmap_validate(const struct cmap_table *t, char *why, size_t whylen)
{
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (t->owners[n].number != 0 &&
            (t->owners[n].number != n || t->owners[n].pool >= CMAP_NPOOLS))
            BAD("owner row %u: number %u, pool %u", n, t->owners[n].number, t->owners[n].pool);
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        const char *pool = topo_pool_name((enum cfg_pool)p);
        uint32_t n = t->nleaves[p];
        if (n > CMAP_MAX_LEAVES)
            BAD("pool %s: %u leaves, more than %u", pool, n, CMAP_MAX_LEAVES);
        for (uint32_t i = 1; i < n; i++)
            if (t->leaves[p][i].start < t->leaves[p][i - 1].start)
                BAD("pool %s: leaf %u: start 0x%08x is below the one before it (unsorted)", pool,
                    i, t->leaves[p][i].start);
        uint64_t next = 0; /* where the next leaf must start */
        for (uint32_t i = 0; i < n; i++) {
            const struct cmap_leaf *l = &t->leaves[p][i];
            if (l->bits > CMAP_MAX_BITS)
                BAD("pool %s: leaf %u has %u bits (at most %d)", pool, i, l->bits, CMAP_MAX_BITS);
            uint64_t span = 1ULL << (32 - l->bits);
            if ((uint64_t)l->start % span != 0)
                BAD("pool %s: leaf %u: start 0x%08x does not fit %u bits", pool, i, l->start,
                    l->bits);
            if (l->start < next)
                BAD("pool %s: leaf %u (0x%08x/%u) overlaps the one before it", pool, i, l->start,
                    l->bits);
            if (l->start > next)
                BAD("pool %s: gap before leaf %u (0x%08x/%u)", pool, i, l->start, l->bits);
            next += span;
            if (!owner_of_pool(t, l->owner, p))
                BAD("pool %s: leaf %u (0x%08x/%u) names owner %u, not an owner of the pool", pool,
                    i, l->start, l->bits, l->owner);
            if (l->state == CMAP_MOVING) {
                if (!owner_of_pool(t, l->to, p) || l->to == l->owner)
                    BAD("pool %s: leaf %u (0x%08x/%u) moves to %u, not another owner of the pool",
                        pool, i, l->start, l->bits, l->to);
            } else if (l->state != CMAP_SERVING) {
                BAD("pool %s: leaf %u: unknown state %u", pool, i, l->state);
            }
            if (l->nisr > CMAP_MAX_ISR)
                BAD("pool %s: leaf %u (0x%08x/%u): %u in-sync followers (at most %d)", pool, i,
                    l->start, l->bits, l->nisr, CMAP_MAX_ISR);
            for (unsigned k = 0; k < l->nisr; k++) {
                if (!owner_of_pool(t, l->isr[k], p) || l->isr[k] == l->owner)
                    BAD("pool %s: leaf %u (0x%08x/%u): in-sync follower %u is not another owner "
                        "of the pool", pool, i, l->start, l->bits, l->isr[k]);
                for (unsigned j = 0; j < k; j++)
                    if (l->isr[j] == l->isr[k])
                        BAD("pool %s: leaf %u (0x%08x/%u): in-sync follower %u named twice", pool,
                            i, l->start, l->bits, l->isr[k]);
            }
        }
        if (n > 0 && next != (1ULL << 32))
            BAD("pool %s: gap after the last leaf (%u leaves)", pool, n);
    }
    return HKV_OK;
}

/* ---- lookups ------------------------------------------------------------------ */

const struct cmap_leaf *cmap_lookup(const struct cmap_table *t, enum cfg_pool pool,
                                    uint64_t place)
{
    if ((int)pool < 0 || pool >= CMAP_NPOOLS)
        return NULL;
    uint32_t n = t->nleaves[pool];
    if (n == 0 || n > CMAP_MAX_LEAVES)
        return NULL;
    uint32_t h = (uint32_t)(place >> 32);
    /* the last leaf whose start <= h */
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->leaves[pool][mid].start <= h)
            lo = mid;
        else
            hi = mid;
    }
    return &t->leaves[pool][lo];
}

const struct cmap_owner *cmap_owner(const struct cmap_table *t, unsigned n)
{
    if (n < 1 || n > CMAP_MAX_OWNERS || t->owners[n].number != n)
        return NULL;
    return &t->owners[n];
}

unsigned cmap_owner_by_id(const struct cmap_table *t, const char *host, enum cfg_pool pool, int k)
{
    if (host == NULL || k < 0)
        return 0;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        const struct cmap_owner *o = &t->owners[n];
        if (o->number == n && o->pool == pool && o->index == k &&
            strncmp(o->host, host, sizeof(o->host)) == 0)
            return n;
    }
    return 0;
}
