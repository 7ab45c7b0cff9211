/*
 * wire.c - binary protocol: framing and encoding.  The hostile-input
 * decoder is in wire_decode.c, the command-carrying kinds (CALL, EXEC, RESP)
 * in wire_call.c, names and message equality in wire_msg.c, the msgpack
 * writer and reader they share in wire_int.h; the format is in wire.h.
 *
 * Why hand-written encoders rather than msgpack-c's packer: a frame must be
 * appended to the connection's struct hkv_buf atomically (rolled back when an
 * allocation fails, so the buffer never holds half a frame) with its length
 * prefix patched in place afterwards.  The packer writes through a callback
 * per item and would still need that bookkeeping around it, plus either a
 * copy out of an msgpack_sbuffer or a callback shim.  What the protocol uses
 * of msgpack is ten header forms; writing them in wire_int.h keeps both
 * halves of the format (which width, bin for bytes, str for text) in one
 * module, and the unit tests check the output against msgpack-c's own
 * unpacker and feed msgpack-c's packer output to our decoder, so the two stay
 * compatible.
 *
 * Every encoder validates with the same rules the decoder applies (wire.h's
 * wire_*_valid), so nothing we send is refused by a peer built from this file.
 */
#include "proto/wire.h"

#include <string.h>

#include "proto/wire_int.h"

/* ---- requests ---- */

int wire_put_hello_cluster(struct hkv_buf *b, uint64_t id, uint32_t version, uint32_t edge_id,
                           struct wire_slice colo, uint8_t role, uint64_t incarnation,
                           const struct wire_hello_cluster *cl)
{
    static const struct wire_hello_cluster single = {{NULL, 0}, 0, {NULL, 0}};
    if (cl == NULL)
        cl = &single;
    if (role > WIRE_ROLE_PUSH || incarnation == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(colo.len + cl->cluster.len + cl->host.len), WIRE_HELLO, id, 8);
    w_uint(&w, version);
    w_uint(&w, edge_id);
    w_str(&w, colo);
    w_uint(&w, role);
    w_uint(&w, incarnation);
    w_str(&w, cl->cluster);
    w_uint(&w, cl->want_owner);
    w_str(&w, cl->host);
    return wr_end(&w);
}

int wire_put_get(struct hkv_buf *b, uint64_t id, const struct wire_slice *keys, uint32_t nkeys)
{
    if (nkeys == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nkeys * 16), WIRE_GET, id, 1);
    w_keys(&w, keys, nkeys);
    return wr_end(&w);
}

int wire_put_set(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_slice value,
                 struct wire_rid rid, struct wire_expiry exp, uint32_t flags)
{
    if (!wire_set_valid(exp, flags) || rid.seq == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(key.len + value.len), WIRE_SET, id, 8);
    w_bin(&w, key);
    w_bin(&w, value);
    w_rid(&w, rid);
    w_uint(&w, exp.kind);
    w_int(&w, exp.ms);
    w_uint(&w, flags);
    return wr_end(&w);
}

int wire_put_del(struct hkv_buf *b, uint64_t id, const struct wire_slice *keys, uint32_t nkeys,
                 struct wire_rid rid)
{
    if (nkeys == 0 || rid.seq == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nkeys * 16), WIRE_DEL, id, 4);
    w_keys(&w, keys, nkeys);
    w_rid(&w, rid);
    return wr_end(&w);
}

int wire_put_incrby(struct hkv_buf *b, uint64_t id, struct wire_slice key, int64_t delta,
                    struct wire_rid rid)
{
    if (rid.seq == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(key.len), WIRE_INCRBY, id, 5);
    w_bin(&w, key);
    w_int(&w, delta);
    w_rid(&w, rid);
    return wr_end(&w);
}

int wire_put_expire(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_expiry exp,
                    struct wire_rid rid, uint32_t flags)
{
    if (!wire_expire_valid(exp, flags) || rid.seq == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(key.len), WIRE_EXPIRE, id, 7);
    w_bin(&w, key);
    w_uint(&w, exp.kind);
    w_int(&w, exp.ms);
    w_rid(&w, rid);
    w_uint(&w, flags);
    return wr_end(&w);
}

static int put_key_rid(struct hkv_buf *b, unsigned type, uint64_t id, struct wire_slice key,
                       struct wire_rid rid)
{
    if (rid.seq == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(key.len), type, id, 4);
    w_bin(&w, key);
    w_rid(&w, rid);
    return wr_end(&w);
}

int wire_put_persist(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_rid rid)
{
    return put_key_rid(b, WIRE_PERSIST, id, key, rid);
}

int wire_put_getdel(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_rid rid)
{
    return put_key_rid(b, WIRE_GETDEL, id, key, rid);
}

int wire_put_ttl(struct hkv_buf *b, uint64_t id, struct wire_slice key)
{
    struct wr w;
    wr_begin(&w, b, HINT(key.len), WIRE_TTL, id, 1);
    w_bin(&w, key);
    return wr_end(&w);
}

int wire_put_scan(struct hkv_buf *b, uint64_t id, uint64_t cursor, uint32_t count,
                  const struct wire_slice *match)
{
    struct wr w;
    wr_begin(&w, b, HINT(match ? match->len : 0), WIRE_SCAN, id, 3);
    w_uint(&w, cursor);
    w_uint(&w, count);
    if (match != NULL)
        w_str(&w, *match);
    else
        w_nil(&w);
    return wr_end(&w);
}

int wire_put_scan_range(struct hkv_buf *b, uint64_t id, uint64_t from, uint64_t to, uint32_t count,
                        const struct wire_slice *match)
{
    struct wr w;
    wr_begin(&w, b, HINT(match ? match->len : 0), WIRE_SCAN_RANGE, id, 4);
    w_uint(&w, from);
    w_uint(&w, to);
    w_uint(&w, count);
    if (match != NULL)
        w_str(&w, *match);
    else
        w_nil(&w);
    return wr_end(&w);
}

static int put_bare(struct hkv_buf *b, unsigned type, uint64_t id)
{
    struct wr w;
    wr_begin(&w, b, HINT(0), type, id, 0);
    return wr_end(&w);
}

int wire_put_ping(struct hkv_buf *b, uint64_t id) { return put_bare(b, WIRE_PING, id); }
int wire_put_stats(struct hkv_buf *b, uint64_t id) { return put_bare(b, WIRE_STATS, id); }

/* ---- replies ---- */

int wire_put_hello_ok(struct hkv_buf *b, uint64_t id, uint32_t version, uint32_t owner_id,
                      struct wire_slice pool, uint64_t map_gen, uint64_t incarnation)
{
    if (incarnation == 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(pool.len), WIRE_HELLO_OK, id, 5);
    w_uint(&w, version);
    w_uint(&w, owner_id);
    w_str(&w, pool);
    w_uint(&w, map_gen);
    w_uint(&w, incarnation);
    return wr_end(&w);
}

int wire_put_value(struct hkv_buf *b, uint64_t id, struct wire_slice value, hkv_stamp stamp,
                   uint64_t expire_ms)
{
    struct wr w;
    wr_begin(&w, b, HINT(value.len), WIRE_VALUE, id, 3);
    w_bin(&w, value);
    w_uint(&w, stamp);
    w_uint(&w, expire_ms);
    return wr_end(&w);
}

int wire_put_values(struct hkv_buf *b, uint64_t id, const struct wire_item *items, uint32_t nitems)
{
    if (items == NULL && nitems > 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nitems * 32), WIRE_VALUES, id, 1);
    w_array(&w, nitems);
    for (uint32_t i = 0; i < nitems && w.st == HKV_OK; i++) {
        if (!items[i].found) {
            w_nil(&w);
            continue;
        }
        w_array(&w, 3);
        w_bin(&w, items[i].value);
        w_uint(&w, items[i].stamp);
        w_uint(&w, items[i].expire_ms);
    }
    return wr_end(&w);
}

int wire_put_notfound(struct hkv_buf *b, uint64_t id, hkv_stamp stamp)
{
    struct wr w;
    wr_begin(&w, b, HINT(0), WIRE_NOTFOUND, id, 1);
    w_uint(&w, stamp);
    return wr_end(&w);
}

int wire_put_ok(struct hkv_buf *b, uint64_t id, hkv_stamp stamp, bool applied,
                const struct wire_slice *old)
{
    struct wr w;
    wr_begin(&w, b, HINT(old ? old->len : 0), WIRE_OK, id, 3);
    w_uint(&w, stamp);
    w_bool(&w, applied);
    if (old != NULL)
        w_bin(&w, *old);
    else
        w_nil(&w);
    return wr_end(&w);
}

int wire_put_int(struct hkv_buf *b, uint64_t id, int64_t value, hkv_stamp stamp)
{
    struct wr w;
    wr_begin(&w, b, HINT(0), WIRE_INT, id, 2);
    w_int(&w, value);
    w_uint(&w, stamp);
    return wr_end(&w);
}

int wire_put_moved(struct hkv_buf *b, uint64_t id, uint32_t leaf, uint8_t leaf_bits,
                   uint64_t map_gen, uint32_t owner)
{
    if (!wire_leaf_valid(leaf, leaf_bits))
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT(0), WIRE_MOVED, id, 4);
    w_uint(&w, leaf);
    w_uint(&w, leaf_bits);
    w_uint(&w, map_gen);
    w_uint(&w, owner);
    return wr_end(&w);
}

int wire_put_error(struct hkv_buf *b, uint64_t id, int32_t code, struct wire_slice text)
{
    struct wr w;
    wr_begin(&w, b, HINT(text.len), WIRE_ERROR, id, 2);
    w_int(&w, code);
    w_str(&w, text);
    return wr_end(&w);
}

int wire_put_scan_reply(struct hkv_buf *b, uint64_t id, uint64_t cursor,
                        const struct wire_slice *keys, uint32_t nkeys)
{
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nkeys * 16), WIRE_SCAN_REPLY, id, 2);
    w_uint(&w, cursor);
    w_keys(&w, keys, nkeys);
    return wr_end(&w);
}

int wire_put_stats_reply(struct hkv_buf *b, uint64_t id, const struct wire_stat *stats,
                         uint32_t nstats)
{
    if (stats == NULL && nstats > 0)
        return HKV_EINVAL;
    struct wr w;
    wr_begin(&w, b, HINT((size_t)nstats * 32), WIRE_STATS_REPLY, id, 1);
    w_map(&w, nstats);
    for (uint32_t i = 0; i < nstats && w.st == HKV_OK; i++) {
        w_str(&w, stats[i].name);
        w_int(&w, stats[i].value);
    }
    return wr_end(&w);
}

int wire_put_pong(struct hkv_buf *b, uint64_t id) { return put_bare(b, WIRE_PONG, id); }

/* ---- push link ---- */

int wire_put_push(struct hkv_buf *b, struct wire_slice key, struct wire_slice value,
                  hkv_stamp stamp, uint64_t expire_ms)
{
    struct wr w;
    wr_begin(&w, b, HINT(key.len + value.len), WIRE_PUSH, 0, 4);
    w_bin(&w, key);
    w_bin(&w, value);
    w_uint(&w, stamp);
    w_uint(&w, expire_ms);
    return wr_end(&w);
}

int wire_put_invalidate(struct hkv_buf *b, struct wire_slice key, hkv_stamp stamp)
{
    struct wr w;
    wr_begin(&w, b, HINT(key.len), WIRE_INVALIDATE, 0, 2);
    w_bin(&w, key);
    w_uint(&w, stamp);
    return wr_end(&w);
}

static int put_pub(struct hkv_buf *b, unsigned type, uint64_t id, struct wire_slice channel,
                   struct wire_slice msg)
{
    struct wr w;
    wr_begin(&w, b, HINT(channel.len + msg.len), type, id, 2);
    w_bin(&w, channel);
    w_bin(&w, msg);
    return wr_end(&w);
}

int wire_put_publish(struct hkv_buf *b, uint64_t id, struct wire_slice channel,
                     struct wire_slice msg)
{
    return put_pub(b, WIRE_PUBLISH, id, channel, msg);
}

int wire_put_pubmsg(struct hkv_buf *b, struct wire_slice channel, struct wire_slice msg)
{
    return put_pub(b, WIRE_PUBMSG, 0, channel, msg);
}

/* ---- any message ---- */

int wire_put_msg(struct hkv_buf *b, const struct wire_msg *m)
{
    uint64_t id = m->id;
    switch (m->type) {
    case WIRE_HELLO: {
        struct wire_hello_cluster cl = {m->u.hello.cluster, m->u.hello.want_owner, m->u.hello.host};
        return wire_put_hello_cluster(b, id, m->u.hello.version, m->u.hello.edge_id,
                                      m->u.hello.colo, m->u.hello.role, m->u.hello.incarnation, &cl);
    }
    case WIRE_GET:
        return wire_put_get(b, id, m->u.get.keys, m->u.get.nkeys);
    case WIRE_SET:
        return wire_put_set(b, id, m->u.set.key, m->u.set.value, m->u.set.rid, m->u.set.exp,
                            m->u.set.flags);
    case WIRE_DEL:
        return wire_put_del(b, id, m->u.del.keys, m->u.del.nkeys, m->u.del.rid);
    case WIRE_INCRBY:
        return wire_put_incrby(b, id, m->u.incrby.key, m->u.incrby.delta, m->u.incrby.rid);
    case WIRE_EXPIRE:
        return wire_put_expire(b, id, m->u.expire.key, m->u.expire.exp, m->u.expire.rid,
                               m->u.expire.flags);
    case WIRE_PERSIST:
        return wire_put_persist(b, id, m->u.persist.key, m->u.persist.rid);
    case WIRE_GETDEL:
        return wire_put_getdel(b, id, m->u.getdel.key, m->u.getdel.rid);
    case WIRE_TTL:
        return wire_put_ttl(b, id, m->u.ttl.key);
    case WIRE_SCAN:
        return wire_put_scan(b, id, m->u.scan.cursor, m->u.scan.count,
                             m->u.scan.has_match ? &m->u.scan.match : NULL);
    case WIRE_SCAN_RANGE:
        return wire_put_scan_range(b, id, m->u.scan_range.from, m->u.scan_range.to,
                                   m->u.scan_range.count,
                                   m->u.scan_range.has_match ? &m->u.scan_range.match : NULL);
    case WIRE_PING:
        return wire_put_ping(b, id);
    case WIRE_STATS:
        return wire_put_stats(b, id);
    case WIRE_HELLO_OK:
        return wire_put_hello_ok(b, id, m->u.hello_ok.version, m->u.hello_ok.owner_id,
                                 m->u.hello_ok.pool, m->u.hello_ok.map_gen,
                                 m->u.hello_ok.incarnation);
    case WIRE_VALUE:
        return wire_put_value(b, id, m->u.value.value, m->u.value.stamp, m->u.value.expire_ms);
    case WIRE_VALUES:
        return wire_put_values(b, id, m->u.values.items, m->u.values.nitems);
    case WIRE_NOTFOUND:
        return wire_put_notfound(b, id, m->u.notfound.stamp);
    case WIRE_OK:
        return wire_put_ok(b, id, m->u.ok.stamp, m->u.ok.applied,
                           m->u.ok.has_old ? &m->u.ok.old : NULL);
    case WIRE_INT:
        return wire_put_int(b, id, m->u.integer.value, m->u.integer.stamp);
    case WIRE_MOVED:
        return wire_put_moved(b, id, m->u.moved.leaf, m->u.moved.leaf_bits, m->u.moved.map_gen,
                              m->u.moved.owner);
    case WIRE_ERROR:
        return wire_put_error(b, id, m->u.error.code, m->u.error.text);
    case WIRE_SCAN_REPLY:
        return wire_put_scan_reply(b, id, m->u.scan_reply.cursor, m->u.scan_reply.keys,
                                   m->u.scan_reply.nkeys);
    case WIRE_STATS_REPLY:
        return wire_put_stats_reply(b, id, m->u.stats_reply.stats, m->u.stats_reply.nstats);
    case WIRE_PONG:
        return wire_put_pong(b, id);
    case WIRE_PUSH:
        if (id != 0)
            return HKV_EINVAL;
        return wire_put_push(b, m->u.push.key, m->u.push.value, m->u.push.stamp,
                             m->u.push.expire_ms);
    case WIRE_INVALIDATE:
        if (id != 0)
            return HKV_EINVAL;
        return wire_put_invalidate(b, m->u.invalidate.key, m->u.invalidate.stamp);
    case WIRE_PUBLISH:
        return wire_put_publish(b, id, m->u.pub.channel, m->u.pub.msg);
    case WIRE_PUBMSG:
        if (id != 0)
            return HKV_EINVAL;
        return wire_put_pubmsg(b, m->u.pub.channel, m->u.pub.msg);
    case WIRE_CALL:
    case WIRE_EXEC:
    case WIRE_RESP:
        return wire_call_put(b, m);
    }
    return HKV_EINVAL;
}

/* ---- framing ---- */

int wire_next_frame(const char *buf, size_t len, size_t max_frame,
                    const char **payload, size_t *plen, size_t *consumed)
{
    if (payload != NULL)
        *payload = NULL;
    if (max_frame == 0)
        max_frame = WIRE_MAX_FRAME_DEFAULT;
    if (len < WIRE_HEADER_LEN) {
        if (plen != NULL)
            *plen = 0;
        if (consumed != NULL)
            *consumed = WIRE_HEADER_LEN;
        return HKV_EAGAIN;
    }
    const uint8_t *h = (const uint8_t *)buf;
    size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (plen != NULL)
        *plen = n;
    if (n > max_frame) {
        if (consumed != NULL)
            *consumed = 0;
        return HKV_ETOOBIG;
    }
    if (consumed != NULL)
        *consumed = WIRE_HEADER_LEN + n;
    if (len - WIRE_HEADER_LEN < n)
        return HKV_EAGAIN;
    if (payload != NULL)
        *payload = buf + WIRE_HEADER_LEN;
    return HKV_OK;
}
