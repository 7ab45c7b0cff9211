/*
 * owner_cmd_key.c - the keyspace commands of the owner's table
 * (owner_cmd.h): DEL UNLINK EXISTS TOUCH TYPE, the EXPIRE family with
 * Redis 7's NX XX GT LT, PERSIST, TTL PTTL EXPIRETIME PEXPIRETIME, RENAME
 * RENAMENX, COPY, and FLUSHALL FLUSHDB.
 *
 * Expiry arithmetic is Redis 7.0's expireGenericCommand: the options are
 * checked before the number, seconds are scaled with an overflow check, a
 * relative time is added to now with one, and GT/LT compare absolute unix
 * ms with the key's current deadline (none counts as infinite).  A deadline
 * at or before now deletes the key, which still answers 1.  The ledger's
 * own wall-clock deadline (view.expire_at_ms) is what EXPIRETIME reports and
 * what GT/LT compare with, so the three agree.
 *
 * hotkvd has one database: COPY's DB option accepts 0 and answers "DB
 * index is out of range" for any other number, as SELECT does, after
 * Redis's own parsing of the number.
 */
#include <string.h>

#include "proto/cmd_opts.h"
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_repl.h"

int ocmd_del_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                 uint32_t argc)
{
    int64_t n = 0;
    for (uint32_t i = 1; i < argc; i++) {
        int existed = 0;
        int rc = ocmd_del(c, argv[i], &existed, NULL);
        if (rc != HKV_OK)
            return rc;
        n += existed;
    }
    ocmd_int(c, n);
    return ocmd_done(c);
}

/* EXISTS and TOUCH: a key named twice counts twice, as Redis. */
int ocmd_exists_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    int64_t n = 0;
    for (uint32_t i = 1; i < argc; i++) {
        struct ledger_view v;
        int rc = ocmd_get(c, argv[i], &v);
        if (rc == HKV_EAGAIN)
            return rc;
        n += rc == HKV_OK;
    }
    ocmd_int(c, n);
    return ocmd_done(c);
}

int ocmd_type_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                  uint32_t argc)
{
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    ocmd_simple(c, rc == HKV_OK ? "string" : "none");
    return ocmd_done(c);
}

/* EXPIRE's options (proto/cmd_opts.h).  0, or -1 with the error appended. */
static int expire_flags(struct ocmd *c, const struct wire_slice *argv, uint32_t argc,
                        unsigned *flags)
{
    unsigned f = 0;
    for (uint32_t j = 3; j < argc; j++) {
        unsigned one = cmd_expire_word(argv[j].p, argv[j].len);
        if (one == 0) {
            size_t n = argv[j].len ? strnlen(argv[j].p, argv[j].len) : 0;
            ocmd_errorf(c, "ERR Unsupported option %.*s", (int)n, argv[j].p);
            return -1;
        }
        f |= one;
    }
    const char *conflict = cmd_expire_conflict(f);
    if (conflict != NULL) {
        ocmd_error(c, conflict);
        return -1;
    }
    *flags = f;
    return 0;
}

/* EXPIRE (seconds, relative), PEXPIRE (ms), EXPIREAT (seconds, absolute),
 * PEXPIREAT (ms, absolute). */
int ocmd_expire_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    unsigned f = 0;
    int64_t when;
    if (expire_flags(c, argv, argc, &f) != 0)
        return ocmd_done(c);
    int absolute = d->id == CMD_EXPIREAT || d->id == CMD_PEXPIREAT;
    switch (cmd_expire_time(argv[2].p, argv[2].len, d->id == CMD_EXPIRE || d->id == CMD_EXPIREAT,
                            !absolute, c->now.wall_ms, &when)) {
    case CMD_OPTS_OK:
        break;
    case CMD_OPTS_NOT_INT:
        ocmd_error(c, OCMD_ERR_INT);
        return ocmd_done(c);
    default:
        ocmd_error_expire(c, d);
        return ocmd_done(c);
    }
    if (!absolute)
        when += c->now.wall_ms;
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK) {
        ocmd_int(c, 0);
        return ocmd_done(c);
    }
    int64_t cur = v.expire_at_ms != 0 ? v.expire_at_ms : -1;
    if (!cmd_expire_applies(f, cur, when)) {
        ocmd_int(c, 0);
        return ocmd_done(c);
    }
    int applied = 0;
    rc = ocmd_expire_at(c, argv[1], when, &applied); /* at or before now: deleted */
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, applied);
    return ocmd_done(c);
}

int ocmd_persist_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                     uint32_t argc)
{
    int changed = 0;
    int rc = ocmd_persist(c, argv[1], &changed);
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, changed);
    return ocmd_done(c);
}

/* TTL, PTTL (ms), EXPIRETIME (absolute), PEXPIRETIME (absolute ms). */
int ocmd_ttl_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                 uint32_t argc)
{
    struct ledger_view v;
    int rc = ocmd_get(c, argv[1], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK || v.expire_at_ms == 0) {
        ocmd_int(c, rc != HKV_OK ? -2 : -1);
        return ocmd_done(c);
    }
    int absolute = d->id == CMD_EXPIRETIME || d->id == CMD_PEXPIRETIME;
    int ms = d->id == CMD_PTTL || d->id == CMD_PEXPIRETIME;
    int64_t t = absolute ? v.expire_at_ms : v.ttl_ms;
    if (t < 0)
        t = 0;
    ocmd_int(c, ms ? t : (t + 500) / 1000);
    return ocmd_done(c);
}

/* RENAME and RENAMENX. */
int ocmd_rename_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    int nx = d->id == CMD_RENAMENX, applied = 0;
    int rc = ocmd_move(c, argv[1], argv[2], nx ? LEDGER_MOVE_NX : 0, &applied);
    if (rc == HKV_ENOENT) {
        ocmd_error(c, "ERR no such key");
        return ocmd_done(c);
    }
    if (rc != HKV_OK)
        return rc;
    if (nx)
        ocmd_int(c, applied);
    else
        ocmd_ok(c);
    return ocmd_done(c);
}

int ocmd_copy_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                  uint32_t argc)
{
    int replace = 0;
    for (uint32_t j = 3; j < argc; j++) {
        if (ocmd_is(argv[j], "replace")) {
            replace = 1;
        } else if (ocmd_is(argv[j], "db") && j + 1 < argc) {
            int64_t db;
            if (!ocmd_ll(argv[j + 1], &db)) {
                ocmd_error(c, OCMD_ERR_INT);
                return ocmd_done(c);
            }
            if (db < INT32_MIN || db > INT32_MAX) {
                ocmd_error(c, "ERR value is out of range, value must between -2147483648 and "
                              "2147483647");
                return ocmd_done(c);
            }
            if (db != 0) {
                ocmd_error(c, "ERR DB index is out of range");
                return ocmd_done(c);
            }
            j++;
        } else {
            ocmd_error(c, OCMD_ERR_SYNTAX);
            return ocmd_done(c);
        }
    }
    if (ocmd_same(argv[1], argv[2])) {
        ocmd_error(c, "ERR source and destination objects are the same");
        return ocmd_done(c);
    }
    int applied = 0;
    int rc = ocmd_move(c, argv[1], argv[2], LEDGER_MOVE_COPY | (replace ? 0 : LEDGER_MOVE_NX),
                       &applied);
    if (rc == HKV_ENOENT) {
        ocmd_int(c, 0);
        return ocmd_done(c);
    }
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, applied);
    return ocmd_done(c);
}

/* FLUSHALL / FLUSHDB [ASYNC|SYNC]: one database, so both flush everything.
 * Either mode answers after the flush is durable (owner_call.c waits for
 * its commit): ASYNC in Redis only frees memory in the background, and here
 * the ledger frees it at once anyway. */
int ocmd_flushall_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc)
{
    if (argc > 2 || (argc == 2 && !ocmd_is(argv[1], "sync") && !ocmd_is(argv[1], "async"))) {
        ocmd_error(c, OCMD_ERR_SYNTAX);
        return ocmd_done(c);
    }
    if (owner_repl_streams(c->o) > 0) {
        /* the followers' copies would keep what the flush drops, and a
         * promotion would bring it back (CLUSTER.md §7, I6) */
        ocmd_error(c, "ERR FLUSHALL is not supported while leaves have followers (replicas > 0)");
        return ocmd_done(c);
    }
    int rc = ocmd_flush(c);
    if (rc != HKV_OK)
        return rc;
    ocmd_ok(c);
    return ocmd_done(c);
}
