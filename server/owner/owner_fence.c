/*
 * owner_fence.c - the first gate of every request in a cluster: does one of
 * its keys lie in a leaf that waits (a move's fence, its commit in doubt,
 * a target waiting for the commit's news, a restart settling a move:
 * owner_own_blocks)?  Then the request is parked whole (owner_park.c) and
 * runs again, from the top, when the leaf's wait ends.  Writes wait during
 * the fence; reads only once the outcome is about to be in doubt.
 *
 * It sits above the command table because a CALL or an EXEC names its keys
 * only through it (a command's key positions), and below the executor,
 * whose first call it is.  With no mark that blocks anything (every
 * request but those of a move's few hundred milliseconds) it costs one
 * check of the marks.
 */
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_move_int.h"

struct hit {
    struct owner *o;
    int write;
    uint64_t place;
};

/* 1 (and h->place) if key must wait. */
static int waits(struct hit *h, struct wire_slice key)
{
    uint64_t place = router_place(key.p, key.len);
    if (!owner_own_blocks(h->o, place, h->write))
        return 0;
    h->place = place;
    return 1;
}

static int keys_wait(struct hit *h, const struct wire_slice *k, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (waits(h, k[i]))
            return 1;
    return 0;
}

/* One command's keys (argv as the table's row says). */
static int cmd_waits(struct hit *h, const struct wire_slice *argv, uint32_t argc)
{
    const struct cmd_def *d = ocmd_lookup(argv[0].p, argv[0].len);
    if (d == NULL || !ocmd_arity_ok(d, argc))
        return 0; /* refused before anything runs */
    uint32_t n = ocmd_key_count(d, argc);
    for (uint32_t i = 0; i < n; i++)
        if (waits(h, argv[ocmd_key_pos(d, argc, i)]))
            return 1;
    return 0;
}

static int cmd_writes(const struct wire_slice *argv, uint32_t argc)
{
    const struct cmd_def *d = ocmd_lookup(argv[0].p, argv[0].len);
    return d != NULL && ocmd_writes(d);
}

int owner_fence(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                size_t plen)
{
    if (!owner_own_any_block(o))
        return 0;
    struct hit h = {o, wire_is_write(m->type), 0};
    int wait = 0;
    switch (m->type) {
    case WIRE_GET: wait = keys_wait(&h, m->u.get.keys, m->u.get.nkeys); break;
    case WIRE_SET: wait = waits(&h, m->u.set.key); break;
    case WIRE_DEL: wait = keys_wait(&h, m->u.del.keys, m->u.del.nkeys); break;
    case WIRE_INCRBY: wait = waits(&h, m->u.incrby.key); break;
    case WIRE_EXPIRE: wait = waits(&h, m->u.expire.key); break;
    case WIRE_PERSIST: wait = waits(&h, m->u.persist.key); break;
    case WIRE_GETDEL: wait = waits(&h, m->u.getdel.key); break;
    case WIRE_TTL: wait = waits(&h, m->u.ttl.key); break;
    case WIRE_CALL:
        h.write = cmd_writes(m->u.call.args, m->u.call.nargs);
        wait = cmd_waits(&h, m->u.call.args, m->u.call.nargs);
        break;
    case WIRE_EXEC:
        h.write = 0;
        for (uint32_t i = 0; i < m->u.exec.ncmds; i++)
            h.write |= cmd_writes(m->u.exec.cmds[i].args, m->u.exec.cmds[i].nargs);
        for (uint32_t i = 0; i < m->u.exec.nwatch && !wait; i++)
            wait = waits(&h, m->u.exec.watch[i].key);
        for (uint32_t i = 0; i < m->u.exec.ncmds && !wait; i++)
            wait = cmd_waits(&h, m->u.exec.cmds[i].args, m->u.exec.cmds[i].nargs);
        break;
    default:
        return 0; /* SCAN, STATS, PING: no key */
    }
    if (wait)
        owner_park_leaf(o, l, h.place, h.write, payload, plen);
    return wait;
}
