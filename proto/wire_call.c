/*
 * wire_call.c - the command-carrying kinds, both ways: CALL and EXEC (edge
 * -> owner: Redis argv for the owner's own command table, one command or a
 * MULTI/EXEC batch with its WATCHed versions) and RESP (owner -> edge: the
 * reply, already RESP, with the versions of the keys it changed).  The
 * format and its rules are in wire.h; the msgpack writer and cursor in
 * wire_int.h.
 *
 * EXEC is the one kind with three arrays (watch entries, commands, and the
 * args of all commands) while the decoder has one arena, and how many args
 * the commands hold is known only once they are read.  So EXEC's lists are
 * read twice: a first pass over a copy of the cursor checks every header and
 * field and counts (stopping as soon as watch entries + args pass max_items),
 * then the arena is sized to exactly the three arrays, back to back, and the
 * second pass fills them.  The first pass allocates nothing, so every count
 * is still checked (against the bytes left, and against max_items) before
 * anything is allocated; the second reads the same bytes and cannot fail.
 * Reading twice costs one more walk over an EXEC frame only.
 */
#include "proto/wire.h"

#include "proto/wire_int.h"

/* EXEC's arrays sit back to back in one malloc'd arena: each must start
 * aligned for its type. */
_Static_assert(sizeof(struct wire_watch) % _Alignof(struct wire_cmd) == 0, "cmds follow watch");
_Static_assert(sizeof(struct wire_cmd) % _Alignof(struct wire_slice) == 0, "args follow cmds");
_Static_assert(sizeof(struct wire_watch) % _Alignof(struct wire_slice) == 0, "args follow watch");
/* wire.h's arena bound: nwatch * W + ncmds * C + nargs * S, with ncmds <=
 * nargs and nwatch + nargs <= max_items, stays under max_items wire_items. */
_Static_assert(sizeof(struct wire_watch) <= sizeof(struct wire_item) &&
                   sizeof(struct wire_cmd) + sizeof(struct wire_slice) <= sizeof(struct wire_item),
               "EXEC's arena stays within max_items * sizeof(struct wire_item)");

/* ---- encoding ---- */

/* [key bytes, version u64] pairs. */
static void w_watches(struct wr *w, const struct wire_watch *v, uint32_t n)
{
    w_array(w, n);
    for (uint32_t i = 0; i < n && w->st == HKV_OK; i++) {
        w_array(w, 2);
        w_bin(w, v[i].key);
        w_uint(w, v[i].version);
    }
}

int wire_put_call(struct hkv_buf *b, uint64_t id, struct wire_rid rid, uint8_t proto,
                  const struct wire_slice *args, uint32_t nargs)
{
    if (rid.seq == 0 || !wire_proto_valid(proto) || args == NULL || nargs == 0 ||
        nargs > WIRE_MAX_ITEMS_DEFAULT)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nargs * 16), WIRE_CALL, id, 5);
    w_rid(&w, rid);
    w_uint(&w, proto);
    w_keys(&w, args, nargs);
    return wr_end(&w);
}

int wire_put_exec(struct hkv_buf *b, uint64_t id, struct wire_rid rid, uint8_t proto,
                  const struct wire_watch *watch, uint32_t nwatch, const struct wire_cmd *cmds,
                  uint32_t ncmds)
{
    if (rid.seq == 0 || !wire_proto_valid(proto) || (watch == NULL && nwatch > 0) ||
        cmds == NULL || ncmds == 0)
        return HKV_EINVAL;
    /* Counts first, before a command is looked at: a caller's ncmds past its
     * array must not be walked.  Each command has an arg, so ncmds <= args. */
    if (nwatch > WIRE_MAX_ITEMS_DEFAULT || ncmds > WIRE_MAX_ITEMS_DEFAULT - nwatch)
        return HKV_EINVAL;
    uint32_t total = nwatch;
    for (uint32_t i = 0; i < ncmds; i++) {
        if (cmds[i].args == NULL || cmds[i].nargs == 0 ||
            cmds[i].nargs > WIRE_MAX_ITEMS_DEFAULT - total)
            return HKV_EINVAL;
        total += cmds[i].nargs;
    }
    struct wr w;
    wr_begin(&w, b, HINT((size_t)total * 16), WIRE_EXEC, id, 6);
    w_rid(&w, rid);
    w_uint(&w, proto);
    w_watches(&w, watch, nwatch);
    w_array(&w, ncmds);
    for (uint32_t i = 0; i < ncmds && w.st == HKV_OK; i++)
        w_keys(&w, cmds[i].args, cmds[i].nargs);
    return wr_end(&w);
}

int wire_put_resp(struct hkv_buf *b, uint64_t id, struct wire_slice reply,
                  const struct wire_watch *changes, uint32_t nchanges)
{
    if (reply.len == 0 || (changes == NULL && nchanges > 0) ||
        nchanges > WIRE_MAX_ITEMS_DEFAULT)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(reply.len + (size_t)nchanges * 24), WIRE_RESP, id, 2);
    w_bin(&w, reply);
    w_watches(&w, changes, nchanges);
    return wr_end(&w);
}

int wire_call_put(struct hkv_buf *b, const struct wire_msg *m)
{
    switch (m->type) {
    case WIRE_CALL:
        return wire_put_call(b, m->id, m->u.call.rid, m->u.call.proto, m->u.call.args,
                             m->u.call.nargs);
    case WIRE_EXEC:
        return wire_put_exec(b, m->id, m->u.exec.rid, m->u.exec.proto, m->u.exec.watch,
                             m->u.exec.nwatch, m->u.exec.cmds, m->u.exec.ncmds);
    case WIRE_RESP:
        return wire_put_resp(b, m->id, m->u.resp.reply, m->u.resp.changes, m->u.resp.nchanges);
    }
    return HKV_EINVAL;
}

/* ---- decoding ---- */

static int too_many(struct cur *c, const char *why)
{
    c->why = why;
    return HKV_ETOOBIG;
}

static int rd_proto(struct cur *c, uint8_t *proto)
{
    TRY(rd_u8(c, proto));
    return wire_proto_valid(*proto) ? HKV_OK : fail(c, "proto not 2 or 3");
}

/* One [key bytes, version u64] pair into *w. */
static int rd_watch(struct cur *c, struct wire_watch *w)
{
    size_t n;
    TRY(rd_array(c, &n));
    if (n != 2)
        return fail(c, "key/version pair: wrong field count");
    TRY(rd_bytes(c, &w->key));
    TRY(rd_uint(c, UINT64_MAX, &w->version));
    leave(c);
    return HKV_OK;
}

/* A list of pairs (RESP changes), 0..max_items, into the arena. */
static int rd_watches(struct wire_decoder *d, struct cur *c, const char *too_many_why,
                      const struct wire_watch **out, uint32_t *nout)
{
    size_t n;
    void *mem;
    TRY(rd_array(c, &n));
    if (n > d->max_items)
        return too_many(c, too_many_why);
    TRY(arena_bytes(d, c, n * sizeof(struct wire_watch), &mem));
    struct wire_watch *v = mem;
    for (size_t i = 0; i < n; i++)
        TRY(rd_watch(c, &v[i]));
    leave(c);
    *out = v;
    *nout = (uint32_t)n;
    return HKV_OK;
}

static int rd_call(struct wire_decoder *d, struct cur *c, struct wire_msg *m)
{
    size_t n;
    void *mem;
    TRY(rd_rid(c, &m->u.call.rid));
    TRY(rd_proto(c, &m->u.call.proto));
    TRY(rd_array(c, &n));
    if (n == 0)
        return fail(c, "no arguments");
    if (n > d->max_items)
        return too_many(c, "too many arguments in one message");
    TRY(arena_bytes(d, c, n * sizeof(struct wire_slice), &mem));
    struct wire_slice *args = mem;
    for (size_t i = 0; i < n; i++)
        TRY(rd_bytes(c, &args[i]));
    leave(c);
    m->u.call.args = args;
    m->u.call.nargs = (uint32_t)n;
    return HKV_OK;
}

/* EXEC's watch and cmds lists: counted (fill false: nothing is stored, the
 * arrays may be NULL) or stored into arrays sized by the counting pass. */
struct exec_lists {
    struct wire_watch *watch;
    struct wire_cmd *cmds;
    struct wire_slice *args;
    size_t nwatch, ncmds, nargs;
};

static int rd_exec_lists(struct cur *c, size_t max, bool fill, struct exec_lists *x)
{
    static const char *const over = "too many watches and arguments in one EXEC";
    struct wire_watch wscratch;
    struct wire_slice sscratch;
    size_t n, k, nargs = 0;
    TRY(rd_array(c, &n));
    if (n > max)
        return too_many(c, over);
    x->nwatch = n;
    for (size_t i = 0; i < n; i++)
        TRY(rd_watch(c, fill ? &x->watch[i] : &wscratch));
    leave(c);
    TRY(rd_array(c, &n));
    if (n == 0)
        return fail(c, "no commands");
    if (n > max - x->nwatch)  /* each command has an arg */
        return too_many(c, over);
    x->ncmds = n;
    for (size_t i = 0; i < n; i++) {
        TRY(rd_array(c, &k));
        if (k == 0)
            return fail(c, "empty command");
        if (k > max - x->nwatch - nargs)
            return too_many(c, over);
        if (fill) {
            x->cmds[i].args = x->args + nargs;
            x->cmds[i].nargs = (uint32_t)k;
        }
        for (size_t j = 0; j < k; j++)
            TRY(rd_bytes(c, fill ? &x->args[nargs + j] : &sscratch));
        nargs += k;
        leave(c);
    }
    leave(c);
    x->nargs = nargs;
    return HKV_OK;
}

static int rd_exec(struct wire_decoder *d, struct cur *c, struct wire_msg *m)
{
    struct exec_lists x = { NULL, NULL, NULL, 0, 0, 0 };
    void *mem;
    TRY(rd_rid(c, &m->u.exec.rid));
    TRY(rd_proto(c, &m->u.exec.proto));
    struct cur probe = *c;
    int rc = rd_exec_lists(&probe, d->max_items, false, &x);
    if (rc != HKV_OK) {
        c->why = probe.why;
        return rc;
    }
    size_t wbytes = x.nwatch * sizeof(struct wire_watch);
    size_t cbytes = x.ncmds * sizeof(struct wire_cmd);
    TRY(arena_bytes(d, c, wbytes + cbytes + x.nargs * sizeof(struct wire_slice), &mem));
    x.watch = mem;
    x.cmds = (struct wire_cmd *)((char *)mem + wbytes);
    x.args = (struct wire_slice *)((char *)mem + wbytes + cbytes);
    TRY(rd_exec_lists(c, d->max_items, true, &x));
    m->u.exec.watch = x.watch;
    m->u.exec.nwatch = (uint32_t)x.nwatch;
    m->u.exec.cmds = x.cmds;
    m->u.exec.ncmds = (uint32_t)x.ncmds;
    return HKV_OK;
}

static int rd_resp(struct wire_decoder *d, struct cur *c, struct wire_msg *m)
{
    TRY(rd_bytes(c, &m->u.resp.reply));
    if (m->u.resp.reply.len == 0)
        return fail(c, "empty reply");
    return rd_watches(d, c, "too many changes in one message", &m->u.resp.changes,
                      &m->u.resp.nchanges);
}

int wire_call_decode(struct wire_decoder *d, struct cur *c, struct wire_msg *m)
{
    switch (m->type) {
    case WIRE_CALL: return rd_call(d, c, m);
    case WIRE_EXEC: return rd_exec(d, c, m);
    case WIRE_RESP: return rd_resp(d, c, m);
    }
    return fail(c, "unknown message type");
}

/* ---- equality ---- */

static bool watches_eq(const struct wire_watch *a, uint32_t na, const struct wire_watch *b,
                       uint32_t nb)
{
    if (na != nb)
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!seq(a[i].key, b[i].key) || a[i].version != b[i].version)
            return false;
    return true;
}

bool wire_call_equal(const struct wire_msg *a, const struct wire_msg *b)
{
    switch (a->type) {
    case WIRE_CALL: {
        const typeof(a->u.call) *x = &a->u.call, *y = &b->u.call;
        return rid_eq(x->rid, y->rid) && x->proto == y->proto &&
               keys_eq(x->args, x->nargs, y->args, y->nargs);
    }
    case WIRE_EXEC: {
        const typeof(a->u.exec) *x = &a->u.exec, *y = &b->u.exec;
        if (!rid_eq(x->rid, y->rid) || x->proto != y->proto ||
            !watches_eq(x->watch, x->nwatch, y->watch, y->nwatch) || x->ncmds != y->ncmds)
            return false;
        for (uint32_t i = 0; i < x->ncmds; i++)
            if (!keys_eq(x->cmds[i].args, x->cmds[i].nargs, y->cmds[i].args, y->cmds[i].nargs))
                return false;
        return true;
    }
    case WIRE_RESP:
        return seq(a->u.resp.reply, b->u.resp.reply) &&
               watches_eq(a->u.resp.changes, a->u.resp.nchanges, b->u.resp.changes,
                          b->u.resp.nchanges);
    }
    return false;
}
