/*
 * edge_read.c - the read commands.  Every one of them goes through the colo
 * cache (edge_cache.c, server/colo/cache.h); no read reaches an owner behind the
 * cache's back.
 *
 * The staleness bound (DESIGN §3, promise 2).  Let A be the refresh
 * allowance, the miss-wait (cfg miss_wait_ms), and P the
 * owner-probe-interval.  The premise, "the owner answers": the key's owner
 * answers each request of this colo within A/2 of the later of its sending
 * and the moment the owner last started running (for an owner that never
 * stopped: of its sending).  Under it, every read answered through this
 * file returns a value that no write had superseded more than fresh + A
 * before the read was answered (fresh: the key's class), or fresh + A +
 * its push's delay for a value a push stored; a cached absence (NOTFOUND)
 * was current less than negative-ttl before; this holds from P + A/2 after
 * the owner started running (at once if it never stopped).  When the owner
 * does not answer in time, a read gets the last value the colo holds,
 * within keep, flagged stale (RESP3 CLIENT META), or, when the colo holds
 * nothing, its class's on-timeout answer; and once the owner is marked
 * silent in the colo (edge_health.h), a read of a key the colo holds gets
 * it at once, in every edge: a reader waits at most once per outage and
 * colo, not once per key and edge.  Why:
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
 *   - MGET, multi-key EXISTS and LCS answer from the segment under the same
 *     rule and otherwise ask the owners (as for a miss, without miss-wait):
 *     edge_mread.c.
 *   - A client's reads behind its own writes go to the owner.
 *   - The silent mark (server/colo/cache_health.h) is the one other way a
 *     value stale by A or more is answered without a wait (here, in
 *     edge_mread.c, and to readers already waiting: edge_flight.c).  It is
 *     (a) set only when a request to the owner sent at s is unanswered at
 *     s + A and no answer from the owner reached any edge of the colo since
 *     s (cache_health_unanswered; the colo's last-answer time is noted at
 *     most CACHE_HEALTH_COARSE_MS late and compared with that margin);
 *     (b) standing only while no answer from the owner has reached an edge
 *     since it was set (any answer, to a fetch or a probe, clears it:
 *     flight_cb, probe_cb); (c) believed only while a probe of the owner
 *     was claimed in the colo within 3P, and a claim is made only by an
 *     edge that then has a probe out (it sends one unless its own still is).
 *     While the owner answers, (a) cannot happen: every request is answered
 *     within A/2 < A.  A mark from an outage that ended (the owner started
 *     running again at r) is cleared: while it stands, the ticks of the
 *     edges that have seen it claim a probe every P, so a claim falls in
 *     [r, r + P], the probe out then is answered by the premise by
 *     r + P + A/2, and that answer clears it (b).  A mark no edge probes any
 *     more is not believed (c), and reads wait as before it was set.  So
 *     from r + P + A/2 on the rules above hold unchanged, and the bound is
 *     fresh + A again; before that the owner was not answering, and the
 *     stale value within keep, flagged, is the second half of promise 2.
 *     A scribbled health word fails its check and reads as "answering"
 *     (the old rule: a wait); one that passes it is believed at most 3P.
 *   - Waits per outage: before the mark, each reader waits at most A (its
 *     fetch's allowance, which is also what sets the mark); once it is
 *     set, no read of a key the colo holds waits, in any edge, and the
 *     readers waiting in the marking edge are answered then.  A new wait
 *     comes only with a new episode (the owner answered in between), or if
 *     every edge probing the owner died (then (c) ends the mark).
 *   - A key the colo does not hold still gets its full miss-wait while the
 *     owner is marked: its answer would be made up (degrade's "no value",
 *     which a RESP2 client cannot tell from a real absence, or an error),
 *     so the owner keeps its chance to give the real one, and its answer
 *     clears the mark for everyone; the miss is one fetch per key and colo
 *     (the refresh lock), however many read it.
 * With pushes on, a write is normally in every colo within milliseconds;
 * the bound is what holds when one is missed.  Default config: fresh + 1.2 s.
 *
 * One key (GET, STRLEN, TYPE, EXISTS of one key, TTL, PTTL, GETEX without
 * options, GETMETA, and the replies computed over the value: GETRANGE ...,
 * edge_strread.c):
 *   fresh in the segment   answered from it, no owner call;
 *   stale by less than A   answered from it now; whichever edge of the colo
 *                          takes the key's refresh lock refreshes it in the
 *                          background, the others go on serving it stale;
 *   stale by A or more     waited for like a miss (below); answered stale if
 *                          the owner does not answer within miss-wait, and at
 *                          once while this edge's fetch of it has been out
 *                          for A already or its owner is marked silent (no
 *                          refresh is sent then: the probes find out when
 *                          it answers);
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
 * to the owner on the WRITE link, behind its writes (a case where a read
 * does not look at the segment first, because the segment cannot yet hold
 * that client's write).  The other case: while a client WATCHes keys, its
 * reads ask the owner (read-modify-write under WATCH must read values no
 * older than the versions WATCH read: edge_tx.h).
 */
#include "server/edge/edge_read.h"
#include "server/colo/cache.h"
#include "server/edge/edge_render.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_sess.h"

/* A read op's arguments (in the op's args block). */
struct read_args {
    enum cmd_id cmd;              /* the form of the answer (render) */
    int nargs;                    /* a computed reply: its arguments follow the key in op->keys */
    edge_read_fn fn;              /* a computed reply's renderer, or NULL */
    edge_read_vfn vfn;            /* a versioned one's (fn is then versioned_mark) */
    struct flight_waiter w;       /* a one-key read waiting on the key's flight */
};

/* A computed reply: its renderer and the words after the key. */
struct read_calc {
    edge_read_fn fn;
    const struct resp_slice *args;
    int nargs;
    edge_read_vfn vfn;            /* set: a versioned reply (fn unused) */
};

/* The fn of a versioned read's op: not NULL, so that the one-key reads'
 * test "fn == NULL" stays GET's only test; never called. */
static void versioned_mark(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                           const struct resp_slice *args, int nargs)
{
}
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

/* Writes one key's answer in the form its command wants: computed by k's
 * renderer (GETRANGE ...), or the read's own reply with its facts (GETMETA,
 * CLIENT META's attribute: edge_render.h). */
static void render(struct conn *c, enum cmd_id cmd, const struct read_calc *k,
                   struct hkv_buf *out, int found, const char *v, size_t n, int64_t expire_at,
                   const struct read_facts *f)
{
    if (k != NULL) {
        struct resp_slice val = {v, n};
        read_meta(c, out, f);
        if (k->vfn != NULL)
            k->vfn(c, out, found ? &val : NULL, f->stamp, k->args, k->nargs);
        else
            k->fn(c, out, found ? &val : NULL, k->args, k->nargs);
        return;
    }
    read_answer(c, cmd, out, found, v, n, expire_at, f);
}

static void render_one(struct op *op, struct hkv_buf *out, int found, const char *v, size_t n,
                       int64_t expire_at, const struct read_facts *f)
{
    if (R(op)->fn == NULL) {
        render(op->c, R(op)->cmd, NULL, out, found, v, n, expire_at, f);
        return;
    }
    struct resp_slice small[8] = {{NULL, 0}}, *a = small;
    int na = R(op)->nargs;
    if (na > 8 && (a = malloc((size_t)na * sizeof(*a))) == NULL) {
        resp_add_error(out, "ERR out of memory");
        return;
    }
    for (int i = 0; i < na; i++)
        a[i] = (struct resp_slice){op->keys[1 + i].p, op->keys[1 + i].len};
    struct read_calc k = {R(op)->fn, a, na, R(op)->vfn};
    render(op->c, R(op)->cmd, &k, out, found, v, n, expire_at, f);
    if (a != small)
        free(a);
}

/* ---- single-key reads ------------------------------------------------------ */

static void one_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    /* the owner's own answer (behind this client's writes): current */
    struct read_facts f = {0, m->type == WIRE_VALUE ? m->u.value.stamp : 0, 0, 0};
    if (m->type == WIRE_VALUE)
        render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len,
                   (int64_t)m->u.value.expire_ms, &f);
    else if (m->type == WIRE_NOTFOUND)
        render_one(op, out, 0, NULL, 0, 0, &f);
    else
        resp_add_error(out, "ERR unexpected answer from the owner");
}

static void finish(struct op *op)
{
    op_finish(op);
}

/* GET (and the other one-key reads) behind the client's own writes. */
static const struct op_family one_ops = {0, read_encode, one_answer, finish, NULL, NULL};
/* A one-key read waiting on its key's flight: no owner request of its own;
 * the flight answers it (edge_read_answer) unless its client goes first. */
void edge_read_answer(struct flight_waiter *w, const struct flight_answer *a)
{
    struct op *op = w->arg;
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (a->kind == FLIGHT_DATA) {
            struct read_facts f = {a->age_ms, a->stamp, a->stale, a->degraded};
            render_one(op, out, a->found, a->v, a->n, a->expire_at, &f);
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

static const struct op_family wait_ops = {0, NULL, NULL, NULL, waiter_cancel, NULL};

/* The hottest path of the daemon: it needs only the key's hash; the class
 * (glob matching) and the owner are looked up when the entry is stale. */
int edge_read_cached(struct edge *e, const char *key, size_t len, uint64_t hash, hkv_stamp min,
                     struct edge_read_hit *h)
{
    struct cache_hit hit;
    int64_t now = clock_mono_ms();
    cache_sketch_read(e->cache->cache, key, len, hash, now);
    if (cache_get(e->cache->cache, key, len, hash, now, &e->cache->cval, &hit) != HKV_OK ||
        (min != 0 && hit.stamp < min)) {
        /* (or older than the reader knows) */
        cache_count(e->cache->cache, CACHE_CTR_cache_misses, 1);
        return 0;
    }
    if (hit.expire_at != 0 && hit.expire_at <= clock_unix_ms()) {
        cache_count(e->cache->cache, CACHE_CTR_cache_misses, 1); /* the key itself expired */
        return 0;
    }
    if (now < hit.fresh_until && edge_push_gap(e, key, len, now))
        hit.fresh_until = now; /* its pushes may have been lost: stale, refreshed */
    int stale = now >= hit.fresh_until;
    int late = stale && !flight_servable(e, hit.fresh_until, now);
    struct flight *f = stale ? flight_find(e, hash, key, len) : NULL;
    struct route rt;
    struct owner_ref *o = NULL;
    int silent = 0;
    if (late || (stale && f == NULL)) { /* routed only when the answer or a refresh needs it */
        o = edge_owner_of_hashed(e, key, len, hash, &rt);
        silent = o != NULL && edge_owner_silent(e, o, now);
    }
    if (late) {
        /* Stale by A or more: wait for the owner like a miss, unless it is
         * known not to answer: marked silent in the colo, or this edge's
         * fetch of the key has been out for A already.  Then the stale
         * value, at once. */
        if (!edge_cache_late_serves(silent, f != NULL ? now - flight_started(f) : -1,
                                    flight_allowance(e))) {
            cache_count(e->cache->cache, CACHE_CTR_cache_misses, 1);
            return 0;
        }
        if (silent)
            cache_count(e->cache->cache, CACHE_CTR_cache_silent_stale_hits, 1);
    }
    cache_count(e->cache->cache,
                hit.negative ? CACHE_CTR_cache_negative_hits
                             : stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits,
                1);
    *h = (struct edge_read_hit){
        .found = !hit.negative, .v = buf_head(&e->cache->cval), .n = buf_unread(&e->cache->cval),
        .expire_at = hit.expire_at, .f = {now - hit.stored_at, hit.stamp, stale, 0},
    };
    if (stale && f == NULL && o != NULL && !silent) {
        /* Stale: one edge of the colo refreshes it; the others keep serving.
         * (Starting the fetch leaves e->cache->cval alone.)  Not while its owner
         * is marked silent: the probes find out when it answers, and a
         * stopped owner does not come back to a fetch queued per key. */
        flight_start(e, key, len, &rt, o, 1);
    }
    return 1;
}

/* Answers from the segment if it can.  Returns 1 when answered (synchronously:
 * c->out is already this command's place in the client's reply order;
 * dispatch points it at a slot when needed). */
static int from_cache(struct conn *c, enum cmd_id cmd, const struct read_calc *k,
                      const struct resp_slice *key, uint64_t hash)
{
    struct edge_read_hit h;
    if (!edge_read_cached(c->e, key->p, key->len, hash, 0, &h))
        return 0;
    render(c, cmd, k, &c->out, h.found, h.v, h.n, h.expire_at, &h.f);
    return 1;
}

struct flight *edge_read_flight(struct edge *e, const char *key, size_t len, uint64_t hash,
                                const char **err)
{
    struct route rt;
    struct owner_ref *o = edge_owner_of_hashed(e, key, len, hash, &rt);
    if (o == NULL) {
        *err = "ERR no owner serves this key's pool";
        return NULL;
    }
    struct flight *f = flight_find(e, rt.hash, key, len);
    if (f == NULL && (f = flight_start(e, key, len, &rt, o, 0)) == NULL)
        *err = "ERR out of memory";
    return f;
}

/* An op of family fam answering cmd for key (k: computed, its arguments
 * copied after the key); NULL if none could be made (an error is written). */
static struct op *key_op(struct conn *c, const struct op_family *fam, enum cmd_id cmd,
                         const struct read_calc *k, const struct resp_slice *key)
{
    struct op *op = read_op(c, fam, cmd);
    if (op == NULL)
        return NULL;
    if (k != NULL) {
        R(op)->fn = k->vfn != NULL ? versioned_mark : k->fn;
        R(op)->vfn = k->vfn;
        R(op)->nargs = k->nargs;
    }
    /* the arguments follow the key in the client's words (edge_read_calc) */
    if (op_copy_keys(op, 1 + (k != NULL ? k->nargs : 0), key, 1, NULL) != 0) {
        op_finish_error(op);
        return NULL;
    }
    op->nkeys = 1; /* the key; its arguments stay after it in op->keys */
    return op;
}

/* Every one-key read: GET, STRLEN, TYPE, one-key EXISTS, TTL, PTTL, GETEX
 * without options, and the computed ones (k). */
static void read_key(struct conn *c, enum cmd_id cmd, const struct read_calc *k,
                     const struct resp_slice *key)
{
    struct edge *e = c->e;
    if (sess_of(c)->writes_inflight > 0 || sess_of(c)->watching) {
        /* Behind this client's writes, on the write link, or, while it
         * WATCHes keys, from the owner (no cache, no flight): a value older
         * than the version WATCH read would let its transaction commit over
         * a write it never saw.  No flight. */
        struct op *op = key_op(c, &one_ops, cmd, k, key);
        if (op == NULL)
            return;
        if (op_single(op, WIRE_GET, WIRE_ROLE_READ) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
        return;
    }
    uint64_t hash = router_hash(key->p, key->len); /* the request's one hash of its key */
    if (e->cache->cache != NULL && from_cache(c, cmd, k, key, hash))
        return;
    const char *err = NULL;
    struct flight *f = edge_read_flight(e, key->p, key->len, hash, &err);
    if (f == NULL) {
        reply_error(c, err);
        return;
    }
    struct op *op = key_op(c, &wait_ops, cmd, k, key);
    if (op == NULL)
        return; /* the flight goes on for its other waiters, or alone */
    R(op)->w.arg = op;
    flight_wait(f, &R(op)->w);
}

void edge_read_one(struct conn *c, enum cmd_id cmd, const struct resp_slice *key)
{
    read_key(c, cmd, NULL, key);
}

void edge_read_calc(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv,
                    edge_read_fn fn)
{
    struct read_calc k = {fn, argv + 2, argc - 2, NULL};
    read_key(c, cmd, &k, &argv[1]);
}

void edge_read_versioned(struct conn *c, enum cmd_id cmd, int argc,
                         const struct resp_slice *argv, edge_read_vfn fn)
{
    struct read_calc k = {versioned_mark, argv + 2, argc - 2, fn};
    read_key(c, cmd, &k, &argv[1]);
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
