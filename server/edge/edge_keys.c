/*
 * edge_keys.c - KEYS and RANDOMKEY, over the owners' SCAN.
 *
 * KEYS pattern is a full SCAN of every owner with MATCH (the owners match
 * with the ledger's glob, Redis's stringmatchlen rules), every owner walked
 * in parallel, page by page, so no owner's loop stalls on it: each page is
 * one bounded request.  The answer is built at the edge, each key once
 * (a SCAN may return a key twice across a resize), sorted by bytes: Redis
 * answers in its table's order, which no client can rely on.  KEYS is
 * bounded by keys-max: as soon as the owners have returned more matching
 * keys than that (counted as they come, duplicates included), the walk stops
 * and the client gets an error that says to use SCAN, instead of a reply the
 * size of the keyspace.  Like SCAN, KEYS sees the keys an owner holds in
 * memory: an owner whose ledger is incomplete (owner-maxmemory evicted keys
 * to disk only) does not list those (README, SCAN).
 *
 * RANDOMKEY first asks every owner for its key count (STATS, as DBSIZE),
 * picks an owner with probability proportional to it, and reads one SCAN
 * page of that owner from a random cursor (a random bucket of its table);
 * a random one of the live keys there is the answer.  An empty page moves on to the
 * next page, once round the end of the cursor space, at most
 * RANDOM_PAGES pages per owner; an owner that gives nothing is dropped and
 * another is drawn, so the work is bounded by RANDOM_PAGES per owner, and
 * the answer is nil only when no owner holds a live key.  Like Redis's,
 * the choice is only roughly uniform (by bucket, then by chain).
 */
#include "server/edge/edge_keys.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_sess.h"

#define KEYS_PAGE 1000           /* SCAN COUNT of one KEYS page */
#define RANDOM_PAGES 8           /* SCAN pages RANDOMKEY reads from one owner at most */
#define RANDOM_COUNT 16          /* each page's COUNT: Idempotency-Key records beside the
                                    keys are visited but never returned (a check saw nil
                                    from 8 one-visit pages of records) */
#define RANDOM_CURSOR_MASK ((1ULL << 54) - 1) /* an owner's own cursor (edge_scan.c) */

/* The op's arguments (its args block).  Per owner, op->items[g] holds the
 * owner's state: KEYS its cursor (off) and whether it is done (found);
 * RANDOMKEY its key count (off). */
struct keys_args {
    uint64_t nkeys;               /* KEYS: keys returned so far (before dedup) */
    uint64_t max;                 /* KEYS: keys-max when the command came */
    uint64_t total;               /* RANDOMKEY: keys counted over the owners left */
    uint64_t cursor;              /* RANDOMKEY: the page asked for */
    uint32_t owner;               /* RANDOMKEY: the owner drawn */
    uint32_t pages;               /* RANDOMKEY: pages read from it */
    int wrapped;                  /* RANDOMKEY: times its cursor came back to 0 */
    int scanning;                 /* RANDOMKEY: past the STATS round */
    int found;                    /* RANDOMKEY: the key is in op->res */
};
_Static_assert(sizeof(struct keys_args) <= OP_ARGS_MAX, "keys_args too large for an op");
_Static_assert(sizeof(size_t) >= sizeof(uint64_t), "a cursor fits an item's offset");
#define K(op) OP_ARGS(op, struct keys_args)

static int owner_no(const struct oreq *r)
{
    return (int)(r->owner - r->op->e->owners->ref);
}

static int wrong_answer(struct op *op, const struct oreq *r, const struct wire_msg *m, int type)
{
    if (m->type == type)
        return 0;
    op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
             r->owner->index);
    return 1;
}

/* ---- KEYS ------------------------------------------------------------------------ */

static int keys_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    return wire_put_scan(b, id, op->items[owner_no(r)].off, KEYS_PAGE, &op->value);
}

/* op->res holds the keys returned so far, each as a length then its bytes. */
static void keys_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (wrong_answer(op, r, m, WIRE_SCAN_REPLY))
        return;
    struct op_item *it = &op->items[owner_no(r)];
    it->off = (size_t)m->u.scan_reply.cursor;
    it->found = m->u.scan_reply.cursor == 0; /* this owner is done */
    K(op)->nkeys += m->u.scan_reply.nkeys;
    if (K(op)->nkeys > K(op)->max) {
        op_error(op, "ERR KEYS matches more than keys-max (%llu) keys; use SCAN with MATCH "
                 "and COUNT instead", (unsigned long long)K(op)->max);
        return;
    }
    for (uint32_t i = 0; i < m->u.scan_reply.nkeys; i++) {
        struct wire_slice k = m->u.scan_reply.keys[i];
        uint64_t len = k.len;
        if (buf_append(&op->res, &len, sizeof(len)) != HKV_OK ||
            buf_append(&op->res, k.p, k.len) != HKV_OK) {
            op_error(op, "ERR out of memory");
            return;
        }
    }
}

static int slice_cmp(const void *a, const void *b)
{
    const struct wire_slice *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* Every owner is done: the keys, each once. */
static void keys_reply(struct op *op)
{
    uint64_t n = K(op)->nkeys;
    struct wire_slice *ks = malloc((n ? n : 1) * sizeof(*ks));
    if (ks == NULL) {
        op_error(op, "ERR out of memory");
        op_finish_error(op);
        return;
    }
    const char *p = buf_head(&op->res);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        memcpy(&len, p, sizeof(len));
        ks[i] = wire_slice(p + sizeof(len), (size_t)len);
        p += sizeof(len) + len;
    }
    qsort(ks, n, sizeof(*ks), slice_cmp);
    uint64_t u = 0;
    for (uint64_t i = 0; i < n; i++)
        if (u == 0 || slice_cmp(&ks[u - 1], &ks[i]) != 0)
            ks[u++] = ks[i];
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        resp_add_array(out, (int64_t)u);
        for (uint64_t i = 0; i < u; i++)
            resp_add_bulk(out, ks[i].p, ks[i].len);
    }
    free(ks);
    op_finish(op);
}

/* The next round: one page of every owner not done yet. */
static void keys_done(struct op *op)
{
    struct edge *e = op->e;
    op->nreqs = 0;
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g))
        if (!op->items[g].found &&
            op_to_owner(op, &e->owners->ref[g], WIRE_SCAN, WIRE_ROLE_READ) != 0) {
            op_finish_error(op);
            return;
        }
    if (op->nreqs == 0)
        keys_reply(op);
    else
        op_start(op);
}

static const struct op_family keys_ops = {
    .flags = 0, .encode = keys_encode, .answer = keys_answer, .done = keys_done};

void edge_cmd_keys(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (edge_owner_next(e, -1) < 0) {
        resp_add_array(&c->out, 0);
        return;
    }
    struct op *op = op_new(c, &keys_ops, "keys");
    if (op == NULL)
        return;
    K(op)->max = (uint64_t)e->cmd_opts.keys_max;
    if (op_copy_keys(op, 0, NULL, 1, &argv[1]) != 0 ||
        op_items(op, (uint32_t)e->owners->n) == NULL) {
        op_finish_error(op);
        return;
    }
    keys_done(op); /* the first round */
}

/* ---- RANDOMKEY ----------------------------------------------------------------------- */

static uint64_t rng_state;

/* xorshift64*, seeded once per process from the kernel. */
static uint64_t rng_next(void)
{
    if (rng_state == 0) {
        if (getrandom(&rng_state, sizeof(rng_state), GRND_NONBLOCK) != sizeof(rng_state))
            rng_state = (uint64_t)clock_mono_ms() * 0x9E3779B97F4A7C15ULL;
        rng_state |= 1;
    }
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static int random_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                         const struct wire_slice *keys, struct wire_rid rid)
{
    if (r->type == WIRE_STATS)
        return wire_put_stats(b, id);
    return wire_put_scan(b, id, K(r->op)->cursor, RANDOM_COUNT, NULL);
}

static void random_reply(struct op *op, const struct wire_slice *key)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (key != NULL)
            resp_add_bulk(out, key->p, key->len);
        else
            resp_add_null(out, sess_of(op->c)->proto);
    }
    op_finish(op);
}

/* Draws an owner by its key count and asks a page from a random cursor. */
static void random_draw(struct op *op)
{
    struct edge *e = op->e;
    if (K(op)->total == 0) {
        random_reply(op, NULL);
        return;
    }
    uint64_t x = rng_next() % K(op)->total;
    int g = 0;
    while (g < e->owners->n - 1 && x >= (uint64_t)op->items[g].off)
        x -= (uint64_t)op->items[g++].off;
    K(op)->owner = (uint32_t)g;
    K(op)->cursor = rng_next() & RANDOM_CURSOR_MASK;
    K(op)->pages = 0;
    K(op)->wrapped = 0;
    op->nreqs = 0;
    if (op_to_owner(op, &e->owners->ref[g], WIRE_SCAN, WIRE_ROLE_READ) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

static void random_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!K(op)->scanning) {
        if (wrong_answer(op, r, m, WIRE_STATS_REPLY))
            return;
        int64_t v[CTR_OWNER_COUNT] = {0};
        edge_owner_take_stats(m, v);
        uint64_t n = v[CTR_OWNER_owner_keys] > 0 ? (uint64_t)v[CTR_OWNER_owner_keys] : 0;
        op->items[owner_no(r)].off = (size_t)n;
        K(op)->total += n;
        return;
    }
    if (wrong_answer(op, r, m, WIRE_SCAN_REPLY))
        return;
    uint32_t n = m->u.scan_reply.nkeys;
    if (n > 0) {
        /* the key is copied: the reply is written after this frame is gone */
        struct wire_slice k = m->u.scan_reply.keys[rng_next() % n];
        buf_reset(&op->res);
        if (buf_append(&op->res, k.p, k.len) != HKV_OK)
            op_error(op, "ERR out of memory");
        K(op)->found = 1;
        return;
    }
    K(op)->pages++;
    K(op)->cursor = m->u.scan_reply.cursor;
    if (K(op)->cursor == 0)
        K(op)->wrapped++;
}

static void random_done(struct op *op)
{
    struct edge *e = op->e;
    if (!K(op)->scanning) {
        K(op)->scanning = 1;
        random_draw(op);
        return;
    }
    if (K(op)->found) {
        struct wire_slice k = wire_slice(buf_head(&op->res), buf_unread(&op->res));
        random_reply(op, &k);
        return;
    }
    if (K(op)->pages >= RANDOM_PAGES || K(op)->wrapped > 1) {
        /* nothing live found there: draw among the others */
        struct op_item *it = &op->items[K(op)->owner];
        K(op)->total -= (uint64_t)it->off;
        it->off = 0;
        random_draw(op);
        return;
    }
    op->nreqs = 0;
    if (op_to_owner(op, &e->owners->ref[K(op)->owner], WIRE_SCAN, WIRE_ROLE_READ) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

static const struct op_family random_ops = {
    .flags = 0, .encode = random_encode, .answer = random_answer, .done = random_done};

void edge_cmd_randomkey(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (edge_owner_next(e, -1) < 0) {
        resp_add_null(&c->out, sess_of(c)->proto);
        return;
    }
    struct op *op = op_new(c, &random_ops, "randomkey");
    if (op == NULL)
        return;
    if (op_items(op, (uint32_t)e->owners->n) == NULL) {
        op_finish_error(op);
        return;
    }
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        if (op_to_owner(op, &e->owners->ref[g], WIRE_STATS, WIRE_ROLE_READ) != 0) {
            op_finish_error(op);
            return;
        }
    }
    op_start(op);
}
