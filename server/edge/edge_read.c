/*
 * edge_read.c - the read commands.  Every one of them goes through the colo
 * cache (edge_cache.c, server/cache.h); no read reaches an owner behind the
 * cache's back.
 *
 * The staleness bound (DESIGN §3, promise 2).  Let A be the refresh
 * allowance, the miss-wait (cfg miss_wait_ms).  While the key's owner
 * answers each fetch within A/2, every read answered through this file
 * returns a value that no write had superseded more than fresh + A before
 * the read was answered (fresh: the key's class), or fresh + A + its push's
 * delay for a value a push stored; a cached absence (NOTFOUND) was current
 * less than negative-ttl before.  When the owner does not answer in time, a read
 * gets the last value the colo holds, within keep, flagged stale (RESP3
 * CLIENT META), or, when the colo holds nothing, its class's on-timeout
 * answer.  Why:
 *   - An entry's fresh_until is base + fresh, base being at or before the
 *     moment the owner read the value (a fill: its fetch's send time; this
 *     colo's own write: the write's first send time; a push: its arrival,
 *     which is where the push delay comes in) (edge_cache.c).  A write that
 *     superseded the value came after that moment, so after base.
 *   - The segment answers a read at once only while now < fresh_until + A
 *     (fresh, or stale by less than A: then it also starts the colo's one
 *     refresh).  So an answer from the segment is less than fresh + A after
 *     base, hence after the superseding write.
 *   - Past fresh_until + A the reader waits, like a miss, for its edge's
 *     flight of the key: the flight's own fetch, sent when the reader came
 *     or before, or (another edge holding the colo's lock) that edge's fill
 *     of the segment, which is again within the rule above, and failing
 *     that, from A/2 on, a fetch of its own (edge_flight.c, colo_poll).  Either way a fetch
 *     is out by A/2 and, by the premise, answered by A; an owner answer is
 *     current when it is given.  Only when none came within the reader's
 *     miss-wait (= A) does it get the stale entry, and while a flight of the
 *     key has been out for A or longer, later reads take the stale entry at
 *     once (the owner is not answering; they do not each wait A).
 *   - The owners' pushes only make values arrive sooner; the bound does not
 *     count on them, so a missed push (owner restart, a push link down)
 *     costs at most fresh + A.
 *   - MGET and multi-key EXISTS answer from the segment under the same rule
 *     and otherwise ask the owners (as for a miss, without miss-wait).
 *   - A client's reads behind its own writes go to the owner.
 * With pushes on, a write is normally in every colo within milliseconds;
 * the bound is what holds when one is missed.  Default config: fresh + 1.2 s.
 *
 * One key (GET, STRLEN, TYPE, EXISTS of one key, TTL, PTTL, GETEX without
 * options, GETMETA):
 *   fresh in the segment   answered from it, no owner call;
 *   stale by less than A   answered from it now; whichever edge of the colo
 *                          takes the key's refresh lock refreshes it in the
 *                          background, the others go on serving it stale;
 *   stale by A or more     waited for like a miss (below); answered stale if
 *                          the owner does not answer within miss-wait, and at
 *                          once while this edge's fetch of it has been out
 *                          for A already;
 *   missing                one fetch per key per edge (a flight,
 *                          edge_flight.c: every reader of the key in this
 *                          process waits on it) and per
 *                          colo (the refresh lock: an edge that does not get it
 *                          polls the segment for the other edge's result, and
 *                          fetches itself if the holder died or has not
 *                          filled it within half the miss-wait).  A
 *                          reader waits at most miss-wait; then it gets its
 *                          class's on-timeout answer (degrade: the "no value"
 *                          reply, counted; error: -TRYAGAIN) while the fetch
 *                          goes on and fills the segment.
 *
 * Order within one client: a client that pipelines "SET k v; GET k" must see
 * its write.  While a client has a write in flight, its reads of one key go
 * to the owner on the WRITE link, behind its writes (the one case where a
 * read does not look at the segment first, because the segment cannot yet
 * hold that client's write).
 */
#include "server/edge/edge_read.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_render.h"

/* A read op's arguments and results (in the op's args block). */
struct read_args {
    enum cmd_id cmd;              /* the form of the answer (render) */
    int rendered;                 /* MGET: the reply is written already */
    int64_t found;                /* EXISTS: keys found */
    struct flight_waiter w;       /* a one-key read waiting on the key's flight */
};
_Static_assert(sizeof(struct read_args) <= OP_ARGS_MAX, "read_args too large for an op");
#define R(op) OP_ARGS(op, struct read_args)

static int read_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    return wire_put_get(b, id, keys, r->nk);
}

/* A new read op answered as cmd; NULL if none could be made (the error
 * reply is written). */
static struct op *read_op(struct conn *c, const struct op_family *fam, enum cmd_id cmd)
{
    struct op *op = op_new(c, fam, cmd_get(cmd)->name);
    if (op != NULL)
        R(op)->cmd = cmd;
    return op;
}

static void render_one(struct op *op, struct hkv_buf *out, int found, const char *v, size_t n,
                       int64_t expire_at)
{
    read_render(R(op)->cmd, op->c->proto, out, found, v, n, expire_at);
}

/* ---- single-key reads ------------------------------------------------------ */

static void one_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    /* the owner's own answer (behind this client's writes): current */
    struct read_facts f = {0, m->type == WIRE_VALUE ? m->u.value.stamp : 0, 0, 0};
    if (m->type == WIRE_VALUE && R(op)->cmd == CMD_GETMETA)
        read_answer(op->c, CMD_GETMETA, out, 1, m->u.value.value.p, m->u.value.value.len, 0, &f);
    else if (m->type == WIRE_VALUE)
        render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len,
                   (int64_t)m->u.value.expire_ms);
    else if (m->type == WIRE_NOTFOUND && R(op)->cmd == CMD_GETMETA)
        read_answer(op->c, CMD_GETMETA, out, 0, NULL, 0, 0, &f);
    else if (m->type == WIRE_NOTFOUND)
        render_one(op, out, 0, NULL, 0, 0);
    else
        resp_add_error(out, "ERR unexpected answer from the owner");
}

static void finish(struct op *op)
{
    op_finish(op);
}

/* GET (and the other one-key reads) behind the client's own writes. */
static const struct op_family one_ops = {0, read_encode, one_answer, finish, NULL};
/* A one-key read waiting on its key's flight: no owner request of its own;
 * the flight answers it (edge_read_answer) unless its client goes first. */
void edge_read_answer(struct flight_waiter *w, const struct flight_answer *a)
{
    struct op *op = w->arg;
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (a->kind == FLIGHT_DATA) {
            struct read_facts f = {a->age_ms, a->stamp, a->stale, a->degraded};
            read_answer(op->c, R(op)->cmd, out, a->found, a->v, a->n, a->expire_at, &f);
        } else if (a->kind == FLIGHT_ERROR) {
            resp_add_error(out, a->err);
        } else {
            buf_append(out, "-", 1);
            buf_append(out, a->err, a->errlen);
            buf_append(out, "\r\n", 2);
        }
    }
    op_finish(op);
}

static void waiter_cancel(struct op *op)
{
    flight_leave(&R(op)->w);
    op_finish(op);
}

static const struct op_family wait_ops = {0, NULL, NULL, NULL, waiter_cancel};

/* Answers from the segment if it can.  Returns 1 when answered. */
/* The hottest path of the daemon: it needs only the key's hash; the class
 * (glob matching) and the owner are looked up when the entry is stale. */
static int from_cache(struct conn *c, enum cmd_id cmd, const struct resp_slice *key,
                      uint64_t hash)
{
    struct edge *e = c->e;
    struct cache_hit hit;
    int64_t now = clock_mono_ms();
    cache_sketch_read(e->cache, key->p, key->len, hash, now);
    if (cache_get(e->cache, key->p, key->len, hash, now, &e->cval, &hit) != HKV_OK) {
        cache_count(e->cache, CACHE_CTR_cache_misses, 1);
        return 0;
    }
    if (hit.expire_at != 0 && hit.expire_at <= clock_unix_ms()) {
        cache_count(e->cache, CACHE_CTR_cache_misses, 1); /* the key itself expired */
        return 0;
    }
    int stale = now >= hit.fresh_until;
    if (stale && !flight_servable(e, hit.fresh_until, now)) {
        /* Stale by A or more: wait for the owner like a miss, unless this
         * edge's fetch of the key has been out for A already (the owner is
         * not answering: then the stale value, at once). */
        struct flight *f = flight_find(e, hash, key->p, key->len);
        if (f == NULL || now - flight_started(f) < flight_allowance(e)) {
            cache_count(e->cache, CACHE_CTR_cache_misses, 1);
            return 0;
        }
    }
    cache_count(e->cache,
                hit.negative ? CACHE_CTR_cache_negative_hits
                             : stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits,
                1);
    /* Answered synchronously: c->out is already this command's place in the
     * client's reply order (dispatch points it at a slot when needed). */
    struct read_facts f = {now - hit.stored_at, hit.stamp, stale, 0};
    read_answer(c, cmd, &c->out, !hit.negative, buf_head(&e->cval), buf_unread(&e->cval),
           hit.expire_at, &f);
    if (stale && flight_find(e, hash, key->p, key->len) == NULL) {
        /* Stale: one edge of the colo refreshes it; the others keep serving. */
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, key->p, key->len, &rt);
        if (o != NULL)
            flight_start(e, key->p, key->len, &rt, o, 1);
    }
    return 1;
}

/* GET, STRLEN, TYPE, one-key EXISTS, TTL, PTTL and GETEX without options. */
void edge_read_one(struct conn *c, enum cmd_id cmd, const struct resp_slice *key)
{
    struct edge *e = c->e;
    if (c->writes_inflight > 0) {
        /* Behind this client's writes, on the write link: no flight. */
        struct op *op = read_op(c, &one_ops, cmd);
        if (op == NULL)
            return;
        if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_GET, WIRE_ROLE_READ) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
        return;
    }
    if (e->cache != NULL && from_cache(c, cmd, key, router_hash(key->p, key->len)))
        return;
    struct route rt;
    struct owner_ref *o = edge_owner_of(e, key->p, key->len, &rt);
    if (o == NULL) {
        reply_error(c, "ERR no owner serves this key's pool");
        return;
    }
    struct flight *f = flight_find(e, rt.hash, key->p, key->len);
    if (f == NULL && (f = flight_start(e, key->p, key->len, &rt, o, 0)) == NULL) {
        reply_error(c, "ERR out of memory");
        return;
    }
    struct op *op = read_op(c, &wait_ops, cmd);
    if (op == NULL)
        return; /* the flight goes on for its other waiters, or alone */
    R(op)->w.arg = op;
    flight_wait(f, &R(op)->w);
}

void edge_cmd_get(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_GET, &argv[1]);
}

void edge_cmd_strlen(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_STRLEN, &argv[1]);
}

void edge_cmd_type(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_TYPE, &argv[1]);
}

void edge_cmd_ttl(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_TTL, &argv[1]);
}

void edge_cmd_pttl(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_PTTL, &argv[1]);
}

void edge_cmd_getmeta(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_one(c, CMD_GETMETA, &argv[1]);
}

/* ---- MGET, EXISTS ----------------------------------------------------------- */

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
    if (e->cache == NULL)
        return;
    for (uint32_t i = 0; i < r->nk; i++) {
        const struct wire_slice *k = &op->keys[op->kidx[r->k0 + i]];
        struct route rt;
        router_route(e->router, k->p, k->len, &rt);
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

static void mget_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!shape_ok(r, m)) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    fill_items(op, r, m);
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
                resp_add_null(out, op->c->proto);
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
                resp_add_null(out, op->c->proto);
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

static const struct op_family mget_ops = {0, read_encode, mget_answer, mget_done, NULL};
static const struct op_family exists_ops = {0, read_encode, exists_answer, acc_done, NULL};

/* MGET / EXISTS answered from the segment when every key is there (fresh,
 * or stale within keep: those are refreshed in the background).  Otherwise
 * the whole request goes to the owners and their answers fill the segment.
 * Returns 1 when answered. */
static int multi_from_cache(struct conn *c, enum cmd_id cmd, int n, const struct resp_slice *keys)
{
    struct edge *e = c->e;
    struct { size_t off, len; int found, stale; uint64_t hash; } small[32], *k = small;
    if (n > 32 && (k = malloc((size_t)n * sizeof(*k))) == NULL)
        return 0;
    struct hkv_buf *vals = &e->scratch;
    buf_reset(vals);
    int64_t now = clock_mono_ms(), unix_now = clock_unix_ms();
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        struct cache_hit hit;
        k[i].hash = router_hash(keys[i].p, keys[i].len);
        cache_sketch_read(e->cache, keys[i].p, keys[i].len, k[i].hash, now);
        ok = cache_get(e->cache, keys[i].p, keys[i].len, k[i].hash, now, &e->cval, &hit) == HKV_OK &&
             !(hit.expire_at != 0 && hit.expire_at <= unix_now);
        if (ok && !flight_servable(e, hit.fresh_until, now)) {
            /* stale by A or more (top of file): served only while this edge's
             * fetch of it has been out for A; otherwise the owners are asked,
             * and a refresh starts so that during an outage the next reads
             * find that fetch */
            struct flight *f = flight_find(e, k[i].hash, keys[i].p, keys[i].len);
            if (f == NULL || now - flight_started(f) < flight_allowance(e)) {
                ok = 0;
                struct route rt;
                struct owner_ref *o = f == NULL ? edge_owner_of(e, keys[i].p, keys[i].len, &rt)
                                                : NULL;
                if (o != NULL)
                    flight_start(e, keys[i].p, keys[i].len, &rt, o, 1);
            }
        }
        ok = ok && buf_append(vals, buf_head(&e->cval), buf_unread(&e->cval)) == HKV_OK;
        if (ok) {
            k[i].found = !hit.negative;
            k[i].len = buf_unread(&e->cval);
            k[i].off = buf_unread(vals) - k[i].len;
            k[i].stale = now >= hit.fresh_until;
        }
    }
    if (!ok) {
        cache_count(e->cache, CACHE_CTR_cache_misses, 1);
        if (k != small)
            free(k);
        return 0;
    }
    int64_t found = 0;
    if (cmd == CMD_MGET)
        resp_add_array(&c->out, n);
    for (int i = 0; i < n; i++) {
        found += k[i].found;
        cache_count(e->cache, !k[i].found ? CACHE_CTR_cache_negative_hits
                              : k[i].stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits, 1);
        if (cmd == CMD_MGET) {
            if (k[i].found)
                resp_add_bulk(&c->out, buf_head(vals) + k[i].off, k[i].len);
            else
                resp_add_null(&c->out, c->proto);
        }
    }
    if (cmd == CMD_EXISTS)
        resp_add_int(&c->out, found);
    for (int i = 0; i < n; i++) {
        if (!k[i].stale)
            continue;
        if (flight_find(e, k[i].hash, keys[i].p, keys[i].len) != NULL)
            continue;
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, keys[i].p, keys[i].len, &rt);
        if (o != NULL)
            flight_start(e, keys[i].p, keys[i].len, &rt, o, 1);
    }
    if (k != small)
        free(k);
    return 1;
}

static void multi_read(struct conn *c, enum cmd_id cmd, int n, const struct resp_slice *keys)
{
    if (c->e->cache != NULL && c->writes_inflight == 0 && multi_from_cache(c, cmd, n, keys))
        return;
    struct op *op = read_op(c, cmd == CMD_MGET ? &mget_ops : &exists_ops, cmd);
    if (op == NULL)
        return;
    /* op_start sets op->start_ms: the fetches' send time, for fill_items */
    if (op_copy_keys(op, n, keys, 1, NULL) != 0 || op_split(op, WIRE_GET, WIRE_ROLE_READ, 0) != 0 ||
        (cmd == CMD_MGET && op->nreqs > 1 && op_items(op, (uint32_t)n) == NULL)) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_mget(struct conn *c, int argc, const struct resp_slice *argv)
{
    multi_read(c, CMD_MGET, argc - 1, argv + 1);
}

void edge_cmd_exists(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc == 2)
        edge_read_one(c, CMD_EXISTS, &argv[1]);
    else
        multi_read(c, CMD_EXISTS, argc - 1, argv + 1);
}
