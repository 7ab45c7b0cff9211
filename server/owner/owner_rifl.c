/*
 * owner_rifl.c - completion records (owner_rifl.h).
 *
 * Each writer's records sit in a ring indexed by seq: a writer's seqs grow,
 * its requests are acked in order almost always, and the seqs it has
 * unfinished at once span a window [lo, lo + cap) that follows its ack.  A
 * record is the slot seq & (cap - 1), found in one comparison; forgetting
 * "everything below ack" empties the slots between the old and the new lo;
 * a plain write's record (no old value, no RESP bytes) allocates nothing.
 * The seqs are those of the writer's whole process, spread over every owner,
 * so a ring has holes: the slots of requests that went to other owners.
 *
 * The ring grows (doubling) while a window does not fit, up to RING_MAX
 * slots.  A window wider than that (one request stuck behind a slow commit
 * while the writer goes on) must not cost records: the ring slides forward
 * and the records it leaves behind move, in seq order, to the writer's
 * overflow, a sorted array whose head goes first when acks arrive.  A
 * request below lo arriving late (a retry whose first attempt was lost) is
 * inserted into the overflow at its place.  Records below the writer's ack
 * are never kept: the writer said it will not retry them.
 *
 * The per-writer bound evicts the writer's lowest seq, its oldest request.
 *
 * The writer table is an open-addressed hash on the whole 32-bit writer id:
 * in a cluster an edge id is host_number << 12 | slot (server/core/worker.h),
 * so edges of two hosts share their low bits, and a table indexed by them
 * would let one host's new incarnation wipe the other's records (a retry
 * then applied twice).
 */
#include "server/owner/owner_rifl.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/wire.h"

#define MIN_WRITERS 64
#define RING_MIN 64
#define RING_MAX 4096 /* slots per writer: 4096 x 96 B */

struct rec {
    uint64_t seq;        /* 0: an empty slot (seq 0 is never a request) */
    char *mem;           /* owned copy of res.old, or of res.resp and res.changes */
    struct rifl_result res;
};

struct wstate {
    uint32_t writer;
    uint8_t used;
    uint64_t inc;
    uint64_t ack;        /* every seq below it is finished and forgotten */
    uint64_t lo;         /* the ring holds seqs in [lo, lo + cap); lo >= max(ack, 1) */
    struct rec *ring;    /* cap slots (a power of 2), NULL until the first record */
    size_t cap;
    size_t nring;        /* records in the ring */
    struct rec *ov;      /* overflow: records below lo, sorted by seq, in [oh, oh + on) */
    size_t oh, on, ocap;
};

struct rifl {
    size_t n, max;
    uint64_t dropped;
    struct wstate *w;    /* open addressing by writer id, nw slots (a power of 2) */
    size_t nw, nwused;
    struct wstate *last; /* the writer looked up last (a batch is one writer's), or NULL */
};

int rifl_create(size_t max, struct rifl **out)
{
    struct rifl *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return HKV_ENOMEM;
    r->w = calloc(MIN_WRITERS, sizeof(*r->w));
    if (r->w == NULL) {
        free(r);
        return HKV_ENOMEM;
    }
    r->nw = MIN_WRITERS;
    r->max = max ? max : 1;
    *out = r;
    return HKV_OK;
}

/* The bytes a record must own to keep what res points to (old; or the RESP
 * reply, the change array and its keys): 0 for most writes. */
static size_t copy_size(const struct rifl_result *res)
{
    if (res->type == WIRE_RESP) {
        size_t n = res->resplen + (size_t)res->nchanges * sizeof(struct wire_watch);
        for (uint32_t i = 0; i < res->nchanges; i++)
            n += res->changes[i].key.len;
        return n ? n : 1;
    }
    return res->has_old ? (res->oldlen ? res->oldlen : 1) : 0;
}

/* *out = *res with its pointers aimed into m (copy_size(res) bytes, from
 * malloc: the change array first needs its alignment), NULL when none. */
static void copy_into(const struct rifl_result *res, struct rifl_result *out, char *m)
{
    *out = *res;
    if (m == NULL)
        return;
    if (res->type != WIRE_RESP) {
        memcpy(m, res->old, res->oldlen);
        out->old = m;
        return;
    }
    struct wire_watch *ch = (struct wire_watch *)(void *)m;
    char *p = m + (size_t)res->nchanges * sizeof(*ch);
    for (uint32_t i = 0; i < res->nchanges; i++) {
        memcpy(p, res->changes[i].key.p, res->changes[i].key.len);
        ch[i].key = wire_slice(p, res->changes[i].key.len);
        ch[i].version = res->changes[i].version;
        p += res->changes[i].key.len;
    }
    memcpy(p, res->resp, res->resplen);
    out->resp = p;
    out->changes = res->nchanges ? ch : NULL;
    out->old = NULL;
    out->has_old = 0;
}

/* ---- one writer's records ---- */

static inline struct rec *ring_at(const struct wstate *w, uint64_t seq)
{
    return &w->ring[seq & (w->cap - 1)];
}

/* Forgets a ring record (slot x). */
static void ring_clear(struct rifl *r, struct wstate *w, struct rec *x)
{
    if (x->mem != NULL) { /* most records own nothing: no call */
        free(x->mem);
        x->mem = NULL;
    }
    x->seq = 0;
    w->nring--;
    r->n--;
}

/* Forgets the overflow's head. */
static void ov_pop(struct rifl *r, struct wstate *w)
{
    free(w->ov[w->oh].mem);
    w->oh++;
    w->on--;
    r->n--;
    if (w->on == 0)
        w->oh = 0;
}

/* Room for `more` records at the overflow's tail.  HKV_OK or HKV_ENOMEM
 * (nothing changed). */
static int ov_reserve(struct wstate *w, size_t more)
{
    if (w->oh + w->on + more <= w->ocap)
        return HKV_OK;
    if (w->on + more <= w->ocap) {
        memmove(w->ov, w->ov + w->oh, w->on * sizeof(*w->ov));
        w->oh = 0;
        return HKV_OK;
    }
    size_t cap = w->ocap ? w->ocap : 16;
    while (cap < w->on + more)
        cap *= 2;
    struct rec *ov = malloc(cap * sizeof(*ov));
    if (ov == NULL)
        return HKV_ENOMEM;
    if (w->on > 0)
        memcpy(ov, w->ov + w->oh, w->on * sizeof(*ov));
    free(w->ov);
    w->ov = ov;
    w->oh = 0;
    w->ocap = cap;
    return HKV_OK;
}

/* The overflow's first index whose seq is >= seq. */
static size_t ov_find(const struct wstate *w, uint64_t seq)
{
    size_t a = w->oh, b = w->oh + w->on;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (w->ov[m].seq < seq)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Forgets every ring record below `to` and moves lo there (to > lo). */
static void ring_forget_below(struct rifl *r, struct wstate *w, uint64_t to)
{
    if (w->nring > 0) {
        uint64_t end = to - w->lo < w->cap ? to : w->lo + w->cap;
        for (uint64_t s = w->lo; s < end && w->nring > 0; s++) {
            struct rec *x = ring_at(w, s);
            if (x->seq == s)
                ring_clear(r, w, x);
        }
    }
    w->lo = to;
}

/* Forgets all of the writer's records (a new incarnation). */
static void forget_all(struct rifl *r, struct wstate *w)
{
    while (w->on > 0)
        ov_pop(r, w);
    for (size_t i = 0; i < w->cap && w->nring > 0; i++)
        if (w->ring[i].seq != 0)
            ring_clear(r, w, &w->ring[i]);
    w->ack = 0;
    w->lo = 1; /* seq 0 is never a request, and 0 marks an empty slot */
}

/* Doubles the ring until seq fits or RING_MAX is reached.  HKV_OK, or
 * HKV_ENOMEM with the ring as it was. */
static int ring_grow(struct wstate *w, uint64_t seq)
{
    size_t cap = w->cap ? w->cap : RING_MIN;
    while (seq - w->lo >= cap && cap < RING_MAX)
        cap *= 2;
    if (cap == w->cap)
        return HKV_OK;
    struct rec *ring = calloc(cap, sizeof(*ring));
    if (ring == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < w->cap; i++)
        if (w->ring[i].seq != 0)
            ring[w->ring[i].seq & (cap - 1)] = w->ring[i];
    free(w->ring);
    w->ring = ring;
    w->cap = cap;
    return HKV_OK;
}

/* Moves the window so that seq (>= lo + cap) is its last slot; the records
 * left below go to the overflow in seq order.  HKV_OK or HKV_ENOMEM
 * (nothing changed). */
static int ring_slide(struct wstate *w, uint64_t seq)
{
    uint64_t lo = seq - w->cap + 1;
    if (w->nring == 0) {
        w->lo = lo;
        return HKV_OK;
    }
    uint64_t end = lo - w->lo < w->cap ? lo : w->lo + w->cap;
    size_t move = 0;
    for (uint64_t s = w->lo; s < end; s++)
        move += ring_at(w, s)->seq == s;
    if (ov_reserve(w, move) != HKV_OK)
        return HKV_ENOMEM;
    for (uint64_t s = w->lo; s < end && move > 0; s++) {
        struct rec *x = ring_at(w, s);
        if (x->seq != s)
            continue;
        w->ov[w->oh + w->on++] = *x;
        x->seq = 0;
        x->mem = NULL;
        w->nring--;
        move--;
    }
    w->lo = lo;
    return HKV_OK;
}

/* Evicts the writer's lowest seq (the bound). */
static void evict_oldest(struct rifl *r, struct wstate *w)
{
    if (w->on > 0) {
        ov_pop(r, w);
        return;
    }
    for (uint64_t s = w->lo;; s++) { /* nring > 0: a record lies in [lo, lo + cap) */
        struct rec *x = ring_at(w, s);
        if (x->seq == s) {
            ring_clear(r, w, x);
            w->lo = s + 1;
            return;
        }
    }
}

/* The slot for a new record of seq (>= ack, not held yet), made room for.
 * NULL on ENOMEM. */
static struct rec *make_slot(struct wstate *w, uint64_t seq)
{
    if (seq < w->lo) { /* late: into the overflow at its place */
        if (ov_reserve(w, 1) != HKV_OK)
            return NULL;
        size_t i = ov_find(w, seq);
        memmove(&w->ov[i + 1], &w->ov[i], (w->oh + w->on - i) * sizeof(*w->ov));
        w->on++;
        return &w->ov[i];
    }
    size_t cap = w->cap ? w->cap : RING_MIN;
    if (w->nring == 0 && seq - w->lo >= cap)
        w->lo = seq - cap / 2; /* an empty ring moves to seq, with room for late ones */
    if (w->ring == NULL || seq - w->lo >= w->cap) {
        if (ring_grow(w, seq) != HKV_OK)
            return NULL;
        if (seq - w->lo >= w->cap && ring_slide(w, seq) != HKV_OK)
            return NULL;
    }
    w->nring++;
    return ring_at(w, seq);
}

/* A writer's record of seq, or NULL. */
static inline struct rec *find(const struct wstate *w, uint64_t seq)
{
    if (seq < w->ack)
        return NULL;
    if (seq >= w->lo) {
        if (w->ring == NULL || seq - w->lo >= w->cap)
            return NULL;
        struct rec *x = ring_at(w, seq);
        return x->seq == seq ? x : NULL;
    }
    if (w->on == 0)
        return NULL;
    size_t i = ov_find(w, seq);
    return i < w->oh + w->on && w->ov[i].seq == seq ? &w->ov[i] : NULL;
}

/* ---- the writer table ---- */

static size_t wslot(const struct wstate *w, size_t nw, uint32_t writer)
{
    size_t i = (size_t)((writer * 0x9e3779b97f4a7c15ULL) >> 32) & (nw - 1);
    while (w[i].used && w[i].writer != writer)
        i = (i + 1) & (nw - 1);
    return i;
}

/* The state of a writer seen before, or NULL. */
static inline struct wstate *wstate_find(const struct rifl *r, uint32_t writer)
{
    if (r->last != NULL && r->last->writer == writer)
        return r->last;
    size_t i = wslot(r->w, r->nw, writer);
    return r->w[i].used ? &r->w[i] : NULL;
}

/* wstate_of past its cache. */
static struct wstate *wstate_lookup(struct rifl *r, uint32_t writer)
{
    size_t i = wslot(r->w, r->nw, writer);
    if (r->w[i].used)
        return r->last = &r->w[i];
    if (2 * (r->nwused + 1) > r->nw) {
        size_t nw = r->nw * 2;
        struct wstate *w = calloc(nw, sizeof(*w));
        if (w == NULL)
            return NULL;
        for (size_t k = 0; k < r->nw; k++)
            if (r->w[k].used)
                w[wslot(w, nw, r->w[k].writer)] = r->w[k];
        free(r->w);
        r->w = w;
        r->nw = nw;
        i = wslot(r->w, r->nw, writer);
    }
    r->w[i].used = 1;
    r->w[i].writer = writer;
    r->w[i].lo = 1;
    r->nwused++;
    return r->last = &r->w[i];
}

/* Writer `writer`'s state, made on first sight; NULL only when the table
 * is full and cannot grow (then the caller keeps no record: the reply is
 * still given, a retry of it is answered "outcome unknown"). */
static inline struct wstate *wstate_of(struct rifl *r, uint32_t writer)
{
    if (r->last != NULL && r->last->writer == writer)
        return r->last;
    return wstate_lookup(r, writer);
}

void rifl_destroy(struct rifl **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    struct rifl *r = *rp;
    for (size_t i = 0; i < r->nw; i++) {
        struct wstate *w = &r->w[i];
        if (!w->used)
            continue;
        forget_all(r, w);
        free(w->ring);
        free(w->ov);
    }
    free(r->w);
    free(r);
    *rp = NULL;
}

void rifl_set_max(struct rifl *r, size_t max) { r->max = max ? max : 1; }

/* Moves writer w to incarnation inc (forgetting the old one's records) and
 * its ack up to ack. */
static void writer_ack(struct rifl *r, struct wstate *w, uint64_t inc, uint64_t ack)
{
    if (w->inc != inc) {
        forget_all(r, w);
        w->inc = inc;
    }
    if (ack <= w->ack)
        return;
    w->ack = ack;
    while (w->on > 0 && w->ov[w->oh].seq < ack)
        ov_pop(r, w);
    if (ack > w->lo)
        ring_forget_below(r, w, ack);
}

void rifl_ack(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t ack)
{
    struct wstate *w = wstate_of(r, writer);
    if (w != NULL)
        writer_ack(r, w, inc, ack);
}

const struct rifl_result *rifl_get(const struct rifl *r, uint32_t writer, uint64_t inc,
                                   uint64_t seq)
{
    const struct wstate *w = wstate_find(r, writer);
    if (w == NULL || w->inc != inc)
        return NULL;
    const struct rec *x = find(w, seq);
    return x != NULL ? &x->res : NULL;
}

int rifl_put(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
             const struct rifl_result *res)
{
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL)
        return HKV_ENOMEM;
    if (w->inc != inc)
        writer_ack(r, w, inc, 0); /* a new incarnation: the old one's records go */
    if (seq < w->ack || seq == 0)
        return HKV_OK; /* finished: the writer will not retry it (0: never a request) */
    size_t need = copy_size(res);
    char *mem = NULL;
    if (need > 0 && (mem = malloc(need)) == NULL)
        return HKV_ENOMEM;
    struct rec *x = find(w, seq);
    if (x == NULL) {
        while (w->nring + w->on >= r->max && w->nring + w->on > 0) {
            evict_oldest(r, w);
            r->dropped++;
        }
        x = make_slot(w, seq);
        if (x == NULL) {
            free(mem);
            return HKV_ENOMEM;
        }
        x->seq = seq;
        r->n++;
    } else {
        free(x->mem); /* a second put of the request replaces the first */
    }
    x->mem = mem;
    copy_into(res, &x->res, mem);
    return HKV_OK;
}

void rifl_stats(const struct rifl *r, struct rifl_stats *out)
{
    out->records = r->n;
    out->dropped = r->dropped;
}

void rifl_each(const struct rifl *r, rifl_each_fn fn, void *arg)
{
    for (size_t i = 0; i < r->nw; i++) {
        const struct wstate *w = &r->w[i];
        if (!w->used)
            continue;
        for (size_t k = w->oh; k < w->oh + w->on; k++)
            fn(arg, w->writer, w->inc, w->ov[k].seq, &w->ov[k].res);
        size_t left = w->nring;
        for (uint64_t s = w->lo; left > 0; s++) {
            const struct rec *x = ring_at(w, s);
            if (x->seq == s) {
                fn(arg, w->writer, w->inc, s, &x->res);
                left--;
            }
        }
    }
}

int rifl_merge(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
               const struct rifl_result *res, uint64_t live_inc)
{
    const struct wstate *w = wstate_find(r, writer);
    if (w != NULL && w->inc != inc) {
        /* which incarnation lives: the one the writer's links here name;
         * without a link, the sender's (it served the writer just now) */
        if (live_inc != 0 && live_inc != inc)
            return HKV_EEXIST;
    } else if (w != NULL && (seq < w->ack || find(w, seq) != NULL)) {
        return HKV_EEXIST;
    }
    struct rifl_result copy = *res;
    copy.ticket = 0; /* the receiver committed what it acknowledged */
    return rifl_put(r, writer, inc, seq, &copy);
}
