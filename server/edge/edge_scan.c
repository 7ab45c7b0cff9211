/*
 * edge_scan.c - commands over the whole keyspace (SCAN, DBSIZE) and the 1 s
 * keyspace size (DBSIZE) asked of every owner.
 *
 * SCAN walks the hash space in order, so what a key's owner is does not
 * matter to it: the cursor is a place in the space, not an owner's.
 *
 *   cursor = pool << 63 | position      (proto/place.h place_pos: the top 32
 *            bits of the placement hash, then 31 of the identity hash)
 *
 * The hot pool's space from position 0 to its end, then the cold pool's;
 * cursor 0 is the start and the end.  A call asks, for the position it is
 * at, the owner of the leaf that holds it (by this edge's map: the fixed
 * maps on a single host, the cluster map in a cluster) for the keys of
 * [position, leaf end) in position order (SCAN_RANGE); the owner cuts the
 * range to the leaf it serves there and answers the keys of [position,
 * next) and next.  [position, next) is then done: every key present in it
 * for the whole call was in the answer, because the owner that answered
 * served all of it at that moment (CLUSTER.md §5: a leaf is served by one
 * owner at a time, and a move commits only once the target holds every
 * key).  So the walk never depends on where a range was before or after:
 * a leaf that moved or split between calls, or between the routing and the
 * answer, costs a MOVED (the map takes it and the same position is routed
 * again) or a shorter range, never a key.  Within a call the walk goes on
 * while it has fewer than COUNT keys: a leaf answered to its end leads to
 * the next leaves, asked in parallel in windows that double while leaves
 * come back complete; an answer that stopped short continues from where it
 * stopped.  A request asks for the whole run of leaves the map gives one
 * owner from the position on (the owner answers what it serves of it), so
 * a pool whose leaves are one owner's is one request, and a page fills as
 * Redis's does (SCAN 0 over a few keys returns them all, cursor 0).  A
 * call sends at most SCAN_LEAVES_MAX requests.
 *
 * As in Redis: a key present for the whole scan is returned at least once
 * (here: exactly once, unless it moved pools by a config reload), COUNT is
 * a hint, a page may be empty, MATCH filters on the owner, TYPE is a
 * filter on the edge (every key is a string).  Cursors differ from Redis's
 * by design (tests/diff/differences.py compares a full SCAN's keys).
 * Cursors of the old layout (owner number in the top bits) are read as
 * positions: a scan that spans an upgrade may miss keys.
 */
#include "server/edge/edge_scan.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/place.h"
#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"

#define SCAN_POOL_BIT (1ULL << 63)
#define SCAN_WINDOW_MAX 32        /* leaves asked at once */
#define SCAN_LEAVES_MAX 4096      /* requests in one call, in all: an empty keyspace of
                                   * 2 x 1024 leaves over any owners is one call */
#define SCAN_REROUTES 8           /* MOVED answers followed in one call */
#define SCAN_RUN_LEAVES 65536     /* leaves of one owner asked in one request */

enum { LEAF_ASKED, LEAF_DONE, LEAF_MOVED };

/* One leaf asked in this round. */
struct scan_leaf {
    uint64_t from, to;            /* the range asked: [position, leaf end) */
    uint64_t next;                /* answered: [from, next) is done */
    size_t off, len;              /* its keys in st->round: [u32 len][bytes] ... */
    uint32_t n;
    int state;
};

struct scan_state {
    int pool;                     /* enum cfg_pool the walk is in */
    uint64_t pos;                 /* the next position to ask for */
    uint32_t count, found;        /* COUNT; keys accepted so far */
    int window, asked, reroutes, stalled;
    int has_match;                /* MATCH: the pattern is op->value */
    int nleaves;                  /* this round's */
    struct scan_leaf leaf[SCAN_WINDOW_MAX];
    struct hkv_buf round;         /* this round's keys, as they came */
};

/* A keyspace op's arguments and results (in the op's args block). */
struct scan_args {
    struct scan_state *st;        /* SCAN: the walk (freed as the op ends) */
    int64_t keys;                 /* DBSIZE: the sum so far */
};
_Static_assert(sizeof(struct scan_args) <= OP_ARGS_MAX, "scan_args too large for an op");
#define S(op) OP_ARGS(op, struct scan_args)

static uint32_t req_index(struct op *op, const struct oreq *r)
{
    return r == &op->one ? 0 : (uint32_t)(r - op->reqs);
}

static int scan_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    if (r->type == WIRE_STATS)
        return wire_put_stats(b, id);
    struct scan_state *st = S(op)->st;
    const struct scan_leaf *lf = &st->leaf[req_index(op, r)];
    uint32_t want = st->count > st->found ? st->count - st->found : 1;
    return wire_put_scan_range(b, id, lf->from, lf->to, want, st->has_match ? &op->value : NULL);
}

/* Redis's parseScanCursorOrReply: strtoul() over the argument as a C
 * string, refused only for a leading blank, a non-digit before the end or
 * ERANGE.  So "" is 0, "-1" is 2^64-1 (past every key: an empty last
 * page), "+5" is 5, and what follows a NUL is not read. */
static int parse_cursor(const struct resp_slice *s, uint64_t *out)
{
    char small[64];
    size_t n = strnlen(s->p, s->len);
    char *buf = n < sizeof(small) ? small : malloc(n + 1);
    if (buf == NULL)
        return -1;
    memcpy(buf, s->p, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    int ok = !isspace((unsigned char)buf[0]) && *end == '\0' && errno != ERANGE;
    if (buf != small)
        free(buf);
    if (!ok)
        return -1;
    *out = v;
    return 0;
}

/* ---- the walk ------------------------------------------------------------------------ */

static void scan_reply_empty(struct hkv_buf *out, uint64_t cursor)
{
    char num[32];
    int len = snprintf(num, sizeof(num), "%llu", (unsigned long long)cursor);
    resp_add_array(out, 2);
    resp_add_bulk(out, num, (size_t)len);
    resp_add_array(out, 0);
}

/* Writes the page: the cursor where the walk is, and the keys accepted. */
static void scan_finish(struct op *op)
{
    struct scan_state *st = S(op)->st;
    struct hkv_buf *out = op_out(op);
    if (out == NULL) {
        op_finish(op);
        return;
    }
    uint64_t cursor = 0;
    if (st->pool <= CFG_POOL_COLD && st->pos < PLACE_POS_END)
        cursor = (st->pool == CFG_POOL_COLD ? SCAN_POOL_BIT : 0) | st->pos;
    else if (st->pool == CFG_POOL_HOT)
        cursor = SCAN_POOL_BIT; /* the cold pool from its start */
    if (cursor == 0 && st->pool == CFG_POOL_HOT && st->pos == 0) {
        /* not one position done, and the first one cannot be written down */
        op_error(op, "TRYAGAIN SCAN could not make progress: the owners are changing");
        op_finish_error(op);
        return;
    }
    char num[32];
    int len = snprintf(num, sizeof(num), "%llu", (unsigned long long)cursor);
    resp_add_array(out, 2);
    resp_add_bulk(out, num, (size_t)len);
    resp_add_array(out, st->found);
    const char *p = buf_head(&op->res), *end = p + buf_unread(&op->res);
    while (p < end) {
        uint32_t n;
        memcpy(&n, p, sizeof(n));
        resp_add_bulk(out, p + sizeof(n), n);
        p += sizeof(n) + n;
    }
    op_finish(op);
}

/* The end of the leaf (bits, prefix) and of the leaves after it that this
 * edge's map gives to the same owner: one request asks the whole run (the
 * owner cuts it to what it serves when it answers). */
static uint64_t run_end(struct edge *e, int pool, const struct owner_ref *o, uint8_t bits,
                        uint32_t prefix)
{
    uint64_t end = place_leaf_end(bits, prefix);
    for (int n = 0; n < SCAN_RUN_LEAVES && end < PLACE_POS_END; n++) {
        uint32_t p2;
        uint8_t b2;
        if (edge_owner_of_place(e, (enum cfg_pool)pool, place_pos_hash(end), &p2, &b2) != o)
            break;
        uint64_t next = place_leaf_end(b2, p2);
        if (next <= end)
            break;
        end = next;
    }
    return end;
}

/* Asks the next window of leaves from st->pos on; the page is written when
 * there is nothing left to ask. */
static void scan_round(struct op *op)
{
    struct scan_state *st = S(op)->st;
    struct edge *e = op->e;
    op->nreqs = 0;
    st->nleaves = 0;
    buf_reset(&st->round);
    while (st->nleaves < st->window && st->asked < SCAN_LEAVES_MAX && st->pool <= CFG_POOL_COLD) {
        if (st->pos >= PLACE_POS_END) { /* the pool is done: the next one from its start */
            if (st->nleaves > 0)
                break; /* (a round stays in one pool) */
            st->pool++;
            st->pos = 0;
            continue;
        }
        uint32_t prefix;
        uint8_t bits;
        struct owner_ref *o = edge_owner_of_place(e, (enum cfg_pool)st->pool,
                                                  place_pos_hash(st->pos), &prefix, &bits);
        if (o == NULL) { /* a pool with no owner holds no key */
            if (st->nleaves > 0)
                break;
            st->pos = PLACE_POS_END;
            continue;
        }
        struct scan_leaf *lf = &st->leaf[st->nleaves++];
        *lf = (struct scan_leaf){.from = st->pos, .to = run_end(e, st->pool, o, bits, prefix)};
        lf->next = lf->from;
        if (lf->to <= lf->from) /* cannot be: a leaf holds its positions */
            lf->to = lf->from + 1;
        if (op_to_owner(op, o, WIRE_SCAN_RANGE, WIRE_ROLE_READ) != 0) {
            op_finish_error(op);
            return;
        }
        st->asked++;
        st->pos = lf->to;
    }
    if (st->nleaves == 0) {
        scan_finish(op);
        return;
    }
    op_start(op);
}

static void scan_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct scan_state *st = S(op)->st;
    struct scan_leaf *lf = &st->leaf[req_index(op, r)];
    if (m->type == WIRE_MOVED) {
        lf->state = LEAF_MOVED;
        return;
    }
    if (m->type != WIRE_SCAN_REPLY) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    uint64_t next = m->u.scan_reply.cursor;
    if (next < lf->from || next > lf->to) {
        op_error(op, "ERR owner %s/%d answered a SCAN position outside the range asked",
                 topo_pool_name(r->owner->pool), r->owner->index);
        return;
    }
    lf->next = next;
    lf->off = buf_unread(&st->round);
    for (uint32_t i = 0; i < m->u.scan_reply.nkeys; i++) {
        const struct wire_slice *k = &m->u.scan_reply.keys[i];
        uint32_t n = (uint32_t)k->len;
        if (buf_append(&st->round, &n, sizeof(n)) != HKV_OK ||
            buf_append(&st->round, k->p, k->len) != HKV_OK) {
            op_error(op, "OOM edge out of memory");
            return;
        }
    }
    lf->len = buf_unread(&st->round) - lf->off;
    lf->n = m->u.scan_reply.nkeys;
    lf->state = LEAF_DONE;
}

/* Every leaf of the round answered: take them in order up to the first
 * that stopped short or moved, then ask on or write the page. */
static void scan_done(struct op *op)
{
    struct scan_state *st = S(op)->st;
    if (op->c == NULL) { /* the client went */
        op_finish(op);
        return;
    }
    int short_stop = 0, progress = 0;
    for (int i = 0; i < st->nleaves; i++) {
        struct scan_leaf *lf = &st->leaf[i];
        if (lf->state == LEAF_MOVED) { /* the map took it: the same position again */
            st->pos = lf->from;
            st->reroutes++;
            short_stop = 1;
            break;
        }
        if (buf_append(&op->res, buf_head(&st->round) + lf->off, lf->len) != HKV_OK) {
            op_error(op, "OOM edge out of memory");
            op_finish_error(op);
            return;
        }
        st->found += lf->n;
        progress |= lf->next > lf->from;
        st->pos = lf->next;
        if (lf->next < lf->to) { /* the owner stopped short (COUNT, or its leaf ended) */
            short_stop = 1;
            break;
        }
    }
    st->stalled += !progress;
    st->window = short_stop ? 1 : (st->window * 2 > SCAN_WINDOW_MAX ? SCAN_WINDOW_MAX
                                                                     : st->window * 2);
    if (st->found >= st->count || st->asked >= SCAN_LEAVES_MAX ||
        st->reroutes > SCAN_REROUTES || st->stalled > SCAN_REROUTES)
        scan_finish(op);
    else
        scan_round(op);
}

static void scan_end(struct op *op)
{
    struct scan_state *st = S(op)->st;
    if (st != NULL) {
        buf_deinit(&st->round);
        free(st);
        S(op)->st = NULL;
    }
}

static const struct op_family scan_ops = {OP_F_MOVED, scan_encode, scan_answer, scan_done, NULL,
                                          scan_end};

void edge_cmd_scan(struct conn *c, int argc, const struct resp_slice *argv)
{
    uint64_t cursor;
    if (parse_cursor(&argv[1], &cursor) != 0) {
        reply_error(c, "ERR invalid cursor");
        return;
    }
    long long count = 10;
    const struct resp_slice *match = NULL;
    int other_type = 0;
    for (int j = 2; j < argc; j++) {
        int has_next = j + 1 < argc;
        if (edge_arg_is(&argv[j], "count") && has_next) {
            const struct resp_slice *v = &argv[++j];
            char tmp[32];
            char *end;
            if (v->len == 0 || v->len >= sizeof(tmp)) {
                reply_error(c, "ERR value is not an integer or out of range");
                return;
            }
            memcpy(tmp, v->p, v->len);
            tmp[v->len] = '\0';
            count = strtoll(tmp, &end, 10);
            if (*end != '\0') {
                reply_error(c, "ERR value is not an integer or out of range");
                return;
            }
            if (count < 1) {
                reply_error(c, "ERR syntax error");
                return;
            }
        } else if (edge_arg_is(&argv[j], "match") && has_next) {
            match = &argv[++j];
        } else if (edge_arg_is(&argv[j], "type") && has_next) {
            other_type = !edge_arg_is(&argv[++j], "string"); /* every key is a string */
        } else {
            reply_error(c, "ERR syntax error");
            return;
        }
    }
    uint64_t pos = cursor & ~SCAN_POOL_BIT;
    if (other_type || pos >= PLACE_POS_END - 1) { /* (the last position is no key's) */
        scan_reply_empty(&c->out, 0);
        return;
    }
    struct op *op = op_new(c, &scan_ops, "scan");
    if (op == NULL)
        return;
    struct scan_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        op_error(op, "OOM edge out of memory");
        op_finish_error(op);
        return;
    }
    S(op)->st = st;
    st->pool = cursor & SCAN_POOL_BIT ? CFG_POOL_COLD : CFG_POOL_HOT;
    st->pos = pos;
    st->count = count > 10000 ? 10000 : (uint32_t)count;
    st->window = 1;
    st->has_match = match != NULL;
    buf_reset(&op->res);
    if (match != NULL && op_copy_keys(op, 0, NULL, 1, match) != 0) {
        op_finish_error(op);
        return;
    }
    scan_round(op);
}

/* ---- STATS: DBSIZE and the poll ------------------------------------------------ */

static void dbsize_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_STATS_REPLY) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    int64_t v[CTR_OWNER_COUNT] = {0};
    edge_owner_take_stats(m, v);
    S(op)->keys += v[CTR_OWNER_owner_keys];
    memcpy(r->owner->stats, v, sizeof(v));
    r->owner->stats_at_ms = clock_mono_ms();
}

static void dbsize_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, S(op)->keys);
    op_finish(op);
}

static const struct op_family dbsize_ops = {0, scan_encode, dbsize_answer, dbsize_done, NULL, NULL};

void edge_cmd_dbsize(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (edge_owner_next(e, -1) < 0) {
        resp_add_int(&c->out, 0);
        return;
    }
    struct op *op = op_new(c, &dbsize_ops, "dbsize");
    if (op == NULL)
        return;
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        if (op_to_owner(op, &e->owners->ref[g], WIRE_STATS, WIRE_ROLE_READ) != 0) {
            op_finish_error(op);
            return;
        }
    }
    op_start(op);
}
