/*
 * edge_mread.c - the reads of several keys (edge_mread.h): MGET, EXISTS of
 * several keys, and LCS's two values.  They answer from the colo segment
 * when every key is there under edge_read.c's staleness rule (fresh, or
 * stale by less than the refresh allowance: those are refreshed in the
 * background), and otherwise ask the owners, one request per owner, whose
 * answers fill the segment (as for a miss, without miss-wait).  Behind the
 * client's own writes the request travels on the write link (the op
 * engine), so a client reads what it wrote.
 */
#include "server/edge/edge_mread.h"

#include <stdlib.h>
#include <string.h>

#include "server/colo/cache.h"
#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_sess.h"

/* A multi-key read op's arguments and results (in the op's args block). */
struct mread_args {
    enum cmd_id cmd;              /* MGET, EXISTS or a computed read (LCS) */
    int rendered;                 /* the reply is written already */
    int64_t found;                /* EXISTS: keys found */
    edge_read2_fn fn;             /* LCS: the reply's renderer; its arguments follow the
                                   * two keys in op->keys */
    int nargs;
};
_Static_assert(sizeof(struct mread_args) <= OP_ARGS_MAX, "mread_args too large for an op");
#define R(op) OP_ARGS(op, struct mread_args)

static int read_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    return wire_put_get(b, id, keys, r->nk);
}

/* A computed reply over two values: its renderer and the words after the
 * keys. */
struct read2_calc {
    edge_read2_fn fn;
    const struct resp_slice *args;
    int nargs;
};

static void render2(struct conn *c, struct hkv_buf *out, const struct read2_calc *k,
                    const struct resp_slice *a, const struct resp_slice *b)
{
    k->fn(c, out, a, b, k->args, k->nargs);
}

/* The i-th key's answer inside one owner's reply (VALUE/NOTFOUND for a
 * one-key GET, VALUES otherwise). */
static int item(const struct wire_msg *m, uint32_t i, struct wire_slice *v)
{
    if (m->type == WIRE_VALUE && i == 0) {
        *v = m->u.value.value;
        return 1;
    }
    if (m->type == WIRE_VALUES && i < m->u.values.nitems && m->u.values.items[i].found) {
        *v = m->u.values.items[i].value;
        return 1;
    }
    return 0;
}

/* Fills the segment from one owner's answer to a multi-key GET. */
static void fill_items(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct edge *e = op->e;
    if (e->cache->cache == NULL)
        return;
    for (uint32_t i = 0; i < r->nk; i++) {
        uint32_t ki = op->kidx[r->k0 + i];
        const struct wire_slice *k = &op->keys[ki];
        struct route rt; /* the class and pool the fill needs; the hash is op_split's */
        router_route_hashed(e->owners->router, k->p, k->len, op->khash[ki], &rt);
        struct wire_msg one = {.type = WIRE_NOTFOUND};
        if (m->type == WIRE_VALUE) {
            one = *m;
        } else if (m->type == WIRE_VALUES && m->u.values.items[i].found) {
            one.type = WIRE_VALUE;
            one.u.value.value = m->u.values.items[i].value;
            one.u.value.stamp = m->u.values.items[i].stamp;
            one.u.value.expire_ms = m->u.values.items[i].expire_ms;
        }
        edge_cache_fill(e, k->p, k->len, &rt, &one, op->start_ms);
    }
}

static int shape_ok(const struct oreq *r, const struct wire_msg *m)
{
    if (m->type == WIRE_VALUES)
        return m->u.values.nitems == r->nk;
    return r->nk == 1 && (m->type == WIRE_VALUE || m->type == WIRE_NOTFOUND);
}

/* LCS's reply from the owner's answer for its two keys. */
static void calc_answer(struct op *op, struct hkv_buf *out, const struct wire_msg *m)
{
    struct resp_slice small[8] = {{NULL, 0}}, *args = small, v[2];
    int na = R(op)->nargs, found[2];
    if (na > 8 && (args = malloc((size_t)na * sizeof(*args))) == NULL) {
        resp_add_error(out, "ERR out of memory");
        return;
    }
    for (int i = 0; i < na; i++)
        args[i] = (struct resp_slice){op->keys[2 + i].p, op->keys[2 + i].len};
    for (uint32_t i = 0; i < 2; i++) {
        struct wire_slice w = {NULL, 0};
        found[i] = item(m, i, &w);
        v[i] = (struct resp_slice){w.p, found[i] ? w.len : 0};
    }
    struct read2_calc k = {R(op)->fn, args, na};
    render2(op->c, out, &k, found[0] ? &v[0] : NULL, found[1] ? &v[1] : NULL);
    if (args != small)
        free(args);
}

static void mget_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!shape_ok(r, m)) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    fill_items(op, r, m);
    if (R(op)->fn != NULL) {
        /* LCS: one owner holds both keys (edge_read_two's caller made sure). */
        struct hkv_buf *out = op_out(op);
        R(op)->rendered = 1;
        if (out != NULL)
            calc_answer(op, out, m);
        return;
    }
    if (op->nreqs == 1) {
        /* One owner holds every key: the reply is written straight away. */
        struct hkv_buf *out = op_out(op);
        R(op)->rendered = 1;
        if (out == NULL)
            return;
        resp_add_array(out, r->nk);
        for (uint32_t i = 0; i < r->nk; i++) {
            struct wire_slice v;
            if (item(m, i, &v))
                resp_add_bulk(out, v.p, v.len);
            else
                resp_add_null(out, sess_of(op->c)->proto);
        }
        return;
    }
    for (uint32_t i = 0; i < r->nk; i++) {
        struct op_item *x = &op->items[op->kidx[r->k0 + i]];
        struct wire_slice v;
        x->found = item(m, i, &v);
        if (x->found) {
            x->off = buf_unread(&op->res);
            x->len = v.len;
            if (buf_append(&op->res, v.p, v.len) != HKV_OK)
                op_error(op, "ERR out of memory");
        }
    }
}

static void mget_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL && !R(op)->rendered) {
        resp_add_array(out, op->nkeys);
        for (uint32_t k = 0; k < op->nkeys; k++) {
            struct op_item *x = &op->items[k];
            if (x->found)
                resp_add_bulk(out, buf_head(&op->res) + x->off, x->len);
            else
                resp_add_null(out, sess_of(op->c)->proto);
        }
    }
    op_finish(op);
}

static void exists_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!shape_ok(r, m)) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    fill_items(op, r, m);
    struct wire_slice v;
    for (uint32_t i = 0; i < r->nk; i++)
        R(op)->found += item(m, i, &v);
}

static void acc_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, R(op)->found);
    op_finish(op);
}

static const struct op_family mget_ops = {0, read_encode, mget_answer, mget_done, NULL, NULL};
static const struct op_family exists_ops = {0, read_encode, exists_answer, acc_done, NULL, NULL};

/* MGET / EXISTS answered from the segment when every key is there (fresh,
 * or stale within keep: those are refreshed in the background).  Otherwise
 * the whole request goes to the owners and their answers fill the segment.
 * Returns 1 when answered. */
static int multi_from_cache(struct conn *c, enum cmd_id cmd, const struct read2_calc *calc, int n,
                            const struct resp_slice *keys)
{
    struct edge *e = c->e;
    struct { size_t off, len; int found, stale; uint64_t hash; } small[32], *k = small;
    if (n > 32 && (k = malloc((size_t)n * sizeof(*k))) == NULL)
        return 0;
    struct hkv_buf *vals = &e->cache->scratch;
    buf_reset(vals);
    int64_t now = clock_mono_ms(), unix_now = clock_unix_ms();
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        struct cache_hit hit;
        k[i].hash = router_hash(keys[i].p, keys[i].len);
        cache_sketch_read(e->cache->cache, keys[i].p, keys[i].len, k[i].hash, now);
        ok = cache_get(e->cache->cache, keys[i].p, keys[i].len, k[i].hash, now, &e->cache->cval,
                       &hit) == HKV_OK &&
             !(hit.expire_at != 0 && hit.expire_at <= unix_now);
        if (ok && !flight_servable(e, hit.fresh_until, now)) {
            /* stale by A or more (top of file): served only while its owner
             * is marked silent or this edge's fetch of it has been out for
             * A; otherwise the owners are asked, and a refresh starts so
             * that during an outage the next reads find that fetch */
            struct flight *f = flight_find(e, k[i].hash, keys[i].p, keys[i].len);
            struct route rt;
            struct owner_ref *o = edge_owner_of_hashed(e, keys[i].p, keys[i].len, k[i].hash, &rt);
            if (o != NULL && edge_owner_silent(e, o, now)) {
                cache_count(e->cache->cache, CACHE_CTR_cache_silent_stale_hits, 1);
            } else if (f == NULL || now - flight_started(f) < flight_allowance(e)) {
                ok = 0;
                if (o != NULL && f == NULL)
                    flight_start(e, keys[i].p, keys[i].len, &rt, o, 1);
            }
        }
        ok = ok &&
             buf_append(vals, buf_head(&e->cache->cval), buf_unread(&e->cache->cval)) == HKV_OK;
        if (ok) {
            k[i].found = !hit.negative;
            k[i].len = buf_unread(&e->cache->cval);
            k[i].off = buf_unread(vals) - k[i].len;
            k[i].stale = now >= hit.fresh_until;
        }
    }
    if (!ok) {
        cache_count(e->cache->cache, CACHE_CTR_cache_misses, 1);
        if (k != small)
            free(k);
        return 0;
    }
    int64_t found = 0;
    if (calc != NULL) {
        struct resp_slice v[2];
        for (int i = 0; i < 2; i++)
            v[i] = (struct resp_slice){buf_head(vals) + k[i].off, k[i].len};
        render2(c, &c->out, calc, k[0].found ? &v[0] : NULL, k[1].found ? &v[1] : NULL);
    } else if (cmd == CMD_MGET) {
        resp_add_array(&c->out, n);
    }
    for (int i = 0; i < n; i++) {
        found += k[i].found;
        cache_count(e->cache->cache, !k[i].found ? CACHE_CTR_cache_negative_hits
                              : k[i].stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits, 1);
        if (calc == NULL && cmd == CMD_MGET) {
            if (k[i].found)
                resp_add_bulk(&c->out, buf_head(vals) + k[i].off, k[i].len);
            else
                resp_add_null(&c->out, sess_of(c)->proto);
        }
    }
    if (calc == NULL && cmd == CMD_EXISTS)
        resp_add_int(&c->out, found);
    for (int i = 0; i < n; i++) {
        if (!k[i].stale)
            continue;
        if (flight_find(e, k[i].hash, keys[i].p, keys[i].len) != NULL)
            continue;
        struct route rt;
        struct owner_ref *o = edge_owner_of_hashed(e, keys[i].p, keys[i].len, k[i].hash, &rt);
        if (o != NULL && !edge_owner_silent(e, o, now)) /* (the probes do, edge_read.c) */
            flight_start(e, keys[i].p, keys[i].len, &rt, o, 1);
    }
    if (k != small)
        free(k);
    return 1;
}

/* n keys read for cmd; calc: a computed reply over the two keys, whose
 * arguments follow them in keys[]. */
static void multi_read(struct conn *c, enum cmd_id cmd, const struct read2_calc *calc, int n,
                       const struct resp_slice *keys)
{
    /* behind the client's writes, or while it WATCHes keys: the owners
     * (edge_read.c) */
    if (c->e->cache->cache != NULL && sess_of(c)->writes_inflight == 0 && !sess_of(c)->watching &&
        multi_from_cache(c, cmd, calc, n, keys))
        return;
    struct op *op = op_new(c, cmd == CMD_EXISTS ? &exists_ops : &mget_ops, cmd_get(cmd)->name);
    if (op == NULL)
        return;
    R(op)->cmd = cmd;
    if (calc != NULL) {
        R(op)->fn = calc->fn;
        R(op)->nargs = calc->nargs;
    }
    int ncopy = n + (calc != NULL ? calc->nargs : 0);
    if (op_copy_keys(op, ncopy, keys, 1, NULL) != 0) {
        op_finish_error(op);
        return;
    }
    op->nkeys = (uint32_t)n; /* the keys; a computed read's arguments stay after them */
    /* op_start sets op->start_ms: the fetches' send time, for fill_items */
    if (op_split(op, WIRE_GET, WIRE_ROLE_READ, 0) != 0 ||
        (cmd == CMD_MGET && op->nreqs > 1 && op_items(op, (uint32_t)n) == NULL)) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_mget(struct conn *c, int argc, const struct resp_slice *argv)
{
    multi_read(c, CMD_MGET, NULL, argc - 1, argv + 1);
}

void edge_cmd_exists(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc == 2)
        edge_read_one(c, CMD_EXISTS, &argv[1]);
    else
        multi_read(c, CMD_EXISTS, NULL, argc - 1, argv + 1);
}

void edge_read_two(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv,
                   edge_read2_fn fn)
{
    struct read2_calc k = {fn, argv + 3, argc - 3};
    multi_read(c, cmd, &k, 2, argv + 1);
}
