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
 *     that, from A/2 on, a fetch of its own (colo_poll).  Either way a fetch
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
 * options):
 *   fresh in the segment   answered from it, no owner call;
 *   stale by less than A   answered from it now; whichever edge of the colo
 *                          takes the key's refresh lock refreshes it in the
 *                          background, the others go on serving it stale;
 *   stale by A or more     waited for like a miss (below); answered stale if
 *                          the owner does not answer within miss-wait, and at
 *                          once while this edge's fetch of it has been out
 *                          for A already;
 *   missing                one fetch per key per edge (a flight: every reader
 *                          of the key in this process waits on it) and per
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
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"

#define COLO_POLL_MS 2

struct flight {
    struct flight *hnext;
    struct edge *e;
    uint64_t hash;
    struct hkv_buf key;
    struct route rt;              /* rt.cls points into cfg */
    struct cfg *cfg;              /* a reference: a reload must not free rt.cls */
    struct owner_ref *owner;
    struct op *waiters, *wtail;
    struct event timer;           /* the next waiter's miss-wait, or a colo poll */
    int timer_init;
    int moved;
    int linked;
    int fetching;                 /* a request to the owner is in flight */
    uint64_t token;               /* the colo refresh lock we hold, 0 = none */
    int64_t poll_until;           /* colo wait: stop polling then */
    int64_t started_ms;           /* when the flight began */
    int64_t sent_ms;              /* when its fetch was sent */
};

/* A read op's arguments and results (in the op's args block). */
struct read_args {
    enum cmd_id cmd;              /* the form of the answer (render) */
    int rendered;                 /* MGET: the reply is written already */
    int64_t found;                /* EXISTS: keys found */
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

/* Writes one key's answer in the form its command wants. */
static void render(enum cmd_id cmd, int proto, struct hkv_buf *out, int found, const char *v,
                   size_t n, int64_t expire_at)
{
    switch (cmd) {
    case CMD_GET:
    case CMD_GETEX:
        if (found)
            resp_add_bulk(out, v, n);
        else
            resp_add_null(out, proto);
        break;
    case CMD_STRLEN:
        resp_add_int(out, found ? (int64_t)n : 0);
        break;
    case CMD_TYPE:
        resp_add_simple(out, found ? "string" : "none");
        break;
    case CMD_TTL:
    case CMD_PTTL: {
        int64_t ms = !found ? -2 : expire_at == 0 ? -1 : expire_at - clock_unix_ms();
        if (found && expire_at != 0 && ms < 0)
            ms = 0;
        if (cmd == CMD_TTL && ms >= 0)
            ms = (ms + 500) / 1000; /* Redis rounds */
        resp_add_int(out, ms);
        break;
    }
    default: /* EXISTS of one key */
        resp_add_int(out, found ? 1 : 0);
        break;
    }
}

/* CLIENT META ON, RESP3 only: an attribute before the reply saying how old
 * the value is, its stamp, and whether it was served stale or degraded.
 * Everyone else sees plain Redis replies. */
static void meta(const struct conn *c, struct hkv_buf *out, int64_t age_ms, hkv_stamp stamp,
                 int stale, int degraded)
{
    if (!c->meta || c->proto != 3)
        return;
    resp_add_attr(out, 4);
    resp_add_bulk_str(out, "age_ms");
    resp_add_int(out, age_ms < 0 ? 0 : age_ms);
    resp_add_bulk_str(out, "stamp");
    resp_add_int(out, (int64_t)stamp);
    resp_add_bulk_str(out, "stale");
    resp_add_bool(out, 3, stale);
    resp_add_bulk_str(out, "degraded");
    resp_add_bool(out, 3, degraded);
}

static void render_one(struct op *op, struct hkv_buf *out, int found, const char *v, size_t n,
                       int64_t expire_at)
{
    render(R(op)->cmd, op->c->proto, out, found, v, n, expire_at);
}

/* The answer a reader gets when the owner cannot answer in time. */
static void timeout_answer(struct op *op, struct hkv_buf *out, const struct flight *f)
{
    struct edge *e = op->e;
    if (f->rt.cls->on_timeout == CFG_ONTO_DEGRADE) {
        if (e->cache != NULL)
            cache_count(e->cache, CACHE_CTR_degraded_replies, 1);
        meta(op->c, out, 0, 0, 0, 1);
        render_one(op, out, 0, NULL, 0, 0);
    } else {
        resp_add_errorf(out, "TRYAGAIN owner %s/%d did not answer within miss-wait",
                        topo_pool_name(f->owner->pool), f->owner->index);
    }
}

/* The refresh allowance A (see the top of this file). */
static int64_t allowance(const struct edge *e)
{
    return e->ctx->cfg->miss_wait_ms;
}

/* May an entry whose fresh time ends at fresh_until be served at once? */
static int servable(const struct edge *e, int64_t fresh_until, int64_t now)
{
    return now < fresh_until + allowance(e);
}

/* A reader whose owner did not answer in time gets the colo's stale value
 * of the key, within keep, if there is one (DESIGN §3, promise 2): returns 1
 * when it was written to out. */
static int stale_answer(struct op *op, struct hkv_buf *out, const struct hkv_buf *key,
                        uint64_t hash)
{
    struct edge *e = op->e;
    struct cache_hit hit;
    int64_t now = clock_mono_ms();
    if (e->cache == NULL ||
        cache_get(e->cache, buf_head(key), buf_unread(key), hash, now, &e->cval, &hit) != HKV_OK ||
        (hit.expire_at != 0 && hit.expire_at <= clock_unix_ms()))
        return 0;
    int stale = now >= hit.fresh_until;
    cache_count(e->cache,
                hit.negative ? CACHE_CTR_cache_negative_hits
                             : stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits,
                1);
    meta(op->c, out, now - hit.stored_at, hit.stamp, stale, 0);
    render_one(op, out, !hit.negative, buf_head(&e->cval), buf_unread(&e->cval), hit.expire_at);
    return 1;
}

/* ---- flights --------------------------------------------------------------- */

static struct flight **bucket(struct edge *e, uint64_t hash)
{
    return &e->flights[hash & (EDGE_FLIGHT_BUCKETS - 1)];
}

/* The flight of key already in the air from this process, or NULL. */
static struct flight *flight_find(struct edge *e, uint64_t hash, const struct resp_slice *key)
{
    struct flight *f = *bucket(e, hash);
    while (f != NULL && !(f->hash == hash && buf_unread(&f->key) == key->len &&
                          memcmp(buf_head(&f->key), key->p, key->len) == 0))
        f = f->hnext;
    return f;
}

static void flight_unlink(struct flight *f)
{
    if (!f->linked)
        return;
    struct flight **pp = bucket(f->e, f->hash);
    while (*pp != f)
        pp = &(*pp)->hnext;
    *pp = f->hnext;
    f->linked = 0;
}

static void flight_free(struct flight *f)
{
    struct edge *e = f->e;
    flight_unlink(f);
    if (f->timer_init)
        evtimer_del(&f->timer);
    if (f->token != 0 && e->cache != NULL)
        cache_unlock(e->cache, f->hash, f->token);
    f->token = 0;
    cfg_destroy(&f->cfg);
    buf_reset(&f->key);
    buf_shrink(&f->key, 1024);
    f->hnext = e->free_flights;
    e->free_flights = f;
}

static void flight_cb(void *arg, int status, const struct wire_msg *m);
static void flight_timer(evutil_socket_t fd, short what, void *arg);

static int flight_send(struct flight *f)
{
    struct elink *l = f->owner->link[WIRE_ROLE_READ];
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    struct wire_slice k = wire_slice(buf_head(&f->key), buf_unread(&f->key));
    if (wire_put_get(b, id, &k, 1) != HKV_OK || elink_commit(l, id, flight_cb, f) != HKV_OK)
        return -1;
    f->fetching = 1;
    f->sent_ms = clock_mono_ms();
    if (f->e->cache != NULL)
        cache_count(f->e->cache, CACHE_CTR_cache_refreshes, 1);
    return 0;
}

static void arm(struct flight *f, int64_t at)
{
    int64_t ms = at - clock_mono_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(&f->timer, &tv);
}

/* Re-arms the timer for the earliest waiter deadline (and colo polling). */
static void rearm(struct flight *f)
{
    int64_t at = INT64_MAX;
    if (f->waiters != NULL)
        at = f->waiters->start_ms + f->e->ctx->cfg->miss_wait_ms;
    if (!f->fetching && f->poll_until > 0) {
        int64_t poll = clock_mono_ms() + COLO_POLL_MS;
        if (poll < at)
            at = poll;
    }
    if (at == INT64_MAX)
        evtimer_del(&f->timer);
    else
        arm(f, at);
}

/* Answers every waiter from an owner message, an error text, or (both NULL)
 * with the class's timeout answer; then frees the flight unless a fetch is
 * still out (a background fill). */
static void answer_waiters(struct flight *f, const struct wire_msg *m, const char *err)
{
    struct op *op = f->waiters;
    f->waiters = f->wtail = NULL;
    while (op != NULL) {
        struct op *next = op->next;
        struct hkv_buf *out = op_out(op);
        if (out != NULL) {
            if (err != NULL) {
                resp_add_error(out, err);
            } else if (m == NULL) {
                if (!stale_answer(op, out, &f->key, f->hash))
                    timeout_answer(op, out, f);
            } else if (m->type == WIRE_VALUE) {
                meta(op->c, out, 0, m->u.value.stamp, 0, 0);
                render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len,
                           (int64_t)m->u.value.expire_ms);
            } else if (m->type == WIRE_NOTFOUND) {
                meta(op->c, out, 0, 0, 0, 0);
                render_one(op, out, 0, NULL, 0, 0);
            } else if (m->type == WIRE_ERROR) {
                buf_append(out, "-", 1);
                buf_append(out, m->u.error.text.p, m->u.error.text.len);
                buf_append(out, "\r\n", 2);
            } else {
                resp_add_error(out, "ERR unexpected answer from the owner");
            }
        }
        op_finish(op);
        op = next;
    }
}

static void flight_cb(void *arg, int status, const struct wire_msg *m)
{
    struct flight *f = arg;
    struct edge *e = f->e;
    f->fetching = 0;
    if (status != HKV_OK) {
        answer_waiters(f, NULL, NULL); /* the owner cannot answer: class's timeout answer */
        flight_free(f);
        return;
    }
    if (m->type == WIRE_MOVED && !f->moved) {
        f->moved = 1;
        router_moved(e->router, f->owner->pool, m->u.moved.leaf, m->u.moved.leaf_bits,
                     (int)m->u.moved.owner, m->u.moved.map_gen);
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, buf_head(&f->key), buf_unread(&f->key), &rt);
        if (o != NULL) {
            f->owner = o;
            if (flight_send(f) == 0)
                return;
        }
    }
    if (m->type == WIRE_MOVED) {
        char err[128];
        snprintf(err, sizeof(err), "TRYAGAIN owner %s/%d moved the key", topo_pool_name(f->owner->pool),
                 f->owner->index);
        answer_waiters(f, NULL, err);
        flight_free(f);
        return;
    }
    if (m->type == WIRE_VALUE || m->type == WIRE_NOTFOUND)
        edge_cache_fill(e, buf_head(&f->key), buf_unread(&f->key), &f->rt, m, f->sent_ms);
    answer_waiters(f, m, NULL);
    flight_free(f);
}

/* Colo wait: another edge holds the key's refresh lock.  Answers waiters
 * from the segment once that edge has filled it (an entry servable at once:
 * the stale entry that sent them here does not count), or fetches itself: with the
 * lock if it was released, expired or its holder died (cache_lock), and
 * without it once half the miss-wait has gone by without a fill.  A holder
 * that is alive but does not deliver (stopped, its owner link down) must
 * not turn into a timeout answer for a key the owner would give at once:
 * the lock saves owner fetches, it never decides what a reader gets.  The
 * cost is one extra fetch per edge and key while a holder is that slow.
 * Returns 1 if the flight ended. */
static int colo_poll(struct flight *f)
{
    struct edge *e = f->e;
    struct cache_hit hit;
    int64_t now = clock_mono_ms();
    if (cache_get(e->cache, buf_head(&f->key), buf_unread(&f->key), f->hash, now, &e->cval,
                  &hit) == HKV_OK &&
        servable(e, hit.fresh_until, now) &&
        !(hit.expire_at != 0 && hit.expire_at <= clock_unix_ms())) {
        struct op *op = f->waiters;
        f->waiters = f->wtail = NULL;
        while (op != NULL) {
            struct op *next = op->next;
            struct hkv_buf *out = op_out(op);
            if (out != NULL) {
                meta(op->c, out, now - hit.stored_at, hit.stamp, now >= hit.fresh_until, 0);
                render_one(op, out, !hit.negative, buf_head(&e->cval), buf_unread(&e->cval),
                           hit.expire_at);
            }
            op_finish(op);
            op = next;
        }
        flight_free(f);
        return 1;
    }
    uint64_t token = edge_cache_token(e);
    int mine = cache_lock(e->cache, f->hash, token, now, edge_lock_ttl(e));
    if (mine || now >= f->started_ms + e->ctx->cfg->miss_wait_ms / 2) {
        f->token = mine ? token : 0;
        f->poll_until = 0;
        if (flight_send(f) != 0) {
            answer_waiters(f, NULL, "ERR out of memory");
            flight_free(f);
            return 1;
        }
    }
    return 0;
}

static void flight_timer(evutil_socket_t fd, short what, void *arg)
{
    struct flight *f = arg;
    int64_t now = clock_mono_ms();
    int64_t wait = f->e->ctx->cfg->miss_wait_ms;
    /* Readers past miss-wait get their class's timeout answer now. */
    while (f->waiters != NULL && f->waiters->start_ms + wait <= now) {
        struct op *op = f->waiters;
        f->waiters = op->next;
        if (f->waiters == NULL)
            f->wtail = NULL;
        struct hkv_buf *out = op_out(op);
        if (out != NULL && !stale_answer(op, out, &f->key, f->hash))
            timeout_answer(op, out, f);
        op_finish(op);
    }
    if (!f->fetching && f->poll_until > 0) {
        if (colo_poll(f))
            return;
        if (f->waiters == NULL && now >= f->poll_until) {
            flight_free(f); /* nobody waits and the other edge fills the segment */
            return;
        }
    }
    rearm(f);
}

void edge_flights_teardown(struct edge *e)
{
    for (size_t i = 0; i < EDGE_FLIGHT_BUCKETS; i++) {
        while (e->flights[i] != NULL) {
            struct flight *f = e->flights[i];
            e->flights[i] = f->hnext;
            if (f->timer_init)
                evtimer_del(&f->timer);
            cfg_destroy(&f->cfg);
            buf_deinit(&f->key);
            free(f);
        }
    }
    while (e->free_flights != NULL) {
        struct flight *f = e->free_flights;
        e->free_flights = f->hnext;
        buf_deinit(&f->key);
        free(f);
    }
}

/* Starts a flight for key (not yet in flight here).  With the colo cache, it
 * fetches only if it gets the key's refresh lock; otherwise it waits for the
 * edge that has it.  NULL on allocation failure. */
static struct flight *flight_start(struct edge *e, const struct resp_slice *key,
                                   const struct route *rt, struct owner_ref *o, int background)
{
    struct flight *f = e->free_flights;
    if (f != NULL)
        e->free_flights = f->hnext;
    else if ((f = calloc(1, sizeof(*f))) == NULL)
        return NULL;
    if (!f->timer_init) {
        evtimer_assign(&f->timer, e->base, flight_timer, f);
        f->timer_init = 1;
    }
    f->e = e;
    f->hash = rt->hash;
    f->rt = *rt;
    f->cfg = cfg_ref(e->ctx->cfg); /* the config the router routed with */
    f->owner = o;
    f->moved = f->fetching = 0;
    f->token = 0;
    f->poll_until = 0;
    f->started_ms = clock_mono_ms();
    f->waiters = f->wtail = NULL;
    if (buf_append(&f->key, key->p, key->len) != HKV_OK) {
        flight_free(f);
        return NULL;
    }
    f->hnext = *bucket(e, rt->hash);
    *bucket(e, rt->hash) = f;
    f->linked = 1;
    if (e->cache != NULL) {
        uint64_t token = edge_cache_token(e);
        int64_t now = clock_mono_ms();
        if (!cache_lock(e->cache, rt->hash, token, now, edge_lock_ttl(e))) {
            cache_count(e->cache, CACHE_CTR_cache_refresh_lock_waits, 1);
            if (background) {
                flight_free(f); /* another edge refreshes it: keep serving stale */
                return NULL;
            }
            f->poll_until = now + e->ctx->cfg->miss_wait_ms;
            rearm(f);
            return f;
        }
        f->token = token;
    }
    if (flight_send(f) != 0) {
        flight_free(f);
        return NULL;
    }
    return f;
}

/* ---- single-key reads ------------------------------------------------------ */

static void one_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    if (m->type == WIRE_VALUE)
        render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len,
                   (int64_t)m->u.value.expire_ms);
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
/* A reader waiting on a flight: no owner request of its own. */
static const struct op_family wait_ops = {0, NULL, NULL, NULL, NULL};

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
    if (stale && !servable(e, hit.fresh_until, now)) {
        /* Stale by A or more: wait for the owner like a miss, unless this
         * edge's fetch of the key has been out for A already (the owner is
         * not answering: then the stale value, at once). */
        struct flight *f = flight_find(e, hash, key);
        if (f == NULL || now - f->started_ms < allowance(e)) {
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
    meta(c, &c->out, now - hit.stored_at, hit.stamp, stale, 0);
    render(cmd, c->proto, &c->out, !hit.negative, buf_head(&e->cval), buf_unread(&e->cval),
           hit.expire_at);
    if (stale && flight_find(e, hash, key) == NULL) {
        /* Stale: one edge of the colo refreshes it; the others keep serving. */
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, key->p, key->len, &rt);
        if (o != NULL)
            flight_start(e, key, &rt, o, 1);
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
    struct flight *f = flight_find(e, rt.hash, key);
    if (f == NULL && (f = flight_start(e, key, &rt, o, 0)) == NULL) {
        reply_error(c, "ERR out of memory");
        return;
    }
    struct op *op = read_op(c, &wait_ops, cmd);
    if (op == NULL)
        return; /* the flight goes on for its other waiters, or alone */
    op->start_ms = clock_mono_ms();
    op->next = NULL;
    if (f->wtail)
        f->wtail->next = op;
    else
        f->waiters = op;
    f->wtail = op;
    rearm(f);
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
        if (ok && !servable(e, hit.fresh_until, now)) {
            /* stale by A or more (top of file): served only while this edge's
             * fetch of it has been out for A; otherwise the owners are asked,
             * and a refresh starts so that during an outage the next reads
             * find that fetch */
            struct flight *f = flight_find(e, k[i].hash, &keys[i]);
            if (f == NULL || now - f->started_ms < allowance(e)) {
                ok = 0;
                struct route rt;
                struct owner_ref *o = f == NULL ? edge_owner_of(e, keys[i].p, keys[i].len, &rt)
                                                : NULL;
                if (o != NULL)
                    flight_start(e, &keys[i], &rt, o, 1);
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
        if (flight_find(e, k[i].hash, &keys[i]) != NULL)
            continue;
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, keys[i].p, keys[i].len, &rt);
        if (o != NULL)
            flight_start(e, &keys[i], &rt, o, 1);
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
