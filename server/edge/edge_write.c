/*
 * edge_write.c - the write commands: argument parsing with Redis's replies
 * and errors, and how each owner answer becomes a Redis reply.  Sending,
 * request ids, retries and the deadline are edge_data.c's.
 *
 * GETDEL is one owner operation (atomic).  GETEX with an option is two
 * steps: GET, then EXPIRE or PERSIST; a write between the two steps by
 * another client is possible (the returned value is then the one read).
 *
 * MSET sends one SET per distinct key (a key named twice is set once, to
 * its last value, as Redis leaves it).  Its atomicity across owners is NOT
 * promised: if one owner fails, the keys of the others may be set while the
 * client gets an error.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_write.h"

#include "server/edge/edge_arg.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_owners.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define ERR_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"

/* ---- SET and friends ---------------------------------------------------------- */

#define F_NX 0x01
#define F_XX 0x02
#define F_GET 0x04
#define F_KEEPTTL 0x08
#define F_PERSIST 0x10
#define F_EX 0x20
#define F_PX 0x40
#define F_EXAT 0x80
#define F_PXAT 0x100
#define F_ANYEXP (F_EX | F_PX | F_EXAT | F_PXAT)

/* Turns an expire argument into a wire expiry, as Redis's
 * getExpireMillisecondsOrReply.  Writes the error reply and returns -1. */
static int expire_arg(struct conn *c, const struct resp_slice *v, int unit_flag, const char *cmd,
                      struct wire_expiry *out)
{
    long long ms;
    if (arg_ll(v, &ms) != 0) {
        reply_error(c, ERR_INT);
        return -1;
    }
    int seconds = unit_flag == F_EX || unit_flag == F_EXAT;
    if (ms <= 0 || (seconds && ms > LLONG_MAX / 1000)) {
        resp_add_errorf(&c->out, "ERR invalid expire time in '%s' command", cmd);
        return -1;
    }
    if (seconds)
        ms *= 1000;
    int rel = unit_flag == F_EX || unit_flag == F_PX;
    if (rel && ms > LLONG_MAX - clock_unix_ms()) {
        resp_add_errorf(&c->out, "ERR invalid expire time in '%s' command", cmd);
        return -1;
    }
    out->kind = rel ? WIRE_EXP_REL : WIRE_EXP_ABS;
    out->ms = ms;
    return 0;
}

/* Redis's parseExtendedStringArgumentsOrReply for SET (is_set) and GETEX.
 * Returns the flags, or -1 with the error written. */
static int parse_ext(struct conn *c, int argc, const struct resp_slice *argv, int from, int is_set,
                     const char *cmd, struct wire_expiry *exp)
{
    int flags = 0;
    const struct resp_slice *expv = NULL;
    int unit = 0;
    for (int j = from; j < argc; j++) {
        const struct resp_slice *o = &argv[j];
        int has_next = j + 1 < argc;
        if (is_set && slice_is(o, "nx") && !(flags & F_XX)) {
            flags |= F_NX;
        } else if (is_set && slice_is(o, "xx") && !(flags & F_NX)) {
            flags |= F_XX;
        } else if (is_set && slice_is(o, "get")) {
            flags |= F_GET;
        } else if (is_set && slice_is(o, "keepttl") && !(flags & (F_PERSIST | F_ANYEXP))) {
            flags |= F_KEEPTTL;
        } else if (!is_set && slice_is(o, "persist") && !(flags & (F_KEEPTTL | F_ANYEXP))) {
            flags |= F_PERSIST;
        } else if (has_next && !(flags & (F_KEEPTTL | F_PERSIST | F_ANYEXP)) &&
                   (slice_is(o, "ex") || slice_is(o, "px") || slice_is(o, "exat") ||
                    slice_is(o, "pxat"))) {
            unit = slice_is(o, "ex") ? F_EX : slice_is(o, "px") ? F_PX
                   : slice_is(o, "exat") ? F_EXAT : F_PXAT;
            flags |= unit;
            expv = &argv[++j];
        } else {
            reply_error(c, ERR_SYNTAX);
            return -1;
        }
    }
    *exp = (struct wire_expiry){WIRE_EXP_NONE, 0};
    if (flags & F_KEEPTTL)
        exp->kind = WIRE_EXP_KEEP;
    if (expv != NULL && expire_arg(c, expv, unit, cmd, exp) != 0)
        return -1;
    return flags;
}

static void set_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_OK) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    op->acc = m->u.ok.applied;
    if ((op->wflags & WIRE_SET_GET) && m->u.ok.has_old) {
        buf_reset(&op->res);
        buf_append(&op->res, m->u.ok.old.p, m->u.ok.old.len);
        op->step = 1; /* an old value is in res */
    }
}

static void set_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        int applied = op->acc != 0;
        if (op->cmd == CMD_SETNX) {
            resp_add_int(out, applied);
        } else if (op->wflags & WIRE_SET_GET) {
            if (op->step == 1)
                resp_add_bulk(out, buf_head(&op->res), buf_unread(&op->res));
            else
                resp_add_null(out, op->c->proto);
        } else if (applied) {
            resp_add_simple(out, "OK");
        } else {
            resp_add_null(out, op->c->proto);
        }
    }
    op_finish(op);
}

static void start_set(struct conn *c, enum cmd_id cmd, const struct resp_slice *key,
                      const struct resp_slice *val, struct wire_expiry exp, uint32_t wflags)
{
    struct op *op = op_new(c, cmd, 1);
    if (op == NULL)
        return;
    op->answer = set_answer;
    op->done = set_done;
    op->exp = exp;
    op->wflags = wflags;
    if (op_copy_keys(op, 1, key, 1, val) != 0 || op_single(op, WIRE_SET, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_set(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    int f = parse_ext(c, argc, argv, 3, 1, "set", &exp);
    if (f < 0)
        return;
    uint32_t w = (f & F_NX ? WIRE_SET_NX : 0) | (f & F_XX ? WIRE_SET_XX : 0) |
                 (f & F_GET ? WIRE_SET_GET : 0);
    start_set(c, CMD_SET, &argv[1], &argv[2], exp, w);
}

static void setex(struct conn *c, enum cmd_id cmd, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    if (expire_arg(c, &argv[2], cmd == CMD_SETEX ? F_EX : F_PX, cmd == CMD_SETEX ? "setex" : "psetex",
                   &exp) != 0)
        return;
    start_set(c, cmd, &argv[1], &argv[3], exp, 0);
}

void edge_cmd_setex(struct conn *c, int argc, const struct resp_slice *argv)
{
    setex(c, CMD_SETEX, argv);
}

void edge_cmd_psetex(struct conn *c, int argc, const struct resp_slice *argv)
{
    setex(c, CMD_PSETEX, argv);
}

void edge_cmd_setnx(struct conn *c, int argc, const struct resp_slice *argv)
{
    start_set(c, CMD_SETNX, &argv[1], &argv[2], (struct wire_expiry){WIRE_EXP_NONE, 0}, WIRE_SET_NX);
}

void edge_cmd_getset(struct conn *c, int argc, const struct resp_slice *argv)
{
    start_set(c, CMD_GETSET, &argv[1], &argv[2], (struct wire_expiry){WIRE_EXP_NONE, 0},
              WIRE_SET_GET);
}

/* ---- MSET ------------------------------------------------------------------------ */

static void mset_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
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

void edge_cmd_mset(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc % 2 == 0) {
        reply_error(c, "ERR wrong number of arguments for 'mset' command");
        return;
    }
    struct op *op = op_new(c, CMD_MSET, 1);
    if (op == NULL)
        return;
    op->answer = mset_answer;
    op->done = ok_done;
    if (op_copy_keys(op, (argc - 1) / 2, argv + 1, 2, NULL) != 0 || mset_dedupe(op) != 0 ||
        op_split(op, WIRE_SET, WIRE_ROLE_WRITE, 1) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- DEL, UNLINK, EXPIRE, PERSIST, INCR ------------------------------------------ */

static void int_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_INT) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    op->acc += m->u.integer.value;
}

static void int_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, op->acc);
    op_finish(op);
}

static void del(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv)
{
    struct op *op = op_new(c, cmd, 1);
    if (op == NULL)
        return;
    op->answer = int_answer;
    op->done = int_done;
    if (op_copy_keys(op, argc - 1, argv + 1, 1, NULL) != 0 ||
        op_split(op, WIRE_DEL, WIRE_ROLE_WRITE, 0) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_del(struct conn *c, int argc, const struct resp_slice *argv)
{
    del(c, CMD_DEL, argc, argv);
}

void edge_cmd_unlink(struct conn *c, int argc, const struct resp_slice *argv)
{
    del(c, CMD_UNLINK, argc, argv);
}

static void single_write(struct conn *c, enum cmd_id cmd, uint8_t type, const struct resp_slice *key,
                         struct wire_expiry exp, uint32_t wflags, int64_t delta)
{
    struct op *op = op_new(c, cmd, 1);
    if (op == NULL)
        return;
    op->answer = int_answer;
    op->done = int_done;
    op->exp = exp;
    op->wflags = wflags;
    op->delta = delta;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, type, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

static void expire(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv)
{
    const char *name = cmd_get(cmd)->name;
    uint32_t flags = 0;
    for (int j = 3; j < argc; j++) {
        if (slice_is(&argv[j], "nx"))
            flags |= WIRE_EXPIRE_NX;
        else if (slice_is(&argv[j], "xx"))
            flags |= WIRE_EXPIRE_XX;
        else if (slice_is(&argv[j], "gt"))
            flags |= WIRE_EXPIRE_GT;
        else if (slice_is(&argv[j], "lt"))
            flags |= WIRE_EXPIRE_LT;
        else {
            resp_add_errorf(&c->out, "ERR Unsupported option %.*s",
                            (int)(argv[j].len > 64 ? 64 : argv[j].len), argv[j].p);
            return;
        }
    }
    if ((flags & WIRE_EXPIRE_NX) && (flags & (WIRE_EXPIRE_XX | WIRE_EXPIRE_GT | WIRE_EXPIRE_LT))) {
        reply_error(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if ((flags & WIRE_EXPIRE_GT) && (flags & WIRE_EXPIRE_LT)) {
        reply_error(c, "ERR GT and LT options at the same time are not compatible");
        return;
    }
    long long when;
    if (arg_ll(&argv[2], &when) != 0) {
        reply_error(c, ERR_INT);
        return;
    }
    int seconds = cmd == CMD_EXPIRE || cmd == CMD_EXPIREAT;
    int rel = cmd == CMD_EXPIRE || cmd == CMD_PEXPIRE;
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) {
            resp_add_errorf(&c->out, "ERR invalid expire time in '%s' command", name);
            return;
        }
        when *= 1000;
    }
    if (rel && when > LLONG_MAX - clock_unix_ms()) {
        resp_add_errorf(&c->out, "ERR invalid expire time in '%s' command", name);
        return;
    }
    /* A time in the past deletes the key, as Redis does: the owner treats a
     * deadline already passed as a delete and answers 1. */
    struct wire_expiry exp = {rel ? WIRE_EXP_REL : WIRE_EXP_ABS, when};
    single_write(c, cmd, WIRE_EXPIRE, &argv[1], exp, flags, 0);
}

void edge_cmd_expire(struct conn *c, int argc, const struct resp_slice *argv)
{
    expire(c, CMD_EXPIRE, argc, argv);
}

void edge_cmd_pexpire(struct conn *c, int argc, const struct resp_slice *argv)
{
    expire(c, CMD_PEXPIRE, argc, argv);
}

void edge_cmd_expireat(struct conn *c, int argc, const struct resp_slice *argv)
{
    expire(c, CMD_EXPIREAT, argc, argv);
}

void edge_cmd_pexpireat(struct conn *c, int argc, const struct resp_slice *argv)
{
    expire(c, CMD_PEXPIREAT, argc, argv);
}

void edge_cmd_persist(struct conn *c, int argc, const struct resp_slice *argv)
{
    single_write(c, CMD_PERSIST, WIRE_PERSIST, &argv[1], (struct wire_expiry){0, 0}, 0, 0);
}

static void incr(struct conn *c, enum cmd_id cmd, const struct resp_slice *key, int64_t delta)
{
    single_write(c, cmd, WIRE_INCRBY, key, (struct wire_expiry){0, 0}, 0, delta);
}

void edge_cmd_incr(struct conn *c, int argc, const struct resp_slice *argv)
{
    incr(c, CMD_INCR, &argv[1], 1);
}

void edge_cmd_decr(struct conn *c, int argc, const struct resp_slice *argv)
{
    incr(c, CMD_DECR, &argv[1], -1);
}

void edge_cmd_incrby(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long d;
    if (arg_ll(&argv[2], &d) != 0) {
        reply_error(c, ERR_INT);
        return;
    }
    incr(c, CMD_INCRBY, &argv[1], d);
}

void edge_cmd_decrby(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long d;
    if (arg_ll(&argv[2], &d) != 0) {
        reply_error(c, ERR_INT);
        return;
    }
    if (d == LLONG_MIN) {
        reply_error(c, "ERR decrement would overflow");
        return;
    }
    incr(c, CMD_DECRBY, &argv[1], -d);
}

/* ---- GETDEL, GETEX: a read, then a write ------------------------------------------ */

static void gtw_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (op->step == 0) {
        if (m->type == WIRE_VALUE) {
            op->acc = 1;
            buf_reset(&op->res);
            if (buf_append(&op->res, m->u.value.value.p, m->u.value.value.len) != HKV_OK)
                op_error(op, "ERR out of memory");
        } else if (m->type == WIRE_NOTFOUND) {
            op->acc = 0;
        } else {
            op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                     r->owner->index);
        }
    }
    /* step 1: the write's answer (INT) only has to arrive */
}

static void gtw_done(struct op *op)
{
    if (op->step == 0 && op->acc) {
        /* The key exists: now the write, numbered and retried like any. */
        op->step = 1;
        uint8_t type = op->exp.kind == WIRE_EXP_NONE ? WIRE_PERSIST : WIRE_EXPIRE;
        if (op_single(op, type, WIRE_ROLE_WRITE) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
        return;
    }
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (op->acc)
            resp_add_bulk(out, buf_head(&op->res), buf_unread(&op->res));
        else
            resp_add_null(out, op->c->proto);
    }
    op_finish(op);
}

static void get_then_write(struct conn *c, enum cmd_id cmd, const struct resp_slice *key, struct wire_expiry exp)
{
    struct op *op = op_new(c, cmd, 1);
    if (op == NULL)
        return;
    op->answer = gtw_answer;
    op->done = gtw_done;
    op->exp = exp;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_GET, WIRE_ROLE_READ) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_getdel(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct op *op = op_new(c, CMD_GETDEL, 1);
    if (op == NULL)
        return;
    /* Answered like SET ... GET: OK with the old value when the key existed. */
    op->answer = set_answer;
    op->done = set_done;
    op->wflags = WIRE_SET_GET;
    if (op_copy_keys(op, 1, &argv[1], 1, NULL) != 0 ||
        op_single(op, WIRE_GETDEL, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_getex(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    int f = parse_ext(c, argc, argv, 2, 0, "getex", &exp);
    if (f < 0)
        return;
    if (f == 0) {
        edge_cmd_get(c, 2, argv); /* no option: a plain GET */
        return;
    }
    get_then_write(c, CMD_GETEX, &argv[1], exp);
}
