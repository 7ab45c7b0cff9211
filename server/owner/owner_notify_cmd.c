/*
 * owner_notify_cmd.c - which keyspace events a Redis command emits, as Redis
 * 7.0 names them (t_string.c, expire.c, db.c), from the keys it changed: a
 * command that changed nothing emits nothing.  The wire kinds' executor
 * (owner_ops.c) calls owner_notify itself.
 */
#include <string.h>
#include <strings.h>

#include "proto/cmd.h"
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_notify.h"

/* 1 if an argument after the key sets a deadline (SET EX/PX/EXAT/PXAT,
 * GETEX likewise) or, for PERSIST, removes it. */
static int has_word(const struct wire_slice *argv, uint32_t argc, uint32_t from,
                    const char *const *words)
{
    for (uint32_t i = from; i < argc; i++)
        for (const char *const *w = words; *w != NULL; w++)
            if (argv[i].len == strlen(*w) && strncasecmp(argv[i].p, *w, argv[i].len) == 0)
                return 1;
    return 0;
}

static const char *const DEADLINE[] = {"EX", "PX", "EXAT", "PXAT", NULL};
static const char *const PERSIST_WORD[] = {"PERSIST", NULL};

/* A key an EXPIRE (or GETEX) left: gone means the deadline was past, which
 * Redis tells as "del". */
static enum notify_event expire_or_del(struct owner *o, struct wire_slice key)
{
    struct ledger_view v;
    return ledger_get(o->ledger, key.p, key.len, owner_clock(), &v) == HKV_ENOENT ? NEV_DEL
                                                                                  : NEV_EXPIRE;
}

static void each(struct owner *o, const struct wire_watch *ch, uint32_t n, enum notify_event ev)
{
    for (uint32_t i = 0; i < n; i++)
        owner_notify(o, ch[i].key, ch[i].version, ev);
}

void owner_notify_cmd(struct owner *o, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc, const struct wire_watch *ch, uint32_t n)
{
    if (n == 0 || o->opts.notify == 0)
        return;
    switch (d->id) {
    case CMD_SET:
        each(o, ch, n, NEV_SET);
        if (has_word(argv, argc, 3, DEADLINE))
            each(o, ch, n, NEV_EXPIRE);
        break;
    case CMD_SETEX:
    case CMD_PSETEX:
        each(o, ch, n, NEV_SET);
        each(o, ch, n, NEV_EXPIRE);
        break;
    case CMD_SETNX:
    case CMD_GETSET:
    case CMD_MSET:
    case CMD_MSETNX:
    case CMD_SETIFMATCH:
        each(o, ch, n, NEV_SET);
        break;
    case CMD_GETDEL:
    case CMD_DEL:
    case CMD_UNLINK:
        each(o, ch, n, NEV_DEL);
        break;
    case CMD_GETEX:
        if (has_word(argv, argc, 2, PERSIST_WORD))
            each(o, ch, n, NEV_PERSIST);
        else
            for (uint32_t i = 0; i < n; i++)
                owner_notify(o, ch[i].key, ch[i].version, expire_or_del(o, ch[i].key));
        break;
    case CMD_EXPIRE:
    case CMD_PEXPIRE:
    case CMD_EXPIREAT:
    case CMD_PEXPIREAT:
        for (uint32_t i = 0; i < n; i++)
            owner_notify(o, ch[i].key, ch[i].version, expire_or_del(o, ch[i].key));
        break;
    case CMD_PERSIST:
        each(o, ch, n, NEV_PERSIST);
        break;
    case CMD_INCR:
    case CMD_DECR:
    case CMD_INCRBY:
    case CMD_DECRBY:
        each(o, ch, n, NEV_INCRBY);
        break;
    case CMD_INCRBYFLOAT:
        each(o, ch, n, NEV_INCRBYFLOAT);
        break;
    case CMD_APPEND:
        each(o, ch, n, NEV_APPEND);
        break;
    case CMD_SETRANGE:
        each(o, ch, n, NEV_SETRANGE);
        break;
    case CMD_SETBIT:
    case CMD_BITFIELD: /* even when FAIL wrote no field: Redis counts the op */
        each(o, ch, n, NEV_SETBIT);
        break;
    case CMD_BITOP: /* "set", or "del" when every source was missing */
        for (uint32_t i = 0; i < n; i++)
            owner_notify(o, ch[i].key, ch[i].version,
                         expire_or_del(o, ch[i].key) == NEV_DEL ? NEV_DEL : NEV_SET);
        break;
    case CMD_RENAME:
    case CMD_RENAMENX: /* the source's event first, as Redis */
    case CMD_COPY:
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = 0; i < n; i++) {
                int src = ocmd_same(ch[i].key, argv[1]);
                if (src == (pass == 0) && !(d->id == CMD_COPY && src))
                    owner_notify(o, ch[i].key, ch[i].version,
                                 d->id == CMD_COPY ? NEV_COPY_TO
                                                   : src ? NEV_RENAME_FROM : NEV_RENAME_TO);
            }
        break;
    default:
        break; /* FLUSHALL: Redis emits no key events for it either */
    }
}
