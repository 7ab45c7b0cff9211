/*
 * edge_keyspace.c - FLUSHALL, FLUSHDB and OBJECT: commands the owners run
 * from their command table, sent as WIRE_CALL with the client's words.
 *
 * FLUSHALL [ASYNC|SYNC] (FLUSHDB is the same: there is one database).  The
 * flush goes to every owner as one numbered write each (retried until
 * write-deadline like any write); an owner answers once its flush is
 * committed (durable in every class), with the flush's version: every
 * version that owner issued before is older.  Then the colo caches must
 * forget what they hold, in every colo of the host, including values on
 * their way in (a fill whose fetch the owner answered before its flush, a
 * push it wrote before it).  Each owner's flush version goes to the master
 * (CTL_CACHE_FORGET), which maps every colo segment and raises that owner's
 * flush floor in each (cache_forget_below): from then on an entry or a put
 * stamped below it is a miss or refused, whatever path it took, since every
 * value carries its owner's version and the owner is in the version's low
 * bits (proto/stamp.h).  That is exact, unlike a time horizon: no clock
 * decides, and a late push cannot slip under it.  The client hears OK only
 * after the master said every forget this edge sent is applied, so after
 * the OK no edge of the host serves a value from before the flush (a read
 * joining a fetch sent before the flush fetches again: edge_flight.c).
 * The forgets are counted, not tied to the op: each owner's is sent as its
 * answer arrives, so when another owner fails (the client gets the error)
 * the caches still forget what the owners that did flush held.
 *
 * OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key goes to the key's owner, which
 * knows how the value was made (Redis's encoding depends on the command that
 * wrote it, not only on the bytes) and answers every text, HELP and the
 * subcommand errors included (without a key, any owner does).  It asks for
 * metadata the colo cache does not hold, so it does not read through the
 * cache: only the key's owner can answer it.
 */
#include "server/edge/edge_keyspace.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/ctl.h"
#include "server/core/topo.h"
#include "server/core/worker.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_sess.h"

/* An owner-CALL op's arguments (in the op's args block); the words to send
 * are op->keys[0 .. op->nkeys). */
struct call_args {
    uint8_t proto;                /* the client's, for the owner's reply */
    int lost;                     /* FLUSHALL: a forget could not reach the master */
    uint64_t need;                /* FLUSHALL: answered once forgets->done reaches it */
};
_Static_assert(sizeof(struct call_args) <= OP_ARGS_MAX, "call_args too large for an op");
#define A(op) OP_ARGS(op, struct call_args)

static int call_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    return wire_put_call(b, id, rid, A(op)->proto, op->keys, op->nkeys);
}

/* An owner's RESP error reply: the op's error (text without '-' and CRLF).
 * Returns 1 if it was one. */
static int owner_error(struct op *op, struct wire_slice reply)
{
    if (reply.len == 0 || reply.p[0] != '-')
        return 0;
    size_t n = reply.len - 1;
    while (n > 0 && (reply.p[n] == '\n' || reply.p[n] == '\r'))
        n--;
    op_error(op, "%.*s", (int)n, reply.p + 1);
    return 1;
}

/* Copies argv into the op as the words to send, and the client's protocol.
 * 0, or -1 (the error is replied, the op freed). */
static int take_words(struct op *op, struct conn *c, int argc, const struct resp_slice *argv)
{
    A(op)->proto = (uint8_t)sess_of(c)->proto;
    if (op_copy_keys(op, argc, argv, 1, NULL) != 0) {
        op_finish_error(op);
        return -1;
    }
    return 0;
}

/* ---- FLUSHALL / FLUSHDB ------------------------------------------------------ */

/* FLUSHALL's cache forgets (e->forgets). */
struct edge_forgets {
    uint64_t sent;                /* CTL_CACHE_FORGETs sent to the master */
    uint64_t done;                /* ... and applied (answered in order) */
    struct op *head, *tail;       /* FLUSHALLs waiting for theirs, oldest first */
};

int forgets_setup(struct edge *e)
{
    e->forgets = calloc(1, sizeof(*e->forgets));
    return e->forgets != NULL ? 0 : -1;
}

void forgets_teardown(struct edge_forgets **fp)
{
    free(*fp);
    *fp = NULL;
}

/* Sends one owner's flush version to the master (ctl.h CTL_CACHE_FORGET). */
static void forget_send(struct op *op, hkv_stamp floor)
{
    struct edge *e = op->e;
    unsigned char p[8];
    ctl_put_u64(p, floor);
    if (worker_send(e->worker, CTL_CACHE_FORGET, p, sizeof(p)) == HKV_OK)
        e->forgets->sent++;
    else
        A(op)->lost = 1;
}

static void flush_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_RESP) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    if (owner_error(op, m->u.resp.reply))
        return;
    hkv_stamp floor = 0;
    for (uint32_t i = 0; i < m->u.resp.nchanges; i++)
        if (m->u.resp.changes[i].key.len == 0)
            floor = m->u.resp.changes[i].version;
    if (floor == 0) {
        op_error(op, "ERR owner %s/%d flushed without saying its flush version",
                 topo_pool_name(r->owner->pool), r->owner->index);
        return;
    }
    forget_send(op, floor);
}

static void flush_reply(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (A(op)->lost) {
        op_error(op, "ERR every owner flushed, but the colo caches could not be told (the "
                 "master cannot be reached): values cached before may be served until they "
                 "expire");
        op_finish_error(op);
        return;
    }
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

static void flush_done(struct op *op)
{
    struct edge *e = op->e;
    A(op)->need = e->forgets->sent; /* this op's forgets are among those sent so far */
    if (A(op)->lost || e->forgets->done >= A(op)->need) {
        flush_reply(op);
        return;
    }
    op->next = NULL;
    if (e->forgets->tail != NULL)
        e->forgets->tail->next = op;
    else
        e->forgets->head = op;
    e->forgets->tail = op;
}

void edge_cache_forgotten(void *arg)
{
    struct edge *e = arg;
    e->forgets->done++;
    while (e->forgets->head != NULL && A(e->forgets->head)->need <= e->forgets->done) {
        struct op *op = e->forgets->head;
        e->forgets->head = op->next;
        if (e->forgets->head == NULL)
            e->forgets->tail = NULL;
        op->next = NULL;
        flush_reply(op);
    }
}

static const struct op_family flush_ops = {
    .flags = OP_F_WRITE, .encode = call_encode, .answer = flush_answer, .done = flush_done};

void edge_cmd_flushall(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (argc > 2 ||
        (argc == 2 && !edge_arg_is(&argv[1], "sync") && !edge_arg_is(&argv[1], "async"))) {
        reply_error(c, "ERR syntax error");
        return;
    }
    if (edge_config(e)->replicas > 0) { /* owner_cmd_key.c says why */
        reply_error(c, "ERR FLUSHALL is not supported while leaves have followers (replicas > 0)");
        return;
    }
    if (edge_owner_next(e, -1) < 0) {
        resp_add_simple(&c->out, "OK");
        return;
    }
    struct op *op =
        op_new(c, &flush_ops, edge_arg_is(&argv[0], "flushdb") ? "flushdb" : "flushall");
    if (op == NULL || take_words(op, c, argc, argv) != 0)
        return;
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        if (op_to_owner(op, &e->owners->ref[g], WIRE_CALL, WIRE_ROLE_WRITE) != 0) {
            op_finish_error(op);
            return;
        }
    }
    op_start(op);
}

/* ---- OBJECT ----------------------------------------------------------------------- */

/* The owner's reply, passed through as it is (the owner encoded it for the
 * client's protocol). */
static void object_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_RESP) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        buf_append(out, m->u.resp.reply.p, m->u.resp.reply.len);
}

static void object_done(struct op *op)
{
    op_finish(op);
}

/* A numbered request (a CALL is one), though OBJECT changes nothing: the
 * owner runs a CALL of reads again on a retry rather than recording it. */
static const struct op_family object_ops = {
    .flags = OP_F_WRITE, .encode = call_encode, .answer = object_answer, .done = object_done};

void edge_cmd_object(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (edge_owner_next(e, -1) < 0) {
        reply_error(c, "ERR no owner serves this keyspace");
        return;
    }
    struct op *op = op_new(c, &object_ops, "object");
    if (op == NULL || take_words(op, c, argc, argv) != 0)
        return;
    /* the key's owner; without a key (HELP, or a subcommand short of its
     * key: the owner answers the arity error) any owner answers */
    struct route rt;
    struct owner_ref *o = argc >= 3 ? edge_owner_of(e, argv[2].p, argv[2].len, &rt)
                                    : edge_owner_at(e, edge_owner_next(e, -1));
    if (o == NULL) {
        op_error(op, "ERR no owner serves the '%s' pool", topo_pool_name(rt.pool));
        op_finish_error(op);
        return;
    }
    if (op_to_owner(op, o, WIRE_CALL, WIRE_ROLE_WRITE) != 0) {
        op_finish_error(op);
        return;
    }
    if (argc >= 3) { /* the key, so that a MOVED is followed */
        struct oreq *r = req_at(op, 0);
        op->kidx[0] = 2;
        r->k0 = 0;
        r->nk = 1;
    }
    op_start(op);
}
