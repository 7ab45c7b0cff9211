/*
 * wire_int.h - the wire module's insides, shared by its own files only
 * (wire.c: framing and the encoders of the key/value kinds; wire_decode.c:
 * the decoder; wire_call.c: CALL, EXEC and RESP both ways).  Nothing outside
 * proto/wire*.c includes this.
 *
 * It holds the two halves of the msgpack subset the protocol uses: a writer
 * that appends one frame to an hkv_buf and rolls it back on failure, and the
 * cursor that reads one whole payload written for hostile input (see
 * wire_decode.c for why not msgpack-c).  They are static inline so that
 * every file of the module uses the same code without exporting short
 * names, and so that the files call each other one way only (wire.c and
 * wire_decode.c call wire_call.c, never back), as `make layers` requires.
 */
#ifndef HKV_WIRE_INT_H
#define HKV_WIRE_INT_H

#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* ---- writer: one frame appended to an hkv_buf ---- */

struct wr {
    struct hkv_buf *b;
    size_t start;  /* frame start relative to b->off: survives buf_compact */
    int st;
};

static inline void w_raw(struct wr *w, const void *p, size_t n)
{
    if (w->st != HKV_OK || n == 0)
        return;
    if (buf_room(w->b) >= n) { /* wr_begin reserved the frame's likely size */
        memcpy(buf_tail(w->b), p, n);
        w->b->len += n;
        return;
    }
    w->st = buf_reserve(w->b, n, 0);
    if (w->st != HKV_OK)
        return;
    memcpy(buf_tail(w->b), p, n);
    w->b->len += n;
}

static inline void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* A one-byte tag followed by an n-byte big-endian value. */
static inline void w_tagged(struct wr *w, uint8_t tag, uint64_t v, int n)
{
    if (w->st == HKV_OK && buf_room(w->b) >= 9) { /* in place: no copy, no call */
        uint8_t *t = (uint8_t *)buf_tail(w->b);
        t[0] = tag;
        put_be(t + 1, v, n);
        w->b->len += (size_t)n + 1;
        return;
    }
    uint8_t h[9];
    h[0] = tag;
    put_be(h + 1, v, n);
    w_raw(w, h, (size_t)n + 1);
}

static inline void w_uint(struct wr *w, uint64_t v)
{
    if (v < 0x80)
        w_tagged(w, (uint8_t)v, 0, 0);
    else if (v <= UINT8_MAX)
        w_tagged(w, 0xcc, v, 1);
    else if (v <= UINT16_MAX)
        w_tagged(w, 0xcd, v, 2);
    else if (v <= UINT32_MAX)
        w_tagged(w, 0xce, v, 4);
    else
        w_tagged(w, 0xcf, v, 8);
}

static inline void w_int(struct wr *w, int64_t v)
{
    if (v >= 0)
        w_uint(w, (uint64_t)v);
    else if (v >= -32)
        w_tagged(w, (uint8_t)v, 0, 0);
    else if (v >= INT8_MIN)
        w_tagged(w, 0xd0, (uint8_t)v, 1);
    else if (v >= INT16_MIN)
        w_tagged(w, 0xd1, (uint16_t)v, 2);
    else if (v >= INT32_MIN)
        w_tagged(w, 0xd2, (uint32_t)v, 4);
    else
        w_tagged(w, 0xd3, (uint64_t)v, 8);
}

static inline void w_nil(struct wr *w) { w_tagged(w, 0xc0, 0, 0); }
static inline void w_bool(struct wr *w, bool v) { w_tagged(w, v ? 0xc3 : 0xc2, 0, 0); }

static inline void w_array(struct wr *w, uint32_t n)
{
    if (n <= 15)
        w_tagged(w, (uint8_t)(0x90 | n), 0, 0);
    else if (n <= UINT16_MAX)
        w_tagged(w, 0xdc, n, 2);
    else
        w_tagged(w, 0xdd, n, 4);
}

static inline void w_map(struct wr *w, uint32_t n)
{
    if (n <= 15)
        w_tagged(w, (uint8_t)(0x80 | n), 0, 0);
    else if (n <= UINT16_MAX)
        w_tagged(w, 0xde, n, 2);
    else
        w_tagged(w, 0xdf, n, 4);
}

/* bin for keys and values, str for human text. */
static inline void w_bytes(struct wr *w, struct wire_slice s, bool str)
{
    if (w->st != HKV_OK)
        return;
    if (s.p == NULL && s.len > 0) {
        w->st = HKV_EINVAL;
        return;
    }
    if (s.len > UINT32_MAX) {
        w->st = HKV_ETOOBIG;
        return;
    }
    if (str && s.len < 32)
        w_tagged(w, (uint8_t)(0xa0 | s.len), 0, 0);
    else if (s.len <= UINT8_MAX)
        w_tagged(w, str ? 0xd9 : 0xc4, s.len, 1);
    else if (s.len <= UINT16_MAX)
        w_tagged(w, str ? 0xda : 0xc5, s.len, 2);
    else
        w_tagged(w, str ? 0xdb : 0xc6, s.len, 4);
    w_raw(w, s.p, s.len);
}

static inline void w_bin(struct wr *w, struct wire_slice s) { w_bytes(w, s, false); }
static inline void w_str(struct wr *w, struct wire_slice s) { w_bytes(w, s, true); }

static inline void w_keys(struct wr *w, const struct wire_slice *keys, uint32_t n)
{
    if (keys == NULL && n > 0) {
        w->st = HKV_EINVAL;
        return;
    }
    w_array(w, n);
    for (uint32_t i = 0; i < n && w->st == HKV_OK; i++)
        w_bin(w, keys[i]);
}

/* Starts a frame of `nfields` fields after type and id; `hint` is a size
 * guess reserved up front so most frames need a single reserve. */
static inline void wr_begin(struct wr *w, struct hkv_buf *b, size_t hint, unsigned type,
                            uint64_t id, uint32_t nfields)
{
    static const uint8_t zero[WIRE_HEADER_LEN];
    w->b = b;
    w->start = b->len - b->off;
    w->st = wire_id_valid(type, id) ? buf_reserve(b, hint, 0) : HKV_EINVAL;
    w_raw(w, zero, sizeof zero);
    w_array(w, 2 + nfields);
    w_uint(w, type);
    w_uint(w, id);
}

/* Patches the length prefix, or rolls the buffer back on failure. */
static inline int wr_end(struct wr *w)
{
    struct hkv_buf *b = w->b;
    if (w->st == HKV_OK) {
        size_t plen = b->len - b->off - w->start - WIRE_HEADER_LEN;
        if (plen > UINT32_MAX)
            w->st = HKV_ETOOBIG;
        else
            put_be((uint8_t *)b->data + b->off + w->start, plen, WIRE_HEADER_LEN);
    }
    if (w->st != HKV_OK)
        b->len = b->off + w->start;
    return w->st;
}

#define HINT(n) ((size_t)64 + (n))

/* A rid is three uints; seq 0 is never a request. */
static inline void w_rid(struct wr *w, struct wire_rid rid)
{
    w_uint(w, rid.seq);
    w_uint(w, rid.ack);
    w_uint(w, rid.prev);
}

/* ---- reader: a hostile-input cursor over one whole payload ---- */

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

static inline int fail(struct cur *c, const char *why)
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

static inline size_t left(const struct cur *c) { return (size_t)(c->end - c->p); }

/* Reads an n-byte big-endian unsigned value. */
static inline int take_be(struct cur *c, int n, uint64_t *v)
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

static inline int set_signed(struct mp *o, int64_t v)
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

static inline int mp_bytes(struct cur *c, struct mp *o, int lenbytes)
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

static inline int mp_container(struct cur *c, struct mp *o, int kind, uint64_t n)
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
static inline int mp_read(struct cur *c, struct mp *o)
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

static inline int enter(struct cur *c)
{
    if (++c->depth > WIRE_MAX_DEPTH)
        return fail(c, "nesting too deep");
    return HKV_OK;
}

static inline void leave(struct cur *c) { c->depth--; }

/* The typed readers below take the encodings the protocol's own writer
 * emits (fixarray, fixint, uint 8-64, bin 8, fixstr) inline, and leave the
 * rest to mp_read: a SET frame's ten fields cost no call and no struct mp
 * each.  Both paths check and fail alike. */

static inline int rd_array(struct cur *c, size_t *n)
{
    if (c->p < c->end && (*c->p & 0xf0) == 0x90) {
        size_t k = *c->p++ & 0x0f;
        if (k > left(c))
            return fail(c, "count larger than frame");
        *n = k;
        return enter(c);
    }
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_ARRAY)
        return fail(c, "expected array");
    *n = o.n;
    return enter(c);
}

static inline int rd_uint(struct cur *c, uint64_t max, uint64_t *v)
{
    if (c->p < c->end && (*c->p <= 0x7f || (*c->p >= 0xcc && *c->p <= 0xcf))) {
        uint64_t x = *c->p++;
        if (x > 0x7f)
            TRY(take_be(c, 1 << (x - 0xcc), &x));
        if (x > max)
            return fail(c, "integer out of range");
        *v = x;
        return HKV_OK;
    }
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

static inline int rd_u32(struct cur *c, uint32_t *v)
{
    uint64_t x;
    TRY(rd_uint(c, UINT32_MAX, &x));
    *v = (uint32_t)x;
    return HKV_OK;
}

static inline int rd_u8(struct cur *c, uint8_t *v)
{
    uint64_t x;
    TRY(rd_uint(c, UINT8_MAX, &x));
    *v = (uint8_t)x;
    return HKV_OK;
}

static inline int rd_int(struct cur *c, int64_t min, int64_t max, int64_t *v)
{
    if (c->p < c->end && (*c->p <= 0x7f || *c->p >= 0xe0)) { /* fixint */
        int64_t x = (int8_t)*c->p++;
        if (x < min || x > max)
            return fail(c, "integer out of range");
        *v = x;
        return HKV_OK;
    }
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

static inline int rd_bool(struct cur *c, bool *v)
{
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_BOOL)
        return fail(c, "expected bool");
    *v = o.b;
    return HKV_OK;
}

/* bin or str. */
static inline int rd_bytes(struct cur *c, struct wire_slice *s)
{
    if (c->p < c->end && (*c->p == 0xc4 || (*c->p & 0xe0) == 0xa0)) {
        size_t n;
        if (*c->p++ == 0xc4) {
            if (c->p == c->end)
                return fail(c, "truncated");
            n = *c->p++;
        } else {
            n = c->p[-1] & 0x1f;
        }
        if (n > left(c))
            return fail(c, "length larger than frame");
        *s = wire_slice((const char *)c->p, n);
        c->p += n;
        return HKV_OK;
    }
    struct mp o;
    TRY(mp_read(c, &o));
    if (o.kind != MP_BYTES)
        return fail(c, "expected bytes");
    *s = wire_slice(o.s, o.n);
    return HKV_OK;
}

static inline int rd_bytes_or_nil(struct cur *c, struct wire_slice *s, bool *has)
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

/* A rid: seq (never 0), ack, prev. */
static inline int rd_rid(struct cur *c, struct wire_rid *r)
{
    TRY(rd_uint(c, UINT64_MAX, &r->seq));
    TRY(rd_uint(c, UINT64_MAX, &r->ack));
    TRY(rd_uint(c, UINT64_MAX, &r->prev));
    return r->seq == 0 ? fail(c, "rid seq 0") : HKV_OK;
}

/* ---- decoder arena ---- */

/* Room for `need` bytes, at least 8-aligned (malloc); every count behind
 * `need` was already checked against the bytes left in the frame and against
 * max_items.  The arena only grows, and is reused by the next message. */
static inline int arena_bytes(struct wire_decoder *d, struct cur *c, size_t need, void **out)
{
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

/* Room for n elements of `size` bytes; n was already checked against the
 * bytes left in the frame. */
static inline int arena(struct wire_decoder *d, struct cur *c, size_t n, size_t size, void **out)
{
    if (n > d->max_items) {
        c->why = "too many keys in one message";
        return HKV_ETOOBIG;
    }
    return arena_bytes(d, c, n * size, out);  /* n <= UINT32_MAX, size small */
}

/* ---- equality ---- */

/* Same bytes (wherever they point). */
static inline bool seq(struct wire_slice a, struct wire_slice b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static inline bool keys_eq(const struct wire_slice *a, uint32_t na, const struct wire_slice *b,
                           uint32_t nb)
{
    if (na != nb)
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!seq(a[i], b[i]))
            return false;
    return true;
}

static inline bool rid_eq(struct wire_rid a, struct wire_rid b)
{
    return a.seq == b.seq && a.ack == b.ack && a.prev == b.prev;
}

/* ---- wire_call.c: the command-carrying kinds (CALL, EXEC, RESP) ---- */

/* Reads the fields of a CALL, EXEC or RESP (m->type) after type and id;
 * returns as wire_decode(), with c->why set on an error. */
int wire_call_decode(struct wire_decoder *d, struct cur *c, struct wire_msg *m);
/* wire_msg_equal for those kinds (a and b of the same type). */
bool wire_call_equal(const struct wire_msg *a, const struct wire_msg *b);
/* wire_put_msg for those kinds. */
int wire_call_put(struct hkv_buf *b, const struct wire_msg *m);

#endif
