/*
 * owner_rifl_ring.c - one writer incarnation's completion records
 * (owner_rifl_int.h).
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
 * or a silent owner while the writer goes on: its ack is the lowest
 * unfinished request of the whole edge) must not cost records: the ring
 * slides forward and the records it leaves behind move, in seq order, to
 * the writer's overflow, a sorted array whose head goes first when acks
 * arrive.  A request below lo arriving late (a retry whose first attempt
 * was lost) is inserted into the overflow at its place.  Records below the
 * writer's ack are never kept: the writer said it will not retry them.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/wire.h"
#include "server/owner/owner_rifl_int.h"

/* The bytes a record must own to keep what res points to (old; or the RESP
 * reply, the change array and its keys): 0 for most writes. */
size_t rifl_ring_copy_size(const struct rifl_result *res)
{
    if (res->type == WIRE_RESP) {
        size_t n = res->resplen + (size_t)res->nchanges * sizeof(struct wire_watch);
        for (uint32_t i = 0; i < res->nchanges; i++)
            n += res->changes[i].key.len;
        return n ? n : 1;
    }
    return res->has_old ? (res->oldlen ? res->oldlen : 1) : 0;
}

/* *out = *res with its pointers aimed into m (rifl_ring_copy_size(res) bytes, from
 * malloc: the change array first needs its alignment), NULL when none. */
void rifl_ring_copy_into(const struct rifl_result *res, struct rifl_result *out, char *m)
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

/* Forgets every ring record below `to` and moves lo there (to > lo). */
void rifl_ring_forget_below(struct rifl *r, struct wstate *w, uint64_t to)
{
    if (w->nring > 0) {
        uint64_t end = to - w->lo < w->cap ? to : w->lo + w->cap;
        for (uint64_t s = w->lo; s < end && w->nring > 0; s++) {
            struct rec *x = rs_ring_at(w, s);
            if (x->seq == s)
                ring_clear(r, w, x);
        }
    }
    w->lo = to;
}

/* Forgets all of the writer's records (a new incarnation). */
void rifl_ring_forget_all(struct rifl *r, struct wstate *w)
{
    while (w->on > 0)
        ov_pop(r, w);
    for (size_t i = 0; i < w->cap && w->nring > 0; i++)
        if (w->ring[i].seq != 0)
            ring_clear(r, w, &w->ring[i]);
    w->ack = 0;
    w->lo = 1; /* seq 0 is never a request, and 0 marks an empty slot */
    w->lost = 0;
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
        move += rs_ring_at(w, s)->seq == s;
    if (ov_reserve(w, move) != HKV_OK)
        return HKV_ENOMEM;
    for (uint64_t s = w->lo; s < end && move > 0; s++) {
        struct rec *x = rs_ring_at(w, s);
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
void rifl_ring_evict_oldest(struct rifl *r, struct wstate *w)
{
    if (w->on > 0) {
        if (w->ov[w->oh].seq > w->lost)
            w->lost = w->ov[w->oh].seq;
        ov_pop(r, w);
        return;
    }
    for (uint64_t s = w->lo;; s++) { /* nring > 0: a record lies in [lo, lo + cap) */
        struct rec *x = rs_ring_at(w, s);
        if (x->seq == s) {
            if (s > w->lost)
                w->lost = s;
            ring_clear(r, w, x);
            w->lo = s + 1;
            return;
        }
    }
}

/* The slot for a new record of seq (>= ack, not held yet), made room for.
 * NULL on ENOMEM. */
struct rec *rifl_ring_make_slot(struct wstate *w, uint64_t seq)
{
    if (seq < w->lo) { /* late: into the overflow at its place */
        if (ov_reserve(w, 1) != HKV_OK)
            return NULL;
        size_t i = rs_ov_rs_find(w, seq);
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
    return rs_ring_at(w, seq);
}

/* Moves state w's ack up to ack, forgetting the records below it. */
void rifl_ring_ack(struct rifl *r, struct wstate *w, uint64_t ack)
{
    if (ack <= w->ack)
        return;
    w->ack = ack;
    while (w->on > 0 && w->ov[w->oh].seq < ack)
        ov_pop(r, w);
    if (ack > w->lo)
        rifl_ring_forget_below(r, w, ack);
}
