/*
 * changes.c - the colo's change ring and the edges' wakeups (changes.h).
 *
 * Layout (segment.h: header, counter rows, then ours): nedges flag lines
 * (armed, signalled; 64 bytes each, so edges do not share a line), the head
 * (records ever claimed) on a line of its own, then CHANGES_SLOTS records.
 *
 * Publishing is a per-slot seqlock with many writers: a writer claims
 * position p with one fetch_add on the head, marks the slot odd (2p+1),
 * stores the fields with release, then marks it 2p+2.  A reader at p takes
 * the record only if the slot says 2p+2 before and after it read the fields
 * and the head shows nobody has claimed p + CHANGES_SLOTS (the next user of
 * that slot) yet: reading any field a later writer stored would, through
 * release/acquire, show that writer's claim on the head.  A slot below 2p+2
 * is not written yet (PENDING: its writer signals when done, or died, which
 * the reader's caller bounds with changes_skip); above it, the reader was
 * lapped (LOST).
 *
 * Signals: the writer's store of the record, a seq_cst fence, then the load
 * of each edge's armed flag; an edge arming stores the flag, fences, then
 * reads the head (and its readers read the cache).  Either the writer sees
 * the flag, or the edge's reads see the write (Dekker's pattern with two
 * fences).  An edge acknowledges by draining its eventfd FIRST and clearing
 * "signalled" after: a writer that still found it set published its record
 * before the reader's exchange, so the reader's next read of the ring sees
 * it; a writer after the exchange signals again.
 */
#include "server/colo/changes.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server/colo/segment.h"

#define CH_MAGIC 0x736567616e68636bULL /* "kchanges" */
#define CH_LAYOUT_VERSION 2
#define CH_MASK (CHANGES_SLOTS - 1)

_Static_assert((CHANGES_SLOTS & CH_MASK) == 0, "CHANGES_SLOTS is a power of two");

struct ch_hdr {
    struct seg_hdr seg;
    uint32_t nedges, nslots;
    uint64_t off_edges, off_head, off_ring;
};

struct ch_edge {
    _Atomic uint32_t armed;       /* the edge holds readers */
    _Atomic uint32_t signalled;   /* its eventfd was written since it last acknowledged */
    char pad[56];
};

struct ch_rec {
    _Atomic uint64_t seq;         /* 2p+1 while position p is written, 2p+2 once done */
    _Atomic uint64_t hash;
    _Atomic uint64_t version;
    _Atomic uint64_t origin;
    _Atomic uint32_t flags;
    _Atomic uint32_t klen;
    char key[CHANGES_KEY_MAX];    /* copied under the slot's seqlock; checked by seq after */
    char pad[256 - 32 - 8 - CHANGES_KEY_MAX];
};

_Static_assert(sizeof(struct ch_rec) == 256, "a record is 256 bytes");

struct changes {
    struct seg seg;
    int ok;
    uint32_t nedges;
    uint32_t self;                /* this process's edge; UINT32_MAX: none */
    struct ch_edge *edges;
    _Atomic uint64_t *head;
    struct ch_rec *ring;
    int fds[];                    /* one eventfd per edge */
};

/* struct seg_kind's layout: every offset from nedges. */
static int layout(void *hdr, const void *in)
{
    uint32_t nedges = ((const struct ch_hdr *)in)->nedges;
    struct ch_hdr *h = hdr;
    if (nedges == 0 || nedges > CHANGES_EDGES_MAX)
        return HKV_EINVAL;
    h->nedges = nedges;
    h->nslots = CHANGES_SLOTS;
    uint64_t off = seg_align(seg_first(sizeof(*h)), 64);
    h->off_edges = off;
    off += (uint64_t)nedges * sizeof(struct ch_edge);
    h->off_head = seg_align(off, 64);
    h->off_ring = h->off_head + 64;
    off = h->off_ring + (uint64_t)CHANGES_SLOTS * sizeof(struct ch_rec);
    h->seg.bytes = seg_align(off, 4096);
    return HKV_OK;
}

static const struct seg_kind ch_kind = {
    .name = "hotkvd-changes",
    .magic = CH_MAGIC,
    .version = CH_LAYOUT_VERSION,
    .hdr_size = sizeof(struct ch_hdr),
    .layout = layout,
};

static void bind_view(struct changes *ch)
{
    const struct ch_hdr *h = (const struct ch_hdr *)ch->seg.base;
    ch->edges = (struct ch_edge *)(ch->seg.base + h->off_edges);
    ch->head = (_Atomic uint64_t *)(ch->seg.base + h->off_head);
    ch->ring = (struct ch_rec *)(ch->seg.base + h->off_ring);
    ch->ok = 1;
}

int changes_create(uint32_t nedges, struct changes **out)
{
    *out = NULL;
    if (nedges == 0 || nedges > CHANGES_EDGES_MAX) {
        errno = EINVAL;
        return HKV_EINVAL;
    }
    struct changes *ch = calloc(1, sizeof(*ch) + nedges * sizeof(int));
    if (ch == NULL)
        return HKV_ENOMEM;
    ch->nedges = nedges;
    ch->self = UINT32_MAX;
    for (uint32_t i = 0; i < nedges; i++)
        ch->fds[i] = -1;
    struct ch_hdr h;
    memset(&h, 0, sizeof(h));
    h.nedges = nedges;
    int rc = seg_create(&ch->seg, &ch_kind, &h);
    if (rc != HKV_OK) {
        free(ch);
        return rc;
    }
    bind_view(ch);
    for (uint32_t i = 0; i < nedges; i++) {
        ch->fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (ch->fds[i] < 0) {
            int err = errno;
            changes_destroy(&ch);
            errno = err;
            return HKV_ENOMEM;
        }
    }
    *out = ch;
    return HKV_OK;
}

int changes_attach(struct changes *ch, uint32_t edge)
{
    if (ch == NULL)
        return HKV_ECORRUPT;
    ch->ok = 0;
    if (seg_attach(&ch->seg, &ch_kind) != HKV_OK)
        return HKV_ECORRUPT;
    const struct ch_hdr *h = (const struct ch_hdr *)ch->seg.base;
    if (h->nedges != ch->nedges || edge >= ch->nedges)
        return HKV_ECORRUPT;
    bind_view(ch);
    ch->self = edge;
    /* A predecessor that died armed: nobody reads for this edge until it
     * holds readers again. */
    atomic_store_explicit(&ch->edges[edge].armed, 0, memory_order_seq_cst);
    return HKV_OK;
}

void changes_destroy(struct changes **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct changes *ch = *p;
    seg_destroy(&ch->seg);
    for (uint32_t i = 0; i < ch->nedges; i++)
        if (ch->fds[i] >= 0)
            close(ch->fds[i]);
    free(ch);
    *p = NULL;
}

static void note(struct changes *ch, const char *key, size_t klen, uint64_t hash,
                 hkv_stamp version, uint64_t origin, uint32_t flags)
{
    if (ch == NULL || !ch->ok)
        return;
    uint64_t p = atomic_fetch_add_explicit(ch->head, 1, memory_order_acq_rel);
    struct ch_rec *r = &ch->ring[p & CH_MASK];
    atomic_store_explicit(&r->seq, 2 * p + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* the odd seq before the bytes */
    atomic_store_explicit(&r->hash, hash, memory_order_release);
    atomic_store_explicit(&r->version, version, memory_order_release);
    atomic_store_explicit(&r->origin, origin, memory_order_release);
    atomic_store_explicit(&r->flags, flags, memory_order_release);
    atomic_store_explicit(&r->klen, (uint32_t)klen, memory_order_release);
    if (klen > 0)
        memcpy(r->key, key, klen < CHANGES_KEY_MAX ? klen : CHANGES_KEY_MAX);
    atomic_store_explicit(&r->seq, 2 * p + 2, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t i = 0; i < ch->nedges; i++) {
        struct ch_edge *e = &ch->edges[i];
        if (!atomic_load_explicit(&e->armed, memory_order_relaxed) ||
            atomic_exchange_explicit(&e->signalled, 1, memory_order_acq_rel))
            continue;
        uint64_t one = 1;
        ssize_t w = write(ch->fds[i], &one, sizeof(one));
        (void)w; /* EAGAIN: the counter is full, the edge is signalled anyway */
    }
}

void changes_note_key(struct changes *ch, const char *key, size_t klen, uint64_t hash,
                      hkv_stamp version, uint64_t origin)
{
    note(ch, key, klen > UINT32_MAX ? UINT32_MAX : klen, hash, version, origin, 0);
}

void changes_note_fill(struct changes *ch, const char *key, size_t klen, uint64_t hash,
                       hkv_stamp version)
{
    note(ch, key, klen > UINT32_MAX ? UINT32_MAX : klen, hash, version, 0, CHANGES_F_FILL);
}

void changes_note(struct changes *ch, uint64_t hash, hkv_stamp version)
{
    note(ch, NULL, 0, hash, version, 0, 0);
}

void changes_note_flush(struct changes *ch)
{
    note(ch, NULL, 0, 0, 0, 0, CHANGES_F_FLUSH);
}

int changes_fd(const struct changes *ch)
{
    return ch != NULL && ch->ok && ch->self != UINT32_MAX ? ch->fds[ch->self] : -1;
}

uint64_t changes_arm(struct changes *ch, int on)
{
    if (ch == NULL || !ch->ok || ch->self == UINT32_MAX)
        return 0;
    atomic_store_explicit(&ch->edges[ch->self].armed, on ? 1u : 0u, memory_order_seq_cst);
    if (!on)
        return 0;
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(ch->head, memory_order_acquire);
}

uint64_t changes_head(const struct changes *ch)
{
    if (ch == NULL || !ch->ok)
        return 0;
    return atomic_load_explicit(ch->head, memory_order_acquire);
}

void changes_ack(struct changes *ch)
{
    if (ch == NULL || !ch->ok || ch->self == UINT32_MAX)
        return;
    uint64_t n;
    ssize_t r = read(ch->fds[ch->self], &n, sizeof(n));
    (void)r; /* EAGAIN: nothing was written */
    atomic_exchange_explicit(&ch->edges[ch->self].signalled, 0, memory_order_acq_rel);
}

int changes_read(struct changes *ch, uint64_t *cursor, changes_fn fn, void *arg)
{
    if (ch == NULL || !ch->ok)
        return CHANGES_OK;
    uint64_t head = atomic_load_explicit(ch->head, memory_order_acquire);
    if (*cursor > head || head - *cursor > CHANGES_SLOTS) {
        *cursor = head;
        return CHANGES_LOST;
    }
    while (*cursor < head) {
        uint64_t p = *cursor;
        struct ch_rec *r = &ch->ring[p & CH_MASK];
        uint64_t s1 = atomic_load_explicit(&r->seq, memory_order_acquire);
        if (s1 != 2 * p + 2) {
            if (s1 > 2 * p + 2) {
                *cursor = atomic_load_explicit(ch->head, memory_order_acquire);
                return CHANGES_LOST;
            }
            return CHANGES_PENDING;
        }
        char key[CHANGES_KEY_MAX];
        struct change c = {
            .hash = atomic_load_explicit(&r->hash, memory_order_acquire),
            .version = atomic_load_explicit(&r->version, memory_order_acquire),
            .origin = atomic_load_explicit(&r->origin, memory_order_acquire),
            .flags = atomic_load_explicit(&r->flags, memory_order_acquire),
            .klen = atomic_load_explicit(&r->klen, memory_order_acquire),
            .key = key,
        };
        if (c.klen > 0)
            memcpy(key, r->key, c.klen < CHANGES_KEY_MAX ? c.klen : CHANGES_KEY_MAX);
        atomic_thread_fence(memory_order_acquire); /* the bytes before the second seq */
        uint64_t s2 = atomic_load_explicit(&r->seq, memory_order_acquire);
        uint64_t now = atomic_load_explicit(ch->head, memory_order_acquire);
        if (s2 != s1 || now - p > CHANGES_SLOTS) {
            *cursor = now;
            return CHANGES_LOST;
        }
        *cursor = p + 1;
        fn(arg, &c);
    }
    return CHANGES_OK;
}

void changes_skip(struct changes *ch, uint64_t *cursor)
{
    (*cursor)++;
}

void changes_test_abandon(struct changes *ch)
{
    uint64_t p = atomic_fetch_add_explicit(ch->head, 1, memory_order_acq_rel);
    atomic_store_explicit(&ch->ring[p & CH_MASK].seq, 2 * p + 1, memory_order_release);
}
