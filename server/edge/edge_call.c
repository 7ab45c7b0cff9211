/*
 * edge_call.c - the CALL op family (edge_call.h): a client command sent to
 * its keys' owner as WIRE_CALL and answered with the owner's RESP bytes.
 *
 * The op keeps a copy of every word (op->keys holds argv, op->nkeys argc);
 * its one request carries the first key as its routing key (kidx[0]), so a
 * MOVED answer is followed like any other write's.  The encoder sends all
 * the words, whatever the engine passes as the request's keys.
 *
 * Cache: each key the owner reports changed gets a tombstone at the version
 * it now holds (edge_cache_wrote without a value, as every write whose new
 * value the edge does not know), before the client hears the reply: a read
 * through any edge of this colo then asks the owner and sees the write.
 * A write command that changed nothing (SETIFMATCH not applied, MSETNX
 * refused) may have answered from a state the colo does not hold yet
 * (SETIFMATCH's [etag, value]): its keys are doubted, as a plain write's
 * no-op is, so the client's next read is not older than what it was told
 * (monotonic reads).
 */
#include "server/edge/edge_call.h"

#include "server/core/router.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_sess.h"

struct call_args {
    int proto;                    /* the client's, when the command came */
};
_Static_assert(sizeof(struct call_args) <= OP_ARGS_MAX, "call_args too large for an op");
#define C(op) OP_ARGS(op, struct call_args)

int edge_cmd_owner(struct edge *e, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv, struct owner_ref **o, const char **err)
{
    int first, last;
    *o = NULL;
    if (cmd_key_range(d, argc, &first, &last) == 0)
        return 0;
    for (int i = first; i <= last; i += d->step)
        if (edge_same_owner(e, argv[i].p, argv[i].len, o, err) != 0)
            return -1;
    return 0;
}

static int call_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    return wire_put_call(b, id, rid, (uint8_t)C(op)->proto, op->keys, op->nkeys);
}

int edge_call_taken(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_RESP) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return -1;
    }
    const struct cmd_def *d =
        m->u.resp.nchanges == 0 && op->nkeys > 0 ? cmd_lookup(op->keys[0].p, op->keys[0].len)
                                                 : NULL;
    if (d != NULL && (d->flags & CMD_F_WRITE)) {
        /* (a read run by the owner, EXPIRETIME or TOUCH of a hot key, must
         * not empty its cache entry at each call) */
        int first, last;
        int n = cmd_key_range(d, (int)op->nkeys, &first, &last);
        for (int i = first; n > 0 && i <= last && i < (int)op->nkeys; i += d->step)
            edge_cache_doubt(op->e, op->keys[i].p, op->keys[i].len,
                             router_hash(op->keys[i].p, op->keys[i].len));
    }
    /* applied after its first send (op->start_ms), so no older */
    for (uint32_t i = 0; i < m->u.resp.nchanges; i++) {
        const struct wire_watch *ch = &m->u.resp.changes[i];
        edge_cache_wrote(op->e, ch->key.p, ch->key.len, router_hash(ch->key.p, ch->key.len),
                         NULL, 0, ch->version, op->start_ms, op_answer_ms(op),
                         op->c ? op->c->id : 0);
    }
    return 0;
}

static void call_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (edge_call_taken(op, r, m) != 0)
        return;
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        buf_append(out, m->u.resp.reply.p, m->u.resp.reply.len);
}

static void call_done(struct op *op)
{
    op_finish(op);
}

static const struct op_family call_ops = {OP_F_WRITE, call_encode, call_answer, call_done, NULL,
                                          NULL};

void edge_cmd_call(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct cmd_def *d = cmd_lookup(argv[0].p, argv[0].len);
    if (d->id == CMD_MSETNX && argc % 2 == 0) {
        /* Redis's own check, before the keys are looked at */
        reply_error(c, "ERR wrong number of arguments for 'msetnx' command");
        return;
    }
    if ((uint64_t)argc > WIRE_MAX_ITEMS_DEFAULT) {
        resp_add_errorf(&c->out, "ERR more than %u words in one '%s' command; not applied",
                        (unsigned)WIRE_MAX_ITEMS_DEFAULT, d->name);
        return;
    }
    struct owner_ref *o;
    const char *err;
    if (edge_cmd_owner(c->e, d, argc, argv, &o, &err) != 0) {
        reply_error(c, err);
        return;
    }
    struct op *op = op_new(c, &call_ops, d->name);
    if (op == NULL)
        return;
    C(op)->proto = sess_of(c)->proto;
    if (op_copy_keys(op, argc, argv, 1, NULL) != 0 ||
        op_to_owner(op, o, WIRE_CALL, WIRE_ROLE_WRITE) != 0) {
        op_finish_error(op);
        return;
    }
    /* The request's routing key, for a MOVED: the command's first key. */
    struct oreq *r = req_at(op, 0);
    op->kidx[0] = (uint32_t)d->first_key;
    r->k0 = 0;
    r->nk = 1;
    op_start(op);
}
