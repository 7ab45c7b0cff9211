/*
 * edge_write.c - the write commands' handlers: their arguments read with
 * Redis's replies and errors (SET's and GETEX's options, expire times,
 * increments), then handed to the write ops (edge_write_op.h), which talk
 * to the owners.  Every error a client can cause is answered here, before
 * any op exists.
 */
#include "server/edge/edge_write.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/cmd.h"
#include "server/core/clock.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_write_op.h"

#define ERR_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"
static const char err_int[] = ERR_INT;
static const char err_getex_time[] = "ERR invalid expire time in 'getex' command";

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
 * getExpireMillisecondsOrReply.  NULL, or the error text (in buf). */
static const char *expire_ms(const struct resp_slice *v, int unit_flag, const char *cmd,
                             struct wire_expiry *out, char *buf, size_t len)
{
    long long ms;
    if (edge_arg_ll(v, &ms) != 0)
        return err_int;
    int seconds = unit_flag == F_EX || unit_flag == F_EXAT;
    int rel = unit_flag == F_EX || unit_flag == F_PX;
    if (ms <= 0 || (seconds && ms > LLONG_MAX / 1000) ||
        (rel && (seconds ? ms * 1000 : ms) > LLONG_MAX - clock_unix_ms())) {
        snprintf(buf, len, "ERR invalid expire time in '%s' command", cmd);
        return buf;
    }
    out->kind = rel ? WIRE_EXP_REL : WIRE_EXP_ABS;
    out->ms = seconds ? ms * 1000 : ms;
    return NULL;
}

/* expire_ms, its error written as the reply: 0 or -1. */
static int expire_arg(struct conn *c, const struct resp_slice *v, int unit_flag, const char *cmd,
                      struct wire_expiry *out)
{
    char buf[64];
    const char *err = expire_ms(v, unit_flag, cmd, out, buf, sizeof(buf));
    if (err != NULL)
        reply_error(c, err);
    return err != NULL ? -1 : 0;
}

/* Redis's parseExtendedStringArgumentsOrReply for SET (is_set) and GETEX:
 * an option excludes the others of its kind but not itself, so a repeated
 * expiry (EX 1 EX 2) takes the last.  Returns the flags (expv: the expiry's
 * number, unit: which of F_EX ... it is), or -1 with the error written. */
static int parse_opts(struct conn *c, int argc, const struct resp_slice *argv, int from,
                      int is_set, const struct resp_slice **expv, int *unit)
{
    int flags = 0;
    *expv = NULL;
    *unit = 0;
    for (int j = from; j < argc; j++) {
        const struct resp_slice *o = &argv[j];
        int has_next = j + 1 < argc;
        int u = edge_arg_is(o, "ex") ? F_EX : edge_arg_is(o, "px") ? F_PX
                : edge_arg_is(o, "exat") ? F_EXAT : edge_arg_is(o, "pxat") ? F_PXAT : 0;
        if (is_set && edge_arg_is(o, "nx") && !(flags & F_XX)) {
            flags |= F_NX;
        } else if (is_set && edge_arg_is(o, "xx") && !(flags & F_NX)) {
            flags |= F_XX;
        } else if (is_set && edge_arg_is(o, "get")) {
            flags |= F_GET;
        } else if (is_set && edge_arg_is(o, "keepttl") && !(flags & (F_PERSIST | F_ANYEXP))) {
            flags |= F_KEEPTTL;
        } else if (!is_set && edge_arg_is(o, "persist") && !(flags & (F_KEEPTTL | F_ANYEXP))) {
            flags |= F_PERSIST;
        } else if (u != 0 && has_next && !(flags & (F_KEEPTTL | F_PERSIST | (F_ANYEXP & ~u)))) {
            flags |= u;
            *unit = u;
            *expv = &argv[++j];
        } else {
            reply_error(c, ERR_SYNTAX);
            return -1;
        }
    }
    return flags;
}

/* SET's options: parsed, then the expiry checked (SET checks it before
 * anything else runs). */
static int parse_ext(struct conn *c, int argc, const struct resp_slice *argv, const char *cmd,
                     struct wire_expiry *exp)
{
    const struct resp_slice *expv;
    int unit;
    int flags = parse_opts(c, argc, argv, 3, 1, &expv, &unit);
    if (flags < 0)
        return -1;
    *exp = (struct wire_expiry){WIRE_EXP_NONE, 0};
    if (flags & F_KEEPTTL)
        exp->kind = WIRE_EXP_KEEP;
    if (expv != NULL && expire_arg(c, expv, unit, cmd, exp) != 0)
        return -1;
    return flags;
}

void edge_cmd_set(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    int f = parse_ext(c, argc, argv, "set", &exp);
    if (f < 0)
        return;
    uint32_t w = (f & F_NX ? WIRE_SET_NX : 0) | (f & F_XX ? WIRE_SET_XX : 0) |
                 (f & F_GET ? WIRE_SET_GET : 0);
    write_set(c, CMD_SET, &argv[1], &argv[2], exp, w);
}

static void setex(struct conn *c, enum cmd_id cmd, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    if (expire_arg(c, &argv[2], cmd == CMD_SETEX ? F_EX : F_PX, cmd == CMD_SETEX ? "setex" : "psetex",
                   &exp) != 0)
        return;
    write_set(c, cmd, &argv[1], &argv[3], exp, 0);
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
    write_set(c, CMD_SETNX, &argv[1], &argv[2], (struct wire_expiry){WIRE_EXP_NONE, 0}, WIRE_SET_NX);
}

void edge_cmd_getset(struct conn *c, int argc, const struct resp_slice *argv)
{
    write_set(c, CMD_GETSET, &argv[1], &argv[2], (struct wire_expiry){WIRE_EXP_NONE, 0},
              WIRE_SET_GET);
}

/* ---- MSET ------------------------------------------------------------------------ */

void edge_cmd_mset(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc % 2 == 0) {
        reply_error(c, "ERR wrong number of arguments for 'mset' command");
        return;
    }
    write_mset(c, (argc - 1) / 2, argv + 1);
}

/* ---- DEL, UNLINK, EXPIRE, PERSIST, INCR ------------------------------------------ */

void edge_cmd_del(struct conn *c, int argc, const struct resp_slice *argv)
{
    write_del(c, CMD_DEL, argc - 1, argv + 1);
}

void edge_cmd_unlink(struct conn *c, int argc, const struct resp_slice *argv)
{
    write_del(c, CMD_UNLINK, argc - 1, argv + 1);
}

static void expire(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv)
{
    const char *name = cmd_get(cmd)->name;
    uint32_t flags = 0;
    for (int j = 3; j < argc; j++) {
        if (edge_arg_is(&argv[j], "nx"))
            flags |= WIRE_EXPIRE_NX;
        else if (edge_arg_is(&argv[j], "xx"))
            flags |= WIRE_EXPIRE_XX;
        else if (edge_arg_is(&argv[j], "gt"))
            flags |= WIRE_EXPIRE_GT;
        else if (edge_arg_is(&argv[j], "lt"))
            flags |= WIRE_EXPIRE_LT;
        else {
            resp_add_errorf(&c->out, "ERR Unsupported option %.*s", (int)argv[j].len,
                            argv[j].p);
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
    if (edge_arg_ll(&argv[2], &when) != 0) {
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
    write_single(c, cmd, WIRE_EXPIRE, &argv[1], exp, flags, 0);
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
    write_single(c, CMD_PERSIST, WIRE_PERSIST, &argv[1], (struct wire_expiry){0, 0}, 0, 0);
}

static void incr(struct conn *c, enum cmd_id cmd, const struct resp_slice *key, int64_t delta)
{
    write_single(c, cmd, WIRE_INCRBY, key, (struct wire_expiry){0, 0}, 0, delta);
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
    if (edge_arg_ll(&argv[2], &d) != 0) {
        reply_error(c, ERR_INT);
        return;
    }
    incr(c, CMD_INCRBY, &argv[1], d);
}

void edge_cmd_decrby(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long d;
    if (edge_arg_ll(&argv[2], &d) != 0) {
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

void edge_cmd_getdel(struct conn *c, int argc, const struct resp_slice *argv)
{
    write_getdel(c, &argv[1]);
}

/* As Redis: the options parsed, then the key looked up (a missing key is
 * nil whatever the expiry says), and only then the expiry checked: an
 * invalid one is the answer for a key that exists (write_getex). */
void edge_cmd_getex(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct resp_slice *expv;
    int unit;
    int f = parse_opts(c, argc, argv, 2, 0, &expv, &unit);
    if (f < 0)
        return;
    if (f == 0) {
        edge_read_one(c, CMD_GET, &argv[1]); /* no option: a plain GET */
        return;
    }
    struct wire_expiry exp = {WIRE_EXP_NONE, 0};
    char buf[64];
    const char *err = expv != NULL ? expire_ms(expv, unit, "getex", &exp, buf, sizeof(buf)) : NULL;
    write_getex(c, &argv[1], exp, err == NULL ? NULL : err == err_int ? err_int : err_getex_time);
}
