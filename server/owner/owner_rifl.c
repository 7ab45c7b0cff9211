/*
 * owner_rifl.c - completion records (owner_rifl.h).
 *
 * Records live in one chained hash table keyed by (writer, incarnation,
 * seq) and, per writer, in a FIFO in arrival order.  Writers' seqs grow and
 * most requests arrive in order, so forgetting "everything below ack" pops
 * the FIFO's head while it is below ack; a record that arrived out of order
 * (a retry whose first attempt was lost) waits behind a newer one until
 * that one goes, which only delays its release.  The writer table is an
 * open-addressed hash on the whole 32-bit writer id: in a cluster an edge id
 * is host_number << 12 | slot (server/core/worker.h), so edges of two hosts
 * share their low bits, and a table indexed by them would let one host's new
 * incarnation wipe the other's records (a retry then applied twice).
 */
#include "server/owner/owner_rifl.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/wire.h"

#define MIN_BUCKETS 64
#define MIN_WRITERS 64

struct rec {
    struct rec *hnext;   /* hash chain */
    struct rec *fnext;   /* writer's FIFO */
    uint32_t writer;
    uint64_t inc, seq;
    struct rifl_result res;
    char *mem;           /* owned copy of res.old, or of res.resp and res.changes */
};

struct wstate {
    uint32_t writer;
    uint8_t used;
    uint64_t inc;
    struct rec *head, *tail;
    size_t n;
};

struct rifl {
    struct rec **b;
    size_t nb, n, max;
    uint64_t dropped;
    struct wstate *w;    /* open addressing by writer id, nw slots (a power of 2) */
    size_t nw, nwused;
    struct rec *spare;   /* released records kept for the next put (chained by hnext) */
    size_t nspare;
};

/* Records released and taken again at the write rate: up to SPARE_MAX are
 * kept rather than freed, so a steady stream of writes allocates none. */
#define SPARE_MAX 1024

static uint64_t mix(uint32_t writer, uint64_t inc, uint64_t seq)
{
    uint64_t h = seq * 0x9e3779b97f4a7c15ULL ^ inc * 0xc2b2ae3d27d4eb4fULL ^ writer;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

int rifl_create(size_t max, struct rifl **out)
{
    struct rifl *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return HKV_ENOMEM;
    r->b = calloc(MIN_BUCKETS, sizeof(*r->b));
    if (r->b == NULL) {
        free(r);
        return HKV_ENOMEM;
    }
    r->nb = MIN_BUCKETS;
    r->w = calloc(MIN_WRITERS, sizeof(*r->w));
    if (r->w == NULL) {
        free(r->b);
        free(r);
        return HKV_ENOMEM;
    }
    r->nw = MIN_WRITERS;
    r->max = max ? max : 1;
    *out = r;
    return HKV_OK;
}

static void rec_free(struct rec *x)
{
    free(x->mem);
    free(x);
}

static void rec_release(struct rifl *r, struct rec *x)
{
    if (r->nspare >= SPARE_MAX) {
        rec_free(x);
        return;
    }
    free(x->mem);
    x->mem = NULL;
    x->hnext = r->spare;
    r->spare = x;
    r->nspare++;
}

static struct rec *rec_take(struct rifl *r)
{
    struct rec *x = r->spare;
    if (x == NULL)
        return calloc(1, sizeof(*x));
    r->spare = x->hnext;
    r->nspare--;
    memset(x, 0, sizeof(*x));
    return x;
}

/* One allocation holding what res points to (old; or the RESP reply, the
 * change array and its keys), with *out's pointers aimed into it.  *mem is
 * NULL when there is nothing to copy.  HKV_OK or HKV_ENOMEM. */
static int deep_copy(const struct rifl_result *res, struct rifl_result *out, char **mem)
{
    *out = *res;
    *mem = NULL;
    size_t n = 0;
    if (res->type == WIRE_RESP) {
        n = res->resplen + (size_t)res->nchanges * sizeof(struct wire_watch);
        for (uint32_t i = 0; i < res->nchanges; i++)
            n += res->changes[i].key.len;
    } else if (res->has_old) {
        n = res->oldlen;
    } else {
        return HKV_OK;
    }
    char *m = malloc(n ? n : 1);
    if (m == NULL)
        return HKV_ENOMEM;
    *mem = m;
    if (res->type != WIRE_RESP) {
        memcpy(m, res->old, res->oldlen);
        out->old = m;
        return HKV_OK;
    }
    /* the change array first: it needs the alignment malloc gives */
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
    return HKV_OK;
}

void rifl_destroy(struct rifl **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    struct rifl *r = *rp;
    for (size_t i = 0; i < r->nb; i++)
        for (struct rec *x = r->b[i], *next; x != NULL; x = next) {
            next = x->hnext;
            rec_free(x);
        }
    while (r->spare != NULL) {
        struct rec *x = r->spare;
        r->spare = x->hnext;
        free(x);
    }
    free(r->b);
    free(r->w);
    free(r);
    *rp = NULL;
}

static size_t wslot(const struct wstate *w, size_t nw, uint32_t writer)
{
    size_t i = (size_t)((writer * 0x9e3779b97f4a7c15ULL) >> 32) & (nw - 1);
    while (w[i].used && w[i].writer != writer)
        i = (i + 1) & (nw - 1);
    return i;
}

/* Writer `writer`'s state, made on first sight; NULL only when the table
 * is full and cannot grow (then the caller keeps no record: the reply is
 * still given, a retry of it is answered "outcome unknown"). */
static struct wstate *wstate_of(struct rifl *r, uint32_t writer)
{
    size_t i = wslot(r->w, r->nw, writer);
    if (r->w[i].used)
        return &r->w[i];
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
    r->nwused++;
    return &r->w[i];
}

void rifl_set_max(struct rifl *r, size_t max) { r->max = max ? max : 1; }

static struct rec **slot(const struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq)
{
    struct rec **pp = &r->b[mix(writer, inc, seq) & (r->nb - 1)];
    while (*pp != NULL && !((*pp)->writer == writer && (*pp)->inc == inc && (*pp)->seq == seq))
        pp = &(*pp)->hnext;
    return pp;
}

/* Removes the head of writer w's FIFO from the table and frees it. */
static void pop_head(struct rifl *r, struct wstate *w)
{
    struct rec *x = w->head;
    w->head = x->fnext;
    if (w->head == NULL)
        w->tail = NULL;
    w->n--;
    struct rec **pp = slot(r, x->writer, x->inc, x->seq);
    if (*pp == x)
        *pp = x->hnext;
    r->n--;
    rec_release(r, x);
}

void rifl_ack(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t ack)
{
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL)
        return;
    if (w->inc != inc) {
        while (w->head != NULL)
            pop_head(r, w);
        w->inc = inc;
    }
    while (w->head != NULL && w->head->seq < ack)
        pop_head(r, w);
}

const struct rifl_result *rifl_get(const struct rifl *r, uint32_t writer, uint64_t inc,
                                   uint64_t seq)
{
    struct rec *x = *slot(r, writer, inc, seq);
    return x != NULL ? &x->res : NULL;
}

static void grow(struct rifl *r)
{
    size_t nb = r->nb * 2;
    struct rec **b = calloc(nb, sizeof(*b));
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < r->nb; i++)
        for (struct rec *x = r->b[i], *next; x != NULL; x = next) {
            next = x->hnext;
            struct rec **pp = &b[mix(x->writer, x->inc, x->seq) & (nb - 1)];
            x->hnext = *pp;
            *pp = x;
        }
    free(r->b);
    r->b = b;
    r->nb = nb;
}

int rifl_put(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
             const struct rifl_result *res)
{
    struct rifl_result copy;
    char *mem;
    if (deep_copy(res, &copy, &mem) != HKV_OK)
        return HKV_ENOMEM;
    struct rec **pp = slot(r, writer, inc, seq);
    if (*pp != NULL) {
        free((*pp)->mem);
        (*pp)->mem = mem;
        (*pp)->res = copy;
        return HKV_OK;
    }
    struct rec *x = rec_take(r);
    if (x == NULL) {
        free(mem);
        return HKV_ENOMEM;
    }
    struct wstate *w = wstate_of(r, writer);
    if (w == NULL) {
        rec_release(r, x);
        free(mem);
        return HKV_ENOMEM;
    }
    if (w->inc != inc)
        rifl_ack(r, writer, inc, 0); /* a new incarnation: the old one's records go */
    while (w->n >= r->max && w->head != NULL) {
        pop_head(r, w);
        r->dropped++;
    }
    x->writer = writer;
    x->inc = inc;
    x->seq = seq;
    x->res = copy;
    x->mem = mem;
    pp = slot(r, writer, inc, seq); /* pops may have changed the chain */
    x->hnext = *pp;
    *pp = x;
    if (w->tail != NULL)
        w->tail->fnext = x;
    else
        w->head = x;
    w->tail = x;
    w->n++;
    if (++r->n > r->nb)
        grow(r);
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
        for (const struct rec *x = w->used ? w->head : NULL; x != NULL; x = x->fnext)
            fn(arg, x->writer, x->inc, x->seq, &x->res);
    }
}

int rifl_merge(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
               const struct rifl_result *res, uint64_t live_inc)
{
    size_t i = wslot(r->w, r->nw, writer);
    if (r->w[i].used && r->w[i].inc != inc) {
        /* which incarnation lives: the one the writer's links here name;
         * without a link, the sender's (it served the writer just now) */
        if (live_inc != 0 && live_inc != inc)
            return HKV_EEXIST;
    } else if (r->w[i].used && rifl_get(r, writer, inc, seq) != NULL) {
        return HKV_EEXIST;
    }
    struct rifl_result copy = *res;
    copy.ticket = 0; /* the receiver committed what it acknowledged */
    return rifl_put(r, writer, inc, seq, &copy);
}
