/*
 * wire_decode.c - the binary protocol's decoder, written for hostile input.
 *
 * msgpack-c's unpacker bounds nothing (an array32 header reserves 24 bytes
 * per declared element before one arrives, a str32 header waits forever,
 * deep nesting fails as NOMEM), so this file reads msgpack with its own small
 * zero-copy cursor over one whole frame.  The cursor checks every declared
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
 * decoder's arena for a message's key / item / stat array, sized after the
 * count checks and reused by later messages, so steady state allocates
 * nothing.
 */
#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

struct cur {
    const uint8_t *p, *end;
    unsigned depth;
    const char *why;
};

enum mp_kind { MP_NIL, MP_BOOL, MP_UINT, MP_NEG, MP_BYTES, MP_ARRAY, MP_MAP };

/* One msgpack header: for MP_BYTES the data too (s, n), for containers the
 * element count (n; pairs for maps). */
struct mp {
    int kind;
    bool b;
    uint64_t u;   /* MP_UINT */
    int64_t i;    /* MP_NEG: always < 0 */
    const char *s;
    size_t n;
};

static int fail(struct cur *c, const char *why)
{
    c->why = why;
    return HKV_EPROTO;
}

#define TRY(x)                  \
    do {                        \
        int rc_ = (x);          \
        if (rc_ != HKV_OK)      \
            return rc_;         \
    } while (0)

static size_t left(const struct cur *c) { return (size_t)(c->end - c->p); }

/* Reads an n-byte big-endian unsigned value. */
static int take_be(struct cur *c, int n, uint64_t *v)
{
    if (left(c) < (size_t)n)
        return fail(c, "truncated");
    uint64_t x = 0;
    for (int k = 0; k < n; k++)
        x = x << 8 | c->p[k];
    c->p += n;
    *v = x;
    return HKV_OK;
}

static int set_signed(struct mp *o, int64_t v)
{
    if (v >= 0) {
        o->kind = MP_UINT;
        o->u = (uint64_t)v;
    } else {
        o->kind = MP_NEG;
        o->i = v;
    }
    return HKV_OK;
}

static int mp_bytes(struct cur *c, struct mp *o, int lenbytes)
{
    uint64_t n;
    TRY(take_be(c, lenbytes, &n));
    if (n > left(c))
        return fail(c, "length larger than frame");
    o->kind = MP_BYTES;
    o->s = (const char *)c->p;
    o->n = (size_t)n;
    c->p += n;
    return HKV_OK;
}

static int mp_container(struct cur *c, struct mp *o, int kind, uint64_t n)
{
    /* Every element takes at least one byte: a count past the bytes left is
     * a lie, refused before anyone sizes an array from it. */
    if (n > left(c) || (kind == MP_MAP && n > left(c) / 2))
        return fail(c, "count larger than frame");
    o->kind = kind;
    o->n = (size_t)n;
    return HKV_OK;
}

/* Reads one header (and a string's bytes). */
static int mp_read(struct cur *c, struct mp *o)
{
    uint64_t v;
    if (c->p >= c->end)
        return fail(c, "truncated");
    uint8_t t = *c->p++;
    if (t <= 0x7f)
        return set_signed(o, t);
    if (t >= 0xe0)
        return set_signed(o, (int8_t)t);
    if (t <= 0x8f)
        return mp_container(c, o, MP_MAP, t & 0x0f);
    if (t <= 0x9f)
        return mp_container(c, o, MP_ARRAY, t & 0x0f);
    if (t <= 0xbf) {
        size_t n = t & 0x1f;
        if (n > left(c))
            return fail(c, "length larger than frame");
        o->kind = MP_BYTES;
        o->s = (const char *)c->p;
        o->n = n;
        c->p += n;
        return HKV_OK;
    }
    switch (t) {
    case 0xc0:
        o->kind = MP_NIL;
        return HKV_OK;
    case 0xc2:
    case 0xc3:
        o->kind = MP_BOOL;
        o->b = t == 0xc3;
        return HKV_OK;
    case 0xc4: return mp_bytes(c, o, 1);
    case 0xc5: return mp_bytes(c, o, 2);
    case 0xc6: return mp_bytes(c, o, 4);
    case 0xd9: return mp_bytes(c, o, 1);
    case 0xda: return mp_bytes(c, o, 2);
    case 0xdb: return mp_bytes(c, o, 4);
    case 0xcc: TRY(take_be(c, 1, &v)); o->kind = MP_UINT; o->u = v; return HKV_OK;
    case 0xcd: TRY(take_be(c, 2, &v)); o->kind = MP_UINT; o->u = v; return HKV_OK;
    case 0xce: TRY(take_be(c, 4, &v)); o->kind = MP_UINT; o->u = v; return HKV_OK;
    case 0xcf: TRY(take_be(c, 8, &v)); o->kind = MP_UINT; o->u = v; return HKV_OK;
    case 0xd0: TRY(take_be(c, 1, &v)); return set_signed(o, (int8_t)v);
    case 0xd1: TRY(take_be(c, 2, &v)); return set_signed(o, (int16_t)v);
    case 0xd2: TRY(take_be(c, 4, &v)); return set_signed(o, (int32_t)v);
    case 0xd3: TRY(take_be(c, 8, &v)); return set_signed(o, (int64_t)v);
    case 0xdc: TRY(take_be(c, 2, &v)); return mp_container(c, o, MP_ARRAY, v);
    case 0xdd: TRY(take_be(c, 4, &v)); return mp_container(c, o, MP_ARRAY, v);
    case 0xde: TRY(take_be(c, 2, &v)); return mp_container(c, o, MP_MAP, v);
    case 0xdf: TRY(take_be(c, 4, &v)); return mp_container(c, o, MP_MAP, v);
    case 0xc1:
        return fail(c, "reserved msgpack byte");
    }
    return fail(c, "unsupported msgpack type");  /* float, ext, fixext */
}

/* ---- typed readers ---- */

static int enter(struct cur *c)
{
    if (++c->depth > WIRE_MAX_DEPTH)
        return fail(c, "nesting too deep");
    return HKV_OK;
}

static void leave(struct cur *c) { c->depth--; }

static int rd_array(struct cur *c, size_t *n)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_ARRAY)
        return fail(c, "expected array");
    *n = o.n;
    return enter(c);
}

static int rd_uint(struct cur *c, uint64_t max, uint64_t *v)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind == MP_NEG)
        return fail(c, "negative where unsigned expected");
    if (o.kind != MP_UINT)
        return fail(c, "expected integer");
    if (o.u > max)
        return fail(c, "integer out of range");
    *v = o.u;
    return HKV_OK;
}

static int rd_u32(struct cur *c, uint32_t *v)
{
    uint64_t x;
    TRY(rd_uint(c, UINT32_MAX, &x));
    *v = (uint32_t)x;
    return HKV_OK;
}

static int rd_u8(struct cur *c, uint8_t *v)
{
    uint64_t x;
    TRY(rd_uint(c, UINT8_MAX, &x));
    *v = (uint8_t)x;
    return HKV_OK;
}

static int rd_int(struct cur *c, int64_t min, int64_t max, int64_t *v)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind == MP_UINT) {
        if (o.u > (uint64_t)max)
            return fail(c, "integer out of range");
        *v = (int64_t)o.u;
    } else if (o.kind == MP_NEG) {
        if (o.i < min)
            return fail(c, "integer out of range");
        *v = o.i;
    } else {
        return fail(c, "expected integer");
    }
    return HKV_OK;
}

static int rd_bool(struct cur *c, bool *v)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_BOOL)
        return fail(c, "expected bool");
    *v = o.b;
    return HKV_OK;
}

/* bin or str. */
static int rd_bytes(struct cur *c, struct wire_slice *s)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_BYTES)
        return fail(c, "expected bytes");
    *s = wire_slice(o.s, o.n);
    return HKV_OK;
}

static int rd_bytes_or_nil(struct cur *c, struct wire_slice *s, bool *has)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind == MP_NIL) {
        *has = false;
        *s = wire_slice(NULL, 0);
        return HKV_OK;
    }
    if (o.kind != MP_BYTES)
        return fail(c, "expected bytes or nil");
    *has = true;
    *s = wire_slice(o.s, o.n);
    return HKV_OK;
}

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

/* Room for n elements of `size` bytes; n was already checked against the
 * bytes left in the frame. */
static int arena(struct wire_decoder *d, struct cur *c, size_t n, size_t size, void **out)
{
    if (n > d->max_items) {
        c->why = "too many keys in one message";
        return HKV_ETOOBIG;
    }
    size_t need = n * size;  /* n <= UINT32_MAX, size small: no overflow */
    if (need > d->arena_cap) {
        size_t cap = need < 1024 ? 1024 : need;
        void *p = malloc(cap);
        if (p == NULL) {
            c->why = "out of memory for keys";
            return HKV_ENOMEM;
        }
        free(d->arena);
        d->arena = p;
        d->arena_cap = cap;
    }
    *out = d->arena;
    return HKV_OK;
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
    case WIRE_HELLO: return 5;
    case WIRE_GET: return 1;
    case WIRE_SET: return 9;
    case WIRE_DEL: return 4;
    case WIRE_INCRBY: return 5;
    case WIRE_EXPIRE: return 7;
    case WIRE_PERSIST: return 4;
    case WIRE_GETDEL: return 4;
    case WIRE_TTL: return 1;
    case WIRE_SCAN: return 3;
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
    }
    return -1;
}

/* A rid: seq (never 0), ack, prev. */
static int rd_rid(struct cur *c, struct wire_rid *r)
{
    TRY(rd_uint(c, UINT64_MAX, &r->seq));
    TRY(rd_uint(c, UINT64_MAX, &r->ack));
    TRY(rd_uint(c, UINT64_MAX, &r->prev));
    return r->seq == 0 ? fail(c, "rid seq 0") : HKV_OK;
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
        return m->u.hello.incarnation == 0 ? fail(c, "incarnation 0") : HKV_OK;
    case WIRE_GET:
        return rd_keys(d, c, true, &m->u.get.keys, &m->u.get.nkeys);
    case WIRE_SET:
        TRY(rd_bytes(c, &m->u.set.key));
        TRY(rd_bytes(c, &m->u.set.value));
        TRY(rd_rid(c, &m->u.set.rid));
        TRY(rd_expiry(c, &m->u.set.exp));
        TRY(rd_u32(c, &m->u.set.flags));
        TRY(rd_u32(c, &m->u.set.class_id));
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
