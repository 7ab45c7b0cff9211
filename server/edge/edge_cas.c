/*
 * edge_cas.c - the conditional write (edge_cas.h) as a CALL of the owner's
 * SETIFMATCH, in words the edge makes:
 *   IF_VERSION             SETIFMATCH key val <expected> [PX ttl] NOGET XX
 *   IF_VERSION_OR_ABSENT   SETIFMATCH key val <expected> [PX ttl] NOGET
 *   IF_ABSENT              SETIFMATCH key val -1 [PX ttl] NOGET
 * (-1 is no version: every version is >= 0, so only an absent key is
 * written).  The owner's reply is [version, nil] or nil (XX, no key);
 * whether it wrote is its change list: the key at its new version.  The
 * reply is asked in RESP2, for this file alone to read (proto/etag.h).
 */
#include "server/edge/edge_cas.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto/etag.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_op.h"

struct cas_args {
    edge_cas_fn fn;
    void *arg;
    int outcome;                  /* enum edge_cas_outcome, once answered */
    hkv_stamp version;
};
_Static_assert(sizeof(struct cas_args) <= OP_ARGS_MAX, "cas_args too large for an op");
#define K(op) OP_ARGS(op, struct cas_args)

static const char err_unknown[] = "UNAVAILABLE outcome unknown";

static int cas_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                      const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    return wire_put_call(b, id, rid, 2, op->keys, op->nkeys);
}

static void cas_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (edge_call_taken(op, r, m) != 0)
        return;
    int64_t v = 0;
    int has_value;
    enum etag_reply k = etag_reply_parse(m->u.resp.reply.p, m->u.resp.reply.len, &v, &has_value);
    if (k == ETAG_REPLY_BAD) {
        /* an error reply: its text, as the client's error */
        const char *p = m->u.resp.reply.p;
        size_t n = m->u.resp.reply.len;
        if (n >= 3 && p[0] == '-')
            op_error(op, "%.*s", (int)(n - 3), p + 1);
        else
            op_error(op, "ERR unexpected answer from the owner");
        return;
    }
    K(op)->version = k == ETAG_REPLY_PAIR && v > 0 ? (hkv_stamp)v : 0;
    K(op)->outcome = m->u.resp.nchanges > 0 ? EDGE_CAS_APPLIED : EDGE_CAS_MISMATCH;
}

static void cas_done(struct op *op)
{
    struct edge_cas_result res = {(enum edge_cas_outcome)K(op)->outcome, K(op)->version, 0, NULL,
                                  0};
    if (op->err) {
        res.outcome = EDGE_CAS_FAILED;
        res.version = 0;
        res.err = buf_head(&op->errbuf);
        res.errlen = buf_unread(&op->errbuf);
        res.unknown = res.errlen >= sizeof(err_unknown) - 1 &&
                      memcmp(res.err, err_unknown, sizeof(err_unknown) - 1) == 0;
    }
    K(op)->fn(K(op)->arg, op_out(op), &res);
    op_finish(op);
}

static const struct op_family cas_ops = {OP_F_WRITE | OP_F_ERRDONE, cas_encode, cas_answer,
                                         cas_done, NULL, NULL};

void edge_cas_write(struct conn *c, const struct edge_cas_req *q, edge_cas_fn fn, void *arg)
{
    char ver[24], ttl[24];
    snprintf(ver, sizeof(ver), "%" PRId64,
             q->cond == EDGE_CAS_IF_ABSENT ? (int64_t)-1 : (int64_t)q->expected);
    snprintf(ttl, sizeof(ttl), "%" PRId64, q->ttl_ms);
    struct resp_slice w[9];
    int n = 0;
    w[n++] = (struct resp_slice){"SETIFMATCH", 10};
    w[n++] = (struct resp_slice){q->key, q->klen};
    w[n++] = (struct resp_slice){q->val, q->vlen};
    w[n++] = (struct resp_slice){ver, strlen(ver)};
    if (q->ttl_ms > 0) {
        w[n++] = (struct resp_slice){"PX", 2};
        w[n++] = (struct resp_slice){ttl, strlen(ttl)};
    }
    w[n++] = (struct resp_slice){"NOGET", 5};
    if (q->cond == EDGE_CAS_IF_VERSION)
        w[n++] = (struct resp_slice){"XX", 2};

    struct op *op = op_new(c, &cas_ops, "setifmatch");
    if (op == NULL) {
        /* op_new wrote its error reply into c's place already */
        struct edge_cas_result res = {EDGE_CAS_FAILED, 0, 0, "ERR out of memory", 17};
        fn(arg, NULL, &res);
        return;
    }
    K(op)->fn = fn;
    K(op)->arg = arg;
    struct owner_ref *o = NULL;
    const char *err = NULL;
    if (edge_same_owner(c->e, q->key, q->klen, &o, &err) != 0) {
        op_error(op, "%s", err);
        cas_done(op);
        return;
    }
    if (op_copy_keys(op, n, w, 1, NULL) != 0 || op_to_owner(op, o, WIRE_CALL, WIRE_ROLE_WRITE) != 0) {
        cas_done(op); /* the error is recorded */
        return;
    }
    /* the request's routing key, for a MOVED: the key (word 1) */
    struct oreq *r = req_at(op, 0);
    op->kidx[0] = 1;
    r->k0 = 0;
    r->nk = 1;
    op_start(op);
}
