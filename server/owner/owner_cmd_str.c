/*
 * owner_cmd_str.c - the plain string commands of the owner's table
 * (owner_cmd.h): GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET
 * MSETNX STRLEN INCR DECR INCRBY DECRBY, and SET's IFEQ (Valkey 8.1).
 *
 * SET's and GETEX's option grammar is proto/cmd_opts.h's, the edge's too:
 * the options, then the expire value, and only then the key (GETEX reads
 * the key first: a missing key answers nil whatever the value).
 * Every expiry is turned into absolute unix ms here, with the one clock
 * reading of the command, as Redis does before it stores one.
 */
#include <string.h>

#include "proto/cmd_opts.h"
#include "server/owner/owner_cmd.h"

/* SET's (is_set) or GETEX's options: 0 with *o, *expv (NULL: no expiry
 * given) and *ifeq (SET ... IFEQ's value, NULL: none), or -1 with the error
 * appended. */
static int parse_ext(struct ocmd *c, const struct wire_slice *argv, uint32_t argc, int is_set,
                     struct cmd_xopts *o, const struct wire_slice **expv,
                     const struct wire_slice **ifeq)
{
    *o = (struct cmd_xopts){0, 0};
    *expv = NULL;
    *ifeq = NULL;
    for (uint32_t j = is_set ? 3 : 2; j < argc; j++) {
        int rc = cmd_xopts_word(o, argv[j].p, argv[j].len, j + 1 < argc, is_set);
        if (rc < 0) {
            ocmd_error(c, OCMD_ERR_SYNTAX);
            return -1;
        }
        if (rc == 1)
            *expv = &argv[++j];
        else if (rc == 2)
            *ifeq = &argv[++j];
    }
    return 0;
}

/* The expiry word v of o (proto/cmd_opts.h) as absolute unix ms, with the
 * command's one clock reading.  0, or -1 with the error appended. */
static int expire_ms(struct ocmd *c, const struct cmd_def *d, const struct cmd_xopts *o,
                     struct wire_slice v, int64_t *when)
{
    int64_t ms;
    int absolute;
    switch (cmd_xopts_expiry(o, v.p, v.len, c->now.wall_ms, &ms, &absolute)) {
    case CMD_OPTS_OK:
        *when = absolute ? ms : ms + c->now.wall_ms;
        return 0;
    case CMD_OPTS_NOT_INT:
        ocmd_error(c, OCMD_ERR_INT);
        return -1;
    default:
        ocmd_error_expire(c, d);
        return -1;
    }
}

int ocmd_get_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                 uint32_t argc)
{
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc == HKV_OK)
        ocmd_bulk(c, v.val, v.vlen);
    else
        ocmd_null(c);
    return ocmd_done(c);
}

/* SET's body after parsing (also GETSET's and SETEX's): flags CMD_OPT_*,
 * when (absolute ms) if an expiry was given. */
static int do_set(struct ocmd *c, struct wire_slice key, struct wire_slice val, unsigned f,
                  int has_when, int64_t when)
{
    unsigned lf = (f & CMD_OPT_NX ? LEDGER_NX : 0) | (f & CMD_OPT_XX ? LEDGER_XX : 0) |
                  (f & CMD_OPT_GET ? LEDGER_GET : 0);
    struct ledger_expiry exp = {LEDGER_EXP_NONE, 0};
    if (has_when)
        exp = (struct ledger_expiry){LEDGER_EXP_ABS, when};
    else if (f & CMD_OPT_KEEPTTL)
        exp.kind = LEDGER_EXP_KEEP;
    struct ledger_view old = {0};
    int applied = 0;
    int rc = ocmd_set(c, key, val, lf, exp, &old, &applied);
    if (rc != HKV_OK)
        return rc;
    if (f & CMD_OPT_GET) {
        /* Redis answers the old value (read before the write), whether or
         * not NX/XX let the write happen */
        if (old.found)
            ocmd_bulk(c, old.val, old.vlen);
        else
            ocmd_null(c);
    } else if (applied) {
        ocmd_ok(c);
    } else {
        ocmd_null(c);
    }
    return ocmd_done(c);
}

int ocmd_set_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                 uint32_t argc)
{
    struct cmd_xopts o;
    const struct wire_slice *expv, *ifeq;
    int64_t when = 0;
    if (parse_ext(c, argv, argc, 1, &o, &expv, &ifeq) != 0)
        return ocmd_done(c);
    if (expv != NULL && expire_ms(c, d, &o, *expv, &when) != 0)
        return ocmd_done(c);
    if (ifeq != NULL) {
        /* Valkey 8.1's IFEQ: only over a key holding exactly that value; a
         * refused one answers as a refused XX (nil, or GET's old value) */
        struct ledger_view v;
        int rc = ocmd_get(c, argv[1], &v);
        if (rc == HKV_EAGAIN)
            return rc;
        if (rc != HKV_OK || !ocmd_same((struct wire_slice){v.val, v.vlen}, *ifeq)) {
            if ((o.flags & CMD_OPT_GET) && rc == HKV_OK)
                ocmd_bulk(c, v.val, v.vlen);
            else
                ocmd_null(c);
            return ocmd_done(c);
        }
    }
    return do_set(c, argv[1], argv[2], o.flags, expv != NULL, when);
}

int ocmd_setnx_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                   uint32_t argc)
{
    int applied = 0;
    struct ledger_expiry none = {LEDGER_EXP_NONE, 0};
    int rc = ocmd_set(c, argv[1], argv[2], LEDGER_NX, none, NULL, &applied);
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, applied);
    return ocmd_done(c);
}

/* SETEX key seconds value, PSETEX key ms value. */
int ocmd_setex_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                   uint32_t argc)
{
    int64_t when;
    struct cmd_xopts unit = {0, d->id == CMD_SETEX ? CMD_OPT_EX : CMD_OPT_PX};
    if (expire_ms(c, d, &unit, argv[2], &when) != 0)
        return ocmd_done(c);
    return do_set(c, argv[1], argv[3], 0, 1, when);
}

int ocmd_getset_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    return do_set(c, argv[1], argv[2], CMD_OPT_GET, 0, 0);
}

int ocmd_getdel_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    struct ledger_view old = {0};
    int existed = 0;
    int rc = ocmd_del(c, argv[1], &existed, &old);
    if (rc != HKV_OK)
        return rc;
    if (existed && old.found)
        ocmd_bulk(c, old.val, old.vlen);
    else
        ocmd_null(c);
    return ocmd_done(c);
}

int ocmd_getex_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                   uint32_t argc)
{
    struct cmd_xopts o;
    const struct wire_slice *expv, *ifeq;
    int64_t when = 0;
    if (parse_ext(c, argv, argc, 0, &o, &expv, &ifeq) != 0)
        return ocmd_done(c);
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK) {
        ocmd_null(c); /* Redis reads the key before it judges the expire value */
        return ocmd_done(c);
    }
    if (expv != NULL && expire_ms(c, d, &o, *expv, &when) != 0)
        return ocmd_done(c);
    ocmd_bulk(c, v.val, v.vlen); /* before the change, which may free the value */
    int changed = 0;
    if (expv != NULL)
        rc = ocmd_expire_at(c, argv[1], when, &changed); /* a past EXAT/PXAT deletes */
    else if (o.flags & CMD_OPT_PERSIST)
        rc = ocmd_persist(c, argv[1], &changed);
    return rc != HKV_OK ? rc : ocmd_done(c);
}

int ocmd_mget_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                  uint32_t argc)
{
    ocmd_array(c, (int64_t)argc - 1);
    for (uint32_t i = 1; i < argc; i++) {
        struct ledger_view v;
        int rc = ocmd_get(c, argv[i], &v);
        if (rc == HKV_EAGAIN)
            return rc;
        if (rc == HKV_OK)
            ocmd_bulk(c, v.val, v.vlen);
        else
            ocmd_null(c);
    }
    return ocmd_done(c);
}

/* MSET and MSETNX. */
int ocmd_mset_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                  uint32_t argc)
{
    if (argc % 2 == 0) {
        ocmd_errorf(c, "ERR wrong number of arguments for '%s' command", d->name);
        return ocmd_done(c);
    }
    int nx = d->id == CMD_MSETNX;
    if (nx) {
        for (uint32_t i = 1; i < argc; i += 2) {
            struct ledger_view v;
            int rc = ocmd_get(c, argv[i], &v);
            if (rc == HKV_EAGAIN)
                return rc;
            if (rc == HKV_OK) {
                ocmd_int(c, 0);
                return ocmd_done(c);
            }
        }
    }
    struct ledger_expiry none = {LEDGER_EXP_NONE, 0};
    for (uint32_t i = 1; i < argc; i += 2) {
        int applied;
        int rc = ocmd_set(c, argv[i], argv[i + 1], 0, none, NULL, &applied);
        if (rc != HKV_OK)
            return rc;
    }
    if (nx)
        ocmd_int(c, 1);
    else
        ocmd_ok(c);
    return ocmd_done(c);
}

int ocmd_strlen_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    ocmd_int(c, rc == HKV_OK ? (int64_t)v.vlen : 0);
    return ocmd_done(c);
}

/* INCR, DECR, INCRBY, DECRBY. */
int ocmd_incr_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                  uint32_t argc)
{
    int64_t delta = d->id == CMD_DECR ? -1 : 1;
    if (d->id == CMD_INCRBY || d->id == CMD_DECRBY) {
        if (!ocmd_ll(argv[2], &delta)) {
            ocmd_error(c, OCMD_ERR_INT);
            return ocmd_done(c);
        }
        if (d->id == CMD_DECRBY) {
            if (delta == INT64_MIN) {
                ocmd_error(c, "ERR decrement would overflow");
                return ocmd_done(c);
            }
            delta = -delta;
        }
    }
    int64_t result = 0;
    int rc = ocmd_incrby(c, argv[1], delta, &result);
    if (rc == HKV_EINVAL) {
        /* not an integer, or the sum overflows: Redis checks in that order */
        struct ledger_view v;
        ocmd_error(c, ocmd_incr_refusal(ocmd_get(c, argv[1], &v) == HKV_OK ? &v : NULL));
        return ocmd_done(c);
    }
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, result);
    return ocmd_done(c);
}
