/*
 * bus.c - the colo's message bus and count table (bus.h).
 *
 * Layout (segment.h: header, counter rows, then ours): nedges flag lines
 * (armed, signalled), the head (bytes ever claimed) on a line of its own,
 * the byte ring, then one count region per edge.
 *
 * A record at ring position p (8-aligned) is four words then its bytes
 * (channel, message), padded to 8:
 *   tag    2p+1 while written, 2p+2 once done
 *   lens   clen << 32 | mlen
 *   target 0 or a client id
 *   meta   check (mix of p, lens, target and the boot secret; high 56 bits)
 *          | flags (low 8)
 * The writer claims with a fetch_add on the head, stores tag = 2p+1, a
 * release fence, the rest, then tag = 2p+2 with release.  A reader at p
 * takes the record when the tag says 2p+2 and the check matches, copies it
 * out, then (acquire fence) re-reads the tag and the head: a writer that
 * overwrote any of its bytes claimed past p + ring first, which the fences
 * make visible, so head - p <= ring means the copy is whole.  Any other tag
 * with head - p <= ring is a record not yet written (PENDING); past that
 * the reader was lapped (LOST).  Signals as changes.c.
 */
#include "server/colo/bus.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "config/cfg.h"
#include "server/colo/segment.h"

#define BUS_MAGIC 0x7375626275736b68ULL /* "hkbusbus" */
#define BUS_LAYOUT_VERSION 1
#define REC_HDR 32u

struct bus_hdr {
    struct seg_hdr seg;
    uint32_t nedges, pad;
    uint64_t ring_bytes;
    uint64_t off_edges, off_head, off_ring, off_regions;
};

struct bus_edge {
    _Atomic uint32_t armed;
    _Atomic uint32_t signalled;
    char pad[56];
};

struct bus_name {
    _Atomic uint64_t seq;         /* odd while this edge rewrites the slot */
    _Atomic uint64_t hash;
    _Atomic uint32_t count;       /* 0: the slot is free */
    uint8_t pattern, full;
    uint16_t len;
    char name[BUS_NAME_MAX];
};
_Static_assert(sizeof(struct bus_name) == 256, "a name slot is 256 bytes");

struct bus_region {
    _Atomic uint32_t used;        /* slots [0, used) may hold names */
    _Atomic uint32_t overflow;    /* names that found no slot (counted nowhere else) */
    char pad[56];
    struct bus_name names[BUS_NAMES];
};

struct bus {
    struct seg seg;
    int ok;
    uint32_t nedges, self;
    uint64_t size, mask, secret;
    struct bus_edge *edges;
    _Atomic uint64_t *head;
    unsigned char *ring;
    struct bus_region *regions;
    unsigned char *copy;          /* a record read out of the ring */
    int fds[];
};

static int layout(void *hdr, const void *in)
{
    const struct bus_hdr *i = in;
    uint32_t nedges = i->nedges;
    uint64_t rb = i->ring_bytes;
    struct bus_hdr *h = hdr;
    if (nedges == 0 || nedges > BUS_EDGES_MAX || rb < 65536 || (rb & (rb - 1)) != 0 ||
        rb > (1ull << 32))
        return HKV_EINVAL;
    h->nedges = nedges;
    h->ring_bytes = rb;
    uint64_t off = seg_align(seg_first(sizeof(*h)), 64);
    h->off_edges = off;
    off += (uint64_t)nedges * sizeof(struct bus_edge);
    h->off_head = seg_align(off, 64);
    h->off_ring = seg_align(h->off_head + 64, 4096);
    h->off_regions = seg_align(h->off_ring + rb, 4096);
    off = h->off_regions + (uint64_t)nedges * sizeof(struct bus_region);
    h->seg.bytes = seg_align(off, 4096);
    return HKV_OK;
}

static const struct seg_kind bus_kind = {
    .name = "hotkvd-bus",
    .magic = BUS_MAGIC,
    .version = BUS_LAYOUT_VERSION,
    .hdr_size = sizeof(struct bus_hdr),
    .layout = layout,
};

static void bind_view(struct bus *b)
{
    const struct bus_hdr *h = (const struct bus_hdr *)b->seg.base;
    b->edges = (struct bus_edge *)(b->seg.base + h->off_edges);
    b->head = (_Atomic uint64_t *)(b->seg.base + h->off_head);
    b->ring = (unsigned char *)b->seg.base + h->off_ring;
    b->regions = (struct bus_region *)(b->seg.base + h->off_regions);
    b->size = h->ring_bytes;
    b->mask = b->size - 1;
    b->ok = 1;
}

int bus_create(uint32_t nedges, uint64_t ring_bytes, struct bus **out)
{
    *out = NULL;
    uint64_t rb = 65536;
    while (rb < ring_bytes && rb < (1ull << 32))
        rb <<= 1;
    if (nedges == 0 || nedges > BUS_EDGES_MAX) {
        errno = EINVAL;
        return HKV_EINVAL;
    }
    struct bus *b = calloc(1, sizeof(*b) + nedges * sizeof(int));
    if (b == NULL)
        return HKV_ENOMEM;
    b->nedges = nedges;
    b->self = UINT32_MAX;
    for (uint32_t i = 0; i < nedges; i++)
        b->fds[i] = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    b->secret = seg_mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)getpid());
    struct bus_hdr h;
    memset(&h, 0, sizeof(h));
    h.nedges = nedges;
    h.ring_bytes = rb;
    int rc = seg_create(&b->seg, &bus_kind, &h);
    if (rc != HKV_OK) {
        free(b);
        return rc;
    }
    bind_view(b);
    b->copy = malloc(b->size / 4 + REC_HDR);
    if (b->copy == NULL) {
        bus_destroy(&b);
        return HKV_ENOMEM;
    }
    for (uint32_t i = 0; i < nedges; i++) {
        b->fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (b->fds[i] < 0) {
            int err = errno;
            bus_destroy(&b);
            errno = err;
            return HKV_ENOMEM;
        }
    }
    *out = b;
    return HKV_OK;
}

int bus_attach(struct bus *b, uint32_t edge)
{
    if (b == NULL)
        return HKV_ECORRUPT;
    b->ok = 0;
    if (seg_attach(&b->seg, &bus_kind) != HKV_OK)
        return HKV_ECORRUPT;
    const struct bus_hdr *h = (const struct bus_hdr *)b->seg.base;
    if (h->nedges != b->nedges || edge >= b->nedges)
        return HKV_ECORRUPT;
    bind_view(b);
    b->self = edge;
    atomic_store_explicit(&b->edges[edge].armed, 0, memory_order_seq_cst);
    /* A predecessor's names: its subscribers went with it. */
    struct bus_region *r = &b->regions[edge];
    atomic_store_explicit(&r->used, 0, memory_order_release);
    atomic_store_explicit(&r->overflow, 0, memory_order_relaxed);
    for (uint32_t i = 0; i < BUS_NAMES; i++)
        atomic_store_explicit(&r->names[i].count, 0, memory_order_relaxed);
    return HKV_OK;
}

void bus_destroy(struct bus **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct bus *b = *p;
    seg_destroy(&b->seg);
    for (uint32_t i = 0; i < b->nedges; i++)
        if (b->fds[i] >= 0)
            close(b->fds[i]);
    free(b->copy);
    free(b);
    *p = NULL;
}

size_t bus_max_record(const struct bus *b)
{
    return b == NULL || !b->ok ? 0 : (size_t)(b->size / 4);
}

static _Atomic uint64_t *word(struct bus *b, uint64_t pos)
{
    return (_Atomic uint64_t *)(void *)(b->ring + (pos & b->mask));
}

static uint64_t check_of(const struct bus *b, uint64_t p, uint64_t lens, uint64_t target)
{
    return seg_mix(p ^ b->secret ^ seg_mix(lens ^ seg_mix(target))) & ~(uint64_t)0xff;
}

static void ring_put(struct bus *b, uint64_t pos, const void *src, size_t n)
{
    size_t at = (size_t)(pos & b->mask);
    size_t first = n < b->size - at ? n : (size_t)(b->size - at);
    memcpy(b->ring + at, src, first);
    memcpy(b->ring, (const char *)src + first, n - first);
}

static void ring_get(struct bus *b, uint64_t pos, void *dst, size_t n)
{
    size_t at = (size_t)(pos & b->mask);
    size_t first = n < b->size - at ? n : (size_t)(b->size - at);
    memcpy(dst, b->ring + at, first);
    memcpy((char *)dst + first, b->ring, n - first);
}

static uint64_t rec_len(size_t clen, size_t mlen)
{
    return REC_HDR + seg_align(clen + mlen, 8);
}

static void signal_armed(struct bus *b)
{
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t i = 0; i < b->nedges; i++) {
        struct bus_edge *e = &b->edges[i];
        if (!atomic_load_explicit(&e->armed, memory_order_relaxed) ||
            atomic_exchange_explicit(&e->signalled, 1, memory_order_acq_rel))
            continue;
        uint64_t one = 1;
        ssize_t w = write(b->fds[i], &one, sizeof(one));
        (void)w; /* EAGAIN: the counter is full, the edge is signalled anyway */
    }
}

int bus_publish(struct bus *b, uint64_t target, uint32_t flags, const char *ch, size_t clen,
                const char *msg, size_t mlen)
{
    if (b == NULL || !b->ok)
        return HKV_ENOENT;
    if (clen + mlen > bus_max_record(b) || clen > UINT32_MAX || mlen > UINT32_MAX)
        return HKV_ETOOBIG;
    uint64_t len = rec_len(clen, mlen);
    uint64_t p = atomic_fetch_add_explicit(b->head, len, memory_order_acq_rel);
    atomic_store_explicit(word(b, p), 2 * p + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    uint64_t lens = (uint64_t)clen << 32 | (uint64_t)mlen;
    atomic_store_explicit(word(b, p + 8), lens, memory_order_relaxed);
    atomic_store_explicit(word(b, p + 16), target, memory_order_relaxed);
    atomic_store_explicit(word(b, p + 24), check_of(b, p, lens, target) | (flags & 0xff),
                          memory_order_relaxed);
    ring_put(b, p + REC_HDR, ch, clen);
    ring_put(b, p + REC_HDR + clen, msg, mlen);
    atomic_store_explicit(word(b, p), 2 * p + 2, memory_order_release);
    signal_armed(b);
    return HKV_OK;
}

int bus_fd(const struct bus *b)
{
    return b != NULL && b->ok && b->self != UINT32_MAX ? b->fds[b->self] : -1;
}

uint64_t bus_arm(struct bus *b, int on)
{
    if (b == NULL || !b->ok || b->self == UINT32_MAX)
        return 0;
    atomic_store_explicit(&b->edges[b->self].armed, on ? 1u : 0u, memory_order_seq_cst);
    if (!on)
        return 0;
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(b->head, memory_order_acquire);
}

void bus_ack(struct bus *b)
{
    if (b == NULL || !b->ok || b->self == UINT32_MAX)
        return;
    uint64_t n;
    ssize_t r = read(b->fds[b->self], &n, sizeof(n));
    (void)r;
    atomic_exchange_explicit(&b->edges[b->self].signalled, 0, memory_order_acq_rel);
}

int bus_read(struct bus *b, uint64_t *cursor, bus_fn fn, void *arg)
{
    if (b == NULL || !b->ok)
        return BUS_OK;
    for (;;) {
        uint64_t head = atomic_load_explicit(b->head, memory_order_acquire);
        uint64_t p = *cursor;
        if (p > head || head - p > b->size || (p & 7) != 0) {
            *cursor = head;
            return BUS_LOST;
        }
        if (p == head)
            return BUS_OK;
        uint64_t t = atomic_load_explicit(word(b, p), memory_order_acquire);
        if (t != 2 * p + 2)
            return BUS_PENDING; /* not written yet (a lap shows in the head check) */
        uint64_t lens = atomic_load_explicit(word(b, p + 8), memory_order_relaxed);
        uint64_t target = atomic_load_explicit(word(b, p + 16), memory_order_relaxed);
        uint64_t meta = atomic_load_explicit(word(b, p + 24), memory_order_relaxed);
        size_t clen = (size_t)(lens >> 32), mlen = (size_t)(lens & 0xffffffffu);
        int sane = clen + mlen <= bus_max_record(b) &&
                   (meta & ~(uint64_t)0xff) == check_of(b, p, lens, target);
        if (sane)
            ring_get(b, p + REC_HDR, b->copy, clen + mlen);
        atomic_thread_fence(memory_order_acquire);
        uint64_t t2 = atomic_load_explicit(word(b, p), memory_order_relaxed);
        uint64_t now = atomic_load_explicit(b->head, memory_order_relaxed);
        if (!sane || t2 != t || now - p > b->size) {
            *cursor = now;
            return BUS_LOST;
        }
        *cursor = p + rec_len(clen, mlen);
        struct bus_msg m = {
            .target = target,
            .flags = (uint32_t)(meta & 0xff),
            .channel = (const char *)b->copy,
            .clen = clen,
            .msg = (const char *)b->copy + clen,
            .mlen = mlen,
        };
        fn(arg, &m);
    }
}

void bus_skip(struct bus *b, uint64_t *cursor)
{
    if (b != NULL && b->ok)
        *cursor = atomic_load_explicit(b->head, memory_order_acquire);
}

void bus_test_abandon(struct bus *b, size_t len)
{
    uint64_t p = atomic_fetch_add_explicit(b->head, rec_len(len, 0), memory_order_acq_rel);
    atomic_store_explicit(word(b, p), 2 * p + 1, memory_order_release);
}

int bus_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
    return cfg_glob_match(pat, plen, s, slen, 0);
}

/* ---- the count table ---------------------------------------------------------------- */

static uint64_t name_hash(int pattern, const char *name, size_t n)
{
    return seg_sum_bytes(pattern ? 0x7061747465726eULL : 0x6368616e6e656cULL, name, n) | 1;
}

void bus_count_set(struct bus *b, int pattern, const char *name, size_t n, uint32_t count)
{
    if (b == NULL || !b->ok || b->self == UINT32_MAX)
        return;
    struct bus_region *r = &b->regions[b->self];
    uint64_t h = name_hash(pattern, name, n);
    uint32_t used = atomic_load_explicit(&r->used, memory_order_relaxed), free_at = UINT32_MAX;
    int full = n <= BUS_NAME_MAX;
    for (uint32_t i = 0; i < used; i++) {
        struct bus_name *s = &r->names[i];
        if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0) {
            if (free_at == UINT32_MAX)
                free_at = i;
            continue;
        }
        if (atomic_load_explicit(&s->hash, memory_order_relaxed) == h && s->pattern == pattern &&
            s->full == full && (!full || (s->len == n && memcmp(s->name, name, n) == 0))) {
            atomic_store_explicit(&s->count, count, memory_order_release);
            return;
        }
    }
    if (count == 0)
        return;
    if (free_at == UINT32_MAX) {
        if (used == BUS_NAMES) {
            atomic_fetch_add_explicit(&r->overflow, 1, memory_order_relaxed);
            return;
        }
        free_at = used;
    }
    struct bus_name *s = &r->names[free_at];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq | 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->hash, h, memory_order_relaxed);
    s->pattern = (uint8_t)pattern;
    s->full = (uint8_t)full;
    s->len = (uint16_t)(full ? n : 0);
    if (full)
        memcpy(s->name, name, n);
    atomic_store_explicit(&s->count, count, memory_order_relaxed);
    atomic_store_explicit(&s->seq, (seq | 1) + 1, memory_order_release);
    if (free_at == used)
        atomic_store_explicit(&r->used, used + 1, memory_order_release);
}

/* One slot as read: 0 if it is free or being rewritten. */
struct seen {
    uint64_t hash;
    uint32_t count;
    int pattern, full;
    size_t len;
    char name[BUS_NAME_MAX];
};

static int read_slot(struct bus_name *s, struct seen *o)
{
    for (int tries = 0; tries < 4; tries++) {
        uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        o->count = atomic_load_explicit(&s->count, memory_order_relaxed);
        o->hash = atomic_load_explicit(&s->hash, memory_order_relaxed);
        o->pattern = s->pattern;
        o->full = s->full;
        o->len = s->len <= BUS_NAME_MAX ? s->len : 0;
        memcpy(o->name, s->name, o->len);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) == s1)
            return o->count > 0;
    }
    return 0;
}

/* fn over every live slot of every edge; stops when fn answers nonzero. */
static void each_slot(struct bus *b, int (*fn)(void *arg, const struct seen *s), void *arg)
{
    struct seen s;
    for (uint32_t e = 0; e < b->nedges; e++) {
        struct bus_region *r = &b->regions[e];
        uint32_t used = atomic_load_explicit(&r->used, memory_order_acquire);
        for (uint32_t i = 0; i < used && i < BUS_NAMES; i++)
            if (read_slot(&r->names[i], &s) && fn(arg, &s))
                return;
    }
}

struct count_q {
    const char *ch;
    size_t n;
    uint64_t h;
    int patterns;
    uint64_t total;
};

static int count_one(void *arg, const struct seen *s)
{
    struct count_q *q = arg;
    if (!s->pattern) {
        if (s->hash == q->h && (!s->full || (s->len == q->n && memcmp(s->name, q->ch, q->n) == 0)))
            q->total += s->count;
    } else if (q->patterns && s->full && bus_glob_match(s->name, s->len, q->ch, q->n)) {
        q->total += s->count;
    }
    return 0;
}

uint64_t bus_numsub(struct bus *b, const char *ch, size_t n)
{
    if (b == NULL || !b->ok)
        return 0;
    struct count_q q = {ch, n, name_hash(0, ch, n), 0, 0};
    each_slot(b, count_one, &q);
    return q.total;
}

uint64_t bus_receivers(struct bus *b, const char *ch, size_t n)
{
    if (b == NULL || !b->ok)
        return 0;
    struct count_q q = {ch, n, name_hash(0, ch, n), 1, 0};
    each_slot(b, count_one, &q);
    return q.total;
}

/* Distinct names: every edge's live slots of one kind, deduplicated. */
struct names_q {
    int pattern;
    struct seen *v;
    size_t n, cap;
};

static int collect(void *arg, const struct seen *s)
{
    struct names_q *q = arg;
    if (s->pattern != q->pattern)
        return 0;
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i].hash == s->hash && q->v[i].full == s->full && q->v[i].len == s->len &&
            memcmp(q->v[i].name, s->name, s->len) == 0)
            return 0;
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        struct seen *v = realloc(q->v, cap * sizeof(*v));
        if (v == NULL)
            return 1;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = *s;
    return 0;
}

uint64_t bus_numpat(struct bus *b)
{
    if (b == NULL || !b->ok)
        return 0;
    struct names_q q = {1, NULL, 0, 0};
    each_slot(b, collect, &q);
    free(q.v);
    return q.n;
}

void bus_channels(struct bus *b, bus_name_fn fn, void *arg)
{
    if (b == NULL || !b->ok)
        return;
    struct names_q q = {0, NULL, 0, 0};
    each_slot(b, collect, &q);
    for (size_t i = 0; i < q.n; i++)
        if (q.v[i].full)
            fn(arg, q.v[i].name, q.v[i].len);
    free(q.v);
}
