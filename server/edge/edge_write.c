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
#include "proto/cmd_opts.h"
#include "server/core/clock.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_write_op.h"

#define ERR_INT CMD_ERR_INT
static const char err_int[] = ERR_INT;
static const char err_getex_time[] = "ERR invalid expire time in 'getex' command";

/* ---- SET and friends (the grammar: proto/cmd_opts.h) ------------------------ */

/* The expiry word of o as a wire expiry.  NULL, or the error text (in buf). */
static const char *expire_ms(const struct cmd_xopts *o, const struct resp_slice *v,
                             const char *cmd, struct wire_expiry *out, char *buf, size_t len)
{
    int64_t ms;
    int absolute;
    switch (cmd_xopts_expiry(o, v->p, v->len, clock_unix_ms(), &ms, &absolute)) {
    case CMD_OPTS_OK:
        out->kind = absolute ? WIRE_EXP_ABS : WIRE_EXP_REL;
        out->ms = ms;
        return NULL;
    case CMD_OPTS_NOT_INT:
        return err_int;
    default:
        snprintf(buf, len, "ERR invalid expire time in '%s' command", cmd);
        return buf;
    }
}

/* expire_ms, its error written as the reply: 0 or -1. */
static int expire_arg(struct conn *c, const struct cmd_xopts *o, const struct resp_slice *v,
                      const char *cmd, struct wire_expiry *out)
{
    char buf[64];
    const char *err = expire_ms(o, v, cmd, out, buf, sizeof(buf));
    if (err != NULL)
        reply_error(c, err);
    return err != NULL ? -1 : 0;
}

/* SET's (is_set) and GETEX's options from argv[from]: 0 with *o and *expv
 * (the expiry's value word, NULL: none), or -1 with the error written. */
static int parse_opts(struct conn *c, int argc, const struct resp_slice *argv, int from,
                      int is_set, struct cmd_xopts *o, const struct resp_slice **expv)
{
    *o = (struct cmd_xopts){0, 0};
    *expv = NULL;
    for (int j = from; j < argc; j++) {
        int rc = cmd_xopts_word(o, argv[j].p, argv[j].len, j + 1 < argc, is_set);
        if (rc < 0) {
            reply_error(c, CMD_ERR_SYNTAX);
            return -1;
        }
        if (rc == 1)
            *expv = &argv[++j];
        else if (rc == 2)
            j++; /* IFEQ's value: the owner compares it (edge_cmd_set) */
    }
    return 0;
}

/* SET's options: parsed, then the expiry checked (SET checks it before
 * anything else runs).  The flags, or -1 with the error written. */
static int parse_ext(struct conn *c, int argc, const struct resp_slice *argv, const char *cmd,
                     struct wire_expiry *exp)
{
    struct cmd_xopts o;
    const struct resp_slice *expv;
    if (parse_opts(c, argc, argv, 3, 1, &o, &expv) != 0)
        return -1;
    *exp = (struct wire_expiry){WIRE_EXP_NONE, 0};
    if (o.flags & CMD_OPT_KEEPTTL)
        exp->kind = WIRE_EXP_KEEP;
    if (expv != NULL && expire_arg(c, &o, expv, cmd, exp) != 0)
        return -1;
    return (int)o.flags;
}

void edge_cmd_set(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    int f = parse_ext(c, argc, argv, "set", &exp);
    if (f < 0)
        return;
    if (f & CMD_OPT_IFEQ) {
        /* a compare-and-set on the value: the owner runs the words (CALL),
         * where the comparison and the write are one step */
        edge_cmd_call(c, argc, argv);
        return;
    }
    uint32_t w = (f & CMD_OPT_NX ? WIRE_SET_NX : 0) | (f & CMD_OPT_XX ? WIRE_SET_XX : 0) |
                 (f & CMD_OPT_GET ? WIRE_SET_GET : 0);
    write_set(c, CMD_SET, &argv[1], &argv[2], exp, w);
}

static void setex(struct conn *c, enum cmd_id cmd, const struct resp_slice *argv)
{
    struct wire_expiry exp;
    struct cmd_xopts unit = {0, cmd == CMD_SETEX ? CMD_OPT_EX : CMD_OPT_PX};
    if (expire_arg(c, &unit, &argv[2], cmd_get(cmd)->name, &exp) != 0)
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
    _Static_assert(CMD_EXPIRE_NX == WIRE_EXPIRE_NX && CMD_EXPIRE_XX == WIRE_EXPIRE_XX &&
                       CMD_EXPIRE_GT == WIRE_EXPIRE_GT && CMD_EXPIRE_LT == WIRE_EXPIRE_LT,
                   "EXPIRE's flags go on the wire as the grammar names them");
    uint32_t flags = 0;
    for (int j = 3; j < argc; j++) {
        unsigned f = cmd_expire_word(argv[j].p, argv[j].len);
        if (f == 0) {
            size_t n = argv[j].len ? strnlen(argv[j].p, argv[j].len) : 0; /* Redis: a C string */
            resp_add_errorf(&c->out, "ERR Unsupported option %.*s", (int)n, argv[j].p);
            return;
        }
        flags |= f;
    }
    const char *conflict = cmd_expire_conflict(flags);
    if (conflict != NULL) {
        reply_error(c, conflict);
        return;
    }
    int64_t when;
    int rel = cmd == CMD_EXPIRE || cmd == CMD_PEXPIRE;
    switch (cmd_expire_time(argv[2].p, argv[2].len, cmd == CMD_EXPIRE || cmd == CMD_EXPIREAT, rel,
                            clock_unix_ms(), &when)) {
    case CMD_OPTS_OK:
        break;
    case CMD_OPTS_NOT_INT:
        reply_error(c, ERR_INT);
        return;
    default:
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
    struct cmd_xopts o;
    const struct resp_slice *expv;
    if (parse_opts(c, argc, argv, 2, 0, &o, &expv) != 0)
        return;
    if (o.flags == 0) {
        edge_read_one(c, CMD_GET, &argv[1]); /* no option: a plain GET */
        return;
    }
    struct wire_expiry exp = {WIRE_EXP_NONE, 0};
    char buf[64];
    const char *err = expv != NULL ? expire_ms(&o, expv, "getex", &exp, buf, sizeof(buf)) : NULL;
    write_getex(c, &argv[1], exp, err == NULL ? NULL : err == err_int ? err_int : err_getex_time);
}
