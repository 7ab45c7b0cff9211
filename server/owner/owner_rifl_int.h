/*
 * owner_rifl_int.h - the insides of the completion records table
 * (owner_rifl.h), shared by its two files: owner_rifl.c (the writer table,
 * incarnations, merging) and owner_rifl_ring.c (one writer incarnation's
 * records: a ring by seq and its overflow).  Nothing else includes it.
 */
#ifndef HKV_OWNER_RIFL_INT_H
#define HKV_OWNER_RIFL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "server/owner/owner_rifl.h"

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
    uint64_t lost;       /* the highest seq whose record went while it could still be
                          * retried (the bound, ENOMEM, or the sender's, merged): 0 = none */
    struct wstate *alt;  /* other incarnations of this writer taken from a leaf's records
                          * while none could be told dead (heap, a list): see rifl_merge */
};

struct rifl {
    size_t n, max;
    uint64_t dropped;
    int stateless_lost;  /* a record went because no writer state could be made */
    struct wstate *w;    /* open addressing by writer id, nw slots (a power of 2) */
    size_t nw, nwused;
    struct wstate *last; /* the writer looked up last (a batch is one writer's), or NULL */
};

/* The bytes a record must own to keep what res points to: 0 for most writes. */
size_t rifl_ring_copy_size(const struct rifl_result *res);
/* *out = *res with its pointers aimed into m (rifl_ring_copy_size(res) bytes, from
 * malloc), or as they are when m is NULL. */
void rifl_ring_copy_into(const struct rifl_result *res, struct rifl_result *out, char *m);
/* Forgets every ring record below `to` and moves lo there (to > lo). */
void rifl_ring_forget_below(struct rifl *r, struct wstate *w, uint64_t to);
/* Moves the state's ack up to ack, forgetting the records below it. */
void rifl_ring_ack(struct rifl *r, struct wstate *w, uint64_t ack);
/* Forgets all of the state's records (a new incarnation); resets ack, lo, lost. */
void rifl_ring_forget_all(struct rifl *r, struct wstate *w);
/* Evicts the state's lowest seq (the bound), raising its lost mark. */
void rifl_ring_evict_oldest(struct rifl *r, struct wstate *w);
/* The slot for a new record of seq (>= ack, not held yet), made room for;
 * the caller sets its seq.  NULL on ENOMEM. */
struct rec *rifl_ring_make_slot(struct wstate *w, uint64_t seq);

static inline struct rec *rs_ring_at(const struct wstate *w, uint64_t seq)
{
    return &w->ring[seq & (w->cap - 1)];
}

/* The overflow's first index whose seq is >= seq. */
static size_t rs_ov_rs_find(const struct wstate *w, uint64_t seq)
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

/* A writer's record of seq, or NULL. */
static inline struct rec *rs_find(const struct wstate *w, uint64_t seq)
{
    if (seq < w->ack)
        return NULL;
    if (seq >= w->lo) {
        if (w->ring == NULL || seq - w->lo >= w->cap)
            return NULL;
        struct rec *x = rs_ring_at(w, seq);
        return x->seq == seq ? x : NULL;
    }
    if (w->on == 0)
        return NULL;
    size_t i = rs_ov_rs_find(w, seq);
    return i < w->oh + w->on && w->ov[i].seq == seq ? &w->ov[i] : NULL;
}

#endif
