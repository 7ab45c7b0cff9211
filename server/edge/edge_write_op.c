/*
 * edge_write_op.c - the write ops (edge_write_op.h): what each kind of write
 * sends its owner and how the owner's answer becomes a Redis reply.  Each
 * kind is one table for the op engine (encode, answer, done; OP_F_WRITE:
 * numbered, retried until write-deadline), its arguments a struct
 * write_args in the op's args block.
 *
 * Every answer to a numbered write updates the colo cache first (wrote),
 * before the client can hear OK: a client reads its own writes through any
 * edge of the colo.
 *
 * GETDEL is one owner operation (atomic).  GETEX with an option is two
 * steps: GET, then EXPIRE or PERSIST; a write between the two steps by
 * another client is possible (the returned value is then the one read).
 * MSET sends one SET per distinct key (a key named twice is set once, to
 * its last value, as Redis leaves it).  Its atomicity across owners is NOT
 * promised: if one owner fails, the keys of the others may be set while the
 * client gets an error.
 */
#include "server/edge/edge_write_op.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/router.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_sess.h"

#define W(op) OP_ARGS(op, struct write_args)

int write_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                        const struct wire_slice *k, struct wire_rid rid)
{
    struct op *op = r->op;
    const struct write_args *w = W(op);
    switch (r->type) {
    case WIRE_SET: {
        struct wire_slice v = w->cmd == CMD_MSET ? op->vals[op->kidx[r->k0]] : op->value;
        return wire_put_set(b, id, k[0], v, rid, w->exp, w->wflags);
    }
    case WIRE_DEL:
        return wire_put_del(b, id, k, r->nk, rid);
    case WIRE_INCRBY:
        return wire_put_incrby(b, id, k[0], w->delta, rid);
    case WIRE_EXPIRE:
        return wire_put_expire(b, id, k[0], w->exp, rid, w->wflags);
    case WIRE_PERSIST:
        return wire_put_persist(b, id, k[0], rid);
    case WIRE_GETDEL:
        return wire_put_getdel(b, id, k[0], rid);
    case WIRE_GET: /* GETEX's first step */
        return wire_put_get(b, id, k, r->nk);
    default:
        return HKV_EINVAL;
    }
}

static int is_set(enum cmd_id c)
{
    return c == CMD_SET || c == CMD_SETEX || c == CMD_PSETEX || c == CMD_SETNX ||
           c == CMD_GETSET || c == CMD_MSET;
}

/* A numbered write was applied (OK / INT): the colo cache learns it before
 * the client hears OK (read-your-writes), with the new value where it is
 * known here, else a tombstone. */
void write_wrote(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (r->seq == 0 || (m->type != WIRE_OK && m->type != WIRE_INT))
        return;
    const struct write_args *w = W(op);
    /* The owner's version of the write orders it in the cache; 0: the
     * write changed nothing (and its answer may reveal a state the colo
     * does not hold yet: edge_cache_doubt). */
    hkv_stamp version = m->type == WIRE_OK ? m->u.ok.stamp : m->u.integer.stamp;
    for (uint32_t i = 0; i < r->nk && version == 0; i++) {
        uint32_t k = op->kidx[r->k0 + i];
        edge_cache_doubt(op->e, op->keys[k].p, op->keys[k].len, op->khash[k]);
    }
    int known = is_set(w->cmd) && m->type == WIRE_OK && m->u.ok.applied &&
                w->exp.kind != WIRE_EXP_KEEP;
    for (uint32_t i = 0; i < r->nk && version != 0; i++) {
        uint32_t k = op->kidx[r->k0 + i];
        const struct wire_slice *v = !known ? NULL : w->cmd == CMD_MSET ? &op->vals[k] : &op->value;
        int64_t expire_at = w->exp.kind == WIRE_EXP_REL   ? clock_unix_ms() + w->exp.ms
                            : w->exp.kind == WIRE_EXP_ABS ? w->exp.ms
                                                          : 0;
        /* applied after its first send (op->start_ms), so no older */
        edge_cache_wrote(op->e, op->keys[k].p, op->keys[k].len, op->khash[k], v, expire_at,
                         version, op->start_ms, op_answer_ms(op), op->c ? op->c->id : 0);
    }
}

/* ---- SET, SETEX, PSETEX, SETNX, GETSET, GETDEL ---------------------------------- */

static void set_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    write_wrote(op, r, m);
    if (m->type != WIRE_OK) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    W(op)->acc = m->u.ok.applied;
    if ((W(op)->wflags & WIRE_SET_GET) && m->u.ok.has_old) {
        buf_reset(&op->res);
        buf_append(&op->res, m->u.ok.old.p, m->u.ok.old.len);
        W(op)->has_old = 1;
    }
}

static void set_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        int applied = W(op)->acc != 0;
        if (W(op)->cmd == CMD_SETNX) {
            resp_add_int(out, applied);
        } else if (W(op)->wflags & WIRE_SET_GET) {
            if (W(op)->has_old)
                resp_add_bulk(out, buf_head(&op->res), buf_unread(&op->res));
            else
                resp_add_null(out, sess_of(op->c)->proto);
        } else if (applied) {
            resp_add_simple(out, "OK");
        } else {
            resp_add_null(out, sess_of(op->c)->proto);
        }
    }
    op_finish(op);
}

static const struct op_family set_ops = {OP_F_WRITE, write_encode, set_answer, set_done,
                                        NULL, NULL};

/* A new write op for cmd, with its arguments; NULL if none could be made
 * (the error reply is written). */
static struct op *write_op(struct conn *c, const struct op_family *fam, enum cmd_id cmd)
{
    struct op *op = op_new(c, fam, cmd_get(cmd)->name);
    if (op != NULL)
        W(op)->cmd = cmd;
    return op;
}

void write_set(struct conn *c, enum cmd_id cmd, const struct resp_slice *key,
               const struct resp_slice *val, struct wire_expiry exp, uint32_t wflags)
{
    struct op *op = write_op(c, &set_ops, cmd);
    if (op == NULL)
        return;
    W(op)->exp = exp;
    W(op)->wflags = wflags;
    if (op_copy_keys(op, 1, key, 1, val) != 0 || op_single(op, WIRE_SET, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void write_getdel(struct conn *c, const struct resp_slice *key)
{
    /* Answered like SET ... GET: OK with the old value when the key existed. */
    struct op *op = write_op(c, &set_ops, CMD_GETDEL);
    if (op == NULL)
        return;
    W(op)->wflags = WIRE_SET_GET;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_GETDEL, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- MSET ------------------------------------------------------------------------ */

static void mset_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    write_wrote(op, r, m);
    if (m->type != WIRE_OK)
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
}

static void ok_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

static const struct op_family mset_ops = {OP_F_WRITE, write_encode, mset_answer, ok_done,
                                        NULL, NULL};

/* Keeps, for a key named more than once, only its last pair, in place and
 * in order.  Two sends of one key could be applied in either order after a
 * retry; one send cannot.  0, or -1 (error recorded). */
static int mset_dedupe(struct op *op)
{
    uint32_t n = op->nkeys;
    if (n < 2)
        return 0;
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    uint32_t *tab = malloc(cap * sizeof(*tab)); /* key index + 1, 0 = empty */
    uint8_t *drop = calloc(n, 1);
    if (tab == NULL || drop == NULL) {
        free(tab);
        free(drop);
        op_error(op, "ERR out of memory");
        return -1;
    }
    memset(tab, 0, cap * sizeof(*tab));
    for (uint32_t i = n; i-- > 0;) { /* from the end: the last pair wins */
        const struct wire_slice *k = &op->keys[i];
        size_t h = (size_t)router_hash(k->p, k->len) & (cap - 1);
        for (;; h = (h + 1) & (cap - 1)) {
            if (tab[h] == 0) {
                tab[h] = i + 1;
                break;
            }
            const struct wire_slice *o = &op->keys[tab[h] - 1];
            if (o->len == k->len && memcmp(o->p, k->p, k->len) == 0) {
                drop[i] = 1;
                break;
            }
        }
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!drop[i]) {
            op->keys[w] = op->keys[i];
            op->vals[w] = op->vals[i];
            w++;
        }
    op->nkeys = w;
    free(tab);
    free(drop);
    return 0;
}

void write_mset(struct conn *c, int npairs, const struct resp_slice *pairs)
{
    struct op *op = write_op(c, &mset_ops, CMD_MSET);
    if (op == NULL)
        return;
    if (op_copy_keys(op, npairs, pairs, 2, NULL) != 0 || mset_dedupe(op) != 0 ||
        op_split(op, WIRE_SET, WIRE_ROLE_WRITE, 1) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- DEL, UNLINK, EXPIRE, PERSIST, INCRBY: an INT answer -------------------------- */

static void int_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    write_wrote(op, r, m);
    if (m->type != WIRE_INT) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    W(op)->acc += m->u.integer.value;
}

static void int_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, W(op)->acc);
    op_finish(op);
}

static const struct op_family int_ops = {OP_F_WRITE, write_encode, int_answer, int_done,
                                        NULL, NULL};

void write_del(struct conn *c, enum cmd_id cmd, int n, const struct resp_slice *keys)
{
    struct op *op = write_op(c, &int_ops, cmd);
    if (op == NULL)
        return;
    if (op_copy_keys(op, n, keys, 1, NULL) != 0 ||
        op_split(op, WIRE_DEL, WIRE_ROLE_WRITE, 0) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void write_single(struct conn *c, enum cmd_id cmd, uint8_t type, const struct resp_slice *key,
                  struct wire_expiry exp, uint32_t wflags, int64_t delta)
{
    struct op *op = write_op(c, &int_ops, cmd);
    if (op == NULL)
        return;
    W(op)->exp = exp;
    W(op)->wflags = wflags;
    W(op)->delta = delta;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, type, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- GETEX: a read, then a write ------------------------------------------------- */

static void gtw_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    write_wrote(op, r, m);
    if (W(op)->step == 0) {
        if (m->type == WIRE_VALUE) {
            W(op)->acc = 1;
            buf_reset(&op->res);
            if (buf_append(&op->res, m->u.value.value.p, m->u.value.value.len) != HKV_OK)
                op_error(op, "ERR out of memory");
        } else if (m->type == WIRE_NOTFOUND) {
            W(op)->acc = 0;
        } else {
            op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                     r->owner->index);
        }
    }
    /* step 1: the write's answer (INT) only has to arrive */
}

static void gtw_done(struct op *op)
{
    if (W(op)->step == 0 && W(op)->acc && W(op)->bad_exp != NULL) {
        op_error(op, "%s", W(op)->bad_exp); /* Redis checks the expiry once the key is found */
        op_finish_error(op);
        return;
    }
    if (W(op)->step == 0 && W(op)->acc) {
        /* The key exists: now the write, numbered and retried like any. */
        W(op)->step = 1;
        uint8_t type = W(op)->exp.kind == WIRE_EXP_NONE ? WIRE_PERSIST : WIRE_EXPIRE;
        if (op_single(op, type, WIRE_ROLE_WRITE) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
        return;
    }
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (W(op)->acc)
            resp_add_bulk(out, buf_head(&op->res), buf_unread(&op->res));
        else
            resp_add_null(out, sess_of(op->c)->proto);
    }
    op_finish(op);
}

static const struct op_family gtw_ops = {OP_F_WRITE, write_encode, gtw_answer, gtw_done,
                                        NULL, NULL};

void write_getex(struct conn *c, const struct resp_slice *key, struct wire_expiry exp,
                 const char *bad_exp)
{
    struct op *op = write_op(c, &gtw_ops, CMD_GETEX);
    if (op == NULL)
        return;
    W(op)->exp = exp;
    W(op)->bad_exp = bad_exp;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_GET, WIRE_ROLE_READ) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}
