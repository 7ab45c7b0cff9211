/*
 * edge_exec.c - EXEC (edge_exec.h): checks the transaction, answers the
 * key-less commands, and sends the rest to the owner as one WIRE_EXEC op.
 *
 * The op owns copies of everything it sends, so it runs to its end (and
 * is retried with the same request id) even when the client is gone:
 *   op->keys   the sent commands' words, then the watched keys;
 *   op->res    the request's arrays (struct wire_cmd[nsent], struct
 *              wire_watch[nwatch], laid out at its aligned start), then
 *              the replies of the key-less commands, back to back;
 *   op->items  per queued command: found = answered here, off/len = its
 *              reply after local_off in op->res.
 * The owner's reply is written as it is unless key-less commands (or the
 * hidden EXISTS of a key-less transaction with watched keys) must be put
 * in place: then its array is split into its elements and re-assembled in
 * the client's order.  A nil reply (a watched key changed) or an error is
 * passed through.
 *
 * Cache: as every write's answer (edge_call.c), each key the owner reports
 * changed gets a tombstone at the version it holds now, before the client
 * hears the reply.
 */
#include "server/edge/edge_exec.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_cmd.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_tx.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_throttle.h"

struct exec_args {
    int proto;                    /* the client's, at EXEC */
    uint32_t ncmds;               /* commands in the client's transaction */
    uint32_t nsent;               /* commands sent (the hidden EXISTS included) */
    uint32_t nwatch;
    int spliced;                  /* the reply must be re-assembled (file top) */
    struct wire_cmd *cmds;        /* in op->res */
    struct wire_watch *watch;     /* in op->res */
    size_t local_off;             /* the key-less commands' replies in op->res */
};
_Static_assert(sizeof(struct exec_args) <= OP_ARGS_MAX, "exec_args too large for an op");
#define X(op) OP_ARGS(op, struct exec_args)

static const char *word_at(const struct edge_tx *tx, uint32_t w)
{
    return buf_head(&tx->bytes) + tx->words[w].off;
}

/* The one owner of every key the transaction touches (NULL: none): 0, or
 * -1 with *err. */
static int owner_of_all(struct conn *c, const struct edge_tx *tx, struct owner_ref **o,
                        const char **err)
{
    *o = NULL;
    for (uint32_t i = 0; i < tx->ncmds; i++) {
        const struct tx_cmd *q = &tx->cmds[i];
        const struct cmd_def *d = cmd_get(q->id);
        int first, last;
        if (q->local || cmd_key_range(d, (int)q->n, &first, &last) == 0)
            continue;
        for (int k = first; k <= last; k += d->step) {
            uint32_t w = q->w0 + (uint32_t)k;
            if (edge_same_owner(c->e, word_at(tx, w), tx->words[w].len, o, err) != 0)
                return -1;
        }
    }
    for (uint32_t i = 0; i < tx->nwatch; i++) {
        const struct tx_watch *w = &tx->watch[i];
        if (edge_same_owner(c->e, buf_head(&tx->wbytes) + w->off, w->len, o, err) != 0)
            return -1;
    }
    return 0;
}

/* 1 if a watched key's deadline has passed since WATCH read it: it
 * expired (or was written since, which fails the EXEC anyway), and Redis
 * 7.0 fails the EXEC of a watched key that expired. */
static int watched_key_expired(const struct edge_tx *tx)
{
    int64_t now = clock_unix_ms();
    for (uint32_t i = 0; i < tx->nwatch; i++)
        if (tx->watch[i].expire_at != 0 && tx->watch[i].expire_at <= now)
            return 1;
    return 0;
}

/* Appends the reply of key-less command i to dst, as the edge answers it
 * outside a transaction (the handlers write to c->out: it is lent to them).
 * UNWATCH's is OK: EXEC forgets the watched keys anyway. */
static void run_local(struct conn *c, const struct edge_tx *tx, uint32_t i, struct hkv_buf *dst)
{
    const struct tx_cmd *q = &tx->cmds[i];
    if (q->id == CMD_UNWATCH) {
        resp_add_simple(dst, "OK");
        return;
    }
    struct resp_slice small[8], *argv = small;
    if (q->n > 8 && (argv = malloc(q->n * sizeof(*argv))) == NULL) {
        resp_add_error(dst, "ERR out of memory");
        return;
    }
    for (uint32_t k = 0; k < q->n; k++)
        argv[k] = (struct resp_slice){word_at(tx, q->w0 + k), tx->words[q->w0 + k].len};
    struct hkv_buf saved = c->out;
    c->out = *dst;
    if (q->id == CMD_PING)
        edge_cmd_ping(c, (int)q->n, argv);
    else if (q->id == CMD_ECHO)
        edge_cmd_echo(c, (int)q->n, argv);
    else if (q->id == CMD_LASTSAVE)
        edge_cmd_lastsave(c, (int)q->n, argv);
    else if (q->id == CMD_CL_THROTTLE) /* answered at EXEC, in its place */
        edge_cmd_throttle(c, (int)q->n, argv);
    else
        edge_cmd_time(c, (int)q->n, argv);
    *dst = c->out;
    c->out = saved;
    if (argv != small)
        free(argv);
}

/* ---- the op --------------------------------------------------------------------- */

static int exec_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    return wire_put_exec(b, id, rid, (uint8_t)X(op)->proto, X(op)->watch, X(op)->nwatch,
                         X(op)->cmds, X(op)->nsent);
}

/* "*<n>\r\n" at the start of p: 1 with *n and *hdr (its length), else 0. */
static int array_header(const char *p, size_t len, int64_t *n, size_t *hdr)
{
    if (len < 4 || p[0] != '*')
        return 0;
    int64_t v = 0;
    size_t i = 1;
    for (; i < len && i < 12 && p[i] >= '0' && p[i] <= '9'; i++)
        v = v * 10 + (p[i] - '0');
    if (i == 1 || i + 1 >= len || p[i] != '\r' || p[i + 1] != '\n')
        return 0;
    *n = v;
    *hdr = i + 2;
    return 1;
}

/* The client's reply from the owner's array (file top); 0, or -1 when the
 * owner's array is not what was asked for. */
static int splice(struct op *op, struct hkv_buf *out, struct wire_slice reply)
{
    int64_t n;
    size_t pos;
    if (!array_header(reply.p, reply.len, &n, &pos) || n != X(op)->nsent) {
        buf_append(out, reply.p, reply.len); /* nil (a watched key changed), an error */
        return 0;
    }
    struct hkv_buf tmp = HKV_BUF_INIT;
    resp_add_array(&tmp, X(op)->ncmds);
    const char *local = buf_head(&op->res) + X(op)->local_off;
    int rc = 0;
    for (uint32_t i = 0; i < X(op)->ncmds && rc == 0; i++) {
        const struct op_item *it = &op->items[i];
        if (it->found) {
            buf_append(&tmp, local + it->off, it->len);
            continue;
        }
        size_t used = 0;
        struct resp_value *v = NULL;
        if (resp_parse_reply(reply.p + pos, reply.len - pos, &used, &v) != HKV_OK) {
            rc = -1;
            break;
        }
        resp_value_free(&v);
        buf_append(&tmp, reply.p + pos, used);
        pos += used;
    }
    if (rc == 0)
        buf_append(out, buf_head(&tmp), buf_unread(&tmp));
    buf_deinit(&tmp);
    return rc;
}

static void exec_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (edge_call_taken(op, r, m) != 0)
        return;
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    if (!X(op)->spliced)
        buf_append(out, m->u.resp.reply.p, m->u.resp.reply.len);
    else if (splice(op, out, m->u.resp.reply) != 0)
        op_error(op, "ERR malformed EXEC reply from owner %s/%d (the transaction ran)",
                 topo_pool_name(r->owner->pool), r->owner->index);
}

static void exec_done(struct op *op)
{
    op_finish(op);
}

static const struct op_family exec_ops = {OP_F_WRITE, exec_encode, exec_answer, exec_done, NULL,
                                          NULL};

/* Appends n words to the op's keys and store; returns the first's index. */
static uint32_t put_words(struct op *op, const struct edge_tx *tx, uint32_t w0, uint32_t n)
{
    uint32_t first = op->nkeys;
    for (uint32_t k = 0; k < n; k++) {
        const struct tx_word *w = &tx->words[w0 + k];
        op->keys[op->nkeys++] = wire_slice(buf_tail(&op->store), w->len);
        buf_append(&op->store, buf_head(&tx->bytes) + w->off, w->len);
    }
    return first;
}

static uint32_t put_word(struct op *op, const char *p, size_t len)
{
    op->keys[op->nkeys] = wire_slice(buf_tail(&op->store), len);
    buf_append(&op->store, p, len);
    return op->nkeys++;
}

/* Lays out op->res: the request's arrays, then the local replies (tmp).
 * 0, or -1 (error recorded). */
static int layout(struct op *op, const struct hkv_buf *tmp)
{
    size_t arrays = X(op)->nsent * sizeof(struct wire_cmd) +
                    X(op)->nwatch * sizeof(struct wire_watch);
    size_t align = alignof(max_align_t);
    buf_reset(&op->res);
    if (buf_reserve(&op->res, arrays + align + buf_unread(tmp), 0) != HKV_OK) {
        op_error(op, "ERR out of memory");
        return -1;
    }
    size_t pad = (align - ((uintptr_t)op->res.data % align)) % align;
    X(op)->cmds = (struct wire_cmd *)(void *)(op->res.data + pad);
    X(op)->watch = (struct wire_watch *)(void *)(op->res.data + pad +
                                                  X(op)->nsent * sizeof(struct wire_cmd));
    X(op)->local_off = pad + arrays;
    op->res.len = X(op)->local_off;
    buf_append(&op->res, buf_head(tmp), buf_unread(tmp)); /* reserved: nothing moves */
    return 0;
}

/* Builds the op (file top); 0, or -1 (error recorded). */
static int build(struct op *op, struct conn *c, const struct edge_tx *tx, struct hkv_buf *tmp)
{
    uint32_t nremote = tx->ncmds - tx->nlocal, nw = tx->nwatch + 2;
    size_t bytes = buf_unread(&tx->wbytes) + 6 + (tx->nwatch > 0 ? tx->watch[0].len : 0);
    for (uint32_t i = 0; i < tx->ncmds; i++) {
        const struct tx_cmd *q = &tx->cmds[i];
        if (q->local)
            continue;
        nw += q->n;
        for (uint32_t k = 0; k < q->n; k++)
            bytes += tx->words[q->w0 + k].len;
    }
    X(op)->proto = sess_of(c)->proto;
    X(op)->ncmds = tx->ncmds;
    X(op)->nsent = nremote > 0 ? nremote : 1;
    X(op)->nwatch = tx->nwatch;
    X(op)->spliced = tx->nlocal > 0 || nremote == 0;
    if (op_reserve(op, nw) != 0)
        return -1;
    if (buf_reserve(&op->store, bytes + 1, 0) != HKV_OK) {
        op_error(op, "ERR out of memory");
        return -1;
    }
    if (X(op)->spliced && tx->ncmds > 0) {
        struct op_item *items = op_items(op, tx->ncmds);
        if (items == NULL)
            return -1;
        for (uint32_t i = 0; i < tx->ncmds; i++) {
            if (!tx->cmds[i].local)
                continue;
            items[i].found = 1;
            items[i].off = buf_unread(tmp);
            run_local(c, tx, i, tmp);
            items[i].len = buf_unread(tmp) - items[i].off;
        }
    }
    if (layout(op, tmp) != 0)
        return -1;
    /* the words (the store never grows past its reservation: slices stay) */
    op->nkeys = 0;
    uint32_t route = UINT32_MAX, j = 0;
    for (uint32_t i = 0; i < tx->ncmds; i++) {
        const struct tx_cmd *q = &tx->cmds[i];
        if (q->local)
            continue;
        uint32_t first = put_words(op, tx, q->w0, q->n);
        X(op)->cmds[j++] = (struct wire_cmd){&op->keys[first], q->n};
        if (route == UINT32_MAX)
            route = first + (uint32_t)cmd_get(q->id)->first_key;
    }
    if (nremote == 0) {
        /* key-less commands with watched keys: the owner checks the versions
         * around a command nobody sees */
        uint32_t first = put_word(op, "exists", 6);
        route = put_word(op, buf_head(&tx->wbytes) + tx->watch[0].off, tx->watch[0].len);
        X(op)->cmds[0] = (struct wire_cmd){&op->keys[first], 2};
    }
    for (uint32_t i = 0; i < tx->nwatch; i++) {
        const struct tx_watch *w = &tx->watch[i];
        uint32_t k = put_word(op, buf_head(&tx->wbytes) + w->off, w->len);
        X(op)->watch[i] = (struct wire_watch){op->keys[k], w->version};
    }
    op->kidx[0] = route; /* the routing key, for a MOVED */
    return 0;
}

static void start(struct conn *c, const struct edge_tx *tx, struct owner_ref *o)
{
    struct op *op = op_new(c, &exec_ops, "exec");
    if (op == NULL)
        return;
    struct hkv_buf tmp = HKV_BUF_INIT;
    int rc = build(op, c, tx, &tmp);
    buf_deinit(&tmp);
    if (rc != 0 || op_to_owner(op, o, WIRE_EXEC, WIRE_ROLE_WRITE) != 0) {
        op_finish_error(op);
        return;
    }
    struct oreq *r = req_at(op, 0);
    r->k0 = 0;
    r->nk = 1;
    op_start(op);
}

void edge_cmd_exec(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge_tx *tx = sess_of(c)->tx;
    if (tx == NULL || !tx->multi) {
        reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    struct owner_ref *o;
    const char *err;
    if (tx->dirty) {
        reply_error(c, "EXECABORT Transaction discarded because of previous errors.");
    } else if (owner_of_all(c, tx, &o, &err) != 0) {
        reply_error(c, err);
    } else if (tx->watch_pending > 0 || tx->watch_failed || watched_key_expired(tx)) {
        /* a version not known cannot be compared: never commit over it */
        resp_add_null_array(&c->out, sess_of(c)->proto);
    } else if (o == NULL) {
        /* nothing with a key, nothing watched: the edge answers it all */
        struct hkv_buf tmp = HKV_BUF_INIT;
        resp_add_array(&c->out, tx->ncmds);
        for (uint32_t i = 0; i < tx->ncmds; i++)
            run_local(c, tx, i, &tmp);
        buf_append(&c->out, buf_head(&tmp), buf_unread(&tmp));
        buf_deinit(&tmp);
    } else {
        start(c, tx, o);
    }
    edge_tx_end(c);
}
