/*
 * owner_rifl.c - completion records (owner_rifl.h).
 *
 * The table of writers, each writer's incarnations, and what crosses
 * between owners when a leaf moves; one incarnation's records themselves
 * are owner_rifl_ring.c's.
 *
 * An incarnation's state is the writer's slot in the table; states of other
 * incarnations, taken from a moving leaf's records while no link could tell
 * which process lives, hang off it in a list (alt) until a request of one
 * of them arrives, which proves the others gone.
 *
 * The writer table is an open-addressed hash on the whole 32-bit writer id:
 * in a cluster an edge id is host_number << 12 | slot (server/core/worker.h),
 * so edges of two hosts share their low bits, and a table indexed by them
 * would let one host's new incarnation wipe the other's records (a retry
 * then applied twice).
 */
#include "server/owner/owner_rifl_int.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/wire.h"

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

/* Frees the other incarnations' states of w. */
static void drop_alts(struct rifl *r, struct wstate *w)
{
    while (w->alt != NULL) {
        struct wstate *a = w->alt;
        w->alt = a->alt;
        rifl_ring_forget_all(r, a);
        free(a->ring);
        free(a->ov);
        free(a);
    }
}

/* The state of incarnation inc of writer w (w itself or one of its alts), or NULL. */
static struct wstate *inc_state(const struct wstate *w, uint64_t inc)
{
    if (w->inc == inc)
        return (struct wstate *)w;
    for (struct wstate *a = w->alt; a != NULL; a = a->alt)
        if (a->inc == inc)
            return a;
    return NULL;
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
        drop_alts(r, w);
        rifl_ring_forget_all(r, w);
        free(w->ring);
        free(w->ov);
    }
    free(r->w);
    free(r);
    *rp = NULL;
}

void rifl_set_max(struct rifl *r, size_t max) { r->max = max ? max : 1; }

/* A live request of incarnation inc: every other incarnation of the writer
 * is a process that is gone (a slot is restarted only once reaped), so its
 * records go.  Records of inc merged earlier into an alt state are kept:
 * they become w's. */
static void writer_live(struct rifl *r, struct wstate *w, uint64_t inc)
{
    if (w->inc == inc) {
        if (w->alt != NULL)
            drop_alts(r, w);
        return;
    }
    struct wstate *a = NULL;
    for (struct wstate **pp = &w->alt; *pp != NULL; pp = &(*pp)->alt)
        if ((*pp)->inc == inc) {
            a = *pp;
            *pp = a->alt;
            break;
        }
    drop_alts(r, w);
    rifl_ring_forget_all(r, w);
    if (a == NULL) {
        w->inc = inc;
        return;
    }
    free(w->ring);
    free(w->ov);
    w->inc = a->inc;
    w->ack = a->ack;
    w->lo = a->lo;
    w->ring = a->ring;
    w->cap = a->cap;
    w->nring = a->nring;
    w->ov = a->ov;
    w->oh = a->oh;
    w->on = a->on;
    w->ocap = a->ocap;
    w->lost = a->lost;
    free(a);
}

void rifl_ack(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t ack)
{
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL)
        return;
    writer_live(r, w, inc);
    rifl_ring_ack(r, w, ack);
}

const struct rifl_result *rifl_get(const struct rifl *r, uint32_t writer, uint64_t inc,
                                   uint64_t seq)
{
    const struct wstate *w = wstate_find(r, writer);
    if (w == NULL || (w = inc_state(w, inc)) == NULL)
        return NULL;
    const struct rec *x = rs_find(w, seq);
    return x != NULL ? &x->res : NULL;
}

int rifl_unknown(const struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq)
{
    const struct wstate *w = wstate_find(r, writer);
    if (w == NULL || (w = inc_state(w, inc)) == NULL)
        return r->stateless_lost;
    return seq < w->ack || seq <= w->lost;
}

/* Keeps res as the record of seq in state w (the caller has made w the
 * request's incarnation).  A record that cannot be kept raises w->lost. */
static int state_put(struct rifl *r, struct wstate *w, uint64_t seq, const struct rifl_result *res)
{
    if (seq < w->ack || seq == 0)
        return HKV_OK; /* finished: the writer will not retry it (0: never a request) */
    size_t need = rifl_ring_copy_size(res);
    char *mem = NULL;
    if (need > 0 && (mem = malloc(need)) == NULL)
        goto lost;
    struct rec *x = rs_find(w, seq);
    if (x == NULL) {
        while (w->nring + w->on >= r->max && w->nring + w->on > 0) {
            rifl_ring_evict_oldest(r, w);
            r->dropped++;
        }
        x = rifl_ring_make_slot(w, seq);
        if (x == NULL) {
            free(mem);
            goto lost;
        }
        x->seq = seq;
        r->n++;
    } else {
        free(x->mem); /* a second put of the request replaces the first */
    }
    x->mem = mem;
    rifl_ring_copy_into(res, &x->res, mem);
    return HKV_OK;
lost:
    if (seq > w->lost)
        w->lost = seq;
    return HKV_ENOMEM;
}

int rifl_put(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
             const struct rifl_result *res)
{
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL) {
        r->stateless_lost = 1;
        return HKV_ENOMEM;
    }
    writer_live(r, w, inc);
    return state_put(r, w, seq, res);
}

void rifl_lost(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq)
{
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL) {
        r->stateless_lost = 1;
        return;
    }
    writer_live(r, w, inc);
    if (seq > w->lost)
        w->lost = seq;
}

void rifl_stats(const struct rifl *r, struct rifl_stats *out)
{
    out->records = r->n;
    out->dropped = r->dropped;
}

static void each_state(const struct wstate *w, uint32_t writer, rifl_each_fn fn, void *arg)
{
    for (size_t k = w->oh; k < w->oh + w->on; k++)
        fn(arg, writer, w->inc, w->ov[k].seq, &w->ov[k].res);
    size_t left = w->nring;
    for (uint64_t s = w->lo; left > 0; s++) {
        const struct rec *x = rs_ring_at(w, s);
        if (x->seq == s) {
            fn(arg, writer, w->inc, s, &x->res);
            left--;
        }
    }
    if (w->lost != 0)
        fn(arg, writer, w->inc, w->lost, NULL);
}

void rifl_each(const struct rifl *r, rifl_each_fn fn, void *arg)
{
    for (size_t i = 0; i < r->nw; i++) {
        const struct wstate *w = &r->w[i];
        if (!w->used)
            continue;
        each_state(w, w->writer, fn, arg);
        for (const struct wstate *a = w->alt; a != NULL; a = a->alt)
            each_state(a, w->writer, fn, arg);
    }
}

/* The state a travelled record of incarnation inc goes to, made if need
 * be; NULL with *rc set when it is not taken. */
static struct wstate *merge_state(struct rifl *r, uint32_t writer, uint64_t inc,
                                  uint64_t live_inc, int *rc)
{
    struct wstate *w = wstate_of(r, writer);
    *rc = HKV_ENOMEM;
    if (w == NULL) {
        r->stateless_lost = 1;
        return NULL;
    }
    if (w->inc == 0)
        w->inc = inc; /* first sight of the writer (an incarnation is never 0) */
    if (w->inc == inc)
        return w;
    if (live_inc == inc) { /* the writer's links here name it: the others are gone */
        writer_live(r, w, inc);
        return w;
    }
    if (live_inc != 0) { /* a link names another: this record's process is gone */
        *rc = HKV_EEXIST;
        return NULL;
    }
    /* No link tells which process lives: keep both (each until a request of
     * the other arrives), never forget one for the other. */
    struct wstate *a = inc_state(w, inc);
    if (a != NULL)
        return a;
    if ((a = calloc(1, sizeof(*a))) == NULL)
        return NULL;
    a->used = 1;
    a->writer = writer;
    a->inc = inc;
    a->lo = 1;
    a->alt = w->alt;
    w->alt = a;
    return a;
}

int rifl_merge(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
               const struct rifl_result *res, uint64_t live_inc)
{
    int rc;
    struct wstate *w = merge_state(r, writer, inc, live_inc, &rc);
    if (w == NULL)
        return rc;
    if (res == NULL) { /* the sender's lost mark */
        if (seq > w->lost)
            w->lost = seq;
        return HKV_OK;
    }
    if (seq < w->ack || rs_find(w, seq) != NULL)
        return HKV_EEXIST;
    struct rifl_result copy = *res;
    copy.ticket = 0; /* the receiver committed what it acknowledged */
    return state_put(r, w, seq, &copy);
}
