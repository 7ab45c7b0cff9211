/*
 * owner_cmd_ver.c - the versioned string commands of the owner's table
 * (owner_cmd.h), Garnet's names and replies over hotkvd's versions: the
 * etag of a key is the version the owner's ledger gave its last write (the
 * stamp every reply, push and HTTP ETag carries), so these commands need no
 * state of their own.
 *
 *   GETWITHETAG key              [etag, value]; nil: no key
 *   GETIFNOTMATCH key etag       [etag, value] when the key's etag differs,
 *                                [etag, nil] when it is etag; nil: no key
 *   SETIFMATCH key value etag [EX s | PX ms] [NOGET] [XX]
 *                                sets the key when its etag is etag, or when
 *                                there is no key (Garnet's rule; XX, hotkvd's:
 *                                only an existing key, the HTTP If-Match rule):
 *                                [the new etag, nil]; otherwise [the key's
 *                                etag, its value] (NOGET: [etag, nil]), and
 *                                with XX and no key: nil.
 *
 * SETIFMATCH is a write the owner runs inside CALL (numbered, answered once:
 * a retry after a lost reply gets the first answer from the request-id
 * table, never a mismatch against its own write) or EXEC; the comparison and
 * the write are one step of the owner's loop, the only place a key's
 * version and value are atomic.  The grammar's checks come in this order:
 * the etag (an integer), the options (a syntax error), the expiry's value.
 */
#include <string.h>

#include "proto/cmd_opts.h"
#include "server/owner/owner_cmd.h"

/* The etag word: an int64 as Redis reads integers; 0, or -1 with the error
 * appended. */
static int etag_arg(struct ocmd *c, struct wire_slice w, int64_t *etag)
{
    if (ocmd_ll(w, etag))
        return 0;
    ocmd_error(c, OCMD_ERR_INT);
    return -1;
}

/* [etag, value] (value NULL: nil). */
static void pair(struct ocmd *c, hkv_stamp etag, const struct ledger_view *v)
{
    ocmd_array(c, 2);
    ocmd_int(c, (int64_t)etag);
    if (v != NULL)
        ocmd_bulk(c, v->val, v->vlen);
    else
        ocmd_null(c);
}

int ocmd_getwithetag_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                         uint32_t argc)
{
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc == HKV_OK)
        pair(c, v.stamp, &v);
    else
        ocmd_null(c);
    return ocmd_done(c);
}

int ocmd_getifnotmatch_cmd(struct ocmd *c, const struct cmd_def *d,
                           const struct wire_slice *argv, uint32_t argc)
{
    int64_t etag;
    if (etag_arg(c, argv[2], &etag) != 0)
        return ocmd_done(c);
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK)
        ocmd_null(c);
    else
        pair(c, v.stamp, (int64_t)v.stamp == etag ? NULL : &v);
    return ocmd_done(c);
}

int ocmd_setifmatch_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                        uint32_t argc)
{
    int64_t etag;
    if (etag_arg(c, argv[3], &etag) != 0)
        return ocmd_done(c);
    struct cmd_xopts o = {0, 0};
    const struct wire_slice *expv = NULL;
    int noget = 0, xx = 0;
    for (uint32_t j = 4; j < argc; j++) {
        if (ocmd_is(argv[j], "noget")) {
            noget = 1;
        } else if (ocmd_is(argv[j], "xx")) {
            xx = 1;
        } else if ((ocmd_is(argv[j], "ex") || ocmd_is(argv[j], "px")) && j + 1 < argc &&
                   expv == NULL) {
            o.unit = ocmd_is(argv[j], "ex") ? CMD_OPT_EX : CMD_OPT_PX;
            expv = &argv[++j];
        } else {
            ocmd_error(c, OCMD_ERR_SYNTAX);
            return ocmd_done(c);
        }
    }
    struct ledger_expiry exp = {LEDGER_EXP_NONE, 0};
    if (expv != NULL) {
        int64_t ms;
        int absolute;
        switch (cmd_xopts_expiry(&o, expv->p, expv->len, c->now.wall_ms, &ms, &absolute)) {
        case CMD_OPTS_OK:
            exp = (struct ledger_expiry){LEDGER_EXP_ABS, ms + c->now.wall_ms};
            break;
        case CMD_OPTS_NOT_INT:
            ocmd_error(c, OCMD_ERR_INT);
            return ocmd_done(c);
        default:
            ocmd_error_expire(c, d);
            return ocmd_done(c);
        }
    }
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK && xx) {
        ocmd_null(c);
        return ocmd_done(c);
    }
    if (rc == HKV_OK && (int64_t)v.stamp != etag) {
        pair(c, v.stamp, noget ? NULL : &v);
        return ocmd_done(c);
    }
    int applied = 0;
    uint32_t before = c->nchanges;
    rc = ocmd_set(c, argv[1], argv[2], 0, exp, NULL, &applied);
    if (rc != HKV_OK)
        return rc;
    /* the version the write gave the key: the change it noted */
    hkv_stamp now = applied && c->nchanges > before ? c->changes[c->nchanges - 1].version : 0;
    pair(c, now, NULL);
    return ocmd_done(c);
}
