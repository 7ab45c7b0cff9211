/*
 * edge_op_send.c - an op's owner requests on the wire (edge_op.h), and the
 * write path's promise that a write either succeeds or fails explicitly.
 *
 * Reads go on the owner's READ link and are never retried: a read that gets
 * no answer within write-timeout is answered "-TRYAGAIN".  Writes go on the
 * WRITE link.  This edge does not order writes: the owner does, in the order
 * it receives them, and gives each a version (proto/wire.h).  The edge only
 * numbers each write request once (seq; writer = board slot + 1 and this
 * process's incarnation, sent in HELLO), and on a timeout or a broken link
 * sends the SAME request again after each delay of write-retry-backoff (the
 * last delay repeats) until write-deadline; then the client gets
 * "-UNAVAILABLE outcome unknown ...".  The owner answers a retry from its
 * record of the first attempt, so a write applies at most once; a retry that
 * may go to a restarted owner carries the incarnation the previous attempt
 * reached (rid.prev), and the owner answers "outcome unknown" rather than
 * apply it a second time.  Every request also says which of this edge's
 * requests are finished (ack: the lowest unfinished seq of this whole edge,
 * from one list of unfinished write requests in seq order: a request may
 * move to any owner), so owners forget those results.  One op timer serves the backoff and the
 * overall deadline.  A failed write pings the owner (STATS) and logs one
 * line with what it said, or that it was mute (edge_diag.c).
 *
 * What a request says and what its answer means are the op's family's
 * (encode, answer); this file only moves them, so it names no command.
 */
#include "server/edge/edge_op.h"

#include <stdio.h>
#include <stdlib.h>

#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_diag.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_stats.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_op_int.h"

/* ---- sending -------------------------------------------------------------- */

/* r's keys, contiguous (in e->ops->keys when there are several); NULL on
 * allocation failure. */
static const struct wire_slice *oreq_keys(struct oreq *r)
{
    struct op *op = r->op;
    struct edge *e = op->e;
    if (r->nk == 1)
        return &op->keys[op->kidx[r->k0]];
    if (e->ops->keys_cap < r->nk) {
        struct wire_slice *t = realloc(e->ops->keys, r->nk * sizeof(*t));
        if (t == NULL)
            return NULL;
        e->ops->keys = t;
        e->ops->keys_cap = r->nk;
    }
    for (uint32_t i = 0; i < r->nk; i++)
        e->ops->keys[i] = op->keys[op->kidx[r->k0 + i]];
    return e->ops->keys;
}

static int encode(struct hkv_buf *b, uint64_t id, struct oreq *r, struct wire_rid rid)
{
    const struct wire_slice *k = r->nk > 0 ? oreq_keys(r) : NULL;
    if (r->nk > 0 && k == NULL)
        return HKV_ENOMEM;
    return r->op->fam->encode(b, id, r, k, rid);
}

static void oreq_cb(void *arg, int status, const struct wire_msg *m);
static void oreq_done(struct oreq *r);

/* ---- unfinished write requests, in seq order (for ack) ------------------------- */

/* Every unfinished write request of this edge, whichever owner it is at,
 * in one list in seq order: the head is what ack is made of.  One list for
 * the whole process, not one per owner: a request in flight may be sent on
 * to ANY owner by a MOVED, and an owner must never have been told a seq is
 * finished before the request reaches it (it would keep no record of it,
 * and every resend would apply it again: server/owner/owner_rifl.h).
 * Requests are numbered as they are linked, so linking is at the tail. */
static void wq_link(struct edge *e, struct oreq *r)
{
    r->wprev = e->ops->wq_tail;
    r->wnext = NULL;
    if (e->ops->wq_tail != NULL)
        e->ops->wq_tail->wnext = r;
    else
        e->ops->wq_head = r;
    e->ops->wq_tail = r;
    r->owner->wq_n++;
}

static void wq_unlink(struct edge *e, struct oreq *r)
{
    if (r->wprev != NULL)
        r->wprev->wnext = r->wnext;
    else
        e->ops->wq_head = r->wnext;
    if (r->wnext != NULL)
        r->wnext->wprev = r->wprev;
    else
        e->ops->wq_tail = r->wprev;
    r->wprev = r->wnext = NULL;
    r->owner->wq_n--;
}

/* The history a resend carries (rid.prev): the process the last attempt
 * reached, asked of ITS link (connection numbers are per link); when that
 * attempt never left this process (its connection never went up: queued
 * while the owner was down), the history it carried itself, so a write sent
 * during an outage is a first attempt (an earlier one's target, if it had
 * one), not "an attempt that may have been applied". */
static uint64_t last_reached(const struct oreq *r)
{
    if (!r->tried)
        return 0;
    if (r->link != NULL && !elink_conn_went_up(r->link, r->conn))
        return r->sent_prev == WIRE_PREV_SAME ? WIRE_PREV_UNKNOWN : r->sent_prev;
    uint64_t inc = r->link != NULL ? elink_owner_of(r->link, r->conn) : WIRE_PREV_UNKNOWN;
    return inc != 0 ? inc : WIRE_PREV_UNKNOWN;
}

/* The request id of a write attempt about to go out on link l: every
 * request of this edge below ack is finished, at every owner. */
static struct wire_rid next_rid(struct edge *e, struct oreq *r, struct elink *l)
{
    struct wire_rid rid = {
        r->seq, e->ops->wq_head != NULL ? e->ops->wq_head->seq : e->ops->next_seq + 1, 0};
    uint64_t conn = elink_next_conn(l);
    /* A resend on the connection the last attempt took meets the process
     * that read that attempt, after it: whether or not its HELLO was
     * answered yet, no other process can have applied it. */
    if (r->prev_at != 0) /* re-routed: the process the last attempt reached, on its link */
        rid.prev = r->prev_at;
    else if (r->tried && r->conn == conn && r->link == l)
        rid.prev = WIRE_PREV_SAME;
    else if (r->tried && r->link == l && !elink_conn_went_up(l, r->conn))
        rid.prev = last_reached(r);
    else if (r->tried)
        rid.prev = elink_owner_of(l, r->conn);
    r->prev_at = 0;
    r->tried = 1;
    r->conn = conn;
    r->sent_prev = rid.prev;
    return rid;
}

/* now_ms: the caller's clock_mono_ms reading, taken before the send. */
static void oreq_send(struct oreq *r, int64_t now_ms)
{
    struct op *op = r->op;
    /* A read from a client with writes in flight travels behind them. */
    int role = r->role == WIRE_ROLE_READ && op->c != NULL && sess_of(op->c)->writes_inflight > 0
                   ? WIRE_ROLE_WRITE : r->role;
    struct elink *l = edge_owner_link(r->owner, role);
    if (l == NULL) { /* a cluster owner with no link and none to be made: never sent */
        op_error(op, "TRYAGAIN owner %s/%d cannot be reached now (not applied)",
                 topo_pool_name(r->owner->pool), r->owner->index);
        oreq_done(r);
        return;
    }
    struct wire_rid rid = {0, 0, 0};
    if (r->seq != 0)
        rid = next_rid(op->e, r, l);
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    int rc = encode(b, id, r, rid);
    if (rc == HKV_OK)
        rc = elink_commit_at(l, id, oreq_cb, r, now_ms);
    if (rc != HKV_OK) {
        op_error(op, "ERR cannot send to owner %s/%d: %s", topo_pool_name(r->owner->pool),
                 r->owner->index, rc == HKV_ETOOBIG
                     ? "request larger than wire-max-frame, not applied" : hkv_strstatus(rc));
        oreq_done(r);
        return;
    }
    r->state = OREQ_SENT;
    r->link = l;
    r->id = id;
    if (op->c != NULL && elink_congested(l))
        conn_hold(op->c, l); /* stop reading this client until l drains */
}

static void op_timer_cb(evutil_socket_t fd, short what, void *arg);

static void arm(struct op *op, int64_t ms, int deadline)
{
    if (!op->timer_init) {
        evtimer_assign(&op->timer, op->e->base, op_timer_cb, op);
        op->timer_init = 1;
    }
    if (ms < 0)
        ms = 0;
    op->timer_at_ms = clock_mono_ms() + ms; /* rare: backoffs and near deadlines only */
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(&op->timer, &tv);
    op->timer_on = 1;
    op->timer_deadline = deadline;
}

/* While requests are in flight, the op timer guards the overall deadline
 * when it comes before the link's own timeout.  `now` is the caller's
 * reading, taken before its sends (which do not wait): a clock read per
 * write was 0.75% of the edge's cycles on SET -P16. */
static void guard_deadline(struct op *op, int64_t now)
{
    const struct op_opts *o = &op->e->ops->opts;
    if (!op->timer_on && now + o->write_timeout_ms > op->deadline_ms)
        arm(op, op->deadline_ms - now, 1);
}

/* op_start's clock: inside the dispatch of the command that made the op
 * (its client's current command stat, and the dispatch reading it took,
 * edge_registry.c), that reading, taken microseconds before; else a new
 * one.  An earlier start only brings the write deadline and the cache's
 * fresh-until base (edge_cache_wrote) earlier.  One clock read fewer per
 * write: 1.9% of the edge's cycles on SET -P16. */
static int64_t dispatch_ms(const struct op *op)
{
    const struct conn *c = op->c;
    if (c != NULL && sess_of(c)->cur_stat != STATS_NONE && op->t0_ns != 0 &&
        op->t0_ns == sess_of(c)->cur_t0_ns)
        return op->t0_ns / 1000000;
    return clock_mono_ms();
}

void op_start(struct op *op)
{
    struct edge *e = op->e;
    op->start_ms = dispatch_ms(op);
    op->answer_ns = 0;
    if (op->is_write)
        op->deadline_ms = op->start_ms + e->ops->opts.write_deadline_ms;
    for (uint32_t i = 0; i < op->nreqs; i++) {
        struct oreq *r = req_at(op, i);
        r->tried = 0;
        if (r->role == WIRE_ROLE_WRITE && wire_is_write(r->type)) {
            r->seq = ++e->ops->next_seq;
            wq_link(e, r);
        }
    }
    op->pending = (int)op->nreqs;
    /* Send all first: a request that fails at once must not finish the op
     * while later ones are unsent. */
    op->pending++;
    for (uint32_t i = 0; i < op->nreqs; i++)
        oreq_send(req_at(op, i), op->start_ms);
    if (op->is_write && op->pending > 1)
        guard_deadline(op, op->start_ms);
    op->pending--;
    if (op->pending == 0) {
        if (op->err && !(op->fam->flags & OP_F_ERRDONE))
            op_finish_error(op);
        else
            op->fam->done(op);
    }
}

#define OP_MAP_POLL_MS 5         /* a promoted follower takes the writes this soon after the map */
#define OP_RESEND_MS 5           /* ... and an HKV_ERESEND resend goes this soon */
#define OP_MOVED_MAX 8           /* MOVED answers a write follows (5, 10 ... 320 ms apart) */

/* Drops one of op's holds (a request in flight, or a resend's op->pending++); the last one
 * finishes it. */
static void unhold(struct op *op)
{
    if (--op->pending != 0)
        return;
    if (op->timer_on) {
        evtimer_del(&op->timer);
        op->timer_on = 0;
    }
    if (op->err && !(op->fam->flags & OP_F_ERRDONE))
        op_finish_error(op);
    else
        op->fam->done(op);
}

static void oreq_done(struct oreq *r)
{
    struct op *op = r->op;
    r->state = OREQ_DONE;
    if (r->seq != 0) {
        wq_unlink(op->e, r);
        r->seq = 0;
    }
    unhold(op);
}

/* ---- write failures ------------------------------------------------------ */

static void count_failure(struct op *op, struct owner_ref *o, const char *what)
{
    if (op->failed_counted)
        return;
    op->failed_counted = 1;
    board_add(&op->e->stats->write_failures, 1);
    edge_write_failed_report(o, what);
}

static void write_fail(struct oreq *r)
{
    struct op *op = r->op;
    const struct op_opts *o = &op->e->ops->opts;
    char what[256];
    snprintf(what, sizeof(what),
             "write %s failed: owner %s/%d did not acknowledge it within %lld ms (%d resends)",
             op->label, topo_pool_name(r->owner->pool), r->owner->index,
             (long long)o->write_deadline_ms, op->attempt);
    op_error(op,
             "UNAVAILABLE outcome unknown: owner %s/%d did not acknowledge the write "
             "within %lld ms",
             topo_pool_name(r->owner->pool), r->owner->index, (long long)o->write_deadline_ms);
    count_failure(op, r->owner, what);
    /* Unacknowledged that long, with nothing else heard from it since: the
     * owner does not answer this colo (its pushes are held too, a cut link),
     * and its trackers must hear it even if no read went to it. */
    if (op->e->health != NULL && op->e->cache != NULL)
        edge_health_unanswered(op->e, r->owner, op->start_ms, clock_mono_ms());
    oreq_done(r);
}

static void watch_map(struct edge *e);

/* A write request got no answer (timeout or broken link): wait, resend. */
/* delay < 0: write-retry-backoff's, by attempt */
static void write_retry_in(struct oreq *r, int64_t delay)
{
    struct op *op = r->op;
    const struct op_opts *o = &op->e->ops->opts;
    int64_t now = clock_mono_ms();
    r->state = OREQ_WAIT;
    if (now >= op->deadline_ms) {
        write_fail(r);
        return;
    }
    watch_map(op->e);
    /* a resend is scheduled already: this request joins it, unless it
     * asks for sooner (HKV_ERESEND beside another request's backoff) */
    if (op->timer_on && !op->timer_deadline && (delay < 0 || op->timer_at_ms <= now + delay))
        return;
    if (delay < 0 && o->nbackoff > 0) {
        size_t i = (size_t)op->attempt < o->nbackoff ? (size_t)op->attempt
                                                                    : o->nbackoff - 1;
        delay = o->backoff_ms[i];
    }
    if (delay < 0)
        delay = 0;
    if (op->timer_on)
        evtimer_del(&op->timer);
    arm(op, now + delay > op->deadline_ms ? op->deadline_ms - now : delay, 0);
}

static void write_retry(struct oreq *r)
{
    write_retry_in(r, -1);
}

static void op_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct op *op = arg;
    op->timer_on = 0;
    int64_t now = clock_mono_ms();
    int expired = now >= op->deadline_ms;
    /* Failing or resending may finish the op: hold it open meanwhile. */
    op->pending++;
    for (uint32_t i = 0; i < op->nreqs; i++) {
        struct oreq *r = req_at(op, i);
        if (r->state == OREQ_WAIT) {
            if (expired) {
                write_fail(r);
            } else {
                board_add(&op->e->stats->write_retries, 1);
                oreq_send(r, now);
            }
        } else if (r->state == OREQ_SENT && expired) {
            elink_cancel(r->link, r->id);
            write_fail(r);
        }
    }
    if (!expired)
        op->attempt++;
    if (!expired && op->pending > 1)
        guard_deadline(op, now);
    unhold(op);
}

/* ---- answers -------------------------------------------------------------- */

static void oreq_cb(void *arg, int status, const struct wire_msg *m)
{
    struct oreq *r = arg;
    struct op *op = r->op;
    struct edge *e = op->e;
    if (status == HKV_OK && r->link != NULL)
        op->answer_ns = elink_read_ns(r->link);
    r->state = OREQ_IDLE;
    if (status != HKV_OK) {
        if (r->role == WIRE_ROLE_WRITE) {
            write_retry(r);
            return;
        }
        op_error(op, "TRYAGAIN owner %s/%d did not answer", topo_pool_name(r->owner->pool),
                 r->owner->index);
        oreq_done(r);
        return;
    }
    if (m->type == WIRE_MOVED && r->nk == 0 && (op->fam->flags & OP_F_MOVED)) {
        router_moved(e->owners->router, r->owner->pool, m->u.moved.leaf, m->u.moved.leaf_bits,
                     (int)m->u.moved.owner, m->u.moved.map_gen);
        op->fam->answer(op, r, m); /* the family routes it again */
        oreq_done(r);
        return;
    }
    if (m->type == WIRE_MOVED) {
        /* A write may meet MOVED again: a promoted follower whose own map
         * is a few ms behind this edge's names the dead primary (a hint this
         * edge's newer map ignores), so it goes back to the same owner, a
         * little later each time, until write-deadline; a read, once. */
        int again = r->moved > 0;
        if (r->moved < (r->role == WIRE_ROLE_WRITE ? OP_MOVED_MAX : 1)) {
            r->moved++;
            int rc = router_moved(e->owners->router, r->owner->pool, m->u.moved.leaf,
                                  m->u.moved.leaf_bits, (int)m->u.moved.owner, m->u.moved.map_gen);
            if (rc >= 0 && r->nk > 0) {
                struct route rt;
                const struct wire_slice *k = &op->keys[op->kidx[r->k0]];
                struct owner_ref *o = edge_owner_of(e, k->p, k->len, &rt);
                if (o != NULL) {
                    if (r->seq != 0) {
                        r->owner->wq_n--;
                        o->wq_n++;
                    }
                    r->owner = o;
                    /* MOVED came only after the old owner's gate: it holds no
                     * record of this request and has forgotten none, and any
                     * record it had went with the leaf, with its lost marks
                     * (server/owner/owner_rifl.h).  So the new owner can tell
                     * a first attempt from a copy of one it holds: no history
                     * is lost by sending it as a first attempt. */
                    r->tried = 0;
                    if (again)
                        write_retry_in(r, (int64_t)OP_RESEND_MS << (r->moved - 2));
                    else
                        oreq_send(r, clock_mono_ms());
                    return;
                }
            }
        }
        op_error(op, "TRYAGAIN owner %s/%d moved the key and the new owner is unknown",
                 topo_pool_name(r->owner->pool), r->owner->index);
        oreq_done(r);
        return;
    }
    if (m->type == WIRE_ERROR && m->u.error.code == HKV_ERESEND && r->role == WIRE_ROLE_WRITE) {
        /* a follower about to be promoted, asked before its map says so:
         * not applied, nothing recorded, so the retry goes again with the
         * history it carried (the process its first attempt reached), which
         * the new primary can judge; until write-deadline, as any retry */
        r->prev_at = r->sent_prev == WIRE_PREV_SAME ? elink_owner_of(r->link, r->conn)
                                                    : r->sent_prev;
        if (r->prev_at == 0)
            r->tried = 0;
        write_retry_in(r, OP_RESEND_MS);
        return;
    }
    if (m->type == WIRE_ERROR) {
        for (uint32_t i = 0; r->role == WIRE_ROLE_WRITE && op->khash != NULL && i < r->nk; i++) {
            uint32_t k = op->kidx[r->k0 + i]; /* a value error may reveal a newer state */
            edge_cache_doubt(e, op->keys[k].p, op->keys[k].len, op->khash[k]);
        }
        op_error(op, "%.*s", (int)m->u.error.text.len, m->u.error.text.p);
        oreq_done(r);
        return;
    }
    op->fam->answer(op, r, m);
    oreq_done(r);
}

/* ---- a new map ------------------------------------------------------------ */

/* The first write waiting to be resent, its last attempt's connection gone,
 * whose key another owner serves now. */
static struct oreq *moved_waiter(struct edge *e, struct owner_ref **to)
{
    for (struct oreq *r = e->ops->wq_head; r != NULL; r = r->wnext) {
        if (r->state != OREQ_WAIT || r->nk == 0)
            continue;
        /* only when the last attempt's connection broke (its owner died,
         * or was cut off): a timed-out write goes back where it went, whose
         * MOVED then sends it on as a first attempt */
        if (r->link != NULL && elink_is_up(r->link) && r->conn == elink_next_conn(r->link))
            continue;
        const struct wire_slice *k = &r->op->keys[r->op->kidx[r->k0]];
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, k->p, k->len, &rt);
        if (o != NULL && o != r->owner) {
            *to = o;
            return r;
        }
    }
    return NULL;
}

static void op_reroute(struct edge *e)
{
    int64_t now = clock_mono_ms();
    struct owner_ref *o;
    struct oreq *r;
    /* one at a time, from the head again: a send may finish an op, and
     * its requests with it; each one sent is no longer waiting */
    while ((r = moved_waiter(e, &o)) != NULL) {
        struct op *op = r->op;
        /* rid.prev names the process the last attempt reached (asked of
         * ITS link: connection numbers are per link), so the new primary
         * answers from the record that came with the result, or "outcome
         * unknown", never a second apply; not known (its HELLO was not
         * answered): unknown, never "a first attempt" */
        r->prev_at = last_reached(r);
        if (r->prev_at == 0)
            r->tried = 0; /* nothing it sent reached an owner: a first attempt */
        r->owner->wq_n--;
        o->wq_n++;
        r->owner = o;
        op->pending++;
        oreq_send(r, now);
        unhold(op);
    }
}

/* While writes wait for a resend, every OP_MAP_POLL_MS: has the map moved?
 * (one atomic load; the look stops once nothing waits) */
static void on_map_poll(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    int waiting = 0;
    for (struct oreq *r = e->ops->wq_head; r != NULL && !waiting; r = r->wnext)
        waiting = r->state == OREQ_WAIT;
    if (!waiting) {
        event_del(e->ops->reroute);
        return;
    }
    int64_t rev = cmap_revision(e->ctx->cmap);
    if (rev == e->ops->map_seen)
        return;
    e->ops->map_seen = rev;
    op_reroute(e);
}

/* A write waits for a resend: in a cluster, watch the map meanwhile. */
static void watch_map(struct edge *e)
{
    struct edge_ops *m = e->ops;
    if (e->ctx->cmap == NULL)
        return;
    if (m->reroute == NULL &&
        (m->reroute = event_new(e->base, -1, EV_PERSIST, on_map_poll, e)) == NULL)
        return; /* out of memory: the backoff's resend still comes */
    if (!event_pending(m->reroute, EV_TIMEOUT, NULL)) {
        struct timeval tv = {0, OP_MAP_POLL_MS * 1000};
        m->map_seen = -1; /* the first look re-routes: the map may have moved already
                           * (a promotion can beat the edge to its owner's EOF) */
        event_add(m->reroute, &tv);
    }
}

/* ---- reload -------------------------------------------------------------- */

void op_reload(struct edge *e, const struct op_opts *next)
{
    if (op_take_opts(e->ops, next) != 0)
        return;
    int64_t now = clock_mono_ms();
    for (struct oreq *r = e->ops->wq_head; r != NULL; r = r->wnext) {
        struct op *op = r->op;
        int64_t d = op->start_ms + next->write_deadline_ms;
        if (!op->is_write || d >= op->deadline_ms)
            continue;
        /* a lower write-deadline applies to the writes in flight: the op
         * timer is brought forward to it when it would fire later (a
         * backoff's resend then finds the deadline passed) or is not on */
        op->deadline_ms = d;
        if (op->timer_on && op->timer_at_ms <= d)
            continue;
        if (op->timer_on)
            evtimer_del(&op->timer);
        arm(op, d - now, 1);
    }
}
