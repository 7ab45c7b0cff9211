/*
 * wire_decode.c - the binary protocol's decoder, written for hostile input.
 *
 * msgpack-c's unpacker bounds nothing (an array32 header reserves 24 bytes
 * per declared element before one arrives, a str32 header waits forever,
 * deep nesting fails as NOMEM), so the wire module reads msgpack with its own
 * small zero-copy cursor over one whole frame (wire_int.h).  The cursor checks every declared
 * length against the bytes left before it is used: a string longer than the
 * rest of the frame, or a container claiming more elements than there are
 * bytes left (each element takes at least one byte), is refused on its
 * header, before any allocation.  Decoding follows the schema of the message
 * kind: each field is read with the type it must have, so the decoder never
 * descends into a container it did not ask for, and nesting is bounded by the
 * schema (checked against WIRE_MAX_DEPTH as well).  Floats, ext types and the
 * reserved byte are not used by the protocol and are refused.
 *
 * Byte strings become slices into the payload.  The only allocation is the
 * decoder's arena for a message's key / item / stat array (EXEC: its three
 * arrays, wire_call.c), sized after the count checks and reused by later
 * messages, so steady state allocates nothing.
 */
#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

#include "proto/wire_int.h"

static int rd_expiry(struct cur *c, struct wire_expiry *e)
{
    TRY(rd_u8(c, &e->kind));
    return rd_int(c, INT64_MIN, INT64_MAX, &e->ms);
}

/* ---- decoder arena ---- */

void wire_decoder_init(struct wire_decoder *d, uint32_t max_items)
{
    d->arena = NULL;
    d->arena_cap = 0;
    d->max_items = max_items ? max_items : WIRE_MAX_ITEMS_DEFAULT;
}

void wire_decoder_deinit(struct wire_decoder *d)
{
    free(d->arena);
    d->arena = NULL;
    d->arena_cap = 0;
}

static int rd_keys(struct wire_decoder *d, struct cur *c, bool need_one,
                   const struct wire_slice **keys, uint32_t *nkeys)
{
    size_t n;
    void *mem;
    TRY(rd_array(c, &n));
    if (need_one && n == 0)
        return fail(c, "no keys");
    TRY(arena(d, c, n, sizeof(struct wire_slice), &mem));
    struct wire_slice *k = mem;
    for (size_t i = 0; i < n; i++)
        TRY(rd_bytes(c, &k[i]));
    leave(c);
    *keys = k;
    *nkeys = (uint32_t)n;
    return HKV_OK;
}

static int rd_items(struct wire_decoder *d, struct cur *c, const struct wire_item **items,
                    uint32_t *nitems)
{
    size_t n, m;
    void *mem;
    struct mp o;
    TRY(rd_array(c, &n));
    TRY(arena(d, c, n, sizeof(struct wire_item), &mem));
    struct wire_item *it = mem;
    for (size_t i = 0; i < n; i++) {
        memset(&it[i], 0, sizeof it[i]);
        TRY(mp_read(c, &o));
        if (o.kind == MP_NIL)
            continue;
        if (o.kind != MP_ARRAY)
            return fail(c, "expected item array or nil");
        m = o.n;
        TRY(enter(c));
        if (m != 3)
            return fail(c, "item: wrong field count");
        it[i].found = true;
        TRY(rd_bytes(c, &it[i].value));
        TRY(rd_uint(c, UINT64_MAX, &it[i].stamp));
        TRY(rd_uint(c, UINT64_MAX, &it[i].expire_ms));
        leave(c);
    }
    leave(c);
    *items = it;
    *nitems = (uint32_t)n;
    return HKV_OK;
}

static int rd_stats(struct wire_decoder *d, struct cur *c, const struct wire_stat **stats,
                    uint32_t *nstats)
{
    struct mp o;
    void *mem;
    TRY(mp_read(c, &o));
    if (o.kind != MP_MAP)
        return fail(c, "expected map");
    TRY(enter(c));
    TRY(arena(d, c, o.n, sizeof(struct wire_stat), &mem));
    struct wire_stat *st = mem;
    for (size_t i = 0; i < o.n; i++) {
        TRY(rd_bytes(c, &st[i].name));
        TRY(rd_int(c, INT64_MIN, INT64_MAX, &st[i].value));
    }
    leave(c);
    *stats = st;
    *nstats = (uint32_t)o.n;
    return HKV_OK;
}

/* Fields after type and id, per kind; -1 for unknown kinds. */
static int nfields(unsigned type)
{
    switch (type) {
    case WIRE_HELLO: return 8;
    case WIRE_GET: return 1;
    case WIRE_SET: return 8;
    case WIRE_DEL: return 4;
    case WIRE_INCRBY: return 5;
    case WIRE_EXPIRE: return 7;
    case WIRE_PERSIST: return 4;
    case WIRE_GETDEL: return 4;
    case WIRE_TTL: return 1;
    case WIRE_SCAN: return 3;
    case WIRE_SCAN_RANGE: return 4;
    case WIRE_PING: return 0;
    case WIRE_STATS: return 0;
    case WIRE_HELLO_OK: return 5;
    case WIRE_VALUE: return 3;
    case WIRE_VALUES: return 1;
    case WIRE_NOTFOUND: return 1;
    case WIRE_OK: return 3;
    case WIRE_INT: return 2;
    case WIRE_MOVED: return 4;
    case WIRE_ERROR: return 2;
    case WIRE_SCAN_REPLY: return 2;
    case WIRE_STATS_REPLY: return 1;
    case WIRE_PONG: return 0;
    case WIRE_PUSH: return 4;
    case WIRE_INVALIDATE: return 2;
    case WIRE_PUBLISH: return 2;
    case WIRE_PUBMSG: return 2;
    case WIRE_CALL: return 5;
    case WIRE_EXEC: return 6;
    case WIRE_RESP: return 2;
    }
    return -1;
}

static int decode_fields(struct wire_decoder *d, struct cur *c, struct wire_msg *m)
{
    int64_t i64;
    switch (m->type) {
    case WIRE_HELLO:
        TRY(rd_u32(c, &m->u.hello.version));
        TRY(rd_u32(c, &m->u.hello.edge_id));
        TRY(rd_bytes(c, &m->u.hello.colo));
        TRY(rd_u8(c, &m->u.hello.role));
        if (m->u.hello.role > WIRE_ROLE_PUSH)
            return fail(c, "unknown link role");
        TRY(rd_uint(c, UINT64_MAX, &m->u.hello.incarnation));
        if (m->u.hello.incarnation == 0)
            return fail(c, "incarnation 0");
        TRY(rd_bytes(c, &m->u.hello.cluster));
        TRY(rd_u32(c, &m->u.hello.want_owner));
        return rd_bytes(c, &m->u.hello.host);
    case WIRE_GET:
        return rd_keys(d, c, true, &m->u.get.keys, &m->u.get.nkeys);
    case WIRE_SET:
        TRY(rd_bytes(c, &m->u.set.key));
        TRY(rd_bytes(c, &m->u.set.value));
        TRY(rd_rid(c, &m->u.set.rid));
        TRY(rd_expiry(c, &m->u.set.exp));
        TRY(rd_u32(c, &m->u.set.flags));
        if (!wire_set_valid(m->u.set.exp, m->u.set.flags))
            return fail(c, "bad SET expiry or flags");
        return HKV_OK;
    case WIRE_DEL:
        TRY(rd_keys(d, c, true, &m->u.del.keys, &m->u.del.nkeys));
        return rd_rid(c, &m->u.del.rid);
    case WIRE_INCRBY:
        TRY(rd_bytes(c, &m->u.incrby.key));
        TRY(rd_int(c, INT64_MIN, INT64_MAX, &m->u.incrby.delta));
        return rd_rid(c, &m->u.incrby.rid);
    case WIRE_EXPIRE:
        TRY(rd_bytes(c, &m->u.expire.key));
        TRY(rd_expiry(c, &m->u.expire.exp));
        TRY(rd_rid(c, &m->u.expire.rid));
        TRY(rd_u32(c, &m->u.expire.flags));
        if (!wire_expire_valid(m->u.expire.exp, m->u.expire.flags))
            return fail(c, "bad EXPIRE expiry or flags");
        return HKV_OK;
    case WIRE_PERSIST:
        TRY(rd_bytes(c, &m->u.persist.key));
        return rd_rid(c, &m->u.persist.rid);
    case WIRE_GETDEL:
        TRY(rd_bytes(c, &m->u.getdel.key));
        return rd_rid(c, &m->u.getdel.rid);
    case WIRE_TTL:
        return rd_bytes(c, &m->u.ttl.key);
    case WIRE_SCAN:
        TRY(rd_uint(c, UINT64_MAX, &m->u.scan.cursor));
        TRY(rd_u32(c, &m->u.scan.count));
        return rd_bytes_or_nil(c, &m->u.scan.match, &m->u.scan.has_match);
    case WIRE_SCAN_RANGE:
        TRY(rd_uint(c, UINT64_MAX, &m->u.scan_range.from));
        TRY(rd_uint(c, UINT64_MAX, &m->u.scan_range.to));
        TRY(rd_u32(c, &m->u.scan_range.count));
        return rd_bytes_or_nil(c, &m->u.scan_range.match, &m->u.scan_range.has_match);
    case WIRE_NOTFOUND:
        return rd_uint(c, UINT64_MAX, &m->u.notfound.stamp);
    case WIRE_PING:
    case WIRE_STATS:
    case WIRE_PONG:
        return HKV_OK;
    case WIRE_HELLO_OK:
        TRY(rd_u32(c, &m->u.hello_ok.version));
        TRY(rd_u32(c, &m->u.hello_ok.owner_id));
        TRY(rd_bytes(c, &m->u.hello_ok.pool));
        TRY(rd_uint(c, UINT64_MAX, &m->u.hello_ok.map_gen));
        TRY(rd_uint(c, UINT64_MAX, &m->u.hello_ok.incarnation));
        return m->u.hello_ok.incarnation == 0 ? fail(c, "incarnation 0") : HKV_OK;
    case WIRE_VALUE:
        TRY(rd_bytes(c, &m->u.value.value));
        TRY(rd_uint(c, UINT64_MAX, &m->u.value.stamp));
        return rd_uint(c, UINT64_MAX, &m->u.value.expire_ms);
    case WIRE_VALUES:
        return rd_items(d, c, &m->u.values.items, &m->u.values.nitems);
    case WIRE_OK:
        TRY(rd_uint(c, UINT64_MAX, &m->u.ok.stamp));
        TRY(rd_bool(c, &m->u.ok.applied));
        return rd_bytes_or_nil(c, &m->u.ok.old, &m->u.ok.has_old);
    case WIRE_INT:
        TRY(rd_int(c, INT64_MIN, INT64_MAX, &m->u.integer.value));
        return rd_uint(c, UINT64_MAX, &m->u.integer.stamp);
    case WIRE_MOVED:
        TRY(rd_u32(c, &m->u.moved.leaf));
        TRY(rd_u8(c, &m->u.moved.leaf_bits));
        TRY(rd_uint(c, UINT64_MAX, &m->u.moved.map_gen));
        TRY(rd_u32(c, &m->u.moved.owner));
        if (!wire_leaf_valid(m->u.moved.leaf, m->u.moved.leaf_bits))
            return fail(c, "leaf does not fit its bits");
        return HKV_OK;
    case WIRE_ERROR:
        TRY(rd_int(c, INT32_MIN, INT32_MAX, &i64));
        m->u.error.code = (int32_t)i64;
        return rd_bytes(c, &m->u.error.text);
    case WIRE_SCAN_REPLY:
        TRY(rd_uint(c, UINT64_MAX, &m->u.scan_reply.cursor));
        return rd_keys(d, c, false, &m->u.scan_reply.keys, &m->u.scan_reply.nkeys);
    case WIRE_STATS_REPLY:
        return rd_stats(d, c, &m->u.stats_reply.stats, &m->u.stats_reply.nstats);
    case WIRE_PUSH:
        TRY(rd_bytes(c, &m->u.push.key));
        TRY(rd_bytes(c, &m->u.push.value));
        TRY(rd_uint(c, UINT64_MAX, &m->u.push.stamp));
        return rd_uint(c, UINT64_MAX, &m->u.push.expire_ms);
    case WIRE_INVALIDATE:
        TRY(rd_bytes(c, &m->u.invalidate.key));
        return rd_uint(c, UINT64_MAX, &m->u.invalidate.stamp);
    case WIRE_PUBLISH:
    case WIRE_PUBMSG:
        TRY(rd_bytes(c, &m->u.pub.channel));
        return rd_bytes(c, &m->u.pub.msg);
    case WIRE_CALL:
    case WIRE_EXEC:
    case WIRE_RESP:
        return wire_call_decode(d, c, m);
    }
    return fail(c, "unknown message type");
}

static int decode(struct wire_decoder *d, struct cur *c, struct wire_msg *out)
{
    size_t n;
    uint64_t type, id;
    if (c->p == c->end)
        return fail(c, "empty frame");
    TRY(rd_array(c, &n));
    if (n < 2)
        return fail(c, "missing type or id");
    TRY(rd_uint(c, UINT64_MAX, &type));
    TRY(rd_uint(c, UINT64_MAX, &id));
    out->id = id;
    int want = type <= UINT8_MAX ? nfields((unsigned)type) : -1;
    if (want < 0)
        return fail(c, "unknown message type");
    out->type = (uint8_t)type;
    if (!wire_id_valid(out->type, id))
        return fail(c, id == 0 ? "request id 0" : "push with request id");
    if (n - 2 != (size_t)want)
        return fail(c, n - 2 < (size_t)want ? "missing fields" : "extra fields");
    TRY(decode_fields(d, c, out));
    leave(c);
    if (c->p != c->end)
        return fail(c, "trailing bytes");
    return HKV_OK;
}

int wire_decode(struct wire_decoder *d, const char *payload, size_t plen,
                struct wire_msg *out, const char **why)
{
    struct cur c = { NULL, NULL, 0, NULL };
    if (payload != NULL) {
        c.p = (const uint8_t *)payload;
        c.end = c.p + plen;
    }
    memset(out, 0, sizeof *out);
    int rc = decode(d, &c, out);
    if (why != NULL)
        *why = rc == HKV_OK ? NULL : c.why;
    return rc;
}
